"""The digest chain: the digesters that run, in the order :mod:`bucketdigest.shared.chain`
declares (with ``RESETS``, the one table of cascading resets). Checked by :func:`validate_chain`
when a worker starts: the declared names in order, unique outputs, every ``needs`` produced by
an earlier digester, and every consumer listed in its producer's resets (so nothing can keep
a stale result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bucketdigest.shared.chain import DIGESTERS, PRIMARY_OUTPUT, RESETS
from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.keys import check_digester_name
from bucketdigest.worker.digester import Digester
from bucketdigest.worker.digesters.doc_to_markdown import DocToMarkdown
from bucketdigest.worker.digesters.doc_to_screenshot import DocToScreenshot
from bucketdigest.worker.digesters.page_ocr import PageOcr
from bucketdigest.worker.digesters.search_keyword import SearchKeyword
from bucketdigest.worker.digesters.search_semantic import SearchSemantic
from bucketdigest.worker.digesters.summary import Summary
from bucketdigest.worker.digesters.tags import Tags
from bucketdigest.worker.digesters.url_crawl import UrlCrawl

CHAIN: tuple[Digester, ...] = (
    DocToMarkdown(),
    DocToScreenshot(),
    PageOcr(),
    UrlCrawl(),
    Tags(),
    Summary(),
    SearchKeyword(),
    SearchSemantic(),
)


class ChainError(ValueError):
    """The chain definition is inconsistent (a programming error, reported at start-up)."""


def validate_chain(
    chain: Sequence[Digester], resets: Mapping[str, Sequence[str]], primary: str
) -> None:
    """Raise ChainError describing the first inconsistency found."""
    position: dict[str, int] = {}
    producer: dict[str, str] = {}
    for index, digester in enumerate(chain):
        check_digester_name(digester.name)
        if digester.name in position:
            raise ChainError(f"two digesters are named {digester.name!r}")
        position[digester.name] = index
        if not digester.outputs:
            raise ChainError(f"{digester.name} declares no outputs")
        for need in digester.needs:
            if need not in producer:
                raise ChainError(
                    f"{digester.name} needs {need!r}, which no earlier digester produces"
                )
            if digester.name not in resets.get(producer[need], ()):
                raise ChainError(
                    f"{digester.name} reads {need!r} but is not in the resets of {producer[need]}"
                )
        for output in digester.outputs:
            if output in producer:
                raise ChainError(
                    f"output {output!r} is declared by {producer[output]} and {digester.name}"
                )
            producer[output] = digester.name
    if primary not in producer:
        raise ChainError(f"no digester produces the primary output {primary!r}")
    for source, targets in resets.items():
        if source not in position:
            raise ChainError(f"resets name an unknown digester {source!r}")
        for target in targets:
            if target not in position:
                raise ChainError(f"resets of {source} name an unknown digester {target!r}")
            if position[target] <= position[source]:
                raise ChainError(f"{source} resets {target}, which does not run after it")


def primary_digester(chain: Sequence[Digester] = CHAIN) -> Digester:
    """The digester of :data:`PRIMARY_OUTPUT`."""
    return next(d for d in chain if PRIMARY_OUTPUT in d.outputs)


def preloads(chain: Sequence[Digester] = CHAIN) -> tuple[str, ...]:
    """Every module the digesters of ``chain`` want loaded once in the digester child."""
    return tuple(dict.fromkeys(module for d in chain for module in d.preload))


def digester_named(name: str, chain: Sequence[Digester] = CHAIN) -> Digester:
    """The digester called ``name``; KeyError naming the known ones otherwise."""
    for digester in chain:
        if digester.name == name:
            return digester
    known = ", ".join(d.name for d in chain)
    raise KeyError(f"no digester named {name!r} (known: {known})")


def describe_chain() -> list[dict[str, Any]]:
    """The chain as plain data, in order (``bucketdigest digesters``)."""
    return [
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


validate_chain(CHAIN, RESETS, PRIMARY_OUTPUT)
if tuple(d.name for d in CHAIN) != DIGESTERS:
    raise ChainError(f"the chain runs {[d.name for d in CHAIN]}, not as declared: {DIGESTERS}")
