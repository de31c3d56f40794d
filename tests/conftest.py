"""Fixtures shared by the whole suite: stores of every kind, moto's server, generated PDFs."""

from __future__ import annotations

import inspect
import json
import os
import threading
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import jsonschema
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer

from bucketdigest.shared.model_files import CACHE_ENV, model_cache
from bucketdigest.shared.result import DOCUMENT_STRUCTURE, damage
from bucketdigest.shared.result_links import broken_links
from bucketdigest.shared.samples import make_pdf
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.shared.stores.s3 import S3Store
from tests.built_once import roots

for _name, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    # the commands the tests start run one worker unless a test says otherwise (by default
    # they start as many as the machine has room for: tests/worker/test_capacity.py)
    "BUCKETDIGEST_WORKERS": "1",
    # the machine's exported embedding model, wherever a test puts HOME (the documented
    # commands, the README example): an export into a new home costs 15 s each time
    CACHE_ENV: str(model_cache()),
}.items():
    os.environ.setdefault(_name, _value)
os.environ.pop("AWS_PROFILE", None)


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's cache folder (index copies), in the session's temporary folder: tests and
    the commands they start never write to the real one."""
    folder = tmp_path_factory.mktemp("user-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def results_follow_the_document_schema(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Every result the suite makes in a local bucket: its ``document.json`` follows the
    published schema (``shared/document.schema.json``). Checked once the session ends, over
    every result zip left in the session's folders (results the tests damage on purpose, or
    build by hand without the chain, are passed over)."""
    yield
    schema = json.loads((Path(__file__).parents[1] / "shared" / "document.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    archives = (a for root in roots(tmp_path_factory) for a in root.rglob("store/out/*.zip"))
    for archive in archives:
        if damage(archive) is not None:
            continue
        with zipfile.ZipFile(archive) as opened:
            if DOCUMENT_STRUCTURE not in opened.namelist():
                continue
            structure = json.loads(opened.read(DOCUMENT_STRUCTURE))
        errors = sorted(validator.iter_errors(structure), key=lambda e: list(e.path))
        assert not errors, f"{archive}: {errors[0].message} at {list(errors[0].path)}"


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's real HTTP server on a free loopback port, shared by the session."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def moto_bucket(moto_endpoint: str) -> str:
    """A fresh bucket on the moto server; returns its ``s3://`` URL with a prefix."""
    name = f"bd-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=name)
    return f"s3://{name}/data"


@pytest.fixture
def atomic_moto_puts(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto checks If-None-Match and then stores the object as two steps, so under heavy load
    two racers can both pass the check (../shared/FACTS.md); S3 itself is atomic. Tests that
    assert moto's exclusivity make its PUT handler atomic; the protocol itself never relies on
    it (duplicate execution is harmless)."""
    from moto.s3.responses import S3Response

    lock = threading.Lock()
    original = S3Response.put_object

    def put_object(self: S3Response) -> object:
        with lock:
            return original(self)

    monkeypatch.setattr(S3Response, "put_object", put_object)


@pytest.fixture(params=["local", "moto-inprocess", "moto-server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every Store implementation, so one test checks the same contract on each."""
    if request.param == "local":
        yield LocalStore(tmp_path / "bucket")
    elif request.param == "moto-inprocess":
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket="contract")
            yield S3Store("contract", "pfx")
    else:
        endpoint = request.getfixturevalue("moto_endpoint")
        name = f"contract-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
        yield S3Store(name, "pfx", endpoint_url=endpoint)


@pytest.fixture
def pdf_folder(tmp_path: Path) -> Path:
    """Three small distinct PDFs in nested folders."""
    folder = tmp_path / "pdfs"
    (folder / "sub").mkdir(parents=True)
    make_pdf(folder / "alpha.pdf", title="Alpha rules", pages=2, seed=1)
    make_pdf(folder / "beta.pdf", title="Beta rules", pages=1, seed=2)
    make_pdf(folder / "sub" / "gamma.pdf", title="Gamma rules", pages=3, seed=3)
    return folder


@pytest.fixture(scope="session", autouse=True)
def every_result_links_resolve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Once the suite has run: every link in every Markdown member of every result zip it left
    on disk names a member of that zip (image links broke unseen when a worker ran from
    ``/tmp`` or ``/`` while tests checked only that ``images/`` members existed)."""
    yield
    broken = []
    archives = (a for root in roots(tmp_path_factory) for a in root.glob("**/store/out/*.zip"))
    for path in archives:
        try:
            with zipfile.ZipFile(path) as archive:
                broken += [f"{path}: {link}" for link in broken_links(archive)]
        except (zipfile.BadZipFile, OSError):
            continue  # tests that damage results on purpose
    assert not broken, "links that name no member:\n" + "\n".join(broken[:50])


HEAVY_FIXTURES = frozenset(
    {"moto_endpoint", "moto_bucket", "served", "fleet", "server", "browser", "iam_endpoint",
     "lfs_remote", "site_server"}
)  # fmt: skip
"""Fixtures that start a server, moto's or real workers."""
HEAVY_CALLS = ("subprocess", "Popen", "Worker(", ".work(", "run_local", "run_watching",
               "background_server", "ThreadedMotoServer", "work_bucket", "TestClient")  # fmt: skip
"""What a test that starts processes or servers itself calls."""
CONVERTING_COMMAND = '"run", str('
"""How a test invokes ``run`` on a folder (it starts workers) in its own code."""


def _starts_processes(function: object, depth: int = 2) -> bool:
    """Whether ``function``, or a function of its module it calls (two calls deep), starts a
    process or a server."""
    try:
        source = inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False
    if any(call in source for call in HEAVY_CALLS):
        return True
    module = inspect.getmodule(function)
    code = getattr(function, "__code__", None)
    if depth == 0 or module is None or code is None:
        return False
    called = (getattr(module, name, None) for name in code.co_names)
    return any(
        inspect.isfunction(f)
        and f.__module__ == module.__name__
        and _starts_processes(f, depth - 1)
        for f in called
    )


FIRST = "tests/test_bench_smoke.py"
"""The longest tests (minutes each) start first, so a parallel run does not end on them."""


def _converts_a_folder(function: object) -> bool:
    """Whether the test's own code invokes ``run`` on a folder."""
    try:
        return CONVERTING_COMMAND in inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``heavy`` every test that needs a worker process, a server or moto's (by the
    fixtures it uses, or what it calls), so ``scripts/test.sh --fast`` leaves them out; put
    :data:`FIRST`'s tests first."""
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            item.get_closest_marker("slow") is not None
            or fixtures & HEAVY_FIXTURES
            or params.get("store") in ("moto-server", "moto-inprocess")
            or _starts_processes(getattr(item, "function", None))
            or _converts_a_folder(getattr(item, "function", None))
        ):
            item.add_marker(pytest.mark.heavy)
