"""The settings of a bucket: what shapes a result or the queue's behaviour, held once in the
bucket (``settings.json``) rather than in each process's flags, so that every worker and monitor
of a fleet does the same.

Each setting is declared once, as a field of :class:`BucketSettings` (:func:`setting`): its
type, who follows it, its help, its checks and the worker option it sets; the record's checks,
``config``, the API, the worker's options and the command line's flags (``cli/setting_flags.py``,
which refuses a flag that would make a process differ from the bucket) are derived from it.
A setting left unset (absent, or ``null``) has today's default. Every change is a conditional
write against the version read, so two people editing at once cannot overwrite each other, and
bumps ``version``, which each result records (``info.json``, ``provenance.settings_version``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, get_type_hints

from bucketdigest.shared import keys
from bucketdigest.shared.attempts import MAX_ATTEMPTS
from bucketdigest.shared.embedding import PRECISIONS
from bucketdigest.shared.errors import (
    ConfigError,
    Conflict,
    CorruptRecord,
    DamagedSettings,
    NotFound,
)
from bucketdigest.shared.events import Webhooks, check_endpoint, check_secret, new_secret
from bucketdigest.shared.ocr_languages import check_tesseract_names
from bucketdigest.shared.records import JsonRecord
from bucketdigest.shared.store import Store
from bucketdigest.shared.windows import Schedule

log = logging.getLogger(__name__)

CONVERTER_MODES = ("layout", "legacy")
"""pymupdf4llm's two engines (the converter's options check them too)."""
LAYOUT_FEATURES = ("auto", "text+image", "text")
"""What the layout model sees of a page (``ConverterOptions.layout_features``)."""


class Follows(StrEnum):
    """Who follows a setting."""

    QUEUE = "queue"
    """Every worker and monitor: attempts, backoff, leases, when and what to claim."""
    CHAIN = "chain"
    """The digest chain: what a result is made with (a change outdates the results made
    before, ``reprocess --outdated``)."""
    BUCKET = "bucket"
    """The bucket's own duties (events, the inbox): no worker takes it as an option."""


@dataclass(frozen=True)
class Setting:
    """One bucket setting's declaration: the metadata of its field of :class:`BucketSettings`,
    from which its check, its command-line flag, ``config`` and the worker's option are
    derived."""

    follows: Follows
    help: str
    """One sentence for ``config``, the flag's help and the docs."""
    worker: str | None = None
    """The option of the worker it sets, a dotted path: in ``WorkerSettings`` for the queue's,
    in its ``DigestSettings`` for the chain's. With a path, ``work`` and ``run`` take it as a
    flag (``--name-with-dashes``, ``BUCKETDIGEST_NAME``), refused where it shadows the
    bucket's; the path's value in a default worker is the setting's default."""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], object] | None = None
    """Raises ValueError (its message the reason) for a value it refuses."""

    def problem(self, name: str, kind: Any, value: Any) -> str | None:
        """Why ``value`` cannot be setting ``name``, declared of type ``kind`` (None: it can).
        A value may come from JSON a client sent or a person wrote into the bucket: any
        type, any size."""
        if value is None:
            return None
        if (wrong := _kind_problem(name, kind, value)) is not None:
            return wrong
        if self.choices and value not in self.choices:
            return f"{name} is one of {', '.join(self.choices)}, not {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"{name} must be {_number(self.minimum)} or more, not {value}"
        if self.maximum is not None and value > self.maximum:
            return f"{name} must be {_number(self.maximum)} or less, not {value}"
        if self.check is not None:
            try:
                self.check(value)
            except (ValueError, ConfigError) as exc:
                return f"{name}: {exc}"
        return None


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


MAX_TEXT = 2048
"""Characters a setting's text may hold (a URL, a model's name); a list holds at most
:data:`MAX_ITEMS` of them."""
MAX_ITEMS = 32


