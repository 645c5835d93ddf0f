#!/usr/bin/env bash
# Makes docs/report-page.png, the README's picture of a report page: memos on the
# demo's workload (a hot set that moves halfway, memos' periods scaled as the demo
# scales them), drawn by `tiersim report` and photographed by headless Chromium.
# Run it again after changing the report page (src/report/html/).
#
#   docs/screenshot.sh [TIERSIM]    default target/release/tiersim, built if missing
#
# Needs Chromium (Debian's package `chromium`); about 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
tiersim=${1:-target/release/tiersim}
if [ ! -x "$tiersim" ]; then
  cargo build --release
fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "docs/screenshot.sh: chromium not found (Debian: apt-get install chromium)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tiersim" run --policy memos --workload hotspot --footprint 256MiB --refs 20000000 \
  --set workload.hotspot.phases=2 --set policy.memos.interval_s=0.2 \
  --set policy.memos.passes_per_run=40 --set policy.memos.samplings_per_pass=10 \
  --json "$work/run.json" > /dev/null
"$tiersim" report "$work/run.json" -o "$work/run.html"
# The first screen of the page: the title, the summary and the first plots.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1250 \
  --screenshot="$work/page.png" "file://$work/run.html" 2> /dev/null
mv "$work/page.png" docs/report-page.png
echo "wrote docs/report-page.png"
