//! What a run builds the machine from, before it is built: the static facts a policy
//! reads ([`MachineInfo`], [`TierInfo`]), what the run and its policy add to the
//! configuration ([`Build`]), and the tiers' capacities resolved from the footprint and
//! checked against it.

use super::cache::CacheConfig;
use super::config::{MachineConfig, TiersConfig};
use super::placement::Placement;
use super::{alloc, Redirect, TenantKind, TierId};
use crate::units::Size;

/// Static facts about one tier.
#[derive(Clone, Debug)]
pub struct TierInfo {
    pub name: String,
    /// Capacity in base frames.
    pub frames: u64,
    /// First frame number (tiers start at 1 GiB boundaries).
    pub base_pfn: u64,
    /// Row-miss read latency in ns (the tier's typical access latency).
    pub read_ns: f64,
    /// Row-miss write latency in ns.
    pub write_ns: f64,
    /// Peak bandwidth of all channels in GB/s.
    pub gbps: f64,
    /// Tier-local physical-address bits that select the channel and the bank within
    /// it, least significant first (the mapping in effect, default or configured).
    pub channel_bits: Vec<u8>,
    pub bank_bits: Vec<u8>,
}

/// Static facts about the machine a policy may read; built once per run.
#[derive(Clone, Debug)]
pub struct MachineInfo {
    pub cores: usize,
    pub freq_ghz: f64,
    pub huge_page_bytes: u64,
    /// The tiers, fastest first (index with [`TierId::index`] or use [`MachineInfo::tier`]).
    pub tiers: Vec<TierInfo>,
    /// Cycles per cache line flushed (`machine.costs.clflush_cycles_per_line`) and of
    /// a TLB shootdown (`machine.costs.shootdown_cycles`), for policies' cost models.
    pub clflush_cycles_per_line: u64,
    pub shootdown_cycles: u64,
    /// Software work of migrating one page besides its copy, in ns
    /// (`machine.costs.migrate_software_ns`), and the line reads a CPU copy keeps in
    /// flight (`machine.costs.cpu_copy_lines_in_flight`), for policies' cost models.
    pub migrate_software_ns: f64,
    pub cpu_copy_lines_in_flight: u32,
    /// Latency of a fault on a poisoned PTE, in ns (`machine.costs.poison_fault_ns`).
    pub poison_fault_ns: f64,
    /// Bytes the run's workloads touch.
    pub footprint_bytes: u64,
    /// References the run will simulate, when its sources know (0 = unknown); lets a
    /// policy scale periods given in seconds of a long real run to a short trace.
    pub total_refs: u64,
    /// Tenants (address spaces) of the run.
    pub tenants: usize,
    /// Of them, VMs.
    pub vm_tenants: usize,
    /// Whether first touch maps huge pages (transparent huge pages).
    pub thp: bool,
    /// Whether the fast tier is the machine's cache of the slow one (Optane Memory
    /// Mode): no page or page table ever lives there.
    pub fast_hidden: bool,
    /// The cache hierarchy's configuration (for a policy's functional model of it).
    pub caches: Vec<CacheConfig>,
    /// Whether the run reaches the papers' time scales (epochs mode): periods that a
    /// policy would scale to a short run are run in seconds (module
    /// `monitor::pacer`).
    pub paper_periods: bool,
}

impl MachineInfo {
    /// Levels of the cache hierarchy: a reference whose `RefOutcome::level` is this
    /// many missed every cache and was served by memory.
    pub(crate) fn cache_levels(&self) -> usize {
        self.caches.len()
    }

    pub(crate) fn tier(&self, t: TierId) -> &TierInfo {
        &self.tiers[t.index()]
    }

    /// Whether the machine has tier `t`.
    pub(crate) fn has(&self, t: TierId) -> bool {
        t.index() < self.tiers.len()
    }

    /// Core cycles in `seconds` of simulated time.
    pub(crate) fn cycles(&self, seconds: f64) -> u64 {
        (seconds * self.freq_ghz * 1e9) as u64
    }

    /// Simulated seconds of `cycles` core cycles.
    pub(crate) fn seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / (self.freq_ghz * 1e9)
    }
}

