#!/usr/bin/env bash
# HMM-V's figures on our model (docs/policies/hmm-v.md): Fig. 2a (pages scanned,
# GPT vs EPT scanner), the tracking overhead, Tables 3–5 (the three migration
# variants), Fig. 4 (ablation), Fig. 5 (fixed and dynamic hot sets) and §5.9.1 (four
# VMs, island vs pool). The optane preset (HMM-V Table 2's DRAM and PMem), VM
# tenants, 4 KiB pages, footprints of the paper ÷ 16 (16 GB → 1 GiB). Fig. 2a runs the
# paper's 600 ms window; the other figures scale the window and the clock switch by
# 1/6 (100 ms windows, a switch every 10 s, the first at 100 ms) so that a round fits
# in a 2–3 s run (see the doc).
# Two runs at a time; one JSON per run in $OUT (default ./hmm-v-figures) and the
# tables in $OUT/summary.md.
#
# usage: scripts/hmm-v-figures.sh [SECTION ...]  (fig2a tables fig4 fig5 multivm; default all)
# T=path/to/tiersim to use a given binary (then nothing is built).
# Takes about an hour on two cores (runs already done are kept). Needs python3 for the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${T:-}" ]; then
    cargo build --release --quiet
    T=$PWD/target/release/tiersim
fi
OUT=${OUT:-$PWD/hmm-v-figures}
mkdir -p "$OUT"
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(fig2a tables fig4 fig5 multivm)

