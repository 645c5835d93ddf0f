//! One memory tier (DRAM, HBM, PCM, CXL-attached memory): where its 64-byte accesses
//! land, how long they take, the energy they cost and the wear they cause.
//!
//! # Organisation
//! A tier has `channels` channels, each with one data bus and `banks` banks; every bank
//! has one row buffer managed open-page (a row stays open until another row of the same
//! bank is needed). A tier-local physical address is split into channel, bank, row and
//! column by [`TierConfig::channel_bits`] / [`TierConfig::bank_bits`], or by the default
//! cache-line-interleaved layout (see [`TierConfig`]).
//!
//! # Timing
//! Every bank remembers its open row and the cycle it becomes free; every channel the
//! cycle its data bus becomes free. A request arriving at cycle `now` is served as
//!
//! ```text
//! start   = max(now, bank.free_at)
//! device  = read/write, row-hit/row-miss latency   (row hit iff bank.open_row == row)
//! bus_at  = max(start + device - burst, channel.free_at)
//! finish  = bus_at + burst                          (the data burst is the last `burst` cycles)
//! latency = finish - now;  channel.free_at = bank.free_at = finish;  bank.open_row = row
//! ```
//!
//! where `burst` is the time one 64-byte transfer occupies the channel's bus at
//! [`TierConfig::channel_gbps`] (a write's at [`TierConfig::write_channel_gbps`] when
//! the tier writes more slowly than it reads; device latencies are at least their
//! burst). The difference `latency - device` is the time the request
//! waited for its bank or bus (queueing), so bandwidth limits and migration traffic slow
//! demand accesses down. Nanoseconds become core cycles once, in [`Tier::new`].
//!
//! # Posted writes
//! With [`TierConfig::write_queue_entries`] > 0, writes do not follow the rule above:
//! each joins its channel's write queue and drains in the background, taking
//! `drain = max(write burst, write_miss / banks)` cycles of channel time (the array write
//! spread over the banks), so a write's completion is
//! `drain_until = max(drain_until, now) + drain`. Reads go first: they ignore queued
//! writes, and each read arriving while writes are queued pushes `drain_until` back by
//! its burst. When a write finds the queue full (`drain_until - now + drain` above
//! `entries × drain`), reads on that channel are held until one entry has drained
//! (forced drain). Queued writes leave the open row untouched; their row-hit or miss
//! (for energy) is decided against the row open when they arrive.
//!
//! # Background traffic
//! What mechanisms send to memory — a page copy's lines, page-table lines a scan reads,
//! lines a flush writes back, metadata ([`Tier::stream_line`], [`Tier::bulk`]) — is
//! background traffic, booked in its channel's calendar by time (see
//! `machine::calendar`), not on the demand path's bank and bus clocks: mechanisms run
//! ahead of the cores and book their accesses at their own future times, which must
//! not make earlier demand queue behind them. Each line takes its channel for one
//! burst (a read that opens a new row also for its row miss spread over the banks; a
//! write for `drain`), stretched by 1 / (1 − u) where u is demand's recent share of
//! the channel; a read line completes at `max(booked end, at + device)`, a write line
//! at its booked end. How many lines are issued before earlier ones complete is the
//! copier's business (the machine's copy keeps a bounded number of reads in flight).
//! Demand goes first: a backlogged stream gets the 1 − u of the channel demand leaves,
//! and a demand access waits the background share ρ of its window's bus time times its
//! burst (ρ = 1 − u beside a backlogged stream). Background traffic leaves open rows
//! alone; row hits of a stream are tracked per bank for the stream itself.
//!
//! Simplifications, chosen so that every latency can be checked by hand:
//! - requests are served in the order they are issued (FCFS); the memory controller does
//!   not reorder for row hits (Rainbow's NVMain uses FR-FCFS), and a request issued later
//!   with an earlier `now` queues behind bus time already booked;
//! - a bank serves one request at a time, so row hits to one bank are not pipelined:
//!   each takes the full hit latency (a page copy is therefore bank-bound as much as
//!   bus-bound);
//! - no command-bus, tRAS, tFAW, refresh or read/write turnaround constraints; each
//!   latency is raised to at least one burst;
//! - the row buffer's dirtiness is not tracked: the cost of writing an NVM row back to
//!   its array is part of the write-miss latency and energy, as Rainbow's Table IV
//!   charges it (1684.8 pJ/bit for a write on a row-buffer miss).
//!
//! # Energy
//! Dynamic energy is counted per 64-byte access as 512 bits × the pJ/bit of its kind
//! (read or write, row hit or miss); the hot path only counts accesses per kind and the
//! multiplication happens when [`Tier::dynamic_energy_pj`] is asked. Static (background
//! and refresh) power is a per-GiB figure times the tier's capacity.
//!
//! # Wear
//! When the cell endurance is finite, every 64-byte write (demand or migration) adds one
//! to the counter of its 4 KiB frame, exact up to 2^32 − 1, in 2 bytes per frame
//! (module `wear`). Lifetime is
//! projected from the most-written frame (writes levelled across its 64 lines, as an
//! intra-page wear leveller would) and, for comparison, from perfect levelling across
//! the whole tier.

use super::calendar::Calendar;
use super::wear::WearCounters;
use crate::units::{Capacity, Size};
use anyhow::{bail, ensure, Result};
use serde::{Deserialize, Serialize};

const LINE_SHIFT: u32 = 6;
const LINE_BYTES: u64 = 1 << LINE_SHIFT;
const BITS_PER_LINE: f64 = (LINE_BYTES * 8) as f64;
const FRAME_SHIFT: u32 = 12;
const LINES_PER_FRAME: u64 = 1 << (FRAME_SHIFT - LINE_SHIFT);
/// Tier-local addresses have at most this many bits.
const ADDRESS_BITS: u8 = 48;
const GIB: f64 = (1u64 << 30) as f64;
const SECONDS_PER_YEAR: f64 = 365.25 * 24.0 * 3600.0;
/// Upper bound on channels × banks, far above any real part, so that the bank state
/// stays small.
const MAX_BANKS: u64 = 1 << 20;
/// `bank.open_row` of a bank with no open row.
const CLOSED: u64 = u64::MAX;

