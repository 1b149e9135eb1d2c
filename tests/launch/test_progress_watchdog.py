"""launch/progress_watchdog.py: the bound to the next step of metrics.jsonl, and the stall it reports.

A made-up clock drives `watch` (no sleeping): lines are appended to a real file between polls. The watchdog under the
real Slurm job, with a trainer that hangs, is tests/launch/test_slurm_chain.py::test_chain_filters_stalls_in_stage_two_and_its_retry_resumes.
"""

from __future__ import annotations

import json

import progress_watchdog as wd

BOUNDS = wd.Bounds(first_step_s=7200, min_s=1800, factor=3, window=5, validation_s=3600, test_freq=15, total_steps=150)


def line(step: int) -> str:
    return json.dumps({"step": step, "data": {"actor/pg_loss": 0.1}}) + "\n"


def test_the_first_step_gets_the_start_up_floor_and_later_ones_three_times_the_slowest_recent(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    progress = wd.Progress(metrics)
    assert wd.bound_s(BOUNDS, progress)[0] == 7200
    metrics.write_text(line(1))
    progress.poll(0.0)
    assert wd.bound_s(BOUNDS, progress)[0] == 1800  # one step: no interval yet, the floor
    for step, at in ((2, 1100.0), (3, 2300.0)):  # 1,100 s and 1,200 s steps
        with metrics.open("a") as handle:
            handle.write(line(step))
        progress.poll(at)
    bound, how = wd.bound_s(BOUNDS, progress)
    assert bound == 3 * 1200 and "3 x the longest of the last 2 step(s), 1200s" in how


def test_a_validating_step_gets_the_validation_allowance(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    progress = wd.Progress(metrics)
    metrics.write_text(line(13) + line(14))
    progress.poll(0.0)
    assert wd.bound_s(BOUNDS, progress)[0] == 1800 + 3600  # step 15 validates (test_freq 15)
    last = wd.Bounds(**{**BOUNDS.__dict__, "total_steps": 14, "test_freq": 0})
    progress.last_step = 13
    assert wd.bound_s(last, progress)[0] == 1800 + 3600  # the last step validates too


def test_a_new_file_after_a_resume_is_read_from_its_start_and_partial_lines_wait(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(line(1) + line(2))
    progress = wd.Progress(metrics)
    progress.skip_existing()  # an earlier run's lines are not this run's progress
    assert not progress.poll(0.0) and progress.last_step is None
    metrics.rename(tmp_path / "metrics.1.jsonl")  # as recipe.nouscoder.main keeps an earlier segment
    metrics.write_text(line(3)[:10])
    assert not progress.poll(1.0)  # half a line is not a step
    metrics.write_text(line(3))
    assert progress.poll(2.0) and progress.last_step == 3


def test_watch_reports_the_stall_with_its_numbers_and_leaves_after_the_last_step(tmp_path):
    metrics, stop = tmp_path / "metrics.jsonl", tmp_path / "stall.txt"
    times = iter(range(0, 100_000, 100))  # each poll is 100 s later
    appended = {300: 1, 400: 2}

    def clock() -> float:
        now = next(times)
        if now in appended:
            with metrics.open("a") as handle:
                handle.write(line(appended[now]))
        return float(now)

    bounds = wd.Bounds(first_step_s=1000, min_s=50, factor=3, window=5, validation_s=0)
    reason = wd.watch(metrics, stop, bounds, poll_s=0, clock=clock)
    # steps at 300 s and 400 s: the bound is max(50, 3 x 100) = 300 s, passed at the poll at 800 s
    assert reason == stop.read_text().strip()
    assert reason.startswith(f"progress watchdog: no new step in {metrics} for 400s (last step 2); the bound was 300s")
    finished = iter(range(0, 1000, 100))
    metrics.write_text("")

    def clock_to_the_end() -> float:
        now = next(finished)
        if now == 200:
            with metrics.open("a") as handle:
                handle.write(line(0))
        return float(now)

    assert wd.watch(metrics, tmp_path / "none.txt", bounds, 0, last_step=0, clock=clock_to_the_end) is None
    assert not (tmp_path / "none.txt").exists()


def step_line(step: int, step_s: float, save_s: float = 0.0) -> str:
    """A training step as verl logs it: its step timer (the save inside it) and the actor update's."""
    data = {"timing_s/step": step_s + save_s, "timing_s/save_checkpoint": save_s, "timing_s/update_actor": 9.0}
    return json.dumps({"step": step, "data": data}) + "\n"


def test_the_pace_check_compares_the_median_of_the_first_steps_with_the_plan(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    progress = wd.Progress(metrics)
    pace = wd.Pace(planned_step_s=1000, steps=3, factor=2.0)
    metrics.write_text(line(0) + step_line(1, 2600) + step_line(2, 2400, save_s=300))
    progress.poll(0.0)
    assert progress.step_times == {1: 2600, 2: 2400} and pace.verdict(metrics, progress.step_times) is None  # 2 of 3
    with metrics.open("a") as handle:
        handle.write(step_line(3, 2200))
    progress.poll(1.0)
    warning = pace.verdict(metrics, progress.step_times)
    assert warning.startswith(f"step time: steps 1-3 of {metrics} took a median 2400 s, the run plan 1000 s (x2.40")
    assert "overrun the time booked for them" in warning and f"run_plan.py --measured {metrics}" in warning
    assert wd.Pace(planned_step_s=1500, steps=3, factor=2.0).verdict(metrics, progress.step_times) is None
    assert "leave unused" in wd.Pace(planned_step_s=5000, steps=3).verdict(metrics, progress.step_times)


def test_a_stopping_pace_check_stops_the_run_and_a_warning_one_lets_it_go_on(tmp_path, capsys):
    metrics, stop = tmp_path / "metrics.jsonl", tmp_path / "stall.txt"
    metrics.write_text("")
    bounds = wd.Bounds(first_step_s=10_000, min_s=10_000, factor=3, window=5, validation_s=0)

    def run(pace: wd.Pace, stop_file) -> str | None:
        times = iter(range(0, 10_000, 10))
        metrics.write_text("")

        def clock() -> float:
            now = next(times)
            if now in (100, 200, 300):
                with metrics.open("a") as handle:
                    handle.write(step_line(now // 100, 50.0))
            return float(now)

        return wd.watch(metrics, stop_file, bounds, 0, last_step=3, clock=clock, pace=pace)

    assert run(wd.Pace(planned_step_s=10, stop=False), stop) is None  # warned, then the run finished
    assert "WARNING: step time: steps 1-3" in capsys.readouterr().out and not stop.exists()
    reason = run(wd.Pace(planned_step_s=10, stop=True), stop)
    assert reason.endswith("; stopped (PACE_ACTION=stop)") and stop.read_text().strip() == reason
