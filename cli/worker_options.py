"""The options of the commands that run workers (``work``, ``run``), built into one
:class:`~bucketdigest.worker.loop.WorkerSettings`."""

from __future__ import annotations

import click

from bucketdigest.cli.options import max_attempts_option, option_group
from bucketdigest.shared.bucket_settings import CONVERTER_MODES, LAYOUT_FEATURES
from bucketdigest.shared.embedding import PRECISIONS
from bucketdigest.shared.windows import Schedule
from bucketdigest.worker.digest_settings import DigestSettings, LlmSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import (
    ConverterOptions,
)
from bucketdigest.worker.loop import WorkerSettings, idle_sleep_for
from bucketdigest.worker.sandbox import SandboxLimits


def _endpoint(
    url: str | None, model: str | None, key_env: str, flags: tuple[str, str]
) -> LlmSettings | None:
    """A model server named by a URL flag and a model flag, which go together."""
    if bool(url) != bool(model):
        raise click.UsageError(f"{flags[0]} and {flags[1]} go together: give both or neither.")
    return LlmSettings(url=url, model=model, api_key_env=key_env) if url and model else None


def _worker(
    *,
    lease_seconds: float,
    job_timeout: float,
    page_timeout: float,
    max_memory: int | None,
    jobs_per_child: int,
    model_threads: int | None,
    max_attempts: int,
    retry_delay: float,
    checkpoint_after: float,
    converter_mode: str,
    keep_headers: bool,
    plain_pages: bool,
    layout_features: str,
    ocr_language: str,
    embedding_precision: str,
    llm_url: str | None,
    llm_model: str | None,
    llm_key_env: str,
    ocr_endpoint: str | None,
    ocr_model: str | None,
    asr_endpoint: str | None,
    asr_model: str | None,
    monitor_every: float,
    grace: float,
    run_window: tuple[str, ...],
) -> WorkerSettings:
    # the model servers some digesters call: each a URL and a model, given together
    llm = _endpoint(llm_url, llm_model, llm_key_env, ("--llm-url", "--llm-model"))
    vision = _endpoint(ocr_endpoint, ocr_model, llm_key_env, ("--ocr-endpoint", "--ocr-model"))
    speech = _endpoint(asr_endpoint, asr_model, llm_key_env, ("--asr-endpoint", "--asr-model"))

    try:
        schedule = Schedule.parse(run_window)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--run-window") from exc

    # the worker's settings: the chain's, the digester child's limits, the queue's
    return WorkerSettings(
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
        retry_delay=retry_delay,
        checkpoint_after=checkpoint_after,
        idle_sleep=idle_sleep_for(lease_seconds),
        grace_seconds=grace,
        monitor_every=monitor_every,
        schedule=schedule,
        digest=DigestSettings(
            converter=ConverterOptions(
                mode=converter_mode,
                keep_headers=keep_headers,
                plain_pages=plain_pages,
                layout_features=layout_features,
            ),
            ocr_language=ocr_language,
            embedding_precision=embedding_precision,
            llm=llm,
            ocr_endpoint=vision,
            asr_endpoint=speech,
        ),
        limits=SandboxLimits(
            timeout=job_timeout,
            per_page=page_timeout,
            max_memory=max_memory << 20 if max_memory else None,
            jobs_per_child=jobs_per_child,
            model_threads=model_threads,
        ),
    )


worker_options = option_group(
    "worker",
    _worker,
    click.option(
        "--lease-seconds",
        type=click.FloatRange(1),
        default=WorkerSettings.lease_seconds,
        show_default=True,
        help="Lease of a claim; renewed every quarter of it.",
    ),
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
    max_attempts_option,
    click.option(
        "--retry-delay",
        type=click.FloatRange(0),
        default=WorkerSettings.retry_delay,
        show_default=True,
        help="Backoff before the second attempt (doubles after).",
    ),
    click.option(
        "--checkpoint-after",
        type=click.FloatRange(0),
        default=WorkerSettings.checkpoint_after,
        show_default=True,
        help="Save a job's progress to the bucket once its unsaved digesters took this many "
        "seconds (a taken-over job resumes from there).",
    ),
    click.option(
        "--converter-mode",
        type=click.Choice(CONVERTER_MODES),
        default=ConverterOptions.mode,
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
        "--plain-pages/--no-plain-pages",
        default=ConverterOptions.plain_pages,
        show_default=True,
        envvar="BUCKETDIGEST_PLAIN_PAGES",
        help="Convert plain pages (one column of text) from their text layer, the layout "
        "model only the others (docs/benchmarks.md: the same facts, faster).",
    ),
    click.option(
        "--layout-features",
        type=click.Choice(LAYOUT_FEATURES),
        default=ConverterOptions.layout_features,
        show_default=True,
        envvar="BUCKETDIGEST_LAYOUT_FEATURES",
        help="What the layout model sees of a page: its text layer and an image of it, its "
        "text layer alone (faster), or auto: the image only of pages with pictures or "
        "vector graphics.",
    ),
    click.option(
        "--ocr-language",
        default=DigestSettings.ocr_language,
        show_default=True,
        envvar="BUCKETDIGEST_OCR_LANGUAGE",
        help="Tesseract language(s) for page-ocr, e.g. eng or deu+eng.",
    ),
    click.option(
        "--embedding-precision",
        type=click.Choice(PRECISIONS),
        default=DigestSettings.embedding_precision,
        show_default=True,
        envvar="BUCKETDIGEST_EMBEDDING_PRECISION",
        help="The weights search-semantic embeds passages with: int8 (1.5 times as fast, "
        "the same answers on our benchmarks) or float32.",
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
        default=LlmSettings.api_key_env,
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
        "--asr-endpoint",
        envvar="BUCKETDIGEST_ASR_ENDPOINT",
        help="OpenAI-compatible endpoint (e.g. http://localhost:8000/v1) of a speech "
        "recogniser (a Whisper server) for audio and video; pocketsphinx (offline, US English) "
        "otherwise and for what it fails on. Its key: --llm-key-env.",
    ),
    click.option(
        "--asr-model", envvar="BUCKETDIGEST_ASR_MODEL", help="Model name sent to --asr-endpoint."
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
    click.option(
        "--run-window",
        multiple=True,
        envvar="BUCKETDIGEST_RUN_WINDOW",
        help="Claim work only in this window of the day, e.g. 22:00-06:00 (local time) or "
        "22:00Z-06:00Z (UTC); repeatable. Outside it the worker waits (status lists it).",
    ),
)
