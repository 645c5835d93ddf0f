//! `zipf`: references to 4 KiB pages drawn from a Zipf distribution, the classic
//! model of skewed popularity (key-value stores, web caches): the page of rank `r`
//! among `N` gets references in proportion to `1 / r^alpha`.
//!
//! Ranks are sampled in O(1) time and memory by rejection-inversion (W. Hörmann and
//! G. Derflinger, "Rejection-inversion to generate variates from monotone discrete
//! distributions", ACM TOMACS 6(3), 1996), described at [`RankSampler`]. Ranks are
//! then mapped to pages through a keyed [`Permutation`], so the hot pages are
//! scattered over the footprint as a real heap's would be, rather than packed at its
//! start, where a single huge page or a single region would capture them. Within the
//! page, the offset is uniform. Only whole pages are used: a partial page at the end
//! of the footprint is never touched.

use super::permute::Permutation;
use super::rates::{independent, AccessModel, Phased};
use super::{layout_rng, stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};

/// Generator of Zipf-distributed page references.
#[derive(Clone, Debug)]
pub struct Zipf {
    emitter: Emitter,
    rng: Rng,
    ranks: RankSampler,
    /// Maps rank − 1 to a page number.
    pages: Permutation,
    base_vaddr: u64,
    /// Number of access-sized slots in a page.
    page_slots: u64,
    /// log2 of the access size.
    shift: u32,
    write_fraction: f64,
}

impl Zipf {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Zipf {
        let pages = cfg.footprint.bytes() / PAGE_BYTES;
        let shift = cfg.access_bytes.trailing_zeros();
        Zipf {
            emitter: Emitter::new(cfg, core, tenant, cfg.access_bytes),
            rng: stream_rng(cfg, core, tenant),
            ranks: RankSampler::new(pages, cfg.zipf.alpha),
            pages: Permutation::new(pages, layout_rng(cfg, tenant).next_u64()),
            base_vaddr: cfg.base_vaddr,
            page_slots: PAGE_BYTES >> shift,
            shift,
            write_fraction: cfg.write_fraction,
        }
    }
}

/// Ranks drawn per round of [`Zipf::fill`]. Drawing a chunk of ranks first and
/// mapping them to pages afterwards gives each loop a shorter body, whose
/// iterations the processor overlaps better than those of one long dependency
/// chain: about 40 % faster than one loop doing both.
const CHUNK: usize = 64;

impl Source for Zipf {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let n = self.emitter.take(max);
        out.reserve(n);
        let mut ranks = [0u64; CHUNK];
        let mut left = n;
        while left > 0 {
            let chunk = left.min(CHUNK);
            left -= chunk;
            for rank in &mut ranks[..chunk] {
                *rank = self.ranks.sample(&mut self.rng);
            }
            for &rank in &ranks[..chunk] {
                let page = self.pages.apply(rank - 1);
                let offset = self.rng.below(self.page_slots) << self.shift;
                let vaddr = self.base_vaddr + page * PAGE_BYTES + offset;
                let flags = if self.rng.chance(self.write_fraction) { WRITE } else { 0 };
                out.push(self.emitter.record(vaddr, flags));
            }
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

/// Samples ranks `1..=n` with `P(k) ∝ h(k) = k^-alpha` by rejection-inversion.
///
/// Let `H` be an antiderivative of `h`: `H(x) = (x^(1-alpha) - 1) / (1 - alpha)`, or
/// `ln x` when `alpha = 1`. Because `h` is decreasing and convex, the area under `h`
/// over `[k - 1/2, k + 1/2]` is at least `h(k)`. The sampler draws `u` uniformly from
/// `[H(3/2) - h(1), H(n + 1/2)]`, sets `x = H⁻¹(u)` and `k = round(x)`, and accepts `k`
/// when `u ≥ H(k + 1/2) - h(k)`: the accepted part of each rank's interval of `u` has
/// length exactly `h(k)`, so accepted ranks follow the Zipf law. The first interval
/// starts at `H(3/2) - h(1)`, so rank 1 is always accepted, and the rejection rate
/// stays small for every `alpha` and `n` (below 1 % for 0.5 ≤ alpha ≤ 1.5). Most
/// draws are accepted without evaluating `H`, by the paper's squeeze: `k - x ≤ s`
/// with `s = 2 - H⁻¹(H(5/2) - h(2))`.
///
/// `H` and `H⁻¹` are evaluated by a [`Density`].
#[derive(Clone, Debug)]
pub(super) struct RankSampler {
    n: u64,
    density: Density,
    /// `H(3/2) - h(1)`: the low end of the range of `u`.
    u_low: f64,
    /// `H(n + 1/2)`: the high end of the range of `u`.
    u_high: f64,
    /// The squeeze constant `s`.
    squeeze: f64,
}

impl RankSampler {
    /// Creates a sampler of ranks `1..=n` (`n ≥ 1`) with exponent `alpha > 0`.
    pub(super) fn new(n: u64, alpha: f64) -> RankSampler {
        let density = Density::new(alpha);
        let u_low = density.big_h(1.5) - 1.0;
        RankSampler {
            n,
            u_low,
            u_high: density.big_h(n as f64 + 0.5),
            squeeze: 2.0 - density.big_h_inv(density.big_h(2.5) - density.h(2.0)),
            density,
        }
    }

    /// Returns a rank in `1..=n`.
    #[inline]
    pub(super) fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.u_high + rng.unit() * (self.u_low - self.u_high);
            if let Some(k) = self.rank(u) {
                return k;
            }
        }
    }

