#!/usr/bin/env bash
# The comparisons of HMM-V §5.6–5.9 that involve its baselines (docs/policies/baselines.md):
# NUMA balancing (numa-balancing), Optane Memory Mode (memory-mode), Nimble (nimble),
# HeMem (hemem) beside HMM-V and the all-DRAM bound, on the optane preset with VM
# tenants, footprints of the paper ÷ 16 as in scripts/hmm-v-figures.sh.
#
# Sections:
#   single4k, singlethp  §5.8 / Fig. 7: one VM, DRAM 256 MiB; pagerank, graph500 (BFS),
#                        redis-like kv (25 % hot keys), each fitting in DRAM (192 MiB) and
#                        exceeding it (640 MiB); 4 KiB pages and THP
#   fig5a                §5.6.1 / Fig. 5a: NUMA_B and HMM-V on hot sets of 10–80 %
#   twovm                §5.9.2: Memory Mode's miss ratio with one VM and with two VMs
#                        (kv + graph500, THP) sharing its cache; HMM-V island beside it
#   fourvm               §5.9.1: the four VMs of hmm-v-figures.sh: NUMA_B, MM, HMM-V
#                        island and pool
#   fourvmthp            the four VMs with THP (§5.9.2): NUMA_B, MM, Nimble, HMM-V
#                        island and pool
#   kv1k                 kv L with 1 KiB values: NUMA_B, MM, HMM-V
#
# Periods scaled as for HMM-V's figures: HMM-V's windows 100 ms (1/6), Nimble's 5 s
# step every 0.8 s (1/6); NUMA balancing's 256 MB windows scaled with the footprints
# (16 MB); HeMem's 10 ms policy period and sampling as released.
# One JSON per run in $OUT (default ./baselines-figures), runs already done are kept;
# tables in $OUT/summary.md. T=path/to/tiersim to use a given binary.
# usage: scripts/baselines-figures.sh [SECTION ...]   (default all; about 50 minutes on two cores)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
OUT=${OUT:-$PWD/baselines-figures}
mkdir -p "$OUT"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(single4k singlethp fig5a twovm fourvm fourvmthp kv1k)

