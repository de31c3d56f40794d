"""How the CLI shows results to people (rich tables); JSON output lives with each command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bucketdigest.cli.runner import RunOutcome
from bucketdigest.monitor.catalog import CatalogEntry
from bucketdigest.monitor.status import Status
from bucketdigest.shared.records import IngestRun


def ingest_summary(console: Console, run: IngestRun) -> None:
    console.print(
        f"ingest {run.run_id}: discovered {run.discovered}, already done {run.already_done}, "
        f"uploaded {run.uploaded}, queued {run.queued}, errors {len(run.errors)} "
        f"({run.store_requests} store requests)"
    )
    for error in run.errors:
        console.print(f"[red]error[/red] {error.path}: {error.reason}")


def status_tables(console: Console, status: Status) -> None:
    counts = Table(title="Documents by state")
    for name in status.counts:
        counts.add_column(name, justify="right")
    counts.add_row(*(str(n) for n in status.counts.values()))
    console.print(counts)
    if status.failures:
        failures = Table(title="Recent failures")
        for column in ("document", "hash", "attempt", "failed at", "error"):
            failures.add_column(column)
        for f in status.failures:
            failures.add_row(
                f.name, f.digest[:12], str(f.attempt), f.failed_at, f.error.splitlines()[0]
            )
        console.print(failures)
    if status.runs:
        runs = Table(title="Latest ingest runs")
        runs.add_column("run", no_wrap=True)
        for column in (
            "discovered",
            "done before",
            "uploaded",
            "queued",
            "errors",
            "requests",
        ):
            runs.add_column(column, justify="right")
        for r in status.runs:
            runs.add_row(
                r.run_id,
                str(r.discovered),
                str(r.already_done),
                str(r.uploaded),
                str(r.queued),
                str(len(r.errors)),
                str(r.store_requests),
            )
        console.print(runs)


def catalog_table(console: Console, entries: list[CatalogEntry]) -> None:
    table = Table(title=f"{len(entries)} ingested files")
    for column in ("source", "path", "hash", "state"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        record = entry.record
        table.add_row(record.source, record.path, record.digest[:12], entry.state)
    console.print(table)


def run_summary(console: Console, outcome: RunOutcome, results: Path | None, url: str) -> None:
    console.print(
        f"done: {len(outcome.done)} documents, {outcome.pages} pages converted in this run"
    )
    console.print(f"results: {results if results is not None else url + 'store/out/'}")
    for name, reason in sorted(outcome.failed.items()):
        console.print(f"[red]failed[/red] {name}: {reason.splitlines()[0]}")


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
