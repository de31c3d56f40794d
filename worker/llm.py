"""Summaries and page text from an OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp,
Ollama, LM Studio...).

POST ``<url>/chat/completions``; the key, if any, comes from an environment variable and is sent
as a bearer token. Timeouts, 429 and 5xx answers and dropped connections are retried with
exponential backoff; any other answer fails at once with what the server said.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.request

from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from bucketdigest.shared.errors import DigestError
from bucketdigest.worker.digest_settings import LlmSettings

SYSTEM_PROMPT = (
    "You summarise documents for a search catalogue. Write a faithful summary of at most 150 "
    "words in the document's language: what it is, what it covers, its main rules or points. "
    "No preamble."
)


_FENCED = re.compile(r"\A```(?:markdown|md)?\n(.*)\n```\Z", re.DOTALL)
"""Models often wrap a whole Markdown answer in a code fence."""


class _RetryableCall(Exception):
    """A failure a later call may not meet (timeout, 429, 5xx, connection)."""


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, _RetryableCall)


def _post(settings: LlmSettings, body: bytes) -> dict:
    headers = {"Content-Type": "application/json"}
    if key := os.environ.get(settings.api_key_env):
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        settings.url.rstrip("/") + "/chat/completions", data=body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace")
        message = f"HTTP {exc.code} from {settings.url}: {detail}"
        if exc.code == 429 or exc.code >= 500:
            raise _RetryableCall(message) from exc
        raise DigestError(f"the LLM endpoint refused the request: {message}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _RetryableCall(f"cannot reach {settings.url}: {reason}") from exc
    except json.JSONDecodeError as exc:
        raise DigestError(f"the LLM endpoint did not answer JSON: {exc}") from exc


def chat(messages: list[dict], settings: LlmSettings, what: str) -> str:
    """The model's answer to ``messages``; DigestError naming ``what`` was asked for when the
    endpoint fails past its retries or answers nothing."""
    body = json.dumps({"model": settings.model, "messages": messages, "temperature": 0}).encode()
    call = retry(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential_jitter(initial=1, max=30),
        reraise=True,
    )(_post)
    try:
        answer = call(settings, body)
    except _RetryableCall as exc:
        raise DigestError(f"the LLM endpoint failed {settings.attempts} times: {exc}") from exc
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise DigestError(f"unexpected answer from the LLM endpoint: {answer!r:.300}") from exc
    if not isinstance(content, str) or not content.strip():
        raise DigestError(f"the LLM endpoint returned an empty {what}")
    return content.strip()


def summarise(text: str, settings: LlmSettings) -> str:
    """The model's summary of ``text`` (cut to ``max_input_chars``). Raises DigestError."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": text[: settings.max_input_chars]},
    ]
    return chat(messages, settings, "summary")


OCR_PROMPT = (
    "Transcribe this document page to Markdown: every word as printed, in reading order, "
    "headings as Markdown headings, tables as Markdown tables. Leave out running headers, "
    "footers and page numbers. Answer with the Markdown alone, or with nothing if the page "
    "holds no text."
)


def read_page_image(png: bytes, settings: LlmSettings) -> str:
    """A vision model's Markdown of a page image (olmOCR or any model an OpenAI-compatible
    server runs). Raises DigestError."""
    image = "data:image/png;base64," + base64.b64encode(png).decode()
    content = [
        {"type": "text", "text": OCR_PROMPT},
        {"type": "image_url", "image_url": {"url": image}},
    ]
    text = chat([{"role": "user", "content": content}], settings, "page text")
    return _FENCED.sub(r"\1", text).strip()
