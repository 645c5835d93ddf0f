//! Reader of ChampSim binary traces.
//!
//! A ChampSim trace is a raw sequence of 64-byte `input_instr` records, one per
//! executed instruction, as ChampSim's Pin tracer writes them
//! (`tracer/pin/champsim_tracer.cpp`) and `inc/trace_instruction.h` declares them,
//! little-endian and unpadded:
//!
//! | bytes | field |
//! |---|---|
//! | 0–7 | `ip` |
//! | 8 | `is_branch` |
//! | 9 | `branch_taken` |
//! | 10–11 | `destination_registers[2]` |
//! | 12–15 | `source_registers[4]` |
//! | 16–31 | `destination_memory[2]` (stores) |
//! | 32–63 | `source_memory[4]` (loads) |
//!
//! An address of 0 is an empty slot; the tracer never repeats an address within one
//! array. Each record with memory operands becomes its loads (`source_memory`) then
//! its stores (`destination_memory`); records without any count as instructions
//! before the next access. Sizes are not recorded: each access is taken as 8 bytes,
//! cut at the end of its 64-byte line. Traces are usually distributed as `.xz`.
//! A file whose length is not a multiple of 64 ends in a truncated record, which
//! is an error.

use super::{clip_to_line, keep_at_most, take_spill, Access, Source, VA_LIMIT, WRITE};
use anyhow::{bail, Result};
use std::io::{self, Read};

/// Bytes of one record.
pub const RECORD_BYTES: usize = 64;

/// Bytes assumed per access (ChampSim records no size).
const ACCESS_BYTES: u64 = 8;

/// Records read per chunk.
const CHUNK_RECORDS: usize = 4096;

/// Streaming reader of a ChampSim trace.
pub struct ChampSimReader {
    src: Box<dyn Read>,
    name: String,
    buf: Vec<u8>,
    /// Valid bytes in `buf` and the next record's offset in it.
    len: usize,
    pos: usize,
    /// Records consumed (for messages).
    record: u64,
    /// Instructions since the last access.
    instrs: u64,
    spill: Vec<Access>,
    done: bool,
}

impl ChampSimReader {
    /// Reads the ChampSim trace `src` (named `name` in messages).
    pub fn new(src: Box<dyn Read>, name: String) -> ChampSimReader {
        ChampSimReader {
            src,
            name,
            buf: vec![0; CHUNK_RECORDS * RECORD_BYTES],
            len: 0,
            pos: 0,
            record: 0,
            instrs: 0,
            spill: Vec::new(),
            done: false,
        }
    }

    /// Reads the next chunk of whole records; false at the end of the stream.
    fn refill(&mut self) -> Result<bool> {
        let tail = self.len - self.pos;
        self.buf.copy_within(self.pos..self.len, 0);
        self.len = tail;
        self.pos = 0;
        while self.len < self.buf.len() {
            match self.src.read(&mut self.buf[self.len..]) {
                Ok(0) => break,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => bail!("{}: record {}: {e}", self.name, self.record),
            }
        }
        if self.len < RECORD_BYTES {
            if self.len > 0 {
                bail!(
                    "{}: truncated: the file ends {} bytes into record {} (ChampSim records are 64 bytes)",
                    self.name,
                    self.len,
                    self.record
                );
            }
            return Ok(false);
        }
        Ok(true)
    }

    /// Appends the accesses of the record at `pos`.
    #[inline]
    fn record(&mut self, out: &mut Vec<Access>) -> Result<()> {
        let r = &self.buf[self.pos..self.pos + RECORD_BYTES];
        let word = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
        let mut any = false;
        for (offset, flags) in [(32, 0), (40, 0), (48, 0), (56, 0), (16, WRITE), (24, WRITE)] {
            let addr = word(offset);
            if addr == 0 {
                continue;
            }
            if addr >= VA_LIMIT {
                bail!("{}: record {}: address {addr:#x} beyond the 57-bit virtual address space", self.name, self.record);
            }
            let instrs = if any { 0 } else { self.instrs.min(u32::MAX as u64) as u32 };
            out.push(Access { vaddr: addr, instrs, core: 0, tenant: 0, size: clip_to_line(addr, ACCESS_BYTES), flags });
            any = true;
        }
        self.instrs = if any { 0 } else { self.instrs + 1 };
        self.pos += RECORD_BYTES;
        self.record += 1;
        Ok(())
    }
}

impl Source for ChampSimReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        take_spill(out, max, &mut self.spill);
        while out.len() < max && !self.done {
            if self.len - self.pos < RECORD_BYTES && !self.refill()? {
                self.done = true;
                break;
            }
            self.record(out)?;
        }
        keep_at_most(out, max, &mut self.spill);
        Ok(())
    }
}

/// Encodes one record (for tests and the round-trip checks).
pub fn encode(ip: u64, loads: &[u64], stores: &[u64]) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in stores.iter().take(2).enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().take(4).enumerate() {
        r[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_then_stores_with_instruction_counts() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&encode(0x400000, &[], &[]));
        bytes.extend_from_slice(&encode(0x400004, &[0x1000, 0x203c], &[0x3000]));
        bytes.extend_from_slice(&encode(0x400008, &[], &[0x4000]));
        let mut r = ChampSimReader::new(Box::new(io::Cursor::new(bytes.clone())), "c".into());
        let mut out = Vec::new();
        r.fill(&mut out, 100).unwrap();
        let got: Vec<(u64, u8, bool, u32)> = out.iter().map(|a| (a.vaddr, a.size, a.is_write(), a.instrs)).collect();
        assert_eq!(got, [(0x1000, 8, false, 1), (0x203c, 4, false, 0), (0x3000, 8, true, 0), (0x4000, 8, true, 0)]);
        bytes.truncate(bytes.len() - 10);
        let mut r = ChampSimReader::new(Box::new(io::Cursor::new(bytes)), "c".into());
        let err = r.fill(&mut Vec::new(), 100).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
    }
}
