//! Address decoding: where a tier-local address lives (channel, bank, row), with
//! shifts and masks prepared once from the configured bit lists.

/// Where an address lives inside its tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Channel.
    pub channel: u32,
    /// Bank within the channel.
    pub bank: u32,
    /// Row within the bank.
    pub row: u64,
}

/// A contiguous run of address bits: `width` bits starting at bit `lo`.
#[derive(Clone, Copy, Debug)]
pub(super) struct BitRun {
    lo: u32,
    width: u32,
}

/// Groups bit positions into runs of consecutive ascending bits, keeping their order.
fn runs(bits: &[u8]) -> Vec<BitRun> {
    let mut out: Vec<BitRun> = Vec::new();
    for &b in bits {
        match out.last_mut() {
            Some(r) if r.lo + r.width == b as u32 => r.width += 1,
            _ => out.push(BitRun { lo: b as u32, width: 1 }),
        }
    }
    out
}

#[inline(always)]
fn low_mask(width: u32) -> u64 {
    (1u64 << width) - 1
}

/// The bit positions of `runs`, in gather order.
pub(super) fn expand(runs: &[BitRun]) -> Vec<u8> {
    runs.iter().flat_map(|r| (r.lo..r.lo + r.width).map(|b| b as u8)).collect()
}

/// Address decoding with shifts and masks only, prepared once from the bit lists.
#[derive(Debug)]
pub(super) struct AddressMap {
    pub(super) channel: Vec<BitRun>,
    pub(super) bank: Vec<BitRun>,
    /// Channel and bank bits as runs, highest first, so that removing one run does not
    /// move the ones still to be removed.
    squeeze: Vec<BitRun>,
    row_shift: u32,
    /// The same decoding as one shift and mask per field, when the mapping allows it.
    pub(super) masks: Option<Masks>,
}

/// The decoding of a mapping whose channel bits are one run of ascending bits, whose
/// bank bits are another, and whose row bits all lie above both (the default mapping
/// is one): the channel and the bank are each a shift and a mask, the row a shift.
#[derive(Clone, Copy, Debug)]
pub(super) struct Masks {
    channel_lo: u32,
    channel_mask: u64,
    bank_lo: u32,
    bank_mask: u64,
    row_lo: u32,
}

impl Masks {
    /// The masks of the mapping with runs `channel` and `bank` and rows of
    /// `1 << row_shift` bytes, if it decodes so.
    fn of(channel: &[BitRun], bank: &[BitRun], row_shift: u32) -> Option<Masks> {
        let run = |runs: &[BitRun]| match runs {
            [] => Some(BitRun { lo: 0, width: 0 }),
            [r] => Some(*r),
            _ => None,
        };
        let (c, b) = (run(channel)?, run(bank)?);
        // Squeezing `selected` bits out moves the bits from `top` up down by
        // `selected`; the row starts at bit `row_shift` of what remains, so it is the
        // address above bit `row_shift + selected` when that bit is at or above `top`.
        let selected = c.width + b.width;
        let top = [c, b].iter().filter(|r| r.width > 0).map(|r| r.lo + r.width).max().unwrap_or(0);
        (top <= row_shift + selected).then_some(Masks {
            channel_lo: c.lo,
            channel_mask: low_mask(c.width),
            bank_lo: b.lo,
            bank_mask: low_mask(b.width),
            row_lo: row_shift + selected,
        })
    }
}

impl AddressMap {
    pub(super) fn new(channel_bits: &[u8], bank_bits: &[u8], row_bytes: u64) -> AddressMap {
        let mut all: Vec<u8> = channel_bits.iter().chain(bank_bits).copied().collect();
        all.sort_unstable();
        let mut squeeze = runs(&all);
        squeeze.reverse();
        let (channel, bank, row_shift) = (runs(channel_bits), runs(bank_bits), row_bytes.trailing_zeros());
        let masks = Masks::of(&channel, &bank, row_shift);
        AddressMap { channel, bank, squeeze, row_shift, masks }
    }

    /// Collects the bits of `runs` from `addr`, the first run's lowest bit as bit 0.
    #[inline(always)]
    fn gather(addr: u64, runs: &[BitRun]) -> u64 {
        let mut value = 0;
        let mut at = 0;
        for r in runs {
            value |= ((addr >> r.lo) & low_mask(r.width)) << at;
            at += r.width;
        }
        value
    }

    #[inline(always)]
    pub(super) fn decode(&self, addr: u64) -> Location {
        if let Some(m) = &self.masks {
            return Location {
                channel: ((addr >> m.channel_lo) & m.channel_mask) as u32,
                bank: ((addr >> m.bank_lo) & m.bank_mask) as u32,
                row: addr >> m.row_lo,
            };
        }
        self.decode_runs(addr)
    }

    /// [`AddressMap::decode`] for any mapping, run by run.
    pub(super) fn decode_runs(&self, addr: u64) -> Location {
        let mut rest = addr;
        for r in &self.squeeze {
            rest = ((rest >> (r.lo + r.width)) << r.lo) | (rest & low_mask(r.lo));
        }
        Location {
            channel: Self::gather(addr, &self.channel) as u32,
            bank: Self::gather(addr, &self.bank) as u32,
            row: rest >> self.row_shift,
        }
    }
}

