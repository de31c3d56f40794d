"""The bucket key layout: the only module that builds or parses keys.

Every key is relative to the store's root (an S3 ``bucket/prefix`` or a local directory).
A person reading ``aws s3 ls --recursive`` sees exactly these shapes.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from enum import StrEnum

from bucketdigest.shared.errors import InvalidKey

RAW_PREFIX = "store/raw/"
"""Source documents as ingested: ``store/raw/<sha256>.<ext>``."""

OUT_PREFIX = "store/out/"
"""Finished results, one zip a document: ``store/out/<sha256>.zip``. Its presence means done."""

QUEUE_PREFIX = "queue/"
"""Job markers; the folder below it is the job's state."""

REGISTRY_DOCS_PREFIX = "registry/docs/"
"""Where each document came from: ``registry/docs/<sha256>/<path-id>.json``, one per source path."""

REGISTRY_RUNS_PREFIX = "registry/runs/"
"""One record per ingest run, ``registry/runs/<run-id>.json``, and per purge,
``registry/runs/<run-id>.purge.json``."""

REGISTRY_SOURCES_PREFIX = "registry/sources/"
"""One manifest per source, ``registry/sources/<source-id>.json``: every path it held at its
latest ingest, and the paths that have disappeared since (when, and in which run)."""

CRAWLS_PREFIX = "registry/crawls/"
"""Per crawled web site, ``registry/crawls/<site-id>/``: ``state.json`` (every URL found and
its state) and ``log/<run-id>-<n>.json``, what a running crawl did since (merged into
``state.json`` by the next crawl of the site, so a crash loses nothing)."""

INBOX_PREFIX = "inbox/"
"""Where anyone with the uploader role drops documents (``inbox/<any/name.pdf>``): the monitor
duty takes each in (hashed, stored under ``store/raw/``, queued with the key under ``inbox/``
as its name) and only then removes it."""

INBOX_REFUSALS_PREFIX = "registry/inbox/"
"""Why an inbox object was not taken (too large, a type no digester takes):
``registry/inbox/<id>.json``, kept while the object stays in the inbox as it was."""


def inbox_key(name: str) -> str:
    """``inbox/<name>``; InvalidKey for a name no store may hold."""
    return check_key(f"{INBOX_PREFIX}{name}")


def inbox_name(key: str) -> str:
    """``inbox/2026/scan.pdf`` → ``2026/scan.pdf``: the name it is queued with."""
    if not key.startswith(INBOX_PREFIX):
        raise ValueError(f"not an inbox key: {key!r}")
    return check_key(key)[len(INBOX_PREFIX) :]


def inbox_refusal_key(name: str) -> str:
    """Where the refusal of ``inbox/<name>`` is recorded."""
    return f"{INBOX_REFUSALS_PREFIX}{hashlib.sha256(name.encode()).hexdigest()[:32]}.json"


SELFTEST_PREFIX = "selftest/"
"""Scratch objects of the conditional-write self-test, deleted right after."""

WORK_PREFIX = "work/"
"""A job's partial progress: ``work/<sha256>/checkpoint-<n>.zip`` (the files of the outputs
completed since the previous checkpoint, and ``digests.json``, every output's record), and
``work/<sha256>/digests.json`` alone for a reprocess request. Removed once the result zip is
written, so a reclaimed job resumes instead of starting over."""

INDEX_PREFIX = "index/"
"""The search index, a LanceDB database written by the indexer alone: ``index/chunks.lance/``
and ``index/documents.lance/`` (folders of data, version and index objects)."""

SETTINGS_KEY = "settings.json"
"""The bucket's settings: what shapes a result or the queue, for every process of the fleet
(``shared/bucket_settings.py``)."""

SECRETS_PREFIX = "secrets/"
"""What only the roles that sign may read (worker, monitor, admin; never a reader, never
presigned, never handed to a brokered worker): ``secrets/events.json``, the keys events are
signed with."""

EVENTS_SECRET_KEY = f"{SECRETS_PREFIX}events.json"

EVENTS_PREFIX = "events/"
"""Events for the bucket's event endpoints: ``events/pending/<id>.json`` until delivered,
``events/undeliverable/<id>.json`` once out of deliveries (``shared/events.py``)."""


class EventState(StrEnum):
    PENDING = "pending"
    UNDELIVERABLE = "undeliverable"


_EVENT_ID = re.compile(r"[0-9a-f]{32}")


def event_prefix(state: EventState) -> str:
    return f"{EVENTS_PREFIX}{state.value}/"


def event_key(state: EventState, event_id: str) -> str:
    if not _EVENT_ID.fullmatch(event_id):
        raise ValueError(f"not an event id: {event_id!r}")
    return f"{event_prefix(state)}{event_id}.json"


