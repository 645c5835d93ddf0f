//! Progress of a long command on standard error, by phase: `setup` (building the
//! workloads and the machine), the `footprint pass` over traces that carry no
//! footprint, and the `simulation`.
//!
//! On a terminal a bar redrawn in place, from the first second on, shows the phase,
//! how far it is, the rate and the time left; elsewhere `--progress` prints a plain
//! line at every phase change and every few seconds. A thread of its own draws: the
//! engine only adds to a counter once per batch of references, so nothing is
//! formatted or written from the simulation loop. Several runs of one command
//! (`compare`, `--slowdown-vs`) add to the same counters, and the estimate covers
//! the runs started so far.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Not at all.
    Off,
    /// A bar redrawn in place (terminals).
    Bar,
    /// A plain line every [`LINE_EVERY`] and at every phase change.
    Lines,
}

impl Mode {
    /// The bar when standard error is a terminal, plain lines when `lines_elsewhere`
    /// (`--progress`), otherwise nothing.
    pub fn for_stderr(lines_elsewhere: bool) -> Mode {
        if std::io::stderr().is_terminal() {
            Mode::Bar
        } else if lines_elsewhere {
            Mode::Lines
        } else {
            Mode::Off
        }
    }
}

/// Time between two plain progress lines.
pub const LINE_EVERY: Duration = Duration::from_secs(5);
/// The bar appears only for commands longer than this.
const BAR_AFTER: Duration = Duration::from_secs(1);
/// Time between two redraws of the bar.
const BAR_EVERY: Duration = Duration::from_millis(200);

/// A handle on the progress display of a command; clones share it. The default
/// shows nothing.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<Shared>>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Progress({:?})", self.0.as_ref().map_or(Mode::Off, |s| s.mode))
    }
}

struct Shared {
    mode: Mode,
    start: Instant,
    refs_done: AtomicU64,
    refs_total: AtomicU64,
    /// For a run whose references are not limited (it ends at a simulated time):
    /// how far it is, in millionths of its simulated seconds.
    time_ppm: AtomicU64,
    bytes_done: AtomicU64,
    state: Mutex<State>,
    wake: Condvar,
    drawer: Mutex<Option<JoinHandle<()>>>,
}

struct State {
    phase: Phase,
    /// Bytes of the trace under the footprint pass.
    bytes_total: u64,
    /// When the first simulation began.
    simulating_since: Option<Instant>,
    /// Runs of the command, runs whose simulation started, and runs finished.
    runs: u32,
    runs_started: u32,
    runs_done: u32,
    /// Characters of the bar on screen.
    drawn: usize,
    last_line: Instant,
    quit: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Setup,
    Pass(String),
    Simulation,
}

impl Progress {
    /// Starts showing progress in `mode` (nothing for [`Mode::Off`]).
    pub fn new(mode: Mode) -> Progress {
        if mode == Mode::Off {
            return Progress(None);
        }
        let now = Instant::now();
        let shared = Arc::new(Shared {
            mode,
            start: now,
            refs_done: AtomicU64::new(0),
            refs_total: AtomicU64::new(0),
            time_ppm: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            state: Mutex::new(State {
                phase: Phase::Setup,
                bytes_total: 0,
                simulating_since: None,
                runs: 1,
                runs_started: 0,
                runs_done: 0,
                drawn: 0,
                last_line: now,
                quit: false,
            }),
            wake: Condvar::new(),
            drawer: Mutex::new(None),
        });
        let s = shared.clone();
        let handle = std::thread::Builder::new().name("progress".into()).spawn(move || s.draw_until_quit()).ok();
        *shared.drawer.lock().expect("progress lock") = handle;
        Progress(Some(shared))
    }

    /// Says the command runs `n` simulations.
    pub fn set_runs(&self, n: u32) {
        if let Some(s) = &self.0 {
            s.state.lock().expect("progress lock").runs = n.max(1);
        }
    }

    /// Enters the setup phase (of one more run).
    pub fn setup(&self) {
        self.enter(Phase::Setup, 0);
    }

    /// Enters the footprint pass over `name`, of `bytes` bytes as stored.
    pub fn footprint_pass(&self, name: &str, bytes: u64) {
        if let Some(s) = &self.0 {
            s.bytes_done.store(0, Ordering::Relaxed);
        }
        self.enter(Phase::Pass(name.to_string()), bytes);
    }

