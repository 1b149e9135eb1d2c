""".ci/tier_times.py: the per-tier table at the end of `make test` reports a tier over its budget without failing."""

import os

import pytest

from tests.ci_scripts import load_ci_script

tier_times = load_ci_script("tier_times")


def test_a_tier_over_its_budget_is_reported_and_the_run_still_exits_zero(tmp_path, capsys):
    times = tmp_path / "times.txt"
    times.write_text("setup 1000 1100 0\nunit 1100 1300 0\nintegration 1300 2000 1\n")
    assert tier_times.main([str(times), "--budgets", "setup=150 unit=240 integration=600 total=900"]) == 0
    out = capsys.readouterr().out
    assert "unit              200      240        -          -  passed\n" in out
    assert "integration       700      600        -          -  failed (1); OVER BUDGET by 100 s" in out
    assert "total            1000      900        -          -  OVER BUDGET by 100 s" in out
    assert "integration, total over budget" in out


def test_a_tier_without_a_budget_shows_a_dash(tmp_path, capsys):
    times = tmp_path / "times.txt"
    times.write_text("vllm 10 70 0\n")
    tier_times.main([str(times)])
    assert "vllm               60        -        -          -  passed" in capsys.readouterr().out


def test_the_busy_ticks_give_each_tiers_cpu_seconds_and_the_cores_it_kept_busy(tmp_path, capsys):
    tick = os.sysconf("SC_CLK_TCK")
    times = tmp_path / "times.txt"
    # setup: 100 s with 150 CPU-s; unit: 200 s with 400 CPU-s; the vLLM tier where /proc/stat could not be read
    times.write_text(
        f"setup 1000 1100 0 {5 * tick} {155 * tick}\nunit 1100 1300 0 {160 * tick} {560 * tick}\nvllm 1300 1400 0 - -\n"
    )
    tier_times.main([str(times), "--budgets", "unit=240"])
    out = capsys.readouterr().out
    assert "setup             100        -      150       1.50  passed\n" in out
    assert "unit              200      240      400       2.00  passed\n" in out
    assert "vllm              100        -        -          -  passed\n" in out
    assert "total             400        -        -          -\n" in out  # the last tier's end is unknown
    assert f"({os.cpu_count()} cores)" in out


def test_the_total_spans_the_first_start_to_the_last_end(tmp_path, capsys):
    tick = os.sysconf("SC_CLK_TCK")
    times = tmp_path / "times.txt"
    times.write_text(f"setup 1000 1100 0 {5 * tick} {155 * tick}\nunit 1100 1300 0 {160 * tick} {565 * tick}\n")
    tier_times.main([str(times)])
    assert "total             300        -      560       1.87\n" in capsys.readouterr().out


@pytest.mark.parametrize("line", ["unit 1 2", "unit a 2 0", "unit 1 2 0 5", "unit 1 2 0 5 x"])
def test_a_malformed_line_names_the_file_and_line(tmp_path, line):
    times = tmp_path / "times.txt"
    times.write_text(f"setup 1 2 0\n{line}\n")
    with pytest.raises(ValueError, match=r"times.txt:2"):
        tier_times.read_tiers(times)
    with pytest.raises(ValueError, match="NAME=SECONDS"):
        tier_times.parse_budgets("unit:240")
