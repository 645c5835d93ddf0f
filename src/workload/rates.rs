//! What a tenant's references are at page granularity: the statement of its access
//! distribution that epochs mode runs on (module `engine::epochs`, docs/epochs.md).
//!
//! A tenant's stream is a sequence of [`Stretch`]es. Within a stretch the stream is
//! stationary at page granularity: every page it names has an expected number of
//! loads and stores, and of *bursts* — maximal runs of references to the page in
//! which consecutive ones are fewer than [`BURST_GAP`] references apart (a record
//! read in one go, a list swept, a vector written). Bursts are what keeps a stream's
//! clustering: epochs mode takes an Accessed bit as set by the first burst after it
//! was cleared, a hint or poison fault as taken by a burst's first reference, and a
//! TLB miss as only ever starting a burst — not by independent references, which
//! put `kv`'s hot set 2–5 points off (issue 36).
//!
//! A statement comes from one of two places:
//! - **stated**: the synthetic generators and `kv` compute their expected counts from
//!   their own definition (the Zipf law and the page permutation, the hot region of
//!   each phase, the store's layout and chains) in each generator's file, beside the
//!   code that draws the references, with tests that compare the two;
//! - **profiled** ([`Profile`]): the application workloads whose references follow
//!   from their data (graph searches, sparse products, blocked kernels, sweeps) and
//!   recorded traces are run once and counted per window of references; the windows
//!   are the stretches, repeated when the run is longer than the profile.
//!
//! A statement is per tenant: when several cores run one tenant's workload, each
//! draws its references from the same distribution (as the cores of one generator
//! configuration do), and the counts are those of all of them together.

use super::WorkloadConfig;
use crate::trace::{Access, Source};
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::ops::Range;

/// References between two to one page below which they belong to one burst. It is
/// the entry count of the smallest first-level TLB of the presets (Rainbow's 32
/// entries for 4 KiB pages): a page referenced again with fewer other references in
/// between still has its translation, so a TLB miss can only start a burst.
pub const BURST_GAP: u64 = 32;

/// Bytes of a base page: the granule of every statement.
const PAGE_BYTES: u64 = 4096;

/// One page's expected references over a stretch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PageLoad {
    /// Virtual page number (address / 4 KiB) in the tenant's address space.
    pub vpn: u64,
    pub reads: f32,
    pub writes: f32,
    /// Bursts (see the module documentation), and of them those with a store.
    pub bursts: f32,
    pub write_bursts: f32,
}

impl PageLoad {
    /// All references.
    pub fn refs(&self) -> f32 {
        self.reads + self.writes
    }
}

/// In which order the pages a stretch names are touched for the first time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// At random, each page at the time of its first burst.
    #[default]
    Random,
    /// In address order, evenly over the stretch (a fill, a sweep).
    Ascending,
}

/// A stationary stretch of a tenant's references.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stretch {
    /// References of the stretch (all the tenant's cores together).
    pub refs: u64,
    /// Non-memory instructions between them (the sum of `Access::instrs`).
    pub instrs: u64,
    /// References that are dependent loads (`Access::is_dependent`).
    pub dependent: u64,
    pub order: Order,
    /// The pages referenced, in increasing `vpn`, each once.
    pub pages: Vec<PageLoad>,
}

impl Stretch {
    /// Scales every count by `k` (a tenant of `k` cores running one generator's
    /// statement).
    pub(super) fn scale_by(&mut self, k: u64) {
        self.refs *= k;
        self.instrs *= k;
        self.dependent *= k;
        for p in &mut self.pages {
            p.reads *= k as f32;
            p.writes *= k as f32;
            p.bursts *= k as f32;
            p.write_bursts *= k as f32;
        }
    }
}

/// A tenant's stream as stretches.
pub trait AccessModel {
    /// Where the statement comes from, for the report.
    fn describe(&self) -> String;

    /// Every page a stretch may name, as increasing disjoint ranges of page numbers.
    fn universe(&self) -> Vec<Range<u64>>;

    /// Writes the next stretch into `out`; false when the references are exhausted.
    fn next(&mut self, out: &mut Stretch) -> Result<bool>;
}

