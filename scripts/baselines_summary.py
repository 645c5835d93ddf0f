#!/usr/bin/env python3
"""Tables of scripts/baselines-figures.sh from its JSON reports (argument: the folder)."""
import sys

from reports import geomean, load

out = sys.argv[1]




def core_time(c):
    """A core's time in cycles: instructions / IPC (older reports left `cycles` at 0)."""
    return c["instructions"] / c["ipc"] if c["ipc"] else float("nan")




POL = ["numa-balancing", "memory-mode", "nimble", "hemem", "hmm-v"]
NAMES = {"numa-balancing": "NUMA_B", "memory-mode": "MM", "nimble": "Nimble", "hemem": "HeMem", "hmm-v": "HMM-V"}

for sec, title in [("single4k", "4 KiB pages"), ("singlethp", "THP")]:
    rows = []
    for w in ["pagerank", "graph-bfs", "kv"]:
        for size in ["S", "L"]:
            runs = {p: load(out, f"{sec}-{w}-{size}-{p}") for p in POL + ["all-fast"]}
            nb, dram = runs["numa-balancing"], runs["all-fast"]
            if not nb or not dram:
                continue
            cells = []
            for p in POL:
                r = runs[p]
                if not r:
                    cells.append("–")
                    continue
                t = r["summary"]["cycles"]
                cells.append(f"{nb['summary']['cycles'] / t:.2f} ({100 * dram['summary']['cycles'] / t:.0f} %)")
            rows.append(f"| {w} {size} | " + " | ".join(cells) + " |")
    if rows:
        print(f"## §5.8 / Fig. 7, one VM, {title}: performance over NUMA_B (and % of all-DRAM)\n")
        print("| workload | " + " | ".join(NAMES[p] for p in POL) + " |")
        print("|---|" + "---|" * len(POL))
        print("\n".join(rows) + "\n")
        for w in ["pagerank", "graph-bfs", "kv"]:
            for size in ["S", "L"]:
                r = load(out, f"{sec}-{w}-{size}-memory-mode")
                if r:
                    mm = r["memory_mode"]
                    print(f"- MM {w} {size}: load miss ratio {100 * mm['read_miss_ratio']:.1f} %, dirty evictions {mm['total']['dirty_evictions']}")
                n = load(out, f"{sec}-{w}-{size}-nimble")
                if n:
                    pr = n["policy_report"]
                    print(f"- Nimble {w} {size}: {pr['steps']} steps, {pr['promoted_pages']} promoted, {pr['demoted_pages']} demoted, {pr['exchanges']} exchanges, {pr['failed_moves']} refused")
                h = load(out, f"{sec}-{w}-{size}-hemem")
                if h:
                    pr = h["policy_report"]
                    print(f"- HeMem {w} {size}: {pr['samples']} samples, {pr['hot_pages']} hot pages, {pr['promoted_pages']} promoted, {pr['demoted_pages']} demoted")
        print()

rows = []
for seed, h in [(seed, h) for seed in ["", "s5-"] for h in ["0.1", "0.2", "0.4", "0.8"]]:
    nb, hv = load(out, f"fig5a-{seed}{h}-numa-balancing"), load(out, f"fig5a-{seed}{h}-hmm-v")
    if not nb:
        continue

    def perf(r, warm):
        if not r:
            return "–"
        s = r["slowdown"]
        pct = s["after_warmup"]["percent"] if warm else s["percent"]
        return f"{100 / (1 + pct / 100):.1f} %"

    hint = nb["policy_report"]["hinting"]
    where = nb["summary"]["fast_tier_fraction"]
    rows.append(f"| {seed[1:2] and seed[1:-1] or '1'} | {float(h) * 100:.0f} % | {100 * where:.0f} % | {perf(nb, False)} / {perf(nb, True)} | {perf(hv, False)} / {perf(hv, True)} | {hint['hint_faults']} ({hint['promoted']} promoted) |")
