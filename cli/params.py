"""Parameter types of the command line beyond click's own."""

from __future__ import annotations

import re
from datetime import timedelta

import click

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class Duration(click.ParamType):
    """``30d``, ``12h``, ``90m``, ``0``."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        match = re.fullmatch(r"(\d+)([smhdw]?)", str(value).strip())
        if match is None:
            self.fail(f"{value!r} is not a duration such as 30d, 12h or 90m", param, ctx)
        return timedelta(**{_UNITS[match[2] or "s"]: int(match[1])})
