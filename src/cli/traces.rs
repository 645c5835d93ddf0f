//! The trace commands `convert` (any format to native) and `inspect`
//! (statistics); `record` is in [`super::record`].

use super::interrupt;
use super::output::OutputFile;
use crate::trace::native::NativeWriter;
use crate::trace::{self, inspect as analysis, Access, Format, OpenOptions, Opened};
use anyhow::{bail, Result};
use clap::Args;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Trace to read (`-` for standard input), any supported format, optionally compressed.
    pub input: String,
    /// Native trace to write (`-` for standard output).
    pub output: String,
    /// Format of the input (default: detected from its content).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed lines (and count them) instead of stopping at the first.
    #[arg(long)]
    pub skip_malformed: bool,
    /// Tag every record with this tenant, written in each record's tenant field.
    #[arg(long, allow_negative_numbers = true)]
    pub tenant: Option<u16>,
}

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Trace to profile, any supported format, optionally compressed.
    pub trace: String,
    /// Profile to write (default: the trace's path with `.profile` added, where
    /// `run --mode epochs --trace TRACE` looks for it).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// References per window (engine.epochs.window_refs).
    #[arg(long, default_value_t = crate::config::EpochsConfig::default().window_refs)]
    pub window: u64,
    /// Profile only the first N references (as `run --refs N` replays them).
    #[arg(long)]
    pub refs: Option<u64>,
    /// Format of the trace (default: detected from its content).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed lines (and count them) instead of stopping at the first.
    #[arg(long)]
    pub skip_malformed: bool,
}

/// The profile file `run --mode epochs` reads for `trace`.
pub fn profile_path(trace: &str) -> PathBuf {
    PathBuf::from(format!("{trace}.profile"))
}

/// `tiersim profile`: counts a trace's references per page and window, once, for
/// every epochs-mode run of it (docs/epochs.md).
pub fn profile(args: &ProfileArgs) -> Result<()> {
    if args.trace == "-" {
        bail!("tiersim profile: the trace must be a file (its profile names the file it was made from)");
    }
    if args.window == 0 {
        bail!("--window: must be at least 1");
    }
    let out_path = args.out.clone().unwrap_or_else(|| profile_path(&args.trace));
    let file = OutputFile::create("--out", &out_path, &[&args.trace], &[])?;
    interrupt::install(false);
    let opened = trace::open(&args.trace, &open_options(&args.format, args.skip_malformed)?)?;
    print_notes(&opened);
    if opened.record_tenants {
        bail!("{}: its records name their tenants; epochs mode profiles a trace of one tenant", args.trace);
    }
    let started = Instant::now();
    let of = crate::workload::rates::ProfileOf::trace(&args.trace, args.refs)?;
    let mut src = trace::take(opened.source, args.refs);
    let p = crate::workload::rates::Profile::record(src.as_mut(), args.window, u64::MAX, &args.trace)?;
    file.write_all_and_commit(&p.to_bytes(of)?)?;
    let pages: usize = p.windows.iter().map(|w| w.pages.len()).sum();
    println!(
        "profiled {}: {} references in {} windows of {} ({} page-windows) in {:.1} s; written to {}",
        args.trace,
        p.refs(),
        p.windows.len(),
        args.window,
        pages,
        started.elapsed().as_secs_f64(),
        out_path.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Trace to read (`-` for standard input), any supported format, optionally
    /// compressed. Without it, the workload of the configuration the other options
    /// give (e.g. `--preset spar-frag`, `--workload kv`) is inspected: every core's
    /// stream, taken in turn one batch at a time.
    pub trace: Option<String>,
    /// References per interval of the hot-page statistics.
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    pub interval: u64,
    /// Write every statistic as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub cfg: super::ConfigArgs,
}

fn open_options(format: &Option<String>, skip_malformed: bool) -> Result<OpenOptions> {
    Ok(OpenOptions { format: format.as_deref().map(Format::parse).transpose()?, skip_malformed, ..OpenOptions::default() })
}

/// Prints what the user should know about an opened trace.
fn print_notes(opened: &Opened) {
    for n in &opened.notes {
        eprintln!("tiersim: note: {n}");
    }
}

/// `tiersim inspect`.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    if args.interval == 0 {
        bail!("--interval: must be at least 1 reference");
    }
    let c = &args.cfg;
    if let Some(t) = &args.trace {
        let config_given = [
            ("--config", c.config.is_some()),
            ("--preset", c.preset.is_some()),
            ("--workload", c.workload.is_some()),
            ("--mix", !c.mix.is_empty()),
            ("--tenants", !c.tenants.is_empty()),
            ("--footprint", c.footprint.is_some()),
            ("--refs", c.refs.is_some()),
            ("--seed", c.seed.is_some()),
            ("--set", !c.sets.is_empty()),
            ("--trace", !c.traces.is_empty()),
            ("--tenant", !c.trace_tenants.is_empty()),
        ];
        if let Some((option, _)) = config_given.iter().find(|g| g.1) {
            bail!("{option}: inspects a configuration's workload, so it cannot be combined with a trace to inspect ({t})");
        }
    }
    let mut inputs: Vec<&str> = args.trace.iter().map(String::as_str).collect();
    inputs.extend(c.traces.iter().map(String::as_str));
    let json = OutputFile::create_opt("--json", &args.json, &inputs, &[])?;
    interrupt::install(false);
    let r = match &args.trace {
        Some(path) => {
            let mut opened = trace::open(path, &open_options(&c.format, c.skip_malformed)?)?;
            print_notes(&opened);
            let mut r = analysis::inspect(opened.source.as_mut(), args.interval)?;
            r.trace = path.clone();
            r.format = match opened.compression {
                Some(c) => format!("{}, {c}-compressed", opened.format),
                None => opened.format.name().to_string(),
            };
            r
        }
        None => {
            let cfg = c.load()?;
            let mut sources = Vec::new();
            let mut names = Vec::new();
            for slot in cfg.slots()? {
                match &slot.trace {
                    Some(t) => {
                        let opts = OpenOptions { format: t.format, skip_malformed: t.skip_malformed, thread: t.thread, page_table_levels: None };
                        let opened = trace::open(&t.path, &opts)?;
                        print_notes(&opened);
                        let retag = (!opened.record_tenants).then_some(slot.tenant);
                        sources.push(Retag { inner: trace::take(opened.source, t.refs), tenant: retag });
                        names.push(t.path.clone());
                    }
                    None => {
                        sources.push(Retag { inner: crate::workload::build(&slot.workload, slot.core as u16, slot.tenant)?, tenant: None });
                        names.push(slot.workload.name.clone());
                    }
                }
            }
            let mut all = Interleave::new(sources);
            let mut r = analysis::inspect(&mut all, args.interval)?;
            r.trace = names.join(",");
            r.format = "configured workload, cores in turn".to_string();
            r
        }
    };
    if r.references == 0 {
        eprintln!("tiersim: note: {} holds no references", r.trace);
    }
    print!("{}", analysis::table(&r));
    if let Some(out) = json {
        out.write_all_and_commit((serde_json::to_string_pretty(&r)? + "\n").as_bytes())?;
    }
    Ok(())
}

