//! Epochs mode's side of the machine: what a policy can observe of references that
//! were never simulated one by one, drawn from the tenants' page-granular statements
//! (module `workload::rates`) when the machine looks (docs/epochs.md).
//!
//! # Page state
//! Every page a tenant's statement may name has, for the current stretch, its rates
//! per reference of the tenant — loads, stores, bursts and bursts with a store — and
//! the state of its mapping as the page table has it (tier, size), kept in step by the
//! machine's moves, splits, merges and first touches ([`EpochsState::log`]).
//!
//! # The hazard clock
//! A tenant's clock for observations is `H`, the references its cores made in epochs
//! (detailed windows run the real references, which set bits for real). Each core
//! keeps the last stretch of its clock against its reference count, so `H` is known
//! at any cycle near the present: interpolated within a core's last chunk and
//! extrapolated at its rate beyond.
//!
//! # Accessed and Dirty bits
//! A page's Accessed bit is set by the first burst after it was cleared. Its bursts
//! arrive at rate `β` per reference of the tenant, so the chance that a bit clear
//! since `H₀` is set at `H` is `1 − exp(−β (H − H₀))` (plus what earlier stretches
//! added, `pend`). The bit is drawn when something reads the entry — a scan, a
//! reverse-map walk, a merge — and from then on it is a bit like any other. Dirty
//! bits likewise with the bursts that store.
//!
//! # The TLB's effect
//! x86 clears an Accessed bit without a TLB flush on the reverse-map path
//! (`ptep_test_and_clear_young`, module `ops`): a core that still caches the
//! translation does not set the bit again until it is evicted. With `C` translations
//! per core and a core's pages referenced at their rates, an LRU TLB keeps a page
//! whose bursts come at rate `β` with probability `1 − exp(−β T)`, where `T` solves
//! `Σ (1 − exp(−βᵢ T)) = C` over the pages (the characteristic time of H. Che et al.,
//! "Hierarchical web caching systems", IEEE JSAC 2002). A clear without a flush draws
//! whether the translation is cached; if it is, only bursts that miss the TLB (rate
//! `β exp(−β T)`) set the bit. The same miss rate paces the faults of a poisoned page
//! once its translation is back in a core's TLB (BadgerTrap's faults come per TLB
//! miss, Thermostat §3.3).
//!
//! # Faults
//! A poisoned page (Thermostat's sampling, a NUMA hinting mark) faults on its next
//! TLB miss. When its translation is dropped, each core of its tenant draws the
//! reference at which its next burst comes; the first to come is the fault. These
//! are events the engine stops at ([`EpochsState::next_event`]), so that the
//! handler of a page's first fault runs at its time.
//!
//! A page still poisoned after its fault (BadgerTrap counting every TLB miss,
//! Thermostat §3.3) faults again at the rate of its bursts that miss the TLB. Those
//! repeats do not end a chunk (`engine.epochs.batch_faults`, on by default): each is
//! drawn from the one before it, on the faulting core's reference count, and all that
//! fall within a chunk are taken, in order, when it ends — the count a Poisson
//! process of that rate gives, each fault charged its handler's time on the core's
//! clock and told to the policy one by one. What moves is only when the policy hears
//! of them: at the chunk's end, at most `engine.epochs.max_chunk_s` late.

use super::page_table::{PageTable, WalkPath, ACCESSED, DIRTY, POISONED, TRAP};
use std::ops::ControlFlow;
use super::{FaultEvent, FaultKind, Machine, Observer, PageRef, Redirect, TierId};
use crate::rng::Rng;
use crate::workload::rates::{Order, Stretch};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// The page is mapped.
const MAPPED: u16 = 1;
/// Translated by a huge TLB entry (a huge page; in a VM, huge in both dimensions).
const HUGE: u16 = 2;
/// When its Accessed (Dirty) bit was last cleared without a flush, some core still
/// cached the translation.
const STICKY_A: u16 = 4;
const STICKY_D: u16 = 8;
/// The page's first touch is queued.
const QUEUED: u16 = 16;
/// A VM's guest maps the page with a huge page.
const GUEST_HUGE: u16 = 32;
/// Fault events may be pending at the page's current generation (set when one is
/// drawn; a bulk drop voids only such pages' events, the others have none to void).
const PENDING: u16 = 64;
/// The page is in its tenant's `marked` list.
const MARKED: u16 = 128;
/// The page's pending fault events were drawn at its full rate on every core (after
/// its translations were dropped, none cached). A later drop keeps them: a fresh draw
/// would be the same exponential law from the drop on (it is memoryless), so only
/// events drawn at a cached translation's lower rate, or at rates since changed, are
/// drawn again. Without this, each of a VM's flushes (HMM-V's: hundreds a second)
/// redrew every trapping page and left its old events in the heaps, void.
const FULL: u16 = 256;

/// Classes of pages, for the cost model: what decides how a page's references fare
/// in the caches is how often it is come back to — its bursts per reference of its
/// tenant, in powers of two, `⌊−log2 r⌋` from 0 (half the references or more) to 47
/// — and how many references a visit makes (1, 2–7, 8–63, 64 or more: a key's
/// object against a 4 KiB value read through); and the page's size, for its
/// translations.
pub const RATE_BUCKETS: usize = 48;
/// Most tiers epochs mode keeps figures for.
pub const MAX_TIERS: usize = 8;
pub const DENSITY_BUCKETS: usize = 4;
pub const CLASSES: usize = 2 * RATE_BUCKETS * DENSITY_BUCKETS;

/// The class of a page of `refs` references and `bursts` bursts per reference of its
/// tenant.
#[inline]
pub fn class_of(refs: f32, bursts: f32, huge: bool) -> usize {
    let beta = if bursts > 0.0 { bursts } else { refs };
    let bucket = if beta > 0.0 { (-beta.log2()).floor().clamp(0.0, (RATE_BUCKETS - 1) as f32) as usize } else { RATE_BUCKETS - 1 };
    let per_visit = if beta > 0.0 { refs / beta } else { 1.0 };
    let density = match per_visit {
        x if x < 2.0 => 0,
        x if x < 8.0 => 1,
        x if x < 64.0 => 2,
        _ => 3,
    };
    (huge as usize * DENSITY_BUCKETS + density) * RATE_BUCKETS + bucket
}

/// The parts of a class: size, density and rate bucket.
pub fn class_parts(class: usize) -> (usize, usize, usize) {
    let bucket = class % RATE_BUCKETS;
    let rest = class / RATE_BUCKETS;
    (rest / DENSITY_BUCKETS, rest % DENSITY_BUCKETS, bucket)
}

/// The chance that a burst at rate `beta` misses a TLB of characteristic time `t`:
/// the translation was evicted since the page's last burst, `exp(−β T)` (1 for a page
/// with no bursts; 0 when everything fits, `T` infinite).
#[inline]
fn misses(beta: f64, t: f64) -> f64 {
    if beta <= 0.0 {
        1.0
    } else {
        (-beta * t).exp()
    }
}

/// A heap key from a non-negative reference count.
#[inline]
fn key(x: f64) -> u64 {
    x.max(0.0).to_bits()
}

/// A core's TLB as the reach model sees it: translations kept for base pages and for
/// huge pages, each size in its own arrays, or with a second level they share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TlbShape {
    Split { small: f64, huge: f64 },
    /// First levels per size, and one second level for both.
    Unified { small: f64, huge: f64, shared: f64 },
}

/// What a tenant's statement is, for [`EpochsState::new`].
#[derive(Clone, Debug)]
pub struct TenantSetup {
    /// The pages the statement may name (increasing disjoint ranges of page numbers).
    pub universe: Vec<Range<u64>>,
    /// The cores that run the tenant.
    pub cores: Vec<usize>,
    /// Whether the tenant is a VM: its statement names guest-virtual pages, its
    /// managed table (the EPT) guest-physical ones, which the guest maps on first
    /// touch.
    pub vm: bool,
}

/// One tenant's pages.
#[derive(Debug)]
pub struct Pages {
    ranges: Vec<Range<u64>>,
    /// Index of each range's first page.
    starts: Vec<usize>,
    pub cores: Vec<usize>,
    /// Per page, per reference of the tenant in the current stretch.
    pub reads: Vec<f32>,
    pub writes: Vec<f32>,
    pub bursts: Vec<f32>,
    pub write_bursts: Vec<f32>,
    /// The pages the current stretch names (the only ones whose rates may be
    /// non-zero), in increasing index: a switch and the TLB-reach estimate visit
    /// these, not every page of the footprint.
    active: Vec<u32>,
    /// Each page's share of the stretch's references, used by `switch` only and zero
    /// between switches.
    share: Vec<f64>,
    /// Per page: the hazard clock when its Accessed (Dirty) bit was last settled, and
    /// the hazard that stretches before the current one added since then.
    since_a: Vec<f64>,
    since_d: Vec<f64>,
    pend_a: Vec<f32>,
    pend_d: Vec<f32>,
    flags: Vec<u16>,
    /// Cost class of each page (kept with its rates and size).
    classes: Vec<u16>,
    /// Tier of the page's frame (meaningful when mapped).
    tier: Vec<u8>,
    /// Generation of the page's fault events (a fault drawn for an older one is void).
    generation: Vec<u32>,
    /// The bursts of the huge region a page lies in, per reference of the tenant, as
    /// last summed, and the `version` they were summed at: a huge page's faults are
    /// drawn at the region's rate, and a page poisoned through its faults is drawn
    /// again at each one.
    region_bursts: Vec<f32>,
    region_version: Vec<u32>,
    /// Moves on whenever region sums may change: rates (a stretch switch) or a VM's
    /// guest mapping.
    version: u32,
    /// Rates by class and tier (`[class * tiers + tier]`): loads and stores per
    /// reference of the tenant, of mapped pages; and by class, of the pages not
    /// mapped yet (whose first bursts land where first touch places pages now).
    pub by_class: Vec<[f64; 2]>,
    /// The classes any of whose aggregates (of a tier, or not mapped) were ever given
    /// a rate, as a bit set: the others' are all zero, and the cost model skips them.
    seen: [u64; CLASSES.div_ceil(64)],
    pub unmapped: Vec<[f64; 2]>,
    /// Where the tenant's last first touch placed its page.
    pub placing: TierId,
    /// Characteristic times of the TLBs for base and huge translations, in references
    /// of one core; and the pages mapped or remapped since they were computed (they
    /// are computed again once that is a sixty-fourth of the pages).
    pub tlb_time: [f64; 2],
    remapped: usize,
    /// The current stretch's instructions and dependent loads per reference.
    pub instrs_per_ref: f64,
    pub dependent_share: f64,
    /// Whether the aggregate rates changed since the engine last read them.
    pub changed: bool,
    /// Rate-weighted share of the tenant's references whose page changed tier since
    /// the last calibration.
    pub moved_share: f64,
    /// The tenant's pages mapped now.
    pub mapped: u64,
    /// First touches waiting: the hazard clock at which each page is first touched
    /// and the page, latest first (the next is last).
    first_touch: Vec<(f64, u32)>,
    /// The pages whose flags may hold a sticky flag or [`PENDING`] (each once, with
    /// [`MARKED`]): all a drop of the whole managed space has to visit.
    marked: Vec<u32>,
    /// Whether an entry of the tenant was ever poisoned or set to trap: until then a
    /// drop has no trapping pages to look for (and a whole-space drop no table to walk).
    may_trap: bool,
    tiers: usize,
    /// A VM's guest mapping: each page's guest-physical page, and each guest-physical
    /// page's page ([`NONE`] where there is none); and the lazy state of the guest
    /// page table's Accessed and Dirty bits (one clock for both: a guest scan clears
    /// them together).
    guest: Option<Guest>,
    /// For PEBS-like samples: each class's share of loads that miss every cache (set
    /// by the engine from the cost model), and draws of pages by their loads that
    /// miss and by their stores (built when first needed after a change).
    pub load_misses: Vec<f32>,
    samplers: Option<[Option<Alias>; 2]>,
}

/// No page.
const NONE: u32 = u32::MAX;

/// Walker's alias method: draws index `i` with probability `wᵢ / Σ w` in O(1), after
/// an O(n) build (A. J. Walker, "An efficient method for generating discrete random
/// variables with general distributions", ACM TOMS 3(3), 1977).
#[derive(Clone, Debug, Default)]
pub struct Alias {
    keep: Vec<f64>,
    other: Vec<u32>,
}

