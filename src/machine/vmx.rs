//! What hypervisor-level policies use of hardware virtualisation (Intel VT-x), each
//! with its cost: VM exits by cause, and page-modification logging (PML).
//!
//! # VM exits
//! A VM exit stops the vCPU (the core running the VM's workload) for the round trip
//! into the hypervisor and back, `machine.costs.vm_exit_ns`, plus its handler's work:
//! an EPT violation maps the page (`ept_violation_ns`), a write-protection fault
//! unprotects or waits (`write_protect_ns`), a full PML buffer is drained
//! (`pml_drain_ns_per_entry` per entry), a hypercall does its caller's work (costed by
//! the caller). At every exit the hypervisor drains that vCPU's PML buffer, as KVM does
//! (`vmx_flush_pml_buffer` on each exit; HMM-V §3.2).
//!
//! # PML
//! With PML on for a VM, the MMU logs the guest-physical page of every EPT entry whose
//! dirty bit it sets (0 → 1) in the vCPU's 512-entry buffer (HMM-V §3.2); the entry
//! that finds the buffer full is a `PML BUFFER FULL` exit, which drains it. With EPT
//! A/D bits on, the processor treats its accesses to guest page-table entries as
//! writes for EPT purposes (Intel SDM Vol. 3C, "Accessed and Dirty Flags for EPT"), so
//! a guest walk dirties the EPT entries of the guest page-table pages it reads: this is
//! how HMM-V's GPT scanner learns which page-table pages were used (§4.1.1). Drained
//! entries wait in the VM's log until a policy takes them.

use serde::Serialize;

/// Entries of one vCPU's PML buffer (one 4 KiB page of 8-byte addresses).
pub const PML_ENTRIES: usize = 512;

/// Why a vCPU left the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// An access found no EPT mapping (e.g. a page unmapped for migration).
    EptViolation,
    /// A guest write to a page the hypervisor write-protected.
    WriteProtect,
    /// The PML buffer was full.
    PmlFull,
    /// The guest called the hypervisor.
    Hypercall,
    /// The hypervisor interrupted the vCPU (to collect its PML buffer).
    Kick,
    /// The hypervisor interrupted the vCPU to flush the VM's translations (a remote
    /// TLB flush after it changed the EPT, or cleared A/D bits it reads).
    TlbFlush,
}

/// VM exits by cause and PML traffic, over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VmxStats {
    pub ept_violation: u64,
    pub write_protect: u64,
    pub pml_full: u64,
    pub hypercall: u64,
    pub kick: u64,
    pub tlb_flush: u64,
    /// Cycles the vCPUs spent in exits (round trip, handler, drains).
    pub exit_cycles: u64,
    /// Guest-physical pages the MMU logged, and those drained into the VMs' logs.
    pub pml_logged: u64,
    pub pml_drained: u64,
}

impl VmxStats {
    pub fn exits(&self) -> u64 {
        self.ept_violation + self.write_protect + self.pml_full + self.hypercall + self.kick + self.tlb_flush
    }

    fn count(&mut self, cause: ExitCause) {
        *match cause {
            ExitCause::EptViolation => &mut self.ept_violation,
            ExitCause::WriteProtect => &mut self.write_protect,
            ExitCause::PmlFull => &mut self.pml_full,
            ExitCause::Hypercall => &mut self.hypercall,
            ExitCause::Kick => &mut self.kick,
            ExitCause::TlbFlush => &mut self.tlb_flush,
        } += 1;
    }
}

/// Costs of exits, in core cycles.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExitCosts {
    pub round_trip: u64,
    pub ept_violation: u64,
    pub write_protect: u64,
    pub drain_per_entry: u64,
}

/// PML buffers and logs, and the exit counters.
#[derive(Debug, Default)]
pub struct Vmx {
    /// Per tenant: PML on.
    pml_on: Vec<bool>,
    /// Per core (vCPU): logged (tenant, guest-physical page) not yet drained.
    buffers: Vec<Vec<(u16, u64)>>,
    /// Per tenant: drained guest-physical pages not yet taken, in log order.
    logs: Vec<Vec<u64>>,
    costs: ExitCosts,
    pub stats: VmxStats,
}

impl Vmx {
    pub fn new(tenants: usize, cores: usize, costs: ExitCosts) -> Vmx {
        Vmx { pml_on: vec![false; tenants], buffers: vec![Vec::new(); cores], logs: vec![Vec::new(); tenants], costs, stats: VmxStats::default() }
    }

