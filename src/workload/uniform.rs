//! `uniform`: every reference goes to a uniformly random aligned address of the
//! footprint. With no locality at all, it is the baseline that any tiering policy
//! can only place by chance: the fast tier's hit rate is its share of the footprint.

use super::rates::{independent, AccessModel, Phased};
use super::{stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};

/// Generator of uniformly random references.
#[derive(Clone, Debug)]
pub struct Uniform {
    emitter: Emitter,
    rng: Rng,
    base_vaddr: u64,
    /// Number of access-sized slots in the footprint.
    slots: u64,
    /// log2 of the access size.
    shift: u32,
    write_fraction: f64,
}

impl Uniform {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Uniform {
        let shift = cfg.access_bytes.trailing_zeros();
        Uniform {
            emitter: Emitter::new(cfg, core, tenant, cfg.access_bytes),
            rng: stream_rng(cfg, core, tenant),
            base_vaddr: cfg.base_vaddr,
            slots: cfg.footprint.bytes() >> shift,
            shift,
            write_fraction: cfg.write_fraction,
        }
    }
}

impl Source for Uniform {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let n = self.emitter.take(max);
        out.reserve(n);
        for _ in 0..n {
            let vaddr = self.base_vaddr + (self.rng.below(self.slots) << self.shift);
            let flags = if self.rng.chance(self.write_fraction) { WRITE } else { 0 };
            out.push(self.emitter.record(vaddr, flags));
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// Each reference is drawn independently: skipping draws nothing.
    fn skip(&mut self, n: u64) -> bool {
        self.emitter.skip(n);
        true
    }
}

/// The statement of `uniform` (module `rates`): every slot equally likely, so a
/// page's share of the references is its share of the footprint's bytes.
pub(super) fn model(cfg: &WorkloadConfig, cores: u64) -> Box<dyn AccessModel> {
    let bytes = cfg.footprint.bytes();
    let first = cfg.base_vaddr / PAGE_BYTES;
    let pages = bytes.div_ceil(PAGE_BYTES);
    let (refs, wf, instrs) = (cfg.refs, cfg.write_fraction, cfg.instrs as u64);
    Box::new(Phased::new("stated: uniform over the footprint".into(), vec![first..first + pages], 1, cores, move |_, out| {
        out.refs = refs;
        out.instrs = instrs * refs;
        out.pages = (0..pages).map(|i| independent(first + i, (bytes - i * PAGE_BYTES).min(PAGE_BYTES) as f64 / bytes as f64, wf, refs)).collect();
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, check_write_share, config, run};
    use super::*;

    #[test]
    fn is_deterministic() {
        check_determinism(&config("uniform"));
    }

    #[test]
    fn emits_exactly_refs_aligned_in_range_with_the_write_share() {
        for access_bytes in [1, 8, 64] {
            let cfg = WorkloadConfig { access_bytes, ..config("uniform") };
            let records = run(&cfg);
            check_common(&cfg, &records, access_bytes as u8);
            check_write_share(&records, 0.3);
            assert!(records.iter().all(|a| a.instrs == cfg.instrs && !a.is_dependent()));
        }
    }

    #[test]
    fn covers_the_footprint_evenly() {
        // 100 000 references over the 1024 pages of 4 MiB: about 98 per page, so a
        // fair generator leaves no page untouched (P ≈ 1024·e^-98) and puts no more
        // than twice the mean on any page (more than 9 standard deviations).
        let cfg = config("uniform");
        let mut per_page = vec![0u32; 1024];
        for a in run(&cfg) {
            per_page[((a.vaddr - cfg.base_vaddr) / 4096) as usize] += 1;
        }
        assert!(per_page.iter().all(|&c| c > 0 && c < 196), "{per_page:?}");
    }
}
