"""CPU stand-in for `python -m recipe.nouscoder.main`, used by the launch tests through TRAINER_CMD.

It takes the same command line (`--config-name CONFIG key=value ...`), composes the real config from configs/ with
those overrides (a misspelt or missing override fails here as in the real trainer), and runs it through verl
0.9.1's own `run_ppo`: the driver connects to the Ray cluster named by RAY_ADDRESS with the runtime_env verl builds
from `ray_kwargs.ray_init.runtime_env`, and a task-runner actor does the work. That actor is the process in which
verl's trainer, and so wandb, would run: what it records of its environment (WANDB_RUN_ID, WANDB_RESUME) is what
the real trainer sees. It checks that trainer.nnodes x trainer.n_gpus_per_node GPUs are in the cluster, then:

- training configs: resumes from `latest_checkpointed_iteration.txt` under trainer.resume_mode=auto and writes what
  verl 0.9.1 writes and `recipe.nouscoder.selection.select_checkpoint` reads (layout in that module's docstring):
  `global_step_N/actor/` FSDP shards of a tiny Qwen2 model (world size 1, every weight equal to N, so a merged
  model shows which step it came from) with a `huggingface/` config and tokenizer, `global_step_N/data.pt`, the
  tracker file, and `metrics.jsonl` with a LiveCodeBench validation score that peaks in the middle of the run;
- validation-only configs (trainer.val_only): `metrics.jsonl` with the step-0 score of the model in
  actor_rollout_ref.model.path, which peaks at step RESCORE_PEAK_STEP, not at the in-run peak (as a re-scoring at a
  longer context may); with trainer.validation_data_dir set and data.val_files a parquet, also verl's generation dump
  `<dir>/0.jsonl` (the keys of verl's `_write_generations`: input, output, gts, score, step, and the reward's
  `verdict`, and with stage 0's reward the row's `problem_id`), val_kwargs.n lines per row, row k's verdicts `accepted` for all when k % 3 == 0, for half when
  k % 3 == 1, for none when k % 3 == 2 (what the offline filter's stage 0 reads).

Each call appends one JSON line (config name, overrides, model, resume step, steps run, the actor's wandb variables,
trainer.logger, Ray resources, outcome) to FAKE_TRAINER_RECORD, default
`<trainer.default_local_dir>/fake_trainer_calls.jsonl`.

Environment: FAKE_TRAINER_STEPS total steps [6]; FAKE_TRAINER_SAVE_EVERY steps between saves [1] (the last step and a
stop request save too); FAKE_TRAINER_FAIL_AT="STAGE:STEP" exits 1 at that step
of that stage before its checkpoint is saved; FAKE_TRAINER_STALL_AT="STAGE:STEP" hangs at that step without logging
(as a stuck collective would) while the file FAKE_TRAINER_STALL_MARKER does not exist, and writes it: the run after
it goes on; FAKE_TRAINER_STEP_SECONDS sleep per step [0].
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import torch

from recipe.nouscoder.training.online_filter import SolvedProblemFilter, load_solved_problems
from recipe.nouscoder.training.stop_request import acknowledge, stop_requested, verl_saves_step

METRIC_KEY = "val-core/livecodebench/acc/mean@1"
# What the launcher must get to the process where verl's trainer and wandb run (recorded per call).
ACTOR_ENV = ("HF_HOME", "HF_HUB_OFFLINE", "WANDB_MODE", "WANDB_DIR", "WANDB_ENTITY", "NOUSCODER_STOP_REQUEST")
RESCORE_PEAK_STEP = 2  # the validation-only score peaks here, the in-run score at (STEPS + 1) // 2
TINY_QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "vocab_size": 4,
    "hidden_size": 8,
    "intermediate_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
TOKENS = ["<unk>", "<eos>", "a", "b"]


def parse_overrides(items: list[str]) -> dict[str, str]:
    """Hydra-style `key=value` (and `+key=value`) items; later ones win, as in hydra."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"fake_trainer: override {item!r} is not key=value")
        overrides[key.lstrip("+")] = value
    return overrides


def validation_score(step: int, total_steps: int) -> float:
    """pass@1 rising to a peak at the middle step, then falling: the best checkpoint is not the last."""
    peak = (total_steps + 1) // 2
    return round(0.5 - 0.05 * abs(step - peak), 4)


