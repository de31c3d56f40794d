"""How the digest chain behaves, chosen by whoever starts the worker: the converter's options,
OCR, and the model servers some digesters call.

Apart from :mod:`bucketdigest.worker.digester` (what a digester is), which every digester
imports: these settings name the converter's options, which live in the digesters package, so
that module could only import them back late.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bucketdigest.shared.bucket_settings import Follows, get_path, set_paths, worker_paths
from bucketdigest.shared.embedding import DEFAULT_PRECISION
from bucketdigest.shared.records import DocumentSettings
from bucketdigest.worker.digesters.doc_to_markdown.options import ConverterOptions


@dataclass(frozen=True)
class LlmSettings:
    """An OpenAI-compatible chat endpoint for summaries; the API key is read from the
    environment variable ``api_key_env`` at call time, never stored in settings or records."""

    url: str
    model: str
    api_key_env: str = "BUCKETDIGEST_LLM_API_KEY"
    timeout: float = 120.0
    attempts: int = 3
    max_input_chars: int = 24_000


@dataclass(frozen=True)
class DigestSettings:
    """How the digesters behave: the bucket's chain settings (each declared in
    :class:`~bucketdigest.shared.bucket_settings.BucketSettings`, whose ``worker`` path names
    the field here it sets) and this process's own."""

    converter: ConverterOptions = field(default_factory=ConverterOptions)
    ocr_language: str = "eng"
    force_ocr: bool = False
    ocr_dpi: int = 300
    embedding_precision: str = DEFAULT_PRECISION
    fetch_private_networks: bool = False
    thumbnail_pixels: int = 320
    """The thumbnail's longer side."""
    llm_url: str | None = None
    llm_model: str | None = None
    ocr_endpoint: str | None = None
    ocr_model: str | None = None
    asr_endpoint: str | None = None
    asr_model: str | None = None
    api_key_env: str = LlmSettings.api_key_env
    """The environment variable the model servers' API key is read from (this process's)."""
    endpoint_timeout: float = LlmSettings.timeout
    endpoint_attempts: int = LlmSettings.attempts

    def _server(self, url: str | None, model: str | None) -> LlmSettings | None:
        if url is None or model is None:
            return None
        return LlmSettings(
            url,
            model,
            api_key_env=self.api_key_env,
            timeout=self.endpoint_timeout,
            attempts=self.endpoint_attempts,
        )

    @property
    def llm(self) -> LlmSettings | None:
        """The chat endpoint that writes summaries (extractive without)."""
        return self._server(self.llm_url, self.llm_model)

    @property
    def ocr_server(self) -> LlmSettings | None:
        """The vision model that reads pages without a text layer instead of Tesseract, which
        stays the fallback for a page it fails on."""
        return self._server(self.ocr_endpoint, self.ocr_model)

    @property
    def asr_server(self) -> LlmSettings | None:
        """The transcription server (``/v1/audio/transcriptions``, a Whisper server) for
        speech; pocketsphinx when None, and for what it fails on."""
        return self._server(self.asr_endpoint, self.asr_model)

    def as_settings(self) -> dict[str, Any]:
        """These as the bucket's chain settings name them (``info.json`` records them)."""
        return {name: get_path(self, path) for name, path in worker_paths(Follows.CHAIN).items()}

    def with_settings(self, chosen: dict[str, Any]) -> DigestSettings:
        """These with the chain settings of ``chosen`` (name → value) taken over them."""
        paths = worker_paths(Follows.CHAIN)
        return set_paths(self, {paths[n]: v for n, v in chosen.items() if n in paths})

    def for_document(self, settings: DocumentSettings | None) -> DigestSettings:
        """These settings with what one document's own settings set (a conversion
        request's) taken over them."""
        return self.with_settings(settings.chosen()) if settings else self
