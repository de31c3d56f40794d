"""Least privilege: which key prefixes each role reads, writes and deletes, the IAM policy
that grants exactly that under one bucket prefix (``bucketdigest policy``), and which role
each command runs as (named in "access denied" errors).

Every grant is confined to the bucket prefix, so one bucket holds several tenants side by
side. A LIST is granted on the bucket with an ``s3:prefix`` condition, as S3 requires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from bucketdigest.shared import keys


class Role(StrEnum):
    WORKER = "worker"
    INGESTOR = "ingestor"
    MONITOR = "monitor"
    READER = "reader"
    ADMIN = "admin"
    UPLOADER = "uploader"


class Action(StrEnum):
    """The IAM actions bucketdigest's requests need (a HEAD is a ``GetObject``; a multipart
    upload's parts are ``PutObject``)."""

    LIST = "s3:ListBucket"
    READ = "s3:GetObject"
    WRITE = "s3:PutObject"
    ABORT_UPLOAD = "s3:AbortMultipartUpload"
    DELETE = "s3:DeleteObject"


ACTION_OF_REQUEST = {
    "GET": Action.READ,
    "HEAD": Action.READ,
    "PUT": Action.WRITE,
    "DELETE": Action.DELETE,
    "LIST": Action.LIST,
}
"""The IAM action behind each kind of store request (the first word of its description)."""

EVERYTHING = ""
"""The whole bucket prefix."""