/// A source whose records are given one tenant (a trace without per-record tenants
/// replayed as a slot's tenant), or passed unchanged.
struct Retag {
    inner: Box<dyn trace::Source>,
    tenant: Option<u16>,
}

/// Several sources read in turn, one batch from each, until all are exhausted.
struct Interleave {
    sources: Vec<Retag>,
    /// Sources not yet exhausted, in turn order; `next` indexes it.
    live: Vec<usize>,
    next: usize,
}

impl Interleave {
    fn new(sources: Vec<Retag>) -> Self {
        Interleave { live: (0..sources.len()).collect(), sources, next: 0 }
    }
}

impl trace::Source for Interleave {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        while !self.live.is_empty() {
            let at = self.next % self.live.len();
            let s = &mut self.sources[self.live[at]];
            let start = out.len();
            s.inner.fill(out, max)?;
            if out.len() == start {
                self.live.remove(at);
                self.next = at;
                continue;
            }
            if let Some(t) = s.tenant {
                out[start..].iter_mut().for_each(|a| a.tenant = t);
            }
            self.next = at + 1;
            return Ok(());
        }
        Ok(())
    }

    fn malformed_skipped(&self) -> u64 {
        self.sources.iter().map(|s| s.inner.malformed_skipped()).sum()
    }
}

/// Copies `source` into a native trace on `out`; returns (records, bytes written).
/// A native input's metadata block is carried over.
fn write_native(opened: &mut trace::Opened, out: Box<dyn Write>, tenant: Option<u16>) -> Result<(u64, u64)> {
    let tenants = tenant.is_some() || opened.record_tenants;
    // Reading and encoding on this thread, compressing on another.
    let mut w = match opened.meta {
        true => NativeWriter::with_meta(out, opened.record_cores, tenants)?,
        false => NativeWriter::new(out, opened.record_cores, tenants)?,
    }
    .compress_beside()?;
    let source = opened.source.as_mut();
    let mut buf: Vec<Access> = Vec::with_capacity(4096);
    loop {
        buf.clear();
        source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            break;
        }
        for a in &buf {
            match tenant {
                Some(t) => w.push(&Access { tenant: t, ..*a })?,
                None => w.push(a)?,
            }
        }
    }
    if let Some(meta) = source.meta() {
        w.set_meta(meta.to_vec());
    }
    let done = w.finish()?;
    Ok((done.records, done.bytes))
}

/// `tiersim convert`.
pub fn convert(args: &ConvertArgs) -> Result<()> {
    let file = match args.output.as_str() {
        "-" => None,
        path => Some(OutputFile::create("", Path::new(path), &[&args.input], &[])?),
    };
    interrupt::install(false);
    let mut opened = trace::open(&args.input, &open_options(&args.format, args.skip_malformed)?)?;
    print_notes(&opened);
    let out: Box<dyn Write> = match &file {
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())),
        Some(f) => Box::new(BufWriter::with_capacity(1 << 20, f.handle()?)),
    };
    let started = Instant::now();
    let (records, bytes) = write_native(&mut opened, out, args.tenant)?;
    let skipped = opened.source.malformed_skipped();
    if records == 0 {
        // The output is dropped uncommitted: nothing is left under its name.
        let why = if skipped > 0 { format!(" ({skipped} malformed lines skipped)") } else { String::new() };
        bail!("{}: the trace is empty: it holds no memory references{why}; nothing converted", args.input);
    }
    if let Some(f) = file {
        f.commit()?;
    }
    let secs = started.elapsed().as_secs_f64();
    let mut msg = format!(
        "converted {} ({}) to {}: {records} accesses, {bytes} bytes ({:.3} bytes/access), {:.1} M accesses/s",
        args.input,
        opened.format,
        args.output,
        bytes as f64 / records.max(1) as f64,
        records as f64 / secs / 1e6
    );
    if skipped > 0 {
        msg += &format!("; skipped {skipped} malformed lines");
    }
    if args.output == "-" {
        eprintln!("{msg}");
    } else {
        println!("{msg}");
    }
    Ok(())
}
