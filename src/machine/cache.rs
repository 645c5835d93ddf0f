//! The cache hierarchy: one or more levels, each private per core or shared,
//! set-associative with LRU replacement, physically indexed, write-back and
//! write-allocate.
//!
//! Levels are non-inclusive, non-exclusive: a miss fills every level it passed; a
//! dirty line evicted from level *i* is written into level *i + 1* (allocating there
//! if absent), and a dirty line evicted from the last level becomes a memory write.
//! The latency of an access is the load-to-use latency of the level that hits; an
//! access that misses every level costs the last level's latency plus the memory's.

use super::setassoc;
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

/// Most levels a hierarchy may have. An access fills at most every level it missed,
/// and each fill pushes at most one dirty line out of the last level, so an access
/// writes back at most this many lines to memory ([`Evicted`]).
pub const MAX_LEVELS: usize = 5;

impl CacheConfig {
    pub fn validate(&self, index: usize) -> anyhow::Result<()> {
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

/// A tag: the line number above the set-index bits, plus one (0 marks an empty way),
/// with the dirty flag in bit 31. Four bytes per line keep a 16-way set in one
/// 64-byte host cache line, which is what makes the simulated LLC cheap to probe.
const DIRTY_TAG: u32 = 1 << 31;

/// The sets of one level (of every instance of it, one after another), addressed by
/// set index: true-LRU replacement, so that a miss evicts the least recently used way.
trait SetArray {
    /// On a hit in set `set`, makes the line most recent, sets its dirty flag if
    /// `write`, returns true.
    fn lookup(&mut self, set: usize, tag: u32, write: bool) -> bool;
    /// Puts `t` (a tag with its dirty flag) into set `set` as most recent in place of
    /// the least recent way; returns that way's tag (0 if it was empty).
    fn insert(&mut self, set: usize, t: u32) -> u32;
    /// Removes a line; returns Some(dirty) if it was present.
    fn remove(&mut self, set: usize, tag: u32) -> Option<bool>;
    fn peek(&self, set: usize, tag: u32) -> bool;
    /// Every way's tag, with its dirty flag (0: empty), in no order.
    fn tags(&self) -> &[u32];
    /// The tags of set `set`, most recent first, empty ways last.
    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32>;
}

/// Sets of `W` ways (4, 8 or 16), fixed at compile time: the tags stay in their ways,
/// compared all at once ([`match_mask`]), and each set's recency order is a recency
/// word kept beside them ([`setassoc::touch`]), so that neither a hit nor a fill moves
/// tags.
struct Fixed<const W: usize> {
    tags: Vec<[u32; W]>,
    order: Vec<u64>,
}

impl<const W: usize> Fixed<W> {
    fn new(sets: usize) -> Fixed<W> {
        const { assert!(W == 4 || W == 8 || W == 16) };
        Fixed { tags: vec![[0; W]; sets], order: vec![setassoc::identity::<W>(); sets] }
    }
}

impl<const W: usize> SetArray for Fixed<W> {
    fn tags(&self) -> &[u32] {
        self.tags.as_flattened()
    }

    #[inline(always)]
    fn lookup(&mut self, set: usize, tag: u32, write: bool) -> bool {
        let tags = &mut self.tags[set];
        let matches = match_mask(tags, tag);
        if matches == 0 {
            return false;
        }
        let way = matches.trailing_zeros();
        if write {
            tags[way as usize] |= DIRTY_TAG;
        }
        setassoc::touch(&mut self.order[set], way as u64);
        true
    }

    #[inline(always)]
    fn insert(&mut self, set: usize, t: u32) -> u32 {
        let way = setassoc::fill::<W>(&mut self.order[set]);
        std::mem::replace(&mut self.tags[set][way], t)
    }

    fn remove(&mut self, set: usize, tag: u32) -> Option<bool> {
        let tags = &mut self.tags[set];
        let matches = match_mask(tags, tag);
        if matches == 0 {
            return None;
        }
        let way = matches.trailing_zeros();
        let dirty = tags[way as usize] & DIRTY_TAG != 0;
        tags[way as usize] = 0;
        setassoc::retire::<W>(&mut self.order[set], way as usize);
        Some(dirty)
    }

    fn peek(&self, set: usize, tag: u32) -> bool {
        match_mask(&self.tags[set], tag) != 0
    }

    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32> {
        setassoc::ways_by_recency::<W>(self.order[set]).map(|way| self.tags[set][way]).collect()
    }
}

/// Sets of any number of ways, each set's tags in recency order (most recent first).
struct AnyWays {
    ways: usize,
    tags: Vec<u32>,
}

impl AnyWays {
    #[inline(always)]
    fn set(&mut self, set: usize) -> &mut [u32] {
        &mut self.tags[set * self.ways..][..self.ways]
    }
}

impl SetArray for AnyWays {
    fn tags(&self) -> &[u32] {
        &self.tags
    }

    #[inline]
    fn lookup(&mut self, set: usize, tag: u32, write: bool) -> bool {
        let set = self.set(set);
        let Some(way) = set.iter().position(|&t| t & !DIRTY_TAG == tag) else { return false };
        let t = set[way] | if write { DIRTY_TAG } else { 0 };
        set.copy_within(0..way, 1);
        set[0] = t;
        true
    }

    #[inline]
    fn insert(&mut self, set: usize, t: u32) -> u32 {
        let set = self.set(set);
        let victim = set[set.len() - 1];
        set.copy_within(0..set.len() - 1, 1);
        set[0] = t;
        victim
    }

    fn remove(&mut self, set: usize, tag: u32) -> Option<bool> {
        let set = self.set(set);
        let way = set.iter().position(|&t| t & !DIRTY_TAG == tag)?;
        let dirty = set[way] & DIRTY_TAG != 0;
        set.copy_within(way + 1.., way);
        set[set.len() - 1] = 0;
        Some(dirty)
    }

    fn peek(&self, set: usize, tag: u32) -> bool {
        self.tags[set * self.ways..][..self.ways].iter().any(|&t| t & !DIRTY_TAG == tag)
    }

    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32> {
        self.tags[set * self.ways..][..self.ways].to_vec()
    }
}

/// The sets of a level of a hierarchy whose shape is not spelled out in [`Shape`]:
/// the associativity chosen per operation.
enum Sets {
    W4(Fixed<4>),
    W8(Fixed<8>),
    W16(Fixed<16>),
    Any(AnyWays),
}

impl Sets {
    fn new(sets: usize, ways: usize) -> Sets {
        match ways {
            4 => Sets::W4(Fixed::new(sets)),
            8 => Sets::W8(Fixed::new(sets)),
            16 => Sets::W16(Fixed::new(sets)),
            _ => Sets::Any(AnyWays { ways, tags: vec![0; sets * ways] }),
        }
    }
}

macro_rules! each_sets {
    ($s:expr, $a:ident => $e:expr) => {
        match $s {
            Sets::W4($a) => $e,
            Sets::W8($a) => $e,
            Sets::W16($a) => $e,
            Sets::Any($a) => $e,
        }
    };
}

impl SetArray for Sets {
    fn tags(&self) -> &[u32] {
        each_sets!(self, s => s.tags())
    }

    #[inline(always)]
    fn lookup(&mut self, set: usize, tag: u32, write: bool) -> bool {
        each_sets!(self, s => s.lookup(set, tag, write))
    }

    #[inline(always)]
    fn insert(&mut self, set: usize, t: u32) -> u32 {
        each_sets!(self, s => s.insert(set, t))
    }

    fn remove(&mut self, set: usize, tag: u32) -> Option<bool> {
        each_sets!(self, s => s.remove(set, tag))
    }

    fn peek(&self, set: usize, tag: u32) -> bool {
        each_sets!(self, s => s.peek(set, tag))
    }

    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32> {
        each_sets!(self, s => s.recency(set))
    }
}

/// Bit `i` set when way `i` of the set holds `tag`: on x86-64, four ways per SSE2
/// compare, the compares packed to bytes and one mask move (SSE2 is part of the x86-64
/// baseline), about a third of the instructions the compiler makes of the scalar loop,
/// which it vectorises only partly and assembles bit by bit.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_movemask_ps, _mm_packs_epi16,
        _mm_packs_epi32, _mm_set1_epi32, _mm_setzero_si128,
    };
    const { assert!(N == 4 || N == 8 || N == 16) };
    // SAFETY: SSE2 is always present on x86-64; the loads read quads 0..N/4 of `set`,
    // four in-bounds u32 each, with no alignment requirement.
    unsafe {
        let want = _mm_set1_epi32(tag as i32);
        let clean = _mm_set1_epi32(!DIRTY_TAG as i32);
        let ways = set.as_ptr().cast::<__m128i>();
        // All ones in the lanes of quad `q` that hold `tag`.
        let eq = |q: usize| _mm_cmpeq_epi32(_mm_and_si128(_mm_loadu_si128(ways.add(q)), clean), want);
        match N {
            4 => _mm_movemask_ps(_mm_castsi128_ps(eq(0))) as u32,
            // Saturating packs keep 0 and −1: 32-bit lanes to 16, then to bytes.
            8 => _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_setzero_si128())) as u32,
            _ => _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_packs_epi32(eq(2), eq(3)))) as u32,
        }
    }
}

