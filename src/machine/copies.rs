//! Copies of slow-tier pages in fast-tier frames: the fast tier used as a
//! software-managed cache of the slow one, as Rainbow (Wang et al., §III-A) and HSCC
//! (Liu et al., ICS'17) do. The slow frame stays allocated to the page while the copy
//! exists, so dropping a clean copy needs no copy back.
//!
//! How a reference reaches a copy depends on the mode:
//! - [`CopyMode::Redirect`] (Rainbow §III-D/E): the page table keeps mapping the slow
//!   superpage. The memory controller keeps a *migration bitmap*, one bit per 4 KiB
//!   slow frame, wholly in memory and partly in a small *bitmap cache*; the copy's frame
//!   number is written over the first 8 bytes of the slow page. A translation through
//!   a superpage TLB entry (4 KiB TLB miss) checks the bitmap; a set bit costs a read of
//!   those 8 bytes from the slow tier and installs a 4 KiB TLB entry for the copy.
//! - [`CopyMode::Remap`] (HSCC): the page-table entry is rewritten to point at the
//!   copy, so references reach it through the ordinary TLB and walk.
//!
//! The machine records which frame copies which, and whether a copy has been written
//! since it was made (set on every store served by it, at no cost: the DRAM manager's
//! clean and dirty lists in both papers know it without a scan). Making and dropping
//! copies is [`crate::mechanism::Mechanisms::cache_in`] / `cache_out`.

use serde::Serialize;

/// How references reach copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CopyMode {
    /// Rainbow: migration bitmap + pointer in the slow page; mapping unchanged.
    Redirect,
    /// HSCC: the page-table entry points at the copy.
    Remap,
}

/// Rainbow's migration-bitmap cache in the memory controller (§III-D, Fig. 5).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BitmapCacheConfig {
    /// Entries, each the 512-bit bitmap of one superpage (4000 in §III-D). Any
    /// multiple of `ways`: sets are indexed by superpage number modulo their count.
    pub entries: usize,
    /// Associativity (8 in §III-D).
    pub ways: usize,
    /// Cycles of a lookup (9 in §III-D, from CACTI).
    pub latency_cycles: u64,
}

/// What a policy asks of the machine when it keeps copies.
#[derive(Clone, Copy, Debug)]
pub struct CopySpec {
    pub mode: CopyMode,
    /// Redirect mode: the bitmap cache, or `None` to read the bitmap from memory on
    /// every check (an ablation).
    pub bitmap_cache: Option<BitmapCacheConfig>,
    /// Charge the bitmap check (cache lookup, and memory read on a miss) only to
    /// references that reach memory — §III-D: "9 cycles latency ... before accessing
    /// the NVM", the bitmap cache sitting in the memory controller — rather than to
    /// every translation through a superpage entry (the literal flow of §III-E).
    /// Either way the redirection itself is decided at translation, so the physically
    /// indexed caches never hold a page under two addresses.
    pub bitmap_at_memory: bool,
}

/// A set-associative cache of superpage numbers with true LRU, any number of sets.
#[derive(Clone, Debug)]
pub struct BitmapCache {
    sets: u64,
    ways: usize,
    /// `sets × ways` tags (superpage number + 1; 0 = empty), each set most recent first.
    tags: Vec<u64>,
}

impl BitmapCache {
    pub fn new(cfg: &BitmapCacheConfig) -> BitmapCache {
        let sets = (cfg.entries / cfg.ways).max(1);
        BitmapCache { sets: sets as u64, ways: cfg.ways, tags: vec![0; sets * cfg.ways] }
    }

    /// Looks superpage `psn` up; on a miss installs it (evicting the set's least
    /// recent). Returns whether it hit and the superpage of an evicted entry whose
    /// bitmap was modified (it must be written back to memory).
    #[inline]
    pub fn access(&mut self, psn: u64) -> (bool, Option<u64>) {
        let base = (psn % self.sets) as usize * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        let tag = psn + 1;
        match set.iter().position(|&t| t & !DIRTY_TAG == tag) {
            Some(way) => {
                set[..=way].rotate_right(1);
                (true, None)
            }
            None => {
                let victim = set[self.ways - 1];
                set.rotate_right(1);
                set[0] = tag;
                (false, (victim & DIRTY_TAG != 0).then(|| (victim & !DIRTY_TAG) - 1))
            }
        }
    }

    /// A migration changed superpage `psn`'s bitmap: marks the cached entry modified
    /// (write-back cache) and most recently used (the write is an access), and returns
    /// true; or returns false if it is not cached (the bitmap in memory is written
    /// instead).
    pub fn modify(&mut self, psn: u64) -> bool {
        let base = (psn % self.sets) as usize * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        let tag = psn + 1;
        match set.iter().position(|&t| t & !DIRTY_TAG == tag) {
            Some(way) => {
                set[way] |= DIRTY_TAG;
                set[..=way].rotate_right(1);
                true
            }
            None => false,
        }
    }
}

/// Tag bit of a bitmap-cache entry modified since it was read from memory.
const DIRTY_TAG: u64 = 1 << 63;

