"""`bucketdigest serve`: the HTTP API and the web pages over one bucket (FastAPI, Jinja2)."""
