"""One optimisation step per verl_ext loss through verl's real actor code, on CPU, in this process.

Run by test_actor_step.py in a subprocess (it sets process-wide state: the verl platform, a 1-process gloo
group). What it takes to run verl 0.9.1's actor on CPU:
- verl falls back to its CUDA platform when no accelerator is found, so the CPU mode's platform
  (`recipe.nouscoder.cpu.platform`) is installed with `verl.plugin.platform.platform_manager.set_platform` before the
  engine modules are imported;
- the FSDP engine is registered for cuda/npu only, so `VERL_ENGINE_DEVICE=cuda` selects its class (it then runs on
  the "cpu" device of the platform above); FSDP2 shards over a 1-process gloo group;
- the model is a 2-layer Qwen2 built from a config and saved to a temporary directory (nothing downloaded), with
  eager attention, no remove-padding (no flash-attn on CPU) and fp32 mixed precision.
The step itself is verl's: `TrainingWorker.train_mini_batch` -> `FSDPEngineWithLMHead.train_batch` ->
`verl.workers.utils.losses.ppo_loss` -> the registered verl_ext loss, fed exactly as the legacy trainer feeds it
(`DataProto.to_tensordict` + `left_right_2_no_padding` + the same meta info).

Prints one JSON line: per loss, the logged metrics, and the mean change of log-prob on positive- and
negative-advantage tokens.
"""

import functools
import json
import os
import socket
import sys
import tempfile

os.environ["VERL_ENGINE_DEVICE"] = "cuda"

import torch  # noqa: E402
from verl.plugin.platform.platform_manager import set_platform  # noqa: E402

from recipe.nouscoder.cpu.platform import CPUPlatform  # noqa: E402

set_platform(CPUPlatform())

from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import CheckpointConfig, RolloutCorrectionConfig  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.config import (  # noqa: E402
    ActorConfig,
    FSDPEngineConfig,
    FSDPOptimizerConfig,
    HFModelConfig,
    PolicyLossConfig,
)
from verl.workers.config.engine import TrainingWorkerConfig  # noqa: E402
from verl.workers.engine_workers import TrainingWorker  # noqa: E402
from verl.workers.utils.losses import ppo_loss  # noqa: E402
from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding  # noqa: E402

LOSSES = {  # loss_mode -> (clip_ratio_low, clip_ratio_high, loss_agg_mode, rollout_is)
    "dapo": (0.2, 0.28, "token-mean", "token"),
    "gspo_seq": (3e-4, 4e-4, "seq-mean-token-mean", "sequence"),
    "gspo_plus": (3e-4, 4e-4, "token-mean", "sequence"),
}
BATCH, PROMPT, RESPONSE, VOCAB = 6, 5, 8, 64


def init_single_process_group() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)


def tiny_model_directory() -> str:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    directory = tempfile.mkdtemp(prefix="verl_ext_tiny_qwen2_")
    Qwen2ForCausalLM(config).save_pretrained(directory)
    return directory


def training_worker(model_directory: str) -> TrainingWorker:
    model_config = HFModelConfig(
        path=model_directory,
        load_tokenizer=False,
        use_remove_padding=False,
        override_config={"attn_implementation": "eager"},
    )
    engine_config = FSDPEngineConfig(
        strategy="fsdp2",
        use_torch_compile=False,
        use_dynamic_bsz=False,
        micro_batch_size_per_gpu=BATCH // 2,
        infer_micro_batch_size_per_gpu=BATCH,
        mixed_precision={"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"},
    )
    worker = TrainingWorker(
        TrainingWorkerConfig(
            model_type="language_model",
            model_config=model_config,
            engine_config=engine_config,
            optimizer_config=FSDPOptimizerConfig(lr=1e-2),
            checkpoint_config=CheckpointConfig(),
        )
    )
    worker.reset()
    return worker


def rollout_batch() -> DataProto:
    """Left-padded prompts and right-padded responses of varying lengths, as verl's rollout returns them."""
    generator = torch.Generator().manual_seed(1)
    prompts = torch.randint(1, VOCAB, (BATCH, PROMPT), generator=generator)
    responses = torch.randint(1, VOCAB, (BATCH, RESPONSE), generator=generator)
    prompt_mask = torch.ones(BATCH, PROMPT, dtype=torch.long)
    response_mask = torch.ones(BATCH, RESPONSE, dtype=torch.long)
    for row, (prompt_pad, response_length) in enumerate([(0, 8), (2, 5), (1, 3), (0, 8), (3, 6), (0, 2)]):
        prompt_mask[row, :prompt_pad] = 0
        response_mask[row, response_length:] = 0
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "input_ids": torch.cat([prompts, responses], dim=1),
            "attention_mask": attention_mask,
            "position_ids": (attention_mask.cumsum(dim=1) - 1).clamp(min=0),
            "response_mask": response_mask,
        }
    )


