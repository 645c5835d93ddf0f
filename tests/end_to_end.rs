//! End-to-end runs through the library: determinism, the ordering of the baselines,
//! the AMAT of the slow tier against its configured latencies, and `--verify` on
//! every baseline and workload (and for the policies that keep fast-tier copies of
//! slow pages, with copies made, dirtied, dropped and made again).

mod common;

use common::{without_wall_time, Scratch};
use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::policy::registry::POLICIES;
use tiersim::report::Report;
use tiersim::workload::WORKLOADS;

fn config(sets: &[&str]) -> Config {
    Config::load(&Sources { sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() }).unwrap()
}

fn run_cfg(cfg: &Config, verify: bool) -> Report {
    run(cfg, &RunOptions { verify, ..Default::default() }).unwrap()
}


#[test]
fn same_seed_same_report() {
    let cfg = config(&[
        "workload.name=\"zipf\"",
        "workload.footprint=\"64MiB\"",
        "workload.refs=200000",
        "engine.epoch_cycles=2000000",
        "policy.name=\"round-robin\"",
    ]);
    let (a, b) = (run_cfg(&cfg, false), run_cfg(&cfg, false));
    assert!(a.epochs.len() > 3, "the time series has several epochs");
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    let other = config(&[
        "workload.name=\"zipf\"",
        "workload.footprint=\"64MiB\"",
        "workload.refs=200000",
        "workload.seed=2",
        "policy.name=\"round-robin\"",
    ]);
    assert_ne!(run_cfg(&other, false).summary.cycles, a.summary.cycles);
}

#[test]
fn multi_core_mix_is_deterministic() {
    let src = Sources {
        mix: vec!["gups".into(), "hotspot".into()],
        sets: vec!["workload.footprint=\"16MiB\"".into(), "workload.refs=50000".into()],
        ..Default::default()
    };
    let cfg = Config::load(&src).unwrap();
    let (a, b) = (run_cfg(&cfg, true), run_cfg(&cfg, true));
    assert_eq!(a.cores.len(), 2);
    assert!(a.cores.iter().all(|c| c.stats.references == 50000));
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    // Each core's cycles are its clock: the run ends with the slowest.
    assert!(a.cores.iter().all(|c| c.stats.cycles > 0 && (c.ipc - c.stats.instructions as f64 / c.stats.cycles as f64).abs() < 1e-9));
    assert_eq!(a.cores.iter().map(|c| c.stats.cycles).max(), Some(a.summary.cycles));
}

#[test]
fn baselines_are_ordered_when_the_hot_set_fits_the_fast_tier() {
    // Hot set 10 % of 256 MiB; fast tier 25 %: first touch catches most hot pages.
    let cycles = |policy: &str| {
        let cfg = config(&[
            "workload.name=\"hotspot\"",
            "workload.footprint=\"256MiB\"",
            "workload.refs=300000",
            "workload.hotspot.hot_size=0.1",
            &format!("policy.name=\"{policy}\""),
        ]);
        run_cfg(&cfg, false).summary.cycles
    };
    let (fast, first, slow) = (cycles("all-fast"), cycles("first-touch"), cycles("all-slow"));
    assert!(fast <= first && first <= slow, "all-fast {fast}, first-touch {first}, all-slow {slow}");
    assert!(fast < slow);
}

#[test]
fn all_slow_amat_matches_the_slow_tier_latencies() {
    // Demand memory accesses are reads (a store miss allocates its line; the data
    // reaches memory later as a posted write-back, which waits in the write queue while
    // reads go first). So the slow tier's read latencies, weighted by the observed
    // row-buffer hits and misses of those reads, predict the AMAT; queueing may add a
    // little. Checked for a read-only mix and for the default 30 % stores.
    for writes in ["0.0", "0.3"] {
        check_all_slow_amat(writes);
    }
}

