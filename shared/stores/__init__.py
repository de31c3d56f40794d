"""Store implementations: ``LocalStore`` (a directory) and ``S3Store`` (S3-compatible)."""
