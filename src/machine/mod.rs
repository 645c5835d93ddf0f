//! The machine: cores with their clocks and TLBs, the address spaces (tenants, page
//! tables, frames and their owners), the memory system (caches and tiers), an
//! optional redirection structure, and the per-reference path that runs an
//! [`Access`] through all of them.
//!
//! The machine executes; it never decides. Where pages go on first touch follows the
//! policy's placement; everything else a policy wants changed goes through the
//! mechanism layer (`crate::mechanism`), which calls the primitives of [`ops`] and
//! charges each its cost on the clock of the executor that runs it.
//!
//! Rooms, each with private state: [`space`] (tenants and page tables, the frame
//! allocator, the reverse map, first-touch placement), [`memory`] (caches and tiers),
//! [`core`] (clocks, TLBs, counters), [`redirect`] (the extension point of the
//! reference path), [`verify`] (shadow memory and invariants). This file composes
//! them: the machine's build, the reference path, and read access for the report.
//!
//! Files: this one holds the [`Machine`], its build and read access, and the
//! reference path up to the caches; `plan` what a run builds it from ([`MachineInfo`],
//! [`Build`], the tiers' capacities resolved and checked); `walk` the translation after
//! an L1 TLB miss (the L2 TLB, the walks and paging-structure caches, first touch).

pub mod alloc;
pub mod cache;
pub mod calendar;
pub mod config;
pub mod copies;
pub mod core;
pub mod costs;
pub mod epochs;
pub mod error;
pub mod events;
pub mod hypervisor;
mod ids;
pub mod memory;
pub mod memory_mode;
pub mod ops;
pub mod page_table;
pub mod placement;
mod plan;
pub mod psc;
pub mod redirect;
pub mod remap;
pub mod rmap;
pub mod sampled;
pub mod setassoc;
pub mod space;
pub mod tier;
pub mod tlb;
pub mod verify;
pub mod vmx;
mod walk;
pub mod wear;

pub use self::core::{Core, CoreStats};
pub use alloc::Colour;
pub use config::{MachineConfig, PageTableConfig, TiersConfig, WalkReads};
pub use error::{Direction, MechError};
pub use events::{Birthplace, FaultEvent, FaultKind, MemEvent, MemKind, Observer, PlaceEvent, RefOutcome, ScanEvent, TlbMissEvent};
pub use ids::{PageRef, TierId};
pub use plan::{Build, MachineInfo, TierInfo};
pub use redirect::{NoRedirect, Redirect};
pub use rmap::Owner;
use sampled::{fast, CostModel, RecencyFilter, Translations, CALIBRATE, DETAILED, FIT, PAGE, WARM};
pub use space::{PageInfo, TenantKind};
pub use tier::TierStats;

use crate::trace::Access;
use memory::{Memory, Tiers};
use page_table::{ACCESSED, DIRTY, TRAP};
use plan::{capacities, room};
use redirect::{Layout, PathCtx};
use space::Space;
use tier::Tier;
use tlb::{TlbEntry, TlbHit, NO_SLOT};
use verify::Shadow;

/// Fixed-point scale for CPI and 1/MLP.
const FP: u64 = 1 << 16;

/// Per-reference constants, in cycles and fixed point.
struct Timing {
    cpi_fp: u64,
    inv_mlp_fp: u64,
    l1_latency: u64,
    l2_tlb_cycles: u64,
    /// Cycles of a paging-structure-cache lookup (charged only with the caches on).
    psc_cycles: u64,
    /// The walker's reads go straight to memory (`machine.page_table.walk_reads`).
    walk_uncached: bool,
    poison_fault_cycles: u64,
    page_fault_cycles: u64,
}

