//! SysMon's rules on plain counts (memos §3): whether a pass saw a page write-domain
//! (§3.1), its forecast from the history of passes (§3.2, Fig. 4), its reuse class
//! from the gaps between sightings (§3.3), and the orders in which pages are promoted
//! and make room (Fig. 10 step 3).

use super::Candidate;

/// A page's reuse class (§3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reuse {
    Rare,
    Frequent,
    Thrashing,
}

/// A page's predicted write state (§3.2, Fig. 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Forecast {
    /// Case 1: WD often in the window — will keep writing intensively.
    WdFreqH,
    /// Case 3: WD, less often.
    WdFreqL,
    /// Case 2: read-domain or cold.
    UnWd,
}

/// §3.1 footnote 1: write-domain when `weight`·writes ≥ reads (and the page was
/// written at all: a page with neither is cold).
pub(super) fn is_write_domain(reads: u32, writes: u32, weight: u32) -> bool {
    writes > 0 && weight * writes >= reads
}

/// §3.2: the forecast from `history` (bit 0 the latest pass, 1 = WD) over the last
/// `window` passes. Reverse: when the last `k_len` passes are all WD the page is
/// predicted WD (at least Freq_L) whatever the window says, and when none of them is
/// WD it is predicted Un_WD.
pub(super) fn forecast(history: u8, window: u32, k_len: u32, wd_low: u32, wd_high: u32) -> Forecast {
    let window_mask = if window >= 8 { u8::MAX } else { (1u8 << window) - 1 };
    let ones = (history & window_mask).count_ones();
    let overall = if ones >= wd_high {
        Forecast::WdFreqH
    } else if ones >= wd_low {
        Forecast::WdFreqL
    } else {
        Forecast::UnWd
    };
    if k_len == 0 {
        return overall;
    }
    let k_mask = if k_len >= 8 { u8::MAX } else { (1u8 << k_len) - 1 };
    match (history & k_mask, overall) {
        (h, Forecast::UnWd) if h == k_mask => Forecast::WdFreqL,
        (0, Forecast::WdFreqH | Forecast::WdFreqL) => Forecast::UnWd,
        _ => overall,
    }
}

/// §3.3: the reuse class of a page seen in `seen` of `samplings` samplings, with gaps
/// between consecutive sightings from `min_gap` to `max_gap` samplings.
pub(super) fn reuse(seen: u32, samplings: u32, min_gap: u32, max_gap: u32, rare_share: f64, thrash_max_gap: u32) -> Reuse {
    if seen as f64 <= rare_share * samplings as f64 {
        Reuse::Rare
    } else if seen >= 2 && max_gap <= thrash_max_gap && max_gap <= min_gap + 1 {
        Reuse::Thrashing
    } else {
        Reuse::Frequent
    }
}

/// Fig. 10 step 3: the hotness list's order — WD_Freq_H before WD_Freq_L before
/// Un_WD, hotter first, then by address (deterministic).
pub(super) fn rank_hotness(hl: &mut [Candidate]) {
    hl.sort_by_key(|c| (c.forecast, std::cmp::Reverse(c.heat), c.page.tenant, c.page.addr));
}

/// The order in which DRAM pages make room (§5.2 "cold pages are kept in NVM ... and
/// reserve DRAM capacity for those hot and WD pages"): cold pages only, read-domain
/// ones before WD_Freq_L ones (WD_Freq_H pages stay), colder first.
pub(super) fn rank_victims(victims: &mut [Candidate]) {
    victims.sort_by_key(|c| (std::cmp::Reverse(c.forecast), c.heat, c.page.tenant, c.page.addr));
}
