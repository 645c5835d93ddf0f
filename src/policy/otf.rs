//! On-the-fly migration behind a hardware migration controller (MigC): whole huge
//! pages (`hugepage-otf`), subpages with address reconciliation (`spar`) and subpages
//! with reverse migration (`sprm`) — Adavally, Kavi and Mehta, "Subpage Migration in
//! Heterogeneous Memory Systems" (HMEM'21), on the MigC of Islam et al. (JETC 2020)
//! with the adaptive threshold of Adavally et al. (JETC 2021).
//!
//! The machine's side (ReMap table, MigC's buffers, wait queue and clock,
//! reconciliation, reverse migration) is `machine::remap`; these policies are MigC's
//! decisions:
//! - access counters per migration unit at the controller, fed by every LLC miss and
//!   write-back to a slow-tier unit (the OS-visible address); the moment a counter
//!   reaches the threshold, the unit migrates (§2.2, Appendix A.1);
//! - one-way into a free fast huge frame, else swapped with the least recently
//!   accessed fast huge page (an LRU over the fast tier's huge frames, touched by
//!   every access the controller sees); SpRM moves subpages into its swap area;
//! - when the ReMap table is `reconcile_at` full, SpAR and huge-page migration
//!   reconcile the entries whose pages have the highest share of subpages moved
//!   (§3), SpRM moves back the subpages with the lowest Migration Benefit Quotient —
//!   accesses since migration (§3, footnote 4);
//! - the adaptive threshold (docs/policies/spar.md gives the rule and its sources).
//!
//! Pages are first placed 4 fast : 4 slow in turn until the fast tier is full (§4),
//! as the `round-robin` baseline does.

use super::{PageSize, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::remap::{Dest, Remap, RemapSpec};
use crate::machine::{MachineInfo, MechError, MemEvent, MemKind, Observer, RefOutcome, TierId};
use crate::mechanism::Mechanisms;
use crate::monitor::{LruLists, Which};
use crate::params;
use crate::policy::params::Params;
use crate::policy::Epoch;
use crate::trace::Access;
use crate::units::Size;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::marker::PhantomData;

params! {
    /// Parameters of on-the-fly migration behind MigC (SpAR §4, Tables 1–2).
    pub struct OtfConfig {
        /// Accesses at the controller that make a unit hot (§5: 16 384 for 512 KiB huge
        /// pages, 2 048 for 64 KiB subpages: proportional to the size).
        pub threshold: u32 = 2048,
        /// Adapt the threshold to the migrations' benefit (§5's `adaptive`, the rule of
        /// Adavally et al., JETC 2021; see docs/policies/spar.md).
        pub adaptive: bool = true,
        /// Bytes one migration moves: a subpage (§4.1: 64 KiB), or 0 for the whole huge page.
        pub subpage: Size = Size(64 << 10),
        /// Entries of the ReMap table (§4.1: 1 024, fully associative).
        pub remap_entries: usize = 1024,
        /// Cycles of a ReMap-table lookup after the LLC (Table 2: 10).
        pub lookup_cycles: u64 = 10,
        /// Share of the table in use that starts reconciliation or reverse migration (§2.2: 50 %).
        pub reconcile_at: f64 = 0.5,
        /// Share of the table in use that reconciliation or reverse migration brings it
        /// back to (our choice: the paper does not say how many entries go at once).
        pub reconcile_to: f64 = 0.25,
        /// Migration-queue entries per memory controller (Table 1: 32).
        pub mig_queue_entries: u32 = 32,
        /// Page walk to rewrite a PTE at reconciliation, in cycles (Table 2: 150).
        pub walk_cycles: u64 = 150,
        /// OS reverse mapping per page reconciled, in cycles (Table 2: 4 480).
        pub reverse_map_cycles: u64 = 4480,
        /// SpRM's swap area in the fast tier (0 = none: subpages go into huge frames).
        pub swap_area: Size = Size(0),
        /// Pages placed in the fast tier, then in the slow tier, in turn (§4: 4 and 4).
        pub fast_pages: u32 = 4,
        pub slow_pages: u32 = 4,
        /// Adaptive threshold: controller accesses between adjustments.
        pub adapt_interval: u64 = 1_000_000,
        /// Adaptive threshold: lowest and highest value.
        pub threshold_min: u32 = 256,
        pub threshold_max: u32 = 65536,
    }
}

/// What distinguishes the three policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Whole huge pages (`512K_huge_th16384`).
    HugePage,
    /// Subpages, address reconciliation (`64K_subpage_adaptive_th2048`).
    SpAr,
    /// Subpages into a swap area, reverse migration (`64K_subpage_reverse_large_swap`).
    SpRm,
}

