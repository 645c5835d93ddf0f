//! The memory-reference record every trace reader and workload generator produces.
//!
//! Records are small plain values, produced in batches (`Vec<Access>` refilled in
//! place) so that the engine's per-reference loop never allocates or dispatches
//! dynamically per record.

/// The access is a store (otherwise a load).
pub const WRITE: u8 = 1;
/// The access depends on the previous one of the same core (pointer chasing): its
/// memory latency cannot overlap with other misses, so the engine does not divide
/// its stall by the core's memory-level parallelism.
pub const DEPENDENT: u8 = 2;

/// One memory reference issued by one core on behalf of one tenant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Virtual address (guest-virtual for VM tenants).
    pub vaddr: u64,
    /// Instructions the core retired since its previous access (not counting this one).
    pub instrs: u32,
    /// Core that issues the access.
    pub core: u16,
    /// Tenant (process or VM) whose address space `vaddr` belongs to.
    pub tenant: u16,
    /// Bytes accessed (1–64); accesses never cross a 64-byte line.
    pub size: u8,
    /// Bit set of [`WRITE`] and [`DEPENDENT`].
    pub flags: u8,
}

impl Access {
    /// A load of `size` bytes at `vaddr` after `instrs` non-memory instructions.
    #[inline]
    pub fn read(vaddr: u64, size: u8, instrs: u32) -> Access {
        Access { vaddr, instrs, core: 0, tenant: 0, size, flags: 0 }
    }

    /// A store of `size` bytes at `vaddr` after `instrs` non-memory instructions.
    #[inline]
    pub fn write(vaddr: u64, size: u8, instrs: u32) -> Access {
        Access { vaddr, instrs, core: 0, tenant: 0, size, flags: WRITE }
    }

    #[inline]
    pub fn is_write(&self) -> bool {
        self.flags & WRITE != 0
    }

    #[inline]
    pub fn is_dependent(&self) -> bool {
        self.flags & DEPENDENT != 0
    }
}

/// A producer of accesses for one core: a workload generator or a trace reader.
///
/// The engine calls [`Source::fill`] once per batch, so a `Box<dyn Source>` costs one
/// indirect call per few thousand references.
pub trait Source {
    /// Appends at most `max` accesses to `out` (which the caller has cleared).
    /// Appending nothing means the source is exhausted.
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()>;

    /// Total accesses this source will produce, when known in advance (for progress).
    fn len_hint(&self) -> Option<u64> {
        None
    }

    /// Passes over the next `n` accesses without producing them, when the source can
    /// do so in far less time than producing them (a generator whose next access does
    /// not depend on the ones before it); returns false, having done nothing, when it
    /// cannot. Epochs mode positions a source before each detailed window with it.
    fn skip(&mut self, _n: u64) -> bool {
        false
    }

    /// Malformed input lines skipped so far (trace readers opened with
    /// `skip_malformed`); generators never skip anything.
    fn malformed_skipped(&self) -> u64 {
        0
    }

    /// The metadata block of a recorded native trace, once the reader has passed it
    /// (it comes just before the end); `None` for every other source.
    fn meta(&self) -> Option<&[u8]> {
        None
    }
}
