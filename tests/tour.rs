//! The README's tour, run as written but shrunk: every command in the code blocks of
//! its "Tour" section and of the reference pages its commands moved to
//! ([`TOUR_PAGES`]), and every `tiersim run` or `tiersim compare` example in their
//! text, must run and show what it is there to show. Footprints above 64 MiB become
//! 64 MiB (absolute tier capacities set on the line shrink by the same factor),
//! reference counts become at most 300 000, and a command may get a few settings
//! appended that scale its time (epochs, periods) to the shorter run. A tour command
//! without an entry in [`expectations`], or an entry without its command, fails.

mod common;

use common::Scratch;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const FOOTPRINT: u64 = 64 << 20;
const REFS: u64 = 300_000;

/// What one shrunk command printed and wrote.
struct Ran {
    stdout: String,
    /// Its JSON report (`--json`, added when the line has none), for run and compare.
    json: Option<Value>,
    dir: PathBuf,
}

impl Ran {
    fn report(&self) -> &Value {
        self.json.as_ref().expect("a JSON report")
    }

    /// The number at `key` of the policy's own report (a list counts its entries).
    fn policy_figure(&self, key: &str) -> u64 {
        let v = &self.report()["policy_report"][key];
        v.as_array().map_or_else(|| v.as_u64().unwrap_or(0), |a| a.len() as u64)
    }
}

type Check = fn(&Ran);