impl Alias {
    /// The table for weights `w` (none when they sum to 0).
    pub fn new(w: &[f64]) -> Option<Alias> {
        let n = w.len();
        let total: f64 = w.iter().sum();
        if n == 0 || total <= 0.0 || !total.is_finite() {
            return None;
        }
        let mut keep: Vec<f64> = w.iter().map(|x| x * n as f64 / total).collect();
        let mut other: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| keep[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            other[s] = l as u32;
            keep[l] -= 1.0 - keep[s];
            if keep[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        for i in large.into_iter().chain(small) {
            keep[i] = 1.0;
        }
        Some(Alias { keep, other })
    }

    /// An index drawn from the weights.
    pub fn draw(&self, rng: &mut Rng) -> usize {
        let i = rng.below(self.keep.len() as u64) as usize;
        if rng.unit() < self.keep[i] {
            i
        } else {
            self.other[i] as usize
        }
    }
}

/// What PEBS-like counters count, by kind: loads served by the fast tier, loads
/// served by a slower tier, stores (HeMem's three counters).
pub const SAMPLED_EVENTS: usize = 3;

/// A VM tenant's guest side (see [`Pages`]).
#[derive(Debug, Default)]
struct Guest {
    gpfn: Vec<u32>,
    page: Vec<u32>,
    since: Vec<f64>,
    pend_a: Vec<f32>,
    pend_d: Vec<f32>,
    /// The guest page table's own pages, by guest-physical page, ascending. Walks
    /// read them, which sets their EPT entries' Accessed bits as a data page's
    /// references do (see [`Machine::epochs_table_pages`]).
    tables: Vec<TablePage>,
    /// The guest table's frames in use when `tables` was listed.
    tables_listed: u64,
    /// The `version` and TLB times the tables' rates were computed at.
    tables_rated: Option<(u32, [f64; 2])>,
}

/// A page of a VM's guest page table, as its EPT entry's Accessed bit sees it.
#[derive(Clone, Copy, Debug)]
struct TablePage {
    gpfn: u64,
    /// Walks that read one of its entries, per reference of the tenant.
    rate: f64,
    /// The hazard clock its Accessed bit was last settled at.
    since: f64,
    /// The tier of its frame when last looked at (`u8::MAX`: not mapped).
    tier: u8,
}

impl Guest {
    /// The hazard of the walks that read the guest page-table pages among
    /// guest-physical pages `[first, first + n)` since each was last settled, to
    /// hazard clock `h`; settles them.
    fn table_hazard(&mut self, first: u64, n: u64, h: f64) -> f64 {
        let from = self.tables.partition_point(|t| t.gpfn < first);
        let mut hazard = 0.0;
        for t in self.tables[from..].iter_mut().take_while(|t| t.gpfn < first + n) {
            hazard += t.rate * (h - t.since).max(0.0);
            t.since = h;
        }
        hazard
    }
}

/// Walks per reference of the tenant that read the guest entry of the guest leaf at
/// `gvpn` (huge when `huge`): a walk comes with a burst that misses the TLB, so each
/// page's bursts count with the chance that its translation left the TLB since its
/// last one, `β exp(−β T)`. Translations are huge only where both dimensions are.
fn leaf_walk_rate(p: &Pages, gvpn: u64, huge: bool) -> f64 {
    let n = if huge { 512 } else { 1 };
    let (mut region, mut small) = (0.0, 0.0);
    for i in p.span(gvpn, n) {
        let beta = p.bursts[i] as f64;
        if p.is_huge(i) {
            region += beta;
        } else {
            small += beta * misses(beta, p.tlb_time[0]);
        }
    }
    small + region * misses(region, p.tlb_time[1])
}

/// Brings the list of a VM's guest page-table pages in `p` up to date when the guest
/// `table` grew (a page new to it counts from hazard clock `h`, in the tier
/// `tier_of` gives), and their walk rates when they are stale and one of them is
/// among guest-physical pages `[first, first + n)`.
///
/// A leaf-level page is read by the walks of the pages its entries map (the rate
/// of [`leaf_walk_rate`]); an upper-level page by the walks of every page below it.
/// Counting every walk at the upper levels, where the paging-structure caches cut
/// some short, is our choice: an upper-level page's Accessed bit is then set in
/// every window of any scanner once anything below it is in use, as in detailed
/// runs, where each scan's flush empties those caches. (Without this, an EPT
/// scanner in epochs mode saw the guest's page tables as unused once it had cleared
/// their bits.) New rates count from each page's last settle on (our simplification).
fn refresh_tables(table: &PageTable, p: &mut Pages, first: u64, n: u64, h: f64, tier_of: impl Fn(u64) -> Option<u8>) {
    let Some(g) = p.guest.as_mut() else { return };
    if table.frames_in_use() != g.tables_listed {
        let mut frames = table.node_frames();
        frames.sort_unstable();
        let mut old = std::mem::take(&mut g.tables).into_iter().peekable();
        for gpfn in frames {
            while old.next_if(|t| t.gpfn < gpfn).is_some() {}
            let kept = old.next_if(|t| t.gpfn == gpfn);
            g.tables.push(kept.unwrap_or_else(|| TablePage { gpfn, rate: 0.0, since: h, tier: tier_of(gpfn).unwrap_or(u8::MAX) }));
        }
        g.tables_listed = table.frames_in_use();
        g.tables_rated = None;
    }
    let from = g.tables.partition_point(|t| t.gpfn < first);
    let hit = g.tables.get(from).is_some_and(|t| t.gpfn < first.saturating_add(n));
    if !hit || g.tables_rated == Some((p.version, p.tlb_time)) {
        return;
    }
    // Each leaf-level node's rate, then the same rate for every node above it.
    let mut rates: Vec<(u64, f64)> = Vec::new();
    let mut node = (u64::MAX, 0.0, 0u64);
    let flush = |rates: &mut Vec<(u64, f64)>, (frame, rate, addr): (u64, f64, u64)| {
        if frame == u64::MAX || rate == 0.0 {
            return;
        }
        rates.push((frame, rate));
        let mut path = WalkPath::default();
        if table.walk(addr, Some(&mut path)).is_some() {
            for a in &path.as_slice()[..path.len.saturating_sub(1)] {
                rates.push((a >> 12, rate));
            }
        }
    };
    let pages: &Pages = p;
    table.for_each_leaf(0, u64::MAX, &mut |l| {
        let frame = table.entry_paddr(l.slot & !511) >> 12;
        if frame != node.0 {
            flush(&mut rates, node);
            node = (frame, 0.0, l.addr);
        }
        node.1 += leaf_walk_rate(pages, l.addr >> 12, l.huge);
        ControlFlow::Continue(())
    });
    flush(&mut rates, node);
    rates.sort_unstable_by_key(|r| r.0);
    let rated = (p.version, p.tlb_time);
    let g = p.guest.as_mut().expect("a VM");
    let mut r = rates.into_iter().peekable();
    for t in &mut g.tables {
        let mut rate = 0.0;
        while r.next_if(|x| x.0 < t.gpfn).is_some() {}
        while let Some((_, x)) = r.next_if(|x| x.0 == t.gpfn) {
            rate += x;
        }
        t.rate = rate;
    }
    g.tables_rated = Some(rated);
}

impl Pages {
    fn new(s: &TenantSetup, tiers: usize) -> Pages {
        let mut starts = Vec::new();
        let mut n = 0usize;
        for r in &s.universe {
            starts.push(n);
            n += (r.end - r.start) as usize;
        }
        Pages {
            ranges: s.universe.clone(),
            starts,
            cores: s.cores.clone(),
            reads: vec![0.0; n],
            writes: vec![0.0; n],
            bursts: vec![0.0; n],
            write_bursts: vec![0.0; n],
            active: Vec::new(),
            share: vec![0.0; n],
            since_a: vec![0.0; n],
            since_d: vec![0.0; n],
            pend_a: vec![0.0; n],
            pend_d: vec![0.0; n],
            flags: vec![0; n],
            classes: vec![class_of(0.0, 0.0, false) as u16; n],
            tier: vec![0; n],
            generation: vec![0; n],
            region_bursts: vec![0.0; n],
            region_version: vec![u32::MAX; n],
            version: 0,
            by_class: vec![[0.0; 2]; CLASSES * tiers],
            seen: [0; CLASSES.div_ceil(64)],
            unmapped: vec![[0.0; 2]; CLASSES],
            placing: TierId::FAST,
            tlb_time: [0.0; 2],
            remapped: 0,
            instrs_per_ref: 0.0,
            dependent_share: 0.0,
            changed: true,
            moved_share: 0.0,
            mapped: 0,
            first_touch: Vec::new(),
            marked: Vec::new(),
            may_trap: false,
            tiers,
            guest: s.vm.then(|| Guest { gpfn: vec![NONE; n], page: Vec::new(), since: vec![0.0; n], pend_a: vec![0.0; n], pend_d: vec![0.0; n], tables: Vec::new(), tables_listed: 0, tables_rated: None }),
            load_misses: Vec::new(),
            samplers: None,
        }
    }

    /// Sets each class's share of loads that miss every cache (`share(class)`); the
    /// samplers follow when one changed.
    pub fn set_load_misses(&mut self, share: impl Fn(usize) -> f32) {
        let same = self.load_misses.len() == CLASSES && (0..CLASSES).all(|c| self.load_misses[c] == share(c));
        if !same {
            self.load_misses = (0..CLASSES).map(share).collect();
            self.samplers = None;
        }
    }

    /// The managed-space page (virtual for a process, guest-physical for a VM) of page
    /// `i`, if it has one yet.
    pub fn managed(&self, i: usize) -> Option<u64> {
        match &self.guest {
            None => Some(self.vpn(i)),
            Some(g) => (g.gpfn[i] != NONE).then(|| g.gpfn[i] as u64),
        }
    }

    /// The pages whose managed-space page is in `[first, first + n)`.
    fn indexes(&self, first: u64, n: u64) -> Vec<usize> {
        let mut out = Vec::new();
        self.indexes_into(first, n, &mut out);
        out
    }

    /// [`Pages::indexes`] into `out` (cleared first), run by run: a scan settles one
    /// entry at a time, and an iterator chain with a fresh `Vec` per entry was a third
    /// of memos' epochs-mode profile.
    fn indexes_into(&self, first: u64, n: u64, out: &mut Vec<usize>) {
        out.clear();
        match &self.guest {
            None => {
                for (_, run) in self.runs(first, n) {
                    out.extend(run);
                }
            }
            Some(g) => {
                let end = (first.saturating_add(n)).min(g.page.len() as u64);
                out.extend(g.page[first.min(end) as usize..end as usize].iter().filter(|&&i| i != NONE).map(|&i| i as usize));
            }
        }
    }

    /// The pages whose managed-space page is in `[first, first + n)`, in that order,
    /// without allocating.
    fn managed_span(&self, first: u64, n: u64) -> impl Iterator<Item = usize> + '_ {
        let (own, guest) = match &self.guest {
            None => (Some(self.span(first, n)), None),
            Some(g) => {
                let end = (first.saturating_add(n)).min(g.page.len() as u64);
                (None, Some(g.page[first.min(end) as usize..end as usize].iter().filter(|&&i| i != NONE).map(|&i| i as usize)))
            }
        };
        own.into_iter().flatten().chain(guest.into_iter().flatten())
    }

    /// The bursts per reference of the tenant of the huge region of managed-space
    /// pages from `first` (a multiple of 512): summed again only after the rates or
    /// the guest mapping changed.
    fn region_rate(&mut self, i: usize, first: u64) -> f64 {
        if self.region_version[i] != self.version {
            let sum: f64 = self.managed_span(first, 512).map(|j| self.bursts[j] as f64).sum();
            self.region_bursts[i] = sum as f32;
            self.region_version[i] = self.version;
        }
        self.region_bursts[i] as f64
    }

    /// The page that stands for page `i`'s translation in fault events: `i` itself, or
    /// for a page translated huge, the first page of its region the statement names
    /// (a huge translation misses, and faults, as one: its region's bursts are its
    /// rate).
    fn representative(&self, i: usize) -> usize {
        if self.flags[i] & HUGE == 0 {
            return i;
        }
        let Some(m) = self.managed(i) else { return i };
        self.region_first(m & !511).unwrap_or(i)
    }

    /// The first page (in managed-space order) of the huge region of managed-space
    /// pages from `block`: the one that stands for a huge translation of it.
    fn region_first(&self, block: u64) -> Option<usize> {
        self.managed_span(block, 512).next()
    }

    /// Voids page `i`'s pending faults (events drawn at an older generation are
    /// dropped when met).
    fn void_faults(&mut self, i: usize) {
        self.generation[i] = self.generation[i].wrapping_add(1);
        self.flags[i] &= !(PENDING | FULL);
    }

    /// Trapping page `i`, whose translations were dropped: it keeps its pending events
    /// when they were drawn at its full rate ([`FULL`]), and stays marked; otherwise
    /// it goes to `redraw`.
    fn keep_or_redraw(&mut self, i: usize, redraw: &mut Vec<usize>) {
        if self.flags[i] & (PENDING | FULL) == PENDING | FULL {
            self.mark(i);
        } else {
            redraw.push(i);
        }
    }

    /// Translations of the managed-space pages `[first, first + n)` were dropped from
    /// every TLB: their sticky flags go, and their pending faults are voided — except
    /// for the pages of `trapping` (in any order) that stand for their translation,
    /// whose faults are to be drawn again from each core's next burst: returned, in
    /// the range's order (a page whose events were drawn so already keeps them:
    /// [`FULL`]). A drop of the whole managed space (a VM's
    /// flush: a million pages) visits only the pages marked since the last one; a
    /// partial drop, every page of its range.
    fn drop_translations(&mut self, first: u64, n: u64, trapping: &[usize]) -> Vec<usize> {
        let mut sorted = trapping.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let end = first.saturating_add(n);
        // A huge translation's faults are drawn once, on its representative page; the
        // other pages' events (from before a merge) are void.
        let mut redraw = Vec::new();
        let mut page = |p: &mut Pages, i: usize, rep: usize| {
            p.flags[i] &= !(STICKY_A | STICKY_D);
            let f = p.flags[i];
            if (f & HUGE == 0 || rep == i) && !sorted.is_empty() && sorted.binary_search(&i).is_ok() {
                p.keep_or_redraw(i, &mut redraw);
            } else if f & PENDING != 0 {
                p.void_faults(i);
            }
        };
        let whole = match &self.guest {
            Some(g) => first == 0 && end >= g.page.len() as u64,
            None => self.ranges.first().is_none_or(|r| first <= r.start) && self.ranges.last().is_none_or(|r| end >= r.end),
        };
        if whole {
            // The marked pages hold every sticky flag and pending event; a VM's page
            // the guest has not mapped is not in the range (and stays marked).
            let marked = std::mem::take(&mut self.marked);
            for &i in &marked {
                let i = i as usize;
                if self.managed(i).is_none() {
                    self.marked.push(i as u32);
                    continue;
                }
                self.flags[i] &= !MARKED;
                let rep = self.representative(i);
                page(self, i, rep);
            }
            // Redrawn in the range's order, as a pass over it would (those drawn at
            // their full rate keep their events, and stay marked).
            redraw.clear();
            for &i in &sorted {
                if self.managed(i).is_some() && self.representative(i) == i {
                    self.keep_or_redraw(i, &mut redraw);
                }
            }
            redraw.sort_by_key(|&i| self.managed(i));
            return redraw;
        }
        if self.guest.is_none() {
            let runs: Vec<(u64, Range<usize>)> = self.runs(first, n).collect();
            for (vpn, run) in runs {
                let (mut block, mut rep) = (u64::MAX, None);
                for (k, i) in run.enumerate() {
                    let region = (vpn + k as u64) & !511;
                    if region != block {
                        (block, rep) = (region, self.region_first(region));
                    }
                    page(self, i, rep.unwrap_or(i));
                }
            }
        } else {
            // (Guest mappings never change once made: the reverse map names each
            // page at its own guest-physical page.)
            let end = end.min(self.guest.as_ref().map_or(0, |g| g.page.len() as u64));
            let mut gpfn = first;
            while gpfn < end {
                let block = gpfn & !511;
                let block_end = (block + 512).min(end);
                let rep = self.region_first(block);
                for gp in gpfn..block_end {
                    let i = self.guest.as_ref().map_or(NONE, |g| g.page[gp as usize]);
                    if i != NONE {
                        page(self, i as usize, rep.unwrap_or(i as usize));
                    }
                }
                gpfn = block_end;
            }
        }
        redraw
    }

    /// Marks page `i` as one that may hold sticky flags or pending events.
    fn mark(&mut self, i: usize) {
        if self.flags[i] & MARKED == 0 {
            self.flags[i] |= MARKED;
            self.marked.push(i as u32);
        }
    }

    /// Notes that the guest mapped page `i` at guest-physical page `gpfn`, with a huge
    /// page when `huge`.
    fn note_guest(&mut self, i: usize, gpfn: u64, huge: bool) {
        self.version = self.version.wrapping_add(1);
        if huge {
            self.flags[i] |= GUEST_HUGE;
        }
        if let Some(g) = &mut self.guest {
            g.gpfn[i] = gpfn as u32;
            if g.page.len() <= gpfn as usize {
                g.page.resize(gpfn as usize + 1, NONE);
            }
            g.page[gpfn as usize] = i as u32;
        }
    }

    /// Pages of the universe.
    pub fn len(&self) -> usize {
        self.reads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// The index of page `vpn`, if the statement may name it.
    #[inline]
    pub fn index(&self, vpn: u64) -> Option<usize> {
        let r = self.ranges.partition_point(|r| r.end <= vpn);
        let range = self.ranges.get(r)?;
        range.contains(&vpn).then(|| self.starts[r] + (vpn - range.start) as usize)
    }

    /// The page number of index `i`.
    pub fn vpn(&self, i: usize) -> u64 {
        let r = self.starts.partition_point(|&s| s <= i) - 1;
        self.ranges[r].start + (i - self.starts[r]) as u64
    }

    /// The indexes of the pages in `[vpn, vpn + n)` that the universe holds.
    fn span(&self, vpn: u64, n: u64) -> impl Iterator<Item = usize> + '_ {
        self.runs(vpn, n).flat_map(|(_, run)| run)
    }

    /// The pages in `[vpn, vpn + n)` that the universe holds, as runs of indexes, each
    /// with its first page number.
    fn runs(&self, vpn: u64, n: u64) -> impl Iterator<Item = (u64, Range<usize>)> + '_ {
        let end = vpn + n;
        let first = self.ranges.partition_point(|r| r.end <= vpn);
        self.ranges[first..].iter().zip(&self.starts[first..]).take_while(move |(r, _)| r.start < end).map(move |(r, &s)| {
            let (lo, hi) = (vpn.max(r.start), end.min(r.end));
            (lo, (s + (lo - r.start) as usize)..(s + (hi - r.start) as usize))
        })
    }

