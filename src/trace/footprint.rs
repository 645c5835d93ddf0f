//! Footprints measured from traces: the distinct 4 KiB pages each tenant touches.
//!
//! [`PageSet`] keeps one 512-bit bitmap per 2 MiB region touched, in a hash map
//! keyed by tenant and region, so it costs about 80 bytes per 2 MiB region — a few
//! bits per page of a dense footprint, 80 bytes per page of the sparsest — and it
//! counts 4 KiB and 2 MiB pages at once. The last region used is remembered, so
//! runs of accesses within one region skip the hash lookup.
//!
//! The engine needs a trace's footprint before it builds the machine (tier
//! capacities may be given as a share of it). Native traces written by tiersim
//! carry it in their trailer; for every other trace, and for the first N records
//! of any trace, [`measure`] makes one streaming pass over the file first. A run
//! that took a trailer's word checks it against the records it reads
//! ([`FootprintCheck`]).

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

/// The distinct 4 KiB pages touched, per tenant.
#[derive(Default)]
pub struct PageSet {
    regions: IntMap<u64, [u64; 8]>,
    last_key: u64,
    last: [u64; 8],
    has_last: bool,
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
        if !self.has_last || key != self.last_key {
            self.switch(key);
        }
        let page = (a.vaddr >> 12) & 511;
        self.last[(page >> 6) as usize] |= 1 << (page & 63);
    }

    /// Stores the cached region and loads region `key`.
    fn switch(&mut self, key: u64) {
        if self.has_last {
            self.regions.insert(self.last_key, self.last);
        }
        self.last = self.regions.get(&key).copied().unwrap_or([0; 8]);
        self.last_key = key;
        self.has_last = true;
    }

    /// Returns, for every tenant that touched memory, its 4 KiB and 2 MiB page counts,
    /// by tenant.
    pub fn per_tenant(&self) -> Vec<TenantPages> {
        let mut by: std::collections::BTreeMap<u16, TenantPages> = Default::default();
        let mut count = |key: u64, bits: &[u64; 8]| {
            let pages: u64 = bits.iter().map(|w| w.count_ones() as u64).sum();
            if pages > 0 {
                let tenant = (key >> 48) as u16;
                let t = by.entry(tenant).or_insert(TenantPages { tenant, pages_4k: 0, pages_2m: 0 });
                t.pages_4k += pages;
                t.pages_2m += 1;
            }
        };
        for (&key, bits) in &self.regions {
            if !(self.has_last && key == self.last_key) {
                count(key, bits);
            }
        }
        if self.has_last {
            count(self.last_key, &self.last);
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

/// Measures the trace at `path`, or its first `limit` records: from a native
/// trace's trailer when it has one, the file can be seeked and the whole trace is
/// wanted, otherwise with one streaming pass (shown on `progress`). A trace without
/// a single record is an error.
pub fn measure(path: &str, opts: &OpenOptions, limit: Option<u64>, progress: &Progress) -> Result<TraceFacts> {
    if path != "-" {
        if let Some(facts) = native::read_trailer(path)?.filter(|f| limit.is_none_or(|n| n >= f.records)) {
            if facts.records == 0 {
                bail!("{path}: the trace is empty: it holds no memory references");
            }
            return Ok(facts);
        }
    }
    let raw: Box<dyn std::io::Read> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("{path}: cannot open"))?;
        progress.footprint_pass(path, file.metadata().map_or(0, |m| m.len()));
        Box::new(Counted { file, progress: progress.clone() })
    };
    let name = if path == "-" { "<stdin>" } else { path };
    let mut opened = open_reader(raw, name, opts)?;
    let mut source = super::take(opened.source, limit);
    let mut set = PageSet::new();
    let mut buf = Vec::with_capacity(4096);
    let mut records = 0u64;
    loop {
        buf.clear();
        source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            break;
        }
        records += buf.len() as u64;
        for a in &buf {
            set.add(a);
        }
    }
    if records == 0 {
        let skipped = source.malformed_skipped();
        let why = if skipped > 0 { format!(" ({skipped} malformed lines skipped)") } else { String::new() };
        bail!("{name}: the trace is empty: it holds no memory references{why}");
    }
    Ok(TraceFacts { tenants: set.per_tenant(), records, record_tenants: opened.record_tenants, from_trailer: false, note: opened.notes.pop() })
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
    }
}