/// The expected load of page `vpn` referenced with probability `p` per reference,
/// independently, over `refs` references of which a share `write_fraction` are
/// stores. A reference starts a burst when none of the previous [`BURST_GAP`] went to
/// the page, which happens with probability `(1 − p)^BURST_GAP`; a burst has a store
/// unless all its references are loads.
pub fn independent(vpn: u64, p: f64, write_fraction: f64, refs: u64) -> PageLoad {
    let n = p * refs as f64;
    let bursts = n * (1.0 - p).powf(BURST_GAP as f64);
    let per_burst = if bursts > 0.0 { n / bursts } else { 1.0 };
    let write_bursts = bursts * (1.0 - (1.0 - write_fraction).powf(per_burst));
    PageLoad { vpn, reads: (n * (1.0 - write_fraction)) as f32, writes: (n * write_fraction) as f32, bursts: bursts as f32, write_bursts: write_bursts as f32 }
}

/// A statement whose stretches are made one at a time: the phases of a synthetic
/// generator. `phase(i, out)` writes phase `i` of one core's stream.
pub(super) struct Phased<F> {
    pub what: String,
    pub universe: Vec<Range<u64>>,
    /// Phases of one core's stream, and the cores running it.
    pub phases: u32,
    pub cores: u64,
    pub phase: F,
    next: u32,
}

impl<F: FnMut(u32, &mut Stretch)> Phased<F> {
    pub fn new(what: String, universe: Vec<Range<u64>>, phases: u32, cores: u64, phase: F) -> Phased<F> {
        Phased { what, universe, phases, cores, phase, next: 0 }
    }
}

impl<F: FnMut(u32, &mut Stretch)> AccessModel for Phased<F> {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn universe(&self) -> Vec<Range<u64>> {
        self.universe.clone()
    }

