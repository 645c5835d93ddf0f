//! Synthetic workload generators: sources of memory references made from a seed
//! instead of read from a trace file.
//!
//! Each generator is one file and one concrete type implementing [`Source`]; the
//! name in `[workload] name = "…"` is matched once, in [`build`], and from then on
//! the engine pays one indirect call per batch, never per reference. A generator's
//! `fill` is a tight loop that pushes records into the caller's vector, so
//! generation costs a few nanoseconds per reference and never limits the simulator.
//!
//! # Randomness
//! Every random choice comes from [`Rng`], seeded from [`WorkloadConfig::seed`], and
//! is split into two kinds:
//! - the *layout* — where the hot set lies, which page each Zipf rank lands on, the
//!   order of the pointer-chase cycle — is derived from the seed and the tenant, so
//!   all cores of one tenant work on the same data, as the threads of one program do;
//! - the *stream* — which reference comes next — is derived from the seed, the tenant
//!   and the core, so two cores of a tenant issue different references.
//!
//! The same configuration, core and tenant therefore always give the same sequence.
//!
//! # Address rules shared by all generators
//! Addresses lie in `[base_vaddr, base_vaddr + footprint)` and no access crosses a
//! 64-byte line. Each generator emits exactly `refs` records, then nothing.
//!
//! # Synthetic and application workloads
//! The synthetic generators (uniform, gups, zipf, hotspot, seqscan, chase, and
//! loaded-latency, which splits its footprint between a probe and traffic) draw
//! addresses from a distribution over exactly `footprint` bytes; their accesses are
//! `access_bytes` long and aligned to it. The application workloads (graph-bfs,
//! pagerank, kv, spmv-cg, gemm, stream) run an algorithm over data structures laid
//! out as the program lays them out (see `program.rs`); each is sized by its natural
//! parameter (a graph's scale, a number of keys, a matrix order) or, when that is 0,
//! by the largest size whose data fit `footprint`. Their footprint — what
//! [`footprint_bytes`] returns and the run's tier capacities are computed from — is
//! the size of that layout, not `footprint`. They ignore `write_fraction`, `instrs`
//! and `access_bytes`: the algorithm decides loads and stores, the loop bodies the
//! instruction counts, the data types the access sizes.

mod chase;
mod gemm;
mod graph;
mod graph_bfs;
mod gups;
mod hotspot;
mod kv;
mod loaded_latency;
mod pagerank;
pub mod permute;
mod program;
pub mod rates;
mod seqscan;
mod spmv_cg;
mod stream;
mod uniform;
mod zipf;

pub use gemm::{GemmConfig, GemmKernel};
pub use graph::GraphConfig;
pub use kv::{KvConfig, Popularity, ValueSizes, Ycsb};
pub use loaded_latency::LoadedLatencyConfig;
pub use pagerank::PagerankConfig;
pub use spmv_cg::CgConfig;
pub use stream::{StreamConfig, StreamKernel};

use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};
use crate::units::Size;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Bytes in a base page: the granule of the hot sets and of the Zipf distribution.
const PAGE_BYTES: u64 = 4096;

/// Names and one-line descriptions of all generators, for `tiersim` help and errors.
pub const WORKLOADS: &[(&str, &str)] = &[
    ("uniform", "uniformly random addresses over the whole footprint"),
    ("gups", "HPC Challenge RandomAccess: read-modify-write of random 8-byte words"),
    ("zipf", "Zipf-distributed 4 KiB pages (exponent zipf.alpha), hot pages scattered"),
    ("hotspot", "a hot region gets most references and moves between phases (HMM-V §5.6.2)"),
    ("seqscan", "sequential sweeps of a hot window that moves between phases (HMM-V §5.5)"),
    ("chase", "dependent loads along one random cycle through every 64-byte line"),
    ("graph-bfs", "Graph500 BFS (seq-csr) over a Kronecker graph, root after root (Rainbow, HMM-V)"),
    ("pagerank", "GAP pull PageRank over a Kronecker graph, trial after trial (HMM-V)"),
    ("kv", "Redis-like hash table and value heap under YCSB A/B/C, zipfian or hotspot keys (HMM-V, Thermostat)"),
    ("spmv-cg", "NPB CG: CSR sparse matrix-vector products between vector updates (Rainbow)"),
    ("gemm", "BLIS-blocked dense multiply, or HPL's LU factorization with kernel = \"lu\" (Rainbow)"),
    ("stream", "STREAM copy, scale, add and triad over three arrays"),
    ("loaded-latency", "Intel MLC's loaded latency: core 0 chases pointers while the other cores inject traffic"),
];

