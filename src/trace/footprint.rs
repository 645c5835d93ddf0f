//! Footprints measured from traces: the distinct 4 KiB pages each tenant touches.
//!
//! [`PageSet`] keeps one 512-bit bitmap per 2 MiB region touched, in one vector,
//! with a hash map from tenant and region to its place, so it costs about 90 bytes
//! per 2 MiB region — a few bits per page of a dense footprint, 90 bytes per page
//! of the sparsest — and it counts 4 KiB and 2 MiB pages at once. Where the
//! regions used lately have their bitmaps is kept at hand in a small direct-mapped
//! table, so accesses that stay among a few regions (a program's stack, heap and
//! data) skip the hash lookup.
//!
//! The engine needs a trace's footprint before it builds the machine (tier
//! capacities may be given as a share of it). Native traces written by tiersim
//! carry it in their trailer; for every other trace, and for the first N records
//! of any trace, [`measure`] makes one streaming pass over the file first. A run
//! that took a trailer's word checks it against the records it reads
//! ([`FootprintCheck`]).

use super::meta::TraceMeta;
use super::{native, open_reader, Access, OpenOptions};
use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash for integer keys (region numbers are not adversarial).
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A `HashMap` with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The key of a 2 MiB region of one tenant's address space (addresses are below
/// 2^57, so the region number has 36 bits).
#[inline]
pub fn region_key(tenant: u16, vaddr: u64) -> u64 {
    (tenant as u64) << 48 | vaddr >> 21
}

/// The key of a 4 KiB page of one tenant's address space.
#[inline]
pub fn page_key(tenant: u16, vaddr: u64) -> u64 {
    (tenant as u64) << 48 | vaddr >> 12
}

/// Regions [`PageSet`] remembers where to find without a hash lookup (a
/// direct-mapped table by region number).
const AT_HAND: usize = 64;
/// A key no region has (tenants have 16 bits above the 36-bit region number).
const NO_REGION: u64 = u64::MAX;

/// The distinct 4 KiB pages touched, per tenant.
pub struct PageSet {
    /// Region key → index of its bitmap in `bits`.
    index: IntMap<u64, u32>,
    /// One 512-bit bitmap per region touched, and its key.
    bits: Vec<[u64; 8]>,
    keys: Vec<u64>,
    /// (key, index) of regions used lately, at `key % AT_HAND`.
    at_hand: [(u64, u32); AT_HAND],
}

impl Default for PageSet {
    fn default() -> PageSet {
        PageSet { index: IntMap::default(), bits: Vec::new(), keys: Vec::new(), at_hand: [(NO_REGION, 0); AT_HAND] }
    }
}

impl PageSet {
    /// An empty set.
    pub fn new() -> PageSet {
        PageSet::default()
    }

    /// Adds the page of `a` (its tenant's address space).
    #[inline]
    pub fn add(&mut self, a: &Access) {
        let key = region_key(a.tenant, a.vaddr);
        let slot = key as usize % AT_HAND;
        let (k, at) = self.at_hand[slot];
        let at = if k == key { at } else { self.look_up(key, slot) };
        let page = (a.vaddr >> 12) & 511;
        self.bits[at as usize][(page >> 6) as usize] |= 1 << (page & 63);
    }

    /// The bitmap index of region `key`, a new bitmap for a region not seen
    /// before; remembered at `slot`.
    fn look_up(&mut self, key: u64, slot: usize) -> u32 {
        let (bits, keys) = (&mut self.bits, &mut self.keys);
        let at = *self.index.entry(key).or_insert_with(|| {
            bits.push([0; 8]);
            keys.push(key);
            (bits.len() - 1) as u32
        });
        self.at_hand[slot] = (key, at);
        at
    }

