"""Searching the bucket: a LanceDB index kept in the bucket itself (``index/``), built from the
result zips, queried by keyword, meaning or both. Imports ``shared`` only."""