fn check_all_slow_amat(write_fraction: &str) {
    let cfg = config(&[
        "workload.name=\"hotspot\"",
        "workload.footprint=\"256MiB\"",
        "workload.refs=300000",
        &format!("workload.write_fraction={write_fraction}"),
        "policy.name=\"all-slow\"",
    ]);
    let r = run_cfg(&cfg, false);
    let slow = &cfg.machine.tiers.slow;
    let t = &r.tiers[1];
    assert_eq!(r.summary.fast_tier_fraction, 0.0);
    let hits = t.row_hits as f64;
    let misses = t.row_misses as f64;
    let predicted = (hits * slow.read_hit_ns + misses * slow.read_miss_ns) / (hits + misses);
    let amat = r.summary.amat_ns;
    assert!(
        (amat - predicted).abs() <= 0.10 * predicted,
        "write fraction {write_fraction}: AMAT {amat:.1} ns, predicted {predicted:.1} ns"
    );
}

#[test]
fn everything_fits_in_the_fast_tier() {
    let cfg = config(&[
        "workload.name=\"uniform\"",
        "workload.footprint=\"16MiB\"",
        "workload.refs=100000",
        "machine.tiers.fast.capacity=\"200%\"",
        "policy.name=\"first-touch\"",
    ]);
    let r = run_cfg(&cfg, false);
    assert_eq!(r.summary.fast_tier_fraction, 1.0);
    assert_eq!(r.tiers[1].data_frames, 0);
}

#[test]
fn verify_passes_for_every_baseline_on_every_workload() {
    for (workload, _) in WORKLOADS {
        for (policy, _) in POLICIES {
            // (Rainbow's migration bitmap is added to the default slow tier.)
            let cfg = config(&[
                &format!("workload.name=\"{workload}\""),
                "workload.footprint=\"8MiB\"",
                "workload.refs=20000",
                "engine.epoch_cycles=200000",
                "policy.kstaled.scans_per_run=10",
                "policy.lru.scans_per_run=10",
                "policy.thermostat.periods_per_run=3",
                &format!("policy.name=\"{policy}\""),
                // The hypervisor policies manage VMs: a round within the run.
                if policy.contains("hmm-v") || policy.contains("ept-scanner") { "tenant_kind=\"vm\"" } else { "engine.check_invariants=true" },
                "policy.hmm-v.monitor_window_s=0.0005",
                "policy.hmm-v.first_switch_s=0.0005",
                "policy.ept-scanner.monitor_window_s=0.0005",
                // SpRM's swap area takes whole huge pages of the fast tier.
                if *policy == "sprm" { "machine.tiers.fast.capacity=\"50%\"" } else { "machine.cores=1" },
            ]);
            let r = run(&cfg, &RunOptions { verify: true, ..Default::default() })
                .unwrap_or_else(|e| panic!("{policy} on {workload}: {e}"));
            assert!(r.sim.verified_reads > 0 || workload == &"gups" && r.summary.references == 0);
        }
    }
}

#[test]
fn migration_controller_policies_move_reconcile_and_reverse_under_verify() {
    // The spar machine scaled down (8 MiB HBM, 512 KiB pages) with a low threshold
    // and a small ReMap table, so that every mechanism runs in a short run: moves,
    // wait-queue service, reconciliation (SpAR, huge pages) and reverse migration
    // (SpRM), each checked by shadow memory and the invariants at every epoch.
    let mut reconciled = 0;
    let mut reversed = 0;
    let mut moved = 0;
    for (workload, _) in WORKLOADS {
        for policy in ["hugepage-otf", "spar", "sprm"] {
            let cfg = preset(
                "spar",
                &[
                    &format!("workload.name=\"{workload}\""),
                    "workload.footprint=\"24MiB\"",
                    "workload.refs=25000",
                    "machine.tiers.fast.capacity=\"8MiB\"",
                    "machine.caches.1.size=\"256KiB\"",
                    "engine.epoch_cycles=200000",
                    "engine.check_invariants=true",
                    &format!("policy.name=\"{policy}\""),
                    &format!("policy.{policy}.threshold=8"),
                    &format!("policy.{policy}.threshold_min=4"),
                    &format!("policy.{policy}.remap_entries=16"),
                    "policy.spar.adapt_cycles=100000",
                ],
            );
            let r = run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy} on {workload}: {e}"));
            let remap = &r.redirect["remap"];
            moved += remap["promoted"]["pages"].as_u64().unwrap();
            reconciled += remap["reconciliations"].as_u64().unwrap();
            reversed += remap["reversed"]["pages"].as_u64().unwrap();
            assert!(remap["peak_entries"].as_u64().unwrap() <= 16);
        }
    }
    assert!(moved > 100 && reconciled > 10 && reversed > 10, "moved {moved}, reconciled {reconciled}, reversed {reversed}");
}

