"""Fixtures shared by the Python package's tests: the tiersim command line of this
checkout, a small grid, and helpers to run the command line and read a store."""

from __future__ import annotations

import gzip
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Run options of the small runs (kv, 64 MiB, 2 M references: well under a second).
RUN: dict[str, Any] = {"workload": "kv", "footprint": "64MiB", "refs": 2_000_000}
#: The same options as command-line flags.
RUN_FLAGS = ["--workload", "kv", "--footprint", "64MiB", "--refs", "2000000"]


def small_grid() -> dict[str, Any]:
    """Four runs: two policies by two seeds."""
    return {"run": dict(RUN), "axes": {"policy": ["first-touch", "tpp"], "seed": [1, 2]}}


@pytest.fixture(scope="session")
def tiersim_bin() -> Path:
    """The `tiersim` binary built from this checkout (`cargo build --release`, which
    `cargo test --release` does): `$TIERSIM_BIN`, else the release binary of the
    cargo target folder."""
    if "TIERSIM_BIN" in os.environ:
        path = Path(os.environ["TIERSIM_BIN"])
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        path = target / "release" / "tiersim"
    if not path.is_file():
        pytest.fail(f"{path}: no tiersim binary; run `cargo build --release` at the repository's root or set TIERSIM_BIN")
    return path


def cli(binary: Path, *args: str, timeout_seconds: float = 300) -> subprocess.CompletedProcess[str]:
    """Runs the tiersim command line with `args`; its Python is this test's."""
    env = dict(os.environ, TIERSIM_PYTHON=sys.executable)
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=timeout_seconds)


def sql(db: Path, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Runs `query` on store `db` and returns its rows (committed)."""
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(query, params).fetchall()


@pytest.fixture
def bad_trace(tmp_path: Path) -> Path:
    """A lackey trace whose 51st line is garbage: a run of it starts, then fails."""
    with gzip.open(REPO / "tests" / "data" / "rep.lk.gz", "rt") as f:
        lines = f.read().splitlines(keepends=True)
    path = tmp_path / "bad.lk"
    path.write_text("".join(lines[:50]) + "garbage line here\n" + "".join(lines[50:]))
    return path
