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
pub mod wear;

pub use self::core::{Core, CoreStats};
pub use alloc::Colour;
pub use config::{MachineConfig, PageTableConfig, TiersConfig};
pub use error::{Direction, MechError};
pub use events::{Birthplace, FaultEvent, FaultKind, MemEvent, MemKind, Observer, PlaceEvent, RefOutcome, ScanEvent, TlbMissEvent};
pub use ids::{PageRef, TierId};
pub use redirect::{NoRedirect, Redirect};
pub use rmap::Owner;
use sampled::{CostModel, RecencyFilter, DETAILED, FAST, FIT};
pub use space::{PageInfo, TenantKind};
pub use tier::TierStats;

use crate::trace::Access;
use crate::units::Size;
use memory::{Memory, Tiers};
use page_table::{WalkPath, ACCESSED, DIRTY, POISONED, TRAP};
use psc::PagingStructureCaches;
use placement::Placement;
use redirect::{Layout, PathCtx};
use space::Space;
use tier::Tier;
use tlb::{TlbEntry, TlbHit, NO_SLOT};
use verify::Shadow;

/// Static facts about one tier.
#[derive(Clone, Debug)]
pub struct TierInfo {
    pub name: String,
    /// Capacity in base frames.
    pub frames: u64,
    /// First frame number (tiers start at 1 GiB boundaries).
    pub base_pfn: u64,
    /// Row-miss read latency in ns (the tier's typical access latency).
    pub read_ns: f64,
    /// Row-miss write latency in ns.
    pub write_ns: f64,
    /// Peak bandwidth of all channels in GB/s.
    pub gbps: f64,
    /// Tier-local physical-address bits that select the channel and the bank within
    /// it, least significant first (the mapping in effect, default or configured).
    pub channel_bits: Vec<u8>,
    pub bank_bits: Vec<u8>,
}

/// Static facts about the machine a policy may read; built once per run.
#[derive(Clone, Debug)]
pub struct MachineInfo {
    pub cores: usize,
    pub freq_ghz: f64,
    pub huge_page_bytes: u64,
    /// The tiers, fastest first (index with [`TierId::index`] or use [`MachineInfo::tier`]).
    pub tiers: Vec<TierInfo>,
    /// Cycles per cache line flushed (`machine.costs.clflush_cycles_per_line`) and of
    /// a TLB shootdown (`machine.costs.shootdown_cycles`), for policies' cost models.
    pub clflush_cycles_per_line: u64,
    pub shootdown_cycles: u64,
    /// Software work of migrating one page besides its copy, in ns
    /// (`machine.costs.migrate_software_ns`), and the line reads a CPU copy keeps in
    /// flight (`machine.costs.cpu_copy_lines_in_flight`), for policies' cost models.
    pub migrate_software_ns: f64,
    pub cpu_copy_lines_in_flight: u32,
    /// Latency of a fault on a poisoned PTE, in ns (`machine.costs.poison_fault_ns`).
    pub poison_fault_ns: f64,
    /// Bytes the run's workloads touch.
    pub footprint_bytes: u64,
    /// References the run will simulate, when its sources know (0 = unknown); lets a
    /// policy scale periods given in seconds of a long real run to a short trace.
    pub total_refs: u64,
    /// Tenants (address spaces) of the run.
    pub tenants: usize,
    /// Of them, VMs.
    pub vm_tenants: usize,
    /// Whether first touch maps huge pages (transparent huge pages).
    pub thp: bool,
    /// Whether the fast tier is the machine's cache of the slow one (Optane Memory
    /// Mode): no page or page table ever lives there.
    pub fast_hidden: bool,
    /// The cache hierarchy's configuration (for a policy's functional model of it).
    pub caches: Vec<cache::CacheConfig>,
    /// Whether the run reaches the papers' time scales (epochs mode): periods that a
    /// policy would scale to a short run are run in seconds (module
    /// `monitor::pacer`).
    pub paper_periods: bool,
}

impl MachineInfo {
    /// Levels of the cache hierarchy: a reference whose `RefOutcome::level` is this
    /// many missed every cache and was served by memory.
    pub fn cache_levels(&self) -> usize {
        self.caches.len()
    }

    pub fn tier(&self, t: TierId) -> &TierInfo {
        &self.tiers[t.index()]
    }

