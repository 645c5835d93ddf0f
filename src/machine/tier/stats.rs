//! The tier's counters and what the report derives from them: demand and mechanism
//! traffic ([`TierStats`]), dynamic and static energy, wear and projected lifetime,
//! the spread of accesses over banks, and demand counted without being simulated
//! (epochs mode).

use super::{kind, Tier, LINE_BYTES, LINE_SHIFT, FRAME_SHIFT, READ_HIT, READ_MISS, WRITE_HIT, WRITE_MISS};
use serde::Serialize;

const BITS_PER_LINE: f64 = (LINE_BYTES * 8) as f64;
const LINES_PER_FRAME: u64 = 1 << (FRAME_SHIFT - LINE_SHIFT);
const GIB: f64 = (1u64 << 30) as f64;
const SECONDS_PER_YEAR: f64 = 365.25 * 24.0 * 3600.0;

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
    pub(crate) fn read_bytes(&self) -> u64 {
        self.reads * LINE_BYTES
    }

    /// Bytes written by demand accesses.
    pub(crate) fn written_bytes(&self) -> u64 {
        self.writes * LINE_BYTES
    }

    /// Bytes read and written by mechanisms.
    pub(crate) fn mechanism_bytes(&self) -> u64 {
        (self.mechanism_reads + self.mechanism_writes) * LINE_BYTES
    }
}

impl Tier {
    pub(crate) fn stats(&self) -> TierStats {
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
    pub(crate) fn dynamic_energy_pj(&self) -> f64 {
        self.pj_per_bit.iter().enumerate().map(|(k, &pj)| self.accesses_of(k) as f64 * BITS_PER_LINE * pj).sum()
    }

    /// Static energy of the whole tier over `seconds`, in joules.
    pub(crate) fn static_energy_j(&self, seconds: f64) -> f64 {
        self.static_mw_per_gib * 1e-3 * (self.capacity_bytes as f64 / GIB) * seconds
    }

    /// 64-byte line writes so far to tier-local 4 KiB frame `frame` (0 when the tier's
    /// endurance is unlimited, since wear is then not tracked). Saturates at `u32::MAX`.
    #[cfg(test)]
    pub(crate) fn frame_writes(&self, frame: u64) -> u32 {
        self.wear.writes(frame)
    }

    /// Years until the most-written frame wears out if the write rate of the run so far
    /// (`seconds` of simulated time) continues, with each frame's writes levelled across
    /// its 64 lines: `endurance × 64 × seconds / max_frame_writes`. None when endurance
    /// is unlimited, nothing was written or `seconds` is not positive.
    pub(crate) fn lifetime_years(&self, seconds: f64) -> Option<f64> {
        let most = self.wear.most()?;
        if most == 0 || seconds.is_nan() || seconds <= 0.0 {
            return None;
        }
        Some(self.endurance_writes as f64 * LINES_PER_FRAME as f64 * seconds / most as f64 / SECONDS_PER_YEAR)
    }

    /// Like [`Tier::lifetime_years`], but with writes levelled perfectly over every line
    /// of the tier: `endurance × (capacity / 64) × seconds / line_writes`.
    pub(crate) fn ideal_lifetime_years(&self, seconds: f64) -> Option<f64> {
        let writes = self.accesses_of(WRITE_HIT) + self.accesses_of(WRITE_MISS);
        if self.endurance_writes == 0 || writes == 0 || seconds.is_nan() || seconds <= 0.0 {
            return None;
        }
        let lines = (self.capacity_bytes / LINE_BYTES) as f64;
        Some(self.endurance_writes as f64 * lines * seconds / writes as f64 / SECONDS_PER_YEAR)
    }

    /// [`Tier::ideal_lifetime_years`] times the Start-Gap efficiency: what a real
    /// wear leveller keeps of perfect levelling (memos §7.1).
    pub(crate) fn start_gap_lifetime_years(&self, seconds: f64) -> Option<f64> {
        self.ideal_lifetime_years(seconds).map(|y| y * self.start_gap_efficiency)
    }

    /// How unevenly demand accesses spread over the tier's banks: the standard
    /// deviation of the accesses per bank over their mean (0 = perfectly even; memos
    /// Fig. 15 measures the same spread in active pages per bank). None before any
    /// access.
    pub(crate) fn bank_imbalance(&self) -> Option<f64> {
        let n = self.banks.len() as f64;
        let mean = self.banks.iter().map(|b| b.accesses).sum::<u64>() as f64 / n;
        if mean == 0.0 {
            return None;
        }
        let var = self.banks.iter().map(|b| (b.accesses as f64 - mean).powi(2)).sum::<f64>() / n;
        Some(var.sqrt() / mean)
    }

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
}
