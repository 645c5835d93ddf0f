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
const MAX_META_BYTES: usize = 1 << 20;
/// Records per block.
pub const BLOCK_RECORDS: usize = 65536;
/// zstd level: level 3 is zstd's default, fast to write and read.
const ZSTD_LEVEL: i32 = 3;
/// Upper bound of an encoded record (header, 10-byte delta, size, 5-byte
/// instruction count, 3-byte core and tenant).
const MAX_RECORD_BYTES: usize = 1 + 10 + 1 + 5 + 3 + 3;

// Record header bits.
const R_WRITE: u8 = 1;
const R_DEPENDENT: u8 = 2;
const R_SIZE: u8 = 4;
/// Two bits: instruction count repeats (0), is zero (1), or follows (2).
const R_INSTRS_SHIFT: u8 = 3;
const R_CORE: u8 = 0x20;
const R_TENANT: u8 = 0x40;

/// The state both sides keep within a block: the previous record.
#[derive(Clone, Copy)]
struct Prev {
    vaddr: u64,
    size: u8,
    instrs: u32,
    core: u16,
    tenant: u16,
}

impl Prev {
    const START: Prev = Prev { vaddr: 0, size: 8, instrs: 0, core: 0, tenant: 0 };
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// What a finished native trace holds.
#[derive(Clone, Debug)]
pub struct Written {
    pub records: u64,
    pub bytes: u64,
    pub tenants: Vec<TenantPages>,
}

/// Writes a native trace to any byte sink (a file, a pipe, standard output).
pub struct NativeWriter<W: Write> {
    out: W,
    flags: u16,
    raw: Vec<u8>,
    zbuf: Vec<u8>,
    n: usize,
    prev: Prev,
    comp: zstd::bulk::Compressor<'static>,
    offset: u64,
    records: u64,
    pages: PageSet,
    meta: Option<Vec<u8>>,
    /// The thread compressing blocks, once [`NativeWriter::compress_beside`] started it.
    beside: Option<Beside>,
}

/// Blocks compressed on a thread of their own, beside the one encoding records: the
/// encoder sends each full block of raw records and writes the compressed blocks, in
/// order, as they come back. At most [`Beside::MAX_IN_FLIGHT`] blocks are out at a
/// time, so memory stays bounded when compression is the slower side.
struct Beside {
    to: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    from: std::sync::mpsc::Receiver<Compressed>,
    /// Blocks sent and not yet written, with their record counts, oldest first.
    in_flight: std::collections::VecDeque<usize>,
    /// Raw buffers back from the thread, for the next blocks.
    spare: Vec<Vec<u8>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

/// A block compressed by [`Beside`]'s thread: its raw length, the frame, and the raw
/// buffer handed back (emptied).
type Compressed = io::Result<(usize, Vec<u8>, Vec<u8>)>;

impl Beside {
    const MAX_IN_FLIGHT: usize = 3;

    fn start() -> Result<Beside> {
        let mut comp = new_compressor()?;
        let (to, blocks) = std::sync::mpsc::sync_channel::<Vec<u8>>(Self::MAX_IN_FLIGHT);
        let (done, from) = std::sync::mpsc::channel::<Compressed>();
        let worker = std::thread::Builder::new()
            .name("tiersim-zstd".into())
            .spawn(move || {
                for mut raw in blocks {
                    let mut z = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
                    let r = comp.compress_to_buffer(&raw[..], &mut z).map(|_| {
                        let len = raw.len();
                        raw.clear();
                        (len, z, raw)
                    });
                    if done.send(r).is_err() {
                        return;
                    }
                }
            })
            .context("native writer: cannot start the compressing thread")?;
        Ok(Beside { to: Some(to), from, in_flight: Default::default(), spare: Vec::new(), worker: Some(worker) })
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.to.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// A zstd compressor with the native format's settings (level, content checksum).
fn new_compressor() -> Result<zstd::bulk::Compressor<'static>> {
    let mut comp = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    comp.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    Ok(comp)
}

impl<W: Write> NativeWriter<W> {
    /// Starts a trace whose records carry a core field if `cores` and a tenant
    /// field if `tenants` (otherwise every record reads back as core 0, tenant 0).
    pub fn new(out: W, cores: bool, tenants: bool) -> Result<NativeWriter<W>> {
        NativeWriter::start(out, if cores { FLAG_CORE } else { 0 } | if tenants { FLAG_TENANT } else { 0 })
    }

    /// Starts a trace like [`NativeWriter::new`] that ends with a metadata block,
    /// given with [`NativeWriter::set_meta`] before [`NativeWriter::finish`].
    pub fn with_meta(out: W, cores: bool, tenants: bool) -> Result<NativeWriter<W>> {
        NativeWriter::start(out, FLAG_META | if cores { FLAG_CORE } else { 0 } | if tenants { FLAG_TENANT } else { 0 })
    }

