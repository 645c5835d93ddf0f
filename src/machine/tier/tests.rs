//! The tier's unit tests: latencies, address mapping, queueing, background streams,
//! energy, wear and validation, each expectation worked out by hand in its comment.

use super::*;
use crate::units::Capacity;

/// A small tier with round numbers at 1 GHz (1 cycle = 1 ns): burst 64 B / 6.4 GB/s =
/// 10 cycles; read 20 / 50, write 30 / 80 cycles (hit / miss). Default mapping with
/// 2 channels, 4 banks, 1 KiB rows: bit 6 = channel, bits 7-10 = column (16 lines per
/// row), bits 11-12 = bank, bits 13 and up = row.
fn small() -> TierConfig {
    TierConfig {
        name: "test".into(),
        capacity: Capacity::Bytes(1 << 20),
        channels: 2,
        banks: 4,
        row_bytes: Size(1 << 10),
        read_hit_ns: 20.0,
        read_miss_ns: 50.0,
        write_hit_ns: 30.0,
        write_miss_ns: 80.0,
        channel_gbps: 6.4,
        write_channel_gbps: 0.0,
        channel_bits: Vec::new(),
        bank_bits: Vec::new(),
        read_hit_pj_per_bit: 1.5,
        read_miss_pj_per_bit: 4.0,
        write_hit_pj_per_bit: 2.0,
        write_miss_pj_per_bit: 10.0,
        static_mw_per_gib: 100.0,
        endurance_writes: 0,
        start_gap_efficiency: 0.95,
        write_queue_entries: 0,
    }
}

fn tier(cfg: &TierConfig) -> Tier {
    Tier::new(cfg, 1 << 20, 1.0).unwrap()
}

fn loc(channel: u32, bank: u32, row: u64) -> Location {
    Location { channel, bank, row }
}

#[test]
fn converts_ns_to_cycles() {
    // 13.5 ns × 3.2 GHz = 43.2 → 43 cycles.
    assert_eq!(ns_to_cycles(13.5, 3.2), 43);
    assert_eq!(ns_to_cycles(0.1, 3.2), 1, "a positive time is at least one cycle");
    assert_eq!(ns_to_cycles(0.0, 3.2), 0);
    // Rainbow's DRAM at 3.2 GHz: read hit 43 cycles; miss 34.5 ns = 110.4 → 110; burst
    // 64 / 10.7 ns = 5.98 ns = 19.14 → 20 cycles.
    let dram = Tier::new(&TierConfig::default(), 4 << 30, 3.2).unwrap();
    assert_eq!(dram.device_cycles(false, true), 43);
    assert_eq!(dram.device_cycles(false, false), 110);
    assert_eq!(dram.burst_cycles(), 20);
    // PCM: write miss 171 ns = 547.2 → 547 cycles.
    let pcm = Tier::new(&pcm_default(), 32 << 30, 3.2).unwrap();
    assert_eq!(pcm.device_cycles(true, false), 547);
}

#[test]
fn latencies_are_at_least_one_burst() {
    let cfg = TierConfig { read_hit_ns: 3.0, ..small() };
    assert_eq!(tier(&cfg).device_cycles(false, true), 10);
}

#[test]
fn default_mapping_interleaves_lines_across_channels() {
    let t = tier(&small());
    // Consecutive lines alternate channels.
    let channels: Vec<u32> = (0..4).map(|i| t.decode(i * 64).channel).collect();
    assert_eq!(channels, [0, 1, 0, 1]);
    // Channel 0's lines 0, 2, …, 30 (bytes 0 … 1920) fill row 0 of bank 0.
    for addr in (0..2048).step_by(128) {
        assert_eq!(t.decode(addr), loc(0, 0, 0), "address {addr}");
    }
    assert_eq!(t.decode(2048), loc(0, 1, 0), "bit 11 is the first bank bit");
    assert_eq!(t.decode(4096 + 64), loc(1, 2, 0));
    assert_eq!(t.decode(8192), loc(0, 0, 1), "bit 13 is the first row bit");
    assert_eq!(t.decode(3 * 8192 + 3 * 2048 + 64), loc(1, 3, 3));
    // Rainbow's PCM: 4 channels in bits 6-7, so lines cycle through all four.
    let pcm = Tier::new(&pcm_default(), 32 << 30, 3.2).unwrap();
    let channels: Vec<u32> = (0..5).map(|i| pcm.decode(i * 64).channel).collect();
    assert_eq!(channels, [0, 1, 2, 3, 0]);
}

