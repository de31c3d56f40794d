"""``bucketdigest``: one command for every role. Each command parses options, calls the
library, prints. Library errors become clean messages with exit code 1."""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bucketdigest.cli import render
from bucketdigest.cli.options import (
    max_attempts_option,
    store_options,
    store_settings,
    worker_options,
    worker_settings,
)
from bucketdigest.cli.runner import counts_toward_progress, local_results_path, run_to_completion
from bucketdigest.cli.wiring import MonitorDuty, OpenStore
from bucketdigest.ingestor.ingest import Ingestor, IngestReport, open_sources
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.monitor.catalog import catalog, fetch_result, resolve
from bucketdigest.monitor.repair import reconcile, retry_failed
from bucketdigest.monitor.status import collect_status
from bucketdigest.monitor.sweep import MonitorSettings, sweep
from bucketdigest.shared import keys
from bucketdigest.shared.config import open_store
from bucketdigest.shared.errors import BucketdigestError
from bucketdigest.shared.filetypes import EXTENSION_GROUPS, FileKind, expand_extensions
from bucketdigest.shared.store import Store
from bucketdigest.worker.digesters import CHAIN, RESETS, digester_named
from bucketdigest.worker.job import JobResult, Outcome
from bucketdigest.worker.loop import Worker
from bucketdigest.worker.pool import run_until_signalled, start_workers
from bucketdigest.worker.reprocess import done_digests
from bucketdigest.worker.reprocess import reprocess as run_reprocess

console = Console(stderr=True, soft_wrap=True)


def library_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn our errors into ``click.ClickException`` (message, exit code 1)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BucketdigestError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _filter(ext: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> FileFilter:
    try:
        exts = expand_extensions(ext.split(","))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--ext") from exc
    return FileFilter(exts=exts, include=include, exclude=exclude)


def _ingest(
    store: Store, specs: tuple[str, ...], file_filter: FileFilter, ref: str, cache_dir: Path
) -> IngestReport:
    sources, errors = open_sources(specs, file_filter, ref=ref, cache_dir=cache_dir)
    return Ingestor(store).ingest(sources, errors)


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="BUCKETDIGEST_CACHE_DIR",
        default=Path.home() / ".cache" / "bucketdigest" / "git",
        show_default=True,
        help="Where Git sources are cloned (bare, no LFS content) and kept for later fetches.",
    )(func)
    func = click.option(
        "--ref",
        default="HEAD",
        show_default=True,
        help="Git ref to ingest (default: the remote's HEAD).",
    )(func)
    func = click.option(
        "--exclude", multiple=True, help="Glob of relative paths to skip (repeatable)."
    )(func)
    func = click.option(
        "--include", multiple=True, help="Only paths matching this glob (repeatable)."
    )(func)
    return click.option(
        "--ext",
        default="pdf",
        show_default=True,
        help="Comma-separated extensions or groups to take: documents (pdf, epub, xps, cbz...), "
        "text (md, txt), images (png, jpg, tiff), all.",
    )(func)


@click.group()
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="bucketdigest")
def cli(verbose: int) -> None:
    """Turn piles of documents into searchable Markdown, coordinated through one bucket.

    Example: bucketdigest run ./pdfs
    """
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@store_options
@filter_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print the run record and every file as JSON."
)
@library_errors
def ingest(
    sources: tuple[str, ...],
    ext: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    ref: str,
    cache_dir: Path,
    as_json: bool,
    **store: Any,
) -> None:
    """Upload new documents from SOURCES and queue them.

    Example: bucketdigest ingest ./rulebooks --bucket s3://my-bucket/digest
    """
    target = open_store(store_settings(**store))
    report = _ingest(target, sources, _filter(ext, include, exclude), ref, cache_dir)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "run": json.loads(report.run.to_json()),
                    "files": [asdict(f) for f in report.files],
                },
                indent=2,
            )
        )
    else:
        render.ingest_summary(console, report.run)
    if report.run.errors:
        sys.exit(1)


@cli.command()
@store_options
@worker_options
@click.option(
    "--max-jobs",
    type=click.IntRange(1),
    default=None,
    help="Exit after this many jobs (per process).",
)
@click.option("--exit-when-idle", is_flag=True, help="Exit when no job is left to claim.")
@library_errors
def work(
    workers: int,
    max_jobs: int | None,
    exit_when_idle: bool,
    bucket: str,
    endpoint_url: str | None,
    region: str | None,
    path_style: bool,
    **options: Any,
) -> None:
    """Claim and convert queued documents until stopped.

    Example: bucketdigest work --bucket s3://my-bucket/digest --workers 2
    """
    settings = worker_settings(max_jobs=max_jobs, exit_when_idle=exit_when_idle, **options)
    opener = OpenStore(store_settings(bucket, endpoint_url, region, path_style))
    duty = MonitorDuty(MonitorSettings(max_attempts=settings.max_attempts))
    if workers == 1:
        store = opener()
        summary = run_until_signalled(Worker(store, settings, monitor_duty=duty(store)))
        console.print(
            f"worker {summary.worker_id}: {summary.exit_reason}; {dict(summary.outcomes)}"
        )
        return
    processes = start_workers(workers, opener, settings, monitor_duty=duty)
    try:
        for process in processes:
            process.join()
    except KeyboardInterrupt:
        for process in processes:
            process.join()


