//! Physical frame allocation per tier, for base (4 KiB) and huge frames, optionally
//! restricted to a colour.
//!
//! Physical memory is one frame-number space: tier *t* owns the frames
//! `[base_t, base_t + frames_t)`, with every base aligned to 1 GiB so that low
//! address bits (channel, bank, cache-set colour) mean the same in every tier. Each
//! tier keeps a bitmap of free frames (one bit per frame), so the allocator costs an
//! eighth of a byte per frame and no tier can be over-committed.
//!
//! # Colour counts
//! With `machine.colour_bits` set, each tier also counts its free frames per colour
//! over those physical-address bits (2^n counts for n bits): memos' colour
//! sub-buddy, whose order-0 lists are indexed by the 512 colours of PFN bits 21, 20
//! and 18–12 (memos §6.2, Fig. 12). The counts answer "how many free frames of this
//! colour" at once and let a coloured allocation that cannot succeed fail without a
//! scan. A coloured allocation visits only the bitmap words that can hold its colour
//! (the colour's frame-number bits 6 and up fix the word index bits they cover), and
//! within a word tests every candidate bit at once, so it never tests frame by frame.

use super::TierId;

/// A colour: the frames whose tier-local number has `(frame & mask) == value`. The
/// mask is over frame-number bits, i.e. tier-local physical-address bits shifted right
/// by 12 (the same as global bits below the 1 GiB tier alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Colour {
    pub mask: u64,
    pub value: u64,
}

impl Colour {
    pub const ANY: Colour = Colour { mask: 0, value: 0 };

    #[inline]
    pub fn matches(self, pfn: u64) -> bool {
        pfn & self.mask == self.value
    }

    /// The colour whose physical-address bits `bits` (least significant first, each
    /// at least 12, i.e. above the 4 KiB page offset) hold `value`: bit *i* of
    /// `value` is address bit `bits[i]`. Refuses a bit inside the page offset or
    /// beyond 63, a bit named twice, and a value wider than `bits`.
    pub fn from_bits(bits: &[u8], value: u64) -> Result<Colour, String> {
        if bits.len() < 64 && value >> bits.len() != 0 {
            return Err(format!("colour value {value:#x} does not fit in {} bits", bits.len()));
        }
        let mut c = Colour::ANY;
        for (i, &b) in bits.iter().enumerate() {
            if !(12..64).contains(&b) {
                return Err(format!("address bit {b} cannot colour a frame: colour bits are 12 to 63 (above the 4 KiB page offset)"));
            }
            let m = 1u64 << (b - 12);
            if c.mask & m != 0 {
                return Err(format!("address bit {b} is named twice"));
            }
            c.mask |= m;
            c.value |= ((value >> i) & 1) << (b - 12);
        }
        Ok(c)
    }

    /// The frames of both colours; `None` if no frame can be of both (they want
    /// different values of a bit they share).
    pub fn and(self, other: Colour) -> Option<Colour> {
        if (self.value ^ other.value) & self.mask & other.mask != 0 {
            return None;
        }
        Some(Colour { mask: self.mask | other.mask, value: self.value | other.value })
    }

    /// Whether some frame number can match: no value bit outside the mask.
    fn possible(self) -> bool {
        self.value & !self.mask == 0
    }
}

/// The smallest `y >= s` with `y & mask == value` (`value` within `mask`), or `None`
/// past `u64::MAX`. Above the highest fixed bit where `s` differs from `value`, `s`
/// is kept if it has a 0 there (the bit is raised and the free bits below cleared),
/// else its free bits above that position are incremented (with the carry skipping
/// fixed bits) and the free bits below cleared.
fn next_matching(s: u64, mask: u64, value: u64) -> Option<u64> {
    let diff = (s ^ value) & mask;
    if diff == 0 {
        return Some(s);
    }
    let h = 63 - diff.leading_zeros();
    let low = if h == 63 { u64::MAX } else { (2u64 << h) - 1 };
    if value >> h & 1 == 1 {
        // s has a 0 at h: raise it, clear what is below, put the fixed bits there.
        return Some((s & !low) | (value & low));
    }
    // s has a 1 at h: the free bits above h must grow.
    let above = s & !low;
    let (sum, carry) = (above | (mask & !low) | low).overflowing_add(1);
    if carry {
        return None;
    }
    Some((sum & !mask) | value)
}

/// The physical-address bits a colour count is kept over, as frame-number bits.
#[derive(Clone, Debug, Default)]
struct ColourBits {
    /// Frame-number bit of each colour bit, least significant first.
    shifts: Vec<u8>,
    /// Their union.
    mask: u64,
}

