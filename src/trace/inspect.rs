//! `tiersim inspect`: the statistics of a trace that tell how a tiered memory will
//! fare on it, in one streaming pass.
//!
//! - Totals: references, reads, writes, instructions (counted as the engine counts
//!   them: each access is one instruction plus its `instrs`).
//! - Footprint: distinct 4 KiB pages and 2 MiB pages (per tenant, summed).
//! - The CDF of references per 4 KiB page over the whole trace.
//! - Per interval of `interval` references, Rainbow's Table I (§II): the *hot
//!   pages* are the smallest set of 4 KiB pages that covers 70 % of the interval's
//!   references (pages ranked by their count, as CHOP does); reported are the
//!   working set (pages touched in the interval), the minimum accesses of a hot page,
//!   and the hot pages' share of the working set. And Rainbow's Table II: the
//!   superpages (2 MiB) holding hot pages, distributed by how many hot 4 KiB pages
//!   each holds (1–32, 33–64, 65–128, 129–256, 257–384, 385–512).
//! - memos §3.1: pages in the read domain and the write domain, a page being in the
//!   write domain when 2 · writes ≥ reads (writes weigh double).
//! - The subpage-migration paper's Fig. 1 (§2.3): per tenant, the 4 KiB pages touched
//!   times 4 KiB over the huge pages touched times the huge-page size, for 512 KiB
//!   (the paper's huge page, §5) and 2 MiB pages. 100 % means every huge page touched
//!   is touched in all its 4 KiB pages; a low ratio is internal fragmentation, hot
//!   data scattered over many huge pages.
//!
//! Rainbow measures every 10^8 cycles; a trace has no cycles, so intervals are
//! counted in references. Memory is one counter pair per page touched (the whole
//! trace's and the current interval's).

use super::footprint::{page_key, IntMap};
use super::meta::{SampledRun, TraceMeta};
use super::Source;
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write as _;

/// Share of an interval's references its hot pages cover (Rainbow §II, after CHOP).
pub const HOT_SHARE: f64 = 0.70;

/// Upper bounds of Rainbow Table II's bins of hot 4 KiB pages per superpage.
pub const SUPERPAGE_BINS: [u32; 6] = [32, 64, 128, 256, 384, 512];

/// Huge-page sizes of the Fig. 1 ratio (subpage-migration paper §2.3 and §5: its
/// huge page is 512 KiB; 2 MiB is x86's).
pub const HUGE_PAGE_SIZES: [u64; 2] = [512 << 10, 2 << 20];

/// Reads and writes of one page.
#[derive(Clone, Copy, Default)]
struct Count {
    reads: u32,
    writes: u32,
}

impl Count {
    fn total(self) -> u64 {
        self.reads as u64 + self.writes as u64
    }
}

/// One point of the CDF of references per page.
#[derive(Clone, Debug, Serialize)]
pub struct CdfPoint {
    /// References per page, at most.
    pub refs_at_most: u64,
    /// Share of pages with at most that many references.
    pub pages: f64,
    /// Share of all references that go to those pages.
    pub references: f64,
}

/// Hot-page statistics of one interval (or of the whole trace).
#[derive(Clone, Debug, Default, Serialize)]
pub struct HotStats {
    /// First reference of the interval (0-based) and its number of references.
    pub start: u64,
    pub references: u64,
    /// Pages touched (Rainbow's working set) and their bytes.
    pub working_set_pages: u64,
    pub working_set_bytes: u64,
    /// Pages in the hot set and the fewest accesses of any of them.
    pub hot_pages: u64,
    pub hot_min_accesses: u64,
    /// Hot pages as a share of the working set.
    pub hot_share: f64,
    /// Superpages holding at least one hot page, and their distribution over
    /// [`SUPERPAGE_BINS`] as shares.
    pub hot_superpages: u64,
    pub superpage_bins: [f64; 6],
    /// memos §3.1 domains of the pages touched.
    pub read_domain_pages: u64,
    pub write_domain_pages: u64,
}

/// How fully the huge pages of one size are used (Fig. 1 of the subpage-migration
/// paper).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HugeUse {
    pub huge_page_bytes: u64,
    /// Huge pages of that size holding at least one page touched.
    pub huge_pages: u64,
    /// 4 KiB pages touched × 4 KiB / (`huge_pages` × `huge_page_bytes`).
    pub ratio: f64,
}

