//! The kernel's rules on plain numbers, as mm/ and kernel/sched/ write them: the hot
//! threshold's adjustment and the promotion rate limit of tiering mode, when the
//! inactive list is low, and the fast node's watermarks of each policy.

use crate::monitor::Watermarks;
use serde::Serialize;

/// `NUMA_MIGRATION_ADJUST_STEPS`: the threshold moves by 2/16 of the default.
const ADJUST_STEPS: u64 = 16;

/// The hot threshold of `numa_promotion_adjust_threshold`, with its window of
/// promotion candidates. Times are in any one unit (the policy uses cycles; the
/// kernel, ms), `second` being one second in it.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct HotThreshold {
    /// The adjusted threshold (0: the default is in force).
    pub(super) threshold: u64,
    /// Start of the current adjustment window.
    start: u64,
    /// Candidates counted before the window began.
    candidates_at_start: u64,
    pub(super) adjustments: u64,
}

impl HotThreshold {
    /// The threshold in force, given the default.
    pub(super) fn current(&self, default: u64) -> u64 {
        if self.threshold == 0 {
            default
        } else {
            self.threshold
        }
    }

    /// `numa_promotion_adjust_threshold` at `now`, once per `period`: with
    /// `candidates` counted so far and a rate limit of `limit_pages` per `second`,
    /// the window expects `limit_pages × period / second` candidates; more than 11/10
    /// of that lowers the threshold by one step (2/16 of the default, not below one
    /// step), fewer than 9/10 raises it (not above twice the default).
    pub(super) fn adjust(&mut self, now: u64, period: u64, second: u64, candidates: u64, limit_pages: u64, default: u64) {
        if now.saturating_sub(self.start) <= period {
            return;
        }
        self.start = now;
        let expected = (limit_pages as u128 * period as u128 / second.max(1) as u128) as u64;
        let seen = candidates - self.candidates_at_start;
        let unit = (default * 2 / ADJUST_STEPS).max(1);
        let mut th = self.current(default);
        if seen > expected.saturating_mul(11) / 10 {
            th = th.saturating_sub(unit).max(unit);
        } else if seen < expected.saturating_mul(9) / 10 {
            th = (th + unit).min(default * 2);
        }
        self.candidates_at_start = candidates;
        self.threshold = th;
        self.adjustments += 1;
    }
}

/// `numa_promotion_rate_limit`: promotion candidates counted in windows of one
/// second; once a window has seen `limit` pages, the rest of it promotes none.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct CandidateLimit {
    /// Candidates counted over the run (`PGPROMOTE_CANDIDATE`).
    pub(super) candidates: u64,
    start: u64,
    at_start: u64,
}

impl CandidateLimit {
    /// Counts `pages` candidates at `now`; true if the window's limit is reached (the
    /// page is not promoted). A window lasts `second`.
    pub(super) fn limited(&mut self, now: u64, second: u64, pages: u64, limit: u64) -> bool {
        self.candidates += pages;
        if now.saturating_sub(self.start) > second {
            self.start = now;
            self.at_start = self.candidates;
        }
        self.candidates - self.at_start >= limit
    }
}

/// `inactive_is_low` for anonymous pages: the inactive list is low when
/// `inactive × ratio < active`, the ratio being √(10 × the lists' size in GiB)
/// (1 under 1 GiB).
pub(super) fn inactive_is_low(inactive: u64, active: u64) -> bool {
    let gib = (inactive + active) >> 18;
    let ratio = if gib == 0 { 1 } else { ((10 * gib) as f64).sqrt() as u64 };
    inactive * ratio < active
}

/// The fast node's watermarks as the two policies use them, in free frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(super) struct FastMarks {
    /// A promotion needs `high` frames free after it (`migrate_balanced_pgdat`).
    pub(super) high: u64,
    /// kswapd reclaims until this many frames are free; TPP also wakes it below.
    pub(super) target: u64,
    /// `pgdat_free_space_enough`: above this, every hot-looking page is promoted
    /// (tiering mode only; `u64::MAX` for TPP).
    pub(super) plenty: u64,
}

impl FastMarks {
    /// Tiering mode's: kswapd balances the node to `WMARK_PROMO` = high + the
    /// watermark distance (mm/page_alloc.c `__setup_per_zone_wmarks`).
    pub(super) fn tiering(capacity: u64, scale_factor: u64) -> FastMarks {
        let w = Watermarks::linux(capacity, Watermarks::linux_min(capacity), scale_factor);
        let promo = w.high + (w.high - w.low);
        FastMarks { high: w.high, target: promo, plenty: promo + (1u64 << 18).max(capacity >> 4) }
    }

