//! When a periodic task of a policy is due: a scan every second, a sampling period
//! of 30 s, a monitoring window of 600 ms.
//!
//! A period is given in simulated seconds (the paper's own unit), in references, or
//! as a number of periods per run (the run's references divided evenly, for runs far
//! shorter than the paper's periods, which changes what estimators see: the report
//! says so). The pacer is asked on every reference and answers with a counter
//! compare; it looks at the clock only every [`CHECK_EVERY`] references. It knows
//! about background load: a period that comes due while the previous period's work
//! is still running waits (it is counted and its delay reported) and starts when the
//! policy says the work is done — periods never pile up.

use crate::machine::{MachineInfo, Redirect};
use crate::mechanism::{Job, Mechanisms, ThreadId};
use serde::Serialize;

/// References between looks at the clock, for periods in seconds.
pub const CHECK_EVERY: u64 = 1024;

/// A period length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Period {
    /// Simulated seconds.
    Seconds(f64),
    /// References (of all cores together).
    References(u64),
    /// The run's references divided into `periods` periods, scaling a period of
    /// `seconds` (the paper's) to a run far shorter than it. Epochs mode, which
    /// reaches the paper's time scale, runs `seconds` instead.
    PerRun { periods: u32, seconds: f64 },
}

impl Period {
    /// `periods_per_run` if positive, else `seconds`: the two keys policies offer.
    pub fn from_config(seconds: f64, periods_per_run: u32) -> Period {
        if periods_per_run > 0 {
            Period::PerRun { periods: periods_per_run, seconds }
        } else {
            Period::Seconds(seconds)
        }
    }
}

/// What the pacer did, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct PacerReport {
    /// Whether the period was scaled to the run (`PerRun`).
    pub scaled_to_run: bool,
    /// The period in simulated seconds, when given so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_s: Option<f64>,
    /// The period in references, when given so or scaled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_references: Option<u64>,
    /// Periods started.
    pub periods: u64,
    /// Periods that came due while the previous one's work was still running, and the
    /// longest such wait in simulated seconds.
    pub waited: u64,
    pub longest_wait_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Paces a periodic task; see the module documentation.
#[derive(Clone, Debug)]
pub struct Pacer {
    period: Period,
    /// Periods per run that were asked for and not applied (epochs mode runs the
    /// period in seconds).
    unscaled: Option<u32>,
    /// Periods in seconds keep their schedule (epochs mode; see [`Pacer::start`]).
    on_schedule: bool,
    /// Cycles per period (seconds) or references per period (otherwise).
    length: u64,
    by_references: bool,
    refs: u64,
    /// The reference count at which to look next.
    next_look: u64,
    /// When the next period is due: a cycle or a reference count.
    due_at: u64,
    /// The cycle a waiting period first came due.
    waiting_since: Option<u64>,
    periods: u64,
    waited: u64,
    longest_wait: u64,
    freq_hz: f64,
}

impl Pacer {
    /// A pacer for `period` on `info`'s machine; `what` names the parameter in errors.
    pub fn new(period: Period, info: &MachineInfo, what: &str) -> Result<Pacer, String> {
        let freq_hz = info.freq_ghz * 1e9;
        let (period, unscaled) = match period {
            Period::PerRun { periods, seconds } if info.paper_periods => (Period::Seconds(seconds), Some(periods)),
            p => (p, None),
        };
        let (length, by_references) = match period {
            Period::Seconds(s) if s.is_finite() && s > 0.0 => (((s * freq_hz) as u64).max(1), false),
            Period::Seconds(s) => return Err(format!("{what}: must be a positive number of seconds, got {s}")),
            Period::References(0) => return Err(format!("{what}: must be a positive number of references")),
            Period::References(n) => (n, true),
            Period::PerRun { periods: 0, .. } => return Err(format!("{what}: must be a positive number of periods")),
            Period::PerRun { periods: n, .. } => {
                if info.total_refs == 0 {
                    return Err(format!("{what}: periods per run need the run's length, which its sources do not know; give the period in seconds"));
                }
                ((info.total_refs / n as u64).max(1), true)
            }
        };
        let first_look = if by_references { length } else { CHECK_EVERY };
        Ok(Pacer { period, unscaled, on_schedule: info.paper_periods, length, by_references, refs: 0, next_look: first_look, due_at: length, waiting_since: None, periods: 0, waited: 0, longest_wait: 0, freq_hz })
    }

