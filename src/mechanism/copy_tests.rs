//! Fast-tier copies of slow pages on a small machine built directly: Rainbow's four
//! translation cases (§III-E) through the migration bitmap, the bitmap cache and the
//! pointer in the slow page; making and dropping copies (clean drop vs dirty
//! write-back); HSCC's remapping; and `--verify` catching a dirty copy dropped without
//! its write-back.

use super::*;
use crate::machine::copies::{BitmapCacheConfig, CopyMode, CopySpec};
use crate::machine::placement::Placement;
use crate::machine::{Build, MachineConfig, MemEvent, MemKind, Observer, TenantKind};
use crate::trace::Access;
use crate::units::Capacity;

const FAST: TierId = TierId::FAST;
const SLOW: TierId = TierId::SLOW;

fn pg(addr: u64) -> PageRef {
    PageRef::new(0, addr)
}

/// The mechanisms of core 0 (no background threads).
fn mech<'a>(m: &'a mut Machine<Copies>, rt: &'a mut Runtime) -> Mechanisms<'a, Copies> {
    Mechanisms::on_core(m, rt, 0)
}

const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;
const PAGE: u64 = 4096;

/// Rainbow's bitmap cache as §III-D sizes it, scaled down: 8 entries, 8 ways (one
/// set), 9 cycles.
const SMALL_BITMAP_CACHE: BitmapCacheConfig = BitmapCacheConfig { entries: 8, ways: 8, latency_cycles: 9 };

/// Two cores; a 4 MiB fast tier (1024 frames) and an 8 MiB slow tier (4 superpages);
/// 2 MiB huge pages mapped on first touch; every page placed in the slow tier; copies
/// kept in `mode` (the migration bitmap takes one slow frame in Redirect mode).
fn copy_machine(mode: CopyMode, thp: bool, bitmap_cache: Option<BitmapCacheConfig>, verify: bool) -> (Machine<Copies>, Runtime) {
    copy_machine_with(MachineConfig { cores: 2, ..MachineConfig::default() }, mode, thp, bitmap_cache, verify)
}

fn copy_machine_with(mut cfg: MachineConfig, mode: CopyMode, thp: bool, bitmap_cache: Option<BitmapCacheConfig>, verify: bool) -> (Machine<Copies>, Runtime) {
    cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    let mut b = Build::new(&cfg, &[TenantKind::Process], 4 * MIB);
    b.thp = thp;
    b.placement = Placement::SlowOnly;
    b.verify = verify;
    b.redirect = CopySpec { mode, bitmap_cache, bitmap_at_memory: false };
    let rt = Runtime::new(&[], cfg.cores);
    (Machine::new(&cfg, &b).unwrap(), rt)
}

/// Records the memory controller's metadata accesses (bitmap lines, pointers).
#[derive(Default)]
struct Metadata(Vec<MemEvent>);

impl Observer for Metadata {
    fn on_memory_access(&mut self, e: &MemEvent) {
        if e.kind == MemKind::Metadata {
            self.0.push(*e);
        }
    }
}

fn read(m: &mut Machine<Copies>, obs: &mut Metadata, vaddr: u64) -> crate::machine::RefOutcome {
    m.access(0, &Access::read(vaddr, 8, 0), obs)
}

fn write(m: &mut Machine<Copies>, obs: &mut Metadata, vaddr: u64) -> crate::machine::RefOutcome {
    m.access(0, &Access::write(vaddr, 8, 0), obs)
}

fn stats(m: &Machine<Copies>) -> crate::machine::copies::CopyStats {
    m.redirect.stats.clone()
}

/// Whether any core's TLB holds a 4 KiB entry for `vaddr`'s page, and its frame.
fn small_tlb_entry(m: &Machine<Copies>, vaddr: u64) -> Option<u64> {
    m.cores
        .iter()
        .flat_map(|c| c.tlb.entries())
        .find(|&(t, va, e)| t == 0 && !e.huge && va == vaddr & !0xfff)
        .map(|(_, _, e)| e.base_pfn)
}

