#!/usr/bin/env bash
# The CXL study of docs/policies/linux.md: what Linux does today (linux-tiering, tpp,
# damon-tiering) beside first-touch (default Linux: no migration), thermostat, rainbow
# and the bounds (oracle, oracle-static, all-fast) on the cxl preset, application
# workloads of 256 MiB, the fast tier at 25 % and 50 % of the footprint.
#
# Every policy runs with its own defaults at the kernel's time scale (nothing scaled).
# Every workload first writes its whole footprint in address order (workload.init).
#
# Sections:
#   short   six workloads × fast tier at 25 % and 50 %, 1.2–6 s of simulated time
#           each with first-touch: short against Linux's periods (one 256 MB scan
#           window per second, DAMON's 30 s minimum age, Thermostat's 30 s) — the doc
#           says what that means
#   long    kv and stream at 25 % for about 30 s of simulated time; TPP also with
#           machine.costs.flush_on_clear_young (an arm64-like flush)
#   hotkv   kv with a hot fifth of its keys taking 80 % of the operations (HMM-V's
#           setting) and 4 KiB pages, at 25 %, for about 25 s: a hot set to find
# One JSON per run in $OUT (default ./linux-figures); runs already done are kept;
# tables in $OUT/summary.md. T=path/to/tiersim to use a given binary; POLICIES="a b"
# to run only some policies.
# usage: scripts/linux-figures.sh [SECTION ...]   (default all; about 40 + 30 + 15 minutes on two cores)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
source scripts/jobs.sh
OUT=${OUT:-$PWD/linux-figures}
mkdir -p "$OUT"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(short long hotkv)
read -r -a POLICIES <<< "${POLICIES:-all-fast first-touch linux-tiering tpp damon-tiering oracle oracle-static thermostat rainbow}"

# References for about 3 s (kv, stream) and 1.5 s (the others) of simulated time with
# first-touch at 25 %.
declare -A REFS=([kv]=75000000 [stream]=120000000 [graph-bfs]=160000000 [pagerank]=320000000 [spmv-cg]=320000000 [gemm]=380000000)
# About 30 s of simulated time.
declare -A LONG_REFS=([kv]=730000000 [stream]=1200000000)
jobs=()
for s in "${SECTIONS[@]}"; do
    for p in "${POLICIES[@]}"; do
        case $s in
        short)
            for w in kv stream graph-bfs pagerank spmv-cg gemm; do
                for fast in 25 50; do
                    [ $p = all-fast ] && [ $fast = 50 ] && continue
                    jobs+=("run --preset cxl --workload $w --footprint 256MiB --refs ${REFS[$w]} --set workload.init=true --set machine.tiers.fast.capacity=\"$fast%\" --policy $p --json $OUT/$p-$w-$fast.json")
                done
            done
            ;;
        long)
            [ $p = rainbow ] || [ $p = thermostat ] && continue
            for w in kv stream; do
                jobs+=("run --preset cxl --workload $w --footprint 256MiB --refs ${LONG_REFS[$w]} --set workload.init=true --set machine.tiers.fast.capacity=\"25%\" --policy $p --json $OUT/long-$p-$w.json")
                [ $p = tpp ] && jobs+=("run --preset cxl --workload $w --footprint 256MiB --refs ${LONG_REFS[$w]} --set workload.init=true --set machine.tiers.fast.capacity=\"25%\" --set machine.costs.flush_on_clear_young=true --policy tpp --json $OUT/long-tpp-flush-$w.json")
            done
            ;;
        hotkv)
            [ $p = rainbow ] || [ $p = thermostat ] && continue
            HOT="--set workload.kv.popularity=\"hotspot\" --set workload.kv.hot_keys=0.2 --set machine.page_table.thp=false"
            jobs+=("run --preset cxl --workload kv --footprint 256MiB --refs 300000000 --set workload.init=true --set machine.tiers.fast.capacity=\"25%\" $HOT --policy $p --json $OUT/hotkv-$p.json")
            [ $p = tpp ] && jobs+=("run --preset cxl --workload kv --footprint 256MiB --refs 300000000 --set workload.init=true --set machine.tiers.fast.capacity=\"25%\" $HOT --set machine.costs.flush_on_clear_young=true --policy tpp --json $OUT/hotkv-tpp-flush.json")
            ;;
        *) echo "unknown section $s (short, long, hotkv)" >&2; exit 2 ;;
        esac
    done
done
run_missing "$T" "${jobs[@]}"
python3 scripts/linux_summary.py "$OUT" > "$OUT/summary.md"
cat "$OUT/summary.md"
