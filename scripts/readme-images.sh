#!/usr/bin/env bash
# readme-images.sh — the README's report images, regenerated from the committed studies.
#
# Writes the reports of the three committed studies (docs/study-2011/stability-2011.sqlite,
# docs/study-2011/stability-2011-flash.sqlite, docs/study-generations/generations.sqlite; the
# 2011 ones with their experiment file as the reference, as the README's commands run them)
# into a temporary folder, from copies of the databases (a report may write its analysis
# cache), and screenshots each report's first screen at 1400×900 with headless Chromium into
# docs/report-<study>-first-screen.png. The 2011 study's report is drawn with its PNGs, and
# three of them are the README's figure examples: docs/scorecard-example.png (the
# reproduction scorecard), docs/small-multiples-example.png (throughput per row) and
# docs/report-example.png (checkpoint age and dirty pages of the baseline's median run).
# Run from the checkout after `bash scripts/setup.sh`; needs Debian's chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fb="$root/.venv/bin/flushbench"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "error: chromium not found — apt-get install chromium" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

shoot() {  # shoot STUDY DB EXPERIMENT [REFERENCE-FILE]
    local study=$1 db=$2 name=$3 ref=${4:-}
    cp "$root/$db" "$tmp/$study.sqlite"
    local png=(--no-png)
    [ "$study" = 2011 ] && png=()
    "$fb" report "$name" --db "$tmp/$study.sqlite" ${ref:+--reference "$root/$ref"} \
        "${png[@]}" -o "$tmp/$study" > /dev/null
    "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
        --user-data-dir="$tmp/profile-$study" --virtual-time-budget=15000 \
        --window-size=1400,900 --screenshot="$root/docs/report-$study-first-screen.png" \
        "file://$tmp/$study/report.html" > /dev/null 2>&1
    echo "docs/report-$study-first-screen.png"
}

shoot 2011 docs/study-2011/stability-2011.sqlite stability-2011 experiments/stability-2011.yaml
shoot flash docs/study-2011/stability-2011-flash.sqlite stability-2011-flash \
    experiments/stability-2011-flash.yaml
shoot generations docs/study-generations/generations.sqlite generations

# The README's figure examples, from the 2011 study's report (figure files by their names,
# whatever number the report gives them).
figure() {  # figure SUFFIX TARGET
    local found=("$tmp"/2011/figures/[0-9]*-"$1".png)
    [ -f "${found[0]}" ] || { echo "error: no figure *-$1.png in the 2011 report" >&2; exit 1; }
    cp "${found[0]}" "$root/docs/$2"
    echo "docs/$2"
}
figure scorecard scorecard-example.png
figure throughput-per-cell small-multiples-example.png
figure checkpoint-dirty-cell1 report-example.png
