//! DAMON's adaptive regions (Linux mm/damon/core.c): a monitoring target's address
//! range cut into regions, each sampled at one random address per sampling interval,
//! whose access counts are aggregated, merged with similar neighbours and split at
//! random points so that the number of regions — and so the monitoring cost — stays
//! bounded whatever the size of the range.
//!
//! Per sampling interval, each region's `nr_accesses` grows by one if the sampled
//! address was found accessed (`damon_update_region_access_rate`). At the end of each
//! aggregation interval `kdamond_fn` merges adjacent regions whose counts differ by at
//! most a tenth of the largest count (and whose sizes together stay within the size
//! limit, the target's size over `min_nr_regions`), updating each region's `age` (the
//! aggregation intervals its count has stayed within that threshold of the last one),
//! then resets the counts and splits every region in two — in three when the number
//! of regions did not change since the last split — at random points, as long as
//! there are at most half of `max_nr_regions`.
//!
//! Addresses are bytes, as in the kernel; [`MIN_REGION`] (the kernel's
//! `DAMON_MIN_REGION`, one page) is the granule of every split. The kernel also keeps
//! `nr_accesses_bp`, a moving sum of the counts that DAMOS reads between aggregations;
//! it equals `nr_accesses × 10 000` at every aggregation boundary (the kernel checks
//! it in `kdamond_reset_aggregated`), which is where schemes are applied here, so it
//! is not kept.

use crate::rng::Rng;

/// `DAMON_MIN_REGION`: the smallest region and the granule of splits, one page.
pub const MIN_REGION: u64 = 4096;

/// One monitoring region, `[start, end)` in bytes (`struct damon_region`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    /// Sampling intervals of the current aggregation interval that found an access.
    pub nr_accesses: u32,
    /// `nr_accesses` of the last aggregation interval.
    pub last_nr_accesses: u32,
    /// Aggregation intervals the access count has stayed about the same.
    pub age: u32,
    /// The address sampled in the current sampling interval.
    pub sampling_addr: u64,
}

impl Region {
    /// A region of `[start, end)` with nothing counted (`damon_new_region`).
    pub fn new(start: u64, end: u64) -> Region {
        Region { start, end, nr_accesses: 0, last_nr_accesses: 0, age: 0, sampling_addr: start }
    }

    /// Bytes the region covers (`damon_sz_region`).
    pub fn size(&self) -> u64 {
        self.end - self.start
    }
}

/// The regions of one monitoring target, in address order.
#[derive(Clone, Debug, Default)]
pub struct Regions {
    list: Vec<Region>,
    /// The number of regions at the last split (`kdamond_split_regions`' static).
    last_nr_regions: usize,
}

impl Regions {
    /// One region over `[start, end)`, aligned outwards to [`MIN_REGION`], as
    /// `damon_set_regions` sets a physical-address target's single range (the
    /// physical-address operations split nothing at start: the first aggregations'
    /// splits make the regions).
    pub fn new(start: u64, end: u64) -> Regions {
        let (start, end) = (start / MIN_REGION * MIN_REGION, end.div_ceil(MIN_REGION) * MIN_REGION);
        Regions { list: vec![Region::new(start, end)], last_nr_regions: 0 }
    }

