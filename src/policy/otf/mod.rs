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
//!
//! Where things live: this file holds the parameters, the three variants and the
//! controller's counters (the hooks); `migc.rs` MigC's moves — on the fly into a
//! free frame or swapped with the coldest fast page, and making room in the ReMap
//! table by reconciliation or reverse migration; `adaptive.rs` the adaptive
//! threshold and what it counts as MigC's work; `tests.rs` the unit tests.

use super::{PageSize, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::remap::{Remap, RemapSpec};
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

mod adaptive;
mod migc;
#[cfg(test)]
mod tests;

use adaptive::MigcWork;

/// Which entries reconciliation takes (`reconcile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reconcile {
    /// The pages with most subpages moved, above `reconcile_min_share` (our reading
    /// of §3).
    Share,
    /// The oldest entry not being moved, whatever its share (the authors' model).
    Oldest,
}

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
        /// Share of the table in use above which reconciliation or reverse migration
        /// runs (§2.2: 50 %), one page (or pair) at a time until it is back to it, as
        /// the authors' MigC does.
        pub reconcile_at: f64 = 0.5,
        /// SpAR reconciles only pages with at least this share of their subpages moved
        /// ("very high percentage", §3; the value is our choice), unless the table has
        /// no room left for a new pair: then the best page goes whatever its share.
        pub reconcile_min_share: f64 = 0.5,
        /// Which entries reconciliation takes: "share" (our reading of §3: the pages
        /// with most subpages moved, above `reconcile_min_share`) or "oldest" (the
        /// authors' Ramulator MigC, `onfly_ar_init`: the oldest entry not being moved,
        /// whatever its share). Either way our machine moves the page's remaining
        /// subpages first, since the OS maps whole huge pages (their units are pages).
        pub reconcile: Reconcile = Reconcile::Share,
        /// Migration-queue entries per memory controller (Table 1: 32).
        pub mig_queue_entries: u32 = 32,
        /// Page walk to rewrite a PTE at reconciliation, in cycles (Table 2: 150).
        pub walk_cycles: u64 = 150,
        /// OS reverse mapping per page reconciled, in cycles (Table 2: 4 480).
        pub reverse_map_cycles: u64 = 4480,
        /// SpRM's swap area: the share of the fast tier reserved for moved subpages,
        /// rounded up to huge pages. The paper's "large swap" gives no size (nor does
        /// the authors' public model): 1/8 (128 MiB of the 1 GiB HBM) is our choice.
        pub swap_area: f64 = 0.0,
        /// Pages placed in the fast tier, then in the slow tier, in turn (§4: 4 and 4).
        pub fast_pages: u32 = 4,
        pub slow_pages: u32 = 4,
        /// Adaptive threshold: cycles between adjustments (the authors' MigC: every
        /// 4 million cycles).
        pub adapt_cycles: u64 = 4_000_000,
        /// Adaptive threshold: it doubles when MigC moved more than this in the last
        /// interval and the MBQ (accesses to migrated units per migration, over the
        /// run) is under `mbq_raise` (the authors' MigC: 240 pages and 100 for 4 KiB
        /// pages). Counted in 4 KiB pages: a unit of n 4 KiB pages counts n, so for
        /// 64 KiB subpages the rule raises above 15 units (240 / 16), for 512 KiB pages
        /// above 1.875. The count is a rate of MigC's throughput, and a unit takes n
        /// times a 4 KiB page's time to move; scaling it by the unit is our choice (the
        /// paper and the authors' model, whose units are 4 KiB pages, are silent). What
        /// counts as moved, backlog included: `MigcWork`.
        pub raise_above_migrations: u64 = 240,
        pub mbq_raise: u64 = 1600,
        /// ... and halves when MigC moved fewer than this (in 4 KiB pages as above:
        /// the authors' 160, i.e. 10 units of 64 KiB) and the MBQ is under `mbq_lower`
        /// (70 for 4 KiB pages). MBQ limits and threshold bounds are the 4 KiB values
        /// scaled by the unit's 16 base pages, given as they are.
        pub lower_below_migrations: u64 = 160,
        pub mbq_lower: u64 = 1120,
        /// Adaptive threshold: lowest and highest value (32 and 256 for 4 KiB pages).
        pub threshold_min: u32 = 512,
        pub threshold_max: u32 = 4096,
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
        #[derive(Clone, Debug, Serialize)]
        #[serde(transparent)]
        pub struct $cfg(pub OtfConfig);
        impl<'de> Deserialize<'de> for $cfg {
            /// Keys not given keep this policy's defaults (not `OtfConfig`'s).
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                with_defaults($v::defaults(), toml::Table::deserialize(d)?).map($cfg).map_err(serde::de::Error::custom)
            }
        }
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
    // Were it adaptive: the 4 KiB values scaled by a 512 KiB page's 128 base pages (the
    // migration counts scale themselves: `adapted`).
    mbq_raise: 12800,
    mbq_lower: 8960,
    threshold_min: 4096,
    threshold_max: 32768,
    ..OtfConfig::default()
});
variant!(SpAr, SpArConfig, Kind::SpAr, "Parameters of `spar`.", OtfConfig::default());
variant!(SpRm, SpRmConfig, Kind::SpRm, "Parameters of `sprm`.", OtfConfig { adaptive: false, swap_area: 0.125, ..OtfConfig::default() });

