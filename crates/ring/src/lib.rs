//! The shared memory through which tiersim's QEMU plugin hands memory accesses to
//! `tiersim record`.
//!
//! `tiersim record` creates one anonymous shared mapping (a memfd), lays out a
//! [`Header`] and [`MAX_RINGS`] rings in it, and passes its descriptor to QEMU; the
//! plugin maps it too. Each guest thread (a QEMU vCPU in user mode) owns one ring:
//! it is the only producer of that ring, and tiersim's drain thread its only
//! consumer, so a ring needs no lock — the producer publishes how far it has
//! written (`head`), the consumer how far it has read (`tail`), each with release
//! stores that the other side reads with acquire loads.
//!
//! Layout (all offsets from the start of the mapping):
//!
//! ```text
//! 0                      Header (HEADER_BYTES)
//! HEADER_BYTES + r·S     ring r: Control (CONTROL_BYTES), then entries × 16 bytes
//!                        (S = CONTROL_BYTES + 16 · entries)
//! ```
//!
//! An entry is one load or store, two little-endian words (see [`Entry`]). The
//! producer publishes each entry as it writes it (a release store, a plain move on
//! x86); the consumer reads `head` once per chunk of entries and sleeps while every
//! ring is empty, so the cache line holding `head` moves between the cores once per
//! chunk, not once per entry. Every entry written is published, so nothing is
//! lost when a thread or the program ends. The pages of rings no thread uses are
//! never touched, so the mapping costs memory only for the rings in use.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// First word of the header.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TSIMRING");
/// Layout version; the plugin refuses a mapping of another version.
pub const VERSION: u32 = 1;
/// Rings in a mapping: the most guest threads that can run at once.
pub const MAX_RINGS: usize = 256;
/// Entries per ring (2 MiB of entries).
pub const RING_ENTRIES: usize = 1 << 17;
/// Bytes before the first ring.
pub const HEADER_BYTES: usize = 4096;
/// Bytes of a ring's control block.
pub const CONTROL_BYTES: usize = 256;

/// [`Header::status`]: the program is running.
pub const STATUS_RUNNING: u32 = 0;
/// [`Header::status`]: the plugin's exit callback ran: the program is exiting, by
/// `exit` or by a fatal signal (QEMU runs exit callbacks in both cases).
pub const STATUS_DONE: u32 = 1;
/// [`Header::status`]: a thread found no free ring ([`MAX_RINGS`] were in use).
pub const STATUS_TOO_MANY_THREADS: u32 = 2;

/// [`Control::state`]: no thread has used the ring.
pub const RING_UNUSED: u32 = 0;
/// [`Control::state`]: a running thread owns the ring.
pub const RING_LIVE: u32 = 1;
/// [`Control::state`]: the ring's thread has exited (a later thread may reuse it).
pub const RING_EXITED: u32 = 2;

/// The start of the mapping.
#[repr(C)]
pub struct Header {
    pub magic: u64,
    pub version: u32,
    /// Number of rings and entries per ring.
    pub rings: u32,
    pub entries: u32,
    /// One of the `STATUS_*` values.
    pub status: AtomicU32,
    /// Set to 1 by the plugin once it has mapped the region.
    pub attached: AtomicU32,
}

/// The control block of one ring: `head` and `tail` on separate cache lines.
#[repr(C)]
pub struct Control {
    /// Entries published by the producer (a running count, never wrapped).
    pub head: AtomicU64,
    /// One of the `RING_*` values.
    pub state: AtomicU32,
    _pad0: [u8; 116],
    /// Entries the consumer has read.
    pub tail: AtomicU64,
    _pad1: [u8; 120],
}

const _: () = assert!(std::mem::size_of::<Control>() == CONTROL_BYTES);
const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);

/// Bits 0–56 of an entry's first word: the virtual address.
const ADDR_MASK: u64 = (1 << 57) - 1;
/// Bits 57–59: log2 of the access size in bytes.
const SHIFT_POS: u32 = 57;
/// Bit 60: the access is a store.
const WRITE_BIT: u64 = 1 << 60;
/// Bit 61: the access is the first of an instruction's execution.
const NEW_INSN_BIT: u64 = 1 << 61;

/// One load or store as the plugin saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Guest virtual address (below 2^57).
    pub vaddr: u64,
    /// log2 of the size: 0 for one byte up to 3 for eight (QEMU 7.2's largest).
    pub size_shift: u8,
    pub write: bool,
    /// The first access of an execution of an instruction (later accesses of the
    /// same execution, such as the second half of a 16-byte SSE load, have it clear).
    pub new_insn: bool,
    /// Low 32 bits of the instruction's address.
    pub pc: u32,
    /// With `new_insn`: instructions the thread executed since the previous
    /// access's instruction, not counting either (saturating); otherwise 0.
    pub instrs: u32,
}

