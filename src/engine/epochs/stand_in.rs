//! Other cores' traffic beside a calibration (the parent module's "Calibrating under
//! load").
//!
//! A calibration runs one core's references through the full machine while the other
//! cores go on in chunks, whose traffic the tiers count but never serve request by
//! request. Alone on the banks and buses, the calibrating core would measure its
//! memory latencies without the queues the other cores make, and every chunk priced
//! from that fit would run as if the machine were idle apart from its own core. So
//! while a core calibrates, each other core that runs in chunks has a stand-in: it
//! issues that core's memory traffic, as its last chunk's cost states it, into the
//! tiers' banks and buses, by the rule a detailed core's clock follows. A demand line
//! goes out after the cycles that core's references spend outside memory (base CPI,
//! translation, the caches' stall, per line that reaches memory), and the stand-in's
//! clock then moves on by the line's stall weight times its latency (1 for a
//! dependent load, 1/MLP otherwise), so a slower tier slows it as it would slow the
//! core. The core's write-backs and page-walk lines go with its demand lines in
//! proportion. A demand line opens the row of the line before it with the tier's
//! calibrated row-hit share (the next line of the same 4 KiB block), otherwise a line
//! drawn at random over the tier; write-backs are drawn at random.
//!
//! The stand-ins' lines take banks and bus time and count nothing (`Tier::occupy`):
//! the chunks that made them have counted them. A run of one core has no stand-ins,
//! so its calibrations are those of a run without them.
//!
//! Banks and buses are not all the cores share: in detailed mode the other cores'
//! lines also take space in the shared last-level cache, and a core alone in it hits
//! more (memos' preset, `--mix kv,stream,gups,zipf` at 256 MiB with first touch:
//! detailed mode with a private 8 MiB L3 per core ran 29, 1, 21 and 43 % more
//! references than with the shared one, and epochs mode, whose calibrations had the
//! cache to themselves, was within 2–11 % of the private figures). So a core's
//! calibration records the lines its accesses brought to the shared last level, its
//! page walks' included (`Caches::start_recording`), and its stand-in, when another
//! core calibrates, replays them in order and over again
//! (`engine.epochs.replay_lines`): each goes through the shared cache, counting
//! nothing, and a line that misses goes to its tier's banks and bus, the stand-in's
//! clock then moving on by its stall weight times the line's latency. The lines
//! come at the pace of the core's last chunk, its cycles outside memory per
//! reference spread over the lines its calibration recorded per reference; its
//! write-backs are drawn as above, per line that missed (its replayed lines fill the
//! cache clean), and a dirty line a replayed fill evicts is written to its tier.
//! Recorded addresses are physical: a page moved since keeps its old frame's lines
//! in the replay until the core calibrates again.

use super::{CoreRun, Driver, PerRef};
use crate::machine::epochs::MAX_TIERS;
use crate::machine::{Machine, Redirect, TierId};
use crate::rng::Rng;

/// Bytes of the block whose next line a row-hitting demand line takes: 4 KiB, the
/// rows' smallest size in the presets.
const BLOCK: u64 = 4096;

/// A core's traffic as a calibration of another core meets it.
#[derive(Clone, Debug, Default)]
pub(super) struct StandIn {
    /// The core's cost per reference in its last chunk.
    pub per_ref: Option<PerRef>,
    active: bool,
    /// Its clock, in cycles.
    at: f64,
    /// Write-back and walk lines owed to each tier (fractions carried).
    owed: [[f64; 2]; MAX_TIERS],
    /// Tier-local address of its last demand line in each tier.
    last: [u64; MAX_TIERS],
    /// The physical lines its core brought to the shared last-level cache in its last
    /// calibration, in order, the references they came from, and the next to replay.
    replay: Vec<u64>,
    replay_refs: u64,
    pos: usize,
    /// Its core's references when that recording began.
    recorded_from: u64,
}

/// The stand-ins' shared state: their generator and the earliest clock among them.
#[derive(Clone, Debug)]
pub(super) struct StandIns {
    rng: Rng,
    /// The earliest clock among the active stand-ins (infinite: none is active).
    pub next: f64,
    /// Whether the calibration under way runs beside other cores' traffic: theirs
    /// in detail, or their stand-ins'.
    pub ran: bool,
}

impl StandIns {
    pub fn new(seed: u64) -> StandIns {
        StandIns { rng: Rng::new(seed ^ 0x5741_4e44_494e_5321), next: f64::INFINITY, ran: false }
    }
}

impl Driver {
    /// Starts the stand-ins of the cores other than `core` that run in chunks, their
    /// clocks at `now`, as `core`'s calibration begins.
    pub(super) fn start_stand_ins(&mut self, core: usize, now: u64) {
        let on = self.cfg.stand_ins;
        for (k, c) in self.cores.iter_mut().enumerate() {
            let lines = c.stand_in.per_ref.map_or(0.0, |r| r.memory.iter().sum::<f64>());
            c.stand_in.active = on && k != core && !c.detailed && c.left > 0 && lines > 0.0;
            c.stand_in.at = now as f64;
        }
        self.stand_ins.next = now as f64;
        self.stand_ins.ran = self.cores.iter().enumerate().any(|(k, c)| k != core && c.left > 0 && (c.detailed || c.stand_in.active));
    }

    /// Stops `core`'s stand-in: the core runs its own references.
    pub(super) fn stop_stand_in(&mut self, core: usize) {
        self.cores[core].stand_in.active = false;
    }

    /// Starts recording the lines `core`'s calibration brings to the shared
    /// last-level cache, for its stand-in to replay.
    pub(super) fn start_recording<R: Redirect>(&mut self, machine: &mut Machine<R>, core: usize) {
        if self.cfg.stand_ins && self.cfg.replay_lines && machine.epochs_start_recording(core) {
            self.cores[core].stand_in.recorded_from = machine.cores()[core].stats.references;
        }
    }