#[test]
fn vm_tenants_with_huge_pages_run_verified() {
    let cfg = config(&[
        "workload.name=\"hotspot\"",
        "workload.footprint=\"32MiB\"",
        "workload.refs=50000",
        "tenant_kind=\"vm\"",
        "machine.page_table.thp=true",
    ]);
    let r = run_cfg(&cfg, true);
    assert!(r.cores[0].stats.walk_references >= 15 * r.cores[0].stats.tlb_misses / 2);
}

#[test]
fn policies_with_background_threads_are_deterministic_alone_and_two_at_a_time() {
    // Jobs of background threads interleave with the cores by simulated time, never by
    // host timing: the same report whether a run is alone or beside another.
    let cfg = preset(
        "thermostat",
        &[
            "workload.name=\"kv\"",
            "workload.footprint=\"32MiB\"",
            "workload.refs=300000",
            "policy.thermostat.periods_per_run=4",
            "policy.thermostat.sample_fraction=0.5",
            "policy.kstaled.scans_per_run=20",
            "policy.kstaled.idle_s=2.0",
            "policy.lru.scans_per_run=20",
            "machine.tiers.fast.capacity=\"50%\"",
        ],
    );
    let policies: Vec<String> = ["thermostat", "kstaled", "lru"].map(String::from).to_vec();
    let together = tiersim::cli::run_many(&cfg, &policies, &RunOptions::default()).unwrap();
    for (p, r) in policies.iter().zip(&together) {
        assert!(r.threads[0].jobs_done > 0, "{p}: its thread ran");
        let alone = tiersim::engine::run_policy(&cfg, p, &RunOptions::default()).unwrap();
        let again = tiersim::engine::run_policy(&cfg, p, &RunOptions::default()).unwrap();
        assert_eq!(without_wall_time(r), without_wall_time(&alone), "{p:?}");
        assert_eq!(without_wall_time(&alone), without_wall_time(&again), "{p:?}");
    }
}

#[test]
fn lru_follows_a_moving_hot_set_that_first_touch_leaves_behind() {
    // A hot tenth (12.8 MiB, beyond the 8 MiB LLC) of a 128 MiB hotspot takes 95 % of
    // the references and moves at half time; the fast tier is a quarter. First touch
    // places the first hot region in the fast tier and keeps the second in the slow
    // one; the scans find the new hot pages active in the slow tier and bring them up,
    // demoting inactive fast pages under the watermarks.
    let sets = |policy: &str| {
        config(&[
            "workload.name=\"hotspot\"",
            "workload.footprint=\"128MiB\"",
            "workload.refs=4000000",
            "workload.hotspot.hot_size=0.1",
            "workload.hotspot.hot_refs=0.95",
            "workload.hotspot.phases=2",
            "engine.epoch_cycles=10000000",
            &format!("policy.name=\"{policy}\""),
            "policy.lru.scans_per_run=40",
        ])
    };
    let (lru, first_touch) = (run_cfg(&sets("lru"), true), run_cfg(&sets("first-touch"), false));
    let p = &lru.policy_report;
    assert!(p["promoted_pages"].as_u64().unwrap() > 1000, "{p:?}");
    assert!(p["demoted_pages"].as_u64().unwrap() > 1000, "{p:?}");
    assert!(p["reclaim_wakeups"].as_u64().unwrap() > 0, "{p:?}");
    // In the second half the hot set is back in the fast tier.
    let late = |r: &Report| r.epochs.iter().rev().take(3).map(|e| e.fast_tier_fraction).fold(f64::MAX, f64::min);
    assert!(late(&lru) > 0.8 && late(&first_touch) < 0.4, "lru {} vs first-touch {}", late(&lru), late(&first_touch));
    assert!(lru.summary.cycles < first_touch.summary.cycles);
}

