//! A set-associative array with true-LRU replacement, shared by the TLBs and the
//! paging-structure caches, and the recency words that the caches use as well.
//!
//! Keys are non-zero `u64`s chosen by the user of the array (0 marks an empty way);
//! each way also carries a `u64` value. Sets of 4, 8 or 16 ways — every TLB of every
//! preset — are fixed at compile time: keys and values stay in their ways, the search
//! of a set is unrolled, and the set's recency order is a [recency word](touch), so
//! that neither a hit nor a fill moves entries. Other associativities keep each set's
//! entries in recency order (most recent first) and move them.

/// One in every 4-bit position of a recency word.
const NIBBLES: u64 = 0x1111_1111_1111_1111;

/// The recency word of a set of `W` ways (at most 16) with every way in its own
/// position, way 0 most recent: what an empty set starts with, so that its fills take
/// the ways from the last one down.
///
/// A recency word is a permutation of a set's ways, 4 bits per position, position 0
/// the most recent way; the least recent way is the victim of the next fill. Empty
/// ways are always the least recent ones: a fill takes the last position, and a
/// removal puts the way it empties there ([`retire`]).
pub(super) const fn identity<const W: usize>() -> u64 {
    let mut o = 0;
    let mut way = 0;
    while way < W {
        o |= (way as u64) << (4 * way);
        way += 1;
    }
    o
}

/// Four times the position of `way` in recency word `o`: the lowest 4-bit field equal
/// to `way`, where `x` has a zero field, and subtracting one from every field borrows
/// into the high bit of the lowest zero field first.
#[inline(always)]
fn position4(o: u64, way: u64) -> u32 {
    let x = o ^ (way * NIBBLES);
    (x.wrapping_sub(NIBBLES) & !x & (NIBBLES << 3)).trailing_zeros() & !3
}

/// Makes `way` the most recent way of recency word `o`.
#[inline(always)]
pub(super) fn touch(o: &mut u64, way: u64) {
    if *o & 0xf != way {
        // The positions before the way's move down one; the way goes first.
        let before = (1u64 << position4(*o, way)) - 1;
        *o = (*o & !(before << 4 | 0xf)) | (*o & before) << 4 | way;
    }
}

/// The least recent way of recency word `o` of a `W`-way set, which becomes the most
/// recent: the way a fill takes.
#[inline(always)]
pub(super) fn fill<const W: usize>(o: &mut u64) -> usize {
    let way = (*o >> (4 * (W - 1))) & 0xf;
    *o = (*o << 4 | way) & (u64::MAX >> (64 - 4 * W));
    way as usize
}

/// Makes `way` the least recent way of recency word `o` of a `W`-way set (the way was
/// just emptied); the positions after it move up one.
#[inline]
pub(super) fn retire<const W: usize>(o: &mut u64, way: usize) {
    let p4 = position4(*o, way as u64);
    let before = (1u64 << p4) - 1;
    *o = (*o & before) | ((*o >> p4) >> 4) << p4 | (way as u64) << (4 * (W - 1));
}

/// The ways of recency word `o` of a `W`-way set, most recent first.
#[cfg(test)]
pub(super) fn ways_by_recency<const W: usize>(o: u64) -> impl Iterator<Item = usize> {
    (0..W).map(move |p| (o >> (4 * p)) as usize & 0xf)
}

/// A set-associative array with true-LRU replacement: what the TLBs and the
/// paging-structure caches do with one. The set of an entry is its `index` modulo the
/// number of sets.
pub trait Assoc {
    /// Looks `key` up in the set selected by `index`; on a hit makes it most recent and
    /// returns a mutable reference to its value.
    fn lookup(&mut self, key: u64, index: u64) -> Option<&mut u64>;
    /// Returns the value of `key` without changing recency.
    fn peek(&self, key: u64, index: u64) -> Option<u64>;
    /// Inserts `key` (which must not be present) as most recent; returns the evicted
    /// least-recent entry if the set was full.
    fn insert(&mut self, key: u64, value: u64, index: u64) -> Option<(u64, u64)>;
    /// Removes `key` from its set; returns its value if it was present.
    fn remove(&mut self, key: u64, index: u64) -> Option<u64>;
    /// Removes every entry for which `keep(key, value)` is false.
    fn retain(&mut self, keep: &mut impl FnMut(u64, u64) -> bool);
    /// Whether the array holds no entry (a user may then skip it: a huge-page TLB of
    /// a run without huge pages).
    fn is_empty(&self) -> bool;
    /// The valid (key, value) pairs.
    fn entries(&self) -> Vec<(u64, u64)>;
}

