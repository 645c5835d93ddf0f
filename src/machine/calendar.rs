//! The bus time of one channel taken by background traffic (mechanisms' copies,
//! scans, flush write-backs, metadata), booked by time.
//!
//! Executors run ahead of one another by up to one mechanism each: a thread's step,
//! or a core's synchronous handler, books its accesses at their own (future) times
//! before the cores have simulated those times. A single "busy until" time per channel
//! would make every later-booked but earlier-timed request queue behind the furthest
//! booking — a long copy would wall off a channel. Instead the bus is cut into windows
//! of [`WINDOW`] cycles, each holding the background transfers booked in it, packed
//! from its start: a transfer at `at` starts at the first free cycle of its window not
//! before `at`, or moves to the next window when it does not fit. Requests are thus
//! delayed only by traffic booked at about their own time (at most one window early),
//! whatever order they were booked in, and concurrent streams share the bandwidth.
//!
//! Demand traffic goes first on the bus. The channel measures the share u of its bus
//! time that demand took since the previous background booking (over at least a
//! window), and each background transfer reserves its bus time stretched by
//! 1 / (1 − u) (u at most [`MAX_DEMAND_SHARE`]): a backlogged stream gets the bus time
//! demand leaves, 1 − u of the channel. A demand transfer arriving at a time its
//! window's bookings span waits ρ × its burst, ρ being the background share of the
//! bus over that span — the chance that a background line holds the bus, times the
//! line. Beside a backlogged stream ρ = 1 − u; beside sparse lines, their share of the
//! time between them; outside every booking, nothing.
//!
//! The windows are a ring of [`SLOTS`] (a horizon of `SLOTS × WINDOW` cycles, 5 ms at
//! 3.2 GHz); a booking further ahead than that from a slot still in use skips it.
//! The ring is allocated on the first booking: runs without mechanism traffic pay
//! only a counter per demand access.

/// Cycles per window.
pub const WINDOW: u64 = 1 << 10;
/// Windows in the ring.
pub const SLOTS: usize = 1 << 14;
/// The largest demand share background makes room for (a stream keeps at least 5 %
/// of a saturated channel, as a memory controller's starvation limit would give it).
pub const MAX_DEMAND_SHARE: f64 = 0.95;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    window: u64,
    /// Offsets in the window of the first booking's start and of the last one's end
    /// (bookings are packed: a new one starts at `end` at the earliest).
    first: u16,
    end: u16,
    /// Cycles reserved by the bookings.
    reserved: u16,
    /// A jump over full windows: windows `[window, window + ahead)` each have at most
    /// `ahead_free` free cycles after their last booking (none known when `ahead` is
    /// 0). Bookings only fill a window, so this stays true while the slot holds it,
    /// and a booking longer than `ahead_free` passes them all in one step.
    ahead: u32,
    ahead_free: u16,
}

impl Slot {
    fn empty(window: u64) -> Slot {
        Slot { window, ..Slot::default() }
    }

    /// Whether a booking of `reserved` cycles can take none of the windows this slot's
    /// jump passes. (A passed window holds a booking, so it is not empty: a transfer
    /// longer than a window, which needs an empty one, passes them too.)
    fn passes(&self, reserved: u64) -> bool {
        self.ahead > 0 && reserved > self.ahead_free as u64
    }
}

/// The background bookings of one channel.
#[derive(Clone, Debug, Default)]
pub struct Calendar {
    slots: Vec<Slot>,
    /// The end of the latest background booking: demand before it may meet background.
    until: u64,
    /// Bus cycles taken by demand so far.
    demand_cycles: u64,
    /// When demand's share was last measured, and its count then.
    mark_at: u64,
    mark_demand: u64,
    /// Demand's share of the bus measured then.
    demand_share: f64,
}

