//! From executed instructions and their data accesses to [`Access`] records: the
//! step the lackey reader and the QEMU recorder share.
//!
//! A recorder reports each execution of an instruction (its address) and the loads
//! and stores it makes, in order. [`Runs`] turns them into accesses:
//! - an access's `instrs` is the number of instructions since the previous access,
//!   without the one making it;
//! - an access that crosses a 64-byte line becomes one access per line touched;
//! - a `rep movs`/`stos`/`lods`/`cmps`/`scas` executes as that many executions of
//!   one instruction (lackey prints them so, and QEMU runs one iteration per
//!   execution), one element each, at addresses one element further on. Such a run
//!   is merged into one access per 64-byte line per stream (a `rep movsb` of 4 KiB
//!   is 64 line reads and 64 line writes, not 8192 one-byte accesses) and counts as
//!   one instruction, as the hardware retires it.
//!
//! To see whether an instruction continues a run, its accesses are held until the
//! next instruction begins; at most one instruction and one run are in hand.

use super::{push_split, Access, LINE_BYTES};

/// One stream of a run: the bytes accessed so far in the current 64-byte line.
#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    flags: u8,
    size: u64,
    /// Address of the stream's last access.
    last: u64,
    /// Bytes `[lo, hi)` of the current line accessed and not yet emitted.
    lo: u64,
    hi: u64,
}

impl Stream {
    /// Adds bytes `[a, a + size)`, emitting the current piece when they leave its line.
    #[inline]
    fn extend(&mut self, a: u64, size: u64, instrs: &mut u32, out: &mut Vec<Access>) {
        let end = a + size;
        let mut c = a;
        while c < end {
            let line_end = (c | (LINE_BYTES - 1)) + 1;
            let c1 = line_end.min(end);
            if c >> 6 == self.lo >> 6 {
                self.lo = self.lo.min(c);
                self.hi = self.hi.max(c1);
            } else {
                self.emit(instrs, out);
                self.lo = c;
                self.hi = c1;
            }
            c = c1;
        }
        self.last = a;
    }

    #[inline]
    fn emit(&self, instrs: &mut u32, out: &mut Vec<Access>) {
        if self.hi > self.lo {
            out.push(Access { vaddr: self.lo, instrs: *instrs, core: 0, tenant: 0, size: (self.hi - self.lo) as u8, flags: self.flags });
            *instrs = 0;
        }
    }
}

/// Accesses of one execution of an instruction, or a run of repeated executions.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    /// The instruction's `I` line (address, size).
    ip: (u64, u64),
    streams: [Stream; 2],
    n: usize,
    /// Direction of the run once known: +1 up, -1 down, 0 unknown (one execution).
    dir: i8,
    /// Instructions before the run, for its first emitted access.
    instrs: u32,
    active: bool,
}

/// The accesses of the instruction being read, held until its end.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    ip: Option<(u64, u64)>,
    acc: [(u8, u64, u64); 2],
    n: usize,
    /// The instruction has already been emitted access by access (it made a modify
    /// or more than two accesses, so it cannot be part of a run).
    direct: bool,
}

/// The state between instructions: the held instruction, the current run and the
/// instructions not yet given to an access.
#[derive(Default)]
pub struct Runs {
    /// Instructions since the last emitted access, the held one included.
    pending: u64,
    held: Held,
    run: Run,
}

impl Runs {
    /// Nothing in hand.
    pub fn new() -> Runs {
        Runs::default()
    }

    /// An execution of the instruction at `ip` (address and size; only equality
    /// matters) begins.
    #[inline]
    pub fn instruction(&mut self, ip: (u64, u64), out: &mut Vec<Access>) {
        self.end_before(Some(ip), out);
        self.pending += 1;
        self.held.ip = Some(ip);
    }

    /// Ends the held instruction before the instruction at `next` (`None`: one
    /// without accesses).
    #[inline]
    fn end_before(&mut self, next: Option<(u64, u64)>, out: &mut Vec<Access>) {
        let h = &self.held;
        if h.ip.is_none() && h.n == 0 && !h.direct {
            // Nothing held (the previous instruction was already ended).
            return;
        }
        let repeated = (next.is_some() && h.ip == next) || (self.run.active && h.ip == Some(self.run.ip));
        if h.n > 0 && !h.direct && !repeated {
            // The common case: the held instruction neither continues the run nor
            // is executed again next, so no run can hold it; emit it at once.
            self.flush_run(out);
            self.emit_held(out);
            self.held = Held::default();
        } else {
            self.end_instruction(out);
        }
    }

    /// `n` instructions without data accesses were executed (a recorder that counts
    /// them rather than reporting each); they end any run.
    #[inline]
    pub fn plain_instructions(&mut self, n: u64, out: &mut Vec<Access>) {
        if n > 0 {
            self.end_before(None, out);
            self.flush_run(out);
            self.pending += n;
        }
    }

    /// A read and a write of the same bytes by the current instruction (lackey's
    /// `M`): never part of a run.
    pub fn modify(&mut self, addr: u64, size: u64, out: &mut Vec<Access>) {
        if !self.held.direct {
            self.go_direct(out);
        }
        let instrs = self.take_instrs();
        push_split(out, Access { instrs, ..Access::default() }, addr, size);
        push_split(out, Access { flags: super::WRITE, ..Access::default() }, addr, size);
    }

