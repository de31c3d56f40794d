"""The ingestor: finds documents in sources, uploads what the bucket lacks, enqueues jobs."""