#[test]
fn rainbow_translation_cases_and_copy_lifecycle() {
    let (mut m, mut rt) = copy_machine(CopyMode::Redirect, true, Some(SMALL_BITMAP_CACHE), true);
    let mut obs = Metadata::default();
    let slow_base = m.space.allocator().base(SLOW);

    // Case 4: both TLBs miss. The walk maps the superpage on first touch (3 page-table
    // references with 2 MiB pages, 4 levels), then the bitmap is checked: the bitmap
    // cache misses and the superpage's bitmap line is read from memory; the bit is clear,
    // so the slow frame serves the reference.
    let v3 = BASE + 3 * PAGE + 0x40;
    let out = read(&mut m, &mut obs, v3);
    let sp = mech(&mut m, &mut rt).page(pg(BASE)).unwrap();
    assert!(sp.huge && sp.tier == SLOW, "the page lives in an NVM superpage: {sp:?}");
    assert_eq!(m.cores[0].stats.tlb_misses, 1);
    assert_eq!(m.cores[0].stats.walk_references, 3);
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.bitmap_cache_misses, s.bitmap_cache_hits, s.remaps), (1, 1, 0, 0));
    assert_eq!(s.bitmap_cache_cycles, 9, "one lookup of 9 cycles");
    assert!(s.bitmap_memory_cycles > 0, "the miss read the bitmap from memory");
    // Superpage number within the slow tier; its 64-byte bitmap line is at psn × 64 in
    // the (single) bitmap frame.
    let psn = (sp.pfn - slow_base) >> 9;
    let bitmap_frame = m.redirect.bitmap_frames[0];
    assert_eq!(obs.0.len(), 1, "one metadata access: the bitmap line");
    let e = obs.0[0];
    assert_eq!((e.paddr, e.tier, e.write), ((bitmap_frame << 12) | (psn * 64), SLOW, false));
    assert_eq!(out.paddr, (sp.pfn + 3) << 12 | 0x40, "served by the slow frame");
    assert!(out.translation_cycles >= 9 + s.bitmap_memory_cycles);
    m.check_invariants().unwrap();

    // Case 3, not migrated: another 4 KiB page of the same superpage. The superpage TLB
    // hits (L1, no cycles), the 4 KiB TLB misses, the bitmap cache hits (9 cycles) and
    // the bit is clear: the slow frame again, with no memory access for metadata.
    let v5 = BASE + 5 * PAGE;
    let out = read(&mut m, &mut obs, v5);
    assert_eq!(m.cores[0].stats.tlb_misses, 1, "no new walk");
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.bitmap_cache_hits, s.bitmap_cache_misses), (2, 1, 1));
    assert_eq!(obs.0.len(), 1);
    assert_eq!(out.translation_cycles, 9, "0 (L1 TLB hit) + 9 (bitmap cache)");
    assert_eq!(out.paddr, (sp.pfn + 5) << 12);

    // Copy that 4 KiB page into the fast tier. The mapping does not change (no
    // shootdown); the pointer is written into the slow page (one metadata write) and the
    // bit set in the cached bitmap (no memory write: the cache is write-back).
    let copy5 = mech(&mut m, &mut rt).cache_in(pg(v5)).unwrap();
    assert_eq!(m.space.tier_of(copy5), FAST);
    let cp = &m.redirect;
    assert_eq!((cp.copy_of(sp.pfn + 5), cp.original_of(copy5)), (Some(copy5), Some(sp.pfn + 5)));
    assert!(!cp.is_dirty(copy5, 1));
    assert_eq!(m.space.owner(copy5), Owner::Copy { tenant: 0, addr: v5 });
    assert_eq!(m.space.owner(sp.pfn + 5), Owner::Data { tenant: 0, addr: v5 });
    let s = stats(&m);
    assert_eq!((s.copies_made, s.bytes_in, s.metadata_writes), (1, 4096, 1));
    assert_eq!(m.stats.shootdowns, 0);
    assert_eq!(mech(&mut m, &mut rt).page(pg(BASE)).unwrap().pfn, sp.pfn, "the superpage stays mapped");
    m.check_invariants().unwrap();

    // Case 3, migrated: the superpage TLB hits, the bitmap cache hits and the bit is
    // set, so the slow page's first 8 bytes are read (the remap) and the 4 KiB TLB is
    // filled with the copy, which serves the reference.
    let out = read(&mut m, &mut obs, v5 + 0x80);
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.bitmap_cache_hits, s.remaps), (3, 2, 1));
    assert_eq!(obs.0.len(), 2);
    let e = obs.0[1];
    assert_eq!((e.paddr, e.tier, e.write), ((sp.pfn + 5) << 12, SLOW, false), "the pointer in the slow page");
    assert_eq!(out.paddr, copy5 << 12 | 0x80);
    assert_eq!(m.space.tier_of(out.paddr >> 12), FAST, "served by the fast tier");
    assert_eq!(out.translation_cycles, 9 + s.remap_cycles);
    assert_eq!(small_tlb_entry(&m, v5), Some(copy5), "the 4 KiB TLB holds the copy");
    m.check_invariants().unwrap();

    // Case 1: both TLBs hit: the 4 KiB entry wins; no bitmap check, no remap.
    let out = read(&mut m, &mut obs, v5 + 0xc0);
    assert_eq!((out.paddr, out.translation_cycles), (copy5 << 12 | 0xc0, 0));
    // Case 2: the superpage entry is gone, the 4 KiB entry still hits.
    assert!(m.cores[0].tlb.invalidate(0, BASE, true));
    let out = read(&mut m, &mut obs, v5 + 0x100);
    assert_eq!((out.paddr, out.translation_cycles), (copy5 << 12 | 0x100, 0));
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.remaps, m.cores[0].stats.tlb_misses), (3, 1, 1), "nothing new");
    assert_eq!(obs.0.len(), 2);
    m.check_invariants().unwrap();

    // A store served by the copy makes it dirty.
    let out = write(&mut m, &mut obs, v5 + 0x140);
    assert_eq!(out.paddr >> 12, copy5);
    assert!(m.redirect.is_dirty(copy5, 1));

    // A second copy that is only read stays clean. (Bring the superpage entry back with
    // a walk first: case 4 again, the bitmap cache still hits.)
    let v7 = BASE + 7 * PAGE;
    read(&mut m, &mut obs, v7);
    assert_eq!(m.cores[0].stats.tlb_misses, 2);
    let copy7 = mech(&mut m, &mut rt).cache_in(pg(v7)).unwrap();
    let out = read(&mut m, &mut obs, v7);
    assert_eq!(out.paddr >> 12, copy7);
    let s = stats(&m);
    assert_eq!((s.copies_made, s.remaps, s.metadata_writes), (2, 2, 2));
    assert!(!m.redirect.is_dirty(copy7, 1));
    m.check_invariants().unwrap();

    // Dropping the dirty copy writes it back: 4096 bytes out; the bitmap bit is cleared
    // in the cache (no memory write) and no pointer restore is needed (the whole page
    // is copied back); the 4 KiB translation is shot down.
    let bytes_out_before = stats(&m).bytes_out;
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(v5)), Ok(true));
    let s = stats(&m);
    assert_eq!((s.dirty_drops, s.clean_drops, s.bytes_out - bytes_out_before), (1, 0, 4096));
    assert_eq!(s.metadata_writes, 2, "unchanged");
    assert_eq!(m.stats.shootdowns, 1);
    assert_eq!(m.stats.pages_between[0][1], 1, "the write-back is a fast → slow copy");
    assert_eq!(m.redirect.copy_of(sp.pfn + 5), None);
    assert_eq!(m.space.owner(copy5), Owner::Free);
    assert!(m.space.allocator().is_free(copy5));
    assert_eq!(small_tlb_entry(&m, v5), None, "the copy's 4 KiB entry is gone");
    m.check_invariants().unwrap();
    // The next access goes through the bitmap again and finds the bit clear: the slow
    // frame serves it, and it holds the data written to the copy (no stale read).
    let checks = stats(&m).bitmap_checks;
    let out = read(&mut m, &mut obs, v5 + 0x140);
    assert_eq!(out.paddr, (sp.pfn + 5) << 12 | 0x140);
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.remaps), (checks + 1, 2));
    assert_eq!(m.error, None);

    // Dropping the clean copy: no copy back (bytes out unchanged), one metadata write to
    // restore the slow page's first 8 bytes; not counted as a migration.
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(v7)), Ok(false));
    let s = stats(&m);
    assert_eq!((s.clean_drops, s.dirty_drops, s.bytes_out - bytes_out_before), (1, 1, 4096));
    assert_eq!(s.metadata_writes, 3);
    assert_eq!(m.stats.pages_between[0][1], 1);
    assert_eq!(small_tlb_entry(&m, v7), None);
    let out = read(&mut m, &mut obs, v7);
    assert_eq!(out.paddr, (sp.pfn + 7) << 12);
    assert_eq!((m.redirect.held(), m.error.clone()), (0, None));
    m.check_invariants().unwrap();
    // Refusals: no copy to drop, a page already copied, a page outside a superpage.
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(v5)), Err(MechError::NotCopied { page: pg(v5) }));
    mech(&mut m, &mut rt).cache_in(pg(v5)).unwrap();
    assert_eq!(mech(&mut m, &mut rt).cache_in(pg(v5 + 8)), Err(MechError::AlreadyCopied { page: pg(v5 + 8) }));
}