BROKER_TOKENS_PREFIX = "broker/tokens/"
"""The tokens of workers without bucket credentials, ``broker/tokens/<sha256 of the token>.json``
(the token itself is never stored; ``shared/tokens.py``)."""


def broker_token_key(token_hash: str) -> str:
    return f"{BROKER_TOKENS_PREFIX}{check_hash(token_hash)}.json"


BROKER_CLAIMS_PREFIX = "broker/claims/"
"""The claims each token holds through the broker, ``broker/claims/<token id>/<sha256>``
(empty objects; one LIST counts them), so a token holds no more at once than it may."""

_TOKEN_ID = re.compile(r"[0-9a-f]{12}")


def broker_claims_prefix(token_id: str) -> str:
    if not _TOKEN_ID.fullmatch(token_id):
        raise ValueError(f"not a token id: {token_id!r}")
    return f"{BROKER_CLAIMS_PREFIX}{token_id}/"


def broker_claim_key(token_id: str, digest: str) -> str:
    return f"{broker_claims_prefix(token_id)}{check_hash(digest)}"


def parse_broker_claim_key(key: str) -> str:
    """``broker/claims/<token id>/<hash>`` → the hash."""
    return check_hash(key.rsplit("/", 1)[-1])


INDEX_GENERATION_KEY = "index/generation.json"
"""Which tables are the index (``index/<table>-<generation>.lance/`` once rebuilt beside)."""

INDEX_WRITER_KEY = "index/writer.json"
"""The indexer's lease: only the worker (or command) holding it writes to ``index/``."""

REGISTRY_PREFIX = "registry/"
"""Everything under ``registry/``: where documents came from, and ingest runs."""

MONITOR_PREFIX = "monitor/"
"""The monitor's own state."""

SWEEP_CURSOR_KEY = f"{MONITOR_PREFIX}sweep.json"
"""Where the monitor's consistency sweep goes on from: the last digest it covered."""

DAMAGE_CHECK_KEY = f"{MONITOR_PREFIX}damage.json"
"""Where the monitor's damage check goes on from, and the damaged objects it has found."""

WORKERS_PREFIX = "workers/"
"""Notes workers leave about themselves while they wait (``workers/<worker-id>.json``: outside
their run window); removed when they work again or leave."""

WORK_REQUEST_NAME = "digests.json"
"""The reprocess request's name under ``work/<hash>/``: the same records a result zip holds as
its ``digests.json`` (``shared/result.py``; keys.py cannot import it, the result layout imports
nothing of the key layout)."""
_CHECKPOINT = re.compile(r"checkpoint-(\d{4,9})\.zip")

_HASH = re.compile(r"[0-9a-f]{64}")
_EXT = re.compile(r"[a-z0-9]{1,12}")
_RUN_ID = re.compile(r"[0-9A-Za-z._-]{1,100}")
_PATH_ID = re.compile(r"[0-9a-f]{16,64}")
_DIGESTER = re.compile(r"[a-z][a-z0-9-]{0,62}")


class QueueState(StrEnum):
    """The folders of ``queue/`` (key layout): where a job's marker is tells its state. A
    document that is done has no marker; :class:`~bucketdigest.shared.queue.DocState` adds
    ``done`` for what people are told."""

    TODO = "todo"
    PROCESSING = "processing"
    FAILED = "failed"

    @property
    def prefix(self) -> str:
        return f"{QUEUE_PREFIX}{self.value}/"


class Priority(StrEnum):
    """A todo marker's lane: ``queue/todo-high/``, ``queue/todo/`` or ``queue/todo-low/``."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def prefix(self) -> str:
        if self is Priority.NORMAL:
            return QueueState.TODO.prefix
        return f"{QUEUE_PREFIX}{QueueState.TODO.value}-{self.value}/"


TODO_LANES_PREFIX = f"{QUEUE_PREFIX}{QueueState.TODO.value}"
"""What every todo lane's keys start with (for grants)."""


HASH_PREFIX_LENGTH = 8
"""The fewest hex digits of a hash that name a document (the tools print 12)."""
_HASH_OR_PREFIX = re.compile(f"[0-9a-fA-F]{{{HASH_PREFIX_LENGTH},64}}")
_TOO_SHORT_PREFIX = re.compile(f"[0-9a-fA-F]{{1,{HASH_PREFIX_LENGTH - 1}}}")


MAX_KEY_BYTES = 1024
"""S3's limit on a key's length, which every store keeps."""


