//! Background executors: kernel threads and copy engines, each with its own clock and
//! a queue of jobs that the engine runs over simulated time beside the cores.
//!
//! A policy hands work to a thread as a [`Job`] — a list of operations — with
//! `Mechanisms::submit`. The engine schedules every executor by its clock, cores and
//! busy threads alike (the one furthest behind goes next): a thread runs one step
//! (one operation, or one chunk of a scan) at a time, each on its own clock, so its
//! memory accesses interleave with the cores' in time, its copies share the channels
//! with demand traffic as it goes, and its page-table changes take effect when the
//! step runs, not when the job was handed over. A thread never does more than its
//! time allows: work still queued when the run ends is reported as unfinished.
//!
//! What a background scan finds reaches the policy through `Observer::on_scan`, as
//! the scan visits each page; a finished job through `Policy::on_job_done`, with the
//! result of each operation.

use super::limits::Limits;
use super::run_op;
use crate::machine::ops::Exec;
use crate::machine::hypervisor::MoveHow;
use crate::machine::{Colour, Machine, MechError, Observer, PageRef, Redirect, ScanEvent, TierId};
use serde::Serialize;
use std::collections::VecDeque;

/// Leaf entries a background scan visits per step.
pub const SCAN_STEP_ENTRIES: u64 = 64;

/// A background executor, by index (`Requirements::threads` order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ThreadId(pub u16);

/// A job handed to a thread, by the order of submission over the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct JobId(pub u64);

/// What kind of executor a background thread is; it sets how many lines its copies
/// keep in flight and how its time is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadKind {
    /// A kernel thread on a spare CPU (kstaled, kswapd, khugepaged, a migration
    /// daemon): copies keep `machine.costs.cpu_copy_lines_in_flight` lines in flight;
    /// its time is CPU time (`mechanisms.background_cycles`).
    Kernel,
    /// A copy engine (DMA) driven by the kernel: copies keep
    /// `machine.costs.engine_copy_lines_in_flight` lines in flight; the page-table
    /// updates, flushes and shootdowns of its moves are charged on its clock as its
    /// driver's work, in sequence with the copies.
    CopyEngine,
}

/// Which pages a scan visits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every page of every tenant.
    All,
    /// Every page of one tenant.
    Tenant(u16),
    /// The pages of `tenant` that start in [`start`, `end`).
    Range { tenant: u16, start: u64, end: u64 },
}

/// What a scan does to the Accessed and Dirty bits it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanMode {
    /// Only read them.
    Read,
    /// Read them and clear those set (their translations are flushed), so that the
    /// next scan sees only accesses made since.
    Clear,
}

/// One operation of a job. Each has the meaning (and the cost) of the foreground
/// `Mechanisms` method of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Migrate { page: PageRef, to: TierId },
    Swap { a: PageRef, b: PageRef },
    Split { page: PageRef },
    Merge { page: PageRef, to: TierId },
    Poison { page: PageRef },
    Unpoison { page: PageRef },
    Scan { scope: Scope, mode: ScanMode },
    /// Moves a page the `linux` or `write-protect` way into a frame of `colour`
    /// (`Colour::ANY`: any frame; a `pml` move is a [`Op::MoveBatch`]); see
    /// `machine::hypervisor`.
    MoveAs { page: PageRef, to: TierId, how: MoveHow, colour: Colour },
    /// Exchanges two pages with both unmapped during the exchange (`Mechanisms::exchange`).
    Exchange { a: PageRef, b: PageRef },
    /// Runs a batched move planned with `Mechanisms::plan_pml_batch` or
    /// `Mechanisms::plan_dma_batch`, in steps: prepare, each page's copy, finish; the
    /// cores run between them.
    MoveBatch { batch: u32 },
    /// Does nothing itself: it lets the policy work on the thread, on its clock, in
    /// `Policy::on_job_done` when the thread reaches it (a scanner's window, say).
    Run,
    /// The thread sleeps until cycle `until` (a kernel thread's `usleep`): its clock
    /// moves there without counting busy time, and the operation completes when the
    /// engine reaches the thread at that cycle, after the cores have run up to it. A
    /// sleep that is due already completes at once.
    Sleep { until: u64 },
}

