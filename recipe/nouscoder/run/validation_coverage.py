"""Every problem of the validation data reaches the validation, or the run stops before it starts.

With `data.filter_overlong_prompts: true` (our configs', for training) verl's `RLHFDataset` drops every row whose
chat-templated prompt has more than `data.max_prompt_length` tokens, from the validation data too, and the score is
then the mean over the rows left: a LiveCodeBench pass@1 over 450 of 454 problems, not comparable with a published
one, and different between models with different tokenizers. This builds the validation dataset exactly as verl's
trainer does (`verl.trainer.ppo.utils.create_rl_dataset` with the model's tokenizer, `HFModelConfig`) and compares it
with the rows of `data.val_files`, before Ray starts. `nouscoder.validation.require_every_problem=false` allows the
drop (the offline-filter stage, whose overlong training prompts are dropped in training too).
"""

from __future__ import annotations

import pyarrow.parquet as pq
from omegaconf import DictConfig, ListConfig, OmegaConf


class ValidationProblemsDropped(ValueError):
    """Some validation problems would be dropped; the message names them and the fix."""


def runs_validation(config: DictConfig) -> bool:
    trainer = config.trainer
    return bool(trainer.get("val_only") or trainer.get("val_before_train") or (trainer.get("test_freq") or 0) > 0)


def _files(value) -> list[str]:
    return [str(item) for item in value] if isinstance(value, ListConfig | list) else [str(value)]


def _problem_ids(extra_infos: list) -> list[str]:
    """`extra_info.problem_id` of each row (docs/DESIGN.md "Parquet row"), else the row's position."""
    return [str((extra or {}).get("problem_id", f"row {index}")) for index, extra in enumerate(extra_infos)]


def _parquet_problem_ids(path: str) -> list[str]:
    if "extra_info" not in pq.read_schema(path).names:
        return _problem_ids([None] * pq.read_metadata(path).num_rows)
    return _problem_ids(pq.read_table(path, columns=["extra_info"]).column("extra_info").to_pylist())


def check_validation_coverage(config: DictConfig) -> None:
    """Raise ValidationProblemsDropped when verl would drop validation rows for their prompt length (parquet files;
    verl's json data files are not checked)."""
    require = OmegaConf.select(config, "nouscoder.validation.require_every_problem", default=True)
    data = config.data
    files = _files(data.val_files)
    if not require or not data.get("filter_overlong_prompts") or not runs_validation(config):
        return
    if not all(path.endswith(".parquet") for path in files):
        return
    from verl.trainer.ppo.utils import create_rl_dataset
    from verl.utils.config import omega_conf_to_dataclass

    model = omega_conf_to_dataclass(config.actor_rollout_ref.model)  # the trainer's tokenizer and processor
    dataset = create_rl_dataset(files, data, model.tokenizer, model.processor, is_train=False, max_samples=-1)
    given = [problem_id for path in files for problem_id in _parquet_problem_ids(path)]
    if len(dataset) >= len(given):
        return
    columns = dataset.dataframe.column_names
    kept = set(_problem_ids(dataset.dataframe["extra_info"] if "extra_info" in columns else []))
    dropped = [problem_id for problem_id in given if problem_id not in kept]
    shown = ", ".join(dropped[:10]) + (f", ... ({len(dropped)} in all)" if len(dropped) > 10 else "")
    raise ValidationProblemsDropped(
        f"data.val_files={files}: {len(given) - len(dataset)} of {len(given)} problems have a prompt longer than "
        f"data.max_prompt_length={data.max_prompt_length} tokens of {config.actor_rollout_ref.model.path}'s "
        f"tokenizer, and verl's data.filter_overlong_prompts would drop them from validation, so the score would be "
        f"over {len(dataset)} problems, not {len(given)}: {shown}. Raise data.max_prompt_length (rollout.prompt_length "
        "follows it), or set nouscoder.validation.require_every_problem=false to accept that."
    )
