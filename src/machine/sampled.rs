//! Sampled mode's cost model: what a fast-forward reference costs, fitted per core on
//! the preceding detailed window.
//!
//! A sampled run alternates, per core, detailed windows (the full model) with
//! fast-forward windows. In a fast-forward window everything a page-management policy
//! can observe stays exact — TLB contents, hits and misses, page walks and the
//! Accessed/Dirty bits they set, first-touch, poison and hinting faults, traps of
//! moving pages, every mechanism and its cost — but the caches are not simulated.
//! The time of each cache-hierarchy access comes from this model instead:
//!
//! - a **data reference** of class (tier of its frame, read or write, recent or not)
//!   costs the mean latency beyond an L1 hit that the class showed in the fitting
//!   window (then goes through the same 1/MLP scaling as a detailed reference).
//!   "Recent" is the answer of a [`RecencyFilter`] kept in every mode but plain
//!   detailed: a direct-mapped array of as many lines as the LLC, which says whether
//!   the line was referenced lately. It is a functional stand-in for the caches that
//!   costs one host load and store, and it is what lets the model follow a working
//!   set that moves (a phase, the start of a run, pages moving): a reference to a line
//!   just seen is priced and sent to memory as the recent references of its class
//!   were, one to a line not seen as those were;
//! - a **page-walk reference** (and a Dirty-bit update of a PTE) costs the mean latency
//!   of walk references in the fitting window.
//!
//! The memory side stays real in expectation: a data reference reaches its tier with
//! the probability of an LLC miss its class showed (a deterministic fixed-point
//! accumulator, not a random draw), and a line that a fast-forward write dirtied is
//! written back to its tier when the recency filter evicts it, as the LLC would. Those
//! accesses go through the tier's channels and banks, so the demand counts (fast-tier
//! share), energy, wear and the bandwidth that mechanisms compete for stay faithful.
//! Which lines miss is not known in fast-forward, though, and the thinned stream has
//! other row-buffer and bank locality than the real misses: the latency a
//! fast-forward demand access adds to the tier's AMAT is therefore the class's mean
//! memory latency in the fitting window — the same figure its time was charged from —
//! not the latency the bank model gave it. Cache hit and miss counts of the skipped
//! lookups are added from the fitted per-level distribution when a window ends
//! ([`CostModel::estimated_levels`]).
//!
//! Every mean is kept in 16-bit fixed point and every probability in 32-bit fixed
//! point, with remainders carried from reference to reference, so a sampled run is as
//! deterministic as a detailed one.
//!
//! Page-granular fast-forward ([`PAGE`], `engine.sampled.fast_forward = "page"`,
//! docs/sampled.md) also skips the TLBs, the walks' references and the tiers: a
//! per-core reach array (module `super::tlb`) says whether a page's translation is
//! probably cached, a miss of it walks the page table on the host (bits, faults,
//! traps), and the translation's time and the TLB and walk counts come from the
//! fitting window per reach class ([`Translations`]); memory's traffic is counted per
//! window ([`CostModel::window_traffic`]).
//!
//! The detailed window starts with a warm-up share run in full but not fitted on: the
//! caches went stale during fast-forward and are re-warmed before they are measured.
//! The model's error is estimated in every fitting window by predicting the window
//! with the previous fit ([`CostModel::end_fit`]).

/// The full model, no recording (runs that are not sampled).
pub const DETAILED: u8 = 0;
/// The full model, recording what the cost model is fitted on.
pub const FIT: u8 = 1;
/// Fast-forward: caches skipped, costs from the fitted model.
pub const FAST: u8 = 2;
/// The full model re-warming the caches, keeping the recency filter current.
pub const WARM: u8 = 3;
/// Fast-forward at page granularity (`engine.sampled.fast_forward = "page"`): as
/// [`FAST`] for the data, but translation through the TLB's reach arrays (module
/// `super::tlb`) instead of the TLBs, walks only on their misses, translation time and
/// TLB counts from the fitted model.
pub const PAGE: u8 = 4;
/// Epochs mode's calibrations: the full model, as [`DETAILED`], and each access that
/// reaches the last-level cache (data and page walks) noted for the calibrating
/// core's stand-in (`Caches::record`, module `engine::epochs::stand_in`). A mode of
/// its own so that no other access pays the test.
pub const CALIBRATE: u8 = 5;

/// Whether mode `m` fast-forwards (the caches skipped).
#[inline(always)]
pub const fn fast(m: u8) -> bool {
    m == FAST || m == PAGE
}

