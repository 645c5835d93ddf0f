"""One simulation run from Python: :func:`run` and the :class:`Report` it returns."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Union

from tiersim import _native
from tiersim._toml import dumps

if TYPE_CHECKING:
    # pandas is imported where it is used: `import tiersim` stays quick (the command
    # line's hand-over to Dask imports it twice before connecting).
    import pandas as pd

PathLike = Union[str, "os.PathLike[str]"]


class Report:
    """A run's whole report, as ``tiersim run --json`` writes it.

    ``raw`` is the report as a dict; ``summary``, ``policy`` and ``epochs`` are its
    most used parts.
    """

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw: dict[str, Any] = dict(raw)

    @classmethod
    def from_json(cls, path: PathLike) -> Report:
        """Reads the report that ``tiersim run --json PATH`` wrote. Raises
        ``ValueError`` naming the file when it is not one run's JSON report (cut
        short, not JSON, or ``compare``'s list of reports)."""
        with open(path, encoding="utf-8") as f:
            try:
                raw = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{os.fspath(path)}: not a whole JSON report: {e.msg} at line {e.lineno}, column {e.colno} (a file cut short?)") from None
            except UnicodeDecodeError:
                raise ValueError(f"{os.fspath(path)}: not a JSON report (not UTF-8 text)") from None
        if not isinstance(raw, dict) or "summary" not in raw:
            what = f"a list of {len(raw)} reports (`tiersim compare --json`); read one with Report(raw[i])" if isinstance(raw, list) else "JSON without a `summary`"
            raise ValueError(f"{os.fspath(path)}: not one run's report: {what}")
        return cls(raw)

    @property
    def summary(self) -> dict[str, Any]:
        """The run's headline figures: ``cycles``, ``ipc``, ``amat_ns``,
        ``fast_tier_fraction``, ``page_moves`` and the others of ``tiersim run``'s
        summary."""
        summary: dict[str, Any] = self.raw["summary"]
        return summary

    @property
    def policy(self) -> str:
        """The policy that ran."""
        policy: str = self.raw["policy"]
        return policy

    @property
    def never_acted(self) -> str | None:
        """Why the policy did nothing in the run (its first period never came due, or
        it moved no page), or ``None``: such a run shows its initial placement."""
        note: str | None = self.raw.get("never_acted")
        return note

    @property
    def epochs(self) -> pd.DataFrame:
        """The per-epoch time series, one row per epoch: ``end_cycle``, the
        ``references``, ``instructions``, ``ipc``, ``fast_tier_fraction``,
        ``page_moves`` and ``moved_bytes`` of that epoch, and the
        ``fast_resident_fraction`` at its end."""
        import pandas as pd

        frame = pd.DataFrame.from_records(self.raw.get("epochs", []))
        if "end_cycle" in frame:
            frame = frame[["end_cycle", *(c for c in frame.columns if c != "end_cycle")]]
        return frame

    def __repr__(self) -> str:
        s = self.summary
        return f"<tiersim.Report policy={self.policy} cycles={s.get('cycles')} ipc={s.get('ipc'):.4g}>"


def run(
    policy: str | None = None,
    workload: str | None = None,
    footprint: str | None = None,
    refs: int | str | None = None,
    seed: int | None = None,
    preset: str | None = None,
    mode: str | None = None,
    sets: Mapping[str, Any] | None = None,
    **more: Any,
) -> Report:
    """Runs one simulation, as ``tiersim run`` does, and returns its report.

    The options are ``tiersim run``'s: ``policy="tpp"``, ``workload="kv"``,
    ``footprint="1GiB"``, ``refs=10_000_000``, ``seed=1``, ``preset="cxl"``,
    ``mode="sampled"``; ``sets`` holds configuration keys by dotted path as
    ``--set`` takes them (``{"machine.tiers.fast.capacity": "25%"}``), and ``more``
    the other run options (``config``, ``mix``, ``tenants``, ``trace``, ``format``,
    ``verify``).

    Raises ``ValueError`` naming the option or key when the options do not make a
    configuration, and :class:`tiersim.RunError` when the run fails. The simulation
    runs without the interpreter lock, so threads may run several at once; Ctrl-C
    stops it at its next epoch boundary.
    """
    given = {"policy": policy, "workload": workload, "footprint": footprint, "refs": refs, "seed": seed, "preset": preset, "mode": mode}
    options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    options.update(more)
    if sets is not None and not isinstance(sets, Mapping):
        raise TypeError(f"tiersim.run() sets: expected a dict of configuration keys and values, e.g. {{'machine.tiers.fast.capacity': '25%'}}, got a {type(sets).__name__}")
    if sets:
        options["set"] = dict(sets)
    key = _native.run_options(dumps({"run": options}, "tiersim.run()", section_names=False), "tiersim.run()")
    return Report(json.loads(run_interruptibly(key)))


def run_interruptibly(options: str) -> str:
    """Runs the run of ``options`` (a grid point's key) in a thread of its own, so
    that Ctrl-C reaches this thread, stops the run, and is raised here."""
    stop = _native.StopFlag()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tiersim-run") as pool:
        future = pool.submit(_native.run, options, stop)
        try:
            return future.result()
        except KeyboardInterrupt:
            stop.set()
            raise

