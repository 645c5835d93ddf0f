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
//! carry it in their trailer; for every other trace [`measure`] makes one streaming
//! pass over the file first.

use super::meta::TraceMeta;
use super::{native, open, Access, OpenOptions};
use anyhow::Result;
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
    /// Whether records carry their own core (threads recorded as cores).
    pub record_cores: bool,
    /// The metadata block of a recorded native trace.
    pub meta: Option<TraceMeta>,
}

impl TraceFacts {
    /// Bytes of 4 KiB pages touched, all tenants together.
    pub fn footprint_bytes(&self) -> u64 {
        self.tenants.iter().map(|t| t.pages_4k).sum::<u64>() << 12
    }
}

/// Measures the trace at `path`: from a native trace's trailer when it has one
/// and the file can be seeked, otherwise with one streaming pass.
///
/// With `opts.thread`, the facts are those of one thread: its records, and the
/// pages of the whole trace for the trace's first thread and none for the others,
/// since the threads of a process share its address space (their footprint is the
/// union of what they touch, counted once).
pub fn measure(path: &str, opts: &OpenOptions) -> Result<TraceFacts> {
    let Some(thread) = opts.thread else { return measure_whole(path, opts) };
    let whole = measure_whole(path, &OpenOptions { thread: None, ..opts.clone() })?;
    let (records, first) = match &whole.meta {
        Some(meta) if whole.record_cores => {
            (meta.threads.iter().find(|t| t.core == thread).map_or(0, |t| t.records), meta.cores().first() == Some(&thread))
        }
        _ => (count(open(path, opts)?.source.as_mut())?, super::threads::threads(path, opts)?.first() == Some(&thread)),
    };
    Ok(TraceFacts { tenants: if first { whole.tenants } else { Vec::new() }, records, ..whole })
}

/// Reads `source` to its end and returns how many records it holds.
fn count(source: &mut dyn super::Source) -> Result<u64> {
    let mut buf = Vec::with_capacity(4096);
    let mut records = 0u64;
    loop {
        buf.clear();
        source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            return Ok(records);
        }
        records += buf.len() as u64;
    }
}

/// Measures every record of the trace at `path`.
fn measure_whole(path: &str, opts: &OpenOptions) -> Result<TraceFacts> {
    if path != "-" {
        if let Some(facts) = native::read_trailer(path)? {
            return Ok(facts);
        }
    }
    let mut opened = open(path, opts)?;
    let mut set = PageSet::new();
    let mut buf = Vec::with_capacity(4096);
    let mut records = 0u64;
    loop {
        buf.clear();
        opened.source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            break;
        }
        records += buf.len() as u64;
        for a in &buf {
            set.add(a);
        }
    }
    let meta = opened.source.meta().map(|m| TraceMeta::parse(m, path)).transpose()?;
    Ok(TraceFacts { tenants: set.per_tenant(), records, record_tenants: opened.record_tenants, record_cores: opened.record_cores, meta })
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
