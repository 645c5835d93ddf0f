//! A decision of `oracle`: which swaps pay over which horizon ([`plan`]), and what
//! each move costs ([`MoveCosts`]).

use crate::machine::{MachineInfo, PageInfo, TierId};

/// A page the plan may move, or a unit not touched yet (`page: None`), which first
/// touch places where the plan says, at no cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub page: Option<PageInfo>,
    pub unit: u32,
    /// Base frames it takes.
    pub frames: u64,
    /// Its weight over horizon `level` is `weights[row * levels + level]` in
    /// [`plan`]'s table; `now`, its weight in the coming window.
    pub row: usize,
    pub now: u64,
    /// What moving it costs now (0 when untouched) and what moving it back the other
    /// way later would cost, in the weights' unit ([`MoveCosts`]).
    pub cost: u64,
    pub back: u64,
    /// The kernel thread's time for the move now, in ns (0 when untouched).
    pub busy_ns: u64,
}

/// The moves of one decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The horizon the moves pay over (its level: 2^level chunks), and what they gain
    /// over it net of every cost, in the weights' unit (0: nothing pays).
    pub level: usize,
    pub gain: u64,
    /// The moves in order, as indices into the candidates to promote (`true`) or to
    /// demote (`false`): each promotion right after the demotions that make its room.
    pub moves: Vec<(bool, usize)>,
}

