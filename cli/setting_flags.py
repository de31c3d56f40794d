"""The bucket's settings as command-line flags, derived from their declarations
(:class:`~bucketdigest.shared.bucket_settings.Setting`), and the policing of those flags: every
worker and monitor follows the bucket, so a flag that would make one process differ from it is
refused, naming ``bucketdigest config set``; ``run``, which works its own bucket, sets what its
flags give where the bucket leaves a setting unset."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, get_args, get_type_hints

import click

from bucketdigest.runner.bucket import Bucket
from bucketdigest.shared.bucket_settings import DECLARED, BucketSettings, Setting
from bucketdigest.shared.errors import ConfigError
from bucketdigest.worker.loop import WorkerSettings

log = logging.getLogger(__name__)

FLAGGED = tuple(name for name, declared in DECLARED.items() if declared.worker is not None)
"""The settings ``work`` and ``run`` take as flags: those that set a worker option."""


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def worker_defaults() -> dict[str, Any]:
    """What each flagged setting is in a worker that neither a flag nor the bucket sets."""
    return WorkerSettings().setting_values()


def _click_type(declared: Setting, kind: type) -> Any:
    if declared.choices:
        return click.Choice(declared.choices)
    if kind in (int, float) and (declared.minimum is not None or declared.maximum is not None):
        ranged = click.IntRange if kind is int else click.FloatRange
        return ranged(declared.minimum, declared.maximum)
    return kind


def setting_flag(name: str) -> Callable[[Any], Any]:
    """The flag of setting ``name``: None when not given (the bucket's value, else the
    worker's default, which its help shows)."""
    declared = DECLARED[name]
    kind = next(a for a in get_args(get_type_hints(BucketSettings)[name]) if a is not type(None))
    default = worker_defaults().get(name)
    shown = "" if default in (None, (), "") else f"; default: {_shown(default)}"
    common: dict[str, Any] = {
        "default": None,
        "envvar": f"BUCKETDIGEST_{name.upper()}",
        "help": f"{declared.help} [a bucket setting{shown}]",
    }
    if kind is bool:
        return click.option(f"{flag_of(name)}/--no-{flag_of(name)[2:]}", name, **common)
    if get_args(kind):  # a tuple of texts: the flag repeats
        return click.option(flag_of(name), name, multiple=True, **common)
    return click.option(flag_of(name), name, type=_click_type(declared, kind), **common)


def given_settings(names: tuple[str, ...] = FLAGGED) -> dict[str, Any]:
    """The settings among ``names`` given to this command by a flag or an environment
    variable, with their values."""
    context = click.get_current_context()
    sources = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    return {
        name: context.params[name]
        for name in names
        if name in context.params and context.get_parameter_source(name) in sources
    }


def refuse_shadowing(settings: BucketSettings, given: dict[str, Any]) -> None:
    """ConfigError when a setting ``given`` by a flag differs from the bucket's (the value it
    sets, else the worker's default): the fleet follows the bucket, so two processes cannot
    disagree."""
    defaults = worker_defaults()
    for name, value in given.items():
        held = getattr(settings, name)
        fleet = defaults.get(name) if held is None else held
        if _comparable(value) != _comparable(fleet):
            source = f"settings version {settings.version}" if held is not None else "its default"
            raise ConfigError(
                f"{flag_of(name)} {_shown(value)} differs from the bucket's {name} = "
                f"{_shown(fleet)} ({source}): every process follows the bucket; change it for "
                f"all with `bucketdigest config set {name} {_shown(value)}`"
            )


def adopt_given(bucket: Bucket, given: dict[str, Any]) -> None:
    """``run``'s flags: a setting the bucket leaves unset is set for the whole bucket (a new
    version), so later workers do the same; one it sets to another value is refused."""
    settings = bucket.settings
    held = {name: value for name, value in given.items() if getattr(settings, name) is not None}
    refuse_shadowing(settings, held)
    unset = {name: value for name, value in given.items() if name not in held}
    if unset:
        adopted = bucket.configure(**unset)
        log.info(
            "the bucket's settings now set %s (version %d)",
            ", ".join(f"{n} = {_shown(v)}" for n, v in unset.items()),
            adopted.version,
        )


def _shown(value: Any) -> str:
    """A value as ``config set`` takes it."""
    if isinstance(value, (tuple, list)):
        return ",".join(value)
    return value if isinstance(value, str) else json.dumps(value)


def _comparable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