/// One set of `W` ways.
#[derive(Clone, Debug)]
struct Set<const W: usize> {
    keys: [u64; W],
    values: [u64; W],
    order: u64,
}

impl<const W: usize> Set<W> {
    const EMPTY: Set<W> = Set { keys: [0; W], values: [0; W], order: identity::<W>() };

    /// The way holding `key`: the search unrolled over the `W` keys.
    #[inline(always)]
    fn find(&self, key: u64) -> Option<usize> {
        self.keys.iter().position(|&k| k == key)
    }

    fn remove_way(&mut self, way: usize) -> u64 {
        self.keys[way] = 0;
        retire::<W>(&mut self.order, way);
        std::mem::take(&mut self.values[way])
    }
}

/// An array of sets of `W` ways (4, 8 or 16), fixed at compile time.
#[derive(Clone, Debug)]
pub struct Fixed<const W: usize> {
    sets: Vec<Set<W>>,
    set_mask: u64,
    len: usize,
}

impl<const W: usize> Fixed<W> {
    /// An empty array of `sets` sets (a power of two).
    pub fn new(sets: usize) -> Fixed<W> {
        const { assert!(W == 4 || W == 8 || W == 16) };
        assert!(sets.is_power_of_two(), "sets must be a power of two");
        Fixed { sets: vec![Set::EMPTY; sets], set_mask: sets as u64 - 1, len: 0 }
    }

    #[inline(always)]
    fn set(&self, index: u64) -> usize {
        (index & self.set_mask) as usize
    }
}

impl<const W: usize> Assoc for Fixed<W> {
    #[inline(always)]
    fn lookup(&mut self, key: u64, index: u64) -> Option<&mut u64> {
        let set = self.set(index);
        let s = &mut self.sets[set];
        let way = s.find(key)?;
        touch(&mut s.order, way as u64);
        Some(&mut s.values[way])
    }

    #[inline]
    fn peek(&self, key: u64, index: u64) -> Option<u64> {
        let s = &self.sets[self.set(index)];
        s.find(key).map(|way| s.values[way])
    }

    #[inline(always)]
    fn insert(&mut self, key: u64, value: u64, index: u64) -> Option<(u64, u64)> {
        let set = self.set(index);
        let s = &mut self.sets[set];
        let way = fill::<W>(&mut s.order);
        let victim = (std::mem::replace(&mut s.keys[way], key), std::mem::replace(&mut s.values[way], value));
        if victim.0 == 0 {
            self.len += 1;
            return None;
        }
        Some(victim)
    }

    fn remove(&mut self, key: u64, index: u64) -> Option<u64> {
        let set = self.set(index);
        let s = &mut self.sets[set];
        let value = s.find(key).map(|way| s.remove_way(way))?;
        self.len -= 1;
        Some(value)
    }

