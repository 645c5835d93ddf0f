use super::*;

fn load(preset: Option<&str>, sets: &[&str]) -> Result<Config> {
    Config::load(&Sources { preset: preset.map(String::from), sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() })
}

#[test]
fn set_overrides_nested_keys_and_list_entries() {
    let c = load(None, &["machine.tiers.fast.capacity=\"2GiB\"", "machine.caches.2.size=16MiB", "workload.zipf.alpha=1.2"]).unwrap();
    assert_eq!(c.machine.tiers.fast.capacity, crate::units::Capacity::Bytes(2 << 30));
    assert_eq!(c.machine.caches[2].size.bytes(), 16 << 20);
    assert_eq!(c.workload.zipf.alpha, 1.2);
}

#[test]
fn errors_name_the_field() {
    let e = load(None, &["machine.tlb.l1_small_entris=4"]).unwrap_err().to_string();
    assert!(e.starts_with("machine.tlb"), "{e}");
    assert!(e.contains("l1_small_entris"), "{e}");
    let e = load(None, &["machine.cores=-1"]).unwrap_err().to_string();
    assert!(e.starts_with("machine.cores"), "{e}");
    let e = load(None, &["policy.name=nonsense"]).unwrap_err().to_string();
    assert!(e.contains("unknown policy `nonsense`"), "{e}");
    let e = load(Some("nope"), &[]).unwrap_err().to_string();
    assert!(e.contains("unknown preset"), "{e}");
    let e = load(None, &["policy.round-robin.fast_pagez=3"]).unwrap_err().to_string();
    assert!(e.starts_with("policy.round-robin"), "{e}");
    let e = load(None, &["machine.tiers.slow.capacity=\"lots\""]).unwrap_err().to_string();
    assert!(e.starts_with("machine.tiers.slow.capacity"), "{e}");
    // A tier's fields are checked when the configuration loads, not at the run.
    let e = load(None, &["machine.tiers.slow.channels=6"]).unwrap_err().to_string();
    assert_eq!(e, "machine.tiers.slow.channels: must be a power of two, got 6");
}

#[test]
fn walk_reads_are_cached_or_uncached() {
    use crate::machine::WalkReads;
    assert_eq!(load(None, &[]).unwrap().machine.page_table.walk_reads, WalkReads::Cached);
    let c = load(Some("rainbow"), &["machine.page_table.walk_reads=\"uncached\""]).unwrap();
    assert_eq!(c.machine.page_table.walk_reads, WalkReads::Uncached);
    let e = load(None, &["machine.page_table.walk_reads=\"none\""]).unwrap_err().to_string();
    assert_eq!(e, "machine.page_table.walk_reads: unknown variant `none`, expected `cached` or `uncached`");
    // The cxl preset has paging-structure caches, which uncached walks refuse.
    let e = load(Some("cxl"), &["machine.page_table.walk_reads=\"uncached\""]).unwrap_err().to_string();
    assert!(e.starts_with("machine.page_table.walk_reads = \"uncached\" charges every level") && e.contains("machine.tlb.psc"), "{e}");
}

#[test]
fn every_preset_loads_and_round_trips() {
    for (name, _, _) in PRESETS {
        let c = load(Some(name), &[]).unwrap_or_else(|e| panic!("preset {name}: {e}"));
        // `tiersim config` output read back gives the same configuration.
        let text = c.to_toml().unwrap();
        let again: Config = toml::from_str(&text).unwrap_or_else(|e| panic!("preset {name} round trip: {e}"));
        assert_eq!(again.to_toml().unwrap(), text, "preset {name}");
    }
}

#[test]
fn a_preset_based_on_another_keeps_what_it_does_not_override() {
    let base = load(Some("thermostat"), &[]).unwrap();
    let emu = load(Some("thermostat-emulated"), &[]).unwrap();
    // Inherited: the paper's TLBs, THP and the fast tier's share.
    assert_eq!(emu.machine.tlb.l2_small_entries, 1024);
    assert!(emu.machine.page_table.thp);
    assert_eq!(emu.machine.tiers.fast.capacity.to_string(), base.machine.tiers.fast.capacity.to_string());
    // Overridden: the slow tier runs at the fast tier's (DRAM) timing.
    let (fast, slow) = (&emu.machine.tiers.fast, &emu.machine.tiers.slow);
    assert_eq!((slow.read_hit_ns, slow.read_miss_ns, slow.write_hit_ns, slow.write_miss_ns), (fast.read_hit_ns, fast.read_miss_ns, fast.write_hit_ns, fast.write_miss_ns));
    let energy = |t: &crate::machine::tier::TierConfig| {
        [t.read_hit_pj_per_bit, t.read_miss_pj_per_bit, t.write_hit_pj_per_bit, t.write_miss_pj_per_bit, t.static_mw_per_gib]
    };
    for (a, b) in energy(slow).iter().zip(energy(fast)) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    assert_eq!((slow.channels, slow.banks, slow.endurance_writes), (fast.channels, fast.banks, 0));
    assert_eq!(base.machine.tiers.slow.read_miss_ns, 1000.0);
    // Later layers still win over both presets.
    let c = load(Some("thermostat-emulated"), &["machine.tiers.slow.read_miss_ns=500.0"]).unwrap();
    assert_eq!(c.machine.tiers.slow.read_miss_ns, 500.0);
}

