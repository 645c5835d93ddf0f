//! `tiersim sweep`: the store holds exactly the runs `tiersim run` would make, a
//! sweep killed at any moment finishes with nothing lost or duplicated, failures are
//! recorded without stopping the others, and bad input stops it before any run.

mod common;

use common::{tiersim, Scratch};
use rusqlite::Connection;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The options of every small sweep here.
const BASE: &[&str] = &["--workload", "kv", "--footprint", "32MiB", "--refs", "300000"];

fn sweep(db: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["sweep", "--db", db];
    args.extend_from_slice(BASE);
    args.extend_from_slice(extra);
    tiersim(&args)
}

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// (status, options, finished) of every row of `db`, by key.
fn rows(db: &str) -> Vec<(String, String, String, f64)> {
    let c = Connection::open(db).unwrap();
    let mut s = c.prepare("SELECT key, status, options, finished FROM runs ORDER BY seq").unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(Result::unwrap).collect()
}

/// A report without the figures that depend on wall time or on the command.
fn comparable(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("sim");
    v
}

#[test]
fn a_sweep_stores_what_run_reports() {
    let dir = Scratch::new("sweep");
    let db = dir.file("same.db");
    let out = sweep(&db, &["--axis", "policy=first-touch,tpp", "--axis", "seed=1,2", "-j", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("4 runs in"), "{}", text(&out));
    let c = Connection::open(&db).unwrap();
    let (policy, seed, report): (String, String, String) =
        c.query_row("SELECT policy, seed, report FROM runs WHERE policy = 'tpp' AND seed = '2'", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    assert_eq!((policy.as_str(), seed.as_str()), ("tpp", "2"));
    let json = dir.file("tpp-2.json");
    let mut args = BASE.to_vec();
    args.extend(["--policy", "tpp", "--seed", "2", "--json", &json]);
    let run = tiersim(&[&["run"], args.as_slice()].concat());
    assert!(run.status.success(), "{}", text(&run));
    let alone: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let stored: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(comparable(stored.clone()), comparable(alone), "the stored report is the run's");
    // The summary columns are the report's summary.
    let (cycles, ipc): (i64, f64) = c.query_row("SELECT cycles, ipc FROM runs WHERE policy = 'tpp' AND seed = '2'", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!(cycles as u64, stored["summary"]["cycles"].as_u64().unwrap());
    assert_eq!(ipc, stored["summary"]["ipc"].as_f64().unwrap());
    // Run again: nothing to do.
    let again = sweep(&db, &["--axis", "policy=first-touch,tpp", "--axis", "seed=1,2"]);
    assert!(text(&again).contains("4 already there, 0 run now"), "{}", text(&again));
    // One job or two: the same figures.
    let db1 = dir.file("one-job.db");
    assert!(sweep(&db1, &["--axis", "policy=first-touch,tpp", "--axis", "seed=1,2", "-j", "1"]).status.success());
    let summaries = |db: &str| -> Vec<(String, Value)> {
        let c = Connection::open(db).unwrap();
        let mut s = c.prepare("SELECT key, report FROM runs ORDER BY key").unwrap();
        s.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .unwrap()
            .map(|r| {
                let (k, rep) = r.unwrap();
                (k, comparable(serde_json::from_str(&rep).unwrap()))
            })
            .collect()
    };
    assert_eq!(summaries(&db), summaries(&db1));
}

#[test]
fn a_killed_sweep_finishes_with_nothing_lost_or_twice() {
    let dir = Scratch::new("sweep");
    let db = dir.file("killed.db");
    let args: Vec<String> = ["sweep", "--db", &db, "-j", "1", "--workload", "kv", "--footprint", "32MiB", "--refs", "1500000", "--axis", "policy=first-touch,tpp,lru,kstaled,nimble,all-fast"]
        .map(String::from)
        .to_vec();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiersim")).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Kill it as soon as the first run is in the store.
    let started = Instant::now();
    loop {
        let done = Connection::open(&db).ok().and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0)).ok()).unwrap_or(0);
        if done >= 1 || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = rows(&db);
    assert!(!before.is_empty() && before.len() < 6, "killed after {} of 6 runs", before.len());
    let out = Command::new(env!("CARGO_BIN_EXE_tiersim")).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&format!("{} already there, {} run now", before.len(), 6 - before.len())), "{}", text(&out));
    let after = rows(&db);
    assert_eq!(after.len(), 6);
    assert!(after.iter().all(|r| r.1 == "ok"));
    for b in &before {
        assert!(after.contains(b), "a run finished before the kill is kept as it was: {b:?}");
    }
}

