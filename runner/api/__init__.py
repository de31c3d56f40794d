"""The package ``bucketdigest`` itself, what a Python program imports (pyproject.toml maps it to
this folder; its subpackages are the repository's top-level folders):

    from bucketdigest import Bucket

Names load on first use, so the command line, which imports ``bucketdigest.cli``, pays nothing
for them. See :mod:`bucketdigest.runner.bucket` for an example.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Bucket": "bucketdigest.runner.bucket",
    "IngestSettings": "bucketdigest.ingestor.ingest",
    "WorkerSettings": "bucketdigest.worker.loop",
    "IndexCacheSettings": "bucketdigest.search.cache",
    "Hit": "bucketdigest.search.hit",
    "Mode": "bucketdigest.search.query",
    "ResultZip": "bucketdigest.shared.result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bucketdigest' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
