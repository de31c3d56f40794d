#!/usr/bin/env bash
# Set up (see scripts/setup.sh), lint, then run the whole test suite, slow tests included, on
# two pytest-xdist workers (BUCKETDIGEST_TEST_PROCESSES=1: one, in order, as a debugger wants).
# --fast: only the tests that need no worker process, server or moto (minutes, for everyday
# work; CI runs the whole suite). Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check .
processes=${BUCKETDIGEST_TEST_PROCESSES:-2}
parallel=()
[ "$processes" -gt 1 ] && parallel=(-n "$processes" --dist worksteal)
if [ "${1:-}" = "--fast" ]; then
  shift
  exec .venv/bin/pytest "${parallel[@]}" -m "not heavy" "$@"
fi
exec .venv/bin/pytest "${parallel[@]}" "$@"
