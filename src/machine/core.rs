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
}

impl Core {
    pub(crate) fn new(tlb: &TlbConfig, levels: u32, huge_shift: u32) -> Core {
        Core { clock: 0, tlb: Tlb::new(tlb, levels, huge_shift), stats: CoreStats::default(), cpi_rem: 0, stall_rem: 0 }
    }

    /// Stalls the core for `cycles` of mechanism work (its own handler, or an
    /// interrupt from another executor's shootdown).
    #[inline]
    pub(crate) fn stall(&mut self, cycles: u64) {
        self.clock += cycles;
        self.stats.mechanism_cycles += cycles;
    }
}