    /// Whether the machine has tier `t`.
    pub fn has(&self, t: TierId) -> bool {
        t.index() < self.tiers.len()
    }

    /// Core cycles in `seconds` of simulated time.
    pub fn cycles(&self, seconds: f64) -> u64 {
        (seconds * self.freq_ghz * 1e9) as u64
    }

    /// Simulated seconds of `cycles` core cycles.
    pub fn seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / (self.freq_ghz * 1e9)
    }
}

/// What a run builds the machine with beyond its configuration: the run's tenants
/// and size, and what the policy requires (`crate::policy::Requirements`).
#[derive(Clone, Debug)]
pub struct Build<S> {
    pub tenants: Vec<TenantKind>,
    /// Bytes the workloads touch (tier capacities may be shares of it).
    pub footprint: u64,
    /// References the run will simulate (0 = unknown).
    pub total_refs: u64,
    /// Map huge pages on first touch.
    pub thp: bool,
    pub placement: Placement,
    /// Grow the fast tier to hold the whole footprint (the all-fast bound).
    pub fast_holds_footprint: bool,
    /// Free fast-tier frames first touch leaves alone while a slower tier has room.
    pub fast_reserve: u64,
    /// The redirection structure's specification.
    pub redirect: S,
    /// Keep shadow memory (`--verify`).
    pub verify: bool,
    /// Epochs mode: the papers' periods are run as they are.
    pub paper_periods: bool,
}

impl<S: Default> Build<S> {
    /// A build with the configuration's page size and first-touch placement in the
    /// fastest tier, no redirection, no verification.
    pub fn new(cfg: &MachineConfig, tenants: &[TenantKind], footprint: u64) -> Build<S> {
        Build {
            tenants: tenants.to_vec(),
            footprint,
            total_refs: 0,
            thp: cfg.page_table.thp,
            placement: Placement::FastFirst,
            fast_holds_footprint: false,
            fast_reserve: 0,
            redirect: S::default(),
            verify: false,
            paper_periods: false,
        }
    }
}

/// How the tier capacities came out, and why.
struct Capacities {
    bytes: Vec<u64>,
    /// Frames of the slow tier reserved for the redirection structure's metadata.
    reserved: u64,
}

/// Resolves every tier's capacity for a build: shares of the footprint rounded up to
/// huge pages, the fast tier grown for the all-fast bound, the slow tier grown by the
/// metadata frames the redirection structure reserves when it is a share. (Whether the
/// footprint fits is checked by [`room`], after the policy has seen the plan and could
/// name what it needs: when the machine is built, and by a run before it builds its
/// workloads.)
fn capacities<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<Capacities> {
    let huge_bytes = cfg.page_table.huge_page.bytes();
    let mut bytes = Vec::new();
    let mut reserved = 0;
    for (i, t) in cfg.tiers.all().into_iter().enumerate() {
        let id = TierId(i as u8);
        let mut c = t.capacity.resolve(b.footprint, huge_bytes);
        if id == TierId::FAST && b.fast_holds_footprint {
            // Room for every page plus its page tables (≤ 1/256 of the data with
            // 4 KiB pages, rounded up generously).
            c = c.max((b.footprint + b.footprint / 128 + (64 << 20)).div_ceil(huge_bytes) * huge_bytes);
        }
        if id == TierId::SLOW && R::hides_fast_tier(&b.redirect) && t.capacity.is_share() {
            // The slow tier is all the OS has: room for every page and its page tables.
            c = c.max((b.footprint + b.footprint / 128 + (64 << 20)).div_ceil(huge_bytes) * huge_bytes);
        }
        if id == TierId::SLOW {
            reserved = R::reserved_frames(&b.redirect, c >> 12, huge_bytes >> 12);
            if reserved > 0 && t.capacity.is_share() {
                // The reserve is on top of a share of the footprint, and is itself
                // covered by the structure (two rounds settle it: it is tiny).
                let grown = c + (reserved << 12).div_ceil(huge_bytes) * huge_bytes;
                reserved = R::reserved_frames(&b.redirect, grown >> 12, huge_bytes >> 12);
                c += (reserved << 12).div_ceil(huge_bytes) * huge_bytes;
            }
        }
        if c == 0 {
            anyhow::bail!("{}.capacity: resolves to 0 bytes for a footprint of {}", TiersConfig::field(id), Size(b.footprint));
        }
        bytes.push(c);
    }
    Ok(Capacities { bytes, reserved })
}