def check_key(key: str, *, prefix: bool = False) -> str:
    """``key`` if a store may hold it (a ``prefix`` may end in ``/``): relative, at most
    ``MAX_KEY_BYTES``, no empty, ``.`` or ``..`` part, no backslash or control character.
    InvalidKey saying why not: the one check of a key that comes from outside."""
    body = key.removesuffix("/") if prefix else key
    why = None
    if not body:
        why = "an empty key"
    elif len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        why = f"longer than {MAX_KEY_BYTES} bytes"
    elif any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000 for c in key):
        why = "a control character"
    elif "\\" in key or key.startswith("/"):
        why = "a backslash or a leading /"
    elif any(part in ("", ".", "..") for part in body.split("/")):
        why = "an empty, '.' or '..' part"
    if why is not None:
        raise InvalidKey(f"unsafe key {key[:200]!r}: {why}")
    return key


def hash_prefix(value: str) -> str | None:
    """``value`` in lower case if it is a hash or the start of one (8 to 64 hex digits, any
    case), else None."""
    value = value.strip()
    return value.lower() if _HASH_OR_PREFIX.fullmatch(value) else None


def short_hash_prefix(value: str) -> bool:
    """Whether ``value`` looks like the start of a hash too short to name a document."""
    return bool(_TOO_SHORT_PREFIX.fullmatch(value.strip()))


def check_hash(value: str) -> str:
    """Return ``value`` if it is a lowercase hex SHA-256, else raise ValueError."""
    if not _HASH.fullmatch(value):
        raise ValueError(f"not a SHA-256 hex digest: {value!r}")
    return value


def normalize_ext(ext: str) -> str:
    """The extension as stored in keys: lowercase, no dot; ValueError if unusable."""
    clean = ext.lower().lstrip(".")
    if not _EXT.fullmatch(clean):
        raise ValueError(f"unusable file extension: {ext!r}")
    return clean


def raw_key(digest: str, ext: str) -> str:
    return f"{RAW_PREFIX}{check_hash(digest)}.{normalize_ext(ext)}"


def raw_prefix(digest: str) -> str:
    """``store/raw/<hash>.``: lists a document's source whatever its extension."""
    return f"{RAW_PREFIX}{check_hash(digest)}."


def parse_raw_key(key: str) -> tuple[str, str]:
    """``store/raw/<hash>.<ext>`` → ``(hash, ext)``."""
    if not key.startswith(RAW_PREFIX):
        raise ValueError(f"not a raw key: {key!r}")
    name = key[len(RAW_PREFIX) :]
    digest, _, ext = name.partition(".")
    return check_hash(digest), normalize_ext(ext)


def out_key(digest: str) -> str:
    return f"{OUT_PREFIX}{check_hash(digest)}.zip"


def parse_out_key(key: str) -> str:
    """``store/out/<hash>.zip`` → hash."""
    if not (key.startswith(OUT_PREFIX) and key.endswith(".zip")):
        raise ValueError(f"not an output key: {key!r}")
    return check_hash(key[len(OUT_PREFIX) : -len(".zip")])


def queue_key(state: QueueState, digest: str, priority: Priority = Priority.NORMAL) -> str:
    """The marker of ``digest`` in ``state`` (a todo marker in the lane of ``priority``)."""
    folder = priority.prefix if state is QueueState.TODO else state.prefix
    return f"{folder}{check_hash(digest)}"


def parse_queue_key(key: str) -> tuple[QueueState, str]:
    """``queue/<state>/<hash>`` (or ``queue/todo-<priority>/<hash>``) → ``(state, hash)``."""
    for state in QueueState:
        if key.startswith(state.prefix):
            return state, check_hash(key[len(state.prefix) :])
    for priority in Priority:
        if key.startswith(priority.prefix):
            return QueueState.TODO, check_hash(key[len(priority.prefix) :])
    raise ValueError(f"not a queue key: {key!r}")


def registry_doc_prefix(digest: str) -> str:
    return f"{REGISTRY_DOCS_PREFIX}{check_hash(digest)}/"


def registry_doc_key(digest: str, path_id: str) -> str:
    if not _PATH_ID.fullmatch(path_id):
        raise ValueError(f"not a path id: {path_id!r}")
    return f"{registry_doc_prefix(digest)}{path_id}.json"


def parse_registry_doc_key(key: str) -> tuple[str, str]:
    """``registry/docs/<hash>/<path-id>.json`` → ``(hash, path_id)``."""
    if not (key.startswith(REGISTRY_DOCS_PREFIX) and key.endswith(".json")):
        raise ValueError(f"not a registry key: {key!r}")
    digest, _, name = key[len(REGISTRY_DOCS_PREFIX) : -len(".json")].partition("/")
    if not _PATH_ID.fullmatch(name):
        raise ValueError(f"not a registry key: {key!r}")
    return check_hash(digest), name


