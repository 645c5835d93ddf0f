//! How busy each bank and each last-level-cache slab is, for placement across the
//! whole memory hierarchy (memos §4.1, §5.2, Algorithms 1–2: the Cache_Freq_Table and
//! Bank_Freq_Table).
//!
//! A frame's bank and slab are read from its physical address: the bank from the
//! tier's bank bits, the slab from a few LLC set-index bits above the page offset
//! (bits 15–18 on memos' platform: 16 slabs). A policy adds each sampled page's
//! access count to the tables of the bank and slab its frame sits in ([`Hierarchy::add`]);
//! lower values mean less used resources. [`Hierarchy::choose`] then picks where a
//! moving page should go: the coldest bank of the destination tier, and in it the
//! least used of the slabs the page may use that still has a free frame (§5.3 (2)–(3),
//! case 3 of §5.4).

use crate::machine::{Colour, MachineInfo, TierId};

/// The bank and slab bits of each tier, and the bank and slab frequency tables.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    /// Per tier: physical-address bits of the bank within the tier, least significant
    /// first (the tier's channel bits come first when it has several channels: the
    /// "bank" here is a (channel, bank) pair).
    bank_bits: Vec<Vec<u8>>,
    /// Physical-address bits of the slab, least significant first.
    slab_bits: Vec<u8>,
    /// Per tier, per bank: accesses sampled in the last pass.
    bank_freq: Vec<Vec<u64>>,
    /// Per slab: accesses sampled in the last pass, every tier together (the LLC is
    /// shared by every channel).
    slab_freq: Vec<u64>,
    /// Per tier, per bank: hot (active) pages in the last pass (Fig. 15's measure).
    bank_active: Vec<Vec<u64>>,
}

/// Gathers the bits `bits` of `addr` into a number, `bits[0]` the least significant.
#[inline]
fn gather(addr: u64, bits: &[u8]) -> u64 {
    bits.iter().enumerate().fold(0, |v, (i, &b)| v | ((addr >> b) & 1) << i)
}

impl Hierarchy {
    /// Tables for tiers whose banks are selected by `bank_bits[t]` (channel bits then
    /// bank bits), and slabs selected by `slab_bits`. Every bit must be at least 12
    /// (a bit inside a page cannot place a page); the error names the bit. A bit may
    /// select both a bank and a slab (as bits 15–16 do on the default machine, whose
    /// bank bits are 12–16): then some (bank, slab) pairs have no frame, and
    /// [`Hierarchy::colour`] says so.
    pub fn new(bank_bits: Vec<Vec<u8>>, slab_bits: Vec<u8>) -> Result<Hierarchy, String> {
        for bits in bank_bits.iter().chain([&slab_bits]) {
            Colour::from_bits(bits, 0)?;
        }
        let bank_freq = bank_bits.iter().map(|b| vec![0; 1 << b.len()]).collect::<Vec<_>>();
        Ok(Hierarchy { bank_active: bank_freq.clone(), bank_freq, slab_freq: vec![0; 1 << slab_bits.len()], bank_bits, slab_bits })
    }

    /// Tables for the fast and slow tiers of machine `m` (their channel and bank bits
    /// at or above the page offset: a channel chosen inside a page is no colour) and
    /// slabs selected by `slab_bits`.
    pub fn for_machine(m: &MachineInfo, slab_bits: Vec<u8>) -> Result<Hierarchy, String> {
        let bank_bits = [TierId::FAST, TierId::SLOW].map(|t| {
            let i = m.tier(t);
            i.channel_bits.iter().chain(&i.bank_bits).copied().filter(|&b| b >= 12).collect::<Vec<u8>>()
        });
        Hierarchy::new(bank_bits.to_vec(), slab_bits)
    }

    pub fn banks(&self, tier: TierId) -> usize {
        self.bank_freq[tier.index()].len()
    }

    pub fn slabs(&self) -> usize {
        self.slab_freq.len()
    }

    /// The bank (within its tier) of tier-local frame `frame`.
    #[inline]
    pub fn bank_of(&self, tier: TierId, frame: u64) -> usize {
        gather(frame << 12, &self.bank_bits[tier.index()]) as usize
    }

    /// The slab of frame `frame` (global or tier-local: tiers are aligned far above
    /// the slab bits).
    #[inline]
    pub fn slab_of(&self, frame: u64) -> usize {
        gather(frame << 12, &self.slab_bits) as usize
    }