impl ColourBits {
    /// The count index of frame-number bits `f` (only `mask`'s bits matter).
    #[inline]
    fn index(&self, f: u64) -> usize {
        self.shifts.iter().enumerate().fold(0, |i, (k, &s)| i | ((f >> s & 1) as usize) << k)
    }
}
#[derive(Clone, Debug)]
struct TierFrames {
    base: u64,
    frames: u64,
    free: u64,
    /// Bit set = frame free.
    bits: Vec<u64>,
    cursor: u64,
    huge_cursor: u64,
    /// Free frames per colour index over the allocator's colour bits (empty without
    /// them).
    counts: Vec<u32>,
}

impl TierFrames {
    /// The tier-local numbers of the free frames, lowest first.
    fn free_locals(&self) -> impl Iterator<Item = u64> + '_ {
        self.bits.iter().enumerate().flat_map(|(wi, &w)| {
            std::iter::successors((w != 0).then_some(w), |&w| (w & (w - 1) != 0).then(|| w & (w - 1))).map(move |w| wi as u64 * 64 + w.trailing_zeros() as u64)
        })
    }

    #[inline]
    fn is_free(&self, local: u64) -> bool {
        self.bits[(local / 64) as usize] >> (local % 64) & 1 == 1
    }

    #[inline]
    fn set(&mut self, local: u64, free: bool) {
        let w = &mut self.bits[(local / 64) as usize];
        if free {
            *w |= 1 << (local % 64);
        } else {
            *w &= !(1 << (local % 64));
        }
    }
}

/// Frame allocator over all tiers.
#[derive(Clone, Debug)]
pub struct FrameAllocator {
    tiers: Vec<TierFrames>,
    huge_frames: u64,
    colours: ColourBits,
}

/// Frames in 1 GiB: tier bases are aligned to this.
pub const TIER_ALIGN_FRAMES: u64 = 1 << 18;

/// First frame of each tier for tiers of the given frame counts.
pub fn tier_bases(frames_per_tier: &[u64]) -> Vec<u64> {
    let mut base = 0;
    frames_per_tier
        .iter()
        .map(|&frames| {
            let b = base;
            base += frames.div_ceil(TIER_ALIGN_FRAMES).max(1) * TIER_ALIGN_FRAMES;
            b
        })
        .collect()
}

impl FrameAllocator {
    /// Creates an allocator for tiers of the given frame counts; `huge_frames` is the
    /// number of base frames in a huge frame (512 for 2 MiB).
    pub fn new(frames_per_tier: &[u64], huge_frames: u64) -> FrameAllocator {
        let bases = tier_bases(frames_per_tier);
        let tiers = frames_per_tier
            .iter()
            .zip(bases)
            .map(|(&frames, base)| {
                let words = frames.div_ceil(64) as usize;
                let mut bits = vec![u64::MAX; words];
                if frames % 64 != 0 {
                    bits[words - 1] = (1u64 << (frames % 64)) - 1;
                }
                TierFrames { base, frames, free: frames, bits, cursor: 0, huge_cursor: 0, counts: Vec::new() }
            })
            .collect();
        FrameAllocator { tiers, huge_frames, colours: ColourBits::default() }
    }

    /// Keeps free-frame counts per colour over physical-address bits `bits` (each at
    /// least 12, distinct, at most 10 of them; `machine.colour_bits`, checked there),
    /// counted now from the free frames; no bits drops the counts.
    pub fn set_colour_bits(&mut self, bits: &[u8]) {
        assert!(bits.len() <= 10 && bits.iter().all(|&b| (12..64).contains(&b)), "colour bits {bits:?}");
        let shifts: Vec<u8> = bits.iter().map(|&b| b - 12).collect();
        let mask = shifts.iter().fold(0, |m, &s| m | 1u64 << s);
        self.colours = ColourBits { shifts, mask };
        for t in 0..self.tiers.len() {
            let tier = &self.tiers[t];
            let mut counts = if bits.is_empty() { Vec::new() } else { vec![0u32; 1 << bits.len()] };
            if !counts.is_empty() {
                for local in tier.free_locals() {
                    counts[self.colours.index(local)] += 1;
                }
            }
            self.tiers[t].counts = counts;
        }
    }

