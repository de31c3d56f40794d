"""The real-world corpus: PDFs nobody on the project wrote, from Debian packages and PyPI source
distributions, pinned by version and SHA-256 and cached outside the repository.

``corpus.json`` beside this script lists every archive (name, version, SHA-256) and every file
taken from it (path, SHA-256, category). ``fetch()`` downloads what the cache lacks
(``apt-get download NAME=VERSION``, ``pip download --no-binary :all: --no-deps``), checks every
hash, unpacks the listed files and returns them. ``python corpus.py --pin`` rebuilds
``corpus.json`` from the selection rules below (done once, by a person, then committed).

Cache: ``$BUCKETDIGEST_CORPUS_CACHE``, else ``~/.cache/bucketdigest/corpus``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bucketdigest.shared.archives import member_path

MANIFEST = Path(__file__).with_name("corpus.json")
MAX_PAGES = 60
"""Files are picked up to this many pages, so the benchmark runs in minutes."""


@dataclass(frozen=True)
class Archive:
    kind: str  # "debian" | "pypi"
    name: str
    version: str

    @property
    def filename(self) -> str:
        if self.kind == "pypi":
            return f"{self.name}-{self.version}.tar.gz"
        return f"{self.name}_{self.version}_all.deb"


@dataclass(frozen=True)
class Rule:
    """Files of ``archive`` whose path matches ``pattern`` go to ``category`` (at most
    ``limit`` of them, in path order)."""

    archive: str
    pattern: str
    category: str
    limit: int = 1000


ARCHIVES = (
    Archive("pypi", "pypdf", "5.1.0"),
    Archive("pypi", "pikepdf", "9.11.0"),
    Archive("pypi", "ocrmypdf", "16.5.0"),
    Archive("debian", "texlive-lang-arabic", "2022.20230122-1"),
    Archive("debian", "texlive-lang-japanese", "2022.20230122-1"),
    Archive("debian", "texlive-lang-chinese", "2022.20230122-1"),
    Archive("debian", "texlive-lang-korean", "2022.20230122-1"),
    Archive("debian", "texlive-latex-base-doc", "2022.20230122-3"),
    Archive("debian", "texlive-latex-recommended-doc", "2022.20230122-3"),
    Archive("debian", "texlive-publishers-doc", "2022.20230122-4"),
)
PAPERS = (
    r"acmart/samples/sample-(sigconf|acmsmall|acmtog)\.pdf$|elsarticle/elstest-5p\.pdf$"
    r"|ieeeconf/IEEEconf\.pdf$|asmeconf/asmeconf-template\.pdf$|mnras/mnras_guide\.pdf$"
    r"|aastex/sample631\.pdf$|jmlr/pmlr-sample\.pdf$|ejpecp/sample\.pdf$"
    r"|nwejm/examples/article-in-english\.pdf$|ieeetran/testflow_doc\.pdf$"
)
"""Journal and conference papers set by publishers' classes: one and two columns, running
heads and footers, tables, footnotes, references."""
ONE_PAGE = (
    r"nih/example-nih-cls\.pdf$|sugconf/sugconf-template\.pdf$|jourcl/jourcl\.pdf$"
    r"|modeles-factures-belges-assocs/facture-basique\.pdf$|acmart/samples/sample-acmcp\.pdf$"
    r"|tuda-ci/DEMO-TUDaAnnouncement\.pdf$|bfh-ci/DEMO-BFHLetter\.pdf$"
    r"|univie-ling/templates/template-handout-english\.pdf$"
    r"|classicthesis/Examples/classicthesis-cv\.pdf$|confproc/example/pictures/ex_1stpage\.pdf$"
)
"""Documents of one page (letters, forms, handouts, a CV, a paper's first page): running heads
and feet cannot be found by repetition there."""
DROP_CAPS = (
    r"asaetr/asaetr\.pdf$|ijsra/ijsra\.pdf$|aiaa/template_advanced\.pdf$"
    r"|iscram/iscram-class-doc\.pdf$"
)
"""Papers whose paragraphs open with a large initial letter."""
POSTERS = r"bfh-ci/DEMO-BFHSciPoster\.pdf$|tuda-ci/DEMO-TUDa(Sci)?Poster\.pdf$"
VERTICAL_JAPANESE = r"kanbun/kanbun-example\.pdf$|pxrubrica/sample/test-(jlreq|sf)\.pdf$"
"""Japanese and classical Chinese set in vertical lines (tategaki), read right to left."""
RULES = (
    Rule("pypdf", r"/encryption/|encrypt|password", "encrypted"),
    Rule("pikepdf", r"encrypt", "encrypted"),
    Rule("pypdf", r"form|SF424", "forms"),
    Rule("pikepdf", r"form", "forms"),
    Rule("ocrmypdf", r"acroform", "forms"),
    Rule("pikepdf", r"fuzz|errors|invalid", "damaged"),
    Rule("ocrmypdf", r"invalid|no_contents|livecycle|negzero|enormous", "damaged"),
    Rule("ocrmypdf", r"\.pdf$", "scanned and image"),
    Rule("pikepdf", r"congress|sandwich|jbig2|ccitt|jp2", "scanned and image"),
    Rule("pypdf", r"\.pdf$", "library test files"),
    Rule("pikepdf", r"\.pdf$", "library test files"),
    Rule("texlive-latex-recommended-doc", r"beamerexample", "slides"),
    Rule("texlive-latex-base-doc", r"/latex/base/\w+\.pdf$", "manuals", 12),
    Rule("texlive-lang-arabic", r"\.pdf$", "Arabic and Persian (right to left)", 14),
    Rule("texlive-lang-japanese", r"\.pdf$", "Japanese (some vertical)", 14),
    Rule("texlive-lang-chinese", r"\.pdf$", "Chinese", 12),
    Rule("texlive-lang-korean", r"/(cjk-ko|kotex-oblivoir|pmhanguljamo)/[\w-]*doc\.pdf$", "Korean"),
    Rule("texlive-publishers-doc", PAPERS, "papers"),
    Rule("texlive-publishers-doc", ONE_PAGE, "one-page documents"),
    Rule("texlive-publishers-doc", DROP_CAPS, "papers with drop caps"),
    Rule("texlive-publishers-doc", POSTERS, "posters"),
    Rule("texlive-lang-japanese", VERTICAL_JAPANESE, "Japanese (some vertical)"),
)


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "bucketdigest" / "corpus"
    return Path(os.environ.get("BUCKETDIGEST_CORPUS_CACHE", default))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(archive: Archive, folder: Path) -> Path:
    target = folder / archive.filename
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if archive.kind == "pypi":
        command = [
            sys.executable,
            *("-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps"),
            *("-d", str(folder), f"{archive.name}=={archive.version}"),
        ]
        subprocess.run(command, check=True)
    else:
        subprocess.run(
            ["apt-get", "download", f"{archive.name}={archive.version}"], check=True, cwd=folder
        )
    if not target.is_file():
        raise SystemExit(f"{archive.filename}: the download gave no such file")
    return target


def _unpack(archive: Archive, path: Path, dest: Path) -> Path:
    """The archive's files under ``dest`` (unpacked once)."""
    tree = dest / archive.name
    if tree.is_dir():
        return tree
    dest.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=dest))
    if archive.kind == "pypi":
        with tarfile.open(path) as tar:  # its files only, each through the one safe helper
            for member in tar.getmembers():
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None:
                    target = member_path(scratch, member.name)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(handle.read())
    else:
        subprocess.run(["dpkg-deb", "-x", str(path), str(scratch)], check=True)
    scratch.rename(tree)
    return tree


