//! A tier's parameters: [`TierConfig`] with Rainbow's DRAM as its default and
//! [`pcm_default`] its PCM, each number derived from Table IV; their validation, and
//! the channel and bank bits in effect.

use super::{ADDRESS_BITS, LINE_BYTES, LINE_SHIFT, MAX_BANKS};
use crate::units::{Capacity, Size};
use anyhow::{bail, ensure, Result};
use serde::{Deserialize, Serialize};

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
pub(crate) fn pcm_default() -> TierConfig {
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
    pub(crate) fn validate(&self) -> Result<()> {
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
