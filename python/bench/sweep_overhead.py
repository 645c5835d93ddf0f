"""What a sweep costs beyond its simulations (BENCHMARKS.md, "Sweep overhead").

Runs the same grid of tiny runs (kv, 64 MiB, 1 M references, seeds 1..N) into a new
store each time with `tiersim sweep`, with `tiersim.sweep` on local threads, and
with `tiersim.sweep` on a two-worker Dask LocalCluster, and compares each
sweep's elapsed time with its runs' simulation time (`sim.wall_seconds` of their
reports). It also times the store writes alone (`Store.record` of the same reports).
Prints the median of `--repeat` sweeps of each kind.

    python python/bench/sweep_overhead.py --tiersim target/release/tiersim [--runs 20] [--repeat 5]

Needs the package with its Dask extra (`pip install './python[dask]'`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import tiersim
from tiersim import _native
from tiersim.sweep import checked_grid

REFS = 1_000_000


def grid(runs: int) -> dict[str, Any]:
    return {"run": {"workload": "kv", "footprint": "64MiB", "refs": REFS}, "axes": {"seed": list(range(1, runs + 1))}}


def measure(sweep: Callable[[Path], None], db: Path) -> dict[str, float]:
    """Runs `sweep` into the new store `db`; returns its elapsed time and its runs'
    summed simulation time and run time (`wall_seconds`), in seconds."""
    started = time.perf_counter()
    sweep(db)
    elapsed = time.perf_counter() - started
    frame = tiersim.load(db, reports=True)
    assert (frame["status"] == "ok").all()
    sim = sum(r.raw["sim"]["wall_seconds"] for r in frame["report"])
    return {"elapsed": elapsed, "sim": sim, "run": float(frame["wall_seconds"].sum())}


def store_writes(db: Path, reports: list[str], runs: int) -> float:
    """Seconds to record `reports` into the new store `db`, one transaction each."""
    g = checked_grid(grid(runs))
    store = _native.Store(db, create=True)
    store.begin(g)
    started = time.perf_counter()
    for seq, report in enumerate(reports):
        store.record(g, seq, 0.0, report=report)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiersim", type=Path, required=True, help="the tiersim binary")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    seeds = ",".join(str(s) for s in range(1, args.runs + 1))
    flags = ["--workload", "kv", "--footprint", "64MiB", "--refs", str(REFS), "--axis", f"seed={seeds}"]

    def cli(jobs: int) -> Callable[[Path], None]:
        def sweep(db: Path) -> None:
            subprocess.run([str(args.tiersim), "sweep", "--db", str(db), *flags, "-j", str(jobs)], check=True, capture_output=True)

        return sweep

    def local(jobs: int | None, client: Any = None) -> Callable[[Path], None]:
        def sweep(db: Path) -> None:
            tiersim.sweep(grid(args.runs), db=db, jobs=jobs, client=client)

        return sweep

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
    with tempfile.TemporaryDirectory() as tmp, cluster, Client(cluster) as client:
        # Name, parallelism, sweep.
        kinds: list[tuple[str, int, Callable[[Path], None]]] = [
            ("tiersim sweep -j 1", 1, cli(1)),
            (f"tiersim sweep -j {args.jobs}", args.jobs, cli(args.jobs)),
            ("tiersim.sweep(jobs=1)", 1, local(1)),
            (f"tiersim.sweep(jobs={args.jobs})", args.jobs, local(args.jobs)),
            ("tiersim.sweep(client=…), 2 Dask workers", 2, local(None, client)),
        ]
        results: list[list[dict[str, float]]] = [[] for _ in kinds]
        writes = []
        for i in range(args.repeat):
            for k, (_, _, sweep) in enumerate(kinds):
                results[k].append(measure(sweep, Path(tmp) / f"{k}-{i}.db"))
            reports = [json.dumps(r.raw) for r in tiersim.load(Path(tmp) / f"0-{i}.db", reports=True)["report"]]
            writes.append(store_writes(Path(tmp) / f"writes-{i}.db", reports, args.runs))
    n = args.runs
    print(f"{n} runs of kv, 64 MiB, {REFS} references; median of {args.repeat}")
    print("| sweep | elapsed s | Σ simulation s | Σ run s | overhead per run, ms: (elapsed × parallelism − Σ simulation) ÷ runs |")
    print("|---|---|---|---|---|")
    for (name, width, _), rs in zip(kinds, results):
        med = {key: statistics.median(r[key] for r in rs) for key in rs[0]}
        per_run_ms = (med["elapsed"] * width - med["sim"]) / n * 1000
        print(f"| {name} | {med['elapsed']:.2f} | {med['sim']:.2f} | {med['run']:.2f} | {per_run_ms:.1f} |")
    print(f"store write alone (Store.record of the report, one transaction): {statistics.median(writes) / n * 1000:.2f} ms per run")


if __name__ == "__main__":
    main()
