//! The memory system below the TLBs: the cache hierarchy and the tiers behind the
//! memory controller. Every access is timed from the cycle its issuer gives, so a
//! mechanism's accesses issued one after another on its own clock form a stream
//! (see "Time and timing model" in DESIGN.md and docs/machine.md).

use super::cache::{CacheConfig, Caches, Evicted};
use super::events::{MemEvent, MemKind, Observer};
use super::redirect::Redirect;
use super::tier::Tier;
use super::TierId;
use serde::Serialize;

/// Demand accesses served by each tier and their summed latency (for AMAT).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DemandStats {
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub latency_cycles: u64,
}

/// What an access adds to a tier's [`DemandStats`]: reads and writes (by `write`),
/// and the latency.
#[derive(Clone, Copy, Debug, Default)]
struct DemandCounts {
    by_write: [u64; 2],
    latency_cycles: u64,
}

/// The tiers as the memory controller sees them.
pub struct Tiers {
    tiers: Vec<Tier>,
    demand: Vec<DemandCounts>,
    /// Per region of `1 << region_shift` bytes of physical memory: the physical
    /// address of the first byte of the tier holding it, with the tier's index in the
    /// low 12 bits (tiers start at frame boundaries). A tier starts at a region
    /// boundary, so a region belongs to one tier at most.
    regions: Vec<u64>,
    region_shift: u32,
}

/// The largest region of [`Tiers::regions`]: tiers start at 1 GiB boundaries
/// (`alloc::tier_bases`), so a machine's table has one entry per GiB.
const REGION_SHIFT: u32 = 30;

impl Tiers {
    /// The tiers, each with its [first frame, one past the last frame).
    pub(crate) fn new(tiers: Vec<Tier>, bounds: Vec<(u64, u64)>) -> Tiers {
        let n = tiers.len();
        assert!(n < 1 << 12, "{n} tiers");
        let region_shift = bounds.iter().map(|&(first, _)| (first << 12).trailing_zeros()).min().unwrap_or(REGION_SHIFT).min(REGION_SHIFT);
        let end = bounds.last().map_or(0, |&(_, last)| last << 12);
        let regions = (0..end.div_ceil(1 << region_shift))
            .map(|r| {
                let t = TierId::holding(&bounds, (r << region_shift) >> 12);
                bounds[t.index()].0 << 12 | t.0 as u64
            })
            .collect();
        Tiers { tiers, demand: vec![DemandCounts::default(); n], regions, region_shift }
    }

    /// The tier holding frame `pfn`.
    #[inline]
    pub fn tier_of(&self, pfn: u64) -> TierId {
        self.locate(pfn << 12).0
    }

    /// Tier and tier-local address of physical address `paddr`: one load from the
    /// region table.
    #[inline]
    fn locate(&self, paddr: u64) -> (TierId, u64) {
        let region = self.regions[(paddr >> self.region_shift) as usize];
        (TierId((region & 0xfff) as u8), paddr - (region & !0xfff))
    }

    /// One 64-byte access at physical address `paddr` arriving at cycle `at`, timed by
    /// its tier (queueing included), counted and reported to the observer. Returns its
    /// latency.
    #[inline(always)]
    pub fn access<O: Observer>(&mut self, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, obs: &mut O) -> u64 {
        self.access_as(core, paddr, paddr, write, kind, at, obs)
    }