@cli.command()
@store_options
@click.option("--once", is_flag=True, help="One pass, then exit.")
@click.option(
    "--stale-after",
    type=click.FloatRange(1),
    default=7200,
    show_default=True,
    help="Upper bound on any lease, in seconds.",
)
@max_attempts_option
@click.option(
    "--every",
    type=click.FloatRange(1),
    default=60,
    show_default=True,
    help="Seconds between passes.",
)
@click.option(
    "--reconcile-every",
    type=click.FloatRange(0),
    default=3600,
    show_default=True,
    help="Seconds between consistency sweeps (0: every pass).",
)
@library_errors
def monitor(
    once: bool,
    stale_after: float,
    max_attempts: int,
    every: float,
    reconcile_every: float,
    **store: Any,
) -> None:
    """Requeue expired claims, dead-letter jobs out of attempts, repair what crashes left.

    Example: bucketdigest monitor --once
    """
    target = open_store(store_settings(**store))
    settings = MonitorSettings(stale_after=stale_after, max_attempts=max_attempts)
    last_reconcile = None
    while True:
        report = sweep(target, settings)
        line = (
            f"requeued {len(report.requeued)}, dead-lettered {len(report.dead_lettered)}, "
            f"finalized {len(report.finalized)}"
        )
        if last_reconcile is None or time.monotonic() - last_reconcile >= reconcile_every:
            repaired = reconcile(target)
            last_reconcile = time.monotonic()
            line += (
                f"; consistency: enqueued {len(repaired.enqueued)}, "
                f"cleaned {len(repaired.cleaned)}, scratch removed {len(repaired.scratch_removed)}"
            )
        click.echo(line)
        if once:
            return
        time.sleep(every)


@cli.command()
@click.argument("digests", nargs=-1)
@store_options
@click.option("--all-failed", is_flag=True, help="Retry every dead-lettered document.")
@library_errors
def retry(digests: tuple[str, ...], all_failed: bool, **store: Any) -> None:
    """Put failed documents back in line with their attempts reset.

    Example: bucketdigest retry --all-failed
    """
    if bool(digests) == all_failed:
        raise click.UsageError("give HASH... or --all-failed (not both)")
    try:
        requeued = retry_failed(
            open_store(store_settings(**store)), None if all_failed else list(digests)
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"requeued {len(requeued)} document(s)")
    for digest in requeued:
        click.echo(digest)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="The chain as JSON.")
