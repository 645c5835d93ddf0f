//! `tiersim record`'s edges (issue 37 item 5): a `--skip` past the program's end, a
//! `--limit` beyond it, and `run --trace` on a trace that holds no accesses.
//!
//! The recordings need `qemu-x86_64` (Debian's `qemu-user`) or `valgrind`, which
//! `.ci/run` installs; a recorder that is missing is skipped with a message. The
//! test of an empty trace writes its file directly and needs neither.

mod common;

use common::{tiersim, Scratch};
use std::process::Command;
use tiersim::trace::meta::{ThreadCounts, TraceMeta};
use tiersim::trace::native::{read_trailer, NativeWriter};
use tiersim::trace::window::Sampling;

/// The recorders installed here, by `--via` name; says which are skipped.
fn recorders() -> Vec<&'static str> {
    let mut found = Vec::new();
    for (via, tool) in [("qemu", "qemu-x86_64"), ("lackey", "valgrind")] {
        if Command::new(tool).arg("--version").output().is_ok() {
            found.push(via);
        } else {
            eprintln!("{tool} is not installed: skipping --via {via} here (.ci/run installs qemu-user and valgrind)");
        }
    }
    found
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text.find(prefix).unwrap_or_else(|| panic!("no `{prefix}` in {text}")) + prefix.len();
    text[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

#[test]
fn a_skip_past_the_end_is_an_error_that_leaves_no_trace() {
    for via in recorders() {
        let dir = Scratch::new("edges-skip");
        let out = dir.file("skip.tsim");
        let o = tiersim(&["record", "--via", via, "--skip", "10G", "--out", &out, "--", "/bin/true"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{via}: {err}");
        // One line of ours (valgrind may print its own above it).
        let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("tiersim:")).collect();
        assert_eq!(ours.len(), 1, "{via}: {err}");
        assert!(ours[0].starts_with("tiersim: record: --skip 10000000000 is past the end of `/bin/true`, which ran "), "{via}: {err}");
        // /bin/true runs some 100 000 instructions (its loader's most of them).
        let ran = number_after(ours[0], "which ran ");
        assert!((10_000..10_000_000).contains(&ran), "{via}: {ran} instructions");
        assert!(!std::path::Path::new(&out).exists(), "{via}: a trace was left at {out}");
        let left: Vec<_> = std::fs::read_dir(&*dir).unwrap().collect();
        assert!(left.is_empty(), "{via}: files left behind: {left:?}");
    }
}

#[test]
fn a_limit_past_the_end_reports_what_was_recorded() {
    for via in recorders() {
        let dir = Scratch::new("edges-limit");
        let out = dir.file("limit.tsim");
        let o = tiersim(&["record", "--via", via, "--limit", "10G", "--out", &out, "--", "/bin/true"]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{via}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("`/bin/true` ended before --limit 10000000000: the trace holds its whole run, "), "{via}: {text}");
        let recorded = number_after(&text, "its whole run, ");
        let ran = number_after(&text, " instructions recorded of ");
        assert_eq!(recorded, ran, "{via}: {text}");
        assert!(!text.contains("sampled:"), "{via}: {text}");
        // The metadata holds the whole run: no limit, not sampled, the same count.
        let meta = read_trailer(&out).unwrap().and_then(|f| f.meta).unwrap();
        assert_eq!(meta.sampling.limit, None, "{via}");
        assert!(!meta.is_sampled(), "{via}");
        assert_eq!(meta.threads.iter().map(|t| t.instructions).sum::<u64>(), recorded, "{via}");
        let run = tiersim(&["run", "--trace", &out, "--refs", "5000"]);
        let summary = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{via}: {}", String::from_utf8_lossy(&run.stderr));
        assert!(!summary.contains("sampled trace"), "{via}: {summary}");
    }
}

#[test]
fn a_trace_without_accesses_is_named_when_run() {
    let dir = Scratch::new("edges-empty");
    // As the recorder wrote them before it refused: metadata whose one thread kept
    // no record, and metadata with no thread at all.
    let cases = [vec![ThreadCounts { core: 0, records: 0, instructions: 0, program_instructions: 106_494 }], vec![]];
    for (i, threads) in cases.into_iter().enumerate() {
        let path = dir.file(&format!("empty{i}.tsim"));
        let mut w = NativeWriter::with_meta(std::fs::File::create(&path).unwrap(), true, false).unwrap();
        let sampling = Sampling::new(10_000_000_000, None, None, None).unwrap();
        w.set_meta(TraceMeta { recorder: "test".into(), program: vec!["/bin/true".into()], sampling, threads }.to_bytes());
        w.finish().unwrap();
        let o = tiersim(&["run", "--trace", &path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("tiersim: {path}: holds no accesses")), "{err}");
    }
}
