"""``bucketdigest config``: the bucket's settings, which every worker and monitor follows."""

from __future__ import annotations

import json

import click

from bucketdigest.cli.group import cli, library_errors
from bucketdigest.cli.options import store_options
from bucketdigest.cli.setting_flags import FLAGGED, flag_of, worker_defaults
from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared.bucket_settings import DECLARED, SETTING_NAMES, BucketSettings
from bucketdigest.shared.config import StoreSettings


def _show(settings: BucketSettings) -> str:
    lines = [
        f"settings version {settings.version}"
        + (f", changed {settings.updated_at:%Y-%m-%d %H:%M:%S} UTC" if settings.updated_at else "")
    ]
    public, defaults = settings.public(), worker_defaults()
    for name in SETTING_NAMES:
        value, default = public[name], defaults.get(name)
        if value is not None:
            lines.append(f"{name} = {json.dumps(value)}")
        elif default in (None, (), ""):
            lines.append(f"{name} = (default)")
        else:
            lines.append(f"{name} = (default: {json.dumps(default)})")
    return "\n".join(lines)


@cli.group()
def config() -> None:
    """The bucket's settings: attempts, backoff, lease length, run windows and lane shares;
    the chain's options (converter mode, headers, plain pages, layout features, OCR language)
    and the model servers it calls (OCR, LLM, ASR endpoints and models; their API keys stay
    in each worker's environment). Every worker and monitor follows them, a change within a
    minute; a flag that would shadow one the bucket sets is refused.

    Example: bucketdigest config set ocr_language eng+deu
    """


@config.command(name="show")
@store_options
@click.option("--json", "as_json", is_flag=True, help="The settings record as JSON.")
@library_errors
def show(store: StoreSettings, as_json: bool) -> None:
    """Print the bucket's settings (unset ones have their defaults).

    Example: bucketdigest config show
    """
    settings = Bucket(store, check_writes=False).settings
    click.echo(json.dumps(settings.public(), indent=2) if as_json else _show(settings))


@config.command(name="set")
@click.argument("name", type=click.Choice(SETTING_NAMES))
@click.argument("value")
@store_options
@library_errors
def set_command(name: str, value: str, store: StoreSettings) -> None:
    """Set NAME to VALUE for every process of the fleet (``default`` unsets it).

    Example: bucketdigest config set max_attempts 5
    """
    bucket = Bucket(store)
    settings = bucket.configure_text(**{name: value})
    click.echo(_show(settings))
    if name == "events_secret" and value == "new":
        click.echo(
            f"events are signed with {bucket.events_secret()} (give it to each receiver; the "
            "secret it replaces signs beside it for a day)"
        )


@config.command(name="describe")
def describe() -> None:
    """Print every setting, who follows it, its flag and what it decides, as a Markdown
    table (docs/guide.md's "Settings" is this table).

    Example: bucketdigest config describe
    """
    click.echo(settings_table())


def settings_table() -> str:
    """Every declared setting as a row of a Markdown table."""
    defaults = worker_defaults()
    rows = ["| setting | followed by | flag of `work` and `run` | default | what it decides |"]
    rows.append("| --- | --- | --- | --- | --- |")
    for name, declared in DECLARED.items():
        flag = f"`{flag_of(name)}`" if name in FLAGGED else ""
        default = defaults.get(name)
        shown = "" if default in (None, (), "") else f"`{json.dumps(default)}`"
        row = (f"`{name}`", declared.follows.value, flag, shown, declared.help)
        rows.append(f"| {' | '.join(row)} |")
    return "\n".join(rows)


@config.command(name="edit")
@store_options
@library_errors
def edit(store: StoreSettings) -> None:
    """Edit the settings as JSON in $EDITOR; saved only if nobody changed them meanwhile.

    Example: EDITOR=nano bucketdigest config edit
    """
    bucket = Bucket(store)
    text = click.edit(json.dumps(bucket.stored_settings().public(), indent=2), extension=".json")
    if text is None:
        click.echo("unchanged")
        return
    click.echo(_show(bucket.replace_settings(text)))
