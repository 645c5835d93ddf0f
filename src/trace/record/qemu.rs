//! Recording with QEMU's user-mode emulator and tiersim's TCG plugin.
//!
//! This process creates two memfds: one holding the plugin (built from
//! `crates/qemu-plugin` and carried inside the tiersim binary, see `build.rs`), and
//! the shared-memory rings of `tiersim-ring`. It starts
//! `qemu-x86_64 -cpu max -plugin /proc/self/fd/P,ring_fd=R,plugin_fd=P PROGRAM …`
//! with both descriptors open across exec; the plugin maps the rings and closes
//! both, and every guest thread writes its loads and stores into a ring of its own.
//!
//! This process drains the rings while the program runs, a chunk per ring in turn,
//! sleeping briefly when all are empty, and turns each ring's entries into
//! accesses of the core of that number:
//! - QEMU 7.2 performs a 16- or 32-byte vector access as 8-byte ones; consecutive
//!   accesses of one execution of an instruction that continue each other (same
//!   kind, adjacent bytes) are joined back into one, as the hardware and lackey see
//!   it;
//! - executions and accesses then go through [`Runs`], which merges the iterations
//!   of a `rep` string instruction (QEMU runs one per execution) into line-sized
//!   accesses as for lackey. Only an instruction run again right after itself can
//!   start such a run, so [`RingDecoder`] emits every other instruction itself and
//!   hands `Runs` only those, with the same accesses as a result (the drain's cost
//!   per access is in BENCHMARKS.md, "Recorder against the floor").
//!
//! `-cpu max` gives the guest the newest instruction set QEMU emulates (AVX2 among
//! it), so that the C library picks the same string and memory routines as on the
//! host and under valgrind, which passes the host's features through.

use super::{interpreter, stop, End, Request, Sink};
use crate::trace::runs::Runs;
use crate::trace::{push_split, Access, LINE_BYTES, WRITE};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tiersim_ring::{Consumer, Entry, Region, MAX_RINGS, RING_ENTRIES, RING_LIVE, RING_UNUSED, STATUS_TOO_MANY_THREADS};

/// The plugin library, built by `build.rs`.
static PLUGIN: &[u8] = include_bytes!(env!("TIERSIM_QEMU_PLUGIN"));

/// Entries drained from one ring before moving to the next.
const CHUNK: usize = 1 << 14;

/// Largest access rebuilt from QEMU's pieces: a 64-byte vector (lackey reports
/// up to 512 bytes for `fxsave`-like instructions, which QEMU splits further).
const MAX_JOINED: u64 = 64;

/// A memfd named `name`.
fn memfd(name: &std::ffi::CStr) -> Result<OwnedFd> {
    // SAFETY: memfd_create reads a valid C string; a descriptor it returns is ours.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        bail!("record: cannot create a memfd: {}", io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The ring region, mapped from a memfd for the life of the recording.
struct Rings {
    fd: OwnedFd,
    base: *mut libc::c_void,
    len: usize,
    region: Region,
}

impl Rings {
    fn new() -> Result<Rings> {
        let fd = memfd(c"tiersim-rings")?;
        let len = Region::bytes(MAX_RINGS, RING_ENTRIES);
        // SAFETY: ftruncate and mmap on the memfd just created; the mapping is
        // checked for failure, is zero-filled (a new memfd), and lives until `drop`.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) != 0 {
                bail!("record: cannot size the ring memory: {}", io::Error::last_os_error());
            }
            let base = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0);
            if base == libc::MAP_FAILED {
                bail!("record: cannot map the ring memory: {}", io::Error::last_os_error());
            }
            let region = Region::create(base as *mut u8, MAX_RINGS, RING_ENTRIES);
            Ok(Rings { fd, base, len, region })
        }
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `new`; nothing refers to it any more
        // (consumers borrow `region`, which is dropped with `self`).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// What a [`RingDecoder`] has in hand between entries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hand {
    /// Nothing (the start of the stream).
    Nothing,
    /// An instruction and its first accesses (`pc`, `before`, `acc[..n]`).
    Insn,
    /// An instruction that made more than two accesses, emitted as they came (it
    /// cannot be part of a `rep` run).
    Direct,
    /// Whatever `runs` holds: an instruction that may repeat, or a run.
    Runs,
}

