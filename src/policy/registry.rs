//! The list of policies: one line per policy. Dispatch from a name to a type happens
//! here, once per run.

use super::baselines::{AllFast, AllSlow, FirstTouch, FlatStatic, RoundRobin};
use super::hscc::Hscc;
use super::kstaled::Kstaled;
use super::rainbow::Rainbow;
use super::thermostat::Thermostat;
use super::Policy;

/// Something to do with a policy type chosen by name (the engine's run, listing its
/// parameters).
pub trait PolicyVisitor {
    type Output;
    fn visit<P: Policy>(self, name: &'static str) -> Self::Output;
}

macro_rules! policies {
    ($( $name:literal => $ty:ty, $about:literal; )*) => {
        /// Every policy as (name, one-line description).
        pub const POLICIES: &[(&str, &str)] = &[ $( ($name, $about), )* ];

        /// Calls `v.visit::<P>()` for the policy called `name`.
        pub fn with_policy<V: PolicyVisitor>(name: &str, v: V) -> anyhow::Result<V::Output> {
            match name {
                $( $name => Ok(v.visit::<$ty>($name)), )*
                _ => anyhow::bail!(
                    "policy.name: unknown policy `{name}` (known: {})",
                    POLICIES.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
                ),
            }
        }
    };
}

policies! {
    "all-fast" => AllFast, "upper bound: the whole footprint in the fast tier (capacity grown to fit)";
    "all-slow" => AllSlow, "lower bound: every page in the slow tier";
    "first-touch" => FirstTouch, "fast tier until full, then slow; no migration";
    "flat-static" => FlatStatic, "pages interleaved over tiers by capacity ratio; no migration (Rainbow §IV-A)";
    "round-robin" => RoundRobin, "N fast : M slow pages in turn until fast is full; no migration (SpAR §4)";
    "hscc-4k" => Hscc<false>, "DRAM caches hot 4 KiB NVM pages, counted per reference in the TLB, utility-based (HSCC, ICS'17, as Rainbow §IV-A)";
    "hscc-2m" => Hscc<true>, "HSCC with 2 MiB pages: whole superpages cached in DRAM (Rainbow's HSCC-2MB-mig)";
    "rainbow" => Rainbow, "NVM in 2 MiB superpages, hot 4 KiB pages copied to DRAM behind a migration bitmap (Rainbow)";
    "kstaled" => Kstaled, "Accessed-bit idle pages (idle for 10 s of scans) to slow memory, back on access (Thermostat §2.1)";
    "thermostat" => Thermostat, "huge-page-aware cold-page placement under a tolerable slowdown (Thermostat, ASPLOS'17)";
}
