"""What a measured run says about step time: the rehearsal's report format, and the same figures from metrics.jsonl.

The rehearsal (`launch/rehearse.sh`) writes one JSON file in this format (`FORMAT`), which `RehearsalReport.read`
reads and checks field by field:

    {"format": "nouscoder-rehearsal-report/1",
     "model": {"path": str, "config": {the model's config.json}},
     "allocation": {"nodes": int, "gpus_per_node": int, "gpu": str (nvidia-smi's name), "gpu_memory_gb": float,
                    "trainer_gpus": int, "rollout_gpus": int (0: colocated), "rollout_tensor_parallel": int},
     "shape": {"train_batch_size": int, "group_size": int, "max_prompt_length": int, "max_response_length": int,
               "rollout_gpu_memory_utilization": float, "rollout_max_num_seqs": int},
     "steps": [{"step": int, "step_s": float, "generation_s": float, "weight_sync_s": float, "log_prob_s": float,
                "update_s": float, "grading_wait_s": float, "sequences": int,
                "mean_prompt_tokens": float, "mean_response_tokens": float}, ...],
     "rollout_tokens_per_s_per_gpu": float,
     "peak_memory_gb": {"trainer": float, "rollout": float},
     "weight_sync": {"seconds": float, "bytes": float},
     "verdict": str}

A real run's `metrics.jsonl` (verl's file logger) gives the same per-step split from verl 0.9.1's keys
(`trainer/ppo/metric_utils.py` `compute_timing_metrics`, `compute_data_metrics`; `workers/engine_workers.py:219`):
`timing_s/step` (minus `timing_s/save_checkpoint`), `timing_s/gen`, `timing_s/update_weights`,
`timing_s/old_log_prob`, `timing_s/update_actor`, `timing_s/reward`, `prompt_length/mean`, `response_length/mean`,
`actor/perf/max_memory_allocated_gb` (the trainer's peak) and, where the trainer logs it, `MEMORY_KEY` per role; the
shape comes from the run's composed config (`RUN_DIR/hydra/<time>/.hydra/config.yaml`, or a config name). There the
rollout's tokens/s per GPU is response tokens per step / (generation time, or the step time of the separate-async
trainer, whose generation overlaps the step) / rollout GPUs: a lower bound (dropped groups are not counted), and the
weight sync's bytes are the model's bf16 weights.

`Measurements` is what the planner calibrates with (launch/run_plan.py `calibrate`): medians over the training steps
(the first left out when there are three or more: start-up).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from chain import compose
from gpu_spec import GPUS, GPUSpec
from model_spec import ModelSpec, UnknownModel, resolve_model
from omegaconf import DictConfig, OmegaConf

from recipe.nouscoder.run.run_dir import read_step_metrics
from recipe.nouscoder.training.role_memory import MEMORY_KEY

FORMAT = "nouscoder-rehearsal-report/1"
TIMING_KEYS = {
    "step_s": "timing_s/step",
    "generation_s": "timing_s/gen",
    "weight_sync_s": "timing_s/update_weights",
    "log_prob_s": "timing_s/old_log_prob",
    "update_s": "timing_s/update_actor",
    "grading_wait_s": "timing_s/reward",
}


class ReportError(ValueError):
    """A report or metrics file that cannot be read as measurements; the message names the file and field."""


@dataclass(frozen=True)
class StepTiming:
    """One training step's time split (seconds) and its batch."""

    step: int
    step_s: float
    generation_s: float
    weight_sync_s: float
    log_prob_s: float
    update_s: float
    grading_wait_s: float
    sequences: int
    mean_prompt_tokens: float
    mean_response_tokens: float


