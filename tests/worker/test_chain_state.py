"""The digest chain's state machine, transition by transition, with small in-process digesters
(the real ones are exercised in test_digesters.py and test_digest_jobs.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import pytest

from bucketdigest.shared import keys
from bucketdigest.shared.chain import RESETS
from bucketdigest.shared.errors import DigestError
from bucketdigest.shared.filetypes import FileKind, file_type
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.chain import ChainPlan, is_finished, run_chain
from bucketdigest.worker.checkpoint import Progress
from bucketdigest.worker.digest_settings import DigestSettings
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.digesters import CHAIN, ChainError, validate_chain
from bucketdigest.worker.output_state import TransitionError, plan, reset, start

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DIGEST = "ab" * 32


class Producer(Digester):
    name = "producer"
    label = "Producer"
    description = "makes text"
    version = "1"
    outputs = ("text",)
    kinds = frozenset({FileKind.DOCUMENT, FileKind.TEXT})
    content: ClassVar[bytes] = b"first"

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        return {"text": Produced({"text.txt": self.content}, {"size": len(self.content)})}


class Consumer(Digester):
    name = "consumer"
    label = "Consumer"
    description = "reads text"
    version = "1"
    outputs = ("upper",)
    needs = ("text",)
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        return {"upper": Produced({"upper.txt": ctx.read_text("text.txt").upper().encode()})}


class Imager(Digester):
    name = "imager"
    label = "Imager"
    description = "documents only"
    version = "1"
    outputs = ("picture",)
    kinds = frozenset({FileKind.DOCUMENT})

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        return {"picture": Produced({"picture.bin": b"\x89"})}


TOY = (Producer(), Imager(), Consumer())
TOY_RESETS = {"producer": ("consumer",)}
TOY_PLAN = ChainPlan(TOY, TOY_RESETS, max_attempts=3)


def _ctx(tmp_path: Path, ext: str = "pdf") -> DigestContext:
    tree = tmp_path / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    source = tmp_path / f"source.{ext}"
    source.write_bytes(b"x")
    return DigestContext(DIGEST, source, file_type(ext), tree, tmp_path / "s", DigestSettings())


class Calls:
    """An executor that runs digesters in-process, counting calls and failing on demand."""

    def __init__(self, failing: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.failing = failing or set()

    def __call__(self, digester: Digester, ctx: DigestContext) -> dict[str, Produced]:
        self.calls.append(digester.name)
        if digester.name in self.failing:
            raise DigestError(f"{digester.name} is down")
        return digester.run(ctx)


@dataclass
class Hooks:
    """The chain's hooks from two functions."""

    run: Callable[[Digester, DigestContext], dict[str, Produced]]
    save: Callable[..., None] = lambda *a: None

    def execute(self, digester: Digester, ctx: DigestContext) -> dict[str, Produced]:
        return self.run(digester, ctx)

    def persist(self, *args: object) -> None:
        self.save(*args)


def _run(records: dict[str, OutputRecord], ctx: DigestContext, calls: Calls, persist=None):
    hooks = Hooks(calls, persist or (lambda *a: None))
    return run_chain(TOY_PLAN, records, ctx, hooks, lambda: NOW)


def test_the_registered_chain_is_valid_and_in_the_documented_order() -> None:
    validate_chain(CHAIN, RESETS, "markdown")
    assert [d.name for d in CHAIN] == [
        "doc-to-markdown",
        "doc-to-screenshot",
        "page-ocr",
        "url-crawl",
        "tags",
        "summary",
        "search-keyword",
        "search-semantic",
    ]


@pytest.mark.parametrize(
    ("chain", "resets", "message"),
    [
        ((Producer(), Producer()), {}, "two digesters are named"),
        ((Consumer(), Producer()), TOY_RESETS, "no earlier digester produces"),
        ((Producer(), Consumer()), {}, "not in the resets of producer"),
        (
            (Producer(), Consumer()),
            {"producer": ("consumer",), "consumer": ("producer",)},
            "does not run after it",
        ),
    ],
)
def test_an_inconsistent_chain_is_refused_at_start_up(chain, resets, message) -> None:
    with pytest.raises(ChainError, match=message):
        validate_chain(chain, resets, "text")


def test_skipped_is_decided_from_the_file_type_alone() -> None:
    pdf = plan(TOY, file_type("pdf"), NOW)
    text = plan(TOY, file_type("md"), NOW)
    assert {o: r.status for o, r in pdf.items()} == {
        "text": OutputStatus.TODO,
        "picture": OutputStatus.TODO,
        "upper": OutputStatus.TODO,
    }
    assert text["picture"].status is OutputStatus.SKIPPED
    assert text["text"].status is OutputStatus.TODO