/// Device clock of both memories of Rainbow's Table IV. Their 10.7 GB/s is a 64-bit
/// DDR3-1333 bus (666⅔ MHz, 1.5 ns per clock), and at 1.5 ns the PCM's tRCD of 37 clocks
/// and tRP of 100 clocks are the 55 ns array read and 150 ns array write of Lee et al.
/// (ISCA 2009) that PCM studies of that time use.
const TABLE_IV_CLOCK_NS: f64 = 1.5;

/// Parameters of one memory tier. [`Default`] is Rainbow's DRAM and [`pcm_default`] its
/// PCM (Table IV, §IV-A); the derivation of each number is given there.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TierConfig {
    /// Human name shown in reports ("DRAM", "PCM", "CXL").
    pub name: String,
    /// Capacity: absolute ("4GiB") or a share of the run's footprint ("25%").
    pub capacity: Capacity,
    /// Channels, each with its own data bus; a power of two.
    pub channels: u32,
    /// Banks per channel (ranks and bank groups flattened); a power of two.
    pub banks: u32,
    /// Row-buffer size of one bank in bytes; a power of two of at least 64.
    pub row_bytes: Size,
    /// Latency of a read that finds its row open (data burst included), in ns.
    pub read_hit_ns: f64,
    /// Latency of a read that must open its row (close the old one, activate, read), in ns.
    pub read_miss_ns: f64,
    /// Latency of a write that finds its row open, in ns.
    pub write_hit_ns: f64,
    /// Latency of a write that must open its row, in ns.
    pub write_miss_ns: f64,
    /// Peak bandwidth of one channel in GB/s (1e9 bytes/s); one 64-byte transfer
    /// occupies the channel's bus for 64 / bandwidth ns.
    pub channel_gbps: f64,
    /// Peak write bandwidth of one channel in GB/s when writes are slower than reads
    /// (Optane PMem: 37 GB/s read, 13 GB/s write over 6 channels, HMM-V Table 2): a
    /// 64-byte write occupies the bus for 64 / this ns. 0 = `channel_gbps`.
    pub write_channel_gbps: f64,
    /// Tier-local address bits that select the channel, least significant first. When
    /// both this and `bank_bits` are empty the default mapping applies: channel bits right
    /// above the 64-byte line offset (bit 6 up: consecutive lines alternate channels),
    /// then log2(row_bytes / 64) column bits, then the bank bits, then the row. With
    /// explicit lists, both must have log2(channels) and log2(banks) entries, all in
    /// 6..=47 and none in both.
    ///
    /// In either case the row is found by squeezing the channel and bank bits out of
    /// the address and dropping the low log2(row_bytes) bits of what remains, so every
    /// (channel, bank, row) holds exactly `row_bytes` bytes; with the default mapping this
    /// is exactly the layout above.
    pub channel_bits: Vec<u8>,
    /// Tier-local address bits that select the bank within a channel, least significant
    /// first; see `channel_bits`.
    pub bank_bits: Vec<u8>,
    /// Dynamic energy of a read on a row-buffer hit, in pJ per bit transferred.
    pub read_hit_pj_per_bit: f64,
    /// Dynamic energy of a read on a row-buffer miss, in pJ per bit transferred.
    pub read_miss_pj_per_bit: f64,
    /// Dynamic energy of a write on a row-buffer hit, in pJ per bit transferred.
    pub write_hit_pj_per_bit: f64,
    /// Dynamic energy of a write on a row-buffer miss, in pJ per bit transferred.
    pub write_miss_pj_per_bit: f64,
    /// Static (background + refresh) power in mW per GiB of capacity.
    pub static_mw_per_gib: f64,
    /// Writes a cell endures before wearing out; 0 = unlimited (DRAM).
    pub endurance_writes: u64,
    /// Share of the ideal (perfectly levelled) lifetime a Start-Gap wear leveller
    /// reaches (Qureshi et al., MICRO 2009); the report's `start_gap_lifetime_years` is
    /// this times `ideal_lifetime_years`. 0.95 is memos' assumption (§7.1: "an overall
    /// lifetime which is 95% of the average NVM cell lifetime").
    pub start_gap_efficiency: f64,
    /// Entries of each channel's posted-write queue. Writes (write-backs, migration
    /// copies) wait there and drain in the background while reads go first; only a full
    /// queue holds reads back (forced drain). 0 = no queue: every request in arrival
    /// order. 32 is an assumption (a typical controller write buffer; Rainbow's NVMain
    /// setup buffers writes too but the paper gives no size).
    pub write_queue_entries: u32,
}

