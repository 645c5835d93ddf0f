//! DAMON-based operation schemes (DAMOS, Linux mm/damon/core.c and ops-common.c):
//! what a scheme's action is applied to, how much of it, and when.
//!
//! - An [`AccessPattern`] selects regions by size, access count and age
//!   (`__damos_valid_target`).
//! - A [`Quota`] bounds the bytes a scheme may act on per charge window: a size
//!   quota and a time quota that becomes a size through the throughput measured so
//!   far (`damos_set_effective_quota`). When it binds, the regions to act on are the
//!   best-scored ones: a histogram of scores weighted by region size gives the lowest
//!   score that still fits (`damos_adjust_quota`); scores are `damon_hot_score` /
//!   `damon_cold_score` with the quota's weights.
//! - [`Wmarks`] (watermarks) turn a scheme on and off on a metric of the system, here the free
//!   memory rate in per mille (`damos_wmark_wait_us`).
//! - [`Scheme::apply`] walks the regions once per aggregation as
//!   `kdamond_apply_schemes` does: quota checks, the resumption after the region where
//!   the last window's quota ran out (`damos_skip_charged_region`), the pattern and
//!   score checks, the split of a region that exceeds what is left of the quota, and
//!   the charge (`damos_apply_scheme`), handing each region to act on to the caller.
//!
//! A scheme here has no filters of the core (address, target) and no quota goals: the
//! tiering setup this serves uses neither. Times are cycles of the caller's clock.

use super::regions::{Region, Regions, MIN_REGION};
use serde::Serialize;

/// `DAMOS_MAX_SCORE` (include/linux/damon.h).
pub const MAX_SCORE: u32 = 99;
/// `DAMON_MAX_SUBSCORE` and `DAMON_MAX_AGE_IN_LOG` (mm/damon/ops-common.c).
const MAX_SUBSCORE: i64 = 100;
const MAX_AGE_IN_LOG: i64 = 32;

/// Which end of the temperature scale a scheme prefers when its quota binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prefer {
    /// `damon_hot_score` (`DAMOS_MIGRATE_HOT`, `DAMOS_LRU_PRIO`).
    Hot,
    /// `damon_cold_score` (`DAMOS_MIGRATE_COLD`, `DAMOS_PAGEOUT`).
    Cold,
}

/// The quota's prioritisation weights (`weight_sz`, `weight_nr_accesses`,
/// `weight_age`; `damon_hot_score` uses the last two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Weights {
    pub sz: u32,
    pub nr_accesses: u32,
    pub age: u32,
}

/// `damon_hot_score` (mm/damon/ops-common.c): a frequency subscore (the access count
/// as a share of the samples per aggregation, 0–100) and an age subscore (log2 of the
/// age in seconds, counting against hotness when the region was not accessed, scaled
/// to 0–100), weighted, then scaled to 0–[`MAX_SCORE`].
pub fn hot_score(nr_accesses: u32, age: u32, max_nr_accesses: u32, aggr_us: u64, w: Weights) -> u32 {
    let freq = nr_accesses as i64 * MAX_SUBSCORE / max_nr_accesses.max(1) as i64;
    let mut age_in_sec = age as u64 * aggr_us / 1_000_000;
    let mut age_in_log = 0i64;
    while age_in_log < MAX_AGE_IN_LOG && age_in_sec > 0 {
        age_in_log += 1;
        age_in_sec >>= 1;
    }
    if freq == 0 {
        age_in_log = -age_in_log;
    }
    let age_sub = (age_in_log + MAX_AGE_IN_LOG) * MAX_SUBSCORE / MAX_AGE_IN_LOG / 2;
    let (fw, aw) = (w.nr_accesses as i64, w.age as i64);
    let mut hotness = fw * freq + aw * age_sub;
    if fw + aw > 0 {
        hotness /= fw + aw;
    }
    (hotness * MAX_SCORE as i64 / MAX_SUBSCORE) as u32
}

