//! Opening a trace file or standard input, with transparent decompression.
//!
//! Compression is recognised by the stream's magic bytes, not by the file name, so
//! a renamed file still opens: gzip (`1f 8b`), xz (`fd 37 7a 58 5a 00`) and zstd
//! (`28 b5 2f fd`). Concatenated members (as `cat a.gz b.gz` makes) are read in
//! turn. All three decoders report a stream that ends early or fails its checksum
//! as an error; [`open`] adds the file name to it, so a truncated download is never
//! mistaken for a short trace.
//!
//! The first [`HEAD_BYTES`] of the decompressed stream are read ahead for format
//! detection and then handed back in front of the rest.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{self, Cursor, Read};

/// Bytes of decompressed content read ahead for format detection.
pub const HEAD_BYTES: usize = 4096;

/// An opened, decompressed input.
pub struct Input {
    /// The whole decompressed stream (the head included).
    pub reader: Box<dyn Read>,
    /// Its first bytes (fewer only when the stream is shorter).
    pub head: Vec<u8>,
    /// The name used in messages: the path, or `<stdin>`.
    pub name: String,
    /// The compression undone, if any.
    pub compression: Option<&'static str>,
}

/// Opens `path` (`-` for standard input) and undoes its compression.
pub fn open(path: &str) -> Result<Input> {
    let (raw, name): (Box<dyn Read>, String) = if path == "-" {
        (Box::new(io::stdin().lock()), "<stdin>".to_string())
    } else {
        let f = File::open(path).with_context(|| format!("{path}: cannot open"))?;
        (Box::new(f), path.to_string())
    };
    wrap(raw, name)
}

/// The magic bytes that start each compressed format, with its name.
const MAGICS: [(&[u8], &str); 3] = [(&[0x1f, 0x8b], "gzip"), (&[0xfd, b'7', b'z', b'X', b'Z', 0], "xz"), (&[0x28, 0xb5, 0x2f, 0xfd], "zstd")];

/// Undoes the compression of the stream `raw`, named `name` in messages.
pub fn wrap(raw: Box<dyn Read>, name: String) -> Result<Input> {
    let (magic, raw) = peek(raw, 6).with_context(|| format!("{name}: cannot read"))?;
    // A whole stream of two or more bytes that is a proper beginning of a magic is
    // a compressed file cut inside its header.
    if let Some((_, kind)) = MAGICS.iter().find(|(m, _)| magic.len() >= 2 && magic.len() < m.len() && m.starts_with(&magic)) {
        bail!("{name}: truncated {kind} stream: the file ends after {} bytes, inside the {kind} header", magic.len());
    }
    let (decoded, compression): (Box<dyn Read>, Option<&'static str>) = if magic.starts_with(MAGICS[0].0) {
        (Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::with_capacity(1 << 16, raw))), Some("gzip"))
    } else if magic.starts_with(MAGICS[1].0) {
        (Box::new(xz2::read::XzDecoder::new_multi_decoder(io::BufReader::with_capacity(1 << 16, raw))), Some("xz"))
    } else if magic.starts_with(MAGICS[2].0) {
        let d = zstd::stream::read::Decoder::new(raw).with_context(|| format!("{name}: cannot start zstd decompression"))?;
        (Box::new(d), Some("zstd"))
    } else {
        (raw, None)
    };
    let decoded: Box<dyn Read> = match compression {
        Some(kind) => Box::new(Named { inner: decoded, name: name.clone(), kind }),
        None => decoded,
    };
    // A decoder's errors already name the file and the compression.
    let (head, reader) = match compression {
        Some(_) => peek(decoded, HEAD_BYTES).map_err(anyhow::Error::new)?,
        None => peek(decoded, HEAD_BYTES).with_context(|| format!("{name}: cannot read"))?,
    };
    Ok(Input { reader, head, name, compression })
}

/// Reads up to `n` bytes from `r` (fewer only at the end of the stream) and returns
/// them together with a reader that yields them again followed by the rest.
fn peek(mut r: Box<dyn Read>, n: usize) -> io::Result<(Vec<u8>, Box<dyn Read>)> {
    let mut head = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    let again = Cursor::new(head.clone()).chain(r);
    Ok((head, Box::new(again)))
}

/// A decoder whose errors say which file and which compression failed.
struct Named {
    inner: Box<dyn Read>,
    name: String,
    kind: &'static str,
}

impl Read for Named {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            let what = if e.kind() == io::ErrorKind::UnexpectedEof { "truncated" } else { "corrupt" };
            io::Error::new(e.kind(), format!("{}: {what} {} stream: {e}", self.name, self.kind))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;
    use std::io::Write;

    fn temp(dir: &Scratch, name: &str, bytes: &[u8]) -> String {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }

    fn read_all(path: &str) -> io::Result<Vec<u8>> {
        let mut input = open(path).map_err(|e| io::Error::other(e.to_string()))?;
        let mut v = Vec::new();
        input.reader.read_to_end(&mut v)?;
        Ok(v)
    }

    fn payload() -> Vec<u8> {
        (0..200_000u32).flat_map(|i| format!("{} {}\n", i * 7, i % 13).into_bytes()).collect()
    }

    #[test]
    fn every_compression_round_trips_and_truncation_is_an_error() {
        let dir = Scratch::new("dec");
        let data = payload();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&data).unwrap();
        let xz = xz.finish().unwrap();
        let zst = zstd::encode_all(&data[..], 3).unwrap();
        for (name, bytes) in [("a.gz", gz), ("a.xz", xz), ("a.zst", zst)] {
            assert_eq!(read_all(&temp(&dir, name, &bytes)).unwrap(), data, "{name}");
            let cut = temp(&dir, &format!("cut-{name}"), &bytes[..bytes.len() * 2 / 3]);
            let err = read_all(&cut).expect_err(name).to_string();
            assert!(err.contains("truncated") || err.contains("corrupt"), "{name}: {err}");
        }
        assert_eq!(read_all(&temp(&dir, "plain", &data)).unwrap(), data);
    }
}