/// Work for a background thread: operations run in order, each when the thread gets
/// to it. Operations form groups: [`Job::push`] starts one, [`Job::then`] adds to the
/// last, and an operation runs only if the earlier ones of its group succeeded
/// (demote *then* poison). `tag` is the policy's own label, given back in [`JobDone`].
#[derive(Clone, Debug, Default)]
pub struct Job {
    pub tag: u64,
    ops: Vec<Op>,
    /// Per operation: it continues the group of the one before.
    chained: Vec<bool>,
}

impl Job {
    pub fn new(tag: u64) -> Job {
        Job { tag, ops: Vec::new(), chained: Vec::new() }
    }

    /// Appends an operation that starts a new group.
    pub fn push(&mut self, op: Op) -> &mut Job {
        self.ops.push(op);
        self.chained.push(false);
        self
    }

    /// Appends an operation to the last group: it runs only if the group's earlier
    /// operations succeeded (else its result is [`MechError::Skipped`]).
    pub fn then(&mut self, op: Op) -> &mut Job {
        let chained = !self.ops.is_empty();
        self.ops.push(op);
        self.chained.push(chained);
        self
    }

    /// The operations, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }
}

/// A finished job, as the policy's `on_job_done` sees it.
#[derive(Clone, Debug)]
pub struct JobDone {
    pub id: JobId,
    pub tag: u64,
    pub thread: ThreadId,
    /// Cycle it was submitted, and the thread's clock when it finished.
    pub submitted: u64,
    pub finished: u64,
    /// The result of each operation, in order (a scan is `Ok`).
    pub results: Vec<Result<(), MechError>>,
}

/// A scan in progress: the tenant it is at and where to resume.
#[derive(Clone, Copy, Debug)]
struct ScanCursor {
    tenant: u16,
    last_tenant: u16,
    start: u64,
    end: u64,
    cleared: u64,
}

/// A job in a thread's queue.
#[derive(Debug)]
struct Queued {
    id: JobId,
    tag: u64,
    submitted: u64,
    ops: Vec<Op>,
    chained: Vec<bool>,
    next: usize,
    results: Vec<Result<(), MechError>>,
    scan: Option<ScanCursor>,
}

/// Counters of one background thread.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadStats {
    pub kind: Option<ThreadKind>,
    /// Cycles it was busy.
    pub busy_cycles: u64,
    pub jobs_done: u64,
    pub ops_done: u64,
    /// Operations that were refused when their turn came (see the job's results).
    pub ops_refused: u64,
    /// Jobs and operations still queued when the run ended: work its time did not
    /// allow.
    pub jobs_unfinished: u64,
    pub ops_unfinished: u64,
}

/// A background thread.
#[derive(Debug)]
pub struct Thread {
    kind: ThreadKind,
    /// The core whose private caches its accesses go through.
    home: usize,
    clock: u64,
    queue: VecDeque<Queued>,
    stats: ThreadStats,
}

/// How a background thread stands, as a policy may ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadStatus {
    /// Nothing queued.
    pub idle: bool,
    pub queued_jobs: usize,
    /// Operations not yet started (a scan in progress counts as one).
    pub queued_ops: usize,
    /// How far behind the thread is: cycles since the oldest job still queued was
    /// submitted (0 when idle).
    pub lag_cycles: u64,
    /// The thread's clock.
    pub clock: u64,
}

/// Every background thread of the run, and the job counter.
#[derive(Debug)]
pub struct Threads {
    threads: Vec<Thread>,
    next_job: u64,
    /// A job was submitted since the engine last asked: the executor it runs beside
    /// must yield so that the thread is scheduled.
    woken: bool,
}