#[test]
fn parallel_compare_equals_sequential_runs() {
    let cfg = config(&["workload.name=\"uniform\"", "workload.footprint=\"32MiB\"", "workload.refs=50000"]);
    let policies: Vec<String> = ["flat-static", "round-robin", "all-slow"].map(String::from).to_vec();
    let together = tiersim::cli::run_many(&cfg, &policies, &RunOptions::default()).unwrap();
    for (p, r) in policies.iter().zip(&together) {
        let alone = tiersim::engine::run_policy(&cfg, p, &RunOptions::default()).unwrap();
        assert_eq!(without_wall_time(r), without_wall_time(&alone), "{p:?}");
    }
}

fn preset(name: &str, sets: &[&str]) -> Config {
    Config::load(&Sources { preset: Some(name.into()), sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() })
        .unwrap()
}

#[test]
fn thermostat_and_kstaled_pass_verify_on_every_workload() {
    // Small and short, but with enough periods to split, poison, classify, merge into
    // the slow tier, correct and demote/promote.
    for (workload, _) in WORKLOADS {
        for policy in ["thermostat", "kstaled"] {
            let cfg = preset(
                "thermostat",
                &[
                    &format!("workload.name=\"{workload}\""),
                    "workload.footprint=\"32MiB\"",
                    "workload.refs=60000",
                    "workload.hotspot.hot_refs=0.99",
                    &format!("policy.name=\"{policy}\""),
                    "policy.thermostat.periods_per_run=6",
                    "policy.thermostat.sample_fraction=0.5",
                    "policy.kstaled.scans_per_run=30",
                    "policy.kstaled.idle_s=2.0",
                ],
            );
            run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy} on {workload}: {e}"));
        }
    }
}

#[test]
fn thermostat_moves_cold_huge_pages_and_reports_its_periods() {
    let cfg = preset(
        "thermostat",
        &[
            "workload.name=\"hotspot\"",
            "workload.footprint=\"64MiB\"",
            "workload.refs=2000000",
            "workload.hotspot.hot_refs=0.99",
            "workload.hotspot.hot_size=0.1",
            "policy.name=\"thermostat\"",
            "policy.thermostat.periods_per_run=4",
            "policy.thermostat.sample_fraction=0.25",
        ],
    );
    let r = run_cfg(&cfg, true);
    let p = &r.policy_report;
    // A scan waits while the kernel thread is still busy, so a period can run late.
    let periods = p["periods"].as_array().unwrap().len();
    assert!((3..=4).contains(&periods), "{periods} periods");
    assert!(p["period"]["scaled_to_run"].as_bool().unwrap());
    assert!(r.mechanisms.splits > 0 && r.mechanisms.merges > 0);
    assert!(r.tenants[0].frames_per_tier[1] > 0, "some huge pages went to slow memory");
    assert!(r.cores[0].stats.poison_faults > 0);
    assert!(p["cost_savings"]["1/3"].as_f64().unwrap() > 0.0);
    // Every poison fault is either monitoring (a sampled base page) or a counted
    // slow-memory access (a huge page in slow memory); both kinds happen here.
    let (sample, slow) = (p["monitoring"]["sample_faults"].as_u64().unwrap(), p["monitoring"]["slow_faults"].as_u64().unwrap());
    assert_eq!(sample + slow, r.cores[0].stats.poison_faults);
    assert!(sample > 0 && slow > 0, "sample {sample}, slow {slow}");
    let ns = r.config["machine"]["costs"]["poison_fault_ns"].as_f64().unwrap();
    assert!((p["monitoring"]["sample_fault_seconds"].as_f64().unwrap() - sample as f64 * ns * 1e-9).abs() < 1e-12);
}

#[test]
fn thermostat_target_changes_between_periods() {
    let cfg = preset(
        "thermostat-emulated",
        &[
            "workload.name=\"hotspot\"",
            "workload.footprint=\"64MiB\"",
            "workload.refs=2000000",
            "policy.name=\"thermostat\"",
            "policy.thermostat.periods_per_run=4",
            "policy.thermostat.target_changes=[[2.0, 9.0]]",
        ],
    );
    let r = run_cfg(&cfg, false);
    let periods = r.policy_report["periods"].as_array().unwrap();
    assert!(periods.len() >= 3, "{} periods", periods.len());
    for p in periods {
        let (n, pct, rate) = (p["period"].as_u64().unwrap(), p["target_pct"].as_f64().unwrap(), p["target_rate"].as_f64().unwrap());
        // The emulated platform's t_s is the 1 µs fault: x % → x · 10^4 accesses/s.
        let want = if n < 2 { 3.0 } else { 9.0 };
        assert_eq!(pct, want, "period {n}");
        assert!((rate - want * 1e4).abs() < 1e-6, "period {n}: {rate}");
    }
}

