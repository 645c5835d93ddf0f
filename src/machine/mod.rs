//! The machine: cores with their clocks and TLBs, per-tenant page tables, the cache
//! hierarchy, the memory tiers and the frame allocator, and the per-reference path
//! that runs an [`Access`] through all of them.
//!
//! The machine executes; it never decides. Where pages go on first touch follows the
//! policy's [`Placement`]; everything else a policy wants changed goes through the
//! mechanism layer (`crate::mechanism`), which charges each change its cost.
//!
//! Tenants are processes (one page table, virtual → physical) or virtual machines
//! (a guest page table, guest-virtual → guest-physical, owned by the guest, and an
//! extended page table, guest-physical → host-physical, owned by the host). A
//! tenant's *managed space* is the address space whose pages the host places and
//! moves: virtual addresses for a process, guest-physical addresses for a VM.

pub mod alloc;
pub mod cache;
pub mod copies;
pub mod costs;
pub mod page_table;
pub mod placement;
pub mod setassoc;
pub mod tier;
pub mod tlb;

use crate::trace::Access;
use crate::units::Size;
use alloc::{Colour, FrameAllocator};
use cache::{CacheConfig, Caches};
use copies::{Copies, CopyMode, CopySpec};
use costs::CostConfig;
use page_table::{NodeFrames, PageTable, WalkPath, ACCESSED, DIRTY, POISONED, PRESENT};
use placement::{Placement, Placer};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tier::{Tier, TierConfig};
use tlb::{Tlb, TlbConfig, TlbEntry, TlbHit, NO_SLOT};

/// Page-table geometry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageTableConfig {
    /// Levels of the page table for base pages: 4 (48-bit virtual addresses) or 5 (57-bit).
    pub levels: u32,
    /// Huge-page size: 2MiB (x86-64) by default; 64KiB to 2MiB, a power of two (SpAR uses 512KiB).
    pub huge_page: Size,
    /// Map huge pages on first touch (transparent huge pages), falling back to base
    /// pages when no huge frame is free.
    pub thp: bool,
}

impl PageTableConfig {
    /// Virtual-address bits the page table translates: 48 with 4 levels, 57 with 5.
    pub fn va_bits(&self) -> u32 {
        if self.levels == 5 {
            57
        } else {
            48
        }
    }
}

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig { levels: 4, huge_page: Size(2 << 20), thp: false }
    }
}

/// The memory tiers, fastest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TiersConfig {
    /// Tier 0: the fast tier (DRAM, HBM).
    pub fast: TierConfig,
    /// Tier 1: the slow tier (NVM, CXL memory).
    pub slow: TierConfig,
    /// Tiers 2, 3, …: further, slower tiers, in order.
    pub extra: Vec<TierConfig>,
}

impl Default for TiersConfig {
    fn default() -> Self {
        TiersConfig { fast: TierConfig::default(), slow: tier::pcm_default(), extra: Vec::new() }
    }
}

impl TiersConfig {
    pub fn all(&self) -> Vec<&TierConfig> {
        let mut v = vec![&self.fast, &self.slow];
        v.extend(self.extra.iter());
        v
    }

    /// The dotted path of tier `i` in the configuration.
    pub fn field(i: usize) -> String {
        match i {
            0 => "machine.tiers.fast".into(),
            1 => "machine.tiers.slow".into(),
            n => format!("machine.tiers.extra[{}]", n - 2),
        }
    }
}

/// The whole machine. Core, TLB and cache defaults are Rainbow's Table IV (§IV-A).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MachineConfig {
    /// Number of cores; each has its own clock, TLBs and private caches.
    pub cores: usize,
    /// Core clock in GHz (Rainbow Table IV: 3.2).
    pub freq_ghz: f64,
    /// Cycles per instruction when no memory stall occurs (covers L1 hits and L1 TLB
    /// hits). 1.0 is an assumption, as Ramulator's CPU model executes non-memory
    /// instructions in one cycle (SpAR §4).
    pub base_cpi: f64,
    /// Memory-level parallelism: independent memory stalls are divided by this;
    /// dependent loads (pointer chasing) pay their full latency. 2 is an assumption
    /// (the papers' simulators model out-of-order cores instead of a factor).
    pub mlp: f64,
    pub tlb: TlbConfig,
    /// Cache levels, closest to the core first.
    pub caches: Vec<CacheConfig>,
    pub page_table: PageTableConfig,
    pub tiers: TiersConfig,
    pub costs: CostConfig,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            cores: 1,
            freq_ghz: 3.2,
            base_cpi: 1.0,
            mlp: 2.0,
            tlb: TlbConfig::default(),
            caches: cache::default_hierarchy(),
            page_table: PageTableConfig::default(),
            tiers: TiersConfig::default(),
            costs: CostConfig::default(),
        }
    }
}

impl MachineConfig {
    /// Checks everything that does not depend on the workload.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        if self.cores == 0 || self.cores > 1024 {
            bail!("machine.cores: must be between 1 and 1024, got {}", self.cores);
        }
        for (name, v) in [("freq_ghz", self.freq_ghz), ("base_cpi", self.base_cpi), ("mlp", self.mlp)] {
            if !(v.is_finite() && v > 0.0) {
                bail!("machine.{name}: must be a positive number, got {v}");
            }
        }
        if self.mlp < 1.0 {
            bail!("machine.mlp: must be at least 1, got {}", self.mlp);
        }
        self.tlb.validate()?;
        if self.caches.is_empty() {
            bail!("machine.caches: at least one cache level is required");
        }
        for (i, c) in self.caches.iter().enumerate() {
            c.validate(i)?;
        }
        let pt = &self.page_table;
        if pt.levels != 4 && pt.levels != 5 {
            bail!("machine.page_table.levels: must be 4 or 5, got {}", pt.levels);
        }
        let h = pt.huge_page.bytes();
        if !h.is_power_of_two() || !(64 << 10..=2 << 20).contains(&h) {
            bail!("machine.page_table.huge_page: must be a power of two from 64KiB to 2MiB, got {}", pt.huge_page);
        }
        self.costs.validate()?;
        Ok(())
    }

    pub fn huge_shift(&self) -> u32 {
        self.page_table.huge_page.bytes().trailing_zeros()
    }

    pub fn cycles(&self, ns: f64) -> u64 {
        (ns * self.freq_ghz).round() as u64
    }
}

/// Process or virtual machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TenantKind {
    #[default]
    Process,
    Vm,
}

/// The guest side of a VM tenant.
#[derive(Clone, Debug)]
pub struct Guest {
    /// Guest-virtual → guest-physical; its node frames are guest-physical frames.
    pub table: PageTable,
    /// Next free guest-physical frame (the guest allocates its memory linearly).
    next_gpfn: u64,
}

struct GuestFrames<'a>(&'a mut u64);

impl NodeFrames for GuestFrames<'_> {
    fn alloc_node_frame(&mut self) -> Option<u64> {
        *self.0 += 1;
        Some(*self.0 - 1)
    }
    fn free_node_frame(&mut self, _frame: u64) {}
}