    /// Returns, for every tenant that touched memory, its 4 KiB and 2 MiB page counts,
    /// by tenant.
    pub fn per_tenant(&self) -> Vec<TenantPages> {
        let mut by: std::collections::BTreeMap<u16, TenantPages> = Default::default();
        for (&key, bits) in self.keys.iter().zip(&self.bits) {
            let pages: u64 = bits.iter().map(|w| w.count_ones() as u64).sum();
            if pages > 0 {
                let tenant = (key >> 48) as u16;
                let t = by.entry(tenant).or_insert(TenantPages { tenant, pages_4k: 0, pages_2m: 0 });
                t.pages_4k += pages;
                t.pages_2m += 1;
            }
        }
        by.into_values().collect()
    }
}

/// Pages one tenant touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TenantPages {
    pub tenant: u16,
    /// Distinct 4 KiB pages.
    pub pages_4k: u64,
    /// Distinct 2 MiB regions (pages of a 2 MiB mapping).
    pub pages_2m: u64,
}

/// What the engine needs to know about a trace before running it.
#[derive(Clone, Debug)]
pub struct TraceFacts {
    /// Pages touched, per tenant.
    pub tenants: Vec<TenantPages>,
    /// Records in the trace.
    pub records: u64,
    /// Whether records carry their own tenant.
    pub record_tenants: bool,
    /// Whether records carry their own core (threads recorded as cores).
    pub record_cores: bool,
    /// The metadata block of a recorded native trace.
    pub meta: Option<TraceMeta>,
    /// Whether the facts come from a native trailer, unchecked against the records.
    pub from_trailer: bool,
    /// Something the user should know about the trace (an older format).
    pub note: Option<String>,
}

impl TraceFacts {
    /// Bytes of 4 KiB pages touched, all tenants together.
    pub fn footprint_bytes(&self) -> u64 {
        self.tenants.iter().map(|t| t.pages_4k).sum::<u64>() << 12
    }
}

/// A file read that counts its bytes on the progress display.
struct Counted {
    file: std::fs::File,
    progress: Progress,
}

impl std::io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.progress.pass_bytes(n as u64);
        Ok(n)
    }
}

/// Measures the trace at `path`, or its first `limit` records (of each thread,
/// with `opts.thread`): from a native trace's trailer when it has one, the file can be seeked
/// and the whole trace is wanted, otherwise with one streaming pass (shown on
/// `progress`). A trace (or thread) without a single record is an error.
///
/// With `opts.thread`, the facts are those of one thread: its records, and the
/// pages of all the threads for the trace's first thread and none for the others,
/// since the threads of a process share its address space (their footprint is the
/// union of what they touch, counted once). Such facts are never marked
/// `from_trailer`: one thread's records cannot confirm the whole trace's pages.
pub fn measure(
    path: &str,
    opts: &OpenOptions,
    limit: Option<u64>,
    progress: &Progress,
) -> Result<TraceFacts> {
    let Some(thread) = opts.thread else {
        if path != "-" {
            if let Some(facts) =
                native::read_trailer(path)?.filter(|f| limit.is_none_or(|n| n >= f.records))
            {
                if facts.records == 0 {
                    bail!("{path}: the trace is empty: it holds no memory references");
                }
                return Ok(facts);
            }
        }
        let pass = Pass::run(path, opts, false, limit, progress)?;
        let records = pass.per_core.iter().sum();
        return Ok(TraceFacts {
            tenants: pass.pages.per_tenant(),
            records,
            ..pass.facts
        });
    };
    if path != "-" && limit.is_none() {
        if let Some(facts) = native::read_trailer(path)? {
            if let Some(meta) = facts.meta.as_ref().filter(|_| facts.record_cores) {
                let records = meta
                    .threads
                    .iter()
                    .find(|t| t.core == thread)
                    .map_or(0, |t| t.records);
                let first = meta.cores().first() == Some(&thread);
                return thread_facts(
                    path,
                    thread,
                    records,
                    first,
                    TraceFacts {
                        from_trailer: false,
                        ..facts
                    },
                );
            }
        }
    }
    let pass = Pass::run(
        path,
        &OpenOptions {
            thread: None,
            ..opts.clone()
        },
        true,
        limit,
        progress,
    )?;
    let records = pass.per_core.get(thread as usize).copied().unwrap_or(0);
    let first = pass.per_core.iter().position(|&n| n > 0) == Some(thread as usize);
    thread_facts(
        path,
        thread,
        records,
        first,
        TraceFacts {
            tenants: pass.pages.per_tenant(),
            ..pass.facts
        },
    )
}