/// The `[workload]` table: which synthetic generator runs and with what parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Generator name: uniform, gups, zipf, hotspot, seqscan, chase, graph-bfs,
    /// pagerank, kv, spmv-cg, gemm, stream or loaded-latency.
    pub name: String,
    /// Bytes of memory the workload touches; for the application workloads, the
    /// size their data must fit when their own size parameter is 0.
    pub footprint: Size,
    /// Memory references to generate (a gups update counts as two: a read and a write).
    pub refs: u64,
    /// Seed of every random choice; the same seed gives the same references.
    pub seed: u64,
    /// Fraction of references that are writes, in [0, 1] (uniform, zipf, hotspot and
    /// seqscan; chase is read-only, gups writes half of its references by construction,
    /// and the application workloads write what their algorithm writes).
    pub write_fraction: f64,
    /// Non-memory instructions the core executes between consecutive references (the
    /// application workloads count their loop bodies instead).
    pub instrs: u32,
    /// Bytes per reference: a power of two from 1 to 64 (gups always uses 8; the
    /// application workloads access their data types' sizes).
    pub access_bytes: u32,
    /// First virtual address of the data; must be 4 KiB aligned.
    pub base_vaddr: u64,
    /// Write every 4 KiB page of the data once, in address order, before the
    /// references, as a benchmark that allocates and fills its data first (HMM-V
    /// §5.6's microbenchmark fills its RSS, so first touch lays it out in address
    /// order). These writes come on top of `refs`; each core of a tenant makes them.
    pub init: bool,
    /// Parameters of the zipf generator.
    pub zipf: ZipfConfig,
    /// Parameters of the hotspot generator.
    pub hotspot: HotspotConfig,
    /// Parameters of the seqscan generator.
    pub seqscan: SeqscanConfig,
    /// The Kronecker graph of graph-bfs and pagerank.
    pub graph: GraphConfig,
    /// Parameters of pagerank.
    pub pagerank: PagerankConfig,
    /// Parameters of kv.
    pub kv: KvConfig,
    /// Parameters of spmv-cg.
    pub cg: CgConfig,
    /// Parameters of gemm.
    pub gemm: GemmConfig,
    /// Parameters of stream.
    pub stream: StreamConfig,
    /// Parameters of loaded-latency.
    pub loaded_latency: LoadedLatencyConfig,
}

impl Default for WorkloadConfig {
    fn default() -> WorkloadConfig {
        WorkloadConfig {
            name: "hotspot".to_string(),
            footprint: Size(1 << 30),
            refs: 10_000_000,
            seed: 1,
            write_fraction: 0.3,
            instrs: 4,
            access_bytes: 8,
            base_vaddr: 0x7f00_0000_0000,
            init: false,
            zipf: ZipfConfig::default(),
            hotspot: HotspotConfig::default(),
            seqscan: SeqscanConfig::default(),
            graph: GraphConfig::default(),
            pagerank: PagerankConfig::default(),
            kv: KvConfig::default(),
            cg: CgConfig::default(),
            gemm: GemmConfig::default(),
            stream: StreamConfig::default(),
            loaded_latency: LoadedLatencyConfig::default(),
        }
    }
}

/// The `[workload.zipf]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZipfConfig {
    /// Zipf exponent (> 0): the page of popularity rank r gets references in
    /// proportion to 1 / r^alpha.
    pub alpha: f64,
}

impl Default for ZipfConfig {
    fn default() -> ZipfConfig {
        ZipfConfig { alpha: 0.99 }
    }
}

/// The `[workload.hotspot]` table. With four phases this is the changing-hot-set
/// experiment of HMM-V §5.6.2: four stages, hot data in a different region each stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HotspotConfig {
    /// Share of references that go to the hot set, in [0, 1]; the rest are uniform
    /// over the whole footprint.
    pub hot_refs: f64,
    /// Size of the hot set as a share of the footprint, in (0, 1]; rounded to whole
    /// 4 KiB pages, at least one.
    pub hot_size: f64,
    /// Number of equal-length phases (at least 1); at each phase change the hot set
    /// moves to a new random place that does not overlap the previous one when the
    /// footprint has room.
    pub phases: u32,
}

