//! Why a mechanism refused: each variant names one cause and carries what a policy
//! needs to react (the page, the tier, the tenant).

use super::{PageRef, TierId};
use std::fmt;

/// Direction of a page move, for rate limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Into a faster tier.
    Promote,
    /// Into a slower tier.
    Demote,
}

impl Direction {
    /// The direction of a move from tier `from` to tier `to`.
    pub fn between(from: super::TierId, to: super::TierId) -> Direction {
        if to < from {
            Direction::Promote
        } else {
            Direction::Demote
        }
    }
}

/// Why a mechanism refused. Nothing was changed and nothing was charged, except
/// where a variant says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MechError {
    /// The run has no such tenant.
    NoSuchTenant { tenant: u16 },
    /// The run has no such background thread (see the policy's requirements).
    NoSuchThread { thread: u16 },
    /// The machine has no such tier.
    NoSuchTier { tier: TierId },
    /// The page is not mapped.
    NotMapped { page: PageRef },
    /// The page already lives in the requested tier.
    AlreadyThere { page: PageRef, tier: TierId },
    /// The destination tier has no free frame of the needed size.
    NoFreeFrame { tier: TierId, huge: bool },
    /// No frame is left for a page-table node (split).
    NoTableFrame,
    /// Split of a page that is not huge.
    NotHuge { page: PageRef },
    /// Merge of a region that is already one huge page.
    AlreadyHuge { page: PageRef },
    /// Merge of a region whose base pages are not all mapped.
    Incomplete { page: PageRef, missing: u64 },
    /// Swap of two pages of different sizes.
    SizesDiffer { a: PageRef, b: PageRef },
    /// Swap of two pages in the same tier.
    SameTier { a: PageRef, b: PageRef, tier: TierId },
    /// A coloured move of a huge page (a huge frame spans every colour).
    HugeNotColoured { page: PageRef },
    /// The move would take the tenant past its fast-tier quota (in base frames).
    OverQuota { tenant: u16, quota_frames: u64 },
    /// The machine's limit on promotion or demotion bandwidth is used up until
    /// `retry_at` (a cycle).
    RateLimited { direction: Direction, retry_at: u64 },
    /// The machine keeps no copies (the policy did not require them).
    NoCopies,
    /// The page already has a copy in the fast tier.
    AlreadyCopied { page: PageRef },
    /// The page has no copy to drop.
    NotCopied { page: PageRef },
    /// Rainbow's copies are of 4 KiB pages inside slow superpages: the page is mapped
    /// with a base page.
    NotInSuperpage { page: PageRef },
    /// The frame cannot be moved by the migration controller: not in the tier the
    /// move starts from, not a page's data, already named by a ReMap entry (a cold
    /// victim), or not where one whole huge page starts (SpAR reconciles whole pages).
    NotRemappable { pfn: u64 },
    /// The frame's unit is already in its new place.
    AlreadyMoved { pfn: u64 },
    /// The frame has no ReMap entry.
    NotRemapped { pfn: u64 },
    /// The frame's ReMap entry is being moved back (SpRM).
    RemapBusy { pfn: u64 },
    /// The ReMap table has no free entry.
    RemapFull,
    /// A job's operation was not run: an earlier operation of its group was refused.
    Skipped,
    /// The mechanism exists only for VM tenants (PML, EPT bits).
    NotVm { tenant: u16 },
    /// The page was remapped by something else while a batched move of it was under
    /// way; the move was abandoned (its destination freed).
    MovedMeanwhile { page: PageRef },
    /// A core wrote the page while an unlocked DMA batch copied it: the copy was
    /// discarded and the page stays where it was (memos §6.3).
    DirtiedDuringCopy { page: PageRef },
    /// No batched move has this number (or it already finished).
    NoSuchBatch { batch: u32 },
}

impl fmt::Display for MechError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MechError::NoSuchTenant { tenant } => write!(f, "there is no tenant {tenant}"),
            MechError::NoSuchThread { thread } => write!(f, "there is no background thread {thread} (the policy requires the threads it uses)"),
            MechError::NoSuchTier { tier } => write!(f, "the machine has no {tier}"),
            MechError::NotMapped { page } => write!(f, "{page} is not mapped"),
            MechError::AlreadyThere { page, tier } => write!(f, "{page} is already in {tier}"),
            MechError::NoFreeFrame { tier, huge } => {
                write!(f, "{tier} has no free {} frame", if huge { "huge" } else { "base" })
            }
            MechError::NoTableFrame => f.write_str("no frame is free for a page-table node"),
            MechError::NotHuge { page } => write!(f, "{page} is not a huge page"),
            MechError::AlreadyHuge { page } => write!(f, "the region of {page} is already a huge page"),
            MechError::Incomplete { page, missing } => {
                write!(f, "{missing} base pages of the region of {page} are not mapped")
            }
            MechError::SizesDiffer { a, b } => write!(f, "{a} and {b} differ in size"),
            MechError::SameTier { a, b, tier } => write!(f, "{a} and {b} are both in {tier}"),
            MechError::HugeNotColoured { page } => write!(f, "{page} is huge: a huge frame has no colour"),
            MechError::OverQuota { tenant, quota_frames } => {
                write!(f, "tenant {tenant} would exceed its fast-tier quota of {quota_frames} frames")
            }
            MechError::RateLimited { direction, retry_at } => write!(
                f,
                "the {} rate limit is used up until cycle {retry_at}",
                match direction {
                    Direction::Promote => "promotion",
                    Direction::Demote => "demotion",
                }
            ),
            MechError::NoCopies => f.write_str("the machine keeps no copies (the policy did not require them)"),
            MechError::AlreadyCopied { page } => write!(f, "{page} already has a fast-tier copy"),
            MechError::NotCopied { page } => write!(f, "{page} has no fast-tier copy"),
            MechError::NotInSuperpage { page } => write!(f, "{page} is not inside a superpage"),
            MechError::NotRemappable { pfn } => write!(f, "frame {pfn:#x} cannot be moved by the migration controller"),
            MechError::AlreadyMoved { pfn } => write!(f, "the unit of frame {pfn:#x} is already in the fast tier"),
            MechError::NotRemapped { pfn } => write!(f, "frame {pfn:#x} has no ReMap entry"),
            MechError::RemapBusy { pfn } => write!(f, "the ReMap entry of frame {pfn:#x} is being moved back"),
            MechError::RemapFull => f.write_str("the ReMap table is full"),
            MechError::Skipped => f.write_str("not run: an earlier operation of its group was refused"),
            MechError::NotVm { tenant } => write!(f, "tenant {tenant} is a process: this mechanism needs a VM (EPT and PML)"),
            MechError::MovedMeanwhile { page } => write!(f, "{page} was remapped while its batched move was under way"),
            MechError::DirtiedDuringCopy { page } => write!(f, "{page} was written during its DMA copy: the copy was discarded"),
            MechError::NoSuchBatch { batch } => write!(f, "there is no batched move {batch} under way"),
        }
    }
}

impl std::error::Error for MechError {}