#[test]
fn kstaled_demotes_idle_pages_and_promotes_them_on_access() {
    let cfg = preset(
        "thermostat",
        &[
            "workload.name=\"hotspot\"",
            "workload.footprint=\"64MiB\"",
            "workload.refs=400000",
            "workload.hotspot.hot_refs=0.999",
            "workload.hotspot.hot_size=0.1",
            "policy.name=\"kstaled\"",
            "policy.kstaled.scans_per_run=40",
            "policy.kstaled.idle_s=3.0",
        ],
    );
    let r = run_cfg(&cfg, true);
    let p = &r.policy_report;
    assert!(p["demoted_pages"].as_u64().unwrap() > 0);
    assert!(p["promoted_pages"].as_u64().unwrap() > 0, "a demoted page touched again comes back");
    assert!(r.tenants[0].frames_per_tier[1] > 0);
}

#[test]
fn four_vm_tenants_with_application_workloads_run_verified_and_deterministically() {
    // HMM-V's four-VM co-run (§5.9) in miniature: each VM its own workload and a
    // quarter of the fast tier.
    let src = Sources {
        tenants: ["vm:kv:25%", "vm:graph-bfs:25%", "vm:pagerank:25%", "vm:spmv-cg:25%"].map(String::from).to_vec(),
        sets: vec!["workload.footprint=\"8MiB\"".into(), "workload.refs=30000".into(), "engine.epoch_cycles=500000".into()],
        ..Default::default()
    };
    let cfg = Config::load(&src).unwrap();
    let (a, b) = (run_cfg(&cfg, true), run_cfg(&cfg, true));
    assert_eq!(a.cores.len(), 4);
    assert!(a.cores.iter().all(|c| c.stats.references == 30000));
    assert!(a.sim.verified_reads > 0);
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    let slots: u64 = a.workloads.iter().map(|s| s.footprint_bytes).sum();
    assert_eq!(a.footprint_bytes, slots);
    // Each VM's share of the fast tier is its quota, and first touch respects it.
    let fast = a.tiers[0].capacity_bytes >> 12;
    for t in &a.tenants {
        let quota = t.fast_quota_frames.expect("every tenant has a share");
        assert_eq!(quota, fast / 4);
        assert!(t.frames_per_tier[0] <= quota);
    }
}

