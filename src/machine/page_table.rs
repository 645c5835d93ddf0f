//! A radix page table per address space, laid out like x86-64's so that a walk makes
//! one memory reference per level to a real physical address (the entry's place in
//! a page-table frame), which then goes through the caches.
//!
//! Geometry: level 1 (the leaf level of base pages) indexes bits `12..huge_shift`,
//! level 2 (where huge pages are leaves) the next 9 bits, and so on; the top level
//! takes every remaining bit of the virtual address space (48 bits with 4 levels, 57
//! with 5). With 2 MiB huge pages this is exactly x86-64: 4 references for a 4 KiB
//! page, 3 for a 2 MiB page. With 512 KiB huge pages level 1 has 128 entries and the
//! top level 2048.
//!
//! Nodes live in one `Vec<u64>` in chunks of 512 entries (4 KiB, one frame each), so
//! a leaf costs 8 bytes of host memory per mapped base page. A non-leaf entry holds
//! the frame of the node it points to, as the hardware's does, beside that node's
//! chunk in the store (see [`child`]): a walk finds the physical address of each
//! entry it reads in the entry above, with no lookup of its own.
//!
//! # Page numbers
//! Every huge-page-sized region of the address space gets a *region number* the first
//! time anything in it is mapped, from a counter its [`NodeFrames`] keeps (so numbers
//! can be unique across tables). A base page's [page number](PageTable::page_number)
//! is `region × base pages per huge page + its index in the region`: dense, never
//! reused, and independent of how the region is mapped, so that per-page records kept
//! in arrays survive splits, merges and migrations. The numbers sit beside the
//! level-2 nodes (4 bytes per level-2 entry), not in the entries.

/// Entry bit: the entry is valid.
pub const PRESENT: u64 = 1;
use std::ops::ControlFlow;

/// Entry bit: the page was accessed since the bit was last cleared.
pub const ACCESSED: u64 = 2;
/// Entry bit: the page was written since the bit was last cleared.
pub const DIRTY: u64 = 4;
/// Entry bit: the next TLB miss to this page raises a fault (BadgerTrap-style poisoning).
pub const POISONED: u64 = 8;
/// Entry bit: a leaf at level 2 mapping a huge page.
pub const HUGE: u64 = 16;
/// Entry bit: a migration variant left a record for this page (it is unmapped while
/// it moves, write-protected, or its new entry is not filled yet): the next TLB miss
/// to it consults the machine's record (module `hypervisor`).
pub const TRAP: u64 = 32;
/// Entry bit: an unlocked (DMA) copy of the page is in flight. Clearing the entry's
/// Dirty bit would hide a write from the copy's final check, so scanners leave it set
/// on such an entry (as Linux moves a cleared dirty bit into the page's own flags).
pub const COPYING: u64 = 64;
const FLAG_MASK: u64 = (1 << 12) - 1;
const CHUNK: usize = 512;

/// A non-leaf entry keeps the frame of the node it points to where x86-64's does, in
/// bits 12..43 (8 TiB of physical memory, the TLB's limit too), and the node's chunk
/// in the store above it (bits 43..64, two million nodes).
const CHILD_CHUNK_SHIFT: u32 = 43;
const CHILD_ADDR_MASK: u64 = (1 << CHILD_CHUNK_SHIFT) - (1 << 12);

/// The non-leaf entry pointing to the node in `chunk`, whose frame is `frame`.
#[inline]
fn pointer(chunk: usize, frame: u64) -> u64 {
    assert!(chunk < 1 << (64 - CHILD_CHUNK_SHIFT) && frame < 1 << (CHILD_CHUNK_SHIFT - 12), "page-table node {chunk} in frame {frame:#x} beyond a pointer's reach");
    (chunk as u64) << CHILD_CHUNK_SHIFT | frame << 12 | PRESENT
}

/// The first slot of the node a non-leaf entry `e` points to, and that node's
/// physical address.
#[inline(always)]
fn child(e: u64) -> (usize, u64) {
    ((e >> CHILD_CHUNK_SHIFT) as usize * CHUNK, e & CHILD_ADDR_MASK)
}