/// The shift-and-mask decoding agrees with the run-by-run one wherever it
/// applies, and applies to the default mappings; a bank field in two runs, or
/// a channel bit above a row bit, takes the run-by-run decoding.
#[test]
fn masks_decode_as_the_runs_do() {
    let mut rng = crate::rng::Rng::new(3);
    let maps = [
        (vec![6], vec![11, 12], 1u64 << 10, true),
        (vec![6, 7], vec![13, 14, 15, 16, 17, 18], 2 << 10, true),
        (vec![], vec![12, 13, 14, 15, 16], 4 << 10, true),
        (vec![], vec![], 4 << 10, true),
        (vec![8], vec![9, 10], 1 << 10, true),
        (vec![20], vec![9, 10], 1 << 10, false),
        (vec![6], vec![12, 13, 14, 20, 21], 8 << 10, false),
        (vec![7, 6], vec![11, 12], 1 << 10, false),
    ];
    for (channel, bank, row_bytes, simple) in maps {
        let map = AddressMap::new(&channel, &bank, row_bytes);
        assert_eq!(map.masks.is_some(), simple, "{channel:?} {bank:?}");
        for _ in 0..10_000 {
            let addr = rng.below(1 << 40) & !63;
            assert_eq!(map.decode(addr), map.decode_runs(addr), "{addr:#x} with {channel:?} {bank:?}");
        }
    }
    for cfg in [TierConfig::default(), pcm_default(), small()] {
        let (channel, bank) = cfg.mapping_bits().unwrap();
        assert!(AddressMap::new(&channel, &bank, cfg.row_bytes.bytes()).masks.is_some(), "{}", cfg.name);
    }
}

#[test]
fn explicit_bits_decode_as_written() {
    // memos-like: bank bits 12, 13, 14, 20, 21 (32 banks), channel bit 6, 8 KiB rows.
    let cfg = TierConfig {
        banks: 32,
        row_bytes: Size(8 << 10),
        channel_bits: vec![6],
        bank_bits: vec![12, 13, 14, 20, 21],
        ..small()
    };
    let t = Tier::new(&cfg, 1 << 30, 1.0).unwrap();
    // Bank bit i is listed bit i: bit 12 → bank bit 0, bit 21 → bank bit 4.
    assert_eq!(t.decode(1 << 12).bank, 0b00001);
    assert_eq!(t.decode(1 << 14).bank, 0b00100);
    assert_eq!(t.decode(1 << 21).bank, 0b10000);
    assert_eq!(t.decode((1 << 12) | (1 << 20) | (1 << 6)), loc(1, 0b01001, 0));
    // Row: squeeze out bits 6, 12, 13, 14, 20, 21, drop the low 13 bits of the rest.
    // Bit 15 has 4 removed bits below it → bit 11, a column bit: row 0.
    assert_eq!(t.decode(1 << 15).row, 0);
    // Bit 17 → bit 13: row 1. Bit 22 has all 6 below it → bit 16: row 8.
    assert_eq!(t.decode(1 << 17).row, 1);
    assert_eq!(t.decode(1 << 22).row, 8);
    // Each (channel, bank, row) holds 8 KiB: 128 lines told apart by the 7 column bits
    // 7-11 and 15-16; bit 17 starts the next row.
    let column = |l: u64| ((l & 31) << 7) | ((l >> 5) << 15);
    assert!((0..128).all(|l| t.decode(column(l)) == loc(0, 0, 0)));
    assert_eq!(t.decode(column(127) + (1 << 17)), loc(0, 0, 1));

    // Listed order decides significance, not bit position.
    let cfg = TierConfig { channels: 4, channel_bits: vec![9, 7], bank_bits: vec![8, 10], ..small() };
    let t = tier(&cfg);
    assert_eq!(t.decode(1 << 9).channel, 0b01);
    assert_eq!(t.decode(1 << 7).channel, 0b10);
    assert_eq!(t.decode(1 << 10).bank, 0b10);
}

