"""The settings of a bucket: what shapes a result or the queue's behaviour, held once in the
bucket (``settings.json``) rather than in each process's flags, so that every worker and monitor
of a fleet does the same.

A setting left unset (absent, or ``null``) has today's default. Every worker and monitor follows
the bucket, and a flag that would make one differ is refused (:func:`refuse_flags`), naming
``bucketdigest config set``; ``run``, which works its own bucket, sets what its flags give
where the bucket leaves it unset (:func:`adopt_flags`). Every change
is a conditional write against the version read, so two people editing at once cannot
overwrite each other, and bumps ``version``, which each result records (``info.json``,
``provenance.settings_version``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any, get_type_hints

from bucketdigest.shared import keys
from bucketdigest.shared.attempts import MAX_ATTEMPTS
from bucketdigest.shared.embedding import PRECISIONS
from bucketdigest.shared.errors import ConfigError, Conflict, CorruptRecord, NotFound
from bucketdigest.shared.events import Webhooks, check_endpoint, check_secret, new_secret
from bucketdigest.shared.records import JsonRecord
from bucketdigest.shared.store import Store
from bucketdigest.shared.windows import Schedule

log = logging.getLogger(__name__)

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
    run_window: tuple[str, ...] | None = None
    """When workers claim: ``22:00-06:00`` (their local time) or ``22:00Z-06:00Z`` (UTC)."""
    normal_lane_share: float | None = None
    """The share of claims that look in the normal lane before the high one (0.10)."""
    low_lane_share: float | None = None
    """The share of claims that look in the low lane first (0.05)."""
    inbox_max_bytes: int | None = None
    """The largest object the monitor takes from ``inbox/`` (512 MiB); a larger one is
    refused and left there."""
    events: tuple[str, ...] | None = None
    """HTTPS endpoints that get a signed JSON event when a document is done, fails for good
    or is removed (``shared/events.py``)."""
    events_secret: str | None = None
    """``(set)`` once the bucket has a secret to sign events with: the secret itself lives in
    ``secrets/events.json``, which readers and brokered workers cannot read (a record written
    before held the secret here; the next settings change moves it)."""
    # the chain
    converter_mode: str | None = None
    """``layout`` or ``legacy`` (``--converter-mode``)."""
    keep_headers: bool | None = None
    plain_pages: bool | None = None
    layout_features: str | None = None
    ocr_language: str | None = None
    """Tesseract's language(s), ``eng+deu``."""
    force_ocr: bool | None = None
    """Every page of a PDF read by OCR, its text layer left aside (a layer of garbage)."""
    ocr_endpoint: str | None = None
    """An OpenAI-compatible vision model that reads pages without a text layer."""
    ocr_model: str | None = None
    llm_url: str | None = None
    """An OpenAI-compatible chat endpoint for summaries (extractive without)."""
    llm_model: str | None = None
    asr_endpoint: str | None = None
    """An OpenAI-compatible speech recogniser (pocketsphinx without)."""
    asr_model: str | None = None
    embedding_precision: str | None = None
    """The weights search-semantic embeds with: ``int8`` (the default) or ``float32``."""

    def public(self) -> dict[str, Any]:
        """The record as JSON data for display: the events secret as ``(set)``."""
        data: dict[str, Any] = json.loads(self.to_json())
        if data.get("events_secret"):
            data["events_secret"] = SECRET_SHOWN
        return data

    def chosen(self) -> dict[str, Any]:
        """The settings the bucket sets (name → value)."""
        return {
            name: value
            for name, value in asdict(self).items()
            if name not in _BOOKKEEPING and value is not None
        }


SECRET_SHOWN = "(set)"
ROTATION_OVERLAP = timedelta(days=1)
"""How long the secret replaced by a new one still signs events beside it (receivers update)."""


@dataclass(frozen=True)
class EventSecrets(JsonRecord):
    """``secrets/events.json``: the secret events are signed with and, for a day after a
    rotation, the one it replaced."""

    current: str
    previous: str | None = None
    previous_until: datetime | None = None

    def signing(self, now: datetime) -> tuple[str, ...]:
        """The secrets that sign an event sent at ``now``, the current one first."""
        if self.previous is None or self.previous_until is None or now >= self.previous_until:
            return (self.current,)
        return (self.current, self.previous)