/// `damon_cold_score`: [`MAX_SCORE`] less the hot score.
pub fn cold_score(nr_accesses: u32, age: u32, max_nr_accesses: u32, aggr_us: u64, w: Weights) -> u32 {
    MAX_SCORE - hot_score(nr_accesses, age, max_nr_accesses, aggr_us, w)
}

/// A scheme's target access pattern (`struct damos_access_pattern`): sizes in bytes,
/// access counts per aggregation interval, ages in aggregation intervals, all bounds
/// inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AccessPattern {
    pub min_sz: u64,
    pub max_sz: u64,
    pub min_nr_accesses: u32,
    pub max_nr_accesses: u32,
    pub min_age: u32,
    pub max_age: u32,
}

impl AccessPattern {
    /// `__damos_valid_target`.
    pub fn matches(&self, r: &Region) -> bool {
        (self.min_sz..=self.max_sz).contains(&r.size()) && (self.min_nr_accesses..=self.max_nr_accesses).contains(&r.nr_accesses) && (self.min_age..=self.max_age).contains(&r.age)
    }
}

/// A scheme's quota (`struct damos_quota`) and its charge state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Quota {
    /// Time quota per window in ms (0: none).
    pub ms: u64,
    /// Size quota per window in bytes (0: none).
    pub sz: u64,
    /// The charge window, in cycles.
    pub reset_interval: u64,
    pub weights: Weights,
    /// The effective size quota of the current window (0 before the first window).
    pub esz: u64,
    /// Bytes charged in the current window, and in the windows before it.
    pub charged_sz: u64,
    pub total_charged_sz: u64,
    /// Nanoseconds the scheme's applications took, all windows.
    pub total_charged_ns: u64,
    /// The cycle the current window started (`None` before the first).
    pub charged_from: Option<u64>,
    /// The lowest score regions must have in this window.
    pub min_score: u32,
    /// The quota ran out in the last window: the walk resumes after this address.
    #[serde(skip)]
    charge_addr_from: Option<u64>,
}

impl Quota {
    /// A quota of `ms` and `sz` per `reset_interval` cycles.
    pub fn new(ms: u64, sz: u64, reset_interval: u64, weights: Weights) -> Quota {
        Quota { ms, sz, reset_interval, weights, ..Quota::default() }
    }

    /// Whether the quota limits anything.
    pub fn is_set(&self) -> bool {
        self.ms > 0 || self.sz > 0
    }

    /// `damos_set_effective_quota` without goals: the size quota, or the time quota
    /// times the throughput of the applications so far (4 MiB per ms before any was
    /// measured), whichever is smaller.
    pub fn set_effective(&mut self) {
        if self.ms == 0 {
            self.esz = self.sz;
            return;
        }
        let throughput = (self.total_charged_sz as u128 * 1_000_000).checked_div(self.total_charged_ns as u128).unwrap_or(4096 * 1024);
        let mut esz = (throughput * self.ms as u128).min(u64::MAX as u128) as u64;
        if self.sz > 0 && self.sz < esz {
            esz = self.sz;
        }
        self.esz = esz;
    }

    /// The charge-window part of `damos_adjust_quota` at cycle `now`: a window that has
    /// run its course ends (counted in `exceeded` if the quota was used up) and a new
    /// one starts with a fresh effective quota.
    pub fn new_window_if_due(&mut self, now: u64, exceeded: &mut u64) {
        if self.charged_from.is_some_and(|from| now < from + self.reset_interval) {
            return;
        }
        if self.esz > 0 && self.charged_sz >= self.esz {
            *exceeded += 1;
        }
        self.total_charged_sz += self.charged_sz;
        self.charged_from = Some(now);
        self.charged_sz = 0;
        self.set_effective();
    }

    /// The prioritisation part of `damos_adjust_quota`: from the (score, bytes) of every
    /// region the pattern selects, the lowest score such that the regions scored from
    /// the highest down to it fill the effective quota (0 if they never do).
    pub fn set_min_score(&mut self, scored: impl IntoIterator<Item = (u32, u64)>) {
        let mut histogram = [0u64; MAX_SCORE as usize + 1];
        let mut max_score = 0;
        for (score, bytes) in scored {
            histogram[score as usize] += bytes;
            max_score = max_score.max(score);
        }
        let (mut cumulated, mut score) = (0u64, max_score);
        loop {
            cumulated += histogram[score as usize];
            if cumulated >= self.esz || score == 0 {
                break;
            }
            score -= 1;
        }
        self.min_score = score;
    }

