//! Where a page goes on first touch.

use super::alloc::FrameAllocator;
use super::TierId;
use serde::{Deserialize, Serialize};

/// Initial placement of newly touched pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The fastest tier with a free frame.
    FastFirst,
    /// The slow tier (tier 1); other tiers only if it is full.
    SlowOnly,
    /// Spread pages over all tiers in proportion to their capacities, keeping every
    /// tier's fill ratio equal (Rainbow's Flat-static, §IV-A).
    Interleave,
    /// `fast` pages to the fast tier, then `slow` pages to the slow tier, repeating;
    /// only the slow tier once the fast one is full (SpAR's no-migration baseline, §4).
    RoundRobin { fast: u32, slow: u32 },
    /// The policy chooses, page by page: first touch asks its
    /// [`Observer::place`](super::Observer::place) (the future-knowledge bounds place
    /// by a list made before the run). The hook is consulted only on first touch,
    /// never on the reference path.
    Chosen,
}

/// The state a placement mode needs between decisions.
#[derive(Clone, Debug)]
pub struct Placer {
    mode: Placement,
    /// Pages placed so far per tier (for `Interleave` and `RoundRobin`).
    placed: Vec<u64>,
    turn: u64,
}

impl Placer {
    pub fn new(mode: Placement, tiers: usize) -> Placer {
        Placer { mode, placed: vec![0; tiers], turn: 0 }
    }

    pub fn mode(&self) -> Placement {
        self.mode
    }

    /// The preferred tier for the next page, given the tiers' capacities and free frames.
    pub fn choose(&mut self, frames: &FrameAllocator) -> TierId {
        let tiers = frames.tier_count();
        let slow_tier = if tiers > 1 { TierId::SLOW } else { TierId::FAST };
        let capacity = |t: usize| frames.frames(TierId(t as u8));
        let t = match self.mode {
            // (`Chosen` comes here only when the policy has no preference.)
            Placement::FastFirst | Placement::Chosen => 0,
            Placement::SlowOnly => slow_tier.index(),
            Placement::Interleave => (0..tiers)
                .filter(|&t| capacity(t) > 0)
                .min_by(|&a, &b| {
                    // Compare placed_a / cap_a with placed_b / cap_b without division.
                    let lhs = self.placed[a] as u128 * capacity(b) as u128;
                    let rhs = self.placed[b] as u128 * capacity(a) as u128;
                    lhs.cmp(&rhs).then(a.cmp(&b))
                })
                .unwrap_or(0),
            Placement::RoundRobin { fast, slow } => {
                let period = (fast + slow).max(1) as u64;
                let t = if self.turn % period < fast as u64 && frames.free_frames(TierId::FAST) > 0 { 0 } else { slow_tier.index() };
                self.turn += 1;
                t
            }
        };
        TierId(t as u8)
    }

    /// Records that a page went to `tier` (after fallbacks).
    pub fn placed(&mut self, tier: TierId, frames: u64) {
        self.placed[tier.index()] += frames;
    }

    /// Frames first touch has placed in `tier` so far.
    pub fn placed_in(&self, tier: TierId) -> u64 {
        self.placed.get(tier.index()).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_follows_capacity_ratio() {
        // Fast 1 : slow 3 → of 8 pages, 2 fast and 6 slow, in the order that keeps fill equal.
        let mut p = Placer::new(Placement::Interleave, 2);
        let frames = FrameAllocator::new(&[100, 300], 512);
        let mut seq = Vec::new();
        for _ in 0..8 {
            let t = p.choose(&frames);
            p.placed(t, 1);
            seq.push(t.index());
        }
        assert_eq!(seq, vec![0, 1, 1, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn round_robin_four_and_four_then_slow_when_fast_full() {
        let mut p = Placer::new(Placement::RoundRobin { fast: 4, slow: 4 }, 2);
        let mut frames = FrameAllocator::new(&[8, 8], 512);
        let seq: Vec<_> = (0..10).map(|_| p.choose(&frames).index()).collect();
        assert_eq!(seq, vec![0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
        while frames.alloc(TierId::FAST, super::super::alloc::Colour::ANY).is_some() {}
        assert_eq!(p.choose(&frames), TierId::SLOW, "fast tier full");
    }
}