/// The physical addresses of the entries one walk read, top level first.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkPath {
    pub addrs: [u64; 5],
    pub len: usize,
}

impl WalkPath {
    pub fn as_slice(&self) -> &[u64] {
        &self.addrs[..self.len]
    }
}

/// A leaf found by a walk: its index in the entry store and its page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub slot: usize,
    pub huge: bool,
}

/// A leaf met by [`PageTable::for_each_leaf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafAt {
    /// Virtual (managed-space) address of the page's first byte.
    pub addr: u64,
    /// Index in the entry store.
    pub slot: usize,
    /// Page number of the page's first base page (see the module documentation).
    pub page: u64,
    pub huge: bool,
}

#[derive(Clone, Debug)]
pub struct PageTable {
    entries: Vec<u64>,
    /// Frame number holding each 512-entry chunk.
    chunk_frame: Vec<u64>,
    free_chunks: Vec<u32>,
    levels: u32,
    huge_shift: u32,
    va_bits: u32,
    /// Per level (index = level): the lowest virtual-address bit it indexes and the
    /// mask of its index, from [`PageTable::shift`] and [`PageTable::bits`] once, so
    /// that a walk's index is a shift and a mask.
    level_index: [(u32, u64); MAX_LEVELS + 1],
    root_chunks: usize,
    /// The table's layout, which its walks take as constants when it is x86-64's.
    layout: Layout,
    /// Number of page-table frames in use (nodes × chunks).
    frames_in_use: u64,
    /// Per chunk: where its entries' region numbers start in `regions` when it is a
    /// level-2 node, else [`NO_REGIONS`].
    region_base: Vec<u32>,
    /// Region number + 1 of every level-2 entry (0 = nothing mapped there yet).
    regions: Vec<u32>,
}

const NO_REGIONS: u32 = u32::MAX;

/// The layout of a table: x86-64's with 2 MiB huge pages (every level indexes 9 bits
/// from bit 12 + 9 × (level − 1), the root one chunk), with 4 or 5 levels, or another
/// (huge pages of another size), whose walks load each level's shift and mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    X86Four,
    X86Five,
    Other,
}

/// Most levels a table has (the configuration allows 4 or 5).
const MAX_LEVELS: usize = 5;

/// A page-table frame allocator: returns a frame number or `None` when memory is full.
/// It also numbers regions (see the module documentation).
pub trait NodeFrames {
    fn alloc_node_frame(&mut self) -> Option<u64>;
    fn free_node_frame(&mut self, frame: u64);
    /// A new region number for the huge-page-sized region starting at address `base`.
    fn new_region(&mut self, base: u64) -> u32;
}

impl PageTable {
    /// Creates an empty table with `levels` levels (4 or 5) and huge pages of
    /// `1 << huge_shift` bytes; the root's frames come from `frames`.
    pub fn new(levels: u32, huge_shift: u32, frames: &mut impl NodeFrames) -> Option<PageTable> {
        assert!(levels == 4 || levels == 5, "a page table of {levels} levels");
        let va_bits = super::PageTableConfig { levels, ..Default::default() }.va_bits();
        let mut pt = PageTable {
            entries: Vec::new(),
            chunk_frame: Vec::new(),
            free_chunks: Vec::new(),
            levels,
            huge_shift,
            va_bits,
            level_index: [(0, 0); MAX_LEVELS + 1],
            root_chunks: 0,
            layout: match (levels, huge_shift) {
                (4, 21) => Layout::X86Four,
                (5, 21) => Layout::X86Five,
                _ => Layout::Other,
            },
            frames_in_use: 0,
            region_base: Vec::new(),
            regions: Vec::new(),
        };
        for level in 1..=levels {
            pt.level_index[level as usize] = (pt.shift(level), (1 << pt.bits(level)) - 1);
        }
        let top_entries = 1usize << pt.bits(levels);
        pt.root_chunks = top_entries.div_ceil(CHUNK);
        for _ in 0..pt.root_chunks {
            pt.new_chunk(levels, frames)?;
        }
        Some(pt)
    }

    pub fn va_bits(&self) -> u32 {
        self.va_bits
    }

