//! Recording with Valgrind lackey.
//!
//! Lackey's output streams through a pipe straight into the lackey reader, so no
//! text trace ever reaches the disk: valgrind writes its log to file descriptor 3
//! of its process (`--log-fd=3`), which is the write end of a pipe this process
//! reads; the program's own standard output and error are left alone.
//!
//! Valgrind writes every trace line with its own `write` call (about 14 bytes). A
//! reader blocked on the pipe would be woken for each of them, and those wake-ups
//! would triple the run time; so the pipe is enlarged to 1 MiB and the reader
//! ([`PipeBatcher`]) waits, a millisecond at a time, until a good share of it is
//! full before reading. The writer then never waits and is never woken: it costs
//! what writing to `/dev/null` costs, plus a copy.

use super::{stop, End, Request, Sink};
use crate::trace::lackey::LackeyReader;
use crate::trace::Source;
use anyhow::{Context, Result};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// A pipe's read end that lets data pile up before reading it (see the module docs).
struct PipeBatcher {
    pipe: io::PipeReader,
    /// Bytes worth waking up for: a quarter of the pipe's capacity.
    want: libc::c_int,
}

impl PipeBatcher {
    /// Longest wait before reading whatever is there (the writer may be slow, or done).
    const MAX_WAITS: u32 = 20;

    /// Enlarges the pipe to 1 MiB (or as much as the system allows) and wraps it.
    fn new(pipe: io::PipeReader) -> PipeBatcher {
        let fd = pipe.as_raw_fd();
        // SAFETY: fcntl on a descriptor this process owns. A refused size leaves the
        // pipe as it was; its actual size is read back.
        let size = unsafe {
            libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
            libc::fcntl(fd, libc::F_GETPIPE_SZ)
        };
        PipeBatcher { pipe, want: if size > 0 { size / 4 } else { 16 << 10 } }
    }

    /// Bytes waiting in the pipe.
    fn available(&self) -> libc::c_int {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer, which is valid.
        let r = unsafe { libc::ioctl(self.pipe.as_raw_fd(), libc::FIONREAD, &mut n) };
        if r < 0 {
            self.want
        } else {
            n
        }
    }
}

impl io::Read for PipeBatcher {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = self.want.min(buf.len() as libc::c_int);
        for _ in 0..Self::MAX_WAITS {
            if self.available() >= want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.pipe.read(buf)
    }
}

/// Runs `file` (the resolved `req.program[0]`) under lackey into `sink`.
pub(super) fn run(file: &Path, req: &Request, sink: &mut Sink) -> Result<End> {
    if super::interpreter(file).is_some() {
        eprintln!(
            "tiersim: note: {} is a script: valgrind traces its interpreter, and not the programs it runs with exec (a wrapper such as a pyenv shim); give the real binary to trace that",
            file.display()
        );
    }
    let (reader, writer) = io::pipe().context("record: cannot create a pipe")?;
    let reader = PipeBatcher::new(reader);
    let fd = writer.as_raw_fd();
    let mut cmd = Command::new("valgrind");
    // `--vgdb=no`: without it valgrind makes three FIFOs for its gdbserver in the temp
    // dir (`vgdb-pipe-*`), which stay behind when it is killed (`stop`, after
    // `--limit`, or the SIGKILL below).
    cmd.args(["--tool=lackey", "--trace-mem=yes", "--basic-counts=no", "--vgdb=no", "--log-fd=3"]).args(&req.program);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe functions (dup2, fcntl, prctl) on descriptors it owns.
    unsafe {
        cmd.pre_exec(move || {
            // Put the pipe's write end on descriptor 3, open across exec, and end
            // valgrind if this process dies.
            let r = if fd == 3 { libc::fcntl(3, libc::F_SETFD, 0) } else { libc::dup2(fd, 3) };
            if r < 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("record: cannot start valgrind")?;
    if let Some(started) = &req.started {
        let _ = started.send(child.id());
    }
    drop(writer);
    drop(cmd);
    let mut source = LackeyReader::new(Box::new(reader), "valgrind lackey output".into(), false);
    let mut batch = Vec::with_capacity(4096);
    loop {
        let filled = source.fill(&mut batch, 4096);
        // The reader ends when valgrind exits and closes the pipe.
        let ended = matches!(filled, Ok(())) && batch.is_empty();
        if let Err(e) = filled.and_then(|()| sink.push(&mut batch)) {
            stop(&mut child)?;
            return Err(e);
        }
        if ended {
            break;
        }
        if sink.finished(std::iter::once(0)) {
            stop(&mut child)?;
            return Ok(End { status: None });
        }
    }
    let status = child.wait().context("record: waiting for valgrind")?;
    Ok(End { status: Some(status) })
}
