//! `tiersim record` on the tiny programs checked in under `tests/programs/`, built
//! here with the C compiler: both recorders against each other, threads as cores,
//! windows of a run, and bad input (a missing program, a crash, a full disk).
//!
//! The tests need `cc`, `qemu-x86_64` (Debian's `qemu-user`) and `valgrind`;
//! `.ci/run` installs the last two. A test whose tools are missing says so and
//! passes without checking anything else.

mod common;

use common::{tiersim, Scratch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use tiersim::trace::inspect::inspect;
use tiersim::trace::{open, OpenOptions};

/// Whether every tool in `tools` runs; if not, says which test is skipped.
fn have(tools: &[&str], test: &str) -> bool {
    for tool in tools {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("{tool} is not installed: skipping {test} (.ci/run installs qemu-user and valgrind)");
            return false;
        }
    }
    true
}

/// Builds `tests/programs/NAME.c` with `flags` into `dir`; the path of the
/// executable.
fn build(dir: &Scratch, name: &str, flags: &[&str]) -> String {
    let src = format!("{}/tests/programs/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let exe = dir.file(name);
    let out = Command::new("cc").args(["-O1", "-o", &exe, &src]).args(flags).output().unwrap();
    assert!(out.status.success(), "cc {src}: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Records `program` with `via` (and any options) into a fresh trace in `dir`; its
/// path.
fn record(dir: &Scratch, via: &str, name: &str, options: &[&str], program: &[&str]) -> String {
    let path = dir.file(name);
    let mut args = vec!["record", "--via", via, "--out", &path];
    args.extend_from_slice(options);
    args.push("--");
    args.extend_from_slice(program);
    let out = tiersim(&args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    path
}

fn json(path: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn qemu_and_lackey_agree_on_a_tiny_program() {
    let dir = Scratch::new("record");
    if !have(&["cc", "qemu-x86_64", "valgrind"], "the recorder comparison") {
        return;
    }
    // Statically linked, so valgrind's preloaded libraries (and their loading) do
    // not add to its side: what remains is how each lays out the stack and the
    // program's start-up (see docs/recording.md).
    let exe = build(&dir, "sweep", &["-static"]);
    let mut figures = Vec::new();
    for via in ["qemu", "lackey"] {
        let path = record(&dir, via, &format!("sweep-{via}.tsim"), &[], &[&exe]);
        // The metadata names the tool that recorded (its `--version`, asked beside
        // the recording).
        let meta = tiersim::trace::native::read_trailer(&path).unwrap().and_then(|f| f.meta).expect("a recording has metadata");
        let tool = if via == "qemu" { "qemu-x86_64 version" } else { "valgrind-" };
        assert!(meta.recorder.starts_with(tool), "{via}: recorder {:?}", meta.recorder);
        let mut o = open(&path, &OpenOptions::default()).unwrap();
        let r = inspect(o.source.as_mut(), 1 << 20).unwrap();
        figures.push((r.pages_4k as f64, r.references as f64, r.writes as f64));
    }
    let [(qp, qr, qw), (lp, lr, lw)] = figures[..] else { unreachable!() };
    // The program touches its 4 MiB array (1024 pages) and a few dozen more.
    assert!(qp > 1024.0, "{qp} pages");
    assert!((qp - lp).abs() <= 0.01 * lp, "footprints differ by more than 1 %: QEMU {qp} pages, lackey {lp}");
    assert!((qr - lr).abs() <= 0.05 * lr, "access counts differ by more than 5 %: QEMU {qr}, lackey {lr}");
    assert!((qw - lw).abs() <= 0.05 * lw, "write counts differ by more than 5 %: QEMU {qw}, lackey {lw}");
}

#[test]
fn threads_become_cores_with_their_own_accesses() {
    let dir = Scratch::new("record");
    if !have(&["cc", "qemu-x86_64"], "the threads test") {
        return;
    }
    let exe = build(&dir, "threads", &["-pthread"]);
    let path = record(&dir, "qemu", "threads.tsim", &[], &[&exe]);
    let all = common::read_all(&path, &OpenOptions::default());
    // Each thread fills and sums its own 1 MiB array: 2 × 131072 accesses, 1024 to
    // each of its 256 pages (257 if the arrays are not page-aligned, when
    // neighbouring threads share a page at the border).
    let mut per_core: BTreeMap<u16, (u64, BTreeMap<u64, u64>)> = BTreeMap::new();
    for a in &all {
        let c = per_core.entry(a.core).or_default();
        c.0 += 1;
        *c.1.entry(a.vaddr >> 12).or_default() += 1;
    }
    assert_eq!(per_core.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3], "one core per thread");
    let mut owned: Vec<BTreeSet<u64>> = Vec::new();
    for (core, (n, pages)) in &per_core {
        assert!(*n >= 2 * 131072, "core {core}: {n} accesses");
        let hot: BTreeSet<u64> = pages.iter().filter(|(_, &k)| k >= 512).map(|(&p, _)| p).collect();
        assert!(hot.len() >= 256, "core {core}: {} heavily used pages", hot.len());
        owned.push(hot);
    }
    for i in 0..owned.len() {
        for j in i + 1..owned.len() {
            assert!(owned[i].intersection(&owned[j]).count() <= 1, "cores {i} and {j} share their arrays");
        }
    }
    // `run --trace` replays the four threads on four cores of one process.
    let out_json = dir.file("threads.json");
    let out = tiersim(&["run", "--trace", &path, "--json", &out_json]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out_json);
    let cores = v["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 4);
    for (core, (n, _)) in &per_core {
        assert_eq!(cores[*core as usize]["references"], *n, "core {core}");
        assert_eq!(v["workloads"][*core as usize]["trace"]["thread"], *core);
        assert_eq!(v["workloads"][*core as usize]["tenant"], 0);
    }
    // The footprint is the process's, counted once: about 4 MiB of arrays.
    let footprint = v["footprint_bytes"].as_u64().unwrap();
    assert!((4 << 20..5 << 20).contains(&footprint), "{footprint}");
}

#[test]
fn a_forked_child_is_not_recorded() {
    let dir = Scratch::new("record");
    if !have(&["cc", "qemu-x86_64"], "the fork test") {
        return;
    }
    let exe = build(&dir, "fork", &[]);
    let path = record(&dir, "qemu", "fork.tsim", &[], &[&exe]);
    let mut pages: BTreeMap<u64, u64> = BTreeMap::new();
    for a in common::read_all(&path, &OpenOptions::default()) {
        assert_eq!(a.core, 0, "the child's QEMU wrote into the parent's ring");
        *pages.entry(a.vaddr >> 12).or_default() += 1;
    }
    // The parent's 1 MiB array (512 stores to each of its 256 pages) and a few
    // pages of start-up, and not the child's array (256 more). Before the plugin
    // stopped recording in forked children, the child's QEMU wrote into the
    // parent's ring and this trace was garbled (105 pages filled).
    let filled = pages.values().filter(|&&n| n >= 500).count();
    assert!((256..=300).contains(&filled), "{filled} pages filled");
}

#[test]
fn windows_keep_what_they_say_with_both_recorders() {
    let dir = Scratch::new("record");
    if !have(&["cc", "qemu-x86_64", "valgrind"], "the windows test") {
        return;
    }
    let exe = build(&dir, "sweep", &["-static"]);
    // Skip 100 000 instructions, then 50 000 of every 500 000 for 2 000 000: four
    // windows, 200 000 instructions. The program runs about 4.2 M instructions, so
    // it is stopped at the limit.
    let options = ["--skip", "100k", "--limit", "2M", "--window", "50k", "--period", "500k"];
    for via in ["qemu", "lackey"] {
        let path = record(&dir, via, &format!("windows-{via}.tsim"), &options, &[&exe]);
        let mut o = open(&path, &OpenOptions::default()).unwrap();
        let r = inspect(o.source.as_mut(), 1 << 20).unwrap();
        assert!((199_000..=200_000).contains(&r.instructions), "{via}: {} instructions", r.instructions);
        let sampled = r.sampled.as_ref().unwrap_or_else(|| panic!("{via}: no sampling in the metadata"));
        assert_eq!((sampled.sampling.skip, sampled.sampling.limit, sampled.sampling.window, sampled.sampling.period), (100_000, Some(2_000_000), Some(50_000), Some(500_000)));
        // The program ran 2.1 M instructions until it was stopped: scale ≈ 10.5.
        assert!((10.4..10.6).contains(&sampled.scale), "{via}: scale {}", sampled.scale);
        let text = String::from_utf8_lossy(&tiersim(&["inspect", &path]).stdout).to_string();
        assert!(text.contains("sampled           50000 of every 500000 instructions, from instruction 100000"), "{text}");
        let out_json = dir.file(&format!("windows-{via}.json"));
        let out = tiersim(&["run", "--trace", &path, "--json", &out_json]);
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(summary.contains("multiply totals"), "{summary}");
        let v = json(&out_json);
        assert_eq!(v["summary"]["instructions"], r.instructions);
        assert!((10.4..10.6).contains(&v["workloads"][0]["trace"]["sampled"]["scale"].as_f64().unwrap()));
    }
}

/// Runs `record` that must fail: exit code 2, no panic, and tiersim's own line
/// (the last one: the recorded program and QEMU may print theirs first) holds
/// every needle.
fn record_fails(args: &[&str], needles: &[&str]) {
    let out = tiersim(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("tiersim: "), "{args:?}: {err}");
    for needle in needles {
        assert!(last.contains(needle), "{args:?}: `{needle}` not in {last}");
    }
}

#[test]
fn bad_input_is_one_line_and_no_trace_passes_for_complete() {
    let dir = Scratch::new("record");
    let out = dir.file("never.tsim");
    for via in ["qemu", "lackey"] {
        record_fails(&["record", "--via", via, "--out", &out, "--", "/nonexistent/program"], &["program `/nonexistent/program` not found"]);
    }
    assert!(!Path::new(&out).exists(), "no trace for a program that does not exist");
    record_fails(&["record", "--via", "dynamorio", "--", "/bin/true"], &["--via: unknown recorder `dynamorio`"]);
    record_fails(&["record", "--window", "10", "--", "/bin/true"], &["--window and --period: give both"]);
    record_fails(&["record", "--skip", "lots", "--", "/bin/true"], &["--skip: `lots` is not a count of instructions"]);
    for (via, tools) in [("qemu", ["cc", "qemu-x86_64"]), ("lackey", ["cc", "valgrind"])] {
        if !have(&tools, &format!("the {via} crash test")) {
            continue;
        }
        // A program that crashes: the trace keeps its blocks but no trailer, and
        // readers report it as truncated.
        let exe = build(&dir, "crash", &[]);
        let path = dir.file(&format!("crash-{via}.tsim"));
        record_fails(&["record", "--via", via, "--out", &path, "--", &exe], &["was killed by signal 11 (SIGSEGV", "without a trailer", "truncated"]);
        let inspected = tiersim(&["inspect", &path]);
        assert_eq!(inspected.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&inspected.stderr).contains("truncated"), "{}", String::from_utf8_lossy(&inspected.stderr));
        // A file that is not a program: the recorder cannot start it.
        record_fails(&["record", "--via", via, "--out", &path, "--", "/etc/passwd"], &["`/etc/passwd` ended", "before making any access"]);
        // A full disk: every write to /dev/full fails with ENOSPC.
        record_fails(&["record", "--via", via, "--out", "/dev/full", "--", "/bin/true"], &["/dev/full: cannot write", "No space left on device", "truncated"]);
    }
}