/// For each tour command (a text it contains): settings appended to the shrunk
/// command, and the check of what it claims.
fn expectations() -> Vec<(&'static str, &'static [&'static str], Check)> {
    vec![
        ("--workload zipf --footprint 1GiB --refs 10000000 --policy first-touch --json out.json", &[], |r| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(r.dir.join("out.json")).unwrap()).unwrap();
            assert_eq!((v["policy"].as_str(), v["summary"]["references"].as_u64()), (Some("first-touch"), Some(REFS)));
        }),
        ("report out.json -o report.html", &[], |r| {
            let page = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
            assert!(page.contains("<title>tiersim run: first-touch on zipf</title>"), "{}", &page[..page.len().min(400)]);
            // first-touch moves no page: a sentence stands for the page-moves panel.
            assert_eq!(page.matches("<figure class=\"plot\"").count(), 4, "the per-epoch panels but page moves");
            assert!(page.contains("<p>No plot of page moves per epoch: policy first-touch moved no page in any epoch.</p>"));
        }),
        ("sweep studies/cxl-kv.toml -j 2", &[], |r| {
            assert!(r.stdout.contains("sweep cxl-kv: 24 runs in studies/cxl-kv.db: 0 already there, 24 run now (0 failed)"), "{}", r.stdout);
        }),
        ("sweep studies/cxl-kv.toml --list", &[], |r| {
            assert!(r.stdout.contains("24 runs: 24 done, 0 failed, 0 to run"), "the shrunk grid is found done:\n{}", r.stdout);
        }),
        ("report studies/cxl-kv.db -o cxl-kv.html", &[], |r| {
            let page = std::fs::read_to_string(r.dir.join("cxl-kv.html")).unwrap();
            assert!(page.contains("<h2>Sweep cxl-kv</h2>") && page.contains("24 runs over the axes policy, machine.tiers.fast.capacity, seed; 0 failed"));
        }),
        ("compare --policies all-fast,first-touch,flat-static,all-slow", &[], |r| {
            for p in ["all-fast", "first-touch", "flat-static", "all-slow"] {
                assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
            }
        }),
        ("--preset rainbow --workload zipf", &["--set", "engine.epoch_cycles=2000000"], |r| {
            assert!(r.stdout.starts_with("policy            rainbow (preset rainbow)"), "{}", r.stdout);
            assert!(r.policy_figure("pages_copied") > 0, "rainbow copied no page:\n{}", r.stdout);
        }),
        ("--mix gups,zipf --footprint 512MiB --verify", &[], |r| {
            assert_eq!(r.report()["cores"].as_array().unwrap().len(), 2);
            assert!(r.report()["sim"]["verified_reads"].as_u64().unwrap() > 0);
        }),
        ("--preset thermostat --workload hotspot", &[], |r| {
            assert!(r.stdout.starts_with("policy            thermostat (preset thermostat)"), "{}", r.stdout);
            assert!(r.policy_figure("periods") > 0 && r.policy_figure("poisoned_pages") > 0, "thermostat did nothing:\n{}", r.stdout);
            assert!(r.stdout.contains("slowdown          ") && r.stdout.contains("against all-fast"), "{}", r.stdout);
        }),
        ("--preset thermostat-emulated --workload kv", &["--set", "policy.thermostat.period_s=0.0002"], |r| {
            assert!(r.policy_figure("periods") > 2, "{}", r.stdout);
            assert!(r.stdout.contains("  after warm-up   "), "{}", r.stdout);
        }),
        ("--workload graph-bfs --footprint 1GiB", &[], |r| {
            assert!(r.stdout.contains("graph-bfs over"), "{}", r.stdout);
        }),
        (
            "--workload kv --footprint 1GiB --refs 2000000000 --mode sampled",
            &["--set", "engine.sampled.period_refs=100000", "--set", "engine.sampled.detailed_refs=20000", "--set", "engine.sampled.warmup_refs=10000"],
            |r| {
                let s = &r.report()["sampling"];
                assert_eq!(s["ran"], "sampled");
                assert_eq!(s["fast_forward_references"].as_u64(), Some(240_000), "80 % of 300 000 references");
                assert!(r.stdout.contains("mode              sampled: 20.0 % of references detailed"), "{}", r.stdout);
            },
        ),
        (
            "--preset memos --workload kv --footprint 1GiB --mode epochs --seconds 200",
            // memos' sampling and rounds scaled to the shrunk run's 3 ms.
            &[
                "--set",
                "engine.epochs.first_warmup_refs=20000",
                "--set",
                "engine.epochs.warmup_refs=10000",
                "--set",
                "engine.epochs.calibration_refs=10000",
                "--set",
                "policy.memos.sampling_interval_ms=0.01",
                "--set",
                "policy.memos.interval_s=0.0008",
            ],
            |r| {
                assert_eq!(r.report()["epochs_mode"]["ran"], "epochs");
                assert!(r.report()["summary"]["page_moves"].as_u64().unwrap() > 0, "memos' rounds moved pages:\n{}", r.stdout);
                assert!(r.stdout.contains("mode              epochs: "), "{}", r.stdout);
            },
        ),
        (
            "--preset thermostat --workload zipf --footprint 1GiB --mode epochs --seconds 1200",
            // Thermostat's period scaled to the shrunk run's 4 ms.
            &["--set", "engine.epochs.first_warmup_refs=20000", "--set", "engine.epochs.warmup_refs=10000", "--set", "engine.epochs.calibration_refs=10000", "--set", "policy.thermostat.period_s=0.0003"],
            |r| {
                assert_eq!(r.report()["epochs_mode"]["ran"], "epochs");
                assert!(r.report()["policy_report"]["pacing"]["periods"].as_u64().unwrap() >= 10, "{}", r.stdout);
                assert!(r.policy_figure("poisoned_pages") > 0, "Thermostat sampled pages");
            },
        ),
        ("--tenants vm:kv:25%,vm:graph-bfs:25%,vm:pagerank:25%,vm:stream:25%", &[], |r| {
            assert_eq!(r.stdout.matches("(Vm):").count(), 4, "{}", r.stdout);
            assert_eq!(r.stdout.matches("fast-tier share 25.0 %").count(), 4, "{}", r.stdout);
        }),
        ("tiersim policies", &[], |r| {
            for p in ["all-fast", "all-slow", "first-touch", "flat-static", "round-robin", "rainbow", "thermostat", "kstaled"] {
                assert!(r.stdout.lines().any(|l| l == p), "{p} not listed");
            }
            assert!(r.stdout.contains("Presets (--preset") && r.stdout.contains("Workloads (--workload)"));
        }),
        ("config --preset spar", &[], |r| {
            assert!(r.stdout.contains("huge_page = \"512KiB\""), "{}", r.stdout);
        }),
        ("record --out sqlite.tsim", &[], |r| {
            assert!(r.stdout.contains("accesses/s captured"), "{}", r.stdout);
            assert!(r.dir.join("sqlite.tsim").is_file());
        }),
        ("record --via lackey --out sqlite.tsim", &[], |r| {
            assert!(r.stdout.contains("accesses/s captured") && r.stdout.contains("lackey"), "{}", r.stdout);
            assert!(r.dir.join("sqlite.tsim").is_file());
        }),
        ("record --skip 1G --limit 500M --window 10M --period 100M -- ./app", &[], |r| {
            assert!(r.stdout.contains("sampled: "), "{}", r.stdout);
            assert!(r.dir.join("app.tsim").is_file());
        }),
        ("record --suite list", &[], |r| {
            for p in ["redis", "memcached", "sqlite3", "xz", "zstd", "gcc", "dgemm", "lu", "cg", "bfs", "pagerank"] {
                assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
            }
        }),
        ("record --suite redis --size small", &[], |r| {
            assert!(r.stdout.contains("redis at small (16MiB of data)") && r.stdout.contains("accesses of "), "{}", r.stdout);
            assert!(r.dir.join("redis-small.tsim").is_file());
        }),
        ("--trace redis-small.tsim --policy tpp", &[], |r| {
            // Each of redis's threads on a core (one for the stand-in trace where redis
            // cannot be recorded).
            let cores = r.report()["cores"].as_array().unwrap().clone();
            assert!(!cores.is_empty() && cores.iter().all(|c| c["references"].as_u64().unwrap() > 0), "{}", r.stdout);
            assert_eq!(r.report()["policy"], "tpp");
        }),
        ("convert trace.champsim.xz trace.tsim", &[], |r| {
            assert!(r.stdout.starts_with("converted trace.champsim.xz (champsim) to trace.tsim: 500 accesses"), "{}", r.stdout);
        }),
        ("inspect sqlite.tsim --interval 100000 --json stats.json", &[], |r| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(r.dir.join("stats.json")).unwrap()).unwrap();
            assert!(v["pages_4k"].as_u64().unwrap() > 0 && r.stdout.contains("footprint"), "{}", r.stdout);
        }),
        ("inspect --preset spar-frag", &["--set", "workload.refs=20000", "--set", "workload.footprint=16MiB"], |r| {
            assert!(r.stdout.contains("huge pages used (subpage-migration paper Fig. 1"), "{}", r.stdout);
            assert!(r.stdout.lines().any(|l| l.trim_start().starts_with("15 ")), "a row for each of the 16 tenants:\n{}", r.stdout);
        }),
        ("--trace sqlite.tsim --set machine.tiers.fast.capacity", &[], |r| {
            let v = r.report();
            assert!(r.stdout.contains("measured from the traces"), "{}", r.stdout);
            let (fast, footprint) = (v["tiers"][0]["capacity_bytes"].as_u64().unwrap(), v["footprint_bytes"].as_u64().unwrap());
            assert!(fast >= footprint / 4, "{fast} {footprint}");
            if fast != footprint.div_ceil(4) {
                assert!(r.stdout.contains("rounded up to"), "the rounding is stated:\n{}", r.stdout);
            }
        }),
        ("--trace a.lk.gz --trace b.tsim --policy first-touch", &[], |r| {
            assert_eq!(r.stdout.matches("\ntrace             core ").count(), 2, "{}", r.stdout);
        }),
        ("--trace threads.tsim", &[], |r| {
            assert_eq!(r.report()["cores"].as_array().unwrap().len(), 2, "one core per thread:\n{}", r.stdout);
        }),
        ("profile sqlite.tsim", &[], |r| {
            assert!(r.stdout.starts_with("profiled sqlite.tsim: "), "{}", r.stdout);
            assert!(r.dir.join("sqlite.tsim.profile").is_file());
        }),
        ("--trace sqlite.tsim --mode epochs --policy tpp --seconds 60", &[], |r| {
            let e = &r.report()["epochs_mode"];
            assert_eq!(e["ran"], "epochs");
            let statement = e["statements"][0].as_str().unwrap();
            assert!(statement.starts_with("profiled: ") && !statement.contains("counted when the run started"), "the profile made beside it is read: {statement}");
        }),
        ("compare --preset spar-frag --policies round-robin,hugepage-otf,spar,sprm", &["--set", "workload.refs=20000", "--set", "workload.footprint=16MiB"], |r| {
            for p in ["round-robin", "hugepage-otf", "spar", "sprm"] {
                assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
            }
        }),
        (
            "--policy hmm-v --workload hotspot",
            &["--set", "policy.hmm-v.monitor_window_s=0.001", "--set", "policy.hmm-v.first_switch_s=0.001", "--set", "workload.footprint=64MiB"],
            |r| {
                assert!(r.stdout.lines().any(|l| l.starts_with("VM exits ")), "{}", r.stdout);
                let rounds = r.report()["policy_report"]["rounds"].as_array().unwrap().clone();
                assert!(rounds.first().is_some_and(|x| x["promoted_pages"].as_u64().unwrap() > 0), "no round moved a page:\n{}", r.stdout);
            },
        ),
        (
            "compare --preset cxl --policies first-touch,linux-tiering,tpp,all-fast",
            &["--set", "policy.linux-tiering.scan_delay_ms=0.05", "--set", "policy.linux-tiering.scan_size_mb=1", "--set", "policy.tpp.scan_delay_ms=0.05", "--set", "policy.tpp.scan_size_mb=1"],
            |r| {
                for p in ["first-touch", "linux-tiering", "tpp", "all-fast"] {
                    assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
                }
            },
        ),
        ("compare --preset cxl --policies first-touch,oracle-static,oracle,all-fast", &["--set", "workload.footprint=16MiB"], |r| {
            for p in ["first-touch", "oracle-static", "oracle", "all-fast"] {
                assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
            }
        }),
        (
            "compare --preset memos --policies interleave,cache-bank-colouring,memos,all-fast",
            &[],
            |r| {
                for p in ["interleave", "cache-bank-colouring", "memos", "all-fast"] {
                    assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
                }
            },
        ),
        ("compare --preset rainbow --policies flat-static,hscc-4k,hscc-2m,rainbow,all-fast", &[], |r| {
            for p in ["flat-static", "hscc-4k", "hscc-2m", "rainbow", "all-fast"] {
                assert!(r.stdout.lines().any(|l| l.starts_with(&format!("{p} "))), "no row for {p}:\n{}", r.stdout);
            }
        }),
        ("tier-stream --config studies/ramulator2-ddr4.toml", &[], |r| {
            // One read every 20 ns (3.2 GB/s) on a channel that idles at 44.17 ns a
            // random read: carried in full, a little queueing (47.20 ns measured,
            // docs/machine.md "Against Ramulator 2").
            assert!(r.stdout.contains("offered_gbps 3.200\nachieved_gbps 3.200\navg_read_latency_ns 47.20\n"), "{}", r.stdout);
            let trace = std::fs::read_to_string(r.dir.join("r.trace")).unwrap();
            assert_eq!(trace.lines().count(), 100_000);
            assert!(trace.lines().all(|l| l.starts_with("LD 0x")));
        }),
    ]
}