    /// [`Tiers::access`] of an access the memory controller redirected: served at
    /// physical address `real`, reported to the observer under the address `paddr`
    /// the OS and the caches know it by.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn access_as<O: Observer>(&mut self, core: usize, paddr: u64, real: u64, write: bool, kind: MemKind, at: u64, obs: &mut O) -> u64 {
        let (t, local) = self.locate(real);
        let latency = self.tiers[t.index()].access(local, write, at);
        if kind == MemKind::Demand {
            let d = &mut self.demand[t.index()];
            d.by_write[write as usize] += 1;
            d.latency_cycles += latency;
        }
        obs.on_memory_access(&MemEvent { core, paddr, tier: t, write, kind, latency });
        latency
    }

    /// One 64-byte access of a mechanism (background traffic, see
    /// [`super::calendar`]) at `paddr`, issued at `at`; returns its latency. Counted as
    /// mechanism traffic, not seen by observers.
    #[inline]
    pub fn background(&mut self, paddr: u64, write: bool, at: u64) -> u64 {
        let (t, local) = self.locate(paddr);
        self.tiers[t.index()].stream_line(local, write, at) - at
    }

    pub(crate) fn get_mut(&mut self, t: TierId) -> &mut Tier {
        &mut self.tiers[t.index()]
    }

    /// Tier and tier-local address of physical address `paddr`.
    #[inline]
    pub(crate) fn local(&self, paddr: u64) -> (TierId, u64) {
        self.locate(paddr)
    }

    pub fn get(&self, t: TierId) -> &Tier {
        &self.tiers[t.index()]
    }

    pub fn all(&self) -> &[Tier] {
        &self.tiers
    }

    pub fn demand(&self, t: TierId) -> DemandStats {
        let d = &self.demand[t.index()];
        let [reads, writes] = d.by_write;
        DemandStats { accesses: reads + writes, reads, writes, latency_cycles: d.latency_cycles }
    }

    /// Counts a demand access of tier `t` that took `measured` cycles as having taken
    /// `reported` in the tier's AMAT (sampled mode's fast-forward, module
    /// `machine::sampled`).
    #[inline]
    pub(crate) fn reprice_demand(&mut self, t: TierId, measured: u64, reported: u64) {
        let d = &mut self.demand[t.index()];
        d.latency_cycles = d.latency_cycles - measured + reported;
    }
}

/// Most line reads a copy can keep in flight.
pub const MAX_IN_FLIGHT: usize = 256;

/// Caches and tiers.
pub struct Memory {
    pub(crate) caches: Caches,
    pub(crate) tiers: Tiers,
    /// The dirty lines the latest access pushed out of the caches (kept here so that
    /// an access does not set up a buffer of its own).
    evicted: Evicted,
}

impl Memory {
    pub(crate) fn new(caches: &[CacheConfig], cores: usize, tiers: Tiers) -> Memory {
        Memory { caches: Caches::new(caches, cores), tiers, evicted: Evicted::default() }
    }

