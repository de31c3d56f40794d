"""Following the links of a result zip's Markdown as a reader does."""

from __future__ import annotations

import io
import zipfile

from bucketdigest.shared.result_links import BrokenLink, broken_links


def test_only_links_that_name_no_member_are_broken() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("images/a.png", b"png")
        archive.writestr(
            "pages/0001.md",
            "![a](../images/a.png) ![b](../images/b.png) [site](https://example.org) [top](#top)\n"
            "<table><tr><td>[(x/y)</td><td>](-/-)</td></tr></table>\n",
        )
        archive.writestr("document.md", "![a](images/a.png) ![wrong](../images/a.png)")
    with zipfile.ZipFile(buffer) as archive:
        assert broken_links(archive) == [
            BrokenLink("document.md", "../images/a.png"),
            BrokenLink("pages/0001.md", "../images/b.png"),
        ]
