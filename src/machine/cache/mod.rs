//! The cache hierarchy: one or more levels, each private per core or shared,
//! set-associative with LRU replacement, physically indexed, write-back and
//! write-allocate.
//!
//! Levels are non-inclusive, non-exclusive: a miss fills every level it passed; a
//! dirty line evicted from level *i* is written into level *i + 1* (allocating there
//! if absent), and a dirty line evicted from the last level becomes a memory write.
//! The latency of an access is the load-to-use latency of the level that hits; an
//! access that misses every level costs the last level's latency plus the memory's.
//!
//! Where things live: this file holds the configuration, the counters and
//! [`Caches`], the hierarchy the machine calls; `levels.rs` the hierarchy as a type
//! (a level on the levels below it, its shape chosen once); `sets.rs` one level's
//! sets, their tags and LRU replacement; `tests.rs` the unit tests.

use crate::units::Size;
use levels::{each_shape, Below, Shape};
use serde::{Deserialize, Serialize};

mod levels;
mod sets;
#[cfg(test)]
mod tests;

/// One cache level.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Name shown in reports ("L1", "L2", "LLC").
    pub name: String,
    /// Capacity per instance (per core when private).
    pub size: Size,
    /// Associativity.
    pub ways: usize,
    /// Load-to-use latency of a hit, in core cycles.
    pub latency_cycles: u64,
    /// One instance shared by all cores (true) or one per core (false).
    pub shared: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { name: "L1".into(), size: Size(64 << 10), ways: 4, latency_cycles: 3, shared: false }
    }
}

/// Rainbow's Table IV hierarchy: L1 64 KiB 4-way 3 cycles, L2 256 KiB 8-way 10 cycles
/// (both private), L3 8 MiB 16-way 34 cycles shared.
pub(crate) fn default_hierarchy() -> Vec<CacheConfig> {
    vec![
        CacheConfig { name: "L1".into(), size: Size(64 << 10), ways: 4, latency_cycles: 3, shared: false },
        CacheConfig { name: "L2".into(), size: Size(256 << 10), ways: 8, latency_cycles: 10, shared: false },
        CacheConfig { name: "L3".into(), size: Size(8 << 20), ways: 16, latency_cycles: 34, shared: true },
    ]
}

const LINE_SHIFT: u32 = 6;
pub(crate) const LINE_BYTES: u64 = 1 << LINE_SHIFT;

/// Most levels a hierarchy may have. An access fills at most every level it missed,
/// and each fill pushes at most one dirty line out of the last level, so an access
/// writes back at most this many lines to memory ([`Evicted`]).
pub(crate) const MAX_LEVELS: usize = 5;

impl CacheConfig {
    pub(crate) fn validate(&self, index: usize) -> anyhow::Result<()> {
        if index >= MAX_LEVELS {
            anyhow::bail!("machine.caches[{index}] ({}): a hierarchy has at most {MAX_LEVELS} levels", self.name);
        }
        let lines = self.size.bytes() / LINE_BYTES;
        if self.ways == 0 || lines == 0 || !lines.is_multiple_of(self.ways as u64) || !(lines / self.ways as u64).is_power_of_two() {
            anyhow::bail!(
                "machine.caches[{index}] ({}): size {} with {} ways must give a power-of-two number of 64-byte sets",
                self.name,
                self.size,
                self.ways
            );
        }
        Ok(())
    }
}

/// Hit and miss counts of one level, summed over its instances.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CacheStats {
    pub name: String,
    pub hits: u64,
    pub misses: u64,
    pub writebacks: u64,
}

/// Dirty lines one access pushed out of the last level, in the order they left, for
/// the memory to write.
#[derive(Clone, Debug, Default)]
pub(crate) struct Evicted {
    lines: [u64; MAX_LEVELS],
    len: usize,
}