def digesters(as_json: bool) -> None:
    """List the digest chain: order, outputs, version and the file types each applies to.

    Example: bucketdigest digesters
    """
    rows = [
        {
            "order": order,
            "name": d.name,
            "label": d.label,
            "version": d.version,
            "outputs": list(d.outputs),
            "needs": list(d.needs),
            "applies_to": sorted(kind.value for kind in FileKind if kind in d.kinds),
            "resets": list(RESETS.get(d.name, ())),
            "description": d.description,
        }
        for order, d in enumerate(CHAIN, start=1)
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    Console().print(render.digesters_table(rows))
    groups = ", ".join(
        f"{name}: {' '.join(sorted(exts))}"
        for name, exts in EXTENSION_GROUPS.items()
        if name != "all"
    )
    click.echo(f"file types: {groups}")


@cli.command()
@click.argument("digests", nargs=-1)
@click.option("--digester", "digester_name", help="Run this digester again (and what it resets).")
@click.option(
    "--outdated", is_flag=True, help="Run again every digester whose version has changed."
)
@click.option("--all", "all_done", is_flag=True, help="Every document that is done.")
@store_options
@library_errors
def reprocess(
    digests: tuple[str, ...],
    digester_name: str | None,
    outdated: bool,
    all_done: bool,
    **store: Any,
) -> None:
    """Run digesters again on finished documents; their other outputs are kept as they are.

    Example: bucketdigest reprocess --digester tags --all
    """
    if bool(digests) == all_done:
        raise click.UsageError("give HASH... or --all (not both)")
    if digester_name is None and not outdated:
        raise click.UsageError("say what to run again: --digester NAME and/or --outdated")
    if digester_name is not None:
        try:
            digester_named(digester_name)
        except KeyError as exc:
            raise click.UsageError(exc.args[0]) from exc
    try:
        chosen = [keys.check_hash(d) for d in digests]
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    target = open_store(store_settings(**store))
    report = run_reprocess(
        target, done_digests(target) if all_done else chosen, digester_name, outdated
    )
    click.echo(f"requeued {len(report.requeued)} document(s), skipped {len(report.skipped)}")
    for digest, names in report.requeued.items():
        click.echo(f"{digest}  {', '.join(names)}")
    for digest, reason in report.skipped.items():
        click.echo(f"{digest}  skipped: {reason}")


@cli.command()
@store_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Counts (todo, processing, failed, done), failures and runs as JSON.",
)
@library_errors
def status(as_json: bool, **store: Any) -> None:
    """Show how many documents are in each state, recent failures and ingest runs.

    Example: bucketdigest status --json
    """
    result = collect_status(open_store(store_settings(**store), self_test=False))
    if as_json:
        data = {
            "counts": result.counts,
            "failures": [asdict(f) for f in result.failures],
            "runs": [json.loads(r.to_json()) for r in result.runs],
        }
        click.echo(json.dumps(data, indent=2))
    else:
        render.status_tables(Console(soft_wrap=True), result)


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@store_options
@filter_options
@worker_options
@library_errors
def run(
    sources: tuple[str, ...],
    ext: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    ref: str,
    cache_dir: Path,
    workers: int,
    bucket: str,
    endpoint_url: str | None,
    region: str | None,
    path_style: bool,
    **options: Any,
) -> None:
    """Ingest SOURCES and convert them all with local workers; exit 1 if any failed.

    Example: bucketdigest run ./pdfs --workers 2
    """
    opener = OpenStore(store_settings(bucket, endpoint_url, region, path_style))
    store = opener()
    settings = worker_settings(**options)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[pages]} pages, {task.fields[rate]} pages/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("documents", total=None, pages=0, rate="-")
        started = progress.get_time()

        def ingest() -> IngestReport:
            return _ingest(store, sources, _filter(ext, include, exclude), ref, cache_dir)

        def on_ingested(report: IngestReport) -> None:
            render.ingest_summary(progress.console, report.run)
            todo = sum(1 for f in report.files if f.state != "done")
            progress.update(task, total=todo)

        def on_result(result: JobResult) -> None:
            fields = progress.tasks[task].fields
            pages = fields["pages"] + result.pages
            elapsed = max(progress.get_time() - started, 1e-9)
            progress.update(
                task,
                advance=1 if counts_toward_progress(result) else 0,
                pages=pages,
                rate=f"{pages / elapsed:.1f}",
            )
            if result.outcome in (Outcome.FAILED, Outcome.RETRYING):
                reason = result.error.splitlines()[0] if result.error else ""
                progress.console.print(f"[red]{result.outcome.value}[/red] {result.name}: {reason}")

        report, outcome = run_to_completion(
            store, opener, ingest, workers, settings, on_ingested, on_result
        )
    render.run_summary(console, outcome, local_results_path(store), store.url)
    if outcome.failed or report.run.errors:
        sys.exit(1)


@cli.command(name="ls")
@store_options
@click.option("--source", help="Only sources whose URL or path contains this text.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file.")
@library_errors
def ls_command(source: str | None, as_json: bool, **store: Any) -> None:
    """List ingested files: source, path, document hash and state.

    Example: bucketdigest ls --source rulebooks.git
    """
    entries = catalog(open_store(store_settings(**store), self_test=False), source)
    if as_json:
        for entry in entries:
            click.echo(json.dumps({**json.loads(entry.record.to_json()), "state": entry.state}))
    else:
        render.catalog_table(Console(soft_wrap=True), entries)


@cli.command()
@click.argument("path_or_hash")
@store_options
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to unpack the result into.",
)
@library_errors
def get(path_or_hash: str, output: Path, **store: Any) -> None:
    """Download a document's result (by hash or ingested path) and unpack it.

    Example: bucketdigest get "rules/Core Rules.pdf" -o ./core-rules
    """
    target = open_store(store_settings(**store), self_test=False)
    digest = resolve(target, path_or_hash)
    members = fetch_result(target, digest, output)
    click.echo(f"{digest}: {len(members)} files in {output}")


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--count", type=click.IntRange(1), default=5, show_default=True, help="How many documents."
)
@click.option(
    "--pages", type=click.IntRange(1), default=4, show_default=True, help="Pages per document."
)
def samples(folder: Path, count: int, pages: int) -> None:
    """Write sample rulebook PDFs (headings, two columns, a table, an image) into FOLDER.

    Example: bucketdigest samples ./pdfs --count 20
    """
    from bucketdigest.shared.samples import make_samples  # loads PyMuPDF: only when asked

    for path in make_samples(folder, count, pages):
        click.echo(str(path))


if __name__ == "__main__":
    cli()
