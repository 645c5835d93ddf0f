//! The writer of the native format ([`NativeWriter`]).

use super::*;


/// What a finished native trace holds.
#[derive(Clone, Debug)]
pub struct Written {
    pub records: u64,
    pub bytes: u64,
    pub tenants: Vec<TenantPages>,
}

/// Writes a native trace to any byte sink (a file, a pipe, standard output).
pub struct NativeWriter<W: Write> {
    pub(super) out: W,
    pub(super) flags: u16,
    /// The block being encoded: `raw[..raw_len]`. The buffer keeps room for a
    /// block of the longest records ([`RAW_BYTES`]), so records are written in
    /// place without growing it.
    pub(super) raw: Vec<u8>,
    pub(super) raw_len: usize,
    pub(super) zbuf: Vec<u8>,
    pub(super) n: usize,
    pub(super) prev: Prev,
    pub(super) comp: zstd::bulk::Compressor<'static>,
    pub(super) offset: u64,
    pub(super) records: u64,
    pub(super) pages: PageSet,
    pub(super) meta: Option<Vec<u8>>,
    /// The thread compressing blocks, once [`NativeWriter::compress_beside`] started it.
    pub(super) beside: Option<Beside>,
}

/// Blocks compressed on a thread of their own, beside the one encoding records: the
/// encoder sends each full block of raw records and writes the compressed blocks, in
/// order, as they come back. At most [`Beside::MAX_IN_FLIGHT`] blocks are out at a
/// time, so memory stays bounded when compression is the slower side.
pub(super) struct Beside {
    /// Raw buffers and the length of the block in each.
    pub(super) to: Option<std::sync::mpsc::SyncSender<(Vec<u8>, usize)>>,
    pub(super) from: std::sync::mpsc::Receiver<Compressed>,
    /// Blocks sent and not yet written, with their record counts, oldest first.
    pub(super) in_flight: std::collections::VecDeque<usize>,
    /// Raw buffers back from the thread, for the next blocks.
    pub(super) spare: Vec<Vec<u8>>,
    pub(super) worker: Option<std::thread::JoinHandle<()>>,
}

/// A block compressed by [`Beside`]'s thread: its raw length, the frame, and the raw
/// buffer handed back.
type Compressed = io::Result<(usize, Vec<u8>, Vec<u8>)>;

impl Beside {
    const MAX_IN_FLIGHT: usize = 3;

    fn start() -> Result<Beside> {
        let mut comp = new_compressor()?;
        let (to, blocks) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(Self::MAX_IN_FLIGHT);
        let (done, from) = std::sync::mpsc::channel::<Compressed>();
        let worker = std::thread::Builder::new()
            .name("tiersim-zstd".into())
            .spawn(move || {
                for (raw, len) in blocks {
                    let mut z = Vec::with_capacity(zstd::zstd_safe::compress_bound(len));
                    let r = comp.compress_to_buffer(&raw[..len], &mut z).map(|_| (len, z, raw));
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
pub(super) fn new_compressor() -> Result<zstd::bulk::Compressor<'static>> {
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
            raw: vec![0; RAW_BYTES],
            raw_len: 0,
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
        self.push_all(std::slice::from_ref(a))
    }

    /// Appends the records of `batch` in order, each as [`NativeWriter::push`]
    /// does; on a record it cannot write, the ones before it are kept.
    pub fn push_all(&mut self, batch: &[Access]) -> Result<()> {
        let mut rest = batch;
        while !rest.is_empty() {
            let (now, after) = rest.split_at(rest.len().min(BLOCK_RECORDS - self.n));
            self.encode(now)?;
            if self.n == BLOCK_RECORDS {
                self.flush_block()?;
            }
            rest = after;
        }
        Ok(())
    }

    /// Encodes `records`, which fit in the current block, with the previous record
    /// and the write position held in locals.
    #[inline]
    fn encode(&mut self, records: &[Access]) -> Result<()> {
        let (cores, tenants) = (self.flags & FLAG_CORE != 0, self.flags & FLAG_TENANT != 0);
        let (raw, pages) = (&mut self.raw[..], &mut self.pages);
        let (mut w, mut p) = (self.raw_len, self.prev);
        // The block's first record has no previous one whose page it could share.
        let mut same_page_possible = self.n > 0;
        for (k, a) in records.iter().enumerate() {
            if a.vaddr >= VA_LIMIT || a.size == 0 || (a.vaddr & (LINE_BYTES - 1)) + a.size as u64 > LINE_BYTES {
                (self.raw_len, self.prev, self.n) = (w, p, self.n + k);
                self.records += k as u64;
                bail!("record {}: cannot write address {:#x} size {} (below 2^57, 1–64 bytes within one line)", self.records, a.vaddr, a.size);
            }
            let core = if cores { a.core } else { 0 };
            let tenant = if tenants { a.tenant } else { 0 };
            let instrs_code = if a.instrs == p.instrs {
                0
            } else if a.instrs == 0 {
                1
            } else {
                2
            };
            let h = a.flags & (R_WRITE | R_DEPENDENT)
                | if a.size != p.size { R_SIZE } else { 0 }
                | instrs_code << R_INSTRS_SHIFT
                | if core != p.core { R_CORE } else { 0 }
                | if tenant != p.tenant { R_TENANT } else { 0 };
            let out = &mut raw[w..w + MAX_RECORD_BYTES];
            out[0] = h;
            let mut len = 1 + put_varint_at(&mut out[1..], zigzag(a.vaddr.wrapping_sub(p.vaddr) as i64));
            if h & R_SIZE != 0 {
                out[len] = a.size;
                len += 1;
            }
            if instrs_code == 2 {
                len += put_varint_at(&mut out[len..], a.instrs as u64);
            }
            if h & R_CORE != 0 {
                len += put_varint_at(&mut out[len..], core as u64);
            }
            if h & R_TENANT != 0 {
                len += put_varint_at(&mut out[len..], tenant as u64);
            }
            w += len;
            // A record in the page of the previous one adds no page.
            if !same_page_possible || (a.vaddr ^ p.vaddr) >> 12 != 0 || tenant != p.tenant {
                pages.add(&Access { tenant, ..*a });
            }
            same_page_possible = true;
            p = Prev { vaddr: a.vaddr, size: a.size, instrs: a.instrs, core, tenant };
        }
        (self.raw_len, self.prev, self.n) = (w, p, self.n + records.len());
        self.records += records.len() as u64;
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.n == 0 {
            return Ok(());
        }
        if let Some(b) = &mut self.beside {
            let next = b.spare.pop().unwrap_or_else(|| vec![0; RAW_BYTES]);
            let raw = std::mem::replace(&mut self.raw, next);
            let sent = b.to.as_ref().is_some_and(|to| to.send((raw, self.raw_len)).is_ok());
            if !sent {
                bail!("native writer: the compressing thread stopped");
            }
            b.in_flight.push_back(self.n);
            self.write_compressed(Beside::MAX_IN_FLIGHT - 1)?;
        } else {
            self.zbuf.clear();
            self.zbuf.reserve(zstd::zstd_safe::compress_bound(self.raw_len));
            self.comp.compress_to_buffer(&self.raw[..self.raw_len], &mut self.zbuf)?;
            Self::write_block(&mut self.out, &mut self.offset, self.n, self.raw_len, &self.zbuf)?;
        }
        self.n = 0;
        self.raw_len = 0;
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
