//! Footprints measured from traces: the distinct 4 KiB pages each tenant touches.
//!
//! [`PageSet`] keeps one 512-bit bitmap per 2 MiB region touched, in a hash map
//! keyed by tenant and region, so it costs about 80 bytes per 2 MiB region — a few
//! bits per page of a dense footprint, 80 bytes per page of the sparsest — and it
//! counts 4 KiB and 2 MiB pages at once. The bitmaps of the last four regions
//! used are kept at hand, so accesses that stay among a few regions (a program's
//! stack, heap and data) skip the hash lookup.
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

/// Regions whose bitmaps [`PageSet`] keeps at hand.
const RECENT: usize = 4;
/// A key no region has (tenants have 16 bits above the 36-bit region number).
const NO_REGION: u64 = u64::MAX;

/// The distinct 4 KiB pages touched, per tenant.
pub struct PageSet {
    regions: IntMap<u64, [u64; 8]>,
    /// The regions used last and their bitmaps, which live here (not in
    /// `regions`) while they are at hand; replaced round robin.
    keys: [u64; RECENT],
    bits: [[u64; 8]; RECENT],
    last: usize,
    next: usize,
}

impl Default for PageSet {
    fn default() -> PageSet {
        PageSet { regions: IntMap::default(), keys: [NO_REGION; RECENT], bits: [[0; 8]; RECENT], last: 0, next: 0 }
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
        if self.keys[self.last] != key {
            self.last = self.slot(key);
        }
        let page = (a.vaddr >> 12) & 511;
        self.bits[self.last][(page >> 6) as usize] |= 1 << (page & 63);
    }

    /// The slot holding region `key`, loading it in place of the oldest if needed.
    fn slot(&mut self, key: u64) -> usize {
        if let Some(i) = self.keys.iter().position(|&k| k == key) {
            return i;
        }
        let i = self.next;
        self.next = (i + 1) % RECENT;
        if self.keys[i] != NO_REGION {
            self.regions.insert(self.keys[i], self.bits[i]);
        }
        self.bits[i] = self.regions.remove(&key).unwrap_or([0; 8]);
        self.keys[i] = key;
        i
    }

    /// Returns, for every tenant that touched memory, its 4 KiB and 2 MiB page counts,
    /// by tenant.
    pub fn per_tenant(&self) -> Vec<TenantPages> {
        let mut by: std::collections::BTreeMap<u16, TenantPages> = Default::default();
        let at_hand = self.keys.iter().zip(&self.bits).filter(|(&k, _)| k != NO_REGION);
        for (&key, bits) in self.regions.iter().chain(at_hand) {
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
        // Six regions in turn, twice, two pages each: more regions than are kept at
        // hand, so bitmaps go to the map and come back.
        let mut s = PageSet::new();
        for round in 0..2u64 {
            for r in 0..6u64 {
                s.add(&Access { vaddr: r << 21 | round << 12, ..Access::default() });
            }
        }
        assert_eq!(s.per_tenant(), [TenantPages { tenant: 0, pages_4k: 12, pages_2m: 6 }]);
    }
}