    fn next(&mut self, out: &mut Stretch) -> Result<bool> {
        while self.next < self.phases {
            let i = self.next;
            self.next += 1;
            *out = Stretch::default();
            (self.phase)(i, out);
            if out.refs > 0 {
                out.scale_by(self.cores);
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A statement preceded by one store to each page of the footprint, in address order
/// (`workload.init`), by every core of the tenant.
struct Init {
    pages: Range<u64>,
    instrs: u32,
    cores: u64,
    done: bool,
    then: Box<dyn AccessModel>,
}

impl AccessModel for Init {
    fn describe(&self) -> String {
        format!("{}, after one store to each page in address order (workload.init)", self.then.describe())
    }

    fn universe(&self) -> Vec<Range<u64>> {
        merge_ranges(self.then.universe().into_iter().chain(std::iter::once(self.pages.clone())).collect())
    }

    fn next(&mut self, out: &mut Stretch) -> Result<bool> {
        if self.done {
            return self.then.next(out);
        }
        self.done = true;
        let k = self.cores as f32;
        let n = self.pages.end - self.pages.start;
        *out = Stretch {
            refs: n * self.cores,
            instrs: n * self.cores * self.instrs as u64,
            dependent: 0,
            order: Order::Ascending,
            pages: self.pages.clone().map(|vpn| PageLoad { vpn, reads: 0.0, writes: k, bursts: k, write_bursts: k }).collect(),
        };
        Ok(true)
    }
}

/// Sorts ranges and joins those that overlap or touch.
fn merge_ranges(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// How profiles of generators are taken (`engine.epochs`).
#[derive(Clone, Copy, Debug)]
pub struct ProfileOptions {
    /// References per window (per core of the generator).
    pub window_refs: u64,
    /// Most references profiled; the profile repeats beyond them.
    pub max_refs: u64,
}

/// The statement of one tenant's workload `cfg`, run by `cores` cores (each making
/// `cfg.refs` references).
pub fn model(cfg: &WorkloadConfig, tenant: u16, cores: u64, opts: &ProfileOptions) -> Result<Box<dyn AccessModel>> {
    cfg.validate()?;
    let stated: Option<Box<dyn AccessModel>> = match cfg.name.as_str() {
        "uniform" => Some(super::uniform::model(cfg, cores)),
        "gups" => Some(super::gups::model(cfg, cores)),
        "zipf" => Some(super::zipf::model(cfg, tenant, cores)),
        "hotspot" => Some(super::hotspot::model(cfg, tenant, cores)),
        "seqscan" => Some(super::seqscan::model(cfg, tenant, cores)),
        "chase" => Some(super::chase::model(cfg, cores)),
        "kv" => Some(super::kv::model(cfg, tenant, cores)?),
        "loaded-latency" => bail!(
            "workload loaded-latency: not in epochs mode, which prices time from page rates and cannot measure the probe's queueing under load; run it detailed"
        ),
        _ => None,
    };
    let model = match stated {
        Some(m) => m,
        None => {
            // Profiled: the generator of core 0 of the tenant, without `init`
            // (stated below like every other's).
            let plain = WorkloadConfig { init: false, ..cfg.clone() };
            let mut source = super::build(&plain, 0, tenant)?;
            let profile = Profile::record(source.as_mut(), opts.window_refs, opts.max_refs.min(cfg.refs), &format!("workload {}", cfg.name))?;
            Box::new(profile.replay(cfg.refs * cores, cores))
        }
    };
    if cfg.init {
        let pages = super::footprint_bytes(cfg)?.div_ceil(PAGE_BYTES);
        let first = cfg.base_vaddr / PAGE_BYTES;
        return Ok(Box::new(Init { pages: first..first + pages, instrs: cfg.instrs, cores, done: false, then: model }));
    }
    Ok(model)
}

/// A recorded stream counted per window of references: the statement of an
/// application workload or a trace (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// What was profiled.
    pub what: String,
    /// References per window (the last may be shorter).
    pub window_refs: u64,
    /// The windows, in order.
    pub windows: Vec<Stretch>,
    /// Whether the source ended before the profile's limit.
    pub complete: bool,
}

impl Profile {
    /// Counts the first `max_refs` references of `source` in windows of `window_refs`.
    pub fn record(source: &mut dyn Source, window_refs: u64, max_refs: u64, what: &str) -> Result<Profile> {
        if window_refs == 0 {
            bail!("engine.epochs.window_refs: must be at least 1");
        }
        let mut counter = Counter::default();
        let mut windows = Vec::new();
        let mut buf = Vec::with_capacity(4096);
        let mut seen = 0u64;
        let mut in_window = 0u64;
        let mut complete = false;
        while seen < max_refs {
            buf.clear();
            source.fill(&mut buf, 4096)?;
            if buf.is_empty() {
                complete = true;
                break;
            }
            let take = buf.len().min((max_refs - seen) as usize);
            for a in &buf[..take] {
                counter.add(a);
                in_window += 1;
                if in_window == window_refs {
                    windows.push(counter.take());
                    in_window = 0;
                }
            }
            seen += take as u64;
        }
        if in_window > 0 {
            windows.push(counter.take());
        }
        if windows.is_empty() {
            bail!("{what}: no references to profile");
        }
        Ok(Profile { what: what.to_string(), window_refs, windows, complete })
    }

    /// References profiled.
    pub fn refs(&self) -> u64 {
        self.windows.iter().map(|w| w.refs).sum()
    }

    /// The profile as a tenant's statement of `total` references, its windows
    /// repeated as often as needed, for `cores` cores running it.
    pub fn replay(self, total: u64, cores: u64) -> Replay {
        let universe = merge_ranges(self.windows.iter().flat_map(|w| w.pages.iter().map(|p| p.vpn..p.vpn + 1)).collect());
        Replay { profile: self, universe, cores, left: total, next: 0 }
    }
}

/// The first bytes of a profile file, and its version.
const PROFILE_MAGIC: &[u8; 8] = b"TSIMPROF";
const PROFILE_VERSION: u32 = 1;

/// Which trace a profile file was made from: the trace's size and modification time,
/// and the references it was limited to (`u64::MAX`: all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileOf {
    pub bytes: u64,
    pub modified_ns: u64,
    pub refs: u64,
}

impl ProfileOf {
    /// The identity of the trace at `path`, limited to `refs` references.
    pub fn trace(path: &str, refs: Option<u64>) -> Result<ProfileOf> {
        let m = std::fs::metadata(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let modified_ns = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
        Ok(ProfileOf { bytes: m.len(), modified_ns, refs: refs.unwrap_or(u64::MAX) })
    }
}

/// FNV-1a, 64 bits.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

impl Profile {
    /// The profile as a file's bytes: magic, version, then, compressed with zstd, the
    /// trace it was made from (`of`), the window length, whether it is complete, what
    /// was profiled, and each window (references, instructions, dependent loads, then
    /// per page its number and four counts as `f32`), all little-endian; an FNV-1a
    /// checksum of the uncompressed body ends it.
    pub fn to_bytes(&self, of: ProfileOf) -> Result<Vec<u8>> {
        let mut b = Vec::new();
        for x in [of.bytes, of.modified_ns, of.refs, self.window_refs, self.complete as u64, self.what.len() as u64] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(self.what.as_bytes());
        b.extend_from_slice(&(self.windows.len() as u64).to_le_bytes());
        for w in &self.windows {
            for x in [w.refs, w.instrs, w.dependent, w.pages.len() as u64] {
                b.extend_from_slice(&x.to_le_bytes());
            }
            for p in &w.pages {
                b.extend_from_slice(&p.vpn.to_le_bytes());
                for x in [p.reads, p.writes, p.bursts, p.write_bursts] {
                    b.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        let sum = fnv(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        let mut out = PROFILE_MAGIC.to_vec();
        out.extend_from_slice(&PROFILE_VERSION.to_le_bytes());
        out.extend(zstd::encode_all(&b[..], 3)?);
        Ok(out)
    }

    /// Reads a profile file's bytes (from `path`, for messages): the profile and the
    /// trace it was made from. Errors name the file and what is wrong with it.
    pub fn from_bytes(bytes: &[u8], path: &str) -> Result<(Profile, ProfileOf)> {
        if bytes.len() < 12 || &bytes[..8] != PROFILE_MAGIC {
            bail!("{path}: not a tiersim profile (made by `tiersim profile`)");
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != PROFILE_VERSION {
            bail!("{path}: profile version {version}, this tiersim reads version {PROFILE_VERSION}; make it again with `tiersim profile`");
        }
        let b = zstd::decode_all(&bytes[12..]).map_err(|e| anyhow::anyhow!("{path}: corrupt profile: {e}"))?;
        if b.len() < 8 || fnv(&b[..b.len() - 8]).to_le_bytes() != b[b.len() - 8..] {
            bail!("{path}: corrupt profile: its checksum does not match");
        }
        let body = &b[..b.len() - 8];
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = body.get(at..at + n).ok_or_else(|| anyhow::anyhow!("{path}: truncated profile"))?;
            at += n;
            Ok(s)
        };
        let mut u64s = |n: usize| -> Result<Vec<u64>> { Ok(take(8 * n)?.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()) };
        let h = u64s(6)?;
        let of = ProfileOf { bytes: h[0], modified_ns: h[1], refs: h[2] };
        let (window_refs, complete, what_len) = (h[3], h[4] != 0, h[5] as usize);
        let what = String::from_utf8(take(what_len)?.to_vec()).map_err(|_| anyhow::anyhow!("{path}: corrupt profile"))?;
        let n = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
        let mut windows = Vec::new();
        for _ in 0..n {
            let w: Vec<u64> = take(32)?.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
            let raw = take(24 * w[3] as usize)?;
            let pages = raw
                .chunks(24)
                .map(|c| {
                    let f = |i: usize| f32::from_le_bytes(c[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
                    PageLoad { vpn: u64::from_le_bytes(c[..8].try_into().expect("8 bytes")), reads: f(0), writes: f(1), bursts: f(2), write_bursts: f(3) }
                })
                .collect();
            windows.push(Stretch { refs: w[0], instrs: w[1], dependent: w[2], order: Order::Random, pages });
        }
        if at != body.len() || windows.is_empty() {
            bail!("{path}: corrupt profile");
        }
        Ok((Profile { what, window_refs, windows, complete }, of))
    }
}

/// Per-window counts of a stream being profiled.
#[derive(Default)]
struct Counter {
    /// Index of each page met, and per index: the page, its load, and the
    /// reference number of its last reference.
    index: HashMap<u64, u32>,
    pages: Vec<(PageLoad, u64, bool)>,
    refs: u64,
    instrs: u64,
    dependent: u64,
    /// References counted since the start of the profile.
    at: u64,
}

impl Counter {
    fn add(&mut self, a: &Access) {
        let vpn = a.vaddr / PAGE_BYTES;
        let next = self.pages.len() as u32;
        let i = *self.index.entry(vpn).or_insert(next) as usize;
        if i == self.pages.len() {
            self.pages.push((PageLoad { vpn, ..PageLoad::default() }, u64::MAX, false));
        }
        let (load, last, burst_wrote) = &mut self.pages[i];
        let write = a.is_write();
        let new_burst = *last == u64::MAX || self.at - *last > BURST_GAP;
        if new_burst {
            load.bursts += 1.0;
            *burst_wrote = false;
        }
        if write {
            load.writes += 1.0;
            if !*burst_wrote {
                load.write_bursts += 1.0;
                *burst_wrote = true;
            }
        } else {
            load.reads += 1.0;
        }
        *last = self.at;
        self.at += 1;
        self.refs += 1;
        self.instrs += a.instrs as u64;
        self.dependent += a.is_dependent() as u64;
    }

    /// The window counted so far, and a fresh window (a page's last reference is
    /// kept, so that a burst spanning two windows counts once).
    fn take(&mut self) -> Stretch {
        let mut pages: Vec<PageLoad> = self.pages.iter().map(|p| p.0).filter(|p| p.refs() > 0.0).collect();
        pages.sort_by_key(|p| p.vpn);
        for p in &mut self.pages {
            p.0 = PageLoad { vpn: p.0.vpn, ..PageLoad::default() };
        }
        // Pages not met for long are forgotten, so that the map stays as large as a
        // window's pages.
        if self.pages.len() > 4 * pages.len().max(1 << 16) {
            let at = self.at;
            self.pages.retain(|p| at - p.1 <= BURST_GAP);
            self.index = self.pages.iter().enumerate().map(|(i, p)| (p.0.vpn, i as u32)).collect();
        }
        let w = Stretch { refs: self.refs, instrs: self.instrs, dependent: self.dependent, order: Order::Random, pages };
        self.refs = 0;
        self.instrs = 0;
        self.dependent = 0;
        w
    }
}

/// A [`Profile`] replayed as a statement.
pub struct Replay {
    profile: Profile,
    universe: Vec<Range<u64>>,
    cores: u64,
    /// References of the run still to state.
    left: u64,
    next: usize,
}

impl AccessModel for Replay {
    fn describe(&self) -> String {
        let p = &self.profile;
        format!(
            "profiled: {} references of {} in {} windows of {}{}",
            p.refs(),
            p.what,
            p.windows.len(),
            p.window_refs,
            if p.complete { "" } else { ", repeated" }
        )
    }

    fn universe(&self) -> Vec<Range<u64>> {
        self.universe.clone()
    }

    fn next(&mut self, out: &mut Stretch) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        let w = &self.profile.windows[self.next];
        self.next = (self.next + 1) % self.profile.windows.len();
        out.clone_from(w);
        out.scale_by(self.cores);
        if out.refs > self.left {
            // The run ends inside this window: its share of it.
            let k = self.left as f64 / out.refs as f64;
            for p in &mut out.pages {
                p.reads = (p.reads as f64 * k) as f32;
                p.writes = (p.writes as f64 * k) as f32;
                p.bursts = (p.bursts as f64 * k) as f32;
                p.write_bursts = (p.write_bursts as f64 * k) as f32;
            }
            out.instrs = (out.instrs as f64 * k) as u64;
            out.dependent = (out.dependent as f64 * k) as u64;
            out.refs = self.left;
        }
        self.left -= out.refs;
        Ok(true)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workload::tests::config;

    /// Draws `refs` references of `cfg` (one core) and counts them, in one window.
    pub(crate) fn counted(cfg: &WorkloadConfig) -> Stretch {
        let mut src = crate::workload::build(cfg, 0, 0).unwrap();
        let mut p = Profile::record(src.as_mut(), u64::MAX, u64::MAX, "test").unwrap();
        assert_eq!(p.windows.len(), 1);
        p.windows.remove(0)
    }

    /// The whole statement of `cfg` (one core) as one load per page.
    pub(crate) fn stated(cfg: &WorkloadConfig) -> (Stretch, Vec<Range<u64>>) {
        let opts = ProfileOptions { window_refs: 1 << 20, max_refs: 1 << 24 };
        let mut m = model(cfg, 0, 1, &opts).unwrap();
        let mut all = Stretch::default();
        let mut by_page: HashMap<u64, PageLoad> = HashMap::new();
        let mut s = Stretch::default();
        while m.next(&mut s).unwrap() {
            all.refs += s.refs;
            all.instrs += s.instrs;
            all.dependent += s.dependent;
            for p in &s.pages {
                let e = by_page.entry(p.vpn).or_insert(PageLoad { vpn: p.vpn, ..PageLoad::default() });
                e.reads += p.reads;
                e.writes += p.writes;
                e.bursts += p.bursts;
                e.write_bursts += p.write_bursts;
            }
        }
        all.pages = by_page.into_values().collect();
        all.pages.sort_by_key(|p| p.vpn);
        (all, m.universe())
    }

    /// The goodness-of-fit test of a generator's statement against its own
    /// references, per class of pages: pages are grouped by their stated references
    /// in powers of two, and in each group with at least 400 stated references the
    /// counted references, stores and bursts must be within 5 standard deviations of
    /// the stated ones, plus 1 % for the statement's rounding. A page's references
    /// come in bursts of `m` on average, so its count of `s` references varies as `m`
    /// times a Poisson count of `s / m` bursts, with variance `s · m`; a class's
    /// variance is the sum of its pages'.
    /// Every page counted must be in the universe and be stated.
    pub(crate) fn check_statement(cfg: &WorkloadConfig) {
        let (stated, universe) = stated(cfg);
        let whole = counted(cfg);
        assert_eq!(stated.refs, cfg.refs, "stated references");
        for (what, s, c) in [("instructions", stated.instrs, whole.instrs), ("dependent loads", stated.dependent, whole.dependent)] {
            assert!((s as f64 - c as f64).abs() <= 0.03 * c as f64 + 1.0, "{}: {what} stated {s}, counted {c}", cfg.name);
        }
        let counted: HashMap<u64, PageLoad> = whole.pages.iter().map(|p| (p.vpn, *p)).collect();
        let total: f64 = stated.pages.iter().map(|p| p.refs() as f64).sum();
        assert!((total - cfg.refs as f64).abs() <= 1e-3 * cfg.refs as f64, "the stated pages carry {total} of {} references", cfg.refs);
        let stated_pages: HashMap<u64, PageLoad> = stated.pages.iter().map(|p| (p.vpn, *p)).collect();
        for vpn in counted.keys() {
            assert!(universe.iter().any(|r| r.contains(vpn)), "page {vpn:#x} outside the universe");
            assert!(stated_pages.contains_key(vpn), "page {vpn:#x} referenced but not stated");
        }
        // Per class: stated and counted references, stores and bursts, and the
        // variances of the stated references and stores.
        let mut classes: HashMap<i32, [f64; 8]> = HashMap::new();
        for p in &stated.pages {
            let c = counted.get(&p.vpn).copied().unwrap_or_default();
            let class = (p.refs() as f64).max(1e-9).log2().floor() as i32;
            let m = (p.refs() as f64 / p.bursts.max(1e-9) as f64).max(1.0);
            let e = classes.entry(class).or_default();
            e[0] += p.refs() as f64;
            e[1] += c.refs() as f64;
            e[2] += p.writes as f64;
            e[3] += c.writes as f64;
            e[4] += p.bursts as f64;
            e[5] += c.bursts as f64;
            e[6] += p.refs() as f64 * m;
            e[7] += p.writes as f64 * m;
        }
        let mut checked = 0;
        for (class, e) in &classes {
            for (what, s, c, var) in [("references", e[0], e[1], e[6]), ("stores", e[2], e[3], e[7]), ("bursts", e[4], e[5], e[4])] {
                if s < 400.0 {
                    continue;
                }
                checked += 1;
                let tolerance = 5.0 * var.sqrt() + 0.01 * s;
                assert!((s - c).abs() <= tolerance, "{}: pages of about 2^{class} references: {what} stated {s:.0}, counted {c:.0}", cfg.name);
            }
        }
        assert!(checked > 0, "no class large enough to check");
    }

    #[test]
    fn a_profile_counts_loads_stores_and_bursts_per_window() {
        // Page 1: a load, 3 stores right after (one burst with a store), then a load
        // 40 references later (a new burst: more than BURST_GAP apart).
        let mut refs: Vec<Access> = vec![Access::read(4096, 8, 2)];
        refs.extend((0..3).map(|_| Access::write(4096 + 64, 8, 1)));
        refs.extend((0..40).map(|i| Access::read(3 * 4096 + 8 * i, 8, 0)));
        refs.push(Access::read(4096, 8, 0));
        struct Vec1(Vec<Access>);
        impl Source for Vec1 {
            fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
                let n = self.0.len().min(max);
                out.extend(self.0.drain(..n));
                Ok(())
            }
        }
        let p = Profile::record(&mut Vec1(refs), 30, u64::MAX, "test").unwrap();
        assert!(p.complete);
        assert_eq!(p.windows.iter().map(|w| w.refs).collect::<Vec<_>>(), [30, 15]);
        assert_eq!(p.windows[0].instrs, 5);
        let w0 = &p.windows[0].pages;
        assert_eq!(w0[0], PageLoad { vpn: 1, reads: 1.0, writes: 3.0, bursts: 1.0, write_bursts: 1.0 });
        assert_eq!(w0[1], PageLoad { vpn: 3, reads: 26.0, writes: 0.0, bursts: 1.0, write_bursts: 0.0 });
        // Page 3's burst spans the window boundary: it is not counted again.
        let w1 = &p.windows[1].pages;
        assert_eq!(w1[0], PageLoad { vpn: 1, reads: 1.0, writes: 0.0, bursts: 1.0, write_bursts: 0.0 });
        assert_eq!(w1[1], PageLoad { vpn: 3, reads: 14.0, writes: 0.0, bursts: 0.0, write_bursts: 0.0 });
    }

    #[test]
    fn a_replay_repeats_the_windows_and_ends_with_the_run() {
        let mut cfg = config("stream");
        cfg.refs = 50_000;
        let mut src = crate::workload::build(&cfg, 0, 0).unwrap();
        let p = Profile::record(src.as_mut(), 10_000, 20_000, "stream").unwrap();
        assert!(!p.complete);
        let first = p.windows[0].clone();
        let mut r = p.replay(2 * 45_000, 2);
        let mut s = Stretch::default();
        let mut refs = Vec::new();
        while r.next(&mut s).unwrap() {
            refs.push(s.refs);
            if refs.len() == 3 {
                assert_eq!(s.pages.len(), first.pages.len(), "the third window is the first again");
                assert_eq!(s.pages[0].reads, 2.0 * first.pages[0].reads, "two cores");
            }
        }
        assert_eq!(refs, [20_000, 20_000, 20_000, 20_000, 10_000]);
        assert!(r.describe().contains("repeated"));
    }

    #[test]
    fn independent_references_make_bursts_of_one_unless_the_page_is_hot() {
        let cold = independent(7, 1e-6, 0.25, 1_000_000);
        assert!((cold.refs() - 1.0).abs() < 1e-6 && (cold.writes - 0.25).abs() < 1e-6);
        assert!((cold.bursts - 1.0).abs() < 1e-4, "{}", cold.bursts);
        // A page of half the references: a burst is interrupted with probability
        // 2^-32 per reference, so there are almost none.
        let hot = independent(7, 0.5, 0.0, 1_000_000);
        assert!(hot.bursts < 1e-3 && hot.write_bursts == 0.0);
    }

    /// Every stated generator against its own references (see [`check_statement`]).
    #[test]
    fn stated_distributions_match_the_generators_references() {
        for name in ["uniform", "gups", "zipf", "chase"] {
            check_statement(&config(name));
        }
        let mut cfg = config("zipf");
        cfg.zipf.alpha = 1.3;
        cfg.write_fraction = 0.5;
        check_statement(&cfg);
        let mut cfg = config("hotspot");
        cfg.hotspot.phases = 3;
        check_statement(&cfg);
        let mut cfg = config("seqscan");
        cfg.refs = 400_000;
        check_statement(&cfg);
        // Uniform references beside the sweep: every page is named, not only the swept.
        cfg.seqscan.hot_refs = 0.7;
        check_statement(&cfg);
        let mut cfg = config("kv");
        cfg.refs = 400_000;
        check_statement(&cfg);
        // (Not ETC's value sizes here: their heavy tail, up to 1 MiB a value, makes
        // 400 000 references far too few for the counts to settle.)
        cfg.kv.popularity = crate::workload::Popularity::Hotspot;
        cfg.kv.ycsb = crate::workload::Ycsb::B;
        cfg.kv.value_bytes = 300;
        check_statement(&cfg);
        let mut cfg = config("uniform");
        cfg.init = true;
        let (s, _) = stated(&cfg);
        assert_eq!(s.refs, cfg.refs + 1024, "one store per page first");
    }

    #[test]
    fn a_profile_file_reads_back_and_refuses_what_is_not_one() {
        let mut src = crate::workload::build(&config("zipf"), 0, 0).unwrap();
        let p = Profile::record(src.as_mut(), 30_000, u64::MAX, "zipf").unwrap();
        let of = ProfileOf { bytes: 123, modified_ns: 456, refs: u64::MAX };
        let bytes = p.to_bytes(of).unwrap();
        let (back, back_of) = Profile::from_bytes(&bytes, "p").unwrap();
        assert_eq!((back, back_of), (p, of));
        assert!(Profile::from_bytes(b"not a profile", "x.profile").unwrap_err().to_string().starts_with("x.profile: not a tiersim profile"));
        let mut bad = bytes.clone();
        bad[8] = 9;
        assert!(Profile::from_bytes(&bad, "p").unwrap_err().to_string().contains("version 9"));
        assert!(Profile::from_bytes(&bytes[..bytes.len() - 10], "p").unwrap_err().to_string().contains("corrupt"));
    }

    #[test]
    fn ranges_merge_when_they_touch() {
        assert_eq!(merge_ranges(vec![5..7, 1..3, 3..4, 6..9, 10..10]), vec![1..4, 5..9]);
    }
}
#[cfg(test)]
mod debug_abit {
    use super::*;
    use crate::workload::tests::config;
    #[test]
    fn dbg_abit() {
        let mut cfg = config("kv");
        cfg.footprint = crate::units::Size(128 << 20);
        cfg.refs = 20_000_000;
        let opts = ProfileOptions { window_refs: 1 << 20, max_refs: 1 << 24 };
        let mut m = model(&cfg, 0, 1, &opts).unwrap();
        let mut s = Stretch::default();
        m.next(&mut s).unwrap();
        let mut src = crate::workload::build(&cfg, 0, 0).unwrap();
        for delta in [10_000u64, 100_000, 1_000_000] {
            let expect: f64 = s.pages.iter().map(|p| 1.0 - (-(p.bursts as f64) / s.refs as f64 * delta as f64).exp()).sum();
            let expect_refs: f64 = s.pages.iter().map(|p| 1.0 - (-(p.refs() as f64) / s.refs as f64 * delta as f64).exp()).sum();
            let mut seen = std::collections::HashSet::new();
            let mut buf = Vec::new();
            let mut n = 0;
            while n < delta { buf.clear(); src.fill(&mut buf, (delta - n).min(4096) as usize).unwrap(); for a in &buf { seen.insert(a.vaddr >> 12); } n += buf.len() as u64; }
            println!("delta {delta}: distinct pages {} stated-bursts {expect:.0} stated-refs-as-bursts {expect_refs:.0}", seen.len());
        }
    }
}
