//! The machine's extension point: a redirection structure at the memory controller
//! sees every access that reaches memory, and only those.

use super::memory::Tiers;
use super::redirect::Layout;
use super::*;
use crate::units::Capacity;

/// Counts the accesses that reach memory and adds 7 cycles to each demand one, as a
/// table lookup in the memory controller would.
#[derive(Default)]
struct Lookup {
    demand: u64,
    background: u64,
}

impl Redirect for Lookup {
    type Spec = ();
    fn build(_: &(), _: &Layout, _: Vec<u64>, _: Vec<u64>) -> anyhow::Result<Lookup> {
        Ok(Lookup::default())
    }
    fn memory<O: Observer>(&mut self, tiers: &mut Tiers, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, background: bool, obs: &mut O) -> u64 {
        if background {
            self.background += 1;
            tiers.background(paddr, write, at)
        } else {
            self.demand += 1;
            tiers.access(core, paddr, write, kind, at, obs) + 7
        }
    }
}

fn machines() -> (Machine, Machine<Lookup>) {
    let mut cfg = MachineConfig::default();
    cfg.tiers.fast.capacity = Capacity::Bytes(8 << 20);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 << 20);
    let plain = Machine::new(&cfg, &Build::new(&cfg, &[TenantKind::Process], 1 << 20)).unwrap();
    let looked = Machine::<Lookup>::new(&cfg, &Build::new(&cfg, &[TenantKind::Process], 1 << 20)).unwrap();
    (plain, looked)
}

#[test]
fn a_structure_at_the_memory_controller_sees_every_memory_access_and_only_those() {
    let (mut plain, mut m) = machines();
    const BASE: u64 = 0x7f00_0000_0000;
    let mut extra = 0;
    for i in 0..2000u64 {
        // A write pass over 1 MiB, then reads of it: misses, hits and write-backs.
        let a = if i < 256 { Access::write(BASE + i * 4096, 8, 3) } else { Access::read(BASE + (i % 256) * 4096 + (i % 7) * 64, 8, 3) };
        let (p, q) = (plain.access(0, &a, &mut ()), m.access(0, &a, &mut ()));
        assert_eq!(p.level, q.level, "access {i}: the same caches");
        if q.level == m.memory().caches().depth() {
            // A demand miss: 7 cycles more than without the structure.
            extra += 1;
            assert_eq!(q.data_cycles, p.data_cycles + 7, "access {i}");
        }
    }
    let llc = m.memory().caches().stats().last().cloned().unwrap();
    // Every demand access that reached memory: LLC misses of the program's references
    // and its page walks, and dirty lines the LLC wrote back.
    assert!(extra > 0);
    assert_eq!(m.redirect().demand, llc.misses + llc.writebacks);
    assert_eq!(m.redirect().background, 0, "no mechanism ran");
    assert_eq!(m.memory().tiers().demand(TierId::FAST).accesses, plain.memory().tiers().demand(TierId::FAST).accesses);
}
