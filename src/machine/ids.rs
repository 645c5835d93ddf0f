//! The names the machine and every layer above it give to tiers and pages.

use serde::Serialize;
use std::fmt;

/// A memory tier, fastest first: [`TierId::FAST`] (`machine.tiers.fast`),
/// [`TierId::SLOW`] (`machine.tiers.slow`), then the tiers of `machine.tiers.extra`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TierId(pub u8);

impl TierId {
    /// The fast tier (DRAM, HBM).
    pub const FAST: TierId = TierId(0);
    /// The slow tier (NVM, CXL memory).
    pub const SLOW: TierId = TierId(1);

    /// Position of the tier, for arrays with one entry per tier.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The first `n` tiers, fastest first.
    pub fn first(n: usize) -> impl Iterator<Item = TierId> {
        (0..n.min(u8::MAX as usize) as u8).map(TierId)
    }

    /// The tier holding frame `pfn`, given each tier's [first frame, one past the
    /// last) in order (`pfn` must be below the last tier's end).
    #[inline]
    pub(crate) fn holding(bounds: &[(u64, u64)], pfn: u64) -> TierId {
        let mut t = 0;
        while pfn >= bounds[t].1 {
            t += 1;
        }
        TierId(t as u8)
    }
}

impl fmt::Display for TierId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TierId::FAST => f.write_str("the fast tier"),
            TierId::SLOW => f.write_str("the slow tier"),
            TierId(n) => write!(f, "tier {n}"),
        }
    }
}

/// A page as every mechanism names it: its tenant and any address inside it of the
/// tenant's *managed space* (the virtual address space of a process, the
/// guest-physical address space of a VM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageRef {
    pub tenant: u16,
    pub addr: u64,
}

impl PageRef {
    pub fn new(tenant: u16, addr: u64) -> PageRef {
        PageRef { tenant, addr }
    }
}

impl fmt::Display for PageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {:#x} of tenant {}", self.addr, self.tenant)
    }
}