def _kind_problem(name: str, kind: Any, value: Any) -> str | None:
    """Why ``value`` is not of setting ``name``'s type ``kind`` (None: it is). Numbers are
    finite: a lease of ``1e308`` seconds or ``NaN`` would stop every worker that computes when
    it ends."""
    if int | None == kind:
        fits, wanted = type(value) is int, "a whole number"
    elif float | None == kind:
        fits = type(value) in (int, float) and math.isfinite(value)
        wanted = "a finite number"
    elif bool | None == kind:
        fits, wanted = type(value) is bool, "true or false"
    elif str | None == kind:
        fits = type(value) is str and len(value) <= MAX_TEXT
        wanted = f"text of at most {MAX_TEXT:,} characters"
    else:
        fits = (
            type(value) is tuple
            and len(value) <= MAX_ITEMS
            and all(type(item) is str and len(item) <= MAX_TEXT for item in value)
        )
        wanted = f"a list of at most {MAX_ITEMS} texts"
    return None if fits else f"{name} takes {wanted}, not {value!r:.60}"


def setting(follows: Follows, help: str, **declared: Any) -> Any:
    """A field of :class:`BucketSettings` (None until the bucket sets it) declared as
    :class:`Setting` ``(follows, help, **declared)``."""
    return field(default=None, metadata={_DECLARATION: Setting(follows, help, **declared)})


_DECLARATION = "bucketdigest.setting"


def _check_endpoints(endpoints: tuple[str, ...]) -> None:
    for endpoint in endpoints:
        check_endpoint(endpoint)