/// The pages whose commands the tour covers: the README's "Tour" section, and the
/// reference pages its commands moved to (every command of theirs, code blocks and
/// inline `tiersim run` / `tiersim compare` examples).
const TOUR_PAGES: [(&str, Option<&str>); 4] =
    [("README.md", Some("\n## Tour\n")), ("docs/usage.md", None), ("docs/policies/README.md", None), ("docs/reproduce.md", None)];

/// The tour's commands, in order: continuation lines joined.
fn tour_commands() -> Vec<String> {
    let mut commands = Vec::new();
    for (page, section) in TOUR_PAGES {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page)).unwrap();
        let text = match section {
            Some(heading) => {
                let start = text.find(heading).unwrap_or_else(|| panic!("{page}: no section {heading:?}"));
                let section = &text[start + 1..];
                section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)].to_string()
            }
            None => text,
        };
        commands.extend(commands_in(&text));
    }
    commands
}

/// The commands of one page or section: indented `tiersim` lines (continued by a
/// trailing backslash) and inline `tiersim run` / `tiersim compare` spans.
fn commands_in(section: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut pending: Option<String> = None;
    for line in section.lines() {
        if let Some(mut cmd) = pending.take() {
            cmd.push(' ');
            cmd += line.trim();
            match cmd.strip_suffix('\\') {
                Some(more) => pending = Some(more.trim_end().to_string()),
                None => commands.push(cmd),
            }
        } else if let Some(cmd) = line.strip_prefix("    tiersim ") {
            let cmd = format!("tiersim {cmd}");
            match cmd.strip_suffix('\\') {
                Some(more) => pending = Some(more.trim_end().to_string()),
                None => commands.push(cmd),
            }
        } else {
            for span in line.split('`').skip(1).step_by(2) {
                if span.starts_with("tiersim run ") || span.starts_with("tiersim compare ") {
                    commands.push(span.to_string());
                }
            }
        }
    }
    commands
}