/// Rainbow, hscc-4k and hscc-2m under `--verify` on every workload, in a configuration
/// that makes copies come and go: a 4 MiB DRAM (1024 frames, two 2 MiB frames, one of
/// them partly taken by page tables) for a 16 MiB footprint whose hotspot hot set is
/// 8 MiB and moves 8 times; 80 % stores in the synthetic workloads; tiny caches (16 KiB
/// L1, 64 KiB LLC) so that most references reach memory, where Rainbow counts; intervals
/// of 2·10^6 cycles. The slow tier has room for every page plus Rainbow's bitmap.
#[test]
fn copy_policies_pass_verify_on_every_workload_while_copies_churn() {
    let caches = "machine.caches=[{name=\"L1\",size=\"16KiB\",ways=4,latency_cycles=3,shared=false},\
                  {name=\"LLC\",size=\"64KiB\",ways=8,latency_cycles=20,shared=true}]";
    // (policy, base frames per copy, a write-heavy workload where dirty copies must be
    // dropped and more copies made than are held at the end)
    for (policy, frames_per_copy, churn) in [("rainbow", 1, "hotspot"), ("hscc-4k", 1, "hotspot"), ("hscc-2m", 512, "seqscan")] {
        for (workload, _) in WORKLOADS {
            let cfg = config(&[
                &format!("workload.name=\"{workload}\""),
                "workload.footprint=\"16MiB\"",
                "workload.refs=150000",
                "workload.write_fraction=0.8",
                "workload.hotspot.hot_size=0.5",
                "workload.hotspot.phases=8",
                "engine.epoch_cycles=2000000",
                "machine.tiers.fast.capacity=\"4MiB\"",
                "machine.tiers.slow.capacity=\"200%\"",
                caches,
                &format!("policy.name=\"{policy}\""),
            ]);
            let r = run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy} on {workload}: {e}"));
            let what = format!("{policy} on {workload}");
            assert!(r.sim.verified_reads > 0, "{what}");
            let c: tiersim::machine::copies::CopyStats =
                serde_json::from_value(r.redirect.get("copies").cloned().unwrap_or_else(|| panic!("{what}: no copy statistics"))).unwrap();
            let p = &r.policy_report;
            // Every copy the policy made is one the machine made.
            assert_eq!(p["pages_copied"].as_u64(), Some(c.copies_made), "{what}");
            // Only Rainbow translates through the migration bitmap.
            assert_eq!(c.bitmap_checks > 0, policy == "rainbow", "{what}");
            // The policy's list of copies never holds more than DRAM can (each copy once).
            let fast_frames = r.tiers[0].capacity_bytes >> 12;
            assert!(c.copy_frames_held <= fast_frames, "{what}");
            for h in p["per_interval"].as_array().unwrap() {
                let held = h["copies_held"].as_u64().unwrap();
                assert!(held * frames_per_copy <= fast_frames, "{what}: {held} copies listed at {h}");
            }
            if *workload == churn {
                // The machine counts frames held by copies; copies_made counts copies.
                let held = c.copy_frames_held / frames_per_copy;
                assert!(
                    c.copies_made > held && c.dirty_drops > 0,
                    "{what}: made {}, held {held}, dirty drops {}: copies must be dirtied, evicted and made again",
                    c.copies_made,
                    c.dirty_drops
                );
                assert!(c.bytes_out >= c.dirty_drops * 4096 * frames_per_copy, "{what}: every dirty drop is written back");
                if policy == "rainbow" {
                    assert!(c.remaps > 0, "{what}: copies were reached through the pointer in the slow page");
                }
            }
        }
    }
}

/// Every built-in preset runs, with its own policy, on a small footprint (a preset
/// with a field no run accepts must fail here, not in a user's hands).
#[test]
fn every_preset_runs() {
    for (name, _, _) in tiersim::config::PRESETS {
        let sets = ["workload.refs=3000", "workload.footprint=\"16MiB\""].map(String::from).to_vec();
        let cfg = Config::load(&Sources { preset: Some(name.to_string()), sets, ..Default::default() }).unwrap_or_else(|e| panic!("preset {name}: {e}"));
        let r = run(&cfg, &RunOptions::default()).unwrap_or_else(|e| panic!("preset {name}: {e}"));
        assert!(r.summary.references > 0 && r.summary.cycles > 0, "preset {name}");
    }
}

/// HMM-V in small: 100 µs windows (one round takes a millisecond), a 16 MiB VM with a
/// fast tier of a quarter of it.
fn hmmv(extra: &[&str]) -> Config {
    let mut sets = vec![
        "tenant_kind=\"vm\"",
        "policy.name=\"hmm-v\"",
        "workload.name=\"hotspot\"",
        "workload.footprint=\"16MiB\"",
        "workload.refs=150000",
        "workload.write_fraction=0.5",
        "machine.tiers.fast.capacity=\"25%\"",
        "engine.epoch_cycles=1000000",
        "policy.hmm-v.monitor_window_s=0.0001",
        "policy.hmm-v.first_switch_s=0.0001",
        "policy.hmm-v.clock_switch_s=0.003",
    ];
    sets.extend_from_slice(extra);
    config(&sets)
}