    /// Records that frame `local` of tier `t` became free (`+1`) or taken (`-1`).
    #[inline]
    fn count(&mut self, t: usize, local: u64, free: bool) {
        if self.colours.mask == 0 {
            return;
        }
        let i = self.colours.index(local);
        let c = &mut self.tiers[t].counts[i];
        if free {
            *c += 1;
        } else {
            *c -= 1;
        }
    }

    /// The number of free frames of `colour` in tier `t`. A colour over the
    /// configured colour bits only (`machine.colour_bits`; any colour when its mask
    /// is empty) is answered from the counts, at most 2^10 additions; any other is
    /// counted by scanning the tier's bitmap (slow, but exact).
    pub fn free_coloured(&self, t: TierId, colour: Colour) -> u64 {
        let tier = &self.tiers[t.index()];
        if !colour.possible() {
            return 0;
        }
        if colour.mask == 0 {
            return tier.free;
        }
        if colour.mask & !self.colours.mask == 0 {
            return self.counted(tier, colour);
        }
        tier.free_locals().filter(|&local| colour.matches(local)).count() as u64
    }

    /// Free frames of `colour`, whose mask is within the colour bits, from the counts.
    fn counted(&self, tier: &TierFrames, colour: Colour) -> u64 {
        let (imask, ivalue) = (self.colours.index(colour.mask), self.colours.index(colour.value));
        tier.counts.iter().enumerate().filter(|&(i, _)| i & imask == ivalue).map(|(_, &c)| c as u64).sum()
    }

    pub fn tier_count(&self) -> usize {
        self.tiers.len()
    }

    /// First frame number of tier `t`.
    pub fn base(&self, t: TierId) -> u64 {
        self.tiers[t.index()].base
    }

    /// Capacity of tier `t` in base frames.
    pub fn frames(&self, t: TierId) -> u64 {
        self.tiers[t.index()].frames
    }

    pub fn free_frames(&self, t: TierId) -> u64 {
        self.tiers[t.index()].free
    }

    /// One past the highest frame number of any tier.
    pub fn frame_limit(&self) -> u64 {
        self.tiers.last().map_or(0, |t| t.base + t.frames)
    }

    /// The tier owning frame `pfn`, if any.
    #[inline]
    pub fn tier_of(&self, pfn: u64) -> Option<TierId> {
        self.tiers.iter().position(|t| pfn >= t.base && pfn < t.base + t.frames).map(|t| TierId(t as u8))
    }

    /// Whether `pfn` is a free frame.
    pub fn is_free(&self, pfn: u64) -> bool {
        self.tier_of(pfn).is_some_and(|t| self.tiers[t.index()].is_free(pfn - self.base(t)))
    }

    /// Takes every frame of tier `t` out of allocation for good (a tier the machine
    /// keeps for itself, such as Memory Mode's DRAM cache).
    pub fn take_all(&mut self, t: TierId) {
        let tier = &mut self.tiers[t.index()];
        tier.bits.iter_mut().for_each(|w| *w = 0);
        tier.free = 0;
        tier.counts.iter_mut().for_each(|c| *c = 0);
    }

    /// Allocates one base frame of `colour` in tier `t`: the first free frame of the
    /// colour from the bitmap word of the last allocation on, wrapping around. A
    /// coloured request fails at once when the colour counts say no frame of it is
    /// free, and otherwise visits only the words that can hold the colour.
    pub fn alloc(&mut self, t: TierId, colour: Colour) -> Option<u64> {
        if colour == Colour::ANY {
            return self.alloc_any(t);
        }
        let ti = t.index();
        let tier = &self.tiers[ti];
        if tier.free == 0 || !colour.possible() {
            return None;
        }
        if self.colours.mask != 0 {
            // The part of the colour over the counted bits bounds what is free.
            let counted = Colour { mask: colour.mask & self.colours.mask, value: colour.value & self.colours.mask };
            if counted.mask != 0 && self.counted(tier, counted) == 0 {
                return None;
            }
        }
        // Word index bits fixed by the colour, and the bits of a word that match.
        let (wmask, wvalue) = (colour.mask >> 6, colour.value >> 6);
        let (lmask, lvalue) = (colour.mask & 63, colour.value & 63);
        let lanes = (0..64u64).filter(|&i| i & lmask == lvalue).fold(0u64, |w, i| w | 1 << i);
        let words = tier.bits.len() as u64;
        let start = tier.cursor / 64;
        let found = [(start, words), (0, start)].into_iter().find_map(|(from, to)| {
            let mut wi = next_matching(from, wmask, wvalue)?;
            while wi < to {
                let w = tier.bits[wi as usize] & lanes;
                if w != 0 {
                    return Some(wi * 64 + w.trailing_zeros() as u64);
                }
                wi = next_matching(wi + 1, wmask, wvalue)?;
            }
            None
        })?;
        let tier = &mut self.tiers[ti];
        tier.set(found, false);
        tier.free -= 1;
        tier.cursor = found;
        self.count(ti, found, false);
        Some(self.tiers[ti].base + found)
    }

