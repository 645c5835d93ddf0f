//! Per-page access records, in arrays indexed by page number
//! ([`PageInfo::page`](crate::machine::PageInfo)): the Accessed/Dirty history of the
//! last scans, the number of scans in a row that found a page idle (its idle age, as
//! kstaled keeps it, up to 255), fault counts (poison or hinting faults), and sampled
//! read and write counts.
//!
//! Records are kept per *base* page. What is seen of a huge page (one PTE, one A bit)
//! is recorded in every base page it covers, and what is asked of a huge page is
//! combined over them (histories OR-ed, counts summed), so records survive splits and
//! merges: after a split each base page has the huge page's history; after a merge
//! the huge page has what any of its base pages had. Page numbers never change when a
//! page moves, so migration does not touch the records. Arrays grow as page numbers
//! appear; each kind of record is allocated only when first used.

use crate::machine::PageInfo;

/// Scans a history remembers.
pub const HISTORY_SCANS: u32 = 8;

/// Per-page access records; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    /// Accessed bit of the last 8 scans, bit 0 the newest.
    accessed: Vec<u8>,
    /// Dirty bit of the last 8 scans.
    dirty: Vec<u8>,
    /// Scans in a row that found the base page idle (saturating).
    idle: Vec<u8>,
    faults: Vec<u32>,
    reads: Vec<u32>,
    writes: Vec<u32>,
}

/// The entries of `v` for pages `first..first + n`, grown as needed.
fn span<T: Copy + Default>(v: &mut Vec<T>, first: u64, n: u64) -> &mut [T] {
    let end = (first + n) as usize;
    if end > v.len() {
        v.resize(end, T::default());
    }
    &mut v[first as usize..end]
}

