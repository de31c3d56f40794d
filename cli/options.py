"""Options shared by several commands, declared once, each with its environment-variable
fallback. Each group reaches the command as one settings object (``store``, ``ingest``,
``worker``), built and validated here."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from bucketdigest.search.cache import DEFAULT_MAX_BYTES, IndexCacheSettings
from bucketdigest.shared.config import DEFAULT_BUCKET, StoreSettings
from bucketdigest.shared.keys import Priority
from bucketdigest.shared.policy import ROLE_OF_COMMAND
from bucketdigest.worker.digester import DigestSettings, LlmSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import MODES, ConverterOptions
from bucketdigest.worker.loop import WorkerSettings
from bucketdigest.worker.sandbox import SandboxLimits

F = Callable[..., Any]
Decorator = Callable[[F], F]


def option_group(target: str, build: Callable[..., Any], *options: Decorator) -> Decorator:
    """Declare ``options`` on a command and hand it ``build(**their values)`` as ``target``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return func(*args, **{target: build(**values)}, **kwargs)

        params = wrapper.__dict__.setdefault("__click_params__", [])
        before = len(params)
        for option in reversed(options):
            option(wrapper)
        names = [param.name for param in params[before:]]
        return wrapper

    return decorate


max_attempts_option = click.option(
    "--max-attempts",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Attempts before a document is dead-lettered.",
)

metrics_port_option = click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    envvar="BUCKETDIGEST_METRICS_PORT",
    help="Serve Prometheus metrics on this port (with --workers K, worker i on PORT+i-1).",
)

priority_option = click.option(
    "--priority",
    type=click.Choice([p.value for p in Priority]),
    default=Priority.NORMAL.value,
    show_default=True,
    help="Queue lane: workers take high first, then normal, then low (a share of claims "
    "goes to each lower lane, so none starves).",
)

workers_option = click.option(
    "--workers",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    envvar="BUCKETDIGEST_WORKERS",
    help="Worker processes on this machine.",
)


def _store(
    bucket: str, endpoint_url: str | None, region: str | None, path_style: bool
) -> StoreSettings:
    command = click.get_current_context().info_name or ""
    role = ROLE_OF_COMMAND.get(command)
    return StoreSettings(
        bucket=bucket,
        endpoint_url=endpoint_url,
        region=region,
        path_style=path_style,
        role=role.value if role else None,
    )


store_options = option_group(
    "store",
    _store,
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
)


def _index_cache(
    index_cache: Path | None, index_cache_size: int, no_index_cache: bool
) -> IndexCacheSettings:
    return IndexCacheSettings(
        enabled=not no_index_cache, folder=index_cache, max_bytes=index_cache_size << 20
    )


index_cache_options = option_group(
    "index_cache",
    _index_cache,
    click.option(
        "--index-cache",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="BUCKETDIGEST_INDEX_CACHE",
        help="Folder for the local copy of an S3 bucket's search index, brought up to date "
        "from the bucket before use [default: ~/.cache/bucketdigest/index/<bucket hash>].",
    ),
    click.option(
        "--index-cache-size",
        type=click.IntRange(1),
        default=DEFAULT_MAX_BYTES >> 20,
        show_default=True,
        help="MiB the copy may take; a larger index is searched in the bucket directly.",
    ),
    click.option(
        "--no-index-cache",
        is_flag=True,
        help="Search the bucket's index directly, keeping no local copy.",
    ),
)


def _worker(
    *,
    lease_seconds: float,
    job_timeout: float,
    page_timeout: float,
    max_memory: int | None,
    jobs_per_child: int,
    max_attempts: int,
    retry_delay: float,
    checkpoint_after: float,
    converter_mode: str,
    keep_headers: bool,
    ocr_language: str,
    llm_url: str | None,
    llm_model: str | None,
    llm_key_env: str,
    ocr_endpoint: str | None,
    ocr_model: str | None,
    monitor_every: float,
    grace: float,
) -> WorkerSettings:
    if bool(llm_url) != bool(llm_model):
        raise click.UsageError("--llm-url and --llm-model go together: give both or neither.")
    if bool(ocr_endpoint) != bool(ocr_model):
        raise click.UsageError("--ocr-endpoint and --ocr-model go together: give both or neither.")
    llm = LlmSettings(url=llm_url, model=llm_model, api_key_env=llm_key_env) if llm_url else None
    vision = None
    if ocr_endpoint and ocr_model:
        vision = LlmSettings(url=ocr_endpoint, model=ocr_model, api_key_env=llm_key_env)
    return WorkerSettings(
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
        retry_delay=retry_delay,
        checkpoint_after=checkpoint_after,
        idle_sleep=min(5.0, lease_seconds / 4),
        grace_seconds=grace,
        monitor_every=monitor_every,
        digest=DigestSettings(
            converter=ConverterOptions(mode=converter_mode, keep_headers=keep_headers),
            ocr_language=ocr_language,
            llm=llm,
            ocr_endpoint=vision,
        ),
        limits=SandboxLimits(
            timeout=job_timeout,
            per_page=page_timeout,
            max_memory=max_memory << 20 if max_memory else None,
            jobs_per_child=jobs_per_child,
        ),
    )


worker_options = option_group(
    "worker",
    _worker,
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
        help="Wall-clock limit of one digester on one document, in seconds, before "
        "--page-timeout is added for each page.",
    ),
    click.option(
        "--page-timeout",
        type=click.FloatRange(0),
        default=5,
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
        "--checkpoint-after",
        type=click.FloatRange(0),
        default=20,
        show_default=True,
        help="Save a job's progress to the bucket once its unsaved digesters took this many "
        "seconds (a taken-over job resumes from there).",
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
        "--keep-headers",
        is_flag=True,
        envvar="BUCKETDIGEST_KEEP_HEADERS",
        help="Keep running headers, footers and page numbers in the text (by default they "
        "go to pages.json, out of pages, chunks and summaries).",
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
        "--llm-model", envvar="BUCKETDIGEST_LLM_MODEL", help="Model name sent to --llm-url."
    ),
    click.option(
        "--llm-key-env",
        default="BUCKETDIGEST_LLM_API_KEY",
        show_default=True,
        help="Environment variable holding the endpoint's API key (if it needs one).",
    ),
    click.option(
        "--ocr-endpoint",
        envvar="BUCKETDIGEST_OCR_ENDPOINT",
        help="OpenAI-compatible endpoint (e.g. http://localhost:8000/v1) of a vision model "
        "(olmOCR, or any model vLLM, Ollama or LM Studio serve) that reads pages without a "
        "text layer; Tesseract reads a page it fails on. Its key: --llm-key-env.",
    ),
    click.option(
        "--ocr-model",
        envvar="BUCKETDIGEST_OCR_MODEL",
        help="Model name sent to --ocr-endpoint.",
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
)