    /// Returns the rank that `u` stands for, or `None` if the draw is rejected.
    #[inline]
    fn rank(&self, u: f64) -> Option<u64> {
        let x = self.density.big_h_inv(u);
        // Rounding `x`; the float-to-int cast saturates, and the clamp keeps ranks
        // in range when rounding error pushes `x` past an end. (Signed conversions
        // are single instructions on x86-64, unsigned ones are not; ranks stay far
        // below 2^63.)
        let k = ((x + 0.5) as i64).clamp(1, self.n as i64);
        let kf = k as f64;
        let d = &self.density;
        (kf - x <= self.squeeze || u >= d.big_h(kf + 0.5) - d.h(kf)).then_some(k as u64)
    }
}

/// The Zipf density `h(x) = x^-alpha`, its antiderivative `H` and the inverse `H⁻¹`.
#[derive(Clone, Debug)]
struct Density {
    alpha: f64,
    form: Form,
    /// `1 - alpha`.
    one_minus_alpha: f64,
    /// `1 / (1 - alpha)`, unused in the logarithmic form.
    inv_one_minus_alpha: f64,
}

/// How [`Density`] evaluates `H⁻¹(y) = (1 + (1 - alpha) y)^(1 / (1 - alpha))`, the one
/// transcendental step on most draws.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    /// `alpha = 1`: `H = ln` and `H⁻¹ = exp`.
    Logarithmic,
    /// `|1 - alpha| < POWER_FORM_MIN`: `exp(ln_1p((1 - alpha) y) / (1 - alpha))`.
    /// Forming `1 + (1 - alpha) y` would lose the small term's precision, and the
    /// loss, divided by `1 - alpha`, would grow without bound as alpha nears 1.
    NearOne,
    /// Otherwise: `exp(ln(1 + (1 - alpha) y) / (1 - alpha))`. Rounding `1 + …` costs
    /// a relative error of at most 2^-53 / |1 - alpha| ≤ 2.3e-15 in `x`, as small as
    /// `ln_1p`'s own, and `ln` is about twice as fast as `ln_1p` away from 0.
    Power,
}

/// Smallest `|1 - alpha|` evaluated in [`Form::Power`].
const POWER_FORM_MIN: f64 = 0.05;

impl Density {
    fn new(alpha: f64) -> Density {
        let form = if alpha == 1.0 {
            Form::Logarithmic
        } else if (1.0 - alpha).abs() < POWER_FORM_MIN {
            Form::NearOne
        } else {
            Form::Power
        };
        Density { alpha, form, one_minus_alpha: 1.0 - alpha, inv_one_minus_alpha: 1.0 / (1.0 - alpha) }
    }

    /// `h(x) = x^-alpha`.
    #[inline]
    fn h(&self, x: f64) -> f64 {
        (-self.alpha * x.ln()).exp()
    }

    /// `H(x) = (x^(1-alpha) - 1) / (1 - alpha) = expm1((1 - alpha) ln x) / (1 - alpha)`.
    #[inline]
    fn big_h(&self, x: f64) -> f64 {
        if self.form == Form::Logarithmic {
            x.ln()
        } else {
            (self.one_minus_alpha * x.ln()).exp_m1() * self.inv_one_minus_alpha
        }
    }