def test_every_output_completes_with_its_files_and_fingerprint(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    final = _run(plan(TOY, ctx.file, NOW), ctx, Calls())
    assert is_finished(final, 3)
    assert final["upper"].status is OutputStatus.COMPLETED
    assert final["upper"].artifacts == ("upper.txt",)
    assert final["upper"].attempts == 1 and final["upper"].digester_version == "1"
    assert (ctx.tree / "upper.txt").read_bytes() == b"FIRST"
    assert final["text"].content == {"size": 5}


def test_a_failure_is_retried_until_the_attempt_cap_then_final(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    records = plan(TOY, ctx.file, NOW)
    calls = Calls(failing={"imager"})
    for attempt in (1, 2, 3):
        records = _run(records, ctx, calls)
        picture = records["picture"]
        assert picture.status is OutputStatus.FAILED and picture.attempts == attempt
        assert picture.error == "imager is down"
        assert picture.is_terminal(3) is (attempt == 3)
    assert calls.calls.count("imager") == 3
    assert calls.calls.count("producer") == 1  # completed outputs are never redone
    _run(records, ctx, calls)
    assert calls.calls.count("imager") == 3  # out of attempts: not started again
    with pytest.raises(TransitionError):
        start(records["picture"], "1", NOW, 3)
    assert is_finished(records, 3)


def test_a_missing_dependency_is_a_failure_not_a_skip(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    calls = Calls(failing={"producer"})
    final = _run(plan(TOY, ctx.file, NOW), ctx, calls)
    assert final["upper"].status is OutputStatus.FAILED
    assert final["upper"].attempts == 1
    assert "needs text from producer, which is failed" in final["upper"].error
    assert "consumer" not in calls.calls


def test_new_content_from_a_producer_resets_its_dependants_and_same_content_does_not(
    tmp_path: Path,
) -> None:
    ctx = _ctx(tmp_path)
    calls = Calls()
    records = _run(plan(TOY, ctx.file, NOW), ctx, calls)
    records["text"] = reset(records["text"], NOW)  # run the producer again: same content
    records = _run(records, ctx, calls)
    assert calls.calls.count("consumer") == 1
    assert records["upper"].status is OutputStatus.COMPLETED
    Producer.content = b"second"
    try:
        records["text"] = reset(records["text"], NOW)
        records = _run(records, ctx, calls)
    finally:
        Producer.content = b"first"
    assert calls.calls.count("consumer") == 2  # reset by the cascade, then made again
    assert (ctx.tree / "upper.txt").read_bytes() == b"SECOND"
    assert records["picture"].attempts == 1  # not a dependant: untouched


def test_a_job_that_crashes_between_two_digesters_resumes_after_the_first(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "bucket")
    kind = file_type("pdf")
    progress = Progress(store, DIGEST, checkpoint_after=0)

    def persist(digester: Digester, records: dict[str, OutputRecord], files: dict) -> None:
        if progress.completed(DigestRecords(DIGEST, str(kind), tuple(records.values())), files):
            progress.save()

    class Crash(BaseException):
        pass

    def crash_on_imager(digester: Digester, ctx: DigestContext) -> dict[str, Produced]:
        if digester.name == "imager":
            raise Crash  # the process dies here: nothing after this runs
        return digester.run(ctx)

    with pytest.raises(Crash):
        run_chain(
            TOY_PLAN,
            plan(TOY, kind, NOW),
            _ctx(tmp_path / "first"),
            Hooks(crash_on_imager, persist),
            lambda: NOW,
        )
    assert store.head(keys.work_checkpoint_key(DIGEST, 1)) is not None

    second = _ctx(tmp_path / "second")
    resumed = Progress(store, DIGEST, 0).load(second.tree, None, lambda: NOW)
    assert resumed["text"].status is OutputStatus.COMPLETED
    assert (second.tree / "text.txt").read_bytes() == b"first"
    calls = Calls()
    final = _run(plan(TOY, kind, NOW, resumed), second, calls)
    assert calls.calls == ["imager", "consumer"]
    assert is_finished(final, 3)


def test_a_completed_output_whose_saved_files_are_damaged_is_made_again(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "bucket")
    ctx = _ctx(tmp_path / "first")
    records = _run(plan(TOY, ctx.file, NOW), ctx, Calls())
    progress = Progress(store, DIGEST, checkpoint_after=0)
    progress.completed(
        DigestRecords(DIGEST, str(ctx.file), tuple(records.values())), {"text.txt": b"tampered"}
    )
    progress.save()
    resumed = Progress(store, DIGEST, 0).load(tmp_path / "tree2", None, lambda: NOW)
    assert resumed["text"].status is OutputStatus.TODO
    assert resumed["picture"].status is OutputStatus.TODO  # no saved files at all