impl Default for TierConfig {
    /// Rainbow's DRAM (Table IV): 1 channel of 4 ranks × 8 banks, 64 columns of 64 bytes
    /// per row (4 KiB), 10.7 GB/s, tCAS-tRCD-tRP 7-7-7 clocks, 13.5 ns read and 28.5 ns
    /// write latency.
    ///
    /// - Latency: 13.5 ns is shorter than activate + read (tRCD + tCAS = 21 ns at 1.5 ns
    ///   per clock), so it is a row hit; 28.5 ns is that plus DDR3's 15 ns write recovery
    ///   (tWR), so a row-hit write. A row miss adds precharge and activate, tRP + tRCD =
    ///   14 clocks = 21 ns: reads 13.5 / 34.5 ns, writes 28.5 / 49.5 ns (hit / miss).
    /// - Energy: Table IV gives DRAM energy only as currents (1.5 V; read/write on a
    ///   row-buffer hit 120/125 mA, on a miss 237/242 mA), not per bit. The hit energies
    ///   are the row-buffer read/write energies of Lee et al. (ISCA 2009), 0.93/1.02
    ///   pJ/bit, that NVM studies pair with NVMain; the miss energies scale them by the
    ///   table's miss:hit current ratios 237:120 and 242:125 (≈1.84 and ≈1.97 pJ/bit).
    /// - Static power 100 mW/GiB is an assumption: Table IV's standby and refresh currents
    ///   (77 and 160 mA) would need the number of devices, which the paper does not give.
    /// - Capacity: a share of the footprint rather than the paper's absolute 4 GB, so that
    ///   the fast tier is under pressure for traces of any size; set `capacity = "4GiB"`
    ///   to reproduce the paper's machine.
    fn default() -> Self {
        TierConfig {
            name: "DRAM".into(),
            capacity: Capacity::Percent(25.0),
            channels: 1,
            banks: 32,
            row_bytes: Size(4 << 10),
            read_hit_ns: 13.5,
            read_miss_ns: 13.5 + (7.0 + 7.0) * TABLE_IV_CLOCK_NS,
            write_hit_ns: 28.5,
            write_miss_ns: 28.5 + (7.0 + 7.0) * TABLE_IV_CLOCK_NS,
            channel_gbps: 10.7,
            write_channel_gbps: 0.0,
            channel_bits: Vec::new(),
            bank_bits: Vec::new(),
            read_hit_pj_per_bit: 0.93,
            read_miss_pj_per_bit: 0.93 * 237.0 / 120.0,
            write_hit_pj_per_bit: 1.02,
            write_miss_pj_per_bit: 1.02 * 242.0 / 125.0,
            static_mw_per_gib: 100.0,
            endurance_writes: 0,
            start_gap_efficiency: 0.95,
            write_queue_entries: 32,
        }
    }
}

/// Rainbow's PCM (Table IV): 4 channels of 8 ranks × 8 banks, 32 columns of 64 bytes per
/// row (2 KiB), 10.7 GB/s per channel, tCAS-tRCD-tRP-tRAS 9-37-100-53 clocks, 19.5 ns read
/// and 171 ns write latency; 1.616 pJ/bit for a read or write on a row-buffer hit, 81.2
/// and 1684.8 pJ/bit for a read and a write on a miss.
///
/// - Latency: 19.5 ns is tCAS plus a 4-clock burst at 1.5 ns per clock, a row hit. A read
///   miss adds the array read tRCD = 37 clocks = 55.5 ns (75 ns); PCM reads do not
///   destroy the row, so closing a clean row costs nothing. A write hit only writes the
///   row buffer (19.5 ns, matching the table's equal hit energy for reads and writes); a
///   write miss takes the table's 171 ns, which is dominated by the 150 ns array write
///   (tRP = 100 clocks).
/// - Static power 10 mW/GiB (no refresh, peripheral leakage only) is an assumption; the
///   paper gives none.
/// - Endurance 10^8 writes per cell is an assumption, the usual PCM figure (Lee et al.
///   ISCA 2009); Rainbow does not model wear. memos (Table 1) uses 10^6.
/// - Capacity 100 % of the footprint, so that every page fits in the slow tier.
pub fn pcm_default() -> TierConfig {
    TierConfig {
        name: "PCM".into(),
        capacity: Capacity::Percent(100.0),
        channels: 4,
        banks: 64,
        row_bytes: Size(2 << 10),
        read_hit_ns: 19.5,
        read_miss_ns: 19.5 + 37.0 * TABLE_IV_CLOCK_NS,
        write_hit_ns: 19.5,
        write_miss_ns: 171.0,
        channel_gbps: 10.7,
        write_channel_gbps: 0.0,
        channel_bits: Vec::new(),
        bank_bits: Vec::new(),
        read_hit_pj_per_bit: 1.616,
        read_miss_pj_per_bit: 81.2,
        write_hit_pj_per_bit: 1.616,
        write_miss_pj_per_bit: 1684.8,
        static_mw_per_gib: 10.0,
        endurance_writes: 100_000_000,
        start_gap_efficiency: 0.95,
        write_queue_entries: 32,
    }
}

impl TierConfig {
    /// Checks every field; the error names the offending field.
    pub fn validate(&self) -> Result<()> {
        ensure!(self.channels.is_power_of_two(), "channels: must be a power of two, got {}", self.channels);
        ensure!(self.banks.is_power_of_two(), "banks: must be a power of two, got {}", self.banks);
        ensure!(
            self.channels as u64 * self.banks as u64 <= MAX_BANKS,
            "channels, banks: {} × {} banks is more than the {MAX_BANKS} a tier may have",
            self.channels,
            self.banks
        );
        let row = self.row_bytes.bytes();
        ensure!(
            row.is_power_of_two() && row >= LINE_BYTES,
            "row_bytes: must be a power of two of at least 64 bytes, got {}",
            self.row_bytes
        );
        for (field, ns) in [
            ("read_hit_ns", self.read_hit_ns),
            ("read_miss_ns", self.read_miss_ns),
            ("write_hit_ns", self.write_hit_ns),
            ("write_miss_ns", self.write_miss_ns),
        ] {
            ensure!(ns.is_finite() && ns >= 0.0, "{field}: must be a non-negative number of nanoseconds, got {ns}");
        }
        ensure!(
            self.channel_gbps.is_finite() && self.channel_gbps > 0.0,
            "channel_gbps: must be a positive bandwidth in GB/s, got {}",
            self.channel_gbps
        );
        ensure!(
            self.start_gap_efficiency > 0.0 && self.start_gap_efficiency <= 1.0,
            "start_gap_efficiency: must be a share in (0, 1], got {}",
            self.start_gap_efficiency
        );
        ensure!(
            self.write_channel_gbps.is_finite() && self.write_channel_gbps >= 0.0,
            "write_channel_gbps: must be a positive bandwidth in GB/s (or 0: channel_gbps), got {}",
            self.write_channel_gbps
        );
        for (field, v) in [
            ("read_hit_pj_per_bit", self.read_hit_pj_per_bit),
            ("read_miss_pj_per_bit", self.read_miss_pj_per_bit),
            ("write_hit_pj_per_bit", self.write_hit_pj_per_bit),
            ("write_miss_pj_per_bit", self.write_miss_pj_per_bit),
            ("static_mw_per_gib", self.static_mw_per_gib),
        ] {
            ensure!(v.is_finite() && v >= 0.0, "{field}: must be non-negative, got {v}");
        }
        self.mapping_bits()?;
        Ok(())
    }