def tiny_qwen2_state_dict(fill: float) -> dict[str, torch.Tensor]:
    """Every parameter of TINY_QWEN2 (Qwen2ForCausalLM names and shapes), filled with `fill`."""
    hidden, inter, vocab = TINY_QWEN2["hidden_size"], TINY_QWEN2["intermediate_size"], TINY_QWEN2["vocab_size"]
    kv = hidden // TINY_QWEN2["num_attention_heads"] * TINY_QWEN2["num_key_value_heads"]
    layer = "model.layers.0."
    shapes = {
        "model.embed_tokens.weight": (vocab, hidden),
        layer + "self_attn.q_proj.weight": (hidden, hidden),
        layer + "self_attn.q_proj.bias": (hidden,),
        layer + "self_attn.k_proj.weight": (kv, hidden),
        layer + "self_attn.k_proj.bias": (kv,),
        layer + "self_attn.v_proj.weight": (kv, hidden),
        layer + "self_attn.v_proj.bias": (kv,),
        layer + "self_attn.o_proj.weight": (hidden, hidden),
        layer + "mlp.gate_proj.weight": (inter, hidden),
        layer + "mlp.up_proj.weight": (inter, hidden),
        layer + "mlp.down_proj.weight": (hidden, inter),
        layer + "input_layernorm.weight": (hidden,),
        layer + "post_attention_layernorm.weight": (hidden,),
        "model.norm.weight": (hidden,),
        "lm_head.weight": (vocab, hidden),
    }
    return {name: torch.full(shape, fill, dtype=torch.bfloat16) for name, shape in shapes.items()}


def write_hf_files(directory: Path) -> None:
    """config.json and a word-level fast tokenizer, enough for verl's merger to save a complete model."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(TINY_QWEN2))
    special = [
        {
            "id": i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, t in enumerate(TOKENS[:2])
    ]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(TOKENS)}, "unk_token": "<unk>"},
    }
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>",
        "eos_token": "<eos>",
        "pad_token": "<eos>",
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))


def save_checkpoint(checkpoint_dir: Path, step: int) -> None:
    """verl's FSDP checkpoint of one step, tracker file last (it marks the save as complete)."""
    actor = checkpoint_dir / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True, exist_ok=True)
    torch.save(tiny_qwen2_state_dict(float(step)), actor / "model_world_size_1_rank_0.pt")
    torch.save({"step": step}, actor / "optim_world_size_1_rank_0.pt")
    torch.save({"step": step}, actor / "extra_state_world_size_1_rank_0.pt")
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 1, "world_size": 1}))
    write_hf_files(actor / "huggingface")
    torch.save({"step": step}, checkpoint_dir / f"global_step_{step}" / "data.pt")
    (checkpoint_dir / "latest_checkpointed_iteration.txt").write_text(str(step))


def log_metrics(checkpoint_dir: Path, step: int, data: dict[str, float]) -> None:
    with (checkpoint_dir / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps({"step": step, "data": data}) + "\n")


def ray_resources(expected_gpus: int) -> dict[str, float]:
    """The Ray cluster's resources seen from inside it; fails if the GPUs the trainer was told to use are missing."""
    import ray

    resources = ray.cluster_resources()
    alive = sum(1 for node in ray.nodes() if node["Alive"])
    if resources.get("GPU", 0) < expected_gpus:
        raise SystemExit(f"fake_trainer: Ray cluster has {resources.get('GPU', 0)} GPUs, trainer needs {expected_gpus}")
    return {"GPU": resources.get("GPU", 0), "CPU": resources.get("CPU", 0), "alive_nodes": alive}


def resume_step(checkpoint_dir: Path, resume_mode: str) -> int:
    tracker = checkpoint_dir / "latest_checkpointed_iteration.txt"
    return int(tracker.read_text()) if resume_mode == "auto" and tracker.is_file() else 0


def model_step(model: str) -> int:
    """The step a model came from: the merged tiny model's weight value, else `global_step_N` in its path, else 0."""
    weights = Path(model) / "model.safetensors"
    if weights.is_file():
        from safetensors.torch import load_file

        return int(load_file(weights)["model.norm.weight"][0])
    match = re.search(r"global_step_(\d+)", model)
    return int(match.group(1)) if match else 0


def validate_only(checkpoint_dir: Path, model: str) -> float:
    """Step-0 validation score of `model` (peak at RESCORE_PEAK_STEP), logged like verl's val_only run."""
    score = round(0.6 - 0.05 * abs(model_step(model) - RESCORE_PEAK_STEP), 4)
    log_metrics(checkpoint_dir, 0, {METRIC_KEY: score})
    print(f"fake_trainer: validation only of {model}: {METRIC_KEY} = {score}")
    return score


