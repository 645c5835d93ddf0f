//! The baselines the papers compare against: static placements with no migration.
//! They differ only in where first touch puts a page.

use super::{FastTier, PageSize, Policy, Requirements};
use crate::machine::memory_mode::{MemoryMode, MemoryModeSpec};
use crate::machine::placement::Placement;
use crate::machine::{Birthplace, Colour, MachineInfo, Observer, PlaceEvent, TierId};
use crate::monitor::Hierarchy;
use crate::params;
use crate::units::Size;

/// Requirements of a policy that only chooses where first touch puts pages.
fn placing(placement: Placement) -> Requirements<()> {
    Requirements { placement, ..Requirements::default() }
}

params! {
    /// A policy without parameters.
    pub struct NoConfig {}
}

/// Upper bound: every page in the fast tier, whose capacity is grown to hold the whole
/// footprint (Rainbow's DRAM-only, HMM-V's pure DRAM system).
pub struct AllFast;

impl Observer for AllFast {}

impl Policy for AllFast {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<()> {
        Requirements { fast_tier: FastTier::HoldsFootprint, ..Requirements::default() }
    }
    fn new(_: NoConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        Ok(AllFast)
    }
}

/// Lower bound: every page in the slow tier.
pub struct AllSlow;

impl Observer for AllSlow {}

impl Policy for AllSlow {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<()> {
        placing(Placement::SlowOnly)
    }
    fn new(_: NoConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        // The slow tier must hold every page: placing some in the fast tier would make
        // the lower bound a mixture.
        let frames = info.tier(TierId::SLOW).frames;
        if info.footprint_bytes > frames << 12 {
            anyhow::bail!(
                "policy all-slow: the footprint ({}) does not fit the slow tier ({}), and all-slow keeps every page there; set machine.tiers.slow.capacity to at least \"{}\"",
                Size(info.footprint_bytes),
                Size(frames << 12),
                Size(info.footprint_bytes.div_ceil(1 << 20) << 20)
            );
        }
        Ok(AllSlow)
    }
}

/// First touch fills the fast tier, then the slow tier; pages never move (Linux's
/// default local-first allocation without tiering).
pub struct FirstTouch;

impl Observer for FirstTouch {}

impl Policy for FirstTouch {
    type Config = NoConfig;
    fn new(_: NoConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        Ok(FirstTouch)
    }
}

/// Pages spread over the tiers in proportion to their capacities, no migration
/// (Rainbow's Flat-static baseline, §IV-A).
pub struct FlatStatic;

impl Observer for FlatStatic {}

impl Policy for FlatStatic {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<()> {
        // Rainbow §IV-A: "managed in 4 KB small pages".
        Requirements { page_size: PageSize::Base, ..placing(Placement::Interleave) }
    }
    fn new(_: NoConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        Ok(FlatStatic)
    }
}

params! {
    /// Parameters of the round-robin baseline (SpAR §4: "4 pages to faster, 3D DRAM
    /// memory, then 4 pages to slower NVM memory, as long as there are free frames in
    /// faster memory").
    pub struct RoundRobinConfig {
        /// Consecutive pages placed in the fast tier per round (SpAR §4: 4).
        pub fast_pages: u32 = 4,
        /// Consecutive pages placed in the slow tier per round (SpAR §4: 4).
        pub slow_pages: u32 = 4,
    }
}

/// N fast : M slow round-robin placement until the fast tier is full, no migration.
pub struct RoundRobin;

impl Observer for RoundRobin {}

impl Policy for RoundRobin {
    type Config = RoundRobinConfig;
    fn requirements(cfg: &RoundRobinConfig) -> Requirements<()> {
        placing(Placement::RoundRobin { fast: cfg.fast_pages, slow: cfg.slow_pages })
    }
    fn new(cfg: RoundRobinConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        if cfg.fast_pages + cfg.slow_pages == 0 {
            anyhow::bail!("policy.round-robin: fast_pages + slow_pages must be positive");
        }
        Ok(RoundRobin)
    }
}

/// Optane Memory Mode (HMM-V §3.1, §5.8–5.9): the whole fast tier is a hardware,
/// direct-mapped, write-back cache of the slow tier ([`MemoryMode`]); the OS sees
/// only the slow tier and no page ever moves. The report's `redirect.memory_mode`
/// has the cache's miss ratio per tenant.
pub struct HardwareCache;