    /// One access of `core` to the line holding `paddr` through the cache hierarchy,
    /// starting at cycle `at`; on a miss in every level, the memory access through the
    /// redirection structure `r`, as demand traffic or, for a mechanism
    /// (`background`), as background traffic. Dirty lines it evicts go to memory as
    /// posted writes. Returns the level that hit (the number of levels for memory) and
    /// the latency.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn cached<R: Redirect, O: Observer>(
        &mut self,
        r: &mut R,
        core: usize,
        paddr: u64,
        write: bool,
        kind: MemKind,
        at: u64,
        background: bool,
        obs: &mut O,
    ) -> (usize, u64) {
        let (level, lat) = self.caches.access(core, paddr, write, &mut self.evicted);
        if level < self.caches.depth() && self.evicted.is_empty() {
            return (level, lat);
        }
        (level, self.beyond_caches(r, core, paddr, level, lat, kind, at, background, obs))
    }

    /// The memory side of [`Memory::cached`], out of its way when the caches served
    /// the access and kept their dirty lines: the write-backs of the lines the access
    /// pushed out (posted at `at`), then, when every level missed (`level` is the
    /// depth), the read of the line after the caches' latency `lat`. Returns the
    /// access's latency.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn beyond_caches<R: Redirect, O: Observer>(
        &mut self,
        r: &mut R,
        core: usize,
        paddr: u64,
        level: usize,
        lat: u64,
        kind: MemKind,
        at: u64,
        background: bool,
        obs: &mut O,
    ) -> u64 {
        for &line in self.evicted.lines() {
            r.memory(&mut self.tiers, core, line << 6, true, MemKind::Writeback, at, background, obs);
        }
        if level == self.caches.depth() {
            // A store miss reads the line (write-allocate); the write reaches memory on eviction.
            lat + r.memory(&mut self.tiers, core, paddr, false, kind, at + lat, background, obs)
        } else {
            lat
        }
    }

    /// Copies `bytes` from frame `src` to frame `dst` starting at cycle `at`, as a copy
    /// loop or engine that keeps at most `in_flight` line reads outstanding: line `i`
    /// is read when line `i − in_flight` has arrived, from the source tier's stream,
    /// and written to the destination tier's stream when it arrives. Returns the cycle
    /// at which the last line is written. Both tiers count the lines as migration
    /// traffic; `--verify` versions are the caller's business.
    pub fn copy(&mut self, src: u64, dst: u64, bytes: u64, at: u64, in_flight: u32) -> u64 {
        let (ts, ls) = self.tiers.locate(src << 12);
        let (td, ld) = self.tiers.locate(dst << 12);
        let k = (in_flight as usize).clamp(1, MAX_IN_FLIGHT);
        let mut arrived = [at; MAX_IN_FLIGHT];
        self.tiers.tiers[ts.index()].start_stream(false);
        self.tiers.tiers[td.index()].start_stream(true);
        let mut done = at;
        for i in 0..(bytes >> 6) as usize {
            let issue = arrived[i % k];
            let read = self.tiers.tiers[ts.index()].stream_line(ls + ((i as u64) << 6), false, issue);
            arrived[i % k] = read;
            let written = self.tiers.tiers[td.index()].stream_line(ld + ((i as u64) << 6), true, read);
            done = done.max(written);
        }
        done
    }

    /// Flushes the physical range from every cache level of every core (clflush),
    /// starting at `at`: each line costs `per_line` cycles of the issuer, and each
    /// dirty line is written back to its tier (background traffic) when its flush is
    /// issued. Returns (the cycle at which the last flush and write-back complete,
    /// lines flushed).
    pub fn flush<R: Redirect>(&mut self, r: &mut R, paddr: u64, bytes: u64, at: u64, per_line: u64) -> (u64, u64) {
        let first = paddr >> 6;
        let mut dirty = Vec::new();
        let (lines, _) = self.caches.flush_range(paddr, bytes, &mut |line| dirty.push(line));
        let mut done = at + lines * per_line;
        for line in dirty {
            let issued = at + (line - first + 1) * per_line;
            let lat = r.memory(&mut self.tiers, 0, line << 6, true, MemKind::Writeback, issued, true, &mut ());
            done = done.max(issued + lat);
        }
        (done, lines)
    }

    pub fn caches(&self) -> &Caches {
        &self.caches
    }

    pub fn tiers(&self) -> &Tiers {
        &self.tiers
    }
}

impl Tiers {
    /// Counts demand traffic of tier `t` that was not simulated request by request
    /// (epochs mode): `accesses` demand accesses (loads and stores that missed every
    /// cache) that took `latency_cycles` in all, `writebacks` dirty lines written
    /// back, and `walk_reads` page-walk lines; `row_hits` of all of them found their
    /// row open, and they waited `queue_cycles` in all.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_demand(&mut self, t: TierId, accesses: u64, latency_cycles: u64, writebacks: u64, walk_reads: u64, row_hits: u64, queue_cycles: u64) {
        // Store misses read their line (write-allocate): every demand access is a read
        // of the tier, as `Memory::cached` issues it in detailed mode; write-backs are
        // its writes.
        let d = &mut self.demand[t.index()];
        d.by_write[0] += accesses;
        d.latency_cycles += latency_cycles;
        self.tiers[t.index()].add_demand(accesses + walk_reads, writebacks, row_hits, queue_cycles);
    }
}