/// Plans swaps into the fast tier. `promote` holds the pages outside it (and untouched
/// units the plan leaves out), `demote` those inside (and untouched units it puts
/// there); `weights` holds `levels` weights per candidate, over horizons of 1, 2, 4, …
/// chunks, the last reaching the end of the run; `room` base frames are free to take;
/// the moves may keep the kernel thread busy for `busy_ns` (the last may end past it).
///
/// For each horizon, the candidates to promote, best first (weight less the move's
/// cost, per frame), each take free frames or else displace the cheapest pages left to
/// put out (weight plus the move's cost, per frame; a huge page only huge ones), and
/// are promoted only if
///
///   gain = w(p) − cost(p) − Σ_d (w(d) + cost(d)) − min(back, max(0, Σ_d rest(d) − rest(p)))
///
/// is positive: `w` is the weight over the horizon, `cost` the move's now, `back` the
/// cost of moving `p` and every `d` back, `rest` the weight from the end of the
/// horizon to the end of the run. Our choice (no paper plans with costs): a swap that
/// leaves behind pages worth less, after its horizon, than those it displaced either
/// pays for swapping back, when that is worth it, or loses the difference; so a swap
/// is charged its round trip unless it pays over the whole rest of the run. And a
/// swap is made only if the pages it displaces weigh no more than `p` in the coming
/// window (`now`): one that pays over its horizon but not yet pays more made later,
/// and a plan that swapped now for a long horizon would be undone by the next plan
/// for a short one, over and over. The plan of the horizon whose moves gain most is
/// returned.
///
/// Per horizon only the best candidates to promote are looked at: four times as many
/// as the thread could move in `busy_ns` at the pace of the fastest move, at least 64
/// (our choice, for the time of a decision over thousands of pages). A page further
/// down the ranking waits for a later decision even if it would pay.
pub fn plan(promote: &[Candidate], demote: &[Candidate], weights: &[u64], levels: usize, room: u64, busy_ns: u64) -> Plan {
    let w = |c: &Candidate, level: usize| weights[c.row * levels + level];
    let last = levels.saturating_sub(1);
    let rest = |c: &Candidate, level: usize| w(c, last).saturating_sub(w(c, level)) as i128;
    // What a page is worth in the fast tier, net of its move: its weight less the
    // move's cost to bring it in, plus that cost to put it out; per base frame (in
    // frames of the largest candidate), to rank pages of both sizes on one scale.
    let most = promote.iter().chain(demote).map(|c| c.frames).max().unwrap_or(1).max(1);
    let density = |c: &Candidate, level: usize, inside: bool| {
        let worth = if inside { w(c, level) + c.cost } else { w(c, level).saturating_sub(c.cost) };
        worth.saturating_mul(most / c.frames.max(1))
    };
    let order = |c: &Candidate| (c.unit, c.page.map_or(0, |p| p.addr));
    // The thread makes at most `busy_ns / fastest` moves before the next decision (a
    // move and the demotions making its room take more); four times as many candidates
    // to promote are looked at (the best), which leaves room for those that do not pay.
    let fastest = promote.iter().chain(demote).map(|c| c.busy_ns).filter(|&b| b > 0).min().unwrap_or(1);
    let looked = (busy_ns / fastest).saturating_mul(4).max(64) as usize;
    let mut best = Plan::default();
    // The pages to put out, ranked over every horizon in one pass over the table.
    let n = demote.len();
    let mut columns = vec![0; n * levels];
    for (i, d) in demote.iter().enumerate() {
        for level in 0..levels {
            columns[level * n + i] = density(d, level, true);
        }
    }
    let (mut taken, mut all, mut huge_pages) = (vec![false; n], Vec::new(), Vec::new());
    for level in 0..levels {
        let mut ups: Vec<usize> = (0..promote.len()).filter(|&i| w(&promote[i], level) > promote[i].cost).collect();
        if ups.is_empty() {
            continue;
        }
        let best_first = |a: &usize, b: &usize| density(&promote[*b], level, false).cmp(&density(&promote[*a], level, false)).then_with(|| order(&promote[*a]).cmp(&order(&promote[*b])));
        if ups.len() > looked {
            ups.select_nth_unstable_by(looked - 1, best_first);
            ups.truncate(looked);
        }
        ups.sort_unstable_by(best_first);
        // The coldest pages per frame over this horizon, as many as the promotions
        // could displace: any page makes room for a base page, only a huge one (or a
        // unit not touched yet) for a huge page, which needs a huge frame free whole.
        let keys = &columns[level * n..][..n];
        let coldest = |a: &usize, b: &usize| keys[*a].cmp(&keys[*b]).then_with(|| order(&demote[*a]).cmp(&order(&demote[*b])));
        let coldest_of = |list: &mut Vec<usize>, keep: u64| {
            let keep = keep.min(list.len() as u64) as usize;
            if keep > 0 && keep < list.len() {
                list.select_nth_unstable_by(keep - 1, coldest);
            }
            list.truncate(keep);
            list.sort_unstable_by(coldest);
        };
        let frames: u64 = ups.iter().map(|&i| promote[i].frames).sum();
        let huge = ups.iter().filter(|&&i| promote[i].frames > 1).count() as u64;
        all.clear();
        all.extend(0..demote.len());
        huge_pages.clear();
        huge_pages.extend((0..demote.len()).filter(|&i| demote[i].frames > 1));
        coldest_of(&mut all, frames);
        coldest_of(&mut huge_pages, huge);
        let lists = [&all, &huge_pages];
        let (mut next, mut exhausted) = ([0; 2], [false; 2]);
        let (mut free, mut busy, mut gain, mut moves, mut displaced) = (room, 0, 0, Vec::new(), Vec::new());
        for &i in &ups {
            if busy >= busy_ns {
                break;
            }
            let p = &promote[i];
            let kind = (p.frames > 1) as usize;
            if exhausted[kind] {
                continue;
            }
            let (list, mut j, mut r, mut b) = (lists[kind], next[kind], free, p.busy_ns);
            let (mut g, mut back, mut after, mut now) = (w(p, level) as i128 - p.cost as i128, p.back as i128, -rest(p, level), 0);
            displaced.clear();
            while r < p.frames && j < list.len() {
                let k = list[j];
                j += 1;
                if taken[k] {
                    continue;
                }
                let d = &demote[k];
                g -= (w(d, level) + d.cost) as i128;
                back += d.back as i128;
                after += rest(d, level);
                b += d.busy_ns;
                r += d.frames;
                now += d.now;
                displaced.push(k);
            }
            if r < p.frames {
                exhausted[kind] = true;
                continue;
            }
            if now > p.now {
                continue;
            }
            if !displaced.is_empty() {
                g -= after.clamp(0, back);
            }
            if g <= 0 {
                continue;
            }
            for &k in &displaced {
                taken[k] = true;
                moves.push((false, k));
            }
            moves.push((true, i));
            next[kind] = j;
            (free, busy, gain) = (r - p.frames, busy + b, gain + g as u64);
        }
        for &(up, k) in &moves {
            if !up {
                taken[k] = false;
            }
        }
        if gain > best.gain {
            best = Plan { level, gain, moves };
        }
    }
    best
}