    /// Counts `n` more bytes read by the footprint pass.
    pub fn pass_bytes(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.bytes_done.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Enters the simulation of `total_refs` more references; the returned counter
    /// takes the run's reference count as it grows.
    pub fn simulation(&self, total_refs: u64) -> SimulationProgress {
        if let Some(s) = &self.0 {
            s.refs_total.fetch_add(total_refs, Ordering::Relaxed);
            let mut st = s.state.lock().expect("progress lock");
            st.simulating_since.get_or_insert_with(Instant::now);
            st.runs_started += 1;
        }
        self.enter(Phase::Simulation, 0);
        SimulationProgress { progress: self.clone(), reported: 0 }
    }

    /// Counts one run of the command as finished.
    pub fn run_done(&self) {
        if let Some(s) = &self.0 {
            s.state.lock().expect("progress lock").runs_done += 1;
        }
    }

    fn enter(&self, phase: Phase, bytes_total: u64) {
        let Some(s) = &self.0 else { return };
        let mut st = s.state.lock().expect("progress lock");
        if st.phase == phase && phase == Phase::Simulation {
            return;
        }
        st.phase = phase;
        st.bytes_total = bytes_total;
        if s.mode == Mode::Lines {
            st.last_line = Instant::now();
            eprintln!("tiersim: {}", s.describe(&st));
        }
    }

    /// Stops the display: clears the bar, or prints the total time as a last line.
    pub fn finish(&self) {
        let Some(s) = &self.0 else { return };
        s.state.lock().expect("progress lock").quit = true;
        s.wake.notify_all();
        if let Some(h) = s.drawer.lock().expect("progress lock").take() {
            let _ = h.join();
        }
        let st = s.state.lock().expect("progress lock");
        match s.mode {
            Mode::Bar if st.drawn > 0 => eprint!("\r{}\r", " ".repeat(st.drawn)),
            Mode::Lines => eprintln!("tiersim: finished in {}", duration(s.start.elapsed().as_secs_f64())),
            _ => {}
        }
    }
}

/// The reference count of one simulation, passed on to the display as it grows.
pub struct SimulationProgress {
    progress: Progress,
    reported: u64,
}

impl SimulationProgress {
    /// The run has simulated `done` references so far.
    #[inline]
    pub fn update(&mut self, done: u64) {
        if let Some(s) = &self.progress.0 {
            s.refs_done.fetch_add(done - self.reported, Ordering::Relaxed);
            self.reported = done;
        }
    }

    /// The run, which ends at a simulated time, has reached `fraction` of it.
    pub fn update_time(&mut self, fraction: f64) {
        if let Some(s) = &self.progress.0 {
            s.time_ppm.store((fraction.clamp(0.0, 1.0) * 1e6) as u64, Ordering::Relaxed);
        }
    }
}

/// References that no run makes: a run given them ends at its simulated time, and
/// its progress is counted in time.
const UNLIMITED: u64 = 1 << 59;

impl Shared {
    fn draw_until_quit(&self) {
        let mut st = self.state.lock().expect("progress lock");
        while !st.quit {
            let (guard, _) = self.wake.wait_timeout(st, BAR_EVERY).expect("progress lock");
            st = guard;
            if st.quit {
                return;
            }
            let now = Instant::now();
            match self.mode {
                Mode::Bar if now - self.start >= BAR_AFTER => {
                    let text = self.bar(&st);
                    let width = text.chars().count();
                    eprint!("\r{text}{}", " ".repeat(st.drawn.saturating_sub(width)));
                    let _ = std::io::stderr().flush();
                    st.drawn = width;
                }
                Mode::Lines if now - st.last_line >= LINE_EVERY => {
                    st.last_line = now;
                    eprintln!("tiersim: {}", self.describe(&st));
                }
                _ => {}
            }
        }
    }

    /// Fraction done and seconds left of the current phase, when they are known.
    fn fraction_and_eta(&self, st: &State) -> Option<(f64, Option<f64>)> {
        match &st.phase {
            Phase::Setup => None,
            Phase::Pass(_) => {
                let done = self.bytes_done.load(Ordering::Relaxed) as f64;
                let total = st.bytes_total as f64;
                (total > 0.0).then(|| ((done / total).min(1.0), None))
            }
            Phase::Simulation => {
                let done = self.refs_done.load(Ordering::Relaxed) as f64;
                let total = self.refs_total.load(Ordering::Relaxed) as f64;
                if total <= 0.0 {
                    return None;
                }
                let secs = st.simulating_since.map_or(0.0, |t| t.elapsed().as_secs_f64());
                if total >= UNLIMITED as f64 {
                    let f = self.time_ppm.load(Ordering::Relaxed) as f64 / 1e6;
                    let eta = (f > 0.0 && secs > 0.0).then(|| secs * (1.0 - f) / f);
                    return Some((f, eta));
                }
                // The runs not started yet are taken to be as long, on average, as
                // those started (a sweep knows their number, not their length).
                let runs = st.runs.max(1) as f64;
                let f = ((done / total).min(1.0) * (st.runs_started as f64).clamp(1.0, runs) / runs).min(1.0);
                let eta = (f > 0.0 && secs > 0.0).then(|| secs * (1.0 - f) / f);
                Some((f, eta))
            }
        }
    }

