#!/usr/bin/env python3
"""Tables of scripts/linux-figures.sh from its JSON reports (argument: the folder)."""
import sys

import reports

out = sys.argv[1]
WORKLOADS = ["kv", "stream", "graph-bfs", "pagerank", "spmv-cg", "gemm"]
POLICIES = ["first-touch", "linux-tiering", "tpp", "damon-tiering", "thermostat", "rainbow", "oracle-static", "oracle"]


def load(name):
    return reports.load(out, name)


def cycles(r):
    return r["summary"]["cycles"]




def cell(x, fmt):
    return "–" if x is None or x != x else fmt.format(x)


for fast in (25, 50):
    print(f"\n### Fast tier at {fast} % of the footprint\n")
    print("Slowdown against all-fast (cycles ÷ all-fast's); in brackets, the fast-tier share of demand accesses and the MiB migrated. The last column: the geometric mean's distance from oracle's (1.00 = as good).\n")
    print("| policy | " + " | ".join(WORKLOADS) + " | geomean | ÷ oracle |")
    print("|---|" + "---|" * (len(WORKLOADS) + 2))
    base = {w: load(f"all-fast-{w}-25") for w in WORKLOADS}
    rows = []
    for p in POLICIES:
        row, slow = [], []
        for w in WORKLOADS:
            r = load(f"{p}-{w}-{fast}")
            if r is None or base[w] is None:
                row.append("–")
                slow.append(float("nan"))
                continue
            s = cycles(r) / cycles(base[w])
            slow.append(s)
            mib = r["summary"]["migrated_bytes"] / (1 << 20)
            row.append(f"{s:.3f} ({100 * r['summary']['fast_tier_fraction']:.0f} %, {mib:.0f})")
        rows.append((p, row, reports.geomean(slow)))
    oracle = dict((p, g) for p, _, g in rows).get("oracle", float("nan"))
    for p, row, g in rows:
        print(f"| {p} | " + " | ".join(row) + f" | {cell(g, '{:.3f}')} | {cell(g / oracle, '{:.2f}')} |")

LONG = ["first-touch", "linux-tiering", "tpp", "tpp-flush", "damon-tiering", "oracle-static", "oracle"]
if any(load(f"long-{p}-kv") for p in LONG):
    print("\n### 30 s of simulated time, fast tier at 25 %\n")
    print("Slowdown against all-fast; in brackets, the fast-tier share of demand accesses and the MiB migrated. `tpp-flush`: TPP with `machine.costs.flush_on_clear_young = true`.\n")
    print("| policy | kv | stream |")
    print("|---|---|---|")
    base = {w: load(f"long-all-fast-{w}") for w in ("kv", "stream")}
    for p in LONG:
        row = []
        for w in ("kv", "stream"):
            r = load(f"long-{p}-{w}")
            if r is None or base[w] is None:
                row.append("–")
                continue
            mib = r["summary"]["migrated_bytes"] / (1 << 20)
            row.append(f"{cycles(r) / cycles(base[w]):.3f} ({100 * r['summary']['fast_tier_fraction']:.0f} %, {mib:.0f})")
        print(f"| {p} | " + " | ".join(row) + " |")

HOT = ["first-touch", "linux-tiering", "tpp", "tpp-flush", "damon-tiering", "oracle-static", "oracle"]
base = load("hotkv-all-fast")
if base and any(load(f"hotkv-{p}") for p in HOT):
    print("\n### kv with hot keys, 4 KiB pages, fast tier at 25 %\n")
    print("| policy | slowdown vs all-fast | fast-tier share | MiB migrated | simulated s |")
    print("|---|---|---|---|---|")
    for p in HOT:
        r = load(f"hotkv-{p}")
        if r is None:
            continue
        s = r["summary"]
        print(f"| {p} | {cycles(r) / cycles(base):.3f} | {100 * s['fast_tier_fraction']:.0f} % | {s['migrated_bytes'] / (1 << 20):.0f} | {s['seconds']:.1f} |")