/// Turns the entries of one guest thread's ring into accesses of its core.
///
/// The entries go through [`Runs`] only where a `rep` run may form: when an
/// instruction runs again right after itself. Otherwise the decoder holds the
/// current instruction itself and emits it when the next one begins, as `Runs`
/// would (its direct path: accesses in order, split at line ends, the instruction
/// count on the first), and hands an instruction to `Runs` as the stream would
/// have, so the accesses are the same as with every entry through `Runs` (a test
/// compares the two on random streams).
pub struct RingDecoder {
    core: u16,
    /// The access being joined: address, bytes (0: none), flags.
    join_addr: u64,
    join_len: u64,
    join_flags: u8,
    hand: Hand,
    /// With `Hand::Insn`: low 32 bits of the instruction's address, the
    /// instructions since the previous emitted access (not counting it), and its
    /// accesses (flags, address, bytes).
    pc: u32,
    before: u64,
    acc: [(u8, u64, u64); 2],
    n: usize,
    runs: Runs,
}

impl RingDecoder {
    /// A decoder for the ring of guest thread `core`.
    pub fn new(core: u16) -> RingDecoder {
        RingDecoder { core, join_addr: 0, join_len: 0, join_flags: 0, hand: Hand::Nothing, pc: 0, before: 0, acc: [(0, 0, 0); 2], n: 0, runs: Runs::new() }
    }

    /// Appends the accesses the ring entries `entries` complete to `out`; the last
    /// instruction's stay in hand until the next entries or [`RingDecoder::finish`].
    pub fn decode(&mut self, entries: &[[u64; 2]], out: &mut Vec<Access>) {
        for &w in entries {
            let e = Entry::decode(w);
            let (flags, size) = (if e.write { WRITE } else { 0 }, 1u64 << e.size_shift);
            if !e.new_insn
                && self.join_len != 0
                && self.join_flags == flags
                && self.join_addr + self.join_len == e.vaddr
                && self.join_len + size <= MAX_JOINED
            {
                self.join_len += size;
                continue;
            }
            if self.join_len != 0 {
                self.access(self.join_flags, self.join_addr, self.join_len, out);
            }
            if e.new_insn {
                self.instruction(e.pc, e.instrs as u64, out);
            }
            (self.join_flags, self.join_addr, self.join_len) = (flags, e.vaddr, size);
        }
    }

    /// Emits what is held at the end of the recording.
    pub fn finish(&mut self, out: &mut Vec<Access>) {
        if self.join_len != 0 {
            self.access(self.join_flags, self.join_addr, self.join_len, out);
            self.join_len = 0;
        }
        // `Runs` ends a held instruction as the start of a run, which orders the
        // pieces of line-crossing accesses differently from the direct path.
        if self.hand == Hand::Insn {
            self.hand_to_runs(out);
        }
        let start = out.len();
        self.runs.finish(out);
        self.set_core(out, start);
        self.hand = Hand::Nothing;
    }

    /// An execution of the instruction at `pc` begins, `before` instructions after
    /// the previous one with an access.
    #[inline(always)]
    fn instruction(&mut self, pc: u32, before: u64, out: &mut Vec<Access>) {
        match self.hand {
            Hand::Insn if self.n > 0 && (before > 0 || pc != self.pc) => {
                self.emit_held(out);
                (self.pc, self.before, self.n) = (pc, before, 0);
            }
            // (Not made by the plugin, which announces an instruction with its
            // first access: one without any counts towards the next.)
            Hand::Insn if self.n == 0 => (self.pc, self.before) = (pc, self.before + 1 + before),
            Hand::Nothing | Hand::Direct => (self.hand, self.pc, self.before, self.n) = (Hand::Insn, pc, before, 0),
            // Run again at once: it may start a `rep` run, which `Runs` decides.
            Hand::Insn | Hand::Runs => self.instruction_in_runs(pc, before, out),
        }
    }

    /// [`RingDecoder::instruction`] through `runs`, taking the instruction back
    /// once nothing else is in hand there.
    #[inline(never)]
    fn instruction_in_runs(&mut self, pc: u32, before: u64, out: &mut Vec<Access>) {
        if self.hand == Hand::Insn {
            self.hand_to_runs(out);
        }
        let start = out.len();
        self.runs.plain_instructions(before, out);
        self.runs.instruction((pc as u64, 0), out);
        self.set_core(out, start);
        if let Some(before) = self.runs.take_lone_instruction() {
            (self.hand, self.pc, self.before, self.n) = (Hand::Insn, pc, before, 0);
        }
    }

