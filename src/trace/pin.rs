//! Reader of Intel Pin `pinatrace` traces.
//!
//! Pin's `pinatrace` example tool (`source/tools/ManualExamples/pinatrace.cpp` in
//! the Pin kit) writes `fprintf(trace, "%p: R %p\n", ip, addr)` before each memory
//! read and `"%p: W %p\n"` before each write, and `#eof` when the program ends.
//! glibc prints `%p` as `0x…` lowercase hex (and a null pointer as `(nil)`); other
//! C libraries omit the `0x`, so both are accepted.
//!
//! The trace records neither access sizes nor the instructions between memory
//! instructions: every access is taken as 8 bytes (cut at the end of its 64-byte
//! line) and `instrs` is 0.
//!
//! A trace that ends without `#eof` was cut short (the traced program was killed,
//! or the copy is incomplete) and is refused: replaying part of a run as if it were
//! the whole run would be a silent wrong result.

use super::text::{self, Lines};
use super::{clip_to_line, Access, Source, VA_LIMIT, WRITE};
use anyhow::{bail, Result};
use std::io::Read;

/// Bytes assumed per access (pinatrace does not record the size).
const ACCESS_BYTES: u64 = 8;

/// One parsed line.
enum Line {
    Access { write: bool, addr: u64 },
    End,
}

/// Parses a `%p` pointer: `0x…` or bare hex, or `(nil)`.
fn pointer(s: &[u8]) -> Option<u64> {
    if s == b"(nil)" {
        return Some(0);
    }
    text::hex(text::strip_0x(s).unwrap_or(s))
}

#[inline]
fn parse(line: &[u8]) -> Result<Line, &'static str> {
    if line == b"#eof" {
        return Ok(Line::End);
    }
    let colon = memchr::memchr(b':', line).ok_or("not a pinatrace line (expected `IP: R ADDR` or `IP: W ADDR`)")?;
    pointer(&line[..colon]).ok_or("bad instruction pointer")?;
    let rest = &line[colon + 1..];
    let (write, addr) = match rest {
        [b' ', b'R', b' ', addr @ ..] => (false, addr),
        [b' ', b'W', b' ', addr @ ..] => (true, addr),
        _ => return Err("expected ` R ADDR` or ` W ADDR` after the instruction pointer"),
    };
    let addr = pointer(addr).ok_or("bad address")?;
    if addr >= VA_LIMIT {
        return Err("address beyond the 57-bit virtual address space");
    }
    Ok(Line::Access { write, addr })
}

/// Whether `line` is a valid pinatrace line (for format detection).
pub fn line_is_valid(line: &[u8]) -> bool {
    parse(line).is_ok()
}

/// Streaming reader of a pinatrace trace.
pub struct PinReader {
    lines: Lines,
    done: bool,
}

impl PinReader {
    /// Reads the pinatrace output `src` (named `name` in messages), failing at the
    /// first malformed line unless `skip_malformed`.
    pub fn new(src: Box<dyn Read>, name: String, skip_malformed: bool) -> PinReader {
        PinReader { lines: Lines::new(src, name, skip_malformed), done: false }
    }

    /// Refuses addresses beyond page tables of `levels` levels, naming the line.
    pub fn reach(mut self, levels: Option<u32>) -> PinReader {
        self.lines.levels = levels;
        self
    }
}

impl Source for PinReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        while out.len() < max && !self.done {
            let line = match self.lines.reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    bail!(
                        "{}: truncated: the pinatrace trace ends after line {} without its `#eof` line (pinatrace writes it when the program ends)",
                        self.lines.name,
                        self.lines.line_no
                    );
                }
                Err(e) => return Err(self.lines.read_error(e)),
            };
            self.lines.line_no += 1;
            let parsed = parse(line);
            if let Ok(Line::Access { addr, .. }) = parsed {
                if text::beyond_reach(self.lines.levels, addr) {
                    let line = line.to_vec();
                    return Err(self.lines.out_of_reach(addr, &line));
                }
            }
            match parsed {
                Ok(Line::Access { write, addr }) => out.push(Access {
                    vaddr: addr,
                    instrs: 0,
                    core: 0,
                    tenant: 0,
                    size: clip_to_line(addr, ACCESS_BYTES),
                    flags: if write { WRITE } else { 0 },
                }),
                Ok(Line::End) => self.done = true,
                Err(msg) => {
                    let line = line.to_vec();
                    self.lines.malformed(msg, &line)?;
                }
            }
        }
        Ok(())
    }

    fn malformed_skipped(&self) -> u64 {
        self.lines.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_reads_writes_and_stops_at_eof() {
        let t = b"0x7f3c10: R 0x7ffd10\n0x7f3c14: W 0x7ffd3c\n7f3c18: R 1000\n#eof\n0x1: R 0x2\n".to_vec();
        let mut r = PinReader::new(Box::new(std::io::Cursor::new(t)), "p".into(), false);
        let mut out = Vec::new();
        r.fill(&mut out, 100).unwrap();
        let got: Vec<(u64, u8, bool)> = out.iter().map(|a| (a.vaddr, a.size, a.is_write())).collect();
        assert_eq!(got, [(0x7ffd10, 8, false), (0x7ffd3c, 4, true), (0x1000, 8, false)]);
    }

    #[test]
    fn a_trace_without_eof_is_refused_as_truncated() {
        let t = b"0x7f3c10: R 0x7ffd10\n0x7f3c14: W 0x7ffd3c\n".to_vec();
        let mut r = PinReader::new(Box::new(std::io::Cursor::new(t)), "p.out".into(), false);
        let err = r.fill(&mut Vec::new(), 100).unwrap_err().to_string();
        assert!(err.starts_with("p.out: truncated: the pinatrace trace ends after line 2 without its `#eof` line"), "{err}");
    }

    #[test]
    fn bad_lines_are_rejected() {
        for bad in ["0x10: X 0x20", "0x10 R 0x20", "0x10: R 0xzz", "0x10: R 0x200000000000000", "hello"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
