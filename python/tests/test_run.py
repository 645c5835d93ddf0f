"""tiersim.run and its Report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import tiersim
from conftest import RUN, RUN_FLAGS, cli

SETS = {"machine.tiers.fast.capacity": "25%", "engine.epoch_cycles": 2_000_000}


def test_run_returns_the_summary_and_the_epochs_as_a_data_frame() -> None:
    r = tiersim.run(policy="tpp", seed=1, sets=SETS, **RUN)
    assert r.policy == "tpp"
    assert r.summary["references"] == RUN["refs"]
    assert r.raw["summary"] is r.summary
    epochs = r.epochs
    assert len(epochs) > 10, "2 M-cycle epochs over a run of tens of millions of cycles"
    assert list(epochs.columns[:1]) == ["end_cycle"]
    assert {"references", "ipc", "fast_tier_fraction", "page_moves", "fast_resident_fraction"} <= set(epochs.columns)
    assert epochs["end_cycle"].is_monotonic_increasing
    assert epochs["references"].sum() == r.summary["references"]
    assert epochs["page_moves"].sum() == r.summary["page_moves"] > 0


def test_a_report_read_from_the_cli_json_equals_the_run(tiersim_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    sets = [a for k, v in SETS.items() for a in ("--set", f"{k}={v}")]
    done = cli(tiersim_bin, "run", *RUN_FLAGS, "--policy", "tpp", "--seed", "1", *sets, "--json", str(out))
    assert done.returncode == 0, done.stderr
    from_cli = tiersim.Report.from_json(out)
    assert from_cli.summary == tiersim.run(policy="tpp", seed=1, sets=SETS, **RUN).summary
    # Reports made natively list their keys sorted, the CLI's file in the report's order.
    pd.testing.assert_frame_equal(from_cli.epochs, tiersim.run(policy="tpp", seed=1, sets=SETS, **RUN).epochs, check_like=True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"policy": "nope"}, "unknown policy `nope`"),
        ({"colour": "red"}, "`colour` is not a run option"),
        ({"sets": {"machine.nope": 1}}, "machine.nope"),
        ({"refs": 1.5}, "`refs` takes a string or a whole number"),
    ],
)
def test_bad_options_raise_value_error_naming_them(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        tiersim.run(**{**RUN, **options})


def test_a_run_that_fails_raises_run_error(bad_trace: Path) -> None:
    with pytest.raises(tiersim.RunError, match="bad.lk:51: not a lackey line"):
        tiersim.run(trace=str(bad_trace), format="lackey")


def test_arguments_of_the_wrong_kind_raise_naming_them() -> None:
    with pytest.raises(ValueError, match=r"^tiersim.run\(\) refs: 1180591620717411303424 is too large: whole numbers must fit 64 bits"):
        tiersim.run(**{**RUN, "refs": 2**70})
    with pytest.raises(ValueError, match=r"^tiersim.run\(\) set.engine.epoch_cycles: 1267650600228229401496703205376 is too large"):
        tiersim.run(**RUN, sets={"engine.epoch_cycles": 2**100})
    with pytest.raises(TypeError, match=r"^tiersim.run\(\) sets: expected a dict of configuration keys and values, .* got a list"):
        tiersim.run(**RUN, sets=["machine.tiers.fast.capacity=25%"])


def test_a_report_file_cut_short_or_of_another_kind_is_refused_naming_it(tmp_path: Path) -> None:
    whole = json.dumps({"policy": "tpp", "summary": {"cycles": 1, "ipc": 1.0}})
    cut = tmp_path / "cut.json"
    cut.write_text(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut\.json: not a whole JSON report: .* at line 1, column \d+ \(a file cut short\?\)"):
        tiersim.Report.from_json(cut)
    listed = tmp_path / "compare.json"
    listed.write_text(f"[{whole}, {whole}]")
    with pytest.raises(ValueError, match=r"compare\.json: not one run's report: a list of 2 reports"):
        tiersim.Report.from_json(listed)
    binary = tmp_path / "trace.json"
    binary.write_bytes(b"\xff\xfe\x00TSIM")
    with pytest.raises(ValueError, match=r"trace\.json: not a JSON report \(not UTF-8 text\)"):
        tiersim.Report.from_json(binary)