@dataclass(frozen=True)
class Measurements:
    """Medians of a measured run's training steps, with the shape they were measured at."""

    source: str
    model: ModelSpec
    gpu: GPUSpec | None
    trainer_gpus: int
    rollout_gpus: int
    tensor_parallel: int
    memory_utilization: float
    max_num_seqs: int
    steps: tuple[StepTiming, ...]
    tokens_per_s_per_rollout_gpu: float
    weight_sync_bytes: float
    peak_memory_gb: dict[str, float]

    def median(self, name: str) -> float:
        kept = self.steps[1:] if len(self.steps) >= 3 else self.steps
        return statistics.median(getattr(step, name) for step in kept)

    @property
    def sequences(self) -> float:
        return self.median("sequences")

    @property
    def mean_prompt_tokens(self) -> float:
        return self.median("mean_prompt_tokens")

    @property
    def mean_response_tokens(self) -> float:
        return self.median("mean_response_tokens")

    @property
    def trainer_s(self) -> float:
        return self.median("log_prob_s") + self.median("update_s")

    @property
    def weight_sync_s(self) -> float:
        return self.median("weight_sync_s")

    def describe(self) -> str:
        memory = ", ".join(f"{role} {value:.1f} GB" for role, value in self.peak_memory_gb.items()) or "not logged"
        return (
            f"measured ({self.source}, {self.model.name}, {self.trainer_gpus} trainer + {self.rollout_gpus or 'the same'}"
            f" rollout GPUs, {len(self.steps)} steps): step {self.median('step_s'):.1f} s = generation "
            f"{self.median('generation_s'):.1f} + log-probs {self.median('log_prob_s'):.1f} + update "
            f"{self.median('update_s'):.1f} + weight sync {self.weight_sync_s:.1f} + grading wait "
            f"{self.median('grading_wait_s'):.1f}; {self.tokens_per_s_per_rollout_gpu:,.0f} tokens/s per rollout GPU; "
            f"{self.sequences:.0f} sequences of {self.mean_prompt_tokens:.0f} + {self.mean_response_tokens:.0f} "
            f"tokens; peak memory {memory}"
        )


def gpu_kind(name: str) -> GPUSpec | None:
    """The GPUSpec whose kind an nvidia-smi name mentions (e.g. 'NVIDIA H100 80GB HBM3'), else None."""
    return next((spec for kind, spec in GPUS.items() if kind in name.lower()), None)


def field_of(data: Any, path: str, kind: type, where: str) -> Any:
    """data[a][b]... for path 'a.b', of type `kind` (an int is a float too), or ReportError naming it."""
    value = data
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise ReportError(f"{where}: missing field {path}")
        value = value[part]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ReportError(f"{where}: field {path} is {value!r}, not a {kind.__name__}")
    return value


@dataclass(frozen=True)
class RehearsalReport:
    """The rehearsal's JSON report, checked (module docstring: the format)."""

    path: Path
    data: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> RehearsalReport:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ReportError(f"{path}: not a readable JSON report: {error}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ReportError(
                f"{path}: format is {data.get('format') if isinstance(data, dict) else data!r}, not {FORMAT}"
            )
        report = cls(path, data)
        report.measurements()  # every field checked now
        return report

    def measurements(self) -> Measurements:
        where, data = str(self.path), self.data
        steps = field_of(data, "steps", list, where)
        if not steps:
            raise ReportError(f"{where}: no steps")
        timings = []
        for index, step in enumerate(steps):
            values = {}
            for item in fields(StepTiming):
                kind = int if item.type in ("int", int) else float
                values[item.name] = field_of(step, item.name, kind, f"{where}: steps[{index}]")
            timings.append(StepTiming(**values))
        try:
            model = ModelSpec.from_config(
                field_of(data, "model.config", dict, where), field_of(data, "model.path", str, where)
            )
        except UnknownModel as error:
            raise ReportError(f"{where}: model.config: {error}") from None
        return Measurements(
            source=where,
            model=model,
            gpu=gpu_kind(field_of(data, "allocation.gpu", str, where)),
            trainer_gpus=field_of(data, "allocation.trainer_gpus", int, where),
            rollout_gpus=field_of(data, "allocation.rollout_gpus", int, where)
            or field_of(data, "allocation.trainer_gpus", int, where),
            tensor_parallel=field_of(data, "allocation.rollout_tensor_parallel", int, where),
            memory_utilization=field_of(data, "shape.rollout_gpu_memory_utilization", float, where),
            max_num_seqs=field_of(data, "shape.rollout_max_num_seqs", int, where),
            steps=tuple(timings),
            tokens_per_s_per_rollout_gpu=field_of(data, "rollout_tokens_per_s_per_gpu", float, where),
            weight_sync_bytes=field_of(data, "weight_sync.bytes", float, where),
            peak_memory_gb={
                role: field_of(data, f"peak_memory_gb.{role}", float, where) for role in ("trainer", "rollout")
            },
        )


