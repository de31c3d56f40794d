"""Tesseract's names for the languages people give: a conversion request's BCP-47 tags
(docling-serve's ``ocr_lang``: ``en``, ``de-DE``, ``zh-Hant``) or three-letter codes (``deu``,
``ger``), made into one ``-l`` argument (``deu+eng``).

Tesseract names a language by its ISO 639-2/T code, and Chinese, Serbian, Uzbek and Azerbaijani
also by script (``chi_tra``, ``srp_latn``); :mod:`langcodes` knows the tags, this module only
those scripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bucketdigest.shared.errors import BucketdigestError

_BY_SCRIPT = {
    ("zho", "Hans"): "chi_sim",
    ("zho", "Hant"): "chi_tra",
    ("srp", "Latn"): "srp_latn",
    ("uzb", "Cyrl"): "uzb_cyrl",
    ("aze", "Cyrl"): "aze_cyrl",
}
MAX_LANGUAGES = 16
"""Languages one reading may be asked for (Tesseract slows with each)."""
_NAME = r"[a-z]{3}(_[a-z]{3,4})?"
_NAMES = re.compile(rf"{_NAME}(\+{_NAME}){{0,{MAX_LANGUAGES - 1}}}")
"""Tesseract's names joined by ``+``: ``deu``, ``chi_tra+eng``."""
_TESSERACT_NAMES = frozenset({*_BY_SCRIPT.values(), "osd", "equ"})
"""Names of Tesseract's own that are no language tag."""


class UnknownLanguage(BucketdigestError):
    """A language tag no registry knows."""


def check_tesseract_names(text: str) -> str:
    """``text`` when it is Tesseract's names of languages joined by ``+`` (``deu+chi_tra``, at
    most :data:`MAX_LANGUAGES`), as a bucket's ``ocr_language`` and a document's settings hold
    them; ValueError otherwise. Such a name becomes part of a path (``TESSDATA/deu.traineddata``)
    in every worker, so it is checked wherever it comes from."""
    if not isinstance(text, str) or not _NAMES.fullmatch(text):
        raise ValueError(f"{str(text)[:40]!r} is not Tesseract's language names, like deu+eng")
    return text


def tesseract_language(tag: str) -> str:
    """Tesseract's name for the language ``tag`` names; UnknownLanguage for none."""
    import langcodes  # 60 ms: only where a tag is given

    tag = tag.strip()
    if tag.lower() in _TESSERACT_NAMES:
        return tag.lower()
    try:
        language = langcodes.Language.get(tag)
        code = language.to_alpha3()
        if not language.is_valid():
            raise ValueError(tag)
    except (LookupError, ValueError):
        raise UnknownLanguage(f"{tag[:40]!r} is not a language tag (en, de-DE, zh-Hant)") from None
    if code in ("mul", "und"):
        raise UnknownLanguage(f"{tag!r} names no one language: name the document's languages")
    script = language.maximize().script
    return _BY_SCRIPT.get((code, script or ""), code)


def tesseract_languages(tags: Iterable[str]) -> str | None:
    """One Tesseract ``-l`` argument for ``tags`` in their order of preference (a tag may
    itself hold several, ``eng+deu`` or ``en,de``); None for no tag. UnknownLanguage for a tag
    that names no language."""
    names: list[str] = []
    for given in tags:
        for tag in str(given).replace(",", "+").split("+"):
            if tag.strip() and (name := tesseract_language(tag)) not in names:
                names.append(name)
    if len(names) > MAX_LANGUAGES:
        raise UnknownLanguage(f"{len(names)} languages: at most {MAX_LANGUAGES}")
    return "+".join(names) or None


def same_languages(one: str | None, other: str | None) -> bool:
    """Whether two ``-l`` arguments name the same languages, in whatever order."""
    return set((one or "").split("+")) == set((other or "").split("+"))