    pub fn is_mapped(&self, i: usize) -> bool {
        self.flags[i] & MAPPED != 0
    }

    pub fn is_huge(&self, i: usize) -> bool {
        self.flags[i] & HUGE != 0
    }

    pub fn tier_of(&self, i: usize) -> Option<TierId> {
        self.is_mapped(i).then(|| TierId(self.tier[i]))
    }

    /// The cost model's class of page `i` (see [`class_of`]).
    #[inline]
    pub fn class(&self, i: usize) -> usize {
        self.classes[i] as usize
    }

    /// Page `i`'s class from its rates and size, after they changed.
    fn reclass(&mut self, i: usize) {
        self.classes[i] = class_of(self.reads[i] + self.writes[i], self.bursts[i], self.flags[i] & HUGE != 0) as u16;
    }

    /// Takes page `i`'s rates out of the aggregates (`sign` −1) or puts them in (+1).
    fn account(&mut self, i: usize, sign: f64) {
        let (r, w) = (self.reads[i] as f64 * sign, self.writes[i] as f64 * sign);
        if r == 0.0 && w == 0.0 {
            return;
        }
        let class = self.class(i);
        let a = if self.is_mapped(i) { &mut self.by_class[class * self.tiers + self.tier[i] as usize] } else { &mut self.unmapped[class] };
        a[0] += r;
        a[1] += w;
        self.seen[class / 64] |= 1 << (class % 64);
        self.changed = true;
    }

    /// The classes that ever had a rate, in increasing order (every other class's
    /// aggregates are zero).
    pub fn seen_classes(&self) -> impl Iterator<Item = usize> + '_ {
        self.seen.iter().enumerate().flat_map(|(k, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    64 * k + b
                })
            })
        })
    }

    /// The hazard of page `i`'s Accessed bit at hazard clock `h`, and of its Dirty bit.
    fn hazards(&self, i: usize, h: f64) -> (f64, f64) {
        let sticky = |flag: u16, rate: f32| {
            let rate = rate as f64;
            if self.flags[i] & flag != 0 {
                rate * misses(rate, self.tlb_time[(self.flags[i] & HUGE != 0) as usize])
            } else {
                rate
            }
        };
        let a = self.pend_a[i] as f64 + sticky(STICKY_A, self.bursts[i]) * (h - self.since_a[i]).max(0.0);
        let d = self.pend_d[i] as f64 + sticky(STICKY_D, self.write_bursts[i]) * (h - self.since_d[i]).max(0.0);
        (a, d)
    }

    /// The TLBs' characteristic times for the pages as they are mapped now (with
    /// `entries` translations per core for base and huge pages): the rates in powers
    /// of two, base pages and huge regions apart, mapped pages only (a page not
    /// mapped has no translation to keep).
    fn reach(&mut self, tlb: TlbShape) {
        let mut groups = [vec![(0.0, 0.0); 64], vec![(0.0, 0.0); 64]];
        let add = |g: &mut Vec<(f64, f64)>, rate: f64| {
            if rate > 0.0 {
                let k = (-rate.log2()).clamp(0.0, 63.0) as usize;
                g[k].0 += 1.0;
                g[k].1 += rate;
            }
        };
        let mut region = (u64::MAX, 0.0);
        for &i in &self.active {
            let i = i as usize;
            let Some(m) = self.managed(i).filter(|_| self.is_mapped(i)) else { continue };
            let b = self.bursts[i] as f64;
            if self.flags[i] & HUGE != 0 {
                if m / 512 != region.0 {
                    add(&mut groups[1], region.1);
                    region = (m / 512, 0.0);
                }
                region.1 += b;
            } else {
                add(&mut groups[0], b);
            }
        }
        add(&mut groups[1], region.1);
        self.tlb_time = match tlb {
            TlbShape::Split { small, huge } => [EpochsState::characteristic_time(&groups[0], small), EpochsState::characteristic_time(&groups[1], huge)],
            TlbShape::Unified { small, huge, shared } => {
                // One LRU second level that both sizes compete for (the first levels,
                // which hold a subset, add their own entries): one characteristic time.
                let both: Vec<(f64, f64)> = groups[0].iter().chain(&groups[1]).copied().collect();
                let t = EpochsState::characteristic_time(&both, small + huge + shared);
                [t, t]
            }
        };
        self.remapped = 0;
    }

    /// Restarts page `i`'s hazards at `h` (its bits were just settled).
    fn restart(&mut self, i: usize, h: f64) {
        self.since_a[i] = h;
        self.since_d[i] = h;
        self.pend_a[i] = 0.0;
        self.pend_d[i] = 0.0;
    }
}

/// A core's hazard clock: the last two points of its reference count against its
/// clock.
#[derive(Clone, Copy, Debug, Default)]
struct CoreClock {
    tenant: u16,
    c0: u64,
    r0: f64,
    c1: u64,
    r1: f64,
}

impl CoreClock {
    /// The core's epochs references at cycle `t`.
    fn refs_at(&self, t: u64) -> f64 {
        if self.c1 <= self.c0 {
            return self.r1;
        }
        let slope = (self.r1 - self.r0) / (self.c1 - self.c0) as f64;
        (self.r1 + slope * (t as f64 - self.c1 as f64)).max(0.0)
    }
}

/// A fault a page's next faults are drawn after ([`EpochsState::schedule`]).
#[derive(Clone, Copy, Debug)]
struct AfterFault {
    core: usize,
    /// The core's reference count the fault came at.
    at: f64,
    /// The page stays poisoned: its next fault repeats this one.
    repeat: bool,
}

/// What a stretch switch did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Switch {
    /// Total variation distance between the old and new stretch's shares of the
    /// references (0: the same distribution, 1: disjoint pages).
    pub distance: f64,
    /// Pages whose first touch was queued.
    pub queued: u64,
}