/// What a run builds the machine with beyond its configuration: the run's tenants
/// and size, and what the policy requires (`crate::policy::Requirements`).
#[derive(Clone, Debug)]
pub struct Build<S> {
    pub tenants: Vec<TenantKind>,
    /// Bytes the workloads touch (tier capacities may be shares of it).
    pub footprint: u64,
    /// References the run will simulate (0 = unknown).
    pub total_refs: u64,
    /// Map huge pages on first touch.
    pub thp: bool,
    pub placement: Placement,
    /// Grow the fast tier to hold the whole footprint (the all-fast bound).
    pub fast_holds_footprint: bool,
    /// Free fast-tier frames first touch leaves alone while a slower tier has room.
    pub fast_reserve: u64,
    /// The redirection structure's specification.
    pub redirect: S,
    /// Keep shadow memory (`--verify`).
    pub verify: bool,
    /// Epochs mode: the papers' periods are run as they are.
    pub paper_periods: bool,
}

impl<S: Default> Build<S> {
    /// A build with the configuration's page size and first-touch placement in the
    /// fastest tier, no redirection, no verification.
    #[cfg(test)]
    pub(crate) fn new(cfg: &MachineConfig, tenants: &[TenantKind], footprint: u64) -> Build<S> {
        Build {
            tenants: tenants.to_vec(),
            footprint,
            total_refs: 0,
            thp: cfg.page_table.thp,
            placement: Placement::FastFirst,
            fast_holds_footprint: false,
            fast_reserve: 0,
            redirect: S::default(),
            verify: false,
            paper_periods: false,
        }
    }
}

/// How the tier capacities came out, and why.
pub(super) struct Capacities {
    pub(super) bytes: Vec<u64>,
    /// Frames of the slow tier reserved for the redirection structure's metadata.
    pub(super) reserved: u64,
}

/// Resolves every tier's capacity for a build: shares of the footprint rounded up to
/// huge pages, the fast tier grown for the all-fast bound, the slow tier grown by the
/// metadata frames the redirection structure reserves when it is a share. (Whether the
/// footprint fits is checked by [`room`], after the policy has seen the plan and could
/// name what it needs: when the machine is built, and by a run before it builds its
/// workloads.)
pub(super) fn capacities<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<Capacities> {
    let huge_bytes = cfg.page_table.huge_page.bytes();
    let mut bytes = Vec::new();
    let mut reserved = 0;
    for (i, t) in cfg.tiers.all().into_iter().enumerate() {
        let id = TierId(i as u8);
        let mut c = t.capacity.resolve(b.footprint, huge_bytes);
        if id == TierId::FAST && b.fast_holds_footprint {
            // Room for every page plus its page tables (≤ 1/256 of the data with
            // 4 KiB pages, rounded up generously).
            c = c.max((b.footprint + b.footprint / 128 + (64 << 20)).div_ceil(huge_bytes) * huge_bytes);
        }
        if id == TierId::SLOW && R::hides_fast_tier(&b.redirect) && t.capacity.is_share() {
            // The slow tier is all the OS has: room for every page and its page tables.
            c = c.max((b.footprint + b.footprint / 128 + (64 << 20)).div_ceil(huge_bytes) * huge_bytes);
        }
        if id == TierId::SLOW {
            reserved = R::reserved_frames(&b.redirect, c >> 12, huge_bytes >> 12);
            if reserved > 0 && t.capacity.is_share() {
                // The reserve is on top of a share of the footprint, and is itself
                // covered by the structure (two rounds settle it: it is tiny).
                let grown = c + (reserved << 12).div_ceil(huge_bytes) * huge_bytes;
                reserved = R::reserved_frames(&b.redirect, grown >> 12, huge_bytes >> 12);
                c += (reserved << 12).div_ceil(huge_bytes) * huge_bytes;
            }
        }
        if c == 0 {
            anyhow::bail!("{}.capacity: resolves to 0 bytes for a footprint of {}", TiersConfig::field(id), Size(b.footprint));
        }
        bytes.push(c);
    }
    Ok(Capacities { bytes, reserved })
}