/// The whole machine, generic over its redirection structure (see [`redirect`]).
pub struct Machine<R: Redirect = NoRedirect> {
    /// The configuration as built (the policy's page size applied).
    cfg: MachineConfig,
    info: MachineInfo,
    pub(crate) cores: Vec<Core>,
    pub(crate) mem: Memory,
    pub(crate) space: Space,
    pub(crate) redirect: R,
    pub(crate) shadow: Option<Shadow>,
    pub(crate) stats: ops::MechanismStats,
    /// VM exits and PML buffers (HMM-V's hardware virtualisation).
    pub(crate) vmx: vmx::Vmx,
    /// Pages waiting on moves and batched moves under way (module `hypervisor`).
    pub(crate) hyper: hypervisor::Hyper,
    /// The first error met inside the reference path (memory exhausted, a stale read
    /// under `--verify`); the engine stops the run with it.
    pub(crate) error: Option<String>,
    timing: Timing,
    /// Per core, sampled mode's cost model (unused in detailed runs).
    pub(crate) models: Vec<CostModel>,
    /// Sampled mode's recency filter of data lines (empty until
    /// [`Machine::start_sampling`]).
    recent: RecencyFilter,
    /// Sampled mode's fast-forward is page-granular: the cores' reach arrays are on
    /// (module `tlb`), kept in every window and read in fast-forward.
    page_ff: bool,
    /// The tiers' counters before the current reference of a fitting window
    /// (page-granular fast-forward's traffic fit).
    traffic_before: Vec<sampled::TierTraffic>,
    /// Epochs mode's page state (module [`epochs`]; `None` in other modes).
    pub(crate) epochs: Option<Box<epochs::EpochsState>>,
    /// Test hook: a migration that skips the data copy, to prove `--verify` notices.
    #[cfg(test)]
    pub(crate) break_migration_copy: bool,
    /// Test hook: an address reconciliation that leaves the PTE stale.
    #[cfg(test)]
    pub(crate) break_reconcile_pte: bool,
    /// Test hook: a PML move that does not copy again the pages written during its
    /// copy, to prove `--verify` notices.
    #[cfg(test)]
    pub(crate) break_pml_recopy: bool,
    /// Test hook: a DMA move that remaps every page without checking its Dirty bit,
    /// to prove `--verify` notices.
    #[cfg(test)]
    pub(crate) break_dma_dirty_check: bool,
}