/// Bit `i` set when way `i` of the set holds `tag`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
    set.iter().enumerate().fold(0, |mask, (i, &t)| mask | ((t & !DIRTY_TAG == tag) as u32) << i)
}

/// Dirty lines one access pushed out of the last level, in the order they left, for
/// the memory to write.
#[derive(Clone, Debug, Default)]
pub struct Evicted {
    lines: [u64; MAX_LEVELS],
    len: usize,
}

impl Evicted {
    /// The lines (line numbers: physical address / 64).
    #[inline]
    pub fn lines(&self) -> &[u64] {
        &self.lines[..self.len]
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn push(&mut self, line: u64) {
        self.lines[self.len] = line;
        self.len += 1;
    }
}

/// One level: its sets (of every instance), their geometry and its counters.
struct Level<S> {
    sets: S,
    set_bits: u32,
    set_mask: usize,
    /// All ones for a private level, 0 for a shared one: a core's instance starts at
    /// set `(core & core_mask) << set_bits`.
    core_mask: usize,
    /// Instances: the cores for a private level, 1 for a shared one.
    instances: usize,
    latency: u64,
    hits: u64,
    misses: u64,
    writebacks: u64,
}

impl<S: SetArray> Level<S> {
    fn new(c: &CacheConfig, cores: usize, sets: impl FnOnce(usize, usize) -> S) -> Level<S> {
        let per_instance = (c.size.bytes() / LINE_BYTES) as usize / c.ways;
        let instances = if c.shared { 1 } else { cores };
        Level {
            sets: sets(per_instance * instances, c.ways),
            set_bits: per_instance.trailing_zeros(),
            set_mask: per_instance - 1,
            core_mask: if c.shared { 0 } else { usize::MAX },
            instances,
            latency: c.latency_cycles,
            hits: 0,
            misses: 0,
            writebacks: 0,
        }
    }