def dump_generations(val_files: str, samples: int, dump_dir: Path, stage0_reward: bool) -> int:
    """verl's validation dump of `samples` graded generations per row of the parquet `val_files`, with the keys the
    reward returns (stage 0's reward adds the row's problem id, recipe/nouscoder/training/stage0_reward.py); returns
    the lines."""
    import pyarrow.parquet as pq

    table = pq.read_table(val_files, columns=["reward_model", "extra_info"])
    rows = zip(table.column("reward_model").to_pylist(), table.column("extra_info").to_pylist(), strict=True)
    dump_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, (reward_model, extra_info) in enumerate(rows):
        passing = {0: samples, 1: samples // 2, 2: 0}[index % 3]
        for sample in range(samples):
            verdict = "accepted" if sample < passing else "wrong_answer"
            reward = {"score": 1.0 if verdict == "accepted" else -1.0, "verdict": verdict}
            if stage0_reward:
                reward["problem_id"] = extra_info["problem_id"]
            line = {"input": f"problem {index}", "output": "print(1)", "gts": reward_model["ground_truth"], "step": 0}
            lines.append(json.dumps({**line, **reward}) + "\n")
    (dump_dir / "0.jsonl").write_text("".join(lines))
    return len(lines)


def stall_once(config_name: str, step: int) -> None:
    """Hang without logging at FAKE_TRAINER_STALL_AT's step, once (FAKE_TRAINER_STALL_MARKER records it)."""
    stage, _, at = os.environ.get("FAKE_TRAINER_STALL_AT", "").partition(":")
    marker = Path(os.environ.get("FAKE_TRAINER_STALL_MARKER", "/nonexistent/marker"))
    if stage == config_name and at and step == int(at) and not marker.exists():
        marker.write_text(f"{stage}: stalled at step {step}\n")
        print(f"fake_trainer: stalling at step {step} as FAKE_TRAINER_STALL_AT asks", flush=True)
        while True:
            time.sleep(60)


def train(config_name: str, resume_mode: str, checkpoint_dir: Path, record: dict, earlier_solved: str | None) -> None:
    """Train (pretend) from the resume step to FAKE_TRAINER_STEPS, saving every FAKE_TRAINER_SAVE_EVERY steps and the
    last, and, as the recipe's trainer does, at the launcher's stop request (stop_request.py); fills `record`. Each
    step "solves" problem `<config>-step<N>`: the online filter's state (the recipe's own class, with the earlier
    stages' solved problems) is saved with each checkpoint as the recipe's trainer saves it."""
    total = int(os.environ.get("FAKE_TRAINER_STEPS", "6"))
    save_every = int(os.environ.get("FAKE_TRAINER_SAVE_EVERY", "1"))
    start = resume_step(checkpoint_dir, resume_mode)
    record["resumed_from"] = start
    fail_stage, _, fail_step = os.environ.get("FAKE_TRAINER_FAIL_AT", "").partition(":")
    solved = SolvedProblemFilter(solved_before=load_solved_problems(earlier_solved) if earlier_solved else None)
    if start == 0:
        log_metrics(checkpoint_dir, 0, {METRIC_KEY: validation_score(0, total)})
    else:
        solved.load(checkpoint_dir / f"global_step_{start}")
    for step in range(start + 1, total + 1):
        began = time.monotonic()
        time.sleep(float(os.environ.get("FAKE_TRAINER_STEP_SECONDS", "0")))
        stall_once(config_name, step)
        if fail_stage == config_name and fail_step and step == int(fail_step):
            record["outcome"] = f"failed at step {step}"
            print(f"fake_trainer: failing at step {step} as FAKE_TRAINER_FAIL_AT asks", file=sys.stderr)
            return
        request = stop_requested()
        saved = verl_saves_step(step, total, save_every) or request is not None
        solved.record_solved({f"{config_name}-step{step}"}, epoch=0)
        if saved:
            solved.save(checkpoint_dir / f"global_step_{step}")
            save_checkpoint(checkpoint_dir, step)
        score = validation_score(step, total)
        # verl's step timer and the actor update's, which the watchdog's pace check reads
        timing = {"timing_s/step": time.monotonic() - began, "timing_s/update_actor": 0.0}
        log_metrics(checkpoint_dir, step, {"actor/pg_loss": 0.0, METRIC_KEY: score, **timing})
        record["steps"].append(step)
        print(f"fake_trainer: step {step}/{total}{' saved' if saved else ''}, {METRIC_KEY} = {score}", flush=True)
        if request is not None:
            acknowledge(request, step)
            record["outcome"] = f"stopped at step {step} by {request.name}"
            print(f"fake_trainer: stop request: saved step {step} and stopping", flush=True)
            return


class FakeTaskRunner:
    """Stands in for verl's TaskRunnerV1 in the actor verl's run_ppo starts, and records what that process sees."""

    def run(self, config) -> None:
        checkpoint_dir = Path(config.trainer.default_local_dir)
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        config_name = os.environ["FAKE_TRAINER_CONFIG_NAME"]
        record = {
            "config_name": config_name,
            "overrides": json.loads(os.environ["FAKE_TRAINER_OVERRIDES"]),
            "model": str(config.actor_rollout_ref.model.path),
            "wandb_run_id": os.environ.get("WANDB_RUN_ID"),
            "wandb_resume": os.environ.get("WANDB_RESUME"),
            "env": {name: os.environ.get(name) for name in ACTOR_ENV},
            "project_name": str(config.trainer.project_name),
            "logger": list(config.trainer.logger),
            "ray": ray_resources(config.trainer.nnodes * config.trainer.n_gpus_per_node),
            "resumed_from": 0,
            "steps": [],
            "outcome": "finished",
        }
        print(f"fake_trainer: config {config_name}, model {record['model']}, ray {record['ray']}")
        if config.trainer.val_only:
            record["score"] = validate_only(checkpoint_dir, record["model"])
            dump_dir, val_files = config.trainer.get("validation_data_dir"), str(config.data.val_files)
            if (
                dump_dir
                and val_files.endswith(".parquet")
                and Path(val_files).is_file()
                and Path(val_files).stat().st_size
            ):
                samples = int(config.actor_rollout_ref.rollout.val_kwargs.n)
                stage0 = str(config.reward.custom_reward_function.path).endswith("stage0_reward")
                record["generations"] = dump_generations(val_files, samples, Path(dump_dir), stage0)
                record["dump_bytes"] = (Path(dump_dir) / "0.jsonl").stat().st_size
        else:
            earlier = config.get("nouscoder", {}).get("online_filter", {}).get("earlier_stage_solved")
            train(config_name, config.trainer.resume_mode, checkpoint_dir, record, earlier)
        record_file = Path(os.environ.get("FAKE_TRAINER_RECORD", checkpoint_dir / "fake_trainer_calls.jsonl"))
        with record_file.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        if record["outcome"] != "finished" and not record["outcome"].startswith("stopped"):
            raise RuntimeError(f"fake_trainer: {record['outcome']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python tests/launch/fake_trainer.py",
        description="CPU stand-in for recipe.nouscoder.main in the launch tests: the real config through verl's "
        "run_ppo, a task-runner actor writing verl's checkpoint layout and validation metrics (FAKE_TRAINER_*).",
    )
    parser.add_argument("--config-name", required=True, help="the stage config name, as for recipe.nouscoder.main.")
    parser.add_argument(
        "overrides", nargs="*", help="hydra overrides key=value; trainer.default_local_dir is required."
    )
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.overrides)
    if "trainer.default_local_dir" not in overrides:
        parser.error("trainer.default_local_dir=DIR is required (the stage chain always passes it)")

    import ray
    from omegaconf import open_dict
    from verl.trainer.main_ppo import run_ppo

    from recipe.nouscoder.configs import compose_experiment

    config = compose_experiment(args.config_name, args.overrides)
    # The test's own settings reach the actor the way the launcher's wandb variables do: the job's runtime_env.
    test_env = {key: value for key, value in os.environ.items() if key.startswith("FAKE_TRAINER_")}
    test_env |= {"FAKE_TRAINER_CONFIG_NAME": args.config_name, "FAKE_TRAINER_OVERRIDES": json.dumps(overrides)}
    with open_dict(config):
        runtime_env = config.ray_kwargs.ray_init.runtime_env
        runtime_env.env_vars = {**(runtime_env.get("env_vars") or {}), **test_env}
    try:
        run_ppo(config, task_runner_class=ray.remote(num_cpus=0)(FakeTaskRunner))
    except ray.exceptions.RayTaskError as error:
        print(f"fake_trainer: the task runner failed: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