    fn start(mut out: W, flags: u16) -> Result<NativeWriter<W>> {
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&flags.to_le_bytes());
        header.extend_from_slice(&crc32(&header).to_le_bytes());
        out.write_all(&header)?;
        let comp = new_compressor()?;
        Ok(NativeWriter {
            out,
            flags,
            raw: Vec::with_capacity(BLOCK_RECORDS * 4),
            zbuf: Vec::new(),
            n: 0,
            prev: Prev::START,
            comp,
            offset: 16,
            records: 0,
            pages: PageSet::new(),
            meta: None,
            beside: None,
        })
    }

    /// Compresses blocks on a thread of its own from now on, beside the caller that
    /// encodes records (the bytes written are the same). For a writer fed by a
    /// producer that leaves a core idle at times, as a recording does.
    pub fn compress_beside(mut self) -> Result<NativeWriter<W>> {
        self.beside = Some(Beside::start()?);
        Ok(self)
    }

    /// Sets the metadata written before the trailer (a writer made with
    /// [`NativeWriter::with_meta`]).
    pub fn set_meta(&mut self, meta: Vec<u8>) {
        self.meta = Some(meta);
    }

    /// Appends one record. Its size must be 1–64 bytes within one 64-byte line and
    /// its address below 2^57.
    #[inline]
    pub fn push(&mut self, a: &Access) -> Result<()> {
        if a.vaddr >= VA_LIMIT || a.size == 0 || (a.vaddr & (LINE_BYTES - 1)) + a.size as u64 > LINE_BYTES {
            bail!("record {}: cannot write address {:#x} size {} (below 2^57, 1–64 bytes within one line)", self.records, a.vaddr, a.size);
        }
        let core = if self.flags & FLAG_CORE != 0 { a.core } else { 0 };
        let tenant = if self.flags & FLAG_TENANT != 0 { a.tenant } else { 0 };
        let p = self.prev;
        let mut h = a.flags & (R_WRITE | R_DEPENDENT);
        if a.size != p.size {
            h |= R_SIZE;
        }
        let instrs_code = if a.instrs == p.instrs {
            0
        } else if a.instrs == 0 {
            1
        } else {
            2
        };
        h |= instrs_code << R_INSTRS_SHIFT;
        if core != p.core {
            h |= R_CORE;
        }
        if tenant != p.tenant {
            h |= R_TENANT;
        }
        self.raw.push(h);
        put_varint(&mut self.raw, zigzag(a.vaddr.wrapping_sub(p.vaddr) as i64));
        if h & R_SIZE != 0 {
            self.raw.push(a.size);
        }
        if instrs_code == 2 {
            put_varint(&mut self.raw, a.instrs as u64);
        }
        if h & R_CORE != 0 {
            put_varint(&mut self.raw, core as u64);
        }
        if h & R_TENANT != 0 {
            put_varint(&mut self.raw, tenant as u64);
        }
        self.prev = Prev { vaddr: a.vaddr, size: a.size, instrs: a.instrs, core, tenant };
        self.pages.add(&Access { tenant, ..*a });
        self.n += 1;
        self.records += 1;
        if self.n == BLOCK_RECORDS {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.n == 0 {
            return Ok(());
        }
        if let Some(b) = &mut self.beside {
            let next = b.spare.pop().unwrap_or_else(|| Vec::with_capacity(BLOCK_RECORDS * 4));
            let raw = std::mem::replace(&mut self.raw, next);
            let sent = b.to.as_ref().is_some_and(|to| to.send(raw).is_ok());
            if !sent {
                bail!("native writer: the compressing thread stopped");
            }
            b.in_flight.push_back(self.n);
            self.write_compressed(Beside::MAX_IN_FLIGHT - 1)?;
        } else {
            self.zbuf.clear();
            self.zbuf.reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
            self.comp.compress_to_buffer(&self.raw[..], &mut self.zbuf)?;
            Self::write_block(&mut self.out, &mut self.offset, self.n, self.raw.len(), &self.zbuf)?;
            self.raw.clear();
        }
        self.n = 0;
        self.prev = Prev::START;
        Ok(())
    }

    /// Writes blocks back from the compressing thread, oldest first and waiting for
    /// each, until at most `keep` are left with it.
    fn write_compressed(&mut self, keep: usize) -> Result<()> {
        let Some(b) = &mut self.beside else { return Ok(()) };
        while b.in_flight.len() > keep {
            let n = b.in_flight.pop_front().expect("a block in flight");
            let (raw_len, z, raw) = b.from.recv().map_err(|_| anyhow!("native writer: the compressing thread stopped"))??;
            b.spare.push(raw);
            Self::write_block(&mut self.out, &mut self.offset, n, raw_len, &z)?;
        }
        Ok(())
    }

    /// Writes one block of `n` records, `raw_len` bytes before compression, to `out`
    /// at `offset`.
    fn write_block(out: &mut W, offset: &mut u64, n: usize, raw_len: usize, z: &[u8]) -> Result<()> {
        let mut head = [0u8; 13];
        head[0] = b'B';
        head[1..5].copy_from_slice(&(n as u32).to_le_bytes());
        head[5..9].copy_from_slice(&(raw_len as u32).to_le_bytes());
        head[9..13].copy_from_slice(&(z.len() as u32).to_le_bytes());
        out.write_all(&head)?;
        out.write_all(z)?;
        *offset += (head.len() + z.len()) as u64;
        Ok(())
    }

    /// Writes the records still held as a last block, but no trailer: for a
    /// recording that did not end cleanly, which every reader then reports as
    /// truncated after its complete blocks.
    pub fn abandon(mut self) -> Result<()> {
        self.flush_block()?;
        self.write_compressed(0)?;
        self.out.flush()?;
        Ok(())
    }

    /// Writes the last block, the metadata block if the header announced one, and
    /// the trailer, and returns what the trace holds.
    pub fn finish(mut self) -> Result<Written> {
        self.flush_block()?;
        self.write_compressed(0)?;
        if self.flags & FLAG_META != 0 {
            let meta = self.meta.take().ok_or_else(|| anyhow!("native writer: the header announces metadata that was never set"))?;
            let z = self.comp.compress(&meta)?;
            let mut m = Vec::with_capacity(z.len() + 17);
            m.push(b'M');
            m.extend_from_slice(&(z.len() as u32).to_le_bytes());
            m.extend_from_slice(&z);
            m.extend_from_slice(&crc32(&m).to_le_bytes());
            m.extend_from_slice(&self.offset.to_le_bytes());
            self.out.write_all(&m)?;
            self.offset += m.len() as u64;
        }
        let tenants = self.pages.per_tenant();
        let mut t = Vec::new();
        t.push(b'E');
        t.extend_from_slice(&self.records.to_le_bytes());
        t.extend_from_slice(&(tenants.len() as u32).to_le_bytes());
        for p in &tenants {
            t.extend_from_slice(&p.tenant.to_le_bytes());
            t.extend_from_slice(&p.pages_4k.to_le_bytes());
            t.extend_from_slice(&p.pages_2m.to_le_bytes());
        }
        t.extend_from_slice(&self.offset.to_le_bytes());
        t.extend_from_slice(&crc32(&t).to_le_bytes());
        t.extend_from_slice(&END_MAGIC);
        self.out.write_all(&t)?;
        self.out.flush()?;
        Ok(Written { records: self.records, bytes: self.offset + t.len() as u64, tenants })
    }
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` if the stream ends before the
/// first byte, an error if it ends part way.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stream ends inside a block")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// CRC-32 (the polynomial of gzip and zlib) of `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(bytes);
    c.sum()
}

/// Checks the header `h` of `name`, whose magic matched: its version, its checksum
/// (version 2) or reserved bytes (version 1) and its flags. Returns (version, flags).
fn parse_header(h: &[u8; 16], name: &str) -> Result<(u16, u16)> {
    let version = u16::from_le_bytes([h[8], h[9]]);
    let last = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
    match version {
        1 if last != 0 => bail!("{name}: corrupt header: its reserved bytes 12-15 are not 0"),
        2 if last != crc32(&h[..12]) => bail!("{name}: corrupt header: checksum mismatch"),
        1 | 2 => {}
        v => bail!("{name}: native trace version {v}; this tiersim reads versions {OLDEST_VERSION} to {VERSION}"),
    }
    let flags = u16::from_le_bytes([h[10], h[11]]);
    if flags & !(FLAG_CORE | FLAG_TENANT | FLAG_META) != 0
        || (version == 1 && flags & FLAG_META != 0)
    {
        bail!("{name}: corrupt header: unknown flags {flags:#x}");
    }
    Ok((version, flags))
}

/// What a reader of a version-1 trace tells the user.
fn legacy_note(name: &str) -> String {
    format!("{name}: native trace version 1, whose header and trailer carry no checksums; `tiersim convert {name} NEW.tsim` rewrites it as version {VERSION}")
}

/// Bytes of the fixed tail after the per-tenant pages: offset, CRC-32 (from version
/// 2), end magic.
fn tail_len(version: u16) -> usize {
    if version >= 2 {
        20
    } else {
        16
    }
}

/// The longest possible trailer: tag, totals, one entry per possible tenant, tail.
const MAX_TRAILER: usize = 13 + 18 * (u16::MAX as usize + 1) + 20;

/// Streaming reader of a native trace.
pub struct NativeReader {
    src: Box<dyn Read>,
    name: String,
    version: u16,
    flags: u16,
    /// Bytes of the stream consumed so far (where the next block or the trailer starts).
    consumed: u64,
    zbuf: Vec<u8>,
    raw: Vec<u8>,
    /// Read position in `raw` and records left in the current block.
    pos: usize,
    left: usize,
    prev: Prev,
    blocks: u64,
    records: u64,
    done: bool,
    dec: zstd::bulk::Decompressor<'static>,
    meta: Option<Vec<u8>>,
}

impl NativeReader {
    /// Reads the header of the native trace `src` (named `name` in messages).
    pub fn new(mut src: Box<dyn Read>, name: String) -> Result<NativeReader> {
        let mut h = [0u8; 16];
        if !read_full(&mut src, &mut h).with_context(|| format!("{name}: truncated header"))? || h[..8] != MAGIC {
            bail!("{name}: not a tiersim native trace (bad magic)");
        }
        let (version, flags) = parse_header(&h, &name)?;
        Ok(NativeReader {
            src,
            name,
            version,
            flags,
            consumed: 16,
            zbuf: Vec::new(),
            raw: Vec::new(),
            pos: 0,
            left: 0,
            prev: Prev::START,
            blocks: 0,
            records: 0,
            done: false,
            dec: zstd::bulk::Decompressor::new()?,
            meta: None,
        })
    }


