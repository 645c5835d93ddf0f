//! The sets of one cache level and their replacement: tags of four bytes with the
//! dirty flag in them ([`DIRTY_TAG`]), true LRU, and the way a set is searched — all
//! ways compared at once for 4, 8 and 16 ways ([`Fixed`], [`match_mask`]), a recency
//! list for any other associativity ([`AnyWays`]), and [`Sets`] to choose per level.

use crate::machine::setassoc;

/// A tag: the line number above the set-index bits, plus one (0 marks an empty way),
/// with the dirty flag in bit 31. Four bytes per line keep a 16-way set in one
/// 64-byte host cache line, which is what makes the simulated LLC cheap to probe.
pub(super) const DIRTY_TAG: u32 = 1 << 31;

/// The sets of one level (of every instance of it, one after another), addressed by
/// set index: true-LRU replacement, so that a miss evicts the least recently used way.
pub(super) trait SetArray {
    /// On a hit in set `set`, makes the line most recent, sets its dirty flag if
    /// `write`, returns true.
    fn lookup(&mut self, set: usize, tag: u32, write: bool) -> bool;
    /// Puts `t` (a tag with its dirty flag) into set `set` as most recent in place of
    /// the least recent way; returns that way's tag (0 if it was empty).
    fn insert(&mut self, set: usize, t: u32) -> u32;
    /// Removes a line; returns Some(dirty) if it was present.
    fn remove(&mut self, set: usize, tag: u32) -> Option<bool>;
    #[cfg(test)]
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
pub(super) struct Fixed<const W: usize> {
    tags: Vec<[u32; W]>,
    order: Vec<u64>,
}

impl<const W: usize> Fixed<W> {
    pub(super) fn new(sets: usize) -> Fixed<W> {
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

    #[cfg(test)]
    fn peek(&self, set: usize, tag: u32) -> bool {
        match_mask(&self.tags[set], tag) != 0
    }

    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32> {
        setassoc::ways_by_recency::<W>(self.order[set]).map(|way| self.tags[set][way]).collect()
    }
}

/// Sets of any number of ways, each set's tags in recency order (most recent first).
pub(super) struct AnyWays {
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

    #[cfg(test)]
    fn peek(&self, set: usize, tag: u32) -> bool {
        self.tags[set * self.ways..][..self.ways].iter().any(|&t| t & !DIRTY_TAG == tag)
    }

    #[cfg(test)]
    fn recency(&self, set: usize) -> Vec<u32> {
        self.tags[set * self.ways..][..self.ways].to_vec()
    }
}

/// The sets of a level of a hierarchy whose shape is not spelled out in [`Shape`](super::levels::Shape):
/// the associativity chosen per operation.
pub(super) enum Sets {
    W4(Fixed<4>),
    W8(Fixed<8>),
    W16(Fixed<16>),
    Any(AnyWays),
}

impl Sets {
    pub(super) fn new(sets: usize, ways: usize) -> Sets {
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

    #[cfg(test)]
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
pub(super) fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
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
pub(super) fn match_mask<const N: usize>(set: &[u32; N], tag: u32) -> u32 {
    set.iter().enumerate().fold(0, |mask, (i, &t)| mask | ((t & !DIRTY_TAG == tag) as u32) << i)
}
