//! Readers of Ramulator's trace formats.
//!
//! - **Ramulator 1 CPU trace** (`--mode=cpu`; `Trace::get_filtered_request` and
//!   `get_unfiltered_request` in `src/Processor.cpp`): `<bubbles> <addr>
//!   [<writeback addr>]`. `bubbles` is the decimal count of non-memory instructions
//!   before the request; addresses are read by `stoul(…, 0)`, i.e. `0x` hex, a
//!   leading `0` octal, otherwise decimal. The line is a read of `addr`, then, when
//!   a third field is present, a write of the write-back address. The unfiltered
//!   variant's third field `R` or `W` (the request's type) is accepted too.
//! - **Ramulator 1 DRAM trace** (`--mode=dram`; `Trace::get_dramtrace_request`):
//!   `<addr> <R|W>`, the address read by `stoul(…, 16)` (hex, `0x` optional); a
//!   missing type is a read, as there.
//! - **Ramulator 2 `LoadStoreTrace`** (`src/frontend/impl/memory_trace/
//!   loadstore_trace.cpp`): exactly two space-separated tokens, `LD` or `ST` and an
//!   address (`0x` hex, else decimal).
//!
//! These traces feed a memory system, so every request is a 64-byte line: an
//! access covers the rest of its line from the given address.

use super::text::{self, Lines};
use super::{clip_to_line, keep_at_most, take_spill, Access, Source, LINE_BYTES, VA_LIMIT, WRITE};
use anyhow::Result;
use std::io::Read;

/// Which Ramulator format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cpu,
    Dram,
    LoadStore,
}

/// One parsed line: up to two accesses (a read and its write-back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parsed {
    instrs: u64,
    first: (u64, bool),
    writeback: Option<u64>,
}

fn check(addr: u64) -> Result<u64, &'static str> {
    if addr >= VA_LIMIT {
        Err("address beyond the 57-bit virtual address space")
    } else {
        Ok(addr)
    }
}

#[inline]
fn parse(kind: Kind, line: &[u8]) -> Result<Option<Parsed>, &'static str> {
    let mut f = text::fields(line);
    let Some(first) = f.next() else { return Ok(None) };
    let (second, third, extra) = (f.next(), f.next(), f.next());
    match kind {
        Kind::Cpu => {
            let instrs = text::dec(first).ok_or("bad decimal instruction count (bubbles)")?;
            let addr = check(text::c_number(second.ok_or("missing address")?).ok_or("bad address")?)?;
            if extra.is_some() {
                return Err("too many fields (expected `<bubbles> <addr> [<writeback addr>]`)");
            }
            let (write, writeback) = match third {
                None | Some(b"R") => (false, None),
                Some(b"W") => (true, None),
                Some(wb) => (false, Some(check(text::c_number(wb).ok_or("bad write-back address")?)?)),
            };
            Ok(Some(Parsed { instrs, first: (addr, write), writeback }))
        }
        Kind::Dram => {
            let addr = check(text::hex(text::strip_0x(first).unwrap_or(first)).ok_or("bad hex address")?)?;
            let write = match second {
                None | Some(b"R") => false,
                Some(b"W") => true,
                Some(_) => return Err("expected R or W after the address"),
            };
            if third.is_some() {
                return Err("too many fields (expected `<hex addr> <R|W>`)");
            }
            Ok(Some(Parsed { instrs: 0, first: (addr, write), writeback: None }))
        }
        Kind::LoadStore => {
            let write = match first {
                b"LD" => false,
                b"ST" => true,
                _ => return Err("expected LD or ST"),
            };
            let a = second.ok_or("missing address")?;
            let addr = match text::strip_0x(a) {
                Some(h) => text::hex(h),
                None => text::dec(a),
            };
            let addr = check(addr.ok_or("bad address")?)?;
            if third.is_some() {
                return Err("too many fields (expected `LD <addr>` or `ST <addr>`)");
            }
            Ok(Some(Parsed { instrs: 0, first: (addr, write), writeback: None }))
        }
    }
}

/// Whether `line` is valid in format `kind` (for format detection).
pub fn line_is_valid(kind: Kind, line: &[u8]) -> bool {
    matches!(parse(kind, line), Ok(Some(_)))
}

