#!/usr/bin/env bash
# Shared setup for demo.sh and test.sh: system packages, .venv, the project with its test extra.
# Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
while read -r command package _; do
  case "$command" in
    ''|'#'*) continue ;;
    lib:*) ldconfig -p 2>/dev/null | grep -q "${command#lib:} " || need_apt+=("$package") ;;
    *) command -v "$command" >/dev/null 2>&1 || need_apt+=("$package") ;;
  esac
done < scripts/system-packages.txt
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]} with apt-get" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "warning: please install ${need_apt[*]} (what needs each: scripts/system-packages.txt)" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.bucketdigest-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 'setuptools>=77' wheel
  # A CPU build of torch first (from this machine's disk where it lies there): a bare `torch`
  # requirement from sentence-transformers would otherwise pull a multi-GB CUDA build.
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/torch-cpu.txt
  # setuptools warns about every editable install whatever the project: shown only on failure
  if ! log=$(.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1); then
    echo "$log" >&2
    exit 1
  fi
  touch "$stamp"
fi
