//! Costs of the operating-system and hardware mechanisms that policies invoke.
//! Each mechanism charges these on top of the memory traffic it generates (copies,
//! write-backs, page-table references), which the tiers time and count themselves.

use serde::{Deserialize, Serialize};

/// Fixed costs of mechanisms, in the units their names say.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CostConfig {
    /// Cycles the initiating core spends on a TLB shootdown of one page (local
    /// invalidation and IPI round trip). SpAR Table 2: light-weight TLB invalidation,
    /// 300 cycles.
    pub shootdown_cycles: u64,
    /// Cycles every other core loses handling the shootdown IPI (same source as above).
    pub shootdown_remote_cycles: u64,
    /// Cycles per cache line flushed with clflush (an assumption: no paper gives it;
    /// Rainbow §III-F models clflush without stating its latency). Dirty lines also
    /// cost their write-back to memory.
    pub clflush_cycles_per_line: u64,
    /// Software work of migrating one page apart from the copy (unmap, rmap walk,
    /// locking, remap), in ns. memos §5 measures ≈3 µs for a 4 KiB CPU migration; with
    /// the copy itself timed by the tiers (≈0.4–1 µs), 2 µs remain for software.
    pub migrate_software_ns: f64,
    /// Software work of splitting a huge page into base pages (besides writing the new
    /// page-table node, which goes through the caches), in ns (assumption).
    pub split_ns: f64,
    /// Software work of collapsing base pages into a huge page (besides copies), in ns
    /// (assumption, khugepaged-like).
    pub merge_ns: f64,
    /// Cycles per page-table entry examined by an Accessed/Dirty-bit scan, besides the
    /// reference to the entry itself (assumption).
    pub scan_pte_cycles: u64,
    /// Software work of one reverse-map walk from a physical frame to the page-table
    /// entry mapping it, in ns, besides the reference to that entry (which goes through
    /// the caches): Linux's `rmap_walk` as DAMON's physical-address operations run it
    /// for every sampled frame (mm/damon/paddr.c `damon_pa_mkold`, `damon_pa_young`):
    /// `damon_get_folio` (an atomic on the struct page, likely a cache miss for a random
    /// frame), the anon_vma read lock, the interval-tree lookup of the mapping VMA and
    /// `page_vma_mapped_walk`'s upper page-table levels. An assumption: no paper gives
    /// it; SpAR's Table 2 charges 4 480 cycles at 3.2 GHz (1.4 µs) for a whole reverse
    /// mapping with its update, the upper bound of this read-only walk.
    pub rmap_walk_ns: f64,
    /// Latency of the fault taken on a TLB miss to a poisoned page, in ns. Thermostat
    /// §4 (BadgerTrap in the guest): ≈1 µs.
    pub poison_fault_ns: f64,
    /// Latency of the minor fault that maps a page on first touch, in ns. 0 by default:
    /// a trace is usually a window of a longer run, and every policy would pay the same.
    pub page_fault_ns: f64,
    /// Line reads a CPU copy keeps in flight (a core's foreground handler or a kernel
    /// thread copying a page): an assumption, the L2 misses a core can have
    /// outstanding while its hardware prefetcher streams a copy (16 superqueue entries
    /// on Intel's Skylake-generation cores; 10 L1 fill buffers bound plain demand
    /// misses). A copy then moves at most this many lines per read latency, and at
    /// most what the channels' bandwidth allows.
    pub cpu_copy_lines_in_flight: u32,
    /// Line reads a copy engine (DMA) keeps in flight: an assumption, enough to stream
    /// at channel bandwidth on the tiers modelled here.
    pub engine_copy_lines_in_flight: u32,
    /// Round trip of a VM exit and re-entry (state save and restore, the exit
    /// dispatch in the hypervisor), in ns: an assumption (HMM-V gives no costs), of
    /// the order of a KVM round trip through the hardware entry (≈1 350 cycles around
    /// VMRUN measured in a KVM patch discussion, LKML, December 2020) plus dispatch.
    pub vm_exit_ns: f64,
    /// Hypervisor work of an EPT violation besides the round trip (KVM's EPT fault
    /// handler: find the host page, fill the EPT entry), in ns (assumption).
    pub ept_violation_ns: f64,
    /// Hypervisor work of a write-protection fault besides the round trip (HeMem-style
    /// migration: note the write, make the vCPU wait or unprotect), in ns (assumption).
    pub write_protect_ns: f64,
    /// Hypervisor work per PML entry drained at an exit (read the address, set the
    /// dirty bitmap), in ns (assumption).
    pub pml_drain_ns_per_entry: f64,
    /// Whether clearing an Accessed bit through the reverse map also flushes the
    /// page's translation (a shootdown). Off by default, as on x86, whose
    /// `ptep_clear_flush_young` does not flush: a page whose translation stays cached
    /// is then not seen accessed again until it leaves the TLBs. On, as on arm64.
    pub flush_on_clear_young: bool,
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            shootdown_cycles: 300,
            shootdown_remote_cycles: 300,
            clflush_cycles_per_line: 8,
            migrate_software_ns: 2000.0,
            split_ns: 1000.0,
            merge_ns: 1000.0,
            scan_pte_cycles: 20,
            rmap_walk_ns: 500.0,
            poison_fault_ns: 1000.0,
            page_fault_ns: 0.0,
            cpu_copy_lines_in_flight: 16,
            engine_copy_lines_in_flight: 64,
            vm_exit_ns: 500.0,
            ept_violation_ns: 1500.0,
            write_protect_ns: 1500.0,
            pml_drain_ns_per_entry: 5.0,
            flush_on_clear_young: false,
        }
    }
}

impl CostConfig {
    pub fn validate(&self) -> anyhow::Result<()> {
        for (name, v) in [
            ("migrate_software_ns", self.migrate_software_ns),
            ("split_ns", self.split_ns),
            ("merge_ns", self.merge_ns),
            ("rmap_walk_ns", self.rmap_walk_ns),
            ("poison_fault_ns", self.poison_fault_ns),
            ("page_fault_ns", self.page_fault_ns),
            ("vm_exit_ns", self.vm_exit_ns),
            ("ept_violation_ns", self.ept_violation_ns),
            ("write_protect_ns", self.write_protect_ns),
            ("pml_drain_ns_per_entry", self.pml_drain_ns_per_entry),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                anyhow::bail!("machine.costs.{name}: must be a non-negative number, got {v}");
            }
        }
        let most = super::memory::MAX_IN_FLIGHT as u32;
        for (name, v) in [("cpu_copy_lines_in_flight", self.cpu_copy_lines_in_flight), ("engine_copy_lines_in_flight", self.engine_copy_lines_in_flight)] {
            if !(1..=most).contains(&v) {
                anyhow::bail!("machine.costs.{name}: must be between 1 and {most}, got {v}");
            }
        }
        Ok(())
    }
}