@dataclass(frozen=True)
class Grant:
    """Key prefixes (relative to the bucket prefix) a role may read, write and delete."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()


CLAIM_REQUESTS: dict[str, frozenset[str]] = {
    keys.RAW_PREFIX: frozenset({"get", "head"}),
    # the result: written only as a new one (If-None-Match) or over the version read, never deleted
    keys.OUT_PREFIX: frozenset({"get", "head", "put_if_absent", "put_if_match"}),
    keys.WORK_PREFIX: frozenset({"get", "head", "list", "put", "put_if_absent", "put_if_match",
                                 "delete", "delete_many"}),
    keys.QueueState.PROCESSING.prefix: frozenset({"get", "head", "put_if_match", "delete"}),
    keys.TODO_LANES_PREFIX: frozenset({"get", "head", "put_if_absent"}),
    keys.QueueState.FAILED.prefix: frozenset({"get", "head", "put"}),
}  # fmt: skip
"""What a worker may ask of each kind of key of the claim it holds (the broker's scope for a
token, by key prefix): the requests behind the transitions it needs (renew, finish, requeue,
hand back, dead-letter) and its checkpoints. The worker role's grant includes them (derived
below), so the broker never lets a token do what a credentialed worker may not."""

_STORE_REQUEST_ACTION = {
    "get": Action.READ, "head": Action.READ, "list": Action.LIST, "put": Action.WRITE,
    "put_if_absent": Action.WRITE, "put_if_match": Action.WRITE, "delete": Action.DELETE,
    "delete_many": Action.DELETE,
}  # fmt: skip


def _claims_grant() -> Grant:
    """The grant :data:`CLAIM_REQUESTS` needs (a LIST is granted on the bucket, so a prefix
    listed is a prefix read)."""
    needed: dict[Action, list[str]] = {action: [] for action in Action}
    for prefix, requests in CLAIM_REQUESTS.items():
        for action in {_STORE_REQUEST_ACTION[r] for r in requests}:
            needed[Action.READ if action is Action.LIST else action].append(prefix)
    return Grant(
        read=tuple(needed[Action.READ]),
        write=tuple(needed[Action.WRITE]),
        delete=tuple(needed[Action.DELETE]),
    )


def _with(grant: Grant, more: Grant) -> Grant:
    """``grant`` with the prefixes of ``more`` it lacks."""

    def joined(have: tuple[str, ...], add: tuple[str, ...]) -> tuple[str, ...]:
        return have + tuple(p for p in add if not any(p.startswith(h) for h in have))

    return Grant(
        joined(grant.read, more.read), joined(grant.write, more.write),
        joined(grant.delete, more.delete),
    )  # fmt: skip


_INFLOW = Grant(
    read=(keys.INBOX_PREFIX,),
    write=(keys.RAW_PREFIX, keys.REGISTRY_DOCS_PREFIX, keys.REGISTRY_RUNS_PREFIX,
           keys.INBOX_REFUSALS_PREFIX),
    delete=(keys.INBOX_PREFIX, keys.INBOX_REFUSALS_PREFIX),
)  # fmt: skip
"""What taking documents in from the inbox needs (the monitor duty, the worker's too), and
uploads through ``serve``: store the source, record its name and the run, queue it, then
remove it from the inbox (or record why not)."""

GRANTS: dict[Role, Grant] = {
    # claims and runs jobs; its monitor duty sweeps leases and keeps the search index; a
    # broker (serve --broker) runs with these and reads the worker tokens; a claim's requests
    Role.WORKER: _with(Grant(
        read=(keys.RAW_PREFIX, keys.OUT_PREFIX, keys.QUEUE_PREFIX, keys.WORK_PREFIX,
              keys.REGISTRY_PREFIX, keys.INDEX_PREFIX, keys.SELFTEST_PREFIX, keys.SETTINGS_KEY,
              keys.EVENTS_PREFIX, keys.BROKER_TOKENS_PREFIX, keys.BROKER_CLAIMS_PREFIX,
              keys.SECRETS_PREFIX),
        write=(keys.OUT_PREFIX, keys.QUEUE_PREFIX, keys.WORK_PREFIX, keys.INDEX_PREFIX,
               keys.WORKERS_PREFIX, keys.SELFTEST_PREFIX, keys.EVENTS_PREFIX,
               keys.BROKER_CLAIMS_PREFIX),
        delete=(keys.QUEUE_PREFIX, keys.WORK_PREFIX, keys.INDEX_PREFIX, keys.WORKERS_PREFIX,
                keys.SELFTEST_PREFIX, keys.EVENTS_PREFIX, keys.BROKER_CLAIMS_PREFIX),
    ), _with(_claims_grant(), _INFLOW)),
    # uploads sources, records where they came from, queues them
    Role.INGESTOR: Grant(
        read=(keys.RAW_PREFIX, keys.OUT_PREFIX, keys.QUEUE_PREFIX, keys.REGISTRY_PREFIX,
              keys.SELFTEST_PREFIX, keys.SETTINGS_KEY),
        write=(keys.RAW_PREFIX, keys.TODO_LANES_PREFIX, keys.REGISTRY_PREFIX,
               keys.SELFTEST_PREFIX),
        delete=(keys.CRAWLS_PREFIX, keys.SELFTEST_PREFIX),
    ),
    # requeues, dead-letters, retries and reprocesses; the consistency sweep; the inbox
    Role.MONITOR: _with(Grant(
        read=(keys.RAW_PREFIX, keys.OUT_PREFIX, keys.QUEUE_PREFIX, keys.WORK_PREFIX,
              keys.REGISTRY_PREFIX, keys.MONITOR_PREFIX, keys.SELFTEST_PREFIX, keys.SETTINGS_KEY,
              keys.EVENTS_PREFIX, keys.SECRETS_PREFIX),
        write=(keys.QUEUE_PREFIX, keys.WORK_PREFIX, keys.MONITOR_PREFIX, keys.SELFTEST_PREFIX,
               keys.EVENTS_PREFIX),
        delete=(keys.QUEUE_PREFIX, keys.WORK_PREFIX, keys.SELFTEST_PREFIX, keys.EVENTS_PREFIX),
    ), _INFLOW),
    # status, ls, get, search, serve: everything but the secrets (a reader who could read the
    # events secret could forge signed events)
    Role.READER: Grant(
        read=(keys.RAW_PREFIX, keys.OUT_PREFIX, keys.QUEUE_PREFIX, keys.WORK_PREFIX,
              keys.REGISTRY_PREFIX, keys.INDEX_PREFIX, keys.SELFTEST_PREFIX, keys.SETTINGS_KEY,
              keys.EVENTS_PREFIX, keys.BROKER_TOKENS_PREFIX, keys.MONITOR_PREFIX,
              keys.WORKERS_PREFIX, keys.INBOX_PREFIX),
    ),
    Role.ADMIN: Grant(read=(EVERYTHING,), write=(EVERYTHING,), delete=(EVERYTHING,)),
    # puts documents in the inbox (aws s3 cp, rclone, a phone app): reads and lists nothing
    Role.UPLOADER: Grant(write=(keys.INBOX_PREFIX,)),
}  # fmt: skip

ROLE_OF_COMMAND: dict[str, Role] = {
    "ingest": Role.INGESTOR,
    "work": Role.WORKER,
    "index": Role.WORKER,
    "monitor": Role.MONITOR,
    "retry": Role.MONITOR,
    "reprocess": Role.MONITOR,
    "prioritize": Role.MONITOR,
    "status": Role.READER,
    "ls": Role.READER,
    "get": Role.READER,
    "search": Role.READER,
    "serve": Role.READER,
    "mcp": Role.READER,
    "run": Role.ADMIN,
    "purge": Role.ADMIN,
    "rm": Role.ADMIN,
    "config": Role.ADMIN,
    "tokens": Role.ADMIN,
}
"""The role whose credentials each command needs (``serve`` with writes on needs monitor's)."""


def split_bucket_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` → (``bucket``, ``some/prefix/``; empty for none)."""
    if not url.startswith("s3://") or not url[5:].split("/", 1)[0]:
        raise ValueError(f"{url!r} is not an s3://bucket[/prefix] URL")
    bucket, _, prefix = url[5:].partition("/")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


def _resources(bucket: str, prefix: str, key_prefixes: tuple[str, ...]) -> list[str]:
    return [f"arn:aws:s3:::{bucket}/{prefix}{key}*" for key in key_prefixes]


def iam_policy(role: Role, bucket_url: str, *, cleanup: bool = False) -> dict[str, Any]:
    """The identity policy granting ``role`` what it needs under ``bucket_url`` and no more.
    With ``cleanup`` (workers run with ``--delete-source-when-done``), a worker may also
    delete sources (the monitor may always put them in ``store/raw/``: it takes the inbox in,
    and ``retry`` and ``reprocess`` put a deleted source back from where it was ingested)."""
    bucket, prefix = split_bucket_url(bucket_url)
    grant = GRANTS[role]
    if cleanup and role is Role.WORKER:
        grant = replace(grant, delete=(*grant.delete, keys.RAW_PREFIX))
    listing: dict[str, Any] = {
        "Sid": "ListTheTenantPrefix",
        "Effect": "Allow",
        "Action": [Action.LIST.value],
        "Resource": f"arn:aws:s3:::{bucket}",
    }
    if prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}*"]}}
    statements = [listing] if grant.read else []
    for sid, actions, key_prefixes in (
        ("Read", [Action.READ], grant.read),
        ("Write", [Action.WRITE, Action.ABORT_UPLOAD], grant.write),
        ("Delete", [Action.DELETE], grant.delete),
    ):
        if key_prefixes:
            statements.append(
                {
                    "Sid": sid,
                    "Effect": "Allow",
                    "Action": [a.value for a in actions],
                    "Resource": _resources(bucket, prefix, key_prefixes),
                }
            )
    return {"Version": "2012-10-17", "Statement": statements}


def grants_table() -> str:
    """The table of docs/protocol.md: for each role and key prefix, R, W and D granted."""
    prefixes = sorted({p for g in GRANTS.values() for p in (*g.read, *g.write, *g.delete)} - {""})
    rows = ["| role | commands | " + " | ".join(f"`{p}`" for p in prefixes) + " |"]
    rows.append("|" + " --- |" * (len(prefixes) + 2))
    for role, grant in GRANTS.items():
        commands = ", ".join(f"`{c}`" for c, r in ROLE_OF_COMMAND.items() if r is role)
        cells = []
        for prefix in prefixes:
            allowed = [
                letter
                for letter, granted in (("R", grant.read), ("W", grant.write), ("D", grant.delete))
                if EVERYTHING in granted or any(prefix.startswith(g) for g in granted)
            ]
            cells.append("".join(allowed) or "-")
        rows.append(f"| {role} | {commands} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