/// Fig. 1's ratios of one tenant, or of all of them (`tenant` absent).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HugePageUse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<u16>,
    pub pages_4k: u64,
    /// One per [`HUGE_PAGE_SIZES`].
    pub sizes: Vec<HugeUse>,
}

/// Everything `tiersim inspect` reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Inspection {
    pub trace: String,
    pub format: String,
    pub references: u64,
    pub reads: u64,
    pub writes: u64,
    pub instructions: u64,
    pub pages_4k: u64,
    pub pages_2m: u64,
    pub footprint_bytes: u64,
    pub interval_references: u64,
    pub cdf: Vec<CdfPoint>,
    pub whole: HotStats,
    pub intervals: Vec<HotStats>,
    pub malformed_skipped: u64,
    /// Fig. 1 of the subpage-migration paper: all tenants, then each tenant.
    pub huge_page_use: Vec<HugePageUse>,
    /// The part of the program's run the trace holds, when not all of it (from a
    /// recorded trace's metadata).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SampledRun>,
}

/// Computes the hot-page statistics of `pages` (page key → counts).
fn hot_stats(pages: &IntMap<u64, Count>, start: u64, references: u64) -> HotStats {
    let mut counts: Vec<(u64, u64)> = pages.iter().map(|(&k, c)| (c.total(), k)).collect();
    counts.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let need = (references as f64 * HOT_SHARE).ceil() as u64;
    let mut covered = 0;
    let mut hot = 0usize;
    while covered < need && hot < counts.len() {
        covered += counts[hot].0;
        hot += 1;
    }
    let mut per_superpage: IntMap<u64, u32> = IntMap::default();
    for &(_, key) in &counts[..hot] {
        *per_superpage.entry(key >> 9).or_default() += 1;
    }
    let mut bins = [0u64; 6];
    for &n in per_superpage.values() {
        let b = SUPERPAGE_BINS.iter().position(|&hi| n <= hi).unwrap_or(5);
        bins[b] += 1;
    }
    let supers = per_superpage.len() as u64;
    let share = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    let write_domain = pages.values().filter(|c| 2 * c.writes as u64 >= c.reads as u64).count() as u64;
    let ws = pages.len() as u64;
    HotStats {
        start,
        references,
        working_set_pages: ws,
        working_set_bytes: ws << 12,
        hot_pages: hot as u64,
        hot_min_accesses: if hot > 0 { counts[hot - 1].0 } else { 0 },
        hot_share: share(hot as u64, ws),
        hot_superpages: supers,
        superpage_bins: bins.map(|b| share(b, supers)),
        read_domain_pages: ws - write_domain,
        write_domain_pages: write_domain,
    }
}

/// Reads `source` to its end and computes its statistics, with intervals of
/// `interval` references (at least 1).
pub fn inspect(source: &mut dyn Source, interval: u64) -> Result<Inspection> {
    let interval = interval.max(1);
    let mut all: IntMap<u64, Count> = IntMap::default();
    let mut cur: IntMap<u64, Count> = IntMap::default();
    let mut r = Inspection { interval_references: interval, ..Default::default() };
    let mut in_interval = 0u64;
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            break;
        }
        for a in &buf {
            let key = page_key(a.tenant, a.vaddr);
            let w = a.is_write();
            for map in [&mut all, &mut cur] {
                let c = map.entry(key).or_default();
                if w {
                    c.writes = c.writes.saturating_add(1);
                } else {
                    c.reads = c.reads.saturating_add(1);
                }
            }
            r.references += 1;
            r.writes += w as u64;
            r.instructions += a.instrs as u64 + 1;
            in_interval += 1;
            if in_interval == interval {
                r.intervals.push(hot_stats(&cur, r.references - in_interval, in_interval));
                cur.clear();
                in_interval = 0;
            }
        }
    }
    if in_interval > 0 {
        r.intervals.push(hot_stats(&cur, r.references - in_interval, in_interval));
    }
    r.reads = r.references - r.writes;
    r.pages_4k = all.len() as u64;
    let mut regions: Vec<u64> = all.keys().map(|k| k >> 9).collect();
    regions.sort_unstable();
    regions.dedup();
    r.pages_2m = regions.len() as u64;
    r.footprint_bytes = r.pages_4k << 12;
    r.whole = hot_stats(&all, 0, r.references);
    r.cdf = cdf(&all, r.references);
    r.huge_page_use = huge_page_use(&all);
    r.malformed_skipped = source.malformed_skipped();
    r.sampled = source.meta().map(|m| TraceMeta::parse(m, "trace")).transpose()?.and_then(|m| m.sampled_run());
    Ok(r)
}

