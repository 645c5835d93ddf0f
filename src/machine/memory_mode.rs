//! Optane Memory Mode: the whole fast tier as a hardware DRAM cache of the slow tier,
//! invisible to the OS (HMM-V §3.1; Intel's Memory Mode as HMM-V runs it, §5.8–5.9).
//!
//! The OS sees only the slow tier: every page and page table lives there
//! ([`Redirect::hides_fast_tier`]). At the memory controller, every access that left
//! the last-level cache probes the DRAM cache: direct-mapped, 64-byte lines, indexed
//! by the line's slow-tier address modulo the number of lines the fast tier holds,
//! write-back. The tag is held with the data (in the ECC bits), so the probe is one
//! DRAM read whether it hits or not:
//! - a read that hits is that read;
//! - a read that misses waits for the probe, then reads the slow tier; the line is
//!   then filled into DRAM (a DRAM write) and, if the victim was dirty, the victim —
//!   which the probe brought along — is written to the slow tier. The fill and the
//!   write-back are posted: the core waits for the probe and the slow read only;
//! - a write (a dirty line the LLC evicts) probes, writes the victim back to the slow
//!   tier if it was dirty and another line's, then writes the line into DRAM, dirty.
//!
//! Every one of those accesses takes its channel's time, so the cache's own traffic
//! (probes that miss, fills, victim write-backs) competes with demand as it does on
//! the hardware. Demand statistics count an access where it was served — the fast
//! tier for a hit, the slow tier for a miss — so the report's fast-tier fraction is
//! the hit ratio; the probes of misses, fills and victim write-backs count as the
//! tiers' metadata traffic. The report's `memory_mode` section gives the miss ratio
//! per tenant, of loads as HMM-V measures it (§5.9.2: PMM_C / (PMM_C + DRAM_C)) and of
//! every access.
//!
//! Tags take two bytes per 64-byte line of DRAM (1/32 of the fast tier's size in host
//! memory): 15 bits of tag and a dirty bit.

use super::core::Core;
use super::events::{MemKind, Observer};
use super::memory::Tiers;
use super::redirect::{Layout, Redirect};
use super::tlb::TlbConfig;
use super::TierId;
use serde::Serialize;

/// Memory Mode has no parameters: its size is the fast tier's capacity.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryModeSpec;

/// Tag bit: the line differs from its copy in the slow tier.
const DIRTY: u16 = 1 << 15;
/// Largest stored tag (tag + 1, 0 being an empty line).
const MAX_TAG: u64 = (DIRTY - 1) as u64;

/// What the cache saw on one core.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CacheCounts {
    /// Reads that found their line (a load, a page-walk read or a fill of the LLC).
    pub read_hits: u64,
    pub read_misses: u64,
    /// Write-backs from the LLC that found their line.
    pub write_hits: u64,
    pub write_misses: u64,
    /// Dirty victims written to the slow tier.
    pub dirty_evictions: u64,
}

impl CacheCounts {
    fn add(&mut self, o: &CacheCounts) {
        self.read_hits += o.read_hits;
        self.read_misses += o.read_misses;
        self.write_hits += o.write_hits;
        self.write_misses += o.write_misses;
        self.dirty_evictions += o.dirty_evictions;
    }

    /// Misses of reads over all reads (HMM-V's load miss ratio).
    pub fn read_miss_ratio(&self) -> f64 {
        ratio(self.read_misses, self.read_hits + self.read_misses)
    }

    /// Misses over every access.
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.read_misses + self.write_misses, self.read_hits + self.read_misses + self.write_hits + self.write_misses)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The DRAM cache; see the module documentation.
pub struct MemoryMode {
    /// Per line of the fast tier: 0 if empty, else the tag + 1, with [`DIRTY`].
    tags: Vec<u16>,
    /// First line of the slow tier and the number of its lines.
    slow_first_line: u64,
    slow_lines: u64,
    /// Physical address of the fast tier's first byte.
    fast_base: u64,
    /// Counts per core (mechanism traffic is not counted).
    per_core: Vec<CacheCounts>,
}

/// Where a line of the slow tier lives in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    set: usize,
    tag: u16,
}

impl MemoryMode {
    /// A cache of `fast_lines` lines in front of a slow tier of `slow_lines` lines
    /// from line `slow_first_line`; the cache's lines start at `fast_base`.
    pub fn new(fast_base: u64, fast_lines: u64, slow_first_line: u64, slow_lines: u64) -> anyhow::Result<MemoryMode> {
        if fast_lines == 0 {
            anyhow::bail!("machine.tiers.fast.capacity: Memory Mode needs a fast tier to cache the slow one");
        }
        if slow_lines.div_ceil(fast_lines) > MAX_TAG {
            anyhow::bail!("machine.tiers.slow.capacity: Memory Mode's tags cover at most {MAX_TAG} times the fast tier, the slow tier is {} times it", slow_lines.div_ceil(fast_lines));
        }
        Ok(MemoryMode { tags: vec![0; fast_lines as usize], slow_first_line, slow_lines, fast_base, per_core: Vec::new() })
    }

