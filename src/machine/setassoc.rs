//! A set-associative array with true-LRU replacement, shared by the TLBs and the
//! caches.
//!
//! Each set keeps its ways in recency order (most recent first), so the common case
//! — a hit on the most recent way — costs one compare, and replacement is "drop the
//! last way". Keys are non-zero `u64`s chosen by the user of the array (0 marks an
//! empty way); each way also carries a `u64` value.

#[derive(Clone, Debug)]
pub struct SetAssoc {
    ways: usize,
    set_mask: u64,
    /// `sets × ways` (key, value) pairs, each set's ways most-recent first.
    slots: Vec<(u64, u64)>,
}

impl SetAssoc {
    /// Creates an empty array of `sets × ways` entries; `sets` must be a power of two.
    pub fn new(sets: usize, ways: usize) -> SetAssoc {
        assert!(sets.is_power_of_two() && ways > 0, "sets must be a power of two, ways > 0");
        SetAssoc { ways, set_mask: sets as u64 - 1, slots: vec![(0, 0); sets * ways] }
    }

    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline]
    fn set(&self, index: u64) -> usize {
        (index & self.set_mask) as usize * self.ways
    }

    /// Looks `key` up in the set selected by `index`; on a hit makes it most recent and
    /// returns a mutable reference to its value.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64, index: u64) -> Option<&mut u64> {
        let base = self.set(index);
        let set = &mut self.slots[base..base + self.ways];
        if set[0].0 == key {
            return Some(&mut set[0].1);
        }
        let way = set.iter().position(|&(k, _)| k == key)?;
        set[..=way].rotate_right(1);
        Some(&mut set[0].1)
    }

    /// Returns the value of `key` without changing recency.
    #[inline]
    pub fn peek(&self, key: u64, index: u64) -> Option<u64> {
        let base = self.set(index);
        self.slots[base..base + self.ways].iter().find(|&&(k, _)| k == key).map(|&(_, v)| v)
    }

    /// Inserts `key` (which must not be present) as most recent; returns the evicted
    /// least-recent entry if the set was full.
    #[inline]
    pub fn insert(&mut self, key: u64, value: u64, index: u64) -> Option<(u64, u64)> {
        let base = self.set(index);
        let set = &mut self.slots[base..base + self.ways];
        let victim = set[self.ways - 1];
        set.rotate_right(1);
        set[0] = (key, value);
        (victim.0 != 0).then_some(victim)
    }

    /// Removes `key` from its set; returns its value if it was present.
    #[inline]
    pub fn remove(&mut self, key: u64, index: u64) -> Option<u64> {
        let base = self.set(index);
        let set = &mut self.slots[base..base + self.ways];
        let way = set.iter().position(|&(k, _)| k == key)?;
        let value = set[way].1;
        set[way..].rotate_left(1);
        set[self.ways - 1] = (0, 0);
        Some(value)
    }

    /// Removes every entry for which `doomed(key, value)` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, u64) -> bool) {
        for set in self.slots.chunks_mut(self.ways) {
            let mut w = 0;
            for r in 0..set.len() {
                if set[r].0 != 0 && keep(set[r].0, set[r].1) {
                    set[w] = set[r];
                    w += 1;
                }
            }
            set[w..].fill((0, 0));
        }
    }

    /// Iterates over the valid (key, value) pairs.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.slots.iter().copied().filter(|&(k, _)| k != 0)
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
        s.retain(|k, _| k != 3);
        assert_eq!(s.entries().collect::<Vec<_>>(), vec![(2, 200)]);
    }
}