/// What a move costs, estimated from the machine's configured costs as the mechanism
/// layer charges a migration on a kernel thread.
///
/// The thread's time (`busy_ns`): the flush of the page's lines
/// (`clflush_cycles_per_line` each); the copy, its line reads kept
/// `cpu_copy_lines_in_flight` at a time at the source tier's row-miss latency, or at
/// the slower tier's bandwidth if that is slower; one shootdown (`shootdown_cycles`);
/// and the software work (`migrate_software_ns`). It bounds how many moves a
/// decision queues.
///
/// The price a move must repay (`priced`, in the weights' unit, quarter nanoseconds):
/// the part of that work that takes from the cores, which run beside the thread — the
/// copy's time on the channels at the slower tier's bandwidth, the flush of the page
/// from the caches and the shootdown — set against the memory latency the page's
/// accesses save (our choice; no paper prices moves for a bound). The software work
/// and the copy's waits on latency are the thread's alone. The flush also takes the
/// page's lines from the caches: those the cores would have found there they read
/// again from memory (`reread`, counted per page by the oracle from the first pass's
/// cache hits); for a hot page that is most of its lines, the dearest part of a move.
/// docs/policies/oracle.md measures what the parts weigh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveCosts {
    /// The thread's time in ns, by direction (promotion, demotion) and page size
    /// (base, huge).
    pub busy_ns: [[u64; 2]; 2],
    /// The cores' share, in the weights' unit; the same both ways.
    pub priced: [[u64; 2]; 2],
    /// A line the flush took from the caches and the cores read again, from the
    /// tier the page went to, by direction: the tier's read latency, in the weights'
    /// unit (until the run has measured it).
    pub reread: [u64; 2],
}

impl MoveCosts {
    pub fn new(info: &MachineInfo) -> MoveCosts {
        let gbps = info.tiers[..2].iter().map(|t| t.gbps).fold(f64::INFINITY, f64::min).max(1e-3);
        let in_flight = info.cpu_copy_lines_in_flight.max(1) as f64;
        let reread = |t: TierId| (info.tier(t).read_ns * 4.0).round() as u64;
        let mut costs = MoveCosts { busy_ns: [[0; 2]; 2], priced: [[0; 2]; 2], reread: [reread(TierId::FAST), reread(TierId::SLOW)] };
        for (d, from) in [TierId::SLOW, TierId::FAST].into_iter().enumerate() {
            for (h, bytes) in [4096, info.huge_page_bytes].into_iter().enumerate() {
                let lines = (bytes / 64) as f64;
                let channels = bytes as f64 / gbps;
                let flush_and_shootdown = (lines * info.clflush_cycles_per_line as f64 + info.shootdown_cycles as f64) / info.freq_ghz;
                let copy = channels.max(lines * info.tier(from).read_ns / in_flight);
                costs.busy_ns[d][h] = (copy + flush_and_shootdown + info.migrate_software_ns).round() as u64;
                costs.priced[d][h] = ((channels + flush_and_shootdown) * 4.0).round() as u64;
            }
        }
        costs
    }
}
