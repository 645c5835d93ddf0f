//! `tiersim tier-stream`: one tier alone, driven by a synthetic stream of 64-byte
//! requests offered at a fixed rate, as a DRAM simulator's trace front end drives its
//! memory controller, so that the tier's timing can be set beside another
//! simulator's on the same input (docs/machine.md, "Against Ramulator 2").
//!
//! The stream is lines of the tier-local address space, random or sequential over a
//! footprint, each a read or a write by a fixed read:write pattern. Nothing else of
//! the machine takes part: no core, TLB or cache, so every request reaches the tier
//! as it is, a write as a write (not a write-allocate read and a later write-back).
//!
//! Request `i` is offered one interval after request `i − 1` was accepted, on a grid
//! of whole intervals, as a front end that ticks once per interval and offers its
//! next request until the controller takes it (Ramulator 2's `LoadStoreTrace`,
//! `src/ramulator/frontend/impl/memory_trace/loadstore_trace.cpp`). It is accepted
//! when fewer than `in_flight` requests of its kind (reads, or writes) are unfinished,
//! which stands for a controller's read and write buffers refusing requests when full.
//! The same stream can be written as a `LoadStoreTrace` file (`LD`/`ST` and the
//! address), so both simulators see the same addresses in the same order.

use super::output::OutputFile;
use super::ConfigArgs;
use crate::machine::tier::{Tier, TierConfig};
use crate::machine::TiersConfig;
use crate::rng::Rng;
use crate::units::Size;
use anyhow::{anyhow, bail, ensure, Result};
use clap::Args;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Arguments of `tiersim tier-stream`.
#[derive(Args, Debug)]
pub struct TierStreamArgs {
    /// TOML configuration file whose machine holds the tier.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Built-in preset whose machine holds the tier.
    #[arg(long)]
    pub preset: Option<String>,
    /// Override any configuration key, e.g. machine.tiers.fast.read_hit_ns=17.5.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The tier to drive: fast, slow, or extra[N].
    #[arg(long, default_value = "fast")]
    pub tier: String,
    /// `random` (lines drawn uniformly from the footprint) or `sequential` (line after
    /// line from address 0, wrapping at the footprint).
    #[arg(long, default_value = "random")]
    pub pattern: String,
    /// `read`, or reads and writes as R:W (e.g. 2:1): of every R + W requests the
    /// first R are reads.
    #[arg(long, default_value = "read")]
    pub rw: String,
    /// Time between two requests offered, in ns; rounded to whole core cycles.
    #[arg(long, value_name = "NS")]
    pub interval_ns: f64,
    /// Requests in the stream.
    #[arg(long, default_value_t = 100_000)]
    pub requests: u64,
    /// Bytes of the tier-local address space the stream covers, from address 0.
    #[arg(long, default_value = "1GiB")]
    pub footprint: String,
    /// Seed of the random pattern.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Most unfinished reads, and most unfinished writes, at once; a request of a kind
    /// that has this many waits until one finishes. 32 is the size of Ramulator 2's
    /// read and write buffers (`read_buffer_size`, `write_buffer_size` of its
    /// controller).
    #[arg(long, default_value_t = 32)]
    pub in_flight: usize,
    /// Also write the stream as a Ramulator 2 `LoadStoreTrace` file (`LD 0x…` / `ST 0x…`).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
}

/// Which lines a stream touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    Random,
    Sequential,
}

/// A stream of 64-byte requests: tier-local line addresses and whether each is a write.
pub(crate) struct Stream {
    pattern: Pattern,
    lines: u64,
    reads: u64,
    period: u64,
    rng: Rng,
    next: u64,
}

impl Stream {
    /// A stream over the first `footprint_bytes` of the tier (at least one line), in
    /// which of every `reads + writes` requests the first `reads` are reads.
    pub(crate) fn new(pattern: Pattern, footprint_bytes: u64, reads: u64, writes: u64, seed: u64) -> Stream {
        Stream { pattern, lines: (footprint_bytes >> 6).max(1), reads, period: reads + writes, rng: Rng::new(seed), next: 0 }
    }
}

