//! Access records and the sources that produce them: readers of real traces in
//! every common format, tiersim's own native format, and the analysis behind
//! `tiersim inspect`.
//!
//! # Reading a trace
//! [`open`] is the one entry point. It opens a file (or `-` for standard input),
//! undoes `.gz`, `.xz` or `.zst` compression recognised by the stream's magic bytes
//! (never by the file name), looks at the first decompressed bytes to detect the
//! format unless one is forced, and returns a concrete reader behind one
//! `Box<dyn Source>`: the engine pays one indirect call per batch of accesses,
//! never per record. Every reader streams in constant memory (a read buffer and,
//! for lackey, the state of at most one `rep` instruction).
//!
//! # Bad input
//! A malformed text line is an error `FILE:LINE: message (offending text)`; with
//! `skip_malformed` such lines are counted ([`Source::malformed_skipped`]) and
//! skipped. A truncated or corrupt compressed stream is an error, never a quiet
//! early end. Addresses at or above 2^57 (beyond 5-level paging) are rejected, and
//! so is a text trace's address beyond the run's page tables
//! ([`OpenOptions::page_table_levels`]), naming its line.
//!
//! # Recording
//! [`record`] runs a program under QEMU with tiersim's plugin or under valgrind
//! lackey and writes the native format as it runs; [`threads`] replays each thread
//! of such a trace on a core of its own, and [`window`] keeps windows of a long
//! run (`docs/recording.md`).
//!
//! The formats and their sources are documented in `docs/trace-formats.md`; the
//! native format in `docs/trace-format.md`.

pub mod access;
pub mod champsim;
pub mod decompress;
pub mod detect;
pub mod footprint;
pub mod inspect;
pub mod lackey;
pub mod meta;
pub mod native;
pub mod pin;
pub mod ramulator;
pub mod record;
pub mod runs;
pub mod text;
pub mod threads;
pub mod window;

pub use access::{Access, Source, DEPENDENT, WRITE};

use anyhow::{bail, Result};
use std::fmt;

/// One past the highest virtual address of 5-level paging (57 bits).
pub const VA_LIMIT: u64 = 1 << 57;

/// Bytes in a cache line: accesses never cross one.
pub const LINE_BYTES: u64 = 64;

/// A trace format tiersim reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// tiersim's own binary format (`docs/trace-format.md`).
    Native,
    /// Valgrind lackey, `--tool=lackey --trace-mem=yes`.
    Lackey,
    /// Intel Pin's `pinatrace` example tool.
    Pin,
    /// ChampSim binary traces of 64-byte `input_instr` records.
    ChampSim,
    /// Ramulator 1 CPU trace: `<bubbles> <addr> [<writeback addr>]`.
    RamulatorCpu,
    /// Ramulator 1 DRAM trace: `<hex addr> <R|W>`.
    RamulatorDram,
    /// Ramulator 2 `LoadStoreTrace`: `LD <addr>` / `ST <addr>`.
    Ramulator2,
}

impl Format {
    /// Every format with its `--format` name.
    pub const ALL: [(Format, &'static str); 7] = [
        (Format::Native, "native"),
        (Format::Lackey, "lackey"),
        (Format::Pin, "pin"),
        (Format::ChampSim, "champsim"),
        (Format::RamulatorCpu, "ramulator-cpu"),
        (Format::RamulatorDram, "ramulator-dram"),
        (Format::Ramulator2, "ramulator2"),
    ];

    /// The format's `--format` name.
    pub fn name(self) -> &'static str {
        Format::ALL.iter().find(|f| f.0 == self).map_or("?", |f| f.1)
    }

    /// Parses a `--format` name.
    pub fn parse(name: &str) -> Result<Format> {
        match Format::ALL.iter().find(|f| f.1 == name) {
            Some(f) => Ok(f.0),
            None => {
                let known: Vec<&str> = Format::ALL.iter().map(|f| f.1).collect();
                bail!("--format: unknown trace format `{name}` (known: {})", known.join(", "))
            }
        }
    }

