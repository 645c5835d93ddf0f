#!/usr/bin/env python3
"""The table of scripts/sampled-validation.sh: for every run done in both modes, each
summary figure of sampled mode against detailed mode, and the speed-up."""
import json
import os
import sys

FIGURES = [("cycles", "cycles"), ("IPC", "ipc"), ("AMAT", "amat_ns"), ("fast share", "fast_tier_fraction")]


def load(path):
    with open(path) as f:
        return json.load(f)


def rel(d, s):
    if d == s:
        return 0.0
    return (s - d) / d * 100 if d else float("inf")


def main(out):
    names = sorted({f[: -len("-detailed.json")] for f in os.listdir(out) if f.endswith("-detailed.json")})
    runs = {}
    for n in names:
        s = os.path.join(out, n + "-sampled.json")
        if os.path.exists(s):
            runs[n] = (load(os.path.join(out, n + "-detailed.json")), load(s))
    head = ["run"] + [f"{a} %" for a, _ in FIGURES] + ["page moves (detailed → sampled)", "slowdown %", "model error %", "detailed share", "speed-up"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    worst = {a: 0.0 for a, _ in FIGURES}
    worst["page moves"] = 0.0
    worst["slowdown"] = 0.0
    speedups = []
    for n, (d, s) in runs.items():
        row = [n]
        for a, k in FIGURES:
            e = rel(d["summary"][k], s["summary"][k])
            worst[a] = max(worst[a], abs(e))
            row.append(f"{e:+.2f}")
        dm, sm = d["summary"]["page_moves"], s["summary"]["page_moves"]
        if dm:
            worst["page moves"] = max(worst["page moves"], abs(rel(dm, sm)))
        row.append(f"{dm} → {sm}")
        slow = ""
        if n.endswith("-first-touch"):
            w = n[: -len("-first-touch")]
            if w + "-all-fast" in runs:
                fd, fs = runs[w + "-all-fast"]
                sd_d = d["summary"]["cycles"] / fd["summary"]["cycles"] - 1
                sd_s = s["summary"]["cycles"] / fs["summary"]["cycles"] - 1
                e = rel(1 + sd_d, 1 + sd_s)
                worst["slowdown"] = max(worst["slowdown"], abs(e))
                slow = f"{e:+.2f}"
        row.append(slow)
        sm = s.get("sampling", {})
        row.append(f"{sm.get('model_error_mean', 0) * 100:.2f}")
        row.append(f"{sm.get('detailed_share', 0):.3f}")
        sp = d["sim"]["wall_seconds"] / s["sim"]["wall_seconds"] if s["sim"]["wall_seconds"] else 0
        speedups.append(sp)
        row.append(f"{sp:.2f}×")
        print("| " + " | ".join(row) + " |")
    print()
    print("largest |error|: " + ", ".join(f"{a} {v:.2f} %" for a, v in worst.items()))
    if speedups:
        g = 1.0
        for x in speedups:
            g *= x
        print(f"speed-up: geometric mean {g ** (1 / len(speedups)):.2f}×, min {min(speedups):.2f}×, max {max(speedups):.2f}×")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sampled-validation")