impl Evicted {
    /// The lines (line numbers: physical address / 64).
    #[inline]
    pub(crate) fn lines(&self) -> &[u64] {
        &self.lines[..self.len]
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn push(&mut self, line: u64) {
        self.lines[self.len] = line;
        self.len += 1;
    }
}

/// All cache levels of the machine.
pub struct Caches {
    shape: Shape,
    names: Vec<String>,
    depth: usize,
    l1_latency: u64,
    llc_latency: u64,
    /// Per core, while its accesses to the last level are being recorded (epochs
    /// mode's calibrations, for the stand-ins that replay them, [`Caches::record`]),
    /// the lines in the order they reached it, up to [`RECORDED_LINES`].
    records: Vec<Option<Vec<u64>>>,
}

/// The most last-level accesses a recording keeps: 2^20 lines, 8 MiB (a calibration of
/// 300 000 references makes at most a few per reference).
pub(crate) const RECORDED_LINES: usize = 1 << 20;

impl Caches {
    /// The hierarchy of `configs` (validated: 1 to [`MAX_LEVELS`] levels) for `cores` cores.
    pub(crate) fn new(configs: &[CacheConfig], cores: usize) -> Caches {
        assert!((1..=MAX_LEVELS).contains(&configs.len()), "a hierarchy of {} levels", configs.len());
        Caches {
            shape: Shape::new(configs, cores),
            names: configs.iter().map(|c| c.name.clone()).collect(),
            depth: configs.len(),
            l1_latency: configs[0].latency_cycles,
            llc_latency: configs[configs.len() - 1].latency_cycles,
            records: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// Latency of a hit in the first level (part of the base CPI).
    pub(crate) fn l1_latency(&self) -> u64 {
        self.l1_latency
    }

    /// Latency of the last level, paid before a memory access.
    #[inline]
    pub(crate) fn llc_latency(&self) -> u64 {
        self.llc_latency
    }

    /// Accesses the line holding physical address `paddr` from `core`. Returns the
    /// level that hit (`depth()` when every level missed) and that level's latency
    /// (the last level's when memory served it); `evicted` gets the dirty lines that
    /// left the last level, in order. Each level's set is found once: the set looked
    /// up is the set a miss fills.
    ///
    /// A hit in the first level of the presets' shape is answered inline, where most
    /// accesses end; everything else is a call ([`Caches::access_below`]).
    #[inline(always)]
    pub(crate) fn access(&mut self, core: usize, paddr: u64, write: bool, evicted: &mut Evicted) -> (usize, u64) {
        let line = paddr >> LINE_SHIFT;
        if let Shape::W4W8W16(h) = &mut self.shape {
            if let Some(hit) = h.hit(core, line, write) {
                evicted.len = 0;
                return hit;
            }
        }
        self.access_below(core, line, write, evicted)
    }

    /// [`Caches::access`] of `line` past the inline first-level hit (whose miss changed
    /// nothing, so the first level is looked up again).
    #[inline(never)]
    fn access_below(&mut self, core: usize, line: u64, write: bool, evicted: &mut Evicted) -> (usize, u64) {
        evicted.len = 0;
        each_shape!(&mut self.shape, h => h.access(core, line, write, evicted))
    }

    /// Notes that `core`'s access to the line holding `paddr` reached the last level,
    /// if its accesses are being recorded (the machine's accesses in mode
    /// `CALIBRATE`, which call this for every access that reached it).
    #[inline(never)]
    pub(crate) fn record(&mut self, core: usize, paddr: u64) {
        if let Some(Some(v)) = self.records.get_mut(core) {
            if v.len() < RECORDED_LINES {
                v.push(paddr >> LINE_SHIFT);
            }
        }
    }

    /// Starts recording the lines `core`'s accesses bring to the last level (walks'
    /// included), from an empty record: those the machine makes in mode `CALIBRATE`.
    pub(crate) fn start_recording(&mut self, core: usize) {
        if self.records.len() <= core {
            self.records.resize_with(core + 1, || None);
        }
        self.records[core] = Some(Vec::new());
    }

    /// Stops recording `core`'s accesses; returns the lines recorded since
    /// [`Caches::start_recording`].
    pub(crate) fn stop_recording(&mut self, core: usize) -> Vec<u64> {
        self.records.get_mut(core).and_then(Option::take).unwrap_or_default()
    }

    /// Whether the last level is one instance shared by every core.
    pub(crate) fn last_shared(&mut self) -> bool {
        each_shape!(&mut self.shape, h => h.last_mut()).is_some_and(|l| l.shared())
    }

    /// Another core's access to `line` in the shared last level, counting nothing (a
    /// stand-in's, epochs mode): whether it hit, and the dirty line its fill evicted.
    pub(crate) fn touch_last(&mut self, line: u64) -> (bool, Option<u64>) {
        each_shape!(&mut self.shape, h => h.last_mut()).map_or((false, None), |l| l.touch(line))
    }

    /// Removes every line of the physical range [`paddr`, `paddr + bytes`) from every
    /// level and core (clflush); returns (lines flushed, dirty lines written back). A
    /// line dirty in several levels is written back once.
    pub(crate) fn flush_range(&mut self, paddr: u64, bytes: u64, memory_write: &mut impl FnMut(u64)) -> (u64, u64) {
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + bytes).div_ceil(LINE_BYTES);
        let mut levels = each_shape!(&mut self.shape, h => h.levels_mut());
        let mut dirty_lines = 0;
        for line in first..last {
            let mut dirty = false;
            for level in &mut levels {
                dirty |= level.remove_everywhere(line).unwrap_or(false);
            }
            if dirty {
                dirty_lines += 1;
                memory_write(line);
            }
        }
        (last - first, dirty_lines)
    }

    /// Whether any level of any core holds a line of the physical range.
    #[cfg(test)]
    pub(crate) fn holds_any(&self, paddr: u64, bytes: u64) -> bool {
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + bytes).div_ceil(LINE_BYTES);
        let levels = each_shape!(&self.shape, h => h.levels());
        (first..last).any(|line| levels.iter().any(|l| l.holds_anywhere(line)))
    }

