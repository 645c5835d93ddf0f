//! The reverse map: who owns each physical frame, in 8 bytes per frame.

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

// Two tag bits, then the tenant (16 bits) and the managed-space frame number (45 bits).
const TAG_SHIFT: u32 = 62;
const DATA: u64 = 1 << TAG_SHIFT;
const TABLE: u64 = 2 << TAG_SHIFT;
const METADATA: u64 = 2 << TAG_SHIFT | 1;
const COPY: u64 = 3 << TAG_SHIFT;
const TENANT_SHIFT: u32 = 45;

#[inline]
fn encode(tag: u64, tenant: u16, addr: u64) -> u64 {
    tag | (tenant as u64) << TENANT_SHIFT | addr >> 12
}

fn decode(w: u64) -> Owner {
    let tenant = ((w >> TENANT_SHIFT) & 0xffff) as u16;
    let addr = (w & ((1 << TENANT_SHIFT) - 1)) << 12;
    match w >> TAG_SHIFT {
        0 => Owner::Free,
        1 => Owner::Data { tenant, addr },
        2 if w == METADATA => Owner::Metadata,
        2 => Owner::PageTable,
        _ => Owner::Copy { tenant, addr },
    }
}

/// One owner word per frame of every tier.
pub struct ReverseMap {
    words: Vec<u64>,
}

impl ReverseMap {
    /// A map of `frames` free frames.
    pub fn new(frames: u64) -> ReverseMap {
        ReverseMap { words: vec![0; frames as usize] }
    }

    /// Frames the map covers.
    pub fn frames(&self) -> u64 {
        self.words.len() as u64
    }

    /// The owner of frame `pfn` (`Free` beyond the map).
    #[inline]
    pub fn owner(&self, pfn: u64) -> Owner {
        self.words.get(pfn as usize).map_or(Owner::Free, |&w| decode(w))
    }

    pub fn set(&mut self, pfn: u64, owner: Owner) {
        self.words[pfn as usize] = match owner {
            Owner::Free => 0,
            Owner::Data { tenant, addr } => encode(DATA, tenant, addr),
            Owner::Copy { tenant, addr } => encode(COPY, tenant, addr),
            Owner::PageTable => TABLE,
            Owner::Metadata => METADATA,
        };
    }

    /// Every frame with its owner, for invariant checks.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Owner)> + '_ {
        self.words.iter().enumerate().map(|(i, &w)| (i as u64, decode(w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip() {
        let mut m = ReverseMap::new(8);
        let cases = [
            Owner::Data { tenant: 3, addr: 0x7f00_0000_5000 },
            Owner::Copy { tenant: 65535, addr: 0x1000 },
            Owner::PageTable,
            Owner::Metadata,
            Owner::Free,
        ];
        for (i, &o) in cases.iter().enumerate() {
            m.set(i as u64, o);
        }
        for (i, &o) in cases.iter().enumerate() {
            assert_eq!(m.owner(i as u64), o);
        }
        assert_eq!(m.owner(100), Owner::Free, "beyond the map");
    }
}