/// Splits a command into words as a POSIX shell would for the quoting the README
/// uses (double and single quotes, backslash escapes, `#` comments).
fn words(cmd: &str) -> Vec<String> {
    let (mut out, mut cur, mut in_word, mut quote) = (Vec::new(), String::new(), false, None);
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') | (Some('"'), '\\') => {
                cur.extend(chars.next());
                in_word = true;
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

fn size_bytes(text: &str) -> u64 {
    tiersim::units::Size::parse(text.trim_matches('"')).unwrap_or_else(|e| panic!("{e}")).bytes()
}

/// The command's arguments (after `tiersim`), shrunk, with `extra` appended and a
/// JSON report requested from run and compare.
fn shrink(words: &[String], extra: &[&str], json: &Path) -> Vec<String> {
    let sub = words[1].as_str();
    let simulates = sub == "run" || sub == "compare" || sub == "sweep";
    let trace = words.iter().any(|w| w == "--trace");
    let footprint = words.iter().position(|w| w == "--footprint").map(|i| size_bytes(&words[i + 1]));
    let factor = footprint.map_or(1.0, |f| (FOOTPRINT as f64 / f as f64).min(1.0));
    let mut out: Vec<String> = Vec::new();
    let mut it = words[1..].iter();
    while let Some(w) = it.next() {
        out.push(w.clone());
        match w.as_str() {
            "--footprint" => {
                it.next();
                out.push(FOOTPRINT.min(footprint.unwrap()).to_string());
            }
            "--refs" => out.push(REFS.min(it.next().unwrap().parse().unwrap()).to_string()),
            // A recording's instruction counts shrink a thousandfold.
            "--skip" | "--limit" | "--window" | "--period" if sub == "record" => {
                let n = it.next().unwrap();
                out.push(n.replace('M', "k").replace('G', "M"));
            }
            "--set" => {
                let set = it.next().unwrap();
                out.push(match set.split_once(".capacity=") {
                    Some((tier, size)) if !size.contains('%') => {
                        let bytes = ((size_bytes(size) as f64 * factor) as u64).next_multiple_of(2 << 20);
                        format!("{tier}.capacity={bytes}")
                    }
                    _ => set.clone(),
                });
            }
            _ => {}
        }
    }
    if simulates && !trace {
        if footprint.is_none() {
            out.extend(["--footprint".into(), FOOTPRINT.to_string()]);
        }
        if !words.iter().any(|w| w == "--refs") {
            out.extend(["--refs".into(), REFS.to_string()]);
        }
    }
    if simulates && sub != "sweep" && !words.iter().any(|w| w == "--json") {
        out.extend(["--json".into(), json.to_str().unwrap().into()]);
    }
    out.extend(extra.iter().map(|s| s.to_string()));
    out
}

/// Whether a tour `record` command can run here: sqlite3 (the program recorded,
/// also as `./app`), or for `--suite redis` redis-server and Debian's Python (the
/// suite's driver), and its recorder (QEMU, or valgrind for `--via lackey` and
/// when QEMU is missing).
fn can_record(args: &[String]) -> bool {
    let have = |tool: &str, arg: &str| Command::new(tool).arg(arg).output().is_ok();
    let valgrind = have("valgrind", "--version");
    let recorder = if args.iter().any(|a| a == "lackey") { valgrind } else { have("qemu-x86_64", "--version") || valgrind };
    let program = match args.iter().position(|a| a == "--suite").map(|i| args[i + 1].as_str()) {
        Some("list") => true,
        Some(_) => have("redis-server", "--version") && have("/usr/bin/python3", "--version"),
        None => have("sqlite3", "-version"),
    };
    recorder && program
}

/// The files the tour's trace commands read, made in `dir`; when the recording of
/// `sqlite.tsim` cannot run here, a checked-in capture stands in for its output.
fn prepare_inputs(dir: &Path) {
    let data = |n: &str| format!("{}/tests/data/{n}", env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(data("rep.lk.gz"), dir.join("a.lk.gz")).unwrap();
    std::fs::copy(data("small.tsim"), dir.join("b.tsim")).unwrap();
    std::fs::create_dir_all(dir.join("studies")).unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/studies/cxl-kv.toml"), dir.join("studies/cxl-kv.toml")).unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/studies/ramulator2-ddr4.toml"), dir.join("studies/ramulator2-ddr4.toml")).unwrap();
    let mut records = Vec::new();
    for i in 0..500u64 {
        let addr = 0x7f00_0000_0000 + (i * 4160) % (1 << 22);
        let rec = if i % 3 == 0 { tiersim::trace::champsim::encode(0x401000 + i, &[], &[addr]) } else { tiersim::trace::champsim::encode(0x401000 + i, &[addr], &[]) };
        records.extend_from_slice(&rec);
    }
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&records).unwrap();
    std::fs::write(dir.join("trace.champsim.xz"), xz.finish().unwrap()).unwrap();
    // A program of two threads, as `record` writes one (threads as cores).
    let mut w = tiersim::trace::native::NativeWriter::new(std::fs::File::create(dir.join("threads.tsim")).unwrap(), true, false).unwrap();
    for i in 0..20_000u64 {
        let a = tiersim::trace::Access::read(0x10_0000 + 64 * (i % 5000), 8, 1);
        w.push(&tiersim::trace::Access { core: (i % 2) as u16, ..a }).unwrap();
    }
    w.finish().unwrap();
    if let Some(sqlite) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join("sqlite3")).find(|p| p.is_file()) {
        std::os::unix::fs::symlink(sqlite, dir.join("app")).unwrap();
    }
    if !can_record(&[]) {
        std::fs::copy(data("true.tsim"), dir.join("sqlite.tsim")).unwrap();
    }
    if !can_record(&["--suite".into(), "redis".into()]) {
        std::fs::copy(data("true.tsim"), dir.join("redis-small.tsim")).unwrap();
    }
}

