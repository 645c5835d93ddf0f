//! Threads as cores: a trace recorded from a multi-threaded program holds each
//! thread's records under its own core (the native format's per-record core
//! field). A run replays each thread on a core of its own; the core's source is
//! the trace opened with [`OpenOptions::thread`], which reads the whole trace and
//! keeps that core's records ([`only`]). Reading the trace once per thread keeps
//! memory constant however the threads' records interleave in the file.

use super::{native, open, Access, OpenOptions, Source};
use anyhow::{bail, Result};

/// Keeps the records of one core of an inner source.
struct ThreadFilter {
    inner: Box<dyn Source>,
    core: u16,
    buf: Vec<Access>,
}

impl Source for ThreadFilter {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        while out.is_empty() {
            self.buf.clear();
            self.inner.fill(&mut self.buf, max)?;
            if self.buf.is_empty() {
                break;
            }
            out.extend(self.buf.iter().filter(|a| a.core == self.core));
        }
        Ok(())
    }

    fn malformed_skipped(&self) -> u64 {
        self.inner.malformed_skipped()
    }

    fn meta(&self) -> Option<&[u8]> {
        self.inner.meta()
    }
}

/// `source` limited to the records of core `thread` when one is asked for. A trace
/// whose records carry no core is one thread, core 0.
pub(crate) fn only(source: Box<dyn Source>, name: &str, record_cores: bool, thread: Option<u16>) -> Result<Box<dyn Source>> {
    match thread {
        None | Some(0) if !record_cores => Ok(source),
        Some(t) if !record_cores => bail!("{name}: thread {t}: the trace holds one thread (its records carry no core)"),
        None => Ok(source),
        Some(core) => Ok(Box::new(ThreadFilter { inner: source, core, buf: Vec::with_capacity(4096) })),
    }
}

/// The threads (cores) whose records the trace at `path` holds, in order: from the
/// metadata of a recorded native trace, `[0]` for a trace whose records carry no
/// core, otherwise from one pass over the records.
pub fn threads(path: &str, opts: &OpenOptions) -> Result<Vec<u16>> {
    let found = threads_of(path, opts)?;
    if found.is_empty() {
        bail!("{path}: holds no accesses, so there is nothing to replay (a recording whose --skip passed the program's end, or an empty trace)");
    }
    Ok(found)
}

fn threads_of(path: &str, opts: &OpenOptions) -> Result<Vec<u16>> {
    if path != "-" {
        if let Some(facts) = native::read_trailer(path)? {
            match (&facts.meta, facts.record_cores) {
                (_, false) => return Ok(vec![0]),
                (Some(meta), true) => return Ok(meta.cores()),
                (None, true) => {}
            }
        }
    }
    let mut opened = open(path, &OpenOptions { thread: None, ..opts.clone() })?;
    if !opened.record_cores {
        return Ok(vec![0]);
    }
    let mut seen = vec![false; 1 << 16];
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        opened.source.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            break;
        }
        for a in &buf {
            seen[a.core as usize] = true;
        }
    }
    Ok((0..=u16::MAX).filter(|&c| seen[c as usize]).collect())
}