if rows:
    print("## §5.6.1 / Fig. 5a: performance of all-DRAM, whole run / after 60 %\n")
    print("| seed | hot set | NUMA_B fast-tier share | NUMA_B | HMM-V | NUMA_B hint faults |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows) + "\n")

one = {w: {p: load(out, f"twovm-one-{w}-{p}") for p in ["memory-mode", "hmm-v", "all-fast"]} for w in ["kv", "graph-bfs"]}
two = {p: load(out, f"twovm-two-{p}") for p in ["memory-mode", "hmm-v", "numa-balancing", "nimble", "all-fast"]}
if two["memory-mode"]:
    print("## §5.9.2: two VMs with THP sharing the DRAM\n")
    print("| VM | MM load miss ratio alone | beside the other | MM load misses per 1000 instructions alone | beside the other | " + " | ".join(f"{NAMES[p]} alone" for p in ["memory-mode", "hmm-v"]) + " | " + " | ".join(f"{NAMES[p]} two VMs" for p in ["memory-mode", "hmm-v", "numa-balancing", "nimble"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    mm2 = two["memory-mode"]["memory_mode"]["tenants"]
    mpki = lambda t, c: 1000 * t["read_misses"] / c["instructions"]
    for i, w in enumerate(["kv", "graph-bfs"]):
        alone = one[w]["memory-mode"]
        a_ratio = f"{100 * alone['memory_mode']['read_miss_ratio']:.1f} %" if alone else "–"
        a_mpki = f"{mpki(alone['memory_mode']['total'], alone['cores'][0]):.1f}" if alone else "–"
        b_mpki = f"{mpki(mm2[i], two['memory-mode']['cores'][i]):.1f}"
        cells = []
        for p in ["memory-mode", "hmm-v"]:
            r, d = one[w][p], one[w]["all-fast"]
            cells.append(f"{100 * d['summary']['cycles'] / r['summary']['cycles']:.1f} %" if r and d else "–")
        for p in ["memory-mode", "hmm-v", "numa-balancing", "nimble"]:
            r, d = two[p], two["all-fast"]
            cells.append(f"{100 * core_time(d['cores'][i]) / core_time(r['cores'][i]):.1f} %" if r and d else "–")
        print(f"| {w} | {a_ratio} | {100 * mm2[i]['read_miss_ratio']:.1f} % | {a_mpki} | {b_mpki} | " + " | ".join(cells) + " |")
    print("\n(performance = all-DRAM time / time, per VM)\n")

def four_vms(prefix, title, policies):
    four = {p: load(out, f"{prefix}-{f}") for p, f in policies + [("all-fast", "all-fast")]}
    if not (four.get("numa-balancing") and four["all-fast"]):
        return
    print(f"## {title} (performance = all-DRAM time / time, per VM)\n")
    names = ["VM1 stream", "VM2 graph500", "VM3 kv", "VM4 pagerank"]
    print("| policy | " + " | ".join(names) + " | geomean |")
    print("|---|---|---|---|---|---|")
    g = {}
    for p, _ in policies:
        r = four[p]
        if not r:
            continue
        per = [core_time(d) / core_time(c) for c, d in zip(r["cores"], four["all-fast"]["cores"])]
        g[p] = geomean(per)
        print(f"| {NAMES.get(p, p)} | " + " | ".join(f"{100 * x:.1f} %" for x in per) + f" | {100 * g[p]:.1f} % |")
    print()
    for p in [p for p, _ in policies if p != "numa-balancing" and p in g]:
        print(f"- {NAMES.get(p, p)} over NUMA_B: {100 * (g[p] / g['numa-balancing'] - 1):+.1f} % (geomean)")
    for p in ["hmm-v island", "hmm-v pool"]:
        for base in ["memory-mode", "nimble"]:
            if p in g and base in g:
                print(f"- {p} over {NAMES[base]}: {g[p] / g[base]:.2f}×")
    mm = four.get("memory-mode")
    if mm:
        print("- MM load miss ratio per VM: " + ", ".join(f"{100 * t['read_miss_ratio']:.1f} %" for t in mm["memory_mode"]["tenants"]))
    print()


four_vms("fourvm", "§5.9.1: four VMs, 4 KiB pages", [("numa-balancing", "numa-balancing"), ("memory-mode", "memory-mode"), ("hmm-v island", "hmm-v"), ("hmm-v pool", "hmm-v-pool")])
four_vms("fourvmthp", "§5.9.2: four VMs, THP", [("numa-balancing", "numa-balancing"), ("memory-mode", "memory-mode"), ("nimble", "nimble"), ("hmm-v island", "hmm-v"), ("hmm-v pool", "hmm-v-pool")])

kv = {p: load(out, f"kv1k-L-{p}") for p in ["numa-balancing", "memory-mode", "hmm-v", "all-fast"]}
if kv["numa-balancing"] and kv["all-fast"]:
    print("\n## kv L with 1 KiB values, 4 KiB pages: performance over NUMA_B (and % of all-DRAM)\n")
    nb, af = kv["numa-balancing"]["summary"]["cycles"], kv["all-fast"]["summary"]["cycles"]
    for p in ["memory-mode", "hmm-v"]:
        r = kv[p]
        if r:
            extra = f", load miss ratio {100 * r['memory_mode']['read_miss_ratio']:.1f} %" if "memory_mode" in r else ""
            print(f"- {NAMES[p]}: {nb / r['summary']['cycles']:.2f} ({100 * af / r['summary']['cycles']:.0f} %){extra}")
