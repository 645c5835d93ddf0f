#!/usr/bin/env bash
# Thermostat's target tracking (docs/policies/thermostat.md): every workload under
# targets 3, 6 and 10 %, with kstaled and all-fast on the same input: 1 GiB
# footprints on a machine whose TLBs are scaled down with them (SCALE below), 0.5 s
# periods, about 18 simulated seconds per run (36 periods; reaching the target takes
# at least 1/sample_fraction = 20). The table's slowdown is measured
# over the last 40 % of the references, after that warm-up, as the paper measures after
# 600 s of warm-up (§4.3). Two runs at a time; results in $OUT (default
# ./thermostat-tracking), one JSON per run, and a table per workload in summary.md.
# PRESET picks the machine: thermostat-emulated (default, the paper's BadgerTrap
# platform) or thermostat (a slow tier with a real 1 µs latency).
#
# usage: scripts/thermostat-tracking.sh [WORKLOAD ...]   (default: all five)
# T=path/to/tiersim to use a given binary (then nothing is built); by default the
# release build of this checkout is built and used.
# Takes about 40 minutes on two cores. Needs python3 for the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
OUT=${OUT:-$PWD/thermostat-tracking}
PRESET=${PRESET:-thermostat-emulated}
mkdir -p "$OUT"

# name, references (≈18 simulated seconds with all memory fast), workload options.
declare -A REFS ARGS
REFS[kv-hot]=4600000000
ARGS[kv-hot]='--workload kv --footprint 1GiB --set workload.kv.popularity="hotspot" --set workload.kv.hot_ops=0.9 --set workload.kv.hot_keys=0.0001'
REFS[kv-zipf]=2450000000
ARGS[kv-zipf]='--workload kv --footprint 1GiB'
REFS[hotspot]=760000000
ARGS[hotspot]='--workload hotspot --footprint 1GiB --set workload.hotspot.hot_size=0.1 --set workload.hotspot.hot_refs=0.95'
REFS[graph-bfs]=3200000000
ARGS[graph-bfs]='--workload graph-bfs --footprint 1GiB'
REFS[seqscan]=6000000000
ARGS[seqscan]='--workload seqscan --footprint 1GiB'

WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(kv-hot kv-zipf hotspot graph-bfs seqscan)
# The paper's footprints are several times its L2 TLB's 2 GiB reach; with a footprint
# inside the reach, slow huge pages stay in the TLB and emulated slow memory costs
# almost nothing. 1/8 of the paper's TLBs: 128 L2 entries (256 MiB reach, 1/4 of 1 GiB).
SCALE="--set machine.tlb.l1_small_entries=8 --set machine.tlb.l1_huge_entries=4 --set machine.tlb.l2_small_entries=128"
TIME="--set policy.thermostat.periods_per_run=0 --set policy.thermostat.period_s=0.5 --set policy.kstaled.scans_per_run=0"

jobs=()
for w in "${WORKLOADS[@]}"; do
    [ -n "${REFS[$w]:-}" ] || { echo "unknown workload $w (one of ${!REFS[*]})" >&2; exit 2; }
    base="run --preset $PRESET --refs ${REFS[$w]} ${ARGS[$w]} $SCALE $TIME"
    jobs+=("$base --policy all-fast --json $OUT/$w-all-fast.json")
    jobs+=("$base --policy kstaled --json $OUT/$w-kstaled.json")
    for x in 3 6 10; do
        jobs+=("$base --policy thermostat --set policy.thermostat.tolerable_slowdown_pct=$x --json $OUT/$w-thermostat-$x.json")
    done
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -I{} sh -c "$T {} > /dev/null"

for w in "${WORKLOADS[@]}"; do
    echo "## $w"
    python3 scripts/thermostat_summary.py --from 0.6 "$OUT/$w-all-fast.json" "$OUT/$w-kstaled.json" "$OUT"/$w-thermostat-{3,6,10}.json
done | tee "$OUT/summary.md"