/// Checks that the footprint fits the tiers, less what the redirection structure
/// reserves, and returns the bytes of the fast tier it reserves. The message names
/// the footprint, the tiers' total and the capacities to raise.
fn room<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>, caps: &Capacities) -> anyhow::Result<u64> {
    let huge_bytes = cfg.page_table.huge_page.bytes();
    let hide_fast = R::hides_fast_tier(&b.redirect);
    let fast_reserved = if hide_fast { caps.bytes[0] } else { R::reserved_fast_huge_frames(&b.redirect, caps.bytes[0], huge_bytes) * huge_bytes };
    if fast_reserved >= caps.bytes[0] && !hide_fast {
        anyhow::bail!(
            "machine.tiers.fast.capacity: {} cannot hold the {} the machine's redirection structure reserves in it",
            Size(caps.bytes[0]),
            Size(fast_reserved)
        );
    }
    let total: u64 = caps.bytes.iter().sum::<u64>() - (caps.reserved << 12) - fast_reserved;
    if b.footprint > total {
        // A fast tier that is the machine's cache holds no pages: only the others help.
        let first = if hide_fast { 1 } else { 0 };
        let fields: Vec<String> = (first..caps.bytes.len()).map(|i| format!("{}.capacity", TiersConfig::field(TierId(i as u8)))).collect();
        anyhow::bail!(
            "machine.tiers: the footprint ({}) is larger than all tiers together ({}{}); raise {} (together they lack {})",
            Size(b.footprint),
            Size(total),
            if hide_fast {
                format!(", the fast tier's {} being the machine's cache", Size(fast_reserved))
            } else if caps.reserved > 0 || fast_reserved > 0 {
                format!(" after {} of metadata", Size((caps.reserved << 12) + fast_reserved))
            } else {
                String::new()
            },
            fields.join(" or "),
            Size(b.footprint - total)
        );
    }
    Ok(fast_reserved)
}

impl MachineInfo {
    /// Checks, from the configuration alone, that the footprint of `b` fits the tiers
    /// as [`Machine::new`] will size them: a run checks it before it builds its
    /// workloads, which takes minutes for some.
    pub fn check_room<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<()> {
        cfg.validate()?;
        let caps = capacities::<R>(cfg, b)?;
        room::<R>(cfg, b, &caps).map(|_| ())
    }

    /// The machine a configuration and build describe, before it is built.
    pub fn plan<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<MachineInfo> {
        cfg.validate()?;
        let caps = capacities::<R>(cfg, b)?;
        Ok(MachineInfo::with_capacities(cfg, b, &caps.bytes, R::hides_fast_tier(&b.redirect)))
    }