class RunKind(StrEnum):
    """What a run record under ``registry/runs/`` is about."""

    INGEST = "ingest"
    PURGE = "purge"


def worker_key(worker_id: str) -> str:
    """``workers/<worker-id>.json``."""
    if not _RUN_ID.fullmatch(worker_id):
        raise ValueError(f"{worker_id!r} is not a worker id")
    return f"{WORKERS_PREFIX}{worker_id}.json"


def run_key(run_id: str, kind: RunKind = RunKind.INGEST) -> str:
    if not _RUN_ID.fullmatch(run_id) or run_id.endswith(f".{RunKind.PURGE}"):
        raise ValueError(f"not a run id: {run_id!r}")
    suffix = "" if kind is RunKind.INGEST else f".{kind}"
    return f"{REGISTRY_RUNS_PREFIX}{run_id}{suffix}.json"


def new_run_id(now: datetime) -> str:
    """``20261126T101500Z-3fa2c1``: sortable by time, unique enough across machines."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def run_kind(key: str) -> RunKind:
    """Which kind of run the record at ``key`` (under ``registry/runs/``) describes."""
    stem = key.removeprefix(REGISTRY_RUNS_PREFIX).removesuffix(".json")
    return RunKind.PURGE if stem.endswith(f".{RunKind.PURGE}") else RunKind.INGEST


def source_manifest_key(source: str) -> str:
    """The manifest of the source named ``source`` (a folder path or a repository URL)."""
    source_id = hashlib.sha256(source.encode()).hexdigest()[:32]
    return f"{REGISTRY_SOURCES_PREFIX}{source_id}.json"


def _site_prefix(site: str) -> str:
    return f"{CRAWLS_PREFIX}{hashlib.sha256(site.encode()).hexdigest()[:32]}/"


def crawl_state_key(site: str) -> str:
    """The crawl state of the web site whose start URL is ``site``."""
    return f"{_site_prefix(site)}state.json"


def crawl_log_prefix(site: str) -> str:
    return f"{_site_prefix(site)}log/"


def crawl_log_key(site: str, run_id: str, number: int) -> str:
    """The ``number``-th entry a crawl (the ingest run ``run_id``) wrote to its site's log."""
    if not _RUN_ID.fullmatch(run_id) or not 0 <= number < 10**9:
        raise ValueError(f"not a crawl log entry: {run_id!r} {number}")
    return f"{crawl_log_prefix(site)}{run_id}-{number:06d}.json"


def selftest_key(token: str) -> str:
    return f"{SELFTEST_PREFIX}{token}"


def check_digester_name(name: str) -> str:
    """Return ``name`` if it can name a digester (lowercase words joined by hyphens)."""
    if not _DIGESTER.fullmatch(name):
        raise ValueError(f"not a digester name: {name!r}")
    return name


def work_prefix(digest: str) -> str:
    return f"{WORK_PREFIX}{check_hash(digest)}/"


def work_request_key(digest: str) -> str:
    """``work/<hash>/digests.json``: a reprocess request (the records to start from)."""
    return f"{work_prefix(digest)}{WORK_REQUEST_NAME}"


def work_checkpoint_key(digest: str, number: int) -> str:
    """``work/<hash>/checkpoint-0001.zip``: the ``number``-th checkpoint of a job's progress."""
    if not 1 <= number < 10**9:
        raise ValueError(f"not a checkpoint number: {number}")
    return f"{work_prefix(digest)}checkpoint-{number:04d}.zip"


def parse_work_checkpoint_key(key: str) -> tuple[str, int] | None:
    """``work/<hash>/checkpoint-<n>.zip`` → ``(hash, n)``; None for other work keys."""
    digest = parse_work_digest(key)
    match = _CHECKPOINT.fullmatch(key[len(work_prefix(digest)) :])
    return (digest, int(match.group(1))) if match else None


def parse_work_digest(key: str) -> str:
    """``work/<hash>/...`` → hash."""
    if not key.startswith(WORK_PREFIX):
        raise ValueError(f"not a work key: {key!r}")
    return check_hash(key[len(WORK_PREFIX) :].partition("/")[0])


def index_table_prefix(table: str) -> str:
    """The folder of one LanceDB table: ``index/<table>.lance/``."""
    return f"{INDEX_PREFIX}{table}.lance/"


def past_digest(prefix: str, digest: str) -> str:
    """A ``start_after`` for listing ``prefix`` that skips every key of ``digest`` and of the
    digests before it (``~`` sorts after every character our keys use past a digest)."""
    return f"{prefix}{check_hash(digest)}~"