#[test]
fn row_stream_misses_once_then_hits_at_hit_latency() {
    let mut t = tier(&small());
    // First read opens row 0 of channel 0, bank 0: start 0, bus at 50 − 10, done at 50.
    assert_eq!(t.access(0, false, 0), 50);
    // Later reads to the same row, spaced 100 cycles apart, each take the 20-cycle hit.
    for i in 1..16 {
        assert_eq!(t.access(i * 128, false, i * 100), 20, "line {i}");
    }
    let s = t.stats();
    assert_eq!((s.reads, s.row_misses, s.row_hits, s.queue_cycles), (16, 1, 15, 0));
    assert_eq!(s.read_bytes(), 16 * 64);
}

#[test]
fn slower_writes_take_the_bus_longer() {
    // small() writing at 1.6 GB/s: a write's burst is 64 / 1.6 = 40 cycles, a
    // read's stays 10; the 30-cycle write hit is raised to its burst, 40.
    let mut t = tier(&TierConfig { write_channel_gbps: 1.6, ..small() });
    assert_eq!((t.burst_cycles(), t.write_burst_cycles()), (10, 40));
    assert_eq!(t.device_cycles(true, true), 40);
    assert_eq!(t.device_cycles(true, false), 80);
    assert_eq!(t.device_cycles(false, false), 50);
    // Writes to banks 0-3 of channel 0 at cycle 100, rows closed: each is ready
    // at 100 + 80 and the bus carries one every 40 cycles: 80, 120, 160, 200.
    let latencies: Vec<u64> = (0..4).map(|b| t.access(b * 2048, true, 100)).collect();
    assert_eq!(latencies, [80, 120, 160, 200]);
    // A read later on channel 0, to the row the first write opened: a row hit on a
    // free bus, with the read's own 10-cycle burst: 20.
    assert_eq!(t.access(64 * 2, false, 1000), 20);
    // At the same write bandwidth as reads, the result is the read figures'.
    let mut same = tier(&TierConfig { write_channel_gbps: 6.4, ..small() });
    let mut plain = tier(&small());
    for (i, w) in [(0u64, true), (2048, true), (4096, false), (128, true)] {
        assert_eq!(same.access(i, w, 100), plain.access(i, w, 100));
    }
    // With posted writes the drain takes the write burst: max(40, 80 / 4) = 40
    // per write; two queued writes at cycle 0 complete at 40 and 80.
    let mut q = tier(&TierConfig { write_channel_gbps: 1.6, write_queue_entries: 8, ..small() });
    assert_eq!((q.access(0, true, 0), q.access(128, true, 0)), (40, 80));
    assert!(Tier::new(&TierConfig { write_channel_gbps: -1.0, ..small() }, 1 << 20, 1.0).unwrap_err().to_string().starts_with("write_channel_gbps:"));
}

#[test]
fn a_stream_of_writes_gets_the_write_bandwidth() {
    // 1 000 background lines on channel 0 (every other line), issued at cycle 0,
    // with no demand beside them. Reads that hit the open row take one 10-cycle
    // burst each: 6.4 GB/s. Writes take the drain, max(40, 80 / 4) = 40 cycles:
    // 1.6 GB/s. The calendar packs whole transfers into 1 024-cycle windows: 25
    // writes per window (24 cycles left over), so the 1 000th ends at
    // 39 × 1 024 + 25 × 40 = 40 936: 1.56 GB/s.
    let mut t = tier(&TierConfig { write_channel_gbps: 1.6, write_queue_entries: 8, ..small() });
    t.start_stream(true);
    let done = (0..1000u64).map(|i| t.stream_line(i * 128, true, 0)).max().unwrap();
    assert_eq!(done, 40_936);
    let mut t = tier(&TierConfig { write_channel_gbps: 1.6, write_queue_entries: 8, ..small() });
    t.start_stream(false);
    let done = (0..1000u64).map(|i| t.stream_line(i * 128, false, 0)).max().unwrap();
    // Reads: the 10-cycle read burst each, plus a row opening (50 / 4 banks = 13)
    // for each of the 63 rows of 16 lines: 10 819 cycles of bus (5.9 GB/s), and
    // at most one transfer per window left over by the packing.
    assert!((10_819..=10_819 + 11 * 23).contains(&done), "reads: {done} cycles");
}