    /// `H⁻¹(y) = (1 + (1 - alpha) y)^(1 / (1 - alpha))`.
    #[inline]
    fn big_h_inv(&self, y: f64) -> f64 {
        // Rounding can push the base `1 + (1 - alpha) y` just below 0, where the
        // power is undefined; 0 is the limit of the domain (x → 0 for alpha < 1,
        // x → ∞ for alpha > 1, and the rank is clamped either way).
        match self.form {
            Form::Logarithmic => y.exp(),
            Form::NearOne => ((self.one_minus_alpha * y).max(-1.0).ln_1p() * self.inv_one_minus_alpha).exp(),
            Form::Power => ((1.0 + self.one_minus_alpha * y).max(0.0).ln() * self.inv_one_minus_alpha).exp(),
        }
    }
}

/// The statement of `zipf` (module `rates`): the page of rank `r` gets a share
/// `r^-alpha / H(N, alpha)` of the references (the rejection-inversion sampler draws
/// ranks with exactly these probabilities), placed through the same permutation.
pub(super) fn model(cfg: &WorkloadConfig, tenant: u16, cores: u64) -> Box<dyn AccessModel> {
    let pages = cfg.footprint.bytes() / PAGE_BYTES;
    let first = cfg.base_vaddr / PAGE_BYTES;
    let order = Permutation::new(pages, layout_rng(cfg, tenant).next_u64());
    let alpha = cfg.zipf.alpha;
    let (refs, wf, instrs) = (cfg.refs, cfg.write_fraction, cfg.instrs as u64);
    Box::new(Phased::new(format!("stated: Zipf pages, alpha {alpha}"), vec![first..first + pages], 1, cores, move |_, out| {
        // Summed from the smallest terms up, for accuracy.
        let h: f64 = (1..=pages).rev().map(|r| (r as f64).powf(-alpha)).sum();
        out.refs = refs;
        out.instrs = instrs * refs;
        out.pages = (1..=pages).map(|r| independent(first + order.apply(r - 1), (r as f64).powf(-alpha) / h, wf, refs)).collect();
        out.pages.sort_by_key(|p| p.vpn);
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, check_write_share, config, run};
    use super::*;
    use crate::units::Size;

    /// The generalized harmonic number H(n, alpha) = Σ_{k=1..n} k^-alpha.
    fn harmonic(n: u64, alpha: f64) -> f64 {
        (1..=n).map(|k| (k as f64).powf(-alpha)).sum()
    }

    /// Counts how often each rank comes up in `samples` draws.
    fn rank_counts(n: u64, alpha: f64, samples: u32) -> Vec<u32> {
        let sampler = RankSampler::new(n, alpha);
        let mut rng = Rng::new(5);
        let mut counts = vec![0u32; n as usize + 1];
        for _ in 0..samples {
            let k = sampler.sample(&mut rng);
            assert!((1..=n).contains(&k), "rank {k} outside 1..={n}");
            counts[k as usize] += 1;
        }
        counts
    }

    #[test]
    fn is_deterministic() {
        check_determinism(&config("zipf"));
    }

    #[test]
    fn emits_exactly_refs_aligned_in_range_with_the_write_share() {
        let cfg = config("zipf");
        let records = run(&cfg);
        check_common(&cfg, &records, 8);
        check_write_share(&records, 0.3);
    }

    #[test]
    fn top_page_gets_its_zipf_share() {
        // 1000 pages, alpha 0.99: the rank-1 page has probability 1/H(1000, 0.99)
        // ≈ 0.134, about 26 800 of 200 000 references with a standard deviation of
        // about 150, so a 10 % tolerance (≈ 18 σ) only fails if the law is wrong.
        let cfg = WorkloadConfig { footprint: Size(1000 * 4096), refs: 200_000, ..config("zipf") };
        let zipf = Zipf::new(&cfg, 3, 2);
        let top_page = cfg.base_vaddr + zipf.pages.apply(0) * PAGE_BYTES;
        let hits = run(&cfg).iter().filter(|a| a.vaddr & !(PAGE_BYTES - 1) == top_page).count();
        let expected = 200_000.0 / harmonic(1000, 0.99);
        assert!((hits as f64 - expected).abs() < 0.1 * expected, "{hits} hits, expected {expected:.0}");
    }

    #[test]
    fn top_page_is_the_most_referenced_for_every_exponent() {
        // Rank 1 is the most likely rank for any alpha > 0, so the page it maps to
        // must collect the most references. The closest case is alpha 0.5: with
        // 100 000 references over 1024 pages, rank 1 expects 1 599 and rank 2
        // 1 130, a lead of 9 standard deviations of their difference (σ ≈ 52).
        for alpha in [0.5, 1.0, 1.5] {
            let mut cfg = config("zipf");
            cfg.zipf.alpha = alpha;
            let top_page = Zipf::new(&cfg, 3, 2).pages.apply(0);
            let mut per_page = vec![0u32; 1024];
            for a in run(&cfg) {
                per_page[((a.vaddr - cfg.base_vaddr) / PAGE_BYTES) as usize] += 1;
            }
            let busiest = (0..1024).max_by_key(|&p| per_page[p]).expect("pages");
            assert_eq!(busiest as u64, top_page, "alpha {alpha}");
        }
    }

    #[test]
    fn rank_frequencies_follow_the_law_for_small_medium_and_large_alpha() {
        // For each exponent, the first five ranks must match n·k^-alpha / H(n, alpha)
        // within 5 σ of a binomial count (σ = sqrt(n·p·(1-p))), and counts must
        // fall with rank as the expectations do (checked on ranks 1, 2, 4, 8, whose
        // expectations differ by many σ).
        let (n, samples) = (1000u64, 400_000u32);
        for alpha in [0.5, 0.99, 1.0, 1.01, 1.5, 3.0] {
            let counts = rank_counts(n, alpha, samples);
            let norm = harmonic(n, alpha);
            for k in 1..=5u64 {
                let p = (k as f64).powf(-alpha) / norm;
                let expected = samples as f64 * p;
                let sigma = (expected * (1.0 - p)).sqrt();
                let got = counts[k as usize] as f64;
                assert!(
                    (got - expected).abs() < 5.0 * sigma.max(1.0),
                    "alpha {alpha}, rank {k}: {got} draws, expected {expected:.0}"
                );
            }
            if alpha < 3.0 {
                assert!(counts[1] > counts[2] && counts[2] > counts[4] && counts[4] > counts[8], "alpha {alpha}");
            }
        }
    }

    #[test]
    fn tail_mass_matches_the_law() {
        // The share of draws above rank 100 tests the far part of the distribution,
        // which the squeeze and the acceptance test handle differently than rank 1.
        let (n, samples) = (10_000u64, 400_000u32);
        for alpha in [0.5, 1.0, 1.5] {
            let counts = rank_counts(n, alpha, samples);
            let tail: u32 = counts[101..].iter().sum();
            let p: f64 = (101..=n).map(|k| (k as f64).powf(-alpha)).sum::<f64>() / harmonic(n, alpha);
            let expected = samples as f64 * p;
            let sigma = (expected * (1.0 - p)).sqrt();
            assert!((tail as f64 - expected).abs() < 5.0 * sigma, "alpha {alpha}: tail {tail}, expected {expected:.0}");
        }
    }

    #[test]
    fn works_for_one_page_and_for_huge_footprints() {
        let one = RankSampler::new(1, 0.99);
        let mut rng = Rng::new(1);
        assert!((0..1000).all(|_| one.sample(&mut rng) == 1));
        // 2^35 pages (all of the 47-bit user space): ranks stay in range, and with
        // alpha ≤ 1 a large share (42 % for alpha 1) lies beyond the first million ranks.
        let n = 1u64 << 35;
        for alpha in [0.5, 0.99, 1.0, 1.5] {
            let sampler = RankSampler::new(n, alpha);
            let ranks: Vec<u64> = (0..100_000).map(|_| sampler.sample(&mut rng)).collect();
            assert!(ranks.iter().all(|k| (1..=n).contains(k)), "alpha {alpha}");
            let beyond = ranks.iter().filter(|&&k| k > 1_000_000).count();
            if alpha <= 1.0 {
                assert!(beyond > 10_000, "alpha {alpha}: only {beyond} draws beyond rank 10^6");
            }
        }
    }

    #[test]
    fn exponents_next_to_one_sample_like_one() {
        // The logarithmic form for alpha = 1 and the power form for its neighbours
        // must agree: with the same random numbers, alpha = 1 ± 1e-12 must give the
        // same ranks except, at most, for draws within ~1e-11 of a rank boundary.
        let n = 1 << 20;
        let exact = RankSampler::new(n, 1.0);
        for alpha in [1.0 - 1e-12, 1.0 + 1e-12] {
            let near = RankSampler::new(n, alpha);
            let (mut a, mut b) = (Rng::new(9), Rng::new(9));
            let differ = (0..100_000).filter(|_| exact.sample(&mut a) != near.sample(&mut b)).count();
            assert!(differ <= 2, "alpha {alpha}: {differ} of 100 000 ranks differ");
        }
    }
}