    fn used_up(&self) -> bool {
        self.esz > 0 && self.charged_sz >= self.esz
    }
}

/// The watermark metric (`enum damos_wmark_metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// No metric: the scheme is always active.
    None,
    /// Free memory of the whole system in per mille of its memory
    /// (`DAMOS_WMARK_FREE_MEM_RATE`).
    FreeMemRate,
}

/// A scheme's watermarks (`struct damos_watermarks`, `s->wmarks`) and activation state.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Wmarks {
    pub metric: Metric,
    /// Microseconds between checks while the scheme is inactive.
    pub interval_us: u64,
    pub high: u64,
    pub mid: u64,
    pub low: u64,
    pub activated: bool,
    pub activations: u64,
    pub deactivations: u64,
}

impl Wmarks {
    pub fn new(metric: Metric, interval_us: u64, high: u64, mid: u64, low: u64) -> Wmarks {
        Wmarks { metric, interval_us, high, mid, low, activated: true, activations: 0, deactivations: 0 }
    }

    /// `damos_wmark_wait_us` with the metric's value (`None` for [`Metric::None`]):
    /// 0 if the scheme is active, else the microseconds to wait before the next check.
    /// Above the high or below the low watermark it goes off; it comes back on only
    /// between the mid and the low watermark, so it stays off from high to mid.
    pub fn wait_us(&mut self, value: Option<u64>) -> u64 {
        let Some(v) = value else { return 0 };
        if v > self.high || v < self.low {
            self.deactivations += self.activated as u64;
            self.activated = false;
            return self.interval_us;
        }
        if v >= self.mid && !self.activated {
            return self.interval_us;
        }
        self.activations += !self.activated as u64;
        self.activated = true;
        0
    }
}

/// A scheme's statistics (`struct damos_stat`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Stat {
    pub nr_tried: u64,
    pub sz_tried: u64,
    pub nr_applied: u64,
    pub sz_applied: u64,
    /// Bytes of pages the operations' filters let through.
    pub sz_ops_filter_passed: u64,
    /// Charge windows whose quota was used up.
    pub qt_exceeds: u64,
}

/// One scheme: its pattern, quota, watermarks and statistics.
#[derive(Clone, Debug, Serialize)]
pub struct Scheme {
    pub pattern: AccessPattern,
    pub prefer: Prefer,
    pub quota: Quota,
    pub wmarks: Wmarks,
    pub stat: Stat,
}

/// What the monitor knows when scoring: samples per aggregation and the aggregation
/// interval in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct ScoreScale {
    pub max_nr_accesses: u32,
    pub aggr_us: u64,
}

impl Scheme {
    /// The region's score for this scheme (`damon_pa_scheme_score`).
    pub fn score(&self, r: &Region, s: ScoreScale) -> u32 {
        let f = if self.prefer == Prefer::Hot { hot_score } else { cold_score };
        f(r.nr_accesses, r.age, s.max_nr_accesses, s.aggr_us, self.quota.weights)
    }

    /// `damos_valid_target`: the pattern matches and, under a quota, the score is at
    /// least the window's minimum.
    pub fn valid_target(&self, r: &Region, s: ScoreScale) -> bool {
        self.pattern.matches(r) && (self.quota.esz == 0 || self.score(r, s) >= self.quota.min_score)
    }

    /// `damos_adjust_quota` at cycle `now`: a new charge window if one is due, then the
    /// minimum score from the histogram of the regions the pattern selects.
    pub fn adjust_quota(&mut self, regions: &Regions, now: u64, s: ScoreScale) {
        if !self.quota.is_set() {
            return;
        }
        self.quota.new_window_if_due(now, &mut self.stat.qt_exceeds);
        let scored: Vec<(u32, u64)> = regions.as_slice().iter().filter(|r| self.pattern.matches(r)).map(|r| (self.score(r, s), r.size())).collect();
        self.quota.set_min_score(scored);
    }

