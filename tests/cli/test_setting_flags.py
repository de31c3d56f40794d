"""Each bucket setting is declared once: its check, its flag, ``config`` and the worker option
it sets all come from that declaration, so a setting added to the record reaches every one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_type_hints

import click
import pytest
from click.testing import CliRunner

from bucketdigest.cli.main import cli
from bucketdigest.cli.setting_flags import FLAGGED, flag_of, worker_defaults
from bucketdigest.cli.settings import settings_table
from bucketdigest.cli.worker_options import worker_options
from bucketdigest.shared.bucket_settings import (
    DECLARED,
    ENDPOINTS,
    BucketSettings,
    change_settings,
    read_settings,
)
from bucketdigest.shared.errors import ConfigError
from bucketdigest.shared.stores.local import LocalStore
from bucketdigest.worker.loop import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]


def _other_value(name: str) -> Any:
    """A valid value of setting ``name`` that is not a default worker's."""
    declared, default = DECLARED[name], worker_defaults().get(name)
    kind = next(a for a in get_args(get_type_hints(BucketSettings)[name]) if a is not type(None))
    if declared.choices:
        return next(choice for choice in declared.choices if choice != default)
    if kind is bool:
        return not default
    if kind in (int, float):
        top = declared.maximum if declared.maximum is not None else default + 2
        return kind((default + top) / 2) if kind is float else default + 1
    if get_args(kind):
        return ("22:00-06:00",)
    if "url" in name or "endpoint" in name:
        return "http://127.0.0.1:9/v1"
    texts = ("some-model", "deu+eng")  # the first its check takes (ocr_language: the second)
    hint = get_type_hints(BucketSettings)[name]
    return next(text for text in texts if declared.problem(name, hint, text) is None)


@pytest.mark.parametrize("name", FLAGGED)
def test_a_setting_the_bucket_sets_reaches_the_worker_option_its_declaration_names(
    name: str,
) -> None:
    value = _other_value(name)
    followed = WorkerSettings().following(BucketSettings(**{name: value}))
    assert followed.setting_values()[name] == value
    assert followed != WorkerSettings()
    if DECLARED[name].follows.value == "chain":
        assert followed.digest.as_settings()[name] == value, "info.json records it"


@pytest.mark.parametrize("name", FLAGGED)
def test_its_flag_sets_the_same_option_and_shadowing_the_bucket_is_refused(
    name: str, tmp_path: Path
) -> None:
    value = _other_value(name)
    if isinstance(value, bool):
        flags = [flag_of(name) if value else f"--no-{flag_of(name)[2:]}"]
    elif isinstance(value, tuple):
        flags = [flag_of(name), value[0]]
    else:
        flags = [flag_of(name), str(value)]
    named = {name}
    for pair in ENDPOINTS:  # a model server's URL and model go together
        if name in pair:
            partner = next(other for other in pair if other != name)
            flags += [flag_of(partner), str(_other_value(partner))]
            named.add(partner)
    built: list[WorkerSettings] = []
    command = click.command()(worker_options(lambda worker: built.append(worker)))
    assert CliRunner().invoke(command, flags).exit_code == 0
    assert built[0].setting_values()[name] == value

    bucket = str(tmp_path / "bucket")
    LocalStore(tmp_path / "bucket")
    result = CliRunner().invoke(cli, ["work", "--exit-when-idle", *flags, "--bucket", bucket])
    assert result.exit_code == 1, result.output
    refused = next(n for n in named if f"differs from the bucket's {n} " in result.output)
    assert f"bucketdigest config set {refused}" in result.output


def test_every_worker_flag_of_a_setting_is_declared_and_every_check_comes_from_it(
    tmp_path: Path,
) -> None:
    help_text = CliRunner().invoke(cli, ["work", "--help"], terminal_width=200).output
    for name in FLAGGED:
        assert flag_of(name) in help_text, name
    store = LocalStore(tmp_path)
    with pytest.raises(ConfigError, match="normal_lane_share must be 1 or less"):
        change_settings(store, {"normal_lane_share": 1.5})
    with pytest.raises(ConfigError, match="converter_mode is one of layout, legacy"):
        change_settings(store, {"converter_mode": "fast"})
    with pytest.raises(ConfigError, match="run_window"):
        change_settings(store, {"run_window": ("25:00-06:00",)})
    assert read_settings(store)[1] is None, "nothing written"
    refused = CliRunner().invoke(cli, ["work", "--run-window", "25:00-06:00"])
    assert refused.exit_code == 2 and "run-window" in refused.output


def test_the_guide_lists_every_setting_as_its_declaration_says() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text()
    assert settings_table() in guide, "run `bucketdigest config describe` into docs/guide.md"
    described = CliRunner().invoke(cli, ["config", "describe"])
    assert described.exit_code == 0 and described.output.strip() == settings_table()
