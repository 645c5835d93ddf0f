//! `loaded-latency`: a machine's memory latency against its bandwidth, measured as
//! Intel's Memory Latency Checker does (`mlc --loaded_latency`): one core chases
//! dependent pointers while the others inject traffic at a set rate.
//!
//! The footprint is split in two disjoint regions, so that traffic never brings the
//! probe's lines into the caches:
//! - the *probe* region, the first `probe_share` of the footprint (whole 4 KiB pages),
//!   which core 0 chases exactly as the `chase` generator does (one random cycle
//!   through every 64-byte line, every load [`DEPENDENT`], `instrs` instructions
//!   between loads);
//! - the *traffic* region, the rest, over which every other core issues whole 64-byte
//!   lines, one reference per line, `delay_instrs` non-memory instructions apart (MLC's
//!   `-d` delay between requests), either in address order from its own random start
//!   (`sequential`) or at uniformly random lines (`random`). Every `rw` period, the
//!   last reference is a store: `read` issues none, `3:1` one in four, `2:1` one in
//!   three, `1:1` every other. A store is a write-back cache's store: its line is read
//!   (read for ownership) and written back when evicted, as MLC's default stores are.
//!
//! A traffic core's loads are independent, so each stalls its core for its latency
//! over `machine.mlp` and the core injects one line every `(delay_instrs + 1) ·
//! base_cpi` cycles plus that stall: a closed loop in which a rising latency slows the
//! injection down, as on a real core with a bounded number of misses in flight.
//!
//! The delay is a pause loop, not one long gap: iterations of [`PAUSE_STEP`]
//! instructions, each a load of one line that stays in the core's L1 (the loop's
//! counter), then the rest of `delay_instrs` on the line's own record. The engine
//! issues a reference after advancing its core's clock by the reference's
//! instructions, and interleaves cores by their clocks before that; one record
//! carrying thousands of instructions would reach memory thousands of cycles ahead of
//! the probe's loads and make them queue behind a future request (the tiers serve
//! requests in arrival order). Pause iterations keep every traffic access within
//! [`PAUSE_STEP`] cycles of time order. They are references of the traffic cores
//! (L1 hits that never reach memory), so those cores' reference counts include them.
//! The
//! tier under test is chosen by the placement: `--policy all-fast` puts every page in
//! the fast tier, `--policy all-slow` in the slow tier.
//!
//! The figures the run gives (the report's `loaded_latency`, filled by
//! [`crate::report`]) are the probe core's average load latency and every tier's
//! demand bandwidth over the run. Every core should run for the same simulated time,
//! so a run of this workload is given `engine.seconds` (`--seconds`); with a count of
//! references alone the cores end at different times, the survivors run unloaded,
//! and the report says so in a note. Epochs mode, which prices
//! time from rates rather than simulating each reference's queueing, refuses it.

use super::chase::Chase;
use super::{share_in_pages, stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Access, Source, LINE_BYTES, WRITE};
use crate::units::Size;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Instructions of one iteration of a traffic core's pause loop, its load included.
pub const PAUSE_STEP: u32 = 16;

/// Reads to writes of the traffic cores' references (MLC's `-W` traffic types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadWrite {
    /// Loads only (MLC `-W1`).
    #[serde(rename = "read")]
    ReadOnly,
    /// Three loads, then a store (MLC `-W3`).
    #[serde(rename = "3:1")]
    ThreeToOne,
    /// Two loads, then a store (MLC `-W2`).
    #[serde(rename = "2:1")]
    TwoToOne,
    /// A load, then a store (MLC `-W5`).
    #[serde(rename = "1:1")]
    OneToOne,
}

impl ReadWrite {
    /// References per period of the pattern, the last of which is a store; 0 for
    /// read-only traffic.
    fn period(self) -> u32 {
        match self {
            ReadWrite::ReadOnly => 0,
            ReadWrite::ThreeToOne => 4,
            ReadWrite::TwoToOne => 3,
            ReadWrite::OneToOne => 2,
        }
    }
}

/// Order of the lines a traffic core touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Consecutive lines in address order, wrapping at the end of the region.
    Sequential,
    /// Uniformly random lines of the region.
    Random,
}

