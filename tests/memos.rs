//! memos and its baselines on the memos preset (DRAM and NVM channels, coloured
//! frames), with passes scaled to short runs: under `--verify` on every workload with
//! both copy engines, and what each must have done.

mod common;

use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::Report;
use tiersim::workload::WORKLOADS;

/// Runs `policy` on the memos preset with the machine checked and every read verified.
fn run_memos(policy: &str, mix: &[&str], sets: &[&str]) -> Report {
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.extend([format!("policy.name=\"{policy}\""), "engine.epoch_cycles=300000".into(), "engine.check_invariants=true".into()]);
    if !sets.iter().any(|s| s.starts_with("policy.memos.passes_per_run")) {
        // 12 passes of 10 samplings, a round every 2 passes.
        all.extend(["policy.memos.passes_per_run=12", "policy.memos.samplings_per_pass=10", "policy.memos.interval_s=0.5", "policy.memos.sampling_interval_ms=25"].map(String::from));
    }
    let sources = Sources { preset: Some("memos".into()), mix: mix.iter().map(|s| s.to_string()).collect(), sets: all, ..Default::default() };
    let cfg = Config::load(&sources).unwrap();
    run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy} {sets:?}: {e}"))
}

fn stat(r: &Report, key: &str) -> u64 {
    r.policy_report["stats"][key].as_u64().unwrap_or_else(|| panic!("no stats.{key} in {:?}", r.policy_report))
}

#[test]
fn memos_passes_verify_on_every_workload_with_cpu_and_dma_copies() {
    for &(workload, _) in WORKLOADS {
        for dma in [true, false] {
            let sets = [format!("workload.name=\"{workload}\""), "workload.footprint=\"8MiB\"".into(), "workload.refs=120000".into(), format!("policy.memos.dma_demotions={dma}")];
            let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
            let r = run_memos("memos", &[], &sets);
            assert!(r.sim.verified_reads > 0, "{workload} dma={dma}");
            // 12 passes asked; a sampling that comes due while the last one still runs
            // waits for it, so slow scans make fewer.
            assert!(r.policy_report["passes"].as_u64().unwrap() >= 6, "{workload}: {:?}", r.policy_report["passes"]);
        }
    }
}

#[test]
fn baselines_pass_verify_on_a_mix() {
    for policy in ["interleave", "cache-bank-colouring"] {
        let r = run_memos(policy, &["kv", "stream"], &["workload.footprint=\"8MiB\"", "workload.refs=100000"]);
        assert!(r.sim.verified_reads > 0);
        assert_eq!(r.summary.migrations, 0, "{policy} never migrates");
    }
}

#[test]
fn memos_moves_written_pages_to_dram_and_keeps_nvm_writes_down() {
    // A write-heavy program (gups: read-modify-write) beside a read-only one (chase),
    // DRAM a quarter of the footprint, every page born in NVM (§7.1). memos must move
    // the write-domain pages into DRAM and leave the read-domain ones in NVM: DRAM
    // takes a far larger share of the writes than of the reads, and NVM fewer writes
    // than under the channel-interleaved baseline, which splits both alike.
    let sets = ["workload.footprint=\"16MiB\"", "workload.refs=400000", "machine.tiers.fast.capacity=\"25%\""];
    let m = run_memos("memos", &["gups", "chase"], &sets);
    let base = run_memos("interleave", &["gups", "chase"], &sets);
    assert!(stat(&m, "promoted") > 0, "{:?}", m.policy_report["stats"]);
    assert!(stat(&m, "rounds") + stat(&m, "rounds_skipped") >= 5);
    let share = |r: &Report, f: fn(&tiersim::report::TierReport) -> u64| f(&r.tiers[0]) as f64 / (f(&r.tiers[0]) + f(&r.tiers[1])).max(1) as f64;
    let (writes, reads) = (share(&m, |t| t.writes), share(&m, |t| t.reads));
    assert!(writes > 2.0 * reads, "memos: DRAM has {writes:.3} of the writes, {reads:.3} of the reads");
    let (bw, br) = (share(&base, |t| t.writes), share(&base, |t| t.reads));
    assert!((bw - br).abs() < 0.1, "interleave: {bw:.3} of the writes, {br:.3} of the reads");
    assert!(m.tiers[1].writes < base.tiers[1].writes, "NVM writes: memos {} vs interleave {}", m.tiers[1].writes, base.tiers[1].writes);
    // Every move the policy counts (balancing moves are demotions), the machine counts too.
    assert_eq!(m.summary.migrations, stat(&m, "promoted") + stat(&m, "demoted") + stat(&m, "rebalanced"));
}