def run_config(metrics: Path, config_name: str | None) -> DictConfig:
    """The composed config of the run that wrote `metrics`: hydra's record beside it, or `config_name` composed."""
    if config_name:
        return compose(config_name, [])
    records = sorted(metrics.parent.glob("hydra/*/.hydra/config.yaml"))
    if not records:
        raise ReportError(
            f"{metrics}: no hydra record of its run (RUN_DIR/hydra/*/.hydra/config.yaml): pass --measured-config NAME"
        )
    config = OmegaConf.load(records[-1])
    assert isinstance(config, DictConfig)
    return config


def from_metrics(metrics: Path, config: DictConfig, gpu: GPUSpec) -> Measurements:
    """Measurements from verl's metrics.jsonl of a training run with `config` (module docstring: the keys)."""
    try:
        by_step = read_step_metrics(metrics)
    except (FileNotFoundError, ValueError) as error:
        raise ReportError(str(error)) from None
    sequences = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
    timings = []
    for step, values in sorted(by_step.items()):
        if "timing_s/update_actor" not in values:
            continue  # a validation-only line
        times = {name: float(values.get(key, 0.0)) for name, key in TIMING_KEYS.items()}
        times["step_s"] -= float(values.get("timing_s/save_checkpoint", 0.0))
        timings.append(
            StepTiming(
                step=step,
                sequences=sequences,
                mean_prompt_tokens=float(values.get("prompt_length/mean", 0.0)),
                mean_response_tokens=float(values.get("response_length/mean", 0.0)),
                **times,
            )
        )
    if not timings:
        raise ReportError(f"{metrics}: no training step (a line with timing_s/update_actor)")
    rollout = config.actor_rollout_ref.rollout
    separate = str(config.trainer.v1.trainer_mode).endswith("separate_async")
    trainer_gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    rollout_gpus = int(rollout.nnodes) * int(rollout.n_gpus_per_node) if separate else trainer_gpus
    kept = timings[1:] if len(timings) >= 3 else timings
    generating = statistics.median(t.step_s if separate else t.generation_s for t in kept)
    response_tokens = statistics.median(t.mean_response_tokens for t in kept) * sequences
    last = by_step[timings[-1].step]
    memory = {
        role: float(last[key])
        for role, key in (
            ("trainer", MEMORY_KEY.format(role="trainer")),
            ("rollout", MEMORY_KEY.format(role="rollout")),
        )
        if key in last
    }
    if "trainer" not in memory and "actor/perf/max_memory_allocated_gb" in last:
        memory["trainer"] = float(last["actor/perf/max_memory_allocated_gb"])
    try:
        model = resolve_model(str(config.actor_rollout_ref.model.path))
    except UnknownModel as error:
        raise ReportError(f"{metrics}: {error}") from None
    return Measurements(
        source=str(metrics),
        model=model,
        gpu=gpu,
        trainer_gpus=trainer_gpus,
        rollout_gpus=rollout_gpus,
        tensor_parallel=int(rollout.tensor_model_parallel_size),
        memory_utilization=float(rollout.gpu_memory_utilization),
        max_num_seqs=int(rollout.max_num_seqs),
        steps=tuple(timings),
        tokens_per_s_per_rollout_gpu=response_tokens / max(generating, 1e-9) / rollout_gpus,
        weight_sync_bytes=model.weight_bytes,
        peak_memory_gb=memory,
    )


def read_measurements(path: Path, config_name: str | None, gpu: GPUSpec) -> Measurements:
    """A rehearsal report (JSON) or a metrics.jsonl, as Measurements."""
    if path.suffix == ".jsonl":
        return from_metrics(path, run_config(path, config_name), gpu)
    return RehearsalReport.read(path).measurements()
