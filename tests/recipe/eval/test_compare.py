"""eval_lcb compare: per-problem gains/losses and the seeded paired bootstrap interval."""

import json
import math
import random
from pathlib import Path

import pytest

from recipe.nouscoder.eval import eval_lcb
from recipe.nouscoder.eval.compare import compare


def write_results(path: Path, pass1: dict[str, float]) -> Path:
    path.write_text(json.dumps({"problems": [{"problem_id": pid, "pass@1": value} for pid, value in pass1.items()]}))
    return path


def test_gains_losses_and_difference(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = write_results(tmp_path / "a.json", {"p1": 0.0, "p2": 0.5, "p3": 1.0, "p4": 0.25, "only_a": 1.0})
    trained = write_results(tmp_path / "b.json", {"p1": 0.75, "p2": 0.25, "p3": 1.0, "p4": 0.5, "only_b": 0.0})
    assert eval_lcb.main(["compare", str(base), str(trained), "--out", str(tmp_path / "cmp"), "--seed", "3"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert result["problems"] == 4
    assert result["difference"] == pytest.approx((0.75 - 0.25 + 0.0 + 0.25) / 4)
    assert [row["problem_id"] for row in result["gains"]] == ["p1", "p4"]
    assert [row["problem_id"] for row in result["losses"]] == ["p2"]
    assert result["unchanged"] == 1
    assert result["only_in_base"] == ["only_a"] and result["only_in_trained"] == ["only_b"]
    assert result["ci"]["low"] <= result["difference"] <= result["ci"]["high"]
    assert "paired bootstrap" in capsys.readouterr().out
    assert eval_lcb.main(["compare", str(base), str(trained), "--out", str(tmp_path / "again"), "--seed", "3"]) == 0
    assert json.loads((tmp_path / "again" / "compare.json").read_text())["ci"] == result["ci"]


def test_identical_and_constant_shift_give_degenerate_intervals() -> None:
    base = {f"p{i}": (i % 5) / 4 for i in range(50)}
    same = compare(base, dict(base), resamples=500)
    assert (same["ci"]["low"], same["ci"]["high"]) == (0.0, 0.0)
    shifted = compare(base, {pid: value + 0.125 for pid, value in base.items()}, resamples=500)
    assert shifted["ci"]["low"] == pytest.approx(0.125) and shifted["ci"]["high"] == pytest.approx(0.125)


def test_interval_width_matches_the_normal_approximation() -> None:
    rng = random.Random(7)
    base = {f"p{i}": rng.random() for i in range(400)}
    trained = {pid: value + rng.gauss(0.05, 0.2) for pid, value in base.items()}
    deltas = [trained[pid] - base[pid] for pid in base]
    mean = sum(deltas) / len(deltas)
    std = math.sqrt(sum((d - mean) ** 2 for d in deltas) / len(deltas))
    expected_half_width = 1.96 * std / math.sqrt(len(deltas))
    result = compare(base, trained, resamples=4000, seed=1)
    half_width = (result["ci"]["high"] - result["ci"]["low"]) / 2
    assert half_width == pytest.approx(expected_half_width, rel=0.1)
    assert result["ci"]["low"] < mean < result["ci"]["high"]


def test_disjoint_runs_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = write_results(tmp_path / "a.json", {"p1": 1.0})
    trained = write_results(tmp_path / "b.json", {"q1": 1.0})
    assert eval_lcb.main(["compare", str(base), str(trained), "--out", str(tmp_path / "cmp")]) == 2
    assert "share no problem_id" in capsys.readouterr().err


def test_an_empty_gains_or_losses_list_is_a_sentence_not_an_empty_table() -> None:
    from recipe.nouscoder.eval.compare import markdown

    text = markdown(compare({"p1": 0.0, "p2": 0.5}, {"p1": 0.5, "p2": 0.5}, resamples=10), "A", "B")
    losses = text.split("## Largest losses")[1]
    assert losses.strip() == "No problem lost: B's pass@1 is nowhere below A's."
    assert "| p1 | 0.000 | 0.500 | +0.500 |" in text.split("## Largest losses")[0]
