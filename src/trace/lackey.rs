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
//! Lines become accesses through [`Runs`]: each `I` line is an instruction
//! execution, `L` and `S` its accesses, `M` a read then a write of the same bytes.
//! Lackey traces a `rep` string instruction as that many executions of one
//! instruction (the same `I` line again and again, each followed by accesses one
//! element further on), which `Runs` merges into line-sized accesses.

use super::text::{self, Lines};
use super::runs::Runs;
use super::{keep_at_most, take_spill, Access, Source, VA_LIMIT, WRITE};
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

/// Streaming reader of a lackey trace.
pub struct LackeyReader {
    lines: Lines,
    spill: Vec<Access>,
    runs: Runs,
    done: bool,
}

impl LackeyReader {
    /// Reads the lackey output `src` (named `name` in messages), failing at the
    /// first malformed line unless `skip_malformed`.
    pub fn new(src: Box<dyn Read>, name: String, skip_malformed: bool) -> LackeyReader {
        LackeyReader { lines: Lines::new(src, name, skip_malformed), spill: Vec::new(), runs: Runs::new(), done: false }
    }

    /// Refuses data addresses beyond page tables of `levels` levels, naming the line.
    pub fn reach(mut self, levels: Option<u32>) -> LackeyReader {
        self.lines.levels = levels;
        self
    }
}

impl Source for LackeyReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        take_spill(out, max, &mut self.spill);
        while out.len() < max && !self.done {
            let line = match self.lines.reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    self.runs.finish(out);
                    self.done = true;
                    break;
                }
                Err(e) => return Err(self.lines.read_error(e)),
            };
            self.lines.line_no += 1;
            let parsed = parse(line);
            if let Ok(Line::Load { addr, size } | Line::Store { addr, size } | Line::Modify { addr, size }) = parsed {
                if text::beyond_reach(self.lines.levels, addr + size - 1) {
                    let line = line.to_vec();
                    return Err(self.lines.out_of_reach(addr, &line));
                }
            }
            match parsed {
                Ok(Line::Instr { addr, size }) => self.runs.instruction((addr, size), out),
                Ok(Line::Load { addr, size }) => self.runs.access(0, addr, size, out),
                Ok(Line::Store { addr, size }) => self.runs.access(WRITE, addr, size, out),
                Ok(Line::Modify { addr, size }) => self.runs.modify(addr, size, out),
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
    fn an_address_beyond_the_page_tables_names_its_line_even_when_skipping() {
        let t = b"I  00400000,3\n L 1ffefff8a0,8\nI  00400003,3\n S ffffffffff00,8\n S 1000000000000,8\n".to_vec();
        for skip in [false, true] {
            let mut r = LackeyReader::new(Box::new(std::io::Cursor::new(t.clone())), "f.lk".into(), skip).reach(Some(4));
            let err = r.fill(&mut Vec::new(), 100).unwrap_err().to_string();
            assert_eq!(
                err,
                "f.lk:5: address 0x1000000000000 is beyond the 48-bit virtual address space of 4-level page tables; rerun with --set machine.page_table.levels=5 ( S 1000000000000,8)"
            );
        }
        let mut r = LackeyReader::new(Box::new(std::io::Cursor::new(t)), "f.lk".into(), false).reach(Some(5));
        let mut out = Vec::new();
        r.fill(&mut out, 100).unwrap();
        assert_eq!(out.last().unwrap().vaddr, 0x1000000000000);
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
