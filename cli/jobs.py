"""Commands that move documents: ingest, work, monitor, run, retry, reprocess."""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import replace
from pathlib import Path

import click

from bucketdigest.cli import render
from bucketdigest.cli.group import cli, console, library_errors
from bucketdigest.cli.ingest_options import ingest_options, watch_options
from bucketdigest.cli.options import (
    chosen_workers,
    metrics_port_option,
    priority_option,
    store_options,
    workers_option,
)
from bucketdigest.cli.setting_flags import (
    adopt_given,
    given_settings,
    refuse_shadowing,
    setting_flag,
)
from bucketdigest.cli.worker_options import worker_options
from bucketdigest.ingestor.inbox import take_inbox
from bucketdigest.ingestor.ingest import (
    IngestReport,
    IngestSettings,
    default_cache_dir,
    ingest_sources,
)
from bucketdigest.ingestor.watch import WatchSettings, watch_folders
from bucketdigest.monitor.damage import CHECK_BYTES
from bucketdigest.monitor.gauges import serve_queue_gauges
from bucketdigest.monitor.loop import CHECK_SECONDS, PASS_SECONDS, RECONCILE_SECONDS, run_monitor
from bucketdigest.monitor.repair import prioritize as prioritize_documents
from bucketdigest.monitor.sweep import MonitorSettings
from bucketdigest.runner.bucket import Bucket
from bucketdigest.runner.listing import find_digest
from bucketdigest.runner.local import run_local, run_watching
from bucketdigest.runner.rerun import reprocess_documents, retry_documents
from bucketdigest.runner.wiring import settings_via, work_bucket, work_via
from bucketdigest.shared.chain import DIGESTERS, known_digester
from bucketdigest.shared.config import StoreSettings, open_store
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.logs import LogFormat, LogSetup
from bucketdigest.worker.loop import WorkerSettings
from bucketdigest.worker.reprocess import done_digests


@cli.command()
@store_options
@library_errors
def check(store: StoreSettings) -> None:
    """Read every result, source and queue marker now and repair what is damaged: a result
    that does not open is made again from its source, a marker that does not parse is
    rebuilt, a source that lost its hash is fetched again from where it was ingested; what
    cannot be repaired is listed (``status`` lists it too). The monitor checks the same a
    budget at a time.

    Example: bucketdigest check
    """
    report = Bucket(store).check()
    click.echo(render.damage_line(report.damage))
    for key, reason in sorted(report.damage.found.items()):
        click.echo(f"{key}: {reason}")
    for digest in report.restored:
        click.echo(f"{digest}: source fetched again from where it was ingested")
    for digest, reason in sorted(report.unrestorable.items()):
        click.echo(f"{digest}: {reason}")


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@store_options
@ingest_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print the run record and every file as JSON."
)
@watch_options
@library_errors
def ingest(
    sources: tuple[str, ...],
    store: StoreSettings,
    ingest: IngestSettings,
    as_json: bool,
    watch: WatchSettings | None,
) -> None:
    """Upload new documents from SOURCES (folders, files, Git repositories, web sites with
    --site) and queue them.

    Example: bucketdigest ingest ./rulebooks --bucket s3://my-bucket/digest

    Example: bucketdigest ingest https://example.org/docs/ --site --max-depth 3

    Example: bucketdigest ingest ~/scans --watch
    """
    if watch is not None:
        _watch(sources, store, ingest, watch, as_json)
        return
    report = ingest_sources(open_store(store), sources, ingest)
    if as_json:
        click.echo(json.dumps(render.ingest_json(report), indent=2))
    else:
        render.ingest_summary(console, report.run)
    if report.run.errors:
        sys.exit(1)


def _watch(
    sources: tuple[str, ...],
    store: StoreSettings,
    ingest: IngestSettings,
    watch: WatchSettings,
    as_json: bool,
) -> None:
    folders = [Path(source) for source in sources]
    opened = open_store(store)
    local = getattr(opened, "root", None)
    names = ", ".join(str(folder) for folder in folders)

    def show(folder: Path, report: IngestReport) -> None:
        if as_json:
            click.echo(json.dumps({"folder": str(folder), **render.ingest_json(report)}))
        else:
            render.ingest_summary(console, report.run)

    try:  # a Ctrl-C once it says it is watching stops it cleanly
        if not as_json:
            console.print(f"watching {names} (settle {watch.settle_seconds:g} s; Ctrl-C stops)")
        watch_folders(
            opened,
            folders,
            ingest,
            show,
            threading.Event(),
            watch,
            ignored=[local] if isinstance(local, Path) else [],
        )
    except KeyboardInterrupt:
        if not as_json:
            console.print(f"stopped watching {names}")


