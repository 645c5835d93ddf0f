//! HMM-V's multi-level queue (§4.1.2): which pages' Accessed/Dirty bits a monitoring
//! window reads and clears, so that hot pages are tracked less often.
//!
//! Every page starts at level 0. A page seen accessed moves up one level (to at most
//! `max_level`, 7 in the paper) and enters a *do-not-disturb* (DND) time of
//! 2^(level−1) windows: during it its bits are neither read nor cleared and each window
//! counts as a visit ("pages in their DND time are treated as continuous visits");
//! its bits are cleared in the window its DND time ends, so that the next window sees
//! whether it is still accessed. A page seen idle moves down one level (and is seen
//! again the next window). The paper does not say whether a page that moves down
//! gets a DND time of its lower level; here it does not: its level only sets how long
//! its next DND time will be.

/// What a window does with one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filtered {
    /// Clear the page's Accessed/Dirty bits in this window.
    pub clear: bool,
    /// The page counts as accessed in this window.
    pub counted: bool,
}

/// Levels and DND times per page, indexed by page number.
#[derive(Clone, Debug)]
pub struct MultiLevelQueue {
    max_level: u8,
    level: Vec<u8>,
    /// Windows of DND time left.
    dnd: Vec<u8>,
}

impl MultiLevelQueue {
    /// A queue with levels 0 to `max_level` (HMM-V §5.3.3: 7; at most 8, so a DND time
    /// fits a byte).
    pub fn new(max_level: u8) -> MultiLevelQueue {
        MultiLevelQueue { max_level: max_level.min(8), level: Vec::new(), dnd: Vec::new() }
    }

    fn grow(&mut self, page: u64) {
        if page as usize >= self.level.len() {
            self.level.resize(page as usize + 1, 0);
            self.dnd.resize(page as usize + 1, 0);
        }
    }

    /// Whether the page is in its DND time (a window should not read its bits).
    pub fn resting(&self, page: u64) -> bool {
        self.dnd.get(page as usize).is_some_and(|&d| d > 0)
    }

    /// One monitoring window for page `page`, whose bits read `accessed` (ignored
    /// while the page rests). Returns what to do and whether it counts as accessed.
    pub fn window(&mut self, page: u64, accessed: bool) -> Filtered {
        self.grow(page);
        let i = page as usize;
        if self.dnd[i] > 0 {
            self.dnd[i] -= 1;
            return Filtered { clear: self.dnd[i] == 0, counted: true };
        }
        if accessed {
            let level = (self.level[i] + 1).min(self.max_level);
            self.level[i] = level;
            self.dnd[i] = if level > 0 { 1 << (level - 1) } else { 0 };
            Filtered { clear: level == 0, counted: true }
        } else {
            self.level[i] = self.level[i].saturating_sub(1);
            Filtered { clear: self.level[i] == 0, counted: false }
        }
    }

    pub fn level(&self, page: u64) -> u8 {
        self.level.get(page as usize).copied().unwrap_or(0)
    }

    /// Pages at each level, for the report (every page ever seen).
    pub fn histogram(&self) -> Vec<u64> {
        let mut h = vec![0; self.max_level as usize + 1];
        for &l in &self.level {
            h[l as usize] += 1;
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hot_page_rises_and_rests_longer_a_cold_one_falls() {
        let mut q = MultiLevelQueue::new(7);
        let f = |clear, counted| Filtered { clear, counted };
        // Window 1: seen accessed → level 1, DND 2^0 = 1 window; bits kept.
        assert_eq!(q.window(5, true), f(false, true));
        assert_eq!(q.level(5), 1);
        // Window 2: resting (counted), DND ends → clear.
        assert!(q.resting(5));
        assert_eq!(q.window(5, false), f(true, true));
        // Window 3: accessed again → level 2, DND 2 windows.
        assert_eq!(q.window(5, true), f(false, true));
        assert_eq!(q.window(5, false), f(false, true));
        assert_eq!(q.window(5, false), f(true, true));
        // Window 6: idle → level 1; window 7: idle → level 0, bits cleared.
        assert_eq!(q.window(5, false), f(false, false));
        assert_eq!(q.window(5, false), f(true, false));
        assert_eq!(q.level(5), 0);
        // A page kept accessed climbs to the top level and rests 2^6 = 64 windows there.
        let mut windows = 0;
        while q.level(9) < 7 {
            q.window(9, true);
            windows += 1;
        }
        assert!(q.resting(9));
        let mut rest = 0;
        while q.resting(9) {
            q.window(9, false);
            rest += 1;
        }
        assert_eq!(rest, 64);
        // Rising took 7 accessed windows plus the DND times of levels 1–6 (1+2+…+32).
        assert_eq!(windows, 7 + 63);
        assert_eq!(q.histogram(), vec![9, 0, 0, 0, 0, 0, 0, 1], "pages 0–8 at level 0, page 9 at 7");
    }
}