    /// Whether records carry their own tenant (the header's tenant flag).
    pub fn record_tenants(&self) -> bool {
        self.flags & FLAG_TENANT != 0
    }

    /// Whether records carry their own core (the header's core flag).
    pub fn record_cores(&self) -> bool {
        self.flags & FLAG_CORE != 0
    }

    /// What the user should know about this trace: that it is in the older format
    /// without checksums.
    pub fn note(&self) -> Option<String> {
        (self.version < VERSION).then(|| legacy_note(&self.name))
    }

    /// Whether the trace ends with a metadata block (the header's metadata flag).
    pub fn has_meta(&self) -> bool {
        self.flags & FLAG_META != 0
    }

    fn corrupt(&self, what: &str) -> anyhow::Error {
        anyhow!("{}: corrupt block {} (after record {}): {what}", self.name, self.blocks, self.records)
    }

    /// Loads the next block; false after the trailer.
    fn next_block(&mut self) -> Result<bool> {
        if self.pos != self.raw.len() {
            return Err(self.corrupt("bytes left over after its last record"));
        }
        let mut tag = [0u8; 1];
        let truncated = |blocks: u64, records: u64, name: &str| {
            anyhow!("{name}: truncated: the stream ends after {blocks} complete blocks ({records} records) without its trailer")
        };
        if !read_full(&mut self.src, &mut tag).map_err(|e| anyhow!("{}: {e}", self.name))? {
            return Err(truncated(self.blocks, self.records, &self.name));
        }
        match tag[0] {
            b'B' => {
                let mut h = [0u8; 12];
                match read_full(&mut self.src, &mut h) {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return Err(truncated(self.blocks, self.records, &self.name)),
                }
                let n = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")) as usize;
                let raw_len = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
                let z_len = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize;
                if n == 0 || n > BLOCK_RECORDS || raw_len > BLOCK_RECORDS * MAX_RECORD_BYTES || raw_len < n * 2 || z_len > 2 * raw_len + 1024 {
                    return Err(self.corrupt("impossible block header"));
                }
                self.zbuf.resize(z_len, 0);
                match read_full(&mut self.src, &mut self.zbuf) {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return Err(truncated(self.blocks, self.records, &self.name)),
                }
                self.raw.clear();
                self.raw.reserve(raw_len);
                let got = self.dec.decompress_to_buffer(&self.zbuf[..], &mut self.raw).map_err(|e| self.corrupt(&e.to_string()))?;
                if got != raw_len {
                    return Err(self.corrupt("wrong decompressed length"));
                }
                self.pos = 0;
                self.left = n;
                self.prev = Prev::START;
                self.blocks += 1;
                self.consumed += 13 + z_len as u64;
                Ok(true)
            }
            b'M' if self.has_meta() && self.meta.is_none() => {
                let mut len = [0u8; 4];
                if !read_full(&mut self.src, &mut len).unwrap_or(false) {
                    return Err(truncated(self.blocks, self.records, &self.name));
                }
                let z_len = u32::from_le_bytes(len) as usize;
                if z_len > MAX_META_BYTES {
                    return Err(anyhow!(
                        "{}: corrupt metadata block: impossible length",
                        self.name
                    ));
                }
                let mut block = vec![b'M'];
                block.extend_from_slice(&len);
                block.resize(5 + z_len + 12, 0);
                if !read_full(&mut self.src, &mut block[5..]).unwrap_or(false) {
                    return Err(truncated(self.blocks, self.records, &self.name));
                }
                let meta = meta_block(&block, self.consumed)
                    .map_err(|why| anyhow!("{}: corrupt metadata block: {why}", self.name))?;
                self.meta = Some(
                    self.dec
                        .decompress(meta, MAX_META_BYTES)
                        .map_err(|e| anyhow!("{}: corrupt metadata block: {e}", self.name))?,
                );
                self.consumed += block.len() as u64;
                match read_full(&mut self.src, &mut tag) {
                    Ok(true) if tag[0] == b'E' => self.read_trailer_tag(),
                    Ok(true) => Err(anyhow!("{}: corrupt: the metadata block is not followed by the trailer", self.name)),
                    Ok(false) | Err(_) => Err(truncated(self.blocks, self.records, &self.name)),
                }
            }
            b'E' if self.has_meta() && self.meta.is_none() => Err(anyhow!(
                "{}: corrupt: the header announces a metadata block that is missing",
                self.name
            )),
            b'E' => self.read_trailer_tag(),
            other => Err(self.corrupt(&format!("unknown block tag {other:#04x}"))),
        }
    }

