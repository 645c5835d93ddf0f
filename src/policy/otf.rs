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

    /// The least recently accessed fast huge page that can be swapped out.
    fn victim(&mut self, mech: &Mechanisms<Remap>) -> Option<u64> {
        let huge_frames = 1u64 << (self.huge_shift - 12);
        let base = self.fast_base;
        let (found, stale) = pick_victim(self.lru.iter_from_tail(Which::Inactive), |h| {
            let pfn = base + h * huge_frames;
            let data = matches!(mech.owner(pfn), crate::machine::Owner::Data { .. });
            (data, data && mech.remap().entry_of(pfn).is_none())
        });
        for h in stale {
            self.lru.remove(h);
        }
        let h = found?;
        self.lru.push_head(h, Which::Inactive);
        Some(base + h * huge_frames)
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
            Ok(m) => {
                self.migrations += 1;
                self.migc_work.handed(m.done, 1);
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

    /// Brings the table back to `reconcile_at` of its entries, one page (or pair) at
    /// a time: SpRM moves subpages back, the others reconcile.
    fn make_room(&mut self, mech: &mut Mechanisms<Remap>) {
        let target = (self.cfg.reconcile_at * mech.remap().capacity() as f64) as usize;
        match V::KIND {
            Kind::SpRm => {
                let n = (mech.remap().occupancy() + 1).saturating_sub(target);
                self.reverse(n, mech);
            }
            _ => self.reconcile(target, mech),
        }
    }

    /// Reconciles entries until at most `target` are left: those with the highest
    /// share of their subpages moved first (SpAR §3), the oldest first among equals
    /// (the authors' MigC takes the table in order).
    fn reconcile(&mut self, target: usize, mech: &mut Mechanisms<Remap>) {
        let r = mech.remap();
        let subpages = 1u32 << (self.huge_shift - 12 - self.unit_shift);
        let oldest = self.cfg.reconcile == Reconcile::Oldest;
        let entries: Vec<(u32, u64, u64)> = r.entries().filter(|(_, e)| e.old >= self.slow_base && !e.returning).map(|(_, e)| (e.migrated.count_ones(), e.created, e.old)).collect();
        let order = if oldest { oldest_order(entries) } else { reconcile_order(entries) };
        for (moved, old) in order {
            let r = mech.remap();
            if r.occupancy() < target.max(1) {
                break;
            }
            let full = r.occupancy() + 2 > r.capacity();
            if !oldest && (moved as f64) < self.cfg.reconcile_min_share * subpages as f64 && !full {
                break;
            }
            let e = mech.remap().entry_of(old).map(|s| *mech.remap().entry(s));
            match mech.reconcile(old) {
                Ok(()) => {
                    // MigC moved the page's remaining subpages first: its clock is when
                    // they were done.
                    let missing = subpages - moved;
                    if missing > 0 {
                        self.migc_work.handed(mech.remap().clock, missing as u64);
                    }
                    if let Some(e) = e {
                        // The hot page now lives at `new`; a swapped cold page left it.
                        if let Some(h) = self.fast_huge(e.new << 12) {
                            self.reconciled_in[h as usize] = true;
                        }
                    }
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
        let moved: Vec<(u32, u64)> = r
            .entries()
            .filter(|(_, e)| !e.returning)
            .filter_map(|(_, e)| self.slow_unit(e.old << 12).map(|u| (self.mbq[u], e.old)))
            .collect();
        for (q, old) in lowest_mbq(moved, n) {
            let units = mech.remap().entry_of(old).map_or(0, |s| mech.remap().entry(s).migrated.count_ones() as u64);
            match mech.reverse_migrate(old) {
                Ok(done) => {
                    self.migc_work.handed(done, units);
                    let u = self.slow_unit(old << 12).expect("a slow unit");
                    self.moved[u] = false;
                    self.counts[u] = 0;
                    self.reverse_mbq.push(q);
                }
                Err(e) => self.refuse(&e),
            }
        }
    }

    /// The adaptive rule, run every `adapt_cycles`, at cycle `now`.
    fn adapt(&mut self, now: u64) {
        let units = self.migc_work.take(now);
        let t = adapted(&self.cfg, self.threshold, 1 << self.unit_shift, units, self.benefit, self.migrations);
        let i = match t.cmp(&self.threshold) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 2,
        };
        self.adapt_decisions[i] += 1;
        self.threshold = t;
    }
}

/// The units handed to MigC (moved on the fly, completed at reconciliation, moved
/// back), each with the cycle its move is done, for the adaptive rule's count of
/// migrations. MigC runs one move at a time in the order it gets them, so the cycles
/// only grow and the queue is a FIFO.
///
/// The rule counts the units MigC moved in the interval *plus those still waiting for
/// it* at the interval's end (its backlog). That is our rule, not the authors': their
/// model picks a hot page and checks the rule only while MigC is idle, so it never has
/// a backlog and "migrations in the interval" is the demand on MigC. Ours hands MigC
/// every unit the moment it is hot, and a reconciliation hands it the rest of the
/// page; counted as moved, a saturated MigC would move few units per interval and
/// read as "few migrations", and the rule would lower the threshold, adding work to a
/// queue that is already behind (docs/policies/spar.md, "Why the adaptive rule…").
/// Counting the backlog makes a busy MigC read as busy for as long as it is behind;
/// with an idle MigC the count is the units moved in the interval, as the authors'.
/// Units completed at reconciliation and moved back count: they take MigC's time as
/// on-the-fly moves do, and each comes of subpages the threshold let in.
#[derive(Debug, Default)]
struct MigcWork {
    /// (cycle the move is done, units), oldest first.
    queue: std::collections::VecDeque<(u64, u64)>,
}

impl MigcWork {
    /// MigC was handed `units` units, whose move is done at cycle `done`.
    fn handed(&mut self, done: u64, units: u64) {
        self.queue.push_back((done, units));
    }

    /// The units moved since the last call (done by `now`), which leave the queue,
    /// plus those still waiting at `now`.
    fn take(&mut self, now: u64) -> u64 {
        let mut moved = 0;
        while let Some(&(done, units)) = self.queue.front() {
            if done > now {
                break;
            }
            moved += units;
            self.queue.pop_front();
        }
        moved + self.queue.iter().map(|q| q.1).sum::<u64>()
    }
}

/// The authors' adaptive threshold (their Ramulator MigC, `Processor.cpp`, where it
/// sits commented out in the public version; the JETC 2021 paper describes it): more
/// migrations than `raise_above_migrations` in an interval while each earned under
/// `mbq_raise` accesses → double the threshold (up to its maximum); fewer than
/// `lower_below_migrations` while each earned under `mbq_lower` → halve it (down to
/// its minimum); else keep it. The counts are in 4 KiB pages: `units` migrations of
/// `unit_pages` 4 KiB pages each count `units × unit_pages` (our scaling, see
/// `raise_above_migrations`), compared exactly, without rounding the limits.
/// `benefit` and `migrations` are over the whole run.
fn adapted(cfg: &OtfConfig, threshold: u32, unit_pages: u64, units: u64, benefit: u64, migrations: u64) -> u32 {
    if migrations == 0 {
        return threshold;
    }
    let mbq = benefit / migrations;
    let pages = units.saturating_mul(unit_pages);
    if pages > cfg.raise_above_migrations && mbq < cfg.mbq_raise && threshold < cfg.threshold_max {
        (threshold * 2).min(cfg.threshold_max)
    } else if pages < cfg.lower_below_migrations && mbq < cfg.mbq_lower && threshold > cfg.threshold_min {
        (threshold / 2).max(cfg.threshold_min)
    } else {
        threshold
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

/// MigC's cold-page choice: the first fast huge frame from the LRU tail (`order`)
/// that holds a page and can be swapped (`check` gives both). Frames on the way that
/// hold no page (free, or held for a move) are returned to be taken off the list:
/// they come back when accessed. At most 256 are looked at.
fn pick_victim(order: impl Iterator<Item = u64>, mut check: impl FnMut(u64) -> (bool, bool)) -> (Option<u64>, Vec<u64>) {
    let mut stale = Vec::new();
    for h in order.take(256) {
        match check(h) {
            (_, true) => return (Some(h), stale),
            (false, _) => stale.push(h),
            _ => {}
        }
    }
    (None, stale)
}

/// SpAR's reconciliation order over (subpages moved, cycle made, old frame): most
/// moved first, then oldest.
fn reconcile_order(mut entries: Vec<(u32, u64, u64)>) -> Vec<(u32, u64)> {
    entries.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    entries.into_iter().map(|e| (e.0, e.2)).collect()
}

/// The authors' reconciliation order (`onfly_ar_init`): the oldest entry first,
/// whatever its share of subpages moved.
fn oldest_order(mut entries: Vec<(u32, u64, u64)>) -> Vec<(u32, u64)> {
    entries.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
    entries.into_iter().map(|e| (e.0, e.2)).collect()
}

/// SpRM's choice of subpages to move back: the `n` with the lowest Migration Benefit
/// Quotient (accesses since migration, §3), the lowest old frame first among equals.
fn lowest_mbq(mut moved: Vec<(u32, u64)>, n: usize) -> Vec<(u32, u64)> {
    moved.sort_unstable();
    moved.truncate(n);
    moved
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_table_keeps_the_policys_own_defaults() {
        let c: SpRmConfig = toml::from_str("threshold = 8").unwrap();
        assert_eq!((c.0.threshold, c.0.swap_area, c.0.adaptive), (8, 0.125, false));
        let h: HugePageConfig = toml::from_str("remap_entries = 64").unwrap();
        assert_eq!((h.0.threshold, h.0.subpage.bytes(), h.0.remap_entries), (16384, 0, 64));
        assert!(toml::from_str::<SpArConfig>("thresold = 8").unwrap_err().to_string().contains("thresold"));
    }

    #[test]
    fn the_victim_is_the_least_recent_swappable_page() {
        // LRU tail first: 7 is free (no page), 3 is a page already in the table,
        // 5 is a page with no entry → 5; 7 leaves the list, 3 stays.
        let (v, stale) = pick_victim([7, 3, 5, 1].into_iter(), |h| match h {
            7 => (false, false),
            3 => (true, false),
            _ => (true, true),
        });
        assert_eq!((v, stale), (Some(5), vec![7]));
        assert_eq!(pick_victim([2, 4].into_iter(), |_| (true, false)), (None, vec![]));
    }

    #[test]
    fn reverse_migration_takes_the_lowest_mbq_first() {
        // (MBQ, old frame): the two least beneficial are 0@900 and 3@100; ties go to the
        // lower frame.
        let moved = vec![(12, 400), (3, 100), (0, 900), (3, 300), (50, 200)];
        assert_eq!(lowest_mbq(moved.clone(), 2), vec![(0, 900), (3, 100)]);
        assert_eq!(lowest_mbq(moved, 3)[2], (3, 300));
    }

    #[test]
    fn reconciliation_takes_the_most_moved_pages_first_then_the_oldest() {
        // (subpages moved, cycle made, old frame)
        let order = reconcile_order(vec![(2, 50, 10), (8, 90, 20), (2, 10, 30), (5, 70, 40)]);
        assert_eq!(order, vec![(8, 20), (5, 40), (2, 30), (2, 10)]);
    }

    #[test]
    fn the_authors_reconciliation_takes_the_oldest_whatever_its_share() {
        // (subpages moved, cycle made, old frame): made at 10, 50, 70, 90 → 30 (2 moved)
        // goes first although 20 has 8 moved; a tie in age goes to the lower frame.
        let order = oldest_order(vec![(2, 50, 10), (8, 90, 20), (2, 10, 30), (5, 70, 40), (1, 10, 5)]);
        assert_eq!(order, vec![(1, 5), (2, 30), (2, 10), (5, 40), (8, 20)]);
    }

    #[test]
    fn a_bad_reconcile_value_names_the_key() {
        let e = toml::from_str::<SpArConfig>("reconcile = \"newest\"").unwrap_err().to_string();
        assert!(e.contains("reconcile") && e.contains("newest"), "{e}");
        let c: SpArConfig = toml::from_str("reconcile = \"oldest\"").unwrap();
        assert_eq!((c.0.reconcile, SpArConfig::default().0.reconcile), (Reconcile::Oldest, Reconcile::Share));
    }

    #[test]
    fn a_unit_counted_past_a_lowered_threshold_is_queued() {
        let mut hot = Vec::new();
        let mut c = 1500;
        // Threshold 2048: not yet.
        count_access(&mut c, 7, 2048, &mut hot);
        assert!(hot.is_empty());
        // Halved to 1024 by the adaptive rule: the next access queues it.
        count_access(&mut c, 7, 1024, &mut hot);
        assert_eq!((c, hot), (1502, vec![7]));
    }

    /// The authors' own setting: 4 KiB pages, their MBQ limits and bounds.
    fn authors_4k() -> OtfConfig {
        OtfConfig { subpage: Size(4 << 10), threshold: 128, mbq_raise: 100, mbq_lower: 70, threshold_min: 32, threshold_max: 256, ..OtfConfig::default() }
    }

    #[test]
    fn the_threshold_adapts_as_the_authors_rule_says() {
        // 4 KiB units (1 page each): the authors' counts as they are, 240 and 160.
        let c = authors_4k();
        // 300 migrations in the interval (> 240), MBQ 50 (< 100): doubles.
        assert_eq!(adapted(&c, 128, 1, 300, 50 * 40, 40), 256);
        // 241 doubles, 240 does not (strictly more).
        assert_eq!(adapted(&c, 64, 1, 241, 50 * 40, 40), 128);
        assert_eq!(adapted(&c, 64, 1, 240, 50 * 40, 40), 64);
        // At its maximum it stays.
        assert_eq!(adapted(&c, 256, 1, 300, 50 * 40, 40), 256);
        // 300 migrations but MBQ 100 (not < 100): they pay, keep.
        assert_eq!(adapted(&c, 128, 1, 300, 100 * 40, 40), 128);
        // 159 migrations (< 160), MBQ 60 (< 70): halves, not below 32; 160 keeps.
        assert_eq!(adapted(&c, 128, 1, 159, 60 * 40, 40), 64);
        assert_eq!(adapted(&c, 32, 1, 159, 60 * 40, 40), 32);
        assert_eq!(adapted(&c, 128, 1, 160, 60 * 40, 40), 128);
        // 100 migrations, MBQ 80 (not < 70): keep; no migration yet: keep.
        assert_eq!(adapted(&c, 128, 1, 100, 80 * 40, 40), 128);
        assert_eq!(adapted(&c, 128, 1, 0, 0, 0), 128);
    }

    #[test]
    fn the_migration_counts_scale_with_the_unit() {
        // spar's 64 KiB subpages are 16 pages of 4 KiB: 240 / 16 = 15 and 160 / 16 = 10
        // units per interval. MBQ 1000 is under both 1600 and 1120.
        let c = SpArConfig::default().0;
        assert_eq!((c.raise_above_migrations, c.lower_below_migrations, c.subpage.bytes() >> 12), (240, 160, 16));
        // 16 units = 256 pages > 240: doubles; 15 = 240: keeps.
        assert_eq!(adapted(&c, 2048, 16, 16, 1000 * 50, 50), 4096);
        assert_eq!(adapted(&c, 2048, 16, 15, 1000 * 50, 50), 2048);
        // 10 units = 160 pages (not < 160): keeps; 9 = 144: halves.
        assert_eq!(adapted(&c, 2048, 16, 10, 1000 * 50, 50), 2048);
        assert_eq!(adapted(&c, 2048, 16, 9, 1000 * 50, 50), 1024);
        // Before the scaling, 100 units (< 160 as counted then) halved the threshold;
        // now they are 1 600 pages > 240: doubled.
        assert_eq!(adapted(&c, 2048, 16, 100, 1000 * 50, 50), 4096);
        // A 512 KiB page is 128 pages (hugepage-otf, were it adaptive: its MBQ limits
        // are 12 800 and 8 960): 2 pages = 256 > 240 doubles, 1 = 128 < 160 halves.
        let h = HugePageConfig::default().0;
        assert_eq!(adapted(&h, 16384, 128, 2, 5000 * 50, 50), 32768);
        assert_eq!(adapted(&h, 16384, 128, 1, 5000 * 50, 50), 8192);
    }

    #[test]
    fn an_idle_migc_counts_the_units_moved_in_the_interval() {
        // Three moves handed and done within the interval [0, 4 M): 3, as the authors
        // count; the next interval has none: 0.
        let mut w = MigcWork::default();
        for done in [100_000, 1_500_000, 3_900_000] {
            w.handed(done, 1);
        }
        assert_eq!(w.take(4_000_000), 3);
        assert_eq!(w.take(8_000_000), 0);
    }

    #[test]
    fn a_saturated_migc_does_not_read_as_few_migrations() {
        // Interval [0, 4 M), all handed in it: MigC moved 1 + 1 units on the fly (done
        // at 1.0 M and 2.5 M) and completed 13 subpages of a page at reconciliation
        // (done at 3.9 M); still waiting at 4 M: 1 on the fly (done at 4.3 M), 14 to
        // complete a page (5.0 M) and 1 on the fly (5.04 M). Moved 15, waiting 16: the
        // rule counts 31.
        let mut w = MigcWork::default();
        for (done, units) in [(1_000_000, 1), (2_500_000, 1), (3_900_000, 13), (4_300_000, 1), (5_000_000, 14), (5_040_000, 1)] {
            w.handed(done, units);
        }
        assert_eq!(w.take(4_000_000), 31);
        // 31 subpages of 64 KiB = 496 pages > 240: with MBQ 1000 (< 1600) the threshold
        // doubles from the floor; with MBQ 2000 it stays. Either way it is not lowered,
        // as it was when the rule counted only the 4 units handed on the fly (4 < 160
        // before the scaling, and 4 × 16 = 64 < 160 with the scaling alone).
        let c = SpArConfig::default().0;
        assert_eq!(adapted(&c, 512, 16, 31, 1000 * 50, 50), 1024);
        assert_eq!(adapted(&c, 1024, 16, 31, 2000 * 50, 50), 1024);
        assert_eq!(adapted(&c, 1024, 16, 4, 1000 * 50, 50), 512);
        // The next interval [4 M, 8 M): the 16 waiting units were moved in it.
        assert_eq!(w.take(8_000_000), 16);
        assert_eq!(w.take(12_000_000), 0);
    }
}