/// Fixed point of means (cycles).
const MEAN_BITS: u32 = 16;
/// Fixed point of probabilities.
const P_BITS: u32 = 32;
const P_ONE: u64 = 1 << P_BITS;
/// Most cache levels plus memory the per-level counts hold.
pub const MAX_LEVELS: usize = 6;
/// Fewest references of a class in a window for its fit to replace the previous one.
const MIN_SAMPLES: u64 = 32;

/// Whether a data line was referenced lately, and which lines fast-forward wrote: one
/// line per slot of a direct-mapped array with as many slots as the last-level cache
/// has lines. The slot is the line's low bits XOR-ed with the bits above them, so that
/// arrays a multiple of the array's size apart do not evict each other on every
/// reference, and the tag (the bits above) gives the line back. Four bytes a slot keep
/// the array small for the host's caches (512 KiB for an 8 MiB LLC): it is loaded on
/// every reference. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct RecencyFilter {
    /// The line's bits above the slot bits + 1 (0 = empty), with [`FF_DIRTY`] set when
    /// a fast-forward write dirtied it.
    slots: Vec<u32>,
    bits: u32,
}

/// Slot flag: written by a fast-forward reference, so that no cache holds the write
/// and the filter must write it back when it evicts it.
const FF_DIRTY: u32 = 1 << 31;

impl RecencyFilter {
    /// A filter of at least `lines` slots (a power of two).
    pub fn new(lines: u64) -> RecencyFilter {
        let bits = lines.max(2).next_power_of_two().trailing_zeros();
        RecencyFilter { slots: vec![0; 1 << bits], bits }
    }

    /// Records a reference to the line holding `paddr` (below 2^(37 + slot bits)), a
    /// write of fast-forward when `ff_write`. Returns whether the filter held the line,
    /// and the line (its address) that fast-forward had dirtied and this reference
    /// evicted, to be written back.
    #[inline(always)]
    pub fn touch(&mut self, paddr: u64, ff_write: bool) -> (bool, Option<u64>) {
        let line = paddr >> 6;
        let mask = (1u64 << self.bits) - 1;
        let high = line >> self.bits;
        let slot = ((line ^ high) & mask) as usize;
        let tag = high as u32 + 1;
        let old = self.slots[slot];
        let seen = old & !FF_DIRTY == tag;
        let evicted = (!seen && old & FF_DIRTY != 0).then(|| {
            let old_high = ((old & !FF_DIRTY) - 1) as u64;
            ((old_high << self.bits) | ((slot as u64 ^ old_high) & mask)) << 6
        });
        let keep_dirty = if seen { old & FF_DIRTY } else { 0 };
        self.slots[slot] = tag | keep_dirty | if ff_write { FF_DIRTY } else { 0 };
        (seen, evicted)
    }
}

/// What a fitting window saw of one class of references.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    refs: u64,
    /// Latency beyond an L1 hit (data) or whole latency (walk), summed.
    cycles: u64,
    /// References by the level that served them (the number of levels = memory).
    levels: [u64; MAX_LEVELS],
    /// Memory's latency (the tier's, queueing included) of the references memory
    /// served, summed.
    memory_cycles: u64,
}

/// The fitted cost of one class, and the fast-forward remainders carried with it.
#[derive(Clone, Copy, Debug, Default)]
struct Fit {
    fitted: bool,
    /// Mean cycles, fixed point.
    mean: u64,
    /// Probability of reaching memory, fixed point.
    p_memory: u64,
    /// Mean latency of memory for the references it serves, fixed point.
    memory_mean: u64,
    /// Share of references served by each level, fixed point.
    levels: [u64; MAX_LEVELS],
    /// Carried remainders.
    mean_rem: u64,
    memory_rem: u64,
    memory_mean_rem: u64,
}

impl Fit {
    /// The fit of what a window saw of a class, `depth` the level index of memory.
    fn from(s: &Sums, depth: usize) -> Fit {
        let n = s.refs.max(1) as u128;
        let p = |x: u64| ((x as u128 * P_ONE as u128) / n) as u64;
        let mut levels = [0; MAX_LEVELS];
        for (l, &c) in levels.iter_mut().zip(&s.levels) {
            *l = p(c);
        }
        Fit {
            fitted: true,
            mean: (((s.cycles as u128) << MEAN_BITS) / n) as u64,
            p_memory: levels[depth],
            memory_mean: ((s.memory_cycles as u128) << MEAN_BITS).checked_div(s.levels[depth] as u128).unwrap_or(0) as u64,
            levels,
            mean_rem: 0,
            memory_rem: 0,
            memory_mean_rem: 0,
        }
    }

