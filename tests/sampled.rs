//! Sampled mode (`engine.mode = "sampled"`, docs/sampled.md): what a policy observes
//! stays exact, the summary figures stay within 3 % of detailed mode on small runs,
//! runs are deterministic, and what cannot be sampled says so.

mod common;

use common::tiersim;
use serde_json::Value;

/// Windows scaled to runs of a few million references: 15 % detailed, with a
/// warm-up long enough for kv's working set to refill the 8 MiB LLC.
const WINDOWS: [&str; 6] =
    ["--set", "engine.sampled.period_refs=4000000", "--set", "engine.sampled.detailed_refs=600000", "--set", "engine.sampled.warmup_refs=400000"];

fn run(args: &[&str], mode: &str, name: &str) -> Value {
    let dir = common::Scratch::new("sampled");
    let json = dir.file(&format!("{name}-{mode}.json"));
    let mut all: Vec<&str> = vec!["run", "--mode", mode, "--json", &json];
    all.extend_from_slice(args);
    if mode == "sampled" {
        all.extend_from_slice(&WINDOWS);
    }
    let out = tiersim(&all);
    assert!(out.status.success(), "{all:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

fn num(v: &Value, path: &str) -> f64 {
    v.pointer(path).and_then(Value::as_f64).unwrap_or_else(|| panic!("{path} missing"))
}

/// The relative difference of figure `path` between the two reports.
fn rel(d: &Value, s: &Value, path: &str) -> f64 {
    let (a, b) = (num(d, path), num(s, path));
    if a == b {
        0.0
    } else {
        (b - a).abs() / a.abs().max(1e-12)
    }
}

/// The summary figures of sampled mode against detailed mode: a workload that
/// mostly hits the caches (kv), one that misses the TLBs and caches on nearly every
/// reference (hotspot), one in between (zipf), and a policy that moves pages (tpp).
/// Cycles, IPC and the fast tier's share within 3 %; AMAT within 6 %, since
/// fast-forward reports the mean memory latency of the fitting windows, which run
/// just after the caches were re-warmed (docs/sampled.md, "Validation").
#[test]
fn summary_figures_are_within_3_percent_of_detailed_mode() {
    let cases: [(&str, &[&str]); 4] = [
        ("kv-ft", &["--workload", "kv", "--footprint", "64MiB", "--refs", "16000000"]),
        ("hotspot-ft", &["--workload", "hotspot", "--footprint", "64MiB", "--refs", "8000000"]),
        ("zipf-ft", &["--workload", "zipf", "--footprint", "64MiB", "--refs", "8000000"]),
        ("kv-tpp", &["--policy", "tpp", "--workload", "kv", "--footprint", "64MiB", "--refs", "16000000"]),
    ];
    let mut bad = Vec::new();
    for (name, args) in cases {
        let d = run(args, "detailed", name);
        let s = run(args, "sampled", name);
        assert_eq!(s["sampling"]["ran"], "sampled");
        let share = num(&s, "/sampling/detailed_share");
        assert!((0.14..0.3).contains(&share), "{name}: detailed share {share}");
        for (path, tolerance) in [("/summary/cycles", 0.03), ("/summary/ipc", 0.03), ("/summary/fast_tier_fraction", 0.03), ("/summary/amat_ns", 0.06)] {
            let e = rel(&d, &s, path);
            if e > tolerance {
                bad.push(format!("{name} {path}: detailed {} sampled {} ({:.1} %)", num(&d, path), num(&s, path), e * 100.0));
            }
        }
        // Migrations depend on when the policy's scans run, which follows the clock.
        let (dm, sm) = (num(&d, "/summary/page_moves"), num(&s, "/summary/page_moves"));
        if (dm - sm).abs() > (0.03 * dm).max(8.0) {
            bad.push(format!("{name} page moves: detailed {dm} sampled {sm}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The default windows follow a workload whose memory latency drifts: `graph-bfs`'s
/// mean DRAM latency rises as the run goes on, so a fit goes stale within its period
/// (docs/sampled.md, "Windows"). With the default windows, periods of 2.5·10⁶
/// references, every summary figure of a 4·10⁷-reference run is within 3 % of
/// detailed mode. With the former periods of 2·10⁷ references (the same 5 % share)
/// two fits priced the whole run and the AMAT came out about 30 % low; the test
/// checks that too, so it cannot pass because the drift went away. This run is also
/// the aliasing case of docs/sampled.md ("Limits"): with periods of 3·10⁶ references
/// its AMAT is 8 % low, so a change of the default windows has to pass it.
#[test]
fn default_windows_follow_a_drifting_workload() {
    let dir = common::Scratch::new("sampled-drift");
    let report = |name: &str, extra: &[&str]| -> Value {
        let json = dir.file(&format!("{name}.json"));
        let mut all = vec!["run", "--workload", "graph-bfs", "--footprint", "256MiB", "--refs", "40000000", "--json", &json];
        all.extend_from_slice(extra);
        let out = tiersim(&all);
        assert!(out.status.success(), "{all:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
    };
    let d = report("detailed", &["--mode", "detailed"]);
    let s = report("sampled", &["--mode", "sampled"]);
    assert_eq!(num(&s, "/sampling/period_refs"), 2_500_000.0);
    for path in ["/summary/cycles", "/summary/ipc", "/summary/fast_tier_fraction", "/summary/amat_ns"] {
        let e = rel(&d, &s, path);
        assert!(e <= 0.03, "{path}: detailed {} sampled {} ({:.1} %)", num(&d, path), num(&s, path), e * 100.0);
    }
    let former = [
        "--mode", "sampled", "--set", "engine.sampled.period_refs=20000000", "--set", "engine.sampled.detailed_refs=1000000",
        "--set", "engine.sampled.warmup_refs=500000",
    ];
    let stale = report("former", &former);
    let e = rel(&d, &stale, "/summary/amat_ns");
    assert!(e > 0.1, "with 2·10⁷-reference periods the AMAT was expected well off, got {:.1} %", e * 100.0);
}

/// With no policy acting on time, what the TLBs and page tables see does not depend
/// on the clock: with `engine.sampled.fast_forward = "tlb"` (the default)
/// fast-forward keeps TLB hits and misses, walks and faults exact.
///
/// At page granularity (`"page"`) the TLB and walk counts of fast-forward windows
/// are estimates: each fast-forward reference's reach class (whether the core's reach
/// array held its translation) is counted, and the fitting window's counts per
/// reference of that class scale to them (docs/sampled.md, "Page-granular
/// fast-forward"). What they can be off by is the fitting windows' sampling error for
/// a stationary workload: zipf's fitting windows here hold 200 000 references each,
/// about 94 000 of them TLB misses, and misses and walk references came out within
/// 0.01 %, hits within 0.3 %, when this was written. The test allows 1 % of the
/// references for each count; first-touch faults, which decide placement, stay
/// exact, as do the references themselves.
#[test]
fn fast_forward_keeps_tlb_walk_and_fault_counts_exact() {
    let args = ["--workload", "zipf", "--footprint", "64MiB", "--refs", "9000000"];
    let d = run(&args, "detailed", "exact");
    let s = run(&args, "sampled", "exact");
    for key in ["references", "reads", "writes", "instructions", "tlb_l1_hits", "tlb_l2_hits", "tlb_misses", "walk_references", "first_touch_faults"] {
        assert_eq!(d["cores"][0][key], s["cores"][0][key], "{key}");
    }
    assert_ne!(d["cores"][0]["memory_stall_cycles"], s["cores"][0]["memory_stall_cycles"], "fast-forward times the caches from the model");
    assert!(d.get("sampling").is_none(), "a detailed run has no sampling section");
    let mut at_pages = args.to_vec();
    at_pages.extend_from_slice(&["--set", "engine.sampled.fast_forward=\"page\""]);
    let page = run(&at_pages, "sampled", "page");
    for key in ["references", "reads", "writes", "instructions", "first_touch_faults"] {
        assert_eq!(d["cores"][0][key], page["cores"][0][key], "{key}");
    }
    let refs = num(&d, "/cores/0/references");
    for key in ["tlb_l1_hits", "tlb_l2_hits", "tlb_misses", "walk_references"] {
        let (a, b) = (num(&d, &format!("/cores/0/{key}")), num(&page, &format!("/cores/0/{key}")));
        assert!((a - b).abs() <= 0.01 * refs, "{key}: detailed {a}, page-granular {b}");
    }
    let estimated = page["sampling"]["estimated"].as_str().unwrap();
    assert!(estimated.contains("TLB counts"), "the report says the TLB counts are estimated: {estimated}");
}

/// With the walker's reads uncached (`machine.page_table.walk_reads`, Rainbow
/// §III-E's cost model), fast-forward walks about as often as detailed mode (exactly
/// as often through the TLBs, `fast_forward = "tlb"`; within 1 % at page granularity,
/// whose counts are estimates, see the test above), every walk reference reaches
/// memory in both, and the walks' cycles and the run's stay within 3 % (hotspot misses
/// the TLB on nearly every reference, so walks are half its time).
#[test]
fn uncached_walks_fast_forward_as_detailed_mode_walks() {
    let args = ["--workload", "hotspot", "--footprint", "256MiB", "--refs", "4000000", "--set", "machine.page_table.walk_reads=\"uncached\""];
    let d = run(&args, "detailed", "uncached");
    for ff in ["tlb", "page"] {
        let setting = format!("engine.sampled.fast_forward=\"{ff}\"");
        let mut with = args.to_vec();
        with.extend_from_slice(&["--set", &setting]);
        let s = run(&with, "sampled", &format!("uncached-{ff}"));
        for key in ["tlb_misses", "walk_references", "walk_memory_accesses"] {
            let (a, b) = (num(&d, &format!("/cores/0/{key}")), num(&s, &format!("/cores/0/{key}")));
            if ff == "tlb" {
                assert_eq!(a, b, "{ff}: {key}");
            } else {
                assert!((a - b).abs() <= 0.01 * a, "{ff}: {key}: detailed {a}, sampled {b}");
            }
        }
        assert_eq!(num(&s, "/cores/0/walk_memory_accesses"), num(&s, "/cores/0/walk_references"), "{ff}");
        assert!(num(&s, "/sampling/fast_forward_references") > 3e6, "most of the run fast-forwards");
        for path in ["/cores/0/walk_cycles", "/summary/cycles"] {
            assert!(rel(&d, &s, path) < 0.03, "{ff}: {path}: detailed {} sampled {}", num(&d, path), num(&s, path));
        }
    }
}

/// Same seed, same sampled run: bit-identical reports (apart from wall times), in
/// either way of fast-forwarding.
#[test]
fn sampled_runs_are_deterministic() {
    for ff in ["tlb", "page"] {
        let setting = format!("engine.sampled.fast_forward=\"{ff}\"");
        let args = ["--policy", "kstaled", "--workload", "hotspot", "--footprint", "32MiB", "--refs", "9000000", "--set", "policy.kstaled.scans_per_run=6", "--set", &setting];
        let mut a = run(&args, "sampled", &format!("det-a-{ff}"));
        let mut b = run(&args, "sampled", &format!("det-b-{ff}"));
        a.as_object_mut().unwrap().remove("sim");
        b.as_object_mut().unwrap().remove("sim");
        assert_eq!(a, b, "{ff}");
    }
}

/// Verification of every read still holds while pages move during fast-forward, in
/// either way of fast-forwarding (the reach arrays' translations are checked too).
#[test]
fn verify_holds_in_fast_forward_while_pages_move() {
    for ff in ["tlb", "page"] {
        let setting = format!("engine.sampled.fast_forward=\"{ff}\"");
        let args = ["--policy", "tpp", "--workload", "kv", "--footprint", "32MiB", "--refs", "9000000", "--verify", "--set", &setting];
        let s = run(&args, "sampled", &format!("verify-{ff}"));
        assert!(num(&s, "/summary/page_moves") > 0.0, "{ff}: tpp moved pages");
        assert_eq!(num(&s, "/sim/verified_reads"), num(&s, "/cores/0/reads"), "{ff}: reads of fast-forward windows are verified too");
    }
}

/// A policy with a redirection structure on the memory path runs detailed, and the
/// report says so.
#[test]
fn redirection_structures_run_detailed_and_say_so() {
    let args = ["--policy", "rainbow", "--preset", "rainbow", "--workload", "zipf", "--footprint", "32MiB", "--refs", "500000"];
    let s = run(&args, "sampled", "rainbow");
    assert_eq!(s["sampling"]["ran"], "detailed");
    assert_eq!(num(&s, "/sampling/fast_forward_references"), 0.0);
    let notes = s["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("detailed throughout")), "{notes:?}");
}

/// A VM's nested walks and EPT bits are not modelled at page granularity: its run
/// fast-forwards through the TLBs, its counts exact, and the report says so.
#[test]
fn a_vm_fast_forwards_through_the_tlbs_and_says_so() {
    let args = ["--workload", "kv", "--footprint", "16MiB", "--refs", "6000000", "--set", "tenant_kind=\"vm\"", "--set", "engine.sampled.fast_forward=\"page\""];
    let d = run(&args, "detailed", "vm");
    let s = run(&args, "sampled", "vm");
    assert_eq!(s["sampling"]["ran"], "sampled");
    for key in ["tlb_misses", "walk_references", "first_touch_faults"] {
        assert_eq!(d["cores"][0][key], s["cores"][0][key], "{key}");
    }
    let notes = s["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("fast-forward ran through the TLBs")), "{notes:?}");
    assert!(!s["sampling"]["estimated"].as_str().unwrap().contains("TLB counts"));
}

/// Impossible windows and unknown modes are refused with the field named.
#[test]
fn bad_sampling_settings_name_their_field() {
    let out = tiersim(&["run", "--mode", "sampled", "--set", "engine.sampled.warmup_refs=2000000", "--refs", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("engine.sampled.warmup_refs") && err.lines().count() == 1, "{err}");
    let out = tiersim(&["run", "--mode", "fast", "--refs", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mode"));
    let out = tiersim(&["run", "--set", "engine.mode=\"quick\"", "--refs", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("engine.mode"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tiersim(&["run", "--mode", "sampled", "--set", "engine.sampled.fast_forward=\"cache\"", "--refs", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("engine.sampled.fast_forward") && err.lines().count() == 1, "{err}");
}
