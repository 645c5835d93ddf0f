//! Reader of Valgrind lackey traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lackey prints one line per event (`lackey/lk_main.c`, `trace_instr`,
//! `trace_load`, `trace_store`, `trace_modify`): `I  addr,size` for every
//! instruction executed, then ` L addr,size`, ` S addr,size` or ` M addr,size` for
//! each data load, store or modify (a load and a store of the same address by one
//! instruction) it makes; addresses are hex, sizes decimal (at most 512 bytes,
//! lackey's `MAX_DSIZE`). Valgrind's own messages start with `==PID==` (or
//! `--PID--` for warnings) and are skipped, as are `SB` lines of
//! `--trace-superblocks`.
//!
//! How lines become accesses:
//! - `I` lines count instructions: an access's `instrs` is the number of
//!   instructions since the previous access, without the one making it.
//! - `M` is a read then a write of the same bytes.
//! - An access that crosses a 64-byte line becomes one access per line touched.
//! - Lackey traces a `rep movs`/`stos`/`lods`/`cmps`/`scas` as that many executions
//!   of one instruction, one byte (or word) each: the same `I` line again and again,
//!   each followed by the same pattern of accesses at addresses one size further
//!   on. Such a run is merged into one access per 64-byte line per stream (a
//!   `rep movsb` of 4 KiB is 64 line reads and 64 line writes, not 8192 one-byte
//!   accesses) and counts as one instruction, as the hardware retires it.
//!
//! To see whether an instruction continues a run, its accesses are held until the
//! next `I` line; the reader keeps at most one instruction and one run in hand.

use super::text::{self, Lines};
use super::{keep_at_most, push_split, take_spill, Access, Source, LINE_BYTES, VA_LIMIT, WRITE};
use anyhow::Result;
use std::io::Read;

/// Largest access lackey prints (`MAX_DSIZE` in lk_main.c).
const MAX_SIZE: u64 = 512;

/// One parsed lackey line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    Instr { addr: u64, size: u64 },
    Load { addr: u64, size: u64 },
    Store { addr: u64, size: u64 },
    Modify { addr: u64, size: u64 },
    Skip,
}

/// Parses one line, or says what is wrong with it.
#[inline]
fn parse(line: &[u8]) -> Result<Line, &'static str> {
    if line.len() < 4 {
        return Err("not a lackey line");
    }
    let kind = match (line[0], line[1], line[2]) {
        (b'I', b' ', b' ') => 0,
        (b' ', b'L', b' ') => 1,
        (b' ', b'S', b' ') => 2,
        (b' ', b'M', b' ') => 3,
        (b'=', b'=', _) | (b'-', b'-', _) | (b'S', b'B', b' ') => return Ok(Line::Skip),
        _ => return Err("not a lackey line (expected `I  addr,size`, ` L`, ` S` or ` M addr,size`, or `==PID==`)"),
    };
    let rest = &line[3..];
    let comma = memchr::memchr(b',', rest).ok_or("missing `,size`")?;
    let addr = text::hex(&rest[..comma]).ok_or("bad hex address")?;
    let size = text::dec(&rest[comma + 1..]).ok_or("bad decimal size")?;
    if size == 0 || size > MAX_SIZE {
        return Err("size must be 1 to 512 bytes");
    }
    if addr >= VA_LIMIT - size {
        return Err("address beyond the 57-bit virtual address space");
    }
    Ok(match kind {
        0 => Line::Instr { addr, size },
        1 => Line::Load { addr, size },
        2 => Line::Store { addr, size },
        _ => Line::Modify { addr, size },
    })
}

/// Whether `line` is a valid lackey line (for format detection).
pub fn line_is_valid(line: &[u8]) -> bool {
    parse(line).is_ok()
}

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

/// Streaming reader of a lackey trace.
pub struct LackeyReader {
    lines: Lines,
    spill: Vec<Access>,
    /// Instructions since the last emitted access, the held one included.
    pending: u64,
    held: Held,
    run: Run,
    done: bool,
}

impl LackeyReader {
    /// Reads the lackey output `src` (named `name` in messages), failing at the
    /// first malformed line unless `skip_malformed`.
    pub fn new(src: Box<dyn Read>, name: String, skip_malformed: bool) -> LackeyReader {
        LackeyReader {
            lines: Lines::new(src, name, skip_malformed),
            spill: Vec::new(),
            pending: 0,
            held: Held::default(),
            run: Run::default(),
            done: false,
        }
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
        if self.held.n == 0 {
            // Nothing held: the pending instruction count goes to the next access.
            self.held.direct = true;
            return;
        }
        let mut instrs = self.take_instrs();
        for k in 0..self.held.n {
            let (flags, addr, size) = self.held.acc[k];
            push_split(out, Access { instrs, flags, ..Access::default() }, addr, size);
            instrs = 0;
        }
        self.held.n = 0;
        self.held.direct = true;
    }