@cli.command()
@store_options
@workers_option
@worker_options
@click.option(
    "--max-jobs",
    type=click.IntRange(1),
    default=None,
    help="Exit after this many jobs (per process).",
)
@click.option("--exit-when-idle", is_flag=True, help="Exit when no job is left to claim.")
@click.option(
    "--delete-source-when-done",
    is_flag=True,
    envvar="BUCKETDIGEST_DELETE_SOURCE_WHEN_DONE",
    help="Delete store/raw/<hash> once its result is written (retry and reprocess fetch it "
    "again from its folder or repository).",
)
@metrics_port_option
@click.option(
    "--via",
    metavar="URL",
    help="Work through a broker (bucketdigest serve --broker) instead of with bucket "
    "credentials: it hands this worker one claim at a time.",
)
@click.option(
    "--token",
    envvar="BUCKETDIGEST_WORKER_TOKEN",
    help="This worker's token for --via (bucketdigest tokens add NAME).",
)
@library_errors
def work(
    store: StoreSettings,
    workers: int | None,
    worker: WorkerSettings,
    max_jobs: int | None,
    exit_when_idle: bool,
    delete_source_when_done: bool,
    metrics_port: int | None,
    via: str | None,
    token: str | None,
) -> None:
    """Claim and convert queued documents until stopped.

    Example: bucketdigest work --bucket s3://my-bucket/digest --workers 2
    Without credentials: bucketdigest work --via https://broker:8000 --token bdw_...
    """
    settings = replace(
        worker,
        max_jobs=max_jobs,
        exit_when_idle=exit_when_idle,
        delete_source_when_done=delete_source_when_done,
        metrics_port=metrics_port,
    )
    if via is not None:
        if not token:
            raise click.UsageError("--via needs --token (or BUCKETDIGEST_WORKER_TOKEN)")
        if delete_source_when_done:
            raise click.UsageError("a brokered worker cannot delete sources")
        refuse_shadowing(settings_via(via, token), given_settings())
        summaries = work_via(via, token, settings, chosen_workers(workers))
    else:
        refuse_shadowing(Bucket(store, check_writes=False).settings, given_settings())
        summaries = work_bucket(store, settings, chosen_workers(workers))
    for summary in summaries:
        click.echo(
            render.worker_summary(summary, as_json=LogSetup.current().format is LogFormat.JSON)
        )


@cli.command()
@store_options
@click.option("--once", is_flag=True, help="One pass, then exit.")
@click.option(
    "--stale-after",
    type=click.FloatRange(1),
    default=MonitorSettings.stale_after,
    show_default=True,
    help="Upper bound on any lease, in seconds.",
)
@setting_flag("max_attempts")
@metrics_port_option
@click.option(
    "--every",
    type=click.FloatRange(1),
    default=PASS_SECONDS,
    show_default=True,
    help="Seconds between passes.",
)
@click.option(
    "--reconcile-every",
    type=click.FloatRange(0),
    default=RECONCILE_SECONDS,
    show_default=True,
    help="Seconds between consistency sweeps (0: every pass).",
)
@click.option(
    "--check-every",
    type=click.FloatRange(0),
    default=CHECK_SECONDS,
    show_default=True,
    help="Seconds between damage checks (0: every pass).",
)
@click.option(
    "--check-mib",
    type=click.IntRange(1),
    default=CHECK_BYTES >> 20,
    show_default=True,
    help="MiB of results and sources one damage check reads (it goes on from there next time).",
)
@library_errors
def monitor(
    store: StoreSettings,
    once: bool,
    stale_after: float,
    max_attempts: int | None,
    metrics_port: int | None,
    every: float,
    reconcile_every: float,
    check_every: float,
    check_mib: int,
) -> None:
    """Requeue expired claims, dead-letter jobs out of attempts, repair what crashes left,
    check results, sources and markers for damage (a budget at a time) and repair what can be;
    with --metrics-port, export the queue gauges an autoscaler reads.

    Example: bucketdigest monitor --once
    """
    bucket = Bucket(store, check_writes=False)
    refuse_shadowing(bucket.settings, given_settings(("max_attempts",)))
    target = open_store(store)
    if metrics_port is not None:
        serve_queue_gauges(target, metrics_port)
    run_monitor(
        target,
        MonitorSettings(
            stale_after=stale_after, max_attempts=max_attempts or MonitorSettings.max_attempts
        ),
        every=every,
        reconcile_every=reconcile_every,
        check_every=check_every,
        check_bytes=check_mib << 20,
        once=once,
        on_pass=lambda done: click.echo(render.monitor_line(done)),
        take_in=take_inbox,
    )


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@store_options
@ingest_options
@watch_options
@workers_option
@worker_options
@library_errors
def run(
    sources: tuple[str, ...],
    store: StoreSettings,
    ingest: IngestSettings,
    watch: WatchSettings | None,
    workers: int | None,
    worker: WorkerSettings,
) -> None:
    """Ingest SOURCES and convert them all with local workers; exit 1 if any failed.

    Example: bucketdigest run ./pdfs --workers 2

    Example: bucketdigest run ~/scans --watch
    """
    adopt_given(Bucket(store, check_writes=False), given_settings())
    workers = chosen_workers(workers)
    if watch is not None:
        names = ", ".join(sources)
        try:  # a Ctrl-C once it says it is watching stops it cleanly
            console.print(f"watching {names} (settle {watch.settle_seconds:g} s; Ctrl-C stops)")
            run_watching(
                store,
                [Path(source) for source in sources],
                ingest,
                workers,
                worker,
                watch,
                threading.Event(),
                on_ingested=lambda report: render.ingest_summary(console, report.run),
                on_result=lambda result: render.watched_result(console, result),
            )
        except KeyboardInterrupt:
            console.print(f"stopped watching {names}")
        return
    with render.RunProgress(console) as progress:
        report = run_local(
            store,
            sources,
            ingest,
            workers,
            worker,
            on_ingested=progress.ingested,
            on_result=progress.result,
        )
    render.run_summary(console, report)
    if report.outcome.failed or report.ingest.run.errors:
        sys.exit(1)


