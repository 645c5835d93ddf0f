//! `tiersim record`: runs a program under a recorder and writes its memory
//! accesses in the native format as it runs, with no text trace on disk.
//!
//! Two recorders, one sink:
//! - [`qemu`]: QEMU's user-mode emulator with tiersim's TCG plugin, which writes
//!   every load and store of each guest thread into a shared-memory ring; this
//!   process drains the rings. Each thread becomes a core of the trace.
//! - [`valgrind`]: Valgrind lackey, whose text output comes through a pipe into
//!   the lackey reader. Valgrind runs the program's threads one at a time and
//!   lackey does not say which thread made an access, so the trace has one core.
//!
//! Either way the accesses go through [`Windows`] (the `--skip`, `--limit`,
//! `--window`/`--period` sampling) into a [`NativeWriter`] on this process's
//! thread — parsing or draining, encoding and compression run on the core the
//! recorded program does not use. The trace ends with a metadata block
//! ([`TraceMeta`]): recorder, program, sampling, and per thread the records and
//! instructions kept and run.
//!
//! A recording ends cleanly when the program exits (with any exit code) or when
//! every thread has passed `--limit` (the program is then stopped); only then is
//! the trailer written. When the program is killed by a signal, or writing fails
//! (a full disk), the blocks written so far stay without a trailer, so every reader
//! reports the file as truncated, and the error says so: it is a [`PartialTrace`],
//! which tells the caller to keep the file (the command line puts it under its
//! final name; any other failure leaves nothing there).

pub mod qemu;
pub mod valgrind;

use super::meta::TraceMeta;
use super::native::{NativeWriter, Written};
use super::window::{Sampling, Windows};
use super::Access;
use anyhow::{anyhow, Context, Result};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Instant;

/// The recorder to run the program under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `qemu-x86_64` with tiersim's plugin.
    Qemu,
    /// `valgrind --tool=lackey --trace-mem=yes`.
    Lackey,
}

impl Via {
    /// Parses a `--via` value.
    pub fn parse(name: &str) -> Result<Via> {
        match name {
            "qemu" => Ok(Via::Qemu),
            "lackey" => Ok(Via::Lackey),
            _ => Err(anyhow!("--via: unknown recorder `{name}` (known: qemu, lackey)")),
        }
    }

    /// QEMU when `qemu-x86_64` is on the path of an x86-64 host, lackey otherwise.
    pub fn default_for_host() -> Via {
        if cfg!(target_arch = "x86_64") && find_on_path("qemu-x86_64").is_some() {
            Via::Qemu
        } else {
            Via::Lackey
        }
    }
}

/// What to record.
#[derive(Clone, Debug)]
pub struct Request {
    pub via: Via,
    /// The program and its arguments.
    pub program: Vec<String>,
    /// The native trace to write.
    pub out: PathBuf,
    pub sampling: Sampling,
    /// Told the process id of the recorder (QEMU or valgrind) once it has started,
    /// so that another thread can stop it (the suite's load driver does when it
    /// fails against a recorded server).
    pub started: Option<std::sync::mpsc::Sender<u32>>,
}

/// How a recording ended.
#[derive(Debug)]
pub struct Recorded {
    pub written: Written,
    pub meta: TraceMeta,
    /// The program's exit status (`None` when it was stopped after `--limit`).
    pub status: Option<ExitStatus>,
    /// Seconds from starting the recorder to the program's end.
    pub seconds: f64,
}

/// Returns the file `program` runs: a path to an existing file, or the first match
/// on `PATH`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|d| d.join(program)).find(|p| p.is_file())
}