    fn with_capacities<S>(cfg: &MachineConfig, b: &Build<S>, bytes: &[u64], fast_hidden: bool) -> MachineInfo {
        let frames: Vec<u64> = bytes.iter().map(|c| c >> 12).collect();
        let bases = alloc::tier_bases(&frames);
        let tiers = cfg
            .tiers
            .all()
            .into_iter()
            .zip(frames.iter().zip(bases))
            .map(|(t, (&frames, base_pfn))| {
                let (channel_bits, bank_bits) = t.mapping_bits().unwrap_or_default();
                TierInfo {
                    name: t.name.clone(),
                    frames,
                    base_pfn,
                    read_ns: t.read_miss_ns,
                    write_ns: t.write_miss_ns,
                    gbps: t.channel_gbps * t.channels as f64,
                    channel_bits,
                    bank_bits,
                }
            })
            .collect();
        MachineInfo {
            cores: cfg.cores,
            freq_ghz: cfg.freq_ghz,
            huge_page_bytes: cfg.page_table.huge_page.bytes(),
            tiers,
            clflush_cycles_per_line: cfg.costs.clflush_cycles_per_line,
            shootdown_cycles: cfg.costs.shootdown_cycles,
            migrate_software_ns: cfg.costs.migrate_software_ns,
            cpu_copy_lines_in_flight: cfg.costs.cpu_copy_lines_in_flight,
            poison_fault_ns: cfg.costs.poison_fault_ns,
            footprint_bytes: b.footprint,
            total_refs: b.total_refs,
            tenants: b.tenants.len(),
            vm_tenants: b.tenants.iter().filter(|&&k| k == TenantKind::Vm).count(),
            thp: b.thp,
            caches: cfg.caches.clone(),
            fast_hidden,
            paper_periods: b.paper_periods,
        }
    }
}

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
    pub fn new(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<Machine<R>> {
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
            epochs: None,
            timing: Timing {
                cpi_fp: (cfg.base_cpi * FP as f64).round() as u64,
                inv_mlp_fp: (FP as f64 / cfg.mlp).round() as u64,
                l1_latency: cfg.caches[0].latency_cycles,
                l2_tlb_cycles: cfg.tlb.l2_latency_cycles,
                psc_cycles: cfg.tlb.psc.latency_cycles,
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

    /// Prepares sampled mode: the recency filter gets as many lines as the LLC.
    pub fn start_sampling(&mut self) {
        let llc = self.cfg.caches.last().map_or(1 << 17, |c| c.size.bytes() / 64);
        self.recent = RecencyFilter::new(llc);
    }

    /// Starts a fitting window of sampled mode on `core` (module [`sampled`]).
    pub fn begin_fit(&mut self, core: usize) {
        self.models[core].begin_fit(self.cores[core].clock);
    }

    /// Ends a fitting window of sampled mode on `core`: its cost model is refitted.
    pub fn end_fit(&mut self, core: usize) {
        self.models[core].end_fit(self.cores[core].clock);
    }

    /// Ends a fast-forward window on `core`: the cache lookups it skipped are added to
    /// the caches' hit and miss counts as the cost model estimates them.
    pub fn end_fast_forward(&mut self, core: usize) {
        let served = self.models[core].estimated_levels();
        self.mem.caches.add_estimated(&served);
    }

    /// Sampled mode's cost models, one per core.
    pub fn cost_models(&self) -> &[CostModel] {
        &self.models
    }

    /// The configuration as built.
    pub fn cfg(&self) -> &MachineConfig {
        &self.cfg
    }

    /// Static facts about the machine.
    pub fn info(&self) -> &MachineInfo {
        &self.info
    }

    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    pub fn space(&self) -> &Space {
        &self.space
    }

    pub fn redirect(&self) -> &R {
        &self.redirect
    }

    pub fn stats(&self) -> &ops::MechanismStats {
        &self.stats
    }

    /// VM exits by cause and PML traffic.
    pub fn vmx(&self) -> &vmx::VmxStats {
        &self.vmx.stats
    }

    /// Pages moved by each way of moving a page (module `hypervisor`), and the waits
    /// they caused.
    pub fn vm_moves(&self) -> &hypervisor::VmMoveStats {
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
    pub fn verified_reads(&self) -> u64 {
        self.shadow.as_ref().map_or(0, |s| s.checked_reads)
    }

    /// The first error met inside the reference path, taken.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// Simulated time so far: the largest core clock.
    pub fn now(&self) -> u64 {
        self.cores.iter().map(|c| c.clock).max().unwrap_or(0)
    }

    pub fn huge_shift(&self) -> u32 {
        self.cfg.huge_shift()
    }

    /// Sets a tenant's fast-tier quota in frames before the run (the engine, from the
    /// workloads' fast shares); policies change it through the mechanisms.
    pub fn set_fast_quota(&mut self, tenant: u16, frames: Option<u64>) {
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
    #[inline(always)]
    pub fn access<O: Observer>(&mut self, core: usize, a: &Access, obs: &mut O) -> RefOutcome {
        self.access_in::<DETAILED, O>(core, a, obs)
    }

    /// [`Machine::access`] in one of sampled mode's ways (module [`sampled`]):
    /// `DETAILED`, the full model; `FIT`, the full model recording what the core's cost
    /// model is fitted on; `FAST`, fast-forward — translation, faults and Accessed/Dirty
    /// bits exact, the caches skipped and their time taken from the cost model, and
    /// memory reached as often as the model says. `FAST` needs a machine without a
    /// redirection structure.
    #[inline(always)]
    pub fn access_in<const M: u8, O: Observer>(&mut self, core: usize, a: &Access, obs: &mut O) -> RefOutcome {
        debug_assert!(M != FAST || R::PLAIN, "fast-forward on a machine with a redirection structure");
        let write = a.is_write();
        let tenant = a.tenant;
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
        let (entry, mut translation, mut found) = match c.tlb.lookup_l1(tenant, a.vaddr) {
            Some(e) => (e, 0, Some(TlbHit::L1)),
            None => match self.translate_miss::<M, O>(core, tenant, a.vaddr, write, obs) {
                Some(t) => t,
                None => return RefOutcome::default(),
            },
        };
        if write && !entry.dirty {
            // x86 sets the dirty bit with a locked update of the PTE on the first store
            // through a clean TLB entry.
            translation += self.set_dirty_bit::<M, O>(core, tenant, a.vaddr, &entry, translation, obs);
        }
        let mut pfn = if entry.huge { entry.base_pfn + ((a.vaddr >> 12) & (self.space.huge_frames() - 1)) } else { entry.base_pfn };
        let mut at_memory = 0;
        if R::TRANSLATES {
            let mut path = PathCtx::of(core, &mut self.cores[core], &mut self.mem, self.timing.l2_tlb_cycles);
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

        let at = c.clock;
        // (The tier of the data only matters to sampled mode's model.)
        let tier = if M == FIT || M == FAST { self.mem.tiers.tier_of(pfn).index() } else { 0 };
        let (recent, evicted) = if M == DETAILED { (false, None) } else { self.recent.touch(paddr, M == FAST && write) };
        if let Some(line) = evicted {
            // A line only fast-forward wrote leaves the filter: written back as the LLC
            // would.
            self.redirect.memory(&mut self.mem.tiers, core, line, true, MemKind::Writeback, at, false, obs);
        }
        let (level, mut latency) = if M == FAST {
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
        }
        if self.shadow.is_some() {
            let served = self.redirect.served(pfn);
            self.check_shadow(tenant, a.vaddr, pfn, served, write);
        }
        RefOutcome { translation_cycles: translation, data_cycles: beyond_l1, paddr, level }
    }

    /// Host-side prefetch for a reference a few places ahead: starts loading its leaf
    /// page-table entry, if a walk of its region told the core where the leaves are
    /// (`core::LeafHints`). Changes nothing simulated. (It takes `gups` at 8 GiB, whose
    /// leaf entries are a 16 MiB array read at random, from 4.8 to 7.5 M references a
    /// second; BENCHMARKS.md, issue 41.)
    #[inline(always)]
    pub fn prefetch_far(&self, core: usize, a: &Access) {
        self.cores[core].leaf_hints.prefetch(a.vaddr);
    }

    /// Sets the Dirty bit of the PTE behind `entry` with a write through the caches
    /// issued `after` cycles into the reference; returns its latency.
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
            lat = self.walk_cached::<M, O>(core, pa, true, at, obs).1;
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
        self.walk_cached::<M, O>(core, hpa, true, at, obs).1
    }

    /// One page-walk reference (or PTE update) of `core` to `pa` at cycle `at`: through
    /// the caches, recorded for the cost model when fitting, or priced by the model in
    /// fast-forward (reaching memory as often as the model says). Returns the level that
    /// served it and its latency.
    #[inline(always)]
    fn walk_cached<const M: u8, O: Observer>(&mut self, core: usize, pa: u64, write: bool, at: u64, obs: &mut O) -> (usize, u64) {
        if M == FAST {
            let (lat, memory) = self.models[core].walk();
            if memory {
                self.redirect.memory(&mut self.mem.tiers, core, pa, false, MemKind::Walk, at, false, obs);
            }
            return (if memory { self.mem.caches.depth() } else { 0 }, lat);
        }
        let (level, lat) = self.mem.cached(&mut self.redirect, core, pa, write, MemKind::Walk, at, false, obs);
        if M == FIT {
            self.models[core].record_walk(level, lat);
        }
        (level, lat)
    }

    /// Walk references `refs` (physical addresses of page-table entries) through the
    /// caches, each issued when the previous one has completed, from cycle `start`;
    /// returns their latency. The walk's counters are updated once. (Inlined into the
    /// walks: a call of its own cost about 18 instructions a TLB miss.)
    #[inline(always)]
    fn walk_refs<const M: u8, O: Observer>(&mut self, core: usize, refs: &[u64], start: u64, obs: &mut O) -> u64 {
        let depth = self.mem.caches.depth();
        let mut cycles = 0;
        let mut memory = 0;
        for &pa in refs {
            let (level, lat) = self.walk_cached::<M, O>(core, pa, false, start + cycles, obs);
            cycles += lat;
            memory += (level == depth) as u64;
        }
        let s = &mut self.cores[core].stats;
        s.walk_references += refs.len() as u64;
        s.walk_memory_accesses += memory;
        cycles
    }

    /// Looks up the paging-structure caches of `core` for a walk of `addr` that reads
    /// `len` entries, top level first (`guest`: of a VM's guest table). Returns how many
    /// leading entries the walk skips (a hit at level k leaves levels k − 1 down to the
    /// leaf, which is always read) and the lookup's cycles; (0, 0) with the caches off.
    #[inline]
    fn psc_lookup(&mut self, core: usize, tenant: u16, guest: bool, addr: u64, len: usize) -> (usize, u64) {
        let levels = self.cfg.page_table.levels;
        let Some(psc) = self.cores[core].tlb.psc_mut() else { return (0, 0) };
        (psc_skip(psc, levels, tenant, guest, addr, len), self.timing.psc_cycles)
    }

    /// Fills the paging-structure caches of `core` with the non-leaf entries a walk of
    /// `addr` read: entries `from..` of `path` but the leaf, each pointing to the table
    /// that holds the path's next entry. For a guest table (`guest`), `path` holds the
    /// host-physical addresses of the guest's entries, as combined entries cache them.
    #[inline]
    fn psc_fill(&mut self, core: usize, tenant: u16, guest: bool, addr: u64, from: usize, path: &WalkPath) {
        let levels = self.cfg.page_table.levels;
        let Some(psc) = self.cores[core].tlb.psc_mut() else { return };
        psc_fill_path(psc, levels, tenant, guest, addr, from, path);
    }

    /// Translates `addr` in tenant's managed table with a timed walk starting `after`
    /// cycles into the reference, mapping the page on first touch; the references the
    /// paging-structure caches skip are not issued. Returns (leaf entry, whether it is
    /// huge, walk cycles, leaf slot, host address of the leaf's node). (Inlined into the
    /// TLB miss, whose common part it is, and into the nested walk.)
    #[inline(always)]
    fn managed_walk<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, write: bool, after: u64, obs: &mut O) -> Option<(u64, bool, u64, usize, usize)> {
        let mut path = WalkPath::default();
        let mut extra = 0;
        // The walk sets the leaf's Accessed and Dirty bits as it reads it: nothing the
        // walk's references do through the caches reads the table.
        let table = &mut self.space.tenant_mut(tenant).table;
        let (leaf, e, newly_dirty, node) = match table.walk_marking(addr, &mut path, write) {
            Some((l, e, d)) => (l, e, d, table.node_host_addr(l.slot)),
            None => {
                extra = self.first_touch(core, tenant, addr, obs)?;
                path = WalkPath::default();
                let table = &mut self.space.tenant_mut(tenant).table;
                let (l, e, d) = table.walk_marking(addr, &mut path, write).expect("page mapped by first touch");
                (l, e, d, table.node_host_addr(l.slot))
            }
        };
        // The core borrowed once for its clock and paging-structure caches.
        let levels = self.cfg.page_table.levels;
        let c = &mut self.cores[core];
        let (skip, lookup) = match c.tlb.psc_mut() {
            Some(psc) => {
                let skip = psc_skip(psc, levels, tenant, false, addr, path.len);
                psc_fill_path(psc, levels, tenant, false, addr, skip, &path);
                (skip, self.timing.psc_cycles)
            }
            None => (0, 0),
        };
        let start = c.clock + after + extra + lookup;
        let cycles = self.walk_refs::<M, O>(core, &path.as_slice()[skip..], start, obs) + extra + lookup;
        // PML is on only for VMs, whose managed table is the EPT.
        if newly_dirty && self.vmx.pml_on(tenant) {
            self.pml_log(core, tenant, addr);
        }
        Some((e, leaf.huge, cycles, leaf.slot, node))
    }

    /// A two-dimensional walk: every guest page-table reference is a guest-physical
    /// address that needs its own walk of the extended page table (up to 24 references
    /// for 4 KiB/4 KiB with 4 levels, 15 for huge/huge), fewer when the paging-structure
    /// caches hold upper entries of either dimension. Returns the host leaf entry of
    /// the data page adjusted to the TLB entry's size, whether that size is huge, the
    /// cycles, the guest-physical address, and whether the host (EPT) page is huge.
    fn nested_walk<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, gva: u64, write: bool, obs: &mut O) -> Option<(u64, bool, u64, u64, bool)> {
        let huge_mask = self.space.huge_bytes() - 1;
        let mut gpath = WalkPath::default();
        let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
        let gleaf = match guest.walk(gva, Some(&mut gpath)) {
            Some(l) => l,
            None => {
                self.guest_first_touch(tenant, gva);
                gpath = WalkPath::default();
                let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
                guest.walk(gva, Some(&mut gpath)).expect("just mapped")
            }
        };
        let (first, mut cycles) = self.psc_lookup(core, tenant, true, gva, gpath.len);
        // With EPT A/D logging on (PML), accesses to guest page-table entries count as
        // writes for the EPT's A/D bits (module `vmx`).
        let gpt_write = self.vmx.pml_on(tenant);
        // The host-physical addresses of the guest entries read.
        let mut hpath = WalkPath { len: gpath.len, ..WalkPath::default() };
        // Each guest page-table entry: translate its guest-physical address, then read it.
        for i in first..gpath.len {
            let gpa = gpath.addrs[i];
            // After a hit, the combined paging-structure-cache entry holds the host
            // address of the table of the first entry read: no EPT walk for that one.
            let cached = if i == first && first > 0 { self.host_addr(tenant, gpa) } else { None };
            let hpa = match cached {
                Some(hpa) => hpa,
                None => {
                    let (e, huge, c, _, _) = self.managed_walk::<M, O>(core, tenant, gpa, gpt_write, cycles, obs)?;
                    cycles += c;
                    let mask = if huge { huge_mask } else { 0xfff };
                    (e >> 12) << 12 | (gpa & mask)
                }
            };
            hpath.addrs[i] = hpa;
            let at = self.cores[core].clock + cycles;
            let (_, lat) = self.walk_cached::<M, O>(core, hpa, false, at, obs);
            cycles += lat;
            self.cores[core].stats.walk_references += 1;
        }
        self.psc_fill(core, tenant, true, gva, first, &hpath);
        let guest = &mut self.space.tenant_mut(tenant).guest.as_mut().expect("VM tenant").table;
        let ge = guest.entry_mut(gleaf.slot);
        *ge |= ACCESSED | if write { DIRTY } else { 0 };
        let guest_dirty = *ge & DIRTY != 0;
        let gmask = if gleaf.huge { huge_mask } else { 0xfff };
        let gpa = (*ge >> 12) << 12 | (gva & gmask);
        let (he, hhuge, c, _, _) = self.managed_walk::<M, O>(core, tenant, gpa, write, cycles, obs)?;
        cycles += c;
        // The combined entry is dirty only if both dimensions are: a first store sets
        // whichever Dirty bit is still clear.
        let he = if guest_dirty { he } else { he & !DIRTY };
        let flags = he & 0xfff;
        if gleaf.huge && hhuge {
            Some((he, true, cycles, gpa, hhuge))
        } else {
            // Cache at 4 KiB: the host frame of this base page.
            let hmask = if hhuge { huge_mask } else { 0xfff };
            let hpfn = ((he >> 12) << 12 | (gpa & hmask)) >> 12;
            Some((hpfn << 12 | flags, false, cycles, gpa, hhuge))
        }
    }

    /// Translates after a miss in the L1 TLBs: the L2 TLB, whose hit refills the L1;
    /// on a miss there too, a walk (two-dimensional for VMs) that takes poison faults
    /// and fills the TLBs. Returns the entry, the cycles spent and the TLB level that
    /// hit (`None` after a walk); `None` if memory ran out.
    #[inline(never)]
    fn translate_miss<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, write: bool, obs: &mut O) -> Option<(TlbEntry, u64, Option<TlbHit>)> {
        if let Some(e) = self.cores[core].tlb.lookup_l2(tenant, vaddr) {
            return Some((e, self.timing.l2_tlb_cycles, Some(TlbHit::L2)));
        }
        self.cores[core].stats.tlb_misses += 1;
        let (entry, huge, mut cycles, addr, managed_huge, slot, node) = if self.space.tenants()[tenant as usize].guest.is_none() {
            let (e, huge, c, slot, node) = self.managed_walk::<M, O>(core, tenant, vaddr, write, 0, obs)?;
            (e, huge, c, vaddr, huge, slot as u32, (!huge).then_some(node))
        } else {
            let (e, huge, c, gpa, ept_huge) = self.nested_walk::<M, O>(core, tenant, vaddr, write, obs)?;
            (e, huge, c, gpa, ept_huge, NO_SLOT, None)
        };
        let poisoned = entry & POISONED != 0;
        if poisoned {
            // BadgerTrap (Thermostat §3.3): the walk finds a poisoned PTE and traps; the
            // handler installs the translation, so later hits in the TLB do not fault.
            let fault = self.timing.poison_fault_cycles;
            cycles += fault;
            self.cores[core].stats.poison_faults += 1;
            self.cores[core].stats.fault_cycles += fault;
            let page = addr & !(self.space.page_bytes(managed_huge) - 1);
            let number = self.space.page_number(tenant, page);
            obs.on_fault(&FaultEvent { core, tenant, addr: page, page: number, huge: managed_huge, kind: FaultKind::Poison });
        }
        // A page that is moving, or whose move left its entry unfilled.
        let clean = entry & TRAP != 0 && self.spring_trap(core, tenant, addr, managed_huge, write);
        obs.on_tlb_miss(&TlbMissEvent { core, tenant, vaddr, addr, huge, walk_cycles: cycles });
        // The core borrowed once for the rest (nothing above reads what it changes).
        let c = &mut self.cores[core];
        if let Some(node) = node {
            c.leaf_hints.note(vaddr, node);
        }
        c.stats.walk_cycles += cycles - if poisoned { self.timing.poison_fault_cycles } else { 0 };
        // (A VM page mapped small in either dimension comes back from the nested walk
        // as a 4 KiB translation.)
        let tlb_entry = TlbEntry { base_pfn: entry >> 12, huge, dirty: entry & DIRTY != 0 && !clean, slot };
        c.tlb.fill(tenant, vaddr, tlb_entry);
        Some((tlb_entry, cycles, None))
    }

    /// Maps the page holding managed address `addr` of `tenant` on first touch.
    /// Returns the fault cycles, or `None` (with `self.error` set) when memory is full.
    #[cold]
    #[inline(never)]
    fn first_touch<O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, obs: &mut O) -> Option<u64> {
        let prefer = (self.space.placement() == Placement::Chosen).then(|| {
            let fast_free = self.space.allocator().free_frames(TierId::FAST);
            obs.place(&PlaceEvent { core, tenant, addr, huge: self.space.wants_huge(tenant, addr), fast_free })
        });
        let Some(p) = self.space.first_touch(tenant, addr, prefer) else {
            self.error.get_or_insert_with(|| "out of memory: every tier is full (raise a tier's capacity)".into());
            return None;
        };
        let page = self.space.page_number(tenant, p.addr);
        if let Some(s) = &mut self.shadow {
            s.mapped(page, p.pfn, p.frames);
        }
        self.epochs_log(tenant, p.addr, p.frames << 12);
        let c = &mut self.cores[core];
        c.stats.first_touch_faults += 1;
        c.stats.fault_cycles += self.timing.page_fault_cycles;
        obs.on_fault(&FaultEvent { core, tenant, addr: p.addr, page, huge: p.huge, kind: FaultKind::FirstTouch });
        Some(self.timing.page_fault_cycles)
    }
}

/// How many leading entries of a walk of `addr` reading `len` entries the
/// paging-structure caches `psc` let it skip (a hit at level k leaves levels k − 1 down
/// to the leaf, which is always read), in a table of `levels` levels.
#[inline]
fn psc_skip(psc: &mut PagingStructureCaches, levels: u32, tenant: u16, guest: bool, addr: u64, len: usize) -> usize {
    psc.lookup(tenant, guest, addr).map_or(0, |k| ((levels - k + 1) as usize).min(len - 1))
}

/// Fills `psc` with the non-leaf entries a walk of `addr` read: entries `from..` of
/// `path` but the leaf, each pointing to the table that holds the path's next entry.
#[inline]
fn psc_fill_path(psc: &mut PagingStructureCaches, levels: u32, tenant: u16, guest: bool, addr: u64, from: usize, path: &WalkPath) {
    for i in from..path.len - 1 {
        psc.fill(tenant, guest, addr, levels - i as u32, path.addrs[i + 1] >> 12);
    }
}

#[cfg(test)]
mod psc_tests;
#[cfg(test)]
mod tests;