    /// One joined access of the current instruction.
    #[inline(always)]
    fn access(&mut self, flags: u8, addr: u64, len: u64, out: &mut Vec<Access>) {
        match self.hand {
            Hand::Insn if self.n < 2 => {
                self.acc[self.n] = (flags, addr, len);
                self.n += 1;
            }
            // A third access: as `Runs`, emit the instruction's accesses as they come.
            Hand::Insn => {
                self.emit_held(out);
                self.push(out, flags, addr, len, 0);
                (self.hand, self.n) = (Hand::Direct, 0);
            }
            Hand::Direct => self.push(out, flags, addr, len, 0),
            // An access before any instruction (not made by the plugin) goes to
            // `runs` as well.
            Hand::Nothing | Hand::Runs => {
                self.hand = Hand::Runs;
                let start = out.len();
                self.runs.access(flags, addr, len, out);
                self.set_core(out, start);
            }
        }
    }

    /// Emits the held accesses, the instruction count on the first.
    #[inline(always)]
    fn emit_held(&mut self, out: &mut Vec<Access>) {
        let instrs = self.before.min(u32::MAX as u64) as u32;
        let (flags, addr, len) = self.acc[0];
        self.push(out, flags, addr, len, instrs);
        if self.n == 2 {
            let (flags, addr, len) = self.acc[1];
            self.push(out, flags, addr, len, 0);
        }
    }

    /// Emits one access, split at line ends.
    #[inline(always)]
    fn push(&self, out: &mut Vec<Access>, flags: u8, addr: u64, len: u64, instrs: u32) {
        let template = Access { vaddr: addr, instrs, core: self.core, tenant: 0, size: len as u8, flags };
        if (addr & (LINE_BYTES - 1)) + len <= LINE_BYTES {
            out.push(template);
        } else {
            push_split(out, template, addr, len);
        }
    }

    /// Gives the held instruction to `runs` (which holds nothing) as the stream
    /// would have: its preceding instructions, its start, its accesses.
    #[inline(never)]
    fn hand_to_runs(&mut self, out: &mut Vec<Access>) {
        let start = out.len();
        self.runs.plain_instructions(self.before, out);
        self.runs.instruction((self.pc as u64, 0), out);
        for &(flags, addr, len) in &self.acc[..self.n] {
            self.runs.access(flags, addr, len, out);
        }
        self.set_core(out, start);
        self.hand = Hand::Runs;
    }

    fn set_core(&self, out: &mut [Access], start: usize) {
        for a in &mut out[start..] {
            a.core = self.core;
        }
    }
}

/// The consumer of one guest thread's ring and its decoder.
struct Thread<'a> {
    consumer: Consumer<'a>,
    decoder: RingDecoder,
}

impl Thread<'_> {
    /// Decodes up to `max` published entries into `out`; returns how many.
    fn drain(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let chunk = self.consumer.chunk();
        let n = chunk.len().min(max);
        self.decoder.decode(&chunk[..n], out);
        self.consumer.release(n);
        n
    }
}