/// One of the three policies: its kind and its defaults.
pub trait Variant: 'static {
    const KIND: Kind;
    fn defaults() -> OtfConfig;
}

macro_rules! variant {
    ($v:ident, $cfg:ident, $kind:expr, $doc:literal, $defaults:expr) => {
        pub struct $v;
        impl Variant for $v {
            const KIND: Kind = $kind;
            fn defaults() -> OtfConfig {
                $defaults
            }
        }
        #[doc = $doc]
        #[derive(Clone, Debug, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $cfg(pub OtfConfig);
        impl Default for $cfg {
            fn default() -> Self {
                $cfg($v::defaults())
            }
        }
        impl Params for $cfg {
            const DOCS: &'static [(&'static str, &'static str)] = OtfConfig::DOCS;
        }
        impl AsRef<OtfConfig> for $cfg {
            fn as_ref(&self) -> &OtfConfig {
                &self.0
            }
        }
    };
}

variant!(HugePageOtf, HugePageConfig, Kind::HugePage, "Parameters of `hugepage-otf`.", OtfConfig {
    threshold: 16384,
    adaptive: false,
    subpage: Size(0),
    ..OtfConfig::default()
});
variant!(SpAr, SpArConfig, Kind::SpAr, "Parameters of `spar`.", OtfConfig::default());
variant!(SpRm, SpRmConfig, Kind::SpRm, "Parameters of `sprm`.", OtfConfig { adaptive: false, swap_area: Size(128 << 20), ..OtfConfig::default() });

/// One period of the time series.
#[derive(Clone, Debug, Serialize)]
struct Record {
    end_cycle: u64,
    threshold: u32,
    entries: usize,
    migrations: u64,
    reconciliations: u64,
    reversed: u64,
}

pub struct Otf<V: Variant> {
    cfg: OtfConfig,
    threshold: u32,
    slow_base: u64,
    slow_frames: u64,
    fast_base: u64,
    fast_frames: u64,
    unit_shift: u32,
    huge_shift: u32,
    /// Per slow unit: accesses at the controller toward the threshold.
    counts: Vec<u32>,
    /// Per slow unit: moved (not back yet), and accesses since (the MBQ).
    moved: Vec<bool>,
    mbq: Vec<u32>,
    /// Fast huge frames, least recently accessed at the tail.
    lru: LruLists,
    /// Units that reached the threshold, to migrate after the reference.
    hot: Vec<u64>,
    // Adaptive threshold: accesses seen and benefit earned in the interval.
    seen: u64,
    benefit: u64,
    moved_in_interval: u64,
    // Counters for the report.
    migrations: u64,
    refused: u64,
    refusals: std::collections::BTreeMap<String, u64>,
    reverse_mbq: Vec<u32>,
    series: Vec<Record>,
    _v: PhantomData<V>,
}

impl<V: Variant> Otf<V> {
    /// The OS-visible slow unit of physical address `paddr`.
    #[inline]
    fn slow_unit(&self, paddr: u64) -> Option<usize> {
        let i = (paddr >> 12).wrapping_sub(self.slow_base);
        (i < self.slow_frames).then_some((i >> self.unit_shift) as usize)
    }

    #[inline]
    fn fast_huge(&self, paddr: u64) -> Option<u64> {
        let i = (paddr >> 12).wrapping_sub(self.fast_base);
        (i < self.fast_frames).then_some(i >> (self.huge_shift - 12))
    }