    /// The colour of the frames of bank `bank` and slab `slab` (`None` = any), or
    /// `None` when no frame is in both (they share an address bit and want different
    /// values of it).
    pub fn colour(&self, tier: TierId, bank: Option<usize>, slab: Option<usize>) -> Option<Colour> {
        // The bits were checked in `new`; a bank or slab number past the tables is the
        // caller's bug.
        let of = |bits: &[u8], v: Option<usize>| v.map_or(Colour::ANY, |v| Colour::from_bits(bits, v as u64).expect("a bank and slab of the tables"));
        of(&self.bank_bits[tier.index()], bank).and(of(&self.slab_bits, slab))
    }

    /// Forgets the last pass (Algorithm 1 starts each pass from zero).
    pub fn clear(&mut self) {
        self.bank_freq.iter_mut().chain(self.bank_active.iter_mut()).for_each(|t| t.fill(0));
        self.slab_freq.fill(0);
    }

    /// Records a page of tier-local frame `frame` seen accessed `accesses` times in
    /// the pass; `hot` counts it as an active page of its bank.
    pub fn add(&mut self, tier: TierId, frame: u64, accesses: u64, hot: bool) {
        let bank = self.bank_of(tier, frame);
        self.bank_freq[tier.index()][bank] += accesses;
        self.bank_active[tier.index()][bank] += hot as u64;
        let slab = self.slab_of(frame);
        self.slab_freq[slab] += accesses;
    }

    /// Moves a page's weight from one place to another, so that the next choice sees
    /// the page where it is going.
    pub fn moved(&mut self, from: (TierId, u64), to: (TierId, u64), accesses: u64, hot: bool) {
        let (fb, tb) = (self.bank_of(from.0, from.1), self.bank_of(to.0, to.1));
        let f = &mut self.bank_freq[from.0.index()][fb];
        *f = f.saturating_sub(accesses);
        let a = &mut self.bank_active[from.0.index()][fb];
        *a = a.saturating_sub(hot as u64);
        self.bank_freq[to.0.index()][tb] += accesses;
        self.bank_active[to.0.index()][tb] += hot as u64;
        let (fs, ts) = (self.slab_of(from.1), self.slab_of(to.1));
        self.slab_freq[fs] = self.slab_freq[fs].saturating_sub(accesses);
        self.slab_freq[ts] += accesses;
    }

    pub fn bank_freq(&self, tier: TierId) -> &[u64] {
        &self.bank_freq[tier.index()]
    }

    pub fn bank_active(&self, tier: TierId) -> &[u64] {
        &self.bank_active[tier.index()]
    }

    pub fn slab_freq(&self) -> &[u64] {
        &self.slab_freq
    }

    /// Algorithm 2: banks of `tier` coldest first, and for each the allowed slabs
    /// least used first; the first (bank, slab) for which `has_free` finds a free
    /// frame. Ties go to the lower number. `None` when no allowed slab of any bank has
    /// room (the caller then widens the slabs, §5.3 (4)).
    pub fn choose(&self, tier: TierId, slabs: &[usize], mut has_free: impl FnMut(usize, usize) -> bool) -> Option<(usize, usize)> {
        let mut banks: Vec<usize> = (0..self.banks(tier)).collect();
        banks.sort_by_key(|&b| (self.bank_freq[tier.index()][b], b));
        let mut slabs = slabs.to_vec();
        slabs.sort_by_key(|&s| (self.slab_freq[s], s));
        banks.into_iter().find_map(|b| slabs.iter().find(|&&s| has_free(b, s)).map(|&s| (b, s)))
    }