/// Fig. 1's ratios over all tenants (first) and per tenant, from the keys of the
/// pages touched ([`page_key`]: the tenant above bit 48, the 4 KiB page number below).
fn huge_page_use(pages: &IntMap<u64, Count>) -> Vec<HugePageUse> {
    let mut keys: Vec<u64> = pages.keys().copied().collect();
    keys.sort_unstable();
    let tenant_of = |k: u64| (k >> 48) as u16;
    // One row per tenant; sorted keys put each tenant's pages, and each huge page's
    // 4 KiB pages, next to each other, so a huge page is new when its number changes.
    let mut rows: Vec<(u16, u64, [u64; 2])> = Vec::new();
    let shifts = HUGE_PAGE_SIZES.map(|b| (b >> 12).trailing_zeros());
    let mut last = [u64::MAX; 2];
    for &k in &keys {
        let t = tenant_of(k);
        if rows.last().map(|r| r.0) != Some(t) {
            rows.push((t, 0, [0; 2]));
        }
        let row = rows.last_mut().unwrap();
        row.1 += 1;
        for i in 0..2 {
            let region = k >> shifts[i];
            if region != last[i] {
                row.2[i] += 1;
                last[i] = region;
            }
        }
    }
    let make = |tenant, pages_4k: u64, huge: [u64; 2]| HugePageUse {
        tenant,
        pages_4k,
        sizes: (0..2)
            .map(|i| HugeUse {
                huge_page_bytes: HUGE_PAGE_SIZES[i],
                huge_pages: huge[i],
                ratio: if huge[i] == 0 { 0.0 } else { (pages_4k << 12) as f64 / (huge[i] * HUGE_PAGE_SIZES[i]) as f64 },
            })
            .collect(),
    };
    let total = rows.iter().fold((0, [0; 2]), |(p, h), r| (p + r.1, [h[0] + r.2[0], h[1] + r.2[1]]));
    let mut out = vec![make(None, total.0, total.1)];
    out.extend(rows.iter().map(|r| make(Some(r.0), r.1, r.2)));
    out
}

/// The CDF of references per page at 1, 2, 4, … references, up to the hottest page.
fn cdf(pages: &IntMap<u64, Count>, references: u64) -> Vec<CdfPoint> {
    let mut counts: Vec<u64> = pages.values().map(|c| c.total()).collect();
    counts.sort_unstable();
    let mut out = Vec::new();
    let (mut i, mut refs) = (0usize, 0u64);
    let mut t = 1u64;
    while i < counts.len() {
        while i < counts.len() && counts[i] <= t {
            refs += counts[i];
            i += 1;
        }
        out.push(CdfPoint { refs_at_most: t, pages: i as f64 / counts.len() as f64, references: refs as f64 / references.max(1) as f64 });
        t *= 2;
    }
    out
}

/// Intervals printed in the table (all are in the JSON).
const TABLE_INTERVALS: usize = 24;

/// Tenants printed in the Fig. 1 table (all are in the JSON).
const TABLE_TENANTS: usize = 32;

