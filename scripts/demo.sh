#!/usr/bin/env bash
# Set up, make sample rulebooks, convert them on the embedded local store, show the results
# and search them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
demo=${DEMO_DIR:-demo-output}
mkdir -p "$demo"
.venv/bin/bucketdigest samples "$demo/pdfs" --count 6 --pages 4 >/dev/null
.venv/bin/bucketdigest run "$demo/pdfs" --bucket "$demo/bucket" --workers 2
.venv/bin/bucketdigest status --bucket "$demo/bucket"
first=$(ls "$demo/bucket/store/out/" | head -n 1)
echo
echo "Results: $(pwd)/$demo/bucket/store/out/ (one zip per document)"
echo "First lines of ${first}'s document.md:"
.venv/bin/python -m zipfile -e "$demo/bucket/store/out/$first" "$demo/unpacked"
head -n 12 "$demo/unpacked/document.md"
echo
echo "Searching every document for \"roll the dice\" (bucketdigest search):"
.venv/bin/bucketdigest search "roll the dice" --bucket "$demo/bucket" --limit 3