/// The `[workload.loaded_latency]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadedLatencyConfig {
    /// Non-memory instructions a traffic core executes between consecutive references:
    /// the injection delay (MLC's `-d`, in instructions instead of cycles of a pause
    /// loop). 0 injects as fast as the core's misses in flight allow; larger delays
    /// inject less.
    pub delay_instrs: u32,
    /// Reads to writes of the traffic: "read", "3:1", "2:1" or "1:1".
    pub rw: ReadWrite,
    /// Order of the traffic's lines: "sequential" or "random".
    pub pattern: Pattern,
    /// Share of the footprint the probe chases, in (0, 1); rounded to whole 4 KiB
    /// pages, the rest (at least one page) is the traffic's. Both should be several
    /// times the last-level cache, so that the probe's loads all miss it.
    pub probe_share: f64,
}

impl Default for LoadedLatencyConfig {
    fn default() -> LoadedLatencyConfig {
        LoadedLatencyConfig { delay_instrs: 0, rw: ReadWrite::ReadOnly, pattern: Pattern::Sequential, probe_share: 0.5 }
    }
}

impl LoadedLatencyConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if !(self.probe_share > 0.0 && self.probe_share < 1.0) {
            bail!("workload.loaded_latency.probe_share: must be in (0, 1), got {}", self.probe_share);
        }
        Ok(())
    }
}

/// Validates what depends on the footprint and returns it: the probe and the
/// traffic need a page each.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    let bytes = cfg.footprint.bytes();
    if bytes < 2 * PAGE_BYTES {
        bail!("workload.footprint: loaded-latency needs at least 8KiB (a page for the probe, one for the traffic), got {}", cfg.footprint);
    }
    Ok(bytes)
}

/// Whole pages of the probe's region: `probe_share` of the footprint, leaving the
/// traffic at least one page.
fn probe_pages(cfg: &WorkloadConfig) -> u64 {
    let bytes = cfg.footprint.bytes();
    share_in_pages(cfg.loaded_latency.probe_share, bytes).min(bytes / PAGE_BYTES - 1)
}

/// Builds core `core`'s generator: the probe's chase on core 0, traffic elsewhere.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Box<dyn Source> {
    let probe_bytes = probe_pages(cfg) * PAGE_BYTES;
    if core == 0 {
        let probe = WorkloadConfig { footprint: Size(probe_bytes), ..cfg.clone() };
        return Box::new(Chase::new(&probe, core, tenant));
    }
    Box::new(Traffic::new(cfg, core, tenant, cfg.base_vaddr + probe_bytes, (cfg.footprint.bytes() - probe_bytes) / LINE_BYTES))
}

/// Generator of one traffic core's line references.
#[derive(Clone, Debug)]
struct Traffic {
    emitter: Emitter,
    rng: Rng,
    /// First address of the traffic region.
    base_vaddr: u64,
    /// Whole lines in the traffic region.
    lines: u64,
    /// Next line of a sequential sweep.
    next_line: u64,
    pattern: Pattern,
    /// References per read/write period (0: no stores).
    period: u32,
    /// Position of the next line in its read/write period.
    phase: u32,
    /// Pause iterations between two lines.
    pauses: u64,
    /// Pause iterations left before the next line.
    pauses_left: u64,
    /// The pause loop's load: the first line of the traffic region, read at the
    /// start of the iteration's instructions.
    pause: Access,
}

impl Traffic {
    fn new(cfg: &WorkloadConfig, core: u16, tenant: u16, base_vaddr: u64, lines: u64) -> Traffic {
        let delay = cfg.loaded_latency.delay_instrs;
        let mut emitter = Emitter::new(cfg, core, tenant, LINE_BYTES as u32);
        emitter.template.instrs = delay % PAUSE_STEP;
        let pause = Access { vaddr: base_vaddr, instrs: PAUSE_STEP - 1, size: 8, ..emitter.record(base_vaddr, 0) };
        let mut rng = stream_rng(cfg, core, tenant);
        let next_line = rng.below(lines);
        Traffic {
            emitter,
            rng,
            base_vaddr,
            lines,
            next_line,
            pattern: cfg.loaded_latency.pattern,
            period: cfg.loaded_latency.rw.period(),
            phase: 0,
            pauses: (delay / PAUSE_STEP) as u64,
            pauses_left: 0,
            pause,
        }
    }
}

