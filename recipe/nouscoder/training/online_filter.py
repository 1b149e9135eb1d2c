"""Offline and online filtering of solved problems (NousCoder "Additional Training Tricks").

Offline: problems listed in a file (e.g. those the base model solves at every sample) never enter training;
``python -m data_prep.filter_by_pass_rate`` applies the same rule earlier by writing a filtered parquet.
Online: once every rollout of a problem passes in epoch e, the problem is skipped from epoch e + 1 on.

Both act on the train dataloader's index sampler (``ProblemFilterSampler`` wraps verl's sampler), so the
dataset, collate function and verl's dataloader checkpointing stay as they are. The removed set is
saved next to verl's checkpoint files (``global_step_N/nouscoder_online_filter.json``) and restored on resume.
"""

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from torch.utils.data import Sampler
from torchdata.stateful_dataloader import Stateful

STATE_FILE_NAME = "nouscoder_online_filter.json"


def load_problem_id_list(path: str | os.PathLike) -> set[str]:
    """Problem ids from a JSON list, a JSON object with a "problem_ids" list, or text with one id a line."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        loaded = json.loads(text)
        ids = loaded.get("problem_ids") if isinstance(loaded, dict) else loaded
        if not isinstance(ids, list):
            raise ValueError(
                f"{path}: expected a JSON list of problem ids or an object with a 'problem_ids' list, "
                f"got {type(loaded).__name__}"
            )
        return {str(problem_id) for problem_id in ids}
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def load_solved_problems(path: str | os.PathLike) -> set[str]:
    """Problems an earlier stage solved: its saved filter state (a ``nouscoder_online_filter.json``: this stage's solved
    problems and the stages' before it) or an id list in ``load_problem_id_list``'s formats."""
    if Path(path).suffix == ".json":
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(state, dict) and "solved_in_epoch" in state:
            return {str(problem) for problem in [*state["solved_in_epoch"], *state.get("solved_before", [])]}
    return load_problem_id_list(path)


def dataset_problem_ids(extra_infos: Sequence[dict | None]) -> list[str]:
    """``extra_info.problem_id`` of each dataset row (rows without one are named ``row-<index>``)."""
    return [
        str(info["problem_id"]) if info and info.get("problem_id") is not None else f"row-{index}"
        for index, info in enumerate(extra_infos)
    ]


def fully_solved_problems(
    uids: Sequence[str], problem_ids: Sequence[str], scores: Sequence[float], pass_threshold: float = 0.0
) -> set[str]:
    """Problems of the groups (rows sharing a uid) in which every rollout's score is above ``pass_threshold``."""
    group_passed: dict[str, bool] = {}
    group_problem: dict[str, str] = {}
    for uid, problem_id, score in zip(uids, problem_ids, scores, strict=True):
        group_passed[uid] = group_passed.get(uid, True) and float(score) > pass_threshold
        group_problem[uid] = str(problem_id)
    return {group_problem[uid] for uid, passed in group_passed.items() if passed}


class SolvedProblemFilter:
    """Which problems are out of training: the offline list, problems an earlier context stage solved, and problems
    fully solved in an earlier epoch of this stage."""

    def __init__(
        self,
        offline_excluded: set[str] | None = None,
        online_enabled: bool = True,
        solved_before: set[str] | None = None,
    ):
        self.offline_excluded = set(offline_excluded or ())
        self.online_enabled = online_enabled
        self.solved_before = set(solved_before or ()) if online_enabled else set()
        self.solved_in_epoch: dict[str, int] = {}

    def record_solved(self, problem_ids: set[str], epoch: int) -> int:
        """Remember problems fully solved during ``epoch``; returns how many are new."""
        if not self.online_enabled:
            return 0
        known = self.solved_in_epoch.keys() | self.solved_before
        new = [problem_id for problem_id in problem_ids if problem_id not in known]
        for problem_id in new:
            self.solved_in_epoch[problem_id] = epoch
        return len(new)

    def is_excluded(self, problem_id: str, epoch: int) -> bool:
        """Offline-listed, or fully solved in an epoch before ``epoch``."""
        if problem_id in self.offline_excluded or problem_id in self.solved_before:
            return True
        solved_epoch = self.solved_in_epoch.get(problem_id)
        return solved_epoch is not None and solved_epoch < epoch

    @property
    def online_removed_count(self) -> int:
        return len(self.solved_in_epoch)

    def state_dict(self) -> dict:
        """This stage's solved problems, and the earlier stages' (handed on to the next stage with the rest)."""
        return {"solved_in_epoch": dict(self.solved_in_epoch), "solved_before": sorted(self.solved_before)}

    def load_state_dict(self, state: dict) -> None:
        self.solved_in_epoch = {str(key): int(value) for key, value in state["solved_in_epoch"].items()}
        if self.online_enabled:
            self.solved_before |= {str(problem) for problem in state.get("solved_before", [])}

    def save(self, checkpoint_folder: str | os.PathLike) -> Path:
        """Write the state to ``<checkpoint_folder>/nouscoder_online_filter.json``."""
        path = Path(checkpoint_folder) / STATE_FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.state_dict(), indent=1, sort_keys=True), encoding="utf-8")
        return path

    def load(self, checkpoint_folder: str | os.PathLike) -> bool:
        """Restore the state saved in ``checkpoint_folder``; False when the folder has none."""
        path = Path(checkpoint_folder) / STATE_FILE_NAME
        if not path.exists():
            return False
        self.load_state_dict(json.loads(path.read_text(encoding="utf-8")))
        return True