/// Counters of the copy machinery, for Rainbow's Fig. 9 and Fig. 15 breakdowns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CopyStats {
    /// Translations through a superpage entry that checked the migration bitmap.
    pub bitmap_checks: u64,
    pub bitmap_cache_hits: u64,
    pub bitmap_cache_misses: u64,
    /// Cycles of bitmap-cache lookups (hits and misses alike).
    pub bitmap_cache_cycles: u64,
    /// Cycles of reading bitmaps from memory after bitmap-cache misses.
    pub bitmap_memory_cycles: u64,
    /// Reads of a slow page's first 8 bytes to find its copy (remapping), and their cycles.
    pub remaps: u64,
    pub remap_cycles: u64,
    /// Copies made, and copies dropped clean (no copy back) or dirty (written back).
    pub copies_made: u64,
    pub clean_drops: u64,
    pub dirty_drops: u64,
    /// Bytes copied slow → fast and fast → slow.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Cycles charged to making and dropping copies, by kind (Fig. 15).
    pub copy_cycles: u64,
    pub clflush_cycles: u64,
    pub shootdown_cycles: u64,
    /// Writes of the 8-byte pointer (and its restore) and of bitmap lines, and their cycles.
    pub metadata_writes: u64,
    pub metadata_cycles: u64,
    /// Base (4 KiB) frames held by copies at the end: a 2 MiB copy holds 512.
    pub copy_frames_held: u64,
}

/// The copy table: which fast frame copies which slow frame.
pub struct Copies {
    pub mode: CopyMode,
    fast_base: u64,
    fast_frames: u64,
    slow_base: u64,
    slow_frames: u64,
    /// Per slow frame: fast frame of its copy + 1 (0 = none).
    copy_of_slow: Vec<u32>,
    /// Per fast frame: slow frame it copies − slow base + 1 (0 = not a copy).
    slow_of_fast: Vec<u32>,
    /// One bit per fast frame: written since the copy was made.
    dirty: Vec<u64>,
    pub bitmap_cache: Option<BitmapCache>,
    pub bitmap_latency: u64,
    pub bitmap_at_memory: bool,
    /// Frames holding the in-memory migration bitmap (Redirect mode), in order.
    pub bitmap_frames: Vec<u64>,
    huge_shift: u32,
    pub stats: CopyStats,
}

impl Copies {
    pub fn new(spec: &CopySpec, fast: (u64, u64), slow: (u64, u64), huge_shift: u32, bitmap_frames: Vec<u64>) -> Copies {
        Copies {
            mode: spec.mode,
            fast_base: fast.0,
            fast_frames: fast.1,
            slow_base: slow.0,
            slow_frames: slow.1,
            copy_of_slow: vec![0; slow.1 as usize],
            slow_of_fast: vec![0; fast.1 as usize],
            dirty: vec![0; fast.1.div_ceil(64) as usize],
            bitmap_cache: spec.bitmap_cache.as_ref().map(BitmapCache::new),
            bitmap_latency: spec.bitmap_cache.map_or(0, |c| c.latency_cycles),
            bitmap_at_memory: spec.bitmap_at_memory,
            bitmap_frames,
            huge_shift,
            stats: CopyStats::default(),
        }
    }

    /// Bytes of in-memory bitmap for `slow_frames` frames: one bit each, 64 bytes per
    /// superpage (§III-D).
    pub fn bitmap_bytes(slow_frames: u64, huge_frames: u64) -> u64 {
        slow_frames.div_ceil(huge_frames) * huge_frames.div_ceil(8)
    }

    #[inline]
    fn fast_index(&self, pfn: u64) -> Option<usize> {
        let i = pfn.wrapping_sub(self.fast_base);
        (i < self.fast_frames).then_some(i as usize)
    }

    #[inline]
    fn slow_index(&self, pfn: u64) -> Option<usize> {
        let i = pfn.wrapping_sub(self.slow_base);
        (i < self.slow_frames).then_some(i as usize)
    }

    /// The fast frame holding the copy of slow frame `pfn`.
    #[inline]
    pub fn copy_of(&self, slow_pfn: u64) -> Option<u64> {
        let i = self.slow_index(slow_pfn)?;
        let c = self.copy_of_slow[i];
        (c != 0).then(|| c as u64 - 1)
    }

    /// The slow frame that fast frame `pfn` copies.
    #[inline]
    pub fn original_of(&self, fast_pfn: u64) -> Option<u64> {
        let i = self.fast_index(fast_pfn)?;
        let s = self.slow_of_fast[i];
        (s != 0).then(|| self.slow_base + s as u64 - 1)
    }

    /// Records that `fast_pfn` now holds a clean copy of `slow_pfn`.
    pub fn link(&mut self, slow_pfn: u64, fast_pfn: u64) {
        let (s, f) = (self.slow_index(slow_pfn).expect("slow frame"), self.fast_index(fast_pfn).expect("fast frame"));
        debug_assert!(self.copy_of_slow[s] == 0 && self.slow_of_fast[f] == 0, "frame already linked");
        self.copy_of_slow[s] = fast_pfn as u32 + 1;
        self.slow_of_fast[f] = s as u32 + 1;
        self.dirty[f / 64] &= !(1 << (f % 64));
    }

