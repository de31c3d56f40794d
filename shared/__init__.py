"""Code shared by the ingestor, the workers and the monitor: stores, key layout, records, config."""