/// The facts of thread `thread` of a trace whose facts are `whole`.
fn thread_facts(
    path: &str,
    thread: u16,
    records: u64,
    first: bool,
    whole: TraceFacts,
) -> Result<TraceFacts> {
    if records == 0 {
        bail!("{path}: thread {thread} holds no memory references");
    }
    Ok(TraceFacts {
        tenants: if first { whole.tenants } else { Vec::new() },
        records,
        ..whole
    })
}

/// One streaming pass over a trace, counting its records (per core when
/// `per_thread`) and the pages of the first `limit` records (of each core).
struct Pass {
    per_core: Vec<u64>,
    pages: PageSet,
    /// Everything but the pages and records.
    facts: TraceFacts,
}

impl Pass {
    fn run(
        path: &str,
        opts: &OpenOptions,
        per_thread: bool,
        limit: Option<u64>,
        progress: &Progress,
    ) -> Result<Pass> {
        let raw: Box<dyn std::io::Read> = if path == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            let file = std::fs::File::open(path).with_context(|| format!("{path}: cannot open"))?;
            progress.footprint_pass(path, file.metadata().map_or(0, |m| m.len()));
            Box::new(Counted {
                file,
                progress: progress.clone(),
            })
        };
        let name = if path == "-" { "<stdin>" } else { path };
        let mut opened = open_reader(raw, name, opts)?;
        let limit = limit.unwrap_or(u64::MAX);
        // Per thread, the limit applies to each thread, as each replays on its
        // own core with its own `--refs`.
        let per_thread = per_thread && opened.record_cores;
        let mut per_core = vec![0u64; if per_thread { 1 << 16 } else { 1 }];
        let mut pages = PageSet::new();
        let mut buf = Vec::with_capacity(4096);
        'read: loop {
            buf.clear();
            opened.source.fill(&mut buf, 4096)?;
            if buf.is_empty() {
                break;
            }
            for a in &buf {
                let n = &mut per_core[if per_thread { a.core as usize } else { 0 }];
                if *n == limit {
                    if per_thread {
                        continue;
                    }
                    break 'read;
                }
                *n += 1;
                pages.add(a);
            }
        }
        let total: u64 = per_core.iter().sum();
        if total == 0 {
            let skipped = opened.source.malformed_skipped();
            let why = if skipped > 0 {
                format!(" ({skipped} malformed lines skipped)")
            } else {
                String::new()
            };
            bail!("{name}: the trace is empty: it holds no memory references{why}");
        }
        let meta = opened
            .source
            .meta()
            .map(|m| TraceMeta::parse(m, name))
            .transpose()?;
        let facts = TraceFacts {
            tenants: Vec::new(),
            records: 0,
            record_tenants: opened.record_tenants,
            record_cores: opened.record_cores,
            meta,
            from_trailer: false,
            note: opened.notes.pop(),
        };
        Ok(Pass {
            per_core,
            pages,
            facts,
        })
    }
}

/// Checks that the records a run reads touch the pages a native trailer promised
/// (the run sized its tiers by the trailer without reading the records first).
pub struct FootprintCheck {
    name: String,
    /// 4 KiB and 2 MiB pages the trailer counts, all tenants together.
    promised: (u64, u64),
    pages: PageSet,
}

impl FootprintCheck {
    /// A check of the records of the trace `name` against its trailer's `facts`.
    pub fn new(name: &str, facts: &TraceFacts) -> FootprintCheck {
        let promised = facts.tenants.iter().fold((0, 0), |(a, b), t| (a + t.pages_4k, b + t.pages_2m));
        FootprintCheck { name: name.to_string(), promised, pages: PageSet::new() }
    }

