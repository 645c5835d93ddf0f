//! What the text readers share: a line splitter over a large reusable buffer (no
//! allocation per line), the `FILE:LINE: message (text)` error, and fast number
//! parsers that reject overflow instead of wrapping.

use anyhow::{anyhow, Result};
use crate::machine::config::va_bits;
use std::io::{self, Read};

/// Size of the read buffer; also the longest line accepted (no trace format has
/// lines anywhere near this long, so a longer one means binary data).
const BUF_BYTES: usize = 1 << 20;

/// Splits a byte stream into lines without copying them.
pub struct LineReader {
    src: Box<dyn Read>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
}

impl LineReader {
    /// Splits `src` into lines.
    pub fn new(src: Box<dyn Read>) -> LineReader {
        LineReader { src, buf: vec![0; BUF_BYTES], pos: 0, end: 0, eof: false }
    }

    /// Returns the next line without its `\n` (and without a `\r` before it), or
    /// `None` at the end of the stream. A line longer than the buffer is an error.
    #[inline]
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                self.pos += i + 1;
                let line = &self.buf[start..start + i];
                return Ok(Some(line.strip_suffix(b"\r").unwrap_or(line)));
            }
            if self.eof {
                if self.pos == self.end {
                    return Ok(None);
                }
                let start = self.pos;
                self.pos = self.end;
                let line = &self.buf[start..self.end];
                return Ok(Some(line.strip_suffix(b"\r").unwrap_or(line)));
            }
            self.refill()?;
        }
    }

    /// Moves the unread tail to the front and reads more after it.
    fn refill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a line longer than {BUF_BYTES} bytes: binary data, not a text trace"),
            ));
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Position and policy of a text reader, for errors.
pub struct Lines {
    pub reader: LineReader,
    /// File name used in messages.
    pub name: String,
    /// Number of the last line returned (1-based).
    pub line_no: u64,
    /// Skip malformed lines instead of failing.
    pub skip: bool,
    /// Malformed lines skipped so far.
    pub skipped: u64,
    /// The levels of the run's page tables, whose reach every address must be within
    /// (`OpenOptions::page_table_levels`).
    pub levels: Option<u32>,
}

impl Lines {
    /// Lines of `src`, named `name` in messages.
    pub fn new(src: Box<dyn Read>, name: String, skip: bool) -> Lines {
        Lines { reader: LineReader::new(src), name, line_no: 0, skip, skipped: 0, levels: None }
    }

    /// The error for `addr` of `line`, beyond the run's page tables: a hard error even
    /// when skipping malformed lines, since the line is well formed.
    pub fn out_of_reach(&self, addr: u64, line: &[u8]) -> anyhow::Error {
        let levels = self.levels.unwrap_or(5);
        anyhow!(
            "{}:{}: address {addr:#x} is beyond the {}-bit virtual address space of {levels}-level page tables; rerun with --set machine.page_table.levels=5 ({})",
            self.name,
            self.line_no,
            va_bits(levels),
            shown(line)
        )
    }

    /// Returns the error for a failed read of the underlying stream.
    pub fn read_error(&self, e: io::Error) -> anyhow::Error {
        let text = e.to_string();
        if text.starts_with(&self.name) {
            anyhow!("{text}")
        } else {
            anyhow!("{}:{}: {text}", self.name, self.line_no + 1)
        }
    }

    /// Handles a malformed `line`: counts it when skipping, else returns the error.
    pub fn malformed(&mut self, msg: &str, line: &[u8]) -> Result<()> {
        if self.skip {
            self.skipped += 1;
            Ok(())
        } else {
            Err(anyhow!("{}:{}: {msg} ({})", self.name, self.line_no, shown(line)))
        }
    }
}

/// Whether `addr` is beyond the virtual address space of page tables of `levels`
/// levels ([`Lines::levels`]; a free function, so that a reader can ask while it
/// holds the line it read).
#[inline]
pub fn beyond_reach(levels: Option<u32>, addr: u64) -> bool {
    levels.is_some_and(|l| addr >> va_bits(l) != 0)
}

/// Shows `line` for a message: printable ASCII as is, other bytes escaped, at most
/// 80 characters.
pub fn shown(line: &[u8]) -> String {
    let mut s = String::new();
    for &b in line.iter().take(80) {
        if (0x20..0x7f).contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    if line.len() > 80 {
        s.push('…');
    }
    s
}

/// Parses hexadecimal digits (no prefix); `None` when empty, not hex, or over 64 bits.
#[inline]
pub fn hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = v << 4 | d as u64;
    }
    Some(v)
}

/// Parses decimal digits; `None` when empty, not decimal, or over 64 bits.
#[inline]
pub fn dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// Parses octal digits; `None` when empty, not octal, or over 64 bits.
fn oct(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        if !(b'0'..=b'7').contains(&c) {
            return None;
        }
        v = v.checked_mul(8)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// Strips a `0x` or `0X` prefix.
#[inline]
pub fn strip_0x(s: &[u8]) -> Option<&[u8]> {
    s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X"))
}

/// Parses a number as C's `strtoul(s, _, 0)` reads it: `0x` hexadecimal, a leading
/// `0` octal, otherwise decimal (the whole token must be a number).
pub fn c_number(s: &[u8]) -> Option<u64> {
    if let Some(h) = strip_0x(s) {
        hex(h)
    } else if s.len() > 1 && s[0] == b'0' {
        oct(&s[1..])
    } else {
        dec(s)
    }
}

/// Splits `line` into fields separated by runs of spaces or tabs.
#[inline]
pub fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b' ' || b == b'\t').filter(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_refills_and_the_last_line_needs_no_newline() {
        let text = "a\r\nbb\n\nccc".to_string();
        let mut r = LineReader::new(Box::new(io::Cursor::new(text.into_bytes())));
        let mut got = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            got.push(String::from_utf8(l.to_vec()).unwrap());
        }
        assert_eq!(got, ["a", "bb", "", "ccc"]);
    }

    #[test]
    fn numbers_parse_like_their_tools() {
        assert_eq!(hex(b"7ffd10"), Some(0x7ffd10));
        assert_eq!(hex(b"10000000000000000"), None);
        assert_eq!(dec(b"18446744073709551616"), None);
        assert_eq!(c_number(b"0x10"), Some(16));
        assert_eq!(c_number(b"010"), Some(8));
        assert_eq!(c_number(b"0"), Some(0));
        assert_eq!(c_number(b"10"), Some(10));
        assert_eq!(c_number(b"09"), None);
        assert_eq!(shown(b"a\x00b"), "a\\x00b");
    }
}