    /// Whether the format is line-oriented text (otherwise binary).
    pub fn is_text(self) -> bool {
        !matches!(self, Format::Native | Format::ChampSim)
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to open a trace.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The format, or `None` to detect it from the content.
    pub format: Option<Format>,
    /// Skip malformed text lines (counting them) instead of failing.
    pub skip_malformed: bool,
    /// Only the records of this core (one thread of a trace recorded with threads
    /// as cores); `None` for all of them.
    pub thread: Option<u16>,
    /// The levels of the run's page tables: a text trace's address beyond their
    /// virtual address space is refused naming its file and line, even when skipping
    /// malformed lines (the line is well formed; the machine cannot map it). `None`
    /// allows the 57 bits of 5-level paging. The engine checks binary traces' records
    /// itself, naming the record.
    pub page_table_levels: Option<u32>,
}

/// An opened trace: its reader and what was learnt while opening it.
pub struct Opened {
    /// The reader.
    pub source: Box<dyn Source>,
    /// The format, detected or forced.
    pub format: Format,
    /// The compression undone (`gzip`, `xz`, `zstd`), if any.
    pub compression: Option<&'static str>,
    /// Whether records carry their own tenant (native traces written with the
    /// per-record tenant field); otherwise every record is tenant 0.
    pub record_tenants: bool,
    /// Whether records carry their own core (native traces with the core field).
    pub record_cores: bool,
    /// What the user should know about the trace (a native trace in an older
    /// version), to print as notes.
    pub notes: Vec<String>,
    /// Whether the trace ends with a metadata block (recorded native traces), which
    /// [`Source::meta`] gives once the reader has passed it.
    pub meta: bool,
}

/// Opens the trace at `path` (`-` is standard input) as a source of accesses.
pub fn open(path: &str, opts: &OpenOptions) -> Result<Opened> {
    open_input(decompress::open(path)?, opts)
}

/// Opens the trace in the byte stream `raw` (named `name` in messages).
pub fn open_reader(raw: Box<dyn std::io::Read>, name: &str, opts: &OpenOptions) -> Result<Opened> {
    open_input(decompress::wrap(raw, name.to_string())?, opts)
}

fn open_input(input: decompress::Input, opts: &OpenOptions) -> Result<Opened> {
    let detected = detect::detect(&input.head);
    let format = match opts.format {
        None => detected.ok_or_else(|| detect::undetected(&input.name, &input.head))?,
        Some(f) => {
            detect::check_forced(&input.name, f, &input.head)?;
            f
        }
    };
    let name = input.name.clone();
    let label = input.name.clone();
    let compression = input.compression;
    let skip = opts.skip_malformed;
    let opened = match format {
        Format::Native => {
            let r = native::NativeReader::new(input.reader, name)?;
            let (record_tenants, record_cores, meta) =
                (r.record_tenants(), r.record_cores(), r.has_meta());
            let notes = r.note().into_iter().collect();
            let source = threads::only(Box::new(r), &label, record_cores, opts.thread)?;
            return Ok(Opened {
                source,
                format,
                compression,
                record_tenants,
                record_cores,
                notes,
                meta,
            });
        }
        Format::Lackey => Box::new(lackey::LackeyReader::new(input.reader, name, skip).reach(opts.page_table_levels)) as Box<dyn Source>,
        Format::Pin => Box::new(pin::PinReader::new(input.reader, name, skip).reach(opts.page_table_levels)),
        Format::ChampSim => Box::new(champsim::ChampSimReader::new(input.reader, name)),
        Format::RamulatorCpu => Box::new(ramulator::RamulatorReader::new(input.reader, name, skip, ramulator::Kind::Cpu).reach(opts.page_table_levels)),
        Format::RamulatorDram => Box::new(ramulator::RamulatorReader::new(input.reader, name, skip, ramulator::Kind::Dram).reach(opts.page_table_levels)),
        Format::Ramulator2 => Box::new(ramulator::RamulatorReader::new(input.reader, name, skip, ramulator::Kind::LoadStore).reach(opts.page_table_levels)),
    };
    let opened = threads::only(opened, &label, false, opts.thread)?;
    Ok(Opened {
        source: opened,
        format,
        compression,
        record_tenants: false,
        record_cores: false,
        notes: Vec::new(),
        meta: false,
    })
}

/// A source that ends after the first `left` records of another (`--refs N` on a
/// trace).
struct Take {
    inner: Box<dyn Source>,
    left: u64,
}

impl Source for Take {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<()> {
        if self.left > 0 {
            self.inner.fill(out, max.min(self.left.try_into().unwrap_or(usize::MAX)))?;
            self.left -= out.len() as u64;
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint().map(|n| n.min(self.left))
    }

    fn malformed_skipped(&self) -> u64 {
        self.inner.malformed_skipped()
    }