#[test]
fn rainbow_without_bitmap_cache_reads_the_bitmap_on_every_check() {
    let (mut m, mut rt) = copy_machine(CopyMode::Redirect, true, None, true);
    let mut obs = Metadata::default();
    // Four references through the superpage entry (page 1 twice: a page that is not
    // copied never gets a 4 KiB entry): four checks, four misses, four memory reads of
    // the same bitmap line, no lookup cycles.
    for p in [0, 1, 2, 1] {
        read(&mut m, &mut obs, BASE + p * PAGE);
    }
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.bitmap_cache_misses, s.bitmap_cache_hits, s.bitmap_cache_cycles), (4, 4, 0, 0));
    assert_eq!(obs.0.len(), 4);
    assert!(obs.0.iter().all(|e| e.paddr == obs.0[0].paddr && !e.write && e.tier == SLOW));
    // Making a copy writes the pointer and the bitmap line in memory: 2 metadata writes.
    let copy = mech(&mut m, &mut rt).cache_in(pg(BASE + PAGE)).unwrap();
    assert_eq!(stats(&m).metadata_writes, 2);
    // The next reference to it: a bitmap read, then the pointer read.
    let out = read(&mut m, &mut obs, BASE + PAGE);
    assert_eq!(out.paddr >> 12, copy);
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.bitmap_cache_misses, s.remaps), (5, 5, 1));
    assert_eq!(obs.0.len(), 6);
    assert_eq!(obs.0[5].paddr >> 12, m.redirect.original_of(copy).unwrap());
    // Dropping it (clean) writes the pointer back and the bitmap line: 2 more.
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(BASE + PAGE)), Ok(false));
    assert_eq!(stats(&m).metadata_writes, 4);
    m.check_invariants().unwrap();
    assert_eq!(m.error, None);
}

