"""What README.md and docs/ tell a reader to type is what the command line takes: every
example in a shell block parses as given (its options exist, its values are valid), and every
command named in the prose exists with the options it is shown with."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from pathlib import Path

import click
import pytest

from bucketdigest.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
_SHELL = {"", "sh", "bash", "console", "shell"}
_IN_PROSE = re.compile(r"(?<!`)`(bucketdigest [^`]+)`(?!`)")
_ENVIRONMENT = re.compile(r"^(?:\w+=(?:\$\([^)]*\)|\S+)\s+)+")
_NOT_A_PATH = re.compile(r"^(?:-|[a-z0-9+]+://|git@)|^[^/.~]*$")


def _examples() -> list[tuple[str, str]]:
    """The ``bucketdigest`` lines of the documents' shell blocks, by document."""
    found = []
    for document in DOCUMENTS:
        for language, block in _FENCE.findall(document.read_text()):
            if language not in _SHELL:
                continue
            for line in block.splitlines():
                line = _ENVIRONMENT.sub("", line.strip().removeprefix("$ "))
                line = line.removeprefix(".venv/bin/")
                if line.startswith("bucketdigest "):
                    found.append((document.name, line))
    return found


def _named_in_prose() -> list[tuple[str, str]]:
    return [
        (document.name, " ".join(span.split()))
        for document in DOCUMENTS
        for span in _IN_PROSE.findall(_FENCE.sub("", document.read_text()))
    ]


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    """The (sub)command ``words`` name, and the words after its name."""
    command: click.Command = cli
    while isinstance(command, click.Group) and words and words[0] in command.commands:
        command, words = command.commands[words[0]], words[1:]
    return command, words


@pytest.mark.parametrize(("document", "line"), _examples())
def test_every_example_in_a_shell_block_parses_as_written(
    document: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    words = [os.path.expanduser(word) for word in shlex.split(line, comments=True)[1:]]
    command, arguments = _command(words)
    assert command is not cli and not isinstance(command, click.Group), f"{line}: no command"
    for word in arguments:  # the reader's own files: a folder, or a file with a suffix
        if not _NOT_A_PATH.search(word):
            path = Path(word)
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix:
                path.write_bytes(b"%PDF-1.4\n")
            else:
                path.mkdir(exist_ok=True)
    with contextlib.suppress(click.exceptions.Exit):  # --help, --version
        command.make_context(command.name or "", arguments)


@pytest.mark.parametrize(("document", "span"), _named_in_prose())
def test_every_command_named_in_the_prose_exists_with_its_options(document: str, span: str) -> None:
    words = span.split()[1:]
    command, rest = _command(words)
    if not words or words[0].isupper():  # "bucketdigest COMMAND --help": the pattern
        return
    assert command is not cli, f"{span!r} ({document}): no such command"
    names = {name for param in command.params for name in param.opts + param.secondary_opts}
    names |= {"--help"}
    for word in rest:
        option = word.split("=", 1)[0]
        if option.startswith("--"):
            assert option in names, f"{span!r} ({document}): {command.name} has no {option}"
