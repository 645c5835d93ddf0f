//! The reverse map: who owns each physical frame, in 4 bytes per frame.

/// Owner of a physical frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    Free,
    /// A data page: tenant and the managed-space address of this base frame's page.
    Data { tenant: u16, addr: u64 },
    /// A page-table node frame.
    PageTable,
    /// The second frame of a page kept in two tiers (see `machine::copies`): Rainbow's
    /// fast copy of a slow page, or HSCC's slow original of a page remapped to its copy.
    Copy { tenant: u16, addr: u64 },
    /// Machine metadata in memory (Rainbow's migration bitmap).
    Metadata,
}

// One 32-bit word per frame. 0, 1 and 2 are the owners without a page; a data page or
// a copy is stored by the page number of its base page (see `page_table`'s module
// documentation) as `FIRST_PAGE_WORD + 2 × number + copy`, so numbers below 2^31 − 2
// (8 TiB of managed space ever mapped) fit. The region table turns a number back into
// the tenant and the address.
const FREE: u32 = 0;
const TABLE: u32 = 1;
const METADATA: u32 = 2;
const FIRST_PAGE_WORD: u32 = 3;

/// The managed-space region a region number stands for.
#[derive(Clone, Copy, Debug)]
struct Region {
    tenant: u16,
    /// Address of the region's first byte.
    base: u64,
}

/// One owner word per frame of every tier, and the table of numbered regions: 4 bytes
/// per frame, plus 16 per huge-page-sized region ever mapped.
pub struct ReverseMap {
    words: Vec<u32>,
    regions: Vec<Region>,
    /// log2 of the base pages per region.
    region_pages_shift: u32,
}

impl ReverseMap {
    /// A map of `frames` free frames, for regions of `1 << huge_shift` bytes.
    pub fn new(frames: u64, huge_shift: u32) -> ReverseMap {
        ReverseMap { words: vec![FREE; frames as usize], regions: Vec::new(), region_pages_shift: huge_shift - 12 }
    }

    /// Frames the map covers.
    pub fn frames(&self) -> u64 {
        self.words.len() as u64
    }

    /// Numbers the region of `tenant`'s managed space that starts at `base`; numbers
    /// are handed out in order from 0.
    pub fn new_region(&mut self, tenant: u16, base: u64) -> u32 {
        self.regions.push(Region { tenant, base });
        self.regions.len() as u32 - 1
    }

    /// The owner of frame `pfn` (`Free` beyond the map).
    #[inline]
    pub fn owner(&self, pfn: u64) -> Owner {
        match self.words.get(pfn as usize).copied().unwrap_or(FREE) {
            FREE => Owner::Free,
            TABLE => Owner::PageTable,
            METADATA => Owner::Metadata,
            w => {
                let number = ((w - FIRST_PAGE_WORD) >> 1) as u64;
                let region = self.regions[(number >> self.region_pages_shift) as usize];
                let addr = region.base + ((number & ((1 << self.region_pages_shift) - 1)) << 12);
                let tenant = region.tenant;
                if (w - FIRST_PAGE_WORD) & 1 == 0 {
                    Owner::Data { tenant, addr }
                } else {
                    Owner::Copy { tenant, addr }
                }
            }
        }
    }

    /// Marks frame `pfn` free.
    pub fn set_free(&mut self, pfn: u64) {
        self.words[pfn as usize] = FREE;
    }

    /// Marks frame `pfn` a page-table node.
    pub fn set_page_table(&mut self, pfn: u64) {
        self.words[pfn as usize] = TABLE;
    }

    /// Marks frame `pfn` machine metadata.
    pub fn set_metadata(&mut self, pfn: u64) {
        self.words[pfn as usize] = METADATA;
    }

    /// Records that frame `pfn` holds base page `number` (see `page_table`'s module
    /// documentation), as its data or, with `copy`, as its second copy.
    ///
    /// # Panics
    /// If the page number does not fit in a word (more than 8 TiB of managed
    /// space mapped over the run).
    pub fn set_page(&mut self, pfn: u64, number: u64, copy: bool) {
        let word = number.checked_mul(2).and_then(|n| u32::try_from(n).ok()).and_then(|n| n.checked_add(FIRST_PAGE_WORD + copy as u32));
        self.words[pfn as usize] = word.unwrap_or_else(|| panic!("reverse map: page number {number} does not fit in the reverse map's 32-bit words (more than 8 TiB of managed space mapped)"));
    }

    /// Every frame with its owner, for invariant checks.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Owner)> + '_ {
        (0..self.frames()).map(|pfn| (pfn, self.owner(pfn)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip() {
        // 2 MiB regions: 512 pages each. Region 0 is tenant 3's at 0x7f00_0000_0000,
        // region 1 tenant 65535's at 0; page numbers are region × 512 + index.
        let mut m = ReverseMap::new(8, 21);
        assert_eq!(m.new_region(3, 0x7f00_0000_0000), 0);
        assert_eq!(m.new_region(65535, 0), 1);
        let number = |tenant: u16, addr: u64| if tenant == 3 { (addr - 0x7f00_0000_0000) >> 12 } else { 512 + (addr >> 12) };
        let cases = [
            Owner::Data { tenant: 3, addr: 0x7f00_0000_5000 },
            Owner::Copy { tenant: 65535, addr: 0x1000 },
            Owner::PageTable,
            Owner::Metadata,
            Owner::Free,
            Owner::Data { tenant: 65535, addr: 0x1f_f000 },
            Owner::Copy { tenant: 3, addr: 0x7f00_0000_0000 },
        ];
        for (i, &o) in cases.iter().enumerate() {
            let pfn = i as u64;
            match o {
                Owner::Free => m.set_free(pfn),
                Owner::PageTable => m.set_page_table(pfn),
                Owner::Metadata => m.set_metadata(pfn),
                Owner::Data { tenant, addr } => m.set_page(pfn, number(tenant, addr), false),
                Owner::Copy { tenant, addr } => m.set_page(pfn, number(tenant, addr), true),
            }
        }
        for (i, &o) in cases.iter().enumerate() {
            assert_eq!(m.owner(i as u64), o);
        }
        // The words are what the layout says: 3 + 2 × number + copy.
        assert_eq!(m.words[0], 3 + 2 * 5);
        assert_eq!(m.words[1], 3 + 2 * 513 + 1);
        assert_eq!(m.words[5], 3 + 2 * 1023);
        assert_eq!(m.owner(100), Owner::Free, "beyond the map");
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn page_numbers_beyond_a_word_are_refused() {
        let mut m = ReverseMap::new(1, 21);
        m.new_region(0, 0);
        m.set_page(0, 1 << 31, false);
    }
}