    /// Ends `core`'s recording; its stand-in replays it from the start.
    pub(super) fn stop_recording<R: Redirect>(&mut self, machine: &mut Machine<R>, core: usize) {
        let lines = machine.epochs_stop_recording(core);
        let s = &mut self.cores[core].stand_in;
        let refs = machine.cores()[core].stats.references - s.recorded_from;
        if !lines.is_empty() && refs > 0 {
            s.replay = lines;
            s.replay_refs = refs;
            s.pos = 0;
        }
    }

    /// Issues the stand-ins' lines due by cycle `now`.
    #[inline]
    pub(super) fn stand<R: Redirect>(&mut self, machine: &mut Machine<R>, now: u64) {
        let now = now as f64;
        if now < self.stand_ins.next {
            return;
        }
        let mut next = f64::INFINITY;
        let tiers = self.load.len();
        for c in self.cores.iter_mut().filter(|c| c.stand_in.active) {
            while c.stand_in.at <= now {
                if c.stand_in.replay.is_empty() {
                    step(c, &mut self.stand_ins.rng, machine, tiers, self.cpi);
                } else {
                    replay(c, &mut self.stand_ins.rng, machine, tiers, self.cpi);
                }
            }
            next = next.min(c.stand_in.at);
        }
        self.stand_ins.next = next;
    }
}

/// One demand line of core `c`'s stand-in, with the write-back and walk lines it
/// carries.
fn step<R: Redirect>(c: &mut CoreRun, rng: &mut Rng, machine: &mut Machine<R>, tiers: usize, cpi: f64) {
    let r = c.stand_in.per_ref.expect("an active stand-in has a cost");
    let lines: f64 = r.memory[..tiers].iter().sum();
    let mut x = rng.unit() * lines;
    let mut t = tiers - 1;
    for (i, &m) in r.memory[..tiers].iter().enumerate() {
        if x < m {
            t = i;
            break;
        }
        x -= m;
    }
    let s = &mut c.stand_in;
    let issue = s.at as u64;
    let capacity_lines = |m: &Machine<R>, u: usize| m.memory().tiers().get(TierId(u as u8)).capacity_bytes() / 64;
    let addr = if rng.chance(c.cost.tiers[t].row_hits) {
        let last = s.last[t];
        (last & !(BLOCK - 1)) | ((last + 64) & (BLOCK - 1))
    } else {
        rng.below(capacity_lines(machine, t)) * 64
    };
    s.last[t] = addr;
    let finish = machine.epochs_occupy(TierId(t as u8), addr, false, issue);
    // Write-backs (every line that misses evicts one, dirty with the calibrated
    // share, spread over the tiers as a chunk spreads them) and walk lines.
    let misses = lines + r.walk[2];
    let shares = r.writeback_shares(tiers);
    for u in 0..tiers {
        let owed = &mut s.owed[u];
        owed[0] += misses * c.cost.writebacks_per_miss * shares[u] / lines;
        owed[1] += r.walk[2] * c.cost.walk_tiers[u] / lines;
        while owed[0] >= 1.0 {
            owed[0] -= 1.0;
            let a = rng.below(capacity_lines(machine, u)) * 64;
            machine.epochs_occupy(TierId(u as u8), a, true, issue);
        }
        while owed[1] >= 1.0 {
            owed[1] -= 1.0;
            let a = rng.below(capacity_lines(machine, u)) * 64;
            machine.epochs_occupy(TierId(u as u8), a, false, issue);
        }
    }
    let outside = cpi * (1.0 + r.instructions) + r.translation + r.cache_stall;
    let weight = if r.memory[t] > 0.0 { r.memory_weight[t] / r.memory[t] } else { 1.0 };
    s.at += outside / lines + weight * (finish - issue) as f64;
}

/// One recorded line of core `c`'s stand-in, through the shared last-level cache and,
/// on a miss, its tier; with the write-backs a miss carries.
fn replay<R: Redirect>(c: &mut CoreRun, rng: &mut Rng, machine: &mut Machine<R>, tiers: usize, cpi: f64) {
    let r = c.stand_in.per_ref.expect("an active stand-in has a cost");
    let s = &mut c.stand_in;
    let line = s.replay[s.pos];
    s.pos = if s.pos + 1 == s.replay.len() { 0 } else { s.pos + 1 };
    let issue = s.at as u64;
    let outside = (cpi * (1.0 + r.instructions) + r.translation + r.cache_stall) * s.replay_refs as f64 / s.replay.len() as f64;
    s.at += outside;
    let Some((t, finish)) = machine.epochs_replay(line, issue) else { return };
    let t = t.index();
    let lines: f64 = r.memory[..tiers].iter().sum();
    let weight = if r.memory[t] > 0.0 {
        r.memory_weight[t] / r.memory[t]
    } else if lines > 0.0 {
        r.memory_weight[..tiers].iter().sum::<f64>() / lines
    } else {
        1.0
    };
    s.at += weight * (finish - issue) as f64;
    // Its own write-backs: the lines it replays fill the cache clean, so the dirty
    // lines its misses would evict are drawn as `step` draws them.
    let shares = r.writeback_shares(tiers);
    for (u, share) in shares.iter().enumerate().take(tiers) {
        let owed = &mut s.owed[u][0];
        *owed += c.cost.writebacks_per_miss * share;
        while *owed >= 1.0 {
            *owed -= 1.0;
            let lines = machine.memory().tiers().get(TierId(u as u8)).capacity_bytes() / 64;
            let a = rng.below(lines) * 64;
            machine.epochs_occupy(TierId(u as u8), a, true, issue);
        }
    }
}
