//! What a user meets on the first day, through the binary: no command destroys its
//! input or leaves a damaged file under a final name, no damaged trace or partial
//! run passes for whole, and nothing given is ignored without a word (issue 20,
//! items 1–10). The README's tour is run, shrunk, in `tests/tour.rs`.

mod common;

use common::Scratch;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tiersim::progress::Progress;
use tiersim::trace::footprint::{measure, TenantPages};
use tiersim::trace::{open, Access, OpenOptions};

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn tiersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiersim")).args(args).output().unwrap()
}

/// A fresh, empty directory for one test, removed when it ends.
fn fresh_dir(name: &str) -> Scratch {
    Scratch::new(&format!("rel-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs a command that must fail on bad input: exit code 2, one line on stderr that
/// contains `needle`.
fn bad(args: &[&str], needle: &str) -> String {
    let out = tiersim(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line expected, got {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    err
}

fn ok(args: &[&str]) -> String {
    let out = tiersim(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The names in a directory (temporary files would show here).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    v.sort();
    v
}

/// Item 1: an output that is an input, under any name, is refused and the input
/// kept; an output is complete or absent.
#[test]
fn no_command_writes_over_its_input() {
    let dir = fresh_dir("same");
    let lk = dir.join("t.lk");
    std::fs::write(&lk, "I  04000000,3\n L 1ffefff8a0,8\n S 1ffefff8a8,8\n").unwrap();
    let tsim = dir.join("t.tsim");
    std::fs::copy(data("small.tsim"), &tsim).unwrap();
    std::os::unix::fs::symlink(&lk, dir.join("link.lk")).unwrap();
    let before = (std::fs::read(&lk).unwrap(), std::fs::read(&tsim).unwrap());
    let dot = format!("{}/./t.lk", dir.display());
    bad(&["convert", s(&lk), s(&lk)], "is the same file as the input");
    bad(&["convert", s(&tsim), s(&tsim)], "is the same file as the input");
    bad(&["convert", s(&lk), s(&dir.join("link.lk"))], "is the same file as the input");
    bad(&["convert", s(&lk), &dot], "is the same file as the input");
    bad(&["run", "--trace", s(&lk), "--json", s(&lk)], "--json");
    bad(&["run", "--trace", s(&tsim), "--csv", &format!("{}/./t.tsim", dir.display())], "--csv");
    bad(&["inspect", s(&tsim), "--json", s(&tsim)], "is the same file as the input");
    bad(&["run", "--json", s(&dir.join("r")), "--csv", s(&dir.join("r"))], "is the same file as --json");
    assert_eq!((std::fs::read(&lk).unwrap(), std::fs::read(&tsim).unwrap()), before);
    assert_eq!(listing(&dir), ["link.lk", "t.lk", "t.tsim"], "nothing else written");
    // A conversion that fails part way (a cut xz stream) leaves the old output and no
    // temporary file.
    let xz = std::fs::read(data("true.lk.xz")).unwrap();
    let cut = dir.join("cut.lk.xz");
    std::fs::write(&cut, &xz[..xz.len() / 2]).unwrap();
    let out_path = dir.join("out.tsim");
    std::fs::write(&out_path, "previous").unwrap();
    bad(&["convert", s(&cut), s(&out_path)], "truncated xz stream");
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "previous");
    assert_eq!(listing(&dir), ["cut.lk.xz", "link.lk", "out.tsim", "t.lk", "t.tsim"]);
    // A successful one replaces it whole.
    ok(&["convert", s(&lk), s(&out_path)]);
    assert_eq!(read_records(s(&out_path)).len(), 2);
}

fn read_records(path: &str) -> Vec<Access> {
    try_records(path).unwrap()
}

fn try_records(path: &str) -> anyhow::Result<Vec<Access>> {
    let mut o = open(path, &OpenOptions::default())?;
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    loop {
        buf.clear();
        o.source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            return Ok(all);
        }
        all.extend_from_slice(&buf);
    }
}

/// What a run learns from a trace: its footprint per tenant, its record count (as the
/// engine measures them first) and every record.
fn trace_result(path: &str) -> anyhow::Result<(Vec<TenantPages>, u64, Vec<Access>)> {
    let facts = measure(path, &OpenOptions::default(), None, &Progress::default())?;
    Ok((facts.tenants, facts.records, try_records(path)?))
}

/// Item 2: every single-byte change of a small native trace, bare and in each
/// compressed container, is an error or changes nothing that is read.
#[test]
fn every_flipped_byte_of_a_native_trace_is_an_error_or_harmless() {
    let dir = fresh_dir("flip");
    let want = trace_result(&data("small.tsim")).unwrap();
    assert_eq!(want.1, 165);
    assert_eq!(want.0, [TenantPages { tenant: 1, pages_4k: 5, pages_2m: 2 }]);
    for name in ["small.tsim", "small.tsim.gz", "small.tsim.xz", "small.tsim.zst"] {
        let bytes = std::fs::read(data(name)).unwrap();
        assert_eq!(trace_result(&data(name)).unwrap(), want, "{name} as checked in");
        let path = dir.join(name);
        let (mut errors, mut harmless) = (0, 0);
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= mask;
                std::fs::write(&path, &b).unwrap();
                match trace_result(s(&path)) {
                    Err(_) => errors += 1,
                    Ok(got) => {
                        assert_eq!(got, want, "{name}: byte {i} ^ {mask:#04x} read as a different trace");
                        harmless += 1;
                    }
                }
            }
        }
        assert!(errors > 2 * bytes.len(), "{name}: {errors} errors, {harmless} harmless");
    }
}

/// Item 2 through the binary: the issue's flipped page count in the trailer, a
/// flipped reserved byte of a version-1 header, and version 1 read with a note.
#[test]
fn damaged_native_header_or_trailer_stops_the_run() {
    let dir = fresh_dir("trailer");
    let bytes = std::fs::read(data("small.tsim")).unwrap();
    // The trailer's tail: offset (8), CRC-32 (4), end magic (8); the one tenant's
    // entry (tenant 2, 4 KiB pages 8, 2 MiB pages 8) ends just before it.
    let pages_4k = bytes.len() - 20 - 8 - 8;
    let path = dir.join("t.tsim");
    let mut b = bytes.clone();
    b[pages_4k] ^= 0xff;
    std::fs::write(&path, &b).unwrap();
    bad(&["run", "--trace", s(&path)], "corrupt trailer: checksum mismatch");
    let mut b = bytes.clone();
    b[10] ^= 0x04;
    std::fs::write(&path, &b).unwrap();
    bad(&["run", "--trace", s(&path)], "corrupt header");
    let old = std::fs::read(data("small-v1.tsim")).unwrap();
    let mut b = old.clone();
    b[13] = 1;
    std::fs::write(&path, &b).unwrap();
    bad(&["inspect", s(&path)], "reserved bytes 12-15 are not 0");
    // Version 1 has no checksum: a wrong page count in its trailer is caught when the
    // run has read the records and counted their pages.
    let mut b = old.clone();
    let v1_pages_4k = b.len() - 16 - 8 - 8;
    b[v1_pages_4k] ^= 0xff;
    std::fs::write(&path, &b).unwrap();
    bad(&["run", "--trace", s(&path)], "corrupt trailer: it counts 250 pages of 4 KiB in 2 regions of 2 MiB, the records touch 5 in 2");
    // Version 1 still reads, the same records, and says what it lacks.
    assert_eq!(read_records(&data("small-v1.tsim")), read_records(&data("small.tsim")));
    let json_path = dir.join("r.json");
    let out = tiersim(&["run", "--trace", &data("small-v1.tsim"), "--json", s(&json_path)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("native trace version 1, whose header and trailer carry no checksums"));
    assert!(json(&json_path)["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("version 1")));
    let out = tiersim(&["inspect", &data("small-v1.tsim")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("tiersim: note:"));
}

/// Item 3: an output that cannot be written fails before any simulation.
#[test]
fn unwritable_outputs_fail_before_the_run() {
    let dir = fresh_dir("unwritable");
    let long = ["run", "--workload", "gups", "--footprint", "64MiB", "--refs", "500000000"];
    let started = Instant::now();
    bad(&[&long[..], &["--json", "/proc/x.json"]].concat(), "--json /proc/x.json: cannot create a file in /proc");
    bad(&[&long[..], &["--csv", s(&dir)]].concat(), "is a directory");
    bad(&[&long[..], &["--json", s(&dir.join("no/such/r.json"))]].concat(), "does not exist");
    bad(&["compare", "--policies", "all-fast,all-slow", "--refs", "500000000", "--csv", "/proc/x.csv"], "--csv /proc/x.csv");
    bad(&["inspect", &data("true.tsim"), "--json", s(&dir)], "is a directory");
    // An existing read-only file in a writable folder is not replaced (even by root).
    let read_only = dir.join("ro.json");
    std::fs::write(&read_only, "old").unwrap();
    std::fs::set_permissions(&read_only, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    let says = format!("--json {}: the file is read-only; tiersim does not replace a file it may not write", s(&read_only));
    bad(&[&long[..], &["--json", s(&read_only)]].concat(), &says);
    assert_eq!(std::fs::read_to_string(&read_only).unwrap(), "old");
    assert!(started.elapsed() < Duration::from_secs(20), "the runs were not started: {:?}", started.elapsed());
}

/// Reads the child's standard error until a line contains `needle`; the rest of it
/// is read on in the background.
fn wait_for_line(child: &mut Child, needle: &str) -> std::thread::JoinHandle<String> {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen += &line;
        seen.push('\n');
        if line.contains(needle) {
            break;
        }
    }
    assert!(seen.contains(needle), "`{needle}` never came: {seen}");
    std::thread::spawn(move || lines.map(|l| l.unwrap() + "\n").collect())
}

fn sigint(child: &Child) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// Waits for the child to end (at most a minute) and returns its exit code.
fn exit_code(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within a minute of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Item 4: the first Ctrl-C ends the run at an epoch boundary with the report so
/// far in every output, marked incomplete, exit code 130; a second ends it at once.
#[test]
fn ctrl_c_writes_the_partial_report_and_a_second_aborts() {
    let dir = fresh_dir("sigint");
    let (json_path, csv_path) = (dir.join("r.json"), dir.join("r.csv"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiersim"))
        .args(["run", "--workload", "zipf", "--footprint", "64MiB", "--refs", "2000000000", "--progress"])
        .args(["--set", "engine.epoch_cycles=2000000", "--json", s(&json_path), "--csv", s(&csv_path)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rest = wait_for_line(&mut child, "tiersim: simulation");
    std::thread::sleep(Duration::from_millis(300));
    sigint(&child);
    assert_eq!(exit_code(&mut child), Some(130));
    let err = rest.join().unwrap();
    assert!(err.contains("stopping at the next epoch boundary"), "{err}");
    assert!(err.contains("interrupted: the reports cover the first"), "{err}");
    let v = json(&json_path);
    assert_eq!(v["complete"], false);
    let refs = v["summary"]["references"].as_u64().unwrap();
    assert!(refs > 0 && refs < 2_000_000_000, "{refs}");
    let epoch_refs: u64 = v["epochs"].as_array().unwrap().iter().map(|e| e["references"].as_u64().unwrap()).sum();
    assert_eq!(epoch_refs, refs, "the time series covers the references simulated");
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert!(csv.lines().nth(1).unwrap().ends_with(",false"), "{csv}");
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(stdout.starts_with("INCOMPLETE        interrupted after"), "{stdout}");

    // Epochs too long to reach: the second Ctrl-C ends the run, writing nothing.
    let json2 = dir.join("r2.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiersim"))
        .args(["run", "--workload", "zipf", "--footprint", "64MiB", "--refs", "2000000000", "--progress"])
        .args(["--set", "engine.epoch_cycles=1000000000000000", "--json", s(&json2)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rest = wait_for_line(&mut child, "tiersim: simulation");
    sigint(&child);
    std::thread::sleep(Duration::from_millis(300));
    sigint(&child);
    assert_eq!(exit_code(&mut child), Some(130));
    drop(rest);
    assert_eq!(listing(&dir), ["r.csv", "r.json"], "no output and no temporary file from the aborted run");

    // SIGTERM ends the run at once, also leaving no temporary file.
    let json3 = dir.join("r3.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiersim"))
        .args(["run", "--workload", "zipf", "--footprint", "64MiB", "--refs", "2000000000", "--progress", "--json", s(&json3)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rest = wait_for_line(&mut child, "tiersim: simulation");
    assert_eq!(listing(&dir).len(), 3, "the temporary file is there while the run goes on: {:?}", listing(&dir));
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(exit_code(&mut child), Some(128 + libc::SIGTERM));
    drop(rest);
    assert_eq!(listing(&dir), ["r.csv", "r.json"], "no output and no temporary file after SIGTERM");
}

/// Item 5: phases on standard error with `--progress`; setup and whole-command wall
/// times in the JSON and the summary.
#[test]
fn progress_names_its_phases_and_the_report_times_the_setup() {
    let dir = fresh_dir("progress");
    let json_path = dir.join("r.json");
    let out = tiersim(&["run", "--workload", "graph-bfs", "--footprint", "16MiB", "--refs", "100000", "--progress", "--json", s(&json_path)]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for phase in ["tiersim: setup", "tiersim: simulation", "tiersim: finished in"] {
        assert!(err.contains(phase), "`{phase}` missing:\n{err}");
    }
    let v = json(&json_path);
    let sim = &v["sim"];
    let (setup, wall, whole) = (sim["setup_seconds"].as_f64().unwrap(), sim["wall_seconds"].as_f64().unwrap(), sim["command_seconds"].as_f64().unwrap());
    assert!(setup > 0.0 && whole >= setup + wall, "{sim}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("s setup; "));
    // A text trace is measured first: its pass is a phase of its own.
    let lk = dir.join("t.lk");
    std::fs::write(&lk, "I  04000000,3\n L 1ffefff8a0,8\n").unwrap();
    let out = tiersim(&["run", "--trace", s(&lk), "--progress"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("tiersim: footprint pass over {}", lk.display())));
    // Without --progress and without a terminal, nothing.
    let out = tiersim(&["run", "--workload", "zipf", "--footprint", "16MiB", "--refs", "1000"]);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Item 6: `--refs` cuts traces; options that only make sense for a synthetic
/// workload are refused with `--trace`.
#[test]
fn refs_replays_the_start_of_traces_and_workload_options_conflict_with_them() {
    let dir = fresh_dir("refs");
    let json_path = dir.join("r.json");
    let t = data("true.tsim");
    ok(&["run", "--trace", &t, "--trace", &t, "--refs", "1000", "--json", s(&json_path)]);
    let v = json(&json_path);
    assert_eq!(v["summary"]["references"], 2000);
    assert!(v["cores"].as_array().unwrap().iter().all(|c| c["references"] == 1000));
    // The footprint is that of the first 1000 records, not of the whole trace.
    let first = measure(&t, &OpenOptions::default(), Some(1000), &Progress::default()).unwrap();
    let whole = measure(&t, &OpenOptions::default(), None, &Progress::default()).unwrap();
    assert_eq!(v["footprint_bytes"].as_u64().unwrap(), 2 * first.tenants[0].pages_4k * 4096);
    assert!(first.tenants[0].pages_4k < whole.tenants[0].pages_4k);
    assert_eq!(v["workloads"][0]["trace"]["refs"], 1000);
    bad(&["run", "--trace", &t, "--footprint", "1GiB"], "--footprint: cannot be combined with --trace");
    bad(&["run", "--trace", &t, "--workload", "gups"], "--workload: cannot be combined with --trace");
    bad(&["run", "--trace", &t, "--set", "workload.refs=5"], "--set workload.refs=5: cannot be combined with --trace");
    bad(&["run", "--trace", &t, "--refs", "0"], "--refs: must be at least 1");
}

/// Item 7: all-slow never puts a page in the fast tier: a slow tier too small is
/// an error naming the capacity needed.
#[test]
fn all_slow_needs_a_slow_tier_that_holds_the_footprint() {
    let dir = fresh_dir("allslow");
    bad(
        &["run", "--policy", "all-slow", "--footprint", "64MiB", "--set", "machine.tiers.slow.capacity=\"32MiB\""],
        "set machine.tiers.slow.capacity to at least \"64MiB\"",
    );
    let json_path = dir.join("r.json");
    ok(&["run", "--policy", "all-slow", "--footprint", "64MiB", "--refs", "100000", "--set", "machine.tiers.slow.capacity=\"64MiB\"", "--json", s(&json_path)]);
    let v = json(&json_path);
    assert_eq!(v["tiers"][0]["data_frames"], 0, "the fast tier holds page tables only");
}

/// Item 8: capacities rounded to whole huge pages, or grown for all-fast, say so
/// in the summary and in the report's config.
#[test]
fn capacity_roundings_are_stated() {
    let dir = fresh_dir("rounding");
    let json_path = dir.join("r.json");
    let text = ok(&["run", "--trace", &data("true.tsim"), "--set", "machine.tiers.fast.capacity=\"25%\"", "--json", s(&json_path)]);
    assert!(text.contains("note              machine.tiers.fast.capacity: \"25%\" of the 308.0 KiB footprint is 77.0 KiB; rounded up to 2.00 MiB"), "{text}");
    let v = json(&json_path);
    let fast = &v["config"]["machine"]["tiers"]["fast"];
    assert_eq!(fast["capacity"], "25%");
    assert_eq!(fast["resolved_capacity_bytes"], 2 << 20);
    assert!(fast["capacity_note"].as_str().unwrap().contains("rounded up to 2.00 MiB"));
    assert!(v["notes"].as_array().unwrap().len() >= 2, "fast and slow tier");
    let text = ok(&["run", "--policy", "all-fast", "--footprint", "64MiB", "--refs", "1000", "--set", "machine.tiers.fast.capacity=\"16MiB\""]);
    assert!(
        text.contains("grown to 130.00 MiB to hold the whole footprint (policy all-fast): the 64.00 MiB footprint and 66.00 MiB of room for its page tables (1/128 of the footprint plus 64 MiB, rounded up to whole 2MiB huge pages)"),
        "{text}"
    );
}

/// Item 9: a paper's preset runs its paper's policy and the summary says which.
#[test]
fn paper_presets_run_and_name_their_policy() {
    let text = ok(&["run", "--preset", "rainbow", "--workload", "gups", "--footprint", "64MiB", "--refs", "20000"]);
    assert!(text.starts_with("policy            rainbow (preset rainbow)\n"), "{text}");
    let text = ok(&["run", "--preset", "rainbow", "--policy", "first-touch", "--footprint", "64MiB", "--refs", "20000"]);
    assert!(text.starts_with("policy            first-touch (preset rainbow)\n"), "{text}");
    let list = ok(&["policies"]);
    for (preset, policy) in [("rainbow", "rainbow"), ("thermostat", "thermostat"), ("thermostat-emulated", "thermostat"), ("cxl", "first-touch")] {
        let line = list.lines().find(|l| l.trim_start().starts_with(&format!("{preset} "))).unwrap();
        assert!(line.ends_with(&format!("; policy {policy}")), "{line}");
    }
}

/// Item 10: messages name the option and the file once, say what is wrong, and
/// figures do not contradict each other.
#[test]
fn messages_name_the_option_and_say_what_is_wrong() {
    let dir = fresh_dir("messages");
    bad(&["run", "--refs", "-1"], "--refs: must not be negative, got -1");
    bad(&["run", "--footprint", "-1GiB"], "--footprint: must not be negative, got -1GiB");
    bad(&["run", "--seed", "-3"], "--seed: must not be negative");
    bad(&["inspect", &data("small.tsim"), "--interval", "-5"], "'--interval <INTERVAL>'");
    let empty = dir.join("empty.lk");
    std::fs::write(&empty, "").unwrap();
    bad(&["run", "--trace", s(&empty), "--format", "lackey"], "the trace is empty");
    let gz = dir.join("five.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 0x08, 0x00, 0x00]).unwrap();
    let err = bad(&["run", "--trace", s(&gz)], "truncated gzip stream");
    assert_eq!(err.matches("five.gz").count(), 1, "{err}");
    let xz = dir.join("five.xz");
    std::fs::write(&xz, [0xfd, b'7', b'z', b'X', b'Z']).unwrap();
    bad(&["inspect", s(&xz)], "five.xz: truncated xz stream");
    // Every kind of page move is counted, with the bytes it copied.
    let json_path = dir.join("t.json");
    let args = ["run", "--preset", "thermostat", "--workload", "hotspot", "--footprint", "64MiB", "--refs", "2000000"];
    let sets = ["--set", "workload.hotspot.hot_refs=0.99", "--set", "workload.hotspot.hot_size=0.1", "--set", "policy.thermostat.periods_per_run=4"];
    let text = ok(&[&args[..], &sets, &["--set", "policy.thermostat.sample_fraction=0.25", "--json", s(&json_path)]].concat());
    let sum = &json(&json_path)["summary"];
    let n = |k: &str| sum[k].as_u64().unwrap();
    assert!(n("merge_copies") > 0, "{sum}");
    assert_eq!(n("page_moves"), n("migrations") + n("merge_copies"));
    assert_eq!(n("moved_bytes"), n("migrated_bytes") + n("merge_copied_bytes"));
    let line = text.lines().find(|l| l.starts_with("page moves")).unwrap();
    assert!(line.starts_with(&format!("page moves        {} (", n("page_moves"))), "{line}");
    assert!(line.contains(&format!("{} huge pages merged from copied base pages", n("merge_copies"))), "{line}");
    // Lifetimes in plain decimals.
    let life = text.lines().find_map(|l| l.split(", lifetime ").nth(1)).expect("the slow tier wears");
    let years = life.strip_suffix(" years").unwrap();
    assert!(years.parse::<f64>().is_ok() && !years.contains('e'), "{life}");
    // The policy list lines up its columns.
    let list = ok(&["policies"]);
    let description_at = |l: &str| {
        let name_end = 2 + l[2..].find(' ').unwrap();
        name_end + l[name_end..].find(|c| c != ' ').unwrap()
    };
    let columns: Vec<usize> = list
        .lines()
        .skip_while(|l| !l.starts_with("Presets"))
        .take_while(|l| !l.starts_with("Trace formats"))
        .filter(|l| l.starts_with("  "))
        .map(description_at)
        .collect();
    assert!(columns.len() > 10 && columns.iter().all(|&c| c == columns[0]), "{columns:?}\n{list}");
    // Sizes are binary, and --help says so.
    let help = ok(&["run", "--help"]);
    assert!(help.contains("Sizes are binary everywhere: 1KB = 1KiB = 1024 bytes, 1GB = 1GiB"), "{help}");
}

/// Issue 39 §4: the same trace replayed by two cores of one tenant touches the same
/// pages there, so the footprint (and a share such as "25%" of it) counts them once,
/// and a note says so; in two tenants it is the sum, and the summary says so.
#[test]
fn a_trace_replayed_twice_in_one_tenant_counts_its_pages_once() {
    let dir = fresh_dir("twice");
    let t = data("true.tsim");
    let (one, same, apart) = (dir.join("one.json"), dir.join("same.json"), dir.join("apart.json"));
    let quarter = "machine.tiers.fast.capacity=\"25%\"";
    ok(&["run", "--trace", &t, "--set", quarter, "--json", s(&one)]);
    let text = ok(&["run", "--trace", &t, "--trace", &t, "--tenant", "0", "--tenant", "0", "--set", quarter, "--json", s(&same)]);
    let bytes = json(&one)["footprint_bytes"].as_u64().unwrap();
    assert_eq!(json(&same)["footprint_bytes"].as_u64().unwrap(), bytes);
    assert!(text.contains("\"25%\" of the 308.0 KiB footprint is 77.0 KiB"), "{text}");
    let note = format!("trace {t} is replayed by cores 0, 1 in one address space (tenant 0): its pages count once in the footprint");
    assert!(text.contains(&format!("note              {note}\n")), "{text}");
    assert!(json(&same)["notes"].as_array().unwrap().iter().any(|n| n == &note.as_str()));
    let text = ok(&["run", "--trace", &t, "--trace", &t, "--set", quarter, "--json", s(&apart)]);
    assert_eq!(json(&apart)["footprint_bytes"].as_u64().unwrap(), 2 * bytes);
    assert!(text.contains("footprint         0.60 MiB measured from the traces, the sum of 2 tenants' address spaces\n"), "{text}");
    assert!(!text.contains("count once"), "{text}");
}

/// Issue 39 §4: a footprint larger than all tiers is refused before the workloads are
/// built (a mix of 16 programs waited 96 s to be told), naming the footprint, the
/// tiers' total and the capacities to raise; all-slow still names its own need.
#[test]
fn a_footprint_larger_than_the_tiers_is_refused_before_the_workloads_are_built() {
    let mix = "graph-bfs,pagerank,kv,spmv-cg,graph-bfs,pagerank,kv,spmv-cg";
    let tiers = ["--set", "machine.tiers.fast.capacity=\"64MiB\"", "--set", "machine.tiers.slow.capacity=\"512MiB\""];
    let started = Instant::now();
    let err = bad(&[&["run", "--mix", mix, "--footprint", "1GiB", "--refs", "1000"][..], &tiers].concat(), "is larger than all tiers together (576MiB); raise machine.tiers.fast.capacity or machine.tiers.slow.capacity (together they lack ");
    assert!(started.elapsed() < Duration::from_secs(1), "refused after {:?}: {err}", started.elapsed());
    assert!(err.starts_with("tiersim: machine.tiers: the footprint ("), "{err}");
    bad(&[&["run", "--policy", "all-slow", "--mix", mix, "--footprint", "1GiB"][..], &tiers].concat(), "policy all-slow: the footprint");
}

/// Issue 39 §4: `--refs` beyond a trace's length replays it once, to its end, and
/// says so in every mode.
#[test]
fn refs_beyond_a_trace_are_noted_in_every_mode() {
    let dir = fresh_dir("short");
    let t = data("true.tsim");
    let json_path = dir.join("r.json");
    let note = format!("--refs 100000: trace {t} holds only 41315 references; core 0 replayed it once, to its end, and stopped there (a trace is not repeated)");
    for mode in ["detailed", "sampled", "epochs"] {
        let text = ok(&["run", "--trace", &t, "--refs", "100000", "--mode", mode, "--json", s(&json_path)]);
        assert!(text.contains(&format!("note              {note}\n")), "{mode}: {text}");
        let v = json(&json_path);
        assert_eq!(v["summary"]["references"], 41315, "{mode}");
        assert!(v["notes"].as_array().unwrap().iter().any(|n| n == &note.as_str()), "{mode}");
        let text = ok(&["run", "--trace", &t, "--refs", "41315", "--mode", mode]);
        assert!(!text.contains("holds only"), "{mode}: {text}");
    }
}

/// Issue 39 §4: a text trace's address beyond the page tables is reported by file and
/// line (it was by record number), also with --skip-malformed; 5-level page tables
/// take it.
#[test]
fn an_address_beyond_the_page_tables_names_the_line() {
    let dir = fresh_dir("reach");
    let lk = dir.join("big.lk");
    std::fs::write(&lk, "I  04000000,3\n L 1ffefff8a0,8\nI  04000003,3\n S 1000000000000,8\n").unwrap();
    let says = format!(
        "tiersim: {}:4: address 0x1000000000000 is beyond the 48-bit virtual address space of 4-level page tables; rerun with --set machine.page_table.levels=5 ( S 1000000000000,8)",
        s(&lk)
    );
    assert_eq!(bad(&["run", "--trace", s(&lk)], &says).trim_end(), says);
    bad(&["run", "--trace", s(&lk), "--skip-malformed"], &says);
    let pin = dir.join("big.out");
    std::fs::write(&pin, "0x40: R 0x1000\n0x44: W 0x2000000000000\n#eof\n").unwrap();
    bad(&["run", "--trace", s(&pin)], &format!("{}:2: address 0x2000000000000 is beyond the 48-bit", s(&pin)));
    let ram = dir.join("big.ram");
    std::fs::write(&ram, "LD 0x1000\nST 0x1000\nLD 0xfff000000000\nST 0x1000000000040\n").unwrap();
    bad(&["run", "--trace", s(&ram), "--format", "ramulator2"], &format!("{}:4: address 0x1000000000040 is beyond", s(&ram)));
    ok(&["run", "--trace", s(&lk), "--set", "machine.page_table.levels=5"]);
}
