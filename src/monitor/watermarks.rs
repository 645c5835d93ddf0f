//! Free-page watermarks of a tier and the reclaim they trigger, as Linux's kswapd
//! keeps a node's free pages (mm/page_alloc.c `__setup_per_zone_wmarks`, mm/vmscan.c
//! `balance_pgdat`): when free frames fall below the *low* watermark, reclaim (with
//! memory tiering: demotion to the next slower tier) starts and runs until they are
//! back above the *high* watermark; *min* is the floor allocations may not take.
//! Linux sets `low = min + d` and `high = min + 2d` with
//! `d = max(min / 4, capacity × watermark_scale_factor / 10000)` and a scale factor of
//! 10 (0.1 %) by default; a policy passes its own levels when it models another rule
//! (TPP's demotion watermark above the allocation one).

/// A tier's watermarks, in free base frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

impl Watermarks {
    /// Linux's levels for a tier of `capacity` frames with `min` frames reserved and
    /// `watermark_scale_factor` (in 1/10000 of the capacity; the kernel's default is
    /// 10).
    pub fn linux(capacity: u64, min: u64, scale_factor: u64) -> Watermarks {
        let distance = (min / 4).max(capacity * scale_factor / 10_000);
        Watermarks { min, low: min + distance, high: min + 2 * distance }
    }

    /// Linux's default min for a tier of `capacity` frames: `min_free_kbytes =
    /// sqrt(16 × capacity in KiB)`, clamped to 128 KiB … 256 MiB (mm/page_alloc.c
    /// `calculate_min_free_kbytes`), in 4 KiB frames.
    pub fn linux_min(capacity: u64) -> u64 {
        let kib = ((16 * capacity * 4) as f64).sqrt() as u64;
        kib.clamp(128, 262_144) / 4
    }
}

/// The kswapd state of one tier: whether reclaim is running.
#[derive(Clone, Copy, Debug)]
pub struct Reclaim {
    pub marks: Watermarks,
    running: bool,
    /// Times reclaim was woken.
    pub wakeups: u64,
}

impl Reclaim {
    pub fn new(marks: Watermarks) -> Reclaim {
        Reclaim { marks, running: false, wakeups: 0 }
    }

    /// With `free` frames free now: how many frames reclaim should free (0 when it is
    /// not running). It starts below the low watermark and stops once free frames are
    /// back at the high one.
    pub fn needed(&mut self, free: u64) -> u64 {
        if !self.running && free < self.marks.low {
            self.running = true;
            self.wakeups += 1;
        }
        if self.running && free >= self.marks.high {
            self.running = false;
        }
        if self.running {
            self.marks.high - free
        } else {
            0
        }
    }

    pub fn running(&self) -> bool {
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_levels() {
        // 1 GiB tier (262 144 frames), min 1024: distance = max(256, 262) = 262.
        assert_eq!(Watermarks::linux(262_144, 1024, 10), Watermarks { min: 1024, low: 1286, high: 1548 });
        // 1 GiB: sqrt(16 × 1 048 576 KiB) = 4096 KiB = 1024 frames; tiny tiers get 128 KiB.
        assert_eq!(Watermarks::linux_min(262_144), 1024);
        assert_eq!(Watermarks::linux_min(16), 32);
    }

    #[test]
    fn reclaim_starts_below_low_and_runs_to_high() {
        let mut r = Reclaim::new(Watermarks { min: 10, low: 20, high: 40 });
        assert_eq!(r.needed(25), 0, "above low: asleep");
        assert_eq!(r.needed(19), 21, "woken below low: free up to high");
        assert_eq!(r.needed(30), 10, "still running between low and high");
        assert_eq!(r.needed(40), 0, "back at high: asleep");
        assert_eq!(r.needed(30), 0, "between the marks, asleep stays asleep");
        assert_eq!(r.wakeups, 1);
    }
}
