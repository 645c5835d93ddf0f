//! The real-program suite (`tiersim record --suite`, docs/real-programs.md) kept
//! honest: every program is recorded at a tiny size with QEMU and its trace replayed
//! with `tiersim run --trace`.
//!
//! A program whose packages are missing is skipped with the recorder's message
//! (which names them and the apt-get command) unless `TIERSIM_REQUIRE_SUITE` is
//! set, as `.ci/run` does after installing them; then it fails. Without
//! `qemu-x86_64` every program is skipped (lackey would take minutes).

mod common;

use common::{tiersim, Scratch};
use std::process::Command;

/// Records suite program `name` at `size` (any `record` options in `extra`) and
/// replays the first 100 000 accesses of each thread; returns the record's stdout,
/// or `None` when the test is skipped.
fn record_and_replay(name: &str, size: &str, extra: &[&str]) -> Option<String> {
    let required = std::env::var_os("TIERSIM_REQUIRE_SUITE").is_some();
    if Command::new("qemu-x86_64").arg("--version").output().is_err() {
        assert!(!required, "TIERSIM_REQUIRE_SUITE is set but qemu-x86_64 is not installed");
        eprintln!("qemu-x86_64 is not installed: skipping suite program {name} (.ci/run installs qemu-user)");
        return None;
    }
    let dir = Scratch::new(&format!("suite-{name}"));
    let out = dir.file(&format!("{name}.tsim"));
    let mut args = vec!["record", "--via", "qemu", "--suite", name, "--size", size, "--out", &out];
    args.extend_from_slice(extra);
    let o = tiersim(&args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    if !o.status.success() && err.contains(&format!("record --suite {name}: missing ")) && !required {
        eprintln!("skipping suite program {name}: {}", err.trim());
        return None;
    }
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{args:?}: {err}");
    // A program that failed would have been noted; the trace is whole.
    assert!(!err.contains("ended with exit code"), "{name}: {err}");
    assert!(text.contains(&format!("{name} at {size} (")), "{name}: {text}");
    let json = dir.file("run.json");
    let run = tiersim(&["run", "--trace", &out, "--refs", "100000", "--json", &json]);
    assert!(run.status.success(), "run --trace {out}: {}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cores = report["cores"].as_array().unwrap();
    // Each thread of the program replays on a core of its own, with up to 100 000
    // of its accesses (the main thread has at least that many).
    assert_eq!(cores.len(), threads(&text), "{name}: {text}");
    assert_eq!(cores[0]["references"], 100_000, "{name}");
    assert!(report["summary"]["references"].as_u64().unwrap() >= 100_000, "{name}");
    Some(text)
}

/// The threads a recording reports (`recorded N accesses of T threads`, or one).
fn threads(text: &str) -> usize {
    let Some(at) = text.find(" accesses of ") else { return 1 };
    text[at + 13..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn redis_under_its_load() {
    if let Some(text) = record_and_replay("redis", "1MiB", &[]) {
        // The main thread and redis's background threads.
        assert!(threads(&text) >= 2, "{text}");
    }
}

#[test]
fn memcached_under_its_load() {
    if let Some(text) = record_and_replay("memcached", "1MiB", &[]) {
        // The main thread and 4 workers at least.
        assert!(threads(&text) >= 5, "{text}");
    }
}

#[test]
fn sqlite3_queries() {
    record_and_replay("sqlite3", "256KiB", &[]);
}

#[test]
fn xz_compresses() {
    record_and_replay("xz", "256KiB", &[]);
}

#[test]
fn zstd_compresses() {
    record_and_replay("zstd", "1MiB", &[]);
}

#[test]
fn gcc_compiles() {
    record_and_replay("gcc", "256KiB", &[]);
}

// The Python programs spend their first 150–175 M accesses (half a minute under
// QEMU) starting the interpreter and importing numpy, SciPy or igraph, whatever the
// size: their recording stops at --limit, and the kernel itself runs natively, from
// the same driver, to show that it works with the packages installed here.

/// Runs the suite's driver natively as `role ARGS` (skipped with the recording when
/// the packages are missing).
fn run_driver(args: &[&str]) {
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/studies/real/driver.py");
    let o = Command::new("/usr/bin/python3").arg(driver).args(args).output().unwrap();
    assert!(o.status.success(), "driver.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(&format!("{}: ", args[0])), "{}", String::from_utf8_lossy(&o.stdout));
}

const PYTHON_LIMIT: [&str; 2] = ["--limit", "20M"];

#[test]
fn dgemm_multiplies() {
    if record_and_replay("dgemm", "1MiB", &PYTHON_LIMIT).is_some() {
        run_driver(&["dgemm", "1048576", "1"]);
    }
}

#[test]
fn lu_solves() {
    if record_and_replay("lu", "1MiB", &PYTHON_LIMIT).is_some() {
        run_driver(&["lu", "1048576", "1"]);
    }
}

#[test]
fn cg_iterates() {
    if record_and_replay("cg", "1MiB", &PYTHON_LIMIT).is_some() {
        run_driver(&["cg", "1048576", "1"]);
    }
}

#[test]
fn bfs_and_pagerank_on_a_kronecker_graph() {
    let dir = Scratch::new("suite-graph");
    if record_and_replay("bfs", "1MiB", &PYTHON_LIMIT).is_some() && record_and_replay("pagerank", "1MiB", &PYTHON_LIMIT).is_some() {
        let graph = dir.file("k.npy");
        run_driver(&["kronecker", &graph, "1048576", "1"]);
        run_driver(&["bfs", &graph, "1"]);
        run_driver(&["pagerank", &graph]);
    }
}

#[test]
fn the_list_gives_every_program_its_sizes_and_packages() {
    let o = tiersim(&["record", "--suite", "list"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<Vec<&str>> = text.lines().skip(1).filter(|l| !l.starts_with("record one:")).map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.len() >= 8, "{text}");
    for row in &rows {
        let (name, small, full) = (row[0], row[1], row[2]);
        let bytes = |s: &str| tiersim::units::Size::parse(s).unwrap().bytes();
        // The sizes: 1 GiB at full size, 4 GiB for key-value stores and graphs.
        let least = if matches!(name, "redis" | "memcached" | "bfs" | "pagerank") { 4u64 << 30 } else { 1 << 30 };
        assert!(bytes(small) < bytes(full) && bytes(full) >= least, "{name}: {small} {full}");
        assert!(row.iter().any(|w| w.starts_with("python3")), "{name}: its packages: {row:?}");
    }
}

#[test]
fn unknown_programs_and_sizes_are_one_line_errors() {
    let cases: [(&[&str], &str); 3] = [
        (&["record", "--suite", "nosuch"], "tiersim: --suite: unknown program `nosuch` (known: redis, memcached, sqlite3, xz, zstd, gcc"),
        (&["record", "--suite", "xz", "--size", "lots"], "tiersim: --size: `lots` is not a size"),
        (&["record", "--suite", "xz", "--size", "0"], "tiersim: --size: must be more than 0 bytes"),
    ];
    for (args, want) in cases {
        let o = tiersim(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
    // --size belongs to --suite, and --suite replaces a program: nothing is recorded.
    let dir = Scratch::new("suite-args");
    let out = dir.file("t.tsim");
    let o = tiersim(&["record", "--size", "1MiB", "--out", &out, "--", "/bin/true"]);
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "tiersim: --size: goes with --suite (the data of a suite program); a PROGRAM's size is its own");
    let o = tiersim(&["record", "--suite", "xz", "--out", &out, "--", "/bin/true"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("'--suite <NAME>' cannot be used with '[PROGRAM]...'"));
    assert!(!std::path::Path::new(&out).exists());
}