    /// Reads and checks the trailer after its `E` tag; false (the end).
    fn read_trailer_tag(&mut self) -> Result<bool> {
        let mut t = vec![b'E'];
        (&mut self.src)
            .take(MAX_TRAILER as u64)
            .read_to_end(&mut t)
            .map_err(|e| anyhow!("{}: {e}", self.name))?;
        let trailer = parse_trailer(&t, self.version, self.consumed)
            .map_err(|why| anyhow!("{}: corrupt trailer: {why}", self.name))?;
        if trailer.records != self.records {
            bail!("{}: the trailer counts {} records, the blocks hold {}", self.name, trailer.records, self.records);
        }
        Ok(false)
    }

    /// Decodes one record at `pos`.
    #[inline]
    fn decode(&mut self) -> Result<Access> {
        let raw = &self.raw[..];
        let mut i = self.pos;
        let overrun = || anyhow!("record runs past the end of its block");
        let h = *raw.get(i).ok_or_else(overrun)?;
        i += 1;
        let varint = |i: &mut usize| -> Result<u64> {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = *raw.get(*i).ok_or_else(overrun)?;
                *i += 1;
                if shift == 63 && b > 1 {
                    bail!("varint overflows 64 bits");
                }
                v |= ((b & 0x7f) as u64) << shift;
                if b < 0x80 {
                    return Ok(v);
                }
                shift += 7;
                if shift > 63 {
                    bail!("varint longer than 10 bytes");
                }
            }
        };
        let p = self.prev;
        let vaddr = p.vaddr.wrapping_add(unzigzag(varint(&mut i)?) as u64);
        let size = if h & R_SIZE != 0 {
            let s = *raw.get(i).ok_or_else(overrun)?;
            i += 1;
            s
        } else {
            p.size
        };
        let instrs = match (h >> R_INSTRS_SHIFT) & 3 {
            0 => p.instrs,
            1 => 0,
            2 => u32::try_from(varint(&mut i)?).map_err(|_| anyhow!("instruction count over 32 bits"))?,
            _ => bail!("bad record header {h:#04x}"),
        };
        let core = if h & R_CORE != 0 { u16::try_from(varint(&mut i)?).map_err(|_| anyhow!("core over 16 bits"))? } else { p.core };
        let tenant = if h & R_TENANT != 0 { u16::try_from(varint(&mut i)?).map_err(|_| anyhow!("tenant over 16 bits"))? } else { p.tenant };
        if h & 0x80 != 0 || (h & (R_CORE | R_TENANT)) & !self.field_bits() != 0 {
            bail!("bad record header {h:#04x}");
        }
        if vaddr >= VA_LIMIT {
            bail!("address {vaddr:#x} beyond the 57-bit virtual address space");
        }
        if size == 0 || (vaddr & (LINE_BYTES - 1)) + size as u64 > LINE_BYTES {
            bail!("access of {size} bytes at {vaddr:#x} does not fit one 64-byte line");
        }
        self.pos = i;
        self.prev = Prev { vaddr, size, instrs, core, tenant };
        Ok(Access { vaddr, instrs, core, tenant, size, flags: h & (R_WRITE | R_DEPENDENT) })
    }