/// The interpreter line of a script (`#!/bin/sh -e` → `["/bin/sh", "-e"]`), or
/// `None` for a binary.
pub fn interpreter(file: &Path) -> Option<Vec<String>> {
    let mut head = [0u8; 256];
    let n = io::Read::read(&mut File::open(file).ok()?, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n')?];
    let text = std::str::from_utf8(line).ok()?.trim();
    let (interp, arg) = text.split_once([' ', '\t']).map_or((text, ""), |(i, a)| (i, a.trim()));
    Some([interp, arg].into_iter().filter(|s| !s.is_empty()).map(String::from).collect())
}

/// A recording that failed after writing part of the trace, which is worth keeping
/// (its end has no trailer, so readers report it as truncated).
#[derive(Debug)]
pub struct PartialTrace(pub String);

impl std::fmt::Display for PartialTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PartialTrace {}

/// Records `req` into `out` (the file at `req.out`, or a temporary file that
/// becomes it; `req.out` names it in messages).
pub fn record(req: &Request, out: File) -> Result<Recorded> {
    let Some(file) = find_on_path(&req.program[0]) else {
        return Err(anyhow!("record: program `{}` not found", req.program[0]));
    };
    match req.via {
        Via::Qemu if !cfg!(target_arch = "x86_64") => return Err(anyhow!("record --via qemu: needs an x86-64 host (it runs qemu-x86_64)")),
        Via::Qemu if find_on_path("qemu-x86_64").is_none() => {
            return Err(anyhow!("record --via qemu: qemu-x86_64 not found on PATH; install it (e.g. apt-get install -y qemu-user) or use --via lackey"))
        }
        Via::Lackey if find_on_path("valgrind").is_none() => {
            return Err(anyhow!("record --via lackey: valgrind not found on PATH; install it (e.g. apt-get install -y valgrind)"))
        }
        _ => {}
    }
    let mut sink = Sink {
        // Compression runs beside the drain: it takes the core QEMU leaves idle while
        // it waits for room in its rings, and the drain's while QEMU translates.
        writer: NativeWriter::with_meta(BufWriter::with_capacity(1 << 20, out), req.via == Via::Qemu, false)?.compress_beside()?,
        windows: Windows::new(req.sampling),
        path: req.out.clone(),
    };
    // `--version` starts the tool once more (about 10 ms for QEMU): asked beside the
    // recording rather than after it.
    let tool = match req.via {
        Via::Qemu => "qemu-x86_64",
        Via::Lackey => "valgrind",
    };
    let version = std::thread::spawn(move || tool_version(tool));
    let started = Instant::now();
    let ended = match req.via {
        Via::Qemu => qemu::run(&file, req, &mut sink),
        Via::Lackey => valgrind::run(&file, req, &mut sink),
    };
    let seconds = started.elapsed().as_secs_f64();
    let end = match ended {
        Ok(end) => end,
        Err(e) => {
            // The first error is the one to report; the trace stays without a trailer.
            let _ = sink.writer.abandon();
            return Err(e);
        }
    };
    if let Some(sig) = end.status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)) {
        let _ = sink.writer.abandon();
        return Err(anyhow::Error::new(PartialTrace(format!(
            "record: `{}` was killed by signal {sig} ({}); {} holds its accesses up to there without a trailer, so readers report it as truncated",
            req.program.join(" "),
            signal_name(sig),
            req.out.display()
        ))));
    }
    if let Some(status) = end.status.filter(|s| !s.success() && sink.windows.threads().is_empty()) {
        let _ = sink.writer.abandon();
        return Err(anyhow!("record: `{}` ended ({status}) before making any access; the recorder's message, if any, is above", req.program.join(" ")));
    }
    let threads = sink.windows.threads().to_vec();
    if threads.iter().all(|t| t.records == 0) {
        let _ = sink.writer.abandon();
        return Err(nothing_kept(req, &threads));
    }
    // A program that ends before any thread reaches `--limit` was recorded to its
    // end: the trace's metadata says so rather than claim the limit's span.
    let mut sampling = req.sampling;
    if end.status.is_some() && !(0..threads.len()).any(|c| sink.windows.finished(c)) {
        sampling.limit = None;
    }
    let version = version.join().unwrap_or_else(|_| tool.to_string());
    let recorder = match req.via {
        Via::Qemu => format!("{version} with tiersim's plugin"),
        Via::Lackey => format!("{version} lackey"),
    };
    let meta = TraceMeta { recorder, program: req.program.clone(), sampling, threads };
    sink.writer.set_meta(meta.to_bytes());
    let written = sink.writer.finish().map_err(|e| sink_error(&req.out, e))?;
    Ok(Recorded { written, meta, status: end.status, seconds })
}

/// The error of a recording that kept no access: past the program's end with
/// `--skip`, or a program that made none. It names the skip and the instructions
/// the program's longest thread ran.
fn nothing_kept(req: &Request, threads: &[super::meta::ThreadCounts]) -> anyhow::Error {
    let ran = threads.iter().map(|t| t.program_instructions).max().unwrap_or(0);
    let program = req.program.join(" ");
    if req.sampling.skip > 0 {
        anyhow!(
            "record: --skip {} is past the end of `{program}`, which ran {ran} instructions (its longest thread); nothing recorded, no trace written: give a smaller --skip",
            req.sampling.skip
        )
    } else {
        anyhow!("record: `{program}` made no memory access in its windows ({ran} instructions run); nothing recorded, no trace written")
    }
}

/// How a recorder's run ended.
struct End {
    /// The exit status, or `None` when the program was stopped after `--limit`.
    status: Option<ExitStatus>,
}

/// Where the accesses go: the windows, then the native writer.
struct Sink {
    writer: NativeWriter<BufWriter<File>>,
    windows: Windows,
    path: PathBuf,
}

impl Sink {
    /// Writes the accesses of `batch` that fall in windows (and empties it).
    fn push(&mut self, batch: &mut Vec<Access>) -> Result<()> {
        self.windows.apply(batch);
        self.writer.push_all(batch).map_err(|e| sink_error(&self.path, e))?;
        batch.clear();
        Ok(())
    }

    /// Whether every core in `cores` has passed the end of its windows.
    fn finished(&self, mut cores: impl Iterator<Item = usize>) -> bool {
        cores.all(|c| self.windows.finished(c))
    }
}

fn sink_error(path: &Path, e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(PartialTrace(format!(
        "record: {}: cannot write: {e:#}; the trace is incomplete (no trailer), so readers report it as truncated",
        path.display()
    )))
}

/// Stops `child` (after `--limit`) and reaps it.
fn stop(child: &mut Child) -> Result<()> {
    let _ = child.kill();
    child.wait().context("record: waiting for the recorder")?;
    Ok(())
}

/// The first line `tool --version` prints, e.g. `valgrind-3.19.0`, or the tool's
/// name.
fn tool_version(tool: &str) -> String {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.lines().next().map(|l| l.trim().to_string()))
        .unwrap_or_else(|| tool.to_string())
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV, a segmentation fault",
        libc::SIGBUS => "SIGBUS, a bus error",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGFPE => "SIGFPE, an arithmetic error",
        libc::SIGILL => "SIGILL, an illegal instruction",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "a fatal signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_interpreters_are_read_from_the_first_line() {
        let dir = crate::scratch::Scratch::new("interp");
        let cases: [(&[u8], Option<&[&str]>); 3] =
            [(b"#!/bin/sh -e\necho\n", Some(&["/bin/sh", "-e"])), (b"#! /usr/bin/env  python3 \n", Some(&["/usr/bin/env", "python3"])), (b"\x7fELF\x02", None)];
        for (i, (text, want)) in cases.into_iter().enumerate() {
            let f = dir.join(format!("s{i}"));
            std::fs::write(&f, text).unwrap();
            assert_eq!(interpreter(&f), want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
        }
    }
}
