"""The options of the commands that run workers (``work``, ``run``), built into one
:class:`~bucketdigest.worker.loop.WorkerSettings`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click

from bucketdigest.cli.options import option_group
from bucketdigest.cli.setting_flags import FLAGGED, setting_flag
from bucketdigest.shared.bucket_settings import BucketSettings, check_settings
from bucketdigest.shared.errors import ConfigError
from bucketdigest.worker.digest_settings import DigestSettings, LlmSettings
from bucketdigest.worker.loop import WorkerSettings, idle_sleep_for
from bucketdigest.worker.sandbox import SandboxLimits


def _worker(
    *,
    job_timeout: float,
    page_timeout: float,
    max_memory: int | None,
    jobs_per_child: int,
    model_threads: int | None,
    checkpoint_after: float,
    llm_key_env: str,
    monitor_every: float,
    grace: float,
    **settings: Any,
) -> WorkerSettings:
    """The worker's own options, and the bucket settings its flags give
    (:mod:`.setting_flags`: the rest are the worker's defaults until it follows the bucket)."""
    given = {name: value for name, value in settings.items() if value not in (None, ())}
    problem = _checked_settings(given)
    if problem:
        raise click.UsageError(problem)
    started = WorkerSettings(
        checkpoint_after=checkpoint_after,
        grace_seconds=grace,
        monitor_every=monitor_every,
        digest=DigestSettings(api_key_env=llm_key_env),
        limits=SandboxLimits(
            timeout=job_timeout,
            per_page=page_timeout,
            max_memory=max_memory << 20 if max_memory else None,
            jobs_per_child=jobs_per_child,
            model_threads=model_threads,
        ),
    ).with_settings(given)
    return replace(started, idle_sleep=idle_sleep_for(started.lease_seconds))


def _checked_settings(given: dict[str, Any]) -> str | None:
    """Why the settings ``given`` by flags cannot be (their declarations' checks, and the
    rules between settings), in the flags' words; None when they can."""
    try:
        check_settings(BucketSettings(**given))
    except ConfigError as exc:
        return str(exc).replace("_", "-")
    return None


worker_options = option_group(
    "worker",
    _worker,
    click.option(
        "--job-timeout",
        type=click.FloatRange(1),
        default=SandboxLimits.timeout,
        show_default=True,
        help="Wall-clock limit of one digester on one document, in seconds, before "
        "--page-timeout is added for each page.",
    ),
    click.option(
        "--page-timeout",
        type=click.FloatRange(0),
        default=SandboxLimits.per_page,
        show_default=True,
        help="Seconds added to --job-timeout per page of the document, so long books get "
        "the time they need.",
    ),
    click.option(
        "--max-memory",
        type=click.IntRange(64),
        default=None,
        help="Address-space cap of the digester process, in MiB (layout needs ~1024, "
        "embeddings ~4096).",
    ),
    click.option(
        "--jobs-per-child",
        type=click.IntRange(1),
        default=SandboxLimits.jobs_per_child,
        show_default=True,
        help="Replace the digester process after this many documents.",
    ),
    click.option(
        "--model-threads",
        type=click.IntRange(0),
        default=None,
        envvar="BUCKETDIGEST_MODEL_THREADS",
        help="CPU threads each model (layout, tables, embeddings) of a worker runs on; 0: "
        "onnxruntime's choice, a thread per core for each [default: the machine's cores "
        "shared out among --workers; one worker: onnxruntime's choice].",
    ),
    *(setting_flag(name) for name in FLAGGED),
    click.option(
        "--checkpoint-after",
        type=click.FloatRange(0),
        default=WorkerSettings.checkpoint_after,
        show_default=True,
        help="Save a job's progress to the bucket once its unsaved digesters took this many "
        "seconds (a taken-over job resumes from there).",
    ),
    click.option(
        "--llm-key-env",
        default=LlmSettings.api_key_env,
        show_default=True,
        help="Environment variable holding the endpoint's API key (if it needs one).",
    ),
    click.option(
        "--monitor-every",
        type=click.FloatRange(1),
        default=WorkerSettings.monitor_every,
        show_default=True,
        help="Each worker also requeues expired claims this often (seconds).",
    ),
    click.option(
        "--grace",
        type=click.FloatRange(0),
        default=WorkerSettings.grace_seconds,
        show_default=True,
        help="On SIGTERM, or when the run window closes, time the current job gets before "
        "it is handed back.",
    ),
)
