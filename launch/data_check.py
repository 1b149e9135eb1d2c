"""The data every run of a job reads, checked on the batch host before Ray starts and before stage 0.

- columns: each parquet a run reads has the columns verl's `RLHFDataset` and reward loop read (`data.prompt_key`,
  `data_source`, `reward_model.ground_truth`) and, for training data and stage 0's, `extra_info.problem_id`, by which
  the offline and online filters and stage 0 key problems (docs/DESIGN.md "Parquet row");
- the prompt budget: no validation problem (LiveCodeBench) has a prompt over `data.max_prompt_length` tokens of the
  model's tokenizer (recipe/nouscoder/run/validation_coverage.py, the same check the trainer makes when it starts, here
  before the job has spent a GPU-hour; stage 0 alone spends ~6 h before the first training stage's check).
Each problem names the run, the key, the file and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, ListConfig, OmegaConf

from recipe.nouscoder.run.validation_coverage import ValidationProblemsDropped, check_validation_coverage


@dataclass(frozen=True)
class DataUse:
    """A run reading `files` through `key` (data.train_files or data.val_files), with the config it runs."""

    run: str
    key: str
    files: tuple[str, ...]
    config: DictConfig
    keyed_by_problem: bool


def as_files(value) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, ListConfig | list | tuple) else (str(value),)


def needed_columns(use: DataUse) -> dict[str, tuple[str, ...]]:
    """{column: the struct fields read in it} for one use."""
    needed: dict[str, tuple[str, ...]] = {
        str(use.config.data.get("prompt_key", "prompt")): (),
        "data_source": (),
        "reward_model": ("ground_truth",),
    }
    if use.keyed_by_problem:
        needed["extra_info"] = ("problem_id",)
    return needed


def missing_columns(path: str, needed: dict[str, tuple[str, ...]]) -> list[str]:
    schema = pq.read_schema(path)
    missing = []
    for column, fields in needed.items():
        if column not in schema.names:
            missing.append(column)
            continue
        kind = schema.field(column).type
        for name in fields:
            if not (pa.types.is_struct(kind) and kind.get_field_index(name) >= 0):
                missing.append(f"{column}.{name}")
    return missing


def column_problems(uses: list[DataUse]) -> list[str]:
    problems, seen = [], set()
    for use in uses:
        for path in use.files:
            needed = needed_columns(use)
            if (path, tuple(needed)) in seen:
                continue
            seen.add((path, tuple(needed)))
            where = f"{use.key}={path} ({use.run})"
            if not Path(path).is_file():
                problems.append(
                    f"{where} does not exist: build the data (launch/README.md, Prerequisites) or pass {use.key}=PATH"
                )
                continue
            try:
                missing = missing_columns(path, needed)
            except (pa.ArrowInvalid, OSError) as error:
                problems.append(f"{where} is not a readable parquet file: {error}")
                continue
            if missing:
                problems.append(
                    f"{where} lacks {', '.join(missing)}: write it with python -m data_prep.build_deepcoder_mix (the "
                    'row layout of docs/DESIGN.md "Parquet row")'
                )
    return problems


def prompt_budget_problems(uses: list[DataUse], model_dir: str) -> list[str]:
    """check_validation_coverage for each distinct validation data and budget, with the tokenizer in `model_dir`."""
    problems, seen = [], set()
    for use in uses:
        if use.key != "data.val_files":
            continue
        config = use.config
        budget = (use.files, int(config.data.max_prompt_length))
        if budget in seen:
            continue
        seen.add(budget)
        config = config.copy()
        OmegaConf.update(config, "data.val_files", list(use.files), force_add=True)
        OmegaConf.update(config, "actor_rollout_ref.model.path", model_dir, force_add=True)
        # only the tokenizer counts here: the model's config overrides (an evaluation's YaRN) are the trainer's business
        OmegaConf.update(config, "actor_rollout_ref.model.override_config", {}, force_add=True, merge=False)
        try:
            check_validation_coverage(config)
        except ValidationProblemsDropped as dropped:
            problems.append(f"{use.run}: {dropped}")
        except Exception as error:  # a tokenizer or data the check cannot read: named, not a traceback
            problems.append(
                f"{use.run}: data.val_files={list(use.files)} could not be checked: {type(error).__name__}: {error}"
            )
    return problems
