"""Documents about distinct topics, digested by a real worker into a bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from bucketdigest.ingestor.ingest import Ingestor
from bucketdigest.ingestor.scan import FileFilter
from bucketdigest.ingestor.sources import FolderSource
from bucketdigest.search.indexer import index_bucket
from bucketdigest.search.query import Searcher
from bucketdigest.shared.config import StoreSettings
from bucketdigest.shared.filetypes import EXTENSION_GROUPS
from bucketdigest.shared.store import Store
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import Worker, WorkerSettings
from tests.built_once import built_once

TOPICS = {
    "naval/broadsides.md": (
        "Naval Combat",
        [
            "Ships at sea fire broadsides of cannon at one another. A frigate carries more "
            "guns than a sloop, and wind decides which captain may close the distance.",
            "Boarding actions begin when two hulls touch: sailors swing across on ropes, and "
            "marines hold the quarterdeck while the crew strikes the enemy's colours.",
            "A ship that loses its mast drifts. Repairing the rigging takes a full watch, and "
            "the helmsman must keep the vessel's bow into the storm's waves.",
        ],
    ),
    "melee/grappling.md": (
        "Grappling and Wrestling",
        [
            "To grapple, a fighter seizes an opponent with both hands. The defender resists with "
            "strength or escapes with agility; a pinned creature cannot move or attack.",
            "Wrestlers may shove a grappled foe prone, drag it across the arena, or choke it "
            "until it yields. Holds end when the grappler is stunned.",
        ],
    ),
    "magic/spells.md": (
        "Spellcasting",
        [
            "A wizard prepares spells from a spellbook each morning and spends mana to cast "
            "them. Casting a fireball requires a verbal incantation and a pinch of sulphur.",
            "Counterspells interrupt an enemy mage. Concentration breaks when the caster is "
            "wounded, ending any enchantment the caster maintains.",
        ],
    ),
    "world/harvest.md": (
        "Farming and Harvest",
        [
            "Villagers plough the fields in spring, sow barley and wheat, and pray for rain. "
            "At harvest the whole village gathers sheaves and threshes grain in the barn.",
            "A poor harvest means hunger in winter; the granary keeper rations bread, and "
            "farmers trade livestock at the autumn market for seed.",
        ],
    ),
    "world/dungeons.md": (
        "Dungeon Traps",
        [
            "Pressure plates in the corridor release poisoned darts. A rogue searches for "
            "tripwires, disarms the mechanism with thieves' tools, and marks the hidden pit.",
            "Collapsing ceilings and flooding chambers punish adventurers who rush. A careful "
            "party sends the dwarf first, tapping the flagstones with a ten-foot pole.",
        ],
    ),
}


def write_topics(folder: Path) -> dict[str, Path]:
    files = {}
    for name, (title, paragraphs) in TOPICS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"## Part {i}\n\n{text}" for i, text in enumerate(paragraphs, 1))
        path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        files[name] = path
    return files


def digest_folder(store: Store, folder: Path) -> dict[str, str]:
    """Ingest every file of ``folder`` and run a worker until all are done: path → hash."""
    exts = EXTENSION_GROUPS["all"]
    report = Ingestor(store).ingest([FolderSource(folder, FileFilter(exts=exts))])
    settings = WorkerSettings(exit_when_idle=True, monitor_every=None, idle_sleep=0.1)
    summary = Worker(store, settings).run()
    assert set(summary.outcomes) == {"done"}, summary.outcomes
    return {f.path: f.digest for f in report.files}


def searched_files(root: Path, files: dict[str, str]) -> tuple[Searcher, dict[str, str]]:
    """A searcher over a local bucket under ``root`` holding ``files`` (name → text), done
    and indexed; and each file's hash by its name."""
    for name, text in files.items():
        path = root / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    store = LocalStore(root / "bucket")
    digests = digest_folder(store, root / "in")
    settings = StoreSettings(bucket=str(root / "bucket"))
    index_bucket(store, settings)
    return Searcher.open(settings), digests


def _digest_topics(root: Path) -> dict[str, str]:
    write_topics(root / "in")
    return digest_folder(LocalStore(root / "bucket"), root / "in")


@pytest.fixture(scope="session")
def topics_bucket(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A local bucket whose documents are the topics above, all done (not yet indexed), made
    once a run: a test that changes it works on a copy."""
    root, digests = built_once(tmp_path_factory, "topics", _digest_topics)
    return root / "bucket", digests
