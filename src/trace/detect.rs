//! Format detection from the first decompressed bytes of a trace.
//!
//! Binary formats are told from text by NUL and other control bytes: no text format
//! ever contains them, and every ChampSim record has several zero bytes (unused
//! register slots and the high bytes of addresses). The native format starts with
//! its magic. Text formats are told apart by the shape of their first few
//! meaningful lines: the format that parses most of them wins, if it parses at least
//! half, the most specific first on a tie (lackey and Pin lines have fixed
//! punctuation; the Ramulator formats are bare numbers and letters).
//!
//! The same facts let a forced `--format` fail early with a clear message when a
//! binary file is read as text or the reverse.

use super::{lackey, native, pin, ramulator, Format};
use anyhow::{bail, Result};

/// Lines of a text head examined for detection.
const SAMPLE_LINES: usize = 16;

/// Whether `head` looks like binary data rather than text.
pub fn is_binary(head: &[u8]) -> bool {
    head.iter().any(|&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f)
}

/// A check of one line of a text format.
type LineCheck = fn(&[u8]) -> bool;

/// Returns the format of a trace starting with `head`, if it is recognised.
pub fn detect(head: &[u8]) -> Option<Format> {
    if head.starts_with(&native::MAGIC) {
        return Some(Format::Native);
    }
    if head.is_empty() {
        return None;
    }
    if is_binary(head) {
        return looks_like_champsim(head).then_some(Format::ChampSim);
    }
    let lines: Vec<&[u8]> = complete_lines(head).filter(|l| !l.is_empty()).take(SAMPLE_LINES).collect();
    if lines.is_empty() {
        return None;
    }
    let candidates: [(Format, LineCheck); 5] = [
        (Format::Lackey, lackey::line_is_valid),
        (Format::Pin, pin::line_is_valid),
        (Format::Ramulator2, |l| ramulator::line_is_valid(ramulator::Kind::LoadStore, l)),
        (Format::RamulatorDram, |l| ramulator::line_is_valid(ramulator::Kind::Dram, l)),
        (Format::RamulatorCpu, |l| ramulator::line_is_valid(ramulator::Kind::Cpu, l)),
    ];
    // The format that parses most sample lines wins (the earliest on a tie), if it
    // parses at least half of them: a malformed line near the top is then reported
    // by the reader with its line number instead of defeating detection.
    let scores = candidates.map(|(f, ok)| (f, lines.iter().filter(|l| ok(l)).count()));
    let best = scores.iter().fold(scores[0], |b, &c| if c.1 > b.1 { c } else { b });
    (best.1 > 0 && 2 * best.1 >= lines.len()).then_some(best.0)
}

/// The lines of `head` that end with a newline (a cut-off last line is left out),
/// without their line terminators.
fn complete_lines(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = head.iter().rposition(|&b| b == b'\n').map_or(head.len(), |p| p + 1);
    head[..end].split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// Whether whole 64-byte ChampSim records in `head` are plausible: the branch
/// flags are 0 or 1 and some instruction pointer is non-zero.
fn looks_like_champsim(head: &[u8]) -> bool {
    let records: Vec<&[u8]> = head.chunks_exact(64).collect();
    !records.is_empty()
        && records.iter().all(|r| r[8] <= 1 && r[9] <= 1)
        && records.iter().any(|r| r[..8].iter().any(|&b| b != 0))
}

/// Describes what `head` looks like, for messages.
pub fn describe(head: &[u8]) -> String {
    match detect(head) {
        Some(Format::Native) => "a tiersim native trace".into(),
        Some(Format::ChampSim) => "a ChampSim binary trace".into(),
        Some(f) => format!("a {f} text trace"),
        None if head.is_empty() => "empty".into(),
        None if is_binary(head) => "binary data".into(),
        None => "text in no known trace format".into(),
    }
}

/// The error for a trace whose format could not be detected.
pub fn undetected(name: &str, head: &[u8]) -> anyhow::Error {
    let known: Vec<&str> = Format::ALL.iter().map(|f| f.1).collect();
    let what = if head.is_empty() {
        "the file is empty".to_string()
    } else if is_binary(head) {
        "binary data in no known trace format".to_string()
    } else {
        let first = complete_lines(head).find(|l| !l.is_empty()).unwrap_or(head);
        format!("text in no known trace format; first line: {}", super::text::shown(first))
    };
    anyhow::anyhow!("{name}: cannot detect the trace format ({what}); give --format ({})", known.join(", "))
}

/// Fails when a forced format cannot be right: a text format on binary data, a
/// binary format on text, or a native trace without its magic.
pub fn check_forced(name: &str, format: Format, head: &[u8]) -> Result<()> {
    if head.is_empty() {
        return Ok(());
    }
    let binary = is_binary(head);
    if format.is_text() && binary {
        bail!("{name}: binary data ({}), not a {format} text trace", describe(head));
    }
    if format == Format::ChampSim && !binary {
        bail!("{name}: text ({}), not a ChampSim binary trace", describe(head));
    }
    if format == Format::Native && !head.starts_with(&native::MAGIC) {
        bail!("{name}: not a tiersim native trace (no magic; the file is {})", describe(head));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_text_format_is_recognised() {
        let cases: [(&str, Format); 7] = [
            ("==1== Lackey\nI  04000000,3\n L 1ffefff8a0,8\n", Format::Lackey),
            ("0x7f3c: R 0x7ffd10\n0x7f3c: W 0x7ffd18\n#eof\n", Format::Pin),
            ("LD 0x1000\nST 4096\n", Format::Ramulator2),
            ("0x12340 R\n0xabc W\n", Format::RamulatorDram),
            ("12340 R\n", Format::RamulatorDram),
            ("3 0x1000\n0 4096 8192\n", Format::RamulatorCpu),
            ("5 0x1000 W\n", Format::RamulatorCpu),
        ];
        for (text, f) in cases {
            assert_eq!(detect(text.as_bytes()), Some(f), "{text:?}");
        }
        assert_eq!(detect(b"hello world\n"), None);
    }

    #[test]
    fn binary_is_told_from_text() {
        let mut rec = vec![0u8; 128];
        rec[0] = 0x40;
        rec[64] = 0x44;
        assert_eq!(detect(&rec), Some(Format::ChampSim));
        assert!(check_forced("t", Format::Lackey, &rec).unwrap_err().to_string().contains("binary data"));
        assert!(check_forced("t", Format::ChampSim, b"LD 0x10\n").unwrap_err().to_string().contains("ramulator2 text trace"));
        assert!(check_forced("t", Format::Native, b"LD 0x10\n").is_err());
    }
}
