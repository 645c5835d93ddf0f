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
//!   accesses as for lackey.
//!
//! `-cpu max` gives the guest the newest instruction set QEMU emulates (AVX2 among
//! it), so that the C library picks the same string and memory routines as on the
//! host and under valgrind, which passes the host's features through.

use super::{interpreter, stop, End, Request, Sink};
use crate::trace::runs::Runs;
use crate::trace::{Access, WRITE};
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

/// The decoding state of one guest thread's ring.
struct Thread<'a> {
    consumer: Consumer<'a>,
    runs: Runs,
    /// The access being joined: flags, address, size.
    joining: Option<(u8, u64, u64)>,
    core: u16,
}

impl Thread<'_> {
    /// Decodes up to `max` published entries into `out`; returns how many.
    fn drain(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let start = out.len();
        let Thread { consumer, runs, joining, .. } = self;
        let chunk = consumer.chunk();
        let n = chunk.len().min(max);
        for &w in &chunk[..n] {
            let e = Entry::decode(w);
            let (flags, size) = (if e.write { WRITE } else { 0 }, 1u64 << e.size_shift);
            if let (false, Some((f, addr, len))) = (e.new_insn, joining.as_mut()) {
                if *f == flags && *addr + *len == e.vaddr && *len + size <= MAX_JOINED {
                    *len += size;
                    continue;
                }
            }
            if let Some((f, addr, len)) = joining.take() {
                runs.access(f, addr, len, out);
            }
            if e.new_insn {
                runs.plain_instructions(e.instrs as u64, out);
                runs.instruction((e.pc as u64, 0), out);
            }
            *joining = Some((flags, e.vaddr, size));
        }
        consumer.release(n);
        self.set_core(out, start);
        n
    }

    /// Emits what is held at the end of the recording.
    fn finish(&mut self, out: &mut Vec<Access>) {
        let start = out.len();
        if let Some((f, addr, len)) = self.joining.take() {
            self.runs.access(f, addr, len, out);
        }
        self.runs.finish(out);
        self.set_core(out, start);
    }

    fn set_core(&self, out: &mut [Access], start: usize) {
        for a in &mut out[start..] {
            a.core = self.core;
        }
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
                *slot = Some(Thread { consumer: region.consumer(r), runs: Runs::new(), joining: None, core: r as u16 });
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
        t.finish(&mut batch);
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