    fn retain(&mut self, keep: &mut impl FnMut(u64, u64) -> bool) {
        self.len = 0;
        for s in &mut self.sets {
            for way in 0..W {
                if s.keys[way] != 0 {
                    if keep(s.keys[way], s.values[way]) {
                        self.len += 1;
                    } else {
                        s.remove_way(way);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn entries(&self) -> Vec<(u64, u64)> {
        let all = self.sets.iter().flat_map(|s| s.keys.iter().zip(&s.values));
        all.filter(|&(&k, _)| k != 0).map(|(&k, &v)| (k, v)).collect()
    }
}

/// An array of sets of any number of ways, each set's (key, value) pairs in recency
/// order.
#[derive(Clone, Debug)]
pub struct Ordered {
    ways: usize,
    slots: Vec<(u64, u64)>,
    set_mask: u64,
    len: usize,
}

impl Ordered {
    #[inline]
    fn set(&mut self, index: u64) -> &mut [(u64, u64)] {
        let set = (index & self.set_mask) as usize;
        &mut self.slots[set * self.ways..][..self.ways]
    }
}

impl Assoc for Ordered {
    #[inline]
    fn lookup(&mut self, key: u64, index: u64) -> Option<&mut u64> {
        let set = self.set(index);
        let way = set.iter().position(|&(k, _)| k == key)?;
        set[..=way].rotate_right(1);
        Some(&mut set[0].1)
    }

    #[inline]
    fn peek(&self, key: u64, index: u64) -> Option<u64> {
        let set = (index & self.set_mask) as usize;
        self.slots[set * self.ways..][..self.ways].iter().find(|&&(k, _)| k == key).map(|&(_, v)| v)
    }

    #[inline]
    fn insert(&mut self, key: u64, value: u64, index: u64) -> Option<(u64, u64)> {
        let set = self.set(index);
        let victim = set[set.len() - 1];
        set.rotate_right(1);
        set[0] = (key, value);
        if victim.0 == 0 {
            self.len += 1;
            return None;
        }
        Some(victim)
    }

    fn remove(&mut self, key: u64, index: u64) -> Option<u64> {
        let set = self.set(index);
        let way = set.iter().position(|&(k, _)| k == key)?;
        let value = set[way].1;
        set[way..].rotate_left(1);
        set[set.len() - 1] = (0, 0);
        self.len -= 1;
        Some(value)
    }

    fn retain(&mut self, keep: &mut impl FnMut(u64, u64) -> bool) {
        self.len = 0;
        for set in self.slots.chunks_mut(self.ways) {
            let mut w = 0;
            for r in 0..set.len() {
                if set[r].0 != 0 && keep(set[r].0, set[r].1) {
                    set[w] = set[r];
                    w += 1;
                }
            }
            set[w..].fill((0, 0));
            self.len += w;
        }
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn entries(&self) -> Vec<(u64, u64)> {
        self.slots.iter().copied().filter(|&(k, _)| k != 0).collect()
    }
}

/// An array of any associativity, the common ones fixed at compile time and chosen
/// per operation.
#[derive(Clone, Debug)]
pub enum SetAssoc {
    W4(Fixed<4>),
    W8(Fixed<8>),
    W16(Fixed<16>),
    Any(Ordered),
}

macro_rules! each_ways {
    ($s:expr, $a:ident => $e:expr) => {
        match $s {
            SetAssoc::W4($a) => $e,
            SetAssoc::W8($a) => $e,
            SetAssoc::W16($a) => $e,
            SetAssoc::Any($a) => $e,
        }
    };
}

impl SetAssoc {
    /// Creates an empty array of `sets × ways` entries; `sets` must be a power of two.
    pub fn new(sets: usize, ways: usize) -> SetAssoc {
        assert!(sets.is_power_of_two() && ways > 0, "sets must be a power of two, ways > 0");
        match ways {
            4 => SetAssoc::W4(Fixed::new(sets)),
            8 => SetAssoc::W8(Fixed::new(sets)),
            16 => SetAssoc::W16(Fixed::new(sets)),
            _ => SetAssoc::Any(Ordered { ways, slots: vec![(0, 0); sets * ways], set_mask: sets as u64 - 1, len: 0 }),
        }
    }
}

impl Assoc for SetAssoc {
    #[inline(always)]
    fn lookup(&mut self, key: u64, index: u64) -> Option<&mut u64> {
        each_ways!(self, a => a.lookup(key, index))
    }

    #[inline]
    fn peek(&self, key: u64, index: u64) -> Option<u64> {
        each_ways!(self, a => a.peek(key, index))
    }

    #[inline(always)]
    fn insert(&mut self, key: u64, value: u64, index: u64) -> Option<(u64, u64)> {
        each_ways!(self, a => a.insert(key, value, index))
    }

    #[inline]
    fn remove(&mut self, key: u64, index: u64) -> Option<u64> {
        each_ways!(self, a => a.remove(key, index))
    }

    fn retain(&mut self, keep: &mut impl FnMut(u64, u64) -> bool) {
        each_ways!(self, a => a.retain(keep))
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        each_ways!(self, a => a.is_empty())
    }

    fn entries(&self) -> Vec<(u64, u64)> {
        each_ways!(self, a => a.entries())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_in_a_two_way_set() {
        // One set, two ways. Insert A, B; touch A; insert C: B is least recent and goes.
        let mut s = SetAssoc::new(1, 2);
        assert_eq!(s.insert(10, 1, 0), None);
        assert_eq!(s.insert(20, 2, 0), None);
        assert_eq!(s.lookup(10, 0).copied(), Some(1));
        assert_eq!(s.insert(30, 3, 0), Some((20, 2)));
        assert_eq!(s.peek(20, 0), None);
        assert_eq!(s.peek(10, 0), Some(1));
        // Now order is C, A: inserting D evicts A.
        assert_eq!(s.insert(40, 4, 0), Some((10, 1)));
    }

    #[test]
    fn sets_are_independent_and_remove_frees_a_way() {
        let mut s = SetAssoc::new(2, 1);
        s.insert(1, 100, 0);
        s.insert(2, 200, 1);
        assert_eq!(s.peek(1, 0), Some(100));
        assert_eq!(s.peek(2, 1), Some(200));
        assert_eq!(s.remove(1, 0), Some(100));
        assert_eq!(s.insert(3, 300, 0), None, "the removed way is free again");
        s.retain(&mut |k, _| k != 3);
        assert_eq!(s.entries(), vec![(2, 200)]);
        assert!(!s.is_empty());
        s.retain(&mut |_, _| false);
        assert!(s.is_empty());
    }

    /// Recency words: way 2 of a 4-way set touched, a fill, a removal, by hand.
    #[test]
    fn recency_words_by_hand() {
        let mut o = identity::<4>();
        assert_eq!(o, 0x3210);
        touch(&mut o, 2);
        assert_eq!(o, 0x3102, "way 2 first, ways 0 and 1 move down");
        assert_eq!(fill::<4>(&mut o), 3, "the least recent way");
        assert_eq!(o, 0x1023);
        retire::<4>(&mut o, 0);
        assert_eq!(o, 0x0123, "way 0 emptied goes last");
        assert_eq!(ways_by_recency::<4>(o).collect::<Vec<_>>(), vec![3, 2, 1, 0]);
        let mut o = identity::<16>();
        touch(&mut o, 15);
        assert_eq!(o, 0xedcb_a987_6543_210f);
        retire::<16>(&mut o, 15);
        assert_eq!(o, identity::<16>());
    }

    /// Every associativity, the fixed ones and the general one, against a plain LRU
    /// list per set: the same hits and values, the same victims, the same entries,
    /// over random lookups, peeks, inserts, removals and retains.
    #[test]
    fn every_associativity_keeps_true_lru_order() {
        let mut rng = crate::rng::Rng::new(5);
        for ways in [1, 2, 3, 4, 8, 16, 32] {
            let sets = 4u64;
            let mut arr = SetAssoc::new(sets as usize, ways);
            // Per set: (key, value), most recent first.
            let mut model: Vec<Vec<(u64, u64)>> = vec![Vec::new(); sets as usize];
            for step in 0..40_000u64 {
                let key = 1 + rng.below(sets * (ways as u64 + 3));
                let set = &mut model[(key % sets) as usize];
                let at = set.iter().position(|&(k, _)| k == key);
                match rng.below(10) {
                    0 => assert_eq!(arr.peek(key, key), at.map(|w| set[w].1)),
                    1 => assert_eq!(arr.remove(key, key), at.map(|w| set.remove(w).1), "{ways}-way: remove {key}"),
                    2 if step % 1000 == 2 => {
                        arr.retain(&mut |k, _| k % 3 != 0);
                        for set in &mut model {
                            set.retain(|&(k, _)| k % 3 != 0);
                        }
                    }
                    _ => match at {
                        Some(w) => {
                            let (k, v) = set.remove(w);
                            set.insert(0, (k, v + 1));
                            let got = arr.lookup(key, key).expect("cached");
                            assert_eq!(*got, v, "{ways}-way: value of {key}");
                            *got += 1;
                        }
                        None => {
                            assert_eq!(arr.lookup(key, key), None);
                            set.insert(0, (key, step));
                            let dropped = (set.len() > ways).then(|| set.pop().unwrap());
                            assert_eq!(arr.insert(key, step, key), dropped, "{ways}-way: the victim");
                        }
                    },
                }
            }
            let mut entries = arr.entries();
            let mut expected: Vec<(u64, u64)> = model.concat();
            entries.sort_unstable();
            expected.sort_unstable();
            assert_eq!(entries, expected, "{ways}-way: the entries");
            assert_eq!(arr.is_empty(), expected.is_empty());
        }
    }
}