/// The entries of `v` for pages `first..first + n` that exist (missing ones are
/// all-default).
fn view<T>(v: &[T], first: u64, n: u64) -> &[T] {
    let start = (first as usize).min(v.len());
    let end = ((first + n) as usize).min(v.len());
    &v[start..end]
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Records what a scan found of page `p` (its Accessed and Dirty bits): every base
    /// page it covers shifts its history by one scan.
    pub fn record_scan(&mut self, p: &PageInfo) {
        let n = p.base_pages();
        for h in span(&mut self.accessed, p.page, n) {
            *h = *h << 1 | p.accessed as u8;
        }
        for h in span(&mut self.dirty, p.page, n) {
            *h = *h << 1 | p.dirty as u8;
        }
        for a in span(&mut self.idle, p.page, n) {
            *a = if p.accessed { 0 } else { a.saturating_add(1) };
        }
    }

    /// The page's Accessed history (bit 0 the newest scan), OR-ed over its base pages.
    pub fn accessed_history(&self, p: &PageInfo) -> u8 {
        view(&self.accessed, p.page, p.base_pages()).iter().fold(0, |a, &h| a | h)
    }

    /// The page's Dirty history, OR-ed over its base pages.
    pub fn dirty_history(&self, p: &PageInfo) -> u8 {
        view(&self.dirty, p.page, p.base_pages()).iter().fold(0, |a, &h| a | h)
    }

    /// Most recent scans in a row that found the page idle (neither it nor any of its
    /// base pages accessed), up to 255. A page never scanned has an idle age of 0.
    pub fn idle_scans(&self, p: &PageInfo) -> u32 {
        view(&self.idle, p.page, p.base_pages()).iter().map(|&a| a as u32).min().unwrap_or(0)
    }

    /// Of the last `n` scans (at most 8), how many found the page accessed.
    pub fn accessed_scans(&self, p: &PageInfo, n: u32) -> u32 {
        let mask = if n >= HISTORY_SCANS { u8::MAX } else { (1u8 << n) - 1 };
        (self.accessed_history(p) & mask).count_ones()
    }

    /// Of the last `n` scans, how many found the page dirty.
    pub fn dirty_scans(&self, p: &PageInfo, n: u32) -> u32 {
        let mask = if n >= HISTORY_SCANS { u8::MAX } else { (1u8 << n) - 1 };
        (self.dirty_history(p) & mask).count_ones()
    }

    /// Counts a fault on the page numbered `page` (a fault event's `page`: a huge
    /// page's first base page).
    pub fn record_fault(&mut self, page: u64) {
        let f = &mut span(&mut self.faults, page, 1)[0];
        *f = f.saturating_add(1);
    }

    /// Faults counted on the page (summed over its base pages).
    pub fn faults(&self, p: &PageInfo) -> u64 {
        view(&self.faults, p.page, p.base_pages()).iter().map(|&f| f as u64).sum()
    }

    /// Faults counted on base pages `first..first + n`.
    pub fn faults_in(&self, first: u64, n: u64) -> u64 {
        view(&self.faults, first, n).iter().map(|&f| f as u64).sum()
    }

    /// Forgets the page's fault counts.
    pub fn reset_faults(&mut self, p: &PageInfo) {
        self.reset_faults_in(p.page, p.base_pages());
    }

    /// Forgets the fault counts of base pages `first..first + n`.
    pub fn reset_faults_in(&mut self, first: u64, n: u64) {
        if first < self.faults.len() as u64 {
            span(&mut self.faults, first, n).fill(0);
        }
    }

    /// Counts a sampled (or otherwise observed) access to the page numbered `page`.
    pub fn record_access(&mut self, page: u64, write: bool) {
        let v = if write { &mut self.writes } else { &mut self.reads };
        let c = &mut span(v, page, 1)[0];
        *c = c.saturating_add(1);
    }

    /// Reads and writes counted on the page (summed over its base pages).
    pub fn reads(&self, p: &PageInfo) -> u64 {
        view(&self.reads, p.page, p.base_pages()).iter().map(|&c| c as u64).sum()
    }

    pub fn writes(&self, p: &PageInfo) -> u64 {
        view(&self.writes, p.page, p.base_pages()).iter().map(|&c| c as u64).sum()
    }

    /// Forgets the page's read and write counts.
    pub fn reset_counts(&mut self, p: &PageInfo) {
        let n = p.base_pages();
        for v in [&mut self.reads, &mut self.writes] {
            if p.page < v.len() as u64 {
                span(v, p.page, n).fill(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::TierId;

    fn page(number: u64, huge: bool, accessed: bool, dirty: bool) -> PageInfo {
        let bytes = if huge { 2 << 20 } else { 4096 };
        PageInfo { tenant: 0, addr: number << 12, page: number, bytes, huge, pfn: 0, tier: TierId::FAST, accessed, dirty, poisoned: false }
    }

    #[test]
    fn history_counts_idle_and_accessed_scans() {
        let mut t = Tracker::new();
        // Scans: accessed, accessed, idle, idle, idle (newest last).
        for a in [true, true, false, false, false] {
            t.record_scan(&page(7, false, a, false));
        }
        let p = page(7, false, false, false);
        assert_eq!(t.accessed_history(&p), 0b11000);
        assert_eq!(t.idle_scans(&p), 3);
        assert_eq!(t.accessed_scans(&p, 5), 2);
        assert_eq!(t.accessed_scans(&p, 3), 0);
        // Nine scans later the history has forgotten the accesses; the idle age has not.
        for _ in 0..9 {
            t.record_scan(&p);
        }
        assert_eq!((t.accessed_history(&p), t.idle_scans(&p)), (0, 12));
        assert_eq!(t.idle_scans(&page(8, false, false, false)), 0, "never scanned");
    }

    #[test]
    fn records_survive_split_and_merge() {
        let mut t = Tracker::new();
        // Huge page 512..1024: three idle scans, then one that finds it dirty.
        for (a, d) in [(false, false), (false, false), (false, false), (true, true)] {
            t.record_scan(&page(512, true, a, d));
        }
        // Split: every base page has the huge page's history.
        for i in [512, 700, 1023] {
            let b = page(i, false, false, false);
            assert_eq!((t.accessed_history(&b), t.dirty_history(&b)), (0b0001, 0b0001), "base page {i}");
        }
        // Base pages scanned apart: only 600 accessed, twice.
        for i in 512..1024 {
            for _ in 0..2 {
                t.record_scan(&page(i, false, i == 600, false));
            }
        }
        assert_eq!(t.idle_scans(&page(601, false, false, false)), 2);
        // Merged back: the huge page was accessed in the last scan (by page 600).
        let h = page(512, true, false, false);
        assert_eq!(t.idle_scans(&h), 0);
        assert_eq!(t.accessed_history(&h), 0b111);
        assert_eq!(t.dirty_history(&h), 0b100);
    }

    #[test]
    fn faults_and_counts_sum_over_base_pages() {
        let mut t = Tracker::new();
        t.record_fault(512);
        t.record_fault(512);
        t.record_fault(515);
        assert_eq!(t.faults(&page(512, true, false, false)), 3);
        assert_eq!(t.faults(&page(515, false, false, false)), 1);
        assert_eq!(t.faults_in(513, 2), 0);
        assert_eq!(t.faults(&page(9000, false, false, false)), 0, "never seen");
        t.reset_faults(&page(512, true, false, false));
        assert_eq!(t.faults(&page(515, false, false, false)), 0);
        t.record_access(3, false);
        t.record_access(3, true);
        t.record_access(3, true);
        let p = page(3, false, false, false);
        assert_eq!((t.reads(&p), t.writes(&p)), (1, 2));
        t.reset_counts(&p);
        assert_eq!((t.reads(&p), t.writes(&p)), (0, 0));
    }
}
