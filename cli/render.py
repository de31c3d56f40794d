"""How the CLI shows results to people (rich tables); JSON output lives with each command."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from bucketdigest.ingestor.ingest import IngestReport
from bucketdigest.monitor.catalog import CatalogEntry
from bucketdigest.monitor.damage import DamageReport
from bucketdigest.monitor.loop import MonitorPass
from bucketdigest.monitor.status import describe_time_left
from bucketdigest.runner.local import RunReport
from bucketdigest.runner.overview import Overview
from bucketdigest.search.hit import Hit
from bucketdigest.search.index import IndexStats
from bucketdigest.search.indexer import IndexReport
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.queue import DocState
from bucketdigest.shared.records import IngestRun
from bucketdigest.worker.job import JobResult, Outcome
from bucketdigest.worker.loop import WorkerSummary


def ingest_json(report: IngestReport) -> dict[str, Any]:
    return {
        "run": json.loads(report.run.to_json()),
        "files": [asdict(f) for f in report.files],
    }


def catalog_json(entry: CatalogEntry) -> dict[str, Any]:
    known = json.loads(entry.record.to_json()) if entry.record else {}
    where = {"digest": entry.digest, "source": entry.source, "path": entry.path}
    return {**where, **known, "state": entry.state or "unknown", "revision": entry.revision}


def monitor_line(done: MonitorPass) -> str:
    swept = done.sweep
    line = (
        f"requeued {len(swept.requeued)}, dead-lettered {len(swept.dead_lettered)}, "
        f"finalized {len(swept.finalized)}"
    )
    if swept.released:
        line += f", released {len(swept.released)} hold(s) of dead purges"
    if (repaired := done.reconcile) is not None:
        line += (
            f"; consistency: enqueued {len(repaired.enqueued)}, "
            f"cleaned {len(repaired.cleaned)}, scratch removed {len(repaired.scratch_removed)}"
        )
    if (checked := done.damage) is not None:
        line += "; " + damage_line(checked)
    if (events := done.events) is not None and events.outcomes:
        line += (
            f"; events: delivered {events.delivered}, to retry {events.retrying}, "
            f"undeliverable {events.undeliverable}"
        )
    if (inbox := done.inbox) is not None and (inbox.taken or inbox.refused or inbox.errors):
        line += (
            f"; inbox: taken {len(inbox.taken)}, refused {len(inbox.refused)}, "
            f"not read {len(inbox.errors)}, waiting {inbox.waiting}"
        )
    return line


def damage_line(checked: DamageReport) -> str:
    """One damage check: what it read and found, and what it set right."""
    return (
        f"damage check: {checked.checked} documents ({checked.bytes_read >> 20} MiB), "
        f"{len(checked.found)} damaged object(s), {len(checked.remade)} being made again, "
        f"{len(checked.mended)} marker(s) mended"
    )


def watched_result(console: Console, result: JobResult) -> None:
    """A document a watching ``run`` finished or failed, as a line."""
    if result.outcome.ends_document and result.outcome is not Outcome.FAILED:
        console.print(f"done {result.name} ({result.pages} pages)")
    elif result.outcome in (Outcome.FAILED, Outcome.RETRYING):
        reason = result.error.split("\n")[0] if result.error else ""
        console.print(f"[red]{result.outcome.value}[/red] {result.name}: {reason}")


class RunProgress:
    """The live display of ``run``: documents settled, pages, pages/s, ETA; failures as lines."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[pages]} pages, {task.fields[rate]} pages/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task("documents", total=None, pages=0, rate="-")
        self._started = 0.0

    def __enter__(self) -> RunProgress:
        self._progress.__enter__()
        self._started = self._progress.get_time()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._progress.__exit__(kind, value, trace)

    def ingested(self, report: IngestReport) -> None:
        ingest_summary(self._progress.console, report.run)
        todo = sum(1 for f in report.files if f.state is not DocState.DONE)
        self._progress.update(self._task, total=todo)

    def result(self, result: JobResult) -> None:
        pages = self._progress.tasks[self._task].fields["pages"] + result.pages
        elapsed = max(self._progress.get_time() - self._started, 1e-9)
        self._progress.update(
            self._task,
            advance=1 if result.outcome.ends_document else 0,
            pages=pages,
            rate=f"{pages / elapsed:.1f}",
        )
        if result.outcome in (Outcome.FAILED, Outcome.RETRYING):
            reason = result.error.split("\n")[0] if result.error else ""
            self._progress.console.print(
                f"[red]{result.outcome.value}[/red] {result.name}: {reason}"
            )


