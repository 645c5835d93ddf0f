"""tiersim.run and its Report."""

from __future__ import annotations

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