    /// Adds lookups that were not simulated (sampled mode's fast-forward): `served[l]`
    /// references served by level `l`, or by memory at index `depth()`. A reference
    /// served by level `l` hit there and missed every level above it.
    pub(crate) fn add_estimated(&mut self, served: &[u64]) {
        let depth = self.depth;
        for (i, level) in each_shape!(&mut self.shape, h => h.levels_mut()).into_iter().enumerate() {
            let (hits, misses, _) = level.counters();
            *hits += served[i];
            *misses += served[i + 1..=depth].iter().sum::<u64>();
        }
    }

    /// Each level's hits, misses and write-backs, the first level's first; the
    /// levels below the last are zeros.
    #[inline]
    pub(crate) fn counts(&self) -> [[u64; 3]; crate::machine::sampled::MAX_LEVELS] {
        let mut out = [[0; 3]; crate::machine::sampled::MAX_LEVELS];
        each_shape!(&self.shape, h => h.counts_into(&mut out));
        out
    }

    pub(crate) fn stats(&self) -> Vec<CacheStats> {
        each_shape!(&self.shape, h => h.levels())
            .iter()
            .zip(&self.names)
            .map(|(l, n)| {
                let (hits, misses, writebacks) = l.stats();
                CacheStats { name: n.clone(), hits, misses, writebacks }
            })
            .collect()
    }
}

impl Caches {
    /// Adds write-backs that were not simulated (epochs mode), per level.
    pub(crate) fn add_writebacks(&mut self, per_level: &[u64]) {
        for (level, n) in each_shape!(&mut self.shape, h => h.levels_mut()).into_iter().zip(per_level) {
            *level.counters().2 += n;
        }
    }

    /// The last level's ways holding a line, of them dirty, and all its ways.
    fn last_occupancy(&self) -> (u64, u64, u64) {
        each_shape!(&self.shape, h => h.levels()).last().map_or((0, 0, 0), |l| l.occupancy())
    }

    /// Share of the last level's lines that hold data (a cold cache fills up).
    pub(crate) fn valid_share(&self) -> f64 {
        let (valid, _, all) = self.last_occupancy();
        valid as f64 / all.max(1) as f64
    }

    /// Share of the last level's valid lines that are dirty (epochs mode prices its
    /// write-backs with it: in a full cache each miss evicts a line, dirty with this
    /// probability).
    pub(crate) fn dirty_share(&self) -> f64 {
        let (valid, dirty, _) = self.last_occupancy();
        dirty as f64 / valid.max(1) as f64
    }
}
