"""Running the roles together: the main job on one machine (ingest, then local workers until
every document is done or failed). The only package that imports more than one role."""
