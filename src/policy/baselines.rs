//! The baselines the papers compare against: static placements with no migration.
//! They differ only in where first touch puts a page.

use super::{FastTier, PageSize, Policy, Requirements};
use crate::machine::memory_mode::{MemoryMode, MemoryModeSpec};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, TierId};
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