def log_probs(worker: TrainingWorker, batch: DataProto) -> torch.Tensor:
    """verl's old-log-prob path: padded DataProto -> no-padding TensorDict -> infer_batch -> padded log-probs."""
    data = left_right_2_no_padding(batch.to_tensordict())
    tu.assign_non_tensor(data, calculate_entropy=False, compute_loss=False, temperature=1.0)
    output = worker.infer_batch(data)
    return no_padding_2_padding(tu.get(output, "log_probs"), data).float()


def on_policy_loss(batch: DataProto, loss_mode: str) -> float:
    """At pi_theta = pi_old every ratio is 1, so the losses reduce to weighted advantage sums (explicit loops):
    dapo -1/N sum_i sum_t w_it A_i; gspo_seq -1/G sum_i w_i A_i; gspo_plus -1/N sum_i |o_i| w_i A_i."""
    lengths = batch.batch["response_mask"].sum(dim=-1).tolist()
    advantages = batch.batch["advantages"][:, 0].tolist()
    weights = batch.batch["rollout_is_weights"]
    total = 0.0
    for i, length in enumerate(lengths):
        if loss_mode == "dapo":
            total += sum(float(weights[i, t]) for t in range(length)) * advantages[i]
        elif loss_mode == "gspo_seq":
            total += float(weights[i, 0]) * advantages[i]
        else:
            total += length * float(weights[i, 0]) * advantages[i]
    normaliser = len(lengths) if loss_mode == "gspo_seq" else sum(lengths)
    return -total / normaliser


def one_step(worker: TrainingWorker, batch: DataProto, loss_mode: str) -> dict:
    low, high, aggregation, rollout_is = LOSSES[loss_mode]
    config = ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_micro_batch_size_per_gpu=BATCH // 2,
        clip_ratio_low=low,
        clip_ratio_high=high,
        loss_agg_mode=aggregation,
        policy_loss=PolicyLossConfig(
            loss_mode=loss_mode, rollout_correction=RolloutCorrectionConfig(rollout_is=rollout_is)
        ),
    )
    worker.reset()
    worker.set_loss_fn(functools.partial(ppo_loss, config=config))
    data = left_right_2_no_padding(batch.to_tensordict())
    tu.assign_non_tensor(
        data,
        global_batch_size=BATCH,
        mini_batch_size=BATCH,
        epochs=1,
        seed=1,
        dataloader_kwargs={"shuffle": False},
        calculate_entropy=False,
        compute_loss=True,
        temperature=1.0,
    )
    output = worker.train_mini_batch(data)
    metrics = {key: [float(v) for v in value] for key, value in tu.get(output, "metrics").items()}
    change = (log_probs(worker, batch) - batch.batch["old_log_probs"]) * batch.batch["response_mask"]
    positive = (batch.batch["advantages"] > 0) & batch.batch["response_mask"].bool()
    negative = (batch.batch["advantages"] < 0) & batch.batch["response_mask"].bool()
    return {
        "metrics": metrics,
        "expected_on_policy_loss": on_policy_loss(batch, loss_mode),
        "positive_change": float(change[positive].mean()),
        "negative_change": float(change[negative].mean()),
    }


def main() -> None:
    init_single_process_group()
    worker = training_worker(tiny_model_directory())
    batch = rollout_batch()
    response_mask = batch.batch["response_mask"].float()
    batch.batch["old_log_probs"] = log_probs(worker, batch)
    batch.batch["advantages"] = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])[:, None] * response_mask
    sequence_weights = torch.tensor([0.5, 1.5, 1.0, 2.0, 0.8, 1.2])[:, None]
    results = {}
    for loss_mode, (_, _, _, rollout_is) in LOSSES.items():
        if rollout_is == "token":
            weights = 0.5 + torch.rand(BATCH, RESPONSE, generator=torch.Generator().manual_seed(2))
        else:
            weights = sequence_weights.expand(BATCH, RESPONSE)
        batch.batch["rollout_is_weights"] = weights * response_mask
        results[loss_mode] = one_step(worker, batch, loss_mode)
    torch.distributed.destroy_process_group()
    sys.stdout.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
