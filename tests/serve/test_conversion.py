"""The drop-in APIs' conversion settings against the server's cached copy of a result."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from bucketdigest.serve.backend import Backend, ServeSettings
from bucketdigest.serve.conversion import conversion_states
from bucketdigest.serve.results import CacheSettings
from bucketdigest.shared import keys, queue
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.shared.stores.local import LocalStore
from tests.serve.conftest import Served


def _made_with_forced_ocr(result: bytes) -> bytes:
    """``result`` as a conversion with ``force_ocr`` would have left it (its record says so)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(result)) as old, zipfile.ZipFile(out, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "info.json":
                info = json.loads(data)
                provenance = info.setdefault("provenance", {})
                provenance.setdefault("chain_settings", {})["force_ocr"] = True
                data = json.dumps(info).encode()
            new.writestr(item, data)
    return out.getvalue()


def test_a_result_made_again_as_asked_is_not_queued_again_from_an_older_cached_copy(
    writable: StoreSettings, served: Served
) -> None:
    """A conversion that just ended replaced the result the server has cached (checked
    moments ago): asking for what the new result was made with answers it, not a second
    conversion."""
    backend = Backend(ServeSettings(store=writable, cache=CacheSettings(revalidate_seconds=3600)))
    digest = served.digests["rulebooks/long.pdf"]
    forced = DocumentSettings(force_ocr=True)
    store = LocalStore(Path(writable.bucket))
    backend.cache.zip_bytes(digest)  # the server has read the result made without it
    store.put(keys.out_key(digest), _made_with_forced_ocr(store.get(keys.out_key(digest)).data))
    assert conversion_states(backend, [digest], forced) == [DocState.DONE]
    assert queue.state_of(store, digest) is DocState.DONE
