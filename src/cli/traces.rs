//! The trace commands: `record` (capture a program's trace with valgrind lackey),
//! `convert` (any format to native) and `inspect` (statistics).
//!
//! `record` streams lackey's output through a pipe straight into the lackey reader
//! and the native writer, so no text trace ever reaches the disk: valgrind writes
//! its log to file descriptor 3 of its process (`--log-fd=3`), which is the write
//! end of a pipe this process reads; the program's own standard output and error
//! are left alone. Parsing and compression run on this process's thread while
//! valgrind runs the program on its own, so on two cores the capture costs little
//! more than lackey alone.
//!
//! Valgrind writes every trace line with its own `write` call (about 14 bytes). A
//! reader blocked on the pipe would be woken for each of them, and those wake-ups
//! would triple the run time; so the pipe is enlarged to 1 MiB and the reader
//! ([`PipeBatcher`]) waits, a millisecond at a time, until a good share of it is
//! full before reading. The writer then never waits and is never woken: it costs
//! what writing to `/dev/null` costs, plus a copy.

use super::interrupt;
use super::output::OutputFile;
use crate::trace::native::NativeWriter;
use crate::trace::{self, inspect as analysis, Access, Format, OpenOptions, Opened};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Native trace to write (default: PROGRAM's name with `.tsim`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

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
pub struct InspectArgs {
    /// Trace to read (`-` for standard input), any supported format, optionally compressed.
    pub trace: String,
    /// References per interval of the hot-page statistics.
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    pub interval: u64,
    /// Format of the trace (default: detected from its content).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed lines (and count them) instead of stopping at the first.
    #[arg(long)]
    pub skip_malformed: bool,
    /// Write every statistic as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn open_options(format: &Option<String>, skip_malformed: bool) -> Result<OpenOptions> {
    Ok(OpenOptions { format: format.as_deref().map(Format::parse).transpose()?, skip_malformed })
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
    let json = OutputFile::create_opt("--json", &args.json, &[&args.trace], &[])?;
    interrupt::install(false);
    let mut opened = trace::open(&args.trace, &open_options(&args.format, args.skip_malformed)?)?;
    print_notes(&opened);
    let mut r = analysis::inspect(opened.source.as_mut(), args.interval)?;
    r.trace = args.trace.clone();
    r.format = match opened.compression {
        Some(c) => format!("{}, {c}-compressed", opened.format),
        None => opened.format.name().to_string(),
    };
    print!("{}", analysis::table(&r));
    if let Some(out) = json {
        out.write_all_and_commit((serde_json::to_string_pretty(&r)? + "\n").as_bytes())?;
    }
    Ok(())
}

/// Copies `source` into a native trace on `out`; returns (records, bytes written).
fn write_native(source: &mut dyn trace::Source, out: Box<dyn Write>, cores: bool, tenant: Option<u16>, keep_tenants: bool) -> Result<(u64, u64)> {
    let mut w = NativeWriter::new(out, cores, tenant.is_some() || keep_tenants)?;
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
    let (records, bytes) = write_native(opened.source.as_mut(), out, opened.record_cores, args.tenant, opened.record_tenants)?;
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
    let skipped = opened.source.malformed_skipped();
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

/// Returns the file `program` runs: a path to an existing file, or the first match
/// on `PATH`.
fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|d| d.join(program)).find(|p| p.is_file())
}

fn runnable(program: &str) -> bool {
    resolve(program).is_some()
}

/// A pipe's read end that lets data pile up before reading it (see the module docs).
struct PipeBatcher {
    pipe: io::PipeReader,
    /// Bytes worth waking up for: a quarter of the pipe's capacity.
    want: libc::c_int,
}

impl PipeBatcher {
    /// Longest wait before reading whatever is there (the writer may be slow, or done).
    const MAX_WAITS: u32 = 20;