#[test]
fn a_failed_run_is_recorded_and_the_others_go_on() {
    let dir = Scratch::new("sweep");
    let db = dir.file("failed.db");
    // 4 GiB of kv does not fit 1 GiB + 256 MiB of tiers: that run fails at set-up.
    let args = |more: &[&'static str]| -> Vec<&str> {
        let mut a = vec!["sweep", "--db", &db, "--workload", "kv", "--refs", "300000", "--set", "machine.tiers.slow.capacity=1GiB", "--set", "machine.tiers.fast.capacity=256MiB"];
        a.extend(["--axis", "footprint=32MiB,4GiB", "--axis", "policy=first-touch,tpp"]);
        a.extend_from_slice(more);
        a
    };
    let out = tiersim(&args(&[]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("2 of 4 runs failed"), "{}", text(&out));
    let c = Connection::open(&db).unwrap();
    let failed: Vec<(String, String)> = c
        .prepare("SELECT footprint, error FROM runs WHERE status = 'failed'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|(f, e)| f == "4GiB" && e.contains("larger than all tiers")), "{failed:?}");
    let ok: i64 = c.query_row("SELECT count(*) FROM runs WHERE status = 'ok' AND report IS NOT NULL", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, 2);
    let list = tiersim(&args(&["--list"]));
    assert!(text(&list).contains("4 runs: 2 done, 2 failed, 0 to run"), "{}", text(&list));
}

#[test]
fn bad_input_stops_the_sweep_before_any_run() {
    let dir = Scratch::new("sweep");
    let db = dir.file("bad.db");
    for (axis, says) in [
        ("polcy=tpp", "`polcy` is not a run option"),
        ("policy=tpp,nope", "unknown policy `nope`"),
        ("machine.tiers.fast.nope=1,2", "machine.tiers.fast.nope: unknown field"),
    ] {
        let out = sweep(&db, &["--axis", axis]);
        assert_eq!(out.status.code(), Some(2), "{axis}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{axis}: {err}");
        assert!(!std::path::Path::new(&db).exists(), "no store is made for a bad spec");
    }
    let spec = dir.file("bad.toml");
    std::fs::write(&spec, "[run]\nworkload = \"kv\"\n[axes]\npolicy = [\"tpp\"]\nruns = 3\n").unwrap();
    let out = tiersim(&["sweep", &spec]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml: axes.runs: `runs` is not a run option"), "{}", text(&out));
    // A database of another schema, or a file that is not a store.
    let old = dir.file("old.db");
    assert!(sweep(&old, &["--axis", "policy=first-touch"]).status.success());
    Connection::open(&old).unwrap().execute("UPDATE meta SET value = '999' WHERE key = 'schema'", []).unwrap();
    let out = sweep(&old, &["--axis", "policy=first-touch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("store schema 999; this tiersim"), "{}", text(&out));
    let junk = dir.file("junk.db");
    std::fs::write(&junk, "not a database at all, just text that is long enough to have a header").unwrap();
    let out = sweep(&junk, &["--axis", "policy=first-touch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.db: not a SQLite database"), "{}", text(&out));
    let out = tiersim(&["sweep", "--axis", "policy=tpp"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db: needed"), "{}", text(&out));
    // Each fails in one line naming the place, and makes no store.
    let missing = dir.file("missing.lk");
    let cases = [
        ("[run]\nworkload = \"kv\"\n[axes\nseed = [1]\n".to_string(), "bad.toml:3:6: invalid table header".to_string()),
        ("[run]\nworkload = \"kv\"\n[axes]\npolicy = [\"tpp\", \"tpp\"]\n".into(), "bad.toml: axes.policy: values 1 and 2 are both `tpp`; give each value once".into()),
        ("[run]\nworkload = \"kv\"\n[axes]\nseed = [1, \"1\"]\n".into(), "bad.toml: axes.seed: values 1 and 2 are both `1`".into()),
        ("[run]\nworkload = \"kv\"\nrefs = -1\n[axes]\nseed = [1]\n".into(), "bad.toml: run: `refs` must not be negative, got -1".into()),
        (format!("[run]\ntrace = \"{missing}\"\n[axes]\npolicy = [\"tpp\"]\n"), format!("run policy=tpp: trace {missing}: cannot open: No such file or directory")),
    ];
    let store = dir.file("bad.db");
    for (toml, says) in cases {
        std::fs::write(&spec, &toml).unwrap();
        let out = tiersim(&["sweep", &spec]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{toml}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(&says), "{toml}: `{says}` not in {err}");
        assert!(!std::path::Path::new(&store).exists(), "no store is made for {toml}");
    }
}

#[test]
fn a_sweep_of_the_same_name_from_another_spec_is_refused() {
    let dir = Scratch::new("sweep");
    let db = dir.file("s.db");
    let run = |refs: &str, seeds: &str| {
        tiersim(&["sweep", "--db", &db, "--name", "s", "--workload", "kv", "--footprint", "8MiB", "--refs", refs, "--axis", &format!("seed={seeds}")])
    };
    assert!(run("30000", "1").status.success());
    let out = run("20000", "1");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("tiersim: sweep s: {db} already holds this sweep from a different spec (refs 30000 → 20000), and this grid leaves out 1 of its stored runs; give the sweep a new name (`name =` or --name) or use another store (--db)\n")
    );
    assert_eq!(rows(&db).len(), 1, "nothing was added");
    // More seeds extend the sweep; fewer would leave one out.
    let out = run("30000", "1,2");
    assert!(text(&out).contains("2 runs in") && text(&out).contains("1 already there, 1 run now"), "{}", text(&out));
    let out = run("30000", "2");
    assert!(String::from_utf8_lossy(&out.stderr).contains("(axis seed [1, 2] → [2])"), "{}", text(&out));
}

#[test]
fn a_spec_file_and_flags_make_the_same_runs() {
    let dir = Scratch::new("sweep");
    let spec = dir.file("study.toml");
    std::fs::write(
        &spec,
        "baseline = \"first-touch\"\n[run]\nworkload = \"kv\"\nfootprint = \"32MiB\"\nrefs = 300000\n[axes]\npolicy = [\"first-touch\", \"tpp\"]\n'machine.tiers.fast.capacity' = [\"25%\", \"50%\"]\n",
    )
    .unwrap();
    let out = tiersim(&["sweep", &spec]);
    assert!(out.status.success(), "{}", text(&out));
    let db = spec.replace(".toml", ".db");
    assert_eq!(rows(&db).len(), 4, "the store is the spec's path with .db");
    // The same grid from flags is found done.
    let out = tiersim(&["sweep", "--name", "study", "--db", &db, "--workload", "kv", "--footprint", "32MiB", "--refs", "300000", "--axis", "policy=first-touch,tpp", "--axis", "machine.tiers.fast.capacity=25%,50%"]);
    assert!(text(&out).contains("4 already there, 0 run now"), "{}", text(&out));
    let c = Connection::open(&db).unwrap();
    let (spec_text, axes): (String, String) = c.query_row("SELECT spec, axes FROM sweeps WHERE name = 'study'", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!(axes, r#"["policy","machine.tiers.fast.capacity"]"#);
    assert!(spec_text.contains("\"machine.tiers.fast.capacity\" = [\"25%\", \"50%\"]"), "{spec_text}");
}

#[test]
fn a_store_becomes_one_html_page() {
    let dir = Scratch::new("sweep");
    let db = dir.file("page.db");
    assert!(sweep(&db, &["--name", "kv-policies", "--axis", "policy=first-touch,tpp", "--axis", "seed=1,2"]).status.success());
    let page = dir.file("page.html");
    let out = tiersim(&["report", &db, "-o", &page]);
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2>Sweep kv-policies</h2>") && html.contains("4 runs over the axes policy, seed; 0 failed"), "{}", &html[..html.len().min(3000)]);
    assert_eq!(html.matches("<svg").count(), 10, "one panel per summary figure");
    let out = tiersim(&["report", &db, "--sweep", "nope", "-o", &page]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sweep named nope (it has: kv-policies)"), "{}", text(&out));
    let empty = dir.file("empty.db");
    Connection::open(&empty).unwrap().execute("CREATE TABLE t (x)", []).unwrap();
    let out = tiersim(&["report", &empty, "-o", &page]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty.db: not a tiersim sweep store"), "{}", text(&out));
}

/// A run in which the policy never acted (memos' first period, 25 ms here, comes
/// after the run's 2 ms) is named by the sweep, by `--list` and on the report page.
#[test]
fn runs_in_which_the_policy_never_acted_are_named() {
    let dir = Scratch::new("sweep");
    let db = dir.file("idle.db");
    let args = ["--name", "idle", "--axis", "policy=first-touch,memos", "--set", "policy.memos.passes_per_run=0"];
    let out = sweep(&db, &args);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("runs in which the policy never acted: 1 (their figures are the initial placement's)\n  never acted: policy=memos: policy memos never acted: its first period"), "{}", text(&out));
    let listed = text(&sweep(&db, &[&args[..], &["--list"]].concat()));
    assert!(listed.contains("done    policy=memos  (the policy never acted)") && !listed.contains("policy=first-touch  (the"), "{listed}");
    let page = dir.file("idle.html");
    assert!(tiersim(&["report", &db, "-o", &page]).status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("finished; the policy never acted").count(), 1);
    assert!(html.contains("Runs in which the policy never acted</h3>") && html.contains("policy memos never acted: its first period"));
}

/// The number before `word` in a sweep's summary line (`… 3 run now …`).
fn count_before(out: &str, word: &str) -> usize {
    let at = out.find(word).unwrap_or_else(|| panic!("`{word}` not in {out}"));
    out[..at].trim_end().rsplit(' ').next().unwrap().parse().unwrap()
}

/// Issue 39 §4: three sweeps of one spec started at once on a new store all make or
/// find the store, share the runs out through their claims (each run simulated once:
/// the runs each did add up to the grid) and end with the whole grid stored.
#[test]
fn sweeps_started_at_once_share_the_runs() {
    let dir = Scratch::new("sweep");
    let db = dir.file("together.db");
    let mut args = vec!["sweep", "--db", &db, "-j", "1"];
    args.extend_from_slice(BASE);
    args.extend(["--axis", "policy=first-touch,tpp,lru", "--axis", "seed=1,2"]);
    let children: Vec<_> = (0..3).map(|_| Command::new(env!("CARGO_BIN_EXE_tiersim")).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let mut simulated = 0;
    for out in &outs {
        assert!(out.status.success(), "{}", text(out));
        simulated += count_before(&text(out), "run now");
    }
    assert_eq!(simulated, 6, "each run simulated once: {:?}", outs.iter().map(text).collect::<Vec<_>>());
    let stored = rows(&db);
    assert_eq!(stored.len(), 6);
    assert!(stored.iter().all(|r| r.1 == "ok"));
    let claims: i64 = Connection::open(&db).unwrap().query_row("SELECT count(*) FROM claims", [], |r| r.get(0)).unwrap();
    assert_eq!(claims, 0, "every claim released");
}

/// This machine's host name, as the store's claims carry it.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into the buffer.
    assert_eq!(unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) }, 0);
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap()]).into_owned()
}

/// Issue 39 §4: a run claimed by a process that is gone, or by one that has not beaten
/// for a minute, is simulated; one claimed by a live sweep is waited for, and found
/// done when that sweep records it.
#[test]
fn claims_of_gone_sweeps_are_taken_over_and_live_ones_waited_for() {
    let dir = Scratch::new("sweep");
    let db = dir.file("claims.db");
    let axes = ["--axis", "policy=first-touch,tpp"];
    assert!(sweep(&db, &axes).status.success());
    let c = Connection::open(&db).unwrap();
    let key: String = c.query_row("SELECT key FROM runs WHERE policy = 'tpp'", [], |r| r.get(0)).unwrap();
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let claim = |pid: u32, beat: f64| {
        c.execute("DELETE FROM runs WHERE key = ?1", [&key]).unwrap();
        c.execute("INSERT INTO claims VALUES ('sweep', ?1, ?2, ?3, ?4)", rusqlite::params![key, host_name(), pid, beat]).unwrap();
    };
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    for (pid, beat) in [(gone.id(), now()), (std::process::id(), now() - 120.0)] {
        claim(pid, beat);
        let out = sweep(&db, &axes);
        assert!(text(&out).contains("1 already there, 1 run now (0 failed) in"), "pid {pid}: {}", text(&out));
    }
    // A live claim: the sweep waits, and finds the run done when its holder records it.
    c.execute("CREATE TABLE held AS SELECT * FROM runs WHERE key = ?1", [&key]).unwrap();
    claim(std::process::id(), now());
    let mut args = vec!["sweep".to_string(), "--db".into(), db.clone()];
    args.extend(BASE.iter().chain(&axes).map(|s| s.to_string()));
    let child = Command::new(env!("CARGO_BIN_EXE_tiersim")).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    c.execute("INSERT INTO runs SELECT * FROM held", []).unwrap();
    c.execute("UPDATE runs SET finished = ?1 WHERE key = ?2", rusqlite::params![now(), key]).unwrap();
    c.execute("DELETE FROM claims", []).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("1 already there, 0 run now (0 failed), 1 by another sweep at the same time (0 failed) in"), "{}", text(&out));
}

/// A store keeps the runs another build of tiersim simulated, but says so: their
/// number and commits on the sweep's summary and in `--list`; `--rerun-other-builds`
/// simulates them again, after which they carry this build's commit.
#[test]
fn runs_of_another_build_are_named_and_run_again_on_request() {
    let dir = Scratch::new("sweep");
    let db = dir.file("builds.db");
    let args = ["--name", "builds", "--axis", "policy=first-touch,all-fast"];
    let out = sweep(&db, &args);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("another build"), "{}", text(&out));
    let commit = |policy: &str| -> Option<String> {
        let c = Connection::open(&db).unwrap();
        c.query_row("SELECT json_extract(report, '$.sim.commit') FROM runs WHERE options LIKE ?1", [format!("%{policy}%")], |r| r.get(0)).unwrap()
    };
    let ours = commit("first-touch").expect("a report names its commit");
    assert_eq!(commit("all-fast").as_deref(), Some(ours.as_str()));
    // One run as if an older build made it, one as if made before reports named a commit.
    let c = Connection::open(&db).unwrap();
    c.execute("UPDATE runs SET report = json_set(report, '$.sim.commit', 'c0ffee000000') WHERE options LIKE '%first-touch%'", []).unwrap();
    c.execute("UPDATE runs SET report = json_remove(report, '$.sim.commit') WHERE options LIKE '%all-fast%'", []).unwrap();
    drop(c);
    let again = sweep(&db, &args);
    let t = text(&again);
    assert!(again.status.success(), "{t}");
    assert_eq!(count_before(&t, "already there"), 2, "{t}");
    assert!(
        t.contains(&format!("2 stored runs were simulated by another build of tiersim (1 by an older build that did not record its commit, 1 by c0ffee000000), not this one ({ours}); their figures stand beside this build's, and --rerun-other-builds simulates them again")),
        "{t}"
    );
    let listed = text(&sweep(&db, &[&args[..], &["--list"]].concat()));
    assert!(listed.contains("policy=first-touch  (by c0ffee000000)") && listed.contains("policy=all-fast  (by an older build"), "{listed}");
    let rerun = sweep(&db, &[&args[..], &["--rerun-other-builds"]].concat());
    let t = text(&rerun);
    assert!(rerun.status.success(), "{t}");
    assert_eq!((count_before(&t, "already there"), count_before(&t, "run now")), (0, 2), "{t}");
    assert!(!t.contains("another build"), "{t}");
    assert_eq!((commit("first-touch"), commit("all-fast")), (Some(ours.clone()), Some(ours)));
    assert_eq!(rows(&db).len(), 2, "re-run in place, not added");
}