    /// Regions as given (they must be in address order and not overlap).
    pub fn from_list(list: Vec<Region>) -> Regions {
        debug_assert!(list.windows(2).all(|w| w[0].end <= w[1].start && w[0].start < w[0].end));
        Regions { list, last_nr_regions: 0 }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn as_slice(&self) -> &[Region] {
        &self.list
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Region {
        &mut self.list[i]
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Region> {
        self.list.iter_mut()
    }

    /// The size limit of one region: the target's bytes over `min_nr_regions`, at
    /// least [`MIN_REGION`] (`damon_region_sz_limit`).
    pub fn sz_limit(&self, min_nr_regions: u32) -> u64 {
        let total: u64 = self.list.iter().map(Region::size).sum();
        (total / min_nr_regions.max(1) as u64).max(MIN_REGION)
    }

    /// Counts one sampling interval's check of region `i` (the count part of
    /// `damon_update_region_access_rate`).
    pub fn update_access_rate(&mut self, i: usize, accessed: bool) {
        self.list[i].nr_accesses += accessed as u32;
    }

    /// The largest `nr_accesses` (what `damon_pa_check_accesses` returns).
    pub fn max_nr_accesses(&self) -> u32 {
        self.list.iter().map(|r| r.nr_accesses).max().unwrap_or(0)
    }

    /// One merge pass (`damon_merge_regions_of`): each region's age grows by one if its
    /// count moved by at most `thres` since the last aggregation, else restarts at 0;
    /// a region then joins its left neighbour if they touch, their counts differ by at
    /// most `thres` and their sizes together are within `sz_limit`. The merged count
    /// and age are the size-weighted means, in integers (`damon_merge_two_regions`).
    pub fn merge_pass(&mut self, thres: u32, sz_limit: u64) {
        let mut out: Vec<Region> = Vec::with_capacity(self.list.len());
        for mut r in self.list.drain(..) {
            if r.nr_accesses.abs_diff(r.last_nr_accesses) > thres {
                r.age = 0;
            } else {
                r.age += 1;
            }
            match out.last_mut() {
                Some(l) if l.end == r.start && l.nr_accesses.abs_diff(r.nr_accesses) <= thres && l.size() + r.size() <= sz_limit => {
                    let (sl, sr) = (l.size() as u128, r.size() as u128);
                    l.nr_accesses = ((l.nr_accesses as u128 * sl + r.nr_accesses as u128 * sr) / (sl + sr)) as u32;
                    l.age = ((l.age as u128 * sl + r.age as u128 * sr) / (sl + sr)) as u32;
                    l.end = r.end;
                }
                _ => out.push(r),
            }
        }
        self.list = out;
    }

    /// `kdamond_merge_regions` for one target: a merge pass with `threshold`, repeated
    /// with the threshold doubled (at least 1) while there are more than
    /// `max_nr_regions` regions and the last threshold was below `max_thres` (the
    /// samples per aggregation). Each pass ages the regions again, as in the kernel.
    pub fn merge(&mut self, threshold: u32, sz_limit: u64, max_nr_regions: u32, max_thres: u32) {
        let mut threshold = threshold;
        loop {
            self.merge_pass(threshold, sz_limit);
            threshold = (threshold.saturating_mul(2)).max(1);
            if !(self.list.len() > max_nr_regions as usize && threshold / 2 < max_thres) {
                break;
            }
        }
    }

    /// Splits region `i` so that its first part has `sz` bytes; the second part keeps
    /// its counts and age (`damon_split_region_at`).
    pub fn split_at(&mut self, i: usize, sz: u64) {
        let r = &mut self.list[i];
        debug_assert!(sz > 0 && sz < r.size());
        let mut second = *r;
        second.start = r.start + sz;
        r.end = second.start;
        self.list.insert(i + 1, second);
    }

    /// Splits every region into up to `nr_subs` regions (`damon_split_regions_of`):
    /// while a region is larger than two [`MIN_REGION`]s, its left part is cut at a
    /// random tenth of its size (1/10 … 9/10, aligned down to [`MIN_REGION`]; a cut
    /// at 0 is skipped), and the next cut, if any, is of that left part again.
    pub fn split_each(&mut self, nr_subs: u32, rng: &mut Rng) {
        let mut i = 0;
        while i < self.list.len() {
            let mut sz_region = self.list[i].size();
            let mut made = 0;
            for _ in 0..nr_subs.saturating_sub(1) {
                if sz_region <= 2 * MIN_REGION {
                    break;
                }
                let tenths = rng.below(9) + 1;
                let sz_sub = (tenths as u128 * sz_region as u128 / 10) as u64 / MIN_REGION * MIN_REGION;
                if sz_sub == 0 || sz_sub >= sz_region {
                    continue;
                }
                self.split_at(i, sz_sub);
                made += 1;
                sz_region = sz_sub;
            }
            i += 1 + made;
        }
    }

    /// `kdamond_split_regions` for one target: nothing while there are more than half
    /// of `max_nr_regions` regions; else every region is split in two, or in three
    /// when the number of regions is the same as at the last split and below a third
    /// of `max_nr_regions` ("maybe the middle of the region has a different access
    /// frequency").
    pub fn split(&mut self, max_nr_regions: u32, rng: &mut Rng) {
        let n = self.list.len();
        if n > max_nr_regions as usize / 2 {
            return;
        }
        let nr_subs = if self.last_nr_regions == n && n < max_nr_regions as usize / 3 { 3 } else { 2 };
        self.split_each(nr_subs, rng);
        self.last_nr_regions = n;
    }

    /// Ends an aggregation interval (`kdamond_reset_aggregated`): each count becomes
    /// the last one and restarts at 0.
    pub fn reset_aggregated(&mut self) {
        for r in &mut self.list {
            r.last_nr_accesses = r.nr_accesses;
            r.nr_accesses = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = MIN_REGION;

    fn region(start_pages: u64, end_pages: u64, nr: u32, last: u32, age: u32) -> Region {
        Region { start: start_pages * P, end: end_pages * P, nr_accesses: nr, last_nr_accesses: last, age, sampling_addr: start_pages * P }
    }

    fn bounds(r: &Regions) -> Vec<(u64, u64)> {
        r.as_slice().iter().map(|r| (r.start / P, r.end / P)).collect()
    }

    #[test]
    fn a_target_starts_as_one_page_aligned_region() {
        let r = Regions::new(100, 10 * P + 1);
        assert_eq!(bounds(&r), vec![(0, 11)]);
        // 100 pages over min_nr_regions 10: 10 pages; never below one page.
        assert_eq!(Regions::new(0, 100 * P).sz_limit(10), 10 * P);
        assert_eq!(Regions::new(0, 2 * P).sz_limit(10), P);
    }

    #[test]
    fn the_access_count_is_the_samples_that_found_an_access() {
        // A region whose sampled page is found accessed in 7 of 20 samples: 7.
        let mut r = Regions::new(0, 16 * P);
        let pattern = [true, false, false, true, true, false, false, false, true, false, true, false, false, false, true, false, false, true, false, false];
        for &accessed in &pattern {
            r.update_access_rate(0, accessed);
        }
        assert_eq!(r.as_slice()[0].nr_accesses, 7);
        assert_eq!(r.max_nr_accesses(), 7);
        r.reset_aggregated();
        assert_eq!((r.as_slice()[0].nr_accesses, r.as_slice()[0].last_nr_accesses), (0, 7));
    }

    #[test]
    fn merging_joins_similar_neighbours_with_weighted_counts_and_ages() {
        // Threshold 2, size limit 8 pages.
        // [0,2) 10 (last 10, age 3)  [2,6) 11 (last 2, age 5)  [6,8) 20 (last 19, age 1)
        // [8,12) 19 (last 19, age 0)  [12,14) 18 (last 18, age 7)
        let mut r = Regions::from_list(vec![region(0, 2, 10, 10, 3), region(2, 6, 11, 2, 5), region(6, 8, 20, 19, 1), region(8, 12, 19, 19, 0), region(12, 14, 18, 18, 7)]);
        r.merge_pass(2, 8 * P);
        // Ages first: |10−10| ≤ 2 → 4; |11−2| > 2 → 0; |20−19| → 2; |19−19| → 1; → 8.
        // [0,2)+[2,6): |10−11| ≤ 2, 6 pages ≤ 8 → count (10·2 + 11·4)/6 = 64/6 = 10,
        //   age (4·2 + 0·4)/6 = 1. Then [6,8): |10−20| > 2, kept.
        // [6,8)+[8,12): |20−19| ≤ 2, 6 pages → (20·2 + 19·4)/6 = 116/6 = 19, age
        //   (2·2 + 1·4)/6 = 1. [12,14): |19−18| ≤ 2 but 8 pages ≤ 8 → joins:
        //   (19·6 + 18·2)/8 = 150/8 = 18, age (1·6 + 8·2)/8 = 22/8 = 2.
        let got: Vec<_> = r.as_slice().iter().map(|x| (x.start / P, x.end / P, x.nr_accesses, x.age)).collect();
        assert_eq!(got, vec![(0, 6, 10, 1), (6, 14, 18, 2)]);
    }

    #[test]
    fn merging_respects_the_size_limit_and_gaps() {
        // Equal counts, but the size limit is 4 pages and [4,6) does not touch [7,9).
        let mut r = Regions::from_list(vec![region(0, 2, 5, 5, 0), region(2, 4, 5, 5, 0), region(4, 6, 5, 5, 0), region(7, 9, 5, 5, 0)]);
        r.merge_pass(0, 4 * P);
        assert_eq!(bounds(&r), vec![(0, 4), (4, 6), (7, 9)]);
    }

    #[test]
    fn merging_repeats_with_doubled_thresholds_while_over_the_maximum() {
        // Counts 0, 3, 6, 9 (last = same); max 1 region, 20 samples per aggregation.
        // Threshold 1: nothing merges (ages → 1). Threshold 2: nothing (ages → 2).
        // Threshold 4: [0,1)+[1,2) → (0+3)/2 = 1; then |1−6| > 4; [2,3)+[3,4) → 7
        // (ages → 3). Threshold 8: |1−7| ≤ 8 → (1·2 + 7·2)/4 = 4, age 4. One region.
        let mut r = Regions::from_list((0..4).map(|i| region(i, i + 1, 3 * i as u32, 3 * i as u32, 0)).collect());
        r.merge(1, 100 * P, 1, 20);
        let got: Vec<_> = r.as_slice().iter().map(|x| (x.start / P, x.end / P, x.nr_accesses, x.age)).collect();
        assert_eq!(got, vec![(0, 4, 4, 4)]);
        // The threshold stops doubling at the samples per aggregation: with 2 samples,
        // thresholds 1 and 2 are tried, then 4 / 2 = 2 is not below 2: two regions stay.
        let mut r = Regions::from_list((0..4).map(|i| region(i, i + 1, 3 * i as u32, 3 * i as u32, 0)).collect());
        r.merge(1, 100 * P, 1, 2);
        assert_eq!(r.len(), 4, "thresholds 1 and 2 merge none of 0, 3, 6, 9");
    }

    #[test]
    fn a_split_keeps_counts_and_age_in_both_parts() {
        let mut r = Regions::from_list(vec![region(0, 10, 4, 3, 6)]);
        r.split_at(0, 3 * P);
        let got: Vec<_> = r.as_slice().iter().map(|x| (x.start / P, x.end / P, x.nr_accesses, x.last_nr_accesses, x.age)).collect();
        assert_eq!(got, vec![(0, 3, 4, 3, 6), (3, 10, 4, 3, 6)]);
    }

    #[test]
    fn random_splits_cut_at_tenths_of_the_region() {
        // Seed 7: the first draws of `below(9) + 1` are the tenths used below.
        let mut rng = Rng::new(7);
        let tenths: Vec<u64> = (0..4).map(|_| rng.below(9) + 1).collect();
        // Two regions of 100 pages, split in three: the first cut of each region is at
        // tenths[k]·100/10 pages, the second cuts that left part again at its own tenth.
        let mut r = Regions::from_list(vec![region(0, 100, 0, 0, 0), region(100, 200, 0, 0, 0)]);
        r.split_each(3, &mut Rng::new(7));
        let a = tenths[0] * 10;
        let b = tenths[1] * a / 10;
        let c = tenths[2] * 10;
        let d = tenths[3] * c / 10;
        let mut expected = vec![(0, b), (b, a), (a, 100), (100, 100 + d), (100 + d, 100 + c), (100 + c, 200)];
        expected.retain(|&(s, e)| s < e);
        assert_eq!(bounds(&r), expected, "tenths {tenths:?}");
        // Regions of two pages or less are never split.
        let mut small = Regions::from_list(vec![region(0, 2, 0, 0, 0)]);
        small.split_each(3, &mut Rng::new(7));
        assert_eq!(bounds(&small), vec![(0, 2)]);
    }

    #[test]
    fn regions_split_in_two_then_in_three_when_their_number_is_unchanged() {
        let mut r = Regions::new(0, 1000 * P);
        let mut rng = Rng::new(1);
        // 1 region, none before: in two.
        r.split(1000, &mut rng);
        assert_eq!(r.len(), 2);
        // Merge back to one region: 1 region again but the last split saw 1: in three.
        r.merge(0, u64::MAX, 1000, 20);
        assert_eq!(r.len(), 1);
        r.split(1000, &mut rng);
        assert_eq!(r.len(), 3);
        // Over half of the maximum (3 > 4 / 2): no split.
        r.split(4, &mut rng);
        assert_eq!(r.len(), 3);
        // Coverage is kept through it all.
        assert_eq!((r.as_slice()[0].start, r.as_slice()[2].end), (0, 1000 * P));
        assert!(r.as_slice().windows(2).all(|w| w[0].end == w[1].start));
    }
}
