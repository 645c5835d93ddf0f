//! Per-frame write counts of a tier with limited endurance, in 2 bytes per frame.
//!
//! Each frame keeps the low 16 bits of its count in a dense array; the few frames
//! written more than 65 535 times keep the bits above in a sorted map, touched once
//! every 65 536 writes to such a frame. Counts are exact up to `u32::MAX`, where they
//! stay.
//!
//! The array is large and written at random, so an increment first prefetches its
//! counter and is applied [`RING`] writes later, when the line has arrived; the
//! queries count the increments still queued.

use super::tier::prefetch;
use std::collections::BTreeMap;

/// Increments queued before they are applied.
const RING: usize = 16;

#[derive(Clone, Debug)]
pub struct WearCounters {
    /// Low 16 bits of each frame's count.
    low: Vec<u16>,
    /// The bits above, for the frames that have them.
    high: BTreeMap<u32, u16>,
    /// Increments not yet applied (frame + 1; 0 = empty slot).
    pending: [u32; RING],
    pos: usize,
}

impl WearCounters {
    /// Counters for `frames` frames, all 0 (none when `frames` is 0).
    pub fn new(frames: usize) -> WearCounters {
        WearCounters { low: vec![0; frames], high: BTreeMap::new(), pending: [0; RING], pos: 0 }
    }

    /// Counts one write to `frame` (ignored beyond the counters).
    #[inline]
    pub fn record(&mut self, frame: u64) {
        if let Some(w) = self.low.get(frame as usize) {
            prefetch(w);
            let old = std::mem::replace(&mut self.pending[self.pos], frame as u32 + 1);
            self.pos = (self.pos + 1) % RING;
            if old != 0 {
                self.apply(old - 1);
            }
        }
    }

    #[inline]
    fn apply(&mut self, frame: u32) {
        let low = &mut self.low[frame as usize];
        if *low < u16::MAX {
            *low += 1;
        } else {
            self.carry(frame);
        }
    }

    /// Carries a full low half of `frame`'s count into its high bits.
    #[cold]
    fn carry(&mut self, frame: u32) {
        let low = &mut self.low[frame as usize];
        let high = self.high.entry(frame).or_insert(0);
        if *high < u16::MAX {
            *high += 1;
            *low = 0;
        }
    }

    /// Applied writes to `frame`.
    fn settled(&self, frame: u32) -> u32 {
        let high = self.high.get(&frame).copied().unwrap_or(0);
        (high as u32) << 16 | self.low[frame as usize] as u32
    }

    /// Writes to `frame` so far, queued ones included (0 beyond the counters).
    pub fn writes(&self, frame: u64) -> u32 {
        if frame as usize >= self.low.len() {
            return 0;
        }
        let queued = self.pending.iter().filter(|&&p| p as u64 == frame + 1).count() as u32;
        self.settled(frame as u32).saturating_add(queued)
    }

    /// The largest count of any frame; `None` without counters.
    pub fn most(&self) -> Option<u32> {
        // A frame with high bits outcounts every frame without; among those without,
        // the largest low half is the largest count.
        let settled = match self.high.keys().map(|&f| self.settled(f)).max() {
            Some(m) => m,
            None => *self.low.iter().max()? as u32,
        };
        let queued = self.pending.iter().filter(|&&p| p != 0).map(|&p| self.writes(p as u64 - 1)).max();
        Some(settled.max(queued.unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_exact_across_the_16_bit_boundary() {
        let mut w = WearCounters::new(4);
        // 70 000 writes to frame 2 = 1 × 65 536 + 4 464; 3 to frame 0.
        for _ in 0..70_000 {
            w.record(2);
        }
        for _ in 0..3 {
            w.record(0);
        }
        w.record(9); // beyond the counters: ignored
        assert_eq!(w.writes(2), 70_000);
        assert_eq!(w.writes(0), 3);
        assert_eq!(w.writes(1), 0);
        assert_eq!(w.writes(9), 0);
        assert_eq!(w.most(), Some(70_000));
        // Once every queued increment is applied the halves hold 1 and 4 464.
        for _ in 0..RING {
            w.record(1);
        }
        assert_eq!((w.high[&2], w.low[2]), (1, 4_464));
        assert_eq!(w.writes(1), RING as u32);
    }

    #[test]
    fn most_without_high_bits_is_the_largest_low_half() {
        let mut w = WearCounters::new(3);
        for f in [0, 1, 1, 2, 1] {
            w.record(f);
        }
        assert_eq!(w.most(), Some(3));
        assert_eq!(WearCounters::new(0).most(), None);
    }

    #[test]
    fn counts_stay_at_u32_max() {
        let mut w = WearCounters::new(1);
        w.low[0] = u16::MAX - 1;
        w.high.insert(0, u16::MAX);
        for _ in 0..RING + 5 {
            w.record(0);
        }
        assert_eq!(w.writes(0), u32::MAX);
        assert_eq!(w.most(), Some(u32::MAX));
    }
}