def ingest_summary(console: Console, run: IngestRun) -> None:
    console.print(
        f"ingest {run.run_id}: discovered {run.discovered}, already done {run.already_done}, "
        f"uploaded {run.uploaded}, queued {run.queued}, removed since last time "
        f"{len(run.removed)}, errors {len(run.errors)} ({run.store_requests} store requests)"
    )
    for crawl in run.crawls:
        ended = "went through" if crawl.completed else "stopped before the end"
        console.print(
            f"crawl of {crawl.site} {ended}: {crawl.discovered} URLs found, {crawl.fetched} "
            f"fetched ({crawl.unchanged} unchanged, {crawl.bytes:,} bytes), {crawl.resumed} "
            f"kept from the crawl it resumed, {crawl.errors} errors"
        )
    for error in run.errors:
        console.print(f"[red]error[/red] {error.path}: {error.reason}")
    if run.other_types:
        console.print(f"[yellow]hint[/yellow] {other_types_hint(run.other_types)}")


def other_types_hint(other_types: dict[str, int]) -> str:
    """What a folder held that was not asked for, and the ``--ext`` that takes it."""
    shown = list(other_types.items())[:6]
    listed = ", ".join(f"{count} .{ext or '(none)'}" for ext, count in shown)
    groups = sorted(
        {
            group
            for ext in other_types
            for group, exts in EXTENSION_GROUPS.items()
            if ext in exts and group != "all"
        }
    )
    total = sum(other_types.values())
    left_out = f"{total} file(s) of other types left out ({listed})"
    if not groups:
        return f"{left_out}: bucketdigest does not read these types"
    return f"{left_out}: add --ext {','.join(groups)} (or --ext all) to take them"


def status_view(seen: Overview) -> Group:
    """Counts, rate and ETA, recent failures, latest runs and the index, as one renderable
    (printed once by ``status``, refreshed in place by ``status --watch``)."""
    status, index = seen.status, seen.index
    as_of = f" at {status.as_of:%H:%M:%S} UTC" if status.as_of else ""
    counts = Table(title=f"Documents by state{as_of}")
    for name in status.counts:
        counts.add_column(name, justify="right")
    counts.add_row(*(str(n) for n in status.counts.values()))
    parts: list[RenderableType] = [
        counts,
        f"last hour: {sum(status.done_per_minute)} done ({status.rate_per_minute:.1f}/min); "
        f"time left at that rate: {describe_time_left(status.eta_seconds)}",
        f"bucket settings: version {status.settings_version} (bucketdigest config show)",
        *(
            [
                f"events: {status.events.get('pending', 0)} pending, "
                f"{status.events.get('undeliverable', 0)} undeliverable (events/)"
            ]
            if any(status.events.values())
            else []
        ),
        *(
            [f"inbox: {status.inbox} object(s), {len(status.refused)} refused (inbox/)"]
            if status.inbox
            else []
        ),
    ]

    # the sections that have something to say
    if status.waiting:
        parts.append(
            _table(
                "Workers waiting for their run window",
                ("worker", "window", "opens at"),
                [
                    (n.worker_id, ", ".join(n.windows), f"{n.opens_at:%H:%M %Z}")
                    for n in status.waiting
                ],
            )
        )
    if status.failures:
        parts.append(
            _table(
                "Recent failures",
                ("document", "hash", "attempt", "failed at", "error"),
                [
                    (f.name, f.digest[:12], str(f.attempt), f.failed_at, f.error.split("\n")[0])
                    for f in status.failures
                ],
            )
        )
    if status.refused:
        parts.append(
            _table(
                "Refused by the inbox (left in inbox/: replace or remove them)",
                ("object", "bytes", "refused at", "why"),
                [
                    (f"inbox/{r.name}", f"{r.size:,}", f"{r.refused_at:%Y-%m-%d %H:%M}", r.reason)
                    for r in status.refused
                ],
            )
        )
    if status.damaged:
        parts.append(
            _table(
                "Damaged objects (bucketdigest check repairs what it can)",
                ("object", "what is wrong"),
                sorted(status.damaged.items()),
            )
        )
    if status.runs:
        parts.append(
            _table(
                "Latest ingest runs",
                ("run", "discovered", "done before", "uploaded", "queued", "errors", "requests"),
                [
                    (
                        r.run_id,
                        *(str(n) for n in (r.discovered, r.already_done, r.uploaded, r.queued)),
                        str(len(r.errors)),
                        str(r.store_requests),
                    )
                    for r in status.runs
                ],
            )
        )

    parts.append(index_line(index, status.counts["done"]))
    return Group(*parts)