/// `given` over `defaults`, checked as an `OtfConfig` (unknown keys refused).
fn with_defaults(defaults: OtfConfig, given: toml::Table) -> Result<OtfConfig, String> {
    let mut t = toml::Table::try_from(defaults).map_err(|e| e.to_string())?;
    t.extend(given);
    OtfConfig::deserialize(t).map_err(|e| e.to_string())
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
    /// Per fast huge frame: it holds a page reconciled into it (its accesses are
    /// benefit of the migration, as the authors count accesses to migrated pages).
    reconciled_in: Vec<bool>,
    /// Units that reached the threshold, to migrate after the reference.
    hot: Vec<u64>,
    // Adaptive threshold: the interval's start, the units handed to MigC, and the
    // accesses to migrated units over the run.
    window_start: u64,
    benefit: u64,
    migc_work: MigcWork,
    /// Intervals in which the rule lowered, kept and raised the threshold.
    adapt_decisions: [u64; 3],
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
}

/// Counts one access to slow unit `u` and queues it for migration once its count is
/// at or above the threshold — not only equal to it: a lowered threshold must still
/// catch the units already counted past it (MigC's comparator is ≥).
#[inline]
fn count_access(count: &mut u32, u: usize, threshold: u32, hot: &mut Vec<u64>) {
    *count += 1;
    if *count >= threshold {
        hot.push(u as u64);
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
                count_access(&mut self.counts[u], u, self.threshold, &mut self.hot);
            }
        } else if let Some(h) = self.fast_huge(e.paddr) {
            self.lru.push_head(h, Which::Inactive);
            if self.reconciled_in[h as usize] {
                self.benefit += 1;
            }
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
                swap_area_share: if V::KIND == Kind::SpRm { cfg.swap_area } else { 0.0 },
                walk_cycles: cfg.walk_cycles,
                reverse_map_cycles: cfg.reverse_map_cycles,
                ..RemapSpec::default()
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
        if !(0.0..=1.0).contains(&cfg.reconcile_min_share) {
            anyhow::bail!("policy: reconcile_min_share must be in [0, 1], got {}", cfg.reconcile_min_share);
        }
        if cfg.threshold == 0 || cfg.threshold_min == 0 || cfg.threshold_min > cfg.threshold_max {
            anyhow::bail!("policy: threshold and threshold_min must be positive, threshold_min ≤ threshold_max");
        }
        if !(cfg.reconcile_at > 0.0 && cfg.reconcile_at <= 1.0) {
            anyhow::bail!("policy: reconcile_at must be in (0, 1], got {}", cfg.reconcile_at);
        }
        if V::KIND == Kind::SpRm && !(cfg.swap_area > 0.0 && cfg.swap_area < 1.0) {
            anyhow::bail!("policy.sprm.swap_area: a share of the fast tier in (0, 1), got {}", cfg.swap_area);
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
            reconciled_in: vec![false; (fast.frames >> (huge_shift - 12)) as usize + 1],
            lru,
            hot: Vec::new(),
            window_start: 0,
            benefit: 0,
            migc_work: MigcWork::default(),
            adapt_decisions: [0; 3],
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
                // A unit pushed twice before this drain was moved, or reset by a
                // refused try, the first time.
                if !self.moved[u as usize] && self.counts[u as usize] >= self.threshold {
                    self.migrate(u as usize, mech);
                }
            }
            self.hot = hot;
            self.hot.clear();
            let r = mech.remap();
            if r.occupancy() as f64 > self.cfg.reconcile_at * r.capacity() as f64 {
                self.make_room(mech);
            }
        }
        if self.cfg.adaptive {
            let now = mech.now();
            if now >= self.window_start + self.cfg.adapt_cycles {
                self.window_start = now;
                self.adapt(now);
            }
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
        if self.cfg.adaptive {
            let unit_pages = (1u64 << self.unit_shift) as f64;
            let [lowered, kept, raised] = self.adapt_decisions;
            out.insert(
                "adaptive".into(),
                json!({
                    "raise_above_units": self.cfg.raise_above_migrations as f64 / unit_pages,
                    "lower_below_units": self.cfg.lower_below_migrations as f64 / unit_pages,
                    "intervals_lowered": lowered,
                    "intervals_kept": kept,
                    "intervals_raised": raised,
                }),
            );
        }
        out.insert("series".into(), json!(self.series));
    }
}
