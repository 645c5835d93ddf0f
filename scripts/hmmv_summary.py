#!/usr/bin/env python3
"""Tables of scripts/hmm-v-figures.sh from its JSON reports (argument: the folder)."""
import json
import os
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def slow(r, warm=False):
    s = r.get("slowdown") or {}
    if warm and s.get("after_warmup"):
        return s["after_warmup"]["percent"]
    return s.get("percent", float("nan"))


def perf(r, warm=False):
    """Performance relative to all-DRAM, as the paper plots it."""
    return 100.0 / (1.0 + slow(r, warm) / 100.0)


def windows(r):
    w = [x for x in r["policy_report"]["windows"]]
    return w


print("## Fig. 2a: VM memory scanned per window (hot set of X % of a 1 GiB RSS, 600 ms windows)\n")
print("| accesses on the hot set | hot X % | GPT pages scanned (of all) | GPT scanner MiB | (no queue) MiB | EPT scanner MiB | tracking slowdown: GPT / GPT no queue / EPT |")
print("|---|---|---|---|---|---|---|")
for r_ in ["0.9", "moving"]:
    for h in ["0.05", "0.1", "0.2", "0.4", "0.8"]:
        g, n, e, none = (load(f"fig2a-{r_}-{h}-{k}") for k in ["gpt", "gpt-nomlq", "ept", "none"])
        if not all([g, e, none]):
            continue

        def mean(r, key):
            w = windows(r)
            return sum(x[key] for x in w) / max(1, len(w))

        def mib(r):
            return mean(r, "mapped_bytes") / 2**20

        def over(r):
            return (r["summary"]["cycles"] / none["summary"]["cycles"] - 1) * 100

        total = g["policy_report"]["vms"][0]["gpt_pages"]
        nq = (f"{mib(n):.0f}", f"{over(n):.2f}") if n else ("–", "–")
        label = "90 %" if r_ == "0.9" else "100 %, moving 4×"
        print(f"| {label} | {float(h)*100:.0f} | {mean(g, 'gpt_pages'):.0f} ({total}) | {mib(g):.0f} | {nq[0]} | {mib(e):.0f} | {over(g):.2f} / {nq[1]} / {over(e):.2f} % |")

print("\n## Tables 3–5: migrating the whole RSS from NVM to DRAM\n")
print("| access | RSS | variant | slowdown vs DRAM | VMTraps: EPT violation + write protection (TLB-flush kicks; other) | pages moved | recopied | accesses that met a moving page | time migrating, s | MB/s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for rw, name in [("0.0", "random read"), ("1.0", "random write")]:
    for fp in ["256MiB", "1GiB"]:
        for how in ["pml", "write-protect", "linux", "nvm"]:
            r = load(f"tables-{rw}-{fp}-{how}")
            if not r:
                continue
            if how == "nvm":
                print(f"| {name} | {fp} | NVM only | {slow(r):.1f} % | | | | | | |")
                continue
            v, m = r["vm_exits"], r["vm_moves"]
            other = v["pml_full"] + v["hypercall"] + v["kick"]
            rounds = r["policy_report"]["rounds"]
            mig = sum(x["end_s"] - x["tracked_s"] for x in rounds)
            migrated = sum(x["migrated_mb"] for x in rounds)
            moved = m["pml"] + m["linux"] + m["write_protect"]
            print(f"| {name} | {fp} | {how} | {slow(r):.1f} % | {v['ept_violation'] + v['write_protect']} ({v['tlb_flush']}; {other}) | {moved} | {m['pml_recopied']} | {m['waits']} | {mig:.3f} | {migrated / max(mig, 1e-9):.0f} |")

print("\n## Fig. 4: ablation (performance relative to all-DRAM, steady state after half the run)\n")
print("| workload | HMM-V | +EPT scanner | +fixed threshold | +PM_Linux | no migration |")
print("|---|---|---|---|---|---|")
for w in ["graph-bfs", "seqscan"]:
    rs = [load(f"fig4-{w}-{k}") for k in ["hmmv", "ept", "fixed", "linux", "none"]]
    if not all(rs):
        continue
    print(f"| {w} | " + " | ".join(f"{perf(r, True):.1f} %" for r in rs) + " |")

print("\n## Fig. 5a: fixed hot set (performance relative to all-DRAM, after 60 % of the run)\n")
print("| hot set % | HMM-V | hot frames | DRAM frames | pages promoted |")
print("|---|---|---|---|---|")
for h in ["0.1", "0.2", "0.4", "0.8"]:
    r = load(f"fig5a-{h}")
    if not r:
        continue
    rd = r["policy_report"]["rounds"]
    x = rd[0] if rd else {}
    print(f"| {float(h)*100:.0f} | {perf(r, True):.1f} % | {x.get('hot_frames', 0)} | {x.get('dram_frames_allowed', 0)} | {x.get('promoted_pages', 0)} |")
r, n = load("fig5b-hmmv"), load("fig5b-none")
if r and n:
    print(f"\nFig. 5b (four hot regions in turn): HMM-V {perf(r):.1f} % of all-DRAM over the whole run, no migration {perf(n):.1f} %; rounds: {len(r['policy_report']['rounds'])}")

print("\n## §5.9.1: four VMs, island vs pool (performance relative to all-DRAM, whole run and after half)\n")
for mode in ["island", "pool"]:
    r = load(f"multivm-{mode}")
    if not r:
        continue
    vms = r["policy_report"]["vms"]
    dram = ", ".join(f"VM{v['tenant']+1} {v['initial_dram_frames']*4/1024:.0f}→{v['dram_frames']*4/1024:.0f} MiB" for v in vms)
    d = load("multivm-dram")
    per = ""
    if d:
        # A core's time: instructions / IPC (the reports of older builds left the
        # per-core `cycles` at 0).
        t = lambda c: c["instructions"] / c["ipc"]
        per = "; per VM " + ", ".join(f"VM{i+1} {100 * t(dc) / t(c):.1f} %" for i, (c, dc) in enumerate(zip(r["cores"], d["cores"])))
    print(f"- {mode}: {perf(r):.1f} % / {perf(r, True):.1f} % (the slowest VM){per}; DRAM {dram}")