    /// Enlarges the pipe to 1 MiB (or as much as the system allows) and wraps it.
    fn new(pipe: io::PipeReader) -> PipeBatcher {
        let fd = pipe.as_raw_fd();
        // SAFETY: fcntl on a descriptor this process owns. A refused size leaves the
        // pipe as it was; its actual size is read back.
        let size = unsafe {
            libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
            libc::fcntl(fd, libc::F_GETPIPE_SZ)
        };
        PipeBatcher { pipe, want: if size > 0 { size / 4 } else { 16 << 10 } }
    }

    /// Bytes waiting in the pipe.
    fn available(&self) -> libc::c_int {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer, which is valid.
        let r = unsafe { libc::ioctl(self.pipe.as_raw_fd(), libc::FIONREAD, &mut n) };
        if r < 0 {
            self.want
        } else {
            n
        }
    }
}

impl io::Read for PipeBatcher {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = self.want.min(buf.len() as libc::c_int);
        for _ in 0..Self::MAX_WAITS {
            if self.available() >= want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.pipe.read(buf)
    }
}

/// `tiersim record`.
pub fn record(args: &RecordArgs) -> Result<()> {
    let program = &args.program[0];
    if !runnable("valgrind") {
        bail!("record: valgrind not found on PATH; install it (e.g. apt-get install -y valgrind)");
    }
    let Some(file) = resolve(program) else { bail!("record: program `{program}` not found") };
    let mut magic = [0u8; 2];
    if File::open(&file).and_then(|mut f| io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == b"#!" {
        eprintln!(
            "tiersim: note: {} is a script: valgrind traces its interpreter, and not the programs it runs with exec (a wrapper such as a pyenv shim); give the real binary to trace that",
            file.display()
        );
    }
    let out_path = args.out.clone().unwrap_or_else(|| {
        let base = Path::new(program).file_name().map_or("trace".into(), |n| n.to_string_lossy().to_string());
        PathBuf::from(format!("{base}.tsim"))
    });
    let output = OutputFile::create("--out", &out_path, &[&file.to_string_lossy()], &[])?;
    interrupt::install(false);
    let (reader, writer) = io::pipe().context("record: cannot create a pipe")?;
    let reader = PipeBatcher::new(reader);
    let fd = writer.as_raw_fd();
    let mut cmd = Command::new("valgrind");
    cmd.args(["--tool=lackey", "--trace-mem=yes", "--basic-counts=no", "--log-fd=3"]).args(&args.program);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe functions (dup2, fcntl) on file descriptors it owns.
    unsafe {
        cmd.pre_exec(move || {
            // Put the pipe's write end on descriptor 3, open across exec.
            let r = if fd == 3 { libc::fcntl(3, libc::F_SETFD, 0) } else { libc::dup2(fd, 3) };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().context("record: cannot start valgrind")?;
    drop(writer);
    drop(cmd);
    let mut source = trace::lackey::LackeyReader::new(Box::new(reader), "valgrind lackey output".into(), false);
    let out = Box::new(BufWriter::with_capacity(1 << 20, output.handle()?));
    let result = write_native(&mut source, out, false, None, false);
    let status: ExitStatus = match &result {
        Ok(_) => child.wait()?,
        Err(_) => {
            let _ = child.kill();
            child.wait()?
        }
    };
    let (records, bytes) = result.with_context(|| format!("record: {}", out_path.display()))?;
    let code = status.code().map_or_else(|| "a signal".to_string(), |c| format!("exit code {c}"));
    if !status.success() && records == 0 {
        return Err(anyhow!("record: valgrind failed ({code}) before tracing anything"));
    }
    output.commit()?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "recorded {records} accesses from `{}` in {secs:.2} s: {:.2} M accesses/s captured",
        args.program.join(" "),
        records as f64 / secs / 1e6
    );
    println!("wrote {} ({bytes} bytes, {:.3} bytes/access)", out_path.display(), bytes as f64 / records.max(1) as f64);
    if !status.success() {
        eprintln!("tiersim: note: `{program}` ended with {code}; the trace covers it up to there");
    }
    Ok(())
}
