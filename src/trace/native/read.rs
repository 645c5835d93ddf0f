//! The streaming reader of the native format ([`NativeReader`]) and the trailer's
//! reader ([`read_trailer`]), which finds a trace's facts without a pass over it.

use super::*;


/// Reads exactly `buf.len()` bytes; `Ok(false)` if the stream ends before the
/// first byte, an error if it ends part way.
pub(super) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<bool> {
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

/// Checks the header `h` of `name`, whose magic matched: its version, its checksum
/// (version 2) or reserved bytes (version 1) and its flags. Returns (version, flags).
pub(super) fn parse_header(h: &[u8; 16], name: &str) -> Result<(u16, u16)> {
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
pub(super) fn legacy_note(name: &str) -> String {
    format!("{name}: native trace version 1, whose header and trailer carry no checksums; `tiersim convert {name} NEW.tsim` rewrites it as version {VERSION}")
}

/// Bytes of the fixed tail after the per-tenant pages: offset, CRC-32 (from version
/// 2), end magic.
pub(super) fn tail_len(version: u16) -> usize {
    if version >= 2 {
        20
    } else {
        16
    }
}

/// The longest possible trailer: tag, totals, one entry per possible tenant, tail.
pub(super) const MAX_TRAILER: usize = 13 + 18 * (u16::MAX as usize + 1) + 20;

/// Streaming reader of a native trace.
pub struct NativeReader {
    pub(super) src: Box<dyn Read>,
    pub(super) name: String,
    pub(super) version: u16,
    pub(super) flags: u16,
    /// Bytes of the stream consumed so far (where the next block or the trailer starts).
    pub(super) consumed: u64,
    pub(super) zbuf: Vec<u8>,
    pub(super) raw: Vec<u8>,
    /// Read position in `raw` and records left in the current block.
    pub(super) pos: usize,
    pub(super) left: usize,
    pub(super) prev: Prev,
    pub(super) blocks: u64,
    pub(super) records: u64,
    pub(super) done: bool,
    pub(super) dec: zstd::bulk::Decompressor<'static>,
    pub(super) meta: Option<Vec<u8>>,
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
pub(super) fn varint_at(r: &[u8; MAX_RECORD_BYTES], j: &mut usize, max_len: usize) -> Option<u64> {
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
pub(super) fn decode_fast(raw: &[u8], mut pos: usize, mut p: Prev, fields: u8, n: usize, out: &mut Vec<Access>) -> (usize, Prev, usize) {
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
pub(super) struct Trailer {
    pub(super) records: u64,
    pub(super) tenants: Vec<TenantPages>,
}

/// Parses the trailer `t` of a trace of `version`: from its `E` tag, which is at byte
/// `at` of the file, to the end of the file. The error says what is wrong.
pub(super) fn parse_trailer(t: &[u8], version: u16, at: u64) -> std::result::Result<Trailer, &'static str> {
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
pub(super) fn meta_block(b: &[u8], at: u64) -> std::result::Result<&[u8], &'static str> {
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
pub(super) fn meta_before(f: &mut File, end: u64, path: &str) -> Result<Vec<u8>> {
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
