#!/usr/bin/env python3
"""Summarises Thermostat (and kstaled) runs against an all-fast run of the same input.

usage: thermostat_summary.py [--from F] ALL_FAST.json RUN.json [RUN.json ...]

One Markdown row per run: the tolerable slowdown x, the achieved slowdown over the
whole run and over the references after fraction F of them (the steady state after
warm-up; default F = 0), the throughput lost over the latter (the paper's measure:
1 - T_all-fast / T_run), the monitoring share of the run's time (poison faults on
sampled pages) and the loss without it, the cold fraction (average over periods and at the end),
the periods after warm-up whose measured slow-memory rate exceeded the target and that
rate's mean ratio to the target, and the migration and false-classification rates
(Table 3).
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def pct(x):
    """Two decimals, without a sign on what rounds to zero."""
    return f"{round(x, 2) + 0.0:.2f}"


def cycle_at(run, refs):
    """Cycle at which the run had issued `refs` references (linear within an epoch)."""
    done, start = 0, 0
    for e in run["epochs"]:
        if done + e["references"] >= refs and e["references"] > 0:
            return start + (e["end_cycle"] - start) * (refs - done) / e["references"]
        done += e["references"]
        start = e["end_cycle"]
    return run["summary"]["cycles"]


def main():
    args = sys.argv[1:]
    start = 0.0
    if args[:1] == ["--from"]:
        if len(args) < 2:
            sys.exit("--from: needs a fraction in [0, 1)")
        start = float(args[1])
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    base = load(args[0])
    refs = base["summary"]["references"]
    r0 = start * refs
    base_all = base["summary"]["cycles"]
    base_win = base_all - cycle_at(base, r0)
    print(f"| policy | x % | slowdown % | after {start:.0%} of refs % | throughput loss after % | monitoring % | loss without monitoring % | avg cold % | end cold % "
          "| periods | over target after warm-up | slow rate / target after warm-up | migration MB/s | false class. MB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args[1:]:
        r = load(path)
        if r["summary"]["references"] != refs:
            sys.exit(f"{path}: {r['summary']['references']} references, the reference run has {refs}")
        whole = (r["summary"]["cycles"] / base_all - 1) * 100
        c0 = cycle_at(r, r0)
        own_win = r["summary"]["cycles"] - c0
        window = (own_win / base_win - 1) * 100
        loss = (1 - base_win / own_win) * 100
        pr = r.get("policy_report", {})
        periods = pr.get("periods", [])
        # Share of the run's time spent in poison faults on sampled pages, comparable
        # with the throughput loss (a share of the run's time too).
        mon = pr.get("monitoring", {}).get("sample_fault_seconds", 0.0) / r["summary"]["seconds"] * 100
        row = [r["policy"], "", pct(whole), pct(window), pct(loss), pct(mon), pct(loss - mon)]
        if periods:
            last = periods[-1]
            total = sum(last[k] for k in ("hot_2m_bytes", "hot_4k_bytes", "cold_2m_bytes", "cold_4k_bytes"))
            end_cold = (last["cold_2m_bytes"] + last["cold_4k_bytes"]) / total * 100
            t0 = c0 / (r["summary"]["cycles"] / r["summary"]["seconds"])
            late = [p for p in periods if p["end_s"] >= t0]
            over = sum(1 for p in late if p["slow_rate"] > p["target_rate"])
            ratio = sum(p["slow_rate"] / p["target_rate"] for p in late) / max(len(late), 1)
            row[1] = "/".join(sorted({f'{p["target_pct"]:g}' for p in periods}))
            row += [f'{pr["average_cold_fraction"] * 100:.1f}', f"{end_cold:.1f}", str(len(periods)),
                    f"{over} of {len(late)}", f"{ratio:.2f}", f'{pr["migration_mb_per_s"]:.1f}', f'{pr["false_classification_mb_per_s"]:.1f}']
        elif "demoted_pages" in pr:
            row += ["", "", "", "", "", f'demoted {pr["demoted_pages"]}', f'promoted {pr["promoted_pages"]}']
        else:
            row += [""] * 7
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