#[test]
fn every_readme_tour_command_shows_what_it_claims() {
    let dir = Scratch::new("tour");
    prepare_inputs(&dir);
    let commands = tour_commands();
    let table = expectations();
    for (key, _, _) in &table {
        let n = commands.iter().filter(|c| c.contains(key)).count();
        assert_eq!(n, 1, "`{key}` should match one tour command, matches {n}: {commands:#?}");
    }
    for (i, cmd) in commands.iter().enumerate() {
        let (_, extra, check) = table.iter().find(|(key, _, _)| cmd.contains(key)).unwrap_or_else(|| panic!("no expectation for the tour command `{cmd}`"));
        let json = dir.join(format!("tour-{i}.json"));
        let args = shrink(&words(cmd), extra, &json);
        if args[0] == "record" && !can_record(&args) {
            eprintln!("its recorder or sqlite3 missing: `{cmd}` not run (.ci/run installs qemu-user, valgrind and sqlite3)");
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_tiersim")).args(&args).current_dir(&dir).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "`{cmd}` shrunk to {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let json = json.is_file().then(|| serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap());
        check(&Ran { stdout, json, dir: dir.to_path_buf() });
    }
}

#[test]
fn shell_words_and_shrinking() {
    assert_eq!(words(r#"tiersim run --set x=\"25%\" -- sqlite3 :memory: "select 1;"   # note"#), ["tiersim", "run", "--set", "x=\"25%\"", "--", "sqlite3", ":memory:", "select 1;"]);
    let w = words("tiersim run --footprint 16GiB --set machine.tiers.fast.capacity=2GiB --refs 5");
    let got = shrink(&w, &["--x"], Path::new("/r.json"));
    let want = ["run", "--footprint", "67108864", "--set", "machine.tiers.fast.capacity=8388608", "--refs", "5", "--json", "/r.json", "--x"];
    assert_eq!(got, want);
}