    pub fn huge_shift(&self) -> u32 {
        self.huge_shift
    }

    pub fn frames_in_use(&self) -> u64 {
        self.frames_in_use
    }

    /// Lowest virtual-address bit indexed by `level` (1 = leaf level of base pages).
    #[inline]
    fn shift(&self, level: u32) -> u32 {
        if level == 1 {
            12
        } else {
            self.huge_shift + 9 * (level - 2)
        }
    }

    /// Index bits of `level`.
    #[inline]
    fn bits(&self, level: u32) -> u32 {
        if level == self.levels {
            self.va_bits - self.shift(level)
        } else if level == 1 {
            self.huge_shift - 12
        } else {
            9
        }
    }

    #[inline]
    fn index(&self, va: u64, level: u32) -> usize {
        let (shift, mask) = self.level_index[level as usize];
        ((va >> shift) & mask) as usize
    }

    /// Physical address of the entry at `slot`.
    #[inline]
    pub fn entry_paddr(&self, slot: usize) -> u64 {
        self.chunk_frame[slot / CHUNK] << 12 | ((slot % CHUNK) as u64) << 3
    }

    /// A new node for `level`.
    fn new_chunk(&mut self, level: u32, frames: &mut impl NodeFrames) -> Option<usize> {
        let frame = frames.alloc_node_frame()?;
        self.frames_in_use += 1;
        let c = match self.free_chunks.pop() {
            Some(c) => {
                self.chunk_frame[c as usize] = frame;
                self.entries[c as usize * CHUNK..][..CHUNK].fill(0);
                c as usize
            }
            None => {
                self.chunk_frame.push(frame);
                self.region_base.push(NO_REGIONS);
                self.entries.resize(self.entries.len() + CHUNK, 0);
                self.chunk_frame.len() - 1
            }
        };
        // Only level-1 nodes are ever freed, and they have no region numbers.
        self.region_base[c] = if level == 2 {
            self.regions.resize(self.regions.len() + CHUNK, 0);
            (self.regions.len() - CHUNK) as u32
        } else {
            NO_REGIONS
        };
        Some(c)
    }

    /// Numbers the region holding `va`, under level-2 entry `index` of level-2 node
    /// `chunk`, if it has no number yet.
    fn number_region(&mut self, chunk: usize, index: usize, va: u64, frames: &mut impl NodeFrames) {
        let r = &mut self.regions[self.region_base[chunk] as usize + index];
        if *r == 0 {
            *r = frames.new_region(va >> self.huge_shift << self.huge_shift) + 1;
        }
    }

    /// Base pages per huge-page-sized region.
    #[inline]
    fn region_pages(&self) -> u64 {
        1 << (self.huge_shift - 12)
    }

    /// The first page number of the region under level-2 entry `index` of node
    /// `chunk`, if it is numbered.
    #[inline]
    fn region_first_page(&self, chunk: usize, index: usize) -> Option<u64> {
        match self.regions[self.region_base[chunk] as usize + index] {
            0 => None,
            r => Some((r as u64 - 1) * self.region_pages()),
        }
    }

    /// The frame of the table the level-`level` entry covering `va` points to, if that
    /// entry and the ones above it are present and it is not a leaf (what a
    /// paging-structure cache holds for it).
    pub fn next_table(&self, va: u64, level: u32) -> Option<u64> {
        let mut base = 0usize;
        let mut l = self.levels;
        loop {
            let e = self.entries[base + self.index(va, l)];
            if e & PRESENT == 0 || e & HUGE != 0 || l == 1 {
                return None;
            }
            let (first, addr) = child(e);
            if l == level {
                return Some(addr >> 12);
            }
            base = first;
            l -= 1;
        }
    }

    /// The first slot of the level-2 node on the path to `va`, if the levels above
    /// it are present.
    fn level2_node(&self, va: u64) -> Option<usize> {
        let mut base = 0usize;
        let mut level = self.levels;
        while level > 2 {
            let e = self.entries[base + self.index(va, level)];
            if e & PRESENT == 0 {
                return None;
            }
            base = child(e).0;
            level -= 1;
        }
        Some(base)
    }

