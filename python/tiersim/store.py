"""Reading a results store (the SQLite database of ``tiersim sweep``) into pandas.

The schema is documented and written in Rust (``src/study/store.rs``); this module
only reads the ``runs`` table, after the native side has checked that the file is a
tiersim store of the schema this package knows.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from tiersim import _native
from tiersim.report import PathLike, Report

if TYPE_CHECKING:
    import pandas as pd


def load(db: PathLike, sweep: str | None = None, reports: bool = False) -> pd.DataFrame:
    """Returns the runs of sweep ``sweep`` in store ``db`` (of every sweep when
    ``None``), in grid order, one row per run.

    Columns: ``sweep``, ``seq`` (the grid position), one per axis (numbers where all
    of an axis's values are numbers), ``status`` (``ok`` or ``failed``), ``error``
    (a failed run's message), ``never_acted`` (the report's note when the policy never
    acted: its first period never came due, or it moved no page; else ``None``), one
    per summary figure (``cycles``, ``ipc``,
    ``amat_ns``, …), ``wall_seconds`` (the run's time) and ``finished`` (Unix time).
    With ``reports``, a ``report`` column holds each finished run's
    :class:`tiersim.Report`.

    Raises ``FileNotFoundError`` when ``db`` does not exist, :class:`tiersim.StoreError`
    when it is not a tiersim store of this schema, and ``KeyError`` when it has no
    sweep ``sweep``.
    """
    import pandas as pd

    path = Path(db)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such store")
    sweeps = dict(_native.Store(path).sweeps())
    if sweep is not None and sweep not in sweeps:
        raise KeyError(f"{path}: no sweep named {sweep} (it has: {', '.join(sweeps) or 'none'})")
    wanted = [sweep] if sweep is not None else list(sweeps)
    axes: list[str] = []
    for name in wanted:
        axes += [a for a in sweeps[name] if a not in axes]
    every_axis = {a for names in sweeps.values() for a in names}
    with closing(sqlite3.connect(path)) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
        summary = [c for c in columns if c not in _native.RESERVED_COLUMNS and c not in every_axis]
        shown = ["sweep", "seq", *axes, "status", "error", "never_acted", *summary, "wall_seconds", "finished"]
        if reports:
            shown.append("report")
        # `never_acted` is read from the report, not a column of its own.
        select = ", ".join("json_extract(report, '$.never_acted') AS never_acted" if c == "never_acted" else _ident(c) for c in shown)
        marks = ", ".join("?" for _ in wanted)
        frame = pd.read_sql_query(f"SELECT {select} FROM runs WHERE sweep IN ({marks}) ORDER BY sweep, seq", conn, params=wanted)
    for axis in axes:
        frame[axis] = _numbers_if_all(frame[axis])
    # SQL's NULL as None, not NaN, beside the notes.
    frame["never_acted"] = pd.Series([n if isinstance(n, str) else None for n in frame["never_acted"]], index=frame.index, dtype=object)
    if reports:
        parsed = [Report(json.loads(r)) if isinstance(r, str) else None for r in frame["report"]]
        frame["report"] = pd.Series(parsed, index=frame.index, dtype=object)
    return frame


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _numbers_if_all(column: pd.Series) -> pd.Series:
    """The column as numbers when every value is one (seeds, epoch lengths), else as is
    (``25%``, ``tpp``)."""
    import pandas as pd

    try:
        return pd.to_numeric(column)
    except (ValueError, TypeError):
        return column
