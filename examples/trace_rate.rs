//! Measures how fast a trace reader runs, single-threaded: the trace is read to the
//! end in batches of 4096 as the engine does, seven times, and the median and the
//! best rate are reported in accesses per second and, for text traces, in lines per
//! second (as `examples/rate.rs` does, the best run is the one least disturbed by
//! other load on the machine).
//! The file is read once first so that it sits in the page cache. Both the wall
//! time and the thread's CPU time are measured: on a shared machine the wall time
//! also counts the time other processes held the core. Run with
//! `cargo run --release --example trace_rate -- FILE [FORMAT]`.

use std::time::Instant;
use tiersim::trace::{open, Format, OpenOptions};

const RUNS: usize = 7;

/// CPU time consumed by this thread, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else { anyhow::bail!("usage: trace_rate FILE [FORMAT]") };
    let format = args.get(1).map(|f| Format::parse(f)).transpose()?;
    let bytes = std::fs::read(path)?;
    // Lines of the decompressed content (this read also warms the page cache).
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut tiersim::trace::decompress::open(path)?.reader, &mut text)?;
    let lines = text.iter().filter(|&&b| b == b'\n').count();
    drop(text);
    let mut rates = Vec::new();
    let mut cpu = Vec::new();
    let mut records = 0u64;
    let mut detected = Format::Native;
    for _ in 0..RUNS {
        let mut o = open(path, &OpenOptions { format, ..OpenOptions::default() })?;
        detected = o.format;
        let mut buf = Vec::with_capacity(4096);
        let (mut n, mut sum) = (0u64, 0u64);
        let start = Instant::now();
        let cpu_start = thread_cpu_seconds();
        loop {
            buf.clear();
            o.source.fill(&mut buf, 4096)?;
            if buf.is_empty() {
                break;
            }
            n += buf.len() as u64;
            sum = buf.iter().fold(sum, |s, a| s.wrapping_add(a.vaddr ^ a.instrs as u64));
        }
        let secs = start.elapsed().as_secs_f64();
        cpu.push(thread_cpu_seconds() - cpu_start);
        std::hint::black_box(sum);
        records = n;
        rates.push(secs);
    }
    rates.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let secs = rates[RUNS / 2];
    let cpu_secs = cpu[RUNS / 2];
    let best = cpu[0];
    println!("{path} ({detected}): {records} accesses, {} bytes ({:.3} bytes/access)", bytes.len(), bytes.len() as f64 / records.max(1) as f64);
    for (what, t) in [("median wall", secs), ("median CPU", cpu_secs), ("best CPU", best)] {
        print!("{what} time of {RUNS}: {t:.3} s, {:.1} M accesses/s", records as f64 / t / 1e6);
        if detected.is_text() {
            print!(", {:.1} M lines/s ({lines} lines)", lines as f64 / t / 1e6);
        }
        println!();
    }
    Ok(())
}