    fn unit_pfn(&self, unit: usize) -> u64 {
        self.slow_base + ((unit as u64) << self.unit_shift)
    }

    fn refuse(&mut self, e: &MechError) {
        self.refused += 1;
        let key = format!("{e:?}");
        let key = key.split([' ', '{', '(']).next().unwrap_or("").to_string();
        *self.refusals.entry(key).or_default() += 1;
    }

    /// The least recently accessed fast huge page that can be swapped out.
    fn victim(&mut self, mech: &Mechanisms<Remap>) -> Option<u64> {
        let huge_frames = 1u64 << (self.huge_shift - 12);
        let mut stale = Vec::new();
        let mut found = None;
        for h in self.lru.iter_from_tail(Which::Inactive).take(256) {
            let pfn = self.fast_base + h * huge_frames;
            let remapped = mech.remap().entry_of(pfn).is_some();
            let data = matches!(mech.owner(pfn), crate::machine::Owner::Data { .. });
            if !remapped && data {
                found = Some((h, pfn));
                break;
            }
            if !data {
                // Free or held for a migration: not a page; it comes back when used.
                stale.push(h);
            }
        }
        for h in stale {
            self.lru.remove(h);
        }
        let (h, pfn) = found?;
        self.lru.push_head(h, Which::Inactive);
        Some(pfn)
    }

    fn migrate(&mut self, unit: usize, mech: &mut Mechanisms<Remap>) {
        let pfn = self.unit_pfn(unit);
        let r = mech.remap();
        let has_entry = r.entry_of(pfn).is_some();
        let full = r.occupancy() + 2 > r.capacity();
        if full {
            self.make_room(mech);
        }
        let dest = match V::KIND {
            Kind::SpRm => Dest::SwapArea,
            _ if has_entry => Dest::Free,
            _ if mech.free_frames(TierId::FAST) >= 1 << (self.huge_shift - 12) => Dest::Free,
            _ => match self.victim(mech) {
                Some(v) => Dest::Swap(v),
                None => {
                    self.refuse(&MechError::NoFreeFrame { tier: TierId::FAST, huge: true });
                    return;
                }
            },
        };
        let mut result = mech.otf_migrate(pfn, dest);
        if V::KIND == Kind::SpRm && matches!(result, Err(MechError::NoFreeFrame { .. })) {
            // The swap area is full: move back the least beneficial subpage first.
            self.reverse(1, mech);
            result = mech.otf_migrate(pfn, dest);
        }
        match result {
            Ok(_) => {
                self.migrations += 1;
                self.moved_in_interval += 1;
                self.counts[unit] = 0;
                self.moved[unit] = true;
                self.mbq[unit] = 0;
            }
            Err(e) => {
                // Counted from zero again: the unit may try later.
                self.counts[unit] = 0;
                self.refuse(&e);
            }
        }
    }

    /// Brings the table back to `reconcile_to` of its entries.
    fn make_room(&mut self, mech: &mut Mechanisms<Remap>) {
        match V::KIND {
            Kind::SpRm => {
                let target = (self.cfg.reconcile_to * mech.remap().capacity() as f64) as usize;
                let n = mech.remap().occupancy().saturating_sub(target);
                self.reverse(n, mech);
            }
            _ => self.reconcile(mech),
        }
    }