    /// The next value of a fixed-point `mean`, its remainder carried in `rem`.
    #[inline]
    fn next(mean: u64, rem: &mut u64) -> u64 {
        let x = mean + *rem;
        *rem = x & ((1 << MEAN_BITS) - 1);
        x >> MEAN_BITS
    }

    /// The next reference's cycles (the mean, remainders carried).
    #[inline]
    fn cycles(&mut self) -> u64 {
        Self::next(self.mean, &mut self.mean_rem)
    }

    /// Whether the next reference is one that reaches memory.
    #[inline]
    fn reaches_memory(&mut self) -> bool {
        self.memory_rem += self.p_memory;
        let hit = self.memory_rem >= P_ONE;
        self.memory_rem -= if hit { P_ONE } else { 0 };
        hit
    }
}

/// What the translations of a class of references did, in a fitting window, or in
/// estimates of a page-granular fast-forward window (the TLB counts of the report).
/// The classes are whether the core's reach arrays held the page's translation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Translations {
    pub refs: u64,
    /// Translation cycles but those of faults (charged exactly in fast-forward).
    pub cycles: u64,
    pub l1_hits: u64,
    pub l2_hits: u64,
    pub misses: u64,
    pub walk_references: u64,
    pub walk_memory_accesses: u64,
    /// Walk cycles but those of first-touch faults.
    pub walk_cycles: u64,
}

impl Translations {
    /// These counts scaled from `self.refs` to `n` references, rounded to nearest.
    fn scaled(&self, n: u64) -> Translations {
        let d = self.refs.max(1) as u128;
        let s = |x: u64| ((x as u128 * n as u128 + d / 2) / d) as u64;
        Translations {
            refs: n,
            cycles: s(self.cycles),
            l1_hits: s(self.l1_hits),
            l2_hits: s(self.l2_hits),
            misses: s(self.misses),
            walk_references: s(self.walk_references),
            walk_memory_accesses: s(self.walk_memory_accesses),
            walk_cycles: s(self.walk_cycles),
        }
    }

    fn add(&mut self, o: &Translations) {
        self.refs += o.refs;
        self.cycles += o.cycles;
        self.l1_hits += o.l1_hits;
        self.l2_hits += o.l2_hits;
        self.misses += o.misses;
        self.walk_references += o.walk_references;
        self.walk_memory_accesses += o.walk_memory_accesses;
        self.walk_cycles += o.walk_cycles;
    }
}

/// The fitted translation of one reach class (page-granular fast-forward): the
/// fitting window's counts and the mean cycles, with its remainder.
#[derive(Clone, Copy, Debug, Default)]
struct TranslationFit {
    fitted: bool,
    seen: Translations,
    /// Mean cycles, fixed point ([`MEAN_BITS`]).
    mean: u64,
    mean_rem: u64,
}

impl TranslationFit {
    fn from(t: &Translations) -> TranslationFit {
        let n = t.refs.max(1) as u128;
        TranslationFit { fitted: true, seen: *t, mean: (((t.cycles as u128) << MEAN_BITS) / n) as u64, mean_rem: 0 }
    }
}

/// What one tier served, as its counters say: for page-granular fast-forward, whose
/// memory traffic is counted per window (`Tiers::add_demand`) from what the fitting
/// window's references made the tier do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierTraffic {
    /// Lines read (demand data, walk references) and written (write-backs).
    pub reads: u64,
    pub writes: u64,
    /// Of the reads, the demand accesses of data.
    pub demand: u64,
    pub row_hits: u64,
    pub queue_cycles: u64,
}

impl TierTraffic {
    /// What happened between `before` and `self`.
    #[inline]
    pub fn since(&self, before: &TierTraffic) -> TierTraffic {
        TierTraffic {
            reads: self.reads - before.reads,
            writes: self.writes - before.writes,
            demand: self.demand - before.demand,
            row_hits: self.row_hits - before.row_hits,
            queue_cycles: self.queue_cycles - before.queue_cycles,
        }
    }

    fn add(&mut self, o: &TierTraffic) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.demand += o.demand;
        self.row_hits += o.row_hits;
        self.queue_cycles += o.queue_cycles;
    }
}

/// A page-granular fast-forward window's traffic for one tier, to be counted
/// (`Tiers::add_demand`): the demand accesses the model sent there and their fitted
/// latency, the write-backs of lines fast-forward dirtied, the walk reads at the
/// fitting window's rate, and the row hits and queueing it showed per access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowTraffic {
    pub accesses: u64,
    pub latency_cycles: u64,
    pub walk_reads: u64,
    pub writebacks: u64,
    pub row_hits: u64,
    pub queue_cycles: u64,
}

