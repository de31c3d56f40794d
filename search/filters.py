"""A search request's filters: document, type and tag run inside the index (prefiltering, on
their own indexes); source and path are narrowed inside the index by the literal part of what
is asked, then checked exactly on each row."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from bucketdigest.search.request import SearchRequest
from bucketdigest.search.tables import sql_quoted


def _literal(glob: str) -> str:
    """The longest run of a glob without wildcards, to narrow a LIKE before the exact match."""
    parts = re.split(r"[*?\[\]]+", glob)
    return max(parts, key=len)


def narrowing(request: SearchRequest) -> str | None:
    """The SQL filter the index applies before ranking (None: no filter)."""
    clauses = []
    if request.document:
        clauses.append(f"digest = {sql_quoted(request.document)}")
    if request.file_type:
        clauses.append(f"file_type = {sql_quoted(request.file_type)}")
    if request.tag:
        clauses.append(f"array_has(tags, {sql_quoted(request.tag)})")
    for text in (request.source, request.path and _literal(request.path)):
        if text:
            clauses.append(f"locations LIKE {sql_quoted('%' + text + '%')}")
    return " AND ".join(clauses) or None


def accepts(row: dict[str, Any], request: SearchRequest) -> bool:
    """Whether a row the narrowing let through really matches ``--source`` and ``--path``."""
    if request.source and not any(request.source in s for s in row["sources"] or ()):
        return False
    if request.path:
        return any(fnmatch.fnmatchcase(name, request.path) for name in row["names"] or ())
    return True
