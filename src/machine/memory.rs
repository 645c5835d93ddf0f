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

/// The tiers as the memory controller sees them.
pub struct Tiers {
    tiers: Vec<Tier>,
    /// Per tier: [first frame, one past the last).
    bounds: Vec<(u64, u64)>,
    demand: Vec<DemandStats>,
}

impl Tiers {
    pub(crate) fn new(tiers: Vec<Tier>, bounds: Vec<(u64, u64)>) -> Tiers {
        let n = tiers.len();
        Tiers { tiers, bounds, demand: vec![DemandStats::default(); n] }
    }

    /// The tier holding frame `pfn`.
    #[inline]
    pub fn tier_of(&self, pfn: u64) -> TierId {
        TierId::holding(&self.bounds, pfn)
    }

    /// Tier and tier-local address of physical address `paddr`.
    #[inline]
    fn locate(&self, paddr: u64) -> (TierId, u64) {
        let t = self.tier_of(paddr >> 12);
        (t, paddr - (self.bounds[t.index()].0 << 12))
    }

    /// One 64-byte access at physical address `paddr` arriving at cycle `at`, timed by
    /// its tier (queueing included), counted and reported to the observer. Returns its
    /// latency.
    #[inline]
    pub fn access<O: Observer>(&mut self, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, obs: &mut O) -> u64 {
        self.access_as(core, paddr, paddr, write, kind, at, obs)
    }

    /// [`Tiers::access`] of an access the memory controller redirected: served at
    /// physical address `real`, reported to the observer under the address `paddr`
    /// the OS and the caches know it by.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn access_as<O: Observer>(&mut self, core: usize, paddr: u64, real: u64, write: bool, kind: MemKind, at: u64, obs: &mut O) -> u64 {
        let (t, local) = self.locate(real);
        let latency = self.tiers[t.index()].access(local, write, at);
        if kind == MemKind::Demand {
            let d = &mut self.demand[t.index()];
            d.accesses += 1;
            d.reads += !write as u64;
            d.writes += write as u64;
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

    pub fn demand(&self, t: TierId) -> &DemandStats {
        &self.demand[t.index()]
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
        for &line in self.evicted.lines() {
            r.memory(&mut self.tiers, core, line << 6, true, MemKind::Writeback, at, background, obs);
        }
        if level == self.caches.depth() {
            // A store miss reads the line (write-allocate); the write reaches memory on eviction.
            let mem = r.memory(&mut self.tiers, core, paddr, false, kind, at + lat, background, obs);
            (level, lat + mem)
        } else {
            (level, lat)
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