    /// Counts the references of one call of `Policy::on_reference`
    /// ([`Mechanisms::references`]: one, or the stretch an epochs-mode call stands
    /// for); true when a period is due at the executor's clock. The caller then either
    /// [`start`](Pacer::start)s it or, if the last period's work is still running,
    /// lets it [`wait`](Pacer::wait).
    #[inline]
    pub fn due_in<R: Redirect>(&mut self, mech: &Mechanisms<R>) -> bool {
        self.due(mech.references(), mech.now())
    }

    /// Counts `refs` references; true when a period is due at `now` (a cycle).
    #[inline]
    pub fn due(&mut self, refs: u64, now: u64) -> bool {
        self.refs += refs;
        if self.refs < self.next_look {
            return false;
        }
        self.next_look = self.refs + if self.by_references { self.length.min(CHECK_EVERY) } else { CHECK_EVERY };
        if self.by_references {
            self.refs >= self.due_at
        } else {
            now >= self.due_at
        }
    }

    /// The due period starts now: the next one is due a period later.
    pub fn start(&mut self, now: u64) {
        if let Some(since) = self.waiting_since.take() {
            self.longest_wait = self.longest_wait.max(now - since);
        }
        self.periods += 1;
        self.due_at = if self.by_references {
            self.refs + self.length
        } else if self.on_schedule && now < self.due_at + self.length {
            // Epochs mode looks at the clock once per chunk (up to a millisecond late):
            // the next period keeps the schedule rather than drift by the delay.
            self.due_at + self.length
        } else {
            now + self.length
        };
        self.next_look = self.refs + if self.by_references { self.length } else { CHECK_EVERY };
    }

    /// The due period waits for earlier work; it is asked again a few references on.
    pub fn wait(&mut self, now: u64) {
        if self.waiting_since.is_none() {
            self.waiting_since = Some(now);
            self.waited += 1;
        }
        self.next_look = self.refs + CHECK_EVERY.min(self.length);
    }

    /// Counts one reference and, when a period is due, hands `thread` the period's
    /// job if it is idle and starts the period, or else lets the period wait for the
    /// thread to finish the last one. Returns whether it submitted the job.
    #[inline]
    pub fn submit_when_due<R: Redirect>(&mut self, mech: &mut Mechanisms<R>, thread: ThreadId, job: impl FnOnce() -> Job) -> bool {
        let now = mech.now();
        if !self.due(mech.references(), now) {
            return false;
        }
        if !mech.thread(thread).is_ok_and(|t| t.idle) {
            self.wait(now);
            return false;
        }
        self.start(now);
        mech.submit(thread, job()).is_ok()
    }

    /// Periods started so far.
    pub fn periods(&self) -> u64 {
        self.periods
    }

    /// The period's length in references, when it is counted in references.
    pub fn length_references(&self) -> Option<u64> {
        self.by_references.then_some(self.length)
    }