    /// The record header bits this trace's flags allow.
    #[inline]
    fn field_bits(&self) -> u8 {
        (if self.flags & FLAG_CORE != 0 { R_CORE } else { 0 }) | if self.flags & FLAG_TENANT != 0 { R_TENANT } else { 0 }
    }
}

impl Source for NativeReader {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        while out.len() < max && !self.done {
            if self.left == 0 && !self.next_block()? {
                self.done = true;
                break;
            }
            let n = self.left.min(max - out.len());
            // Records far enough from the end of the block take the fast path.
            let (pos, prev, fast) = decode_fast(&self.raw, self.pos, self.prev, self.field_bits(), n, out);
            self.pos = pos;
            self.prev = prev;
            if fast == usize::MAX {
                return Err(self.corrupt("malformed record"));
            }
            for _ in fast..n {
                match self.decode() {
                    Ok(a) => out.push(a),
                    Err(e) => return Err(self.corrupt(&e.to_string())),
                }
            }
            self.left -= n;
            self.records += n as u64;
        }
        Ok(())
    }

    fn meta(&self) -> Option<&[u8]> {
        self.meta.as_deref()
    }
}

/// Reads a varint of at most `max_len` bytes at `r[*j..]`.
#[inline(always)]
fn varint_at(r: &[u8; MAX_RECORD_BYTES], j: &mut usize, max_len: usize) -> Option<u64> {
    let mut v = 0u64;
    for k in 0..max_len {
        let b = r[*j + k];
        v |= ((b & 0x7f) as u64) << (7 * k);
        if b < 0x80 {
            *j += k + 1;
            return Some(v);
        }
    }
    None
}

/// Decodes up to `n` records starting at `pos` while a whole maximal record fits
/// before the end of `raw` (so no read can run past it: each field's varint is
/// limited to its own maximum length, and those add up to [`MAX_RECORD_BYTES`]).
/// Returns the new position and state and the number decoded, or `usize::MAX`
/// decoded for a malformed record (position and state then point at it).
#[inline]
fn decode_fast(raw: &[u8], mut pos: usize, mut p: Prev, fields: u8, n: usize, out: &mut Vec<Access>) -> (usize, Prev, usize) {
    let bad_bits = 0x80 | ((R_CORE | R_TENANT) & !fields);
    let mut done = 0;
    while done < n && pos + MAX_RECORD_BYTES <= raw.len() {
        let r: &[u8; MAX_RECORD_BYTES] = raw[pos..pos + MAX_RECORD_BYTES].try_into().expect("fixed length");
        let h = r[0];
        let mut j = 1;
        let Some(delta) = varint_at(r, &mut j, 10) else { return (pos, p, usize::MAX) };
        let vaddr = p.vaddr.wrapping_add(unzigzag(delta) as u64);
        // Size and instruction count without branches on the common paths: the
        // optional byte is read either way and used or not.
        let has_size = (h & R_SIZE != 0) as usize;
        let size = if has_size != 0 { r[j] } else { p.size };
        j += has_size;
        let code = (h >> R_INSTRS_SHIFT) & 3;
        let mut instrs = if code == 0 { p.instrs } else { 0 };
        if code >= 2 {
            match varint_at(r, &mut j, 5) {
                Some(v) if code == 2 && v <= u32::MAX as u64 => instrs = v as u32,
                _ => return (pos, p, usize::MAX),
            }
        }
        let small = |on: bool, old: u16, j: &mut usize| -> Option<u16> {
            if !on {
                return Some(old);
            }
            varint_at(r, j, 3).and_then(|v| u16::try_from(v).ok())
        };
        let Some(core) = small(h & R_CORE != 0, p.core, &mut j) else { return (pos, p, usize::MAX) };
        let Some(tenant) = small(h & R_TENANT != 0, p.tenant, &mut j) else { return (pos, p, usize::MAX) };
        if h & bad_bits != 0 || vaddr >= VA_LIMIT || size == 0 || (vaddr & (LINE_BYTES - 1)) + size as u64 > LINE_BYTES {
            return (pos, p, usize::MAX);
        }
        out.push(Access { vaddr, instrs, core, tenant, size, flags: h & (R_WRITE | R_DEPENDENT) });
        p = Prev { vaddr, size, instrs, core, tenant };
        pos += j;
        done += 1;
    }
    (pos, p, done)
}

/// A parsed trailer.
struct Trailer {
    records: u64,
    tenants: Vec<TenantPages>,
}

/// Parses the trailer `t` of a trace of `version`: from its `E` tag, which is at byte
/// `at` of the file, to the end of the file. The error says what is wrong.
fn parse_trailer(t: &[u8], version: u16, at: u64) -> std::result::Result<Trailer, &'static str> {
    let u64_at = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u32::from_le_bytes(t[i..i + 4].try_into().expect("4 bytes"));
    if t.len() < 13 {
        return Err("it ends inside its totals");
    }
    let n = u32_at(9) as usize;
    if n > u16::MAX as usize + 1 {
        return Err("impossible tenant count");
    }
    let end = 13 + 18 * n;
    let want = end + tail_len(version);
    if t.len() < want {
        return Err("it ends before its end magic");
    }
    if t.len() > want || t[want - 8..] != END_MAGIC {
        return Err("bytes after it, or no end magic where it should end");
    }
    if version >= 2 && crc32(&t[..end + 8]) != u32_at(end + 8) {
        return Err("checksum mismatch");
    }
    if u64_at(end) != at {
        return Err("its offset field does not point at it");
    }
    let tenants = (0..n)
        .map(|k| {
            let i = 13 + 18 * k;
            TenantPages { tenant: u16::from_le_bytes([t[i], t[i + 1]]), pages_4k: u64_at(i + 2), pages_2m: u64_at(i + 10) }
        })
        .collect();
    Ok(Trailer { records: u64_at(1), tenants })
}