def webhooks(store: Store, settings: BucketSettings) -> Webhooks:
    """Where ``settings`` send events and the secrets that sign them (one GET of
    ``secrets/events.json`` when there are endpoints; the signing roles only)."""
    if not settings.events:
        return Webhooks()
    legacy = settings.events_secret not in (None, SECRET_SHOWN)
    try:
        secrets = EventSecrets.from_json(store.get(keys.EVENTS_SECRET_KEY).data)
    except NotFound:
        plain = settings.events_secret if legacy else None
        return Webhooks(settings.events, (plain,) if plain else ())
    except CorruptRecord as exc:
        raise ConfigError(
            f"{keys.EVENTS_SECRET_KEY} is damaged ({exc}): set the secret again"
        ) from exc
    return Webhooks(settings.events, secrets.signing(store.now()))


def bucket_webhooks(store: Store) -> Webhooks:
    """:func:`webhooks` of the bucket's settings as they are now."""
    return webhooks(store, read_settings(store)[0])


def current_events_secret(store: Store) -> str | None:
    """The secret events are signed with now (an admin's read: ``config set events_secret
    new`` shows the one it made)."""
    try:
        return EventSecrets.from_json(store.get(keys.EVENTS_SECRET_KEY).data).current
    except (NotFound, CorruptRecord):
        return None


def _store_secret(store: Store, current: BucketSettings, secret: str | None) -> str | None:
    """Write the new events secret (``new``: one made here) to ``secrets/events.json``, the
    one it replaces kept signing for ``ROTATION_OVERLAP``; None removes it. What the settings
    record then says of it."""
    if secret is None:
        store.delete(keys.EVENTS_SECRET_KEY)
        return None
    legacy = current.events_secret not in (None, SECRET_SHOWN)
    if not (legacy and secret == current.events_secret):  # one from before moves as it is
        secret = new_secret() if secret == "new" else check_secret(secret)
    try:
        before: str | None = EventSecrets.from_json(store.get(keys.EVENTS_SECRET_KEY).data).current
    except (NotFound, CorruptRecord):
        before = current.events_secret if legacy else None
    replaced = before if before not in (None, secret) else None
    record = EventSecrets(secret, replaced, store.now() + ROTATION_OVERLAP if replaced else None)
    store.put(keys.EVENTS_SECRET_KEY, record.to_json())
    return SECRET_SHOWN


_BOOKKEEPING = ("version", "chain_version", "updated_at")
CHAIN_SETTINGS = (
    "converter_mode",
    "keep_headers",
    "plain_pages",
    "layout_features",
    "ocr_language",
    "force_ocr",
    "ocr_endpoint",
    "ocr_model",
    "llm_url",
    "llm_model",
    "asr_endpoint",
    "asr_model",
    "embedding_precision",
)
"""The settings that shape a result (the others shape the queue)."""
SETTING_NAMES = tuple(f.name for f in fields(BucketSettings) if f.name not in _BOOKKEEPING)
ENDPOINTS = (("ocr_endpoint", "ocr_model"), ("llm_url", "llm_model"), ("asr_endpoint", "asr_model"))
"""The model servers the chain may call: each a URL and a model, set together. Their API keys
stay in each worker's environment, never in the bucket."""


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


def attempt_budget(store: Store) -> int:
    """The attempts a document queued now is allowed (its ticket carries them)."""
    return read_settings(store)[0].max_attempts or MAX_ATTEMPTS