    fn phase_name(st: &State) -> String {
        let name = match &st.phase {
            Phase::Setup => "setup".into(),
            Phase::Pass(name) => format!("footprint pass over {name}"),
            Phase::Simulation => "simulation".to_string(),
        };
        if st.runs > 1 {
            format!("{name} ({} of {} runs finished)", st.runs_done, st.runs)
        } else {
            name
        }
    }

    fn rate(&self, st: &State) -> Option<f64> {
        let secs = st.simulating_since?.elapsed().as_secs_f64();
        (st.phase == Phase::Simulation && secs > 0.0).then(|| self.refs_done.load(Ordering::Relaxed) as f64 / secs)
    }

    /// One plain line: the phase, how far, the rate, the time left.
    fn describe(&self, st: &State) -> String {
        let mut out = Shared::phase_name(st);
        if let Some((f, eta)) = self.fraction_and_eta(st) {
            out += &format!(": {:.1} %", f * 100.0);
            if let Some(r) = self.rate(st) {
                out += &format!(", {:.2} M refs/s", r / 1e6);
            }
            if let Some(e) = eta {
                out += &format!(", {} left", duration(e));
            }
        }
        out + &format!(" ({} elapsed)", duration(self.start.elapsed().as_secs_f64()))
    }

    /// The bar: `[#####     ]  45.2 %  simulation  4.10 M refs/s  ETA 12 s`.
    fn bar(&self, st: &State) -> String {
        const WIDTH: usize = 24;
        let name = Shared::phase_name(st);
        let elapsed = duration(self.start.elapsed().as_secs_f64());
        let Some((f, eta)) = self.fraction_and_eta(st) else { return format!("{name}  {elapsed}") };
        let filled = (f * WIDTH as f64) as usize;
        let mut out = format!("[{}{}] {:5.1} %  {name}", "#".repeat(filled), " ".repeat(WIDTH - filled), f * 100.0);
        if let Some(r) = self.rate(st) {
            out += &format!("  {:.2} M refs/s", r / 1e6);
        }
        if let Some(e) = eta {
            out += &format!("  ETA {}", duration(e));
        }
        out
    }
}

/// Seconds as `42 s`, `3 min 05 s` or `2 h 07 min`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(0.4), "0 s");
        assert_eq!(duration(59.4), "59 s");
        assert_eq!(duration(185.0), "3 min 05 s");
        assert_eq!(duration(7620.0), "2 h 07 min");
    }

    #[test]
    fn simulation_counts_add_up_over_runs() {
        let p = Progress::new(Mode::Lines);
        p.set_runs(2);
        let mut a = p.simulation(100);
        let mut b = p.simulation(300);
        a.update(40);
        b.update(60);
        a.update(100);
        let s = p.0.as_ref().unwrap();
        assert_eq!((s.refs_done.load(Ordering::Relaxed), s.refs_total.load(Ordering::Relaxed)), (160, 400));
        let st = s.state.lock().unwrap();
        let (f, _) = s.fraction_and_eta(&st).unwrap();
        assert!((f - 0.4).abs() < 1e-12);
        assert!(s.describe(&st).starts_with("simulation (0 of 2 runs finished): 40.0 %"), "{}", s.describe(&st));
        drop(st);
        p.finish();
    }

    #[test]
    fn runs_not_started_count_as_long_as_those_started() {
        // A sweep of 4 runs: 1 started, half done. Half of a quarter of the work.
        let p = Progress::new(Mode::Lines);
        p.set_runs(4);
        let mut a = p.simulation(100);
        a.update(50);
        let s = p.0.as_ref().unwrap();
        let st = s.state.lock().unwrap();
        let (f, _) = s.fraction_and_eta(&st).unwrap();
        assert!((f - 0.125).abs() < 1e-12, "{f}");
        drop(st);
        p.finish();
    }
}
