#!/usr/bin/env bash
# Sampled mode against detailed mode (docs/sampled.md, BENCHMARKS.md "Sampled mode"):
# the same run in both modes, default windows (20 M references per period, 1 M
# detailed of which 500 k re-warm the caches), 1 GiB footprints, 100 M references.
#
# Sets:
#   workloads  the twelve workloads under first-touch, and under all-fast (for the
#              slowdown of first-touch against it)
#   policies   every OS-level policy on kv and hotspot; the policies that act over
#              seconds get periods scaled to the run (a run is 0.4-2 simulated
#              seconds), the rest run with their defaults
# One JSON per run in $OUT (default ./sampled-validation); runs already done are
# kept; the table is printed by scripts/sampled_summary.py $OUT. T=path/to/tiersim
# to use a given binary. Runs one at a time, so that the speeds compare.
# usage: scripts/sampled-validation.sh [SET ...]   (default both; about 45 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
OUT=${OUT:-$PWD/sampled-validation}
mkdir -p "$OUT"
SETS=("$@")
[ ${#SETS[@]} -gt 0 ] || SETS=(workloads policies)
REFS=100000000
WORKLOADS="uniform gups zipf hotspot seqscan chase graph-bfs pagerank kv spmv-cg gemm stream"
declare -A SCALE=(
    [kstaled]="--set policy.kstaled.scans_per_run=20"
    [thermostat]="--set policy.thermostat.periods_per_run=10"
    [memos]="--set policy.memos.passes_per_run=20 --set policy.memos.samplings_per_pass=10"
)
one() {  # one NAME ARGS...: both modes of one run
    local name=$1 mode
    shift
    for mode in detailed sampled; do
        local json="$OUT/$name-$mode.json"
        [ -e "$json" ] || "$T" run "$@" --footprint 1GiB --refs $REFS --mode $mode --json "$json" > /dev/null
    done
}
for s in "${SETS[@]}"; do
    case $s in
        workloads)
            for w in $WORKLOADS; do
                for p in first-touch all-fast; do one "$w-$p" --workload $w --policy $p; done
            done ;;
        policies)
            for w in kv hotspot; do
                for p in kstaled thermostat tpp linux-tiering numa-balancing lru damon-tiering nimble hemem memos oracle; do
                    one "$w-$p" --workload $w --policy $p ${SCALE[$p]:-}
                done
            done ;;
        *) echo "unknown set $s (workloads, policies)" >&2; exit 2 ;;
    esac
done
python3 scripts/sampled_summary.py "$OUT"