impl Iterator for Stream {
    type Item = (u64, bool);

    fn next(&mut self) -> Option<(u64, bool)> {
        let i = self.next;
        self.next += 1;
        let line = match self.pattern {
            Pattern::Random => self.rng.below(self.lines),
            Pattern::Sequential => i % self.lines,
        };
        Some((line << 6, i % self.period >= self.reads))
    }
}

/// What a stream measured on a tier.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub reads: u64,
    pub writes: u64,
    /// Sum of the reads' latencies (accepted to data back), in core cycles.
    pub read_latency_cycles: u64,
    /// When the last request finished, in core cycles from the first offer at 0.
    pub end_cycle: u64,
}

/// Offers `requests` requests of `stream` to `tier`, one every `interval_cycles` (at
/// least 1) on a grid of whole intervals, each accepted when fewer than `in_flight`
/// requests of its kind are unfinished (module documentation), and measures them.
pub(crate) fn drive(tier: &mut Tier, stream: impl Iterator<Item = (u64, bool)>, requests: u64, interval_cycles: u64, in_flight: usize) -> Measured {
    let iv = interval_cycles.max(1);
    let cap = in_flight.max(1);
    // Completion cycles of the unfinished reads (0) and writes (1), earliest on top.
    let mut unfinished: [BinaryHeap<Reverse<u64>>; 2] = [BinaryHeap::new(), BinaryHeap::new()];
    let mut m = Measured::default();
    let mut offer = 0;
    for (i, (addr, write)) in stream.take(requests as usize).enumerate() {
        let mut at = if i == 0 { 0 } else { offer + iv };
        let pending = &mut unfinished[write as usize];
        while pending.peek().is_some_and(|r| r.0 <= at) {
            pending.pop();
        }
        if pending.len() >= cap {
            let Reverse(free) = pending.pop().expect("a full window has an earliest entry");
            // The front end retries on every tick: the first grid point at which a slot is free.
            at = at.max(free.div_ceil(iv) * iv);
        }
        offer = at;
        let finish = at + tier.access(addr, write, at);
        pending.push(Reverse(finish));
        if write {
            m.writes += 1;
        } else {
            m.reads += 1;
            m.read_latency_cycles += finish - at;
        }
        m.end_cycle = m.end_cycle.max(finish);
    }
    m
}

/// Writes the first `requests` requests of `stream` as a Ramulator 2 `LoadStoreTrace`:
/// one line each, `LD` (read) or `ST` (write), a space and the address in hex.
pub(crate) fn write_trace(w: &mut impl Write, stream: impl Iterator<Item = (u64, bool)>, requests: u64) -> std::io::Result<()> {
    for (addr, write) in stream.take(requests as usize) {
        writeln!(w, "{} {addr:#x}", if write { "ST" } else { "LD" })?;
    }
    w.flush()
}

/// Parses `read` or `R:W` into (reads, writes) per period.
fn parse_rw(text: &str) -> Result<(u64, u64)> {
    if text == "read" {
        return Ok((1, 0));
    }
    let (r, w) = text.split_once(':').ok_or_else(|| anyhow!("--rw: expected `read` or R:W such as 2:1, got `{text}`"))?;
    let number = |v: &str| v.trim().parse::<u64>().map_err(|_| anyhow!("--rw: `{v}` in `{text}` is not a whole number"));
    let (r, w) = (number(r)?, number(w)?);
    ensure!(r + w > 0, "--rw: {text} has no request at all");
    Ok((r, w))
}

/// The tier named `name` (fast, slow, extra[N]) of `tiers`.
fn tier_config<'a>(tiers: &'a TiersConfig, name: &str) -> Result<&'a TierConfig> {
    let all = tiers.all();
    let index = match name {
        "fast" => 0,
        "slow" => 1,
        _ => name
            .strip_prefix("extra[")
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|n| n.parse::<usize>().ok())
            .map(|n| n + 2)
            .ok_or_else(|| anyhow!("--tier: expected fast, slow or extra[N], got `{name}`"))?,
    };
    all.get(index).copied().ok_or_else(|| anyhow!("--tier: the machine has no tier {name}"))
}

