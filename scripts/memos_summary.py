"""Tables of docs/policies/memos.md from the runs of scripts/memos-figures.sh."""
import sys

from reports import load

SETS = ["kv", "gups-chase", "kv-stream"]
POLICIES = ["all-fast", "all-slow", "interleave", "cache-bank-colouring", "memos"]
SENSITIVITY = ["k_len-1", "k_len-5", "hot_share-0.3", "hot_share-0.7", "thrash_max_gap-0", "dma_demotions-false"]


def tier(r, i, key):
    return r["tiers"][i][key] if len(r["tiers"]) > i else 0


def share(r, key):
    a, b = tier(r, 0, key), tier(r, 1, key)
    return a / (a + b) if a + b else float("nan")


def throughput(r):
    return r["summary"]["instructions"] / r["summary"]["seconds"]


def ratio(a, b):
    return a / b if b else float("nan")


def fmt(x, spec=".2f"):
    return "–" if x is None or x != x else format(x, spec)


def row(name, r, base):
    s = r["summary"]
    life = tier(r, 1, "start_gap_lifetime_years")
    base_life = tier(base, 1, "start_gap_lifetime_years") if base else None
    return "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} |".format(
        name,
        fmt(ratio(throughput(r), throughput(base)) if base else None, ".3f"),
        fmt(s["amat_ns"], ".1f"),
        fmt(share(r, "writes") * 100, ".1f"),
        fmt(share(r, "reads") * 100, ".1f"),
        fmt(ratio(tier(r, 1, "reads"), tier(base, 1, "reads")) if base else None),
        fmt(ratio(tier(r, 1, "writes"), tier(base, 1, "writes")) if base else None),
        fmt(tier(r, 1, "amat_ns"), ".1f"),
        fmt(tier(r, 1, "dynamic_energy_j"), ".1f"),
        fmt(ratio(life, base_life) if life and base_life else None),
        fmt(ratio(s["llc_mpki"], base["summary"]["llc_mpki"]) if base else None, ".3f"),
        fmt(tier(r, 0, "bank_imbalance")),
        fmt(tier(r, 1, "bank_imbalance")),
        s["migrations"],
    )


HEADER = (
    "| policy | throughput vs interleave | AMAT ns | DRAM share of writes % | DRAM share of reads % | NVM reads vs interleave | NVM writes vs interleave "
    "| NVM AMAT ns | NVM dynamic energy J | NVM lifetime vs interleave | LLC misses vs interleave | bank imbalance DRAM / NVM | migrations |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(folder):
    for s in SETS:
        base = load(folder, f"{s}-interleave")
        runs = [(p, load(folder, f"{s}-{p}")) for p in POLICIES]
        runs += [(f"memos {v.replace('-', ' = ', 1)}", load(folder, f"{s}-memos-{v}")) for v in SENSITIVITY]
        runs = [(p, r) for p, r in runs if r]
        if not runs:
            continue
        secs = max(r["summary"]["seconds"] for _, r in runs)
        print(f"\n### {s} ({secs:.1f} s simulated)\n")
        print(HEADER)
        for p, r in runs:
            print(row(p, r, base))
        m = load(folder, f"{s}-memos")
        if not m:
            continue
        p = m["policy_report"]
        st = p["stats"]
        life = [tier(r, 1, "start_gap_lifetime_years") for name, r in runs if name in ("interleave", "memos")]
        ghz = m["config"]["machine"]["freq_ghz"]
        th = m["threads"]
        cycles = m["summary"]["cycles"]
        cpu_us = th[1]["busy_cycles"] / max(1, th[1]["ops_done"]) / ghz / 1e3
        dma = m["vm_moves"]["dma"] if m.get("vm_moves") else 0
        print(f"\nSysMon busy {100 * th[0]['busy_cycles'] / cycles:.1f} % of the run; a locked CPU move takes {cpu_us:.2f} µs of its thread "
              f"(paper §7.4: 3 µs per 4 KB); the DMA engine was busy {th[2]['busy_cycles'] / ghz / 1e3:.0f} µs for {dma} pages.")
        print(f"\nmemos: {st['rounds']} rounds ({st['rounds_skipped']} skipped), {st['promoted']} pages promoted (CPU), "
              f"{st['demoted']} demoted (of them {st['balanced_pages']} by bandwidth balancing in {st['balance_steps']} steps), "
              f"{st['demote_discarded']} DMA copies discarded as written, {st['rebalanced']} moved between banks; "
              f"refused: {p['refused'] or 'none'}; NVM Start-Gap lifetime {', '.join(fmt(x, '.3g') for x in life)} years (interleave, memos).")
        ser = p["series"]
        n = len(ser["end_s"])
        if n == 0:
            continue
        print("\nPer pass (Fig. 13, Fig. 15): hot / cold pages sampled in each channel (the HOT/COLD rate is their ratio), WD/RD = sampled writes / reads; "
              "bank SD = standard deviation of active pages per bank; utilisation of the channel's peak bandwidth.\n")
        print("| end s | DRAM hot / cold | NVM hot / cold | DRAM WD/RD | NVM WD/RD | DRAM bank SD | NVM bank SD | DRAM util | NVM util |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i in sorted(set(list(range(0, n, max(1, n // 8))) + [n - 1])):
            hot, cold, rd, wr = ser["hot"][i], ser["cold"][i], ser["reads"][i], ser["writes"][i]
            print("| {:.1f} | {} | {} | {} | {} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |".format(
                ser["end_s"][i],
                f"{hot[0]} / {cold[0]}", f"{hot[1]} / {cold[1]}",
                fmt(ratio(wr[0], rd[0])), fmt(ratio(wr[1], rd[1])),
                ser["bank_sd"][i][0], ser["bank_sd"][i][1],
                ser["utilisation"][i][0], ser["utilisation"][i][1]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "memos-figures")
