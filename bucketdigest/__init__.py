"""bucketdigest: documents turned into enriched, searchable Markdown by stateless workers that
coordinate through an S3 bucket (or a local folder).

    from bucketdigest import Bucket

    bucket = Bucket("./library")
    bucket.ingest("~/pdfs")
    bucket.work()
    for hit in bucket.search("how does grappling work"):
        print(hit.names[0], hit.page, hit.snippet.text)

This folder is the package's root; its subpackages are the repository's top-level folders
(``shared``, ``ingestor``, ``worker``, ``monitor``, ``search``, ``runner``, ``serve``, ``cli``),
which ``pyproject.toml`` maps to ``bucketdigest.shared`` and so on. Run from a plain checkout
(nothing installed), the package finds them beside this folder.

Every name below is typed for checkers (the imports under ``TYPE_CHECKING``) and loads on first
use, so ``import bucketdigest`` (and the command line, which imports ``bucketdigest.cli``)
pays nothing for what it does not use.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "shared" / "keys.py").is_file():
    __path__.append(str(_CHECKOUT))  # a checkout: bucketdigest.shared is ../shared

if TYPE_CHECKING:
    from bucketdigest.ingestor.ingest import IngestReport, IngestSettings
    from bucketdigest.monitor.status import Status
    from bucketdigest.runner.bucket import Bucket
    from bucketdigest.runner.remote import upload_files
    from bucketdigest.search.cache import IndexCacheSettings
    from bucketdigest.search.hit import Hit
    from bucketdigest.search.indexer import IndexReport
    from bucketdigest.search.request import Level, Mode, SearchRequest
    from bucketdigest.shared.config import StoreSettings
    from bucketdigest.shared.errors import (
        BucketdigestError,
        ConfigError,
        DamagedResult,
        IndexNotFound,
        InvalidQuery,
        NotFound,
        SearchIndexError,
        SourceError,
        StoreError,
        WorkersDied,
    )
    from bucketdigest.shared.queue import DocState
    from bucketdigest.shared.records import OutputStatus
    from bucketdigest.shared.result import ResultZip
    from bucketdigest.worker.loop import WorkerSettings, WorkerSummary

    __version__: str

_EXPORTS = {
    "Bucket": "bucketdigest.runner.bucket",
    "upload_files": "bucketdigest.runner.remote",
    "StoreSettings": "bucketdigest.shared.config",
    "IngestSettings": "bucketdigest.ingestor.ingest",
    "IngestReport": "bucketdigest.ingestor.ingest",
    "WorkerSettings": "bucketdigest.worker.loop",
    "WorkerSummary": "bucketdigest.worker.loop",
    "IndexCacheSettings": "bucketdigest.search.cache",
    "IndexReport": "bucketdigest.search.indexer",
    "SearchRequest": "bucketdigest.search.request",
    "Level": "bucketdigest.search.request",
    "Mode": "bucketdigest.search.request",
    "Hit": "bucketdigest.search.hit",
    "Status": "bucketdigest.monitor.status",
    "DocState": "bucketdigest.shared.queue",
    "OutputStatus": "bucketdigest.shared.records",
    "ResultZip": "bucketdigest.shared.result",
    "BucketdigestError": "bucketdigest.shared.errors",
    "ConfigError": "bucketdigest.shared.errors",
    "DamagedResult": "bucketdigest.shared.errors",
    "IndexNotFound": "bucketdigest.shared.errors",
    "InvalidQuery": "bucketdigest.shared.errors",
    "NotFound": "bucketdigest.shared.errors",
    "SearchIndexError": "bucketdigest.shared.errors",
    "SourceError": "bucketdigest.shared.errors",
    "StoreError": "bucketdigest.shared.errors",
    "WorkersDied": "bucketdigest.shared.errors",
}

__all__ = [
    "Bucket",
    "BucketdigestError",
    "ConfigError",
    "DamagedResult",
    "DocState",
    "Hit",
    "IndexCacheSettings",
    "IndexNotFound",
    "IndexReport",
    "IngestReport",
    "IngestSettings",
    "InvalidQuery",
    "Level",
    "Mode",
    "NotFound",
    "OutputStatus",
    "ResultZip",
    "SearchIndexError",
    "SearchRequest",
    "SourceError",
    "Status",
    "StoreError",
    "StoreSettings",
    "WorkerSettings",
    "WorkerSummary",
    "WorkersDied",
    "__version__",
    "upload_files",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("bucketdigest")
        except PackageNotFoundError:  # a plain checkout
            return "0+checkout"
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bucketdigest' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
