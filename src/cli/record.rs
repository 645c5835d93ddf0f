//! `tiersim record`: the command line over [`crate::trace::record`].

use super::interrupt;
use super::output::OutputFile;
use crate::trace::record::{self, PartialTrace, Request, Via};
use crate::trace::window::Sampling;
use anyhow::{anyhow, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Native trace to write (default: PROGRAM's name with `.tsim`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Recorder: `qemu` (QEMU user mode with tiersim's plugin, threads as cores; the
    /// default when qemu-x86_64 is installed) or `lackey` (valgrind, one core).
    #[arg(long, value_name = "RECORDER")]
    pub via: Option<String>,
    /// Instructions of each thread to run before recording, e.g. 2G.
    #[arg(long, value_name = "N")]
    pub skip: Option<String>,
    /// Instructions after the skip at which recording ends; the program is stopped
    /// once every thread has passed it.
    #[arg(long, value_name = "N")]
    pub limit: Option<String>,
    /// Periodic sampling: record this many instructions at the start of every
    /// --period (SimPoint-style), e.g. --window 10M --period 1G.
    #[arg(long, value_name = "N")]
    pub window: Option<String>,
    /// Instructions from the start of one --window to the start of the next.
    #[arg(long, value_name = "N")]
    pub period: Option<String>,
    /// Record a program of the real-program suite with its inputs and load instead
    /// of PROGRAM; `--suite list` lists them with what each needs installed
    /// (docs/real-programs.md).
    #[arg(long, value_name = "NAME", conflicts_with = "program")]
    pub suite: Option<String>,
    /// With --suite: `small` (seconds to a minute), `full` (1 GiB, 4 GiB for the
    /// key-value stores and graphs) or the data the program holds in bytes, e.g.
    /// 256MiB.
    #[arg(long, value_name = "SIZE", requires = "suite")]
    pub size: Option<String>,
    /// The program and its arguments (after `--`).
    #[arg(required_unless_present = "suite", trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// Parses an instruction count of `flag`: digits with optional `_`, and an optional
/// decimal suffix k, M, G or T (`500M` = 500 000 000).
fn count(flag: &str, text: &str) -> Result<u64> {
    let t = text.replace('_', "");
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000u64),
        Some((i, 'M')) => (&t[..i], 1_000_000),
        Some((i, 'G')) => (&t[..i], 1_000_000_000),
        Some((i, 'T')) => (&t[..i], 1_000_000_000_000),
        _ => (&t[..], 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| anyhow!("--{flag}: `{text}` is not a count of instructions (digits with an optional k, M, G or T, e.g. 500M)"))
}

/// Work run beside a recording: it gets the recorder's process id once the
/// recorder has started (none if it never starts), and its error wins over the
/// recording's.
pub(super) type Beside = Box<dyn FnOnce(std::sync::mpsc::Receiver<u32>) -> Result<()> + Send>;

/// `tiersim record`.
pub fn record(args: &RecordArgs) -> Result<()> {
    let via = match &args.via {
        Some(v) => Via::parse(v)?,
        None => Via::default_for_host(),
    };
    let opt = |flag: &str, v: &Option<String>| v.as_deref().map(|t| count(flag, t)).transpose();
    let sampling = Sampling::new(opt("skip", &args.skip)?.unwrap_or(0), opt("limit", &args.limit)?, opt("window", &args.window)?, opt("period", &args.period)?)?;
    if let Some(name) = &args.suite {
        return super::suite::record(name, args.size.as_deref(), args.out.clone(), via, sampling);
    }
    // clap's `requires` is not enforced beside the trailing PROGRAM, so checked here.
    if args.size.is_some() {
        return Err(anyhow!("--size: goes with --suite (the data of a suite program); a PROGRAM's size is its own"));
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let base = Path::new(&args.program[0]).file_name().map_or("trace".into(), |n| n.to_string_lossy().to_string());
        PathBuf::from(format!("{base}.tsim"))
    });
    record_into(&args.program, &out, via, sampling, None)
}

/// Records `program` into `out` with `via` and `sampling`, with `beside` running
/// alongside, and prints what was recorded.
pub(super) fn record_into(program: &[String], out: &Path, via: Via, sampling: Sampling, beside: Option<Beside>) -> Result<()> {
    let found = record::find_on_path(&program[0]).map(|p| p.to_string_lossy().to_string());
    let output = OutputFile::create("--out", out, &[found.as_deref().unwrap_or("-")], &[])?;
    interrupt::install(false);
    let (started, pid) = std::sync::mpsc::channel();
    let beside = beside.map(|work| std::thread::spawn(move || work(pid)));
    let recorded = record::record(
        &Request {
            via,
            program: program.to_vec(),
            out: out.to_path_buf(),
            sampling,
            started: beside.is_some().then_some(started),
        },
        output.handle()?,
    );
    if let Some(work) = beside {
        work.join().map_err(|_| anyhow!("record: the work beside the recording panicked"))??;
    }
    let done = match recorded {
        Ok(done) => {
            output.commit()?;
            done
        }
        Err(e) => {
            // Part of a trace is kept (readers see it is truncated); any other
            // failure leaves nothing under the output's name.
            if e.is::<PartialTrace>() {
                let _ = output.commit();
            }
            return Err(e);
        }
    };
    let secs = done.seconds;
    let (records, bytes) = (done.written.records, done.written.bytes);
    let threads = done.meta.cores().len();
    println!(
        "recorded {records} accesses{} from `{}` with {} in {secs:.2} s: {:.2} M accesses/s captured",
        if threads > 1 { format!(" of {threads} threads") } else { String::new() },
        program.join(" "),
        done.meta.recorder,
        records as f64 / secs / 1e6
    );
    println!("wrote {} ({bytes} bytes, {:.3} bytes/access)", out.display(), bytes as f64 / records.max(1) as f64);
    let ran = done.meta.threads.iter().map(|t| t.program_instructions).sum::<u64>();
    if let (Some(limit), None) = (sampling.limit, done.meta.sampling.limit) {
        let from = if sampling.skip > 0 { format!(" after --skip {}", sampling.skip) } else { String::new() };
        println!(
            "`{}` ended before --limit {limit}: the trace holds its whole run{from}, {} instructions recorded of {ran} run",
            program[0],
            done.meta.threads.iter().map(|t| t.instructions).sum::<u64>()
        );
    }
    if done.meta.is_sampled() {
        println!(
            "sampled: {}; the trace keeps 1/{:.1} of the {ran} instructions the program ran until the recording ended",
            done.meta.sampling.describe(),
            done.meta.scale(),
        );
    }
    match done.status {
        None => println!("stopped `{}` once every thread had passed --limit", program[0]),
        Some(s) if !s.success() => {
            let code = s.code().map_or_else(|| s.to_string(), |c| format!("exit code {c}"));
            eprintln!("tiersim: note: `{}` ended with {code}; the trace covers its whole run", program[0]);
        }
        Some(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_counts_take_decimal_suffixes() {
        assert_eq!(count("skip", "1_000").unwrap(), 1000);
        assert_eq!(count("skip", "5k").unwrap(), 5000);
        assert_eq!(count("skip", "2G").unwrap(), 2_000_000_000);
        assert!(count("skip", "2GiB").unwrap_err().to_string().starts_with("--skip: `2GiB` is not a count"));
        assert!(count("limit", "-1").is_err());
        assert!(count("limit", "99999999T").is_err());
    }
}
