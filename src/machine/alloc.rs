//! Physical frame allocation per tier, for base (4 KiB) and huge frames, optionally
//! restricted to a colour.
//!
//! Physical memory is one frame-number space: tier *t* owns the frames
//! `[base_t, base_t + frames_t)`, with every base aligned to 1 GiB so that low
//! address bits (channel, bank, cache-set colour) mean the same in every tier. Each
//! tier keeps a bitmap of free frames (one bit per frame), so the allocator costs an
//! eighth of a byte per frame and no tier can be over-committed.

/// A colour: the frames whose tier-local number has `(frame & mask) == value`. The
/// mask is over frame-number bits, i.e. tier-local physical-address bits shifted right
/// by 12 (the same as global bits below the 1 GiB tier alignment).
use super::TierId;

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
}

impl TierFrames {
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
                TierFrames { base, frames, free: frames, bits, cursor: 0, huge_cursor: 0 }
            })
            .collect();
        FrameAllocator { tiers, huge_frames }
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
    }

    /// Allocates one base frame of `colour` in tier `t`.
    pub fn alloc(&mut self, t: TierId, colour: Colour) -> Option<u64> {
        let tier = &mut self.tiers[t.index()];
        if tier.free == 0 {
            return None;
        }
        let words = tier.bits.len() as u64;
        let start_word = tier.cursor / 64;
        for step in 0..=words {
            let wi = (start_word + step) % words;
            let mut w = tier.bits[wi as usize];
            while w != 0 {
                let local = wi * 64 + w.trailing_zeros() as u64;
                w &= w - 1;
                if colour.matches(local) {
                    tier.set(local, false);
                    tier.free -= 1;
                    tier.cursor = local;
                    return Some(tier.base + local);
                }
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
                return Some(tier.base + g * n);
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
}
