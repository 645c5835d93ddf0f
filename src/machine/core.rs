//! One core: its clock, its TLBs and its counters.

use super::psc::PscStats;
use super::tlb::{Tlb, TlbConfig};
use serde::Serialize;

/// Counters of one core.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreStats {
    pub references: u64,
    pub reads: u64,
    pub writes: u64,
    pub instructions: u64,
    /// The core's clock at the end (filled in the report).
    pub cycles: u64,
    pub base_cycles: u64,
    pub translation_cycles: u64,
    pub memory_stall_cycles: u64,
    /// Cycles the core spent running mechanisms in the foreground (its own handlers)
    /// and handling shootdown interrupts of others.
    pub mechanism_cycles: u64,
    pub fault_cycles: u64,
    pub tlb_l1_hits: u64,
    pub tlb_l2_hits: u64,
    pub tlb_misses: u64,
    /// Cycles of page walks (TLB misses), faults excluded.
    pub walk_cycles: u64,
    pub walk_references: u64,
    pub walk_memory_accesses: u64,
    pub poison_faults: u64,
    pub first_touch_faults: u64,
    /// VM exits this core (as a vCPU) took, and the cycles they cost it.
    pub vm_exits: u64,
    pub vm_exit_cycles: u64,
    /// Cycles this core waited for pages that were being moved (module `hypervisor`).
    pub migration_wait_cycles: u64,
    /// Lookups and hits of the paging-structure caches (filled in the report; absent
    /// when they are off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psc: Option<PscStats>,
}

/// One core: its clock, TLBs and counters.
pub struct Core {
    pub clock: u64,
    pub tlb: Tlb,
    pub stats: CoreStats,
    /// Fractions of a cycle carried between references (fixed point), so that
    /// fractional CPIs and 1/MLP are exact and deterministic.
    pub(crate) cpi_rem: u64,
    pub(crate) stall_rem: u64,
    pub(crate) leaf_hints: LeafHints,
}

impl Core {
    pub(crate) fn new(tlb: &TlbConfig, levels: u32, huge_shift: u32) -> Core {
        Core {
            clock: 0,
            tlb: Tlb::new(tlb, levels, huge_shift),
            stats: CoreStats::default(),
            cpi_rem: 0,
            stall_rem: 0,
            leaf_hints: LeafHints::new(huge_shift),
        }
    }

    /// Stalls the core for `cycles` of mechanism work (its own handler, or an
    /// interrupt from another executor's shootdown).
    #[inline]
    pub(crate) fn stall(&mut self, cycles: u64) {
        self.clock += cycles;
        self.stats.mechanism_cycles += cycles;
    }
}

/// Where in the host's memory the core's walks last found leaf page-table entries: per
/// huge-page-sized region (direct-mapped by region number, without tags), the host
/// address of the page-table node holding the region's base-page leaves. Host-side
/// only: the engine prefetches the leaf of a reference a few places ahead from it
/// ([`super::Machine::prefetch_far`]) in a few instructions, where finding the leaf
/// would take a walk. A hint that went stale (the node freed, the table's storage
/// moved, another region or tenant in the slot) names memory that is merely not worth
/// prefetching: a prefetch never faults, and nothing is read from it.
pub(crate) struct LeafHints {
    /// Host addresses of nodes, by region number modulo [`HINTS`] (0: none).
    nodes: Box<[usize; HINTS]>,
    huge_shift: u32,
    /// Base pages per region, less one.
    leaf_mask: usize,
}

/// Regions [`LeafHints`] holds: 8 192 regions of 2 MiB cover 16 GiB of base pages in
/// 64 KiB a core.
const HINTS: usize = 8192;

impl LeafHints {
    fn new(huge_shift: u32) -> LeafHints {
        LeafHints { nodes: Box::new([0; HINTS]), huge_shift, leaf_mask: (1 << (huge_shift - 12)) - 1 }
    }

    /// Notes that the base-page leaves of the region holding `vaddr` are in the
    /// page-table node at host address `node`.
    #[inline]
    pub(crate) fn note(&mut self, vaddr: u64, node: usize) {
        self.nodes[(vaddr >> self.huge_shift) as usize % HINTS] = node;
    }

    /// Starts loading the leaf page-table entry of `vaddr` into the host's caches, if
    /// a walk of its region (or of another region in its slot) was noted.
    #[inline(always)]
    pub(crate) fn prefetch(&self, vaddr: u64) {
        let node = self.nodes[(vaddr >> self.huge_shift) as usize % HINTS];
        if node != 0 {
            let leaf = node + ((vaddr >> 12) as usize & self.leaf_mask) * 8;
            super::tier::prefetch(leaf as *const u64);
        }
    }
}