def _archives(manifest: dict) -> dict[str, Archive]:
    return {a["name"]: Archive(a["kind"], a["name"], a["version"]) for a in manifest["archives"]}


def fetch(cache: Path | None = None, fact_pages: bool = False) -> list[tuple[Path, str]]:
    """Every corpus file (downloaded, checked, unpacked) with its category; with
    ``fact_pages``, also the files ``fact_pages`` lists (real pages picked for the fidelity
    bench's facts, kept out of the corpus the other benches measure, so that their numbers
    stay comparable across rounds)."""
    cache = cache or cache_dir()
    manifest = json.loads(MANIFEST.read_text())
    trees = {}
    for entry in manifest["archives"]:
        archive = Archive(entry["kind"], entry["name"], entry["version"])
        path = _download(archive, cache / "archives")
        if sha256(path) != entry["sha256"]:
            raise SystemExit(f"{path}: SHA-256 differs from corpus.json; delete it to refetch")
        trees[archive.name] = _unpack(archive, path, cache / "trees")
    files = []
    for entry in manifest["files"] + (manifest.get("fact_pages", []) if fact_pages else []):
        path = trees[entry["archive"]] / entry["path"]
        if sha256(path) != entry["sha256"]:
            raise SystemExit(f"{path}: SHA-256 differs from corpus.json")
        files.append((path, entry["category"]))
    return files


def page_count(path: Path) -> int:
    """MuPDF's page count (0 for a file it cannot open)."""
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            return int(doc.page_count)
    except Exception:
        return 0


def pin(cache: Path) -> dict:
    """Apply the rules to the archives and describe the result (for ``corpus.json``)."""
    archives, files, taken = [], [], set()
    trees = {}
    for archive in ARCHIVES:
        path = _download(archive, cache / "archives")
        archives.append({**archive.__dict__, "sha256": sha256(path)})
        trees[archive.name] = _unpack(archive, path, cache / "trees")
    for rule in RULES:
        tree = trees[rule.archive]
        candidates = sorted(p for p in tree.rglob("*.pdf") if p.is_file())
        chosen = 0
        for path in candidates:
            relative = path.relative_to(tree).as_posix()
            if (rule.archive, relative) in taken or not re.search(rule.pattern, relative):
                continue
            pages = page_count(path)
            if pages > MAX_PAGES:
                continue
            taken.add((rule.archive, relative))
            files.append(
                {
                    "archive": rule.archive,
                    "path": relative,
                    "sha256": sha256(path),
                    "category": rule.category,
                    "pages": pages,
                }
            )
            chosen += 1
            if chosen == rule.limit:
                break
    return {"archives": archives, "files": files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pin", action="store_true", help="rewrite corpus.json from the rules")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    cache = args.cache or cache_dir()
    if args.pin:
        manifest = pin(cache)
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{len(manifest['files'])} files from {len(manifest['archives'])} archives")
        return
    files = fetch(cache)
    print(f"{len(files)} files in {cache}")
    if shutil.which("pdfinfo") is None:
        print("note: pdftotext/pdfinfo (poppler-utils) are needed by the benchmark")


if __name__ == "__main__":
    main()
