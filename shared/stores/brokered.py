"""The store of a worker without bucket credentials (``bucketdigest work --via URL --token T``):
every request goes through the broker (``serve --broker``, :mod:`bucketdigest.serve.broker`),
small ones run by it, large transfers straight to the bucket by the presigned URLs it signs.
To the worker it is a store like any other, so the brokered worker runs the same loop, chain,
lease and queue transitions as a credentialed one; the broker lets it touch only what its
current claim names.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from bucketdigest.shared import keys
from bucketdigest.shared.clock import parse_time
from bucketdigest.shared.errors import AccessDenied, NotFound, StoreError, TransientStoreError
from bucketdigest.shared.queue import ClaimResult, Job
from bucketdigest.shared.records import Claim
from bucketdigest.shared.store import ObjectInfo, StoredObject
from bucketdigest.shared.tokens import token_id, worker_prefix

log = logging.getLogger(__name__)

SMALL_BYTES = 256 << 10
"""Writes up to this size go through the broker; larger ones straight to the bucket."""


class BrokeredStore:
    """A store reached through a broker, scoped to the claim the worker holds."""

    supports_conditional_delete = True

    def __init__(self, broker_url: str, token: str, *, timeout: float = 60.0) -> None:
        self.url = broker_url.rstrip("/")
        self.worker_prefix = worker_prefix(token_id(token))
        """What the id of each worker on this token starts with (the broker checks it)."""
        self.client = httpx.Client(
            base_url=f"{self.url}/broker/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
        self.transfers = httpx.Client(timeout=timeout)
        self._refused = False
        self.claim: str | None = None
        """The document whose claim the worker holds (every request names it)."""
        self._offset = timedelta(0)
        self.requests = 0
        """Requests made to the broker (the bench reports them per document)."""
        self.transfers_made = 0
        """Transfers made straight to the bucket by presigned URLs."""
        self._retrying = dict(
            retry=retry_if_exception_type(TransientStoreError),
            wait=wait_random_exponential(multiplier=0.2, max=5),
            stop=stop_after_attempt(6) | stop_after_delay(60),
            reraise=True,
        )

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        def attempt() -> dict[str, Any]:
            self.requests += 1
            try:
                answer = self.client.post(path, json=body)
            except httpx.TransportError as exc:
                raise TransientStoreError(f"broker {self.url}: {exc}") from exc
            if answer.status_code in (401, 403):
                raise AccessDenied(f"broker {self.url}: {_detail(answer)}")
            if answer.status_code == 404:
                raise NotFound(_detail(answer))
            if answer.status_code >= 500 or answer.status_code == 429:
                raise TransientStoreError(f"broker {self.url}: {_detail(answer)}")
            if answer.status_code >= 400:
                raise StoreError(f"broker {self.url}: {_detail(answer)}")
            data: dict[str, Any] = answer.json()
            if "now" in data:
                self._offset = parse_time(data["now"]) - datetime.now(UTC)
            return data

        return Retrying(**self._retrying)(attempt)  # type: ignore[arg-type]

    def _op(self, op: str, key: str = "", **fields: Any) -> dict[str, Any]:
        return self._post("/op", {"op": op, "key": key, "claim": self.claim, **fields})

    # the claim
    def claim_next(self, worker_id: str, lease_seconds: float) -> ClaimResult:
        """Claim the next job through the broker; later requests are for its claim."""
        answer = self._post("/claim", {"worker_id": worker_id, "lease_seconds": lease_seconds})
        if answer["job"] is None:
            if answer.get("refused") and not self._refused:
                log.warning("broker %s: %s", self.url, answer["refused"])
            self._refused = bool(answer.get("refused"))
            return ClaimResult(None, deferred=answer["deferred"])
        claim = Claim.from_dict(answer["job"]["claim"])
        self.claim = claim.ticket.digest
        return ClaimResult(Job(claim, answer["job"]["etag"]))

    # the Store protocol
    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset

    def get(self, key: str) -> StoredObject:
        answer = self._op("get", key)
        return StoredObject(
            base64.b64decode(answer["data"]), answer["etag"], parse_time(answer["last_modified"])
        )

    def head(self, key: str) -> ObjectInfo | None:
        return _info(self._op("head", key)["info"])

    def list(
        self, prefix: str, start_after: str = "", limit: int | None = None
    ) -> Iterator[ObjectInfo]:
        listed = self._op("list", prefix, start_after=start_after, limit=limit)["items"]
        for item in listed:
            info = _info(item)
            assert info is not None
            yield info

    def modified_times(self, prefix: str) -> Iterator[float]:
        for info in self.list(prefix):
            yield info.last_modified.timestamp()

    def put(self, key: str, data: bytes) -> str:
        etag = self._write(key, data)
        assert etag is not None, "an unconditional write lands"
        return etag

    def put_if_absent(self, key: str, data: bytes | Path) -> str | None:
        return self._write(key, data, if_none_match=True)

    def put_if_match(self, key: str, data: bytes, etag: str) -> str | None:
        return self._write(key, data, if_match=etag)

    def delete(self, key: str, if_match: str | None = None) -> bool:
        deleted: bool = self._op("delete", key, etag=if_match)["deleted"]
        if deleted and key == keys.queue_key(keys.QueueState.PROCESSING, self.claim or "0" * 64):
            self.claim = None
        return deleted

    def delete_many(self, keys_: Sequence[str]) -> None:
        if self.claim is None:  # the claim ended: the broker cleared its scratch
            return
        for start in range(0, len(keys_), 1000):
            self._op("delete_many", keys=list(keys_[start : start + 1000]))

    def download(self, key: str, dest: Path) -> ObjectInfo:
        signed = self._post("/sign", {"method": "GET", "claim": self.claim, "key": key})
        self.transfers_made += 1
        with self.transfers.stream("GET", signed["url"]) as answer:
            if answer.status_code == 404:
                raise NotFound(f"{key} not found")
            _raise_for(answer, key)
            with open(dest, "wb") as handle:
                for chunk in answer.iter_bytes(1 << 20):
                    handle.write(chunk)
            return ObjectInfo(
                key=key,
                size=dest.stat().st_size,
                etag=answer.headers["etag"],
                last_modified=parsedate_to_datetime(answer.headers["last-modified"]),
            )

    # writes: small ones through the broker, large ones by a presigned PUT
    def _write(
        self, key: str, data: bytes | Path, *, if_none_match: bool = False, if_match: str = ""
    ) -> str | None:
        size = data.stat().st_size if isinstance(data, Path) else len(data)
        if size <= SMALL_BYTES:
            body = data.read_bytes() if isinstance(data, Path) else data
            op = "put_if_absent" if if_none_match else "put_if_match" if if_match else "put"
            encoded = base64.b64encode(body).decode()
            etag: str | None = self._op(op, key, data=encoded, etag=if_match or None)["etag"]
            return etag
        request = {"method": "PUT", "claim": self.claim, "key": key}
        conditions = {"if_none_match": if_none_match, "if_match": if_match or None}
        signed = self._post("/sign", request | conditions)
        self.transfers_made += 1
        content = data.open("rb") if isinstance(data, Path) else data
        try:
            answer = self.transfers.put(signed["url"], content=content, headers=signed["headers"])
        finally:
            if isinstance(data, Path):
                content.close()  # type: ignore[union-attr]
        if answer.status_code == 412:
            return None
        _raise_for(answer, key)
        return str(answer.headers["etag"])

    def close(self) -> None:
        self.client.close()
        self.transfers.close()


def _info(item: dict[str, Any] | None) -> ObjectInfo | None:
    if item is None:
        return None
    return ObjectInfo(item["key"], item["size"], item["etag"], parse_time(item["last_modified"]))


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("detail", answer.text))
    except ValueError:
        return answer.text[:200]


def _raise_for(answer: httpx.Response, key: str) -> None:
    if answer.status_code >= 500:
        raise TransientStoreError(f"{key}: the bucket answered {answer.status_code}")
    if answer.status_code == 403:
        raise AccessDenied(f"{key}: the presigned URL was refused (expired?)")
    if answer.status_code >= 400:
        raise StoreError(f"{key}: the bucket answered {answer.status_code}")
