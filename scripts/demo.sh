#!/usr/bin/env bash
# Set up, convert five small real documents (scripts/demo-documents, with their licences: a scan with a text layer,
# a two-column article, an invoice, slides, a Japanese page) on the embedded local store,
# search them, and say where the answer stands on its page and what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
demo=${DEMO_DIR:-demo-output}
bucket="$demo/bucket"
mkdir -p "$demo"
.venv/bin/bucketdigest run scripts/demo-documents/pdfs --bucket "$bucket"
echo
echo "Results: $(realpath "$bucket")/store/out/ (one zip per document: Markdown per page, images,"
echo "document.json, info.json); the scanned sheet's Markdown begins:"
.venv/bin/bucketdigest get linn-sequencer-scan.pdf --bucket "$bucket" -o "$demo/linn" >/dev/null
head -n 8 "$demo/linn/document.md"
echo
question="how many tracks does the sequencer record"
echo "Searching every document for \"$question\" (bucketdigest search):"
.venv/bin/bucketdigest search "$question" --bucket "$bucket" --limit 2
view=$(.venv/bin/bucketdigest search "$question" --bucket "$bucket" --limit 1 --json |
  .venv/bin/python -c 'import json, sys; hits = json.load(sys.stdin); print(hits[0]["view"] if hits and hits[0].get("view") else "/")')
echo
echo "See the answer on its page: bucketdigest serve --bucket $bucket, then open http://127.0.0.1:8000$view"
echo "Next: bucketdigest run ~/Documents --watch converts what you drop in a folder; an S3 bucket"
echo "and workers on many machines: README, \"Running a fleet\"."
