"""Sweeps on a Dask cluster: tiersim.sweep(client=…) and `tiersim sweep --scheduler`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiersim
from conftest import REPO, RUN_FLAGS, cli, small_grid
from test_sweep import SUMMARY

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Two worker processes of one thread each, on the loopback interface."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as c:
        yield c


def test_a_dask_sweep_equals_the_local_sweep_and_resumes(cluster: Any, tmp_path: Path) -> None:
    with distributed.Client(cluster) as client:
        on_dask = tiersim.sweep(small_grid(), db=tmp_path / "dask.db", client=client)
        assert on_dask.attrs == {"db": str(tmp_path / "dask.db"), "total": 4, "already": 0, "ran": 4, "failed": 0}
        local = tiersim.sweep(small_grid(), db=tmp_path / "local.db", jobs=2)
        columns = ["seq", "policy", "seed", "status", *SUMMARY]
        assert on_dask[columns].equals(local[columns])
        again = tiersim.sweep(small_grid(), db=tmp_path / "dask.db", client=client, jobs=1)
        assert again.attrs["ran"] == 0
        assert again["finished"].equals(on_dask["finished"])


def test_a_dask_sweep_records_a_failed_run(cluster: Any, bad_trace: Path, tmp_path: Path) -> None:
    good = REPO / "tests" / "data" / "rep.lk.gz"
    grid = {"run": {"format": "lackey"}, "axes": {"trace": [str(good), str(bad_trace)]}}
    with distributed.Client(cluster) as client, pytest.warns(RuntimeWarning, match="1 of 2 runs failed"):
        frame = tiersim.sweep(grid, db=tmp_path / "f.db", client=client)
    assert list(frame["status"]) == ["ok", "failed"]
    assert "bad.lk:51: not a lackey line" in frame["error"][1]


def test_the_cli_hands_a_sweep_over_to_a_dask_scheduler(cluster: Any, tiersim_bin: Path, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    args = ["sweep", "--db", str(db), *RUN_FLAGS, "--axis", "policy=first-touch,tpp", "--axis", "seed=1,2"]
    done = cli(tiersim_bin, *args, "--scheduler", cluster.scheduler_address)
    assert done.returncode == 0, done.stderr
    assert f"sweep sweep: 4 runs in {db}: 0 already there, 4 run now (0 failed)" in done.stdout
    local = tiersim.sweep(small_grid(), db=tmp_path / "local.db")
    on_dask = tiersim.load(db)
    columns = ["seq", "policy", "seed", "status", *SUMMARY]
    assert on_dask[columns].equals(local[columns])
    again = cli(tiersim_bin, *args, "--scheduler", cluster.scheduler_address)
    assert again.returncode == 0 and "4 already there, 0 run now" in again.stdout, again.stdout + again.stderr


def test_an_unreachable_scheduler_fails_in_one_line_within_seconds(tiersim_bin: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    done = cli(tiersim_bin, "sweep", "--db", str(tmp_path / "u.db"), *RUN_FLAGS, "--axis", "seed=1,2", "--scheduler", "tcp://127.0.0.1:1", timeout_seconds=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 2
    assert done.stderr == "tiersim: cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 6 s\n"
    assert elapsed < 10, f"{elapsed:.1f} s"
    assert not (tmp_path / "u.db").exists()


def test_ctrl_c_during_a_handed_over_sweep_ends_both_and_leaves_no_spec_behind(tiersim_bin: Path, tmp_path: Path) -> None:
    # The package is still trying to reach the (unreachable) scheduler when Ctrl-C
    # reaches the terminal's process group: it stops with its message and 130, and
    # the command waits for it, removes the resolved spec and ends with its code.
    args = ["sweep", "--db", str(tmp_path / "i.db"), *RUN_FLAGS, "--axis", "seed=1,2", "--scheduler", "tcp://127.0.0.1:1"]
    env = dict(os.environ, TIERSIM_PYTHON=sys.executable)
    p = subprocess.Popen([str(tiersim_bin), *args], env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    spec_dirs = f"tiersim-sweep-{p.pid}-*"
    deadline = time.monotonic() + 20
    while not list(Path(tempfile.gettempdir()).glob(spec_dirs)) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(Path(tempfile.gettempdir()).glob(spec_dirs)), "the command wrote its resolved spec"
    time.sleep(0.5)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert err == "tiersim: interrupted; the same command runs only the runs left\n"
    assert not list(Path(tempfile.gettempdir()).glob(spec_dirs))