# Every workload first writes its whole footprint in address order, as the paper's
# benchmarks allocate and fill their data before they run (workload.init).
VM="--preset optane --set tenant_kind=vm --set workload.init=true"
PERIODS="--set policy.hmm-v.monitor_window_s=0.1 --set policy.hmm-v.first_switch_s=0.1 --set policy.hmm-v.clock_switch_s=10 --set policy.nimble.period_s=0.8 --set policy.numa-balancing.scan_size_mb=16"
KV="--set workload.kv.popularity=\"hotspot\" --set workload.kv.hot_keys=0.25"
declare -A REFS=([pagerank]=250000000 [graph-bfs]=150000000 [kv]=40000000)
jobs=()
for s in "${SECTIONS[@]}"; do
    case $s in
    single4k | singlethp)
        thp=false
        policies="numa-balancing memory-mode nimble hmm-v all-fast"
        if [ $s = singlethp ]; then
            thp=true
            policies="$policies hemem"
        fi
        for w in pagerank graph-bfs kv; do
            for size in S L; do
                fp=192MiB
                [ $size = S ] || fp=640MiB
                for p in $policies; do
                    jobs+=("run $VM --set machine.page_table.thp=$thp --workload $w $KV --footprint $fp --set machine.tiers.fast.capacity=256MiB --refs ${REFS[$w]} $PERIODS --policy $p --json $OUT/$s-$w-$size-$p.json")
                done
            done
        done
        ;;
    fig5a)
        # Seed 1 puts the hot region in the first half of the address space (which
        # fills DRAM on first touch), seed 5 in the second half.
        for seed in 1 5; do
            tag=""
            [ $seed = 1 ] || tag="s$seed-"
            for h in 0.1 0.2 0.4 0.8; do
                for p in numa-balancing hmm-v; do
                    jobs+=("run $VM --set machine.page_table.thp=false --workload hotspot --seed $seed --footprint 1GiB --set workload.hotspot.hot_refs=0.9 --set workload.hotspot.hot_size=$h --set machine.tiers.fast.capacity=50% $PERIODS --refs 25000000 --policy $p --slowdown-vs all-fast --warmup 0.6 --json $OUT/fig5a-$tag$h-$p.json")
                done
            done
        done
        ;;
    twovm)
        # Each VM 384 MiB and 8·10⁷ references, alone or beside the other; one DRAM of
        # 256 MiB (Memory Mode's cache whole; HMM-V island: half each when two).
        base="$VM --set machine.page_table.thp=true $KV --set machine.tiers.fast.capacity=256MiB --refs 80000000 $PERIODS"
        for w in kv graph-bfs; do
            for p in memory-mode hmm-v all-fast; do
                jobs+=("run $base --workload $w --footprint 384MiB --policy $p --json $OUT/twovm-one-$w-$p.json")
            done
        done
        for p in memory-mode hmm-v numa-balancing nimble all-fast; do
            jobs+=("run $base --tenants vm:kv:50%,vm:graph-bfs:50% --footprint 384MiB --policy $p --json $OUT/twovm-two-$p.json")
        done
        ;;
    fourvm)
        TEN="--tenants vm:stream:25%,vm:graph-bfs:25%,vm:kv:25%,vm:pagerank:25% --set workload.kv.popularity=\"hotspot\" --footprint 512MiB --set machine.tiers.fast.capacity=20% --refs 80000000"
        for p in numa-balancing memory-mode hmm-v all-fast; do
            jobs+=("run $VM --set machine.page_table.thp=false $TEN $PERIODS --set policy.hmm-v.first_switch_s=1.5 --policy $p --json $OUT/fourvm-$p.json")
        done
        jobs+=("run $VM --set machine.page_table.thp=false $TEN $PERIODS --set policy.hmm-v.first_switch_s=1.5 --policy hmm-v --set policy.hmm-v.mode=\"pool\" --json $OUT/fourvm-hmm-v-pool.json")
        ;;
    fourvmthp)
        # §5.9.2 with four VMs: the same VMs with THP, Nimble beside the others.
        TEN="--tenants vm:stream:25%,vm:graph-bfs:25%,vm:kv:25%,vm:pagerank:25% --set workload.kv.popularity=\"hotspot\" --footprint 512MiB --set machine.tiers.fast.capacity=20% --refs 80000000"
        for p in numa-balancing memory-mode nimble hmm-v all-fast; do
            jobs+=("run $VM --set machine.page_table.thp=true $TEN $PERIODS --set policy.hmm-v.first_switch_s=1.5 --policy $p --json $OUT/fourvmthp-$p.json")
        done
        jobs+=("run $VM --set machine.page_table.thp=true $TEN $PERIODS --set policy.hmm-v.first_switch_s=1.5 --policy hmm-v --set policy.hmm-v.mode=\"pool\" --json $OUT/fourvmthp-hmm-v-pool.json")
        ;;
    kv1k)
        # kv L with 1 KiB values (four per page), 4 KiB pages: does sparsity help MM?
        for p in numa-balancing memory-mode hmm-v all-fast; do
            jobs+=("run $VM --set machine.page_table.thp=false --workload kv $KV --set workload.kv.value_bytes=1024 --footprint 640MiB --set machine.tiers.fast.capacity=256MiB --refs ${REFS[kv]} $PERIODS --policy $p --json $OUT/kv1k-L-$p.json")
        done
        ;;
    *) echo "unknown section $s (single4k singlethp fig5a twovm fourvm fourvmthp kv1k)" >&2; exit 2 ;;
    esac
done
source scripts/jobs.sh
run_missing "$T" "${jobs[@]}"
python3 scripts/baselines_summary.py "$OUT" | tee "$OUT/summary.md"