/// One address space.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub kind: TenantKind,
    /// The managed table: virtual → physical for a process, guest-physical →
    /// host-physical (EPT) for a VM.
    pub table: PageTable,
    pub guest: Option<Guest>,
    /// Data frames of this tenant in each tier (a huge page counts all its frames).
    pub frames_in: Vec<u64>,
    /// Most frames this tenant may hold in the fast tier (tier 0); `None` = no limit.
    /// First touch places the tenant's pages elsewhere once it is reached, and the
    /// mechanisms refuse moves that would exceed it (HMM-V's per-VM DRAM, §4.4). A
    /// quota lowered at run time may be exceeded until the policy moves pages out.
    pub fast_quota: Option<u64>,
}

impl Tenant {
    /// Whether `frames` more frames fit in tier `t` under the tenant's quota.
    #[inline]
    pub fn fits(&self, t: usize, frames: u64) -> bool {
        t != 0 || self.fast_quota.is_none_or(|q| self.frames_in[0] + frames <= q)
    }

    /// Data frames mapped in every tier.
    pub fn mapped_frames(&self) -> u64 {
        self.frames_in.iter().sum()
    }
}

/// Owner of a physical frame: what the reverse map records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    Free,
    /// A data page: tenant and the managed-space address of this base frame's page.
    Data { tenant: u16, addr: u64 },
    /// A page-table node frame.
    PageTable,
    /// The second frame of a page kept in two tiers (see [`copies`]): Rainbow's fast
    /// copy of a slow page, or HSCC's slow original of a page remapped to its copy.
    Copy { tenant: u16, addr: u64 },
    /// Machine metadata in memory (Rainbow's migration bitmap).
    Metadata,
}

const OWNER_DATA: u64 = 1 << 62;
const OWNER_PT: u64 = 2 << 62;
const OWNER_METADATA: u64 = 2 << 62 | 1;
const OWNER_COPY: u64 = 3 << 62;

#[inline]
fn encode_owner(tenant: u16, addr: u64) -> u64 {
    OWNER_DATA | (tenant as u64) << 45 | addr >> 12
}

fn decode_owner(w: u64) -> Owner {
    let tenant = ((w >> 45) & 0xffff) as u16;
    let addr = (w & ((1 << 45) - 1)) << 12;
    match w >> 62 {
        0 => Owner::Free,
        1 => Owner::Data { tenant, addr },
        2 if w == OWNER_METADATA => Owner::Metadata,
        2 => Owner::PageTable,
        _ => Owner::Copy { tenant, addr },
    }
}

/// Where a memory access came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// A load or store of the program that missed every cache.
    Demand,
    /// A page-walk reference that missed every cache.
    Walk,
    /// A dirty line written back from the last-level cache.
    Writeback,
    /// A read or write of machine metadata by the memory controller (Rainbow's
    /// migration bitmap and the pointer in a migrated page), not through the caches.
    Metadata,
}

/// A memory-controller-level access, as hardware counters at the controller see it.
#[derive(Clone, Copy, Debug)]
pub struct MemEvent {
    pub core: usize,
    pub paddr: u64,
    pub tier: usize,
    pub write: bool,
    pub kind: MemKind,
    pub latency: u64,
}

/// A TLB miss and the walk that served it.
#[derive(Clone, Copy, Debug)]
pub struct TlbMissEvent {
    pub core: usize,
    pub tenant: u16,
    pub vaddr: u64,
    /// Managed-space address of the page (the guest-physical address for VMs).
    pub addr: u64,
    pub huge: bool,
    pub walk_cycles: u64,
}

/// Why a fault was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// First touch of a page: it was just mapped.
    FirstTouch,
    /// TLB miss to a poisoned page.
    Poison,
}

#[derive(Clone, Copy, Debug)]
pub struct FaultEvent {
    pub core: usize,
    pub tenant: u16,
    /// Managed-space address of the faulting page.
    pub addr: u64,
    pub huge: bool,
    pub kind: FaultKind,
}

/// Receives the machine's events while it runs a reference. The engine passes the
/// policy; every method is a no-op by default and inlined away when not overridden.
pub trait Observer {
    #[inline]
    fn on_tlb_miss(&mut self, _e: &TlbMissEvent) {}
    #[inline]
    fn on_memory_access(&mut self, _e: &MemEvent) {}
    #[inline]
    fn on_fault(&mut self, _e: &FaultEvent) {}
}

impl Observer for () {}

/// What one reference cost and where it was served.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefOutcome {
    /// Cycles of translation beyond an L1 TLB hit.
    pub translation_cycles: u64,
    /// Latency of the data access beyond an L1 cache hit.
    pub data_cycles: u64,
    /// Physical address that served the data.
    pub paddr: u64,
    /// Cache level that hit, or the number of levels when memory served it.
    pub level: usize,
}

/// Counters of one core.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreStats {
    pub references: u64,
    pub reads: u64,
    pub writes: u64,
    pub instructions: u64,
    pub cycles: u64,
    pub base_cycles: u64,
    pub translation_cycles: u64,
    pub memory_stall_cycles: u64,
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
}

/// One core: its clock, TLBs and counters.
pub struct Core {
    pub clock: u64,
    pub tlb: Tlb,
    pub stats: CoreStats,
    cpi_rem: u64,
    stall_rem: u64,
}

/// Demand accesses served by each tier and their summed latency (for AMAT).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DemandStats {
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub latency_cycles: u64,
}

/// Counts of everything the mechanisms did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MechanismStats {
    /// Pages moved between tiers by migration: one per page migrated, two per swap,
    /// one per fast-tier copy made and per dirty copy written back.
    pub migrations: u64,
    /// Bytes those migrations copied.
    pub migrated_bytes: u64,
    /// Huge pages assembled by a merge that copied their base pages into a newly
    /// allocated huge frame (a merge in place copies nothing and is not counted).
    pub merge_copies: u64,
    /// Bytes those merges copied: one huge page each.
    pub merge_copied_bytes: u64,
    /// Migrations from tier `i` to tier `j`, as `[i][j]`.
    pub migrations_between: Vec<Vec<u64>>,
    pub swaps: u64,
    pub splits: u64,
    pub merges: u64,
    pub shootdowns: u64,
    pub lines_flushed: u64,
    pub ptes_scanned: u64,
    pub poisons: u64,
    /// Cycles application cores were stalled by mechanisms (including shootdown IPIs).
    pub cycles: u64,
    /// CPU cycles of mechanisms run by background threads (no application core waits).
    pub background_cycles: u64,
}

/// Fixed-point scale for CPI and 1/MLP.
const FP: u64 = 1 << 16;

/// Shadow memory for `--verify`: the newest version of every base page, and the
/// version each frame holds.
pub struct Shadow {
    pub(crate) newest: HashMap<(u16, u64), u32>,
    pub(crate) frame: Vec<u32>,
    pub(crate) checked_reads: u64,
}