    /// Reconciles entries with the highest share of their subpages moved (oldest
    /// first among equals) until the table is at `reconcile_to`.
    fn reconcile(&mut self, mech: &mut Mechanisms<Remap>) {
        let r = mech.remap();
        let target = (self.cfg.reconcile_to * r.capacity() as f64) as usize;
        let mut order: Vec<(u32, u64, u64)> = r.entries().filter(|(_, e)| e.old >= self.slow_base && !e.returning).map(|(_, e)| (e.migrated.count_ones(), e.created, e.old)).collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, _, old) in order {
            if mech.remap().occupancy() <= target {
                break;
            }
            match mech.reconcile(old) {
                Ok(()) => {
                    let first = self.slow_unit(old << 12).expect("a slow unit");
                    let n = 1usize << (self.huge_shift - 12 - self.unit_shift);
                    for u in first..first + n {
                        self.moved[u] = false;
                        self.counts[u] = 0;
                    }
                }
                Err(e) => self.refuse(&e),
            }
        }
    }

    /// Moves back the `n` moved subpages with the lowest MBQ (SpRM).
    fn reverse(&mut self, n: usize, mech: &mut Mechanisms<Remap>) {
        let r = mech.remap();
        let mut order: Vec<(u32, u64)> = r
            .entries()
            .filter(|(_, e)| !e.returning)
            .filter_map(|(_, e)| self.slow_unit(e.old << 12).map(|u| (self.mbq[u], e.old)))
            .collect();
        order.sort_unstable();
        for &(q, old) in order.iter().take(n) {
            match mech.reverse_migrate(old) {
                Ok(_) => {
                    let u = self.slow_unit(old << 12).expect("a slow unit");
                    self.moved[u] = false;
                    self.counts[u] = 0;
                    self.reverse_mbq.push(q);
                }
                Err(e) => self.refuse(&e),
            }
        }
    }

    /// The adaptive rule, run every `adapt_interval` controller accesses.
    fn adapt(&mut self) {
        let (m, b) = (self.moved_in_interval, self.benefit);
        let t = self.threshold as u64;
        // A migration pays for itself when its unit earns at least as many fast
        // accesses as it took to find it hot; see docs/policies/spar.md.
        let next = if m == 0 {
            t / 2
        } else if b < m * t {
            t * 2
        } else {
            t / 2
        };
        self.threshold = next.clamp(self.cfg.threshold_min as u64, self.cfg.threshold_max as u64) as u32;
        self.seen = 0;
        self.benefit = 0;
        self.moved_in_interval = 0;
    }
}

impl<V: Variant> Observer for Otf<V> {
    #[inline]
    fn on_memory_access(&mut self, e: &MemEvent) {
        if e.kind == MemKind::Metadata {
            return;
        }
        if let Some(u) = self.slow_unit(e.paddr) {
            if self.moved[u] {
                self.mbq[u] = self.mbq[u].saturating_add(1);
                self.benefit += 1;
            } else {
                self.counts[u] += 1;
                if self.counts[u] == self.threshold {
                    self.hot.push(u as u64);
                }
            }
        } else if let Some(h) = self.fast_huge(e.paddr) {
            self.lru.push_head(h, Which::Inactive);
        }
        if self.cfg.adaptive {
            self.seen += 1;
        }
    }
}