    /// The channel and bank bit positions in effect (the default mapping when both
    /// lists are empty), validated.
    pub(crate) fn mapping_bits(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let n_channel = self.channels.trailing_zeros() as u8;
        let n_bank = self.banks.trailing_zeros() as u8;
        if self.channel_bits.is_empty() && self.bank_bits.is_empty() {
            let columns = (self.row_bytes.bytes().trailing_zeros() - LINE_SHIFT) as u8;
            let channel_lo = LINE_SHIFT as u8;
            let bank_lo = channel_lo + n_channel + columns;
            ensure!(
                bank_lo + n_bank <= ADDRESS_BITS,
                "channels, banks, row_bytes: the default mapping needs address bits up to {}, beyond the {ADDRESS_BITS}-bit tier-local address",
                bank_lo + n_bank - 1
            );
            return Ok(((channel_lo..channel_lo + n_channel).collect(), (bank_lo..bank_lo + n_bank).collect()));
        }
        for (field, bits, count, of) in [
            ("channel_bits", &self.channel_bits, n_channel, "channels"),
            ("bank_bits", &self.bank_bits, n_bank, "banks"),
        ] {
            ensure!(
                bits.len() == count as usize,
                "{field}: must list log2({of}) = {count} bits, got {} ({bits:?})",
                bits.len()
            );
            for (i, &bit) in bits.iter().enumerate() {
                ensure!(
                    (LINE_SHIFT as u8..ADDRESS_BITS).contains(&bit),
                    "{field}: bit {bit} is outside 6..={} (bits 0-5 are the offset within a 64-byte line; tier-local addresses have {ADDRESS_BITS} bits)",
                    ADDRESS_BITS - 1
                );
                ensure!(!bits[..i].contains(&bit), "{field}: bit {bit} is listed twice");
            }
        }
        if let Some(bit) = self.channel_bits.iter().find(|b| self.bank_bits.contains(b)) {
            bail!("channel_bits, bank_bits: bit {bit} selects both a channel and a bank");
        }
        Ok((self.channel_bits.clone(), self.bank_bits.clone()))
    }
}

/// Converts `ns` into core cycles at `ghz`, rounded to the nearest cycle and at least one
/// cycle for any positive time.
pub fn ns_to_cycles(ns: f64, ghz: f64) -> u64 {
    if ns <= 0.0 {
        return 0;
    }
    ((ns * ghz).round() as u64).max(1)
}

/// Where an address lives inside its tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Channel.
    pub channel: u32,
    /// Bank within the channel.
    pub bank: u32,
    /// Row within the bank.
    pub row: u64,
}

/// A contiguous run of address bits: `width` bits starting at bit `lo`.
#[derive(Clone, Copy, Debug)]
struct BitRun {
    lo: u32,
    width: u32,
}

/// Groups bit positions into runs of consecutive ascending bits, keeping their order.
fn runs(bits: &[u8]) -> Vec<BitRun> {
    let mut out: Vec<BitRun> = Vec::new();
    for &b in bits {
        match out.last_mut() {
            Some(r) if r.lo + r.width == b as u32 => r.width += 1,
            _ => out.push(BitRun { lo: b as u32, width: 1 }),
        }
    }
    out
}

#[inline(always)]
fn low_mask(width: u32) -> u64 {
    (1u64 << width) - 1
}

/// The bit positions of `runs`, in gather order.
fn expand(runs: &[BitRun]) -> Vec<u8> {
    runs.iter().flat_map(|r| (r.lo..r.lo + r.width).map(|b| b as u8)).collect()
}

/// Address decoding with shifts and masks only, prepared once from the bit lists.
#[derive(Debug)]
struct AddressMap {
    channel: Vec<BitRun>,
    bank: Vec<BitRun>,
    /// Channel and bank bits as runs, highest first, so that removing one run does not
    /// move the ones still to be removed.
    squeeze: Vec<BitRun>,
    row_shift: u32,
    /// The same decoding as one shift and mask per field, when the mapping allows it.
    masks: Option<Masks>,
}

/// The decoding of a mapping whose channel bits are one run of ascending bits, whose
/// bank bits are another, and whose row bits all lie above both (the default mapping
/// is one): the channel and the bank are each a shift and a mask, the row a shift.
#[derive(Clone, Copy, Debug)]
struct Masks {
    channel_lo: u32,
    channel_mask: u64,
    bank_lo: u32,
    bank_mask: u64,
    row_lo: u32,
}