@dataclass(frozen=True)
class BucketSettings(JsonRecord):
    """``settings.json``. Each setting is None until the bucket sets it; each is declared
    once, here (:func:`setting`)."""

    version: int = 0
    chain_version: int = 0
    """Bumped only when a setting of the chain changes: a result made at another chain version
    is outdated (``reprocess --outdated``)."""
    updated_at: datetime | None = None
    # the queue
    max_attempts: int | None = setting(
        Follows.QUEUE,
        "Attempts before a document is dead-lettered (the workers' and the monitor's).",
        worker="max_attempts",
        minimum=1,
        maximum=100,
    )
    retry_delay: float | None = setting(
        Follows.QUEUE,
        "Backoff before the second attempt, in seconds (doubles after, up to a day).",
        worker="retry_delay",
        minimum=0,
        maximum=86_400,
    )
    lease_seconds: float | None = setting(
        Follows.QUEUE,
        "How long a claim lasts without a heartbeat, in seconds (renewed every quarter of it).",
        worker="lease_seconds",
        minimum=1,
        maximum=86_400,
    )
    run_window: tuple[str, ...] | None = setting(
        Follows.QUEUE,
        "When workers claim: 22:00-06:00 (their local time) or 22:00Z-06:00Z (UTC); several "
        "allowed. Outside it a worker waits (status lists it).",
        worker="run_window",
        check=Schedule.parse,
    )
    normal_lane_share: float | None = setting(
        Follows.QUEUE,
        "The share of claims that look in the normal lane before the high one.",
        worker="normal_lane_share",
        minimum=0,
        maximum=1,
    )
    low_lane_share: float | None = setting(
        Follows.QUEUE,
        "The share of claims that look in the low lane first.",
        worker="low_lane_share",
        minimum=0,
        maximum=1,
    )
    inbox_max_bytes: int | None = setting(
        Follows.BUCKET,
        "The largest object the monitor takes from inbox/ (512 MiB); a larger one is refused "
        "and left there.",
        minimum=1,
        maximum=5 * 1024**4,
    )
    events: tuple[str, ...] | None = setting(
        Follows.BUCKET,
        "HTTPS endpoints that get a signed JSON event when a document is done, fails for good "
        "or is removed.",
        check=_check_endpoints,
    )
    events_secret: str | None = setting(
        Follows.BUCKET,
        "(set) once the bucket has a secret to sign events with (new: make one); the secret "
        "itself lives in secrets/events.json, which readers and brokered workers cannot read.",
    )
    # the chain
    converter_mode: str | None = setting(
        Follows.CHAIN,
        "pymupdf4llm's engine: layout (better text) or legacy (faster).",
        worker="converter.mode",
        choices=CONVERTER_MODES,
    )
    keep_headers: bool | None = setting(
        Follows.CHAIN,
        "Keep running headers, footers and page numbers in the text (by default they go to "
        "pages.json, out of pages, chunks and summaries).",
        worker="converter.keep_headers",
    )
    plain_pages: bool | None = setting(
        Follows.CHAIN,
        "Convert plain pages (one column of text) from their text layer, the layout model "
        "only the others (docs/benchmarks.md: the same facts, faster).",
        worker="converter.plain_pages",
    )
    layout_features: str | None = setting(
        Follows.CHAIN,
        "What the layout model sees of a page: its text layer and an image of it, its text "
        "layer alone (faster), or auto: the image only of pages with pictures or vector "
        "graphics.",
        worker="converter.layout_features",
        choices=LAYOUT_FEATURES,
    )
    ocr_language: str | None = setting(
        Follows.CHAIN,
        "Tesseract's language(s) for page-ocr, e.g. eng or deu+eng.",
        worker="ocr_language",
        check=check_tesseract_names,
    )
    force_ocr: bool | None = setting(
        Follows.CHAIN,
        "Every page of a PDF read by OCR, its text layer left aside (a layer of garbage).",
        worker="force_ocr",
    )
    ocr_dpi: int | None = setting(
        Follows.CHAIN,
        "The resolution page-ocr renders pages at for Tesseract (a small page higher, one "
        "over 25 megapixels lower; info.json's ocr record says which).",
        worker="ocr_dpi",
        minimum=72,
        maximum=600,
    )
    ocr_endpoint: str | None = setting(
        Follows.CHAIN,
        "OpenAI-compatible endpoint (e.g. http://localhost:8000/v1) of a vision model (olmOCR, "
        "or any model vLLM, Ollama or LM Studio serve) that reads pages without a text layer; "
        "Tesseract reads a page it fails on.",
        worker="ocr_endpoint",
    )
    ocr_model: str | None = setting(
        Follows.CHAIN, "Model name sent to ocr_endpoint.", worker="ocr_model"
    )
    llm_url: str | None = setting(
        Follows.CHAIN,
        "OpenAI-compatible chat endpoint (e.g. http://localhost:8000/v1) for summaries; "
        "without it summaries are extractive.",
        worker="llm_url",
    )
    llm_model: str | None = setting(
        Follows.CHAIN, "Model name sent to llm_url.", worker="llm_model"
    )
    asr_endpoint: str | None = setting(
        Follows.CHAIN,
        "OpenAI-compatible endpoint (e.g. http://localhost:8000/v1) of a speech recogniser (a "
        "Whisper server) for audio and video; pocketsphinx (offline, US English) otherwise and "
        "for what it fails on.",
        worker="asr_endpoint",
    )
    asr_model: str | None = setting(
        Follows.CHAIN, "Model name sent to asr_endpoint.", worker="asr_model"
    )
    fetch_private_networks: bool | None = setting(
        Follows.CHAIN,
        "Let link files and the drop-in APIs' URL sources fetch addresses off the public "
        "internet (an intranet, the machine itself); off, so that a document or a request "
        "cannot reach the fleet's network, such as a cloud's metadata service.",
        worker="fetch_private_networks",
    )
    embedding_precision: str | None = setting(
        Follows.CHAIN,
        "The weights search-semantic embeds passages with: int8 (twice as fast, the same answers "
        "on our benchmarks) or float32.",
        worker="embedding_precision",
        choices=PRECISIONS,
    )

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
DECLARED: dict[str, Setting] = {
    f.name: f.metadata[_DECLARATION] for f in fields(BucketSettings) if _DECLARATION in f.metadata
}
"""Every setting's declaration, by name, in the record's order."""
SETTING_NAMES = tuple(DECLARED)
_KINDS = get_type_hints(BucketSettings)
"""Every field's type, by name."""
CHAIN_SETTINGS = tuple(name for name, d in DECLARED.items() if d.follows is Follows.CHAIN)
"""The settings that shape a result (the others shape the queue or the bucket's duties)."""
ENDPOINTS = (("ocr_endpoint", "ocr_model"), ("llm_url", "llm_model"), ("asr_endpoint", "asr_model"))
"""The model servers the chain may call: each a URL and a model, set together. Their API keys
stay in each worker's environment, never in the bucket."""