/// Version stored in a freed frame: no page's newest version can match it.
pub(crate) const FREED_VERSION: u32 = u32::MAX;

/// Static facts about the machine a policy may read.
#[derive(Clone, Debug)]
pub struct MachineInfo {
    pub cores: usize,
    pub freq_ghz: f64,
    pub huge_page_bytes: u64,
    /// Capacity of each tier in base frames, fastest first.
    pub tier_frames: Vec<u64>,
    /// First frame number of each tier (tiers start at 1 GiB boundaries).
    pub tier_base_pfn: Vec<u64>,
    pub tier_names: Vec<String>,
    /// Row-miss read latency of each tier in ns (a tier's typical access latency).
    pub tier_read_ns: Vec<f64>,
    /// Row-miss write latency of each tier in ns.
    pub tier_write_ns: Vec<f64>,
    /// Peak bandwidth of each tier (all channels) in GB/s.
    pub tier_gbps: Vec<f64>,
    /// Cycles per cache line flushed (`machine.costs.clflush_cycles_per_line`) and of
    /// a TLB shootdown (`machine.costs.shootdown_cycles`), for policies' cost models.
    pub clflush_cycles_per_line: u64,
    pub shootdown_cycles: u64,
    /// Latency of a fault on a poisoned PTE, in ns (`machine.costs.poison_fault_ns`).
    pub poison_fault_ns: f64,
    /// Bytes the run's workloads touch.
    pub footprint_bytes: u64,
    /// References the run will simulate, when its sources know (0 = unknown); lets a
    /// policy scale periods given in seconds of a long real run to a short trace.
    pub total_refs: u64,
}

impl MachineInfo {
    /// The machine a configuration describes, before it is built (capacities resolved
    /// against `footprint`).
    pub fn planned(cfg: &MachineConfig, footprint: u64, total_refs: u64) -> MachineInfo {
        let tiers = cfg.tiers.all();
        let tier_frames: Vec<u64> = tiers.iter().map(|t| t.capacity.resolve(footprint, cfg.page_table.huge_page.bytes()) >> 12).collect();
        MachineInfo {
            cores: cfg.cores,
            freq_ghz: cfg.freq_ghz,
            huge_page_bytes: cfg.page_table.huge_page.bytes(),
            tier_base_pfn: alloc::tier_bases(&tier_frames),
            tier_frames,
            tier_names: tiers.iter().map(|t| t.name.clone()).collect(),
            tier_read_ns: tiers.iter().map(|t| t.read_miss_ns).collect(),
            tier_write_ns: tiers.iter().map(|t| t.write_miss_ns).collect(),
            tier_gbps: tiers.iter().map(|t| t.channel_gbps * t.channels as f64).collect(),
            clflush_cycles_per_line: cfg.costs.clflush_cycles_per_line,
            shootdown_cycles: cfg.costs.shootdown_cycles,
            poison_fault_ns: cfg.costs.poison_fault_ns,
            footprint_bytes: footprint,
            total_refs,
        }
    }
}

pub struct Machine {
    pub cfg: MachineConfig,
    pub cores: Vec<Core>,
    pub caches: Caches,
    pub tiers: Vec<Tier>,
    pub alloc: FrameAllocator,
    pub tenants: Vec<Tenant>,
    pub(crate) rmap: Vec<u64>,
    pub(crate) placer: Placer,
    pub shadow: Option<Shadow>,
    pub demand: Vec<DemandStats>,
    pub mech: MechanismStats,
    /// The first error met inside the reference path (memory exhausted); the engine
    /// stops the run with it.
    pub error: Option<String>,
    tier_bounds: Vec<(u64, u64)>,
    huge_shift: u32,
    huge_frames: u64,
    cpi_fp: u64,
    inv_mlp_fp: u64,
    l1_latency: u64,
    pub(crate) poison_fault_cycles: u64,
    page_fault_cycles: u64,
    footprint: u64,
    /// References the run will simulate (0 = unknown), for [`MachineInfo::total_refs`].
    pub total_refs: u64,
    /// The cycle at which the background kernel thread finishes the work queued on it.
    pub background_until: u64,
    /// Fast-tier copies of slow pages, when the policy keeps them (Rainbow, HSCC).
    pub copies: Option<Copies>,
    /// Test hook: a migration that skips the data copy, to prove `--verify` notices.
    #[cfg(test)]
    pub(crate) break_migration_copy: bool,
}

struct PtFrames<'a> {
    alloc: &'a mut FrameAllocator,
    rmap: &'a mut Vec<u64>,
}

impl NodeFrames for PtFrames<'_> {
    fn alloc_node_frame(&mut self) -> Option<u64> {
        // Page tables live in the fastest tier with room, as Linux allocates them locally.
        let f = (0..self.alloc.tier_count()).find_map(|t| self.alloc.alloc(t, Colour::ANY))?;
        self.rmap[f as usize] = OWNER_PT;
        Some(f)
    }
    fn free_node_frame(&mut self, frame: u64) {
        self.rmap[frame as usize] = 0;
        self.alloc.free(frame);
    }
}