impl Calendar {
    /// The slot of window `w`, reset if it held an older window; `None` when it holds
    /// a later one (a booking beyond the horizon).
    #[inline]
    fn slot(&mut self, w: u64) -> Option<&mut Slot> {
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); SLOTS];
        }
        let s = &mut self.slots[w as usize & (SLOTS - 1)];
        if s.window < w || (s.reserved == 0 && s.window != w) {
            *s = Slot::empty(w);
        }
        (s.window == w).then_some(s)
    }

    /// Books `cycles` of background bus time starting no earlier than `at`, stretched
    /// to leave demand its share; returns the cycle at which the transfer ends.
    ///
    /// Behind a long copy the windows ahead of a new line's time are full, and
    /// scanning them one by one would make booking a copy quadratic in its length (and
    /// two streams on one channel each scan the other's windows): the windows a
    /// booking passes are given a jump to where it went, so the next booking that
    /// cannot fit them passes them in one step, as in a union-find's path compression.
    pub fn book(&mut self, at: u64, cycles: u64) -> u64 {
        if at >= self.mark_at + WINDOW {
            let share = (self.demand_cycles - self.mark_demand) as f64 / (at - self.mark_at) as f64;
            self.demand_share = share.min(MAX_DEMAND_SHARE);
            (self.mark_at, self.mark_demand) = (at, self.demand_cycles);
        }
        let reserved = ((cycles as f64 / (1.0 - self.demand_share)).round() as u64).max(cycles);
        let mut t = at;
        let first_window = at / WINDOW;
        // The most free cycles of a window passed after the first (the first may have
        // room before `at` that a booking with an earlier time could take; a window
        // beyond the horizon, which no booking can take, has none).
        let mut passed_free = 0;
        loop {
            let w = t / WINDOW;
            let (start, end) = (w * WINDOW, (w + 1) * WINDOW);
            if let Some(s) = self.slot(w) {
                if s.passes(reserved) {
                    passed_free = passed_free.max(s.ahead_free as u64);
                    t = (w + s.ahead as u64) * WINDOW;
                    continue;
                }
                let begin = t.max(start + s.end as u64);
                // A transfer longer than a window takes an empty one and spills over.
                if begin + reserved <= end || (s.reserved == 0 && reserved > WINDOW) {
                    if s.reserved == 0 {
                        s.first = (begin - start) as u16;
                    }
                    let stop = (begin + reserved).min(end);
                    s.end = (stop - start) as u16;
                    s.reserved += (stop - begin) as u16;
                    let done = begin + reserved;
                    self.until = self.until.max(done);
                    if w > first_window + 1 {
                        self.jump(first_window + 1, w, passed_free, reserved);
                    }
                    return done;
                }
                if w > first_window {
                    passed_free = passed_free.max(WINDOW - s.end as u64);
                }
            }
            t = end;
        }
    }

    /// Gives each window a booking of `reserved` cycles passed on its way from `from`
    /// to `to` (the same path: a window's old jump is followed where the booking took
    /// it) a jump to `to`, with `free` the most free cycles of any of them.
    fn jump(&mut self, from: u64, to: u64, free: u64, reserved: u64) {
        let mut w = from;
        while w < to {
            let Some(s) = self.slot(w) else {
                w += 1;
                continue;
            };
            let next = if s.passes(reserved) { w + s.ahead as u64 } else { w + 1 };
            if let Ok(ahead) = u32::try_from(to - w) {
                (s.ahead, s.ahead_free) = (ahead, free as u16);
            }
            w = next;
        }
    }

    /// A demand transfer of `burst` cycles arriving at `at`: counted in demand's share
    /// of the bus; returns how long it waits for background traffic (see the module
    /// documentation).
    #[inline]
    pub fn demand(&mut self, at: u64, burst: u64) -> u64 {
        self.demand_cycles += burst;
        if at >= self.until {
            return 0;
        }
        self.meet(at, burst)
    }

    #[cold]
    fn meet(&mut self, at: u64, burst: u64) -> u64 {
        let keep = 1.0 - self.demand_share;
        let Some(s) = self.slot(at / WINDOW) else { return 0 };
        let offset = (at % WINDOW) as u16;
        if offset < s.first || offset >= s.end {
            return 0;
        }
        let rho = keep * s.reserved as f64 / (s.end - s.first) as f64;
        (burst as f64 * rho).round() as u64
    }

    /// The end of the latest background booking.
    pub fn until(&self) -> u64 {
        self.until
    }
}

