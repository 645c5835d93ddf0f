//! The command line as a user runs it: outputs, and one-line errors with exit code 2
//! for bad input.

mod common;

use common::Scratch;
use std::process::{Command, Output};

fn tiersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiersim")).args(args).output().unwrap()
}

/// Runs a command that must fail on bad input: exit code 2, one line on stderr that
/// contains `needle`, no panic.
fn bad(args: &[&str], needle: &str) {
    let out = tiersim(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line expected, got {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_names_the_field() {
    bad(&["run", "--set", "machine.tlb.l1_small_entires=64"], "machine.tlb");
    bad(&["run", "--policy", "magic"], "unknown policy `magic`");
    bad(&["run", "--preset", "dram9000"], "unknown preset `dram9000`");
    bad(&["run", "--workload", "quake"], "unknown workload");
    bad(&["run", "--footprint", "0"], "workload.footprint");
    bad(&["run", "--footprint", "lots"], "workload.footprint");
    bad(&["run", "--refs=-5"], "--refs");
    bad(&["run", "--set", "machine.tiers.fast.capacity=\"-2GiB\""], "machine.tiers.fast.capacity");
    bad(&["run", "--set", "machine.cores=0"], "machine.cores");
    bad(&["run", "--set", "machine.caches.0.ways=3"], "machine.caches[0]");
    bad(
        &["run", "--footprint", "1GiB", "--set", "machine.tiers.fast.capacity=\"100MiB\"", "--set", "machine.tiers.slow.capacity=\"100MiB\""],
        "larger than all tiers",
    );
    bad(&["run", "--config", "/nonexistent/tiersim.toml"], "/nonexistent/tiersim.toml");
    bad(&["compare", "--policies", "all-fast,first-touch", "--baseline", "all-slow"], "--baseline");
    // An absolute slow tier must hold the footprint and Rainbow's migration bitmap.
    bad(
        &["run", "--policy", "rainbow", "--footprint", "64MiB", "--set", "machine.tiers.slow.capacity=\"64MiB\""],
        "machine.tiers.slow.capacity to at least \"65MiB\"",
    );
    bad(&["run", "--warmup", "0.5"], "--warmup: only with --slowdown-vs");
    bad(&["run", "--slowdown-vs", "all-fast", "--warmup", "1.5"], "--warmup: must be a fraction");
    bad(&["compare", "--policies", "all-fast,first-touch", "--warmup", "0.5"], "--warmup");
}

#[test]
fn rainbow_runs_on_the_default_slow_tier() {
    // The default slow tier is a share of the footprint: the machine adds Rainbow's
    // migration bitmap to it (one 4 KiB frame per 128 MiB of slow tier).
    let dir = Scratch::new("rainbow-default");
    let json = dir.join("rainbow-default.json");
    let out = tiersim(&["run", "--policy", "rainbow", "--footprint", "64MiB", "--refs", "200000", "--json", json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 64 MiB of data plus the bitmap, rounded up to a 2 MiB huge page.
    assert_eq!(r["tiers"][1]["capacity_bytes"].as_u64(), Some(66 << 20));
    assert!(r["copies"]["bitmap_checks"].as_u64().unwrap() > 0);
}

#[test]
fn pages_a_policy_brings_into_the_fast_tier_are_not_a_full_slow_tier() {
    // hscc-4k places every page in the slow tier and copies hot ones into DRAM; with a
    // slow tier that holds the footprint, no page was born in the fast tier.
    let dir = Scratch::new("hscc-note");
    let json = dir.join("hscc-note.json");
    let out = tiersim(&[
        "run", "--preset", "rainbow", "--policy", "hscc-4k", "--workload", "hotspot", "--footprint", "64MiB", "--refs", "2000000",
        "--set", "machine.tiers.fast.capacity=\"16MiB\"", "--set", "machine.tiers.slow.capacity=\"128MiB\"",
        "--set", "engine.epoch_cycles=10000000", "--json", json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r["mechanisms"]["copy_in"]["pages"].as_u64().unwrap() > 0, "{}", r["mechanisms"]);
    let notes = r["notes"].as_array().unwrap();
    assert!(!notes.iter().any(|n| n.as_str().unwrap().contains("filled up")), "{notes:?}");
}

#[test]
fn slowdown_after_warmup_is_reported() {
    let dir = Scratch::new("cli-warm");
    let json = dir.join("r.json");
    let args = ["run", "--workload", "hotspot", "--footprint", "32MiB", "--refs", "400000", "--policy", "all-slow", "--slowdown-vs", "all-fast"];
    let out = tiersim(&[&args[..], &["--warmup", "0.5", "--json", json.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("after warm-up"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (whole, warm) = (v["slowdown"]["percent"].as_f64().unwrap(), &v["slowdown"]["after_warmup"]);
    assert_eq!(warm["warmup_fraction"], 0.5);
    // All-slow is slower everywhere, and the second half alone is slower too.
    assert!(whole > 10.0 && warm["percent"].as_f64().unwrap() > 10.0, "{whole} {warm}");
    // Throughput loss is the same time difference over the slower run: s / (1 + s).
    let loss = v["slowdown"]["throughput_loss_percent"].as_f64().unwrap();
    assert!((loss - whole / (1.0 + whole / 100.0)).abs() < 1e-6, "{loss} {whole}");
}

#[test]
fn run_writes_json_and_csv() {
    let dir = Scratch::new("cli");
    let json = dir.join("r.json");
    let csv = dir.join("r.csv");
    let out = tiersim(&[
        "run",
        "--workload",
        "zipf",
        "--footprint",
        "32MiB",
        "--refs",
        "100000",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in ["references", "cycles", "ipc", "amat_ns", "fast_tier_fraction", "migrations", "migrated_bytes", "energy_j"] {
        assert!(v["summary"][key].is_number(), "summary.{key} missing");
    }
    assert_eq!(v["summary"]["references"], 100000);
    assert!(v["sim"]["wall_seconds"].is_number() && v["sim"]["references_per_second"].is_number());
    assert!(v["epochs"].as_array().is_some_and(|e| !e.is_empty()));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(text.starts_with("policy,references"));
}

#[test]
fn compare_prints_one_row_per_policy() {
    let out = tiersim(&[
        "compare",
        "--policies",
        "all-fast,first-touch,all-slow",
        "--baseline",
        "all-fast",
        "--workload",
        "hotspot",
        "--footprint",
        "32MiB",
        "--refs",
        "50000",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |p: &str| text.lines().find(|l| l.starts_with(p)).unwrap_or_else(|| panic!("no row for {p}:\n{text}")).to_string();
    assert!(row("all-fast ").contains("1.000"), "the baseline is 1.000:\n{text}");
    row("first-touch");
    row("all-slow");
}

#[test]
fn policies_and_config_commands() {
    let out = tiersim(&["policies"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for p in ["all-fast", "all-slow", "first-touch", "flat-static", "round-robin"] {
        assert!(text.contains(p), "{p} missing");
    }
    assert!(text.contains("fast_pages = 4"), "round-robin's parameter with its default");
    let out = tiersim(&["config", "--preset", "spar"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("huge_page = \"512KiB\""));
    // The printed configuration is accepted back as a config file.
    let dir = Scratch::new("spar");
    let path = dir.join("spar.toml");
    std::fs::write(&path, text.as_bytes()).unwrap();
    let again = tiersim(&["config", "--config", path.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
}

#[test]
fn demo_shows_paper_systems_and_linux_moving_pages_and_writes_its_page() {
    let dir = Scratch::new("demo");
    let page = dir.join("page.html");
    let out = tiersim(&["demo", "--html", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for p in ["all-fast", "first-touch", "all-slow", "rainbow", "memos", "tpp"] {
        assert!(text.lines().any(|l| l.starts_with(&format!("{p} "))), "{p} row missing:\n{text}");
    }
    // Every policy that is not a baseline moved pages in the demo's run, and a
    // sentence computed from its report says how many.
    for p in ["rainbow", "memos", "tpp"] {
        let line = text.lines().find(|l| l.starts_with(&format!("- {p} moved "))).unwrap_or_else(|| panic!("no sentence for {p}:\n{text}"));
        let moved: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(moved > 0, "{line}");
    }
    // The scaled periods are stated with the values the runs used.
    assert!(text.contains("--set policy.memos.interval_s=0.2   (paper or kernel: 20 s rounds (memos §5))"), "{text}");
    assert!(text.contains("first-touch keeps each page where it was first touched"), "{text}");
    assert!(text.contains("tiersim reproduce rainbow --quick"), "a paper system is suggested next:\n{text}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<title>tiersim demo: all-fast, first-touch, all-slow, rainbow, memos, tpp on hotspot"), "{}", &html[..html.len().min(300)]);
    assert!(text.contains(&format!("Report page: {}", page.display())), "{text}");
}

#[test]
fn demo_checks_its_page_before_running() {
    bad(&["demo", "--html", "/nonexistent-dir/demo.html"], "--html /nonexistent-dir/demo.html");
}

#[test]
fn application_workload_runs_over_its_own_footprint() {
    let dir = Scratch::new("cli-app");
    let json = dir.join("bfs.json");
    let out = tiersim(&[
        "run",
        "--workload",
        "graph-bfs",
        "--set",
        "workload.graph.scale=10",
        "--refs",
        "50000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Scale 10 in Graph500's seq-csr layout: xoff 16 400 bytes (5 pages), xadj
    // 262 144 (64), bfs_tree and vlist 8 192 each (2 + 2): 73 pages, not the
    // default 1 GiB footprint.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["footprint_bytes"], 73 * 4096);
    assert_eq!(v["workloads"][0]["footprint_bytes"], 73 * 4096);
    assert_eq!(v["summary"]["references"], 50000);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("graph-bfs over 0.3 MiB"), "{text}");
}

#[test]
fn tenants_run_one_vm_per_core_with_their_fast_share() {
    let dir = Scratch::new("cli-tenants");
    let json = dir.join("vms.json");
    let out = tiersim(&[
        "run",
        "--tenants",
        "vm:kv:25%,vm:graph-bfs:25%,vm:pagerank:25%,vm:stream:25%",
        "--footprint",
        "16MiB",
        "--refs",
        "20000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let slots = v["workloads"].as_array().unwrap();
    let names: Vec<&str> = slots.iter().map(|s| s["workload"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kv", "graph-bfs", "pagerank", "stream"]);
    for (i, s) in slots.iter().enumerate() {
        assert_eq!((s["core"].as_u64(), s["tenant"].as_u64()), (Some(i as u64), Some(i as u64)));
        assert_eq!((s["kind"].as_str(), s["fast_share"].as_f64()), (Some("vm"), Some(0.25)));
    }
    let total: u64 = slots.iter().map(|s| s["footprint_bytes"].as_u64().unwrap()).sum();
    assert_eq!(v["footprint_bytes"].as_u64(), Some(total));
    assert!(v["cores"].as_array().unwrap().iter().all(|c| c["references"] == 20000));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("fast-tier share 25.0 %").count(), 4, "{text}");
    bad(&["run", "--tenants", "vm:kv:150%"], "--tenants vm:kv:150%");
    bad(&["run", "--tenants", "vm:kv:60%,vm:stream:60%"], "fast_share");
    bad(&["run", "--tenants", "vm:kv", "--mix", "gups"], "--tenants");
}

/// `tier-stream` on Ramulator 2's DDR4-2400 channel (studies/ramulator2-ddr4.toml):
/// random reads one every 53.3 ns (128 cycles at 2.4 GHz) over 1 GiB never find their
/// row open and never wait (a bank is busy for 106 cycles), so every read takes the
/// configured row miss, 53 DRAM clocks = 44.17 ns, and the 200 lines take 199 × 128
/// + 106 cycles: 12 800 bytes in 10.66 µs, 1.201 GB/s. The trace written holds the
/// sequential stream's 200 requests, every third a write.
#[test]
fn tier_stream_gives_the_configured_latencies_when_idle_and_writes_its_stream() {
    let dir = Scratch::new("tier-stream");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/studies/ramulator2-ddr4.toml");
    let figure = |out: &Output, key: &str| -> f64 {
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key} in {text}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let common = ["tier-stream", "--config", config, "--interval-ns", "53.3333", "--requests", "200"];
    let random = tiersim(&[&common[..], &["--pattern", "random"]].concat());
    assert!(random.status.success(), "{}", String::from_utf8_lossy(&random.stderr));
    assert_eq!(figure(&random, "avg_read_latency_ns"), 44.17);
    assert_eq!(figure(&random, "offered_gbps"), 1.2);
    assert_eq!(figure(&random, "achieved_gbps"), 1.201);
    let trace = dir.file("seq.trace");
    let seq = tiersim(&[&common[..], &["--pattern", "sequential", "--rw", "2:1", "--trace-out", &trace]].concat());
    assert!(seq.status.success(), "{}", String::from_utf8_lossy(&seq.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    assert_eq!(&lines[..4], ["LD 0x0", "LD 0x40", "ST 0x80", "LD 0xc0"]);
    bad(&["tier-stream", "--config", config, "--interval-ns", "10", "--rw", "2-1"], "--rw");
    bad(&["tier-stream", "--config", config, "--interval-ns", "10", "--tier", "middle"], "--tier");
}
