#!/usr/bin/env bash
# Set up (see scripts/setup.sh), lint, then run the whole test suite, slow tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check .
exec .venv/bin/pytest "$@"
