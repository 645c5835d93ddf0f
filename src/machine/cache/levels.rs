//! The hierarchy as a type: a [`Level`] (its sets, geometry and counters) on the
//! levels below it ([`Stack`] over [`Below`], down to [`Memory`]), so that an access
//! is one straight path through levels whose associativity is known at compile time;
//! [`Shape`] chooses the type once, when the hierarchy is built, and [`AnyLevel`] is
//! what the cold paths (flushes, reports) see of a level.

use super::sets::{Fixed, SetArray, Sets, DIRTY_TAG};
use super::{CacheConfig, Evicted, LINE_BYTES};

/// One level: its sets (of every instance), their geometry and its counters.
pub(super) struct Level<S> {
    pub(super) sets: S,
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
    pub(super) fn new(c: &CacheConfig, cores: usize, sets: impl FnOnce(usize, usize) -> S) -> Level<S> {
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
    pub(super) fn set_of(&self, core: usize, line: u64) -> usize {
        (core & self.core_mask) << self.set_bits | (line as usize & self.set_mask)
    }

    #[inline(always)]
    pub(super) fn tag_of(&self, line: u64) -> u32 {
        ((line >> self.set_bits) + 1) as u32
    }

    /// The line whose tag `tag` (dirty flag and all) is in set `set`.
    #[inline(always)]
    pub(super) fn line_of(&self, set: usize, tag: u32) -> u64 {
        (((tag & !DIRTY_TAG) as u64 - 1) << self.set_bits) | (set & self.set_mask) as u64
    }
}

/// What the cold paths (flushes, reports) need of a level, whatever its sets.
pub(super) trait AnyLevel {
    fn counters(&mut self) -> (&mut u64, &mut u64, &mut u64);
    fn stats(&self) -> (u64, u64, u64);
    /// Removes `line` from every instance; returns Some(dirty in any) if it was present.
    fn remove_everywhere(&mut self, line: u64) -> Option<bool>;
    #[cfg(test)]
    fn holds_anywhere(&self, line: u64) -> bool;
    /// Ways holding a line, of them dirty, and all ways.
    fn occupancy(&self) -> (u64, u64, u64);
    /// Whether one instance serves every core.
    fn shared(&self) -> bool;
    /// Looks `line` up in a shared level and fills it (clean) on a miss, counting
    /// nothing: another core's access as epochs mode's stand-ins replay it. Returns
    /// whether it hit, and the line a fill evicted if it was dirty.
    fn touch(&mut self, line: u64) -> (bool, Option<u64>);
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

    #[cfg(test)]
    fn holds_anywhere(&self, line: u64) -> bool {
        (0..self.instances).any(|core| self.sets.peek(self.set_of(core, line), self.tag_of(line)))
    }

    fn shared(&self) -> bool {
        self.core_mask == 0
    }

    fn touch(&mut self, line: u64) -> (bool, Option<u64>) {
        let (set, tag) = (self.set_of(0, line), self.tag_of(line));
        if self.sets.lookup(set, tag, false) {
            return (true, None);
        }
        let victim = self.sets.insert(set, tag);
        (false, (victim & DIRTY_TAG != 0).then(|| self.line_of(set, victim)))
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
pub(super) trait Below {
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
    /// The last level (none below the last).
    fn last_mut(&mut self) -> Option<&mut dyn AnyLevel>;

    /// Writes each level's hits, misses and write-backs into `out`, this level's
    /// first (no allocation: epochs mode reads them around each access of a
    /// calibration).
    fn counts_into(&self, out: &mut [[u64; 3]]);
}

/// Below the last level.
pub(super) struct Memory;

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

    fn counts_into(&self, _out: &mut [[u64; 3]]) {}

    fn last_mut(&mut self) -> Option<&mut dyn AnyLevel> {
        None
    }

    fn levels_mut(&mut self) -> Vec<&mut dyn AnyLevel> {
        Vec::new()
    }
}

/// Level `top` above `below`.
pub(super) struct Stack<S, B> {
    top: Level<S>,
    below: B,
}

impl<S: SetArray, B> Stack<S, B> {
    /// The first step of [`Below::access`] alone: the result of a hit in the top level
    /// (which it makes most recent, dirty if `write`); `None` on a miss, which changes
    /// nothing.
    #[inline(always)]
    pub(super) fn hit(&mut self, core: usize, line: u64, write: bool) -> Option<(usize, u64)> {
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

    fn counts_into(&self, out: &mut [[u64; 3]]) {
        if let Some((first, rest)) = out.split_first_mut() {
            *first = [self.top.hits, self.top.misses, self.top.writebacks];
            self.below.counts_into(rest);
        }
    }

    fn levels(&self) -> Vec<&dyn AnyLevel> {
        let mut v: Vec<&dyn AnyLevel> = vec![&self.top];
        v.extend(self.below.levels());
        v
    }

    fn last_mut(&mut self) -> Option<&mut dyn AnyLevel> {
        if B::DEPTH == 0 {
            Some(&mut self.top)
        } else {
            self.below.last_mut()
        }
    }

    fn levels_mut(&mut self) -> Vec<&mut dyn AnyLevel> {
        let mut v: Vec<&mut dyn AnyLevel> = vec![&mut self.top];
        v.extend(self.below.levels_mut());
        v
    }
}

type On<S, B> = Stack<S, B>;
/// Hierarchies of one to [`MAX_LEVELS`](super::MAX_LEVELS) levels of any associativity.
type Any1 = On<Sets, Memory>;
type Any2 = On<Sets, Any1>;
type Any3 = On<Sets, Any2>;
type Any4 = On<Sets, Any3>;
type Any5 = On<Sets, Any4>;

/// The hierarchy, its shape chosen once when it is built: the presets' shapes with
/// every associativity fixed at compile time, any other by its depth, with each
/// level's associativity chosen per operation.
pub(super) enum Shape {
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
pub(super) use each_shape;

impl Shape {
    pub(super) fn new(configs: &[CacheConfig], cores: usize) -> Shape {
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
