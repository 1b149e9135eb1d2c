"""Progress watchdog of one trainer run: a stall (no new step in metrics.jsonl within a bound) stops the job.

`run_watched` (launch/lib/ray_slurm.sh) sees only Ray's node processes: a hung NCCL collective, a stuck weight sync or
a dead vLLM worker under PipelineRL's `wait` strategy keeps every process alive and the job idle until its time
limit. verl's file logger appends one line per step to RUN_DIR/metrics.jsonl (and one for a validation before
training, the only line of a validation-only run); this watches it. The bound for the next line is

    first line of this run:   FIRST_STEP_S (Ray actors, model load, vLLM start-up, validation before training)
    later lines:              max(MIN_S, FACTOR x the longest of the last WINDOW intervals between lines)
                              + VALIDATION_S when the next step validates (a multiple of --test-freq, or the last)

When it passes, the watchdog writes the reason to --stop-file and exits; the launcher then dumps diagnostics, stops
the trainer and fails the job, so that a queued retry resumes from the last checkpoint (launch/README.md). Once the
line of --last-step arrives (the run's total steps; 0 for a validation-only run) the run is finishing and the
watchdog leaves.

The pace check: with --planned-step-s (the run plan's step time, launch/run_plan.py), once --pace-steps training
steps are logged it compares their median `timing_s/step` (verl's step timer, less `timing_s/save_checkpoint`) with
the plan; beyond --pace-factor either way it prints a `WARNING: step time ...` line (the launcher forwards it to the
job's log) naming the measured and planned figures and the re-plan command, and with --pace-action stop it stops the
run as a stall does (the plan's steps would not fit the time booked for them).

    python launch/progress_watchdog.py RUN_DIR/metrics.jsonl --stop-file FILE [--test-freq 15 --total-steps 150]
        [--planned-step-s 1100 --pace-steps 3 --pace-factor 2 --pace-action warn]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Bounds:
    """The knobs of the bound (seconds), as the launcher passes them (STALL_* in launch/stage_chain.sh)."""

    first_step_s: float
    min_s: float
    factor: float
    window: int
    validation_s: float
    test_freq: int = 0
    total_steps: int = 0

    def validates(self, step: int) -> bool:
        return step > 0 and ((self.test_freq > 0 and step % self.test_freq == 0) or step == self.total_steps)


@dataclass
class Progress:
    """The steps seen in a metrics file, read incrementally (a new file, as after a resume, starts over)."""

    path: Path
    offset: int = 0
    inode: int | None = None
    partial: str = ""
    last_step: int | None = None
    arrivals: list[float] = field(default_factory=list)
    step_times: dict[int, float] = field(default_factory=dict)

    def skip_existing(self) -> None:
        """Start after what the file holds now: an earlier run's lines are not this run's progress."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return
        self.inode, self.offset = stat.st_ino, stat.st_size

    def poll(self, now: float) -> bool:
        """Read what was appended; True when a new step line arrived."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return False
        if stat.st_ino != self.inode or stat.st_size < self.offset:
            self.inode, self.offset, self.partial = stat.st_ino, 0, ""
        if stat.st_size == self.offset:
            return False
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk.decode("utf-8", errors="replace")).split("\n")
        arrived = False
        for line in lines:
            try:
                record = json.loads(line)
                step = int(record["step"])
            except (ValueError, KeyError, TypeError):
                continue  # not a verl FileLogger line
            self.last_step, arrived = step, True
            self.arrivals.append(now)
            data = record.get("data") if isinstance(record.get("data"), dict) else {}
            if "timing_s/step" in data and "timing_s/update_actor" in data:  # a training step, not a validation
                self.step_times[step] = float(data["timing_s/step"]) - float(data.get("timing_s/save_checkpoint", 0))
        return arrived


def bound_s(bounds: Bounds, progress: Progress) -> tuple[float, str]:
    """Seconds allowed after the last line (or the start) for the next one, and how they were derived."""
    if not progress.arrivals:
        return bounds.first_step_s, f"the first step's bound STALL_FIRST_STEP_S={bounds.first_step_s:.0f}s"
    intervals = [b - a for a, b in zip(progress.arrivals, progress.arrivals[1:], strict=False)][-bounds.window :]
    longest = max(intervals, default=0.0)
    bound = max(bounds.min_s, bounds.factor * longest)
    how = f"max(STALL_MIN_S={bounds.min_s:.0f}s, {bounds.factor:g} x the longest of the last {len(intervals)} step(s), {longest:.0f}s)"
    next_step = (progress.last_step or 0) + 1
    if bounds.validates(next_step):
        bound += bounds.validation_s
        how += f" + STALL_VALIDATION_S={bounds.validation_s:.0f}s (step {next_step} validates)"
    return bound, how


@dataclass(frozen=True)
class Pace:
    """The pace check's knobs (PACE_* in launch/stage_chain.sh): the plan's step time and the tolerance."""

    planned_step_s: float
    steps: int = 3
    factor: float = 2.0
    stop: bool = False

    def verdict(self, metrics: Path, step_times: dict[int, float]) -> str | None:
        """The warning once `steps` training steps are logged and their median is beyond `factor` of the plan."""
        if self.planned_step_s <= 0 or len(step_times) < self.steps:
            return None
        first = sorted(step_times)[: self.steps]
        measured = statistics.median(step_times[step] for step in first)
        ratio = measured / self.planned_step_s
        if 1 / self.factor <= ratio <= self.factor:
            return None
        return (
            f"step time: steps {first[0]}-{first[-1]} of {metrics} took a median {measured:.0f} s, the run plan "
            f"{self.planned_step_s:.0f} s (x{ratio:.2f}, beyond PACE_FACTOR={self.factor:g}): the planned steps "
            f"{'overrun' if ratio > 1 else 'leave unused'} the time booked for them; re-plan from these measurements "
            f"with python launch/run_plan.py --measured {metrics} (and the job's --nodes, --stages, ...)"
        )


def stop_with(stop_file: Path, reason: str) -> str:
    tmp = stop_file.with_name(stop_file.name + ".tmp")
    tmp.write_text(reason + "\n")
    os.replace(tmp, stop_file)
    return reason


def watch(
    metrics: Path,
    stop_file: Path,
    bounds: Bounds,
    poll_s: float,
    last_step: int | None = None,
    clock=time.monotonic,
    pace: Pace | None = None,
) -> str | None:
    """Block until a stall (or, with a stopping pace check, a step time beyond the plan), then write its description
    to `stop_file` and return it; None once `last_step` is logged (what follows is the run's shutdown)."""
    progress = Progress(metrics)
    progress.skip_existing()
    start = clock()
    paced = False
    while True:
        now = clock()
        progress.poll(now)
        if pace is not None and not paced:
            warning = pace.verdict(metrics, progress.step_times)
            if warning:
                paced = True
                print(f"WARNING: {warning}", flush=True)
                if pace.stop:
                    return stop_with(stop_file, f"{warning}; stopped (PACE_ACTION=stop)")
        if last_step is not None and progress.last_step is not None and progress.last_step >= last_step:
            return None
        since = progress.arrivals[-1] if progress.arrivals else start
        bound, how = bound_s(bounds, progress)
        if now - since > bound:
            last = f"last step {progress.last_step}" if progress.arrivals else "no step logged yet"
            reason = (
                f"progress watchdog: no new step in {metrics} for {now - since:.0f}s ({last}); the bound was "
                f"{bound:.0f}s = {how}. The trainer is stalled (a hung collective, weight sync or rollout worker)"
            )
            return stop_with(stop_file, reason)
        time.sleep(poll_s)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/progress_watchdog.py", description=__doc__.splitlines()[0])
    parser.add_argument("metrics", type=Path, help="the run's metrics.jsonl (it may not exist yet)")
    parser.add_argument("--stop-file", type=Path, required=True, help="where to write the stall's description")
    parser.add_argument("--first-step-s", type=float, default=7200, help="bound for the run's first line")
    parser.add_argument("--min-s", type=float, default=1800, help="floor of the bound for later lines")
    parser.add_argument("--factor", type=float, default=3.0, help="times the longest recent interval")
    parser.add_argument("--window", type=int, default=5, help="recent intervals considered")
    parser.add_argument("--validation-s", type=float, default=3600, help="added when the next step validates")
    parser.add_argument("--test-freq", type=int, default=0, help="the run's trainer.test_freq (0: never)")
    parser.add_argument("--total-steps", type=int, default=0, help="the run's last step (validates too)")
    parser.add_argument("--last-step", type=int, default=None, help="leave once this step is logged (default: never)")
    parser.add_argument("--poll-s", type=float, default=10.0, help="seconds between looks at the file")
    parser.add_argument("--planned-step-s", type=float, default=0, help="the run plan's step time (0: no pace check)")
    parser.add_argument("--pace-steps", type=int, default=3, help="training steps the pace check waits for")
    parser.add_argument("--pace-factor", type=float, default=2.0, help="tolerated ratio to the plan, either way")
    parser.add_argument(
        "--pace-action", choices=("warn", "stop"), default="warn", help="beyond the factor: warn, or stop the run"
    )
    args = parser.parse_args(argv)
    bounds = Bounds(
        args.first_step_s, args.min_s, args.factor, args.window, args.validation_s, args.test_freq, args.total_steps
    )
    pace = Pace(args.planned_step_s, args.pace_steps, args.pace_factor, args.pace_action == "stop")
    stall = watch(args.metrics, args.stop_file, bounds, args.poll_s, args.last_step, pace=pace)
    print(stall or f"progress watchdog: {args.metrics} reached step {args.last_step}; the run is finishing", flush=True)


if __name__ == "__main__":
    main()