    /// The set of `core`'s instance that `line` maps to.
    #[inline(always)]
    fn set_of(&self, core: usize, line: u64) -> usize {
        (core & self.core_mask) << self.set_bits | (line as usize & self.set_mask)
    }

    #[inline(always)]
    fn tag_of(&self, line: u64) -> u32 {
        ((line >> self.set_bits) + 1) as u32
    }

    /// The line whose tag `tag` (dirty flag and all) is in set `set`.
    #[inline(always)]
    fn line_of(&self, set: usize, tag: u32) -> u64 {
        (((tag & !DIRTY_TAG) as u64 - 1) << self.set_bits) | (set & self.set_mask) as u64
    }
}

/// What the cold paths (flushes, reports) need of a level, whatever its sets.
trait AnyLevel {
    fn counters(&mut self) -> (&mut u64, &mut u64, &mut u64);
    fn stats(&self) -> (u64, u64, u64);
    /// Removes `line` from every instance; returns Some(dirty in any) if it was present.
    fn remove_everywhere(&mut self, line: u64) -> Option<bool>;
    fn holds_anywhere(&self, line: u64) -> bool;
    /// Ways holding a line, of them dirty, and all ways.
    fn occupancy(&self) -> (u64, u64, u64);
}

impl<S: SetArray> AnyLevel for Level<S> {
    fn counters(&mut self) -> (&mut u64, &mut u64, &mut u64) {
        (&mut self.hits, &mut self.misses, &mut self.writebacks)
    }

    fn stats(&self) -> (u64, u64, u64) {
        (self.hits, self.misses, self.writebacks)
    }

    fn remove_everywhere(&mut self, line: u64) -> Option<bool> {
        let tag = self.tag_of(line);
        (0..self.instances).filter_map(|core| self.sets.remove(self.set_of(core, line), tag)).reduce(|a, b| a | b)
    }

    fn holds_anywhere(&self, line: u64) -> bool {
        (0..self.instances).any(|core| self.sets.peek(self.set_of(core, line), self.tag_of(line)))
    }

