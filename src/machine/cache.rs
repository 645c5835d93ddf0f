//! The cache hierarchy: one or more levels, each private per core or shared,
//! set-associative with LRU replacement, physically indexed, write-back and
//! write-allocate.
//!
//! Levels are non-inclusive, non-exclusive: a miss fills every level it passed; a
//! dirty line evicted from level *i* is written into level *i + 1* (allocating there
//! if absent), and a dirty line evicted from the last level becomes a memory write.
//! The latency of an access is the load-to-use latency of the level that hits; an
//! access that misses every level costs the last level's latency plus the memory's.

use crate::units::Size;
use serde::{Deserialize, Serialize};

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
pub fn default_hierarchy() -> Vec<CacheConfig> {
    vec![
        CacheConfig { name: "L1".into(), size: Size(64 << 10), ways: 4, latency_cycles: 3, shared: false },
        CacheConfig { name: "L2".into(), size: Size(256 << 10), ways: 8, latency_cycles: 10, shared: false },
        CacheConfig { name: "L3".into(), size: Size(8 << 20), ways: 16, latency_cycles: 34, shared: true },
    ]
}

pub const LINE_SHIFT: u32 = 6;
pub const LINE_BYTES: u64 = 1 << LINE_SHIFT;

impl CacheConfig {
    pub fn validate(&self, index: usize) -> anyhow::Result<()> {
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

/// The lines of one cache instance: per set, `ways` 32-bit tags in recency order
/// (most recent first). A tag is the line number above the set-index bits, plus one
/// (0 marks an empty way), with the dirty flag in bit 31. Four bytes per line keep a
/// 16-way set in one 64-byte host cache line, which is what makes the simulated LLC
/// cheap to probe.
struct TagArray {
    ways: usize,
    set_bits: u32,
    tags: Vec<u32>,
}

const DIRTY_TAG: u32 = 1 << 31;

impl TagArray {
    fn new(sets: usize, ways: usize) -> TagArray {
        TagArray { ways, set_bits: sets.trailing_zeros(), tags: vec![0; sets * ways] }
    }

    #[inline]
    fn locate(&self, line: u64) -> (usize, u32) {
        let set = (line & ((1 << self.set_bits) - 1)) as usize;
        (set * self.ways, ((line >> self.set_bits) + 1) as u32)
    }

    #[inline]
    fn line_of(&self, set_base: usize, tag: u32) -> u64 {
        (((tag & !DIRTY_TAG) as u64 - 1) << self.set_bits) | (set_base / self.ways) as u64
    }

    /// On a hit, makes the line most recent, sets its dirty flag if `write`, returns true.
    #[inline(always)]
    fn lookup(&mut self, line: u64, write: bool) -> bool {
        let (base, tag) = self.locate(line);
        let set = &mut self.tags[base..base + self.ways];
        match set.len() {
            4 => lookup_in::<4>(set.try_into().expect("4 ways"), tag, write),
            8 => lookup_in::<8>(set.try_into().expect("8 ways"), tag, write),
            16 => lookup_in::<16>(set.try_into().expect("16 ways"), tag, write),
            _ => {
                let Some(way) = set.iter().position(|&t| t & !DIRTY_TAG == tag) else { return false };
                let t = set[way] | if write { DIRTY_TAG } else { 0 };
                set.copy_within(0..way, 1);
                set[0] = t;
                true
            }
        }
    }

    fn peek(&self, line: u64) -> bool {
        let (base, tag) = self.locate(line);
        self.tags[base..base + self.ways].iter().any(|&t| t & !DIRTY_TAG == tag)
    }

    /// Inserts an absent line as most recent; returns the evicted line if it was dirty.
    #[inline(always)]
    fn insert(&mut self, line: u64, dirty: bool) -> Option<u64> {
        let (base, tag) = self.locate(line);
        let ways = self.ways;
        let victim = self.tags[base + ways - 1];
        let set = &mut self.tags[base..base + ways];
        let t = tag | if dirty { DIRTY_TAG } else { 0 };
        match ways {
            4 => push_front::<4>(set.try_into().expect("4 ways"), t),
            8 => push_front::<8>(set.try_into().expect("8 ways"), t),
            16 => push_front::<16>(set.try_into().expect("16 ways"), t),
            _ => {
                set.copy_within(0..ways - 1, 1);
                set[0] = t;
            }
        }
        (victim & DIRTY_TAG != 0).then(|| self.line_of(base, victim))
    }

    /// Removes a line; returns Some(dirty) if it was present.
    fn remove(&mut self, line: u64) -> Option<bool> {
        let (base, tag) = self.locate(line);
        let set = &mut self.tags[base..base + self.ways];
        let way = set.iter().position(|&t| t & !DIRTY_TAG == tag)?;
        let dirty = set[way] & DIRTY_TAG != 0;
        set.copy_within(way + 1.., way);
        set[self.ways - 1] = 0;
        Some(dirty)
    }
}

/// [`TagArray::lookup`] in a set of `N` ways, the common associativities spelled out
/// so that every way is compared at once ([`match_mask`]) and the ways move without a
/// call to `memmove`. The result is that of the scalar search: a
/// line is in a set at most once, so the matching way is the only one.
#[inline(always)]
fn lookup_in<const N: usize>(set: &mut [u32; N], tag: u32, write: bool) -> bool {
    let matches = match_mask(set, tag);
    if matches == 0 {
        return false;
    }
    let way = matches.trailing_zeros();
    let old = *set;
    let hit = old[way as usize] | if write { DIRTY_TAG } else { 0 };
    // Ways 0..way move down one place, the hit goes first, the rest stay: a fixed
    // shuffle and a blend, with no loop that depends on `way`.
    let shifted: [u32; N] = std::array::from_fn(|i| if i == 0 { hit } else { old[i - 1] });
    for i in 0..N {
        set[i] = if i as u32 <= way { shifted[i] } else { old[i] };
    }
    true
}

/// Bit `i` set when way `i` of the set holds `tag`: on x86-64, four ways per SSE2
/// compare and one mask move (SSE2 is part of the x86-64 baseline), about a third of
/// the instructions the compiler makes of the scalar loop, which it vectorises only
/// partly and assembles bit by bit.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
    use std::arch::x86_64::{__m128i, _mm_and_si128, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_set1_epi32};
    const { assert!(N % 4 == 0 && N <= 32) };
    // SAFETY: SSE2 is always present on x86-64; each load reads four in-bounds u32 of
    // `set` and has no alignment requirement.
    unsafe {
        let want = _mm_set1_epi32(tag as i32);
        let clean = _mm_set1_epi32(!DIRTY_TAG as i32);
        let mut mask = 0u32;
        for (q, quad) in set.chunks_exact(4).enumerate() {
            let ways = _mm_loadu_si128(quad.as_ptr().cast::<__m128i>());
            let eq = _mm_cmpeq_epi32(_mm_and_si128(ways, clean), want);
            mask |= (_mm_movemask_ps(_mm_castsi128_ps(eq)) as u32) << (4 * q);
        }
        mask
    }
}

/// Bit `i` set when way `i` of the set holds `tag`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
    set.iter().enumerate().fold(0, |mask, (i, &t)| mask | ((t & !DIRTY_TAG == tag) as u32) << i)
}