#[test]
fn same_instant_requests_to_one_channel_queue_on_the_bus() {
    let mut t = tier(&small());
    // Banks 0-3 of channel 0, all closed, all issued at cycle 100. Each request's data
    // is ready at 100 + 50; the bus carries them one after another:
    //   bank 0: bus 140 → done 150, latency 50
    //   bank 1: bus max(140, 150) = 150 → 160, latency 60, and so on, +10 (one burst) each.
    let latencies: Vec<u64> = (0..4).map(|b| t.access(b * 2048, false, 100)).collect();
    assert_eq!(latencies, [50, 60, 70, 80]);
    assert_eq!(t.stats().queue_cycles, 10 + 20 + 30);
    // Channel 1 has its own bus: no queueing there.
    assert_eq!(t.access(64, false, 100), 50);
}

#[test]
fn saturated_channel_queues_linearly() {
    let mut t = tier(&small());
    // Open row 0 in banks 0-3 of channel 0, then let everything drain.
    for b in 0..4 {
        t.access(b * 2048, false, 0);
    }
    let base = t.stats().queue_cycles;
    // Row hits arrive every 5 cycles (half a burst), round-robin over the 4 banks,
    // from cycle T = 1000. Request i is ready at T + 5i + 20 but the bus is taken
    // until T + 10 + 10i (request i − 1 finished at T + 20 + 10(i − 1)), so it
    // finishes at T + 20 + 10i: latency 20 + 5i, queueing 5i. (Its bank, last used
    // by request i − 4, is free from T + 10i − 20, early enough not to matter.)
    let t0 = 1000;
    let n = 100;
    for i in 0..n {
        assert_eq!(t.access((i % 4) * 2048, false, t0 + 5 * i), 20 + 5 * i, "request {i}");
    }
    // Total queueing 5 × (0 + 1 + … + 99) = 5 × 4950.
    assert_eq!(t.stats().queue_cycles - base, 24_750);
}

#[test]
fn same_bank_other_row_waits_then_misses() {
    let mut t = tier(&small());
    assert_eq!(t.access(0, false, 0), 50);
    // Row 1 of the same bank at cycle 0: bank busy until 50, then a 50-cycle miss:
    // bus at 90, done at 100, latency 100 of which 50 queueing.
    assert_eq!(t.access(8192, false, 0), 100);
    // Back to row 0: another miss, now a write (80): start 100, done 180.
    assert_eq!(t.access(128, true, 0), 180);
    let s = t.stats();
    assert_eq!((s.row_hits, s.row_misses, s.reads, s.writes), (0, 3, 2, 1));
    assert_eq!(s.queue_cycles, 50 + 100);
}

#[test]
fn bulk_copy_is_a_paced_stream_that_demand_goes_before() {
    let mut t = tier(&small());
    // 4 KiB at 0: 64 lines, 32 per channel. On channel 0, the first 16 lines are row 0
    // of bank 0 and the next 16 row 0 of bank 1: 2 row misses, each a burst (10) plus
    // the 50-cycle miss spread over 4 banks (13), and 30 hits of one burst:
    // 2 × 23 + 30 × 10 = 346 cycles of channel 0's bus. Channel 1 is the same.
    assert_eq!(t.bulk(0, 4096, false, 0), 346);
    // A demand read at 100 on channel 0 (bank 2, closed row: 50) goes first: the
    // copy holds the bus throughout [0, 346), so it waits for the line on the bus
    // (one burst), not for the rest of the copy: 60.
    assert_eq!(t.access(2 << 11, false, 100), 60);
    let s = t.stats().clone();
    assert_eq!((s.reads, s.mechanism_reads, s.mechanism_writes), (1, 64, 0), "one demand read");
    assert_eq!(s.mechanism_bytes(), 4096);
    assert_eq!(s.queue_cycles, 10);
    assert_eq!(t.bulk(0, 0, true, 7), 7);
    // Far from the copy, demand waits for nothing.
    assert_eq!(t.access(3 << 11, false, 100_000), 50);
}

