"""How a record becomes JSON and back: indented, key-sorted JSON a person can read with
``aws s3 cp s3://b/KEY -``, carrying ``schema_version`` so later versions read older ones."""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, fields
from datetime import datetime
from enum import Enum
from types import UnionType
from typing import Any, Self, Union, get_args, get_origin, get_type_hints

from bucketdigest.shared.clock import format_time, parse_time
from bucketdigest.shared.errors import CorruptRecord

SCHEMA_VERSION = 1


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(hint: Any, value: Any) -> Any:
    """Rebuild a field of type ``hint`` from its JSON form."""
    if value is None:
        return None
    if get_origin(hint) in (Union, UnionType):
        return _decode(next(a for a in get_args(hint) if a is not type(None)), value)
    if hint is datetime:
        return parse_time(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and issubclass(hint, JsonRecord):
        return hint.from_dict(value)
    if get_origin(hint) is tuple:
        return tuple(_decode(get_args(hint)[0], item) for item in value)
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A record class's field types (resolving them parses the annotations: once a class)."""
    return get_type_hints(cls)


class JsonRecord:
    """Mixin: ``to_json``/``from_json`` for dataclasses of plain, datetime, tuple and nested
    record fields; unknown keys (from newer writers) are ignored."""

    def to_json(self) -> bytes:
        data = {"schema_version": SCHEMA_VERSION, **_encode(asdict(self))}  # type: ignore[call-overload]
        return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        hints = _hints(cls)
        values = {
            f.name: _decode(hints[f.name], data[f.name])
            for f in fields(cls)  # type: ignore[arg-type]
            if f.name in data
        }
        return cls(**values)

    @classmethod
    def from_json(cls, raw: bytes) -> Self:
        """Decode; CorruptRecord (naming the record type) if the bytes are not such a record."""
        try:
            return cls.from_dict(json.loads(raw))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"not a valid {cls.__name__} record: {exc}") from exc