impl Masks {
    /// The masks of the mapping with runs `channel` and `bank` and rows of
    /// `1 << row_shift` bytes, if it decodes so.
    fn of(channel: &[BitRun], bank: &[BitRun], row_shift: u32) -> Option<Masks> {
        let run = |runs: &[BitRun]| match runs {
            [] => Some(BitRun { lo: 0, width: 0 }),
            [r] => Some(*r),
            _ => None,
        };
        let (c, b) = (run(channel)?, run(bank)?);
        // Squeezing `selected` bits out moves the bits from `top` up down by
        // `selected`; the row starts at bit `row_shift` of what remains, so it is the
        // address above bit `row_shift + selected` when that bit is at or above `top`.
        let selected = c.width + b.width;
        let top = [c, b].iter().filter(|r| r.width > 0).map(|r| r.lo + r.width).max().unwrap_or(0);
        (top <= row_shift + selected).then_some(Masks {
            channel_lo: c.lo,
            channel_mask: low_mask(c.width),
            bank_lo: b.lo,
            bank_mask: low_mask(b.width),
            row_lo: row_shift + selected,
        })
    }
}

impl AddressMap {
    fn new(channel_bits: &[u8], bank_bits: &[u8], row_bytes: u64) -> AddressMap {
        let mut all: Vec<u8> = channel_bits.iter().chain(bank_bits).copied().collect();
        all.sort_unstable();
        let mut squeeze = runs(&all);
        squeeze.reverse();
        let (channel, bank, row_shift) = (runs(channel_bits), runs(bank_bits), row_bytes.trailing_zeros());
        let masks = Masks::of(&channel, &bank, row_shift);
        AddressMap { channel, bank, squeeze, row_shift, masks }
    }

    /// Collects the bits of `runs` from `addr`, the first run's lowest bit as bit 0.
    #[inline(always)]
    fn gather(addr: u64, runs: &[BitRun]) -> u64 {
        let mut value = 0;
        let mut at = 0;
        for r in runs {
            value |= ((addr >> r.lo) & low_mask(r.width)) << at;
            at += r.width;
        }
        value
    }

    #[inline(always)]
    fn decode(&self, addr: u64) -> Location {
        if let Some(m) = &self.masks {
            return Location {
                channel: ((addr >> m.channel_lo) & m.channel_mask) as u32,
                bank: ((addr >> m.bank_lo) & m.bank_mask) as u32,
                row: addr >> m.row_lo,
            };
        }
        self.decode_runs(addr)
    }