impl<R: Redirect> Machine<R> {
    /// Builds the machine of `cfg` for a run described by `b`.
    pub(crate) fn new(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<Machine<R>> {
        cfg.validate()?;
        let mut cfg = cfg.clone();
        cfg.page_table.thp = b.thp;
        let caps = capacities::<R>(&cfg, b)?;
        let huge_bytes = cfg.page_table.huge_page.bytes();
        let hide_fast = R::hides_fast_tier(&b.redirect);
        let fast_reserved = room::<R>(&cfg, b, &caps)?;
        let huge_shift = cfg.huge_shift();
        let mut tiers = Vec::new();
        for (i, (t, &bytes)) in cfg.tiers.all().into_iter().zip(&caps.bytes).enumerate() {
            let tier = Tier::new(t, bytes, cfg.freq_ghz).map_err(|e| anyhow::anyhow!("{}.{e}", TiersConfig::field(TierId(i as u8))))?;
            tiers.push(tier);
        }
        let frames: Vec<u64> = caps.bytes.iter().map(|b| b >> 12).collect();
        let visible: Vec<u64> = caps.bytes.iter().enumerate().map(|(i, &b)| if i == 0 && hide_fast { 0 } else { b }).collect();
        cfg.validate_colour_bits(&visible)?;
        let mut space = Space::new(&frames, &b.tenants, cfg.page_table.levels, huge_shift, b.thp, b.placement, hide_fast)?;
        space.set_colour_bits(&cfg.colour_bits);
        space.set_reserve(TierId::FAST, b.fast_reserve);
        let reserved = if caps.reserved > 0 { space.reserve_metadata(TierId::SLOW, caps.reserved)? } else { Vec::new() };
        let layout = Layout {
            tiers: TierId::first(frames.len()).map(|t| (space.allocator().base(t), space.allocator().frames(t))).collect(),
            huge_shift,
            tenants: b.tenants.clone(),
        };
        let fast = if hide_fast { Vec::new() } else { space.reserve_huge_metadata(TierId::FAST, fast_reserved / huge_bytes)? };
        let redirect = R::build(&b.redirect, &layout, reserved, fast)?;
        let info = MachineInfo::with_capacities(&cfg, b, &caps.bytes, hide_fast);
        let tiers = Tiers::new(tiers, space.bounds().to_vec());
        let frame_limit = space.reverse_map().frames();
        Ok(Machine {
            cores: (0..cfg.cores).map(|_| Core::new(&cfg.tlb, cfg.page_table.levels, huge_shift)).collect(),
            mem: Memory::new(&cfg.caches, cfg.cores, tiers),
            space,
            redirect,
            shadow: b.verify.then(|| Shadow::new(frame_limit)),
            stats: ops::MechanismStats::new(frames.len()),
            vmx: vmx::Vmx::new(
                b.tenants.len(),
                cfg.cores,
                vmx::ExitCosts {
                    round_trip: cfg.cycles(cfg.costs.vm_exit_ns),
                    ept_violation: cfg.cycles(cfg.costs.ept_violation_ns),
                    write_protect: cfg.cycles(cfg.costs.write_protect_ns),
                    drain_per_entry: cfg.cycles(cfg.costs.pml_drain_ns_per_entry),
                },
            ),
            hyper: hypervisor::Hyper::new(),
            error: None,
            models: (0..cfg.cores).map(|_| CostModel::new(frames.len(), cfg.caches.len())).collect(),
            recent: RecencyFilter::default(),
            page_ff: false,
            traffic_before: Vec::new(),
            epochs: None,
            timing: Timing {
                cpi_fp: (cfg.base_cpi * FP as f64).round() as u64,
                inv_mlp_fp: (FP as f64 / cfg.mlp).round() as u64,
                l1_latency: cfg.caches[0].latency_cycles,
                l2_tlb_cycles: cfg.tlb.l2_latency_cycles,
                psc_cycles: cfg.tlb.psc.latency_cycles,
                walk_uncached: cfg.page_table.walk_reads == WalkReads::Uncached,
                poison_fault_cycles: cfg.cycles(cfg.costs.poison_fault_ns),
                page_fault_cycles: cfg.cycles(cfg.costs.page_fault_ns),
            },
            info,
            cfg,
            #[cfg(test)]
            break_migration_copy: false,
            #[cfg(test)]
            break_reconcile_pte: false,
            #[cfg(test)]
            break_pml_recopy: false,
            #[cfg(test)]
            break_dma_dirty_check: false,
        })
    }

    /// Prepares sampled mode: the recency filter gets as many lines as the LLC, and
    /// with a page-granular fast-forward (`page`) the cores get their reach arrays. A
    /// machine with a VM tenant fast-forwards through the TLBs: its nested walks and
    /// EPT bits are not modelled at page granularity. Returns whether the
    /// fast-forward is page-granular.
    pub(crate) fn start_sampling(&mut self, page: bool) -> bool {
        let llc = self.cfg.caches.last().map_or(1 << 17, |c| c.size.bytes() / 64);
        self.recent = RecencyFilter::new(llc);
        if page && !self.space.tenants().iter().any(|t| t.guest.is_some()) {
            self.page_ff = true;
            self.traffic_before = vec![sampled::TierTraffic::default(); self.mem.tiers.all().len()];
            for c in &mut self.cores {
                c.tlb.enable_reach();
            }
        }
        self.page_ff
    }

    /// Tier `t`'s counters as page-granular fast-forward's traffic fit reads them.
    fn tier_traffic(&self, t: usize) -> sampled::TierTraffic {
        let s = self.mem.tiers.all()[t].stats();
        let demand = self.mem.tiers.demand(TierId(t as u8));
        sampled::TierTraffic { reads: s.reads, writes: s.writes, demand: demand.reads, row_hits: s.row_hits, queue_cycles: s.queue_cycles }
    }

    /// Notes the tiers' counters before a reference of a fitting window.
    fn snapshot_traffic(&mut self) {
        for t in 0..self.traffic_before.len() {
            self.traffic_before[t] = self.tier_traffic(t);
        }
    }

    /// Records for `core`'s cost model what the fitting window's reference just made
    /// each tier do.
    fn record_traffic(&mut self, core: usize) {
        for t in 0..self.traffic_before.len() {
            let d = self.tier_traffic(t).since(&self.traffic_before[t]);
            self.models[core].record_traffic(t, &d);
        }
        self.models[core].record_traffic_ref();
    }

    /// Starts a fitting window of sampled mode on `core` (module [`sampled`]).
    pub(crate) fn begin_fit(&mut self, core: usize) {
        self.models[core].begin_fit(self.cores[core].clock);
    }

    /// Ends a fitting window of sampled mode on `core`: its cost model is refitted.
    pub(crate) fn end_fit(&mut self, core: usize) {
        self.models[core].end_fit(self.cores[core].clock);
    }

    /// Ends a fast-forward window on `core`: the cache lookups it skipped are added to
    /// the caches' hit and miss counts as the cost model estimates them.
    pub(crate) fn end_fast_forward(&mut self, core: usize) {
        if self.page_ff {
            // The TLB and walk counts of its page-granular translations, estimated.
            let t = self.models[core].estimated_translations();
            let s = &mut self.cores[core].stats;
            s.tlb_l1_hits += t.l1_hits;
            s.tlb_l2_hits += t.l2_hits;
            s.tlb_misses += t.misses;
            s.walk_references += t.walk_references;
            s.walk_memory_accesses += t.walk_memory_accesses;
            s.walk_cycles += t.walk_cycles;
            // Its memory traffic, counted at once (the channels' calendars give
            // mechanisms' traffic its share beside it).
            for tier in 0..self.mem.tiers.all().len() {
                let w = self.models[core].window_traffic(tier);
                self.mem.tiers.add_demand(TierId(tier as u8), w.accesses, w.latency_cycles, w.writebacks, w.walk_reads, w.row_hits, w.queue_cycles);
            }
        }
        let served = self.models[core].estimated_levels();
        self.mem.caches.add_estimated(&served);
    }

    /// Sampled mode's cost models, one per core.
    pub(crate) fn cost_models(&self) -> &[CostModel] {
        &self.models
    }

    /// The configuration as built.
    pub(crate) fn cfg(&self) -> &MachineConfig {
        &self.cfg
    }

    /// Static facts about the machine.
    pub(crate) fn info(&self) -> &MachineInfo {
        &self.info
    }

    pub(crate) fn cores(&self) -> &[Core] {
        &self.cores
    }

    pub(crate) fn memory(&self) -> &Memory {
        &self.mem
    }

    pub(crate) fn space(&self) -> &Space {
        &self.space
    }

    pub(crate) fn redirect(&self) -> &R {
        &self.redirect
    }

    pub(crate) fn stats(&self) -> &ops::MechanismStats {
        &self.stats
    }

    /// VM exits by cause and PML traffic.
    pub(crate) fn vmx(&self) -> &vmx::VmxStats {
        &self.vmx.stats
    }

    /// Pages moved by each way of moving a page (module `hypervisor`), and the waits
    /// they caused.
    pub(crate) fn vm_moves(&self) -> &hypervisor::VmMoveStats {
        &self.hyper.stats
    }

    /// A VM exit of `core` for `cause`: the vCPU stops for its cost (and its PML
    /// buffer is drained). Returns the cycles.
    pub(crate) fn vm_exit(&mut self, core: usize, cause: vmx::ExitCause) -> u64 {
        let cycles = self.vmx.exit(core, cause);
        self.charge_exit(core, cycles);
        cycles
    }

    /// The vCPU on `core` loses `cycles` to one VM exit.
    fn charge_exit(&mut self, core: usize, cycles: u64) {
        let c = &mut self.cores[core];
        c.clock += cycles;
        c.stats.vm_exits += 1;
        c.stats.vm_exit_cycles += cycles;
    }

    /// The MMU set the EPT dirty bit of managed (guest-physical) address `gpa` of
    /// VM `tenant`, which has PML on, on `core`: it is logged, and a full buffer is an
    /// exit the vCPU pays at once.
    fn pml_log(&mut self, core: usize, tenant: u16, gpa: u64) {
        let cycles = self.vmx.log(core, tenant, gpa >> 12);
        if cycles > 0 {
            self.charge_exit(core, cycles);
        }
    }

    /// Reads checked against shadow memory (with verification on).
    pub(crate) fn verified_reads(&self) -> u64 {
        self.shadow.as_ref().map_or(0, |s| s.checked_reads)
    }

    /// The first error met inside the reference path, taken.
    pub(crate) fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// Simulated time so far: the largest core clock.
    pub(crate) fn now(&self) -> u64 {
        self.cores.iter().map(|c| c.clock).max().unwrap_or(0)
    }

    pub(crate) fn huge_shift(&self) -> u32 {
        self.cfg.huge_shift()
    }

    /// Sets a tenant's fast-tier quota in frames before the run (the engine, from the
    /// workloads' fast shares); policies change it through the mechanisms.
    pub(crate) fn set_fast_quota(&mut self, tenant: u16, frames: Option<u64>) {
        self.space.set_fast_quota(tenant, frames);
    }

    /// One access of a mechanism through the caches and, on a miss in every level, to
    /// memory as background traffic, as `core` issues it at cycle `at`; no observer
    /// sees it.
    #[inline]
    pub(crate) fn cached_quiet(&mut self, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64) -> (usize, u64) {
        self.mem.cached(&mut self.redirect, core, paddr, write, kind, at, true, &mut ())
    }

    /// Runs one reference on `core`: translation, caches, memory; advances the core's
    /// clock by its instructions and stalls. (Always inlined into the engine's loop,
    /// whatever the number of policies the registry instantiates it for.)
    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn access<O: Observer>(&mut self, core: usize, a: &Access, obs: &mut O) -> RefOutcome {
        self.access_in::<DETAILED, O>(core, a, obs)
    }

    /// [`Machine::access`] in one of sampled mode's ways (module [`sampled`]):
    /// `DETAILED`, the full model; `FIT`, the full model recording what the core's cost
    /// model is fitted on; `FAST`, fast-forward — translation, faults and Accessed/Dirty
    /// bits exact, the caches skipped and their time taken from the cost model, and
    /// memory reached as often as the model says; `PAGE`, fast-forward at page
    /// granularity — as `FAST`, but translated through the core's reach arrays, with a
    /// walk (Accessed and Dirty bits, faults, traps) only when they miss and the
    /// translation's time from the cost model. `FAST` and `PAGE` need a machine
    /// without a redirection structure.
    #[inline(always)]
    pub(crate) fn access_in<const M: u8, O: Observer>(&mut self, core: usize, a: &Access, obs: &mut O) -> RefOutcome {
        debug_assert!(!fast(M) || R::PLAIN, "fast-forward on a machine with a redirection structure");
        let write = a.is_write();
        let tenant = a.tenant;
        // Page-granular fast-forward translates this tenant through the reach arrays;
        // the detailed windows keep them, and the fitting window records, per reach
        // class, what translation cost (from the walk counters before the reference).
        let page = M == PAGE && self.page_ff;
        let reach = (M == FIT || M == WARM) && self.page_ff;
        let before = if M == FIT && reach {
            self.snapshot_traffic();
            Some(TranslationCounters::of(&self.cores[core].stats))
        } else {
            None
        };
        // The core is borrowed twice: up to its L1 TLBs, and from the translation on
        // (the caches, tiers and cost model are other fields of the machine).
        let c = &mut self.cores[core];
        let instrs = a.instrs as u64 + 1;
        let scaled = instrs * self.timing.cpi_fp + c.cpi_rem;
        c.clock += scaled / FP;
        c.cpi_rem = scaled % FP;
        c.stats.base_cycles += scaled / FP;
        c.stats.instructions += instrs;
        c.stats.references += 1;
        c.stats.reads += !write as u64;
        c.stats.writes += write as u64;
        let mut held = false;
        let (entry, mut translation, mut found) = if page {
            match c.tlb.reach_lookup(tenant, a.vaddr) {
                Some(e) => {
                    held = true;
                    (e, 0, None)
                }
                None => match self.translate_page(core, tenant, a.vaddr, write, obs) {
                    Some((e, faults)) => (e, faults, None),
                    None => return RefOutcome::default(),
                },
            }
        } else {
            match c.tlb.lookup_l1(tenant, a.vaddr) {
                Some(e) => (e, 0, Some(TlbHit::L1)),
                None => match self.translate_miss::<M, O>(core, tenant, a.vaddr, write, obs) {
                    Some(t) => t,
                    None => return RefOutcome::default(),
                },
            }
        };
        if write && !entry.dirty {
            // x86 sets the dirty bit with a locked update of the PTE on the first store
            // through a clean TLB entry.
            if page {
                self.set_dirty_page(core, tenant, a.vaddr, &entry);
            } else {
                translation += self.set_dirty_bit::<M, O>(core, tenant, a.vaddr, &entry, translation, obs);
            }
        }
        if page {
            // The translation's time, as the fitting window's references of the same
            // reach class had it.
            translation += self.models[core].translation(held);
        }
        let mut pfn = if entry.huge { entry.base_pfn + ((a.vaddr >> 12) & (self.space.huge_frames() - 1)) } else { entry.base_pfn };
        let mut at_memory = 0;
        if R::TRANSLATES {
            let mut path = PathCtx::of(core, &mut self.cores[core], &mut self.mem, self.timing.l2_tlb_cycles, self.timing.walk_uncached);
            let r = self.redirect.after_translation(&mut path, tenant, a.vaddr, &entry, pfn, write, obs);
            pfn = r.pfn;
            translation += r.translation_cycles;
            at_memory = r.memory_cycles;
            if r.small_l2_hit && found.is_some() {
                // A 4 KiB entry of the second level served it, whatever the superpage
                // probe found: one hit, in the level that served it.
                found = Some(TlbHit::L2);
            }
        }
        let c = &mut self.cores[core];
        match found {
            Some(TlbHit::L1) => c.stats.tlb_l1_hits += 1,
            Some(TlbHit::L2) => c.stats.tlb_l2_hits += 1,
            None => {}
        }
        let paddr = pfn << 12 | (a.vaddr & 0xfff);
        c.clock += translation;
        c.stats.translation_cycles += translation;
        if reach {
            // The reach arrays follow the detailed windows, and classify their
            // references for the cost model.
            held = c.tlb.reach_fill(tenant, a.vaddr, TlbEntry { dirty: entry.dirty || write, ..entry });
            if let Some(before) = before {
                let t = TranslationCounters::of(&c.stats).since(&before, translation, &self.timing);
                self.models[core].record_translation(held, &t);
            }
        }
        let c = &mut self.cores[core];

        let at = c.clock;
        // (The tier of the data only matters to sampled mode's model.)
        let tier = if M == FIT || fast(M) { self.mem.tiers.tier_of(pfn).index() } else { 0 };
        let (recent, evicted) = if M == DETAILED || M == CALIBRATE { (false, None) } else { self.recent.touch(paddr, fast(M) && write) };
        if let Some(line) = evicted {
            // A line only fast-forward wrote leaves the filter: written back as the LLC
            // would (counted when the window ends, at page granularity).
            if page {
                self.models[core].page_writeback(self.mem.tiers.tier_of(line >> 12).index());
            } else {
                self.redirect.memory(&mut self.mem.tiers, core, line, true, MemKind::Writeback, at, false, obs);
            }
        }
        let (level, mut latency) = if page {
            // Memory's traffic is counted when the window ends (`end_fast_forward`).
            let (beyond, memory) = self.models[core].page_data(tier, write, recent);
            (if memory { self.mem.caches.depth() } else { 0 }, beyond + self.timing.l1_latency)
        } else if fast(M) {
            let (beyond, memory) = self.models[core].data(tier, write, recent);
            let depth = self.mem.caches.depth();
            if let Some(fitted) = memory {
                let measured = self.redirect.memory(&mut self.mem.tiers, core, paddr, false, MemKind::Demand, at, false, obs);
                self.mem.tiers.reprice_demand(TierId(tier as u8), measured, fitted);
            }
            (if memory.is_some() { depth } else { 0 }, beyond + self.timing.l1_latency)
        } else {
            self.mem.cached(&mut self.redirect, core, paddr, write, MemKind::Demand, at, false, obs)
        };
        if M == CALIBRATE && level + 1 >= self.mem.caches.depth() {
            self.mem.caches.record(core, paddr);
        }
        if R::TRANSLATES && at_memory > 0 && level == self.mem.caches.depth() {
            latency += at_memory;
            self.redirect.memory_charge_taken(at_memory);
        }
        let beyond_l1 = latency.saturating_sub(self.timing.l1_latency);
        let stall = if a.is_dependent() {
            beyond_l1
        } else {
            let scaled = beyond_l1 * self.timing.inv_mlp_fp + c.stall_rem;
            c.stall_rem = scaled % FP;
            scaled / FP
        };
        c.clock += stall;
        c.stats.memory_stall_cycles += stall;
        if M == FIT {
            let model = &mut self.models[core];
            let p = model.predict_data(tier, write, recent);
            let predicted = if a.is_dependent() { p } else { p * self.timing.inv_mlp_fp / FP };
            // Memory's part of a miss's latency: what followed the LLC's lookup.
            let memory = if level == self.mem.caches.depth() { latency.saturating_sub(self.mem.caches.llc_latency()) } else { 0 };
            model.record_data(tier, write, recent, level, beyond_l1, memory, stall, predicted);
            if before.is_some() {
                self.record_traffic(core);
            }
        }
        if self.shadow.is_some() {
            let served = self.redirect.served(pfn);
            self.check_shadow(tenant, a.vaddr, pfn, served, write);
        }
        RefOutcome { translation_cycles: translation, data_cycles: beyond_l1, paddr, level }
    }

    /// Page-granular fast-forward's translation of `vaddr` of `tenant` (not a VM)
    /// after a miss in `core`'s reach arrays: the walk of the page table, which sets
    /// the leaf's Accessed bit (and Dirty bit for a `write`) and maps the page on first
    /// touch, then the poison fault and the trap of a moving page, as after a TLB miss
    /// ([`Machine::translate_miss`]); the translation goes into the reach arrays.
    /// None of the walk's references is issued: its time comes from the cost model.
    /// Returns the entry and the cycles of faults; `None` if memory ran out.
    #[inline(never)]
    fn translate_page<O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, write: bool, obs: &mut O) -> Option<(TlbEntry, u64)> {
        let mut path = page_table::WalkPath::default();
        let mut cycles = 0;
        let (leaf, e, newly_dirty) = match self.space.tenant_mut(tenant).table.walk_marking(vaddr, &mut path, write) {
            Some(w) => w,
            None => {
                cycles = self.first_touch(core, tenant, vaddr, obs)?;
                // A detailed walk counts its first touch among its cycles.
                self.cores[core].stats.walk_cycles += cycles;
                self.space.tenant_mut(tenant).table.walk_marking(vaddr, &mut path, write).expect("page mapped by first touch")
            }
        };
        if newly_dirty && self.vmx.pml_on(tenant) {
            self.pml_log(core, tenant, vaddr);
        }
        if e & page_table::POISONED != 0 {
            // BadgerTrap (Thermostat §3.3), NUMA hinting: the walk finds a poisoned PTE
            // and traps; later hits of the translation do not fault.
            let fault = self.timing.poison_fault_cycles;
            cycles += fault;
            self.cores[core].stats.poison_faults += 1;
            self.cores[core].stats.fault_cycles += fault;
            let page = vaddr & !(self.space.page_bytes(leaf.huge) - 1);
            let number = self.space.page_number(tenant, page);
            obs.on_fault(&FaultEvent { core, tenant, addr: page, page: number, huge: leaf.huge, kind: FaultKind::Poison });
        }
        let clean = e & TRAP != 0 && self.spring_trap(core, tenant, vaddr, leaf.huge, write);
        obs.on_tlb_miss(&TlbMissEvent { core, tenant, vaddr, addr: vaddr, huge: leaf.huge, walk_cycles: cycles });
        let entry = TlbEntry { base_pfn: e >> 12, huge: leaf.huge, dirty: e & DIRTY != 0 && !clean, slot: leaf.slot as u32 };
        self.cores[core].tlb.reach_fill(tenant, vaddr, entry);
        Some((entry, cycles))
    }

