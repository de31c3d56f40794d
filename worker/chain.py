"""Runs the digest chain over one document: each digester whose outputs are not final, in
registration order, recording every transition and persisting each completed digester at once.

The coordinator owns the records; digesters only return outputs or raise. A digester whose
needed output is not completed fails without running ("needs markdown, which failed"), which
is a failure with its attempt counted, never a skip.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from bucketdigest.shared.archives import check_member_name, member_path
from bucketdigest.shared.chain import PRIMARY_OUTPUT, cascade
from bucketdigest.shared.errors import (
    ChainIncomplete,
    DigestError,
    Interrupted,
    PermanentDigestError,
    UnsafeArchive,
)
from bucketdigest.shared.records import DigestRecords, OutputRecord, OutputStatus
from bucketdigest.shared.result import DIGESTS, DOCUMENT, INFO
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.digesters import digester_named
from bucketdigest.worker.output_state import complete, fail, reset, runnable, start

log = logging.getLogger(__name__)

RESERVED_MEMBERS = frozenset({DOCUMENT, INFO, DIGESTS})
"""Zip members the packager writes itself; no digester may produce them."""


class ChainHooks(Protocol):
    """What the chain asks of whoever runs it (a job: :class:`bucketdigest.worker.job.JobHooks`)."""

    def execute(self, digester: Digester, ctx: DigestContext) -> dict[str, Produced]:
        """Run ``digester``; raises Interrupted to stop the chain."""
        ...

    def persist(
        self, done: Digester, records: dict[str, OutputRecord], files: dict[str, bytes]
    ) -> None:
        """``done`` ended (``records`` as they are now, ``files`` its artifacts): save progress
        if it is due."""
        ...


@dataclass(frozen=True)
class ChainPlan:
    """The chain and its rules, as the coordinator applies them."""

    chain: Sequence[Digester]
    resets: Mapping[str, Sequence[str]]
    max_attempts: int


def _check_produced(digester: Digester, produced: object, taken: set[str]) -> None:
    """A digester must return exactly its declared outputs, with safe, unclaimed file names."""
    if not isinstance(produced, dict) or set(produced) != set(digester.outputs):
        got = sorted(produced) if isinstance(produced, dict) else type(produced).__name__
        raise DigestError(f"{digester.name} returned {got}, not its outputs {digester.outputs}")
    for output, result in produced.items():
        if not isinstance(result, Produced):
            raise DigestError(f"{digester.name} returned a {type(result).__name__} for {output}")
        for name in result.files:
            try:
                check_member_name(name)
            except UnsafeArchive:
                raise DigestError(f"{digester.name} produced a file it may not: {name!r}") from None
            if name in RESERVED_MEMBERS:
                raise DigestError(f"{digester.name} produced a file it may not: {name!r}")
            if name in taken:
                raise DigestError(f"{digester.name} produced {name!r}, which another output has")


def _write_tree(tree: Path, files: Mapping[str, bytes]) -> None:
    for name, data in files.items():
        path = member_path(tree, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _remove_from_tree(tree: Path, record: OutputRecord) -> None:
    for name in record.artifacts:
        member_path(tree, name).unlink(missing_ok=True)


def _missing_need(
    digester: Digester, records: Mapping[str, OutputRecord], producers: Mapping[str, str]
) -> str | None:
    for need in digester.needs:
        status = records[need].status
        if status not in (OutputStatus.COMPLETED, OutputStatus.SKIPPED):
            return f"needs {need} from {producers[need]}, which is {status}"
    return None


def run_chain(
    plan: ChainPlan,
    records: dict[str, OutputRecord],
    ctx: DigestContext,
    hooks: ChainHooks,
    now: Callable[[], datetime],
) -> dict[str, OutputRecord]:
    """Run every runnable digester once; returns the records as they end. Raises Interrupted
    (the interrupted output restored as it was) when ``hooks.execute`` is interrupted."""
    records = dict(records)
    producers = {o: d.name for d in plan.chain for o in d.outputs}
    for digester in plan.chain:
        mine = [records[o] for o in digester.outputs]
        if not any(runnable(r, plan.max_attempts) for r in mine):
            continue

        # its outputs in progress; what others completed is not its to write
        before = {r.output: r for r in mine}
        started = {r.output: start(r, digester.version, now(), plan.max_attempts) for r in mine}
        records.update(started)
        taken = {
            name
            for record in records.values()
            if record.status is OutputStatus.COMPLETED and record.output not in started
            for name in record.artifacts
        }

        # run it in a scratch folder of its own; a failure fails its outputs alone
        missing = _missing_need(digester, records, producers)
        try:
            if missing:
                raise DigestError(missing)
            scratch = ctx.scratch / digester.name
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            produced = hooks.execute(digester, replace(ctx, scratch=scratch))
            _check_produced(digester, produced, taken)
        except Interrupted:
            records.update(before)
            raise
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            retryable = not isinstance(exc, PermanentDigestError)
            for output in digester.outputs:
                records[output] = fail(records[output], message, retryable, now())
            log.info("%s failed on %s: %s", digester.name, ctx.digest[:12], message)
            continue

        # completed: its files into the tree, what depends on a changed output reset, saved
        files: dict[str, bytes] = {}
        changed = False
        for output, result in produced.items():
            records[output] = complete(records[output], result.files, result.content, now())
            changed |= records[output].content_sha256 != before[output].content_sha256
            files.update(result.files)
        _write_tree(ctx.tree, files)
        if changed:
            _reset_dependants(plan, digester, records, ctx.tree, now())
        hooks.persist(digester, records, files)
    return records


def _reset_dependants(
    plan: ChainPlan,
    producer: Digester,
    records: dict[str, OutputRecord],
    tree: Path,
    now: datetime,
) -> None:
    """New content from ``producer``: whatever was derived from the old content is stale."""
    dependants = set(cascade(producer.name, plan.resets)[1:])
    for output, record in records.items():
        if record.digester in dependants and record.status in (
            OutputStatus.COMPLETED,
            OutputStatus.FAILED,
        ):
            _remove_from_tree(tree, record)
            records[output] = reset(record, now)


def is_finished(records: Mapping[str, OutputRecord], max_attempts: int) -> bool:
    """Every output final: completed, skipped, or failed with no attempt left."""
    return all(r.is_terminal(max_attempts) for r in records.values())


def incomplete(records: DigestRecords, final: bool) -> ChainIncomplete:
    """The error for a chain that did not finish: the failures that caused the others (a
    dependant of a failed output is not a cause), or, when the document is lost (``final``),
    its text's own failure."""
    failed = [r for r in records.outputs if r.status is OutputStatus.FAILED]
    lost = {r.output for r in failed}
    causes = [r for r in failed if not lost & set(digester_named(r.digester).needs)]
    message = "; ".join(f"{r.digester} failed: {r.error}" for r in causes)
    if final:
        message = records.by_output()[PRIMARY_OUTPUT].error
    detail = "\n".join(
        f"{r.output} ({r.digester} {r.digester_version}), attempt {r.attempts}: {r.error}"
        for r in failed
    )
    return ChainIncomplete(message or "digest chain incomplete", detail, records, final)


def run_digester(name: str, ctx: DigestContext) -> dict[str, Produced]:
    """Entry point in the sandbox child: run the registered digester called ``name``."""
    return digester_named(name).run(ctx)