    fn occupancy(&self) -> (u64, u64, u64) {
        let tags = self.sets.tags();
        let valid = tags.iter().filter(|&&t| t != 0).count() as u64;
        let dirty = tags.iter().filter(|&&t| t & DIRTY_TAG != 0).count() as u64;
        (valid, dirty, tags.len() as u64)
    }
}

/// A level and the levels below it, or memory ([`Memory`]): the hierarchy as a type,
/// so that each level's associativity is a compile-time constant and an access is
/// one straight path through the levels.
trait Below {
    /// Levels, memory not counted.
    const DEPTH: usize;

    /// Looks `line` up in this level and, on a miss, in the ones below, then fills
    /// the levels that missed, the lowest first; a fill's dirty victim is written into
    /// the level below (or into `evicted` from the last level). Returns how many
    /// levels from this one missed (`DEPTH` when memory served the line) and the
    /// latency (the last level's when memory served it). `write` makes the line dirty
    /// in this level only: a write hit below the first level moves the data up.
    fn access(&mut self, core: usize, line: u64, write: bool, evicted: &mut Evicted) -> (usize, u64);

    /// Writes a dirty line into this level (most recent and dirty, allocating if
    /// absent), or into `evicted` past the last level.
    fn write_back(&mut self, core: usize, line: u64, evicted: &mut Evicted);

    fn levels(&self) -> Vec<&dyn AnyLevel>;
    fn levels_mut(&mut self) -> Vec<&mut dyn AnyLevel>;
}

/// Below the last level.
struct Memory;

impl Below for Memory {
    const DEPTH: usize = 0;

    #[inline(always)]
    fn access(&mut self, _core: usize, _line: u64, _write: bool, _evicted: &mut Evicted) -> (usize, u64) {
        (0, 0)
    }

    #[inline(always)]
    fn write_back(&mut self, _core: usize, line: u64, evicted: &mut Evicted) {
        evicted.push(line);
    }

    fn levels(&self) -> Vec<&dyn AnyLevel> {
        Vec::new()
    }

    fn levels_mut(&mut self) -> Vec<&mut dyn AnyLevel> {
        Vec::new()
    }
}

/// Level `top` above `below`.
struct Stack<S, B> {
    top: Level<S>,
    below: B,
}

impl<S: SetArray, B> Stack<S, B> {
    /// The first step of [`Below::access`] alone: the result of a hit in the top level
    /// (which it makes most recent, dirty if `write`); `None` on a miss, which changes
    /// nothing.
    #[inline(always)]
    fn hit(&mut self, core: usize, line: u64, write: bool) -> Option<(usize, u64)> {
        let l = &mut self.top;
        if l.sets.lookup(l.set_of(core, line), l.tag_of(line), write) {
            l.hits += 1;
            return Some((0, l.latency));
        }
        None
    }
}

impl<S: SetArray + 'static, B: Below> Below for Stack<S, B> {
    const DEPTH: usize = B::DEPTH + 1;

    #[inline(always)]
    fn access(&mut self, core: usize, line: u64, write: bool, evicted: &mut Evicted) -> (usize, u64) {
        let l = &mut self.top;
        let (set, tag) = (l.set_of(core, line), l.tag_of(line));
        if l.sets.lookup(set, tag, write) {
            l.hits += 1;
            return (0, l.latency);
        }
        l.misses += 1;
        let (missed, latency) = self.below.access(core, line, false, evicted);
        let l = &mut self.top;
        let victim = l.sets.insert(set, tag | if write { DIRTY_TAG } else { 0 });
        if victim & DIRTY_TAG != 0 {
            l.writebacks += 1;
            let line = l.line_of(set, victim);
            self.below.write_back(core, line, evicted);
        }
        (missed + 1, if B::DEPTH == 0 { self.top.latency } else { latency })
    }

    #[inline(always)]
    fn write_back(&mut self, core: usize, line: u64, evicted: &mut Evicted) {
        let l = &mut self.top;
        let (set, tag) = (l.set_of(core, line), l.tag_of(line));
        if l.sets.lookup(set, tag, true) {
            return;
        }
        let victim = l.sets.insert(set, tag | DIRTY_TAG);
        if victim & DIRTY_TAG != 0 {
            l.writebacks += 1;
            let line = l.line_of(set, victim);
            self.below.write_back(core, line, evicted);
        }
    }

