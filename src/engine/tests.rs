//! The engine's scheduling: epochs coalesced after a long stall, background threads
//! interleaved with cores by clock. (The heap of core clocks is tested in `scheduler`.)

use super::*;
use crate::config::Sources;
use crate::machine::{MachineInfo, NoRedirect, Observer};
use crate::mechanism::{Job, JobDone, Op, ScanMode, Scope, ThreadKind};
use crate::policy::baselines::NoConfig;
use crate::policy::Requirements;
use serde_json::json;

const EPOCH: u64 = 200_000;

fn config(sets: &[&str]) -> Config {
    let mut all = vec!["workload.name=\"uniform\"", "workload.footprint=\"16MiB\"", "workload.refs=200000"];
    all.extend_from_slice(sets);
    Config::load(&Sources { sets: all.iter().map(|s| s.to_string()).collect(), ..Default::default() }).unwrap()
}

/// Records every epoch call; in the first, scans page tables in the foreground until
/// its core has lost three and a half epochs.
#[derive(Default)]
struct Staller {
    calls: Vec<(u64, u64, u64)>,
}

impl Observer for Staller {}

impl Policy for Staller {
    type Config = NoConfig;
    fn new(_: NoConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        Ok(Staller::default())
    }
    fn on_epoch(&mut self, e: &Epoch, mech: &mut Mechanisms) {
        self.calls.push((e.index, e.boundaries, mech.now()));
        if self.calls.len() == 1 {
            while mech.now() < e.now + 3 * EPOCH + EPOCH / 2 {
                mech.scan(Scope::All, ScanMode::Read, |_| {});
            }
        }
    }
    fn report(&self, out: &mut PolicyReport) {
        out.insert("calls".into(), json!(self.calls));
    }
}

#[test]
fn a_stall_across_three_boundaries_is_one_epoch_call_that_says_three() {
    let cfg = config(&[&format!("engine.epoch_cycles={EPOCH}")]);
    let r = run_with::<NoRedirect, Staller>(&cfg, "staller", &RunOptions::default()).unwrap();
    let calls: Vec<(u64, u64, u64)> = serde_json::from_value(r.policy_report["calls"].clone()).unwrap();
    // The first call at the first boundary; the scans stall the core to past
    // 200 000 + 700 000: boundaries 2, 3 and 4 (at 800 000) were crossed, one call.
    assert_eq!((calls[0].0, calls[0].1), (1, 1));
    assert_eq!((calls[1].0, calls[1].1), (4, 3), "{calls:?}");
    assert!(calls[1].2 >= 900_000);
    // Then one boundary at a time again, and every boundary is accounted for.
    assert!(calls[2..].iter().all(|c| c.1 == 1), "{calls:?}");
    let last = calls.last().unwrap();
    assert_eq!(calls.iter().map(|c| c.1).sum::<u64>(), last.0);
    // One time-series point per call.
    assert_eq!(r.epochs.len() as u64, calls.len() as u64 + 1, "and the run's tail");
}

/// Hands one scan of every page to a background thread at the first epoch and
/// records when it was done.
#[derive(Default)]
struct Offload {
    done: Option<(u64, u64)>,
    first_epoch: Option<u64>,
    scanned: u64,
}

impl Observer for Offload {
    fn on_scan(&mut self, _: &crate::machine::ScanEvent) {
        self.scanned += 1;
    }
}

impl Policy for Offload {
    type Config = NoConfig;
    fn requirements(_: &NoConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::Kernel], ..Requirements::default() }
    }
    fn new(_: NoConfig, _: &MachineInfo) -> anyhow::Result<Self> {
        Ok(Offload::default())
    }
    fn on_epoch(&mut self, e: &Epoch, mech: &mut Mechanisms) {
        if self.first_epoch.is_none() {
            self.first_epoch = Some(mech.now());
            let mut job = Job::new(0);
            job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
            mech.submit(crate::mechanism::ThreadId(0), job).unwrap();
        }
        let _ = e;
    }
    fn on_job_done(&mut self, d: &JobDone, _: &mut Mechanisms) {
        self.done = Some((d.submitted, d.finished));
    }
    fn report(&self, out: &mut PolicyReport) {
        out.insert("done".into(), json!(self.done));
        out.insert("scanned".into(), json!(self.scanned));
    }
}

#[test]
fn a_background_job_runs_beside_the_core_and_stalls_it_only_for_interrupts() {
    let cfg = config(&[&format!("engine.epoch_cycles={EPOCH}")]);
    let r = run_with::<NoRedirect, Offload>(&cfg, "offload", &RunOptions::default()).unwrap();
    let (submitted, finished): (u64, u64) = serde_json::from_value(r.policy_report["done"].clone()).unwrap();
    // The pages mapped when the scan reached them, scanned by the thread over
    // simulated time and finished before the run ended; the core paid only the one
    // shootdown interrupt (300 cycles).
    let scanned = r.policy_report["scanned"].as_u64().unwrap();
    assert!(scanned > 1000 && scanned == r.mechanisms.ptes_scanned, "{scanned}");
    assert!(finished > submitted && finished < r.summary.cycles, "{submitted} → {finished} of {}", r.summary.cycles);
    assert_eq!(r.threads[0].busy_cycles, finished - submitted);
    assert_eq!(r.cores[0].stats.mechanism_cycles, 300);
    assert_eq!((r.threads[0].jobs_done, r.threads[0].ops_unfinished), (1, 0));
}