impl Default for HotspotConfig {
    fn default() -> HotspotConfig {
        HotspotConfig { hot_refs: 0.9, hot_size: 0.2, phases: 1 }
    }
}

/// The `[workload.seqscan]` table, after the "sequential access" benchmark of
/// HMM-V §5.5: a hot set fixed at 20 % of the footprint (7.2 GB of 36 GB) whose place
/// changes periodically. HMM-V used half reads, half writes: set
/// `write_fraction = 0.5` to match.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SeqscanConfig {
    /// Size of the swept window as a share of the footprint, in (0, 1]; rounded to
    /// whole 4 KiB pages, at least one.
    pub window: f64,
    /// Share of references that continue the sweep, in [0, 1]; the rest are uniform
    /// over the whole footprint.
    pub hot_refs: f64,
    /// Number of equal-length phases (at least 1); at each phase change the window
    /// moves to the next region of the footprint, disjoint from the previous one
    /// when the window is at most half the footprint.
    pub phases: u32,
}

impl Default for SeqscanConfig {
    fn default() -> SeqscanConfig {
        SeqscanConfig { window: 0.2, hot_refs: 1.0, phases: 4 }
    }
}

/// One past the highest canonical user-space address on x86-64 (47-bit virtual addresses).
const USER_SPACE_END: u64 = 1 << 47;

impl WorkloadConfig {
    /// Checks every field, including the tables of generators that are not selected.
    /// Errors name the field, e.g. `workload.hotspot.hot_size: must be in (0, 1], got 1.5`
    /// or `workload: unknown workload `foo` (known: uniform, gups, …)`.
    pub fn validate(&self) -> Result<()> {
        self.checked_footprint().map(|_| ())
    }

    /// Validates the configuration and returns the bytes the workload's data span.
    fn checked_footprint(&self) -> Result<u64> {
        if !WORKLOADS.iter().any(|(name, _)| *name == self.name) {
            let known: Vec<&str> = WORKLOADS.iter().map(|(name, _)| *name).collect();
            bail!("workload: unknown workload `{}` (known: {})", self.name, known.join(", "));
        }
        if !(self.access_bytes.is_power_of_two() && self.access_bytes <= 64) {
            bail!("workload.access_bytes: must be a power of two from 1 to 64, got {}", self.access_bytes);
        }
        if self.footprint.bytes() < PAGE_BYTES {
            bail!("workload.footprint: must be at least 4KiB, got {}", self.footprint);
        }
        if !self.footprint.bytes().is_multiple_of(self.access_bytes as u64) {
            bail!(
                "workload.footprint: must be a multiple of access_bytes ({}), got {}",
                self.access_bytes,
                self.footprint
            );
        }
        if self.refs == 0 {
            bail!("workload.refs: must be greater than 0, got 0");
        }
        check_fraction("workload.write_fraction", self.write_fraction)?;
        if !self.base_vaddr.is_multiple_of(PAGE_BYTES) {
            bail!("workload.base_vaddr: must be 4 KiB aligned, got {:#x}", self.base_vaddr);
        }
        if !(self.zipf.alpha > 0.0 && self.zipf.alpha.is_finite()) {
            bail!("workload.zipf.alpha: must be a finite number > 0, got {}", self.zipf.alpha);
        }
        check_fraction("workload.hotspot.hot_refs", self.hotspot.hot_refs)?;
        check_share("workload.hotspot.hot_size", self.hotspot.hot_size)?;
        check_phases("workload.hotspot.phases", self.hotspot.phases)?;
        check_share("workload.seqscan.window", self.seqscan.window)?;
        check_fraction("workload.seqscan.hot_refs", self.seqscan.hot_refs)?;
        check_phases("workload.seqscan.phases", self.seqscan.phases)?;
        self.graph.validate()?;
        self.pagerank.validate()?;
        self.kv.validate()?;
        self.cg.validate()?;
        self.gemm.validate()?;
        self.stream.validate()?;
        self.loaded_latency.validate()?;
        let footprint = match self.name.as_str() {
            "graph-bfs" => graph_bfs::footprint(self)?,
            "pagerank" => pagerank::footprint(self)?,
            "kv" => kv::footprint(self)?,
            "spmv-cg" => spmv_cg::footprint(self)?,
            "gemm" => gemm::footprint(self)?,
            "stream" => stream::footprint(self)?,
            "loaded-latency" => loaded_latency::footprint(self)?,
            _ => self.footprint.bytes(),
        };
        if self.base_vaddr.checked_add(footprint).is_none_or(|end| end > USER_SPACE_END) {
            bail!(
                "workload.base_vaddr: base_vaddr + footprint must not exceed 2^47 (canonical user space), got {:#x} + {}",
                self.base_vaddr,
                Size(footprint)
            );
        }
        Ok(footprint)
    }
}