/// Checks a whole metadata block `b` (tag, length, zstd frame, CRC-32, offset) that
/// starts at byte `at` of the file; returns its zstd frame.
fn meta_block(b: &[u8], at: u64) -> std::result::Result<&[u8], &'static str> {
    let n = b.len();
    if n < 17 || u32::from_le_bytes(b[1..5].try_into().expect("4 bytes")) as usize != n - 17 {
        return Err("its length does not match");
    }
    if crc32(&b[..n - 12]) != u32::from_le_bytes(b[n - 12..n - 8].try_into().expect("4 bytes")) {
        return Err("checksum mismatch");
    }
    if u64::from_le_bytes(b[n - 8..].try_into().expect("8 bytes")) != at {
        return Err("its offset field does not point at it");
    }
    Ok(&b[5..n - 12])
}

/// Reads the metadata block that ends at `end` (the trailer's offset), found by the
/// offset it ends with.
fn meta_before(f: &mut File, end: u64, path: &str) -> Result<Vec<u8>> {
    let corrupt = |why: &str| anyhow!("{path}: corrupt metadata block: {why}");
    let mut word = [0u8; 8];
    f.seek(SeekFrom::Start(
        end.checked_sub(8).ok_or_else(|| corrupt("missing"))?,
    ))?;
    f.read_exact(&mut word)?;
    let start = u64::from_le_bytes(word);
    let len = end
        .checked_sub(start)
        .filter(|&l| (17..=17 + MAX_META_BYTES as u64).contains(&l))
        .ok_or_else(|| corrupt("missing or impossible offset"))?;
    let mut block = vec![0u8; len as usize];
    f.seek(SeekFrom::Start(start))?;
    f.read_exact(&mut block)?;
    if block[0] != b'M' {
        return Err(corrupt("missing"));
    }
    let z = meta_block(&block, start).map_err(corrupt)?;
    zstd::bulk::Decompressor::new()?
        .decompress(z, MAX_META_BYTES)
        .map_err(|e| corrupt(&e.to_string()))
}

