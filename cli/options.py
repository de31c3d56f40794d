"""Options shared by several commands, each with its environment-variable fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from bucketdigest.shared.config import DEFAULT_BUCKET, StoreSettings
from bucketdigest.worker.convert import MODES, ConverterOptions
from bucketdigest.worker.digesters.base import DigestSettings, LlmSettings
from bucketdigest.worker.loop import WorkerSettings
from bucketdigest.worker.sandbox import SandboxLimits

F = Callable[..., Any]


max_attempts_option = click.option(
    "--max-attempts",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Attempts before a document is dead-lettered.",
)


def store_options(func: F) -> F:
    """--bucket, --endpoint-url, --region, --path-style."""
    for option in reversed(
        [
            click.option(
                "--bucket",
                envvar="BUCKETDIGEST_BUCKET",
                default=DEFAULT_BUCKET,
                show_default=True,
                help="s3://bucket/prefix, file://DIR or a directory (the embedded local store).",
            ),
            click.option(
                "--endpoint-url",
                envvar="AWS_ENDPOINT_URL",
                help="S3 endpoint for MinIO, R2, Ceph, moto... (env AWS_ENDPOINT_URL).",
            ),
            click.option("--region", envvar="AWS_REGION", help="S3 region (env AWS_REGION)."),
            click.option(
                "--path-style/--virtual-host-style",
                envvar="BUCKETDIGEST_PATH_STYLE",
                default=False,
                help="S3 addressing style; MinIO and Ceph usually need --path-style.",
            ),
        ]
    ):
        func = option(func)
    return func


def store_settings(
    bucket: str, endpoint_url: str | None, region: str | None, path_style: bool
) -> StoreSettings:
    return StoreSettings(
        bucket=bucket, endpoint_url=endpoint_url, region=region, path_style=path_style
    )


def worker_options(func: F) -> F:
    """Options of workers, shared by ``work`` and ``run``."""
    for option in reversed(
        [
            click.option(
                "--workers",
                type=click.IntRange(1),
                default=1,
                show_default=True,
                envvar="BUCKETDIGEST_WORKERS",
                help="Worker processes on this machine.",
            ),
            click.option(
                "--lease-seconds",
                type=click.FloatRange(1),
                default=300,
                show_default=True,
                help="Lease of a claim; renewed every quarter of it.",
            ),
            click.option(
                "--job-timeout",
                type=click.FloatRange(1),
                default=600,
                show_default=True,
                help="Wall-clock limit of one digester on one document, in seconds.",
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
                default=50,
                show_default=True,
                help="Replace the digester process after this many documents.",
            ),
            max_attempts_option,
            click.option(
                "--retry-delay",
                type=click.FloatRange(0),
                default=30,
                show_default=True,
                help="Backoff before the second attempt (doubles after).",
            ),
            click.option(
                "--converter-mode",
                type=click.Choice(MODES),
                default="layout",
                show_default=True,
                envvar="BUCKETDIGEST_CONVERTER_MODE",
                help="pymupdf4llm engine: layout (better text) or legacy (faster).",
            ),
            click.option(
                "--ocr-language",
                default="eng",
                show_default=True,
                envvar="BUCKETDIGEST_OCR_LANGUAGE",
                help="Tesseract language(s) for page-ocr, e.g. eng or deu+eng.",
            ),
            click.option(
                "--llm-url",
                envvar="BUCKETDIGEST_LLM_URL",
                help="OpenAI-compatible endpoint (e.g. http://localhost:8000/v1) for summaries; "
                "without it summaries are extractive.",
            ),
            click.option(
                "--llm-model",
                envvar="BUCKETDIGEST_LLM_MODEL",
                help="Model name sent to --llm-url.",
            ),
            click.option(
                "--llm-key-env",
                default="BUCKETDIGEST_LLM_API_KEY",
                show_default=True,
                help="Environment variable holding the endpoint's API key (if it needs one).",
            ),
            click.option(
                "--monitor-every",
                type=click.FloatRange(1),
                default=60,
                show_default=True,
                help="Each worker also requeues expired claims this often (seconds).",
            ),
            click.option(
                "--grace",
                type=click.FloatRange(0),
                default=60,
                show_default=True,
                help="On SIGTERM, time the current job gets before it is handed back.",
            ),
        ]
    ):
        func = option(func)
    return func


def worker_settings(
    *,
    lease_seconds: float,
    job_timeout: float,
    max_memory: int | None,
    jobs_per_child: int,
    max_attempts: int,
    retry_delay: float,
    converter_mode: str,
    ocr_language: str,
    llm_url: str | None,
    llm_model: str | None,
    llm_key_env: str,
    monitor_every: float,
    grace: float,
    max_jobs: int | None = None,
    exit_when_idle: bool = False,
) -> WorkerSettings:
    if bool(llm_url) != bool(llm_model):
        raise click.UsageError("--llm-url and --llm-model go together: give both or neither.")
    llm = LlmSettings(url=llm_url, model=llm_model, api_key_env=llm_key_env) if llm_url else None
    return WorkerSettings(
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
        retry_delay=retry_delay,
        max_jobs=max_jobs,
        exit_when_idle=exit_when_idle,
        idle_sleep=min(5.0, lease_seconds / 4),
        grace_seconds=grace,
        monitor_every=monitor_every,
        digest=DigestSettings(
            converter=ConverterOptions(mode=converter_mode), ocr_language=ocr_language, llm=llm
        ),
        limits=SandboxLimits(
            timeout=job_timeout,
            max_memory=max_memory << 20 if max_memory else None,
            jobs_per_child=jobs_per_child,
        ),
    )