    /// The page number of the base page holding `va` (see the module documentation),
    /// if anything in its region was ever mapped.
    pub fn page_number(&self, va: u64) -> Option<u64> {
        let base = self.level2_node(va)?;
        let first = self.region_first_page(base / CHUNK, self.index(va, 2))?;
        Some(first + ((va >> 12) & (self.region_pages() - 1)))
    }

    /// The frame numbers of the table's nodes in use, in no particular order.
    pub fn node_frames(&self) -> Vec<u64> {
        let mut free = vec![false; self.chunk_frame.len()];
        for &c in &self.free_chunks {
            free[c as usize] = true;
        }
        self.chunk_frame.iter().zip(&free).filter(|(_, &f)| !f).map(|(&frame, _)| frame).collect()
    }

    fn free_chunk(&mut self, chunk: usize, frames: &mut impl NodeFrames) {
        frames.free_node_frame(self.chunk_frame[chunk]);
        self.frames_in_use -= 1;
        self.free_chunks.push(chunk as u32);
    }

    /// Walks to the leaf mapping `va`, recording the physical address of every entry
    /// read in `path` (when given; its length only when the page is mapped). Returns the
    /// leaf if the page is mapped.
    #[inline]
    pub fn walk(&self, va: u64, path: Option<&mut WalkPath>) -> Option<Leaf> {
        self.walk_inline(va, path)
    }

    /// [`PageTable::walk`], always inlined (into the TLB miss).
    #[inline(always)]
    fn walk_inline(&self, va: u64, path: Option<&mut WalkPath>) -> Option<Leaf> {
        match self.layout {
            Layout::X86Four => self.walk_levels::<4, true>(va, path),
            Layout::X86Five => self.walk_levels::<5, true>(va, path),
            Layout::Other if self.levels == 4 => self.walk_levels::<4, false>(va, path),
            Layout::Other => self.walk_levels::<5, false>(va, path),
        }
    }

    /// [`PageTable::walk`] of a table of `L` levels: the levels unrolled, each index a
    /// shift and a mask, constants in x86-64's layout (`X86`), else prepared when the
    /// table was built. The physical address of each entry read after the root's comes
    /// from the entry above it.
    #[inline(always)]
    fn walk_levels<const L: usize, const X86: bool>(&self, va: u64, mut path: Option<&mut WalkPath>) -> Option<Leaf> {
        let mut base = 0usize; // the root occupies the first chunks
        let mut node = 0; // the physical address of the node read
        for read in 0..L {
            let level = L - read;
            let (shift, mask) = if X86 { (12 + 9 * (level as u32 - 1), 511) } else { self.level_index[level] };
            let slot = base + ((va >> shift) & mask) as usize;
            if read == 0 {
                node = self.chunk_frame[slot / CHUNK] << 12;
            }
            if let Some(p) = path.as_deref_mut() {
                p.addrs[read] = node | ((slot % CHUNK) as u64) << 3;
            }
            let e = self.entries[slot];
            if e & PRESENT == 0 {
                return None;
            }
            if level == 1 || e & HUGE != 0 {
                // Huge leaves sit at level 2: the leaf says how many entries were read,
                // so that the walk's exits share one path.
                let huge = e & HUGE != 0;
                if let Some(p) = path {
                    p.len = L - huge as usize;
                }
                return Some(Leaf { slot, huge });
            }
            (base, node) = child(e);
        }
        unreachable!("level 1 holds leaves only")
    }

    /// [`PageTable::walk`] as the MMU makes it on a TLB miss: records the physical
    /// addresses of the entries read in `path` and sets the leaf's Accessed bit, and its
    /// Dirty bit for a `write`. Returns the leaf, its entry after the update, and whether
    /// the update set the Dirty bit; `None` if the page is not mapped.
    #[inline(always)]
    pub fn walk_marking(&mut self, va: u64, path: &mut WalkPath, write: bool) -> Option<(Leaf, u64, bool)> {
        let leaf = self.walk_inline(va, Some(path))?;
        let e = &mut self.entries[leaf.slot];
        let newly_dirty = write && *e & DIRTY == 0;
        *e |= ACCESSED | if write { DIRTY } else { 0 };
        Some((leaf, *e, newly_dirty))
    }