    /// `damos_skip_charged_region` for region `i`: after a window whose quota ran out
    /// in the middle of the regions, the walk resumes after the address it stopped at
    /// (one byte past the end of the last region charged, as in the kernel), splitting
    /// the region that straddles it. Returns the region to go on with, or `None` to
    /// skip region `i`.
    fn skip_charged(&mut self, regions: &mut Regions, i: usize) -> Option<usize> {
        let Some(from) = self.quota.charge_addr_from else { return Some(i) };
        if i + 1 == regions.len() {
            self.quota.charge_addr_from = None;
            return None;
        }
        let r = regions.as_slice()[i];
        if r.end <= from {
            return None;
        }
        let mut at = i;
        if r.start < from {
            let mut skip = (from - r.start) / MIN_REGION * MIN_REGION;
            if skip == 0 {
                if r.size() <= MIN_REGION {
                    return None;
                }
                skip = MIN_REGION;
            }
            regions.split_at(i, skip);
            at = i + 1;
        }
        self.quota.charge_addr_from = None;
        Some(at)
    }

    /// `damos_apply_scheme` on region `i`: under a quota, a region larger than what is
    /// left of it is split to fit (nothing is done if not even one page is left);
    /// `act` acts on the region and returns the bytes its filters let through; the
    /// region's bytes are charged and its age restarts.
    fn apply_one(&mut self, regions: &mut Regions, i: usize, act: &mut impl FnMut(&Region) -> u64) {
        let mut sz = regions.as_slice()[i].size();
        if self.quota.esz > 0 && self.quota.charged_sz + sz > self.quota.esz {
            sz = (self.quota.esz - self.quota.charged_sz) / MIN_REGION * MIN_REGION;
            if sz == 0 {
                self.stat.nr_tried += 1;
                return;
            }
            regions.split_at(i, sz);
        }
        let passed = act(&regions.as_slice()[i]);
        self.quota.charged_sz += sz;
        if self.quota.used_up() {
            self.quota.charge_addr_from = Some(regions.as_slice()[i].end + 1);
        }
        regions.get_mut(i).age = 0;
        self.stat.nr_tried += 1;
        self.stat.sz_tried += sz;
        self.stat.sz_ops_filter_passed += passed;
    }