impl Entry {
    /// The entry's two words.
    #[inline]
    pub fn encode(&self) -> [u64; 2] {
        let w0 = (self.vaddr & ADDR_MASK)
            | ((self.size_shift as u64 & 7) << SHIFT_POS)
            | if self.write { WRITE_BIT } else { 0 }
            | if self.new_insn { NEW_INSN_BIT } else { 0 };
        [w0, self.pc as u64 | (self.instrs as u64) << 32]
    }

    /// The entry held in two words.
    #[inline]
    pub fn decode(w: [u64; 2]) -> Entry {
        Entry {
            vaddr: w[0] & ADDR_MASK,
            size_shift: ((w[0] >> SHIFT_POS) & 7) as u8,
            write: w[0] & WRITE_BIT != 0,
            new_insn: w[0] & NEW_INSN_BIT != 0,
            pc: w[1] as u32,
            instrs: (w[1] >> 32) as u32,
        }
    }
}

/// A mapped region of header and rings.
pub struct Region {
    base: NonNull<u8>,
    rings: usize,
    entries: usize,
}

// SAFETY: the region is plain shared memory; every field other threads (and the
// other process) write concurrently is an atomic, and ring entries are only read
// by the consumer after the producer published them (release/acquire on `head`),
// and only rewritten by the producer after the consumer released them (on `tail`).
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    /// Bytes of a mapping with `rings` rings of `entries` entries.
    pub const fn bytes(rings: usize, entries: usize) -> usize {
        HEADER_BYTES + rings * (CONTROL_BYTES + 16 * entries)
    }

    /// Lays out a fresh header over zeroed memory (the consumer does this before
    /// starting QEMU).
    ///
    /// # Safety
    /// `base` must point to `Region::bytes(rings, entries)` bytes of zeroed,
    /// page-aligned memory that stays mapped as long as the returned value lives.
    pub unsafe fn create(base: *mut u8, rings: usize, entries: usize) -> Region {
        assert!(entries.is_power_of_two() && rings <= u32::MAX as usize && entries <= u32::MAX as usize);
        let region = Region { base: NonNull::new(base).expect("a mapped region"), rings, entries };
        let h = base as *mut Header;
        // SAFETY: the caller guarantees the memory; the header fits in it.
        unsafe {
            (*h).magic = MAGIC;
            (*h).version = VERSION;
            (*h).rings = rings as u32;
            (*h).entries = entries as u32;
        }
        region
    }

    /// Checks the header of a region laid out by [`Region::create`] (the plugin
    /// does this after mapping it).
    ///
    /// # Safety
    /// `base` must point to `len` bytes of page-aligned memory that stays mapped as
    /// long as the returned value lives.
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Region, String> {
        if len < HEADER_BYTES {
            return Err(format!("region of {len} bytes is smaller than its header"));
        }
        // SAFETY: the header lies within the `len` bytes the caller guarantees.
        let h = unsafe { &*(base as *const Header) };
        if h.magic != MAGIC || h.version != VERSION {
            return Err(format!("not a version {VERSION} tiersim ring region"));
        }
        let (rings, entries) = (h.rings as usize, h.entries as usize);
        if !entries.is_power_of_two() || Region::bytes(rings, entries) > len {
            return Err(format!("{rings} rings of {entries} entries do not fit {len} bytes"));
        }
        Ok(Region { base: NonNull::new(base).ok_or("null region")?, rings, entries })
    }

    pub fn header(&self) -> &Header {
        // SAFETY: `create`/`attach` checked that the header lies in the mapping.
        unsafe { &*(self.base.as_ptr() as *const Header) }
    }

    /// Number of rings.
    pub fn rings(&self) -> usize {
        self.rings
    }

    fn ring_base(&self, r: usize) -> *mut u8 {
        assert!(r < self.rings, "ring {r} of {}", self.rings);
        // SAFETY: ring `r` lies within the mapping (checked by `create`/`attach`).
        unsafe { self.base.as_ptr().add(HEADER_BYTES + r * (CONTROL_BYTES + 16 * self.entries)) }
    }

    /// The control block of ring `r`.
    pub fn control(&self, r: usize) -> &Control {
        // SAFETY: the control block is at the start of the ring, which is in the
        // mapping, and 256-byte offsets from a page-aligned base keep it aligned.
        unsafe { &*(self.ring_base(r) as *const Control) }
    }

    fn entries_ptr(&self, r: usize) -> *mut [u64; 2] {
        // SAFETY: the entries follow the control block within the ring.
        unsafe { self.ring_base(r).add(CONTROL_BYTES) as *mut [u64; 2] }
    }

    /// The producer end of ring `r`, continuing where its previous owner stopped.
    pub fn producer(&self, r: usize) -> Producer<'_> {
        let ctl = self.control(r);
        let head = ctl.head.load(Ordering::Acquire);
        Producer { ctl, entries: self.entries_ptr(r), mask: self.entries as u64 - 1, head, cached_tail: ctl.tail.load(Ordering::Acquire) }
    }

    /// The consumer end of ring `r`.
    pub fn consumer(&self, r: usize) -> Consumer<'_> {
        let ctl = self.control(r);
        Consumer { ctl, entries: self.entries_ptr(r), mask: self.entries as u64 - 1, tail: ctl.tail.load(Ordering::Acquire) }
    }
}