fn load_tenants(tenants: &[&str]) -> Result<Config> {
    let sets = vec!["workload.footprint=\"16MiB\"".to_string()];
    Config::load(&Sources { tenants: tenants.iter().map(|t| t.to_string()).collect(), sets, ..Default::default() })
}

#[test]
fn tenants_become_one_slot_per_core_with_their_fast_share() {
    let c = load_tenants(&["vm:kv:25%", "vm:graph-bfs:0.25", "process:pagerank", "vm:stream:25%"]).unwrap();
    assert_eq!(c.machine.cores, 4);
    let slots = c.slots().unwrap();
    let got: Vec<(usize, u16, TenantKind, &str, Option<f64>)> =
        slots.iter().map(|s| (s.core, s.tenant, s.kind, s.workload.name.as_str(), s.fast_share)).collect();
    assert_eq!(
        got,
        [
            (0, 0, TenantKind::Vm, "kv", Some(0.25)),
            (1, 1, TenantKind::Vm, "graph-bfs", Some(0.25)),
            (2, 2, TenantKind::Process, "pagerank", None),
            (3, 3, TenantKind::Vm, "stream", Some(0.25)),
        ]
    );
    // Each slot knows its workload's own footprint: the graph's layout, not 16 MiB.
    assert!(slots[1].footprint_bytes <= 16 << 20 && slots[1].footprint_bytes > 8 << 20);
    // Three whole-page arrays in 16 MiB.
    assert_eq!(slots[3].footprint_bytes, 3 * ((16 << 20) / 3 / 4096 * 4096));
}

#[test]
fn tenant_errors_name_the_option_or_field() {
    let e = |tenants: &[&str]| load_tenants(tenants).unwrap_err().to_string();
    assert!(e(&["vm:kv:150%"]).starts_with("--tenants vm:kv:150%: fast share must be in (0, 1]"), "{}", e(&["vm:kv:150%"]));
    assert!(e(&["vm:kv:0"]).contains("must be in (0, 1]"));
    assert!(e(&["vm:kv:lots"]).contains("is not a share"));
    assert!(e(&["box:kv"]).contains("kind must be `vm` or `process`"));
    assert!(e(&["kv"]).contains("expected kind:workload"));
    assert!(e(&["vm:kv:60%", "vm:stream:60%"]).starts_with("workloads: the tenants' fast_share values add up to 1.2"));
    assert!(e(&["vm:nonsense"]).contains("unknown workload `nonsense`"));
    let both = Sources { mix: vec!["gups".into()], tenants: vec!["vm:kv".into()], ..Default::default() };
    assert!(Config::load(&both).unwrap_err().to_string().starts_with("--tenants:"));
}

#[test]
fn fast_share_in_workload_entries_holds_for_the_whole_tenant() {
    let text = r#"
            [machine]
            cores = 3
            [workload]
            footprint = "16MiB"
            [[workloads]]
            name = "gups"
            tenant = 0
            fast_share = "40%"
            [[workloads]]
            name = "gups"
            tenant = 0
            [[workloads]]
            name = "zipf"
            tenant = 1
            fast_share = 0.5
        "#;
    let dir = crate::scratch::Scratch::new("share");
    let path = dir.join("share.toml");
    std::fs::write(&path, text).unwrap();
    let c = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap();
    let shares: Vec<Option<f64>> = c.slots().unwrap().iter().map(|s| s.fast_share).collect();
    assert_eq!(shares, [Some(0.4), Some(0.4), Some(0.5)]);
    std::fs::write(&path, text.replace("fast_share = 0.5", "fast_share = true")).unwrap();
    let e = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap_err().to_string();
    assert!(e.starts_with("workloads[2].fast_share: expected a share"), "{e}");
    std::fs::write(&path, text.replace("tenant = 0\n            [[workloads]]\n            name = \"zipf\"", "tenant = 0\n            fast_share = 0.3\n            [[workloads]]\n            name = \"zipf\"")).unwrap();
    let e = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap_err().to_string();
    assert!(e.starts_with("workloads[1].fast_share: tenant 0 already has fast_share 0.4"), "{e}");
}