impl Threads {
    /// Threads of the given kinds, homed on the cores in turn.
    pub fn new(kinds: &[ThreadKind], cores: usize) -> Threads {
        let threads = kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| Thread { kind, home: i % cores.max(1), clock: 0, queue: VecDeque::new(), stats: ThreadStats { kind: Some(kind), ..Default::default() } })
            .collect();
        Threads { threads, next_job: 0, woken: false }
    }

    pub fn len(&self) -> usize {
        self.threads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// The busy thread furthest behind: its clock and index.
    #[inline]
    pub fn next_busy(&self) -> Option<(u64, usize)> {
        self.threads.iter().enumerate().filter(|(_, t)| !t.queue.is_empty()).map(|(i, t)| (t.clock, i)).min()
    }

    /// The busy thread furthest behind other than `t`.
    pub fn next_busy_except(&self, t: usize) -> Option<(u64, usize)> {
        self.threads.iter().enumerate().filter(|&(i, th)| i != t && !th.queue.is_empty()).map(|(i, th)| (th.clock, i)).min()
    }

    pub(crate) fn check(&self, t: ThreadId) -> Result<(), MechError> {
        if (t.0 as usize) < self.threads.len() {
            Ok(())
        } else {
            Err(MechError::NoSuchThread { thread: t.0 })
        }
    }

    /// Whether a job was submitted since the last call (which clears it): the core
    /// running must stop for the engine to schedule the thread.
    #[inline]
    pub fn woken(&mut self) -> bool {
        std::mem::take(&mut self.woken)
    }

    /// Queues `job` on thread `t` at cycle `now`. An idle thread starts it at `now`.
    pub(crate) fn submit(&mut self, t: ThreadId, job: Job, now: u64) -> JobId {
        let id = JobId(self.next_job);
        self.next_job += 1;
        self.woken = true;
        let th = &mut self.threads[t.0 as usize];
        if th.queue.is_empty() {
            th.clock = th.clock.max(now);
        }
        let n = job.ops.len();
        th.queue.push_back(Queued { id, tag: job.tag, submitted: now, ops: job.ops, chained: job.chained, next: 0, results: Vec::with_capacity(n), scan: None });
        id
    }

    pub(crate) fn status(&self, t: ThreadId, now: u64) -> ThreadStatus {
        let th = &self.threads[t.0 as usize];
        ThreadStatus {
            idle: th.queue.is_empty(),
            queued_jobs: th.queue.len(),
            queued_ops: th.queue.iter().map(|j| j.ops.len() - j.next).sum(),
            lag_cycles: th.queue.front().map_or(0, |j| now.saturating_sub(j.submitted)),
            clock: th.clock,
        }
    }

    /// The executor state of thread `t` for the machine's primitives.
    pub(crate) fn exec<R: Redirect>(&self, t: usize, m: &Machine<R>) -> Exec {
        let th = &self.threads[t];
        let costs = &m.cfg().costs;
        let in_flight = match th.kind {
            ThreadKind::Kernel => costs.cpu_copy_lines_in_flight,
            ThreadKind::CopyEngine => costs.engine_copy_lines_in_flight,
        };
        Exec { core: th.home, at: th.clock, in_flight, foreground: None }
    }

    /// Moves thread `t`'s clock to where `x` ended, counting the time as busy.
    pub(crate) fn advance<R: Redirect>(&mut self, t: usize, x: &Exec, m: &mut Machine<R>) {
        self.advance_idle(t, x, m, 0);
    }

    /// Moves thread `t`'s clock to `x`'s, of which `idle` cycles were spent asleep
    /// (not busy).
    fn advance_idle<R: Redirect>(&mut self, t: usize, x: &Exec, m: &mut Machine<R>, idle: u64) {
        let th = &mut self.threads[t];
        let busy = x.at - th.clock - idle;
        th.clock = x.at;
        th.stats.busy_cycles += busy;
        m.stats.background_cycles += busy;
    }

    /// Runs the next step of thread `t`'s first job on its clock: one operation, or
    /// one chunk of a scan. Returns the job when it is done.
    pub fn step<R: Redirect, O: Observer>(&mut self, m: &mut Machine<R>, limits: &mut Limits, t: usize, obs: &mut O) -> Option<JobDone> {
        let mut x = self.exec(t, m);
        let mut sleep = 0;
        let job = self.threads[t].queue.front_mut().expect("a busy thread");
        let skip = job.chained.get(job.next).copied().unwrap_or(false) && job.results.last().is_some_and(|r| r.is_err());
        let done_op = match job.ops.get(job.next).copied() {
            None => false,
            Some(_) if skip => {
                job.results.push(Err(MechError::Skipped));
                true
            }
            Some(Op::Scan { scope, mode }) => {
                let tenants = m.space().tenants().len() as u16;
                let cursor = job.scan.get_or_insert_with(|| match scope {
                    Scope::All => ScanCursor { tenant: 0, last_tenant: tenants.saturating_sub(1), start: 0, end: u64::MAX, cleared: 0 },
                    Scope::Tenant(t) => ScanCursor { tenant: t, last_tenant: t, start: 0, end: u64::MAX, cleared: 0 },
                    Scope::Range { tenant, start, end } => ScanCursor { tenant, last_tenant: tenant, start, end, cleared: 0 },
                });
                if cursor.tenant >= tenants {
                    job.results.push(Err(MechError::NoSuchTenant { tenant: cursor.tenant }));
                    job.scan = None;
                    true
                } else {
                    let id = job.id.0;
                    let (next, cleared) = m.scan(&mut x, cursor.tenant, cursor.start..cursor.end, mode == ScanMode::Clear, SCAN_STEP_ENTRIES, &mut |page| {
                        obs.on_scan(&ScanEvent { job: id, page })
                    });
                    cursor.cleared += cleared;
                    match next {
                        Some(resume) => {
                            cursor.start = resume;
                            false
                        }
                        None => {
                            m.scan_done(&mut x, cursor.tenant, cursor.cleared);
                            if cursor.tenant < cursor.last_tenant {
                                *cursor = ScanCursor { tenant: cursor.tenant + 1, start: 0, cleared: 0, ..*cursor };
                                false
                            } else {
                                job.results.push(Ok(()));
                                job.scan = None;
                                true
                            }
                        }
                    }
                }
            }
            Some(Op::Sleep { until }) if x.at < until => {
                // Not busy: the clock moves there without the time counting.
                sleep = until - x.at;
                x.at = until;
                false
            }
            Some(Op::Sleep { .. }) => {
                job.results.push(Ok(()));
                true
            }
            Some(Op::MoveBatch { batch }) => match m.batch_step(&mut x, batch, limits) {
                Some(r) => {
                    job.results.push(r);
                    true
                }
                None => false,
            },
            Some(op) => {
                job.results.push(run_op(m, limits, &mut x, op));
                true
            }
        };
        if done_op {
            job.next += 1;
        }
        let finished = job.next == job.ops.len();
        // A sleep moves the clock without the thread being busy.
        self.advance_idle(t, &x, m, sleep);
        let th = &mut self.threads[t];
        if done_op {
            th.stats.ops_done += 1;
            th.stats.ops_refused += th.queue.front().and_then(|j| j.results.last()).is_some_and(|r| r.is_err()) as u64;
        }
        if !finished {
            return None;
        }
        let j = th.queue.pop_front().expect("the job just run");
        th.stats.jobs_done += 1;
        Some(JobDone { id: j.id, tag: j.tag, thread: ThreadId(t as u16), submitted: j.submitted, finished: th.clock, results: j.results })
    }

    /// Every thread's counters, with the work left unfinished (a sleep is no work: a
    /// job that only sleeps is not counted).
    pub fn report(&self) -> Vec<ThreadStats> {
        let work = |j: &Queued| j.ops[j.next..].iter().filter(|op| !matches!(op, Op::Sleep { .. })).count() as u64;
        self.threads
            .iter()
            .map(|t| ThreadStats {
                jobs_unfinished: t.queue.iter().filter(|j| work(j) > 0).count() as u64,
                ops_unfinished: t.queue.iter().map(work).sum(),
                ..t.stats.clone()
            })
            .collect()
    }
}
