//! `gups`: the HPC Challenge RandomAccess kernel (giga-updates per second). Each
//! update reads a uniformly random 8-byte word of the table and writes it back
//! XORed with a random value, `T[r mod n] ^= r`, so it becomes a load and a store
//! to the same address. The table is the whole footprint; `access_bytes` is
//! ignored, because the benchmark's words are 64-bit.
//!
//! The load follows the previous update's store after `instrs` instructions (the
//! random-number step and index arithmetic); the store follows its load after
//! [`XOR_INSTRS`] instruction, the XOR. `refs` counts loads and stores, so an odd
//! budget ends with a lone load.

use super::rates::{AccessModel, PageLoad, Phased, BURST_GAP};
use super::{stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};

/// Bytes per table word: RandomAccess updates 64-bit words.
const WORD_BYTES: u32 = 8;

/// Instructions between an update's load and its store: the XOR that computes the
/// new value.
pub const XOR_INSTRS: u32 = 1;

/// Generator of GUPS read–modify–write pairs.
#[derive(Clone, Debug)]
pub struct Gups {
    emitter: Emitter,
    rng: Rng,
    base_vaddr: u64,
    /// Number of 8-byte words in the table.
    words: u64,
    /// Address of the store still owed when the previous batch ended between the
    /// load and the store of one update.
    pending_store: Option<u64>,
}

impl Gups {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Gups {
        Gups {
            emitter: Emitter::new(cfg, core, tenant, WORD_BYTES),
            rng: stream_rng(cfg, core, tenant),
            base_vaddr: cfg.base_vaddr,
            words: cfg.footprint.bytes() / WORD_BYTES as u64,
            pending_store: None,
        }
    }

    #[inline]
    fn store(&self, vaddr: u64) -> Access {
        Access { instrs: XOR_INSTRS, ..self.emitter.record(vaddr, WRITE) }
    }
}

impl Source for Gups {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let mut n = self.emitter.take(max);
        out.reserve(n);
        if n > 0 {
            if let Some(vaddr) = self.pending_store.take() {
                out.push(self.store(vaddr));
                n -= 1;
            }
        }
        for _ in 0..n / 2 {
            let vaddr = self.base_vaddr + self.rng.below(self.words) * WORD_BYTES as u64;
            out.push(self.emitter.record(vaddr, 0));
            out.push(self.store(vaddr));
        }
        if n % 2 == 1 {
            let vaddr = self.base_vaddr + self.rng.below(self.words) * WORD_BYTES as u64;
            out.push(self.emitter.record(vaddr, 0));
            self.pending_store = Some(vaddr);
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// Updates are drawn independently: skipping draws nothing (an update cut in two
    /// by the skip loses its store).
    fn skip(&mut self, n: u64) -> bool {
        self.emitter.skip(n);
        self.pending_store = None;
        true
    }
}

/// The statement of `gups` (module `rates`): each update picks a word uniformly and
/// loads then stores it, one burst of two references; a page's share of the updates
/// is its share of the table's words. An odd reference count ends with a load.
pub(super) fn model(cfg: &WorkloadConfig, cores: u64) -> Box<dyn AccessModel> {
    let words = cfg.footprint.bytes() / WORD_BYTES as u64;
    let per_page = PAGE_BYTES / WORD_BYTES as u64;
    let first = cfg.base_vaddr / PAGE_BYTES;
    let pages = words.div_ceil(per_page);
    let (refs, instrs) = (cfg.refs, cfg.instrs as u64);
    let (loads, stores) = (refs.div_ceil(2), refs / 2);
    Box::new(Phased::new("stated: uniform read-modify-write updates".into(), vec![first..first + pages], 1, cores, move |_, out| {
        out.refs = refs;
        out.instrs = loads * instrs + stores * XOR_INSTRS as u64;
        out.pages = (0..pages)
            .map(|i| {
                let p = (words - i * per_page).min(per_page) as f64 / words as f64;
                // An update starts a burst unless one of the previous BURST_GAP / 2
                // updates went to the page.
                let bursts = loads as f64 * p * (1.0 - p).powf((BURST_GAP / 2) as f64);
                PageLoad { vpn: first + i, reads: (loads as f64 * p) as f32, writes: (stores as f64 * p) as f32, bursts: bursts as f32, write_bursts: (bursts * stores as f64 / loads as f64) as f32 }
            })
            .collect();
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, collect, config, run};
    use super::*;
    use crate::workload::build;

    #[test]
    fn is_deterministic() {
        check_determinism(&config("gups"));
    }

    #[test]
    fn emits_exactly_refs_of_eight_aligned_bytes() {
        // access_bytes is ignored: every word is 8 bytes.
        let cfg = WorkloadConfig { access_bytes: 64, ..config("gups") };
        check_common(&cfg, &run(&cfg), 8);
    }

    #[test]
    fn updates_are_read_write_pairs_at_one_address() {
        // `run` uses batches of 4093 records, an odd number, so many updates are
        // split between two batches and must still come out as intact pairs.
        let cfg = config("gups");
        let records = run(&cfg);
        for pair in records.chunks(2) {
            let (load, store) = (pair[0], pair[1]);
            assert!(!load.is_write() && store.is_write());
            assert_eq!(load.vaddr, store.vaddr);
            assert_eq!((load.instrs, store.instrs), (cfg.instrs, XOR_INSTRS));
        }
    }

    #[test]
    fn an_odd_budget_ends_with_a_lone_load() {
        let cfg = WorkloadConfig { refs: 7, ..config("gups") };
        let mut source = build(&cfg, 0, 0).expect("valid config");
        let records = collect(source.as_mut(), 2);
        assert_eq!(records.len(), 7);
        assert!(!records[6].is_write());
    }
}