impl Machine {
    /// Builds the machine for a run whose workloads touch `footprint` bytes, with one
    /// tenant per entry of `tenants`. With `fast_unlimited` the fast tier is grown to
    /// hold the whole footprint (the all-fast upper bound).
    pub fn new(
        cfg: &MachineConfig,
        tenants: &[TenantKind],
        footprint: u64,
        placement: Placement,
        fast_unlimited: bool,
        verify: bool,
    ) -> anyhow::Result<Machine> {
        cfg.validate()?;
        let huge_shift = cfg.huge_shift();
        let huge_bytes = 1u64 << huge_shift;
        let tier_cfgs = cfg.tiers.all();
        let mut capacities = Vec::new();
        for (i, t) in tier_cfgs.iter().enumerate() {
            let mut bytes = t.capacity.resolve(footprint, huge_bytes);
            if i == 0 && fast_unlimited {
                // Room for every page plus its page tables (≤ 1/256 of the data with
                // 4 KiB pages, rounded up generously).
                bytes = bytes.max((footprint + footprint / 128 + (64 << 20)).div_ceil(huge_bytes) * huge_bytes);
            }
            if bytes == 0 {
                anyhow::bail!("{}.capacity: resolves to 0 bytes for a footprint of {}", TiersConfig::field(i), Size(footprint));
            }
            capacities.push(bytes);
        }
        let total: u64 = capacities.iter().sum();
        if footprint > total {
            anyhow::bail!(
                "machine.tiers: the footprint ({}) is larger than all tiers together ({}); raise a tier's capacity",
                Size(footprint),
                Size(total)
            );
        }
        let mut tiers = Vec::new();
        for (i, (t, &bytes)) in tier_cfgs.iter().zip(&capacities).enumerate() {
            let tier = Tier::new(t, bytes, cfg.freq_ghz).map_err(|e| anyhow::anyhow!("{}.{e}", TiersConfig::field(i)))?;
            tiers.push(tier);
        }
        let frames: Vec<u64> = capacities.iter().map(|b| b >> 12).collect();
        let mut alloc = FrameAllocator::new(&frames, huge_bytes >> 12);
        let mut rmap = vec![0u64; alloc.frame_limit() as usize];
        let mut built = Vec::new();
        for &kind in tenants {
            let mut pf = PtFrames { alloc: &mut alloc, rmap: &mut rmap };
            let table = PageTable::new(cfg.page_table.levels, huge_shift, &mut pf)
                .ok_or_else(|| anyhow::anyhow!("machine.tiers: no memory left for page tables"))?;
            let guest = (kind == TenantKind::Vm).then(|| {
                let mut next_gpfn = 0;
                let table = PageTable::new(cfg.page_table.levels, huge_shift, &mut GuestFrames(&mut next_gpfn))
                    .expect("guest frames are unlimited");
                Guest { table, next_gpfn }
            });
            built.push(Tenant { kind, table, guest, frames_in: vec![0; tier_cfgs.len()], fast_quota: None });
        }
        let cores = (0..cfg.cores)
            .map(|_| Core { clock: 0, tlb: Tlb::new(&cfg.tlb, huge_shift), stats: CoreStats::default(), cpi_rem: 0, stall_rem: 0 })
            .collect();
        let tier_bounds = (0..tiers.len()).map(|t| (alloc.base(t), alloc.base(t) + alloc.frames(t))).collect();
        let shadow = verify.then(|| Shadow { newest: HashMap::new(), frame: vec![0; rmap.len()], checked_reads: 0 });
        let n = tiers.len();
        Ok(Machine {
            cores,
            caches: Caches::new(&cfg.caches, cfg.cores),
            tiers,
            alloc,
            tenants: built,
            rmap,
            placer: Placer::new(placement, n),
            shadow,
            demand: vec![DemandStats::default(); n],
            mech: MechanismStats { migrations_between: vec![vec![0; n]; n], ..Default::default() },
            error: None,
            tier_bounds,
            huge_shift,
            huge_frames: huge_bytes >> 12,
            cpi_fp: (cfg.base_cpi * FP as f64).round() as u64,
            inv_mlp_fp: (FP as f64 / cfg.mlp).round() as u64,
            l1_latency: cfg.caches[0].latency_cycles,
            poison_fault_cycles: cfg.cycles(cfg.costs.poison_fault_ns),
            page_fault_cycles: cfg.cycles(cfg.costs.page_fault_ns),
            footprint,
            total_refs: 0,
            background_until: 0,
            copies: None,
            cfg: cfg.clone(),
            #[cfg(test)]
            break_migration_copy: false,
        })
    }

    /// The machine as built (tier capacities as allocated).
    pub fn info(&self) -> MachineInfo {
        MachineInfo {
            tier_frames: (0..self.tiers.len()).map(|t| self.alloc.frames(t)).collect(),
            tier_base_pfn: (0..self.tiers.len()).map(|t| self.alloc.base(t)).collect(),
            ..MachineInfo::planned(&self.cfg, self.footprint, self.total_refs)
        }
    }

    pub fn huge_shift(&self) -> u32 {
        self.huge_shift
    }

    /// Starts keeping fast-tier copies of slow pages (before the first reference).
    /// Redirect mode reserves the in-memory migration bitmap in the slow tier (one bit
    /// per slow frame) and needs process tenants: a VM's copies would need the guest
    /// virtual addresses of their TLB entries, which the host does not know.
    pub fn enable_copies(&mut self, spec: &CopySpec) -> anyhow::Result<()> {
        if self.tiers.len() < 2 {
            anyhow::bail!("machine.tiers: keeping copies needs a fast and a slow tier");
        }
        let mut bitmap_frames = Vec::new();
        if spec.mode == CopyMode::Redirect {
            if self.tenants.iter().any(|t| t.guest.is_some()) {
                anyhow::bail!("the migration bitmap redirects host-physical addresses of processes; VM tenants are not supported (Rainbow §III-E)");
            }
            if let Some(b) = &spec.bitmap_cache {
                if b.ways == 0 || b.entries < b.ways {
                    anyhow::bail!("bitmap cache: entries ({}) must be at least ways ({}), ways > 0", b.entries, b.ways);
                }
            }
            let bytes = Copies::bitmap_bytes(self.alloc.frames(1), self.huge_frames);
            for _ in 0..bytes.div_ceil(4096) {
                let f = self.alloc.alloc(1, Colour::ANY).ok_or_else(|| anyhow::anyhow!("machine.tiers.slow: no room for the migration bitmap"))?;
                self.rmap[f as usize] = OWNER_METADATA;
                bitmap_frames.push(f);
            }
        }
        let fast = (self.alloc.base(0), self.alloc.frames(0));
        let slow = (self.alloc.base(1), self.alloc.frames(1));
        self.copies = Some(Copies::new(spec, fast, slow, self.huge_shift, bitmap_frames));
        Ok(())
    }

