//! Limits every page move is held to, whichever policy asks and whichever executor
//! runs it: promotion and demotion bandwidth. (Per-tenant fast-tier quotas are the
//! machine's, `Mechanisms::set_fast_quota`; free-page watermarks are in the
//! monitoring layer, which policies consult before they reclaim.)

use crate::machine::{Direction, MechError};

/// A limit of bytes per window of simulated time, as Linux's
/// `numa_balancing_promote_rate_limit_MBps` is kept (kernel/sched/fair.c,
/// `numa_promotion_rate_limit`: moves are counted in windows of one second; once
/// a window's count reaches the limit, further moves wait for the next window).
#[derive(Clone, Debug)]
pub struct RateLimit {
    bytes_per_window: u64,
    window_cycles: u64,
    window_start: u64,
    used: u64,
}

impl RateLimit {
    /// `mb_per_s` megabytes (10^6 bytes) per second of simulated time at `freq_ghz`,
    /// counted in one-second windows.
    pub fn new(mb_per_s: f64, freq_ghz: f64) -> RateLimit {
        RateLimit { bytes_per_window: (mb_per_s * 1e6) as u64, window_cycles: (freq_ghz * 1e9) as u64, window_start: 0, used: 0 }
    }

    /// Moves the window to the one holding `now`.
    fn roll(&mut self, now: u64) {
        if now >= self.window_start + self.window_cycles {
            self.window_start = now - (now - self.window_start) % self.window_cycles;
            self.used = 0;
        }
    }

    /// Whether a move may start at `now`: `Err(retry_at)` once the window's budget is
    /// used up. (The last move of a window may overshoot it, as in Linux.)
    pub fn check(&mut self, now: u64) -> Result<(), u64> {
        self.roll(now);
        if self.used >= self.bytes_per_window {
            Err(self.window_start + self.window_cycles)
        } else {
            Ok(())
        }
    }

    /// Counts `bytes` moved at `now`.
    pub fn count(&mut self, now: u64, bytes: u64) {
        self.roll(now);
        self.used += bytes;
    }
}

/// The promotion and demotion limits in force (none by default).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    promote: Option<RateLimit>,
    demote: Option<RateLimit>,
}

impl Limits {
    fn get(&mut self, d: Direction) -> &mut Option<RateLimit> {
        match d {
            Direction::Promote => &mut self.promote,
            Direction::Demote => &mut self.demote,
        }
    }

    pub fn set(&mut self, d: Direction, limit: Option<RateLimit>) {
        *self.get(d) = limit;
    }

    /// Whether a move in direction `d` may start at `now`.
    pub fn check(&mut self, d: Direction, now: u64) -> Result<(), MechError> {
        match self.get(d) {
            Some(l) => l.check(now).map_err(|retry_at| MechError::RateLimited { direction: d, retry_at }),
            None => Ok(()),
        }
    }

    /// Counts `bytes` moved in direction `d` at `now`.
    pub fn count(&mut self, d: Direction, now: u64, bytes: u64) {
        if let Some(l) = self.get(d) {
            l.count(now, bytes);
        }
    }
}

impl crate::machine::hypervisor::MoveLimits for Limits {
    fn check(&mut self, d: Direction, at: u64) -> Result<(), MechError> {
        Limits::check(self, d, at)
    }
    fn count(&mut self, d: Direction, at: u64, bytes: u64) {
        Limits::count(self, d, at, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_admits_moves_until_its_budget_is_used() {
        // 1 MB/s at 1 GHz: 10^6 bytes per 10^9-cycle window.
        let mut l = RateLimit::new(1.0, 1.0);
        for i in 0..244 {
            assert_eq!(l.check(i * 1000), Ok(()), "move {i}");
            l.count(i * 1000, 4096);
        }
        // 244 × 4096 = 999 424 bytes: one more page fits (overshooting to 1 003 520).
        assert_eq!(l.check(300_000), Ok(()));
        l.count(300_000, 4096);
        assert_eq!(l.check(400_000), Err(1_000_000_000));
        // The next window starts afresh; a window is found from its start, not from
        // the first move in it.
        assert_eq!(l.check(2_500_000_000), Ok(()));
        l.count(2_500_000_000, 1_000_000);
        assert_eq!(l.check(2_999_999_999), Err(3_000_000_000));
    }
}
