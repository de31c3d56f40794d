"""Data for the search benchmarks: Zipf-distributed text from real prose, result zips as
workers write them, and documents about distinct topics with queries written for them."""

from __future__ import annotations

import functools
import io
import json
import re
import sysconfig
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from bucketdigest.shared import keys
from bucketdigest.shared.clock import utc_now
from bucketdigest.shared.embedding import DIMENSION, MODEL_NAME
from bucketdigest.shared.records import SourceRecord
from bucketdigest.shared.store import Store


@functools.cache
def vocabulary(limit: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Words of the Python standard library's docstrings and comments, with their frequencies
    (a Zipf-like distribution, like any prose). Read once a process; the words as an array,
    so that drawing from them does not convert a list each time (20,000 queries took 10 s)."""
    counts: Counter[str] = Counter()
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[:400]:
        text = path.read_text(errors="ignore").lower()
        counts.update(re.findall(r"[a-z]{3,12}", text))
    words, freq = zip(*counts.most_common(limit), strict=True)
    weights = np.array(freq, dtype=np.float64)
    return np.array(words), weights / weights.sum()


def texts(count: int, words: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> list[str]:
    """``count`` passages of 20-40 words."""
    lengths = rng.integers(20, 41, size=count)
    drawn = words[rng.choice(len(words), size=int(lengths.sum()), p=p)].tolist()
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(drawn[start : start + length]))
        start += length
    return out


def unit_vectors(count: int, rng: np.random.Generator, dimension: int = DIMENSION) -> np.ndarray:
    vectors = rng.standard_normal((count, dimension), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _npy(vectors: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    return buffer.getvalue()


def put_result(
    store: Store,
    digest: str,
    name: str,
    chunks: list[str],
    vectors: np.ndarray,
    *,
    title: str = "",
    summary: str = "",
) -> None:
    """A result zip as the chain writes it (the members the index reads), and its origin."""
    ids = [f"{digest}:1:{i + 1}" for i in range(len(chunks))]
    lines = [
        json.dumps(
            {"id": i, "document": digest, "page": 1, "part": n, "headings": [title], "text": t}
        )
        for n, (i, t) in enumerate(zip(ids, chunks, strict=True), start=1)
    ]
    about = {"model": MODEL_NAME, "dimension": DIMENSION, "count": len(ids), "chunk_ids": ids}
    members = {
        "info.json": json.dumps(
            {"ext": "pdf", "names": [name], "pages": 1, "metadata": {"title": title}}
        ),
        "chunks.jsonl": "\n".join(lines) + "\n",
        "embeddings.npy": _npy(vectors),
        "embeddings.json": json.dumps(about),
        "tags.json": json.dumps([{"keyword": w, "score": 0.1} for w in title.split()[:3]]),
        "summary.md": summary,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    store.put(keys.out_key(digest), buffer.getvalue())
    origin = SourceRecord(digest=digest, source="bench", path=name, size=1, ingested_at=utc_now())
    store.put(keys.registry_doc_key(digest, digest[:32]), origin.to_json())


TOPICS: dict[str, tuple[str, list[str], list[str]]] = {
    # name: (title, passages, [query in the document's words, query in other words])
    "naval": (
        "Naval Combat",
        [
            "Ships fire broadsides of cannon when they come alongside an enemy vessel.",
            "Boarding parties swing across on ropes while marines hold the quarterdeck.",
            "A frigate with a broken mast drifts helplessly until the rigging is repaired.",
        ],
        ["broadsides cannon frigate", "fighting with boats on the ocean"],
    ),
    "grapple": (
        "Grappling",
        [
            "A fighter who grapples seizes the opponent and holds them in place.",
            "A pinned creature cannot move, and escaping a hold needs a strength check.",
            "Wrestlers may shove a grappled foe prone or drag it across the arena.",
        ],
        ["grapple pinned hold", "wrestling an enemy to the ground"],
    ),
    "magic": (
        "Spellcasting",
        [
            "Wizards prepare spells from their spellbook and spend mana to cast them.",
            "A fireball needs a spoken incantation and a pinch of sulphur.",
            "Concentration breaks when the caster is wounded, ending the enchantment.",
        ],
        ["spellbook mana fireball", "how sorcerers use arcane powers"],
    ),
    "farming": (
        "Harvest",
        [
            "Villagers plough the fields in spring and sow barley and wheat.",
            "At harvest the whole village threshes grain in the barn.",
            "A poor harvest means the granary keeper rations bread through winter.",
        ],
        ["barley wheat granary", "growing crops and gathering food"],
    ),
    "traps": (
        "Dungeon Traps",
        [
            "Pressure plates in the corridor release poisoned darts.",
            "The rogue finds tripwires and disarms them with thieves' tools.",
            "Careful adventurers tap the flagstones with a ten-foot pole.",
        ],
        ["tripwires pressure plates darts", "hidden dangers in underground passages"],
    ),
    "mounts": (
        "Mounted Combat",
        [
            "A knight charging on horseback deals extra damage with a lance.",
            "If the steed is frightened, the rider must keep control or be thrown.",
            "Cavalry wheels around the infantry to strike the flank.",
        ],
        ["lance horseback cavalry", "fighting while riding animals"],
    ),
    "poison": (
        "Poisons and Alchemy",
        [
            "An alchemist brews antidotes from rare herbs and distilled venom.",
            "Nightshade poison weakens its victim over several hours.",
            "Potions must be labelled, or a healing draught may be confused with toxin.",
        ],
        ["alchemist antidote nightshade", "making potions and deadly brews"],
    ),
    "stealth": (
        "Stealth",
        [
            "Sneaking past guards requires moving in shadow and making no sound.",
            "A hidden character who attacks gains surprise against the target.",
            "Heavy armour clanks and makes hiding nearly impossible.",
        ],
        ["sneaking shadow hidden", "staying unseen by sentries"],
    ),
    "archery": (
        "Archery",
        [
            "Longbowmen loose volleys of arrows at a distance of two hundred paces.",
            "A crossbow bolt pierces plate armour but is slow to reload.",
            "Fletchers make arrows from ash shafts and goose feathers.",
        ],
        ["longbow crossbow arrows", "shooting projectiles at far targets"],
    ),
    "siege": (
        "Siege Warfare",
        [
            "Trebuchets hurl stones against the castle walls for weeks.",
            "Defenders pour boiling oil on attackers climbing ladders.",
            "Sappers dig tunnels beneath the ramparts to collapse a tower.",
        ],
        ["trebuchet ramparts sappers", "attacking a fortified stronghold"],
    ),
    "trade": (
        "Merchants and Trade",
        [
            "Merchants haggle over the price of silk and spices in the bazaar.",
            "A caravan carries salt across the desert to distant markets.",
            "Guild dues and tolls eat into a trader's profit.",
        ],
        ["merchants bazaar caravan", "buying and selling goods for money"],
    ),
    "healing": (
        "Healing",
        [
            "Clerics lay hands on the wounded and close their injuries.",
            "Bandages and rest restore a few hit points each night.",
            "A surgeon sets broken bones and stitches deep cuts.",
        ],
        ["clerics bandages surgeon", "curing injuries and recovering health"],
    ),
    "weather": (
        "Travel and Weather",
        [
            "Blizzards halve the distance a party can march in a day.",
            "Travellers crossing the desert must carry water for every companion.",
            "Fog on the moor lets the party lose its way.",
        ],
        ["blizzards desert fog", "journeys through storms and harsh climate"],
    ),
    "beasts": (
        "Taming Beasts",
        [
            "A ranger calms a wild wolf with patience and fresh meat.",
            "Trained falcons hunt small game for their handler.",
            "An untamed bear may turn on its keeper when hungry.",
        ],
        ["ranger wolf falcons", "befriending and training wild animals"],
    ),
    "undead": (
        "The Undead",
        [
            "Skeletons and zombies rise from the crypt at midnight.",
            "Holy water burns ghouls, and sunlight destroys a vampire.",
            "A necromancer binds the spirits of the dead to serve him.",
        ],
        ["skeletons zombies vampire", "corpses that walk again"],
    ),
    "diplomacy": (
        "Diplomacy",
        [
            "Envoys negotiate a treaty between the warring kingdoms.",
            "A successful persuasion check convinces the duke to send aid.",
            "Insulting the ambassador ends negotiations at once.",
        ],
        ["envoys treaty ambassador", "convincing rulers through talk"],
    ),
    "mining": (
        "Mining",
        [
            "Dwarves dig deep shafts in search of iron and silver ore.",
            "Cave-ins trap miners unless the tunnels are shored with timber.",
            "A vein of gold can make a mining town rich overnight.",
        ],
        ["dwarves ore shafts", "digging minerals out of mountains"],
    ),
    "music": (
        "Bards and Music",
        [
            "A bard's song inspires allies and steadies their courage.",
            "Lutes, drums and flutes each grant a different performance bonus.",
            "The minstrel's ballad spreads the heroes' fame across the land.",
        ],
        ["bard lute ballad", "playing songs to encourage companions"],
    ),
    "gambling": (
        "Games of Chance",
        [
            "Gamblers bet silver on the roll of bone dice in the tavern.",
            "A cheat with loaded dice is thrown out if caught.",
            "Card games last until dawn when the stakes are high.",
        ],
        ["gamblers dice tavern", "wagering coins on luck"],
    ),
    "smithing": (
        "Smithing",
        [
            "The blacksmith heats steel in the forge and hammers it on the anvil.",
            "Quenching the blade in oil hardens the edge.",
            "Masterwork armour takes a month of labour to craft.",
        ],
        ["blacksmith forge anvil", "making weapons out of metal"],
    ),
}


def topic_documents() -> dict[str, tuple[str, list[str]]]:
    return {name: (title, passages) for name, (title, passages, _) in TOPICS.items()}


def quality_queries() -> list[tuple[str, str, str]]:
    """(query, kind, topic): ``words`` queries use the document's words, ``meaning`` ones
    do not."""
    return [
        (query, kind, name)
        for name, (_, _, queries) in TOPICS.items()
        for query, kind in zip(queries, ("words", "meaning"), strict=True)
    ]