def set_paths(target: Any, values: dict[str, Any]) -> Any:
    """``target`` (nested frozen dataclasses) with the value at each dotted path of ``values``
    replaced: how a declaration's ``worker`` path reaches the worker's option."""
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for path, value in values.items():
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, inner in nested.items():
        direct[head] = set_paths(getattr(target, head), inner)
    return replace(target, **direct)


def get_path(target: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``target``."""
    for part in path.split("."):
        target = getattr(target, part)
    return target


def worker_paths(follows: Follows) -> dict[str, str]:
    """The settings ``follows`` follows that set a worker option: name → its path."""
    return {
        name: declared.worker
        for name, declared in DECLARED.items()
        if declared.follows is follows and declared.worker is not None
    }


def read_settings(store: Store) -> tuple[BucketSettings, str | None]:
    """The bucket's settings and the version token (ETag) of the record; the defaults and None
    for a bucket that has none yet. ConfigError for a record that does not parse or holds a
    value its setting refuses (a record written into the bucket by hand: every worker would
    follow it)."""
    settings, etag = stored_settings(store)
    try:
        return check_settings(settings), etag
    except ConfigError as exc:
        raise DamagedSettings(
            f"{keys.SETTINGS_KEY} is damaged ({exc}): mend it with `bucketdigest config edit` "
            "or `config set`"
        ) from exc


def stored_settings(store: Store) -> tuple[BucketSettings, str | None]:
    """The settings record as the bucket holds it, unchecked, and its ETag: what a change
    starts from, so that a value the settings refuse can be mended (the changed record is
    checked whole). ConfigError for a record that does not parse."""
    try:
        found = store.get(keys.SETTINGS_KEY)
    except NotFound:
        return BucketSettings(), None
    try:
        return BucketSettings.from_json(found.data), found.etag
    except CorruptRecord as exc:
        raise DamagedSettings(
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
    kind = _KINDS[name]
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


def check_settings(settings: BucketSettings) -> BucketSettings:
    """``settings``, or ConfigError naming every value its declaration refuses and every rule
    between settings broken."""
    problems = [
        problem
        for name, declared in DECLARED.items()
        if (problem := declared.problem(name, _KINDS[name], getattr(settings, name))) is not None
    ]
    shares = (settings.normal_lane_share or 0) + (settings.low_lane_share or 0)
    if shares > 1:
        problems.append(f"normal_lane_share and low_lane_share add up to {shares:g}, over 1")
    for url, model in ENDPOINTS:
        if (getattr(settings, url) is None) != (getattr(settings, model) is None):
            problems.append(f"{url} and {model} go together: set both or neither")
    if problems:
        raise ConfigError("; ".join(problems))
    return settings


def change_settings(store: Store, changes: dict[str, Any]) -> BucketSettings:
    """Set ``changes`` (name → value; None unsets) in the bucket's settings, as a new version.
    Conflict when someone changed them since they were read: read again and retry."""
    current, etag = stored_settings(store)
    unknown = sorted(set(changes) - set(SETTING_NAMES))
    if unknown:
        raise ConfigError(f"no setting {unknown[0]!r}: the settings are {', '.join(SETTING_NAMES)}")
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}
    if changes.get("events_secret") == SECRET_SHOWN:  # as shown: it stays as it is
        del changes["events_secret"]
    if "events_secret" in changes:
        secret = changes["events_secret"]
        wrong = _kind_problem("events_secret", _KINDS["events_secret"], secret)
        if secret is not None and wrong is not None:
            raise ConfigError(wrong)
        changes["events_secret"] = _store_secret(store, current, secret)
    elif current.events_secret not in (None, SECRET_SHOWN):  # a record from before: moved
        changes["events_secret"] = _store_secret(store, current, current.events_secret)
    chain_changed = any(getattr(current, n) != changes[n] for n in CHAIN_SETTINGS if n in changes)
    new = check_settings(
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