#[test]
fn hmmv_moves_hot_pages_with_every_migration_variant_under_verify() {
    for how in ["pml", "write-protect", "linux"] {
        for thp in ["false", "true"] {
            let m = format!("policy.hmm-v.migration=\"{how}\"");
            let t = format!("machine.page_table.thp={thp}");
            let r = run_cfg(&hmmv(&[&m, &t]), true);
            let what = format!("{how}, thp {thp}");
            assert!(r.sim.verified_reads > 0, "{what}");
            let rounds = r.policy_report["rounds"].as_array().unwrap();
            assert!(!rounds.is_empty(), "{what}: a round ran");
            assert!(rounds[0]["promoted_pages"].as_u64().unwrap() > 0, "{what}: the hot set was in NVM");
            let v = r.vm_moves.as_ref().unwrap();
            let moved = match how {
                "pml" => v.pml,
                "linux" => v.linux,
                _ => v.write_protect,
            };
            assert!(moved > 0 && moved == v.pml + v.linux + v.write_protect, "{what}: moved by the variant asked for");
            let exits = r.vm_exits.as_ref().unwrap();
            if how == "linux" {
                assert!(exits.ept_violation > 0, "{what}: new entries filled by exits");
            }
            if how == "pml" {
                assert!(v.pml_batches > 0, "{what}");
                assert_eq!(exits.ept_violation, v.waits, "{what}: the only EPT violations are accesses that met a moving page");
            }
            // The fast tier holds more of the accesses than first touch left there.
            let ft = run_cfg(&hmmv(&[&t, "policy.hmm-v.migrate=false"]), false);
            assert!(r.summary.fast_tier_fraction > ft.summary.fast_tier_fraction, "{what}: {} vs {}", r.summary.fast_tier_fraction, ft.summary.fast_tier_fraction);
        }
    }
}

#[test]
fn hmmv_tracks_only_logged_table_pages_and_the_ept_scanner_everything() {
    // The hot tenth moves four times: by the last phase, 40 % of the RSS is mapped and
    // a tenth of it used.
    let hot = ["workload.hotspot.hot_refs=1.0", "workload.hotspot.hot_size=0.1", "workload.hotspot.phases=4"];
    let gpt = run_cfg(&hmmv(&["policy.hmm-v.migrate=false", hot[0], hot[1], hot[2]]), false);
    let ept = run_cfg(
        &hmmv(&[
            "policy.name=\"ept-scanner\"",
            "policy.ept-scanner.migrate=false",
            "policy.ept-scanner.monitor_window_s=0.0001",
            hot[0],
            hot[1],
            hot[2],
        ]),
        false,
    );
    let mean = |r: &Report, key: &str| {
        let w = r.policy_report["windows"].as_array().unwrap();
        w.iter().map(|x| x[key].as_u64().unwrap()).sum::<u64>() as f64 / w.len() as f64
    };
    // The GPT scanner reads the table pages of the current tenth (with their
    // neighbours); the EPT scanner reads every mapping.
    let (g, e) = (mean(&gpt, "mapped_bytes"), mean(&ept, "mapped_bytes"));
    assert!(g < 0.6 * e, "GPT scanner {g} bytes per window, EPT scanner {e}");
    assert!(gpt.policy_report["queue_levels"].as_array().unwrap().iter().skip(1).any(|l| l.as_u64().unwrap() > 0), "hot pages climbed the queue");
}

