#!/usr/bin/env python3
"""Thermostat's periods around the phase changes of a `hotspot` run with phases.

usage: thermostat_phases.py RUN.json

For every phase change (the workload's phases split the references equally): the
periods from the first to end after it until one measures the slow-memory rate under
its target, with the pages corrected (moved back) and made cold in each, and how many
periods were over target.
"""
import json
import sys

from thermostat_summary import cycle_at


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    run = json.load(open(sys.argv[1]))
    phases = run["config"]["workload"]["hotspot"]["phases"]
    hz = run["summary"]["cycles"] / run["summary"]["seconds"]
    refs = run["summary"]["references"]
    periods = run["policy_report"]["periods"]
    print("| change at (s) | period | end (s) | cold MiB | slow rate (/s) | target (/s) | corrected | made cold |")
    print("|---|---|---|---|---|---|---|---|")
    for k in range(1, phases):
        t = cycle_at(run, refs * k / phases) / hz
        over = 0
        for p in (p for p in periods if p["end_s"] >= t):
            cold = (p["cold_2m_bytes"] + p["cold_4k_bytes"]) >> 20
            print(f'| {t:.2f} | {p["period"]} | {p["end_s"]:.2f} | {cold} | {p["slow_rate"]:.0f} | '
                  f'{p["target_rate"]:.0f} | {p["corrected"]} | {p["new_cold"]} |')
            if p["slow_rate"] <= p["target_rate"]:
                break
            over += 1
        print(f"| {t:.2f} | {over} periods over target | | | | | | |")

if __name__ == "__main__":
    main()
