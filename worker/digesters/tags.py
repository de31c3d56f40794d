"""tags: the document's keywords, by YAKE (statistical, offline, no model)."""

from __future__ import annotations

import json

from bucketdigest.shared.filetypes import FileKind
from bucketdigest.shared.result import TAGS
from bucketdigest.worker.digester import DigestContext, Digester, Produced
from bucketdigest.worker.pagetext import document_text

TOP = 20


class Tags(Digester):
    name = "tags"
    label = "Tags"
    description = f"Up to {TOP} keywords and key phrases (YAKE), best first, as tags.json."
    version = "1"
    outputs = ("tags",)
    needs = ("markdown", "ocr", "web-page")
    kinds = frozenset(FileKind)

    def run(self, ctx: DigestContext) -> dict[str, Produced]:
        import yake

        text = document_text(ctx.tree)
        found = yake.KeywordExtractor(lan="en", n=3, top=TOP).extract_keywords(text) if text else []
        tags = [{"keyword": keyword, "score": round(score, 6)} for keyword, score in found]
        data = json.dumps(tags, indent=2, ensure_ascii=False) + "\n"
        return {"tags": Produced({TAGS: data.encode()}, [t["keyword"] for t in tags])}