#[test]
fn hmmv_pool_mode_keeps_each_vm_within_its_bounds_and_runs_deterministically() {
    let two_vms = |mode: &str| Sources {
        tenants: ["vm:hotspot:25%", "vm:seqscan:25%"].map(String::from).to_vec(),
        sets: [
            "policy.name=\"hmm-v\"",
            &format!("policy.hmm-v.mode=\"{mode}\""),
            "workload.footprint=\"8MiB\"",
            "workload.refs=100000",
            "machine.tiers.fast.capacity=\"25%\"",
            "policy.hmm-v.monitor_window_s=0.0001",
            "policy.hmm-v.first_switch_s=0.0001",
            "policy.hmm-v.clock_switch_s=0.002",
            "engine.epoch_cycles=500000",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    let cfg = Config::load(&two_vms("pool")).unwrap();
    let (a, b) = (run_cfg(&cfg, true), run_cfg(&cfg, true));
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    let vms = a.policy_report["vms"].as_array().unwrap();
    let mut moved = false;
    for (v, t) in vms.iter().zip(&a.tenants) {
        let (init, now) = (v["initial_dram_frames"].as_u64().unwrap(), v["dram_frames"].as_u64().unwrap());
        assert!(now * 4 >= init * 3 && now * 4 <= init * 5, "DRAM {now} frames, initial {init}");
        moved |= now != init;
        assert!(t.frames_per_tier[0] <= t.fast_quota_frames.unwrap(), "within its quota");
    }
    assert!(moved, "pool mode resized a VM's DRAM");
    // Island mode keeps them.
    let r = run_cfg(&Config::load(&two_vms("island")).unwrap(), true);
    for v in r.policy_report["vms"].as_array().unwrap() {
        assert_eq!(v["initial_dram_frames"], v["dram_frames"]);
    }
}

#[test]
fn hypervisor_policies_refuse_a_run_without_vms() {
    for p in ["hmm-v", "ept-scanner"] {
        let cfg = config(&[&format!("policy.name=\"{p}\""), "workload.refs=1000"]);
        let e = run(&cfg, &RunOptions::default()).map(|_| ()).expect_err("refused").to_string();
        assert!(e.contains("manages VM tenants"), "{e}");
    }
}

#[test]
fn hmmv_passes_verify_on_every_workload_with_every_migration_variant() {
    // One-window rounds of 10 µs back to back: pages move all through the run, while
    // the workload writes them.
    for how in ["pml", "write-protect", "linux"] {
        let mut moving = 0;
        for (workload, _) in WORKLOADS {
            let cfg = config(&[
                "tenant_kind=\"vm\"",
                "policy.name=\"hmm-v\"",
                &format!("workload.name=\"{workload}\""),
                "workload.footprint=\"8MiB\"",
                "workload.refs=60000",
                "machine.tiers.fast.capacity=\"25%\"",
                "engine.epoch_cycles=200000",
                "policy.hmm-v.windows=1",
                "policy.hmm-v.clock_switch=false",
                "policy.hmm-v.monitor_window_s=0.00001",
                "policy.hmm-v.first_switch_s=0.00001",
                // Everything starts in NVM, so that whatever is tracked moves (NVM with
                // room for pages first touched while promotions hold DRAM frames).
                "policy.hmm-v.first_touch_slow=true",
                "machine.tiers.slow.capacity=\"150%\"",
                &format!("policy.hmm-v.migration=\"{how}\""),
            ]);
            let r = run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("hmm-v/{how} on {workload}: {e}"));
            assert!(r.sim.verified_reads > 0 || workload == &"gups" && r.summary.references == 0, "{how} on {workload}");
            let v = r.vm_moves.unwrap();
            moving += (v.pml + v.linux + v.write_protect > 0) as usize;
        }
        assert!(moving + 1 >= WORKLOADS.len(), "{how}: pages moved in {moving} of {} workloads", WORKLOADS.len());
    }
}

/// Rainbow's Fig. 9 breakdown: each kind of translation cycles is a part of the
/// whole, and the parts add up to its share of the run's cycles (the bitmap-cache
/// hits counted only where their check was charged).
#[test]
fn rainbows_translation_breakdown_adds_up() {
    let dir = Scratch::new("end-to-end");
    let json = dir.file("rainbow.json");
    let out = common::tiersim(&["run", "--preset", "rainbow", "--workload", "zipf", "--footprint", "64MiB", "--refs", "400000", "--json", &json]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = &r["breakdown"]["translation_cycles"];
    let cycles: u64 = r["cores"].as_array().unwrap().iter().map(|c| c["cycles"].as_u64().unwrap()).sum();
    let kinds = ["split_tlb_hits", "bitmap_cache_hits", "bitmap_cache_misses", "superpage_walks", "remapping"];
    let parts: Vec<u64> = kinds.iter().map(|k| t[k].as_u64().unwrap_or_else(|| panic!("{k}: {}", t[k]))).collect();
    assert!(parts.iter().all(|&p| p <= cycles), "{kinds:?} = {parts:?}, run {cycles} cycles");
    let share = parts.iter().sum::<u64>() as f64 / cycles as f64;
    assert!((share - t["share_of_cycles"].as_f64().unwrap()).abs() < 1e-9, "{share} {t}");
}
