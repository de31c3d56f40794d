"""The settings of a bucket: what shapes a result or the queue's behaviour, held once in the
bucket (``settings.json``) rather than in each process's flags, so that every worker and monitor
of a fleet does the same.

A setting left unset (absent, or ``null``) has today's default; a process flag may still choose
it for that process. Once the bucket sets it, every process follows the bucket, and a flag that
would shadow it is refused (:func:`shadowed`), naming ``bucketdigest config set``. Every change
is a conditional write against the version read, so two people editing at once cannot
overwrite each other, and bumps ``version``, which each result records (``info.json``,
``provenance.settings_version``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from typing import Any, get_type_hints

from bucketdigest.shared import keys
from bucketdigest.shared.errors import ConfigError, Conflict, CorruptRecord, NotFound
from bucketdigest.shared.records import JsonRecord
from bucketdigest.shared.store import Store

CONVERTER_MODES = ("layout", "legacy")
"""pymupdf4llm's two engines (the converter's options check them too)."""
LAYOUT_FEATURES = ("auto", "text+image", "text")
"""What the layout model sees of a page (``ConverterOptions.layout_features``)."""


@dataclass(frozen=True)
class BucketSettings(JsonRecord):
    """``settings.json``. Each setting is None until the bucket sets it."""

    version: int = 0
    chain_version: int = 0
    """Bumped only when a setting of the chain changes: a result made at another chain version
    is outdated (``reprocess --outdated``)."""
    updated_at: datetime | None = None
    # the queue
    max_attempts: int | None = None
    """Attempts before a document is dead-lettered (the workers' and the monitor's)."""
    retry_delay: float | None = None
    """Backoff before attempt n+1: ``retry_delay * 2**(n-1)`` seconds."""
    lease_seconds: float | None = None
    """How long a claim lasts without a heartbeat."""
    # the chain
    converter_mode: str | None = None
    """``layout`` or ``legacy`` (``--converter-mode``)."""
    keep_headers: bool | None = None
    plain_pages: bool | None = None
    layout_features: str | None = None
    ocr_language: str | None = None
    """Tesseract's language(s), ``eng+deu``."""

    def chosen(self) -> dict[str, Any]:
        """The settings the bucket sets (name → value)."""
        return {
            name: value
            for name, value in asdict(self).items()
            if name not in _BOOKKEEPING and value is not None
        }


_BOOKKEEPING = ("version", "chain_version", "updated_at")
CHAIN_SETTINGS = (
    "converter_mode",
    "keep_headers",
    "plain_pages",
    "layout_features",
    "ocr_language",
)
"""The settings that shape a result (the others shape the queue)."""
SETTING_NAMES = tuple(f.name for f in fields(BucketSettings) if f.name not in _BOOKKEEPING)


def read_settings(store: Store) -> tuple[BucketSettings, str | None]:
    """The bucket's settings and the version token (ETag) of the record; the defaults and None
    for a bucket that has none yet. ConfigError for a record that does not parse."""
    try:
        found = store.get(keys.SETTINGS_KEY)
    except NotFound:
        return BucketSettings(), None
    try:
        return BucketSettings.from_json(found.data), found.etag
    except CorruptRecord as exc:
        raise ConfigError(
            f"{keys.SETTINGS_KEY} is damaged ({exc}): mend it with `bucketdigest config edit`"
        ) from exc


def parsed(name: str, text: str) -> Any:
    """``text`` as the value of setting ``name`` (``default`` or ``null``: unset)."""
    if name not in SETTING_NAMES:
        raise ConfigError(f"no setting {name!r}: the settings are {', '.join(SETTING_NAMES)}")
    if text.strip().lower() in ("default", "null", "none", ""):
        return None
    kind = get_type_hints(BucketSettings)[name]
    try:
        if int | None == kind:
            return int(text)
        if float | None == kind:
            return float(text)
        if bool | None == kind:
            if text.lower() not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "yes", "on", "1")
    except ValueError as exc:
        raise ConfigError(f"{name} takes a {kind.__args__[0].__name__}, not {text!r}") from exc
    return text


def _checked(settings: BucketSettings) -> BucketSettings:
    problems = []
    for name in ("max_attempts", "lease_seconds"):
        value = getattr(settings, name)
        if value is not None and value < 1:
            problems.append(f"{name} must be 1 or more, not {value}")
    if settings.retry_delay is not None and settings.retry_delay < 0:
        problems.append(f"retry_delay must be 0 or more, not {settings.retry_delay}")
    if settings.converter_mode not in (None, *CONVERTER_MODES):
        problems.append(f"converter_mode is one of {', '.join(CONVERTER_MODES)}")
    if settings.layout_features not in (None, *LAYOUT_FEATURES):
        problems.append(f"layout_features is one of {', '.join(LAYOUT_FEATURES)}")
    if problems:
        raise ConfigError("; ".join(problems))
    return settings


def change_settings(store: Store, changes: dict[str, Any]) -> BucketSettings:
    """Set ``changes`` (name → value; None unsets) in the bucket's settings, as a new version.
    Conflict when someone changed them since they were read: read again and retry."""
    current, etag = read_settings(store)
    unknown = sorted(set(changes) - set(SETTING_NAMES))
    if unknown:
        raise ConfigError(f"no setting {unknown[0]!r}: the settings are {', '.join(SETTING_NAMES)}")
    chain_changed = any(getattr(current, n) != changes[n] for n in CHAIN_SETTINGS if n in changes)
    new = _checked(
        replace(
            current,
            **changes,
            version=current.version + 1,
            chain_version=current.chain_version + chain_changed,
            updated_at=store.now(),
        )
    )
    written = (
        store.put_if_absent(keys.SETTINGS_KEY, new.to_json())
        if etag is None
        else store.put_if_match(keys.SETTINGS_KEY, new.to_json(), etag)
    )
    if written is None:
        raise Conflict(
            "the bucket's settings changed while you edited them: read them again and retry"
        )
    return new


def replace_settings(store: Store, text: str) -> BucketSettings:
    """``config edit``: the settings as JSON (every setting; those left out are unset)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the settings are not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("the settings are a JSON object of setting: value")
    chosen = {k: v for k, v in data.items() if k not in (*_BOOKKEEPING, "schema_version")}
    return change_settings(store, {name: chosen.get(name) for name in SETTING_NAMES} | chosen)


def shadowed(settings: BucketSettings, given: dict[str, Any]) -> None:
    """ConfigError when a process was given (by a flag) a setting the bucket sets to another
    value: the fleet follows the bucket."""
    for name, value in given.items():
        held = getattr(settings, name, None)
        if held is not None and held != value:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} {value} shadows the bucket's setting {name} = {held} (settings version "
                f"{settings.version}): every process follows the bucket; change it for all with "
                f"`bucketdigest config set {name} VALUE`"
            )