/// Counts of what epochs mode drew, for the report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EpochsCounts {
    /// Accessed (Dirty) bits settled on a look, and of them found set.
    pub settled: u64,
    pub accessed_drawn: u64,
    pub dirty_drawn: u64,
    /// Faults drawn on poisoned pages, accesses to moving pages, and first touches.
    pub faults: u64,
    pub traps: u64,
    pub first_touches: u64,
    /// Clears of Accessed bits without a flush that found the translation cached.
    pub sticky_clears: u64,
    pub clears_without_flush: u64,
    /// Guest page-table entries settled (VMs), and of them found accessed.
    pub guest_settled: u64,
    pub guest_accessed_drawn: u64,
}

/// Epochs mode's state of the machine: see the module documentation.
#[derive(Debug)]
pub struct EpochsState {
    pub tenants: Vec<Pages>,
    clocks: Vec<CoreClock>,
    /// Per core: fault events as (core references, page index, generation): first
    /// faults, which end a chunk, and repeats, which are taken at its end (see the
    /// module documentation, "Faults").
    events: Vec<BinaryHeap<Reverse<(u64, u32, u32)>>>,
    repeats: Vec<BinaryHeap<Reverse<(u64, u32, u32)>>>,
    /// Whether a poisoned page's repeated faults are taken at the chunk's end
    /// (`engine.epochs.batch_faults`).
    pub batch_faults: bool,
    /// Mappings changed since the engine last caught up: (tenant, first page, pages).
    log: Vec<(u16, u64, u64)>,
    /// Translations dropped since: (tenant, first page, pages).
    dropped: Vec<(u16, u64, u64)>,
    rng: Rng,
    /// TLB entries per core for base and huge translations.
    tlb: TlbShape,
    /// When each guest page-table page of a VM (tenant, guest-physical page) was last
    /// looked at for PML.
    guest_tables: std::collections::HashMap<(u16, u64), f64>,
    /// Per core, while `Policy::on_reference` runs for a chunk: the chunk's events of
    /// each kind PEBS-like counters count ([`SAMPLED_EVENTS`]).
    pub chunk_events: Vec<Option<[u64; SAMPLED_EVENTS]>>,
    pub counts: EpochsCounts,
    /// Page indexes of the entry being settled, kept to be reused (no allocation per
    /// entry a scan settles).
    scratch: Vec<usize>,
}

impl EpochsState {
    /// The state for `tenants` (indexed by tenant; a tenant with no statement has an
    /// empty universe) on `cores` cores of `tiers` tiers.
    pub fn new(tenants: &[TenantSetup], cores: usize, tiers: usize, seed: u64, tlb: TlbShape) -> EpochsState {
        let mut clocks = vec![CoreClock::default(); cores];
        for (t, s) in tenants.iter().enumerate() {
            for &c in &s.cores {
                clocks[c].tenant = t as u16;
            }
        }
        EpochsState {
            tenants: tenants.iter().map(|s| Pages::new(s, tiers)).collect(),
            clocks,
            events: vec![BinaryHeap::new(); cores],
            repeats: vec![BinaryHeap::new(); cores],
            batch_faults: true,
            log: Vec::new(),
            dropped: Vec::new(),
            rng: Rng::new(seed ^ 0x4550_4f43_4853),
            tlb,
            guest_tables: std::collections::HashMap::new(),
            chunk_events: vec![None; cores],
            counts: EpochsCounts::default(),
            scratch: Vec::new(),
        }
    }

    /// The tenant's hazard clock at cycle `t`.
    pub fn hazard(&self, tenant: u16, t: u64) -> f64 {
        self.tenants[tenant as usize].cores.iter().map(|&c| self.clocks[c].refs_at(t)).sum()
    }

    /// Core `core`'s epochs references so far.
    pub fn core_refs(&self, core: usize) -> f64 {
        self.clocks[core].r1
    }

    /// Core `core` made `refs` more epochs references between its cycles `from` and
    /// `to` (a detailed window makes none: its clock moves and its count does not).
    pub fn advanced(&mut self, core: usize, from: u64, to: u64, refs: f64) {
        let c = &mut self.clocks[core];
        c.c0 = from;
        c.r0 = c.r1;
        c.c1 = to;
        c.r1 += refs;
    }

    /// The next fault event of `core`: the core reference count it comes at.
    pub fn next_event(&mut self, core: usize) -> Option<f64> {
        // Events voided since they were drawn (their page's generation moved on) are
        // dropped here, so that they do not end a chunk.
        let tenant = self.clocks[core].tenant as usize;
        while let Some(&Reverse((at, i, g))) = self.events[core].peek() {
            if self.tenants[tenant].generation[i as usize] == g {
                return Some(f64::from_bits(at));
            }
            self.events[core].pop();
        }
        None
    }

    /// The next first touch of `tenant`: the hazard clock it comes at (pages mapped
    /// meanwhile, by a detailed window or with a huge page, are dropped).
    pub fn next_first_touch(&mut self, tenant: u16) -> Option<f64> {
        let p = &mut self.tenants[tenant as usize];
        while let Some(&(at, i)) = p.first_touch.last() {
            if !p.is_mapped(i as usize) {
                return Some(at);
            }
            p.first_touch.pop();
            p.flags[i as usize] &= !QUEUED;
        }
        None
    }

    /// Notes that the mapping of `pages` pages from `vpn` of `tenant` changed (the
    /// machine calls it on every first touch, move, split and merge).
    pub(crate) fn log(&mut self, tenant: u16, vpn: u64, pages: u64) {
        if !self.tenants[tenant as usize].is_empty() {
            self.log.push((tenant, vpn, pages));
        }
    }

    /// Notes that the translations of `pages` pages from `vpn` were dropped on every
    /// core.
    pub(crate) fn dropped(&mut self, tenant: u16, vpn: u64, pages: u64) {
        if !self.tenants[tenant as usize].is_empty() {
            self.dropped.push((tenant, vpn, pages));
        }
    }

    /// Solves `Σ (1 − exp(−βᵢ T)) = C` for `T` over rates `β` grouped in powers of
    /// two (count and summed rate per group): bisection on a monotone function.
    fn characteristic_time(groups: &[(f64, f64)], entries: f64) -> f64 {
        let pages: f64 = groups.iter().map(|g| g.0).sum();
        if pages <= entries {
            return f64::INFINITY;
        }
        let filled = |t: f64| groups.iter().filter(|g| g.0 > 0.0).map(|&(n, sum)| n * (1.0 - (-(sum / n) * t).exp())).sum::<f64>();
        let (mut lo, mut hi) = (0.0, 1.0);
        while filled(hi) < entries && hi < 1e18 {
            hi *= 2.0;
        }
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if filled(mid) < entries {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    /// Installs `s` as `tenant`'s current stretch at hazard clock `h`: pages whose
    /// rates change first add what the old rates gave them; pages not mapped get their
    /// first touch queued; the aggregates, the TLBs' characteristic times and the
    /// per-reference figures follow.
    pub fn switch(&mut self, tenant: u16, s: &Stretch, h: f64) -> Switch {
        let rng = &mut self.rng;
        let p = &mut self.tenants[tenant as usize];
        p.version = p.version.wrapping_add(1);
        let refs = s.refs.max(1) as f64;
        // The old stretch's pages: fold their hazard, take them out, and keep their
        // shares of its references.
        let old_total: f64 = p.active.iter().map(|&i| (p.reads[i as usize] + p.writes[i as usize]) as f64).sum();
        let active = std::mem::take(&mut p.active);
        for &i in &active {
            let i = i as usize;
            if p.bursts[i] > 0.0 || p.write_bursts[i] > 0.0 || p.reads[i] + p.writes[i] > 0.0 {
                if old_total > 0.0 {
                    p.share[i] = (p.reads[i] + p.writes[i]) as f64 / old_total;
                }
                let (a, d) = p.hazards(i, h);
                p.pend_a[i] = a as f32;
                p.pend_d[i] = d as f32;
                p.since_a[i] = h;
                p.since_d[i] = h;
                let (bursts, write_bursts) = (p.bursts[i] as f64, p.write_bursts[i] as f64);
                if let Some(g) = &mut p.guest {
                    let dt = (h - g.since[i]).max(0.0);
                    g.pend_a[i] += (bursts * dt) as f32;
                    g.pend_d[i] += (write_bursts * dt) as f32;
                    g.since[i] = h;
                }
                p.account(i, -1.0);
                p.reads[i] = 0.0;
                p.writes[i] = 0.0;
                p.bursts[i] = 0.0;
                p.write_bursts[i] = 0.0;
                p.flags[i] &= !FULL;
                p.reclass(i);
            }
        }
        // The new stretch.
        let mut queued = 0;
        let mut new_touches: Vec<(f64, u32)> = Vec::new();
        // Twice the distance between the old and the new shares, summed as the new
        // pages come (each taking its old share out) and then over the old pages left.
        let mut moved = 0.0;
        let mut names = Vec::with_capacity(s.pages.len());
        let n_unmapped = s.pages.iter().filter(|l| p.index(l.vpn).is_some_and(|i| !p.is_mapped(i) && p.flags[i] & QUEUED == 0)).count();
        let mut rank = 0usize;
        for l in &s.pages {
            let Some(i) = p.index(l.vpn) else { continue };
            p.reads[i] = (l.reads as f64 / refs) as f32;
            p.writes[i] = (l.writes as f64 / refs) as f32;
            p.bursts[i] = (l.bursts as f64 / refs) as f32;
            p.write_bursts[i] = (l.write_bursts as f64 / refs) as f32;
            p.flags[i] &= !FULL;
            p.reclass(i);
            p.account(i, 1.0);
            names.push(i as u32);
            if old_total > 0.0 {
                moved += (std::mem::take(&mut p.share[i]) - l.refs() as f64 / refs).abs();
            }
            if !p.is_mapped(i) && p.flags[i] & QUEUED == 0 {
                // When the page is first touched: its first burst, or its place in
                // address order.
                let at = match s.order {
                    Order::Random => {
                        // (A page whose only burst began in an earlier window is first
                        // touched at its reference rate.)
                        let beta = if p.bursts[i] > 0.0 { p.bursts[i] } else { p.reads[i] + p.writes[i] }.max(1e-30) as f64;
                        h + -(1.0 - rng.unit()).ln() / beta
                    }
                    Order::Ascending => h + (rank as f64 + 0.5) / n_unmapped.max(1) as f64 * refs,
                };
                rank += 1;
                if at < h + refs {
                    new_touches.push((at, i as u32));
                    p.flags[i] |= QUEUED;
                    queued += 1;
                }
            }
        }
        if !new_touches.is_empty() {
            // Both lists latest first; merged in one pass.
            new_touches.sort_by(|a, b| b.0.total_cmp(&a.0));
            let old = std::mem::take(&mut p.first_touch);
            let (mut a, mut b) = (old.into_iter().peekable(), new_touches.into_iter().peekable());
            let mut merged = Vec::with_capacity(a.len() + b.len());
            loop {
                let next = match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) => {
                        if x.0 >= y.0 {
                            a.next()
                        } else {
                            b.next()
                        }
                    }
                    (Some(_), None) => a.next(),
                    (None, Some(_)) => b.next(),
                    (None, None) => break,
                };
                merged.extend(next);
            }
            p.first_touch = merged;
        }
        for &i in &active {
            moved += std::mem::take(&mut p.share[i as usize]);
        }
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]), "a stretch names its pages in increasing order, each once");
        p.active = names;
        let distance = if old_total > 0.0 { 0.5 * moved } else { 1.0 };
        p.instrs_per_ref = s.instrs as f64 / refs;
        p.dependent_share = s.dependent as f64 / refs;
        p.reach(self.tlb);
        p.changed = true;
        p.samplers = None;
        Switch { distance, queued }
    }

    /// Takes the first touch of `tenant` due by hazard clock `h`: the page's number.
    pub fn take_first_touch(&mut self, tenant: u16, h: f64) -> Option<u64> {
        let p = &mut self.tenants[tenant as usize];
        while let Some(&(at, i)) = p.first_touch.last() {
            if at > h {
                return None;
            }
            p.first_touch.pop();
            let i = i as usize;
            p.flags[i] &= !QUEUED;
            if !p.is_mapped(i) {
                return Some(p.vpn(i));
            }
        }
        None
    }

    /// Draws page `i`'s next fault on each core of its tenant, voiding those drawn
    /// before: after its translations were dropped everywhere (`after` none: each
    /// core's next burst, from where the core is), or after a fault on a core at its
    /// reference count `at` (that core caches the translation now, so its next fault
    /// is its next burst that misses the TLB, counted from `at`). A repeat (the page
    /// stayed poisoned through a fault) goes with the repeats when they are batched.
    fn schedule(&mut self, tenant: u16, i: usize, after: Option<AfterFault>) {
        let p = &mut self.tenants[tenant as usize];
        let i = p.representative(i);
        p.generation[i] = p.generation[i].wrapping_add(1);
        let g = p.generation[i];
        let huge = p.flags[i] & HUGE != 0;
        let beta = match p.managed(i) {
            Some(m) if huge => p.region_rate(i, m & !511),
            _ => p.bursts[i] as f64,
        };
        if beta <= 0.0 {
            return;
        }
        p.flags[i] |= PENDING;
        if after.is_none() {
            p.flags[i] |= FULL;
        } else {
            p.flags[i] &= !FULL;
        }
        p.mark(i);
        let t = p.tlb_time[huge as usize];
        let batched = self.batch_faults && after.is_some_and(|a| a.repeat);
        for &c in &p.cores {
            let (rate, from) = match after {
                Some(a) if a.core == c => (beta * misses(beta, t), a.at),
                _ => (beta, self.clocks[c].r1),
            };
            if rate <= 0.0 || !rate.is_finite() {
                continue;
            }
            let at = from + -(1.0 - self.rng.unit()).ln() / rate;
            let heap = if batched { &mut self.repeats[c] } else { &mut self.events[c] };
            heap.push(Reverse((key(at), i as u32, g)));
        }
    }

    /// Takes the earliest fault event of `core` due by its reference count `refs`, a
    /// first fault or a repeat: the tenant's page index and the count it came at, if
    /// its generation is current.
    fn take_event(&mut self, core: usize, refs: f64) -> Option<(usize, f64)> {
        let tenant = self.clocks[core].tenant as usize;
        loop {
            let first = self.events[core].peek().map(|r| r.0);
            let repeat = self.repeats[core].peek().map(|r| r.0);
            let heap = match (first, repeat) {
                (Some(a), Some(b)) => if b < a { &mut self.repeats[core] } else { &mut self.events[core] },
                (Some(_), None) => &mut self.events[core],
                (None, Some(_)) => &mut self.repeats[core],
                (None, None) => return None,
            };
            let Reverse((at, i, g)) = *heap.peek().expect("peeked");
            let at = f64::from_bits(at);
            if at > refs {
                return None;
            }
            heap.pop();
            if self.tenants[tenant].generation[i as usize] == g {
                return Some((i as usize, at));
            }
        }
    }

    /// Voids the pending faults of page `i` of `tenant`.
    fn cancel(&mut self, tenant: u16, i: usize) {
        self.tenants[tenant as usize].void_faults(i);
    }
}