/// Returns the bytes the workload of `cfg` spans, after validating `cfg`: the
/// configured footprint for the synthetic generators, the size of the data layout
/// for the application workloads (which may be less than `cfg.footprint`, or more
/// when their size parameter is set). Tier capacities given as a share of the
/// footprint refer to this.
pub fn footprint_bytes(cfg: &WorkloadConfig) -> Result<u64> {
    cfg.checked_footprint()
}

fn check_fraction(field: &str, value: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&value) {
        bail!("{field}: must be in [0, 1], got {value}");
    }
    Ok(())
}

fn check_share(field: &str, value: f64) -> Result<()> {
    if !(value > 0.0 && value <= 1.0) {
        bail!("{field}: must be in (0, 1], got {value}");
    }
    Ok(())
}

fn check_phases(field: &str, value: u32) -> Result<()> {
    if value == 0 {
        bail!("{field}: must be at least 1, got 0");
    }
    Ok(())
}

/// Builds the generator `cfg.name` for one core of one tenant, after validating `cfg`.
/// Every record it produces carries `core` and `tenant`.
pub fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    cfg.validate()?;
    let source: Box<dyn Source> = match cfg.name.as_str() {
        "uniform" => Box::new(uniform::Uniform::new(cfg, core, tenant)),
        "gups" => Box::new(gups::Gups::new(cfg, core, tenant)),
        "zipf" => Box::new(zipf::Zipf::new(cfg, core, tenant)),
        "hotspot" => Box::new(hotspot::Hotspot::new(cfg, core, tenant)),
        "seqscan" => Box::new(seqscan::Seqscan::new(cfg, core, tenant)),
        "chase" => Box::new(chase::Chase::new(cfg, core, tenant)),
        "graph-bfs" => graph_bfs::build(cfg, core, tenant)?,
        "pagerank" => pagerank::build(cfg, core, tenant)?,
        "kv" => kv::build(cfg, core, tenant)?,
        "spmv-cg" => spmv_cg::build(cfg, core, tenant)?,
        "gemm" => gemm::build(cfg, core, tenant)?,
        "stream" => stream::build(cfg, core, tenant)?,
        "loaded-latency" => loaded_latency::build(cfg, core, tenant),
        // `validate` has already rejected every other name.
        other => bail!("workload: unknown workload `{other}`"),
    };
    if cfg.init {
        // The data as laid out (an application workload's may differ from the
        // configured footprint).
        let pages = cfg.checked_footprint()?.div_ceil(PAGE_BYTES);
        let template = Access { vaddr: cfg.base_vaddr, instrs: cfg.instrs, core, tenant, size: 8, flags: WRITE };
        return Ok(Box::new(Init { template, pages, next: 0, then: source }));
    }
    Ok(source)
}

/// A generator preceded by one write to each page of its footprint, in order.
struct Init {
    template: Access,
    pages: u64,
    next: u64,
    then: Box<dyn Source>,
}

impl Source for Init {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        if self.next < self.pages {
            let n = (self.pages - self.next).min(max as u64);
            out.extend((self.next..self.next + n).map(|i| Access { vaddr: self.template.vaddr + i * PAGE_BYTES, ..self.template }));
            self.next += n;
            return Ok(());
        }
        self.then.fill(out, max)
    }

    fn len_hint(&self) -> Option<u64> {
        self.then.len_hint().map(|n| n + self.pages - self.next)
    }

    fn skip(&mut self, n: u64) -> bool {
        let here = n.min(self.pages - self.next);
        if here < n && !self.then.skip(n - here) {
            return false;
        }
        self.next += here;
        true
    }
}

/// Returns an unrelated 64-bit seed for each `(seed, salt)` pair: both go through
/// SplitMix64 (inside [`Rng::new`]) so that neighbouring seeds or salts do not give
/// correlated streams.
fn derive_seed(seed: u64, salt: u64) -> u64 {
    Rng::new(seed ^ Rng::new(salt).next_u64()).next_u64()
}