    /// Forgets the copy held in `fast_pfn`; returns the slow frame it copied.
    pub fn unlink(&mut self, fast_pfn: u64) -> Option<u64> {
        let slow = self.original_of(fast_pfn)?;
        let (s, f) = (self.slow_index(slow).expect("slow frame"), self.fast_index(fast_pfn).expect("fast frame"));
        self.copy_of_slow[s] = 0;
        self.slow_of_fast[f] = 0;
        self.dirty[f / 64] &= !(1 << (f % 64));
        Some(slow)
    }

    /// Marks the copy in `pfn` written (a no-op for frames that hold no copy).
    #[inline]
    pub fn note_store(&mut self, pfn: u64) {
        if let Some(f) = self.fast_index(pfn) {
            if self.slow_of_fast[f] != 0 {
                self.dirty[f / 64] |= 1 << (f % 64);
            }
        }
    }

    /// Whether any of the `frames` fast frames from `fast_pfn` was written.
    pub fn is_dirty(&self, fast_pfn: u64, frames: u64) -> bool {
        (0..frames).any(|i| self.fast_index(fast_pfn + i).is_some_and(|f| self.dirty[f / 64] & (1 << (f % 64)) != 0))
    }

    /// Every (fast frame, slow frame) pair, for invariant checks.
    pub fn pairs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.slow_of_fast
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .map(|(f, &s)| (self.fast_base + f as u64, self.slow_base + s as u64 - 1))
    }

    /// Number of copies held (in base frames).
    pub fn held(&self) -> u64 {
        self.slow_of_fast.iter().filter(|&&s| s != 0).count() as u64
    }

    /// Physical address of the bitmap line of the superpage holding slow frame `pfn`.
    pub fn bitmap_line(&self, slow_pfn: u64) -> u64 {
        self.bitmap_line_of(self.superpage_of(slow_pfn))
    }

    /// Physical address of the bitmap line of slow superpage `psn`.
    pub fn bitmap_line_of(&self, psn: u64) -> u64 {
        let huge_frames = 1u64 << (self.huge_shift - 12);
        let offset = psn * huge_frames.div_ceil(8);
        let frame = self.bitmap_frames[(offset >> 12) as usize];
        frame << 12 | (offset & 0xfc0)
    }

    /// Superpage number (within the slow tier) of slow frame `pfn`.
    #[inline]
    pub fn superpage_of(&self, slow_pfn: u64) -> u64 {
        (slow_pfn - self.slow_base) >> (self.huge_shift - 12)
    }

    /// Whether `pfn` is a slow-tier frame.
    #[inline]
    pub fn is_slow(&self, pfn: u64) -> bool {
        self.slow_index(pfn).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_cache_lru_with_any_set_count() {
        // 6 entries, 2 ways → 3 sets; superpages 0, 3, 6 share set 0.
        let mut c = BitmapCache::new(&BitmapCacheConfig { entries: 6, ways: 2, latency_cycles: 9 });
        assert_eq!(c.access(0), (false, None));
        assert_eq!(c.access(3), (false, None));
        assert_eq!(c.access(0), (true, None), "0 is still cached (2 ways)");
        assert_eq!(c.access(6), (false, None), "evicts 3, the least recent, unmodified");
        assert!(c.modify(0) && !c.modify(3), "3 is gone: its bitmap is written in memory");
        // modify made 0 most recent: set 0 is [0*, 6]; 3 evicts 6 (unmodified), then 9
        // evicts the modified 0, which is written back.
        assert_eq!(c.access(3), (false, None));
        assert_eq!(c.access(9), (false, Some(0)));
        assert_eq!(c.access(1), (false, None));
        assert_eq!(c.access(1), (true, None), "set 1 is independent");
    }

    #[test]
    fn link_unlink_and_dirty() {
        let spec = CopySpec { mode: CopyMode::Remap, bitmap_cache: None, bitmap_at_memory: false };
        // Fast frames 0..8, slow frames 100..1124, 2 MiB superpages.
        let mut c = Copies::new(&spec, (0, 8), (100, 1024), 21, vec![]);
        c.link(700, 3);
        assert_eq!((c.copy_of(700), c.original_of(3)), (Some(3), Some(700)));
        assert!(!c.is_dirty(3, 1));
        c.note_store(3);
        c.note_store(4); // not a copy: ignored
        assert!(c.is_dirty(3, 1) && !c.is_dirty(4, 1));
        assert_eq!(c.pairs().collect::<Vec<_>>(), vec![(3, 700)]);
        assert_eq!(c.unlink(3), Some(700));
        assert_eq!((c.copy_of(700), c.original_of(3), c.is_dirty(3, 1)), (None, None, false));
        assert_eq!(c.superpage_of(100 + 512 + 7), 1);
        assert_eq!(Copies::bitmap_bytes(1024, 512), 128);
    }
}