impl<R: Redirect> Machine<R> {
    /// Starts epochs mode: the page state of every tenant's statement.
    pub fn start_epochs(&mut self, tenants: &[TenantSetup], seed: u64) {
        let t = &self.cfg.tlb;
        let (small, huge) = (t.l1_small_entries as f64, t.l1_huge_entries as f64);
        let shape = if t.l2_split {
            TlbShape::Split { small: small + t.l2_small_entries as f64, huge: huge + t.l2_huge_entries as f64 }
        } else {
            TlbShape::Unified { small, huge, shared: t.l2_small_entries as f64 }
        };
        self.epochs = Some(Box::new(EpochsState::new(tenants, self.cores.len(), self.mem.tiers.all().len(), seed, shape)));
    }

    pub fn epochs(&self) -> Option<&EpochsState> {
        self.epochs.as_deref()
    }

    pub fn epochs_mut(&mut self) -> Option<&mut EpochsState> {
        self.epochs.as_deref_mut()
    }

    /// Notes a mapping change for epochs mode (first touch, move, split, merge).
    #[inline]
    pub(crate) fn epochs_log(&mut self, tenant: u16, addr: u64, bytes: u64) {
        if let Some(e) = self.epochs.as_deref_mut() {
            e.log(tenant, addr >> 12, bytes.div_ceil(4096).max(1));
        }
    }

    /// Notes for epochs mode that an entry of `tenant` was poisoned or set to trap
    /// (the only ways an entry comes to trap: a copied entry keeps a bit set here).
    #[inline]
    pub(crate) fn epochs_may_trap(&mut self, tenant: u16) {
        if let Some(p) = self.epochs.as_deref_mut().and_then(|e| e.tenants.get_mut(tenant as usize)) {
            p.may_trap = true;
        }
    }

    /// Notes dropped translations for epochs mode.
    #[inline]
    pub(crate) fn epochs_dropped(&mut self, tenant: u16, addr: u64, bytes: u64) {
        if let Some(e) = self.epochs.as_deref_mut() {
            e.dropped(tenant, addr >> 12, bytes.div_ceil(4096).max(1));
        }
    }

    /// Brings the page state up to the page tables after mappings changed and
    /// translations were dropped: tiers and sizes (and the aggregates), sticky
    /// translations forgotten, poisoned pages' faults drawn again.
    pub fn epochs_catch_up(&mut self) {
        let Some(mut e) = self.epochs.take() else { return };
        for (tenant, vpn, n) in std::mem::take(&mut e.log) {
            let at = e.tenants[tenant as usize].cores.first().map_or(0, |&c| self.cores[c].clock);
            let h = e.hazard(tenant, at);
            let p = &mut e.tenants[tenant as usize];
            for i in p.indexes(vpn, n) {
                let Some(vpn) = p.managed(i) else { continue };
                // A VM's translation is huge when both the guest's and the EPT's
                // mappings are.
                let guest_huge = p.guest.is_none() || p.flags[i] & GUEST_HUGE != 0;
                let (flags, tier) = match self.space.mapped(PageRef::new(tenant, vpn << 12)) {
                    Ok(m) => (MAPPED | if m.huge && guest_huge { HUGE } else { 0 }, self.space.tier_of(m.pfn() + if m.huge { vpn - (m.addr >> 12) } else { 0 }).0),
                    Err(_) => (0, 0),
                };
                let was_tier = p.tier_of(i);
                if flags != 0 && was_tier.is_none() {
                    p.placing = TierId(tier);
                }
                if p.flags[i] & (MAPPED | HUGE) != flags || (flags != 0 && p.tier[i] != tier) {
                    p.account(i, -1.0);
                    // (A page's rate for its faults changes with its size: drawn
                    // again at the next drop.)
                    match (p.flags[i] & MAPPED != 0, flags & MAPPED != 0) {
                        (false, true) => p.mapped += 1,
                        (true, false) => p.mapped -= 1,
                        _ => {}
                    }
                    p.flags[i] = (p.flags[i] & !(MAPPED | HUGE | FULL)) | flags;
                    p.tier[i] = tier;
                    p.reclass(i);
                    p.account(i, 1.0);
                    p.remapped += 1;
                    if was_tier.is_some() && was_tier != p.tier_of(i) {
                        p.moved_share += (p.reads[i] + p.writes[i]) as f64;
                    }
                }
            }
            if p.remapped > p.len() / 64 {
                p.reach(e.tlb);
            }
            // A VM's guest page-table page that changed tier moves the walks that
            // read it: they count in the share that calls for a calibration (at most
            // all references, for a page every walk reads).
            if p.guest.is_some() {
                let space = &self.space;
                let table = &space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
                let tier_of = |gpfn: u64| space.managed_tier(tenant, gpfn).map(|t| t.0);
                refresh_tables(table, p, vpn, n, h, tier_of);
                let g = p.guest.as_mut().expect("a VM");
                let from = g.tables.partition_point(|t| t.gpfn < vpn);
                let mut moved = 0.0;
                for t in g.tables[from..].iter_mut().take_while(|t| t.gpfn < vpn.saturating_add(n)) {
                    let now = tier_of(t.gpfn).unwrap_or(u8::MAX);
                    if now != t.tier && t.tier != u8::MAX && now != u8::MAX {
                        moved += t.rate.min(1.0);
                    }
                    t.tier = now;
                }
                p.moved_share += moved;
            }
        }
        for (tenant, vpn, n) in std::mem::take(&mut e.dropped) {
            // The pages that trap (poisoned, or their move has them trap). A drop of
            // many pages takes them from one walk over the leaves of its range (from
            // the huge page holding its start): a whole VM's flush would otherwise
            // walk the table once per page. A drop of a few (a shootdown: memos'
            // SysMon flushes each page whose Accessed bit it clears, 580 k a
            // simulated second on kv 256 MiB) looks each page up instead of walking
            // its huge region's leaves from the region's start.
            let mut trapping: Vec<usize> = Vec::new();
            let p = &e.tenants[tenant as usize];
            let end = vpn.checked_add(n).and_then(|x| x.checked_mul(4096)).unwrap_or(u64::MAX);
            if p.may_trap && n > 512 {
                self.space.visit_slots(tenant, (vpn & !511) << 12, end, &mut |page, slot| {
                    if self.space.entry(tenant, slot) & (POISONED | TRAP) != 0 {
                        trapping.extend(p.managed_span(page.addr >> 12, page.bytes >> 12));
                    }
                    ControlFlow::Continue(())
                });
            } else if p.may_trap {
                let mut addr = vpn << 12;
                while addr < end {
                    match self.space.mapped(PageRef::new(tenant, addr)) {
                        Ok(m) => {
                            let bytes = self.space.page_bytes(m.huge);
                            if m.entry & (POISONED | TRAP) != 0 {
                                trapping.extend(p.managed_span(m.addr >> 12, bytes >> 12));
                            }
                            addr = m.addr + bytes;
                        }
                        Err(_) => addr += 4096,
                    }
                }
            }
            let redraw = e.tenants[tenant as usize].drop_translations(vpn, n, &trapping);
            for i in redraw {
                e.schedule(tenant, i, None);
            }
        }
        self.epochs = Some(e);
    }

    /// Settles the Accessed and Dirty bits of the leaf at `slot` of `tenant`, which
    /// maps the page at managed address `addr` (huge when `huge`), at cycle `at`:
    /// draws whether the bursts since the bits were last settled set them. Returns
    /// the entry. Does nothing outside epochs mode or for a page no statement names.
    pub(crate) fn epochs_settle(&mut self, tenant: u16, addr: u64, huge: bool, slot: usize, at: u64) -> u64 {
        let entry = *self.space.entry_mut(tenant, slot);
        let Some(e) = self.epochs.as_deref() else { return entry };
        if e.tenants.get(tenant as usize).is_none_or(|p| p.is_empty()) {
            return entry;
        }
        let h = e.hazard(tenant, at);
        let (first, n) = if huge { ((addr >> 12) & !511, 512) } else { (addr >> 12, 1) };
        // A VM's EPT also maps the guest's page tables, which walks read.
        let vm = self.is_vm(tenant);
        if vm {
            self.epochs_table_pages(tenant, first, n, h);
        }
        let e = self.epochs.as_deref_mut().expect("epochs state");
        let p = &mut e.tenants[tenant as usize];
        let tables = if vm { p.guest.as_mut().map_or(0.0, |g| g.table_hazard(first, n, h)) } else { 0.0 };
        // Hazards of the Accessed bit, and of the Dirty bit within the Accessed bit's
        // window and before it (a Dirty bit cleared earlier than the Accessed bit).
        let (mut ha, mut hd_within, mut hd_before) = (tables, 0.0, 0.0);
        let mut idx = std::mem::take(&mut e.scratch);
        p.indexes_into(first, n, &mut idx);
        for &i in &idx {
            let (a, d) = p.hazards(i, h);
            ha += a;
            let before = if p.since_d[i] < p.since_a[i] { (p.write_bursts[i] as f64 * (p.since_a[i] - p.since_d[i])).min(d) } else { 0.0 };
            hd_within += d - before;
            hd_before += before;
            p.restart(i, h);
        }
        if idx.is_empty() && tables == 0.0 {
            e.scratch = idx;
            return entry;
        }
        e.counts.settled += 1;
        // A store is an access: within the Accessed bit's window, the Dirty bit is set
        // only with it, with the chance that one of the bursts was a store.
        let p_accessed = 1.0 - (-ha).exp();
        let accessed = entry & ACCESSED == 0 && ha > 0.0 && e.rng.unit() < p_accessed;
        let mut set = 0;
        if accessed {
            set |= ACCESSED;
            e.counts.accessed_drawn += 1;
        }
        if entry & DIRTY == 0 {
            let within = if entry & ACCESSED != 0 {
                hd_within > 0.0 && e.rng.unit() < 1.0 - (-hd_within).exp()
            } else {
                accessed && e.rng.unit() < (1.0 - (-hd_within).exp()) / p_accessed.max(1e-300)
            };
            let before = hd_before > 0.0 && e.rng.unit() < 1.0 - (-hd_before).exp();
            if within || before {
                set |= DIRTY;
                e.counts.dirty_drawn += 1;
            }
        }
        if set & ACCESSED != 0 {
            for &i in &idx {
                p.flags[i] &= !STICKY_A;
            }
        }
        if set & DIRTY != 0 {
            for &i in &idx {
                p.flags[i] &= !STICKY_D;
            }
        }
        e.scratch = idx;
        let en = self.space.entry_mut(tenant, slot);
        *en |= set;
        let entry = *en;
        // A VM's EPT Dirty bit set while PML is on is logged, on the VM's vCPU.
        if set & DIRTY != 0 && self.vmx.pml_on(tenant) {
            if let Some(&core) = self.epochs.as_deref().and_then(|e| e.tenants[tenant as usize].cores.first()) {
                self.pml_log(core, tenant, addr & !((n << 12) - 1));
            }
        }
        entry
    }