@cli.command()
@click.argument("digests", nargs=-1)
@store_options
@click.option("--all-failed", is_flag=True, help="Retry every dead-lettered document.")
@library_errors
def retry(digests: tuple[str, ...], store: StoreSettings, all_failed: bool) -> None:
    """Put failed documents back in line with their attempts reset.

    Example: bucketdigest retry --all-failed
    """
    if bool(digests) == all_failed:
        raise click.UsageError("give HASH... or --all-failed (not both)")
    try:
        requeued, cannot = retry_documents(
            open_store(store), None if all_failed else list(digests), default_cache_dir()
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"requeued {len(requeued)} document(s)")
    for digest in requeued:
        click.echo(digest)
    for digest, reason in cannot.items():
        click.echo(f"{digest}  cannot run again: {reason}")
    if cannot:
        sys.exit(1)


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
    store: StoreSettings,
) -> None:
    """Run digesters again on finished documents; their other outputs are kept as they are.
    With neither --digester nor --outdated, the whole chain runs again from the source (what
    a damaged result needs).

    Example: bucketdigest reprocess --digester tags --all
    """
    if bool(digests) == all_done:
        raise click.UsageError("give HASH... or --all (not both)")
    if digester_name is None and not outdated:
        digester_name = DIGESTERS[0]
    if digester_name is not None:
        try:
            known_digester(digester_name)
        except KeyError as exc:
            raise click.UsageError(exc.args[0]) from exc
    target = open_store(store)
    try:
        report = reprocess_documents(
            target,
            done_digests(target) if all_done else list(digests),
            digester_name,
            outdated,
            default_cache_dir(),
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"requeued {len(report.requeued)} document(s), skipped {len(report.skipped)}")
    for digest, names in report.requeued.items():
        click.echo(f"{digest}  {', '.join(names)}")
    for digest, reason in report.skipped.items():
        click.echo(f"{digest}  skipped: {reason}")


@cli.command()
@click.argument("digests", nargs=-1, required=True)
@store_options
@priority_option
@library_errors
def prioritize(digests: tuple[str, ...], store: StoreSettings, priority: str) -> None:
    """Move queued documents to another lane (high, normal, low).

    Example: bucketdigest prioritize 2d6c4766...db64 --priority high
    """
    target = open_store(store)
    chosen = [find_digest(store, d, target) for d in digests]
    moved, absent = prioritize_documents(target, chosen, Priority(priority))
    click.echo(f"{len(moved)} document(s) now {priority}")
    for digest in absent:
        click.echo(f"{digest}  not waiting in the queue")
    if absent:
        sys.exit(1)
