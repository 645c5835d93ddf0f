#!/usr/bin/env python3
"""Summarises Thermostat runs against an all-fast run of the same input.

usage: thermostat_summary.py ALL_FAST.json RUN.json [RUN.json ...]

Prints one row per run: target, achieved slowdown, its monitoring part (poison faults
on sampled pages), the rest (slow memory, migrations, split pages), cold fraction
(average over periods and at the end), periods whose slow-memory rate exceeded the
target, migration and false-classification rates (Table 3).
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2])
    base = load(sys.argv[1])
    base_cycles = base["summary"]["cycles"]
    base_s = base["summary"]["seconds"]
    print("| run | policy | target % | slowdown % | monitoring % | rest % | avg cold % | end cold % | periods | over target | migration MB/s | false class. MB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sys.argv[2:]:
        r = load(path)
        slow = (r["summary"]["cycles"] / base_cycles - 1) * 100
        pr = r.get("policy_report", {})
        periods = pr.get("periods", [])
        mon = pr.get("monitoring", {}).get("sample_fault_seconds", 0.0) / base_s * 100
        if periods:
            last = periods[-1]
            total = sum(last[k] for k in ("hot_2m_bytes", "hot_4k_bytes", "cold_2m_bytes", "cold_4k_bytes"))
            end_cold = (last["cold_2m_bytes"] + last["cold_4k_bytes"]) / total * 100
            over = sum(1 for p in periods if p["slow_rate"] > p["target_rate"])
            target = ", ".join(sorted({f'{p["target_pct"]:g}' for p in periods}))
            avg_cold = pr["average_cold_fraction"] * 100
            mig = f'{pr["migration_mb_per_s"]:.1f}'
            fc = f'{pr["false_classification_mb_per_s"]:.1f}'
        else:
            end_cold = avg_cold = float("nan")
            over, target, mig, fc = "", "", "", ""
        print(f"| {path} | {r['policy']} | {target} | {slow:.2f} | {mon:.2f} | {slow - mon:.2f} | "
              f"{avg_cold:.1f} | {end_cold:.1f} | {len(periods)} | {over} | {mig} | {fc} |")


if __name__ == "__main__":
    main()