    fn meta(&self) -> Option<&[u8]> {
        self.inner.meta()
    }
}

/// `source` cut after its first `limit` records (unchanged for `None`).
pub fn take(source: Box<dyn Source>, limit: Option<u64>) -> Box<dyn Source> {
    match limit {
        Some(left) => Box::new(Take { inner: source, left }),
        None => source,
    }
}

/// Returns `size` bytes at `addr` cut into one access per cache line touched, each
/// a copy of `template` with its address and size filled in; `instrs` goes to the
/// first piece only.
#[inline]
pub(crate) fn push_split(out: &mut Vec<Access>, template: Access, addr: u64, size: u64) {
    let mut a = addr;
    let end = addr + size;
    let mut first = true;
    while a < end {
        let line_end = (a | (LINE_BYTES - 1)) + 1;
        let piece = line_end.min(end) - a;
        let instrs = if first { template.instrs } else { 0 };
        out.push(Access { vaddr: a, size: piece as u8, instrs, ..template });
        first = false;
        a += piece;
    }
}

/// Returns the bytes an access of nominal `size` at `addr` covers when it may not
/// cross a cache line: `size`, or what is left of the line.
#[inline]
pub(crate) fn clip_to_line(addr: u64, size: u64) -> u8 {
    size.min(LINE_BYTES - (addr & (LINE_BYTES - 1))) as u8
}

/// Moves the records beyond `max` into `spill`, to be handed out first by the next
/// call (readers that may emit several records per input line overshoot a little).
#[inline]
pub(crate) fn keep_at_most(out: &mut Vec<Access>, max: usize, spill: &mut Vec<Access>) {
    if out.len() > max {
        spill.extend(out.drain(max..));
    }
}

/// Moves up to `max` spilled records into `out` (in order).
#[inline]
pub(crate) fn take_spill(out: &mut Vec<Access>, max: usize, spill: &mut Vec<Access>) {
    if !spill.is_empty() {
        let n = spill.len().min(max);
        out.extend(spill.drain(..n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Drains a source; any error ends it.
    fn drain(o: &mut Opened) -> Result<usize> {
        let mut n = 0;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            o.source.fill(&mut buf, 512)?;
            if buf.is_empty() {
                return Ok(n);
            }
            for a in &buf {
                assert!(a.vaddr < VA_LIMIT && a.size >= 1 && (a.vaddr % LINE_BYTES) + a.size as u64 <= LINE_BYTES, "{a:?}");
            }
            n += buf.len();
        }
    }

    fn read_bytes(bytes: &[u8], format: Option<Format>) {
        let opts = OpenOptions { format, ..OpenOptions::default() };
        if let Ok(mut o) = open_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), "p", &opts) {
            let _ = drain(&mut o);
        }
        let skip = OpenOptions { format, skip_malformed: true, ..OpenOptions::default() };
        if let Ok(mut o) = open_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), "p", &skip) {
            let _ = drain(&mut o);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Arbitrary bytes give every reader an error or valid records, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            read_bytes(&bytes, None);
            for (f, _) in Format::ALL {
                read_bytes(&bytes, Some(f));
            }
        }

        /// Arbitrary lines of trace-like text (valid-looking tokens in any order) too.
        #[test]
        fn arbitrary_trace_like_text_never_panics(lines in proptest::collection::vec(
            proptest::string::string_regex("(I  | L | S | M |LD |ST |0x[0-9a-f]{1,17}: [RW] |[0-9]{1,20} |==1== )?[0-9a-fx]{0,18}(,[0-9]{1,4})?( [RW0-9x]{1,6})?").unwrap(), 0..40)) {
            let text = lines.join("\n");
            for (f, _) in Format::ALL {
                read_bytes(text.as_bytes(), Some(f));
            }
            read_bytes(text.as_bytes(), None);
        }

        /// Native traces with random bytes flipped are read or rejected, never a panic.
        #[test]
        fn corrupted_native_traces_never_panic(flips in proptest::collection::vec((0usize..4000, any::<u8>()), 1..6)) {
            let mut bytes = Vec::new();
            let mut w2 = native::NativeWriter::new(&mut bytes, true, true).unwrap();
            for i in 0..3000u64 {
                w2.push(&Access { vaddr: 0x7f00_0000_0000 + (i * 72) % (1 << 20), instrs: (i % 7) as u32, core: (i % 3) as u16, tenant: (i % 2) as u16, size: 8, flags: (i % 3) as u8 & 1 }).unwrap();
            }
            w2.finish().unwrap();
            for (at, b) in flips {
                let i = at % bytes.len();
                bytes[i] ^= b | 1;
            }
            read_bytes(&bytes, None);
            read_bytes(&bytes, Some(Format::Native));
        }
    }
}
