""".ci/tier_times.py: the per-tier table at the end of `make test` reports a tier over its budget without failing."""

import pytest

from tests.ci_scripts import load_ci_script

tier_times = load_ci_script("tier_times")


def test_a_tier_over_its_budget_is_reported_and_the_run_still_exits_zero(tmp_path, capsys):
    times = tmp_path / "times.txt"
    times.write_text("setup 1000 1100 0\nunit 1100 1300 0\nintegration 1300 2000 1\n")
    assert tier_times.main([str(times), "--budgets", "setup=150 unit=240 integration=600 total=900"]) == 0
    out = capsys.readouterr().out
    assert "unit              200      240  passed\n" in out
    assert "integration       700      600  failed (1); OVER BUDGET by 100 s" in out
    assert "total            1000      900  OVER BUDGET by 100 s" in out
    assert "integration, total over budget" in out


def test_a_tier_without_a_budget_shows_a_dash(tmp_path, capsys):
    times = tmp_path / "times.txt"
    times.write_text("vllm 10 70 0\n")
    tier_times.main([str(times)])
    assert "vllm               60        -  passed" in capsys.readouterr().out


@pytest.mark.parametrize("line", ["unit 1 2", "unit a 2 0"])
def test_a_malformed_line_names_the_file_and_line(tmp_path, line):
    times = tmp_path / "times.txt"
    times.write_text(f"setup 1 2 0\n{line}\n")
    with pytest.raises(ValueError, match=r"times.txt:2"):
        tier_times.read_tiers(times)
    with pytest.raises(ValueError, match="NAME=SECONDS"):
        tier_times.parse_budgets("unit:240")
