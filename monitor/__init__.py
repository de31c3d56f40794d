"""The monitor: puts expired claims and retryable failures back in line; reports status."""