impl Calendar {
    /// Counts `cycles` of demand bus time that no request was simulated for (epochs
    /// mode's demand traffic, module `machine::epochs`): background traffic leaves it
    /// its share as it leaves simulated demand.
    pub fn add_demand(&mut self, cycles: u64) {
        self.demand_cycles += cycles;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thousand 100-cycle transfers all asked for at cycle 0 fill ten to a window
    /// (24 cycles left in each), each passing the full windows before it; a shorter
    /// transfer still finds the first window's gap, and a long one goes after them all.
    #[test]
    fn a_booking_passes_the_full_windows_and_still_finds_a_gap_it_fits() {
        let mut c = Calendar::default();
        for k in 0..1000u64 {
            assert_eq!(c.book(0, 100), (k / 10) * WINDOW + (k % 10 + 1) * 100, "transfer {k}");
        }
        assert_eq!(c.book(0, 20), 1020, "the 24 cycles left in window 0");
        assert_eq!(c.book(0, 100), 100 * WINDOW + 100, "after the hundred full windows");
        assert_eq!(c.book(50 * WINDOW + 10, 24), 50 * WINDOW + 1024, "a later start finds its own window's gap");
    }

    /// Jumps over full windows never change where a booking goes: three streams on one
    /// channel (two copies at their own times, sparse lines between them, some longer
    /// than a window) booked in an interleaved order land where a window-by-window
    /// walk puts them, with no demand (reservations as asked).
    #[test]
    fn jumps_over_full_windows_place_bookings_as_a_walk_does() {
        // The walk: each window's end offset, or none when it is empty.
        let mut ends: Vec<Option<u64>> = vec![None; 4096];
        let mut walk = |at: u64, r: u64| -> u64 {
            let mut w = at / WINDOW;
            loop {
                let start = w * WINDOW;
                let begin = at.max(start + ends[w as usize].unwrap_or(0));
                if begin + r <= start + WINDOW || (ends[w as usize].is_none() && r > WINDOW) {
                    ends[w as usize] = Some((begin + r).min(start + WINDOW) - start);
                    return begin + r;
                }
                w += 1;
            }
        };
        let mut c = Calendar::default();
        let mut rng = crate::rng::Rng::new(11);
        let (mut a, mut b) = (0u64, 300 * WINDOW);
        for k in 0..20_000 {
            let (at, r) = match rng.below(3) {
                0 => {
                    a += 40;
                    (a, 30 + rng.below(80))
                }
                1 => {
                    b += 25;
                    (b, 60)
                }
                _ => (rng.below(600 * WINDOW), if rng.below(50) == 0 { 1500 } else { 1 + rng.below(300) }),
            };
            assert_eq!(c.book(at, r), walk(at, r), "booking {k}: {r} cycles at {at}");
        }
    }

    #[test]
    fn dense_bookings_pack_windows_and_sparse_ones_keep_their_time() {
        let mut c = Calendar::default();
        // 100 transfers of 20 cycles all at cycle 0: 51 fit the first window (1020
        // cycles), the 52nd starts the next window at 1024.
        let ends: Vec<u64> = (0..100).map(|_| c.book(0, 20)).collect();
        assert_eq!((ends[0], ends[50], ends[51], ends[99]), (20, 1020, 1044, 1024 + 49 * 20));
        // A sparse stream far ahead keeps its own times.
        assert_eq!(c.book(50_000, 20), 50_020);
        assert_eq!(c.book(60_000, 20), 60_020);
        // A request booked later but timed earlier is not walled off by them: it only
        // queues behind what is booked in its own window. (Window 1 holds 49
        // transfers, 980 cycles from 1024: it starts at 2004.)
        assert_eq!(c.book(1030, 20), 2024);
    }

    #[test]
    fn sparse_lines_hold_the_bus_for_their_share_of_the_time_between_them() {
        let mut c = Calendar::default();
        // Two 20-cycle lines at 100 and 500 in window 0: they span [100, 520) with 40
        // cycles of bus, ρ = 40 / 420: a 20-cycle burst at 300 waits round(1.9) = 2.
        c.book(100, 20);
        c.book(500, 20);
        assert_eq!(c.demand(300, 20), 2);
        assert_eq!(c.demand(50, 20), 0, "before the first line");
    }

    #[test]
    fn background_leaves_demand_its_share_and_demand_waits_the_background_share() {
        let mut c = Calendar::default();
        assert_eq!(c.demand(100, 20), 0, "no background: no wait");
        // Demand took 20 of the first 2048 cycles, then a booking at 2048 measures it:
        // u = 20/2048 ≈ 0.98 %, a 100-cycle transfer reserves 101.
        assert_eq!(c.book(2048, 100), 2149);
        // Demand at a quarter of the bus for the next 4096 cycles: u = 1/4, and a
        // transfer of 300 cycles reserves 400.
        for i in 0..205 {
            c.demand(2048 + i * 20, 5);
        }
        assert_eq!(c.book(2048 + 4100, 300), 6148 + 400);
        // Demand at a time the transfer spans waits 10 × 3/4 (the background share of
        // its reserved bus time); after the transfer, in the same window, nothing.
        assert_eq!(c.demand(6200, 10), 8);
        assert_eq!(c.demand(6600, 10), 0);
        // A saturating demand share is capped: background keeps 5 % of the bus.
        let mut d = Calendar::default();
        for i in 0..100 {
            d.demand(i * 20, 20);
        }
        // 50 cycles reserve 1000: they do not fit what is left of window 1, so they
        // start window 2.
        assert_eq!(d.book(2000, 50), 2048 + 1000);
        assert_eq!(d.demand(5000, 20), 0, "after the last booking");
    }
}
