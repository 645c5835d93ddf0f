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
//! copies is [`Machine::cache_in`] / [`Machine::cache_out`], page moves committed like
//! every other; policies reach them as `Mechanisms::cache_in` / `cache_out`.
//!
//! [`Copies`] is the machine's [`Redirect`] structure for these runs: Rainbow's
//! bitmap check and remapping happen in [`Redirect::after_translation`].

use super::core::Core;
use super::events::{MemKind, Observer};
use super::ops::{Exec, Move, MoveKind, Phases, Plan, Shootdown, Source};
use super::redirect::{Layout, PathCtx, Redirect, Redirected};
use super::rmap::Owner;
use super::space::Space;
use super::tlb::{TlbConfig, TlbEntry, NO_SLOT};
use super::{Colour, Machine, MechError, PageRef, TierId};
use serde::Serialize;

/// How references reach copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
pub enum CopyMode {
    /// Rainbow: migration bitmap + pointer in the slow page; mapping unchanged.
    Redirect,
    /// HSCC: the page-table entry points at the copy.
    #[default]
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
#[derive(Clone, Copy, Debug, Default)]
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
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct CopyStats {
    /// Translations through a superpage entry that checked the migration bitmap.
    pub bitmap_checks: u64,
    pub bitmap_cache_hits: u64,
    pub bitmap_cache_misses: u64,
    /// Cycles of bitmap-cache lookups (hits and misses alike).
    pub bitmap_cache_cycles: u64,
    /// Cycles of reading bitmaps from memory after bitmap-cache misses.
    pub bitmap_memory_cycles: u64,
    /// Of `bitmap_cache_cycles`, those of lookups that hit. Only checks whose cost
    /// is charged count (a check at the memory controller is paid only by an access
    /// that reaches memory), so the hits' share of the breakdown is never more than
    /// what was charged.
    #[serde(skip)]
    pub charged_hit_cycles: u64,
    /// Whether the latest bitmap check hit in the bitmap cache.
    #[serde(skip)]
    pub last_check_hit: bool,
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

/// The copy table (which fast frame copies which slow frame) and, in Redirect mode,
/// the migration bitmap's cache and in-memory frames.
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
    /// A table for fast frames `fast` and slow frames `slow` (first, count each).
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


impl Copies {
    /// Rainbow's translation through a superpage entry (§III-E, cases 3 and 4): the
    /// 4 KiB TLB's second level is probed beside the migration bitmap; a set bit costs
    /// a read of the slow page's first 8 bytes and installs a 4 KiB entry for the copy.
    #[inline(never)]
    fn redirect_superpage<O: Observer>(&mut self, p: &mut PathCtx, tenant: u16, vaddr: u64, slow_pfn: u64, obs: &mut O) -> Redirected {
        if let Some(e) = p.tlb.lookup_small_l2(tenant, vaddr) {
            // The 4 KiB TLB hit in its second level (case 1/2 at L2 latency).
            return Redirected { pfn: e.base_pfn, translation_cycles: p.l2_tlb_cycles, memory_cycles: 0, small_l2_hit: true };
        }
        let now = p.clock;
        self.stats.bitmap_checks += 1;
        let mut bitmap = self.bitmap_latency;
        let psn = self.superpage_of(slow_pfn);
        let (cached, evicted) = match &mut self.bitmap_cache {
            Some(c) => c.access(psn),
            None => (false, None),
        };
        if let Some(sp) = evicted {
            // The modified bitmap leaves the cache: a posted write to memory.
            let line = self.bitmap_line_of(sp);
            self.stats.metadata_writes += 1;
            p.mem.tiers.access(p.core, line, true, MemKind::Metadata, now + bitmap, obs);
        }
        self.stats.last_check_hit = cached;
        if cached {
            self.stats.bitmap_cache_hits += 1;
        } else {
            self.stats.bitmap_cache_misses += 1;
            let line = self.bitmap_line(slow_pfn);
            bitmap += p.mem.tiers.access(p.core, line, false, MemKind::Metadata, now + bitmap, obs);
        }
        let Some(copy) = self.copy_of(slow_pfn) else {
            // Not migrated: the check is all it costs, at memory or at translation.
            return if self.bitmap_at_memory {
                Redirected { pfn: slow_pfn, translation_cycles: 0, memory_cycles: bitmap, small_l2_hit: false }
            } else {
                self.memory_charge_taken(bitmap);
                Redirected { pfn: slow_pfn, translation_cycles: bitmap, memory_cycles: 0, small_l2_hit: false }
            };
        };
        // Migrated: the copy's address is in the first 8 bytes of the slow page. The
        // MMU reads it through the caches, as it reads page-table entries (the line
        // holds nothing else anyone reads while the page is migrated; the OS writes it
        // to memory and flushes it when the copy goes); with the walker's reads
        // uncached, from the slow tier, one t_nr as §III-E's analysis charges it.
        let lat = if p.walk_uncached {
            self.memory(&mut p.mem.tiers, p.core, slow_pfn << 12, false, MemKind::Metadata, now + bitmap, false, obs)
        } else {
            p.mem.cached(self, p.core, slow_pfn << 12, false, MemKind::Metadata, now + bitmap, false, obs).1
        };
        self.stats.remaps += 1;
        self.stats.remap_cycles += lat;
        // The machine tracks the copy's dirtiness itself: the entry needs no dirty bit.
        p.tlb.fill(tenant, vaddr, TlbEntry { base_pfn: copy, huge: false, dirty: true, slot: NO_SLOT });
        // The bitmap was needed before the remap: its cycles are on this path.
        self.memory_charge_taken(bitmap);
        Redirected { pfn: copy, translation_cycles: lat + bitmap, memory_cycles: 0, small_l2_hit: false }
    }
}

impl Redirect for Copies {
    type Spec = CopySpec;
    const TRANSLATES: bool = true;

    fn reserved_frames(spec: &CopySpec, slow_frames: u64, huge_frames: u64) -> u64 {
        match spec.mode {
            CopyMode::Redirect => Copies::bitmap_bytes(slow_frames, huge_frames).div_ceil(4096),
            CopyMode::Remap => 0,
        }
    }

    /// Redirect mode reserves the in-memory migration bitmap in the slow tier (one
    /// bit per slow frame) and needs process tenants: a VM's copies would need the
    /// guest virtual addresses of their TLB entries, which the host does not know.
    fn build(spec: &CopySpec, layout: &Layout, reserved: Vec<u64>, _fast: Vec<u64>) -> anyhow::Result<Copies> {
        if layout.tiers.len() < 2 {
            anyhow::bail!("machine.tiers: keeping copies needs a fast and a slow tier");
        }
        if spec.mode == CopyMode::Redirect {
            if layout.tenants.contains(&super::TenantKind::Vm) {
                anyhow::bail!("the migration bitmap redirects host-physical addresses of processes; VM tenants are not supported (Rainbow §III-E)");
            }
            if let Some(b) = &spec.bitmap_cache {
                if b.ways == 0 || b.entries < b.ways {
                    anyhow::bail!("bitmap cache: entries ({}) must be at least ways ({}), ways > 0", b.entries, b.ways);
                }
            }
        }
        Ok(Copies::new(spec, layout.tier(TierId::FAST), layout.tier(TierId::SLOW), layout.huge_shift, reserved))
    }

    #[inline]
    fn after_translation<O: Observer>(&mut self, p: &mut PathCtx, tenant: u16, vaddr: u64, entry: &TlbEntry, pfn: u64, write: bool, obs: &mut O) -> Redirected {
        let r = if entry.huge && self.mode == CopyMode::Redirect && self.is_slow(pfn) {
            self.redirect_superpage(p, tenant, vaddr, pfn, obs)
        } else {
            Redirected { pfn, translation_cycles: 0, memory_cycles: 0, small_l2_hit: false }
        };
        if write {
            self.note_store(r.pfn);
        }
        r
    }

    /// Records a bitmap check of `cycles` (lookup + memory read on a miss) as paid.
    fn memory_charge_taken(&mut self, cycles: u64) {
        self.stats.bitmap_cache_cycles += self.bitmap_latency;
        self.stats.bitmap_memory_cycles += cycles - self.bitmap_latency;
        if self.stats.last_check_hit {
            self.stats.charged_hit_cycles += self.bitmap_latency;
        }
    }

    fn alias(&self, pfn: u64) -> Option<u64> {
        if self.mode == CopyMode::Redirect {
            self.copy_of(pfn)
        } else {
            None
        }
    }

    fn check(&self, space: &Space) -> Result<(), String> {
        for (pfn, owner) in space.reverse_map().iter() {
            if matches!(owner, Owner::Copy { .. }) && self.original_of(pfn).is_none() && self.copy_of(pfn).is_none() {
                return Err(format!("frame {pfn:#x} is owned as a copy but no copy links it"));
            }
        }
        let alloc = space.allocator();
        for (fast, slow) in self.pairs() {
            if self.copy_of(slow) != Some(fast) {
                return Err(format!("copy link of fast frame {fast:#x} → slow {slow:#x} is one-sided"));
            }
            let (mapped, copy) = if self.mode == CopyMode::Redirect { (slow, fast) } else { (fast, slow) };
            let (Owner::Data { tenant, addr }, Owner::Copy { tenant: t2, addr: a2 }) = (space.owner(mapped), space.owner(copy)) else {
                return Err(format!(
                    "copy pair fast {fast:#x} / slow {slow:#x}: owners {:?} / {:?}, expected the mapped frame Data and the other Copy",
                    space.owner(fast),
                    space.owner(slow)
                ));
            };
            if (tenant, addr) != (t2, a2) || alloc.is_free(fast) || alloc.is_free(slow) {
                return Err(format!("copy pair fast {fast:#x} / slow {slow:#x} belongs to different pages or a free frame"));
            }
        }
        Ok(())
    }

    /// `copies` (the counters, with the frames held at the end) and `breakdown`:
    /// Rainbow's Fig. 9 and Fig. 15 from them, in cycles summed over cores, with
    /// each kind's share of execution cycles (all cores).
    fn report(&self, cores: &[Core], tlb: &TlbConfig, _core_tenants: &[u16]) -> Vec<(&'static str, serde_json::Value)> {
        let c = &self.stats;
        let sum = |f: fn(&Core) -> u64| cores.iter().map(f).sum::<u64>();
        let tlb_hits = sum(|x| x.stats.tlb_l1_hits) * tlb.l1_latency_cycles + sum(|x| x.stats.tlb_l2_hits) * tlb.l2_latency_cycles;
        let bitmap_hits = c.charged_hit_cycles;
        let bitmap_misses = c.bitmap_cache_cycles - bitmap_hits + c.bitmap_memory_cycles;
        let walks = sum(|x| x.stats.walk_cycles);
        let total = sum(|x| x.clock).max(1);
        let share = |v: u64| v as f64 / total as f64;
        let translation = serde_json::json!({
            "split_tlb_hits": tlb_hits,
            "bitmap_cache_hits": bitmap_hits,
            "bitmap_cache_misses": bitmap_misses,
            "superpage_walks": walks,
            "remapping": c.remap_cycles,
            "share_of_cycles": share(tlb_hits + bitmap_hits + bitmap_misses + walks + c.remap_cycles),
        });
        let overhead_sum = c.remap_cycles + c.bitmap_cache_cycles + c.bitmap_memory_cycles + c.copy_cycles + c.metadata_cycles + c.shootdown_cycles + c.clflush_cycles;
        let overhead = serde_json::json!({
            "remapping": c.remap_cycles,
            "bitmap_cache": c.bitmap_cache_cycles + c.bitmap_memory_cycles,
            "migration": c.copy_cycles + c.metadata_cycles,
            "shootdown": c.shootdown_cycles,
            "clflush": c.clflush_cycles,
            "share_of_cycles": share(overhead_sum),
        });
        let stats = CopyStats { copy_frames_held: self.held(), ..self.stats.clone() };
        vec![
            ("copies", serde_json::to_value(stats).unwrap_or_default()),
            ("breakdown", serde_json::json!({ "translation_cycles": translation, "overhead_cycles": overhead })),
        ]
    }
}

impl Machine<Copies> {
    /// One write of machine metadata (a pointer or a bitmap line) by the memory
    /// controller, straight to its tier (background traffic), on the executor's clock.
    fn metadata_write(&mut self, x: &mut Exec, paddr: u64) {
        let lat = self.mem.tiers.background(paddr, true, x.at);
        x.at += lat;
        let st = &mut self.redirect.stats;
        st.metadata_writes += 1;
        st.metadata_cycles += lat;
    }

    /// Sets or clears slow frame `src`'s migration bit: in the bitmap cache if it holds
    /// the superpage's bitmap (written back when evicted), else in memory.
    fn bitmap_update(&mut self, x: &mut Exec, src: u64) {
        let psn = self.redirect.superpage_of(src);
        if !self.redirect.bitmap_cache.as_mut().is_some_and(|c| c.modify(psn)) {
            let line = self.redirect.bitmap_line_of(psn);
            self.metadata_write(x, line);
        }
    }

    fn count_phases(&mut self, p: Phases) {
        let st = &mut self.redirect.stats;
        st.copy_cycles += p.copy;
        st.clflush_cycles += p.flush;
        st.shootdown_cycles += p.shootdown;
    }

    /// The page's original frame and copy (if any), by mode: Redirect copies 4 KiB
    /// pages inside slow superpages, Remap whole pages (the PTE points at the copy).
    fn copy_pair(&self, page: PageRef) -> Result<(super::space::Mapped, u64, Option<u64>, u64), MechError> {
        let m = self.mapped(page)?;
        match self.redirect.mode {
            CopyMode::Redirect if !m.huge => Err(MechError::NotInSuperpage { page }),
            CopyMode::Redirect => {
                let slow = m.pfn() + ((page.addr >> 12) & (self.space.huge_frames() - 1));
                Ok((m, slow, self.redirect.copy_of(slow), 1))
            }
            CopyMode::Remap => {
                let frames = self.space.page_bytes(m.huge) >> 12;
                match self.redirect.original_of(m.pfn()) {
                    Some(original) => Ok((m, original, Some(m.pfn()), frames)),
                    None => Ok((m, m.pfn(), None, frames)),
                }
            }
        }
    }

    /// Copies the slow page holding `page` into the fast tier, keeping the slow frame
    /// as the page's original. In Redirect mode (Rainbow) the page is the 4 KiB base
    /// page of a slow superpage: its lines are flushed (§III-F), it is copied, its
    /// first 8 bytes are overwritten with the copy's frame number and its bit set in the
    /// migration bitmap (both writes to memory); no TLB is shot down, since the
    /// superpage mapping does not change. In Remap mode (HSCC) the page (base or huge)
    /// is flushed and copied, its PTE rewritten to the copy and its translation shot
    /// down. Returns the copy's first frame and its size in bytes.
    pub(crate) fn cache_in(&mut self, x: &mut Exec, page: PageRef) -> Result<(u64, u64), MechError> {
        let (m, src, copy, frames) = self.copy_pair(page)?;
        if copy.is_some() {
            return Err(MechError::AlreadyCopied { page });
        }
        if !self.redirect.is_slow(src) {
            return Err(MechError::AlreadyThere { page, tier: self.space.tier_of(src) });
        }
        let mode = self.redirect.mode;
        if mode == CopyMode::Remap {
            self.space.fits(page.tenant, TierId::FAST, frames)?;
        }
        let dst = self.space.alloc(TierId::FAST, frames > 1, Colour::ANY)?;
        let at = PageRef::new(page.tenant, if mode == CopyMode::Redirect { page.addr & !0xfff } else { m.addr });
        for i in 0..frames {
            self.redirect.link(src + i, dst + i);
        }
        let redirect = mode == CopyMode::Redirect;
        let plan = Plan {
            kind: MoveKind::CopyIn,
            moves: vec![Move {
                page: at,
                slot: (!redirect).then_some(m.slot),
                from: src,
                to: dst,
                frames,
                flush: true,
                copy: true,
                to_is_copy: redirect,
                source: if redirect { Source::Reused } else { Source::KeepAsCopy },
                count: !redirect,
            }],
            merge: None,
            shootdowns: if redirect { Vec::new() } else { vec![Shootdown::Page { page: at, huge: m.huge }] },
            software: 0,
        };
        let phases = self.commit(x, plan);
        self.count_phases(phases);
        if redirect {
            self.metadata_write(x, src << 12);
            self.bitmap_update(x, src);
        }
        let st = &mut self.redirect.stats;
        st.copies_made += 1;
        st.bytes_in += frames << 12;
        Ok((dst, frames << 12))
    }

    /// Drops the copy of the page holding `page`: its lines are flushed; if it was
    /// written since it was made it is copied back over the original, otherwise only
    /// the original's first 8 bytes are restored (Redirect mode; Remap mode writes
    /// nothing). The bitmap bit is cleared (Redirect) or the PTE pointed back at the
    /// original (Remap), and the copy's translations are shot down on every core
    /// (Rainbow §III-F). Returns whether the copy was dirty.
    pub(crate) fn cache_out(&mut self, x: &mut Exec, page: PageRef) -> Result<bool, MechError> {
        let (m, src, copy, frames) = self.copy_pair(page)?;
        let Some(copy) = copy else { return Err(MechError::NotCopied { page }) };
        let mode = self.redirect.mode;
        let redirect = mode == CopyMode::Redirect;
        let dirty = self.redirect.is_dirty(copy, frames);
        #[cfg(test)]
        let copy_back = dirty && !self.break_migration_copy;
        #[cfg(not(test))]
        let copy_back = dirty;
        let at = PageRef::new(page.tenant, if redirect { page.addr & !0xfff } else { m.addr });
        let plan = Plan {
            kind: MoveKind::CopyBack,
            moves: vec![Move {
                page: at,
                slot: (!redirect).then_some(m.slot),
                from: copy,
                to: src,
                frames,
                flush: true,
                copy: copy_back,
                to_is_copy: false,
                source: Source::Free,
                count: !redirect,
            }],
            merge: None,
            shootdowns: vec![Shootdown::Page { page: at, huge: !redirect && m.huge }],
            software: 0,
        };
        for i in 0..frames {
            self.redirect.unlink(copy + i);
        }
        let phases = self.commit(x, plan);
        self.count_phases(phases);
        if redirect {
            // The pointer line may sit in the CPU caches (the MMU reads it through
            // them): flush it before the original's first bytes are back.
            let before = x.at;
            self.flush_line(x, src << 12);
            self.redirect.stats.clflush_cycles += x.at - before;
            if !dirty {
                self.metadata_write(x, src << 12);
            }
            self.bitmap_update(x, src);
        }
        let st = &mut self.redirect.stats;
        if dirty {
            st.dirty_drops += 1;
            st.bytes_out += frames << 12;
        } else {
            st.clean_drops += 1;
        }
        Ok(dirty)
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