/// Reads the facts in the trailer of the native trace at `path` without reading
/// its blocks. `Ok(None)` if the file is not an uncompressed native trace.
pub fn read_trailer(path: &str) -> Result<Option<TraceFacts>> {
    let mut f = File::open(path).with_context(|| format!("{path}: cannot open"))?;
    let mut h = [0u8; 16];
    if !read_full(&mut f, &mut h).unwrap_or(false) || h[..8] != MAGIC {
        return Ok(None);
    }
    let (version, flags) = parse_header(&h, path)?;
    let len = f.seek(SeekFrom::End(0))?;
    let truncated = || anyhow!("{path}: truncated native trace: no trailer at its end (it was cut or is still being written)");
    let tail = tail_len(version);
    if len < (16 + 13 + tail) as u64 {
        return Err(truncated());
    }
    let mut end = [0u8; 20];
    f.seek(SeekFrom::End(-(tail as i64)))?;
    f.read_exact(&mut end[..tail])?;
    if end[tail - 8..tail] != END_MAGIC {
        return Err(truncated());
    }
    let offset = u64::from_le_bytes(end[..8].try_into().expect("8 bytes"));
    let corrupt = |why: &str| anyhow!("{path}: corrupt trailer: {why}");
    if offset < 16 || offset > len - (13 + tail) as u64 || len - offset > MAX_TRAILER as u64 {
        return Err(corrupt("its offset field points outside the file"));
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut t = Vec::new();
    f.read_to_end(&mut t)?;
    if t[0] != b'E' {
        return Err(corrupt("its offset field does not point at it"));
    }
    let trailer = parse_trailer(&t, version, offset).map_err(corrupt)?;
    let meta = match flags & FLAG_META {
        0 => None,
        _ => Some(TraceMeta::parse(&meta_before(&mut f, offset, path)?, path)?),
    };
    Ok(Some(TraceFacts {
        tenants: trailer.tenants,
        records: trailer.records,
        record_tenants: flags & FLAG_TENANT != 0,
        record_cores: flags & FLAG_CORE != 0,
        meta,
        from_trailer: true,
        note: (version < VERSION).then(|| legacy_note(path)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn sample(n: usize) -> Vec<Access> {
        let mut rng = Rng::new(7);
        let mut v = Vec::new();
        let mut addr = 0x7f00_0000_0000u64;
        for i in 0..n {
            let r = rng.next_u64();
            addr = if r.is_multiple_of(4) { (r >> 8) % (1 << 47) } else { addr.wrapping_add(8) % (1 << 47) } & !7;
            v.push(Access {
                vaddr: addr,
                instrs: (r >> 20) as u32 % 5,
                core: (i / 1000) as u16 % 3,
                tenant: (r >> 40) as u16 % 2,
                size: 8,
                flags: (r >> 50) as u8 & 3,
            });
        }
        v
    }

    fn encode(records: &[Access], cores: bool, tenants: bool) -> Vec<u8> {
        let mut buf = Vec::new();
        {
            let mut w = NativeWriter::new(&mut buf, cores, tenants).unwrap();
            for a in records {
                w.push(a).unwrap();
            }
            w.finish().unwrap();
        }
        buf
    }

    fn decode(bytes: Vec<u8>, batch: usize) -> Result<Vec<Access>> {
        let mut r = NativeReader::new(Box::new(io::Cursor::new(bytes)), "n".into())?;
        let mut all = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            r.fill(&mut buf, batch)?;
            if buf.is_empty() {
                return Ok(all);
            }
            all.extend_from_slice(&buf);
        }
    }

    #[test]
    fn records_round_trip_with_and_without_fields() {
        let recs = sample(150_000);
        assert_eq!(decode(encode(&recs, true, true), 4093).unwrap(), recs);
        let plain: Vec<Access> = recs.iter().map(|a| Access { core: 0, tenant: 0, ..*a }).collect();
        assert_eq!(decode(encode(&recs, false, false), 1000).unwrap(), plain);
    }

    #[test]
    fn truncation_and_corruption_are_errors() {
        let bytes = encode(&sample(200_000), false, false);
        for cut in [bytes.len() - 1, bytes.len() - 20, bytes.len() / 2, 20] {
            let err = decode(bytes[..cut].to_vec(), 4096).unwrap_err().to_string();
            assert!(err.contains("truncated") || err.contains("corrupt"), "cut at {cut}: {err}");
        }
        let mut bad = bytes.clone();
        bad[1000] ^= 0x55;
        assert!(decode(bad, 4096).is_err());
    }

    #[test]
    fn metadata_is_found_by_streaming_and_by_seeking() {
        let recs = sample(70_000);
        let mut bytes = Vec::new();
        let mut w = NativeWriter::with_meta(&mut bytes, true, false).unwrap();
        for a in &recs {
            w.push(a).unwrap();
        }
        let meta = br#"{"recorder":"t","program":["p"],"threads":[]}"#.to_vec();
        w.set_meta(meta.clone());
        w.finish().unwrap();
        let mut r = NativeReader::new(Box::new(io::Cursor::new(bytes.clone())), "n".into()).unwrap();
        let mut buf = Vec::new();
        while {
            buf.clear();
            r.fill(&mut buf, 4096).unwrap();
            !buf.is_empty()
        } {}
        assert_eq!(r.meta(), Some(&meta[..]));
        let dir = crate::scratch::Scratch::new("meta");
        let path = dir.join("meta.tsim");
        std::fs::write(&path, &bytes).unwrap();
        let facts = read_trailer(path.to_str().unwrap()).unwrap().unwrap();
        assert_eq!(
            (
                facts.records,
                facts.record_cores,
                facts.meta.unwrap().recorder.as_str()
            ),
            (70_000, true, "t")
        );
        // A header that announces metadata the stream lacks is corrupt (even with a
        // header checksum that matches).
        let mut plain = encode(&recs[..10], true, false);
        plain[10] |= FLAG_META as u8;
        let crc = crc32(&plain[..12]).to_le_bytes();
        plain[12..16].copy_from_slice(&crc);
        assert!(decode(plain, 100)
            .unwrap_err()
            .to_string()
            .contains("metadata block that is missing"));
        // Every byte of the metadata block is covered: a flipped one is an error.
        // The trailer of one tenant is 13 + 18 + 20 bytes; the block ends there.
        let end = bytes.len() - (13 + 18 + 20);
        let m = (0..end)
            .rev()
            .find(|&i| {
                bytes[i] == b'M'
                    && u32::from_le_bytes(bytes[i + 1..i + 5].try_into().unwrap()) as usize + i + 17
                        == end
            })
            .expect("the metadata block");
        for i in m..end {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(bad.clone(), 4096).is_err(), "streaming, byte {i}");
            std::fs::write(&path, &bad).unwrap();
            assert!(
                read_trailer(path.to_str().unwrap()).is_err(),
                "seeking, byte {i}"
            );
        }
    }

    /// Writes `records` with compression beside (`abandon` instead of `finish` when
    /// `cut`).
    fn encode_beside(records: &[Access], cut: bool) -> Vec<u8> {
        let mut buf = Vec::new();
        {
            let mut w = NativeWriter::new(&mut buf, true, true).unwrap().compress_beside().unwrap();
            for a in records {
                w.push(a).unwrap();
            }
            if cut {
                w.abandon().unwrap();
            } else {
                w.finish().unwrap();
            }
        }
        buf
    }

    /// Six blocks, more than the thread may hold at once, so the writer also waits
    /// for it: the same bytes as compressing in line, and an abandoned trace keeps
    /// every block.
    #[test]
    fn compressing_beside_writes_the_same_bytes() {
        let recs = sample(5 * BLOCK_RECORDS + 123);
        assert_eq!(encode_beside(&recs, false), encode(&recs, true, true));
        let err = decode(encode_beside(&recs, true), 4096).unwrap_err().to_string();
        assert!(err.contains(&format!("after 6 complete blocks ({} records)", recs.len())), "{err}");
    }

    /// A sink that takes `left` bytes, then fails like a full disk.
    struct Full {
        left: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left on device"));
            }
            let n = b.len().min(self.left);
            self.left -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// With compression beside, a write that fails is reported by a later `push` or
    /// by `finish`, never lost, and the writer does not hang on its thread.
    #[test]
    fn a_failed_write_is_reported_with_compression_beside() {
        let mut w = NativeWriter::new(Full { left: 50_000 }, false, false).unwrap().compress_beside().unwrap();
        let pushed = sample(4 * BLOCK_RECORDS).iter().try_for_each(|a| w.push(a));
        let err = match pushed {
            Err(e) => e,
            Ok(()) => w.finish().map(|_| ()).unwrap_err(),
        };
        assert!(format!("{err:#}").contains("no space left"), "{err:#}");
    }

    #[test]
    fn an_abandoned_trace_reads_as_truncated_after_its_blocks() {
        let mut bytes = Vec::new();
        let mut w = NativeWriter::with_meta(&mut bytes, false, false).unwrap();
        for a in &sample(70_000) {
            w.push(a).unwrap();
        }
        w.abandon().unwrap();
        let err = decode(bytes, 4096).unwrap_err().to_string();
        assert!(err.contains("truncated: the stream ends after 2 complete blocks (70000 records)"), "{err}");
    }
}