impl Observer for HardwareCache {}

impl Policy<MemoryMode> for HardwareCache {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<MemoryModeSpec> {
        Requirements { placement: Placement::SlowOnly, ..Requirements::default() }
    }
    fn new(_: NoConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        if !info.has(TierId::SLOW) {
            anyhow::bail!("policy memory-mode: needs a slow tier for the fast one to cache");
        }
        Ok(HardwareCache)
    }
}

/// memos' baseline (§7.1 footnote 4): pages interleaved over the channels — one to the
/// DRAM channel, one to the NVM channel, in turn — and over the banks inside a channel
/// by the tier's page-interleaved bank bits; no migration. The DRAM channel fills
/// first when it is the smaller; later pages go to NVM.
pub struct Interleave;

impl Observer for Interleave {}

impl Policy for Interleave {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<()> {
        Requirements { page_size: PageSize::Base, ..placing(Placement::RoundRobin { fast: 1, slow: 1 }) }
    }
    fn new(_: NoConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        if !info.has(TierId::SLOW) {
            anyhow::bail!("policy interleave: needs a slow tier");
        }
        Ok(Interleave)
    }
}

params! {
    /// Parameters of the vertical cache-bank partitioning baseline.
    pub struct CacheBankConfig {
        /// Physical-address bits of the LLC slabs (memos §5.2: bits 15–18).
        pub slab_bits: Vec<u8> = vec![15, 16, 17, 18],
    }
}

/// Vertical cache-bank partitioning, the related work memos compares against in §7.3
/// (Liu et al., ISCA'14: banks and LLC sets partitioned among the cores by page
/// colouring): each core gets an equal, disjoint share of the banks and of the LLC
/// slabs, and its pages take those colours in turn; the channels are interleaved page
/// by page as in `interleave` ("with dual-channel interleaving scheme"), with no
/// channel awareness and no migration between media. With more cores than banks or
/// slabs, cores share them modulo. Base pages only (a huge frame has every colour).
pub struct CacheBankColouring {
    hierarchy: Hierarchy,
    cores: usize,
    /// Pages placed so far, per core (which colour comes next) and overall (which channel).
    placed: Vec<u64>,
    turn: u64,
}

impl CacheBankColouring {
    /// The `n`-th (bank, slab) of `core`'s share of `tier`: its banks and slabs in
    /// turn, skipping pairs that have no frame (a bit selecting both); any colour if
    /// none has.
    fn colour(&self, tier: TierId, core: usize, n: u64) -> Colour {
        let share = |total: usize| {
            let per = (total / self.cores).max(1);
            let first = (core * per) % total;
            (first, per)
        };
        let (b0, nb) = share(self.hierarchy.banks(tier));
        let (s0, ns) = share(self.hierarchy.slabs());
        let pairs = (nb * ns) as u64;
        (n..n + pairs)
            .find_map(|k| {
                let bank = b0 + (k % nb as u64) as usize;
                let slab = s0 + (k / nb as u64 % ns as u64) as usize;
                self.hierarchy.colour(tier, Some(bank), Some(slab))
            })
            .unwrap_or(Colour::ANY)
    }
}

impl Observer for CacheBankColouring {
    fn place(&mut self, e: &PlaceEvent) -> Birthplace {
        let tier = if self.turn.is_multiple_of(2) { TierId::FAST } else { TierId::SLOW };
        self.turn += 1;
        let core = e.core % self.cores;
        let n = self.placed[core];
        self.placed[core] += 1;
        Birthplace { tier, colour: self.colour(tier, core, n) }
    }
}

impl Policy for CacheBankColouring {
    type Config = CacheBankConfig;
    fn requirements(_: &CacheBankConfig) -> Requirements<()> {
        Requirements { page_size: PageSize::Base, ..placing(Placement::Chosen) }
    }
    fn new(cfg: CacheBankConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        if !info.has(TierId::SLOW) {
            anyhow::bail!("policy cache-bank-colouring: needs a slow tier");
        }
        let hierarchy = Hierarchy::for_machine(info, cfg.slab_bits).map_err(|e| anyhow::anyhow!("policy.cache-bank-colouring.slab_bits: {e}"))?;
        let cores = info.cores.max(1);
        Ok(CacheBankColouring { hierarchy, cores, placed: vec![0; cores], turn: 0 })
    }
}