#[test]
fn a_stream_booked_ahead_does_not_wall_off_earlier_requests() {
    let mut t = tier(&small());
    // A sparse stream far ahead (one line read at each of 10 000, 20 000, …, 100 000),
    // as a latency-bound copy of another executor books it.
    for i in 1..=10 {
        t.stream_line((i * 10_000 * 64 % (1 << 20)) & !127, false, i * 10_000);
    }
    // A line read at cycle 500 (row miss, 50 cycles; a burst plus 13 of bus): it
    // does not queue behind the bookings at 10 000 and later.
    assert_eq!(t.stream_line(8 << 11, false, 500), 550);
    // Nor does a demand read at 600, beyond the window of cycle 500's line.
    assert_eq!(t.access(9 << 11 | 1 << 13, false, 2000), 50);
}

/// A stream booked ahead in steps, as a background thread runs beside demand, gets
/// the bus time demand leaves, and each demand access that meets it waits the
/// stream's share of a burst (module documentation, "Bulk transfers";
/// `super::super::calendar`).
#[test]
fn a_background_stream_takes_what_demand_leaves() {
    let mut t = tier(&small());
    // Stream: 4096 lines of channel 0 (addresses 128·i), read in steps of 64 lines
    // issued together. Every 16 lines open a new row of a bank: a miss (23 cycles of
    // bus) and 15 hits (10): S = 256 × 173 = 44 288 cycles of bus alone.
    let s_alone = 256 * 173;
    // Demand: a read every 40 cycles to row 0 of bank 3 on channel 0 — row hits of
    // 20 cycles taking a 10-cycle burst: u = 1/4 of the bus.
    let (addr, every) = (3u64 << 11, 40);
    t.access(addr, false, 0);
    let (mut clock, mut next, mut lat, mut n) = (0u64, every, 0u64, 0u64);
    for step in 0..64u64 {
        let lines = (step * 64..(step + 1) * 64).map(|i| t.stream_line(i * 128, false, clock));
        clock = lines.max().unwrap();
        while next < clock {
            lat += t.access(addr, false, next);
            n += 1;
            next += every;
        }
    }
    // The stream ran at 1 − u: S / (3/4) = 59 051 cycles.
    let predicted = s_alone * 4 / 3;
    assert!((clock as f64 - predicted as f64).abs() < 0.05 * predicted as f64, "stream took {clock}, predicted {predicted}");
    // Demand waited the stream's share of a burst, (1 − u) × 10 = 7.5 cycles, more
    // than its 20-cycle row hit.
    let mean = lat as f64 / n as f64;
    assert!((mean - 27.5).abs() < 1.0, "demand latency {mean} with the stream, 20 alone");
    assert_eq!(t.access(addr, false, clock + 5000), 20, "alone again");
}

#[test]
fn dynamic_energy_counts_bits_by_access_kind() {
    let mut t = tier(&small());
    for i in 0..10 {
        t.access(i * 128, false, i * 100);
    }
    // 1 read miss + 9 read hits, 512 bits each: 512 × (4.0 + 9 × 1.5) = 8960 pJ.
    assert!((t.dynamic_energy_pj() - 8960.0).abs() < 1e-9);
    // A migration write that misses (row 1 of bank 0): + 512 × 10.0.
    t.bulk(8192, 64, true, 10_000);
    assert!((t.dynamic_energy_pj() - 14_080.0).abs() < 1e-9);
}

#[test]
fn bank_imbalance_is_the_spread_of_accesses_over_banks() {
    let mut t = tier(&small());
    assert_eq!(t.bank_imbalance(), None);
    // small(): 2 channels (bit 6) of 4 banks, 1 KiB rows: column bits 7–10, bank
    // bits 11–12, 8 banks in all. Three accesses to channel 0's bank 0, one to its
    // bank 1: mean 0.5, deviations 2.5, 0.5 and six of −0.5 → variance 8 / 8 = 1,
    // so 1 / 0.5 = 2.
    for (i, addr) in [0u64, 128, 256, 1 << 11].into_iter().enumerate() {
        t.access(addr, false, i as u64 * 1000);
    }
    assert!((t.bank_imbalance().unwrap() - 2.0).abs() < 1e-12);
}