    /// Counts the pages of a batch of records.
    pub fn add(&mut self, batch: &[Access]) {
        for a in batch {
            self.pages.add(a);
        }
    }

    /// Fails when the records read touched other page counts than the trailer's.
    pub fn finish(&self) -> Result<()> {
        let got = self.pages.per_tenant().iter().fold((0, 0), |(a, b), t| (a + t.pages_4k, b + t.pages_2m));
        if got != self.promised {
            bail!(
                "{}: corrupt trailer: it counts {} pages of 4 KiB in {} regions of 2 MiB, the records touch {} in {}",
                self.name,
                self.promised.0,
                self.promised.1,
                got.0,
                got.1
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_counted_per_tenant_at_both_sizes() {
        let mut s = PageSet::new();
        for (t, v) in [(0, 0x1000u64), (0, 0x1008), (0, 0x2000), (0, 0x40_0000), (1, 0x1000), (0, 0x1000)] {
            s.add(&Access { tenant: t, vaddr: v, ..Access::default() });
        }
        assert_eq!(
            s.per_tenant(),
            [TenantPages { tenant: 0, pages_4k: 3, pages_2m: 2 }, TenantPages { tenant: 1, pages_4k: 1, pages_2m: 1 }]
        );
        // Six regions 64 apart in turn (so they share one place at hand), twice,
        // two pages each, and tenant 1 in the same regions: each time looked up again.
        let mut s = PageSet::new();
        for round in 0..2u64 {
            for r in 0..6u64 {
                for tenant in 0..2 {
                    s.add(&Access { tenant, vaddr: (r * AT_HAND as u64) << 21 | round << 12, ..Access::default() });
                }
            }
        }
        assert_eq!(
            s.per_tenant(),
            [TenantPages { tenant: 0, pages_4k: 12, pages_2m: 6 }, TenantPages { tenant: 1, pages_4k: 12, pages_2m: 6 }]
        );
    }

    #[test]
    fn threads_are_measured_alone_with_the_pages_of_all_counted_once() {
        use crate::trace::native::NativeWriter;
        // Thread 0 touches pages 0..10, thread 1 pages 5..20 (one record each, 3
        // rounds): 20 distinct pages, 30 and 45 records.
        let dir = crate::scratch::Scratch::new("fp-threads");
        let path = dir.join("threads.tsim");
        let mut w = NativeWriter::new(std::fs::File::create(&path).unwrap(), true, false).unwrap();
        for _ in 0..3 {
            for (core, pages) in [(0u16, 0..10u64), (1, 5..20)] {
                for p in pages {
                    w.push(&Access {
                        core,
                        ..Access::read(0x100_0000 + (p << 12), 8, 1)
                    })
                    .unwrap();
                }
            }
        }
        w.finish().unwrap();
        let path = path.to_str().unwrap();
        let quiet = Progress::default();
        let at = |thread, limit| {
            let f = measure(
                path,
                &OpenOptions {
                    thread: Some(thread),
                    ..OpenOptions::default()
                },
                limit,
                &quiet,
            )
            .unwrap();
            (
                f.records,
                f.tenants.iter().map(|t| t.pages_4k).sum::<u64>(),
                f.from_trailer,
            )
        };
        // The whole trace: the first thread carries the union of the pages.
        assert_eq!(at(0, None), (30, 20, false));
        assert_eq!(at(1, None), (45, 0, false));
        // The first 12 records of each thread: pages 0..10 and 5..17 → 17 pages.
        assert_eq!(at(0, Some(12)), (10 + 2, 17, false));
        assert_eq!(at(1, Some(12)), (12, 0, false));
        let e = measure(
            path,
            &OpenOptions {
                thread: Some(7),
                ..OpenOptions::default()
            },
            None,
            &quiet,
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("thread 7 holds no memory references"), "{e}");
    }
}