    /// Handles one data access of the held instruction.
    #[inline]
    fn access(&mut self, flags: u8, addr: u64, size: u64, out: &mut Vec<Access>) {
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

impl Source for LackeyReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        take_spill(out, max, &mut self.spill);
        while out.len() < max && !self.done {
            let line = match self.lines.reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    self.end_instruction(out);
                    self.flush_run(out);
                    self.done = true;
                    break;
                }
                Err(e) => return Err(self.lines.read_error(e)),
            };
            self.lines.line_no += 1;
            match parse(line) {
                Ok(Line::Instr { addr, size }) => {
                    self.end_instruction(out);
                    self.pending += 1;
                    self.held.ip = Some((addr, size));
                }
                Ok(Line::Load { addr, size }) => self.access(0, addr, size, out),
                Ok(Line::Store { addr, size }) => self.access(WRITE, addr, size, out),
                Ok(Line::Modify { addr, size }) => {
                    if !self.held.direct {
                        self.go_direct(out);
                    }
                    let instrs = self.take_instrs();
                    push_split(out, Access { instrs, ..Access::default() }, addr, size);
                    push_split(out, Access { flags: WRITE, ..Access::default() }, addr, size);
                }
                Ok(Line::Skip) => {}
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

    fn read(text: &str) -> Vec<Access> {
        let mut r = LackeyReader::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec())), "t".into(), false);
        let mut all = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            r.fill(&mut buf, 3).unwrap();
            if buf.is_empty() {
                return all;
            }
            all.extend_from_slice(&buf);
        }
    }

    fn acc(vaddr: u64, size: u8, instrs: u32, flags: u8) -> Access {
        Access { vaddr, instrs, core: 0, tenant: 0, size, flags }
    }

    #[test]
    fn instructions_loads_stores_and_modifies() {
        let t = "==1== Lackey\nI  00400000,3\nI  00400003,4\n L 1ffefff8a0,8\n S 1ffefff8a8,4\nI  00400007,2\nI  00400009,2\n M 00601000,4\n==1== done\n";
        assert_eq!(
            read(t),
            [
                acc(0x1ffefff8a0, 8, 1, 0),
                acc(0x1ffefff8a8, 4, 0, WRITE),
                acc(0x601000, 4, 1, 0),
                acc(0x601000, 4, 0, WRITE),
            ]
        );
    }

    #[test]
    fn an_access_across_a_line_is_split() {
        // 8 bytes at 0x...3c: 4 in one line, 4 in the next.
        assert_eq!(read("I  00400000,3\n L 0060103c,8\n"), [acc(0x60103c, 4, 0, 0), acc(0x601040, 4, 0, 0)]);
    }

    #[test]
    fn a_rep_stos_run_is_merged_into_line_accesses() {
        // `rep stosb` of 200 bytes from 0x...e043, as lackey prints it: 200 times the
        // same I line and a 1-byte store one byte further on, then the final count check.
        let mut t = String::from("I  00109135,5\n");
        for i in 0..200u64 {
            t += &format!("I  0010913a,2\n S {:08x},1\n", 0x10e043 + i);
        }
        t += "I  0010913a,2\nI  0010913c,7\n L 00601000,8\n";
        // Lines 0x10e040 (bytes 43..80: 61), 0x10e080, 0x10e0c0, 0x10e100 (to 0x10e10b: 11).
        let want = vec![
            acc(0x10e043, 61, 1, WRITE),
            acc(0x10e080, 64, 0, WRITE),
            acc(0x10e0c0, 64, 0, WRITE),
            acc(0x10e100, 11, 0, WRITE),
            acc(0x601000, 8, 0, 0),
        ];
        assert_eq!(read(&t), want);
    }

    #[test]
    fn a_rep_movs_downwards_merges_both_streams() {
        let mut t = String::new();
        for i in 0..128u64 {
            t += &format!("I  00400000,2\n L {:08x},1\n S {:08x},1\n", 0x2000 + 127 - i, 0x3000 + 127 - i);
        }
        let got = read(&t);
        assert_eq!(
            got,
            [
                acc(0x2040, 64, 0, 0),
                acc(0x3040, 64, 0, WRITE),
                acc(0x2000, 64, 0, 0),
                acc(0x3000, 64, 0, WRITE),
            ]
        );
    }

    #[test]
    fn different_instructions_are_never_merged() {
        let t = "I  00400000,3\n S 00001000,1\nI  00400003,3\n S 00001001,1\n";
        assert_eq!(read(t), [acc(0x1000, 1, 0, WRITE), acc(0x1001, 1, 0, WRITE)]);
    }

    #[test]
    fn instructions_with_many_accesses_or_modifies_are_emitted_in_order() {
        // Three accesses (not a run candidate), then a load and a modify, then a
        // repeated I line that must not be mistaken for a run of the modify.
        let t = "I  00400000,3\n L 00001000,8\n L 00002000,8\n S 00003000,8\nI  00400003,3\n L 00004000,4\n M 00005000,4\nI  00400003,3\n L 00004004,4\n M 00005004,4\n";
        assert_eq!(
            read(t),
            [
                acc(0x1000, 8, 0, 0),
                acc(0x2000, 8, 0, 0),
                acc(0x3000, 8, 0, WRITE),
                acc(0x4000, 4, 0, 0),
                acc(0x5000, 4, 0, 0),
                acc(0x5000, 4, 0, WRITE),
                acc(0x4004, 4, 0, 0),
                acc(0x5004, 4, 0, 0),
                acc(0x5004, 4, 0, WRITE),
            ]
        );
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let mut r = LackeyReader::new(Box::new(std::io::Cursor::new(b"I  00400000,3\n Q 12,4\n".to_vec())), "f.lk".into(), false);
        let err = r.fill(&mut Vec::new(), 100).unwrap_err().to_string();
        assert!(err.starts_with("f.lk:2: ") && err.ends_with("( Q 12,4)"), "{err}");
        for bad in [" L 1000000000000000,8", " L 12,0", " L 12,513", " L zz,4", " L 12", "I  12,x"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