/// Checks that the footprint fits the tiers, less what the redirection structure
/// reserves, and returns the bytes of the fast tier it reserves. The message names
/// the footprint, the tiers' total and the capacities to raise.
pub(super) fn room<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>, caps: &Capacities) -> anyhow::Result<u64> {
    let huge_bytes = cfg.page_table.huge_page.bytes();
    let hide_fast = R::hides_fast_tier(&b.redirect);
    let fast_reserved = if hide_fast { caps.bytes[0] } else { R::reserved_fast_huge_frames(&b.redirect, caps.bytes[0], huge_bytes) * huge_bytes };
    if fast_reserved >= caps.bytes[0] && !hide_fast {
        anyhow::bail!(
            "machine.tiers.fast.capacity: {} cannot hold the {} the machine's redirection structure reserves in it",
            Size(caps.bytes[0]),
            Size(fast_reserved)
        );
    }
    let total: u64 = caps.bytes.iter().sum::<u64>() - (caps.reserved << 12) - fast_reserved;
    if b.footprint > total {
        // A fast tier that is the machine's cache holds no pages: only the others help.
        let first = if hide_fast { 1 } else { 0 };
        let fields: Vec<String> = (first..caps.bytes.len()).map(|i| format!("{}.capacity", TiersConfig::field(TierId(i as u8)))).collect();
        anyhow::bail!(
            "machine.tiers: the footprint ({}) is larger than all tiers together ({}{}); raise {} (together they lack {})",
            Size(b.footprint),
            Size(total),
            if hide_fast {
                format!(", the fast tier's {} being the machine's cache", Size(fast_reserved))
            } else if caps.reserved > 0 || fast_reserved > 0 {
                format!(" after {} of metadata", Size((caps.reserved << 12) + fast_reserved))
            } else {
                String::new()
            },
            fields.join(" or "),
            Size(b.footprint - total)
        );
    }
    Ok(fast_reserved)
}

impl MachineInfo {
    /// Checks, from the configuration alone, that the footprint of `b` fits the tiers
    /// as [`Machine::new`](super::Machine::new) will size them: a run checks it before
    /// it builds its workloads, which takes minutes for some.
    pub(crate) fn check_room<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<()> {
        cfg.validate()?;
        let caps = capacities::<R>(cfg, b)?;
        room::<R>(cfg, b, &caps).map(|_| ())
    }

    /// The machine a configuration and build describe, before it is built.
    pub(crate) fn plan<R: Redirect>(cfg: &MachineConfig, b: &Build<R::Spec>) -> anyhow::Result<MachineInfo> {
        cfg.validate()?;
        let caps = capacities::<R>(cfg, b)?;
        Ok(MachineInfo::with_capacities(cfg, b, &caps.bytes, R::hides_fast_tier(&b.redirect)))
    }

    pub(super) fn with_capacities<S>(cfg: &MachineConfig, b: &Build<S>, bytes: &[u64], fast_hidden: bool) -> MachineInfo {
        let frames: Vec<u64> = bytes.iter().map(|c| c >> 12).collect();
        let bases = alloc::tier_bases(&frames);
        let tiers = cfg
            .tiers
            .all()
            .into_iter()
            .zip(frames.iter().zip(bases))
            .map(|(t, (&frames, base_pfn))| {
                let (channel_bits, bank_bits) = t.mapping_bits().unwrap_or_default();
                TierInfo {
                    name: t.name.clone(),
                    frames,
                    base_pfn,
                    read_ns: t.read_miss_ns,
                    write_ns: t.write_miss_ns,
                    gbps: t.channel_gbps * t.channels as f64,
                    channel_bits,
                    bank_bits,
                }
            })
            .collect();
        MachineInfo {
            cores: cfg.cores,
            freq_ghz: cfg.freq_ghz,
            huge_page_bytes: cfg.page_table.huge_page.bytes(),
            tiers,
            clflush_cycles_per_line: cfg.costs.clflush_cycles_per_line,
            shootdown_cycles: cfg.costs.shootdown_cycles,
            migrate_software_ns: cfg.costs.migrate_software_ns,
            cpu_copy_lines_in_flight: cfg.costs.cpu_copy_lines_in_flight,
            poison_fault_ns: cfg.costs.poison_fault_ns,
            footprint_bytes: b.footprint,
            total_refs: b.total_refs,
            tenants: b.tenants.len(),
            vm_tenants: b.tenants.iter().filter(|&&k| k == TenantKind::Vm).count(),
            thp: b.thp,
            caches: cfg.caches.clone(),
            fast_hidden,
            paper_periods: b.paper_periods,
        }
    }
}