#[test]
fn static_energy_scales_with_capacity_and_time() {
    // 100 mW/GiB × 2 GiB × 3 s = 0.6 J.
    let t = Tier::new(&small(), 2 << 30, 1.0).unwrap();
    assert!((t.static_energy_j(3.0) - 0.6).abs() < 1e-12);
}

#[test]
fn wear_and_lifetime() {
    let cfg = TierConfig { endurance_writes: 1_000_000, ..small() };
    let mut t = tier(&cfg);
    assert_eq!(t.lifetime_years(1.0), None, "nothing written yet");
    // Frame 3 is written 100 times over (6400 line writes), frame 2 only read.
    for i in 0..100 {
        t.bulk(3 * 4096, 4096, true, i * 10_000);
    }
    t.bulk(2 * 4096, 4096, false, 2_000_000);
    assert_eq!(t.frame_writes(3), 6400);
    assert_eq!(t.frame_writes(2), 0);
    assert_eq!(t.frame_writes(1 << 40), 0, "outside the tier");
    // Over 3155.76 s, each of frame 3's lines takes 6400 / 64 = 100 writes, i.e.
    // 1/31.5576 writes per second; 10^6 writes last 31 557 600 s = 1 year.
    let seconds = 3155.76;
    assert!((t.lifetime_years(seconds).unwrap() - 1.0).abs() < 1e-9);
    // Levelled over all 16 384 lines of 1 MiB, the 6400 writes would last
    // 16 384 / 64 = 256 times longer.
    assert!((t.ideal_lifetime_years(seconds).unwrap() - 256.0).abs() < 1e-9);
    // Start-Gap keeps 95 % of that (memos §7.1): 243.2 years.
    assert!((t.start_gap_lifetime_years(seconds).unwrap() - 243.2).abs() < 1e-9);
    assert_eq!(t.lifetime_years(0.0), None);

    // Demand writes wear frames too.
    t.access(3 * 4096 + 64, true, 3_000_000);
    assert_eq!(t.frame_writes(3), 6401);

    // Unlimited endurance: no wear tracked, no lifetime.
    let mut dram = tier(&small());
    dram.access(0, true, 0);
    assert_eq!(dram.frame_writes(0), 0);
    assert_eq!(dram.lifetime_years(1.0), None);
    assert_eq!(dram.ideal_lifetime_years(1.0), None);
}

#[test]
fn frame_write_counters_count_past_16_bits() {
    let cfg = TierConfig { endurance_writes: 1, ..small() };
    let mut t = tier(&cfg);
    for i in 0..70_000u64 {
        t.access(i % 64 * 64, true, i * 1000);
    }
    assert_eq!(t.frame_writes(0), 70_000, "exact past 16 bits");
}

#[test]
fn validation_names_the_field() {
    let err = |cfg: TierConfig| Tier::new(&cfg, 1 << 20, 1.0).unwrap_err().to_string();
    assert_eq!(err(TierConfig { channels: 3, ..small() }), "channels: must be a power of two, got 3");
    assert_eq!(err(TierConfig { banks: 0, ..small() }), "banks: must be a power of two, got 0");
    assert!(err(TierConfig { row_bytes: Size(32), ..small() }).starts_with("row_bytes:"));
    assert!(err(TierConfig { row_bytes: Size(1000), ..small() }).starts_with("row_bytes:"));
    assert!(err(TierConfig { write_miss_ns: -1.0, ..small() }).starts_with("write_miss_ns:"));
    assert!(err(TierConfig { channel_gbps: 0.0, ..small() }).starts_with("channel_gbps:"));
    assert!(err(TierConfig { read_hit_pj_per_bit: f64::NAN, ..small() }).starts_with("read_hit_pj_per_bit:"));
    // 2 channels need 1 channel bit; 4 banks need 2 bank bits.
    assert_eq!(
        err(TierConfig { channel_bits: vec![6, 7], bank_bits: vec![8, 9], ..small() }),
        "channel_bits: must list log2(channels) = 1 bits, got 2 ([6, 7])"
    );
    assert!(
        err(TierConfig { channel_bits: vec![6], ..small() }).starts_with("bank_bits: must list log2(banks) = 2")
    );
    assert!(err(TierConfig { channel_bits: vec![48], bank_bits: vec![8, 9], ..small() })
        .starts_with("channel_bits: bit 48 is outside"));
    assert!(err(TierConfig { channel_bits: vec![5], bank_bits: vec![8, 9], ..small() })
        .starts_with("channel_bits: bit 5 is outside"));
    assert_eq!(
        err(TierConfig { channel_bits: vec![6], bank_bits: vec![9, 9], ..small() }),
        "bank_bits: bit 9 is listed twice"
    );
    assert_eq!(
        err(TierConfig { channel_bits: vec![8], bank_bits: vec![8, 9], ..small() }),
        "channel_bits, bank_bits: bit 8 selects both a channel and a bank"
    );
    assert!(err(TierConfig { banks: 1 << 16, row_bytes: Size(1 << 40), ..small() })
        .starts_with("channels, banks, row_bytes:"));
    assert!(err(TierConfig { channels: 1 << 12, banks: 1 << 9, ..small() }).starts_with("channels, banks:"));
    assert!(Tier::new(&small(), 1 << 20, 0.0).unwrap_err().to_string().starts_with("core clock:"));
    assert!(Tier::new(&small(), 1 << 49, 1.0).unwrap_err().to_string().starts_with("capacity:"));
    // The presets are valid.
    TierConfig::default().validate().unwrap();
    pcm_default().validate().unwrap();
}