/// The human-readable report.
pub fn table(r: &Inspection) -> String {
    let mut s = String::new();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let pct = |x: f64| format!("{:.2}%", x * 100.0);
    let _ = writeln!(s, "trace             {} ({})", r.trace, r.format);
    let _ = writeln!(s, "references        {} ({} reads, {} writes, {} write share)", r.references, r.reads, r.writes, pct(r.writes as f64 / r.references.max(1) as f64));
    let _ = writeln!(s, "instructions      {}", r.instructions);
    let _ = writeln!(s, "footprint         {} 4 KiB pages ({:.2} MiB), {} 2 MiB pages", r.pages_4k, mib(r.footprint_bytes), r.pages_2m);
    let _ = writeln!(s, "page domains      {} read-domain, {} write-domain (memos §3.1: 2·writes ≥ reads)", r.whole.read_domain_pages, r.whole.write_domain_pages);
    if r.malformed_skipped > 0 {
        let _ = writeln!(s, "malformed lines   {} skipped", r.malformed_skipped);
    }
    if let Some(run) = &r.sampled {
        let _ = writeln!(
            s,
            "sampled           {} (1/{:.1} of the instructions the program ran until the recording ended): the figures here cover the recorded windows; that whole span has about {:.0} references and {:.0} instructions",
            run.sampling.describe(),
            run.scale,
            r.references as f64 * run.scale,
            r.instructions as f64 * run.scale
        );
    }
    let _ = writeln!(s, "\nreferences per 4 KiB page (CDF)");
    let _ = writeln!(s, "  {:>10}  {:>8}  {:>10}", "refs <=", "pages", "references");
    for p in &r.cdf {
        let _ = writeln!(s, "  {:>10}  {:>8}  {:>10}", p.refs_at_most, pct(p.pages), pct(p.references));
    }
    let _ = writeln!(s, "\nhuge pages used (subpage-migration paper Fig. 1: 4 KiB pages touched x 4 KiB / huge pages touched x size)");
    let _ = writeln!(s, "  {:<8} {:>10} {:>12} {:>8} {:>10} {:>8}", "tenant", "4K pages", "512K pages", "ratio", "2M pages", "ratio");
    for u in r.huge_page_use.iter().take(TABLE_TENANTS + 1) {
        let label = u.tenant.map_or("all".to_string(), |t| t.to_string());
        let _ = writeln!(s, "  {:<8} {:>10} {:>12} {:>8} {:>10} {:>8}", label, u.pages_4k, u.sizes[0].huge_pages, pct(u.sizes[0].ratio), u.sizes[1].huge_pages, pct(u.sizes[1].ratio));
    }
    if r.huge_page_use.len() > TABLE_TENANTS + 1 {
        let _ = writeln!(s, "  … {} more tenants (all of them in --json)", r.huge_page_use.len() - TABLE_TENANTS - 1);
    }
    let _ = writeln!(s, "\nhot pages (Rainbow Table I: smallest set of 4 KiB pages with 70% of an interval's references) and");
    let _ = writeln!(s, "superpages by hot 4 KiB pages held (Rainbow Table II), intervals of {} references", r.interval_references);
    let _ = writeln!(
        s,
        "  {:<9} {:>10} {:>11} {:>8} {:>8} {:>7} {:>6} | {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} | {:>6} {:>6}",
        "interval", "refs", "WS (MiB)", "hot", "min acc", "hot %", "SPs", "1-32", "33-64", "65-128", "129-256", "257-384", "385-512", "RD", "WD"
    );
    let row = |s: &mut String, label: &str, h: &HotStats| {
        let b = h.superpage_bins.map(|x| format!("{:.1}%", x * 100.0));
        let _ = writeln!(
            s,
            "  {:<9} {:>10} {:>11.2} {:>8} {:>8} {:>7} {:>6} | {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} | {:>6} {:>6}",
            label,
            h.references,
            mib(h.working_set_bytes),
            h.hot_pages,
            h.hot_min_accesses,
            format!("{:.2}", h.hot_share * 100.0),
            h.hot_superpages,
            b[0],
            b[1],
            b[2],
            b[3],
            b[4],
            b[5],
            h.read_domain_pages,
            h.write_domain_pages
        );
    };
    row(&mut s, "all", &r.whole);
    for (i, h) in r.intervals.iter().take(TABLE_INTERVALS).enumerate() {
        row(&mut s, &i.to_string(), h);
    }
    if r.intervals.len() > TABLE_INTERVALS {
        let _ = writeln!(s, "  … {} more intervals (all of them in --json)", r.intervals.len() - TABLE_INTERVALS);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Access;

    struct Fixed(Vec<Access>);

    impl Source for Fixed {
        fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
            let n = self.0.len().min(max);
            out.extend(self.0.drain(..n));
            Ok(())
        }
    }

    #[test]
    fn hot_set_superpages_and_domains_by_hand() {
        // Page A (0x1000) 6 reads, page B (0x2000) 2 reads + 2 writes, pages C and D
        // (0x20_0000, 0x20_1000: another superpage) 1 write each: 12 references.
        // 70 % of 12 = 8.4 → 9 references: A (6) then B (4) = 10 ≥ 9, so 2 hot pages,
        // the fewest accesses 4, hot share 2/4, both in one superpage (bin 1–32).
        // Domains: A read (0 ≥ 6 false); B write (4 ≥ 2); C, D write.
        let mut v = Vec::new();
        v.extend((0..6).map(|_| Access::read(0x1000, 8, 0)));
        v.extend((0..2).map(|_| Access::read(0x2000, 8, 1)));
        v.extend((0..2).map(|_| Access::write(0x2008, 8, 0)));
        v.push(Access::write(0x20_0000, 8, 0));
        v.push(Access::write(0x20_1000, 8, 0));
        let r = inspect(&mut Fixed(v), 1_000).unwrap();
        assert_eq!((r.references, r.reads, r.writes, r.instructions), (12, 8, 4, 14));
        assert_eq!((r.pages_4k, r.pages_2m), (4, 2));
        let h = &r.whole;
        assert_eq!((h.working_set_pages, h.hot_pages, h.hot_min_accesses, h.hot_superpages), (4, 2, 4, 1));
        assert_eq!(h.hot_share, 0.5);
        assert_eq!(h.superpage_bins, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!((h.read_domain_pages, h.write_domain_pages), (1, 3));
        assert_eq!(r.intervals.len(), 1);
        // CDF: counts 1, 1, 4, 6: ≤1 → 2 pages (2 refs), ≤2 same, ≤4 → 3 (6), ≤8 → 4 (12).
        let pts: Vec<(u64, f64, f64)> = r.cdf.iter().map(|p| (p.refs_at_most, p.pages, p.references)).collect();
        assert_eq!(pts, [(1, 0.5, 2.0 / 12.0), (2, 0.5, 2.0 / 12.0), (4, 0.75, 0.5), (8, 1.0, 1.0)]);
        let r = inspect(&mut Fixed((0..10).map(|i| Access::read(i << 12, 8, 0)).collect()), 4).unwrap();
        assert_eq!(r.intervals.iter().map(|h| h.references).collect::<Vec<_>>(), [4, 4, 2]);
    }

    #[test]
    fn huge_page_use_by_hand() {
        // Tenant 0 touches 131 pages: all 128 of the 512 KiB page at 0 and 3 of the next
        // one, both inside one 2 MiB page: 131/256 at 512 KiB, 131/512 at 2 MiB.
        // Tenant 1 touches one page: 1/128 and 1/512. All: 132 pages over three 512 KiB
        // pages (132/384) and two 2 MiB pages (132/1024). Repeats change nothing.
        let mut v: Vec<Access> = (0..131u64).map(|i| Access::read(i << 12, 8, 0)).collect();
        v.extend((0..131u64).map(|i| Access::write((i << 12) + 64, 8, 0)));
        let mut t1 = Access::read(0x40_0000, 8, 0);
        t1.tenant = 1;
        v.push(t1);
        let r = inspect(&mut Fixed(v), 1_000).unwrap();
        type Row = (Option<u16>, u64, Vec<(u64, f64)>);
        let got: Vec<Row> =
            r.huge_page_use.iter().map(|u| (u.tenant, u.pages_4k, u.sizes.iter().map(|h| (h.huge_pages, h.ratio)).collect())).collect();
        assert_eq!(
            got,
            [
                (None, 132, vec![(3, 132.0 / 384.0), (2, 132.0 / 1024.0)]),
                (Some(0), 131, vec![(2, 131.0 / 256.0), (1, 131.0 / 512.0)]),
                (Some(1), 1, vec![(1, 1.0 / 128.0), (1, 1.0 / 512.0)]),
            ]
        );
        assert!(table(&r).contains("51.17%"), "{}", table(&r));
    }
}