    /// The cache slot of physical address `paddr`, if the slow tier holds it.
    #[inline]
    fn slot(&self, paddr: u64) -> Option<Slot> {
        let line = (paddr >> 6).checked_sub(self.slow_first_line).filter(|&l| l < self.slow_lines)?;
        let sets = self.tags.len() as u64;
        Some(Slot { set: (line % sets) as usize, tag: (line / sets + 1) as u16 })
    }

    /// The slow-tier address of the line stored with tag entry `e` in `set`.
    fn victim_paddr(&self, set: usize, e: u16) -> u64 {
        let tag = (e & !DIRTY) as u64 - 1;
        (self.slow_first_line + tag * self.tags.len() as u64 + set as u64) << 6
    }

    /// Counts of every core together.
    pub fn total(&self) -> CacheCounts {
        let mut t = CacheCounts::default();
        self.per_core.iter().for_each(|c| t.add(c));
        t
    }

    fn counts(&mut self, core: usize) -> &mut CacheCounts {
        if core >= self.per_core.len() {
            self.per_core.resize(core + 1, CacheCounts::default());
        }
        &mut self.per_core[core]
    }
}

/// Per-tenant figures for the report.
#[derive(Serialize)]
struct TenantCounts {
    tenant: u16,
    #[serde(flatten)]
    counts: CacheCounts,
    read_miss_ratio: f64,
    miss_ratio: f64,
}

impl Redirect for MemoryMode {
    type Spec = MemoryModeSpec;

    fn hides_fast_tier(_: &MemoryModeSpec) -> bool {
        true
    }

    fn build(_: &MemoryModeSpec, layout: &Layout, _: Vec<u64>, _: Vec<u64>) -> anyhow::Result<MemoryMode> {
        if layout.tiers.len() < 2 {
            anyhow::bail!("machine.tiers.slow: Memory Mode caches a slow tier, and there is none");
        }
        let ((fast_first, fast_frames), (slow_first, slow_frames)) = (layout.tier(TierId::FAST), layout.tier(TierId::SLOW));
        MemoryMode::new(fast_first << 12, fast_frames << 6, slow_first << 6, slow_frames << 6)
    }

    #[inline]
    fn memory<O: Observer>(&mut self, tiers: &mut Tiers, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, background: bool, obs: &mut O) -> u64 {
        let Some(s) = self.slot(paddr) else {
            // Not the slow tier's (nothing else is mapped; kept for safety).
            return if background { tiers.background(paddr, write, at) } else { tiers.access(core, paddr, write, kind, at, obs) };
        };
        let cache_line = self.fast_base + ((s.set as u64) << 6);
        let e = self.tags[s.set];
        let hit = e & !DIRTY == s.tag;
        let victim = (!hit && e & DIRTY != 0).then(|| self.victim_paddr(s.set, e));
        self.tags[s.set] = s.tag | if write || (hit && e & DIRTY != 0) { DIRTY } else { 0 };
        if background {
            // A mechanism's line: the same accesses, as background traffic.
            let probe = tiers.background(cache_line, false, at);
            let mut latency = probe;
            if !hit && !write {
                latency += tiers.background(paddr, false, at + probe);
            }
            if let Some(v) = victim {
                tiers.background(v, true, at + latency);
            }
            if write || !hit {
                tiers.background(cache_line, true, at + latency);
            }
            return latency;
        }
        let c = self.counts(core);
        match (write, hit) {
            (false, true) => c.read_hits += 1,
            (false, false) => c.read_misses += 1,
            (true, true) => c.write_hits += 1,
            (true, false) => c.write_misses += 1,
        }
        c.dirty_evictions += victim.is_some() as u64;
        if hit && !write {
            // The probe is the read: served by the fast tier, seen under the OS address.
            return tiers.access_as(core, paddr, cache_line, false, kind, at, obs);
        }
        let probe_kind = if hit { kind } else { MemKind::Metadata };
        let probe = tiers.access_as(core, paddr, cache_line, false, probe_kind, at, obs);
        let mut latency = probe;
        if !write {
            latency += tiers.access(core, paddr, false, kind, at + probe, obs);
        }
        if let Some(v) = victim {
            tiers.access(core, v, true, MemKind::Metadata, at + latency, obs);
        }
        // The fill of a read miss, or the written line.
        let fill_kind = if write && hit { kind } else { MemKind::Metadata };
        tiers.access_as(core, paddr, cache_line, true, fill_kind, at + latency, obs);
        latency
    }