    /// What the pacer did, with a note when the period (`what`, e.g. "the paper's
    /// 30 s sampling period") was scaled to the run.
    pub fn report(&self, what: &str) -> PacerReport {
        let (scaled, note) = match (self.period, self.unscaled) {
            (Period::PerRun { periods: n, .. }, _) => (true, Some(format!("{what} is scaled to the run: {n} periods of {} references", self.length))),
            (Period::Seconds(s), Some(n)) => (false, Some(format!("{what} runs at {s} s: epochs mode reaches the paper's time scale, so the {n} periods per run asked for are not applied"))),
            _ => (false, None),
        };
        PacerReport {
            scaled_to_run: scaled,
            period_s: match self.period {
                Period::Seconds(s) => Some(s),
                _ => None,
            },
            period_references: self.by_references.then_some(self.length),
            periods: self.periods,
            waited: self.waited,
            longest_wait_s: self.longest_wait as f64 / self.freq_hz,
            note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(total_refs: u64) -> MachineInfo {
        // 1 GHz: one cycle per nanosecond.
        let mut i = crate::policy::dram_cache::table_iv_info(1, 1, 1);
        i.freq_ghz = 1.0;
        i.total_refs = total_refs;
        i
    }

    #[test]
    fn seconds_are_checked_every_1024_references() {
        // 2 µs periods at 1 GHz: 2000 cycles. References 1 cycle apart.
        let mut p = Pacer::new(Period::Seconds(2e-6), &info(0), "t").unwrap();
        let mut due = Vec::new();
        for r in 1..=5000u64 {
            if p.due(1, r) {
                due.push(r);
                p.start(r);
            }
        }
        // Looks at 1024 (not yet), 2048 (due: ≥ 2000) → next due 4048, looked at 3072
        // (no), 4096 (due).
        assert_eq!(due, vec![2048, 4096]);
        assert_eq!(p.periods(), 2);
    }

    #[test]
    fn periods_per_run_divide_the_references() {
        let mut p = Pacer::new(Period::PerRun { periods: 4, seconds: 30.0 }, &info(1000), "t").unwrap();
        let due: Vec<u64> = (1..=1000u64).filter(|&r| p.due(1, r * 1_000_000) && { p.start(r); true }).collect();
        assert_eq!(due, vec![250, 500, 750, 1000]);
        let r = p.report("the 30 s period");
        assert_eq!(r.note.as_deref(), Some("the 30 s period is scaled to the run: 4 periods of 250 references"));
        assert!(r.scaled_to_run);
        assert!(Pacer::new(Period::PerRun { periods: 4, seconds: 30.0 }, &info(0), "policy.x.periods_per_run").unwrap_err().contains("policy.x.periods_per_run"));
        // Epochs mode runs the paper's seconds instead, and says so.
        let mut epochs = info(1000);
        epochs.paper_periods = true;
        let p = Pacer::new(Period::PerRun { periods: 4, seconds: 30.0 }, &epochs, "t").unwrap();
        let r = p.report("the 30 s period");
        assert!(!r.scaled_to_run && r.period_s == Some(30.0));
        assert!(r.note.unwrap().contains("4 periods per run asked for are not applied"));
    }

    #[test]
    fn a_period_due_while_work_runs_waits_and_does_not_pile_up() {
        let mut p = Pacer::new(Period::References(100), &info(0), "t").unwrap();
        for r in 1..=100 {
            assert_eq!(p.due(1, r), r == 100);
        }
        p.start(100);
        // Due again at 200, but the work is still running until reference 450.
        let mut started = Vec::new();
        for r in 101..=1000u64 {
            if p.due(1, r * 10) {
                if r < 450 {
                    p.wait(r * 10);
                } else {
                    started.push(r);
                    p.start(r * 10);
                }
            }
        }
        // Waiting looks again every 100 references: 300, 400 wait; 500 starts; then
        // 600 … 1000, one period each.
        assert_eq!(started, vec![500, 600, 700, 800, 900, 1000]);
        let rep = p.report("the period");
        assert_eq!((rep.periods, rep.waited), (7, 1));
        // It waited from reference 200 (cycle 2000) to 500 (cycle 5000): 3 µs.
        assert!((rep.longest_wait_s - 3e-6).abs() < 1e-12);
    }

    #[test]
    fn bad_periods_name_the_parameter() {
        assert!(Pacer::new(Period::Seconds(0.0), &info(0), "policy.k.scan_interval_s").unwrap_err().starts_with("policy.k.scan_interval_s"));
        assert!(Pacer::new(Period::References(0), &info(0), "x").is_err());
    }
}