#[test]
fn rainbow_bitmap_cache_writes_back_a_modified_bitmap_when_it_evicts_it() {
    // One entry: superpages A and B evict each other.
    let one = BitmapCacheConfig { entries: 1, ways: 1, latency_cycles: 9 };
    let (mut m, mut rt) = copy_machine(CopyMode::Redirect, true, Some(one), true);
    let mut obs = Metadata::default();
    let (a, b) = (BASE, BASE + 2 * MIB);
    read(&mut m, &mut obs, a); // A's bitmap cached (read from memory)
    mech(&mut m, &mut rt).cache_in(pg(a + PAGE)).unwrap();
    assert_eq!(stats(&m).metadata_writes, 1, "the pointer; A's bit is set in the cache");
    let line_a = obs.0[0].paddr;
    read(&mut m, &mut obs, b); // B evicts A's modified bitmap: written back, then B's read
    let s = stats(&m);
    assert_eq!((s.bitmap_cache_misses, s.metadata_writes), (2, 2));
    let writes: Vec<_> = obs.0.iter().filter(|e| e.write).collect();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].paddr, line_a, "the write-back goes to A's line");
    assert_ne!(obs.0.last().unwrap().paddr, line_a, "then B's line is read");
    // A again: a miss that finds the bit set (in memory now) and redirects to the copy.
    let out = read(&mut m, &mut obs, a + PAGE);
    assert_eq!(m.space.tier_of(out.paddr >> 12), FAST);
    assert_eq!(stats(&m).bitmap_cache_misses, 3);
    m.check_invariants().unwrap();
    assert_eq!(m.error, None);
}