    /// One aggregation's pass of the scheme over `regions` (`kdamond_apply_schemes`
    /// for an active scheme and one target): adjusts the quota at `now`, then offers
    /// each region to act on to `act`, in address order. Regions that splits add
    /// behind the one being visited are not visited in this pass, as in the kernel.
    pub fn apply(&mut self, regions: &mut Regions, now: u64, s: ScoreScale, mut act: impl FnMut(&Region) -> u64) {
        self.adjust_quota(regions, now, s);
        let mut i = 0;
        while i < regions.len() {
            let before = regions.len();
            if !self.quota.used_up() {
                if let Some(at) = self.skip_charged(regions, i) {
                    if self.valid_target(&regions.as_slice()[at], s) {
                        self.apply_one(regions, at, &mut act);
                    }
                }
            }
            i += 1 + (regions.len() - before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = MIN_REGION;
    /// Weights of nr_accesses and age 1 each (the size weight is not used).
    const EVEN: Weights = Weights { sz: 0, nr_accesses: 1, age: 1 };

    fn region(start_pages: u64, end_pages: u64, nr: u32, age: u32) -> Region {
        Region { start: start_pages * P, end: end_pages * P, nr_accesses: nr, last_nr_accesses: nr, age, sampling_addr: 0 }
    }

    fn any_pattern() -> AccessPattern {
        AccessPattern { min_sz: 0, max_sz: u64::MAX, min_nr_accesses: 0, max_nr_accesses: u32::MAX, min_age: 0, max_age: u32::MAX }
    }

    fn scheme(prefer: Prefer, quota: Quota) -> Scheme {
        Scheme { pattern: any_pattern(), prefer, quota, wmarks: Wmarks::new(Metric::None, 0, 0, 0, 0), stat: Stat::default() }
    }

    #[test]
    fn hot_and_cold_scores_follow_the_kernel_formula() {
        // 20 samples per aggregation, aggregation 100 ms.
        // 10 of 20 accesses: freq 50. Age 40 intervals = 4 s: log2 steps 4→2→1→0: 3;
        // age subscore (3 + 32)·100/32/2 = 3500/64 = 54. Even weights: (50 + 54)/2 = 52,
        // scaled 52·99/100 = 51.
        assert_eq!(hot_score(10, 40, 20, 100_000, EVEN), 51);
        assert_eq!(cold_score(10, 40, 20, 100_000, EVEN), 48);
        // Never accessed, same age: the age counts against hotness: (−3 + 32)·100/64 =
        // 45; (0 + 45)/2 = 22; 22·99/100 = 21. Coldness 78.
        assert_eq!(hot_score(0, 40, 20, 100_000, EVEN), 21);
        assert_eq!(cold_score(0, 40, 20, 100_000, EVEN), 78);
        // Age weight only (HMSDK's weights): an idle region of age 0 scores 50·99/100.
        let age_only = Weights { sz: 0, nr_accesses: 0, age: 1 };
        assert_eq!(hot_score(0, 0, 20, 100_000, age_only), 49);
        // Every sample accessed, frequency weight only: the maximum.
        assert_eq!(hot_score(20, 0, 20, 100_000, Weights { sz: 0, nr_accesses: 1, age: 0 }), MAX_SCORE);
    }

    #[test]
    fn the_pattern_bounds_are_inclusive() {
        let p = AccessPattern { min_sz: 2 * P, max_sz: 4 * P, min_nr_accesses: 1, max_nr_accesses: 3, min_age: 5, max_age: 6 };
        assert!(p.matches(&region(0, 2, 1, 5)));
        assert!(p.matches(&region(0, 4, 3, 6)));
        assert!(!p.matches(&region(0, 1, 2, 5)), "too small");
        assert!(!p.matches(&region(0, 2, 0, 5)), "too few accesses");
        assert!(!p.matches(&region(0, 2, 2, 7)), "too old");
    }

    #[test]
    fn a_binding_quota_picks_the_highest_scored_regions() {
        // Quota of 8 pages per window, hot scheme, frequency weight only, 20 samples.
        // Regions of 4 pages, age 3, with 2 (A), 18 (B), 10 (C) and 19 (D) accesses:
        // frequency subscores 10, 90, 50, 95, scores ×99/100: 9, 89, 49, 94. From the
        // top of the histogram: D (4 pages) < 8, then B → 8 ≥ 8 pages: the minimum
        // score is B's, 89.
        let w = Weights { sz: 0, nr_accesses: 1, age: 0 };
        let mut s = scheme(Prefer::Hot, Quota::new(0, 8 * P, 1000, w));
        let mut regions = Regions::from_list(vec![region(0, 4, 2, 3), region(4, 8, 18, 3), region(8, 12, 10, 3), region(12, 16, 19, 3)]);
        let scale = ScoreScale { max_nr_accesses: 20, aggr_us: 100_000 };
        let mut acted = Vec::new();
        s.apply(&mut regions, 0, scale, |r| {
            acted.push(r.start / P);
            r.size()
        });
        assert_eq!(s.quota.min_score, 89);
        assert_eq!(acted, vec![4, 12], "B and D, in address order");
        assert_eq!((s.quota.charged_sz, s.stat.nr_tried, s.stat.sz_tried), (8 * P, 2, 8 * P));
        // Acted-on regions restart their age; the others keep it.
        assert_eq!(regions.as_slice().iter().map(|r| r.age).collect::<Vec<_>>(), vec![3, 0, 3, 0]);
        // A cold scheme with the same quota prefers A and C instead (scores 90, 10, 50,
        // 5: the minimum is C's 50).
        let mut c = scheme(Prefer::Cold, Quota::new(0, 8 * P, 1000, w));
        let mut regions = Regions::from_list(vec![region(0, 4, 2, 0), region(4, 8, 18, 0), region(8, 12, 10, 0), region(12, 16, 19, 0)]);
        let mut acted = Vec::new();
        c.apply(&mut regions, 0, scale, |r| {
            acted.push(r.start / P);
            0
        });
        assert_eq!(acted, vec![0, 8]);
    }

    #[test]
    fn a_region_over_the_rest_of_the_quota_is_split_and_the_next_window_resumes_after_it() {
        // Quota 6 pages per 100 cycles; three idle regions of 4 pages, all selected.
        let mut s = scheme(Prefer::Cold, Quota::new(0, 6 * P, 100, Weights::default()));
        let mut regions = Regions::from_list(vec![region(0, 4, 0, 0), region(4, 8, 0, 0), region(8, 12, 0, 0)]);
        let scale = ScoreScale { max_nr_accesses: 20, aggr_us: 100_000 };
        let mut acted = Vec::new();
        s.apply(&mut regions, 0, scale, |r| {
            acted.push((r.start / P, r.end / P));
            0
        });
        // [0,4) whole, then [4,8) cut to the 2 pages left: [4,6); [6,8) is not visited.
        assert_eq!(acted, vec![(0, 4), (4, 6)]);
        assert_eq!(regions.len(), 4);
        // Same window (cycle 50): the quota is used up, nothing happens.
        s.apply(&mut regions, 50, scale, |_| panic!("quota used up"));
        // Next window (cycle 100): the last one is counted as exceeded. The walk resumes
        // after 6 pages + 1 byte: [0,4) and [4,6) end before it and are skipped; [6,8)
        // starts before it by less than a page, so its first page is split off and
        // skipped (the kernel's +1) and [7,8) is acted on; 5 pages are left, and
        // [8,12) fits whole.
        let mut acted = Vec::new();
        s.apply(&mut regions, 100, scale, |r| {
            acted.push((r.start / P, r.end / P));
            0
        });
        assert_eq!(s.stat.qt_exceeds, 1);
        assert_eq!(acted, vec![(7, 8), (8, 12)]);
    }

    #[test]
    fn a_time_quota_becomes_a_size_by_the_measured_throughput() {
        // Nothing measured: 4 MiB per ms; 10 ms → 40 MiB, under a 100 MiB size quota.
        let mut q = Quota::new(10, 100 << 20, 1, Weights::default());
        q.set_effective();
        assert_eq!(q.esz, 40 << 20);
        // 2 MiB charged in 1 ms (10⁶ ns): 2 MiB per ms → 20 MiB.
        q.total_charged_sz = 2 << 20;
        q.total_charged_ns = 1_000_000;
        q.set_effective();
        assert_eq!(q.esz, 20 << 20);
        // The size quota wins when smaller.
        q.sz = 1 << 20;
        q.set_effective();
        assert_eq!(q.esz, 1 << 20);
    }

    #[test]
    fn watermarks_switch_off_outside_high_and_low_and_back_on_below_mid() {
        // DAMON_RECLAIM's levels: high 500, mid 400, low 200, 5 s interval.
        let mut w = Wmarks::new(Metric::FreeMemRate, 5_000_000, 500, 400, 200);
        assert_eq!(w.wait_us(Some(450)), 0, "between low and high, active from the start");
        assert_eq!(w.wait_us(Some(600)), 5_000_000, "above high: off");
        assert_eq!(w.wait_us(Some(450)), 5_000_000, "between mid and high: stays off");
        assert_eq!(w.wait_us(Some(300)), 0, "between low and mid: on again");
        assert_eq!(w.wait_us(Some(100)), 5_000_000, "below low: off");
        assert_eq!(w.wait_us(Some(250)), 0, "back between low and mid: on");
        assert_eq!((w.activations, w.deactivations), (2, 2));
        assert_eq!(w.wait_us(None), 0, "no metric: always active");
    }
}