/// Puts `t` first in a set of `N` ways, moving every way down one place (the last
/// drops out).
#[inline(always)]
fn push_front<const N: usize>(set: &mut [u32; N], t: u32) {
    let old = *set;
    set[1..].copy_from_slice(&old[..N - 1]);
    set[0] = t;
}

struct Level {
    latency: u64,
    shared: bool,
    instances: Vec<TagArray>,
    hits: u64,
    misses: u64,
    writebacks: u64,
}

impl Level {
    #[inline]
    fn array(&mut self, core: usize) -> &mut TagArray {
        let i = if self.shared { 0 } else { core };
        &mut self.instances[i]
    }
}

/// All cache levels of the machine.
pub struct Caches {
    levels: Vec<Level>,
    names: Vec<String>,
}

impl Caches {
    pub fn new(configs: &[CacheConfig], cores: usize) -> Caches {
        let levels = configs
            .iter()
            .map(|c| {
                let ways = c.ways;
                let sets = (c.size.bytes() / LINE_BYTES) as usize / ways;
                let n = if c.shared { 1 } else { cores };
                Level {
                    latency: c.latency_cycles,
                    shared: c.shared,
                    instances: (0..n).map(|_| TagArray::new(sets, ways)).collect(),
                    hits: 0,
                    misses: 0,
                    writebacks: 0,
                }
            })
            .collect();
        Caches { levels, names: configs.iter().map(|c| c.name.clone()).collect() }
    }

    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Latency of a hit in the first level (part of the base CPI).
    pub fn l1_latency(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.latency)
    }

    /// Latency of the last level, paid before a memory access.
    pub fn llc_latency(&self) -> u64 {
        self.levels.last().map_or(0, |l| l.latency)
    }

    /// Accesses the line holding physical address `paddr` from `core`. Returns the
    /// level that hit (`depth()` when every level missed) and that level's latency;
    /// `memory_write(line)` is called for every dirty line leaving the last level.
    #[inline]
    pub fn access(&mut self, core: usize, paddr: u64, write: bool, memory_write: &mut impl FnMut(u64)) -> (usize, u64) {
        let line = paddr >> LINE_SHIFT;
        let depth = self.levels.len();
        let mut hit_level = depth;
        for (i, level) in self.levels.iter_mut().enumerate() {
            if level.array(core).lookup(line, write && i == 0) {
                level.hits += 1;
                hit_level = i;
                break;
            }
            level.misses += 1;
        }
        // Fill the levels above the hit, most distant first; the line is dirty only in
        // the first level (a write hit below the first level moves the data up).
        for i in (0..hit_level).rev() {
            self.install(core, i, line, write && i == 0, memory_write);
        }
        let latency = if hit_level < depth { self.levels[hit_level].latency } else { self.llc_latency() };
        (hit_level, latency)
    }

    /// Puts `line` into level `i` with the given dirty flag, pushing a dirty victim one
    /// level down (or to memory from the last level).
    #[inline]
    fn install(&mut self, core: usize, i: usize, line: u64, dirty: bool, memory_write: &mut impl FnMut(u64)) {
        if let Some(victim) = self.levels[i].array(core).insert(line, dirty) {
            self.levels[i].writebacks += 1;
            self.write_back(core, i + 1, victim, memory_write);
        }
    }

    /// Writes a dirty `line` into level `i` (or memory past the last level).
    fn write_back(&mut self, core: usize, i: usize, line: u64, memory_write: &mut impl FnMut(u64)) {
        if i == self.levels.len() {
            memory_write(line);
            return;
        }
        if self.levels[i].array(core).lookup(line, true) {
            return;
        }
        self.install(core, i, line, true, memory_write);
    }

    /// Removes every line of the physical range [`paddr`, `paddr + bytes`) from every
    /// level and core (clflush); returns (lines flushed, dirty lines written back). A
    /// line dirty in several levels is written back once.
    pub fn flush_range(&mut self, paddr: u64, bytes: u64, memory_write: &mut impl FnMut(u64)) -> (u64, u64) {
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + bytes).div_ceil(LINE_BYTES);
        let mut dirty_lines = 0;
        for line in first..last {
            let mut dirty = false;
            for level in &mut self.levels {
                for arr in &mut level.instances {
                    if let Some(d) = arr.remove(line) {
                        dirty |= d;
                    }
                }
            }
            if dirty {
                dirty_lines += 1;
                memory_write(line);
            }
        }
        (last - first, dirty_lines)
    }

    /// Whether any level of any core holds a line of the physical range.
    pub fn holds_any(&self, paddr: u64, bytes: u64) -> bool {
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + bytes).div_ceil(LINE_BYTES);
        (first..last).any(|line| {
            self.levels.iter().any(|l| l.instances.iter().any(|a| a.peek(line)))
        })
    }

    /// Adds lookups that were not simulated (sampled mode's fast-forward): `served[l]`
    /// references served by level `l`, or by memory at index `depth()`. A reference
    /// served by level `l` hit there and missed every level above it.
    pub fn add_estimated(&mut self, served: &[u64]) {
        let depth = self.levels.len();
        for (i, level) in self.levels.iter_mut().enumerate() {
            level.hits += served[i];
            level.misses += served[i + 1..=depth].iter().sum::<u64>();
        }
    }

    pub fn stats(&self) -> Vec<CacheStats> {
        self.levels
            .iter()
            .zip(&self.names)
            .map(|(l, n)| CacheStats { name: n.clone(), hits: l.hits, misses: l.misses, writebacks: l.writebacks })
            .collect()
    }
}