/// Runs `file` (the resolved `req.program[0]`) under QEMU into `sink`.
pub(super) fn run(file: &Path, req: &Request, sink: &mut Sink) -> Result<End> {
    let mut guest: Vec<String> = Vec::new();
    if let Some(interp) = interpreter(file) {
        eprintln!("tiersim: note: {} is a script: QEMU runs its interpreter {}, and not the programs that runs with exec (a wrapper such as a pyenv shim); give the real binary to trace that", file.display(), interp[0]);
        guest.extend(interp);
    }
    guest.push(file.display().to_string());
    guest.extend(req.program[1..].iter().cloned());

    let rings = Rings::new()?;
    let plugin = memfd(c"tiersim-qemu-plugin.so")?;
    File::from(plugin.try_clone().context("record: cannot duplicate the plugin memfd")?).write_all(PLUGIN).context("record: cannot write the plugin")?;
    let (ring_fd, plugin_fd) = (rings.fd.as_raw_fd(), plugin.as_raw_fd());
    let mut cmd = Command::new("qemu-x86_64");
    cmd.args(["-cpu", "max", "-plugin", &format!("/proc/self/fd/{plugin_fd},ring_fd={ring_fd},plugin_fd={plugin_fd}")]).args(&guest);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe functions (fcntl, prctl) on descriptors it owns.
    unsafe {
        cmd.pre_exec(move || {
            // Keep both memfds open across exec, and end QEMU if this process dies.
            for fd in [ring_fd, plugin_fd] {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("record: cannot start qemu-x86_64")?;
    if let Some(started) = &req.started {
        let _ = started.send(child.id());
    }
    drop(cmd);
    let region = &rings.region;
    let mut threads: Vec<Option<Thread>> = (0..region.rings()).map(|_| None).collect();
    let mut batch: Vec<Access> = Vec::with_capacity(2 * CHUNK);
    let mut exited: Option<ExitStatus> = None;
    let status = loop {
        let mut moved = 0;
        for (r, slot) in threads.iter_mut().enumerate() {
            if slot.is_none() {
                if region.control(r).state.load(Ordering::Acquire) == RING_UNUSED {
                    continue;
                }
                *slot = Some(Thread { consumer: region.consumer(r), decoder: RingDecoder::new(r as u16) });
            }
            if let Some(t) = slot {
                moved += t.drain(&mut batch, CHUNK);
            }
            if let Err(e) = sink.push(&mut batch) {
                stop(&mut child)?;
                return Err(e);
            }
        }
        if req.sampling.limit.is_some() {
            let mut live = (0..region.rings()).filter(|&r| region.control(r).state.load(Ordering::Acquire) == RING_LIVE).peekable();
            if live.peek().is_some() && sink.finished(live) {
                stop(&mut child)?;
                return Ok(End { status: None });
            }
        }
        if moved == 0 {
            if let Some(status) = exited {
                break status;
            }
            match child.try_wait().context("record: waiting for qemu-x86_64")? {
                // Drain once more: the last entries were published before it exited.
                Some(status) => exited = Some(status),
                None => std::thread::sleep(Duration::from_micros(200)),
            }
        }
    };
    for t in threads.iter_mut().flatten() {
        t.decoder.finish(&mut batch);
    }
    sink.push(&mut batch)?;
    let header = region.header();
    if header.attached.load(Ordering::Acquire) == 0 {
        return Err(anyhow!("record: qemu-x86_64 did not load tiersim's plugin ({status}; its message, if any, is above)"));
    }
    if header.status.load(Ordering::Acquire) == STATUS_TOO_MANY_THREADS {
        return Err(anyhow!("record: `{}` ran more than {MAX_RINGS} threads at once; tiersim records at most {MAX_RINGS}", req.program.join(" ")));
    }
    Ok(End { status: Some(status) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The drain as it was before [`RingDecoder`]: every joined access and
    /// instruction through [`Runs`].
    fn through_runs(entries: &[[u64; 2]], core: u16) -> Vec<Access> {
        let (mut runs, mut joining, mut out) = (Runs::new(), None::<(u8, u64, u64)>, Vec::new());
        for &w in entries {
            let e = Entry::decode(w);
            let (flags, size) = (if e.write { WRITE } else { 0 }, 1u64 << e.size_shift);
            if let (false, Some((f, addr, len))) = (e.new_insn, joining.as_mut()) {
                if *f == flags && *addr + *len == e.vaddr && *len + size <= MAX_JOINED {
                    *len += size;
                    continue;
                }
            }
            if let Some((f, addr, len)) = joining.take() {
                runs.access(f, addr, len, &mut out);
            }
            if e.new_insn {
                runs.plain_instructions(e.instrs as u64, &mut out);
                runs.instruction((e.pc as u64, 0), &mut out);
            }
            joining = Some((flags, e.vaddr, size));
        }
        if let Some((f, addr, len)) = joining.take() {
            runs.access(f, addr, len, &mut out);
        }
        runs.finish(&mut out);
        for a in &mut out {
            a.core = core;
        }
        out
    }

    /// `entries` through a decoder, handed over in pieces of the given lengths.
    fn decoded(entries: &[[u64; 2]], core: u16, pieces: &mut impl Iterator<Item = usize>) -> Vec<Access> {
        let (mut d, mut out, mut rest) = (RingDecoder::new(core), Vec::new(), entries);
        while !rest.is_empty() {
            let (now, after) = rest.split_at(pieces.next().unwrap_or(rest.len()).min(rest.len()));
            d.decode(now, &mut out);
            rest = after;
        }
        d.finish(&mut out);
        out
    }

    fn entry(pc: u32, new_insn: bool, instrs: u32, write: bool, vaddr: u64, size_shift: u8) -> [u64; 2] {
        Entry { vaddr, size_shift, write, new_insn, pc, instrs: if new_insn { instrs } else { 0 } }.encode()
    }

    /// A random stream with what the plugin makes: instructions of one to four
    /// accesses (16-byte vectors split in two, some across a line), instructions
    /// run again at once (`rep` iterations one element further on, up or down, and
    /// repeats that do not continue a run), counts of 0 and more between them.
    fn random_stream(rng: &mut Rng, len: usize) -> Vec<[u64; 2]> {
        let mut out = Vec::with_capacity(len);
        let mut base = 0x7f00_0000_1000u64;
        while out.len() < len {
            let pc = 0x40_1000 + rng.below(6) as u32 * 4;
            match rng.below(10) {
                0..=1 => {
                    // A `rep` string instruction: `k` iterations of one or two streams.
                    let (k, shift, two, down) = (1 + rng.below(150), rng.below(4) as u8, rng.chance(0.5), rng.chance(0.3));
                    let step = 1u64 << shift;
                    let (mut src, mut dst) = (base + rng.below(200), base + 0x10_0000 + rng.below(200));
                    for i in 0..k {
                        let first = if i == 0 { rng.below(4) as u32 } else { 0 };
                        out.push(entry(pc, true, first, false, src, shift));
                        if two {
                            out.push(entry(pc, false, 0, true, dst, shift));
                        }
                        if rng.chance(0.02) {
                            // A break in the run: a jump back in the addresses.
                            src += 4096;
                        }
                        (src, dst) = if down { (src - step, dst - step) } else { (src + step, dst + step) };
                    }
                }
                2 => {
                    // A vector access in 8-byte pieces, possibly across a line,
                    // and a store of it.
                    let a = base + rng.below(128);
                    out.push(entry(pc, true, rng.below(3) as u32, false, a, 3));
                    out.push(entry(pc, false, 0, false, a + 8, 3));
                    if rng.chance(0.5) {
                        out.push(entry(pc, false, 0, true, a + 0x400, 3));
                        out.push(entry(pc, false, 0, true, a + 0x408, 3));
                    }
                }
                3 => {
                    // Three or four separate accesses (direct in `Runs`).
                    let n = 3 + rng.below(2);
                    for i in 0..n {
                        out.push(entry(pc, i == 0, rng.below(5) as u32, rng.chance(0.5), base + 0x100 * i + rng.below(64), rng.below(4) as u8));
                    }
                }
                _ => {
                    let instrs = if rng.chance(0.3) { 0 } else { rng.below(40) as u32 };
                    out.push(entry(pc, true, instrs, rng.chance(0.3), base + rng.below(4096), rng.below(4) as u8));
                    if rng.chance(0.2) {
                        out.push(entry(pc, false, 0, !rng.chance(0.3), base + rng.below(4096), rng.below(4) as u8));
                    }
                }
            }
            if rng.chance(0.05) {
                base += rng.below(1 << 22);
            }
        }
        out
    }

    #[test]
    fn the_decoder_emits_what_runs_alone_emits() {
        let mut rng = Rng::new(37);
        for round in 0..300 {
            let len = 1 + rng.below(3000) as usize;
            let entries = random_stream(&mut rng, len);
            let want = through_runs(&entries, 3);
            assert!(want.iter().all(|a| a.core == 3));
            let whole = decoded(&entries, 3, &mut std::iter::empty());
            assert_eq!(whole, want, "round {round}: whole");
            let sizes: Vec<usize> = (0..entries.len()).map(|_| rng.below(40) as usize).collect();
            let pieces = decoded(&entries, 3, &mut sizes.into_iter());
            assert_eq!(pieces, want, "round {round}: in pieces");
        }
    }

    #[test]
    fn rep_iterations_merge_and_other_instructions_pass_by_hand() {
        let e = entry;
        let entries = [
            // 5 instructions without access, then a load of 8 bytes.
            e(0x100, true, 5, false, 0x1000, 3),
            // `rep stosq` of three iterations at 0x2000, 0x2008, 0x2010: one store
            // of 24 bytes after 0 instructions, the three counted as one.
            e(0x104, true, 0, true, 0x2000, 3),
            e(0x104, true, 0, true, 0x2008, 3),
            e(0x104, true, 0, true, 0x2010, 3),
            // A 16-byte load in two pieces across a line (0x303c..0x304c): two
            // accesses, 4 and 12 bytes, after 2 instructions.
            e(0x108, true, 2, false, 0x303c, 3),
            e(0x108, false, 0, false, 0x3044, 3),
            // The same instruction again at once, but not one element on: no run.
            e(0x10c, true, 0, false, 0x5000, 2),
            e(0x10c, true, 0, false, 0x6000, 2),
        ];
        let got = decoded(&entries, 1, &mut std::iter::empty());
        let a = |vaddr, size, instrs, write| Access { vaddr, size, instrs, core: 1, tenant: 0, flags: if write { WRITE } else { 0 } };
        assert_eq!(
            got,
            [a(0x1000, 8, 5, false), a(0x2000, 24, 0, true), a(0x303c, 4, 2, false), a(0x3040, 12, 0, false), a(0x5000, 4, 0, false), a(0x6000, 4, 0, false)]
        );
        assert_eq!(got, through_runs(&entries, 1));
    }
}
