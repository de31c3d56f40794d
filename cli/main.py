"""``bucketdigest``: one command for every role. Each command parses options, calls one
library function and renders its result."""

from bucketdigest.cli import browse, find, fleet, jobs, lifecycle, settings, tokens, web
from bucketdigest.cli.group import cli

__all__ = ["browse", "cli", "find", "fleet", "jobs", "lifecycle", "settings", "tokens", "web"]