#[test]
fn workloads_inherit_from_workload_and_get_cores() {
    let text = r#"
            [machine]
            cores = 2
            [workload]
            footprint = "64MiB"
            [[workloads]]
            name = "gups"
            [[workloads]]
            name = "zipf"
            kind = "vm"
        "#;
    let dir = crate::scratch::Scratch::new("cfg");
    let path = dir.join("mix.toml");
    std::fs::write(&path, text).unwrap();
    let c = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap();
    let slots = c.slots().unwrap();
    assert_eq!(slots.len(), 2);
    assert_eq!((slots[1].core, slots[1].tenant, slots[1].kind), (1, 1, TenantKind::Vm));
    assert_eq!(slots[0].workload.footprint.bytes(), 64 << 20);
    assert_eq!(slots[1].workload.name, "zipf");
}

#[test]
fn workloads_entries_may_replay_traces() {
    let text = r#"
            [machine]
            cores = 2
            [[workloads]]
            trace = "a.lk.gz"
            format = "lackey"
            skip_malformed = true
            [[workloads]]
            name = "gups"
            tenant = 0
        "#;
    let dir = crate::scratch::Scratch::new("cfg-trace");
    let path = dir.join("traces.toml");
    std::fs::write(&path, text).unwrap();
    let c = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap();
    let slots = c.slots().unwrap();
    let t = slots[0].trace.as_ref().expect("a trace slot");
    assert_eq!((t.path.as_str(), t.format, t.skip_malformed), ("a.lk.gz", Some(Format::Lackey), true));
    assert!(slots[1].trace.is_none());
    std::fs::write(&path, text.replace("\"lackey\"", "\"vcd\"")).unwrap();
    let e = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap_err().to_string();
    assert!(e.starts_with("workloads[0].format: unknown trace format `vcd`"), "{e}");
}

#[test]
fn a_trace_of_threads_takes_a_core_per_thread() {
    use crate::trace::meta::{ThreadCounts, TraceMeta};
    use crate::trace::native::NativeWriter;
    use crate::trace::Access;
    // A recorded trace of two threads (cores 0 and 1), sampled.
    let dir = crate::scratch::Scratch::new("cfg-threads");
    let trace = dir.join("two.tsim");
    let mut w = NativeWriter::with_meta(std::fs::File::create(&trace).unwrap(), true, false).unwrap();
    for i in 0..10u64 {
        w.push(&Access { core: (i % 2) as u16, ..Access::read(0x1000 + 64 * i, 8, 1) }).unwrap();
    }
    let counts = |core| ThreadCounts { core, records: 5, instructions: 10, program_instructions: 40 };
    let sampling = crate::trace::window::Sampling::new(0, Some(40), None, None).unwrap();
    w.set_meta(TraceMeta { recorder: "test".into(), program: vec!["p".into()], sampling, threads: vec![counts(0), counts(1)] }.to_bytes());
    w.finish().unwrap();
    let path = trace.to_str().unwrap().to_string();
    let c = Config::load(&Sources { traces: vec![path.clone()], ..Default::default() }).unwrap();
    let slots = c.slots().unwrap();
    assert_eq!(c.machine.cores, 2);
    let got: Vec<(usize, u16, Option<u16>)> = slots.iter().map(|s| (s.core, s.tenant, s.trace.as_ref().unwrap().thread)).collect();
    assert_eq!(got, [(0, 0, Some(0)), (1, 0, Some(1))]);
    assert_eq!(slots[0].trace.as_ref().unwrap().sampled.as_ref().map(|r| r.scale), Some(4.0));
    // In a config file each thread needs its entry.
    let file = dir.join("threads.toml");
    let entry = |extra: &str| format!("[machine]\ncores = 1\n[[workloads]]\ntrace = \"{path}\"\n{extra}\n");
    std::fs::write(&file, entry("")).unwrap();
    let e = Config::load(&Sources { file: Some(file.clone()), ..Default::default() }).unwrap_err().to_string();
    assert!(e.starts_with("workloads[0]: trace") && e.contains("holds 2 threads (cores 0, 1): give one entry per thread with `thread = N`"), "{e}");
    std::fs::write(&file, entry("thread = 5")).unwrap();
    let e = Config::load(&Sources { file: Some(file.clone()), ..Default::default() }).unwrap_err().to_string();
    assert!(e.starts_with("workloads[0].thread: trace") && e.ends_with("has no thread 5 (its threads: 0, 1)"), "{e}");
    std::fs::write(&file, entry("thread = 1")).unwrap();
    let c = Config::load(&Sources { file: Some(file), ..Default::default() }).unwrap();
    assert_eq!(c.slots().unwrap()[0].trace.as_ref().unwrap().thread, Some(1));
}