    /// Page-granular fast-forward's first store through a clean translation in the
    /// reach arrays: the PTE's Dirty bit set (a trap sprung on a write-protected
    /// page), the translation marked dirty. Its time is in the translation's fit.
    #[inline(never)]
    fn set_dirty_page(&mut self, core: usize, tenant: u16, vaddr: u64, entry: &TlbEntry) {
        let slot = entry.slot as usize;
        if *self.space.entry_mut(tenant, slot) & TRAP != 0 {
            self.spring_trap(core, tenant, vaddr, entry.huge, true);
        }
        let e = self.space.entry_mut(tenant, slot);
        let newly_dirty = *e & DIRTY == 0;
        *e |= DIRTY | ACCESSED;
        if newly_dirty && self.vmx.pml_on(tenant) {
            self.pml_log(core, tenant, vaddr);
        }
        self.cores[core].tlb.reach_set_dirty(tenant, vaddr, entry.huge);
    }

    /// Host-side prefetch for a reference a few places ahead: starts loading its leaf
    /// page-table entry, if a walk of its region told the core where the leaves are
    /// (`core::LeafHints`). Changes nothing simulated. (It takes `gups` at 8 GiB, whose
    /// leaf entries are a 16 MiB array read at random, from 4.8 to 7.5 M references a
    /// second; BENCHMARKS.md, issue 41.)
    #[inline(always)]
    pub(crate) fn prefetch_far(&self, core: usize, a: &Access) {
        self.cores[core].leaf_hints.prefetch(a.vaddr);
    }

