"""How the digest chain behaves, chosen by whoever starts the worker: the converter's options,
OCR, and the model servers some digesters call.

Apart from :mod:`bucketdigest.worker.digester` (what a digester is), which every digester
imports: these settings name the converter's options, which live in the digesters package, so
that module could only import them back late.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bucketdigest.shared.bucket_settings import ENDPOINTS
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
    """How the digesters behave; chosen by whoever starts the worker."""

    converter: ConverterOptions = field(default_factory=ConverterOptions)
    ocr_language: str = "eng"
    force_ocr: bool = False
    """Every page of a PDF read by OCR, its text layer left aside."""
    ocr_dpi: int = 300
    embedding_precision: str = DEFAULT_PRECISION
    """The weights search-semantic embeds with (:data:`.embedding.DEFAULT_PRECISION`)."""
    thumbnail_pixels: int = 320
    """The thumbnail's longer side."""
    llm: LlmSettings | None = None
    ocr_endpoint: LlmSettings | None = None
    asr_endpoint: LlmSettings | None = None
    """An OpenAI-compatible transcription server (``/v1/audio/transcriptions``, a Whisper
    server) for speech; pocketsphinx when None, and for what it fails on. (``ocr_endpoint``:
    a vision model that reads pages without a text layer instead of Tesseract, which stays
    the fallback for a page the endpoint fails on.)"""

    def as_settings(self) -> dict[str, Any]:
        """These as the bucket's chain settings name them (``info.json`` records them)."""
        converter = self.converter
        named = {
            "converter_mode": converter.mode,
            "keep_headers": converter.keep_headers,
            "plain_pages": converter.plain_pages,
            "layout_features": converter.layout_features,
            "ocr_language": self.ocr_language,
            "force_ocr": self.force_ocr,
            "embedding_precision": self.embedding_precision,
        }
        for (url, model), endpoint in zip(
            ENDPOINTS, (self.ocr_endpoint, self.llm, self.asr_endpoint), strict=True
        ):
            named[url], named[model] = (endpoint.url, endpoint.model) if endpoint else (None, None)
        return named

    def for_document(self, settings: DocumentSettings | None) -> DigestSettings:
        """These settings with what one document's own settings set (a conversion
        request's) taken over them."""
        return replace(self, **settings.chosen()) if settings else self