    fn levels(&self) -> Vec<&dyn AnyLevel> {
        let mut v: Vec<&dyn AnyLevel> = vec![&self.top];
        v.extend(self.below.levels());
        v
    }

    fn levels_mut(&mut self) -> Vec<&mut dyn AnyLevel> {
        let mut v: Vec<&mut dyn AnyLevel> = vec![&mut self.top];
        v.extend(self.below.levels_mut());
        v
    }
}

type On<S, B> = Stack<S, B>;
/// Hierarchies of one to [`MAX_LEVELS`] levels of any associativity.
type Any1 = On<Sets, Memory>;
type Any2 = On<Sets, Any1>;
type Any3 = On<Sets, Any2>;
type Any4 = On<Sets, Any3>;
type Any5 = On<Sets, Any4>;

/// The hierarchy, its shape chosen once when it is built: the presets' shapes with
/// every associativity fixed at compile time, any other by its depth, with each
/// level's associativity chosen per operation.
enum Shape {
    /// The default: 4-, 8- and 16-way (Rainbow's Table IV, most presets).
    W4W8W16(On<Fixed<4>, On<Fixed<8>, On<Fixed<16>, Memory>>>),
    /// 8-, 8- and 16-way (the memos preset).
    W8W8W16(On<Fixed<8>, On<Fixed<8>, On<Fixed<16>, Memory>>>),
    /// 4- and 16-way (the SpAR presets).
    W4W16(On<Fixed<4>, On<Fixed<16>, Memory>>),
    Any1(Any1),
    Any2(Any2),
    Any3(Any3),
    Any4(Any4),
    Any5(Any5),
}

macro_rules! each_shape {
    ($s:expr, $h:ident => $e:expr) => {
        match $s {
            Shape::W4W8W16($h) => $e,
            Shape::W8W8W16($h) => $e,
            Shape::W4W16($h) => $e,
            Shape::Any1($h) => $e,
            Shape::Any2($h) => $e,
            Shape::Any3($h) => $e,
            Shape::Any4($h) => $e,
            Shape::Any5($h) => $e,
        }
    };
}

impl Shape {
    fn new(configs: &[CacheConfig], cores: usize) -> Shape {
        fn fixed<const W: usize>(c: &CacheConfig, cores: usize) -> Level<Fixed<W>> {
            Level::new(c, cores, |sets, _| Fixed::new(sets))
        }
        fn any<B>(c: &CacheConfig, cores: usize, below: B) -> On<Sets, B> {
            On { top: Level::new(c, cores, Sets::new), below }
        }
        fn on<S, B>(top: Level<S>, below: B) -> On<S, B> {
            On { top, below }
        }
        let ways: Vec<usize> = configs.iter().map(|c| c.ways).collect();
        let c = configs;
        match ways.as_slice() {
            [4, 8, 16] => Shape::W4W8W16(on(fixed(&c[0], cores), on(fixed(&c[1], cores), on(fixed(&c[2], cores), Memory)))),
            [8, 8, 16] => Shape::W8W8W16(on(fixed(&c[0], cores), on(fixed(&c[1], cores), on(fixed(&c[2], cores), Memory)))),
            [4, 16] => Shape::W4W16(on(fixed(&c[0], cores), on(fixed(&c[1], cores), Memory))),
            _ => {
                let one = |i: usize| any(&c[i], cores, Memory);
                match c.len() {
                    1 => Shape::Any1(one(0)),
                    2 => Shape::Any2(any(&c[0], cores, one(1))),
                    3 => Shape::Any3(any(&c[0], cores, any(&c[1], cores, one(2)))),
                    4 => Shape::Any4(any(&c[0], cores, any(&c[1], cores, any(&c[2], cores, one(3))))),
                    _ => Shape::Any5(any(&c[0], cores, any(&c[1], cores, any(&c[2], cores, any(&c[3], cores, one(4)))))),
                }
            }
        }
    }
}

/// All cache levels of the machine.
pub struct Caches {
    shape: Shape,
    names: Vec<String>,
    depth: usize,
    l1_latency: u64,
    llc_latency: u64,
}

impl Caches {
    /// The hierarchy of `configs` (validated: 1 to [`MAX_LEVELS`] levels) for `cores` cores.
    pub fn new(configs: &[CacheConfig], cores: usize) -> Caches {
        assert!((1..=MAX_LEVELS).contains(&configs.len()), "a hierarchy of {} levels", configs.len());
        Caches {
            shape: Shape::new(configs, cores),
            names: configs.iter().map(|c| c.name.clone()).collect(),
            depth: configs.len(),
            l1_latency: configs[0].latency_cycles,
            llc_latency: configs[configs.len() - 1].latency_cycles,
        }
    }

