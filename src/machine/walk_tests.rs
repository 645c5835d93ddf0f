//! The walker's reads through the caches, or with `machine.page_table.walk_reads =
//! "uncached"` from memory, one after another at the tier's latency (Rainbow §III-E's
//! cost model: a 4 KiB walk costs 4 × t_dr).

use super::*;
use crate::units::Capacity;

const BASE: u64 = 0x7f00_0000_0000;
const MIB: u64 = 1 << 20;

/// One core; a DRAM whose every access takes 50 ns, row hit or miss, read or write,
/// with no write queue (so a write's latency is its own), at 3.2 GHz 160 cycles; an
/// MLP of 1, so that a reference's memory access completes before the next reference
/// starts and no access waits for another.
fn config(walks: WalkReads) -> MachineConfig {
    let mut cfg = MachineConfig { cores: 1, mlp: 1.0, ..MachineConfig::default() };
    cfg.page_table.walk_reads = walks;
    let fast = &mut cfg.tiers.fast;
    fast.capacity = Capacity::Bytes(16 * MIB);
    (fast.read_hit_ns, fast.read_miss_ns, fast.write_hit_ns, fast.write_miss_ns) = (50.0, 50.0, 50.0, 50.0);
    fast.write_queue_entries = 0;
    cfg.tiers.slow.capacity = Capacity::Bytes(16 * MIB);
    cfg
}

/// The DRAM's latency in cycles: 50 ns at 3.2 GHz.
const DRAM: u64 = 160;

fn machine(cfg: &MachineConfig) -> Machine {
    Machine::new(cfg, &Build::new(cfg, &[TenantKind::Process], 8 * MIB)).unwrap()
}

fn read(m: &mut Machine, vaddr: u64) -> RefOutcome {
    m.access(0, &Access::read(vaddr, 8, 0), &mut ())
}

#[test]
fn an_uncached_walk_reads_every_level_from_memory() {
    assert_eq!(config(WalkReads::Cached).cycles(50.0), DRAM);
    // The second page's walk, after the first page's: through the caches every line
    // it reads is in the L1 (the first walk read the same upper entries, and the
    // second PTE shares the first's line), so it costs the first-touch fault and 4 L1
    // hits (the psc tests' case); uncached, the fault and 4 DRAM reads of 160 cycles,
    // each issued when the previous one arrived. The page tables live in DRAM (the
    // fastest tier with room).
    let second_walk = |walks: WalkReads| {
        let mut m = machine(&config(walks));
        read(&mut m, BASE);
        let before = (m.cores[0].stats.walk_references, m.cores[0].stats.walk_memory_accesses);
        let t = read(&mut m, BASE + 4096).translation_cycles;
        (t, m.cores[0].stats.walk_references - before.0, m.cores[0].stats.walk_memory_accesses - before.1)
    };
    let cfg = config(WalkReads::Cached);
    let (fault, l1) = (cfg.cycles(cfg.costs.page_fault_ns), cfg.caches[0].latency_cycles);
    assert_eq!(second_walk(WalkReads::Cached), (fault + 4 * l1, 4, 0));
    assert_eq!(second_walk(WalkReads::Uncached), (fault + 4 * DRAM, 4, 4));
    // So the uncached walk costs 4 × (160 − 3) = 628 cycles more.
    assert_eq!(second_walk(WalkReads::Uncached).0 - second_walk(WalkReads::Cached).0, 628);
}

#[test]
fn a_stream_that_misses_the_tlb_pays_four_dram_reads_a_walk() {
    // 2048 pages of 4 KiB read in turn, twice. The TLBs are LRU: the L1's 8 sets and
    // the L2's 64 each see 256 and 32 pages in a cycle, more than their 4 and 8 ways,
    // so on the second pass (every page mapped, no fault) every reference misses both
    // and walks, and every walk reads its 4 levels from DRAM: 640 cycles a walk, the
    // data's accesses done before the walk starts (MLP 1).
    let mut m = machine(&config(WalkReads::Uncached));
    let pages = 2048;
    for p in 0..pages {
        read(&mut m, BASE + p * 4096);
    }
    let s = m.cores[0].stats.clone();
    for p in 0..pages {
        read(&mut m, BASE + p * 4096);
    }
    let t = &m.cores[0].stats;
    assert_eq!(t.first_touch_faults, s.first_touch_faults);
    assert_eq!(t.tlb_misses - s.tlb_misses, pages);
    assert_eq!(t.walk_references - s.walk_references, 4 * pages);
    assert_eq!(t.walk_memory_accesses - s.walk_memory_accesses, 4 * pages);
    assert_eq!(t.walk_cycles - s.walk_cycles, 4 * DRAM * pages);
    m.check_invariants().unwrap();
}

#[test]
fn the_dirty_bit_of_a_first_store_is_written_to_memory_when_walks_are_uncached() {
    // A read maps the page and fills the TLB with a clean entry; the first store
    // through it sets the PTE's Dirty bit with a write of the walker: an L1 hit through
    // the caches (the walk just read that line), a DRAM write of 160 cycles uncached.
    let store_translation = |walks: WalkReads| {
        let mut m = machine(&config(walks));
        read(&mut m, BASE);
        m.access(0, &Access::write(BASE, 8, 0), &mut ()).translation_cycles
    };
    assert_eq!(store_translation(WalkReads::Cached), config(WalkReads::Cached).caches[0].latency_cycles);
    assert_eq!(store_translation(WalkReads::Uncached), DRAM);
}

#[test]
fn uncached_walks_refuse_the_paging_structure_caches() {
    let mut cfg = config(WalkReads::Uncached);
    cfg.tlb.psc.pde_entries = 32;
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.starts_with("machine.page_table.walk_reads = \"uncached\""), "{e}");
    assert!(e.contains("machine.tlb.psc") && !e.contains('\n'), "{e}");
}