/// Runs `tiersim tier-stream`: prints the configuration driven and the figures.
pub fn tier_stream(args: &TierStreamArgs) -> Result<()> {
    let cfg = ConfigArgs { config: args.config.clone(), preset: args.preset.clone(), sets: args.sets.clone(), ..Default::default() }.load()?;
    let pattern = match args.pattern.as_str() {
        "random" => Pattern::Random,
        "sequential" => Pattern::Sequential,
        other => bail!("--pattern: expected random or sequential, got `{other}`"),
    };
    let (reads, writes) = parse_rw(&args.rw)?;
    let footprint = Size::parse(&args.footprint).map_err(|e| anyhow!("--footprint: {e}"))?.bytes();
    ensure!(footprint >= 64, "--footprint: must be at least one 64-byte line, got {}", args.footprint);
    ensure!(args.requests > 0, "--requests: must be at least 1");
    ensure!(args.in_flight > 0, "--in-flight: must be at least 1");
    ensure!(
        args.interval_ns.is_finite() && args.interval_ns > 0.0,
        "--interval-ns: must be a positive number of nanoseconds, got {}",
        args.interval_ns
    );
    let ghz = cfg.machine.freq_ghz;
    let interval_cycles = ((args.interval_ns * ghz).round() as u64).max(1);
    let tc = tier_config(&cfg.machine.tiers, &args.tier)?;
    let mut tier = Tier::new(tc, footprint.next_multiple_of(4096), ghz).map_err(|e| anyhow!("machine.tiers.{}.{e}", args.tier))?;

    if let Some(path) = &args.trace_out {
        let out = OutputFile::create("--trace-out", path, &[], &[])?;
        let mut w = BufWriter::new(out.handle()?);
        write_trace(&mut w, Stream::new(pattern, footprint, reads, writes, args.seed), args.requests)
            .map_err(|e| anyhow!("--trace-out {}: cannot write: {e}", path.display()))?;
        drop(w);
        out.commit()?;
    }

    let stream = Stream::new(pattern, footprint, reads, writes, args.seed);
    let m = drive(&mut tier, stream, args.requests, interval_cycles, args.in_flight);
    let ns = |cycles: f64| cycles / ghz;
    let stats = tier.stats();
    println!(
        "tier {} ({}): {} channel(s), {} banks each; {} {} lines, rw {}, one offered every {} cycles ({:.3} ns) at {ghz} GHz, at most {} reads and {} writes unfinished",
        args.tier,
        tier.name(),
        tier.channels(),
        tc.banks,
        args.requests,
        args.pattern,
        args.rw,
        interval_cycles,
        ns(interval_cycles as f64),
        args.in_flight,
        args.in_flight
    );
    let offered_gbps = 64.0 * ghz / interval_cycles as f64;
    let achieved_gbps = (m.reads + m.writes) as f64 * 64.0 / ns(m.end_cycle as f64);
    let read_latency_ns = if m.reads > 0 { ns(m.read_latency_cycles as f64 / m.reads as f64) } else { 0.0 };
    let demand = stats.row_hits + stats.row_misses;
    println!("offered_gbps {offered_gbps:.3}");
    println!("achieved_gbps {achieved_gbps:.3}");
    println!("avg_read_latency_ns {read_latency_ns:.2}");
    println!("reads {} writes {}", m.reads, m.writes);
    println!("row_hit_share {:.3}", if demand > 0 { stats.row_hits as f64 / demand as f64 } else { 0.0 });
    println!("simulated_ns {:.0}", ns(m.end_cycle as f64));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One channel, 2 banks of 128-byte rows, 1 GHz: a 64-byte burst of 10 cycles
    /// (6.4 GB/s), read hit 20 and miss 40 cycles, no write queue.
    fn small_tier() -> Tier {
        let cfg = TierConfig {
            channels: 1,
            banks: 2,
            row_bytes: Size(128),
            read_hit_ns: 20.0,
            read_miss_ns: 40.0,
            write_hit_ns: 20.0,
            write_miss_ns: 40.0,
            channel_gbps: 6.4,
            write_queue_entries: 0,
            ..TierConfig::default()
        };
        Tier::new(&cfg, 1 << 20, 1.0).unwrap()
    }

    #[test]
    fn sequential_stream_walks_lines_and_mixes_by_pattern() {
        let s: Vec<_> = Stream::new(Pattern::Sequential, 256, 2, 1, 7).take(5).collect();
        // Four lines of footprint, wrapping; of every three requests the third is a write.
        assert_eq!(s, vec![(0, false), (64, false), (128, true), (192, false), (0, false)]);
    }

    #[test]
    fn random_stream_stays_in_its_footprint_and_is_seeded() {
        let a: Vec<_> = Stream::new(Pattern::Random, 1 << 20, 1, 0, 3).take(1000).collect();
        assert!(a.iter().all(|&(addr, w)| addr < 1 << 20 && addr % 64 == 0 && !w));
        let b: Vec<_> = Stream::new(Pattern::Random, 1 << 20, 1, 0, 3).take(1000).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn an_idle_stream_sees_the_device_latency() {
        // Lines 0, 64, 128, … one every 1000 cycles: the default mapping puts lines 0
        // and 1 in bank 0's row 0, lines 2 and 3 in bank 1's row 0, then bank 0's row 1…
        // So misses and hits alternate: 40, 20, 40, 20 cycles; nothing ever waits.
        let mut t = small_tier();
        let m = drive(&mut t, Stream::new(Pattern::Sequential, 1 << 20, 1, 0, 1), 4, 1000, 32);
        assert_eq!(m, Measured { reads: 4, writes: 0, read_latency_cycles: 40 + 20 + 40 + 20, end_cycle: 3000 + 20 });
    }

    #[test]
    fn a_full_window_holds_the_next_request_to_the_interval_grid() {
        // One read in flight at most, offered every 15 cycles. Read 0 (miss) is taken at 0
        // and done at 40; read 1 (hit, same row) is offered at 15, refused until 40, and
        // taken at the grid point 45: done at 45 + 20 = 65 (its bank freed at 40). Read 2
        // (miss in bank 1) is offered at 60, waits for 65, taken at 75, done at 115.
        let mut t = small_tier();
        let m = drive(&mut t, Stream::new(Pattern::Sequential, 1 << 20, 1, 0, 1), 3, 15, 1);
        assert_eq!(m, Measured { reads: 3, writes: 0, read_latency_cycles: 40 + 20 + 40, end_cycle: 115 });
    }

    #[test]
    fn the_trace_written_is_the_stream_as_tiersims_ramulator2_reader_reads_it() {
        use crate::trace::ramulator::{Kind, RamulatorReader};
        use crate::trace::Source;
        let mut text = Vec::new();
        write_trace(&mut text, Stream::new(Pattern::Random, 1 << 30, 2, 1, 5), 300).unwrap();
        assert!(text.starts_with(b"LD 0x"));
        let mut reader = RamulatorReader::new(Box::new(std::io::Cursor::new(text)), "t".into(), false, Kind::LoadStore);
        let mut read = Vec::new();
        reader.fill(&mut read, 1000).unwrap();
        let back: Vec<(u64, bool)> = read.iter().map(|a| (a.vaddr, a.is_write())).collect();
        let stream: Vec<(u64, bool)> = Stream::new(Pattern::Random, 1 << 30, 2, 1, 5).take(300).collect();
        assert_eq!(back, stream);
        assert_eq!(back.iter().filter(|r| r.1).count(), 100);
    }

    #[test]
    fn rw_parses_read_and_ratios() {
        assert_eq!(parse_rw("read").unwrap(), (1, 0));
        assert_eq!(parse_rw("2:1").unwrap(), (2, 1));
        assert!(parse_rw("0:0").is_err());
        assert!(parse_rw("x").is_err());
    }
}
