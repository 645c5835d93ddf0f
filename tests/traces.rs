//! Real traces: the checked-in captures with their expected `inspect` figures, the
//! lackey `rep` sample, round trips of every format through the native format, and
//! the command line on bad traces.
//!
//! `tests/data/` holds (commands run in the repository root, valgrind 3.19):
//! - `true.tsim`: `tiersim record --out tests/data/true.tsim -- /bin/true`, rewritten
//!   as native version 2 by `tiersim convert` (its records unchanged)
//! - `gzip.tsim`: `seq 1 400 | tiersim record --out tests/data/gzip.tsim -- gzip -c`,
//!   rewritten as version 2 the same way
//! - `small.tsim`: the first 700 lines of the lackey capture of `/bin/true`
//!   (`true.lk.xz`), `tiersim convert --tenant 1` (165 records); `small.tsim.gz`,
//!   `.xz` and `.zst` are it under `gzip -9 -n`, `xz -9` and `zstd -19`;
//!   `small-v1.tsim` the same records in native version 1 (tiersim before issue 20)
//! - `true.lk.xz`: `valgrind --tool=lackey --trace-mem=yes --log-file=true.lk /bin/true`, xz -9
//! - `rep.lk.gz`: 727 lines of lackey output around a `rep stosb` of 200 bytes and a
//!   `rep movsb` of 100 bytes in a small C program (`asm("rep stosb")` on a static
//!   buffer), gzip -9.

mod common;

use common::{tiersim, Scratch};
use std::io::Write;
use std::process::Command;
use tiersim::trace::champsim;
use tiersim::trace::inspect::inspect;
use tiersim::trace::{open, Access, Format, OpenOptions, WRITE};

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn read_all(path: &str, format: Option<Format>) -> Vec<Access> {
    common::read_all(path, &OpenOptions { format, ..OpenOptions::default() })
}

