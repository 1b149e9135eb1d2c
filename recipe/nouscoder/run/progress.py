"""A training run's progress as one short line per step, read from the metrics file verl's file logger writes.

verl's console logger prints every metric of a step on one line (about 160 metrics, ~6,000 characters); a person
watching a run wants the few that say whether it learns: the mean reward, how many rollouts were accepted, the pass
rate, the response length, the gradient norm and the step time, and the validation score when there is one. The
lines come from ``RUN_DIR/metrics.jsonl`` (``{"step": N, "data": {...}}`` per logged step: verl
``utils/tracking.py`` ``FileLogger``), followed while the trainer writes it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

VERDICT_PREFIX = "grading/verdict/"
VALIDATION_SCORE = re.compile(r"^val-core/(?P<source>[^/]+)/(?P<metric>acc/mean@\d+)$")
"""verl's validation score per data source (``_val_metrics_update``: ``val-core/<source>/acc/mean@n``)."""


def step_line(step: int, metrics: Mapping[str, float], total_steps: int | None = None) -> str:
    """``step 3/10 | reward -0.12 | accepted 7/16 | pass rate 0.44 | response 210 tokens | grad norm 0.49 | 25.2 s``
    for a training step; ``validation at step 3: <source> acc/mean@1 0.250`` for a validation-only line. A metric
    the step did not log is left out."""
    scores = [
        f"{match['source']} {match['metric']} {value:.3f}"
        for key, value in sorted(metrics.items())
        if (match := VALIDATION_SCORE.match(key))
    ]
    if "actor/grad_norm" not in metrics:
        return f"validation at step {step}: " + ("; ".join(scores) or "no score logged")
    verdicts = {key: value for key, value in metrics.items() if key.startswith(VERDICT_PREFIX)}
    parts = [f"step {step}" + (f"/{total_steps}" if total_steps else "")]
    if "critic/score/mean" in metrics:
        parts.append(f"reward {metrics['critic/score/mean']:+.2f}")
    if verdicts:
        accepted = verdicts.get(VERDICT_PREFIX + "accepted", 0.0)
        parts.append(f"accepted {accepted:.0f}/{sum(verdicts.values()):.0f}")
    if "nouscoder/pass_rate" in metrics:
        parts.append(f"pass rate {metrics['nouscoder/pass_rate']:.2f}")
    if "response_length/mean" in metrics:
        parts.append(f"response {metrics['response_length/mean']:.0f} tokens")
    parts.append(f"grad norm {metrics['actor/grad_norm']:.3g}")
    if "timing_s/step" in metrics:
        parts.append(f"{metrics['timing_s/step']:.1f} s")
    parts += [f"validation {score}" for score in scores]
    return " | ".join(parts)


class MetricsFollower:
    """Calls ``on_step(step, metrics)`` for each line a trainer appends to ``path``, from a background thread, and
    ``on_open()`` when the file appears (verl's ``FileLogger`` creates it when the trainer is built, just before the
    first step).

    The file that exists when the follower starts belongs to an earlier run (``recipe.nouscoder.main`` moves it to
    ``metrics.<k>.jsonl`` before verl's logger creates the new one): it is skipped by its inode. ``stop`` reads what
    is left, then ends the thread."""

    def __init__(
        self,
        path: Path,
        on_step: Callable[[int, dict[str, float]], None],
        on_open: Callable[[], None] = lambda: None,
        poll_s: float = 0.5,
    ) -> None:
        self.path = path
        self.on_step = on_step
        self.on_open = on_open
        self.poll_s = poll_s
        self._stale_inode = path.stat().st_ino if path.exists() else None
        self._inode: int | None = None
        self._offset = 0
        self._pending = b""
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="metrics-follower", daemon=True)

    def start(self) -> MetricsFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self.read_new_lines()

    def _follow(self) -> None:
        while not self._stopped.wait(self.poll_s):
            self.read_new_lines()

    def read_new_lines(self) -> None:
        """Read what was appended since the last call (complete lines only)."""
        try:
            inode = self.path.stat().st_ino
        except FileNotFoundError:
            return
        if inode == self._stale_inode:
            return
        if inode != self._inode:
            self._inode, self._offset, self._pending = inode, 0, b""
            self.on_open()
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            try:
                record = json.loads(line)
                self.on_step(int(record["step"]), dict(record["data"]))
            except (ValueError, KeyError, TypeError):
                continue  # not a FileLogger line: the full log has the run's own messages