    /// Sets the Dirty bit of the PTE behind `entry` with a write of the walker (through
    /// the caches unless `machine.page_table.walk_reads` is `"uncached"`) issued `after`
    /// cycles into the reference; returns its latency.
    #[inline(always)]
    fn set_dirty_bit<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, entry: &TlbEntry, after: u64, obs: &mut O) -> u64 {
        let (slot, addr, huge) = if entry.slot != NO_SLOT {
            (Some(entry.slot as usize), vaddr, entry.huge)
        } else {
            match self.space.managed_addr(tenant, vaddr).and_then(|addr| self.space.tenants()[tenant as usize].table.walk(addr, None).map(|l| (l, addr))) {
                Some((l, addr)) => (Some(l.slot), addr, l.huge),
                None => (None, vaddr, false),
            }
        };
        let mut lat = 0;
        if let Some(slot) = slot {
            if *self.space.entry_mut(tenant, slot) & TRAP != 0 {
                // A write to a page that is moving (write-protected, say).
                self.spring_trap(core, tenant, addr, huge, true);
            }
            let e = self.space.entry_mut(tenant, slot);
            let newly_dirty = *e & DIRTY == 0;
            *e |= DIRTY | ACCESSED;
            if newly_dirty && self.vmx.pml_on(tenant) {
                self.pml_log(core, tenant, addr);
            }
            let pa = self.space.entry_paddr(tenant, slot);
            let at = self.cores[core].clock + after;
            lat = self.walk_ref::<M, O>(core, pa, true, at, obs).1;
        }
        if self.space.tenants()[tenant as usize].guest.is_some() {
            lat += self.set_guest_dirty_bit::<M, O>(core, tenant, vaddr, after + lat, obs);
        }
        self.cores[core].tlb.set_dirty(tenant, vaddr, entry.huge);
        lat
    }

    /// The guest half of a VM's first store through a clean TLB entry: the MMU sets
    /// the Dirty bit of the guest PTE too (a write to the guest page-table page, whose
    /// EPT entry it marks accessed, and dirty while PML is on: module `vmx`). The
    /// guest PTE's host address comes from the paging-structure caches (no walk).
    fn set_guest_dirty_bit<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, gva: u64, after: u64, obs: &mut O) -> u64 {
        let guest = &mut self.space.tenant_mut(tenant).guest.as_mut().expect("VM tenant").table;
        let Some(gleaf) = guest.walk(gva, None) else { return 0 };
        *guest.entry_mut(gleaf.slot) |= DIRTY | ACCESSED;
        let gpte = guest.entry_paddr(gleaf.slot);
        let Ok(m) = self.space.mapped(PageRef::new(tenant, gpte)) else { return 0 };
        let pml = self.vmx.pml_on(tenant);
        let e = self.space.entry_mut(tenant, m.slot);
        let newly_dirty = pml && *e & DIRTY == 0;
        *e |= ACCESSED | if pml { DIRTY } else { 0 };
        if newly_dirty {
            self.pml_log(core, tenant, gpte);
        }
        let hpa = (m.pfn() << 12) + (gpte - m.addr);
        let at = self.cores[core].clock + after;
        self.walk_ref::<M, O>(core, hpa, true, at, obs).1
    }
}