    /// Brings VM `tenant`'s list of guest page-table pages up to date (see
    /// [`refresh_tables`]); `h` is the hazard clock now.
    fn epochs_table_pages(&mut self, tenant: u16, first: u64, n: u64, h: f64) {
        let table = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
        let Some(e) = self.epochs.as_deref_mut() else { return };
        let space = &self.space;
        refresh_tables(table, &mut e.tenants[tenant as usize], first, n, h, |gpfn| space.managed_tier(tenant, gpfn).map(|t| t.0));
    }

    /// With PML on, the guest page-table pages of VM `tenant` whose entries the MMU
    /// walked since the last look are logged: a walk reads the guest entry, which
    /// PML counts as a write of its page (module `vmx`). A walk comes with a burst
    /// that misses the TLB, so a guest page-table page is logged with the chance that
    /// one of the pages it maps was come back to after its translation left the TLB:
    /// `1 − exp(−Σ β exp(−β T) ΔH)`.
    pub(crate) fn epochs_log_guest_tables(&mut self, tenant: u16, at: u64) {
        if !self.vmx.pml_on(tenant) {
            return;
        }
        let Some(e) = self.epochs.as_deref_mut() else { return };
        if e.tenants.get(tenant as usize).is_none_or(|p| p.is_empty()) {
            return;
        }
        let h = e.hazard(tenant, at);
        // The guest's leaves by the page-table page that holds them.
        let mut nodes: Vec<(u64, Vec<(u64, bool)>)> = Vec::new();
        let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
        guest.for_each_leaf(0, u64::MAX, &mut |l| {
            let node = guest.entry_paddr(l.slot & !511) >> 12;
            if nodes.last().is_none_or(|n| n.0 != node) {
                nodes.push((node, Vec::new()));
            }
            nodes.last_mut().expect("a node").1.push((l.addr >> 12, l.huge));
            ControlFlow::Continue(())
        });
        let Some(&core) = e.tenants[tenant as usize].cores.first() else { return };
        let mut logged = Vec::new();
        for (node, leaves) in nodes {
            let p = &e.tenants[tenant as usize];
            let rate: f64 = leaves.into_iter().map(|(gvpn, huge)| leaf_walk_rate(p, gvpn, huge)).sum();
            let since = e.guest_tables.insert((tenant, node), h).unwrap_or(0.0);
            let hazard = rate * (h - since).max(0.0);


            if hazard > 0.0 && e.rng.unit() < 1.0 - (-hazard).exp() {
                logged.push(node);
            }
        }
        for node in logged {
            self.pml_log(core, tenant, node << 12);
        }
    }

    /// Settles every mapped page of `tenant` (PML logs every Dirty bit drawn, so its
    /// log is read after this).
    pub(crate) fn epochs_settle_tenant(&mut self, tenant: u16, at: u64) {
        if self.epochs.is_none() {
            return;
        }
        let mut leaves = Vec::new();
        self.space.visit_slots(tenant, 0, u64::MAX, &mut |p, slot| {
            leaves.push((p.addr, p.huge, slot));
            ControlFlow::Continue(())
        });
        for (addr, huge, slot) in leaves {
            self.epochs_settle(tenant, addr, huge, slot, at);
        }
    }

    /// Settles the Accessed and Dirty bits of the guest page-table entry at `slot`
    /// of VM `tenant`, which maps guest-physical page `gpfn` (huge when `huge`), at
    /// cycle `at`, as [`Machine::epochs_settle`] does the managed table's. Returns the
    /// entry.
    pub(crate) fn epochs_settle_guest(&mut self, tenant: u16, gpfn: u64, huge: bool, slot: usize, at: u64) -> u64 {
        let entry = self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table.entry(slot);
        let Some(e) = self.epochs.as_deref_mut() else { return entry };
        let h = e.hazard(tenant, at);
        let p = &mut e.tenants[tenant as usize];
        let (first, n) = if huge { (gpfn & !511, 512) } else { (gpfn, 1) };
        let idx = p.indexes(first, n);
        let (mut ha, mut hd) = (0.0, 0.0);
        let (bursts, write_bursts) = (&p.bursts, &p.write_bursts);
        let Some(g) = &mut p.guest else { return entry };
        for &i in &idx {
            let dt = (h - g.since[i]).max(0.0);
            ha += g.pend_a[i] as f64 + bursts[i] as f64 * dt;
            hd += g.pend_d[i] as f64 + write_bursts[i] as f64 * dt;
            g.since[i] = h;
            g.pend_a[i] = 0.0;
            g.pend_d[i] = 0.0;
        }
        let p_accessed = 1.0 - (-ha).exp();
        let accessed = entry & ACCESSED == 0 && ha > 0.0 && e.rng.unit() < p_accessed;
        let dirty = entry & DIRTY == 0 && if entry & ACCESSED != 0 { hd > 0.0 && e.rng.unit() < 1.0 - (-hd).exp() } else { accessed && e.rng.unit() < (1.0 - (-hd).exp()) / p_accessed.max(1e-300) };
        let set = if accessed { ACCESSED } else { 0 } | if dirty { DIRTY } else { 0 };
        e.counts.guest_settled += 1;
        e.counts.guest_accessed_drawn += accessed as u64;
        let en = self.space.tenant_mut(tenant).guest.as_mut().expect("VM tenant").table.entry_mut(slot);
        *en |= set;
        *en
    }

    /// Settles every base-page leaf of the huge-page-sized region holding `addr`
    /// (before a merge reads them).
    pub(crate) fn epochs_settle_region(&mut self, tenant: u16, addr: u64, at: u64) {
        if self.epochs.is_none() {
            return;
        }
        let region = addr & !(self.space.huge_bytes() - 1);
        let Some((_, first)) = self.space.tenants()[tenant as usize].table.small_node(region) else { return };
        for i in 0..self.space.huge_frames() {
            self.epochs_settle(tenant, region + (i << 12), false, first + i as usize, at);
        }
    }

    /// The Accessed bit of the page at `addr` was just cleared without a TLB flush:
    /// draws, for each core of the tenant, whether it still caches the translation.
    pub(crate) fn epochs_cleared_without_flush(&mut self, tenant: u16, addr: u64, huge: bool) {
        let Some(e) = self.epochs.as_deref_mut() else { return };
        if e.tenants.get(tenant as usize).is_none_or(|p| p.is_empty()) {
            return;
        }
        let p = &e.tenants[tenant as usize];
        let (first, n) = if huge { ((addr >> 12) & !511, 512) } else { (addr >> 12, 1) };
        let idx = p.indexes(first, n);
        let beta: f64 = idx.iter().map(|&i| p.bursts[i] as f64).sum();
        let t = p.tlb_time[huge as usize];
        let cores = p.cores.len() as i32;
        // Cached on some core: 1 − (not cached on any).
        let cached = 1.0 - misses(beta, t).powi(cores);
        e.counts.clears_without_flush += 1;
        if e.rng.unit() < cached {
            e.counts.sticky_clears += 1;
            let p = &mut e.tenants[tenant as usize];
            for &i in &idx {
                p.flags[i] |= STICKY_A;
                p.mark(i);
            }
        }
    }

    /// A PEBS-like sample of an event of kind `kind` ([`SAMPLED_EVENTS`]) of the chunk
    /// `core` just ran: the physical address of a page drawn in proportion to its
    /// events of that kind — its loads that miss every cache (their class's share of
    /// its loads), among the pages of the fast tier or of the slower ones; or its
    /// stores. `None` when no page has such events.
    pub fn epochs_sample(&mut self, core: usize, kind: usize) -> Option<u64> {
        let e = self.epochs.as_deref_mut()?;
        let tenant = e.clocks[core].tenant;
        let p = &mut e.tenants[tenant as usize];
        if p.samplers.is_none() {
            let loads: Vec<f64> = (0..p.len()).map(|i| p.reads[i] as f64 * p.load_misses.get(p.class(i)).copied().unwrap_or(1.0) as f64).collect();
            let stores: Vec<f64> = p.writes.iter().map(|&w| w as f64).collect();
            p.samplers = Some([Alias::new(&loads), Alias::new(&stores)]);
        }
        let samplers = p.samplers.as_ref().expect("just built");
        let sampler = samplers[(kind == 2) as usize].as_ref()?;
        // Loads of one side of the tiers: draws from all, kept when on that side.
        for _ in 0..256 {
            let i = sampler.draw(&mut e.rng);
            let Some(tier) = p.tier_of(i) else { continue };
            if kind == 2 || (kind == 0) == (tier == TierId::FAST) {
                let vpn = p.managed(i)?;
                let m = self.space.mapped(PageRef::new(tenant, vpn << 12)).ok()?;
                return Some((m.pfn() + (vpn - (m.addr >> 12))) << 12);
            }
        }
        None
    }

    /// Takes `core`'s fault due by its reference count `refs`, if any: the poisoned
    /// page traps on its TLB miss (the walk sets its Accessed bit, and Dirty when the
    /// burst stores), the core pays the fault, the observer sees it, and the core's
    /// TLB now holds the translation. Returns whether a fault was taken.
    pub fn epochs_fault<O: Observer>(&mut self, core: usize, refs: f64, obs: &mut O) -> bool {
        let Some(e) = self.epochs.as_deref_mut() else { return false };
        let tenant = e.clocks[core].tenant;
        let Some((i, at)) = e.take_event(core, refs) else { return false };
        let p = &e.tenants[tenant as usize];
        let store = {
            let b = p.bursts[i].max(1e-30);
            e.rng.unit() < (p.write_bursts[i] / b) as f64
        };
        let Some(m) = p.managed(i).and_then(|vpn| self.space.mapped(PageRef::new(tenant, vpn << 12)).ok()) else {
            e.cancel(tenant, i);
            return false;
        };
        if m.entry & POISONED == 0 {
            if m.entry & TRAP == 0 {
                e.cancel(tenant, i);
                return false;
            }
            // A page that is moving (or whose move left its entry to fill): the access
            // waits for the move's end and takes its exits; a read of a write-protected
            // page goes on, and the next miss comes back.
            e.counts.traps += 1;
            e.schedule(tenant, i, Some(AfterFault { core, at, repeat: false }));
            let clean = self.spring_trap(core, tenant, m.addr, m.huge, store);
            *self.space.entry_mut(tenant, m.slot) |= ACCESSED | if store && !clean { DIRTY } else { 0 };
            return true;
        }
        e.counts.faults += 1;
        e.schedule(tenant, i, Some(AfterFault { core, at, repeat: true }));
        *self.space.entry_mut(tenant, m.slot) |= ACCESSED | if store { DIRTY } else { 0 };
        let fault = self.timing.poison_fault_cycles;
        let c = &mut self.cores[core];
        // (As a detailed walk counts its fault in the translation's cycles.)
        c.clock += fault;
        c.stats.poison_faults += 1;
        c.stats.fault_cycles += fault;
        c.stats.translation_cycles += fault;
        let number = self.space.page_number(tenant, m.addr);
        obs.on_fault(&FaultEvent { core, tenant, addr: m.addr, page: number, huge: m.huge, kind: FaultKind::Poison });
        true
    }

