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
//!
//! Files: this one holds the [`Tier`], its state and the timing rules above;
//! `config` its parameters ([`TierConfig`], [`pcm_default`]) and their validation;
//! `decode` where an address lives (`Location`); `stats` its counters and what they
//! give (traffic, energy, wear and lifetime, bank balance).

mod config;
mod decode;
mod stats;

pub(crate) use config::pcm_default;
pub use config::TierConfig;
pub use stats::TierStats;

use super::calendar::Calendar;
use super::wear::WearCounters;
use crate::units::Size;
use anyhow::{ensure, Result};
#[cfg(test)]
use decode::Location;
use decode::{expand, AddressMap};

const LINE_SHIFT: u32 = 6;
const LINE_BYTES: u64 = 1 << LINE_SHIFT;
const FRAME_SHIFT: u32 = 12;
/// Tier-local addresses have at most this many bits.
const ADDRESS_BITS: u8 = 48;
/// Upper bound on channels × banks, far above any real part, so that the bank state
/// stays small.
const MAX_BANKS: u64 = 1 << 20;
/// `bank.open_row` of a bank with no open row.
const CLOSED: u64 = u64::MAX;

/// Converts `ns` into core cycles at `ghz`, rounded to the nearest cycle and at least one
/// cycle for any positive time.
fn ns_to_cycles(ns: f64, ghz: f64) -> u64 {
    if ns <= 0.0 {
        return 0;
    }
    ((ns * ghz).round() as u64).max(1)
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
    pub(crate) fn new(cfg: &TierConfig, capacity_bytes: u64, ghz: f64) -> Result<Tier> {
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
    pub(crate) fn access(&mut self, addr: u64, write: bool, now: u64) -> u64 {
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
    fn bulk(&mut self, addr: u64, bytes: u64, write: bool, now: u64) -> u64 {
        assert!(
            bytes.is_multiple_of(LINE_BYTES),
            "bulk transfer of {bytes} bytes is not a whole number of 64-byte lines"
        );
        self.start_stream(write);
        (0..bytes >> LINE_SHIFT).fold(now, |done, i| done.max(self.stream_line(addr + (i << LINE_SHIFT), write, now)))
    }

    /// Starts a new stream of reads or writes: its first line in each bank is a row
    /// miss, as if no earlier stream had opened a row there.
    pub(crate) fn start_stream(&mut self, write: bool) {
        self.stream_rows[write as usize].fill(CLOSED);
    }

    /// One line of background traffic (a copy's line, a mechanism's page-table or
    /// metadata access, a flushed line written back), issued at `at`: it takes its
    /// channel for one burst (a read that opens a new row also for its row miss spread
    /// over the banks; a write for the drain time), booked in the channel's calendar.
    /// Returns when it completes: a read when its data is back (the device latency
    /// after `at` at the earliest), a write when it has drained.
    #[inline]
    pub(crate) fn stream_line(&mut self, addr: u64, write: bool, at: u64) -> u64 {
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
    pub(crate) fn channel_bits(&self) -> Vec<u8> {
        expand(&self.map.channel)
    }

    /// Tier-local address bits that select the bank within a channel, least
    /// significant first.
    pub(crate) fn bank_bits(&self) -> Vec<u8> {
        expand(&self.map.bank)
    }

    /// The channel, bank and row of tier-local address `addr`.
    #[cfg(test)]
    pub(crate) fn decode(&self, addr: u64) -> Location {
        self.map.decode(addr)
    }

    /// Device latency in cycles of a read or write that hits or misses the row buffer
    /// (without queueing).
    pub(crate) fn device_cycles(&self, write: bool, row_hit: bool) -> u64 {
        self.device_cycles[kind(write, row_hit)]
    }

    /// Cycles one 64-byte read occupies a channel's data bus.
    pub(crate) fn burst_cycles(&self) -> u64 {
        self.burst_cycles
    }

    /// Cycles one 64-byte write occupies a channel's data bus.
    pub(crate) fn write_burst_cycles(&self) -> u64 {
        self.write_burst_cycles
    }

    pub(crate) fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Channels of the tier.
    pub(crate) fn channels(&self) -> usize {
        self.channels.len()
    }
}

#[cfg(test)]
mod tests;