    /// Standard deviation of the active pages per bank of `tier` (memos Fig. 15).
    pub fn active_pages_sd(&self, tier: TierId) -> f64 {
        let a = &self.bank_active[tier.index()];
        let n = a.len() as f64;
        let mean = a.iter().sum::<u64>() as f64 / n;
        (a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const DRAM: TierId = TierId::FAST;
    const NVM: TierId = TierId::SLOW;

    fn memos() -> Hierarchy {
        // The paper's platform (Fig. 9): banks by bits 12–14 and 20–21, slabs by 15–18.
        Hierarchy::new(vec![vec![12, 13, 14, 20, 21]; 2], vec![15, 16, 17, 18]).unwrap()
    }

    #[test]
    // The binary literals are grouped by field (bank group, bit 19, slab, bank), not by four.
    #[allow(clippy::unusual_byte_groupings)]
    fn colour_arithmetic_at_the_papers_bit_positions() {
        let h = memos();
        assert_eq!((h.banks(DRAM), h.slabs()), (32, 16));
        // Frame 0b11_0_1010_101: bits 12–14 = 101 (bank bits 0–2 = 5), bits 15–18 =
        // 1010 (slab 10), bit 19 = 0, bits 20–21 = 11 (bank bits 3–4 = 3): bank 5 + 3·8 = 29.
        let frame = 0b11_0_1010_101u64;
        assert_eq!(h.bank_of(DRAM, frame), 29);
        assert_eq!(h.slab_of(frame), 10);
        // The colour of bank 29, slab 10 is exactly those nine frame bits (bit 19 free).
        let c = h.colour(DRAM, Some(29), Some(10)).unwrap();
        assert_eq!(c.mask, 0b11_0_1111_111);
        assert_eq!(c.value, frame);
        assert!(c.matches(frame) && c.matches(frame | 1 << 7) && !c.matches(frame ^ 1));
        // A bank-group colour (§5.2): bits 20–21 only.
        assert_eq!(Colour::from_bits(&[20, 21], 2), Ok(Colour { mask: 0b11_0000_0000, value: 0b10_0000_0000 }));
        assert!(Hierarchy::new(vec![vec![6]], vec![15]).is_err(), "bit 6 is inside a page");
        // A bit that selects both: bank 1 (bit 15 set) has no frame in slab 0.
        let both = Hierarchy::new(vec![vec![15]], vec![15, 16]).unwrap();
        assert_eq!(both.colour(DRAM, Some(1), Some(0)), None);
        assert_eq!(both.colour(DRAM, Some(1), Some(3)), Some(Colour { mask: 0b1100_0, value: 0b1100_0 }));
    }

    #[test]
    fn coldest_bank_and_least_used_slab() {
        let mut h = memos();
        // Bank 0 took 50 accesses, bank 1 took 5, every other bank 20; slab 3 is the
        // least used of slabs 1–14 (2 accesses), slab 1 the most.
        for b in 2..32u64 {
            h.add(DRAM, (b & 7) | (b >> 3) << 8, 20, false);
        }
        h.add(DRAM, 0, 50, true);
        h.add(DRAM, 1, 5, true);
        // Slab freq so far: bank frames above have slab 0; add slab traffic.
        h.add(NVM, 3 << 3, 2, false);
        h.add(NVM, 1 << 3, 40, false);
        for s in [2u64, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] {
            h.add(NVM, s << 3, 10, false);
        }
        let freq_slabs: Vec<usize> = (1..15).collect();
        assert_eq!(h.choose(DRAM, &freq_slabs, |_, _| true), Some((1, 3)));
        // Bank 1 full in slab 3: the next least used slab of bank 1 (slab 2, 10
        // accesses, ties broken by number).
        assert_eq!(h.choose(DRAM, &freq_slabs, |b, s| !(b == 1 && s == 3)), Some((1, 2)));
        // Bank 1 full everywhere: the next coldest bank is bank 2 (20, lowest number).
        assert_eq!(h.choose(DRAM, &freq_slabs, |b, _| b != 1), Some((2, 3)));
        assert_eq!(h.choose(DRAM, &freq_slabs, |_, _| false), None);
        // Moving the 50-access page of bank 0 to bank 1 makes bank 0 the coldest.
        h.moved((DRAM, 0), (DRAM, 1), 50, true);
        assert_eq!(h.bank_freq(DRAM)[0], 0);
        assert_eq!(h.bank_freq(DRAM)[1], 55);
        assert_eq!(h.bank_active(DRAM)[1], 2);
        assert_eq!(h.choose(DRAM, &[0], |_, _| true), Some((0, 0)));
    }

    #[test]
    fn imbalance_is_the_standard_deviation_of_active_pages() {
        let mut h = Hierarchy::new(vec![vec![12, 13]], vec![15]).unwrap();
        // Active pages per bank 4, 0, 0, 0: mean 1, deviations 3, −1, −1, −1 → √(12/4) = √3.
        for _ in 0..4 {
            h.add(DRAM, 0, 1, true);
        }
        assert!((h.active_pages_sd(DRAM) - 3f64.sqrt()).abs() < 1e-12);
        h.clear();
        assert_eq!(h.active_pages_sd(DRAM), 0.0);
    }
}