    #[inline]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Latency of a hit in the first level (part of the base CPI).
    pub fn l1_latency(&self) -> u64 {
        self.l1_latency
    }

    /// Latency of the last level, paid before a memory access.
    #[inline]
    pub fn llc_latency(&self) -> u64 {
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
    pub fn access(&mut self, core: usize, paddr: u64, write: bool, evicted: &mut Evicted) -> (usize, u64) {
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

    /// Removes every line of the physical range [`paddr`, `paddr + bytes`) from every
    /// level and core (clflush); returns (lines flushed, dirty lines written back). A
    /// line dirty in several levels is written back once.
    pub fn flush_range(&mut self, paddr: u64, bytes: u64, memory_write: &mut impl FnMut(u64)) -> (u64, u64) {
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
    pub fn holds_any(&self, paddr: u64, bytes: u64) -> bool {
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + bytes).div_ceil(LINE_BYTES);
        let levels = each_shape!(&self.shape, h => h.levels());
        (first..last).any(|line| levels.iter().any(|l| l.holds_anywhere(line)))
    }

    /// Adds lookups that were not simulated (sampled mode's fast-forward): `served[l]`
    /// references served by level `l`, or by memory at index `depth()`. A reference
    /// served by level `l` hit there and missed every level above it.
    pub fn add_estimated(&mut self, served: &[u64]) {
        let depth = self.depth;
        for (i, level) in each_shape!(&mut self.shape, h => h.levels_mut()).into_iter().enumerate() {
            let (hits, misses, _) = level.counters();
            *hits += served[i];
            *misses += served[i + 1..=depth].iter().sum::<u64>();
        }
    }

    pub fn stats(&self) -> Vec<CacheStats> {
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
    pub fn add_writebacks(&mut self, per_level: &[u64]) {
        for (level, n) in each_shape!(&mut self.shape, h => h.levels_mut()).into_iter().zip(per_level) {
            *level.counters().2 += n;
        }
    }

    /// The last level's ways holding a line, of them dirty, and all its ways.
    fn last_occupancy(&self) -> (u64, u64, u64) {
        each_shape!(&self.shape, h => h.levels()).last().map_or((0, 0, 0), |l| l.occupancy())
    }

    /// Share of the last level's lines that hold data (a cold cache fills up).
    pub fn valid_share(&self) -> f64 {
        let (valid, _, all) = self.last_occupancy();
        valid as f64 / all.max(1) as f64
    }

    /// Share of the last level's valid lines that are dirty (epochs mode prices its
    /// write-backs with it: in a full cache each miss evicts a line, dirty with this
    /// probability).
    pub fn dirty_share(&self) -> f64 {
        let (valid, dirty, _) = self.last_occupancy();
        dirty as f64 / valid.max(1) as f64
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

    /// One level of one instance, for tests of the set operations alone.
    fn level(sets: usize, ways: usize) -> Level<Sets> {
        let c = CacheConfig { size: Size(sets as u64 * ways as u64 * 64), ways, ..CacheConfig::default() };
        Level::new(&c, 1, Sets::new)
    }

    /// The 4-, 8- and 16-way sets with their recency words, and sets of other
    /// associativities in recency order, against a plain LRU list per set: the same
    /// hits, the same dirty victims, the same recency order, on random lookups, fills
    /// and removals over a few sets (2-way and 3-way sets take the general path).
    #[test]
    fn every_associativity_keeps_true_lru_order() {
        let mut rng = crate::rng::Rng::new(7);
        for ways in [2, 3, 4, 8, 16] {
            let sets = 4;
            let mut arr = level(sets, ways);
            // Per set: (line, dirty), most recent first.
            let mut model: Vec<Vec<(u64, bool)>> = vec![Vec::new(); sets];
            for _ in 0..40_000 {
                let line = rng.below(sets as u64 * (ways as u64 + 3));
                let write = rng.chance(0.3);
                let set = &mut model[(line % sets as u64) as usize];
                let (s, tag) = (arr.set_of(0, line), arr.tag_of(line));
                assert_eq!(arr.sets.peek(s, tag), set.iter().any(|&(l, _)| l == line));
                if rng.chance(0.1) {
                    let removed = set.iter().position(|&(l, _)| l == line).map(|way| set.remove(way).1);
                    assert_eq!(arr.sets.remove(s, tag), removed, "{ways}-way: line {line} removed");
                    continue;
                }
                let hit = arr.sets.lookup(s, tag, write);
                match set.iter().position(|&(l, _)| l == line) {
                    Some(way) => {
                        assert!(hit, "{ways}-way: line {line} is cached");
                        let (l, d) = set.remove(way);
                        set.insert(0, (l, d || write));
                    }
                    None => {
                        assert!(!hit, "{ways}-way: line {line} is not cached");
                        let victim = arr.sets.insert(s, tag | if write { DIRTY_TAG } else { 0 });
                        let victim = (victim & DIRTY_TAG != 0).then(|| arr.line_of(s, victim));
                        set.insert(0, (line, write));
                        let dropped = (set.len() > ways).then(|| set.pop().unwrap());
                        assert_eq!(victim, dropped.filter(|&(_, d)| d).map(|(l, _)| l), "{ways}-way: the dirty victim");
                    }
                }
            }
            for (i, set) in model.iter().enumerate() {
                let mut tags: Vec<u32> = set.iter().map(|&(l, d)| ((l >> 2) + 1) as u32 | if d { DIRTY_TAG } else { 0 }).collect();
                tags.resize(ways, 0);
                assert_eq!(arr.sets.recency(i), tags, "{ways}-way: set {i} in recency order, empty ways last");
            }
        }
    }

    /// Hierarchies of every shape (the spelled-out ones and the general one), with
    /// private and shared levels and three cores, against the hierarchy's rules spelled
    /// out on plain LRU lists: the same level served every access, the same lines
    /// reached memory in the same order, the same counts.
    #[test]
    fn every_shape_matches_the_rules_on_lru_lists() {
        let level = |size: u64, ways: usize, shared: bool| CacheConfig { name: "L".into(), size: Size(size), ways, latency_cycles: ways as u64, shared };
        for configs in [
            vec![level(512, 4, false), level(1024, 2, false), level(4096, 16, true)],
            vec![level(512, 4, false), level(1024, 8, false), level(4096, 16, true)],
            vec![level(512, 8, false), level(1024, 8, false), level(4096, 16, true)],
            vec![level(512, 4, false), level(2048, 16, true)],
            vec![level(256, 4, true)],
            vec![level(256, 2, false), level(512, 4, false), level(1024, 8, false), level(2048, 16, true), level(4096, 32, true)],
        ] {
            let depth = configs.len();
            let cores = 3;
            let mut m = Model {
                sets: configs.iter().map(|c| (c.size.bytes() / 64) as usize / c.ways).collect(),
                ways: configs.iter().map(|c| c.ways).collect(),
                shared: configs.iter().map(|c| c.shared).collect(),
                lines: configs
                    .iter()
                    .map(|c| vec![vec![Vec::new(); (c.size.bytes() / 64) as usize / c.ways]; if c.shared { 1 } else { cores }])
                    .collect(),
                memory: Vec::new(),
            };
            let mut c = Caches::new(&configs, cores);
            let mut evicted = Evicted::default();
            let mut memory = Vec::new();
            let mut rng = crate::rng::Rng::new(11);
            for _ in 0..50_000 {
                let core = rng.below(cores as u64) as usize;
                let line = rng.below(200);
                let write = rng.chance(0.4);
                let (level, latency) = c.access(core, line << 6, write, &mut evicted);
                memory.extend_from_slice(evicted.lines());
                let hit = (0..depth).find(|&i| m.lookup(i, core, line, write && i == 0)).unwrap_or(depth);
                for i in (0..hit).rev() {
                    m.install(i, core, line, write && i == 0);
                }
                assert_eq!((level, latency), (hit, configs[hit.min(depth - 1)].latency_cycles), "line {line} from core {core}");
            }
            assert_eq!(memory, m.memory, "the same write-backs in the same order");
            assert!(memory.len() > 1000);
            for (i, s) in c.stats().iter().enumerate() {
                assert!(s.hits > 100 && s.misses > 100, "level {i} of {depth} is exercised: {s:?}");
            }
        }
    }

    /// One set of the model: (line, dirty), most recent first.
    type ModelSet = Vec<(u64, bool)>;

    /// Per level, per instance, per set: the lines; the hierarchy's rules on them.
    struct Model {
        sets: Vec<usize>,
        ways: Vec<usize>,
        shared: Vec<bool>,
        lines: Vec<Vec<Vec<ModelSet>>>,
        memory: Vec<u64>,
    }

    impl Model {
        fn set(&mut self, i: usize, core: usize, line: u64) -> &mut ModelSet {
            let inst = if self.shared[i] { 0 } else { core };
            let s = (line % self.sets[i] as u64) as usize;
            &mut self.lines[i][inst][s]
        }

        /// Looks up; on a hit makes the line most recent, dirty if `write`.
        fn lookup(&mut self, i: usize, core: usize, line: u64, write: bool) -> bool {
            let set = self.set(i, core, line);
            let Some(way) = set.iter().position(|&(l, _)| l == line) else { return false };
            let (l, d) = set.remove(way);
            set.insert(0, (l, d || write));
            true
        }

        fn install(&mut self, i: usize, core: usize, line: u64, dirty: bool) {
            let ways = self.ways[i];
            let set = self.set(i, core, line);
            set.insert(0, (line, dirty));
            if set.len() > ways {
                if let Some((victim, true)) = set.pop() {
                    self.write_back(i + 1, core, victim);
                }
            }
        }

        fn write_back(&mut self, i: usize, core: usize, line: u64) {
            if i == self.sets.len() {
                self.memory.push(line);
            } else if !self.lookup(i, core, line, true) {
                self.install(i, core, line, true);
            }
        }
    }

    /// Runs `access` and collects the write-backs.
    fn access(c: &mut Caches, core: usize, paddr: u64, write: bool, mem: &mut Vec<u64>) -> (usize, u64) {
        let mut evicted = Evicted::default();
        let out = c.access(core, paddr, write, &mut evicted);
        mem.extend_from_slice(evicted.lines());
        out
    }

    #[test]
    fn hits_and_misses_of_a_short_sequence() {
        let mut c = Caches::new(&two_level(), 1);
        let mut mem = Vec::new();
        let w = &mut mem;
        // Lines A=0, B=1, C=2 (addresses 0, 64, 128).
        assert_eq!(access(&mut c, 0, 0, false, w), (2, 10)); // A: miss both → memory
        assert_eq!(access(&mut c, 0, 64, false, w), (2, 10)); // B: miss both
        assert_eq!(access(&mut c, 0, 0, false, w), (0, 2)); // A: L1 hit
        assert_eq!(access(&mut c, 0, 128, false, w), (2, 10)); // C: evicts B from L1 (LRU)
        assert_eq!(access(&mut c, 0, 64, false, w), (1, 10)); // B: L1 miss, L2 hit
        let s = c.stats();
        assert_eq!((s[0].hits, s[0].misses), (1, 4));
        assert_eq!((s[1].hits, s[1].misses), (1, 3));
        assert!(mem.is_empty(), "nothing was dirty");
    }

    #[test]
    fn dirty_lines_write_back_level_by_level() {
        let mut c = Caches::new(&two_level(), 1);
        let mut mem = Vec::new();
        access(&mut c, 0, 0, true, &mut mem); // A dirty in L1
        access(&mut c, 0, 64, false, &mut mem); // B
        access(&mut c, 0, 128, false, &mut mem); // C evicts dirty A from L1 → written into L2
        assert!(mem.is_empty(), "A went to L2, not memory");
        // Five more distinct lines push A out of the 4-way L2 → one memory write of line 0.
        for line in 3..8 {
            access(&mut c, 0, line * 64, false, &mut mem);
        }
        assert_eq!(mem, vec![0]);
    }

    #[test]
    fn flush_writes_back_dirty_lines_once_and_removes_all_copies() {
        let mut c = Caches::new(&two_level(), 2);
        let mut mem = Vec::new();
        access(&mut c, 0, 4096, true, &mut mem); // dirty in core 0's L1, clean copy in L2
        access(&mut c, 1, 4096 + 64, false, &mut mem);
        assert_eq!(c.flush_range(4096, 4096, &mut |l| mem.push(l)), (64, 1));
        assert_eq!(mem, vec![4096 / 64]);
        assert!(!c.holds_any(4096, 4096));
    }

    #[test]
    fn private_levels_are_per_core() {
        let mut c = Caches::new(&two_level(), 2);
        let mut mem = Vec::new();
        access(&mut c, 0, 0, false, &mut mem);
        // Core 1 misses its own L1 but hits the shared L2.
        assert_eq!(access(&mut c, 1, 0, false, &mut mem), (1, 10));
    }
}