    /// Rainbow's translation through a superpage entry (§III-E, cases 3 and 4): the
    /// 4 KiB TLB's second level is probed beside the migration bitmap; a set bit costs
    /// a read of the slow page's first 8 bytes and installs a 4 KiB entry for the copy.
    /// Returns the frame to use, the translation cycles added, and the cycles of the
    /// bitmap check (lookup plus memory read on a miss), which the caller charges.
    #[inline(never)]
    fn redirect<O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, slow_pfn: u64, obs: &mut O) -> (u64, u64, u64) {
        if let Some(e) = self.cores[core].tlb.lookup_small_l2(tenant, vaddr) {
            // The 4 KiB TLB hit in its second level (case 1/2 at L2 latency).
            self.cores[core].stats.tlb_l2_hits += 1;
            return (e.base_pfn, self.cfg.tlb.l2_latency_cycles, 0);
        }
        let now = self.cores[core].clock;
        let cp = self.copies.as_mut().expect("copies enabled");
        cp.stats.bitmap_checks += 1;
        let mut bitmap = cp.bitmap_latency;
        let psn = cp.superpage_of(slow_pfn);
        let (cached, evicted) = match &mut cp.bitmap_cache {
            Some(c) => c.access(psn),
            None => (false, None),
        };
        if let Some(sp) = evicted {
            // The modified bitmap leaves the cache: a posted write to memory.
            let line = cp.bitmap_line_of(sp);
            cp.stats.metadata_writes += 1;
            self.memory(core, line, true, MemKind::Metadata, now + bitmap, obs);
        }
        let cp = self.copies.as_mut().expect("copies enabled");
        if cached {
            cp.stats.bitmap_cache_hits += 1;
        } else {
            cp.stats.bitmap_cache_misses += 1;
            let line = cp.bitmap_line(slow_pfn);
            bitmap += self.memory(core, line, false, MemKind::Metadata, now + bitmap, obs);
        }
        let Some(copy) = self.copies.as_ref().expect("copies enabled").copy_of(slow_pfn) else {
            return (slow_pfn, 0, bitmap);
        };
        // Migrated: the copy's address is in the first 8 bytes of the slow page. The
        // MMU reads it through the caches, as it reads page-table entries (the line
        // holds nothing else anyone reads while the page is migrated; the OS writes it
        // to memory and flushes it when the copy goes).
        let (_, lat) = self.cached(core, slow_pfn << 12, false, MemKind::Metadata, obs);
        let cp = self.copies.as_mut().expect("copies enabled");
        cp.stats.remaps += 1;
        cp.stats.remap_cycles += lat;
        // The machine tracks the copy's dirtiness itself: the entry needs no dirty bit.
        self.cores[core].tlb.fill(tenant, vaddr, TlbEntry { base_pfn: copy, huge: false, dirty: true, slot: NO_SLOT });
        // The bitmap was needed before the remap: its cycles are on this path.
        let cp = self.copies.as_mut().expect("copies enabled");
        cp.stats.bitmap_cache_cycles += cp.bitmap_latency;
        cp.stats.bitmap_memory_cycles += bitmap - cp.bitmap_latency;
        (copy, lat + bitmap, 0)
    }

    pub fn huge_frames(&self) -> u64 {
        self.huge_frames
    }

    /// The tier holding frame `pfn`.
    #[inline]
    pub fn tier_of(&self, pfn: u64) -> usize {
        let mut t = 0;
        while pfn >= self.tier_bounds[t].1 {
            t += 1;
        }
        t
    }

    /// Owner of frame `pfn` per the reverse map.
    pub fn owner(&self, pfn: u64) -> Owner {
        self.rmap.get(pfn as usize).map_or(Owner::Free, |&w| decode_owner(w))
    }

    pub(crate) fn set_owner(&mut self, pfn: u64, tenant: u16, addr: u64) {
        self.rmap[pfn as usize] = encode_owner(tenant, addr);
    }

    pub(crate) fn set_copy_owner(&mut self, pfn: u64, tenant: u16, addr: u64) {
        self.rmap[pfn as usize] = OWNER_COPY | (tenant as u64) << 45 | addr >> 12;
    }

    pub(crate) fn clear_owner(&mut self, pfn: u64) {
        self.rmap[pfn as usize] = 0;
    }

    /// One memory access at physical address `paddr`, timed by its tier and reported
    /// to the observer.
    #[inline]
    fn memory<O: Observer>(&mut self, core: usize, paddr: u64, write: bool, kind: MemKind, now: u64, obs: &mut O) -> u64 {
        let pfn = paddr >> 12;
        let t = self.tier_of(pfn);
        let local = paddr - (self.tier_bounds[t].0 << 12);
        let latency = self.tiers[t].access(local, write, now);
        if kind == MemKind::Demand {
            let d = &mut self.demand[t];
            d.accesses += 1;
            d.reads += !write as u64;
            d.writes += write as u64;
            d.latency_cycles += latency;
        }
        obs.on_memory_access(&MemEvent { core, paddr, tier: t, write, kind, latency });
        latency
    }

    /// Records a bitmap check of `cycles` (lookup + memory read on a miss) as paid —
    /// at translation, or, with `bitmap_at_memory`, by a reference that reached memory
    /// — and returns the cycles.
    #[cold]
    fn charge_bitmap(&mut self, cycles: u64) -> u64 {
        let cp = self.copies.as_mut().expect("copies enabled");
        cp.stats.bitmap_cache_cycles += cp.bitmap_latency;
        cp.stats.bitmap_memory_cycles += cycles - cp.bitmap_latency;
        cycles
    }

    /// Runs one cache access and, on a miss in every level, the memory access;
    /// write-backs it causes go to memory as posted writes. Returns (level, latency).
    #[inline]
    pub(crate) fn cached<O: Observer>(&mut self, core: usize, paddr: u64, write: bool, kind: MemKind, obs: &mut O) -> (usize, u64) {
        let now = self.cores[core].clock;
        let mut wbs = [0u64; 8];
        let mut n_wb = 0;
        let mut overflow = Vec::new();
        let (level, lat) = self.caches.access(core, paddr, write, &mut |line| {
            if n_wb < wbs.len() {
                wbs[n_wb] = line;
                n_wb += 1;
            } else {
                overflow.push(line);
            }
        });
        for &line in &wbs[..n_wb] {
            self.memory(core, line << 6, true, MemKind::Writeback, now, obs);
        }
        for line in overflow {
            self.memory(core, line << 6, true, MemKind::Writeback, now, obs);
        }
        if level == self.caches.depth() {
            // A store miss reads the line (write-allocate); the write reaches memory on eviction.
            let mem = self.memory(core, paddr, false, kind, now + lat, obs);
            (level, lat + mem)
        } else {
            (level, lat)
        }
    }

    /// Advances `core`'s clock by `cycles` of mechanism work.
    #[inline]
    pub fn stall(&mut self, core: usize, cycles: u64) {
        let c = &mut self.cores[core];
        c.clock += cycles;
        c.stats.mechanism_cycles += cycles;
        self.mech.cycles += cycles;
    }

    /// Runs one reference on `core`: translation, caches, memory; advances the core's
    /// clock by its instructions and stalls.
    #[inline]
    pub fn access<O: Observer>(&mut self, core: usize, a: &Access, obs: &mut O) -> RefOutcome {
        let write = a.is_write();
        {
            let c = &mut self.cores[core];
            let instrs = a.instrs as u64 + 1;
            let scaled = instrs * self.cpi_fp + c.cpi_rem;
            c.clock += scaled / FP;
            c.cpi_rem = scaled % FP;
            c.stats.base_cycles += scaled / FP;
            c.stats.instructions += instrs;
            c.stats.references += 1;
            c.stats.reads += !write as u64;
            c.stats.writes += write as u64;
        }
        let tenant = a.tenant;
        let (entry, translation) = match self.cores[core].tlb.lookup(tenant, a.vaddr) {
            Some((TlbHit::L1, e)) => {
                self.cores[core].stats.tlb_l1_hits += 1;
                (e, 0)
            }
            Some((TlbHit::L2, e)) => {
                self.cores[core].stats.tlb_l2_hits += 1;
                (e, self.cfg.tlb.l2_latency_cycles)
            }
            None => match self.translate_miss(core, tenant, a.vaddr, write, obs) {
                Some(x) => x,
                None => return RefOutcome::default(),
            },
        };
        if write && !entry.dirty {
            // x86 sets the dirty bit with a locked update of the PTE on the first store
            // through a clean TLB entry.
            self.set_dirty_bit(core, tenant, a.vaddr, &entry, obs);
        }
        let mut pfn = if entry.huge { entry.base_pfn + ((a.vaddr >> 12) & (self.huge_frames - 1)) } else { entry.base_pfn };
        let mut translation = translation;
        let mut bitmap = 0;
        if let Some(cp) = &self.copies {
            if entry.huge && cp.mode == CopyMode::Redirect && cp.is_slow(pfn) {
                let (to, cycles, check) = self.redirect(core, tenant, a.vaddr, pfn, obs);
                pfn = to;
                translation += cycles;
                if check > 0 {
                    if self.copies.as_ref().expect("copies enabled").bitmap_at_memory {
                        bitmap = check;
                    } else {
                        translation += self.charge_bitmap(check);
                    }
                }
            }
            if write {
                self.copies.as_mut().expect("copies enabled").note_store(pfn);
            }
        }
        let paddr = pfn << 12 | (a.vaddr & 0xfff);
        self.cores[core].clock += translation;
        self.cores[core].stats.translation_cycles += translation;

        let (level, mut latency) = self.cached(core, paddr, write, MemKind::Demand, obs);
        if bitmap > 0 && level == self.caches.depth() {
            latency += self.charge_bitmap(bitmap);
        }
        let beyond_l1 = latency.saturating_sub(self.l1_latency);
        let c = &mut self.cores[core];
        let stall = if a.is_dependent() {
            beyond_l1
        } else {
            let scaled = beyond_l1 * self.inv_mlp_fp + c.stall_rem;
            c.stall_rem = scaled % FP;
            scaled / FP
        };
        c.clock += stall;
        c.stats.memory_stall_cycles += stall;
        if self.shadow.is_some() {
            self.check_shadow(tenant, a.vaddr, pfn, write);
        }
        RefOutcome { translation_cycles: translation, data_cycles: beyond_l1, paddr, level }
    }

    /// Host-side prefetch for a reference a few places ahead: if it will miss the L1
    /// TLB, start loading its leaf page-table entry. Changes nothing simulated.
    #[inline]
    pub fn prefetch_far(&self, core: usize, a: &Access) {
        let t = &self.tenants[a.tenant as usize];
        if t.guest.is_none() && !self.cores[core].tlb.l1_holds(a.tenant, a.vaddr) {
            t.table.prefetch_leaf(a.vaddr);
        }
    }

    fn set_dirty_bit<O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, entry: &TlbEntry, obs: &mut O) {
        let slot = if entry.slot != NO_SLOT {
            Some(entry.slot as usize)
        } else {
            self.managed_addr(tenant, vaddr).and_then(|addr| self.tenants[tenant as usize].table.walk(addr, None)).map(|l| l.slot)
        };
        if let Some(slot) = slot {
            let t = &mut self.tenants[tenant as usize].table;
            *t.entry_mut(slot) |= DIRTY | ACCESSED;
            let pa = t.entry_paddr(slot);
            let (_, lat) = self.cached(core, pa, true, MemKind::Walk, obs);
            self.cores[core].clock += lat;
            self.cores[core].stats.translation_cycles += lat;
        }
        self.cores[core].tlb.set_dirty(tenant, vaddr, entry.huge);
    }

    /// The managed-space address of `vaddr`: itself for a process, its guest-physical
    /// address for a VM (None if the guest has not mapped it).
    pub fn managed_addr(&self, tenant: u16, vaddr: u64) -> Option<u64> {
        let t = &self.tenants[tenant as usize];
        match &t.guest {
            None => Some(vaddr),
            Some(g) => {
                let leaf = g.table.walk(vaddr, None)?;
                let e = g.table.entry(leaf.slot);
                let mask = if leaf.huge { (1u64 << self.huge_shift) - 1 } else { 0xfff };
                Some((e >> 12) << 12 | (vaddr & mask))
            }
        }
    }

    /// Walk references of `path` through the caches, serially; returns their latency.
    #[inline]
    fn walk_refs<O: Observer>(&mut self, core: usize, path: &WalkPath, obs: &mut O) -> u64 {
        let mut cycles = 0;
        for &pa in path.as_slice() {
            let (level, lat) = self.cached(core, pa, false, MemKind::Walk, obs);
            cycles += lat;
            let s = &mut self.cores[core].stats;
            s.walk_references += 1;
            s.walk_memory_accesses += (level == self.caches.depth()) as u64;
        }
        cycles
    }

    /// Translates `addr` in tenant's managed table with a timed walk, mapping the page
    /// on first touch. Returns (leaf entry, page-offset mask of the leaf, walk cycles).
    #[inline]
    fn managed_walk<O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, write: bool, obs: &mut O) -> Option<(u64, bool, u64, usize)> {
        let ti = tenant as usize;
        let mut path = WalkPath::default();
        let mut extra = 0;
        let leaf = match self.tenants[ti].table.walk(addr, Some(&mut path)) {
            Some(l) => l,
            None => {
                extra += self.first_touch(core, tenant, addr, obs)?;
                path = WalkPath::default();
                self.tenants[ti].table.walk(addr, Some(&mut path)).expect("page mapped by first touch")
            }
        };
        let cycles = self.walk_refs(core, &path, obs) + extra;
        let e = self.tenants[ti].table.entry_mut(leaf.slot);
        *e |= ACCESSED | if write { DIRTY } else { 0 };
        Some((*e, leaf.huge, cycles, leaf.slot))
    }

    /// Handles a TLB miss: walks (two-dimensionally for VMs), takes poison faults,
    /// fills the TLB. Returns the entry and the cycles spent; `None` if memory ran out.
    #[cold]
    #[inline(never)]
    fn translate_miss<O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, write: bool, obs: &mut O) -> Option<(TlbEntry, u64)> {
        self.cores[core].stats.tlb_misses += 1;
        let ti = tenant as usize;
        let (entry, huge, mut cycles, addr, managed_huge, slot) = if self.tenants[ti].guest.is_none() {
            let (e, huge, c, slot) = self.managed_walk(core, tenant, vaddr, write, obs)?;
            (e, huge, c, vaddr, huge, slot as u32)
        } else {
            let (e, huge, c, gpa, ept_huge) = self.nested_walk(core, tenant, vaddr, write, obs)?;
            (e, huge, c, gpa, ept_huge, NO_SLOT)
        };
        if entry & POISONED != 0 {
            // BadgerTrap (Thermostat §3.3): the walk finds a poisoned PTE and traps; the
            // handler installs the translation, so later hits in the TLB do not fault.
            cycles += self.poison_fault_cycles;
            self.cores[core].stats.poison_faults += 1;
            self.cores[core].stats.fault_cycles += self.poison_fault_cycles;
            let mask = if managed_huge { (1u64 << self.huge_shift) - 1 } else { 0xfff };
            obs.on_fault(&FaultEvent { core, tenant, addr: addr & !mask, huge: managed_huge, kind: FaultKind::Poison });
        }
        self.cores[core].stats.walk_cycles += cycles - if entry & POISONED != 0 { self.poison_fault_cycles } else { 0 };
        obs.on_tlb_miss(&TlbMissEvent { core, tenant, vaddr, addr, huge, walk_cycles: cycles });
        let base_pfn = entry >> 12;
        // (A VM page mapped small in either dimension comes back from the nested walk
        // as a 4 KiB translation.)
        let tlb_entry = TlbEntry { base_pfn, huge, dirty: entry & DIRTY != 0, slot };
        self.cores[core].tlb.fill(tenant, vaddr, tlb_entry);
        Some((tlb_entry, cycles))
    }

    /// A two-dimensional walk: every guest page-table reference is a guest-physical
    /// address that needs its own walk of the extended page table (up to 24 references
    /// for 4 KiB/4 KiB with 4 levels, 15 for huge/huge). Returns the host leaf entry of
    /// the data page adjusted to the TLB entry's size, whether that size is huge, the
    /// cycles, the guest-physical address, and whether the host (EPT) page is huge.
    fn nested_walk<O: Observer>(&mut self, core: usize, tenant: u16, gva: u64, write: bool, obs: &mut O) -> Option<(u64, bool, u64, u64, bool)> {
        let ti = tenant as usize;
        let huge_mask = (1u64 << self.huge_shift) - 1;
        let thp = self.cfg.page_table.thp;
        let mut gpath = WalkPath::default();
        let guest = self.tenants[ti].guest.as_mut().expect("VM tenant");
        let gleaf = match guest.table.walk(gva, Some(&mut gpath)) {
            Some(l) => l,
            None => {
                // The guest OS maps the page on first touch, linearly in guest-physical space.
                let huge = thp;
                let frames = if huge { (huge_mask + 1) >> 12 } else { 1 };
                let gpfn = guest.next_gpfn.div_ceil(frames) * frames;
                guest.next_gpfn = gpfn + frames;
                let mut next = guest.next_gpfn;
                guest.table.map(gva, gpfn, huge, 0, &mut GuestFrames(&mut next)).expect("guest frames are unlimited");
                guest.next_gpfn = next;
                gpath = WalkPath::default();
                guest.table.walk(gva, Some(&mut gpath)).expect("just mapped")
            }
        };
        let mut cycles = 0;
        // Each guest page-table entry: translate its guest-physical address, then read it.
        for i in 0..gpath.len {
            let gpa = gpath.addrs[i];
            let (e, huge, c, _) = self.managed_walk(core, tenant, gpa, false, obs)?;
            cycles += c;
            let mask = if huge { huge_mask } else { 0xfff };
            let hpa = (e >> 12) << 12 | (gpa & mask);
            let (_, lat) = self.cached(core, hpa, false, MemKind::Walk, obs);
            cycles += lat;
            self.cores[core].stats.walk_references += 1;
        }
        let guest = self.tenants[ti].guest.as_mut().expect("VM tenant");
        let ge = guest.table.entry_mut(gleaf.slot);
        *ge |= ACCESSED | if write { DIRTY } else { 0 };
        let gmask = if gleaf.huge { huge_mask } else { 0xfff };
        let gpa = (*ge >> 12) << 12 | (gva & gmask);
        let (he, hhuge, c, _) = self.managed_walk(core, tenant, gpa, write, obs)?;
        cycles += c;
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

    /// Maps the page holding managed address `addr` of `tenant` on first touch, where
    /// the placement mode says (falling back to any tier with room). Returns the fault
    /// cycles, or `None` (with `self.error` set) when every tier is full.
    #[cold]
    fn first_touch<O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, obs: &mut O) -> Option<u64> {
        let ti = tenant as usize;
        let huge_bytes = 1u64 << self.huge_shift;
        let want_huge = self.cfg.page_table.thp && self.tenants[ti].table.small_node(addr).is_none();
        let first = self.placer.choose(&self.alloc);
        let order = std::iter::once(first).chain((0..self.tiers.len()).filter(|&t| t != first));
        let mut placed = None;
        let tenant_ref = &self.tenants[ti];
        for t in order {
            if want_huge && tenant_ref.fits(t, self.huge_frames) {
                if let Some(f) = self.alloc.alloc_huge(t) {
                    placed = Some((t, f, true));
                    break;
                }
            }
            if tenant_ref.fits(t, 1) {
                if let Some(f) = self.alloc.alloc(t, Colour::ANY) {
                    placed = Some((t, f, false));
                    break;
                }
            }
        }
        let Some((t, pfn, huge)) = placed else {
            self.error.get_or_insert_with(|| "out of memory: every tier is full (raise a tier's capacity)".into());
            return None;
        };
        let page = if huge { addr & !(huge_bytes - 1) } else { addr & !0xfff };
        let n = if huge { self.huge_frames } else { 1 };
        let tenant_t = &mut self.tenants[ti];
        let mut pf = PtFrames { alloc: &mut self.alloc, rmap: &mut self.rmap };
        if tenant_t.table.map(page, pfn, huge, 0, &mut pf).is_none() {
            self.error.get_or_insert_with(|| "out of memory for page tables: every tier is full".into());
            return None;
        }
        tenant_t.frames_in[t] += n;
        self.placer.placed(t, n);
        for i in 0..n {
            self.set_owner(pfn + i, tenant, page + (i << 12));
            if let Some(s) = &mut self.shadow {
                let v = *s.newest.get(&(tenant, (page >> 12) + i)).unwrap_or(&0);
                s.frame[(pfn + i) as usize] = v;
            }
        }
        let c = &mut self.cores[core];
        c.stats.first_touch_faults += 1;
        c.stats.fault_cycles += self.page_fault_cycles;
        obs.on_fault(&FaultEvent { core, tenant, addr: page, huge, kind: FaultKind::FirstTouch });
        Some(self.page_fault_cycles)
    }

    /// `--verify`: a write makes frame `pfn` hold the page's new newest version; a read
    /// must find the newest version in the frame serving it, and that frame must belong
    /// to the page.
    #[cold]
    fn check_shadow(&mut self, tenant: u16, vaddr: u64, pfn: u64, write: bool) {
        let Some(addr) = self.managed_addr(tenant, vaddr) else { return };
        let page = addr >> 12;
        let owner = self.owner(pfn);
        let s = self.shadow.as_mut().expect("verify mode");
        let newest = s.newest.entry((tenant, page)).or_insert(0);
        if write {
            *newest += 1;
            s.frame[pfn as usize] = *newest;
        } else {
            s.checked_reads += 1;
        }
        let held = s.frame[pfn as usize];
        let belongs = owner == Owner::Data { tenant, addr: page << 12 } || owner == Owner::Copy { tenant, addr: page << 12 };
        if (held != *newest || !belongs) && self.error.is_none() {
            self.error = Some(format!(
                "verify: stale read of tenant {tenant} page {:#x} (vaddr {vaddr:#x}) from frame {pfn:#x}: frame holds version {}, newest is {}{}",
                page << 12,
                if held == FREED_VERSION { "<freed>".to_string() } else { held.to_string() },
                newest,
                if belongs { String::new() } else { format!("; the frame belongs to {:?}", owner) },
            ));
        }
    }

    /// Checks every structural invariant; returns a description of the first broken one.
    /// Every mapped page has frames owned by it, no frame is mapped twice or both
    /// mapped and free, tiers are within capacity, and no TLB holds a translation that
    /// differs from the page table.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen = vec![false; self.rmap.len()];
        for (ti, t) in self.tenants.iter().enumerate() {
            let mut err = None;
            let mut per_tier = vec![0u64; self.tiers.len()];
            t.table.for_each_leaf(0, u64::MAX, &mut |addr, slot| {
                let e = t.table.entry(slot);
                let huge = e & page_table::HUGE != 0;
                let n = if huge { self.huge_frames } else { 1 };
                if let Some(tier) = self.alloc.tier_of(e >> 12) {
                    per_tier[tier] += n;
                }
                for i in 0..n {
                    let pfn = (e >> 12) + i;
                    let want = Owner::Data { tenant: ti as u16, addr: addr + (i << 12) };
                    if pfn as usize >= seen.len() || seen[pfn as usize] {
                        err.get_or_insert(format!("frame {pfn:#x} mapped twice (tenant {ti}, {addr:#x})"));
                        continue;
                    }
                    seen[pfn as usize] = true;
                    if self.owner(pfn) != want {
                        err.get_or_insert(format!("frame {pfn:#x}: reverse map says {:?}, page table says {want:?}", self.owner(pfn)));
                    }
                    if self.alloc.is_free(pfn) {
                        err.get_or_insert(format!("frame {pfn:#x} is mapped but free in the allocator"));
                    }
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            if per_tier != t.frames_in {
                return Err(format!("tenant {ti}: frames mapped per tier {per_tier:?}, counters say {:?}", t.frames_in));
            }
        }
        for (pfn, &w) in self.rmap.iter().enumerate() {
            match decode_owner(w) {
                Owner::Data { .. } if !seen[pfn] => {
                    return Err(format!("frame {pfn:#x} is owned in the reverse map but mapped by nobody (page lost)"));
                }
                Owner::Copy { .. } => {
                    let linked = self.copies.as_ref().is_some_and(|c| c.original_of(pfn as u64).is_some() || c.copy_of(pfn as u64).is_some());
                    if !linked {
                        return Err(format!("frame {pfn:#x} is owned as a copy but no copy links it"));
                    }
                }
                _ => {}
            }
        }
        if let Some(cp) = &self.copies {
            for (fast, slow) in cp.pairs() {
                if cp.copy_of(slow) != Some(fast) {
                    return Err(format!("copy link of fast frame {fast:#x} → slow {slow:#x} is one-sided"));
                }
                let (mapped, copy) = if cp.mode == CopyMode::Redirect { (slow, fast) } else { (fast, slow) };
                let (Owner::Data { tenant, addr }, Owner::Copy { tenant: t2, addr: a2 }) = (self.owner(mapped), self.owner(copy)) else {
                    return Err(format!(
                        "copy pair fast {fast:#x} / slow {slow:#x}: owners {:?} / {:?}, expected the mapped frame Data and the other Copy",
                        self.owner(fast),
                        self.owner(slow)
                    ));
                };
                if (tenant, addr) != (t2, a2) || self.alloc.is_free(fast) || self.alloc.is_free(slow) {
                    return Err(format!("copy pair fast {fast:#x} / slow {slow:#x} belongs to different pages or a free frame"));
                }
            }
        }
        for t in 0..self.tiers.len() {
            if self.alloc.free_frames(t) > self.alloc.frames(t) {
                return Err(format!("tier {t}: more free frames than capacity"));
            }
        }
        for (ci, c) in self.cores.iter().enumerate() {
            for (tenant, vaddr, e) in c.tlb.entries() {
                let expect = self.translate_quiet(tenant, vaddr);
                let got = e.base_pfn;
                let slot_ok = e.slot == NO_SLOT
                    || self.tenants[tenant as usize].table.walk(vaddr, None).is_some_and(|l| l.slot == e.slot as usize);
                // Rainbow: a 4 KiB entry of a superpage-mapped address names the copy of
                // its base frame.
                let redirected = match (&self.copies, expect) {
                    (Some(cp), Some((base, true))) if cp.mode == CopyMode::Redirect && !e.huge => {
                        cp.copy_of(base + ((vaddr >> 12) & (self.huge_frames - 1))) == Some(got)
                    }
                    _ => false,
                };
                match expect {
                    _ if redirected => {}
                    Some((pfn, huge)) if pfn == got && huge == e.huge && slot_ok => {}
                    other => {
                        return Err(format!(
                            "core {ci}: stale TLB entry for tenant {tenant} vaddr {vaddr:#x}: TLB says frame {got:#x} (huge {}), page tables say {other:?}",
                            e.huge
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// Translation without cost or side effects: the frame of the TLB-entry-sized
    /// page holding `vaddr` and whether that entry is huge.
    pub fn translate_quiet(&self, tenant: u16, vaddr: u64) -> Option<(u64, bool)> {
        let t = &self.tenants[tenant as usize];
        let huge_mask = (1u64 << self.huge_shift) - 1;
        match &t.guest {
            None => {
                let leaf = t.table.walk(vaddr, None)?;
                Some((t.table.entry(leaf.slot) >> 12, leaf.huge))
            }
            Some(g) => {
                let gl = g.table.walk(vaddr, None)?;
                let gmask = if gl.huge { huge_mask } else { 0xfff };
                let gpa = (g.table.entry(gl.slot) >> 12) << 12 | (vaddr & gmask);
                let hl = t.table.walk(gpa, None)?;
                let he = t.table.entry(hl.slot);
                if gl.huge && hl.huge {
                    Some((he >> 12, true))
                } else {
                    let hmask = if hl.huge { huge_mask } else { 0xfff };
                    Some((((he >> 12) << 12 | (gpa & hmask)) >> 12, false))
                }
            }
        }
    }

    /// Frames each tier has in use (data and page tables).
    pub fn used_frames(&self, t: usize) -> u64 {
        self.alloc.frames(t) - self.alloc.free_frames(t)
    }

    /// Data frames of every tenant in tier `t`.
    pub fn data_frames_in(&self, t: usize) -> u64 {
        self.tenants.iter().map(|tenant| tenant.frames_in[t]).sum()
    }

    /// Simulated time so far: the largest core clock.
    pub fn now(&self) -> u64 {
        self.cores.iter().map(|c| c.clock).max().unwrap_or(0)
    }

    /// Splits the huge mapping holding `addr` (page-table node from the allocator);
    /// returns the first slot of the new node.
    pub(crate) fn split_mapping(&mut self, tenant: u16, addr: u64) -> Option<usize> {
        let mut pf = PtFrames { alloc: &mut self.alloc, rmap: &mut self.rmap };
        self.tenants[tenant as usize].table.split(addr, &mut pf)
    }

    /// Replaces the base-page node of the region holding `addr` by a huge leaf.
    pub(crate) fn merge_mapping(&mut self, tenant: u16, addr: u64, huge_pfn: u64, flags: u64) {
        let mut pf = PtFrames { alloc: &mut self.alloc, rmap: &mut self.rmap };
        self.tenants[tenant as usize].table.merge(addr, huge_pfn, flags, &mut pf);
    }

    pub(crate) fn present(entry: u64) -> bool {
        entry & PRESENT != 0
    }
}
