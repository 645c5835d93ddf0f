//! The machine's configuration: the `[machine]` table and the tables below it.

use super::cache::{self, CacheConfig};
use super::costs::CostConfig;
use super::tier::{self, TierConfig};
use super::tlb::TlbConfig;
use super::TierId;
use crate::units::Size;
use serde::{Deserialize, Serialize};

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
    /// Where the page walker's reads go: `"cached"` (the default) through the data
    /// caches, as x86 walkers read page-table entries; `"uncached"` straight to the
    /// memory tier holding the table. Left out of a report's `config` while cached.
    #[serde(skip_serializing_if = "WalkReads::is_cached")]
    pub walk_reads: WalkReads,
}

/// Where the page walker's reads go (`machine.page_table.walk_reads`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WalkReads {
    /// Through the cache hierarchy, as x86 page walkers read page-table entries: a
    /// walk costs what its references' cache levels (or the tier, on a miss in all)
    /// take.
    #[default]
    Cached,
    /// Straight to memory, the cost model of Rainbow's analysis (§III-E: "page table
    /// walks result in four memory references to the four-level page tables, and thus
    /// the address translation overhead is 4×t_dr", and its remapping is one t_nr):
    /// every read of the hardware walker — each level of a walk, the Dirty-bit update
    /// of a first store, and Rainbow's read of a migrated page's pointer (§III-E) —
    /// goes to the tier holding its line, one after another on the core's clock, at
    /// that tier's latency (row buffer and queueing included). Needs the
    /// paging-structure caches off (`machine.tlb.psc`), so that a walk reads every
    /// level, as the analysis charges.
    Uncached,
}

impl WalkReads {
    /// Whether walks read through the caches (the default), for leaving the field out
    /// of reports, which then stay as they were before the field existed.
    pub fn is_cached(&self) -> bool {
        *self == WalkReads::Cached
    }
}

/// Virtual-address bits page tables of `levels` levels translate (4 KiB pages, 9 bits
/// a level): 48 with 4 levels, 57 with 5.
pub fn va_bits(levels: u32) -> u32 {
    12 + 9 * levels
}

impl PageTableConfig {
    /// Virtual-address bits the page table translates: 48 with 4 levels, 57 with 5.
    pub fn va_bits(&self) -> u32 {
        va_bits(self.levels)
    }
}

impl Default for PageTableConfig {
    fn default() -> Self {
        PageTableConfig { levels: 4, huge_page: Size(2 << 20), thp: false, walk_reads: WalkReads::Cached }
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
    /// Every tier, fastest first.
    pub fn all(&self) -> Vec<&TierConfig> {
        let mut v = vec![&self.fast, &self.slow];
        v.extend(self.extra.iter());
        v
    }

    /// The dotted path of tier `t` in the configuration.
    pub fn field(t: TierId) -> String {
        match t.index() {
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
    /// Physical-address bits (each at least 12, at most 10 distinct bits) over which
    /// the frame allocator counts free frames per colour, memos' colour sub-buddy
    /// (memos §6.2, Fig. 12: bits 21, 20, 18–12). With them, "free frames of this
    /// colour" is answered from the counts and a coloured allocation that cannot
    /// succeed fails at once; frames are chosen the same either way. Empty (the
    /// default): no counts.
    pub colour_bits: Vec<u8>,
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
            colour_bits: Vec::new(),
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
        self.tlb.validate(self.page_table.levels)?;
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
        if pt.walk_reads == WalkReads::Uncached && !self.tlb.psc.is_off() {
            bail!("machine.page_table.walk_reads = \"uncached\" charges every level of every walk (Rainbow §III-E): turn the paging-structure caches off (machine.tlb.psc sizes 0)");
        }
        self.costs.validate()?;
        let cb = &self.colour_bits;
        if let Some(b) = cb.iter().find(|&&b| b < 12) {
            bail!("machine.colour_bits: bit {b} is inside the 4 KiB page offset; colour bits must be 12 or more");
        }
        if let Some((i, b)) = cb.iter().enumerate().find(|&(i, b)| cb[..i].contains(b)) {
            bail!("machine.colour_bits: bit {b} is named twice (entry {i})");
        }
        if cb.len() > 10 {
            bail!("machine.colour_bits: at most 10 bits (1024 colours), got {}", cb.len());
        }
        // Each tier's own fields (its capacity is checked when the footprint is known).
        for (i, t) in self.tiers.all().into_iter().enumerate() {
            t.validate().map_err(|e| anyhow::anyhow!("{}.{e}", TiersConfig::field(crate::machine::TierId(i as u8))))?;
        }
        Ok(())
    }

    /// Checks `colour_bits` against the tiers' capacities in bytes, once they are
    /// known: a bit at or above a tier's size is clear in every frame of it.
    pub fn validate_colour_bits(&self, tier_bytes: &[u64]) -> anyhow::Result<()> {
        for &b in &self.colour_bits {
            if let Some((i, &bytes)) = tier_bytes.iter().enumerate().find(|&(_, &bytes)| b >= 64 || bytes > 0 && 1u64 << b >= bytes) {
                anyhow::bail!(
                    "machine.colour_bits: bit {b} is above the size of {} ({}): every frame there has it clear",
                    TiersConfig::field(crate::machine::TierId(i as u8)),
                    Size(bytes)
                );
            }
        }
        Ok(())
    }

    pub fn huge_shift(&self) -> u32 {
        self.page_table.huge_page.bytes().trailing_zeros()
    }

    pub fn cycles(&self, ns: f64) -> u64 {
        (ns * self.freq_ghz).round() as u64
    }
}