/// The writing end of one ring, used by one thread at a time.
pub struct Producer<'a> {
    ctl: &'a Control,
    entries: *mut [u64; 2],
    mask: u64,
    head: u64,
    cached_tail: u64,
}

// SAFETY: a producer may be created on one thread (QEMU creates a new guest
// thread's vCPU on its parent) and then used by the thread that owns its ring;
// it is never used by two threads at once.
unsafe impl Send for Producer<'_> {}

impl Producer<'_> {
    /// Appends one entry, waiting while the ring is full.
    #[inline]
    pub fn push(&mut self, entry: [u64; 2]) {
        if self.head - self.cached_tail > self.mask {
            self.wait_for_space();
        }
        // SAFETY: the slot is within the ring, and the consumer has released it
        // (head − tail ≤ mask), so nobody reads it while it is written.
        unsafe { self.entries.add((self.head & self.mask) as usize).write(entry) };
        self.head += 1;
        self.ctl.head.store(self.head, Ordering::Release);
    }

    /// Sets the ring's state (one of the `RING_*` values).
    pub fn set_state(&self, state: u32) {
        self.ctl.state.store(state, Ordering::Release);
    }

    #[cold]
    fn wait_for_space(&mut self) {
        let mut spins = 0u32;
        loop {
            self.cached_tail = self.ctl.tail.load(Ordering::Acquire);
            if self.head - self.cached_tail <= self.mask {
                return;
            }
            if spins < 100 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

/// The reading end of one ring.
pub struct Consumer<'a> {
    ctl: &'a Control,
    entries: *const [u64; 2],
    mask: u64,
    tail: u64,
}

// SAFETY: a consumer only reads published slots and writes the atomic `tail`.
unsafe impl Send for Consumer<'_> {}

impl Consumer<'_> {
    /// The published entries not yet released, up to the end of the ring's memory
    /// (the rest, after the wrap, comes with the next call).
    pub fn chunk(&self) -> &[[u64; 2]] {
        let head = self.ctl.head.load(Ordering::Acquire);
        let start = (self.tail & self.mask) as usize;
        let n = ((head - self.tail) as usize).min(self.mask as usize + 1 - start);
        // SAFETY: slots [tail, head) were published with release stores of `head`
        // (acquired above) and are not rewritten before `release` moves `tail`.
        unsafe { std::slice::from_raw_parts(self.entries.add(start), n) }
    }

    /// Gives the first `n` entries of the last chunk back to the producer.
    pub fn release(&mut self, n: usize) {
        self.tail += n as u64;
        self.ctl.tail.store(self.tail, Ordering::Release);
    }

    /// The ring's state (one of the `RING_*` values).
    pub fn state(&self) -> u32 {
        self.ctl.state.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let e = Entry { vaddr: 0x7fff_1234_5678, size_shift: 3, write: true, new_insn: true, pc: 0xdead_beef, instrs: 4_000_000_000 };
        assert_eq!(Entry::decode(e.encode()), e);
        let e = Entry { vaddr: (1 << 57) - 1, size_shift: 0, write: false, new_insn: false, pc: 0, instrs: 0 };
        assert_eq!(Entry::decode(e.encode()), e);
    }

    /// A producer thread writes 1 M entries through a 64-entry ring (so it waits
    /// for space thousands of times) while this thread reads them: every entry
    /// arrives once, in order.
    #[test]
    fn a_small_ring_carries_every_entry_in_order() {
        let (rings, entries) = (2, 64);
        let len = Region::bytes(rings, entries);
        let mut mem = vec![0u64; len / 8 + 512];
        let base = ((mem.as_mut_ptr() as usize + 4095) & !4095) as *mut u8;
        // SAFETY: `mem` holds `len` zeroed bytes after the page-aligned `base` and
        // outlives the region (both threads end inside the scope).
        let region = unsafe { Region::create(base, rings, entries) };
        const N: u64 = 1_000_000;
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut p = region.producer(1);
                p.set_state(RING_LIVE);
                for i in 0..N {
                    p.push([i, !i]);
                }
                p.set_state(RING_EXITED);
            });
            let mut c = region.consumer(1);
            let mut next = 0u64;
            while next < N {
                let chunk = c.chunk();
                for w in chunk {
                    assert_eq!(*w, [next, !next]);
                    next += 1;
                }
                let n = chunk.len();
                c.release(n);
            }
        });
        assert_eq!(region.consumer(1).state(), RING_EXITED);
        assert_eq!(region.consumer(0).state(), RING_UNUSED);
    }
}