impl Source for Traffic {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        let n = self.emitter.take(max);
        out.reserve(n);
        for _ in 0..n {
            if self.pauses_left > 0 {
                self.pauses_left -= 1;
                out.push(self.pause);
                continue;
            }
            self.pauses_left = self.pauses;
            let line = match self.pattern {
                Pattern::Sequential => {
                    let line = self.next_line;
                    self.next_line += 1;
                    if self.next_line == self.lines {
                        self.next_line = 0;
                    }
                    line
                }
                Pattern::Random => self.rng.below(self.lines),
            };
            let mut flags = 0;
            if self.period > 0 {
                self.phase += 1;
                if self.phase == self.period {
                    self.phase = 0;
                    flags = WRITE;
                }
            }
            out.push(self.emitter.record(self.base_vaddr + line * LINE_BYTES, flags));
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// A sweep and the read/write pattern move on by the lines among the `n` records,
    /// the pause loop by the rest; random lines are drawn independently, so skipping
    /// draws nothing.
    fn skip(&mut self, n: u64) -> bool {
        let n = self.emitter.skip(n);
        if n <= self.pauses_left {
            self.pauses_left -= n;
            return true;
        }
        // The next line, then whole lines with their pauses, then `rest` pauses.
        let after = n - self.pauses_left - 1;
        let lines = 1 + after / (self.pauses + 1);
        let rest = after % (self.pauses + 1);
        self.pauses_left = self.pauses - rest;
        self.next_line = (self.next_line + lines % self.lines) % self.lines;
        if self.period > 0 {
            self.phase = ((self.phase as u64 + lines) % self.period as u64) as u32;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::build;
    use super::super::tests::{check_determinism, collect, config};
    use super::*;
    use crate::trace::DEPENDENT;

    /// 4 MiB footprint: 512 probe pages (2 MiB) and 512 traffic pages.
    fn records(core: u16, change: impl FnOnce(&mut WorkloadConfig)) -> (WorkloadConfig, Vec<Access>) {
        let mut cfg = config("loaded-latency");
        cfg.refs = 12_000;
        change(&mut cfg);
        let mut source = build(&cfg, core, 0).expect("valid test config");
        let all = collect(source.as_mut(), 1001);
        (cfg, all)
    }

    #[test]
    fn is_deterministic() {
        check_determinism(&config("loaded-latency"));
    }

    #[test]
    fn core_0_chases_the_probe_region_and_the_others_stay_out_of_it() {
        let (cfg, probe) = records(0, |_| {});
        let split = cfg.base_vaddr + (2 << 20);
        assert_eq!(probe.len(), 12_000);
        assert!(probe.iter().all(|a| a.flags == DEPENDENT && (cfg.base_vaddr..split).contains(&a.vaddr) && a.instrs == cfg.instrs));
        for core in [1, 5] {
            let (_, traffic) = records(core, |_| {});
            let end = cfg.base_vaddr + cfg.footprint.bytes();
            assert!(traffic.iter().all(|a| (split..end).contains(&a.vaddr) && a.vaddr % 64 == 0 && a.size == 64 && a.instrs == 0 && !a.is_dependent()));
        }
    }

    #[test]
    fn the_delay_is_a_pause_loop_of_l1_loads() {
        // 40 instructions: two pause iterations of 16 (15 + the load), then the line
        // with the other 8; every third record is a line.
        let (cfg, all) = records(1, |c| c.loaded_latency.delay_instrs = 40);
        let split = cfg.base_vaddr + (2 << 20);
        for (i, a) in all.iter().enumerate() {
            if i % 3 == 0 {
                assert_eq!((a.instrs, a.size), (8, 64), "record {i}");
            } else {
                assert_eq!((a.vaddr, a.instrs, a.size, a.flags), (split, 15, 8, 0), "record {i}");
            }
        }
        let total: u64 = all[..3].iter().map(|a| a.instrs as u64 + 1).sum();
        assert_eq!(total, 40 + 1, "the delay and the line's own load");
    }

    #[test]
    fn traffic_follows_the_read_write_pattern() {
        // A delay under one pause iteration rides on every line. Periods of 4, 3 and 2 references end with a store: 3 000, 4 000 and 6 000 of
        // the 12 000 references are stores.
        for (rw, writes) in [(ReadWrite::ReadOnly, 0), (ReadWrite::ThreeToOne, 3000), (ReadWrite::TwoToOne, 4000), (ReadWrite::OneToOne, 6000)] {
            let (_, all) = records(1, |c| {
                c.loaded_latency.rw = rw;
                c.loaded_latency.delay_instrs = 12;
            });
            assert_eq!(all.iter().filter(|a| a.is_write()).count(), writes, "{rw:?}");
            assert!(all.iter().all(|a| a.instrs == 12));
            if rw.period() > 0 {
                let p = rw.period() as usize;
                assert!(all.iter().enumerate().all(|(i, a)| a.is_write() == (i % p == p - 1)), "{rw:?}");
            }
        }
    }

    #[test]
    fn sequential_traffic_walks_consecutive_lines_and_wraps() {
        // 512 traffic pages of 64 lines: 32 768 lines, so 12 000 references wrap at
        // most once and every step is +64 bytes, or back to the region's start.
        let (cfg, all) = records(2, |_| {});
        let split = cfg.base_vaddr + (2 << 20);
        for w in all.windows(2) {
            assert!(w[1].vaddr == w[0].vaddr + 64 || w[1].vaddr == split, "{:#x} after {:#x}", w[1].vaddr, w[0].vaddr);
        }
    }

    #[test]
    fn random_traffic_spreads_over_the_region() {
        // 12 000 uniform lines over 512 pages: about 23 per page; a page with none has
        // probability e^-23.
        let (cfg, all) = records(3, |c| c.loaded_latency.pattern = Pattern::Random);
        let split = cfg.base_vaddr + (2 << 20);
        let mut per_page = vec![0u32; 512];
        for a in &all {
            per_page[((a.vaddr - split) / PAGE_BYTES) as usize] += 1;
        }
        assert!(per_page.iter().all(|&c| c > 0));
    }

    #[test]
    fn skipping_matches_generating() {
        for pattern in [Pattern::Sequential, Pattern::Random] {
            let (mut cfg, all) = records(1, |c| {
                c.loaded_latency.pattern = pattern;
                c.loaded_latency.rw = ReadWrite::TwoToOne;
                c.loaded_latency.delay_instrs = 70;
            });
            cfg.refs = 12_000;
            // 70 instructions: four pauses per line, so skips land on lines and pauses.
            for skip in [5_000, 5_001, 5_003, 5_004] {
                let mut source = build(&cfg, 1, 0).unwrap();
                assert!(source.skip(skip));
                let rest = collect(source.as_mut(), 777);
                assert_eq!(rest.len() as u64, 12_000 - skip);
                let flags = |v: &[Access]| v.iter().map(|a| (a.flags, a.size)).collect::<Vec<_>>();
                let from = skip as usize;
                assert_eq!(flags(&rest[..99]), flags(&all[from..from + 99]), "skip {skip}");
                if pattern == Pattern::Sequential {
                    assert_eq!(rest[..99], all[from..from + 99], "skip {skip}");
                }
            }
        }
    }

    #[test]
    fn skipping_without_a_delay_matches_generating() {
        for pattern in [Pattern::Sequential, Pattern::Random] {
            let (mut cfg, all) = records(1, |c| c.loaded_latency.pattern = pattern);
            cfg.refs = 12_000;
            let mut source = build(&cfg, 1, 0).unwrap();
            assert!(source.skip(5_000));
            let rest = collect(source.as_mut(), 777);
            assert_eq!(rest.len(), 7_000);
            // Sequential lines and the store pattern continue where they were; random
            // lines are fresh draws, so only the flags are compared.
            let flags = |v: &[Access]| v.iter().map(|a| a.flags).collect::<Vec<_>>();
            assert_eq!(flags(&rest[..99]), flags(&all[5_000..5_099]));
            if pattern == Pattern::Sequential {
                assert_eq!(rest[..99], all[5_000..5_099]);
            }
        }
    }

    #[test]
    fn validation_names_the_field() {
        let mut cfg = config("loaded-latency");
        cfg.loaded_latency.probe_share = 1.0;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.starts_with("workload.loaded_latency.probe_share: must be in (0, 1), got 1"), "{e}");
        let mut cfg = config("loaded-latency");
        cfg.footprint = Size(4096);
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.starts_with("workload.footprint: loaded-latency needs at least 8KiB"), "{e}");
    }

    #[test]
    fn read_write_and_pattern_parse_from_their_names() {
        #[derive(Deserialize)]
        struct T {
            rw: Vec<ReadWrite>,
            pattern: Vec<Pattern>,
        }
        let t: T = toml::from_str("rw = [\"read\", \"3:1\", \"2:1\", \"1:1\"]\npattern = [\"sequential\", \"random\"]").unwrap();
        assert_eq!(t.rw, [ReadWrite::ReadOnly, ReadWrite::ThreeToOne, ReadWrite::TwoToOne, ReadWrite::OneToOne]);
        assert_eq!(t.pattern, [Pattern::Sequential, Pattern::Random]);
        assert!(toml::from_str::<T>("rw = [\"4:1\"]\npattern = []").is_err());
    }
}