impl<V: Variant, C> Policy<Remap> for Otf<V>
where
    C: Default + Serialize + serde::de::DeserializeOwned + Clone + Params + AsRef<OtfConfig>,
    V: VariantConfig<Config = C>,
{
    type Config = C;

    fn requirements(c: &C) -> Requirements<RemapSpec> {
        let cfg = c.as_ref();
        Requirements {
            page_size: PageSize::Huge,
            placement: Placement::RoundRobin { fast: cfg.fast_pages, slow: cfg.slow_pages },
            redirect: RemapSpec {
                entries: cfg.remap_entries,
                lookup_cycles: cfg.lookup_cycles,
                entry_frames: if V::KIND == Kind::SpRm { cfg.subpage.bytes() >> 12 } else { 0 },
                unit_frames: cfg.subpage.bytes() >> 12,
                mig_queue_entries: cfg.mig_queue_entries,
                swap_area_bytes: if V::KIND == Kind::SpRm { cfg.swap_area.bytes() } else { 0 },
                walk_cycles: cfg.walk_cycles,
                reverse_map_cycles: cfg.reverse_map_cycles,
            },
            ..Requirements::default()
        }
    }

    fn new(c: C, info: &MachineInfo) -> anyhow::Result<Self> {
        let cfg = c.as_ref().clone();
        let huge = info.huge_page_bytes;
        let unit = if cfg.subpage.bytes() == 0 { huge } else { cfg.subpage.bytes() };
        if !unit.is_power_of_two() || unit < 4096 || unit > huge {
            anyhow::bail!("policy: subpage ({}) must be a power of two from 4KiB to the huge page ({})", Size(unit), Size(huge));
        }
        if cfg.threshold == 0 || cfg.threshold_min == 0 || cfg.threshold_min > cfg.threshold_max {
            anyhow::bail!("policy: threshold and threshold_min must be positive, threshold_min ≤ threshold_max");
        }
        if !(cfg.reconcile_to < cfg.reconcile_at && cfg.reconcile_at <= 1.0 && cfg.reconcile_to >= 0.0) {
            anyhow::bail!("policy: need 0 ≤ reconcile_to < reconcile_at ≤ 1");
        }
        if V::KIND == Kind::SpRm && cfg.swap_area.bytes() < huge {
            anyhow::bail!("policy.sprm.swap_area: at least one huge page ({}), got {}", Size(huge), Size(cfg.swap_area.bytes()));
        }
        let (fast, slow) = (info.tier(TierId::FAST), info.tier(TierId::SLOW));
        let unit_shift = (unit >> 12).trailing_zeros();
        let units = (slow.frames >> unit_shift) as usize + 1;
        let huge_shift = huge.trailing_zeros();
        let mut lru = LruLists::new();
        for h in (0..fast.frames >> (huge_shift - 12)).rev() {
            lru.push_head(h, Which::Inactive);
        }
        Ok(Otf {
            threshold: cfg.threshold,
            slow_base: slow.base_pfn,
            slow_frames: slow.frames,
            fast_base: fast.base_pfn,
            fast_frames: fast.frames,
            unit_shift,
            huge_shift,
            counts: vec![0; units],
            moved: vec![false; units],
            mbq: vec![0; units],
            lru,
            hot: Vec::new(),
            seen: 0,
            benefit: 0,
            moved_in_interval: 0,
            migrations: 0,
            refused: 0,
            refusals: Default::default(),
            reverse_mbq: Vec::new(),
            series: Vec::new(),
            cfg,
            _v: PhantomData,
        })
    }

    #[inline]
    fn on_reference(&mut self, _a: &Access, _o: &RefOutcome, mech: &mut Mechanisms<Remap>) {
        if !self.hot.is_empty() {
            let hot = std::mem::take(&mut self.hot);
            for &u in &hot {
                if !self.moved[u as usize] {
                    self.migrate(u as usize, mech);
                }
            }
            self.hot = hot;
            self.hot.clear();
            let r = mech.remap();
            if r.occupancy() as f64 >= self.cfg.reconcile_at * r.capacity() as f64 {
                self.make_room(mech);
            }
        }
        if self.cfg.adaptive && self.seen >= self.cfg.adapt_interval {
            self.adapt();
        }
    }

    fn on_epoch(&mut self, epoch: &Epoch, mech: &mut Mechanisms<Remap>) {
        let st = &mech.remap().stats;
        self.series.push(Record {
            end_cycle: epoch.now,
            threshold: self.threshold,
            entries: mech.remap().occupancy(),
            migrations: self.migrations,
            reconciliations: st.reconciliations,
            reversed: st.reversed.pages,
        });
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("threshold_at_end".into(), json!(self.threshold));
        out.insert("migrations".into(), json!(self.migrations));
        out.insert("refused".into(), json!(self.refused));
        out.insert("refusals".into(), json!(self.refusals));
        let mut q = self.reverse_mbq.clone();
        q.sort_unstable();
        let pct = |p: f64| q.get(((q.len() as f64 - 1.0) * p).round() as usize).copied();
        out.insert("reverse_mbq".into(), json!({ "count": q.len(), "min": q.first(), "p25": pct(0.25), "median": pct(0.5), "p75": pct(0.75), "max": q.last() }));
        out.insert("series".into(), json!(self.series));
    }
}

/// Ties a variant to its configuration type.
pub trait VariantConfig: Variant {
    type Config;
}

impl VariantConfig for HugePageOtf {
    type Config = HugePageConfig;
}
impl VariantConfig for SpAr {
    type Config = SpArConfig;
}
impl VariantConfig for SpRm {
    type Config = SpRmConfig;
}
