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

/// The checked-in `gzip.tsim` was written by the writer as it was before records
/// were encoded a batch at a time: read and written again in batches, it comes
/// back byte for byte, pages in the trailer included.
#[test]
fn a_checked_in_trace_is_written_again_byte_for_byte() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gzip.tsim");
    let old = std::fs::read(path).unwrap();
    let mut r = NativeReader::new(Box::new(io::Cursor::new(old.clone())), "gzip.tsim".into()).unwrap();
    let (cores, tenants, meta) = (r.record_cores(), r.record_tenants(), r.has_meta());
    let mut records = Vec::new();
    loop {
        let at = records.len();
        r.fill(&mut records, at + 10_000).unwrap();
        if records.len() == at {
            break;
        }
    }
    assert_eq!(records.len(), 151_349);
    let mut again = Vec::new();
    let mut w = if meta { NativeWriter::with_meta(&mut again, cores, tenants) } else { NativeWriter::new(&mut again, cores, tenants) }.unwrap();
    if let Some(m) = r.meta() {
        w.set_meta(m.to_vec());
    }
    for piece in records.chunks(7_777) {
        w.push_all(piece).unwrap();
    }
    w.finish().unwrap();
    assert!(again == old, "the rewritten trace differs from tests/data/gzip.tsim");
}

/// Batches across blocks write what records pushed one at a time write, and the
/// trailer's pages are those of every record, though a record in the page of the
/// one before it does not count its page again.
#[test]
fn batches_write_what_single_records_write() {
    let records = sample(3 * BLOCK_RECORDS + 123);
    for (cores, tenants) in [(false, false), (true, true)] {
        let one = encode(&records, cores, tenants);
        let mut buf = Vec::new();
        let mut w = NativeWriter::new(&mut buf, cores, tenants).unwrap();
        for piece in records.chunks(5_000) {
            w.push_all(piece).unwrap();
        }
        let written = w.finish().unwrap();
        assert!(buf == one, "cores {cores}, tenants {tenants}");
        let mut pages = PageSet::new();
        for a in &records {
            pages.add(&Access { tenant: if tenants { a.tenant } else { 0 }, ..*a });
        }
        assert_eq!(written.tenants, pages.per_tenant());
    }
}

/// A record that cannot be written in the middle of a batch: the ones before it
/// are kept, and the error names it.
#[test]
fn a_bad_record_in_a_batch_keeps_the_ones_before_it() {
    let mut records = sample(10);
    records[6].size = 0;
    let mut buf = Vec::new();
    let mut w = NativeWriter::new(&mut buf, true, true).unwrap();
    let err = w.push_all(&records).unwrap_err().to_string();
    assert!(err.starts_with("record 6: cannot write address"), "{err}");
    assert_eq!(w.finish().unwrap().records, 6);
    assert_eq!(decode(buf, 100).unwrap(), records[..6]);
}