class _FilteredIndexIterator(Iterator[int], Stateful):
    """Indices of the wrapped sampler's epoch pass, skipping rows whose problem is excluded for this epoch."""

    def __init__(self, sampler: "ProblemFilterSampler", epoch: int):
        self.sampler = sampler
        self.epoch = epoch
        self.base_iterator = iter(sampler.base_sampler)
        self.base_yielded = 0

    def __next__(self) -> int:
        while True:
            index = next(self.base_iterator)
            self.base_yielded += 1
            if not self.sampler.is_excluded(index, self.epoch):
                return index

    def state_dict(self) -> dict:
        state = {"epoch": self.epoch, "base_yielded": self.base_yielded}
        if isinstance(self.base_iterator, Stateful):
            state["base_iterator"] = self.base_iterator.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.epoch = state["epoch"]
        self.sampler.epoch = self.epoch
        self.base_iterator = iter(self.sampler.base_sampler)
        if "base_iterator" in state and isinstance(self.base_iterator, Stateful):
            self.base_iterator.load_state_dict(state["base_iterator"])
        else:
            for _ in range(state["base_yielded"]):
                next(self.base_iterator)
        self.base_yielded = state["base_yielded"]


class ProblemFilterSampler(Sampler[int]):
    """Wraps a dataset index sampler; each new pass over it is one epoch, skipping filtered problems.

    ``epoch`` is the epoch of the pass in progress (0-based); its iterator checkpoints the wrapped
    iterator's state, so torchdata's StatefulDataLoader resumes mid-epoch at the same index.
    """

    def __init__(self, base_sampler: Sampler[int], problem_ids: Sequence[str], problem_filter: SolvedProblemFilter):
        self.base_sampler = base_sampler
        self.problem_ids = list(problem_ids)
        self.problem_filter = problem_filter
        self.epoch = -1

    def is_excluded(self, index: int, epoch: int) -> bool:
        return self.problem_filter.is_excluded(self.problem_ids[index], epoch)

    def active_count(self, epoch: int) -> int:
        """Rows of the dataset still in training during ``epoch``."""
        return int(np.sum([not self.is_excluded(index, epoch) for index in range(len(self.problem_ids))]))

    def __iter__(self) -> Iterator[int]:
        self.epoch += 1
        if self.active_count(self.epoch) == 0:
            raise RuntimeError(
                f"Every one of the {len(self.problem_ids)} training problems is filtered out at epoch {self.epoch} "
                f"({len(self.problem_filter.offline_excluded)} offline-listed, "
                f"{len(self.problem_filter.solved_before)} solved in an earlier stage, "
                f"{self.problem_filter.online_removed_count} solved online): lower trainer.total_epochs / "
                "total_training_steps, or set nouscoder.online_filter.enable=False."
            )
        return _FilteredIndexIterator(self, self.epoch)

    def __len__(self) -> int:
        return self.active_count(max(self.epoch, 0))