    fn report(&self, _cores: &[Core], _tlb: &TlbConfig, core_tenants: &[u16]) -> Vec<(&'static str, serde_json::Value)> {
        let mut tenants: Vec<TenantCounts> = Vec::new();
        for (core, c) in self.per_core.iter().enumerate() {
            let tenant = core_tenants.get(core).copied().unwrap_or(0);
            match tenants.iter_mut().find(|t| t.tenant == tenant) {
                Some(t) => t.counts.add(c),
                None => tenants.push(TenantCounts { tenant, counts: *c, read_miss_ratio: 0.0, miss_ratio: 0.0 }),
            }
        }
        tenants.sort_by_key(|t| t.tenant);
        for t in &mut tenants {
            (t.read_miss_ratio, t.miss_ratio) = (t.counts.read_miss_ratio(), t.counts.miss_ratio());
        }
        let total = self.total();
        vec![(
            "memory_mode",
            serde_json::json!({
                "lines": self.tags.len(),
                "total": total,
                "read_miss_ratio": total.read_miss_ratio(),
                "miss_ratio": total.miss_ratio(),
                "tenants": tenants,
            }),
        )]
    }
}


#[cfg(test)]
mod tests {
    //! The cache on a tiny machine with flat latencies (1 GHz, a row hit costs what a
    //! miss does, no write queue), accesses 10 000 cycles apart so none queues: every
    //! latency below is a sum of the tiers' read latencies, by hand.
    use super::*;
    use crate::machine::events::MemEvent;
    use crate::machine::tier::{pcm_default, Tier, TierConfig};

    /// DRAM read 50 ns, write 60 ns; PMem read 300 ns, write 100 ns.
    const F: u64 = 50;
    const S: u64 = 300;
    /// A 64 KiB fast tier (1 024 lines) before a 256 KiB slow one.
    const FAST_FRAMES: u64 = 16;
    const SLOW_FRAMES: u64 = 64;
    const SETS: u64 = FAST_FRAMES * 64;
    /// A line of the slow tier, and one that maps to the same set.
    const A: u64 = (FAST_FRAMES << 12) + 5 * 64;
    const B: u64 = A + SETS * 64;

    fn flat(c: TierConfig, read: f64, write: f64) -> TierConfig {
        TierConfig { read_hit_ns: read, read_miss_ns: read, write_hit_ns: write, write_miss_ns: write, channel_gbps: 64.0, write_queue_entries: 0, ..c }
    }

    fn machine() -> (MemoryMode, Tiers) {
        let fast = Tier::new(&flat(TierConfig::default(), F as f64, 60.0), FAST_FRAMES << 12, 1.0).unwrap();
        let slow = Tier::new(&flat(pcm_default(), S as f64, 100.0), SLOW_FRAMES << 12, 1.0).unwrap();
        let tiers = Tiers::new(vec![fast, slow], vec![(0, FAST_FRAMES), (FAST_FRAMES, FAST_FRAMES + SLOW_FRAMES)]);
        (MemoryMode::new(0, SETS, FAST_FRAMES << 6, SLOW_FRAMES << 6).unwrap(), tiers)
    }

    #[derive(Default)]
    struct Seen(Vec<MemEvent>);

    impl Observer for Seen {
        fn on_memory_access(&mut self, e: &MemEvent) {
            self.0.push(*e);
        }
    }

    /// One access by core 0 at `at`: its latency and the events it caused.
    fn go(mm: &mut MemoryMode, t: &mut Tiers, paddr: u64, write: bool, at: u64) -> (u64, Vec<MemEvent>) {
        let mut seen = Seen::default();
        let kind = if write { MemKind::Writeback } else { MemKind::Demand };
        let lat = mm.memory(t, 0, paddr, write, kind, at, false, &mut seen);
        (lat, seen.0)
    }

    #[test]
    fn a_read_miss_waits_for_the_probe_and_the_slow_read_a_hit_for_dram_only() {
        let (mut mm, mut t) = machine();
        let (lat, ev) = go(&mut mm, &mut t, A, false, 0);
        assert_eq!(lat, F + S);
        // Probe (fast read), slow read, fill (fast write); no victim.
        let seen: Vec<_> = ev.iter().map(|e| (e.tier, e.write, e.kind)).collect();
        assert_eq!(seen, [(TierId::FAST, false, MemKind::Metadata), (TierId::SLOW, false, MemKind::Demand), (TierId::FAST, true, MemKind::Metadata)]);
        assert!(ev.iter().all(|e| e.paddr == A), "the observer sees the OS address");
        let (lat, ev) = go(&mut mm, &mut t, A + 8, false, 10_000);
        assert_eq!(lat, F);
        assert_eq!(ev.len(), 1);
        assert_eq!((ev[0].tier, ev[0].kind), (TierId::FAST, MemKind::Demand));
        assert_eq!(t.demand(TierId::FAST).accesses, 1);
        assert_eq!(t.demand(TierId::SLOW).accesses, 1);
        assert_eq!(mm.total(), CacheCounts { read_hits: 1, read_misses: 1, ..CacheCounts::default() });
    }

