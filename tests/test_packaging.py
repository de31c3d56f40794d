"""The wheel must ship every subpackage on disk, and code must import bucketdigest.* only."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = (
    "cli",
    "ingestor",
    "loaders",
    "monitor",
    "runner",
    "search",
    "serve",
    "shared",
    "worker",
)
ROOT_PACKAGE = "bucketdigest"
"""The folder of the package ``bucketdigest`` itself."""
ROLES = ("ingestor", "monitor", "search", "worker")
"""Packages that import ``shared`` alone (``runner``, ``serve`` and ``cli`` combine them)."""


def test_the_packages_list_matches_the_folders_on_disk() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        "bucketdigest." + init.parent.relative_to(ROOT).as_posix().replace("/", ".")
        for component in COMPONENTS
        for init in (ROOT / component).rglob("__init__.py")
        if init.parent != ROOT / ROOT_PACKAGE
    } | {"bucketdigest"}
    assert set(config["packages"]) == on_disk | set(config["package-data"])
    for package in set(config["packages"]) - {"bucketdigest"}:
        folder = package.removeprefix("bucketdigest.").replace(".", "/")
        assert config["package-dir"][package] == folder
    assert config["package-dir"]["bucketdigest"] == ROOT_PACKAGE


def test_no_module_imports_a_component_by_its_bare_name() -> None:
    bare = re.compile(r"^\s*(from|import) (shared|worker|monitor|ingestor|cli)(\.| |$)", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in (*COMPONENTS, "tests", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        if bare.search(path.read_text())
    ]
    assert offenders == []


def test_roles_and_search_import_shared_and_never_each_other() -> None:
    imports = re.compile(r"^\s*(?:from|import) bucketdigest\.(\w+)", re.M)
    crossing = {
        f"{path.relative_to(ROOT)} imports bucketdigest.{other}"
        for role in (*ROLES, "shared")
        for path in (ROOT / role).rglob("*.py")
        for other in imports.findall(path.read_text())
        if other not in (role, "shared")
    }
    assert crossing == set()


FLOORS = {
    "shared": set(),
    **{role: {"shared"} for role in ROLES},
    "runner": {"shared", *ROLES},
    "serve": {"shared", *ROLES, "runner"},
    "loaders": {"shared", *ROLES, "runner"},
    "cli": {"shared", *ROLES, "runner", "serve"},
}
"""What each package may import besides itself: every import goes down the floors (cli;
serve, then runner, which combine roles; the roles; shared), never up or sideways."""


def test_every_import_goes_down_the_floors() -> None:
    imports = re.compile(r"^\s*(?:from|import) bucketdigest\.(\w+)", re.M)
    upward = {
        f"{path.relative_to(ROOT)} imports bucketdigest.{other}"
        for package, allowed in FLOORS.items()
        for path in (ROOT / package).rglob("*.py")
        if path.parent != ROOT / ROOT_PACKAGE
        for other in imports.findall(path.read_text())
        if other != package and other not in allowed
    }
    assert upward == set()


@pytest.mark.parametrize(
    "parent_main",
    [
        pytest.param("_fixup_main_from_name", id="python -m"),
        pytest.param("_fixup_main_from_path", id="script"),
    ],
)
def test_a_process_the_command_line_spawns_does_not_load_the_command_line(
    parent_main: str,
) -> None:
    """A spawned child (the digester child, the indexer) first imports its parent's main module,
    exactly as ``multiprocessing.spawn`` does here; that must not cost it the whole CLI."""
    main = (
        "'bucketdigest.__main__'"
        if parent_main.endswith("name")
        else repr(shutil.which("bucketdigest", path=str(Path(sys.executable).parent)))
    )
    probe = (
        f"import sys; from multiprocessing import spawn; spawn.{parent_main}({main}); "
        "print(sorted(m for m in sys.modules if m.startswith(('bucketdigest.', '__mp_main__'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert "'__mp_main__'" in loaded  # the parent's main module was imported again, as in a child
    assert "bucketdigest.cli" not in loaded, loaded