    /// The guest of VM `tenant` maps the guest-virtual page holding `gva` (its first
    /// touch); epochs mode notes each page's guest-physical page and whether the
    /// guest maps it huge, so that catching up after the EPT changes needs no walk of
    /// the guest's table (guest mappings never change after this in our model).
    pub(crate) fn guest_first_touch(&mut self, tenant: u16, gva: u64) {
        self.space.guest_first_touch(tenant, gva);
        let Some(e) = self.epochs.as_deref_mut() else { return };
        let p = &mut e.tenants[tenant as usize];
        if p.is_empty() {
            return;
        }
        let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
        let leaf = guest.walk(gva, None).expect("just mapped by the guest");
        let (g0, huge) = (guest.entry(leaf.slot) >> 12, leaf.huge);
        let vpn = gva >> 12;
        let (first, n) = if huge { (vpn & !511, 512) } else { (vpn, 1) };
        for i in p.span(first, n).collect::<Vec<_>>() {
            let v = p.vpn(i);
            p.note_guest(i, g0 + (v - first), huge);
        }
    }

    /// First-touches page `vpn` of the tenant of `core` on `core` (placement, fault
    /// cost, the observer told), as the first reference to it would. Returns false
    /// when memory is full (the machine's error is set).
    pub fn epochs_first_touch<O: Observer>(&mut self, core: usize, tenant: u16, vpn: u64, obs: &mut O) -> bool {
        // A VM's guest maps the page first (linearly in guest-physical space), then
        // the EPT the guest-physical page.
        let managed = if self.is_vm(tenant) {
            let gva = vpn << 12;
            let walk = |m: &Self| m.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table.walk(gva, None);
            if walk(self).is_none() {
                self.guest_first_touch(tenant, gva);
            }
            let leaf = walk(self).expect("just mapped by the guest");
            let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
            let (g0, huge) = (guest.entry(leaf.slot) >> 12, leaf.huge);
            let first = if huge { vpn & !511 } else { vpn };
            (g0 + (vpn - first)) << 12
        } else {
            vpn << 12
        };
        if self.space.mapped(PageRef::new(tenant, managed)).is_ok() {
            // (The guest's new page may lie in an EPT page mapped already.)
            self.epochs_log(tenant, managed, 4096);
            return true;
        }
        match self.first_touch(core, tenant, managed, obs) {
            Some(cycles) => {
                self.cores[core].clock += cycles;
                self.cores[core].stats.translation_cycles += cycles;
                if let Some(e) = self.epochs.as_deref_mut() {
                    e.counts.first_touches += 1;
                }
                true
            }
            None => false,
        }
    }
}

/// One tier's demand traffic in a chunk of epochs references.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkTier {
    /// Loads and stores that missed every cache, and of them loads (which PEBS-like
    /// samples of LLC-missing loads count; the tier counts every one as a read, as
    /// detailed mode's write-allocate fill).
    pub accesses: u64,
    pub reads: u64,
    /// Their latency, summed.
    pub latency_cycles: u64,
    pub writebacks: u64,
    pub walk_reads: u64,
    pub row_hits: u64,
    pub queue_cycles: u64,
}

/// What a chunk of epochs references did on one core, in whole counts (the engine
/// carries the fractions from chunk to chunk).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    pub refs: u64,
    pub reads: u64,
    pub writes: u64,
    pub instructions: u64,
    pub base_cycles: u64,
    pub translation_cycles: u64,
    pub stall_cycles: u64,
    /// First-level TLB hits, second-level hits, misses.
    pub tlb: [u64; 3],
    pub walk_cycles: u64,
    pub walk_references: u64,
    pub walk_memory_accesses: u64,
    /// Per tier (the first [`Machine`]'s tiers of [`MAX_TIERS`]).
    pub tiers: [ChunkTier; MAX_TIERS],
    /// Cache lookups by the level that served them (the last: memory), and dirty
    /// lines each level wrote back.
    pub levels: [u64; super::sampled::MAX_LEVELS],
    pub level_writebacks: [u64; super::sampled::MAX_LEVELS],
}

/// The machine's access mode for a calibration's measured part (with the other
/// modes, in `sampled`).
pub use super::sampled::CALIBRATE;

impl<R: Redirect> Machine<R> {
    /// Takes the banks and bus of tier `t` for a line at tier-local `addr` issued at
    /// cycle `at`, counting nothing (`Tier::occupy`); returns its completion cycle.
    pub(crate) fn epochs_occupy(&mut self, t: TierId, addr: u64, write: bool, at: u64) -> u64 {
        self.mem.tiers.get_mut(t).occupy(addr, write, at)
    }

    /// Another core's access to the line at physical `paddr` as a stand-in replays it
    /// (engine::epochs::stand_in): through the shared last-level cache and, on a miss,
    /// the banks and bus of the line's tier, issued at cycle `at`, counting nothing.
    /// A dirty line the fill evicts is written to its tier as a posted write. Returns
    /// the tier that served the line and its completion cycle, or `None` when the
    /// last level held it.
    pub(crate) fn epochs_replay(&mut self, paddr: u64, at: u64) -> Option<(TierId, u64)> {
        let (hit, victim) = self.mem.caches.touch_last(paddr >> 6);
        if let Some(line) = victim {
            let (t, local) = self.mem.tiers.local(line << 6);
            self.mem.tiers.get_mut(t).occupy(local, true, at);
        }
        if hit {
            return None;
        }
        let (t, local) = self.mem.tiers.local(paddr);
        Some((t, self.mem.tiers.get_mut(t).occupy(local, false, at)))
    }

    /// Starts recording the lines `core` brings to the last-level cache (a
    /// calibration's, for the stand-ins); `false` when the last level is not shared,
    /// where another core's lines cannot meet this one's and nothing is recorded.
    pub(crate) fn epochs_start_recording(&mut self, core: usize) -> bool {
        if self.cores.len() < 2 || !self.mem.caches.last_shared() {
            return false;
        }
        self.mem.caches.start_recording(core);
        true
    }

    /// The physical addresses of the lines recorded since
    /// [`Machine::epochs_start_recording`], in order.
    pub(crate) fn epochs_stop_recording(&mut self, core: usize) -> Vec<u64> {
        let mut lines = self.mem.caches.stop_recording(core);
        for l in &mut lines {
            *l <<= 6;
        }
        lines
    }

    /// Runs a chunk of epochs references on `core`: its clock and counters advance
    /// by what the chunk did, the tiers count its traffic, and its hazard clock moves.
    pub fn epochs_advance(&mut self, core: usize, k: &Chunk) {
        let c = &mut self.cores[core];
        let from = c.clock;
        c.clock += k.base_cycles + k.translation_cycles + k.stall_cycles;
        let s = &mut c.stats;
        s.references += k.refs;
        s.reads += k.reads;
        s.writes += k.writes;
        s.instructions += k.instructions;
        s.base_cycles += k.base_cycles;
        s.translation_cycles += k.translation_cycles;
        s.memory_stall_cycles += k.stall_cycles;
        s.tlb_l1_hits += k.tlb[0];
        s.tlb_l2_hits += k.tlb[1];
        s.tlb_misses += k.tlb[2];
        s.walk_cycles += k.walk_cycles;
        s.walk_references += k.walk_references;
        s.walk_memory_accesses += k.walk_memory_accesses;
        let to = c.clock;
        let tiers = self.mem.tiers.all().len();
        for (i, t) in k.tiers[..tiers].iter().enumerate() {
            self.mem.tiers.add_demand(TierId(i as u8), t.accesses, t.latency_cycles, t.writebacks, t.walk_reads, t.row_hits, t.queue_cycles);
        }
        self.mem.caches.add_estimated(&k.levels);
        self.mem.caches.add_writebacks(&k.level_writebacks);
        if let Some(e) = self.epochs.as_deref_mut() {
            e.advanced(core, from, to, k.refs as f64);
        }
    }