/// One core's cost model: fitting sums and fits per data class (tier × read/write ×
/// recent) and for walk references; for page-granular fast-forward, per reach class
/// (the reach arrays held the translation or not) for translations.
#[derive(Clone, Debug)]
pub struct CostModel {
    depth: usize,
    data_sums: Vec<Sums>,
    data_fits: Vec<Fit>,
    walk_sums: Sums,
    walk_fit: Fit,
    /// Translations of the fitting window, by reach class (miss, hit), their fits,
    /// and the fast-forward references of each class since the last estimate.
    translation_sums: [Translations; 2],
    translation_fits: [TranslationFit; 2],
    translation_skipped: [u64; 2],
    /// Per tier, what the fitting window's references made it do, and what the last
    /// fit with enough references saw, with the references they were counted over.
    traffic_sums: Vec<TierTraffic>,
    traffic_refs: u64,
    traffic_fit: Vec<TierTraffic>,
    traffic_fit_refs: u64,
    /// Per tier, the demand accesses page-granular fast-forward sent there since the
    /// last count, their fitted latency, and the write-backs of lines it dirtied; and
    /// its references.
    ff_demand: Vec<(u64, u64, u64)>,
    ff_refs: u64,
    /// References of each data class, and walk references, fast-forwarded since the
    /// cache counts were last estimated.
    data_skipped: Vec<u64>,
    walk_skipped: u64,
    /// Predicted and measured stall cycles of the current fitting window (the
    /// prediction from the previous fit), and the core's clock when it started.
    predicted: u64,
    measured: u64,
    window_start: u64,
    /// Relative errors of the windows predicted so far.
    pub errors: Vec<f64>,
}

impl CostModel {
    /// A model for `tiers` tiers behind a `depth`-level cache hierarchy.
    pub fn new(tiers: usize, depth: usize) -> CostModel {
        assert!(depth < MAX_LEVELS, "at most {} cache levels", MAX_LEVELS - 1);
        CostModel {
            depth,
            data_sums: vec![Sums::default(); tiers * 4],
            data_fits: vec![Fit::default(); tiers * 4],
            walk_sums: Sums::default(),
            walk_fit: Fit::default(),
            translation_sums: [Translations::default(); 2],
            translation_fits: [TranslationFit::default(); 2],
            translation_skipped: [0; 2],
            traffic_sums: vec![TierTraffic::default(); tiers],
            traffic_refs: 0,
            traffic_fit: vec![TierTraffic::default(); tiers],
            traffic_fit_refs: 0,
            ff_demand: vec![(0, 0, 0); tiers],
            ff_refs: 0,
            data_skipped: vec![0; tiers * 4],
            walk_skipped: 0,
            predicted: 0,
            measured: 0,
            window_start: 0,
            errors: Vec::new(),
        }
    }

    /// The class of a data reference: its tier, its direction, and whether the
    /// recency filter had seen its line.
    #[inline]
    fn class(tier: usize, write: bool, recent: bool) -> usize {
        (tier * 2 + write as usize) * 2 + recent as usize
    }

    /// Starts a fitting window at cycle `clock` of its core.
    pub fn begin_fit(&mut self, clock: u64) {
        self.data_sums.iter_mut().for_each(|s| *s = Sums::default());
        self.walk_sums = Sums::default();
        self.translation_sums = [Translations::default(); 2];
        self.traffic_sums.iter_mut().for_each(|t| *t = TierTraffic::default());
        self.traffic_refs = 0;
        self.predicted = 0;
        self.measured = 0;
        self.window_start = clock;
    }

