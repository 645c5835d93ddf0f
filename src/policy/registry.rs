//! The list of policies: one line per policy. Dispatch from a name to a type happens
//! here, once per run. A policy whose machine needs a redirection structure names
//! its type in brackets after the policy type.

use super::baselines::{AllFast, AllSlow, CacheBankColouring, FirstTouch, FlatStatic, HardwareCache, Interleave, RoundRobin};
use super::damon::DamonTiering;
use super::hemem::HeMem;
use super::hmmv::{EptScanner, Full, HmmV};
use super::hscc::Hscc;
use super::kstaled::Kstaled;
use super::lru::Lru;
use super::memos::Memos;
use super::nimble::Nimble;
use super::numa::NumaBalancing;
use super::oracle::{Oracle, OracleStatic};
use super::otf::{HugePageOtf, Otf, SpAr, SpRm};
use super::rainbow::Rainbow;
use super::thermostat::Thermostat;
use super::tiering::{LinuxTiering, Tpp};
use super::Policy;
use crate::machine::copies::Copies;
use crate::machine::memory_mode::MemoryMode;
use crate::machine::remap::Remap;
use crate::machine::{NoRedirect, Redirect};

/// The policies that place pages and never move them (bounds and static placements):
/// a run of one moves no page by design.
pub const PLACES_ONLY: &[&str] = &["all-fast", "all-slow", "first-touch", "flat-static", "round-robin", "interleave", "cache-bank-colouring", "memory-mode", "oracle-static"];

/// Something to do with a policy type chosen by name (the engine's run, listing its
/// parameters).
pub trait PolicyVisitor {
    type Output;
    fn visit<R: Redirect, P: Policy<R>>(self, name: &'static str) -> Self::Output;
}

macro_rules! policies {
    (@redirect) => { NoRedirect };
    (@redirect $r:ty) => { $r };
    ($( $name:literal => $ty:ty $([$r:ty])?, $about:literal; )*) => {
        /// Every policy as (name, one-line description).
        pub const POLICIES: &[(&str, &str)] = &[ $( ($name, $about), )* ];

        /// Calls `v.visit::<R, P>()` for the policy called `name`.
        pub fn with_policy<V: PolicyVisitor>(name: &str, v: V) -> anyhow::Result<V::Output> {
            match name {
                $( $name => Ok(v.visit::<policies!(@redirect $($r)?), $ty>($name)), )*
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
    "interleave" => Interleave, "pages alternate between the DRAM and NVM channels, banks page-interleaved inside each; no migration (memos §7.1 footnote 4)";
    "cache-bank-colouring" => CacheBankColouring, "each core's pages coloured into its own share of banks and LLC slabs, channels interleaved; no migration (vertical cache-bank partitioning, memos §7.3)";
    "memory-mode" => HardwareCache [MemoryMode], "Optane Memory Mode: the whole fast tier a direct-mapped, write-back hardware cache of the slow tier in 64 B lines (HMM-V §3.1)";
    "numa-balancing" => NumaBalancing, "Linux 5.4 automatic NUMA balancing (HMM-V's NUMA_B): hinting faults on 256 MB windows, slow pages promoted if the fast node has room, no demotion";
    "nimble" => Nimble, "Nimble (ASPLOS'19): Linux's active/inactive lists from Accessed-bit scans, active slow pages promoted, hot and cold huge pages exchanged, copies on 4 threads";
    "hemem" => HeMem, "HeMem (SOSP'21): PEBS samples of LLC-missing loads and of stores, fixed hot thresholds with cooling, hot slow pages swapped with cold fast ones, copies write-protected";
    "linux-tiering" => LinuxTiering, "Linux 6.x NUMA balancing in memory-tiering mode: slow pages promoted on hinting faults within the hot threshold (1 s, adjusted to the rate limit), kswapd demotes the inactive tail to the promotion watermark";
    "tpp" => Tpp, "Transparent Page Placement (ASPLOS'23): hinting faults promote only active slow pages, kswapd demotes ahead of allocation down to a 2 % demotion watermark";
    "oracle" => Oracle, "future-knowledge bound: reads the whole stream first, keeps in the fast tier the pages with the most weighted references in the coming window, moved by charged migrations";
    "oracle-static" => OracleStatic, "future-knowledge bound: the pages with the most weighted references over the whole run born in the fast tier, no migration";
    "lru" => Lru, "Linux-style active/inactive lists from Accessed-bit scans: promote active slow pages, demote inactive fast ones under watermarks";
    "damon-tiering" => DamonTiering, "Linux 6.11 DAMON tiering: a kdamond per tier samples adaptive physical-address regions, DAMOS migrate_cold demotes idle fast regions, migrate_hot promotes hot slow ones, under quotas and watermarks";
    "hscc-4k" => Hscc<false> [Copies], "DRAM caches hot 4 KiB NVM pages, counted per reference in the TLB, utility-based (HSCC, ICS'17, as Rainbow §IV-A)";
    "hscc-2m" => Hscc<true> [Copies], "HSCC with 2 MiB pages: whole superpages cached in DRAM (Rainbow's HSCC-2MB-mig)";
    "rainbow" => Rainbow [Copies], "NVM in 2 MiB superpages, hot 4 KiB pages copied to DRAM behind a migration bitmap (Rainbow)";
    "hugepage-otf" => Otf<HugePageOtf> [Remap], "whole huge pages migrated on the fly by a hardware controller at 16 384 accesses (SpAR's 512K_huge_th16384)";
    "spar" => Otf<SpAr> [Remap], "64 KiB subpages migrated on the fly behind a ReMap table, address reconciliation at 50 % full (SpAR, HMEM'21)";
    "sprm" => Otf<SpRm> [Remap], "64 KiB subpages migrated into a fast swap area, the least beneficial moved back at 50 % full (SpRM, HMEM'21)";
    "kstaled" => Kstaled, "Accessed-bit idle pages (idle for 10 s of scans) to slow memory, back on access (Thermostat §2.1)";
    "thermostat" => Thermostat, "huge-page-aware cold-page placement under a tolerable slowdown (Thermostat, ASPLOS'17)";
    "memos" => Memos, "memos (full-hierarchy placement): SysMon A/D sampling, WD/RD prediction over 8 passes, hot/WD pages to the DRAM channel by CPU copy, cold ones to NVM by unlocked DMA, frames coloured by coldest bank and least-used LLC slab, bank and bandwidth balancing";
    "hmm-v" => HmmV<Full>, "hypervisor tiering for VMs: PML-guided guest page-table scans, multi-level queue, degree sort, PML migration, DRAM pool (HMM-V)";
    "ept-scanner" => HmmV<EptScanner>, "RAMinate's tracking for VMs: the whole EPT scanned every second, hot pages moved as HMM-V does (HMM-V §2, §5.3)";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policies_that_only_place_are_policies() {
        for name in PLACES_ONLY {
            assert!(POLICIES.iter().any(|p| p.0 == *name), "{name} is not a policy");
        }
    }
}