    /// The host address of the node holding the entry at `slot` (a hint for host-side
    /// prefetches: valid until the table next grows).
    #[inline]
    pub fn node_host_addr(&self, slot: usize) -> usize {
        self.entries.as_ptr().wrapping_add(slot & !(CHUNK - 1)) as usize
    }

    /// The slot of the level-`stop` entry covering `va`, creating missing nodes above it.
    /// Numbers the region it passes at level 2.
    fn slot_at(&mut self, va: u64, stop: u32, frames: &mut impl NodeFrames) -> Option<usize> {
        let mut base = 0usize;
        let mut level = self.levels;
        loop {
            let slot = base + self.index(va, level);
            if level == 2 {
                self.number_region(base / CHUNK, self.index(va, 2), va, frames);
            }
            if level == stop {
                return Some(slot);
            }
            let e = self.entries[slot];
            debug_assert!(e & HUGE == 0, "descending through a huge leaf");
            base = if e & PRESENT == 0 {
                let c = self.new_chunk(level - 1, frames)?;
                self.entries[slot] = pointer(c, self.chunk_frame[c]);
                c * CHUNK
            } else {
                child(e).0
            };
            level -= 1;
        }
    }

    /// Maps the page holding `va` (a base page, or the huge page when `huge`) to frame
    /// `pfn` with the given extra flag bits. Returns the leaf slot, or `None` when no
    /// frame is left for a new node. The page must not be mapped.
    pub fn map(&mut self, va: u64, pfn: u64, huge: bool, flags: u64, frames: &mut impl NodeFrames) -> Option<usize> {
        let slot = self.slot_at(va, if huge { 2 } else { 1 }, frames)?;
        debug_assert!(self.entries[slot] & PRESENT == 0, "mapping over a present entry");
        self.entries[slot] = pfn << 12 | PRESENT | if huge { HUGE } else { 0 } | (flags & FLAG_MASK);
        Some(slot)
    }

    /// The entry word at `slot`.
    #[inline]
    pub fn entry(&self, slot: usize) -> u64 {
        self.entries[slot]
    }

    #[inline]
    pub fn entry_mut(&mut self, slot: usize) -> &mut u64 {
        &mut self.entries[slot]
    }

    /// Removes the leaf at `slot`; returns its old entry.
    pub fn unmap(&mut self, slot: usize) -> u64 {
        std::mem::take(&mut self.entries[slot])
    }

    /// Replaces the huge leaf covering `va` by a level-1 node of base-page leaves that
    /// map the same frames with the same flags. Returns the new node's first slot, or
    /// `None` when no frame is left for the node.
    pub fn split(&mut self, va: u64, frames: &mut impl NodeFrames) -> Option<usize> {
        let slot = self.walk(va, None).filter(|l| l.huge)?.slot;
        let e = self.entries[slot];
        let chunk = self.new_chunk(1, frames)?;
        let base_pfn = e >> 12;
        let flags = e & FLAG_MASK & !HUGE;
        let n = 1usize << (self.huge_shift - 12);
        for i in 0..n {
            self.entries[chunk * CHUNK + i] = (base_pfn + i as u64) << 12 | flags;
        }
        self.entries[slot] = pointer(chunk, self.chunk_frame[chunk]);
        Some(chunk * CHUNK)
    }

    /// The level-1 node under the huge-page-sized region holding `va`, if the region is
    /// mapped with base pages: (slot of the level-2 entry, first leaf slot).
    pub fn small_node(&self, va: u64) -> Option<(usize, usize)> {
        let slot = self.level2_node(va)? + self.index(va, 2);
        let e = self.entries[slot];
        (e & PRESENT != 0 && e & HUGE == 0).then(|| (slot, child(e).0))
    }