/// Runs a command that must fail on bad input: exit code 2 and one line containing `needle`.
fn bad(args: &[&str], needle: &str) {
    let out = tiersim(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line expected, got {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
}

#[test]
fn checked_in_traces_have_their_expected_inspect_figures() {
    // (file, references, reads, writes, instructions, 4 KiB pages, 2 MiB pages,
    //  whole-trace hot pages, their fewest accesses, hot superpages, read-domain,
    //  write-domain pages, intervals of 10 000 references)
    type Expected = (&'static str, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, usize);
    let cases: [Expected; 4] = [
        ("true.tsim", 41315, 29831, 11484, 131495, 77, 6, 6, 1304, 4, 59, 18, 5),
        ("gzip.tsim", 151349, 99051, 52298, 450059, 109, 6, 7, 4949, 4, 69, 40, 16),
        ("true.lk.xz", 41321, 29837, 11484, 131507, 77, 6, 6, 1304, 4, 59, 18, 5),
        ("rep.lk.gz", 15, 5, 10, 26, 3, 2, 2, 6, 2, 0, 3, 1),
    ];
    for (file, refs, reads, writes, instrs, p4k, p2m, hot, min, sps, rd, wd, intervals) in cases {
        let mut o = open(&data(file), &OpenOptions::default()).unwrap();
        let r = inspect(o.source.as_mut(), 10_000).unwrap();
        let got = (r.references, r.reads, r.writes, r.instructions, r.pages_4k, r.pages_2m);
        assert_eq!(got, (refs, reads, writes, instrs, p4k, p2m), "{file}");
        let w = &r.whole;
        assert_eq!((w.hot_pages, w.hot_min_accesses, w.hot_superpages, w.read_domain_pages, w.write_domain_pages), (hot, min, sps, rd, wd), "{file}");
        assert_eq!(r.intervals.len(), intervals, "{file}");
        let bins: f64 = w.superpage_bins.iter().sum();
        assert!((bins - 1.0).abs() < 1e-9, "{file}: superpage shares sum to 1");
    }
}

#[test]
fn lackey_rep_stos_and_movs_are_merged_into_line_accesses() {
    let all = read_all(&data("rep.lk.gz"), Some(Format::Lackey));
    let near = |lo: u64, hi: u64| -> Vec<(u64, u8, bool)> {
        all.iter().filter(|a| (lo..hi).contains(&a.vaddr)).map(|a| (a.vaddr, a.size, a.is_write())).collect()
    };
    // `rep stosb` of 200 bytes from 0x10e043: one store per 64-byte line touched
    // instead of 200 one-byte stores.
    let stos = &near(0x10e000, 0x10f000)[..4];
    assert_eq!(stos, [(0x10e043, 61, true), (0x10e080, 64, true), (0x10e0c0, 64, true), (0x10e100, 11, true)]);
    // `rep movsb` of 100 bytes from 0x10e045 to 0x10c041: two line reads and two
    // line writes, in the order the streams leave their lines.
    let movs: Vec<(u64, u8, bool)> = all
        .iter()
        .filter(|a| (0x10c000..0x10d000).contains(&a.vaddr) || ((0x10e045..0x10e0a9).contains(&a.vaddr) && !a.is_write()))
        .map(|a| (a.vaddr, a.size, a.is_write()))
        .collect();
    // (The program's final `return buf[10]` reads 0x10e04a afterwards.)
    assert_eq!(movs[..4], [(0x10e045, 59, false), (0x10c041, 63, true), (0x10e080, 41, false), (0x10c080, 37, true)]);
}

/// Writes `records` in a text format the way its tool does.
fn write_text(format: Format, records: &[Access]) -> String {
    let mut s = String::new();
    for a in records {
        let rw = if a.is_write() { "W" } else { "R" };
        s += &match format {
            Format::Pin => format!("0x401000: {rw} 0x{:x}\n", a.vaddr),
            Format::RamulatorCpu if a.is_write() => format!("{} 0x{:x} W\n", a.instrs, a.vaddr),
            Format::RamulatorCpu => format!("{} {}\n", a.instrs, a.vaddr),
            Format::RamulatorDram => format!("0x{:x} {rw}\n", a.vaddr),
            Format::Ramulator2 => format!("{} 0x{:x}\n", if a.is_write() { "ST" } else { "LD" }, a.vaddr),
            _ => unreachable!("text formats only"),
        };
    }
    if format == Format::Pin {
        s += "#eof\n";
    }
    s
}

fn convert_and_read(dir: &Scratch, input: &str, format: &str) -> Vec<Access> {
    let native = dir.file(&format!("{format}.tsim"));
    let out = tiersim(&["convert", input, &native]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    read_all(&native, Some(Format::Native))
}

#[test]
fn every_format_round_trips_through_native() {
    let dir = Scratch::new("traces");
    let original = read_all(&data("true.tsim"), None);
    // Lackey: the real capture, directly and through the native format.
    let lk = read_all(&data("true.lk.xz"), None);
    assert_eq!(convert_and_read(&dir, &data("true.lk.xz"), "lackey"), lk);
    // The text formats, written from the recorded accesses.
    for format in [Format::Pin, Format::RamulatorCpu, Format::RamulatorDram, Format::Ramulator2] {
        let path = dir.file(&format!("trace.{format}"));
        std::fs::write(&path, write_text(format, &original)).unwrap();
        let direct = read_all(&path, None);
        assert_eq!(direct.len(), original.len(), "{format}");
        for (a, b) in direct.iter().zip(&original) {
            assert_eq!((a.vaddr, a.is_write()), (b.vaddr, b.is_write()), "{format}");
        }
        assert_eq!(convert_and_read(&dir, &path, format.name()), direct, "{format}");
    }
    // ChampSim: one record per access, compressed with xz as ChampSim traces are.
    let mut bytes = Vec::new();
    for a in &original {
        let rec = if a.is_write() { champsim::encode(0x401000, &[], &[a.vaddr]) } else { champsim::encode(0x401000, &[a.vaddr], &[]) };
        bytes.extend_from_slice(&rec);
    }
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&bytes).unwrap();
    let path = dir.file("trace.champsim.xz");
    std::fs::write(&path, xz.finish().unwrap()).unwrap();
    let direct = read_all(&path, None);
    assert_eq!(direct.iter().map(|a| (a.vaddr, a.is_write())).collect::<Vec<_>>(), original.iter().map(|a| (a.vaddr, a.is_write())).collect::<Vec<_>>());
    assert_eq!(convert_and_read(&dir, &path, "champsim"), direct);
    // Native to native keeps everything.
    assert_eq!(convert_and_read(&dir, &data("true.tsim"), "native"), original);
}

/// `inspect` on a configuration's workload: each core's stream in its tenant, with
/// Fig. 1's rows per tenant; a trace replayed twice (two tenants) gives the single
/// trace's row twice and twice its pages in total.
#[test]
fn inspect_reads_a_configured_workload_and_reports_huge_page_use_per_tenant() {
    let dir = Scratch::new("traces");
    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = dir.file(&format!("inspect-{}.json", args.len()));
        let mut all = args.to_vec();
        all.extend(["--json", &out]);
        let run = tiersim(&all);
        assert!(run.status.success(), "{args:?}: {}", String::from_utf8_lossy(&run.stderr));
        assert!(String::from_utf8_lossy(&run.stdout).contains("huge pages used (subpage-migration paper Fig. 1"));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        v["huge_page_use"].as_array().unwrap().clone()
    };
    let single = rows(&["inspect", &data("true.tsim")]);
    assert_eq!(single.len(), 2, "{single:?}");
    let twice = rows(&["inspect", "--trace", &data("true.tsim"), "--trace", &data("true.tsim")]);
    assert_eq!(twice.len(), 3, "{twice:?}");
    assert_eq!((twice[1]["tenant"].as_u64(), twice[2]["tenant"].as_u64()), (Some(0), Some(1)));
    for t in &twice[1..] {
        assert_eq!(t["sizes"], single[1]["sizes"]);
        assert_eq!(t["pages_4k"], single[1]["pages_4k"]);
    }
    assert_eq!(twice[0]["pages_4k"].as_u64().unwrap(), 2 * single[0]["pages_4k"].as_u64().unwrap());
    assert_eq!(twice[0]["sizes"][0]["ratio"], single[0]["sizes"][0]["ratio"]);
    let mix = rows(&["inspect", "--mix", "uniform,seqscan", "--footprint", "8MiB", "--refs", "20000"]);
    assert_eq!(mix.len(), 3);
    let pages = |r: &serde_json::Value| r["pages_4k"].as_u64().unwrap();
    assert_eq!(pages(&mix[0]), pages(&mix[1]) + pages(&mix[2]));
    for r in &mix {
        for s in r["sizes"].as_array().unwrap() {
            let ratio = s["ratio"].as_f64().unwrap();
            let expect = (pages(r) << 12) as f64 / (s["huge_pages"].as_u64().unwrap() * s["huge_page_bytes"].as_u64().unwrap()) as f64;
            assert!(ratio > 0.0 && ratio <= 1.0 && (ratio - expect).abs() < 1e-12, "{r:?}");
        }
    }
    bad(&["inspect", &data("true.tsim"), "--preset", "spar-frag"], "--preset: inspects a configuration's workload, so it cannot be combined with a trace to inspect");
}

#[test]
fn bad_traces_fail_with_file_line_and_exit_code_2() {
    let dir = Scratch::new("traces");
    let path = dir.file("bad.lk");
    std::fs::write(&path, "I  00400000,3\n L 00601000,8\n L 00601000 8\nI  00400003,2\n").unwrap();
    bad(&["inspect", &path], &format!("{path}:3: missing `,size` ( L 00601000 8)"));
    bad(&["run", "--trace", &path], &format!("{path}:3:"));
    let out = tiersim(&["inspect", &path, "--skip-malformed"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("malformed lines   1 skipped"));
    // A binary file read as text, and text read as binary.
    bad(&["inspect", &data("true.tsim"), "--format", "lackey"], "binary data (a tiersim native trace), not a lackey text trace");
    bad(&["inspect", &path, "--format", "champsim"], "not a ChampSim binary trace");
    bad(&["inspect", &path, "--format", "native"], "not a tiersim native trace");
    // Truncated compressed and native streams.
    let xz = std::fs::read(data("true.lk.xz")).unwrap();
    let cut = dir.file("cut.lk.xz");
    std::fs::write(&cut, &xz[..xz.len() / 2]).unwrap();
    bad(&["inspect", &cut], "truncated xz stream");
    let native = std::fs::read(data("gzip.tsim")).unwrap();
    let cut = dir.file("cut.tsim");
    std::fs::write(&cut, &native[..native.len() - 100]).unwrap();
    bad(&["inspect", &cut], "truncated");
    bad(&["run", "--trace", &cut], "truncated");
    // Addresses: beyond 57 bits in the reader; beyond 48 bits needs 5-level tables.
    let far = dir.file("far.ls");
    std::fs::write(&far, "LD 0x1000\nST 0x200000000000000\n").unwrap();
    bad(&["inspect", &far], &format!("{far}:2: address beyond the 57-bit virtual address space"));
    std::fs::write(&far, "LD 0x1000\nST 0x1000000000000\n").unwrap();
    bad(&["run", "--trace", &far], "rerun with --set machine.page_table.levels=5");
    let out = tiersim(&["run", "--trace", &far, "--set", "machine.page_table.levels=5"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    bad(&["run", "--trace", "-"], "standard input cannot be read twice");
    // A trace with no references converts to nothing: an error, and no output file.
    let empty = dir.file("empty.lk");
    std::fs::write(&empty, "==1== Lackey\n").unwrap();
    let empty_native = dir.file("empty.tsim");
    bad(&["convert", &empty, &empty_native], &format!("{empty}: the trace is empty: it holds no memory references; nothing converted"));
    assert!(!std::path::Path::new(&empty_native).exists());
    // A pinatrace trace cut before its `#eof`.
    let cut_pin = dir.file("cut.pin");
    std::fs::write(&cut_pin, "0x401000: R 0x7ffd10\n0x401004: W 0x7ffd18\n").unwrap();
    bad(&["run", "--trace", &cut_pin], &format!("{cut_pin}: truncated: the pinatrace trace ends after line 2 without its `#eof` line"));
    bad(&["convert", &cut_pin, &dir.file("cut-pin.tsim")], "without its `#eof` line");
    bad(&["inspect", "/nonexistent.trace"], "/nonexistent.trace: cannot open");
    // Standard input, compressed, for inspect.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiersim"))
        .args(["inspect", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&std::fs::read(data("rep.lk.gz")).unwrap()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("references        15 (5 reads, 10 writes"));
    bad(&["inspect", &path, "--format", "vcd"], "unknown trace format `vcd`");
}

#[test]
fn run_replays_traces_one_per_core_with_footprint_shares() {
    let dir = Scratch::new("traces");
    let (t, g) = (data("true.tsim"), data("gzip.tsim"));
    let json = dir.file("run.json");
    let out = tiersim(&["run", "--trace", &t, "--trace", &g, "--set", "machine.tiers.fast.capacity=\"25%\"", "--json", &json]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["summary"]["references"], 41315 + 151349);
    // 77 + 109 pages of 4 KiB, in two address spaces.
    assert_eq!(v["footprint_bytes"], (77 + 109) * 4096);
    assert_eq!(v["workloads"][1]["tenant"], 1);
    assert_eq!(v["workloads"][1]["trace"]["path"], g.as_str());
    // The same two traces in one address space (as two threads of one process).
    let out = tiersim(&["run", "--trace", &t, "--trace", &t, "--tenant", "0", "--tenant", "0", "--json", &json]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["workloads"][1]["tenant"], 0);
    assert_eq!(v["summary"]["references"], 2 * 41315);
    // Records tagged with tenant 1 by convert keep it.
    let tagged = dir.file("tagged.tsim");
    assert!(tiersim(&["convert", &t, &tagged, "--tenant", "1"]).status.success());
    let out = tiersim(&["run", "--trace", &tagged, "--json", &json]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    bad(&["run", "--trace", &t, "--tenant", "0", "--tenant", "1"], "give one per --trace");
    bad(&["run", "--trace", &t, "--mix", "gups"], "cannot be combined");
}

#[test]
fn record_captures_a_real_program() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind is not installed: skipping (.ci/run installs it)");
        return;
    }
    let dir = Scratch::new("traces");
    let out_path = dir.file("true-rec.tsim");
    let out = tiersim(&["record", "--via", "lackey", "--out", &out_path, "--", "/bin/true"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("accesses/s captured"), "{text}");
    let recorded = read_all(&out_path, None);
    assert!(recorded.len() > 10_000, "{}", recorded.len());
    assert!(recorded.iter().any(|a| a.flags & WRITE != 0));
    bad(&["record", "--via", "lackey", "--out", &out_path, "--", "/nonexistent/program"], "not found");
}
