"""Running the roles together: the main job on one machine (ingest, then local workers until
every document is done or failed), retry and reprocess with sources fetched again, listing,
and the library's entry point (:class:`bucketdigest.runner.bucket.Bucket`). With ``serve`` and
``cli`` above it, one of the packages that import several roles."""
