"""Sweeps from Python: a grid of runs into a results store, on local threads or on a
Dask cluster.

The grid is expanded and checked natively, by the code of ``tiersim sweep``, so both
give every run the same key; what the store already holds finished is skipped, and
every run is written in its own transaction as soon as it ends, by this process
alone (on Dask too: workers only simulate and send the report back). A sweep
stopped at any moment and started again therefore runs only what is missing, and a
sweep begun with the command line can be finished from Python and the other way
round.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from tiersim import _native
from tiersim._toml import dumps
from tiersim.report import PathLike
from tiersim.store import load

if TYPE_CHECKING:
    import pandas as pd

#: A grid run as the native side lists it: its key, grid position and axis values.
Point = Tuple[str, int, List[Tuple[str, str]]]
#: What a run sends back: its report (JSON) or its error message, and its time.
Outcome = Tuple[Optional[str], Optional[str], float]


def run_task(options: str, stop: _native.StopFlag | None = None) -> Outcome:
    """Runs the run of ``options`` (a grid point's key) and returns ``(report, None,
    wall_seconds)``, or ``(None, message, wall_seconds)`` when it fails: a failure is
    a result to record, not an exception. This is the task a Dask worker runs."""
    started = time.perf_counter()
    try:
        return _native.run(options, stop), None, time.perf_counter() - started
    except (_native.RunError, ValueError) as e:
        return None, str(e), time.perf_counter() - started


@dataclass
class _Tally:
    """What a sweep did, and the progress lines it prints when asked."""

    total: int
    already: int
    progress: bool
    ran: int = 0
    failed: int = 0

    def count(self, label: str, outcome: Outcome) -> None:
        self.ran += 1
        report, error, wall = outcome
        if report is None:
            self.failed += 1
        if self.progress:
            todo = self.total - self.already
            state = "ok" if report is not None else f"failed: {error}"
            print(f"tiersim: [{self.ran}/{todo}] {label}: {state} ({wall:.1f} s)", file=sys.stderr, flush=True)


def sweep(
    grid: Mapping[str, Any] | PathLike,
    db: PathLike | None = None,
    name: str | None = None,
    baseline: str | None = None,
    jobs: int | None = None,
    client: Any = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Runs the grid's runs that store ``db`` does not hold finished and returns all
    the runs of the sweep as :func:`tiersim.load` reads them.

    ``grid`` is a spec as a dict, with the keys of a spec file::

        {"run": {"workload": "kv", "footprint": "1GiB", "refs": 10_000_000},
         "axes": {"policy": ["first-touch", "tpp"], "seed": [1, 2],
                  "machine.tiers.fast.capacity": ["25%", "50%"]}}

    (also ``name``, ``baseline``, ``db``, and ``run.set`` for configuration keys
    shared by every run), or the path of a spec file. The axes are crossed, the first
    outermost. ``db`` defaults to the spec's ``db``, then to the spec file's path with
    ``.db``; a dict grid without ``db`` is refused, as ``tiersim sweep`` refuses a
    sweep without a spec file or ``--db``. ``name`` defaults to the spec's name, its
    file's stem, or ``sweep``; ``baseline`` and ``name`` given here replace the spec's.

    Runs go ``jobs`` at a time on local threads (default: the usable cores), or, when
    ``client`` is a ``dask.distributed.Client``, as tasks on its cluster (``jobs``
    then bounds the tasks submitted at once; default: all). Each is recorded in its
    own transaction as it ends. A failed run is recorded with its message (status
    ``failed``, run again by the next call), the others go on, and a
    ``RuntimeWarning`` tells how many failed. ``progress`` prints a line per run on
    standard error.

    Raises ``ValueError`` naming the axis, key, policy or preset when the grid is
    wrong, ``TypeError`` naming ``jobs`` or ``client`` when they are not a whole
    number or a Dask client, all before any run starts and before the store is
    touched, and :class:`tiersim.StoreError` when ``db`` is not a tiersim store of
    this schema.
    The returned frame's ``attrs`` hold ``db`` (the store's path), ``total``,
    ``already`` (finished before), ``ran`` and ``failed`` (of the runs done now).
    """
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs: expected a whole number of runs at a time, got {jobs!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs: must be at least 1, got {jobs}")
    if client is not None and not callable(getattr(client, "submit", None)):
        raise TypeError(f"client: expected a dask.distributed.Client, got {client!r}")
    checked = checked_grid(grid, name, baseline)
    if db is None and checked.db is None:
        raise ValueError("db: needed when the grid is a dict without `db` (as `tiersim sweep` needs --db without a spec file), e.g. tiersim.sweep(grid, db=\"results.db\")")
    path = Path(db) if db is not None else Path(checked.db)
    store = _native.Store(path, create=True)
    finished = store.begin(checked)
    points: list[Point] = checked.points
    todo = [p for p in points if p[0] not in finished]
    tally = _Tally(total=len(points), already=len(points) - len(todo), progress=progress)

    def record(point: Point, outcome: Outcome) -> None:
        report, error, wall = outcome
        store.record(checked, point[1], wall, report=report, error=error)
        tally.count(_label(point), outcome)

    if todo and client is None:
        _run_local(todo, jobs or _usable_cores(), record)
    elif todo:
        _run_dask(todo, client, jobs, record)
    frame = load(path, checked.name)
    frame.attrs.update(db=str(path), total=tally.total, already=tally.already, ran=tally.ran, failed=tally.failed)
    if tally.failed:
        warnings.warn(
            f"sweep {checked.name}: {tally.failed} of {tally.total} runs failed; their messages are in the `error` column "
            f"(status 'failed') and in {path}, and the same call runs them again",
            RuntimeWarning,
            stacklevel=2,
        )
    return frame


def checked_grid(grid: Mapping[str, Any] | PathLike, name: str | None = None, baseline: str | None = None) -> _native.Grid:
    """Parses and checks ``grid`` (a dict or a spec file's path) with ``name`` and
    ``baseline`` replacing the spec's; raises ``ValueError`` naming what is wrong."""
    if isinstance(grid, Mapping):
        return _native.Grid.parse(dumps(grid), "grid", name, baseline)
    if isinstance(grid, (str, os.PathLike)):
        path = Path(grid)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such spec file")
        return _native.Grid.read(path, name, baseline)
    raise TypeError(f"grid: expected a dict or the path of a spec file, got a {type(grid).__name__}")


def _label(point: Point) -> str:
    return " ".join(f"{k}={v}" for k, v in point[2]) or "(no axes)"


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _run_local(todo: list[Point], jobs: int, record: Callable[[Point, Outcome], None]) -> None:
    """Runs ``todo`` on ``jobs`` threads (the simulations release the interpreter
    lock) and records each as it ends. On Ctrl-C or a store that cannot be written,
    the runs under way stop at their next epoch boundary unrecorded."""
    stop = _native.StopFlag()
    with ThreadPoolExecutor(max_workers=min(jobs, len(todo)), thread_name_prefix="tiersim-sweep") as pool:
        futures = {pool.submit(run_task, p[0], stop): p for p in todo}
        try:
            for future in as_completed(futures):
                record(futures[future], future.result())
        except BaseException:
            stop.set()
            for future in futures:
                future.cancel()
            raise


def _run_dask(todo: list[Point], client: Any, jobs: int | None, record: Callable[[Point, Outcome], None]) -> None:
    """Submits ``todo`` to ``client``'s cluster, at most ``jobs`` at once, and records
    each run as its task completes. A task that fails as a task (its worker died,
    tiersim missing there) is recorded as a failed run with the exception."""
    from distributed import as_completed as dask_completed

    pending: Iterator[Point] = iter(todo)
    futures: dict[Any, Point] = {}

    def submit(point: Point) -> Any:
        future = client.submit(run_task, point[0], pure=False)
        futures[future] = point
        return future

    running = dask_completed([submit(p) for p in itertools.islice(pending, jobs or len(todo))])
    try:
        for future in running:
            point = futures.pop(future)
            if future.status == "finished":
                outcome: Outcome = future.result()
            else:
                e = future.exception()
                outcome = (None, f"the Dask task failed: {type(e).__name__}: {e}".splitlines()[0], math.nan)
            future.release()
            record(point, outcome)
            following = next(pending, None)
            if following is not None:
                running.add(submit(following))
    except BaseException:
        client.cancel(list(futures))
        raise


__all__ = ["sweep", "run_task", "Point", "Outcome"]