    #[test]
    fn lines_a_cache_size_apart_conflict_and_a_clean_victim_is_dropped() {
        let (mut mm, mut t) = machine();
        go(&mut mm, &mut t, A, false, 0);
        // B maps to A's set: a miss that evicts A, clean, so nothing is written back.
        let (lat, ev) = go(&mut mm, &mut t, B, false, 10_000);
        assert_eq!(lat, F + S);
        assert!(ev.iter().all(|e| !(e.tier == TierId::SLOW && e.write)));
        // A misses again; the line next to A (another set) is a compulsory miss too.
        assert_eq!(go(&mut mm, &mut t, A, false, 20_000).0, F + S);
        assert_eq!(go(&mut mm, &mut t, A + 64, false, 30_000).0, F + S);
        assert_eq!(go(&mut mm, &mut t, A, false, 40_000).0, F);
        assert_eq!(mm.total(), CacheCounts { read_hits: 1, read_misses: 4, ..CacheCounts::default() });
    }

    #[test]
    fn a_dirty_victim_is_written_to_the_slow_tier_at_its_own_address() {
        let (mut mm, mut t) = machine();
        // A write-back of A allocates its line dirty: probe, then the write.
        let (_, ev) = go(&mut mm, &mut t, A, true, 0);
        let seen: Vec<_> = ev.iter().map(|e| (e.tier, e.write)).collect();
        assert_eq!(seen, [(TierId::FAST, false), (TierId::FAST, true)]);
        // Reading B evicts dirty A: probe, slow read of B, A written back, B filled.
        let (lat, ev) = go(&mut mm, &mut t, B, false, 10_000);
        assert_eq!(lat, F + S);
        let back: Vec<_> = ev.iter().filter(|e| e.tier == TierId::SLOW && e.write).map(|e| e.paddr).collect();
        assert_eq!(back, [A]);
        // B is clean: evicting it writes nothing.
        let (_, ev) = go(&mut mm, &mut t, A, false, 20_000);
        assert!(ev.iter().all(|e| !(e.tier == TierId::SLOW && e.write)));
        assert_eq!(mm.total(), CacheCounts { read_misses: 2, write_misses: 1, dirty_evictions: 1, ..CacheCounts::default() });
        // The slow tier served two reads and the victim's write; only the reads are demand.
        assert_eq!((t.get(TierId::SLOW).stats().reads, t.get(TierId::SLOW).stats().writes), (2, 1));
        assert_eq!((t.demand(TierId::SLOW).reads, t.demand(TierId::SLOW).writes), (2, 0));
    }

    #[test]
    fn a_write_hit_keeps_the_line_dirty_and_a_read_hit_does_not_clean_it() {
        let (mut mm, mut t) = machine();
        go(&mut mm, &mut t, A, false, 0);
        go(&mut mm, &mut t, A, true, 10_000);
        go(&mut mm, &mut t, A, false, 20_000);
        let (_, ev) = go(&mut mm, &mut t, B, false, 30_000);
        assert_eq!(ev.iter().filter(|e| e.tier == TierId::SLOW && e.write).count(), 1);
        assert_eq!(mm.total().write_hits, 1);
    }

    #[test]
    fn the_report_gives_miss_ratios_per_tenant() {
        let (mut mm, mut t) = machine();
        go(&mut mm, &mut t, A, false, 0);
        go(&mut mm, &mut t, A, false, 10_000);
        // Core 1 (tenant 1) misses twice.
        let mut seen = Seen::default();
        mm.memory(&mut t, 1, B, false, MemKind::Demand, 20_000, false, &mut seen);
        mm.memory(&mut t, 1, A + 64, false, MemKind::Demand, 30_000, false, &mut seen);
        let r = mm.report(&[], &TlbConfig::default(), &[0, 1]);
        let tenants = &r[0].1["tenants"];
        assert_eq!(tenants[0]["read_miss_ratio"], 0.5);
        assert_eq!(tenants[1]["read_miss_ratio"], 1.0);
        assert_eq!(r[0].1["read_miss_ratio"], 0.75);
    }

    #[test]
    fn a_slow_tier_beyond_the_tags_reach_is_refused() {
        let err = MemoryMode::new(0, 1, 0, MAX_TAG + 1).err().unwrap().to_string();
        assert!(err.starts_with("machine.tiers.slow.capacity:"), "{err}");
    }
}