    /// TPP's: `WMARK_DEMOTE` = `demote_scale_factor` / 10000 of the node, at least
    /// twice the high watermark and at most the node.
    pub(super) fn tpp(capacity: u64, scale_factor: u64, demote_scale_factor: u64) -> FastMarks {
        let w = Watermarks::linux(capacity, Watermarks::linux_min(capacity), scale_factor);
        let demote = (capacity * demote_scale_factor / 10_000).max(2 * w.high).min(capacity);
        FastMarks { high: w.high, target: demote, plenty: u64::MAX }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hot_threshold_follows_the_candidates_against_the_rate_limit() {
        // In ms: default 1000 ms, steps of 2000 / 16 = 125 ms; a 60 s period at 100
        // pages/s expects 6000 candidates per window.
        let mut th = HotThreshold::default();
        th.adjust(60_000, 60_000, 1000, 9_000, 100, 1000);
        assert_eq!(th.adjustments, 0, "not before a whole period has passed");
        // 9000 > 6600: one step down.
        th.adjust(60_001, 60_000, 1000, 9_000, 100, 1000);
        assert_eq!(th.current(1000), 875);
        // 9000 more in the next window: down again; and it never goes below a step.
        th.adjust(120_002, 60_000, 1000, 18_000, 100, 1000);
        assert_eq!(th.current(1000), 750);
        for i in 0..10 {
            th.adjust(180_003 + i * 60_001, 60_000, 1000, 18_000 + (i + 1) * 9_000, 100, 1000);
        }
        assert_eq!(th.current(1000), 125);
        // Within 9/10…11/10 of the expectation (6000 ≤ 6600): unchanged.
        let mut th = HotThreshold { threshold: 500, ..HotThreshold::default() };
        th.adjust(60_001, 60_000, 1000, 6_000, 100, 1000);
        assert_eq!(th.current(1000), 500);
        // Too few (5000 < 5400): up by a step, at most twice the default.
        th.adjust(120_002, 60_000, 1000, 11_000, 100, 1000);
        assert_eq!(th.current(1000), 625);
        let mut th = HotThreshold { threshold: 1950, ..HotThreshold::default() };
        th.adjust(60_001, 60_000, 1000, 0, 100, 1000);
        assert_eq!(th.current(1000), 2000);
    }

    #[test]
    fn the_rate_limit_counts_candidates_in_one_second_windows() {
        let mut l = CandidateLimit::default();
        // In ms: 3 pages per window: the third candidate reaches it.
        assert!(!l.limited(10, 1000, 1, 3));
        assert!(!l.limited(20, 1000, 1, 3));
        assert!(l.limited(30, 1000, 1, 3));
        assert!(l.limited(900, 1000, 1, 3));
        // More than a second after the window began: a new one, counting this page.
        assert!(!l.limited(1_011, 1000, 1, 3));
        assert_eq!(l.candidates, 5);
    }

    #[test]
    fn watermarks_of_the_two_kernels() {
        // 1 GiB fast node: min 1024, distance 262, high 1548; WMARK_PROMO = 1810;
        // plenty = 1810 + max(262 144, 16 384).
        let t = FastMarks::tiering(262_144, 10);
        assert_eq!(t, FastMarks { high: 1548, target: 1810, plenty: 1810 + 262_144 });
        // TPP: 2 % of 262 144 = 5242 (above 2 × high = 3096).
        assert_eq!(FastMarks::tpp(262_144, 10, 200), FastMarks { high: 1548, target: 5242, plenty: u64::MAX });
        // A tiny node: at least twice the high watermark, at most the node.
        let small = FastMarks::tpp(4096, 10, 200);
        assert_eq!(small.target, 2 * small.high);
        assert_eq!(FastMarks::tpp(100, 10, 10_000).target, 100);
    }

    #[test]
    fn the_inactive_list_is_low_against_a_ratio_growing_with_the_lists() {
        // Under 1 GiB the ratio is 1.
        assert!(inactive_is_low(10, 11));
        assert!(!inactive_is_low(10, 10));
        // 4 GiB (1 Mi pages): ratio ⌊√40⌋ = 6.
        assert!(inactive_is_low(149_796, 898_780));
        assert!(!inactive_is_low(149_796 + 1, 898_780 - 1));
    }
}