    /// Hands back the instruction just begun when it is all that is in hand (no
    /// access of it yet, no earlier instruction held, no run): returns the
    /// instructions before it, as its first access would count them, and leaves
    /// `self` as new. Giving the same instruction back with
    /// `plain_instructions(n)` and `instruction(ip)` restores this state, so a
    /// caller may take such instructions through a faster path of its own while
    /// they cannot join a run (the QEMU recorder does).
    pub fn take_lone_instruction(&mut self) -> Option<u64> {
        let h = &self.held;
        if self.run.active || h.n > 0 || h.direct || h.ip.is_none() {
            return None;
        }
        let before = self.pending.saturating_sub(1);
        *self = Runs::default();
        Some(before)
    }

    /// Emits everything in hand (at the end of the stream).
    pub fn finish(&mut self, out: &mut Vec<Access>) {
        self.end_instruction(out);
        self.flush_run(out);
    }

    /// Takes the instruction count for the first access of the held instruction.
    #[inline]
    fn take_instrs(&mut self) -> u32 {
        let n = self.pending.saturating_sub(1).min(u32::MAX as u64) as u32;
        self.pending = 0;
        n
    }

    /// Emits what remains of the run.
    #[inline]
    fn flush_run(&mut self, out: &mut Vec<Access>) {
        if self.run.active {
            let r = &mut self.run;
            for k in 0..r.n {
                let s = r.streams[k];
                s.emit(&mut r.instrs, out);
            }
            r.active = false;
        }
    }

    /// Whether the instruction `h` repeats the run one step further on.
    #[inline]
    fn continues_run(&self, h: &Held) -> bool {
        let r = &self.run;
        if !r.active || h.ip != Some(r.ip) || h.n != r.n {
            return false;
        }
        let mut dir = r.dir;
        for k in 0..h.n {
            let (flags, addr, size) = h.acc[k];
            let s = &r.streams[k];
            if flags != s.flags || size != s.size {
                return false;
            }
            let step = if addr == s.last.wrapping_add(size) {
                1
            } else if addr.wrapping_add(size) == s.last {
                -1
            } else {
                return false;
            };
            if dir != 0 && dir != step {
                return false;
            }
            dir = step;
        }
        true
    }

    /// Ends the held instruction: extends the run, or flushes it and starts a new one.
    fn end_instruction(&mut self, out: &mut Vec<Access>) {
        let h = self.held;
        self.held = Held::default();
        if h.direct {
            return;
        }
        if h.n == 0 {
            // A repeated `I` line with no access is a `rep` instruction's final
            // count check: part of the run, not another instruction.
            if self.run.active && h.ip == Some(self.run.ip) {
                self.pending = self.pending.saturating_sub(1);
            } else {
                self.flush_run(out);
            }
            return;
        }
        if self.continues_run(&h) {
            self.pending = self.pending.saturating_sub(1);
            let r = &mut self.run;
            for k in 0..h.n {
                let (_, addr, size) = h.acc[k];
                r.dir = if addr > r.streams[k].last { 1 } else { -1 };
                r.streams[k].extend(addr, size, &mut r.instrs, out);
            }
        } else {
            self.flush_run(out);
            let instrs = self.take_instrs();
            let mut run = Run { ip: h.ip.unwrap_or((u64::MAX, 0)), n: h.n, dir: 0, instrs, active: true, ..Run::default() };
            for k in 0..h.n {
                let (flags, addr, size) = h.acc[k];
                let first_end = ((addr | (LINE_BYTES - 1)) + 1).min(addr + size);
                let s = &mut run.streams[k];
                *s = Stream { flags, size, last: addr, lo: addr, hi: first_end };
                if first_end < addr + size {
                    s.extend(first_end, addr + size - first_end, &mut run.instrs, out);
                    s.last = addr;
                }
            }
            self.run = run;
        }
    }

    /// Emits the held accesses and switches the held instruction to direct mode.
    fn go_direct(&mut self, out: &mut Vec<Access>) {
        self.flush_run(out);
        self.emit_held(out);
        self.held.n = 0;
        self.held.direct = true;
    }

    /// Emits the held accesses as they are (the pending instruction count goes to
    /// the first; with none held, it waits for the next access).
    #[inline]
    fn emit_held(&mut self, out: &mut Vec<Access>) {
        if self.held.n == 0 {
            return;
        }
        let mut instrs = self.take_instrs();
        for k in 0..self.held.n {
            let (flags, addr, size) = self.held.acc[k];
            push_split(out, Access { instrs, flags, ..Access::default() }, addr, size);
            instrs = 0;
        }
    }

    /// Handles one data access (`flags` 0 or [`super::WRITE`]) of the current
    /// instruction.
    #[inline]
    pub fn access(&mut self, flags: u8, addr: u64, size: u64, out: &mut Vec<Access>) {
        if !self.held.direct && self.held.n < 2 {
            self.held.acc[self.held.n] = (flags, addr, size);
            self.held.n += 1;
            return;
        }
        if !self.held.direct {
            self.go_direct(out);
        }
        let instrs = self.take_instrs();
        push_split(out, Access { instrs, flags, ..Access::default() }, addr, size);
    }
}