#[test]
fn hscc_remap_points_the_pte_at_the_copy_and_back() {
    let (mut m, mut rt) = copy_machine(CopyMode::Remap, false, None, true);
    let mut obs = Metadata::default();
    let v = BASE + 9 * PAGE;
    write(&mut m, &mut obs, v);
    let slow = mech(&mut m, &mut rt).page(pg(v)).unwrap();
    assert_eq!((slow.tier, slow.huge), (SLOW, false));
    let copy = mech(&mut m, &mut rt).cache_in(pg(v)).unwrap();
    // The PTE now names the copy (owner Data) and the original is the Copy; the page's
    // translation was shot down; the tenant's frames moved to the fast tier.
    let now = mech(&mut m, &mut rt).page(pg(v)).unwrap();
    assert_eq!((now.pfn, now.tier), (copy, FAST));
    assert_eq!(m.space.owner(copy), Owner::Data { tenant: 0, addr: v });
    assert_eq!(m.space.owner(slow.pfn), Owner::Copy { tenant: 0, addr: v });
    assert_eq!(m.space.tenants()[0].frames_per_tier(), &[1, 0]);
    assert_eq!(m.stats.shootdowns, 1);
    m.check_invariants().unwrap();
    // References reach it through an ordinary walk: no bitmap, no metadata access.
    let out = read(&mut m, &mut obs, v);
    assert_eq!(out.paddr >> 12, copy);
    write(&mut m, &mut obs, v + 8);
    let s = stats(&m);
    assert_eq!((s.bitmap_checks, s.remaps, obs.0.len()), (0, 0, 0));
    assert!(m.redirect.is_dirty(copy, 1));
    // Dropping it copies it back and points the PTE at the original again.
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(v)), Ok(true));
    assert_eq!(mech(&mut m, &mut rt).page(pg(v)).unwrap().pfn, slow.pfn);
    assert_eq!(m.space.owner(slow.pfn), Owner::Data { tenant: 0, addr: v });
    assert_eq!(m.space.tenants()[0].frames_per_tier(), &[0, 1]);
    m.check_invariants().unwrap();
    read(&mut m, &mut obs, v + 8);
    assert_eq!(m.error, None, "the written-back data is the newest");
}

/// `--verify` must notice a dirty copy dropped without its write-back: the next read
/// is served by the original, which holds an older version.
fn dirty_drop_without_writeback_is_caught(mode: CopyMode, thp: bool) {
    let (mut m, mut rt) = copy_machine(mode, thp, Some(SMALL_BITMAP_CACHE), true);
    let mut obs = Metadata::default();
    let v = BASE + 2 * PAGE;
    write(&mut m, &mut obs, v); // version 1, in the slow frame
    mech(&mut m, &mut rt).cache_in(pg(v)).unwrap();
    write(&mut m, &mut obs, v); // version 2, only in the copy
    assert_eq!(m.error, None);
    m.break_migration_copy = true;
    assert_eq!(mech(&mut m, &mut rt).cache_out(pg(v)), Ok(true), "dirty, yet not written back");
    m.check_invariants().unwrap(); // the structure is fine: only the data is stale
    read(&mut m, &mut obs, v);
    let e = m.error.clone().expect("the stale read must be caught");
    assert!(e.starts_with("verify: stale read") && e.contains("frame holds version 1, newest is 2"), "{e}");
}

#[test]
fn verify_catches_a_dirty_rainbow_copy_dropped_without_writeback() {
    dirty_drop_without_writeback_is_caught(CopyMode::Redirect, true);
}

#[test]
fn verify_catches_a_dirty_hscc_copy_dropped_without_writeback() {
    dirty_drop_without_writeback_is_caught(CopyMode::Remap, false);
}

#[test]
fn a_small_l2_hit_behind_a_superpage_l1_hit_counts_once_as_an_l2_hit() {
    // One-entry 4 KiB L1 TLB: copies of pages 5 and 7 evict each other's 4 KiB entry
    // from L1, while the L2 keeps both.
    let cfg = MachineConfig { cores: 2, tlb: crate::machine::tlb::TlbConfig { l1_small_entries: 1, l1_small_ways: 1, ..Default::default() }, ..Default::default() };
    let (mut m, mut rt) = copy_machine_with(cfg, CopyMode::Redirect, true, Some(SMALL_BITMAP_CACHE), true);
    let mut obs = Metadata::default();
    let (v5, v7) = (BASE + 5 * PAGE, BASE + 7 * PAGE);
    read(&mut m, &mut obs, v5);
    let c5 = mech(&mut m, &mut rt).cache_in(pg(v5)).unwrap();
    mech(&mut m, &mut rt).cache_in(pg(v7)).unwrap();
    read(&mut m, &mut obs, v5); // remap: the 4 KiB entry of the copy of page 5
    read(&mut m, &mut obs, v7); // remap: page 7's entry evicts page 5's from the L1
    let (l1, l2) = (m.cores[0].stats.tlb_l1_hits, m.cores[0].stats.tlb_l2_hits);
    // The superpage entry hits in L1; page 5's 4 KiB entry is found in L2 and serves.
    let out = read(&mut m, &mut obs, v5);
    assert_eq!(out.paddr >> 12, c5);
    assert_eq!((m.cores[0].stats.tlb_l1_hits - l1, m.cores[0].stats.tlb_l2_hits - l2), (0, 1));
    assert_eq!(out.translation_cycles, 8, "the L2 latency");
    m.check_invariants().unwrap();
}
