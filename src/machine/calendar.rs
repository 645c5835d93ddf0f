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
//! Demand traffic goes first on the bus: a demand transfer in a window whose bus time
//! is a share ρ background waits ρ × its burst (the expected residual of a background
//! line on the bus; one burst when background saturates the channel), and takes its
//! burst from the window, so that background booked later in that window finds less
//! room. Background already booked is not pushed back; the error is bounded by one
//! window.
//!
//! The windows are a ring of [`SLOTS`] (a horizon of `SLOTS × WINDOW` cycles, 5 ms at
//! 3.2 GHz); a booking further ahead than that from a slot still in use skips it.
//! The ring is allocated on the first booking: runs without mechanism traffic pay
//! nothing.

/// Cycles per window.
pub const WINDOW: u64 = 1 << 10;
/// Windows in the ring.
pub const SLOTS: usize = 1 << 14;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    window: u64,
    /// Cycles of the window booked, from its start (background and demand).
    used: u32,
    /// Of them, background transfers.
    background: u32,
}

/// The background bookings of one channel.
#[derive(Clone, Debug, Default)]
pub struct Calendar {
    slots: Vec<Slot>,
    /// The end of the latest background booking: demand before it may meet background.
    until: u64,
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
        if s.window < w || (s.used == 0 && s.window != w) {
            *s = Slot { window: w, used: 0, background: 0 };
        }
        (s.window == w).then_some(s)
    }

    /// Books `cycles` of background bus time starting no earlier than `at`; returns
    /// the cycle at which the transfer ends.
    pub fn book(&mut self, at: u64, cycles: u64) -> u64 {
        let mut t = at;
        loop {
            let w = t / WINDOW;
            let (start, end) = (w * WINDOW, (w + 1) * WINDOW);
            if let Some(s) = self.slot(w) {
                let begin = t.max(start + s.used as u64);
                // A transfer longer than a window takes an empty one and spills over.
                if begin + cycles <= end || (s.used == 0 && cycles > WINDOW) {
                    s.used = ((begin + cycles).min(end) - start) as u32;
                    s.background += cycles.min(WINDOW) as u32;
                    let done = begin + cycles;
                    self.until = self.until.max(done);
                    return done;
                }
            }
            t = end;
        }
    }

    /// A demand transfer of `burst` cycles arriving at `at`: returns how long it waits
    /// for background traffic (see the module documentation) and takes its bus time
    /// from the window.
    #[inline]
    pub fn demand(&mut self, at: u64, burst: u64) -> u64 {
        if at >= self.until {
            return 0;
        }
        self.meet(at, burst)
    }

    #[cold]
    fn meet(&mut self, at: u64, burst: u64) -> u64 {
        let Some(s) = self.slot(at / WINDOW) else { return 0 };
        let wait = burst * (s.background as u64).min(WINDOW) / WINDOW;
        s.used = (s.used as u64 + burst).min(WINDOW) as u32;
        wait
    }

    /// The end of the latest background booking.
    pub fn until(&self) -> u64 {
        self.until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // queues behind what is booked in its own window.
        // (Window 1 holds 49 transfers, 980 cycles from 1024: it starts at 2004.)
        assert_eq!(c.book(1030, 20), 2024);
    }

    #[test]
    fn demand_waits_the_background_share_of_its_window() {
        let mut c = Calendar::default();
        assert_eq!(c.demand(100, 20), 0, "no background: no calendar");
        // Background takes 512 of window 0's 1024 cycles, until cycle 512: ρ = 1/2, a
        // 20-cycle burst at 300 waits 10 cycles; one after 512 does not wait.
        for _ in 0..16 {
            c.book(0, 32);
        }
        assert_eq!(c.demand(300, 20), 10);
        // The demand took 20 cycles of the window: the next background transfer starts
        // after 512 + 20.
        assert_eq!(c.book(0, 32), 532 + 32);
        assert_eq!(c.demand(600, 20), 0);
        // A saturated window: one burst.
        let mut d = Calendar::default();
        d.book(0, 2048);
        assert_eq!(d.demand(10, 20), 20);
        assert_eq!(d.demand(5000, 20), 0, "after the last booking");
    }
}
