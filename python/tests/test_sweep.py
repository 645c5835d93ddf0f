"""tiersim.sweep on local threads, tiersim.load, and the store they share with
`tiersim sweep`."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import tiersim
from conftest import REPO, RUN, RUN_FLAGS, cli, small_grid, sql

SUMMARY = ["cycles", "instructions", "ipc", "amat_ns", "fast_tier_fraction", "page_moves", "migrations", "energy_j", "tlb_mpki", "llc_mpki"]


def test_a_sweep_equals_the_cli_sweep_of_the_same_grid(tiersim_bin: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        py = tiersim.sweep(small_grid(), db=tmp_path / "py.db", jobs=2)
    done = cli(tiersim_bin, "sweep", "--db", str(tmp_path / "cli.db"), *RUN_FLAGS, "--axis", "policy=first-touch,tpp", "--axis", "seed=1,2", "-j", "2")
    assert done.returncode == 0, done.stderr
    from_cli = tiersim.load(tmp_path / "cli.db")
    assert py.attrs == {"db": str(tmp_path / "py.db"), "total": 4, "already": 0, "ran": 4, "failed": 0}
    assert list(py["policy"]) == ["first-touch", "first-touch", "tpp", "tpp"]
    assert list(py["seed"]) == [1, 2, 1, 2]
    assert (py["status"] == "ok").all()
    columns = ["sweep", "seq", "policy", "seed", "status", *SUMMARY]
    assert py[columns].equals(from_cli[columns])
    assert list(py.columns) == list(from_cli.columns)
    # The same keys: the CLI's store holds every run of the Python grid.
    assert tiersim.sweep(small_grid(), db=tmp_path / "cli.db").attrs["ran"] == 0


def test_a_second_sweep_runs_nothing_and_a_lost_run_runs_again(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = tiersim.sweep(small_grid(), db=db, jobs=2)
    again = tiersim.sweep(small_grid(), db=db, jobs=2)
    assert again.attrs == {"db": str(db), "total": 4, "already": 4, "ran": 0, "failed": 0}
    assert again["finished"].equals(first["finished"]), "nothing was written again"
    # A sweep killed while run 2 was under way: its row was never written.
    sql(db, "DELETE FROM runs WHERE seq = 2")
    third = tiersim.sweep(small_grid(), db=db, jobs=2)
    assert third.attrs == {"db": str(db), "total": 4, "already": 3, "ran": 1, "failed": 0}
    changed = third["finished"] != first["finished"]
    assert list(third["seq"][changed]) == [2]
    assert third[SUMMARY].equals(first[SUMMARY])


def test_a_failed_run_is_recorded_with_its_message_and_the_others_go_on(bad_trace: Path, tmp_path: Path) -> None:
    good = REPO / "tests" / "data" / "rep.lk.gz"
    grid = {"run": {"format": "lackey"}, "axes": {"trace": [str(good), str(bad_trace)], "seed": [1, 2]}}
    db = tmp_path / "f.db"
    with pytest.warns(RuntimeWarning, match="2 of 4 runs failed"):
        frame = tiersim.sweep(grid, db=db, jobs=2)
    assert list(frame["status"]) == ["ok", "ok", "failed", "failed"]
    assert frame["error"][2].endswith("bad.lk:51: not a lackey line (expected `I  addr,size`, ` L`, ` S` or ` M addr,size`, or `==PID==`) (garbage line here)")
    assert frame["cycles"][:2].notna().all() and frame["cycles"][2:].isna().all()
    # Failed runs are not finished: the next sweep tries them again, and only them.
    with pytest.warns(RuntimeWarning):
        assert tiersim.sweep(grid, db=db).attrs == {"db": str(db), "total": 4, "already": 2, "ran": 2, "failed": 2}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda g: g["axes"].update(polcy=["tpp"]), "grid: axes.polcy: `polcy` is not a run option"),
        (lambda g: g["run"].update(colour="red"), "grid: run: `colour` is not a run option"),
        (lambda g: g["axes"].update(policy=["tpp", "nope"]), "run policy=nope seed=1: policy.name: unknown policy `nope`"),
        (lambda g: g["axes"].update({"machine.nope": [1]}), "machine.nope"),
        (lambda g: g.update(baseline="lru"), "baseline: `lru` is not a value of the policy axis"),
    ],
)
def test_a_bad_grid_raises_value_error_naming_it_before_any_run(change, message: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    grid = small_grid()
    change(grid)
    db = tmp_path / "bad.db"
    with pytest.raises(ValueError) as e:
        tiersim.sweep(grid, db=db)
    assert message in str(e.value)
    assert not db.exists(), "the store is not touched"


def test_a_store_of_another_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    tiersim.sweep({"run": RUN}, db=db)
    sql(db, "UPDATE meta SET value = '999' WHERE key = 'schema'")
    for call in (lambda: tiersim.sweep({"run": RUN}, db=db), lambda: tiersim.load(db)):
        with pytest.raises(tiersim.StoreError, match=r"old\.db: written by tiersim .* in store schema 999; this tiersim .* reads schema 1"):
            call()
    (tmp_path / "notes.db").write_text("not a database")
    with pytest.raises(tiersim.StoreError, match="notes.db"):
        tiersim.load(tmp_path / "notes.db")


def test_a_spec_file_gives_the_sweep_its_name_and_store(tmp_path: Path) -> None:
    spec = tmp_path / "kv-policies.toml"
    spec.write_text(
        'baseline = "first-touch"\n[run]\nworkload = "kv"\nfootprint = "64MiB"\nrefs = 2_000_000\n'
        'set = { "machine.tiers.fast.capacity" = "25%" }\n'
        '[axes]\n"engine.epoch_cycles" = [4000000, 8000000]\npolicy = ["first-touch", "tpp"]\n'
    )
    frame = tiersim.sweep(spec)
    assert (tmp_path / "kv-policies.db").exists()
    assert list(frame.columns[:4]) == ["sweep", "seq", "engine.epoch_cycles", "policy"], "the file's axis order"
    assert list(frame["engine.epoch_cycles"]) == [4000000, 4000000, 8000000, 8000000]
    assert set(frame["sweep"]) == {"kv-policies"}
    assert sql(tmp_path / "kv-policies.db", "SELECT baseline FROM sweeps") == [("first-touch",)]
    with_reports = tiersim.load(tmp_path / "kv-policies.db", sweep="kv-policies", reports=True)
    assert with_reports["report"][3].policy == "tpp"
    assert with_reports["report"][3].summary["cycles"] == frame["cycles"][3]
    with pytest.raises(KeyError, match="no sweep named other"):
        tiersim.load(tmp_path / "kv-policies.db", sweep="other")


def test_runs_in_which_the_policy_never_acted_are_marked(tiersim_bin: Path, tmp_path: Path) -> None:
    db = tmp_path / "idle.db"
    flags = ["--workload", "kv", "--footprint", "32MiB", "--refs", "300000", "--set", "policy.memos.passes_per_run=0"]
    done = cli(tiersim_bin, "sweep", "--db", str(db), *flags, "--axis", "policy=first-touch,memos")
    assert done.returncode == 0, done.stderr
    frame = tiersim.load(db, reports=True)
    assert list(frame.columns[:6]) == ["sweep", "seq", "policy", "status", "error", "never_acted"]
    assert frame["never_acted"][0] is None
    assert frame["never_acted"][1].startswith("policy memos never acted: its first period")
    assert frame["report"][1].never_acted == frame["never_acted"][1]
    assert frame["report"][0].never_acted is None


def test_python_m_tiersim_sweep_runs_a_spec_and_reports_like_the_cli(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[run]\nworkload = "kv"\nfootprint = "64MiB"\nrefs = 1_000_000\n[axes]\nseed = [1, 2]\n')
    done = subprocess.run([sys.executable, "-m", "tiersim", "sweep", str(spec)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"sweep s: 2 runs in {tmp_path / 's.db'}: 0 already there, 2 run now (0 failed) in ")
    assert "[2/2] seed=" in done.stderr
    wrong = subprocess.run([sys.executable, "-m", "tiersim", "sweep", str(tmp_path / "none.toml")], capture_output=True, text=True, timeout=60)
    assert (wrong.returncode, wrong.stderr) == (2, f"tiersim: {tmp_path / 'none.toml'}: no such spec file\n")



def test_bad_arguments_raise_naming_them_before_the_store_is_touched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "a.db"
    huge = small_grid()
    huge["run"]["refs"] = 2**70
    for call, error, message in [
        (lambda: tiersim.sweep(small_grid(), db=db, jobs="2"), TypeError, "jobs: expected a whole number of runs at a time, got '2'"),
        (lambda: tiersim.sweep(small_grid(), db=db, jobs=0), ValueError, "jobs: must be at least 1, got 0"),
        (lambda: tiersim.sweep(small_grid(), db=db, client=5), TypeError, "client: expected a dask.distributed.Client, got 5"),
        (lambda: tiersim.sweep(huge, db=db), ValueError, "grid run.refs: 1180591620717411303424 is too large"),
    ]:
        with pytest.raises(error) as e:
            call()
        assert str(e.value).startswith(message)
    assert not db.exists(), "the store is not touched"
    # A dict grid without a store is refused, as `tiersim sweep` without a spec or --db.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="db: needed when the grid is a dict without `db`"):
        tiersim.sweep(small_grid())
    assert list(tmp_path.iterdir()) == []
    assert tiersim.sweep({**small_grid(), "db": str(tmp_path / "named.db")}).attrs["db"] == str(tmp_path / "named.db")
