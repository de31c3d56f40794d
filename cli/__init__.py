"""The ``bucketdigest`` command line: thin commands over the library."""
