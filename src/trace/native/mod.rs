//! tiersim's native trace format: writer and streaming reader. The byte layout is
//! specified in `docs/trace-format.md`; in short:
//!
//! - a 16-byte header: magic `TIERSIMT`, version, flags saying whether records
//!   carry a core and a tenant field, and a CRC-32 of those;
//! - blocks of up to [`BLOCK_RECORDS`] records, each one independent zstd frame
//!   (with zstd's content checksum) of delta- and varint-encoded records, so a
//!   reader needs no state from earlier blocks and a damaged block is caught by its
//!   checksum;
//! - a trailer with the record count and the pages each tenant touched, ending in a
//!   fixed 20-byte tail (trailer offset, CRC-32 of the trailer, end magic) that a
//!   reader finds by seeking to the end.
//!
//! A stream that ends before the trailer is truncated: the reader hands out every
//! complete block, then fails, so a cut file loses at most its last block and is
//! never taken for a shorter trace. The trailer lets the engine learn a trace's
//! footprint without a pass over it; its checksum makes sure that what the engine
//! learns there is what the writer wrote, and the reader checks it against the
//! blocks it read (record count, the trailer's own offset).
//!
//! Version 1 had no checksums (the header's last four bytes were reserved, 0, and
//! the tail had no CRC); it is still read, with those bytes checked to be 0, and
//! [`NativeReader::note`] says so.
//!
//! A trace whose header has [`FLAG_META`] (version 2) carries a metadata block (`M`)
//! right before its trailer: opaque bytes (JSON, see [`super::meta`]) in a zstd
//! frame, a CRC-32 of the block, and the block's own offset, so that
//! [`read_trailer`] finds it by seeking back from the trailer. Recorders write it
//! with what they learn only at the end (records per thread, the sampling of the run).
//!
//! Records are encoded relative to the previous record of the same block: one
//! header byte (write and dependent flags; whether size, instruction count, core
//! and tenant follow or repeat), then the address as a zigzag varint delta and
//! whichever fields changed. Typical traces take 2–4 bytes per record before zstd.

use super::footprint::{PageSet, TenantPages, TraceFacts};
use super::meta::TraceMeta;
use super::{Access, Source, LINE_BYTES, VA_LIMIT};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};


mod read;
mod write;
#[cfg(test)]
mod tests;

pub use read::*;
pub use write::*;

/// First bytes of every native trace.
pub const MAGIC: [u8; 8] = *b"TIERSIMT";
/// Last bytes of every complete native trace.
pub const END_MAGIC: [u8; 8] = *b"TSIMEND\0";
/// Version this code writes.
pub const VERSION: u16 = 2;
/// The oldest version this code reads: version 1, without checksums.
pub const OLDEST_VERSION: u16 = 1;
/// Header flag: records carry a core field.
pub const FLAG_CORE: u16 = 1;
/// Header flag: records carry a tenant field.
pub const FLAG_TENANT: u16 = 2;
/// Header flag: a metadata block precedes the trailer.
pub const FLAG_META: u16 = 4;
/// Largest metadata a reader accepts (decompressed).
pub(super) const MAX_META_BYTES: usize = 1 << 20;
/// Records per block.
pub const BLOCK_RECORDS: usize = 65536;
/// zstd level: level 3 is zstd's default, fast to write and read.
pub(super) const ZSTD_LEVEL: i32 = 3;
/// Upper bound of an encoded record (header, 10-byte delta, size, 5-byte
/// instruction count, 3-byte core and tenant).
pub(super) const MAX_RECORD_BYTES: usize = 1 + 10 + 1 + 5 + 3 + 3;

// Record header bits.
pub(super) const R_WRITE: u8 = 1;
pub(super) const R_DEPENDENT: u8 = 2;
pub(super) const R_SIZE: u8 = 4;
/// Two bits: instruction count repeats (0), is zero (1), or follows (2).
pub(super) const R_INSTRS_SHIFT: u8 = 3;
pub(super) const R_CORE: u8 = 0x20;
pub(super) const R_TENANT: u8 = 0x40;

/// The state both sides keep within a block: the previous record.
#[derive(Clone, Copy)]
pub(super) struct Prev {
    pub(super) vaddr: u64,
    pub(super) size: u8,
    pub(super) instrs: u32,
    pub(super) core: u16,
    pub(super) tenant: u16,
}

impl Prev {
    const START: Prev = Prev { vaddr: 0, size: 8, instrs: 0, core: 0, tenant: 0 };
}

/// Bytes of a block of the longest records, the room a writer's buffer keeps.
pub(super) const RAW_BYTES: usize = BLOCK_RECORDS * MAX_RECORD_BYTES;

/// Writes `v` as a varint at the start of `out` (at least 10 bytes); returns its
/// length.
#[inline]
pub(super) fn put_varint_at(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = v as u8 | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

#[inline]
pub(super) fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
pub(super) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// CRC-32 (the polynomial of gzip and zlib) of `bytes`.
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(bytes);
    c.sum()
}