VM="--preset optane --set tenant_kind=vm --set machine.page_table.thp=false"
FAST="--set policy.hmm-v.monitor_window_s=0.1 --set policy.hmm-v.first_switch_s=0.1 --set policy.hmm-v.clock_switch_s=10 --set policy.ept-scanner.monitor_window_s=0.1"
jobs=()
for s in "${SECTIONS[@]}"; do
    case $s in
    fig2a)
        # §5.3.1: random access, 90 % of it on a hot set of X % of the RSS; tracking
        # only, all the time, 600 ms windows; ≈ 2.9 simulated seconds (4 windows).
        # "moving": every access on a hot set of X % that moves four times, so that
        # the VM maps four times what it uses (the paper's VM maps 64 GB for a 10 GB
        # RSS). "none" is HMM-V never switched on (the same placement, no tracking):
        # the tracking overhead is measured against it.
        for r in 0.9 moving; do
            for h in 0.05 0.1 0.2 0.4 0.8; do
                if [ $r = moving ]; then
                    [ $h != 0.4 ] && [ $h != 0.8 ] || continue
                    hot="--set workload.hotspot.hot_refs=1.0 --set workload.hotspot.phases=4"
                else
                    [ $h != 0.05 ] || continue
                    hot="--set workload.hotspot.hot_refs=0.9"
                fi
                base="run $VM --workload hotspot --footprint 1GiB $hot --set workload.hotspot.hot_size=$h --set machine.tiers.fast.capacity=50% --refs 25000000"
                jobs+=("$base --policy hmm-v --set policy.hmm-v.clock_switch=false --set policy.hmm-v.migrate=false --json $OUT/fig2a-$r-$h-gpt.json")
                [ $r = moving ] || jobs+=("$base --policy hmm-v --set policy.hmm-v.clock_switch=false --set policy.hmm-v.migrate=false --set policy.hmm-v.multi_level_queue=false --json $OUT/fig2a-$r-$h-gpt-nomlq.json")
                jobs+=("$base --policy ept-scanner --set policy.ept-scanner.monitor_window_s=0.6 --set policy.ept-scanner.migrate=false --json $OUT/fig2a-$r-$h-ept.json")
                jobs+=("$base --policy hmm-v --set policy.hmm-v.first_switch_s=1e9 --set policy.hmm-v.migrate=false --json $OUT/fig2a-$r-$h-none.json")
            done
        done
        ;;
    tables)
        # §5.4.2: random read / random write over the whole RSS, every page first in
        # NVM and DRAM large enough for all of it. One-window rounds of 50 ms back to
        # back: each page moves to DRAM in the round after its first touch. Slowdown
        # against all-DRAM (all-fast) over the whole run.
        for rw in 0.0 1.0; do
            for fp in 256MiB 1GiB; do
                base="run $VM --workload uniform --set workload.write_fraction=$rw --footprint $fp --set machine.tiers.fast.capacity=110% --set machine.tiers.slow.capacity=150% --refs 15000000"
                for how in pml write-protect linux; do
                    jobs+=("$base --policy hmm-v --set policy.hmm-v.first_touch_slow=true --set policy.hmm-v.windows=1 --set policy.hmm-v.clock_switch=false --set policy.hmm-v.monitor_window_s=0.05 --set policy.hmm-v.first_switch_s=0.05 --set policy.hmm-v.migration=\"$how\" --slowdown-vs all-fast --json $OUT/tables-$rw-$fp-$how.json")
                done
                jobs+=("$base --policy all-slow --slowdown-vs all-fast --json $OUT/tables-$rw-$fp-nvm.json")
            done
        done
        ;;
    fig4)
        # §5.5: graph500 and sequential access (50 % writes, every access in a hot
        # window of 20 % that moves four times, every ≈ 10 s, as often as the scaled
        # clock switch fires), DRAM 20 % of the RSS; HMM-V and each component swapped.
        declare -A W
        W[graph-bfs]="--workload graph-bfs --footprint 1GiB --refs 60000000"
        W[seqscan]="--workload seqscan --footprint 1GiB --set workload.write_fraction=0.5 --set workload.seqscan.window=0.2 --set workload.seqscan.phases=4 --refs 2000000000"
        for w in graph-bfs seqscan; do
            base="run $VM ${W[$w]} --set machine.tiers.fast.capacity=20% $FAST --slowdown-vs all-fast --warmup 0.5"
            jobs+=("$base --policy hmm-v --json $OUT/fig4-$w-hmmv.json")
            jobs+=("$base --policy hmm-v --set policy.hmm-v.tracker=\"ept\" --set policy.hmm-v.multi_level_queue=false --json $OUT/fig4-$w-ept.json")
            jobs+=("$base --policy hmm-v --set policy.hmm-v.classifier=\"fixed\" --json $OUT/fig4-$w-fixed.json")
            jobs+=("$base --policy hmm-v --set policy.hmm-v.migration=\"linux\" --json $OUT/fig4-$w-linux.json")
            jobs+=("$base --policy first-touch --json $OUT/fig4-$w-none.json")
        done
        ;;
    fig5)
        # §5.6.1: fixed hot sets of 10–80 % of a 1 GiB RSS, DRAM 50 %; §5.6.2: four
        # hot regions of 25 % in turn (the clock switch scaled to 1 s so that each
        # stage, about 2 s, sees a round).
        for h in 0.1 0.2 0.4 0.8; do
            jobs+=("run $VM --workload hotspot --footprint 1GiB --set workload.hotspot.hot_refs=0.9 --set workload.hotspot.hot_size=$h --set machine.tiers.fast.capacity=50% $FAST --refs 25000000 --policy hmm-v --slowdown-vs all-fast --warmup 0.6 --json $OUT/fig5a-$h.json")
        done
        jobs+=("run $VM --workload hotspot --footprint 1GiB --set workload.hotspot.hot_refs=0.9 --set workload.hotspot.hot_size=0.25 --set workload.hotspot.phases=4 --set machine.tiers.fast.capacity=50% $FAST --set policy.hmm-v.clock_switch_s=1.0 --refs 52000000 --policy hmm-v --slowdown-vs all-fast --json $OUT/fig5b-hmmv.json")
        jobs+=("run $VM --workload hotspot --footprint 1GiB --set workload.hotspot.hot_refs=0.9 --set workload.hotspot.hot_size=0.25 --set workload.hotspot.phases=4 --set machine.tiers.fast.capacity=50% --refs 52000000 --policy first-touch --slowdown-vs all-fast --json $OUT/fig5b-none.json")
        ;;
    multivm)
        # §5.9.1: four VMs (fotonik3d-like stream, graph500, redis-like kv, pagerank),
        # each 25 % of a DRAM of 20 % of their RSS; island against pool. The first
        # switch comes after 1.5 s, once the VMs have touched their data (≈ 6 s runs).
        TEN="--tenants vm:stream:25%,vm:graph-bfs:25%,vm:kv:25%,vm:pagerank:25% --set workload.kv.popularity=\"hotspot\" --footprint 512MiB --set machine.tiers.fast.capacity=20% --refs 80000000"
        LATE="--set policy.hmm-v.first_switch_s=1.5"
        jobs+=("run $VM $TEN $FAST $LATE --policy hmm-v --slowdown-vs all-fast --warmup 0.5 --json $OUT/multivm-island.json")
        jobs+=("run $VM $TEN $FAST $LATE --policy hmm-v --set policy.hmm-v.mode=\"pool\" --slowdown-vs all-fast --warmup 0.5 --json $OUT/multivm-pool.json")
        jobs+=("run $VM $TEN --policy all-fast --json $OUT/multivm-dram.json")
        ;;
    *) echo "unknown section $s (fig2a tables fig4 fig5 multivm)" >&2; exit 2 ;;
    esac
done
# Runs whose JSON exists are kept (delete $OUT to start again).
source scripts/jobs.sh
run_missing "$T" "${jobs[@]}"
python3 scripts/hmmv_summary.py "$OUT" | tee "$OUT/summary.md"