    /// A detailed window ran on `core` from cycle `from` to its clock: its hazard
    /// clock moves without references (the window's real references set bits for
    /// real).
    pub fn epochs_detailed(&mut self, core: usize, from: u64) {
        let to = self.cores[core].clock;
        if let Some(e) = self.epochs.as_deref_mut() {
            e.advanced(core, from, to, 0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(n: u64) -> Pages {
        Pages::new(&TenantSetup { universe: vec![10..10 + n], cores: vec![0], vm: false }, 2)
    }

    #[test]
    fn pages_are_indexed_across_ranges() {
        let p = Pages::new(&TenantSetup { universe: vec![10..13, 100..102], cores: vec![0], vm: false }, 2);
        assert_eq!(p.len(), 5);
        assert_eq!((p.index(9), p.index(10), p.index(12), p.index(13), p.index(100), p.index(101), p.index(102)), (None, Some(0), Some(2), None, Some(3), Some(4), None));
        assert_eq!((0..5).map(|i| p.vpn(i)).collect::<Vec<_>>(), [10, 11, 12, 100, 101]);
    }

    #[test]
    fn classes_are_the_visit_rate_in_powers_of_two_and_the_references_a_visit() {
        let parts = |refs, bursts, huge| class_parts(class_of(refs, bursts, huge));
        assert_eq!(parts(0.6, 0.6, false), (0, 0, 0));
        assert_eq!(parts(0.25, 0.25, false), (0, 0, 2));
        assert_eq!(parts(0.2, 0.2, false), (0, 0, 2));
        assert_eq!(parts(0.2, 0.05, false), (0, 1, 4), "four references a visit");
        assert_eq!(parts(0.64, 0.005, false), (0, 3, 7), "128 references a visit");
        assert_eq!(parts(1e-30, 1e-30, false), (0, 0, RATE_BUCKETS - 1));
        assert_eq!(class_of(0.0, 0.0, true), 2 * DENSITY_BUCKETS * RATE_BUCKETS - DENSITY_BUCKETS * RATE_BUCKETS + RATE_BUCKETS - 1);
        assert_eq!(parts(0.25, 0.25, true), (1, 0, 2));
    }

    /// A clock that made 1000 references between cycles 0 and 2000: 500 at cycle
    /// 1000, and 1500 at cycle 3000 at the same pace.
    #[test]
    fn the_hazard_clock_interpolates_and_extrapolates() {
        let mut e = EpochsState::new(&[TenantSetup { universe: vec![0..4], cores: vec![0, 1], vm: false }], 2, 2, 1, TlbShape::Split { small: 64.0, huge: 32.0 });
        e.advanced(0, 0, 2000, 1000.0);
        assert_eq!(e.hazard(0, 1000), 500.0);
        assert_eq!(e.hazard(0, 3000), 1500.0);
        e.advanced(1, 0, 1000, 100.0);
        assert_eq!(e.hazard(0, 1000), 600.0, "both cores of the tenant");
        // A detailed window: the clock moves, the count does not (core 1 goes on at
        // its pace: 100 + 0.1 × 3000).
        e.advanced(0, 2000, 5000, 0.0);
        assert_eq!(e.hazard(0, 4000), 1000.0 + 400.0);
    }

    /// 1000 pages of 2^-10 references each and 100 entries: T solves
    /// 1000 (1 − e^(−T/1024)) = 100, T = −1024 ln 0.9 = 107.9.
    #[test]
    fn the_characteristic_time_fills_the_tlb() {
        let t = EpochsState::characteristic_time(&[(1000.0, 1000.0 / 1024.0)], 100.0);
        assert!((t - 107.89).abs() < 0.01, "{t}");
        assert!(EpochsState::characteristic_time(&[(50.0, 1.0)], 100.0).is_infinite(), "everything fits");
    }

    /// A stretch of 1000 references on two pages: rates per reference, hazards folded
    /// at the switch, first touches queued at random times before the stretch's end
    /// for the page referenced (the other is not: its rate is 0).
    #[test]
    fn a_switch_sets_rates_and_queues_first_touches() {
        let mut e = EpochsState::new(&[TenantSetup { universe: vec![10..13], cores: vec![0], vm: false }], 1, 2, 7, TlbShape::Split { small: 64.0, huge: 32.0 });
        let s = Stretch {
            refs: 1000,
            instrs: 3000,
            dependent: 100,
            order: Order::Random,
            pages: vec![
                crate::workload::rates::PageLoad { vpn: 10, reads: 600.0, writes: 200.0, bursts: 100.0, write_bursts: 50.0 },
                crate::workload::rates::PageLoad { vpn: 12, reads: 200.0, writes: 0.0, bursts: 200.0, write_bursts: 0.0 },
            ],
        };
        let sw = e.switch(0, &s, 0.0);
        assert_eq!(sw.queued, 2);
        assert_eq!(sw.distance, 1.0, "nothing before");
        let p = &e.tenants[0];
        assert_eq!((p.reads[0], p.writes[0], p.bursts[0], p.write_bursts[0]), (0.6, 0.2, 0.1, 0.05));
        assert_eq!((p.instrs_per_ref, p.dependent_share), (3.0, 0.1));
        let unmapped = p.unmapped.iter().fold([0.0; 2], |a, x| [a[0] + x[0], a[1] + x[1]]);
        assert!((unmapped[0] - 0.8).abs() < 1e-6 && (unmapped[1] - 0.2).abs() < 1e-6, "nothing mapped yet: {unmapped:?}");
        // Both are touched within the stretch (rates 0.1 and 0.2 a reference: far
        // earlier than 1000 references, with near certainty for this seed).
        let mut touched = Vec::new();
        while let Some(vpn) = e.take_first_touch(0, 1000.0) {
            touched.push(vpn);
        }
        touched.sort();
        assert_eq!(touched, [10, 12]);
        // The same distribution again: distance 0; hazards folded: page 10 had
        // 0.1 × 500 bursts by the switch at 500.
        let sw = e.switch(0, &s, 500.0);
        assert!(sw.distance.abs() < 1e-9);
        assert!((e.tenants[0].pend_a[0] - 50.0).abs() < 1e-3);
        let (a, _) = e.tenants[0].hazards(0, 600.0);
        assert!((a - 60.0).abs() < 1e-3, "{a}");
        // Page 12 left out: its rates are cleared; shares 0.8 and 0.2 against 1 and
        // 0 are half of (0.2 + 0.2) apart.
        let only_10 = Stretch { pages: vec![crate::workload::rates::PageLoad { vpn: 10, reads: 1000.0, writes: 0.0, bursts: 10.0, write_bursts: 0.0 }], ..s };
        let sw = e.switch(0, &only_10, 700.0);
        assert!((sw.distance - 0.2).abs() < 1e-6, "{}", sw.distance);
        let p = &e.tenants[0];
        assert_eq!((p.reads[2], p.bursts[2], p.active.as_slice()), (0.0, 0.0, &[0u32][..]));
        assert!(p.share.iter().all(|&x| x == 0.0), "shares are cleared after a switch");
    }

    /// A VM of 1024 pages: pages 0–511 at guest-physical 512–1023, mapped huge in both
    /// dimensions (page 0 stands for the translation); pages 512–1023 at 0–511 with
    /// base pages. Page 3 (huge, not the representative) and 800 have faults pending,
    /// 600 a sticky Accessed flag; 0, 3 and 700 trap. A drop of the whole VM voids 3's
    /// and 800's faults, clears 600's flag, and redraws 700 and 0 in guest-physical
    /// order, visiting only the marked pages; two drops that split the range pass
    /// over every page and agree.
    #[test]
    fn a_whole_drop_visits_the_marked_pages_and_agrees_with_a_pass() {
        let vm = || {
            let mut p = Pages::new(&TenantSetup { universe: vec![10..1034], cores: vec![0], vm: true }, 2);
            for i in 0..1024 {
                let (gpfn, huge) = if i < 512 { (512 + i as u64, true) } else { (i as u64 - 512, false) };
                p.note_guest(i, gpfn, huge);
                p.flags[i] |= MAPPED | if huge { HUGE } else { 0 };
            }
            for i in [3, 800] {
                p.flags[i] |= PENDING;
                p.mark(i);
            }
            p.flags[600] |= STICKY_A;
            p.mark(600);
            p
        };
        let trapping = [700, 0, 3];
        let mut whole = vm();
        assert_eq!(whole.drop_translations(0, u64::MAX >> 13, &trapping), [700, 0]);
        assert!(whole.marked.is_empty() && whole.flags.iter().all(|f| f & MARKED == 0));
        assert_eq!((whole.generation[3], whole.generation[800], whole.generation[700], whole.generation[0]), (1, 1, 0, 0));
        assert_eq!((whole.flags[3] & PENDING, whole.flags[800] & PENDING, whole.flags[600] & STICKY_A), (0, 0, 0));
        let mut split = vm();
        let mut redraw = split.drop_translations(0, 300, &trapping);
        redraw.extend(split.drop_translations(300, 2000, &trapping));
        assert_eq!(redraw, [700, 0]);
        let unmarked = |p: &Pages| p.flags.iter().map(|f| f & !MARKED).collect::<Vec<_>>();
        assert_eq!(unmarked(&split), unmarked(&whole));
        assert_eq!(split.generation, whole.generation);
        // A process's pages: the whole range and a pass agree as well.
        let process = || {
            let mut p = pages(600);
            for i in 0..600 {
                p.flags[i] |= MAPPED;
            }
            p.flags[5] |= PENDING;
            p.mark(5);
            p
        };
        let (mut a, mut b) = (process(), process());
        assert_eq!(a.drop_translations(0, 1 << 40, &[9]), [9]);
        assert_eq!(b.drop_translations(10, 300, &[9]), [9]);
        assert_eq!(b.drop_translations(310, 300, &[9]), Vec::<usize>::new());
        assert_eq!((a.generation[5], b.generation[5]), (1, 1));
    }

    /// A trapping page whose faults were drawn at its full rate (after an earlier drop)
    /// keeps them through a drop, and stays marked; one drawn at a cached
    /// translation's rate (after a fault) is drawn again, and so is one whose rates
    /// changed since. Before, every drop redrew every trapping page and left the old
    /// events void in the heaps: HMM-V on hotspot 1 GiB, 10 s took 29 s and 306 MB,
    /// 4.5 s and 83 MB after.
    #[test]
    fn a_drop_keeps_the_events_drawn_at_the_full_rate() {
        let mut p = pages(600);
        for i in 0..600 {
            p.flags[i] |= MAPPED;
        }
        // 7: drawn at its full rate; 8: drawn after a fault; 9: full, then its rates
        // changed (the flag goes with them).
        for (i, full) in [(7, true), (8, false), (9, true)] {
            p.flags[i] |= PENDING | if full { FULL } else { 0 };
            p.mark(i);
        }
        p.flags[9] &= !FULL;
        assert_eq!(p.drop_translations(0, 1 << 40, &[7, 8, 9]), [8, 9]);
        assert_eq!((p.generation[7], p.generation[8], p.generation[9]), (0, 0, 0));
        assert!(p.flags[7] & (PENDING | FULL | MARKED) == PENDING | FULL | MARKED && p.marked == [7]);
        // A partial drop likewise (pages 15–24: indexes 5–14).
        assert_eq!(p.drop_translations(15, 10, &[7, 8]), [8]);
        // A page that no longer traps has its events voided, full or not.
        assert_eq!(p.drop_translations(0, 1 << 40, &[]), Vec::<usize>::new());
        assert_eq!((p.generation[7], p.flags[7] & (PENDING | FULL)), (1, 0));
    }

    /// Walker's table draws each index in proportion to its weight: weights 3, 1, 0,
    /// 4 over 80 000 draws give 30 000, 10 000, 0 and 40 000, each within four
    /// standard deviations.
    #[test]
    fn the_alias_table_draws_in_proportion_to_the_weights() {
        let a = Alias::new(&[3.0, 1.0, 0.0, 4.0]).unwrap();
        let mut rng = Rng::new(3);
        let mut n = [0u64; 4];
        for _ in 0..80_000 {
            n[a.draw(&mut rng)] += 1;
        }
        for (got, p) in n.iter().zip([3.0 / 8.0, 1.0 / 8.0, 0.0, 4.0f64 / 8.0]) {
            let sd = (80_000.0 * p * (1.0 - p)).sqrt();
            assert!((*got as f64 - 80_000.0 * p).abs() <= 4.0 * sd, "{n:?}");
        }
        assert!(Alias::new(&[0.0, 0.0]).is_none() && Alias::new(&[]).is_none());
    }

    /// One core's tenant of pages 10 and 11, of which page 11 alone is referenced: a
    /// burst every 500 references (two references each), on TLBs whose characteristic
    /// time is 1000 references.
    fn one_bursty_page(seed: u64) -> EpochsState {
        let mut e = EpochsState::new(&[TenantSetup { universe: vec![10..12], cores: vec![0], vm: false }], 1, 2, seed, TlbShape::Split { small: 64.0, huge: 32.0 });
        let s = Stretch {
            refs: 1_000_000,
            instrs: 1_000_000,
            dependent: 0,
            order: Order::Random,
            pages: vec![crate::workload::rates::PageLoad { vpn: 11, reads: 4000.0, writes: 0.0, bursts: 2000.0, write_bursts: 0.0 }],
        };
        e.switch(0, &s, 0.0);
        e.tenants[0].tlb_time = [1000.0, 1000.0];
        e
    }

    /// A poisoned page's fault: with its translation gone from every TLB, at the
    /// page's next burst (β = 1/500 a reference: the mean wait is 500 references);
    /// with it cached on the core, at its next burst that misses the TLB (T = 1000:
    /// rate β e^(−βT), a mean wait of 500 e² = 3695). 20 000 draws each, the means
    /// within four standard errors (the wait is exponential: its deviation is its
    /// mean).
    #[test]
    fn fault_waits_are_exponential_at_the_rate_of_bursts_that_miss_the_tlb() {
        let mut e = one_bursty_page(5);
        for (cached, mean) in [(None, 500.0), (Some(0), 500.0 * 2f64.exp())] {
            let n = 20_000;
            let mut sum = 0.0;
            for _ in 0..n {
                e.schedule(0, 1, cached.map(|core| AfterFault { core, at: e.core_refs(0), repeat: false }));
                let at = e.next_event(0).unwrap();
                assert_eq!(e.take_event(0, f64::MAX), Some((1, at)));
                sum += at - e.core_refs(0);
            }
            let got = sum / n as f64;
            assert!((got - mean).abs() <= 4.0 * mean / (n as f64).sqrt(), "cached {cached:?}: mean wait {got:.1}, expected {mean:.1}");
        }
        // A page with no bursts never faults; a cancelled fault is not taken.
        e.schedule(0, 0, None);
        assert_eq!(e.next_event(0), None);
        e.schedule(0, 1, None);
        e.cancel(0, 1);
        assert_eq!(e.take_event(0, f64::MAX), None);
    }

    /// A page that stays poisoned faults again at the rate of its bursts that miss the
    /// TLB: β = 1/500, T = 1000, one repeat per 500 e² = 3695 references. Taken in
    /// bulk at the end of a window of 10⁶ references, each drawn from the one before,
    /// the repeats number 270.7 on average (a Poisson count): over 200 windows,
    /// within four standard deviations of 54 134. None of them ends a chunk
    /// (`next_event` does not see them), and with batching off each one does.
    #[test]
    fn repeated_faults_are_a_poisson_count_taken_at_the_chunks_end() {
        let mut e = one_bursty_page(9);
        let window = 1e6;
        let mut taken = 0u64;
        for w in 0..200 {
            let start = w as f64 * window;
            e.clocks[0].r1 = start;
            e.schedule(0, 1, Some(AfterFault { core: 0, at: start, repeat: true }));
            assert_eq!(e.next_event(0), None, "a repeat must not end a chunk");
            let end = start + window;
            while let Some((i, at)) = e.take_event(0, end) {
                assert!(i == 1 && at >= start && at <= end);
                taken += 1;
                e.schedule(0, 1, Some(AfterFault { core: 0, at, repeat: true }));
            }
            e.cancel(0, 1);
        }
        let mean = 200.0 * window / (500.0 * 2f64.exp());
        assert!((taken as f64 - mean).abs() <= 4.0 * mean.sqrt(), "{taken} repeats, expected {mean:.0}");
        e.batch_faults = false;
        e.schedule(0, 1, Some(AfterFault { core: 0, at: e.core_refs(0), repeat: true }));
        assert!(e.next_event(0).is_some(), "unbatched, a repeat ends a chunk");
    }

}
