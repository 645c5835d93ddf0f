#!/usr/bin/env bash
# The memos figures of docs/policies/memos.md on the memos preset (DRAM and NVM
# channels side by side, frames coloured by bank and LLC slab), 64 MiB footprints,
# every page born in NVM (§7.1), about 16 s of simulated time per run.
#
# memos runs with its periods divided by 5 (a sampling every 5 ms instead of our
# default 25 ms, 100 samplings per pass, a round every 4 s instead of 20 s): the
# paper's time scale would need ~9 minutes of wall time per run here (docs say so).
#
# Sets:
#   kv          kv (YCSB A, zipfian) alone: all-fast (DRAM-only), all-slow (NVM-only),
#               interleave (the paper's baseline), memos, and memos' sensitivity
#               rows (k_len 1 and 5, hot_share 0.3 and 0.7, no thrashing class,
#               locked CPU copies instead of DMA demotions)
#   gups-chase  a write-heavy program beside a read-only one, one core each
#   kv-stream   kv beside STREAM, one core each
# One JSON per run in $OUT (default ./memos-figures); runs already done are kept;
# tables in $OUT/summary.md. T=path/to/tiersim to use a given binary.
# usage: scripts/memos-figures.sh [SET ...]   (default all; about 30 minutes on two cores)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
source scripts/jobs.sh
OUT=${OUT:-$PWD/memos-figures}
mkdir -p "$OUT"
SETS=("$@")
[ ${#SETS[@]} -gt 0 ] || SETS=(kv gups-chase kv-stream)
SCALE="--set policy.memos.sampling_interval_ms=5 --set policy.memos.interval_s=4"
# References per core for about 16 s of simulated time under interleave.
declare -A REFS=([kv]=2240000000 [gups-chase]=212000000 [kv-stream]=1650000000)
declare -A SRC=([kv]="--workload kv" [gups-chase]="--mix gups,chase" [kv-stream]="--mix kv,stream")
jobs=()
for s in "${SETS[@]}"; do
    [ -n "${SRC[$s]:-}" ] || { echo "unknown set $s (kv, gups-chase, kv-stream)" >&2; exit 2; }
    base="run --preset memos ${SRC[$s]} --footprint 64MiB --refs ${REFS[$s]} $SCALE"
    policies="all-fast all-slow interleave memos"
    [ $s = kv ] || policies="$policies cache-bank-colouring"
    for p in $policies; do
        jobs+=("$base --policy $p --json $OUT/$s-$p.json")
    done
    if [ $s = kv ]; then
        for v in k_len=1 k_len=5 hot_share=0.3 hot_share=0.7 thrash_max_gap=0 dma_demotions=false; do
            jobs+=("$base --policy memos --set policy.memos.$v --json $OUT/$s-memos-${v/=/-}.json")
        done
    fi
done
run_missing "$T" "${jobs[@]}"
python3 scripts/memos_summary.py "$OUT" > "$OUT/summary.md"
cat "$OUT/summary.md"