#[test]
fn presets_follow_rainbow_table_iv() {
    let dram = TierConfig::default();
    assert_eq!(
        (dram.read_hit_ns, dram.read_miss_ns, dram.write_hit_ns, dram.write_miss_ns),
        (13.5, 34.5, 28.5, 49.5)
    );
    assert_eq!(dram.channels as u64 * dram.banks as u64 * dram.row_bytes.bytes() * 32768, 4 << 30, "4 GB");
    let pcm = pcm_default();
    assert_eq!((pcm.read_hit_ns, pcm.read_miss_ns, pcm.write_hit_ns, pcm.write_miss_ns), (19.5, 75.0, 19.5, 171.0));
    assert_eq!(pcm.channels as u64 * pcm.banks as u64 * pcm.row_bytes.bytes() * 65536, 32 << 30, "32 GB");
}

fn queued() -> Tier {
    // small() at 1 GHz: burst = ceil(64 / 6.4) = 10 cycles; write miss 80 cycles over
    // 4 banks → drain = max(10, 80 / 4) = 20 cycles per write; 4 entries → 80 cycles.
    tier(&TierConfig { write_queue_entries: 4, ..small() })
}

#[test]
fn reads_bypass_queued_writes() {
    let mut t = queued();
    // Three writes to channel 0 (bit 6 clear) at t = 0: drained by 20, 40, 60.
    assert_eq!(t.access(0, true, 0), 20);
    assert_eq!(t.access(128, true, 0), 40);
    assert_eq!(t.access(256, true, 0), 60);
    // A read on the same channel goes first: a plain row miss, 50 cycles.
    assert_eq!(t.access(1 << 12, false, 0), 50);
    // ... and pushes the drain back by its burst: the next write completes at 60 + 10 + 20.
    assert_eq!(t.access(384, true, 0), 90);
}

#[test]
fn a_full_write_queue_holds_reads_back() {
    let mut t = queued();
    // Six writes at t = 0 into a 4-entry (80-cycle) queue: the 5th finds 80 cycles
    // queued, so reads wait until one entry drained (t = 20); the 6th until t = 40.
    for i in 0..6 {
        assert_eq!(t.access(i * 128, true, 0), 20 * (i + 1));
    }
    // A read on channel 0 starts at 40: 40 + 50 = 90. Channel 1 is not affected.
    assert_eq!(t.access(1 << 12, false, 0), 90);
    assert_eq!(t.access(64 + (1 << 12), false, 0), 50);
}

#[test]
fn a_queued_page_copy_completes_when_drained() {
    let mut t = queued();
    // 64 lines alternate channels: 32 writes per channel × 20 cycles = 640.
    assert_eq!(t.bulk(0, 4096, true, 0), 640);
    assert_eq!(t.stats().mechanism_writes, 64);
}