    /// Records a detailed data reference of the fitting window: its class, the level
    /// that served it, its latency beyond an L1 hit, and the stall it cost the core
    /// (`stall`) against the one the previous fit predicts for it (`predicted`).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record_data(&mut self, tier: usize, write: bool, recent: bool, level: usize, beyond_l1: u64, memory: u64, stall: u64, predicted: u64) {
        let s = &mut self.data_sums[Self::class(tier, write, recent)];
        s.refs += 1;
        s.cycles += beyond_l1;
        s.levels[level.min(MAX_LEVELS - 1)] += 1;
        s.memory_cycles += memory;
        self.measured += stall;
        self.predicted += predicted;
    }

    /// Records the translation of a detailed reference of the fitting window whose
    /// translation the reach arrays held (`hit`) or not: `t` holds its counts (`refs`
    /// is 1).
    #[inline]
    pub fn record_translation(&mut self, hit: bool, t: &Translations) {
        self.translation_sums[hit as usize].add(t);
    }

    /// Records what a detailed reference of the fitting window made tier `tier` do
    /// (`t`); [`CostModel::record_traffic_ref`] counts the reference once.
    #[inline]
    pub fn record_traffic(&mut self, tier: usize, t: &TierTraffic) {
        self.traffic_sums[tier].add(t);
    }

    /// Counts one reference of the fitting window for [`CostModel::record_traffic`].
    #[inline]
    pub fn record_traffic_ref(&mut self) {
        self.traffic_refs += 1;
    }

    /// Records a detailed page-walk reference (or PTE update) of the fitting window.
    #[inline]
    pub fn record_walk(&mut self, level: usize, latency: u64) {
        let s = &mut self.walk_sums;
        s.refs += 1;
        s.cycles += latency;
        s.levels[level.min(MAX_LEVELS - 1)] += 1;
        self.measured += latency;
        self.predicted += self.walk_fit.mean >> MEAN_BITS;
    }

    /// The previous fit's estimate of a data reference's latency beyond an L1 hit
    /// (no remainder carried; for the error estimate).
    #[inline]
    pub fn predict_data(&self, tier: usize, write: bool, recent: bool) -> u64 {
        self.data_fits[Self::class(tier, write, recent)].mean >> MEAN_BITS
    }

    /// Whether the model has a fit to predict with.
    pub fn fitted(&self) -> bool {
        self.walk_fit.fitted || self.data_fits.iter().any(|f| f.fitted)
    }

    /// Ends a fitting window at cycle `clock`: classes with enough references get new
    /// fits (the others keep theirs; a class never seen borrows from the nearest fitted
    /// class), and the window's error is recorded when there
    /// was a previous fit to predict it with: (predicted − measured) stall cycles over
    /// the window's cycles.
    pub fn end_fit(&mut self, clock: u64) {
        let had_fit = self.fitted();
        let cycles = clock.saturating_sub(self.window_start);
        if had_fit && cycles > 0 {
            self.errors.push((self.predicted as f64 - self.measured as f64) / cycles as f64);
        }
        let depth = self.depth;
        for (f, s) in self.data_fits.iter_mut().zip(&self.data_sums) {
            if s.refs >= MIN_SAMPLES || (!f.fitted && s.refs > 0) {
                *f = Fit::from(s, depth);
            }
        }
        if self.walk_sums.refs >= MIN_SAMPLES || (!self.walk_fit.fitted && self.walk_sums.refs > 0) {
            self.walk_fit = Fit::from(&self.walk_sums, depth);
        }
        for h in 0..2 {
            let t = &self.translation_sums[h];
            if t.refs >= MIN_SAMPLES || (!self.translation_fits[h].fitted && t.refs > 0) {
                self.translation_fits[h] = TranslationFit::from(t);
            }
        }
        // A reach class never seen takes the other's fit.
        for h in 0..2 {
            if !self.translation_fits[h].fitted && self.translation_fits[1 - h].fitted {
                self.translation_fits[h] = TranslationFit { fitted: false, mean_rem: 0, ..self.translation_fits[1 - h] };
            }
        }
        if self.traffic_refs >= MIN_SAMPLES || (self.traffic_fit_refs == 0 && self.traffic_refs > 0) {
            self.traffic_fit.clone_from(&self.traffic_sums);
            self.traffic_fit_refs = self.traffic_refs;
        }
        // A class never seen borrows from the nearest fitted class: the same recency
        // above all (a line just referenced costs what such lines cost), then the
        // same tier, then the same direction.
        for i in 0..self.data_fits.len() {
            if !self.data_fits[i].fitted {
                let distance = |j: usize| ((i ^ j) & 1 != 0, i >> 2 != j >> 2, (i ^ j) & 2 != 0, j);
                let donor = (0..self.data_fits.len()).filter(|&j| self.data_fits[j].fitted).min_by_key(|&j| distance(j));
                if let Some(j) = donor {
                    self.data_fits[i] = Fit { fitted: false, mean_rem: 0, memory_rem: 0, memory_mean_rem: 0, ..self.data_fits[j] };
                }
            }
        }
    }

    /// A fast-forward data reference of `tier`: its latency beyond an L1 hit, and,
    /// when it reaches memory, the latency memory is reported to have taken (the
    /// class's mean in the fitting window, which is what its time is charged from).
    #[inline(always)]
    pub fn data(&mut self, tier: usize, write: bool, recent: bool) -> (u64, Option<u64>) {
        let c = Self::class(tier, write, recent);
        self.data_skipped[c] += 1;
        let f = &mut self.data_fits[c];
        let cycles = f.cycles();
        let memory = f.reaches_memory().then(|| Fit::next(f.memory_mean, &mut f.memory_mean_rem));
        (cycles, memory)
    }

    /// The translation of a page-granular fast-forward reference whose translation
    /// the reach arrays held (`hit`) or not: its cycles (the class's mean, faults
    /// apart), and how many walk references of it reach memory (the class's rate,
    /// remainders carried).
    #[inline(always)]
    pub fn translation(&mut self, hit: bool) -> u64 {
        self.translation_skipped[hit as usize] += 1;
        let f = &mut self.translation_fits[hit as usize];
        Fit::next(f.mean, &mut f.mean_rem)
    }

    /// A page-granular fast-forward data reference of `tier`: as [`CostModel::data`],
    /// but a demand access it sends to memory is counted for
    /// [`CostModel::window_traffic`], not issued.
    #[inline(always)]
    pub fn page_data(&mut self, tier: usize, write: bool, recent: bool) -> (u64, bool) {
        self.ff_refs += 1;
        let (cycles, memory) = self.data(tier, write, recent);
        if let Some(latency) = memory {
            let d = &mut self.ff_demand[tier];
            d.0 += 1;
            d.1 += latency;
        }
        (cycles, memory.is_some())
    }

    /// A write-back to `tier` of a line page-granular fast-forward dirtied (the
    /// recency filter evicted it), counted for [`CostModel::window_traffic`].
    #[inline]
    pub fn page_writeback(&mut self, tier: usize) {
        self.ff_demand[tier].2 += 1;
    }

    /// The memory traffic of tier `tier` in page-granular fast-forward since the last
    /// call (the counts are reset once every tier was taken, by the caller taking
    /// tiers in order): its demand accesses as the model sent them and its
    /// write-backs as the recency filter evicted them, the walk reads at the fitting
    /// window's rate per reference, and the row hits and queueing at its rates per
    /// access.
    pub fn window_traffic(&mut self, tier: usize) -> WindowTraffic {
        let (accesses, latency_cycles, writebacks) = std::mem::take(&mut self.ff_demand[tier]);
        let f = &self.traffic_fit[tier];
        let refs = self.traffic_fit_refs.max(1) as u128;
        let per_ref = |x: u64| ((x as u128 * self.ff_refs as u128 + refs / 2) / refs) as u64;
        let walk_reads = per_ref(f.reads.saturating_sub(f.demand));
        let total = accesses + walk_reads + writebacks;
        let served = (f.reads + f.writes).max(1) as u128;
        let per_access = |x: u64| ((x as u128 * total as u128 + served / 2) / served) as u64;
        let out = WindowTraffic { accesses, latency_cycles, walk_reads, writebacks, row_hits: per_access(f.row_hits).min(total), queue_cycles: per_access(f.queue_cycles) };
        if tier + 1 == self.ff_demand.len() {
            self.ff_refs = 0;
        }
        out
    }

    /// The TLB and walk counts of the page-granular fast-forward references since the
    /// last call, estimated from each reach class's fit (the counts are reset); their
    /// walk references are added to the cache lookups [`CostModel::estimated_levels`]
    /// estimates next.
    pub fn estimated_translations(&mut self) -> Translations {
        let mut out = Translations::default();
        for h in 0..2 {
            let n = std::mem::take(&mut self.translation_skipped[h]);
            if n > 0 {
                out.add(&self.translation_fits[h].seen.scaled(n));
            }
        }
        self.walk_skipped += out.walk_references;
        out
    }

    /// A fast-forward walk reference: its latency, and whether it reached memory.
    #[inline]
    pub fn walk(&mut self) -> (u64, bool) {
        self.walk_skipped += 1;
        let f = &mut self.walk_fit;
        (f.cycles(), f.reaches_memory())
    }

    /// A fast-forward walk reference that bypasses the caches
    /// (`machine.page_table.walk_reads = "uncached"`): its latency, the mean of the
    /// walk references of the fitting window (all of which reached memory). Not
    /// counted among the skipped cache lookups, since it never looks the caches up.
    #[inline]
    pub fn uncached_walk(&mut self) -> u64 {
        self.walk_fit.cycles()
    }

    /// The cache lookups fast-forward skipped since the last call, as estimated hits
    /// per level (index < depth) from each class's fitted distribution; the counts are
    /// reset. Misses at level `l` are the references served beyond it.
    pub fn estimated_levels(&mut self) -> [u64; MAX_LEVELS] {
        let mut served = [0u128; MAX_LEVELS];
        let fits = self.data_fits.iter().zip(&self.data_skipped).chain(std::iter::once((&self.walk_fit, &self.walk_skipped)));
        for (f, &n) in fits {
            for (s, &p) in served.iter_mut().zip(&f.levels) {
                *s += n as u128 * p as u128;
            }
        }
        self.data_skipped.iter_mut().for_each(|n| *n = 0);
        self.walk_skipped = 0;
        let mut out = [0u64; MAX_LEVELS];
        for (o, s) in out.iter_mut().zip(served) {
            *o = ((s + (P_ONE as u128 >> 1)) >> P_BITS) as u64;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-slot filter: lines 0 and 3 share slot 0 (3 = 0b11: low bit 1 XOR high bits
    /// 1), lines 0 and 2 do not (2: low 0 XOR 1 = slot 1). A line fast-forward wrote is
    /// handed back, with its address, when another line evicts it; a line a detailed
    /// reference wrote is not (the caches hold that write).
    #[test]
    fn the_recency_filter_remembers_lines_and_ff_writes() {
        let mut f = RecencyFilter::new(2);
        assert_eq!(f.touch(0, false), (false, None));
        assert_eq!(f.touch(2 << 6, false), (false, None));
        assert_eq!(f.touch(8, true), (true, None), "line 0 kept, now dirtied by fast-forward");
        assert_eq!(f.touch(3 << 6, false), (false, Some(0)), "line 3 evicts the dirty line 0");
        assert_eq!(f.touch(2 << 6 | 4, false), (true, None), "line 2 untouched");
        assert_eq!(f.touch(0, false), (false, None), "line 3 was clean");
        assert_eq!(f.touch(5 << 6, true), (false, None), "line 5 (101: slot 1 ^ 0b10) replaces clean line 2");
        assert_eq!(f.touch(2 << 6, false), (false, Some(5 << 6)));
    }

    /// A fit of 4 reads of tier 0 — served by L1 (0 beyond), L2 (10), memory (100)
    /// and memory (110) — gives a mean of 55 cycles and reaching memory every other
    /// reference; fast-forward reproduces exactly that over 4 references.
    #[test]
    fn fast_forward_reproduces_the_fitted_means_and_rates() {
        let mut m = CostModel::new(2, 3);
        m.begin_fit(0);
        for (level, lat) in [(0, 0), (1, 10), (3, 100), (3, 110)] {
            m.record_data(0, false, true, level, lat, if level == 3 { lat - 30 } else { 0 }, lat, 0);
        }
        m.end_fit(1000);
        assert!(m.errors.is_empty(), "no previous fit, no error");
        let (mut cycles, mut memory) = (0, 0);
        for _ in 0..4 {
            let (c, mem) = m.data(0, false, true);
            cycles += c;
            memory += mem.map_or(0, |l| {
                assert_eq!(l, 75, "memory's mean latency, (70 + 80) / 2");
                1
            });
        }
        assert_eq!((cycles, memory), (220, 2));
        // Skipped: 4 references; L1 served 1, L2 1, memory 2.
        let est = m.estimated_levels();
        assert_eq!(&est[..4], &[1, 1, 0, 2]);
        assert_eq!(m.estimated_levels()[..4], [0, 0, 0, 0], "counts reset");
    }

    /// A class never seen borrows from the nearest fitted class, the same recency
    /// first: with tier 0's recent reads (L1 hits) and tier 1's writes that missed the
    /// filter (memory, 200 cycles) fitted, tier 1's recent reads cost what tier 0's do,
    /// and tier 0's reads that missed the filter what tier 1's writes do.
    #[test]
    fn unseen_classes_borrow_from_their_nearest_neighbour() {
        let mut m = CostModel::new(2, 3);
        m.begin_fit(0);
        for _ in 0..40 {
            m.record_data(1, true, false, 3, 200, 150, 200, 0);
            m.record_data(0, false, true, 0, 0, 0, 0, 0);
        }
        m.end_fit(10_000);
        assert_eq!(m.data(1, false, true), (0, None), "same recency, other tier");
        assert_eq!(m.data(1, true, true), (0, None), "same recency before same tier");
        assert_eq!(m.data(0, false, false), (200, Some(150)), "same recency, other tier");
    }

    /// The second window is predicted with the first window's fit: a mean of 50
    /// predicted against 60 measured over 10 references in 1000 cycles is −10 %.
    #[test]
    fn the_error_is_the_previous_fit_against_the_window() {
        let mut m = CostModel::new(1, 2);
        m.begin_fit(0);
        for _ in 0..40 {
            m.record_data(0, false, false, 2, 50, 20, 50, 0);
        }
        m.end_fit(4000);
        m.begin_fit(4000);
        for _ in 0..10 {
            let p = m.predict_data(0, false, false);
            m.record_data(0, false, false, 2, 60, 30, 60, p);
        }
        m.end_fit(5000);
        assert_eq!(m.errors.len(), 1);
        assert!((m.errors[0] + 0.1).abs() < 1e-12, "{}", m.errors[0]);
    }

    /// The translations of a fitting window by reach class price page-granular
    /// fast-forward and give its TLB counts: 40 references the reach array held, L1
    /// hits of 0 cycles, and 40 it did not, 30 L2 hits of 8 cycles and 10 misses with
    /// a walk of 4 references (one from memory) and 100 cycles. A miss-class reference
    /// then costs (30·8 + 10·100) / 40 = 31 cycles; 80 fast-forward references of each
    /// class give 80 L1 hits, 60 L2 hits, 20 misses, 80 walk references (20 from
    /// memory) and 2 000 walk cycles, and the 80 walk references are added to the cache
    /// lookups estimated next.
    #[test]
    fn page_granular_translations_follow_their_reach_class() {
        let mut m = CostModel::new(1, 3);
        m.begin_fit(0);
        let one = |cycles, l1_hits, l2_hits, misses, walk_references, walk_memory_accesses, walk_cycles| Translations {
            refs: 1,
            cycles,
            l1_hits,
            l2_hits,
            misses,
            walk_references,
            walk_memory_accesses,
            walk_cycles,
        };
        for i in 0..40 {
            m.record_translation(true, &one(0, 1, 0, 0, 0, 0, 0));
            let miss = i % 4 == 0;
            m.record_translation(false, &if miss { one(100, 0, 0, 1, 4, 1, 100) } else { one(8, 0, 1, 0, 0, 0, 0) });
        }
        m.end_fit(1000);
        let (mut hit, mut missed) = (0, 0);
        for _ in 0..80 {
            hit += m.translation(true);
            missed += m.translation(false);
        }
        assert_eq!((hit, missed), (0, 80 * 31));
        let t = m.estimated_translations();
        assert_eq!(t, Translations { refs: 160, cycles: 2480, l1_hits: 80, l2_hits: 60, misses: 20, walk_references: 80, walk_memory_accesses: 20, walk_cycles: 2000 });
        assert_eq!(m.estimated_translations().refs, 0, "counts reset");
    }

    /// A page-granular window's traffic for a tier: its own demand accesses and
    /// write-backs, walk reads at the fitting window's rate per reference, row hits
    /// and queueing at its rates per access. The fitting window: 100 reads of tier 0,
    /// a quarter of them from memory at 60 cycles; they made the tier read 30 lines, 25
    /// of them demand (so 5 walk reads), write 10, with 20 row hits and 400 queueing
    /// cycles over the 40 accesses. Fast-forward: 200 reads, so 50 demand accesses of
    /// 60 cycles; 5 write-backs; 10 walk reads; 65 accesses in all, so 65·20/40 = 32.5
    /// → 33 row hits (rounded half up) and 65·400/40 = 650 queueing cycles.
    #[test]
    fn page_granular_traffic_is_counted_per_window() {
        let mut m = CostModel::new(1, 3);
        m.begin_fit(0);
        m.record_traffic(0, &TierTraffic { reads: 30, writes: 10, demand: 25, row_hits: 20, queue_cycles: 400 });
        for i in 0..100 {
            m.record_traffic_ref();
            let memory = i % 4 == 0;
            m.record_data(0, false, false, if memory { 3 } else { 0 }, if memory { 100 } else { 0 }, if memory { 60 } else { 0 }, 0, 0);
        }
        m.end_fit(10_000);
        let memory: u64 = (0..200).map(|_| m.page_data(0, false, false).1 as u64).sum();
        assert_eq!(memory, 50);
        for _ in 0..5 {
            m.page_writeback(0);
        }
        let w = m.window_traffic(0);
        assert_eq!(w, WindowTraffic { accesses: 50, latency_cycles: 3000, walk_reads: 10, writebacks: 5, row_hits: 33, queue_cycles: 650 });
        assert_eq!(m.window_traffic(0), WindowTraffic::default(), "counts reset");
    }

    /// Fractional means carry their remainders: a mean of 2.5 cycles gives 5 cycles
    /// every 2 references, exactly.
    #[test]
    fn fractional_means_are_exact_over_many_references() {
        let mut m = CostModel::new(1, 1);
        m.begin_fit(0);
        for lat in [2, 3, 2, 3] {
            m.record_walk(0, lat);
        }
        m.end_fit(100);
        let total: u64 = (0..1000).map(|_| m.walk().0).sum();
        assert_eq!(total, 2500);
    }
}