/// Streaming reader of the three Ramulator formats.
pub struct RamulatorReader {
    lines: Lines,
    kind: Kind,
    spill: Vec<Access>,
    done: bool,
}

impl RamulatorReader {
    /// Reads the Ramulator trace `src` of format `kind` (named `name` in messages),
    /// failing at the first malformed line unless `skip_malformed`.
    pub fn new(src: Box<dyn Read>, name: String, skip_malformed: bool, kind: Kind) -> RamulatorReader {
        RamulatorReader { lines: Lines::new(src, name, skip_malformed), kind, spill: Vec::new(), done: false }
    }

    /// Refuses addresses beyond page tables of `levels` levels, naming the line.
    pub fn reach(mut self, levels: Option<u32>) -> RamulatorReader {
        self.lines.levels = levels;
        self
    }
}

fn line_access(addr: u64, write: bool, instrs: u64) -> Access {
    Access {
        vaddr: addr,
        instrs: instrs.min(u32::MAX as u64) as u32,
        core: 0,
        tenant: 0,
        size: clip_to_line(addr, LINE_BYTES),
        flags: if write { WRITE } else { 0 },
    }
}

impl Source for RamulatorReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        take_spill(out, max, &mut self.spill);
        while out.len() < max && !self.done {
            let line = match self.lines.reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(e) => return Err(self.lines.read_error(e)),
            };
            self.lines.line_no += 1;
            let parsed = parse(self.kind, line);
            if let Ok(Some(p)) = parsed {
                if let Some(addr) = [Some(p.first.0), p.writeback].into_iter().flatten().find(|&a| text::beyond_reach(self.lines.levels, a)) {
                    let line = line.to_vec();
                    return Err(self.lines.out_of_reach(addr, &line));
                }
            }
            match parsed {
                Ok(Some(p)) => {
                    out.push(line_access(p.first.0, p.first.1, p.instrs));
                    if let Some(wb) = p.writeback {
                        out.push(line_access(wb, true, 0));
                    }
                }
                // Blank lines: Ramulator stops at the first one, tiersim skips them.
                Ok(None) => {}
                Err(msg) => {
                    let line = line.to_vec();
                    self.lines.malformed(msg, &line)?;
                }
            }
        }
        keep_at_most(out, max, &mut self.spill);
        Ok(())
    }

    fn malformed_skipped(&self) -> u64 {
        self.lines.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(kind: Kind, text: &str) -> Vec<(u64, u8, bool, u32)> {
        let mut r = RamulatorReader::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec())), "r".into(), false, kind);
        let mut out = Vec::new();
        r.fill(&mut out, 100).unwrap();
        out.iter().map(|a| (a.vaddr, a.size, a.is_write(), a.instrs)).collect()
    }

    #[test]
    fn cpu_trace_reads_and_writebacks() {
        assert_eq!(
            read(Kind::Cpu, "3 0x1000\n0 4096 0x2040\n7 010 W\n"),
            [(0x1000, 64, false, 3), (4096, 64, false, 0), (0x2040, 64, true, 0), (8, 56, true, 7)]
        );
    }

    #[test]
    fn dram_and_loadstore_traces() {
        assert_eq!(read(Kind::Dram, "0x1000 R\n2040 W\nabc\n"), [(0x1000, 64, false, 0), (0x2040, 64, true, 0), (0xabc, 4, false, 0)]);
        assert_eq!(read(Kind::LoadStore, "LD 0x1000\nST 4096\n"), [(0x1000, 64, false, 0), (4096, 64, true, 0)]);
    }

    #[test]
    fn bad_lines_are_rejected() {
        assert!(parse(Kind::Cpu, b"x 0x10").is_err());
        assert!(parse(Kind::Cpu, b"1 0x10 0x20 0x30").is_err());
        assert!(parse(Kind::Dram, b"0x10 X").is_err());
        assert!(parse(Kind::LoadStore, b"LD 0x10 0x20").is_err());
        assert!(parse(Kind::LoadStore, b"LOAD 0x10").is_err());
        assert!(parse(Kind::LoadStore, b"LD 0x200000000000000").is_err());
    }
}