    /// Replaces the level-1 node under the region holding `va` by one huge leaf
    /// mapping `huge_pfn` with `flags`, freeing the node's frame. The caller has
    /// already moved the data.
    pub fn merge(&mut self, va: u64, huge_pfn: u64, flags: u64, frames: &mut impl NodeFrames) {
        let (slot, first) = self.small_node(va).expect("merge of a region without a base-page node");
        self.free_chunk(first / CHUNK, frames);
        self.entries[slot] = huge_pfn << 12 | PRESENT | HUGE | (flags & FLAG_MASK);
    }

    /// Calls `f(leaf)` for every present leaf whose page starts in [`start`, `end`), in
    /// address order, until `f` returns `Break`. Returns the address after the last
    /// page visited when `f` stopped the walk, or `None` when it went to the end.
    pub fn for_each_leaf(&self, start: u64, end: u64, f: &mut impl FnMut(LeafAt) -> ControlFlow<()>) -> Option<u64> {
        match self.visit(0, self.levels, 0, 0, start, end, f) {
            ControlFlow::Break(next) => Some(next),
            ControlFlow::Continue(()) => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn visit(
        &self,
        base: usize,
        level: u32,
        va_base: u64,
        first_page: u64,
        start: u64,
        end: u64,
        f: &mut impl FnMut(LeafAt) -> ControlFlow<()>,
    ) -> ControlFlow<u64> {
        let shift = self.shift(level);
        let span = 1u64 << shift;
        let n = 1usize << self.bits(level);
        for i in 0..n {
            let va = va_base + (i as u64) * span;
            if va >= end {
                break;
            }
            if va + span <= start {
                continue;
            }
            let slot = base + i;
            let e = self.entries[slot];
            if e & PRESENT == 0 {
                continue;
            }
            let page = match level {
                2 => self.region_first_page(base / CHUNK, i).unwrap_or(0),
                1 => first_page + i as u64,
                _ => 0,
            };
            if level == 1 || e & HUGE != 0 {
                if va >= start && f(LeafAt { addr: va, slot, page, huge: e & HUGE != 0 }).is_break() {
                    return ControlFlow::Break(va + span);
                }
            } else {
                self.visit(child(e).0, level - 1, va, page, start, end, f)?;
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out frames 1000, 1001, …, records frees, numbers regions 0, 1, ….
    struct Frames {
        next: u64,
        freed: Vec<u64>,
        regions: u32,
    }
    impl NodeFrames for Frames {
        fn alloc_node_frame(&mut self) -> Option<u64> {
            self.next += 1;
            Some(self.next - 1)
        }
        fn free_node_frame(&mut self, frame: u64) {
            self.freed.push(frame);
        }
        fn new_region(&mut self, _base: u64) -> u32 {
            self.regions += 1;
            self.regions - 1
        }
    }

    fn frames(next: u64) -> Frames {
        Frames { next, freed: vec![], regions: 0 }
    }

    #[test]
    fn four_level_walk_reads_one_entry_per_level() {
        let mut fr = frames(1000);
        let mut pt = PageTable::new(4, 21, &mut fr).unwrap();
        // Root got frame 1000. va = PML4 index 1, PDPT 2, PD 3, PT 4, offset 0x10.
        let va: u64 = 1 << 39 | 2 << 30 | 3 << 21 | 4 << 12 | 0x10;
        pt.map(va, 77, false, 0, &mut fr).unwrap();
        // Three new nodes: PDPT=1001, PD=1002, PT=1003.
        let mut path = WalkPath::default();
        let leaf = pt.walk(va, Some(&mut path)).unwrap();
        assert!(!leaf.huge);
        assert_eq!(pt.entry(leaf.slot) >> 12, 77);
        assert_eq!(path.as_slice(), &[1000 << 12 | 8, 1001 << 12 | 16, 1002 << 12 | 24, 1003 << 12 | 32]);
        assert_eq!(pt.frames_in_use(), 4);
    }

    #[test]
    fn huge_pages_walk_three_levels_and_split_and_merge() {
        let mut fr = frames(0);
        let mut pt = PageTable::new(4, 21, &mut fr).unwrap();
        let va = 5u64 << 21;
        pt.map(va, 512, true, ACCESSED, &mut fr).unwrap();
        let mut path = WalkPath::default();
        let leaf = pt.walk(va + 0x1234, Some(&mut path)).unwrap();
        assert!(leaf.huge);
        assert_eq!(path.len, 3);
        // Split: the 4 KiB page at offset 3 maps frame 512 + 3 and keeps the accessed bit.
        pt.split(va, &mut fr).unwrap();
        let leaf = pt.walk(va + 3 * 4096, None).unwrap();
        assert!(!leaf.huge);
        assert_eq!(pt.entry(leaf.slot) >> 12, 515);
        assert!(pt.entry(leaf.slot) & ACCESSED != 0);
        let mut count = 0;
        pt.for_each_leaf(va, va + (2 << 20), &mut |_| {
            count += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(count, 512);
        // Merge back to a huge page at another frame: the level-1 node's frame is freed.
        let node_frames = pt.frames_in_use();
        pt.merge(va, 4096, 0, &mut fr);
        assert_eq!(pt.frames_in_use(), node_frames - 1);
        assert_eq!(fr.freed.len(), 1);
        assert_eq!(pt.entry(pt.walk(va, None).unwrap().slot) >> 12, 4096);
    }

    #[test]
    fn geometry_with_512k_huge_pages_and_five_levels() {
        let mut fr = frames(0);
        // 512 KiB pages: level 1 has 2^7 entries, the top level of 4 levels 2^11 (4 chunks).
        let mut pt = PageTable::new(4, 19, &mut fr).unwrap();
        assert_eq!(pt.frames_in_use(), 4);
        let va = (1u64 << 47) - (512 << 10);
        pt.map(va, 128, true, 0, &mut fr).unwrap();
        let mut path = WalkPath::default();
        assert!(pt.walk(va, Some(&mut path)).unwrap().huge);
        assert_eq!(path.len, 3);
        let mut pt5 = PageTable::new(5, 21, &mut fr).unwrap();
        let va = (1u64 << 56) + 4096;
        pt5.map(va, 9, false, 0, &mut fr).unwrap();
        let mut path = WalkPath::default();
        pt5.walk(va, Some(&mut path)).unwrap();
        assert_eq!(path.len, 5);
    }

    #[test]
    fn page_numbers_are_dense_and_survive_split_and_merge() {
        let mut fr = frames(0);
        let mut pt = PageTable::new(4, 21, &mut fr).unwrap();
        // Region 0 is the first one mapped (a huge page at 8 MiB), region 1 the next
        // (a base page far away), whatever their addresses.
        let huge = 4u64 << 21;
        let far = 1u64 << 40 | 7 << 12;
        pt.map(huge, 1024, true, 0, &mut fr).unwrap();
        pt.map(far, 5, false, 0, &mut fr).unwrap();
        assert_eq!(pt.page_number(huge + 3 * 4096 + 17), Some(3));
        assert_eq!(pt.page_number(far), Some(512 + 7));
        assert_eq!(pt.page_number(far - 4096), Some(512 + 6), "unmapped page of a numbered region");
        assert_eq!(pt.page_number(1 << 30), None, "nothing mapped there");
        pt.split(huge, &mut fr).unwrap();
        assert_eq!(pt.page_number(huge + 3 * 4096), Some(3));
        let mut seen = Vec::new();
        pt.for_each_leaf(0, u64::MAX, &mut |l| {
            seen.push((l.page, l.huge));
            ControlFlow::Continue(())
        });
        assert_eq!(seen.len(), 513);
        assert_eq!((seen[3], seen[512]), ((3, false), (519, false)));
        pt.merge(huge, 2048, 0, &mut fr);
        assert_eq!(pt.page_number(huge + 100 * 4096), Some(100));
        // A visit stopped early says where to resume.
        let mut n = 0;
        let next = pt.for_each_leaf(0, u64::MAX, &mut |_| {
            n += 1;
            ControlFlow::Break(())
        });
        assert_eq!((n, next), (1, Some(huge + (2 << 20))));
        let mut rest = Vec::new();
        pt.for_each_leaf(next.unwrap(), u64::MAX, &mut |l| {
            rest.push(l.page);
            ControlFlow::Continue(())
        });
        assert_eq!(rest, vec![519]);
    }
}