    /// Allocates one base frame of any colour in tier `t`: the first free frame from
    /// the bitmap word of the last allocation on, wrapping around.
    fn alloc_any(&mut self, t: TierId) -> Option<u64> {
        let tier = &mut self.tiers[t.index()];
        if tier.free == 0 {
            return None;
        }
        let words = tier.bits.len() as u64;
        let start_word = tier.cursor / 64;
        for step in 0..=words {
            let wi = (start_word + step) % words;
            let w = tier.bits[wi as usize];
            if w != 0 {
                let local = wi * 64 + w.trailing_zeros() as u64;
                tier.set(local, false);
                tier.free -= 1;
                tier.cursor = local;
                let base = tier.base;
                self.count(t.index(), local, false);
                return Some(base + local);
            }
        }
        None
    }

    /// Allocates a naturally aligned huge frame (all its base frames free) in tier `t`;
    /// returns its first frame number.
    pub fn alloc_huge(&mut self, t: TierId) -> Option<u64> {
        let n = self.huge_frames;
        let tier = &mut self.tiers[t.index()];
        let groups = tier.frames / n;
        if tier.free < n || groups == 0 {
            return None;
        }
        for step in 0..groups {
            let g = (tier.huge_cursor + step) % groups;
            if (g * n..(g + 1) * n).step_by(64).all(|local| {
                // n is a multiple of 64 or smaller than 64 (then one partial word).
                let word = tier.bits[(local / 64) as usize];
                let want = if n >= 64 { u64::MAX } else { ((1u64 << n) - 1) << (local % 64) };
                word & want == want
            }) {
                for local in g * n..(g + 1) * n {
                    tier.set(local, false);
                }
                tier.free -= n;
                tier.huge_cursor = g;
                let base = tier.base;
                for local in g * n..(g + 1) * n {
                    self.count(t.index(), local, false);
                }
                return Some(base + g * n);
            }
        }
        None
    }

    /// Returns base frame `pfn` to its tier.
    pub fn free(&mut self, pfn: u64) {
        let t = self.tier_of(pfn).expect("freeing a frame outside every tier");
        let tier = &mut self.tiers[t.index()];
        let local = pfn - tier.base;
        assert!(!tier.is_free(local), "double free of frame {pfn}");
        tier.set(local, true);
        tier.free += 1;
        self.count(t.index(), local, true);
    }

