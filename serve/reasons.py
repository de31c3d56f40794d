"""A bad argument's reason in the API's words ("page must be ≥ 1"), for the HTTP API and the
MCP tools alike: pydantic's own text names its types and links its docs, which tells a person
or an assistant little about what to send instead."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_BOUNDS = {
    "greater_than_equal": ("≥", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("≤", "le"),
    "less_than": ("<", "lt"),
}


def _name(location: Sequence[Any]) -> str:
    return ".".join(str(part) for part in location) or "the request"


def _reason(error: Mapping[str, Any], name: str) -> str:
    kind, context = error.get("type", ""), error.get("ctx") or {}
    if kind in _BOUNDS:
        sign, key = _BOUNDS[kind]
        return f"{name} must be {sign} {context.get(key)}"
    if kind == "string_too_long":
        return f"{name} must be at most {context.get('max_length')} characters"
    if kind == "string_too_short":
        least = context.get("min_length", 1)
        return f"{name} must not be empty" if least == 1 else f"{name} needs {least} characters"
    if kind == "string_pattern_mismatch":
        return f"{name} must match {context.get('pattern')}"
    if kind in ("literal_error", "enum"):
        return f"{name} must be {context.get('expected')}"
    if kind == "extra_forbidden":
        return f"{name} is not an argument this takes"
    if kind == "missing":
        return f"{name} is required"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{name} must be a whole number"
    if kind in ("bool_parsing", "bool_type"):
        return f"{name} must be true or false"
    if kind == "string_type":
        return f"{name} must be text"
    return f"{name}: {error.get('msg', 'not valid')}"


def argument_problems(errors: Iterable[Mapping[str, Any]], skip: int = 0) -> str:
    """``errors`` (pydantic's ``ValidationError.errors()``) as one line; ``skip``: leading
    parts of each location that say where the value came from (FastAPI's ``query``)."""
    return "; ".join(_reason(e, _name(tuple(e.get("loc", ()))[skip:])) for e in errors)