class SettingsWatch:
    """The bucket's settings as a long-running process follows them: read once, then a HEAD
    on the process's own cadence (its monitor duty) says by its ETag whether they changed, so
    following costs no request per job."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.current, self._etag = read_settings(store)

    def changed(self) -> BucketSettings | None:
        """The new settings when the record changed since last read, else None. A record
        that no longer parses is logged and the settings in force kept."""
        info = self.store.head(keys.SETTINGS_KEY)
        etag = info.etag if info is not None else None
        if etag == self._etag:
            return None
        try:
            self.current, self._etag = read_settings(self.store)
        except ConfigError as exc:
            log.error("%s; keeping settings version %d", exc, self.current.version)
            self._etag = etag
            return None
        return self.current


def parsed(name: str, text: str) -> Any:
    """``text`` as the value of setting ``name`` (``default`` or ``null``: unset)."""
    if name not in SETTING_NAMES:
        raise ConfigError(f"no setting {name!r}: the settings are {', '.join(SETTING_NAMES)}")
    if text.strip().lower() in ("default", "null", "none", ""):
        return None
    kind = get_type_hints(BucketSettings)[name]
    if tuple[str, ...] | None == kind:
        return tuple(part.strip() for part in text.split(",") if part.strip()) or None
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
    for name in ("max_attempts", "lease_seconds", "inbox_max_bytes"):
        value = getattr(settings, name)
        if value is not None and value < 1:
            problems.append(f"{name} must be 1 or more, not {value}")
    if settings.retry_delay is not None and settings.retry_delay < 0:
        problems.append(f"retry_delay must be 0 or more, not {settings.retry_delay}")
    for name in ("normal_lane_share", "low_lane_share"):
        value = getattr(settings, name)
        if value is not None and not 0 <= value <= 1:
            problems.append(f"{name} is a share between 0 and 1, not {value}")
    shares = (settings.normal_lane_share or 0) + (settings.low_lane_share or 0)
    if shares > 1:
        problems.append(f"normal_lane_share and low_lane_share add up to {shares:g}, over 1")
    for url, model in ENDPOINTS:
        if (getattr(settings, url) is None) != (getattr(settings, model) is None):
            problems.append(f"{url} and {model} go together: set both or neither")
    try:
        Schedule.parse(settings.run_window or ())
    except ValueError as exc:
        problems.append(f"run_window: {exc}")
    for endpoint in settings.events or ():
        try:
            check_endpoint(endpoint)
        except ConfigError as exc:
            problems.append(str(exc))
    if settings.converter_mode not in (None, *CONVERTER_MODES):
        problems.append(f"converter_mode is one of {', '.join(CONVERTER_MODES)}")
    if settings.layout_features not in (None, *LAYOUT_FEATURES):
        problems.append(f"layout_features is one of {', '.join(LAYOUT_FEATURES)}")
    if settings.embedding_precision not in (None, *PRECISIONS):
        problems.append(f"embedding_precision is one of {', '.join(PRECISIONS)}")
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
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}
    if changes.get("events_secret") == SECRET_SHOWN:  # as shown: it stays as it is
        del changes["events_secret"]
    if "events_secret" in changes:
        changes["events_secret"] = _store_secret(store, current, changes["events_secret"])
    elif current.events_secret not in (None, SECRET_SHOWN):  # a record from before: moved
        changes["events_secret"] = _store_secret(store, current, current.events_secret)
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


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> str:
    """A value as ``config set`` takes it."""
    if isinstance(value, (tuple, list)):
        return ",".join(value)
    return value if isinstance(value, str) else json.dumps(value)


def refuse_flags(settings: BucketSettings, given: dict[str, Any], defaults: dict[str, Any]) -> None:
    """ConfigError when a process (a worker, a monitor) was given, by a flag, a setting other
    than the bucket's (the value it sets, else the default): the fleet follows the bucket, so
    two processes cannot disagree."""
    for name, value in given.items():
        held = getattr(settings, name)
        fleet = defaults.get(name) if held is None else held
        if _comparable(value) != _comparable(fleet):
            source = f"settings version {settings.version}" if held is not None else "its default"
            raise ConfigError(
                f"{_flag(name)} {_shown(value)} differs from the bucket's {name} = "
                f"{_shown(fleet)} ({source}): every process follows the bucket; change it for "
                f"all with `bucketdigest config set {name} {_shown(value)}`"
            )


def adopt_flags(store: Store, given: dict[str, Any]) -> BucketSettings:
    """``run``'s flags (it ingests and works on its own bucket): a setting the bucket leaves
    unset is set for the whole bucket (a new version), so later workers do the same; one it
    sets to another value is refused (:func:`refuse_flags`)."""
    settings = read_settings(store)[0]
    held = {name: getattr(settings, name) for name in given}
    refuse_flags(settings, {n: v for n, v in given.items() if held[n] is not None}, {})
    unset = {name: value for name, value in given.items() if held[name] is None}
    if not unset:
        return settings
    adopted = change_settings(store, unset)
    log.info(
        "the bucket's settings now set %s (version %d)",
        ", ".join(f"{n} = {_shown(v)}" for n, v in unset.items()),
        adopted.version,
    )
    return adopted


def _comparable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