/// The generator for the data layout shared by all cores of `tenant`.
fn layout_rng(cfg: &WorkloadConfig, tenant: u16) -> Rng {
    // Cores are 16-bit, so the all-ones low half never collides with a core's salt.
    Rng::new(derive_seed(cfg.seed, (tenant as u64) << 32 | 0xFFFF_FFFF))
}

/// The generator for the references of one core of one tenant.
fn stream_rng(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Rng {
    Rng::new(derive_seed(cfg.seed, (tenant as u64) << 32 | core as u64))
}

/// What every record of a generator shares, and how many records it has left.
#[derive(Clone, Debug)]
struct Emitter {
    /// Record whose `instrs`, `core`, `tenant` and `size` every emitted record copies.
    template: Access,
    /// Records emitted so far.
    emitted: u64,
    /// Records to emit in total.
    refs: u64,
}

impl Emitter {
    fn new(cfg: &WorkloadConfig, core: u16, tenant: u16, size_bytes: u32) -> Emitter {
        let template = Access { vaddr: 0, instrs: cfg.instrs, core, tenant, size: size_bytes as u8, flags: 0 };
        Emitter { template, emitted: 0, refs: cfg.refs }
    }

    /// Counts up to `n` records as emitted without emitting them; returns how many.
    fn skip(&mut self, n: u64) -> u64 {
        let n = n.min(self.refs - self.emitted);
        self.emitted += n;
        n
    }

    /// Takes up to `max` records, but none past record number `limit`, from the
    /// remaining budget and returns how many were taken.
    #[inline]
    fn take_until(&mut self, max: usize, limit: u64) -> usize {
        let n = (max as u64).min(limit.min(self.refs) - self.emitted) as usize;
        self.emitted += n as u64;
        n
    }

    /// Takes up to `max` records from the remaining budget and returns how many were taken.
    #[inline]
    fn take(&mut self, max: usize) -> usize {
        self.take_until(max, self.refs)
    }

    /// Returns the template record with `vaddr` and `flags` filled in.
    #[inline]
    fn record(&self, vaddr: u64, flags: u8) -> Access {
        Access { vaddr, flags, ..self.template }
    }
}

/// Splits `refs` references into `count` phases of equal length (differing by at
/// most one reference when `refs` does not divide evenly).
#[derive(Clone, Copy, Debug)]
struct Phases {
    refs: u64,
    count: u32,
}

impl Phases {
    /// Returns the number of the first reference after phase `phase` (0-based).
    fn end(self, phase: u32) -> u64 {
        (self.refs as u128 * (phase as u128 + 1) / self.count as u128) as u64
    }
}

/// Returns the number of whole pages of `share · footprint` bytes, rounded to the
/// nearest page and kept within one page and all the footprint's whole pages.
fn share_in_pages(share: f64, footprint: u64) -> u64 {
    let pages = footprint / PAGE_BYTES;
    ((share * footprint as f64 / PAGE_BYTES as f64).round() as u64).clamp(1, pages)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde::de::value::{Error as ValueError, MapDeserializer};

    /// A small configuration for tests: 4 MiB footprint, 100 000 references.
    pub(crate) fn config(name: &str) -> WorkloadConfig {
        WorkloadConfig { name: name.to_string(), footprint: Size(4 << 20), refs: 100_000, ..Default::default() }
    }

    #[test]
    fn init_writes_every_page_in_order_before_the_references() {
        let cfg = WorkloadConfig { init: true, refs: 1000, ..config("uniform") };
        let mut src = build(&cfg, 0, 0).unwrap();
        assert_eq!(src.len_hint(), Some(1024 + 1000));
        let all = collect(src.as_mut(), 100);
        assert_eq!(all.len(), 1024 + 1000);
        for (i, a) in all[..1024].iter().enumerate() {
            assert_eq!(a.vaddr, cfg.base_vaddr + i as u64 * PAGE_BYTES);
            assert!(a.is_write());
        }
        let plain = collect(build(&WorkloadConfig { init: false, ..cfg.clone() }, 0, 0).unwrap().as_mut(), 100);
        assert_eq!(&all[1024..], &plain[..], "then the generator's own references");
    }

    /// Drains `source` in batches of `batch` records.
    pub(crate) fn collect(source: &mut dyn Source, batch: usize) -> Vec<Access> {
        let mut all = Vec::new();
        let mut out = Vec::with_capacity(batch);
        loop {
            out.clear();
            source.fill(&mut out, batch).expect("generators do not fail");
            assert!(out.len() <= batch, "fill appended more than max");
            if out.is_empty() {
                return all;
            }
            all.extend_from_slice(&out);
        }
    }

    /// Checks the rules every generator follows: the exact count, addresses in range
    /// and aligned to the access size, the instruction count and the core and tenant.
    pub(crate) fn check_common(cfg: &WorkloadConfig, records: &[Access], size: u8) {
        assert_eq!(records.len() as u64, cfg.refs);
        let end = cfg.base_vaddr + cfg.footprint.bytes();
        for a in records {
            assert!((cfg.base_vaddr..end).contains(&a.vaddr), "{:#x} outside the footprint", a.vaddr);
            assert_eq!(a.size, size);
            assert_eq!(a.vaddr % size as u64, 0, "{:#x} not aligned to {size}", a.vaddr);
            assert_eq!(a.core, 3);
            assert_eq!(a.tenant, 2);
        }
    }

    /// Builds `cfg` for core 3 of tenant 2 and runs it to the end in odd-sized batches,
    /// so that batch boundaries fall everywhere.
    pub(crate) fn run(cfg: &WorkloadConfig) -> Vec<Access> {
        let mut source = build(cfg, 3, 2).expect("valid test config");
        assert_eq!(source.len_hint(), Some(cfg.refs));
        let records = collect(source.as_mut(), 4093);
        let mut after = Vec::new();
        source.fill(&mut after, 100).expect("generators do not fail");
        assert!(after.is_empty(), "appended records after the budget was spent");
        records
    }

    /// Checks what every application workload's records satisfy: the exact count,
    /// addresses within the layout's footprint, no access across a 64-byte line, and
    /// the core and tenant.
    pub(crate) fn check_app_common(cfg: &WorkloadConfig, records: &[Access]) {
        assert_eq!(records.len() as u64, cfg.refs);
        let end = cfg.base_vaddr + footprint_bytes(cfg).expect("valid test config");
        for a in records {
            assert!((cfg.base_vaddr..end).contains(&a.vaddr), "{:#x} outside the footprint", a.vaddr);
            assert!((1..=64).contains(&a.size), "size {}", a.size);
            assert_eq!(a.vaddr / 64, (a.vaddr + a.size as u64 - 1) / 64, "{:#x}+{} crosses a line", a.vaddr, a.size);
            assert_eq!((a.core, a.tenant), (3, 2));
        }
    }

    /// Same seed, core and tenant give the same first 10 000 records; another seed,
    /// and another core, give different ones.
    pub(crate) fn check_determinism(cfg: &WorkloadConfig) {
        let first = |cfg: &WorkloadConfig, core: u16| {
            let mut cfg = cfg.clone();
            cfg.refs = 10_000;
            let mut source = build(&cfg, core, 0).expect("valid test config");
            collect(source.as_mut(), 1000).into_iter().map(|a| (a.vaddr, a.flags)).collect::<Vec<_>>()
        };
        assert_eq!(first(cfg, 0), first(cfg, 0));
        let other_seed = WorkloadConfig { seed: cfg.seed + 1, ..cfg.clone() };
        assert_ne!(first(cfg, 0), first(&other_seed, 0));
        assert_ne!(first(cfg, 0), first(cfg, 1));
    }

    /// Checks that the share of writes is `expected` within ±0.01: with 100 000
    /// references the standard deviation of the share is at most 0.0016.
    pub(crate) fn check_write_share(records: &[Access], expected: f64) {
        let share = records.iter().filter(|a| a.is_write()).count() as f64 / records.len() as f64;
        assert!((share - expected).abs() < 0.01, "write share {share}, expected {expected}");
    }

    #[test]
    fn defaults_are_valid_and_match_the_documentation() {
        let cfg = WorkloadConfig::default();
        cfg.validate().expect("defaults are valid");
        assert_eq!(cfg.name, "hotspot");
        assert_eq!(cfg.footprint, Size(1 << 30));
        assert_eq!((cfg.refs, cfg.seed, cfg.instrs, cfg.access_bytes), (10_000_000, 1, 4, 8));
        assert_eq!(cfg.write_fraction, 0.3);
        assert_eq!(cfg.base_vaddr, 0x7f00_0000_0000);
        assert_eq!(cfg.zipf.alpha, 0.99);
        assert_eq!((cfg.hotspot.hot_refs, cfg.hotspot.hot_size, cfg.hotspot.phases), (0.9, 0.2, 1));
        assert_eq!((cfg.seqscan.window, cfg.seqscan.hot_refs, cfg.seqscan.phases), (0.2, 1.0, 4));
    }

    #[test]
    fn every_listed_workload_builds() {
        for (name, _) in WORKLOADS {
            assert!(build(&config(name), 0, 0).is_ok(), "{name}");
        }
    }

    #[test]
    fn deserializing_keeps_defaults_and_rejects_unknown_fields() {
        let partial = MapDeserializer::<_, ValueError>::new([("name", "zipf")].into_iter());
        let cfg = WorkloadConfig::deserialize(partial).expect("a known field");
        assert_eq!(cfg.name, "zipf");
        assert_eq!(cfg.refs, 10_000_000);
        let typo = MapDeserializer::<_, ValueError>::new([("nmae", "zipf")].into_iter());
        let err = WorkloadConfig::deserialize(typo).expect_err("unknown field").to_string();
        assert!(err.contains("nmae"), "{err}");
    }

    /// Returns the validation error for the default configuration changed by `change`.
    fn error_after(change: impl FnOnce(&mut WorkloadConfig)) -> String {
        let mut cfg = WorkloadConfig::default();
        change(&mut cfg);
        cfg.validate().expect_err("invalid config").to_string()
    }

    #[test]
    fn validation_errors_name_the_field() {
        assert_eq!(
            error_after(|c| c.name = "foo".into()),
            "workload: unknown workload `foo` (known: uniform, gups, zipf, hotspot, seqscan, chase, graph-bfs, pagerank, kv, spmv-cg, gemm, stream, loaded-latency)"
        );
        assert_eq!(
            error_after(|c| c.hotspot.hot_size = 1.5),
            "workload.hotspot.hot_size: must be in (0, 1], got 1.5"
        );
        type Change = fn(&mut WorkloadConfig);
        let cases: [(&str, Change); 16] = [
            ("workload.footprint:", |c| c.footprint = Size(4095)),
            ("workload.footprint:", |c| c.footprint = Size(4096 + 4)),
            ("workload.refs:", |c| c.refs = 0),
            ("workload.write_fraction:", |c| c.write_fraction = -0.1),
            ("workload.write_fraction:", |c| c.write_fraction = f64::NAN),
            ("workload.access_bytes:", |c| c.access_bytes = 12),
            ("workload.access_bytes:", |c| c.access_bytes = 128),
            ("workload.base_vaddr:", |c| c.base_vaddr = 0x1000_0010),
            ("workload.base_vaddr:", |c| c.base_vaddr = (1 << 47) - 4096),
            ("workload.zipf.alpha:", |c| c.zipf.alpha = 0.0),
            ("workload.hotspot.hot_refs:", |c| c.hotspot.hot_refs = 1.1),
            ("workload.hotspot.hot_size:", |c| c.hotspot.hot_size = 0.0),
            ("workload.hotspot.phases:", |c| c.hotspot.phases = 0),
            ("workload.seqscan.window:", |c| c.seqscan.window = 2.0),
            ("workload.seqscan.hot_refs:", |c| c.seqscan.hot_refs = -1.0),
            ("workload.seqscan.phases:", |c| c.seqscan.phases = 0),
        ];
        for (field, change) in cases {
            let err = error_after(change);
            assert!(err.starts_with(field), "expected an error about {field}, got: {err}");
        }
    }

    #[test]
    fn build_rejects_invalid_configs() {
        let cfg = WorkloadConfig { refs: 0, ..WorkloadConfig::default() };
        assert!(build(&cfg, 0, 0).is_err());
    }

    #[test]
    fn phases_split_references_evenly() {
        let phases = Phases { refs: 10, count: 4 };
        let ends: Vec<u64> = (0..4).map(|p| phases.end(p)).collect();
        assert_eq!(ends, [2, 5, 7, 10]);
    }

    #[test]
    fn shares_round_to_whole_pages_within_the_footprint() {
        assert_eq!(share_in_pages(0.2, 100 * PAGE_BYTES), 20);
        assert_eq!(share_in_pages(0.001, 10 * PAGE_BYTES), 1);
        assert_eq!(share_in_pages(1.0, 10 * PAGE_BYTES + 8), 10);
    }
}