impl Caches {
    /// Adds write-backs that were not simulated (epochs mode), per level.
    pub fn add_writebacks(&mut self, per_level: &[u64]) {
        for (l, n) in self.levels.iter_mut().zip(per_level) {
            l.writebacks += n;
        }
    }

    /// Share of the last level's lines that hold data (a cold cache fills up).
    pub fn valid_share(&self) -> f64 {
        let Some(last) = self.levels.last() else { return 1.0 };
        let (mut valid, mut all) = (0u64, 0u64);
        for a in &last.instances {
            valid += a.tags.iter().filter(|&&t| t != 0).count() as u64;
            all += a.tags.len() as u64;
        }
        valid as f64 / all.max(1) as f64
    }

    /// Share of the last level's valid lines that are dirty (epochs mode prices its
    /// write-backs with it: in a full cache each miss evicts a line, dirty with this
    /// probability).
    pub fn dirty_share(&self) -> f64 {
        let Some(last) = self.levels.last() else { return 0.0 };
        let (mut valid, mut dirty) = (0u64, 0u64);
        for a in &last.instances {
            for &t in &a.tags {
                valid += (t != 0) as u64;
                dirty += (t & DIRTY_TAG != 0) as u64;
            }
        }
        if valid == 0 {
            0.0
        } else {
            dirty as f64 / valid as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_level() -> Vec<CacheConfig> {
        // L1: 2 lines (1 set × 2 ways); L2: 4 lines (1 set × 4 ways), shared.
        vec![
            CacheConfig { name: "L1".into(), size: Size(128), ways: 2, latency_cycles: 2, shared: false },
            CacheConfig { name: "L2".into(), size: Size(256), ways: 4, latency_cycles: 10, shared: true },
        ]
    }

    /// The way mask by hand: tag 5 clean in way 1 and dirty in way 14 (a line is in a
    /// set once; two copies here only to see both bits), tag 6 in way 3, empty ways 0.
    #[test]
    fn match_mask_finds_clean_and_dirty_ways() {
        let mut set = [0u32; 16];
        set[1] = 5;
        set[14] = 5 | DIRTY_TAG;
        set[3] = 6;
        assert_eq!(match_mask(&set, 5), (1 << 1) | (1 << 14));
        assert_eq!(match_mask(&set, 6), 1 << 3);
        assert_eq!(match_mask(&set, 7), 0);
        let four: [u32; 4] = [9 | DIRTY_TAG, 0, 0, 9];
        assert_eq!(match_mask(&four, 9), 0b1001);
    }

    /// The spelled-out 4-, 8- and 16-way paths against a plain LRU list per set: the
    /// same hits, the same dirty victims, the same recency order, on random lookups and
    /// inserts over a few sets (2-way and 3-way sets take the general path).
    #[test]
    fn every_associativity_keeps_true_lru_order() {
        let mut rng = crate::rng::Rng::new(7);
        for ways in [2, 3, 4, 8, 16] {
            let sets = 4;
            let mut arr = TagArray::new(sets, ways);
            // Per set: (line, dirty), most recent first.
            let mut model: Vec<Vec<(u64, bool)>> = vec![Vec::new(); sets];
            for _ in 0..20_000 {
                let line = rng.below(sets as u64 * (ways as u64 + 3));
                let write = rng.chance(0.3);
                let set = &mut model[(line % sets as u64) as usize];
                let hit = arr.lookup(line, write);
                match set.iter().position(|&(l, _)| l == line) {
                    Some(way) => {
                        assert!(hit, "{ways}-way: line {line} is cached");
                        let (l, d) = set.remove(way);
                        set.insert(0, (l, d || write));
                    }
                    None => {
                        assert!(!hit, "{ways}-way: line {line} is not cached");
                        let victim = arr.insert(line, write);
                        set.insert(0, (line, write));
                        let dropped = (set.len() > ways).then(|| set.pop().unwrap());
                        assert_eq!(victim, dropped.filter(|&(_, d)| d).map(|(l, _)| l), "{ways}-way: the dirty victim");
                    }
                }
            }
            for (i, set) in model.iter().enumerate() {
                let tags: Vec<u32> = set.iter().map(|&(l, d)| ((l >> 2) + 1) as u32 | if d { DIRTY_TAG } else { 0 }).collect();
                assert_eq!(&arr.tags[i * ways..i * ways + set.len()], &tags[..], "{ways}-way: set {i} in recency order");
            }
        }
    }

    #[test]
    fn hits_and_misses_of_a_short_sequence() {
        let mut c = Caches::new(&two_level(), 1);
        let mut mem = Vec::new();
        let mut w = |l| mem.push(l);
        // Lines A=0, B=1, C=2 (addresses 0, 64, 128).
        assert_eq!(c.access(0, 0, false, &mut w), (2, 10)); // A: miss both → memory
        assert_eq!(c.access(0, 64, false, &mut w), (2, 10)); // B: miss both
        assert_eq!(c.access(0, 0, false, &mut w), (0, 2)); // A: L1 hit
        assert_eq!(c.access(0, 128, false, &mut w), (2, 10)); // C: evicts B from L1 (LRU)
        assert_eq!(c.access(0, 64, false, &mut w), (1, 10)); // B: L1 miss, L2 hit
        let s = c.stats();
        assert_eq!((s[0].hits, s[0].misses), (1, 4));
        assert_eq!((s[1].hits, s[1].misses), (1, 3));
        assert!(mem.is_empty(), "nothing was dirty");
    }

    #[test]
    fn dirty_lines_write_back_level_by_level() {
        let mut c = Caches::new(&two_level(), 1);
        let mut mem = Vec::new();
        {
            let mut w = |l| mem.push(l);
            c.access(0, 0, true, &mut w); // A dirty in L1
            c.access(0, 64, false, &mut w); // B
            c.access(0, 128, false, &mut w); // C evicts dirty A from L1 → written into L2
        }
        assert!(mem.is_empty(), "A went to L2, not memory");
        {
            // Five more distinct lines push A out of the 4-way L2 → one memory write of line 0.
            let mut w = |l| mem.push(l);
            for line in 3..8 {
                c.access(0, line * 64, false, &mut w);
            }
        }
        assert_eq!(mem, vec![0]);
    }

    #[test]
    fn flush_writes_back_dirty_lines_once_and_removes_all_copies() {
        let mut c = Caches::new(&two_level(), 2);
        let mut mem = Vec::new();
        let mut w = |l| mem.push(l);
        c.access(0, 4096, true, &mut w); // dirty in core 0's L1, clean copy in L2
        c.access(1, 4096 + 64, false, &mut w);
        assert_eq!(c.flush_range(4096, 4096, &mut w), (64, 1));
        assert_eq!(mem, vec![4096 / 64]);
        assert!(!c.holds_any(4096, 4096));
    }

    #[test]
    fn private_levels_are_per_core() {
        let mut c = Caches::new(&two_level(), 2);
        let mut w = |_| {};
        c.access(0, 0, false, &mut w);
        // Core 1 misses its own L1 but hits the shared L2.
        assert_eq!(c.access(1, 0, false, &mut w), (1, 10));
    }
}