/// A core's translation counters at one moment, so that a fitting window can take
/// what one reference's translation did (page-granular fast-forward's fit).
#[derive(Clone, Copy, Debug)]
struct TranslationCounters {
    l1_hits: u64,
    l2_hits: u64,
    misses: u64,
    walk_references: u64,
    walk_memory_accesses: u64,
    walk_cycles: u64,
    first_touch_faults: u64,
    poison_faults: u64,
}

impl TranslationCounters {
    #[inline]
    fn of(s: &CoreStats) -> TranslationCounters {
        TranslationCounters {
            l1_hits: s.tlb_l1_hits,
            l2_hits: s.tlb_l2_hits,
            misses: s.tlb_misses,
            walk_references: s.walk_references,
            walk_memory_accesses: s.walk_memory_accesses,
            walk_cycles: s.walk_cycles,
            first_touch_faults: s.first_touch_faults,
            poison_faults: s.poison_faults,
        }
    }

    /// What one reference of `translation` cycles did since `before`: its counts, its
    /// cycles and its walk's cycles but those of faults (which fast-forward charges
    /// exactly).
    #[inline]
    fn since(&self, before: &TranslationCounters, translation: u64, timing: &Timing) -> Translations {
        let first_touch = (self.first_touch_faults - before.first_touch_faults) * timing.page_fault_cycles;
        let poison = (self.poison_faults - before.poison_faults) * timing.poison_fault_cycles;
        Translations {
            refs: 1,
            cycles: translation.saturating_sub(first_touch + poison),
            l1_hits: self.l1_hits - before.l1_hits,
            l2_hits: self.l2_hits - before.l2_hits,
            misses: self.misses - before.misses,
            walk_references: self.walk_references - before.walk_references,
            walk_memory_accesses: self.walk_memory_accesses - before.walk_memory_accesses,
            walk_cycles: (self.walk_cycles - before.walk_cycles).saturating_sub(first_touch),
        }
    }
}

#[cfg(test)]
mod page_ff_tests;
#[cfg(test)]
mod psc_tests;
#[cfg(test)]
mod walk_tests;
#[cfg(test)]
mod tests;