    /// Returns the huge frame starting at `pfn`.
    pub fn free_huge(&mut self, pfn: u64) {
        for f in pfn..pfn + self.huge_frames {
            self.free(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const T0: TierId = TierId(0);

    #[test]
    fn tiers_are_aligned_and_disjoint() {
        let a = FrameAllocator::new(&[100, 300_000, 10], 512);
        assert_eq!(a.base(TierId(0)), 0);
        assert_eq!(a.base(TierId(1)), TIER_ALIGN_FRAMES);
        // 300 000 frames need two 1 GiB strides.
        assert_eq!(a.base(TierId(2)), 3 * TIER_ALIGN_FRAMES);
        assert_eq!(a.tier_of(99), Some(TierId(0)));
        assert_eq!(a.tier_of(100), None);
        assert_eq!(a.tier_of(TIER_ALIGN_FRAMES + 5), Some(TierId(1)));
    }

    #[test]
    fn allocates_until_full_then_refuses() {
        let mut a = FrameAllocator::new(&[3], 512);
        let got: Vec<_> = (0..3).map(|_| a.alloc(T0, Colour::ANY).unwrap()).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(a.alloc(T0, Colour::ANY), None);
        a.free(1);
        assert_eq!(a.alloc(T0, Colour::ANY), Some(1));
    }

    #[test]
    fn colours_select_frame_bits() {
        // Colour = frame bits 0–1 (e.g. 4 bank colours); ask for colour 3 four times.
        let mut a = FrameAllocator::new(&[64], 512);
        let c = Colour { mask: 0b11, value: 0b11 };
        let got: Vec<_> = (0..4).map(|_| a.alloc(T0, c).unwrap()).collect();
        assert_eq!(got, vec![3, 7, 11, 15]);
        assert!(got.iter().all(|&f| c.matches(f)));
        assert_eq!(a.free_frames(TierId(0)), 60);
    }

    #[test]
    fn huge_frames_need_a_whole_free_aligned_group() {
        let mut a = FrameAllocator::new(&[2048], 512);
        a.alloc(T0, Colour::ANY); // frame 0 taken: group 0 is no longer whole
        assert_eq!(a.alloc_huge(TierId(0)), Some(512));
        assert_eq!(a.alloc_huge(TierId(0)), Some(1024));
        assert_eq!(a.alloc_huge(TierId(0)), Some(1536));
        assert_eq!(a.alloc_huge(TierId(0)), None);
        a.free_huge(1024);
        assert_eq!(a.alloc_huge(TierId(0)), Some(1024));
        // 512 KiB huge pages: 128-frame groups.
        let mut b = FrameAllocator::new(&[256], 128);
        assert_eq!(b.alloc_huge(TierId(0)), Some(0));
        assert_eq!(b.alloc_huge(TierId(0)), Some(128));
    }

    /// A 1024-frame tier counting colours over address bits 12, 13 and 15 (frame bits
    /// 0, 1 and 3): 8 colours of 128 frames each.
    fn coloured_tier() -> FrameAllocator {
        let mut a = FrameAllocator::new(&[1024], 512);
        a.set_colour_bits(&[12, 13, 15]);
        a
    }

    #[test]
    fn colour_counts_cover_the_configured_bits() {
        let mut a = coloured_tier();
        for v in 0..8 {
            assert_eq!(a.free_coloured(T0, Colour::from_bits(&[12, 13, 15], v).unwrap()), 128);
        }
        // Bit 13 alone: half the frames; bit 14 (not counted) by a scan: half too.
        assert_eq!(a.free_coloured(T0, Colour::from_bits(&[13], 1).unwrap()), 512);
        assert_eq!(a.free_coloured(T0, Colour::from_bits(&[14], 0).unwrap()), 512);
        assert_eq!(a.free_coloured(T0, Colour::ANY), 1024);
        // Colour 0b101 = bits 12 and 15 set, 13 clear: frames with f & 0b1011 == 0b1001,
        // i.e. 9, 13, 25, 29, … (two in every 16), 128 of them.
        let c = Colour::from_bits(&[12, 13, 15], 0b101).unwrap();
        assert_eq!((c.mask, c.value), (0b1011, 0b1001));
        let got: Vec<u64> = std::iter::from_fn(|| a.alloc(T0, c)).collect();
        assert_eq!(got.len(), 128);
        assert_eq!(&got[..4], &[9, 13, 25, 29]);
        assert_eq!(*got.last().unwrap(), 1021);
        assert_eq!(a.free_coloured(T0, c), 0);
        assert_eq!(a.free_frames(T0), 896);
        assert_eq!(a.free_coloured(T0, Colour::from_bits(&[12, 13, 15], 0b100).unwrap()), 128, "other colours untouched");
        // Bit 12 set: colours 0b001, 0b011, 0b101 (gone), 0b111 = 3 × 128.
        assert_eq!(a.free_coloured(T0, Colour::from_bits(&[12], 1).unwrap()), 384);
        // Freeing restores the count, and the frame is found again from the cursor
        // (word 15) by wrapping around.
        a.free(13);
        assert_eq!(a.free_coloured(T0, c), 1);
        assert_eq!(a.alloc(T0, c), Some(13));
        // Every colour allocated until exhausted: 1024 − 128 more frames, then none.
        for v in (0..8).filter(|&v| v != 0b101) {
            let c = Colour::from_bits(&[12, 13, 15], v).unwrap();
            let n = std::iter::from_fn(|| a.alloc(T0, c)).inspect(|&f| assert!(c.matches(f))).count();
            assert_eq!((n, a.free_coloured(T0, c)), (128, 0));
        }
        assert_eq!(a.free_frames(T0), 0);
    }

    #[test]
    fn huge_frames_and_take_all_update_the_counts() {
        let mut a = FrameAllocator::new(&[2048], 512);
        a.set_colour_bits(&[12, 21]);
        // Bit 21 is frame bit 9: frames 512–1023 and 1536–2047 have it set.
        let high = Colour::from_bits(&[21], 1).unwrap();
        assert_eq!(a.free_coloured(T0, high), 1024);
        assert_eq!(a.alloc_huge(T0), Some(0));
        assert_eq!(a.alloc_huge(T0), Some(512));
        assert_eq!((a.free_coloured(T0, high), a.free_coloured(T0, Colour::from_bits(&[21], 0).unwrap())), (512, 512));
        assert_eq!(a.free_coloured(T0, Colour::from_bits(&[12, 21], 0b11).unwrap()), 256);
        a.free_huge(512);
        assert_eq!(a.free_coloured(T0, high), 1024);
        a.take_all(T0);
        assert_eq!((a.free_coloured(T0, high), a.alloc(T0, high)), (0, None));
    }

    #[test]
    fn colours_from_bits_and_their_conjunction() {
        assert_eq!(Colour::from_bits(&[15, 12], 0b01), Ok(Colour { mask: 0b1001, value: 0b1000 }));
        assert!(Colour::from_bits(&[11], 0).unwrap_err().contains("bit 11"));
        assert!(Colour::from_bits(&[12, 12], 0).unwrap_err().contains("twice"));
        assert!(Colour::from_bits(&[12, 13], 4).unwrap_err().contains("does not fit"));
        let bank = Colour::from_bits(&[12, 13], 0b11).unwrap();
        let llc = Colour::from_bits(&[13, 14], 0b01).unwrap();
        assert_eq!(bank.and(llc), Some(Colour { mask: 0b111, value: 0b011 }));
        assert_eq!(bank.and(Colour::from_bits(&[13], 0).unwrap()), None, "bit 13 set and clear");
        assert_eq!(bank.and(Colour::ANY), Some(bank));
    }

    #[test]
    fn next_matching_agrees_with_a_search() {
        for (mask, value) in [(0b1010u64, 0b1000u64), (0b1, 0b1), (0b110, 0), (0b10011, 0b10010), (0, 0)] {
            for s in 0..200u64 {
                let want = (s..).find(|y| y & mask == value).unwrap();
                assert_eq!(next_matching(s, mask, value), Some(want), "s {s} mask {mask:#b} value {value:#b}");
            }
        }
        assert_eq!(next_matching(u64::MAX, 1, 0), None);
    }

    /// The allocator before colour counts: the first free frame of the colour from the
    /// cursor's word, testing frame by frame.
    fn reference_alloc(free: &mut [bool], cursor: &mut u64, colour: Colour) -> Option<u64> {
        let words = free.len() as u64 / 64;
        for step in 0..=words {
            let wi = (*cursor / 64 + step) % words;
            if let Some(f) = (wi * 64..wi * 64 + 64).find(|&f| free[f as usize] && colour.matches(f)) {
                free[f as usize] = false;
                *cursor = f;
                return Some(f);
            }
        }
        None
    }

    proptest::proptest! {
        /// Random allocations (coloured over counted bits, over uncounted bits, or of
        /// any colour) and frees choose the frames the frame-by-frame search chose, and
        /// every count agrees with a brute-force count.
        #[test]
        fn coloured_allocation_matches_a_brute_force_model(ops in proptest::collection::vec((0u8..4, 0u64..16, 0u64..4096), 1..400)) {
            let mut a = FrameAllocator::new(&[4096], 512);
            a.set_colour_bits(&[12, 13, 18, 20]);
            let (mut free, mut cursor) = (vec![true; 4096], 0u64);
            for (kind, v, f) in ops {
                let colour = match kind {
                    0 => Colour::from_bits(&[12, 13, 18, 20], v).unwrap(),
                    1 => Colour::from_bits(&[13, 20], v & 3).unwrap(),
                    2 => Colour::from_bits(&[14, 19], v & 3).unwrap(),
                    _ => Colour::ANY,
                };
                if f % 3 == 0 && !free[f as usize] {
                    a.free(f);
                    free[f as usize] = true;
                } else {
                    proptest::prop_assert_eq!(a.alloc(T0, colour), reference_alloc(&mut free, &mut cursor, colour));
                }
                let brute = free.iter().enumerate().filter(|&(g, &fr)| fr && colour.matches(g as u64)).count() as u64;
                proptest::prop_assert_eq!(a.free_coloured(T0, colour), brute);
            }
            for v in 0..16 {
                let c = Colour::from_bits(&[12, 13, 18, 20], v).unwrap();
                let brute = free.iter().enumerate().filter(|&(g, &fr)| fr && c.matches(g as u64)).count() as u64;
                proptest::prop_assert_eq!(a.free_coloured(T0, c), brute);
            }
        }
    }
}