def _table(title: str, columns: tuple[str, ...], rows: Iterable[Sequence[str]]) -> Table:
    """A table of text whose long cells fold."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def catalog_table(console: Console, entries: list[CatalogEntry]) -> None:
    table = Table(title=f"{len(entries)} ingested files")
    for column in ("source", "path", "hash", "state", "revision"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(
            entry.source,
            entry.path,
            entry.digest[:12],
            entry.state or "unknown",
            entry.revision,
        )
    console.print(table)


def run_summary(console: Console, report: RunReport) -> None:
    outcome = report.outcome
    console.print(
        f"done: {len(outcome.done)} documents, {outcome.pages} pages converted in this run"
    )
    console.print(f"results: {report.results}")
    index = report.index
    if index.busy:
        console.print(index.line())
    else:
        console.print(
            f"search index: {report.searchable} of {len(outcome.done)} documents searchable "
            f"({index.added + index.replaced} indexed at the end of the run, the rest by the "
            f"workers as they went; {len(index.skipped)} could not be)"
        )
    for digest, reason in sorted(report.index.skipped.items()):
        console.print(f"[yellow]not searchable[/yellow] {digest[:12]}: {reason}")
    for name, reason in sorted(outcome.failed.items()):
        first_line = reason.split("\n")[0]
        console.print(f"[red]failed[/red] {name}: {first_line}")


def digesters_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Digest chain (in order)")
    for column in ("#", "digester", "label", "version", "outputs", "applies to"):
        table.add_column(column, no_wrap=column in ("digester", "outputs"))
    for row in rows:
        table.add_row(
            str(row["order"]),
            row["name"],
            row["label"],
            row["version"],
            ", ".join(row["outputs"]),
            ", ".join(row["applies_to"]),
        )
    return table


def index_report(console: Console, report: IndexReport) -> None:
    console.print(report.line())
    for what in report.maintenance:
        console.print(f"  {what}")
    for digest, reason in sorted(report.skipped.items()):
        console.print(f"[yellow]not indexed[/yellow] {digest[:12]}: {reason}")


def index_line(stats: IndexStats | Exception | None, done: int) -> str:
    if isinstance(stats, Exception):
        return f"search index: {stats}"
    if stats is None:
        return "search index: none yet (bucketdigest index builds it; workers keep it current)"
    updated = f"{stats.updated_at:%Y-%m-%d %H:%M:%S} UTC" if stats.updated_at else "never"
    return (
        f"search index: {stats.documents} of {done} done documents, {stats.chunks} chunks, "
        f"last updated {updated}"
    )


def hits(console: Console, found: list[Hit]) -> None:
    if not found:
        console.print("no good match: no passage holds those words or comes close in meaning")
        return
    console.print(f"[dim]{len(found)} hit{'s' if len(found) > 1 else ''}[/dim]")
    for rank, hit in enumerate(found, start=1):
        where = ", ".join(hit.names) or hit.digest
        place = f"  page {hit.page}" if hit.page is not None else ""
        section = f"  > {' > '.join(hit.headings)}" if hit.headings else ""
        console.print(
            f"[bold]{rank}. {escape(hit.title)}[/bold]  [dim]{escape(where)}{place}"
            f"{escape(section)}  score {hit.score:.3f}  {hit.digest[:12]}[/dim]"
        )
        snippet = Text("   " + hit.snippet.text)
        for start, end in hit.snippet.highlights:
            snippet.stylize("bold yellow", start + 3, end + 3)
        console.print(snippet)
        if hit.repeats:
            console.print(f"   [dim]the same text in {hit.repeats} other place(s)[/dim]")
        if hit.more:
            console.print(
                f"   [dim]{hit.more}+ more from this document: --document {hit.digest}[/dim]"
            )
    console.print("[dim]bucketdigest get HASH -o DIR fetches a document's result[/dim]")


def worker_summary(summary: WorkerSummary, *, as_json: bool) -> str:
    """How a worker that stopped says so on stdout: a JSON object when logs are JSON (a log
    collector reads every line), a sentence otherwise."""
    outcomes = dict(sorted(summary.outcomes.items()))
    if as_json:
        data = {
            "worker_id": summary.worker_id,
            "exit_reason": summary.exit_reason,
            "outcomes": outcomes,
            "pages": summary.pages,
        }
        return json.dumps(data)
    done = ", ".join(f"{n} {outcome}" for outcome, n in outcomes.items()) or "no jobs"
    return f"worker {summary.worker_id} stopped ({summary.exit_reason}): {done}"