    /// Whether PML (and with it EPT A/D logging of guest page-table accesses) is on
    /// for `tenant`.
    #[inline]
    pub fn pml_on(&self, tenant: u16) -> bool {
        self.pml_on.get(tenant as usize).copied().unwrap_or(false)
    }

    pub fn set_pml(&mut self, tenant: u16, on: bool) {
        if let Some(p) = self.pml_on.get_mut(tenant as usize) {
            *p = on;
        }
    }

    /// The MMU set the EPT dirty bit of guest-physical page `gpfn` of `tenant` on
    /// `core`: logs it. Returns the cycles of the `PML BUFFER FULL` exit when the
    /// buffer was full (the entry is logged after the drain), else 0.
    #[inline]
    pub fn log(&mut self, core: usize, tenant: u16, gpfn: u64) -> u64 {
        let mut cycles = 0;
        if self.buffers[core].len() == PML_ENTRIES {
            cycles = self.exit(core, ExitCause::PmlFull);
        }
        self.buffers[core].push((tenant, gpfn));
        self.stats.pml_logged += 1;
        cycles
    }

    /// A VM exit of `core` for `cause`: drains its PML buffer and returns the cycles
    /// the vCPU loses (round trip, handler, drain).
    pub fn exit(&mut self, core: usize, cause: ExitCause) -> u64 {
        self.stats.count(cause);
        let drained = self.buffers[core].len() as u64;
        for (t, g) in self.buffers[core].drain(..) {
            self.logs[t as usize].push(g);
        }
        self.stats.pml_drained += drained;
        let handler = match cause {
            ExitCause::EptViolation => self.costs.ept_violation,
            ExitCause::WriteProtect => self.costs.write_protect,
            ExitCause::PmlFull | ExitCause::Hypercall | ExitCause::Kick | ExitCause::TlbFlush => 0,
        };
        let cycles = self.costs.round_trip + handler + drained * self.costs.drain_per_entry;
        self.stats.exit_cycles += cycles;
        cycles
    }

    /// Entries waiting in `core`'s buffer.
    pub fn buffered(&self, core: usize) -> usize {
        self.buffers[core].len()
    }

    /// Cores whose buffers hold entries of `tenant`.
    pub fn cores_holding(&self, tenant: u16) -> Vec<usize> {
        (0..self.buffers.len()).filter(|&c| self.buffers[c].iter().any(|e| e.0 == tenant)).collect()
    }

    /// Takes `tenant`'s drained log (guest-physical pages, in log order, repeats kept).
    pub fn take_log(&mut self, tenant: u16) -> Vec<u64> {
        std::mem::take(&mut self.logs[tenant as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vmx() -> Vmx {
        Vmx::new(2, 2, ExitCosts { round_trip: 1000, ept_violation: 5000, write_protect: 3000, drain_per_entry: 10 })
    }

    #[test]
    fn a_full_buffer_exits_and_every_exit_drains() {
        let mut v = vmx();
        // 512 entries fit; the 513th finds the buffer full: one exit, 1 000 cycles of
        // round trip + 512 × 10 of drain, then it is logged into the empty buffer.
        for g in 0..512 {
            assert_eq!(v.log(0, 1, g), 0);
        }
        assert_eq!(v.log(0, 1, 512), 1000 + 512 * 10);
        assert_eq!((v.stats.pml_full, v.stats.pml_logged, v.stats.pml_drained, v.buffered(0)), (1, 513, 512, 1));
        assert_eq!(v.take_log(1), (0..512).collect::<Vec<u64>>());
        assert!(v.take_log(1).is_empty(), "taken once");
        // Any exit drains: an EPT violation with 1 entry buffered costs 1 000 + 5 000 + 10.
        assert_eq!(v.exit(0, ExitCause::EptViolation), 6010);
        assert_eq!(v.take_log(1), vec![512]);
        // Another core's buffer is its own; a kick of a core with nothing buffered
        // costs the round trip only.
        v.log(1, 0, 7);
        assert_eq!(v.cores_holding(0), vec![1]);
        assert_eq!(v.exit(0, ExitCause::Kick), 1000);
        assert_eq!(v.exit(1, ExitCause::Kick), 1010);
        assert_eq!(v.take_log(0), vec![7]);
        assert_eq!((v.stats.exits(), v.stats.kick, v.stats.exit_cycles), (4, 2, 5120 + 6010 + 1000 + 1010 + 1000));
    }
}