#[test]
fn memos_is_deterministic() {
    let sets = ["workload.name=\"hotspot\"", "workload.footprint=\"8MiB\"", "workload.refs=200000"];
    let a = run_memos("memos", &[], &sets);
    let b = run_memos("memos", &[], &sets);
    assert_eq!(serde_json::to_string(&a.policy_report).unwrap(), serde_json::to_string(&b.policy_report).unwrap());
    assert_eq!(a.summary.cycles, b.summary.cycles);
}

#[test]
fn bad_memos_parameters_are_refused_with_the_field() {
    let bad = |set: &str, field: &str| {
        let sources = Sources { preset: Some("memos".into()), sets: vec![set.into(), "policy.name=\"memos\"".into(), "workload.footprint=\"8MiB\"".into(), "workload.refs=1000".into()], ..Default::default() };
        let e = Config::load(&sources).and_then(|cfg| run(&cfg, &RunOptions::default()).map(|_| ())).unwrap_err().to_string();
        assert!(e.contains(field), "{set}: {e}");
    };
    bad("policy.memos.slab_bits=[5]", "policy.memos.slab_bits");
    bad("policy.memos.slab_bits=[30]", "policy.memos.slab_bits");
    bad("policy.memos.rare_slab=16", "policy.memos.rare_slab");
    bad("policy.memos.initial=\"dram\"", "policy.memos.initial");
    bad("policy.memos.window_len=9", "window_len");
    bad("policy.memos.hot_share=0", "policy.memos.hot_share");
}

#[test]
fn memos_passes_verify_with_a_vm_beside_a_process() {
    // The VM's pages are sampled and moved through its EPT (DMA batches flush the
    // VM's translations), the process's through its page table.
    let sets = ["policy.name=\"memos\"", "workload.footprint=\"16MiB\"", "workload.refs=300000", "policy.memos.passes_per_run=12", "policy.memos.samplings_per_pass=10", "policy.memos.interval_s=0.5", "engine.epoch_cycles=300000", "engine.check_invariants=true"];
    let sources = Sources {
        preset: Some("memos".into()),
        tenants: vec!["vm:kv:50%".into(), "process:gups:50%".into()],
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let r = run(&Config::load(&sources).unwrap(), &RunOptions { verify: true, ..Default::default() }).unwrap();
    assert!(r.sim.verified_reads > 0);
    assert!(stat(&r, "promoted") > 0);
    assert_eq!(r.tenants.len(), 2);
}

#[test]
fn a_large_footprint_is_sampled_a_share_at_a_time() {
    // §7.4: above `full_scan_pages` each pass samples a rotating share of every
    // tenant's range. With a 10 % share, the scans read about a tenth of the entries
    // (the first pass, which learns the ranges, reads them all).
    let sets = ["workload.name=\"uniform\"", "workload.footprint=\"8MiB\"", "workload.refs=300000"];
    let full = run_memos("memos", &[], &sets);
    let shared = run_memos("memos", &[], &[&sets[..], &["policy.memos.full_scan_pages=256"]].concat());
    assert!(shared.sim.verified_reads > 0);
    let scanned = |r: &Report| r.mechanisms.ptes_scanned as f64 / r.policy_report["pacing"]["periods"].as_u64().unwrap() as f64;
    let ratio = scanned(&shared) / scanned(&full);
    assert!(ratio > 0.1 && ratio < 0.3, "entries per sampling: {ratio:.3} of a full scan");
}

#[test]
fn bandwidth_balancing_moves_pages_off_a_busy_dram_channel_and_stops() {
    // Every page born in a DRAM that holds them all, the bound at 5 % of a channel's
    // peak: DRAM is at its bound and the idle NVM channel is not, so balancing steps
    // move hot DRAM pages to NVM, a pass at a time while DRAM's utilisation does not
    // drop.
    let sets = [
        "workload.name=\"kv\"",
        "workload.footprint=\"16MiB\"",
        "workload.refs=600000",
        "policy.memos.initial=\"fast-first\"",
        "machine.tiers.fast.capacity=\"100%\"",
        "policy.memos.bandwidth_bound=0.05",
        "policy.memos.balance_step_pages=16",
    ];
    let r = run_memos("memos", &[], &sets);
    let (steps, pages) = (stat(&r, "balance_steps"), stat(&r, "balanced_pages"));
    assert!(steps > 0 && pages > 0 && pages <= 16 * steps, "{:?}", r.policy_report["stats"]);
    assert!(steps < r.policy_report["passes"].as_u64().unwrap(), "balancing stops when DRAM's utilisation drops");
    let normal = run_memos("memos", &[], &sets[..5]);
    assert_eq!(stat(&normal, "balance_steps"), 0);
}