    /// [`AddressMap::decode`] for any mapping, run by run.
    fn decode_runs(&self, addr: u64) -> Location {
        let mut rest = addr;
        for r in &self.squeeze {
            rest = ((rest >> (r.lo + r.width)) << r.lo) | (rest & low_mask(r.lo));
        }
        Location {
            channel: Self::gather(addr, &self.channel) as u32,
            bank: Self::gather(addr, &self.bank) as u32,
            row: rest >> self.row_shift,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bank {
    open_row: u64,
    free_at: u64,
    /// Demand accesses served (for the bank-balance figure of the report).
    accesses: u64,
}

// Access kinds, indexing latencies, energies and counters: bit 1 = write, bit 0 = row miss.
const READ_HIT: usize = 0;
const READ_MISS: usize = 1;
const WRITE_HIT: usize = 2;
const WRITE_MISS: usize = 3;

#[inline(always)]
fn kind(write: bool, row_hit: bool) -> usize {
    ((write as usize) << 1) | (!row_hit) as usize
}

/// Traffic counters of one tier. Demand accesses (from the caches) and mechanism
/// traffic (background transfers) are counted apart; row hits, misses and queueing
/// cover demand only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    /// Demand 64-byte reads.
    pub reads: u64,
    /// Demand 64-byte writes.
    pub writes: u64,
    /// Demand accesses that found their row open.
    pub row_hits: u64,
    /// Demand accesses that had to open their row.
    pub row_misses: u64,
    /// Cycles demand accesses waited for a busy bank or data bus (latency − device
    /// latency), summed over accesses.
    pub queue_cycles: u64,
    /// 64-byte reads of mechanisms (pages copied out of this tier, page-table lines
    /// scanned, metadata read).
    pub mechanism_reads: u64,
    /// 64-byte writes of mechanisms (pages copied into this tier, flushed lines written
    /// back, page-table and metadata writes).
    pub mechanism_writes: u64,
}

impl TierStats {
    /// Bytes read by demand accesses.
    pub fn read_bytes(&self) -> u64 {
        self.reads * LINE_BYTES
    }

    /// Bytes written by demand accesses.
    pub fn written_bytes(&self) -> u64 {
        self.writes * LINE_BYTES
    }

    /// Bytes read and written by mechanisms.
    pub fn mechanism_bytes(&self) -> u64 {
        (self.mechanism_reads + self.mechanism_writes) * LINE_BYTES
    }
}

/// The state of one channel, together so that an access finds it in one place.
#[derive(Clone, Debug, Default)]
struct Channel {
    /// When the data bus is free for the next demand transfer.
    free_at: u64,
    /// When the posted-write queue would be empty.
    drain_until: u64,
    /// Reads may not start before this cycle (a full queue is draining).
    reads_held_until: u64,
    /// The bus time taken by background (mechanism) traffic, by time.
    calendar: Calendar,
}

/// What serving one 64-byte request did.
struct Served {
    finish: u64,
    device: u64,
}

/// The run-time state of one memory tier; see the module documentation for the model.
pub struct Tier {
    name: String,
    capacity_bytes: u64,
    map: AddressMap,
    /// log2(banks per channel): the global bank index is `channel << bank_shift | bank`.
    bank_shift: u32,
    burst_cycles: u64,
    /// Bus cycles of one 64-byte write (`burst_cycles` unless the tier's write
    /// bandwidth is lower).
    write_burst_cycles: u64,
    /// Device latency in cycles by access kind, each at least its burst.
    device_cycles: [u64; 4],
    banks: Vec<Bank>,
    channels: Vec<Channel>,
    /// Per bank, for streams of reads (0) and of writes (1): the row the current
    /// stream last touched (its next line there is a row hit if it is the same row).
    stream_rows: [Vec<u64>; 2],
    banks_per_channel: u64,
    /// Queue capacity in cycles of drain work (entries × `drain_cycles`); 0 = no queue.
    write_queue_cycles: u64,
    /// Channel time one queued write takes to drain: its array write spread over the
    /// channel's banks, at least one burst.
    drain_cycles: u64,
    /// Demand accesses by kind ([`READ_HIT`] …), and the cycles they waited for a busy
    /// bank or bus: [`TierStats`] comes from these.
    demand_kinds: [u64; 4],
    queue_cycles: u64,
    /// Background (mechanism) lines by kind. Energy counts both.
    mechanism_kinds: [u64; 4],
    pj_per_bit: [f64; 4],
    static_mw_per_gib: f64,
    endurance_writes: u64,
    start_gap_efficiency: f64,
    /// 64-byte line writes per 4 KiB frame; none when endurance is unlimited.
    wear: WearCounters,
}

/// Hints the host CPU to load the cache line holding `p` (no effect elsewhere).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, even for invalid addresses.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl std::fmt::Debug for Tier {
    /// Name, capacity and counters; not the per-frame wear array, which can be large.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tier")
            .field("name", &self.name)
            .field("capacity", &Size(self.capacity_bytes))
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Tier {
    /// Builds the tier from `cfg`, which it validates. `capacity_bytes` is the resolved capacity;
    /// `ghz` is the core clock that turns nanoseconds into cycles. The error names the
    /// offending field.
    pub fn new(cfg: &TierConfig, capacity_bytes: u64, ghz: f64) -> Result<Tier> {
        cfg.validate()?;
        ensure!(ghz.is_finite() && ghz > 0.0, "core clock: must be a positive frequency in GHz, got {ghz}");
        ensure!(
            capacity_bytes <= 1 << ADDRESS_BITS,
            "capacity: {} exceeds the {ADDRESS_BITS}-bit tier-local address space",
            Size(capacity_bytes)
        );
        let (channel_bits, bank_bits) = cfg.mapping_bits()?;
        // 64 bytes at `channel_gbps` GB/s take 64 / channel_gbps ns. The small margin keeps
        // a whole number of cycles (64 / 6.4 GB/s at 1 GHz) from rounding up to the next.
        let burst = |gbps: f64| ((LINE_BYTES as f64 * ghz / gbps - 1e-9).ceil() as u64).max(1);
        let burst_cycles = burst(cfg.channel_gbps);
        let write_burst_cycles = if cfg.write_channel_gbps > 0.0 { burst(cfg.write_channel_gbps) } else { burst_cycles };
        let device = |ns: f64, burst: u64| ns_to_cycles(ns, ghz).max(burst);
        let mut device_cycles = [0; 4];
        device_cycles[READ_HIT] = device(cfg.read_hit_ns, burst_cycles);
        device_cycles[READ_MISS] = device(cfg.read_miss_ns, burst_cycles);
        device_cycles[WRITE_HIT] = device(cfg.write_hit_ns, write_burst_cycles);
        device_cycles[WRITE_MISS] = device(cfg.write_miss_ns, write_burst_cycles);
        let drain_cycles = device_cycles[WRITE_MISS].div_ceil(cfg.banks as u64).max(write_burst_cycles);
        let mut pj_per_bit = [0.0; 4];
        pj_per_bit[READ_HIT] = cfg.read_hit_pj_per_bit;
        pj_per_bit[READ_MISS] = cfg.read_miss_pj_per_bit;
        pj_per_bit[WRITE_HIT] = cfg.write_hit_pj_per_bit;
        pj_per_bit[WRITE_MISS] = cfg.write_miss_pj_per_bit;
        let frames = if cfg.endurance_writes > 0 { capacity_bytes.div_ceil(1 << FRAME_SHIFT) as usize } else { 0 };
        Ok(Tier {
            name: cfg.name.clone(),
            capacity_bytes,
            map: AddressMap::new(&channel_bits, &bank_bits, cfg.row_bytes.bytes()),
            bank_shift: cfg.banks.trailing_zeros(),
            burst_cycles,
            write_burst_cycles,
            device_cycles,
            banks: vec![Bank { open_row: CLOSED, free_at: 0, accesses: 0 }; (cfg.channels * cfg.banks) as usize],
            channels: vec![Channel::default(); cfg.channels as usize],
            stream_rows: [vec![CLOSED; (cfg.channels * cfg.banks) as usize], vec![CLOSED; (cfg.channels * cfg.banks) as usize]],
            banks_per_channel: cfg.banks as u64,
            write_queue_cycles: cfg.write_queue_entries as u64 * drain_cycles,
            drain_cycles,
            demand_kinds: [0; 4],
            queue_cycles: 0,
            mechanism_kinds: [0; 4],
            pj_per_bit,
            static_mw_per_gib: cfg.static_mw_per_gib,
            endurance_writes: cfg.endurance_writes,
            start_gap_efficiency: cfg.start_gap_efficiency,
            wear: WearCounters::new(frames),
        })
    }

    /// Serves one 64-byte access at tier-local address `addr` arriving at cycle `now`
    /// and returns its latency in cycles, queueing included. Updates the row buffer,
    /// the demand counters, energy and wear.
    #[inline(always)]
    pub fn access(&mut self, addr: u64, write: bool, now: u64) -> u64 {
        let served = self.serve::<true>(addr, write, now);
        let latency = served.finish - now;
        self.queue_cycles += latency - served.device;
        latency
    }

    /// Takes the banks and bus an access at tier-local `addr` arriving at cycle `now`
    /// would take, by the same rule as [`Tier::access`], and returns its completion
    /// cycle, counting nothing: epochs mode stands other cores' traffic, counted by
    /// the chunks that made it, beside a calibration's detailed references (see
    /// `engine::epochs`, "Calibrating under load"). It leaves the channels' shares of
    /// background traffic alone, as the chunks have added their bus time to them.
    pub(crate) fn occupy(&mut self, addr: u64, write: bool, now: u64) -> u64 {
        self.serve::<false>(addr, write, now).finish
    }

    /// Transfers `bytes` (a multiple of 64) starting at `addr` as background lines all
    /// issued at `now` (see "Background traffic" in the module documentation). Returns
    /// the cycle at which the last line completes (`now` when `bytes` is 0). A test
    /// fixture for the calendar only: mechanisms issue their lines one after another
    /// on their executor's clock (`Memory::copy`), never a batch at one instant.
    #[cfg(test)]
    pub fn bulk(&mut self, addr: u64, bytes: u64, write: bool, now: u64) -> u64 {
        assert!(
            bytes.is_multiple_of(LINE_BYTES),
            "bulk transfer of {bytes} bytes is not a whole number of 64-byte lines"
        );
        self.start_stream(write);
        (0..bytes >> LINE_SHIFT).fold(now, |done, i| done.max(self.stream_line(addr + (i << LINE_SHIFT), write, now)))
    }

    /// Starts a new stream of reads or writes: its first line in each bank is a row
    /// miss, as if no earlier stream had opened a row there.
    pub fn start_stream(&mut self, write: bool) {
        self.stream_rows[write as usize].fill(CLOSED);
    }

    /// One line of background traffic (a copy's line, a mechanism's page-table or
    /// metadata access, a flushed line written back), issued at `at`: it takes its
    /// channel for one burst (a read that opens a new row also for its row miss spread
    /// over the banks; a write for the drain time), booked in the channel's calendar.
    /// Returns when it completes: a read when its data is back (the device latency
    /// after `at` at the earliest), a write when it has drained.
    #[inline]
    pub fn stream_line(&mut self, addr: u64, write: bool, at: u64) -> u64 {
        let (ch, bank, row) = self.locate(addr);
        let row_hit = std::mem::replace(&mut self.stream_rows[write as usize][bank], row) == row;
        let k = kind(write, row_hit);
        self.mechanism_kinds[k] += 1;
        if write {
            self.wear.record(addr >> FRAME_SHIFT);
        }
        let occupancy = if write {
            self.drain_cycles
        } else if row_hit {
            self.burst_cycles
        } else {
            self.burst_cycles + self.device_cycles[READ_MISS].div_ceil(self.banks_per_channel)
        };
        let done = self.channels[ch].calendar.book(at, occupancy);
        if write {
            done
        } else {
            done.max(at + self.device_cycles[k])
        }
    }

    /// The channel, the bank's index among all the tier's banks, and the row of
    /// tier-local address `addr`.
    #[inline(always)]
    fn locate(&self, addr: u64) -> (usize, usize, u64) {
        let at = self.map.decode(addr);
        (at.channel as usize, ((at.channel << self.bank_shift) | at.bank) as usize, at.row)
    }

    /// The timing rule of the module documentation, plus energy and wear counting.
    #[inline(always)]
    fn serve<const COUNT: bool>(&mut self, addr: u64, write: bool, now: u64) -> Served {
        debug_assert!(
            addr < self.capacity_bytes,
            "address {addr:#x} beyond the {} capacity of {}",
            Size(self.capacity_bytes),
            self.name
        );
        let (ch, bank_index, row) = self.locate(addr);
        let bank = &mut self.banks[bank_index];
        let row_hit = bank.open_row == row;
        let k = kind(write, row_hit);
        if COUNT {
            bank.accesses += 1;
            self.demand_kinds[k] += 1;
            if write {
                self.wear.record(addr >> FRAME_SHIFT);
            }
        }
        let channel = &mut self.channels[ch];
        if write && self.write_queue_cycles > 0 {
            // A posted write joins its channel's queue and drains in the background; it
            // leaves the open row alone. A full queue must drain one entry first, and
            // reads wait for that as well (forced drain).
            let occupancy = self.drain_cycles;
            let queued_until = channel.drain_until;
            if queued_until.saturating_sub(now) + occupancy > self.write_queue_cycles {
                let space_at = queued_until - (self.write_queue_cycles - occupancy);
                channel.reads_held_until = channel.reads_held_until.max(space_at);
            }
            let finish = queued_until.max(now) + occupancy;
            channel.drain_until = finish;
            return Served { finish, device: occupancy.min(finish - now) };
        }
        let device = self.device_cycles[k];
        let burst = if write { self.write_burst_cycles } else { self.burst_cycles };
        // Background traffic yields to demand: this access waits its window's share of
        // background bus time, and takes its burst from the window.
        let copy_wait = if COUNT { channel.calendar.demand(now, burst) } else { 0 };
        let bank = &mut self.banks[bank_index];
        let start = (now + copy_wait).max(bank.free_at).max(channel.reads_held_until);
        let bus_at = (start + device - burst).max(channel.free_at);
        let finish = bus_at + burst;
        channel.free_at = finish;
        bank.free_at = finish;
        bank.open_row = row;
        if channel.drain_until > now {
            // Reads go first: the background drain pauses while this one uses the bus.
            channel.drain_until += self.burst_cycles;
        }
        Served { finish, device }
    }

    /// Tier-local address bits that select the channel, least significant first.
    pub fn channel_bits(&self) -> Vec<u8> {
        expand(&self.map.channel)
    }

    /// Tier-local address bits that select the bank within a channel, least
    /// significant first.
    pub fn bank_bits(&self) -> Vec<u8> {
        expand(&self.map.bank)
    }

    /// The channel, bank and row of tier-local address `addr`.
    pub fn decode(&self, addr: u64) -> Location {
        self.map.decode(addr)
    }

    /// Device latency in cycles of a read or write that hits or misses the row buffer
    /// (without queueing).
    pub fn device_cycles(&self, write: bool, row_hit: bool) -> u64 {
        self.device_cycles[kind(write, row_hit)]
    }

    /// Cycles one 64-byte read occupies a channel's data bus.
    pub fn burst_cycles(&self) -> u64 {
        self.burst_cycles
    }

    /// Cycles one 64-byte write occupies a channel's data bus.
    pub fn write_burst_cycles(&self) -> u64 {
        self.write_burst_cycles
    }

    pub fn stats(&self) -> TierStats {
        let (d, m) = (&self.demand_kinds, &self.mechanism_kinds);
        TierStats {
            reads: d[READ_HIT] + d[READ_MISS],
            writes: d[WRITE_HIT] + d[WRITE_MISS],
            row_hits: d[READ_HIT] + d[WRITE_HIT],
            row_misses: d[READ_MISS] + d[WRITE_MISS],
            queue_cycles: self.queue_cycles,
            mechanism_reads: m[READ_HIT] + m[READ_MISS],
            mechanism_writes: m[WRITE_HIT] + m[WRITE_MISS],
        }
    }

    /// Accesses of kind `k`, demand and mechanism together.
    fn accesses_of(&self, k: usize) -> u64 {
        self.demand_kinds[k] + self.mechanism_kinds[k]
    }

    /// Dynamic energy of every access so far, demand and migration, in pJ.
    pub fn dynamic_energy_pj(&self) -> f64 {
        self.pj_per_bit.iter().enumerate().map(|(k, &pj)| self.accesses_of(k) as f64 * BITS_PER_LINE * pj).sum()
    }

    /// Static energy of the whole tier over `seconds`, in joules.
    pub fn static_energy_j(&self, seconds: f64) -> f64 {
        self.static_mw_per_gib * 1e-3 * (self.capacity_bytes as f64 / GIB) * seconds
    }

    /// 64-byte line writes so far to tier-local 4 KiB frame `frame` (0 when the tier's
    /// endurance is unlimited, since wear is then not tracked). Saturates at `u32::MAX`.
    pub fn frame_writes(&self, frame: u64) -> u32 {
        self.wear.writes(frame)
    }

    /// Years until the most-written frame wears out if the write rate of the run so far
    /// (`seconds` of simulated time) continues, with each frame's writes levelled across
    /// its 64 lines: `endurance × 64 × seconds / max_frame_writes`. None when endurance
    /// is unlimited, nothing was written or `seconds` is not positive.
    pub fn lifetime_years(&self, seconds: f64) -> Option<f64> {
        let most = self.wear.most()?;
        if most == 0 || seconds.is_nan() || seconds <= 0.0 {
            return None;
        }
        Some(self.endurance_writes as f64 * LINES_PER_FRAME as f64 * seconds / most as f64 / SECONDS_PER_YEAR)
    }

    /// Like [`Tier::lifetime_years`], but with writes levelled perfectly over every line
    /// of the tier: `endurance × (capacity / 64) × seconds / line_writes`.
    pub fn ideal_lifetime_years(&self, seconds: f64) -> Option<f64> {
        let writes = self.accesses_of(WRITE_HIT) + self.accesses_of(WRITE_MISS);
        if self.endurance_writes == 0 || writes == 0 || seconds.is_nan() || seconds <= 0.0 {
            return None;
        }
        let lines = (self.capacity_bytes / LINE_BYTES) as f64;
        Some(self.endurance_writes as f64 * lines * seconds / writes as f64 / SECONDS_PER_YEAR)
    }

    /// [`Tier::ideal_lifetime_years`] times the Start-Gap efficiency: what a real
    /// wear leveller keeps of perfect levelling (memos §7.1).
    pub fn start_gap_lifetime_years(&self, seconds: f64) -> Option<f64> {
        self.ideal_lifetime_years(seconds).map(|y| y * self.start_gap_efficiency)
    }

    /// How unevenly demand accesses spread over the tier's banks: the standard
    /// deviation of the accesses per bank over their mean (0 = perfectly even; memos
    /// Fig. 15 measures the same spread in active pages per bank). None before any
    /// access.
    pub fn bank_imbalance(&self) -> Option<f64> {
        let n = self.banks.len() as f64;
        let mean = self.banks.iter().map(|b| b.accesses).sum::<u64>() as f64 / n;
        if mean == 0.0 {
            return None;
        }
        let var = self.banks.iter().map(|b| (b.accesses as f64 - mean).powi(2)).sum::<f64>() / n;
        Some(var.sqrt() / mean)
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Tier {
    /// Counts demand traffic that was not simulated request by request (epochs mode):
    /// `reads` and `writes` 64-byte accesses, `row_hits` of them finding their row
    /// open, having waited `queue_cycles` in all. Energy and the channels' demand
    /// share count them as they count simulated ones; the channels share them evenly.
    pub(crate) fn add_demand(&mut self, reads: u64, writes: u64, row_hits: u64, queue_cycles: u64) {
        let total = reads + writes;
        let row_hits = row_hits.min(total);
        // Row hits split between reads and writes in proportion.
        let read_hits = if total > 0 { (row_hits as u128 * reads as u128 / total as u128) as u64 } else { 0 };
        let write_hits = row_hits - read_hits;
        let d = &mut self.demand_kinds;
        d[kind(false, true)] += read_hits;
        d[kind(false, false)] += reads - read_hits;
        d[kind(true, true)] += write_hits;
        d[kind(true, false)] += writes - write_hits;
        self.queue_cycles += queue_cycles;
        let bus = reads * self.burst_cycles + writes * self.write_burst_cycles;
        let channels = self.channels.len() as u64;
        for (i, c) in self.channels.iter_mut().enumerate() {
            c.calendar.add_demand(bus / channels + ((i as u64) < bus % channels) as u64);
        }
    }

    /// Channels of the tier.
    pub fn channels(&self) -> usize {
        self.channels.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
