"""verl_ext policy losses against independent per-sequence reference loops (value and gradient), directly and
through verl's own actor loss `verl.workers.utils.losses.ppo_loss`."""

import math

import pytest
import torch
from tensordict import TensorDict
from verl.trainer.config import RolloutCorrectionConfig
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.utils import tensordict_utils as tu
from verl.workers.config import ActorConfig, PolicyLossConfig
from verl.workers.utils.losses import ppo_loss

import verl_ext  # noqa: F401  (registers the losses even with VERL_USE_EXTERNAL_PLUGINS=none)
from verl_ext.policy_loss_common import tis_cap

DAPO_CLIP = (0.2, 0.28)
GSPO_CLIP = (3e-4, 4e-4)
AGGREGATION = {"dapo": "token-mean", "gspo_seq": "seq-mean-token-mean", "gspo_plus": "token-mean"}
CLIP = {"dapo": DAPO_CLIP, "gspo_seq": GSPO_CLIP, "gspo_plus": GSPO_CLIP}


# ---------------------------------------------------------------- reference formulas (NousCoder blog, per sequence)
def clip(value: torch.Tensor, low: float, high: float) -> torch.Tensor:
    return torch.clamp(value, 1.0 - low, 1.0 + high)


def reference_dapo(batch: dict, eps: tuple[float, float], dual_c: float | None, num_tokens: float, dp_size: int):
    """-(1/sum|o_i|) sum_i sum_t w_it min(r_it A_i, clip(r_it) A_i), dual clip max(., c A) for A < 0."""
    total = torch.zeros((), dtype=torch.float64)
    for i, length in enumerate(batch["lengths"]):
        for t in range(length):
            log_ratio = torch.clamp(batch["log_prob"][i, t] - batch["old_log_prob"][i, t], -20.0, 20.0)
            ratio = torch.exp(log_ratio)
            advantage = batch["advantages"][i, t]
            objective = torch.minimum(ratio * advantage, clip(ratio, *eps) * advantage)
            if dual_c is not None and advantage < 0:
                objective = torch.maximum(objective, dual_c * advantage)
            total = total - batch["weights"][i, t] * objective
    return total / num_tokens * dp_size


def reference_sequence_ratio(batch: dict, i: int) -> torch.Tensor:
    """s_i = exp(1/|o_i| sum_t log(pi_theta / pi_old)), log s_i clamped to [-20, 20]."""
    length = batch["lengths"][i]
    log_ratios = [batch["log_prob"][i, t] - batch["old_log_prob"][i, t] for t in range(length)]
    return torch.exp(torch.clamp(sum(log_ratios) / length, -20.0, 20.0))


def reference_gspo_sequence_objective(batch: dict, i: int, eps: tuple[float, float]) -> torch.Tensor:
    """w_i min(s_i A_i, clip(s_i) A_i), with the sequence TIS weight w_i (constant over the tokens here)."""
    ratio = reference_sequence_ratio(batch, i)
    advantage = batch["advantages"][i, 0]
    return batch["weights"][i, 0] * torch.minimum(ratio * advantage, clip(ratio, *eps) * advantage)


def reference_gspo_seq(batch: dict, eps: tuple[float, float], num_sequences: float, dp_size: int):
    """-(1/G) sum_i w_i min(s_i A_i, clip(s_i) A_i)."""
    total = torch.zeros((), dtype=torch.float64)
    for i, length in enumerate(batch["lengths"]):
        if length > 0:
            total = total - reference_gspo_sequence_objective(batch, i, eps)
    return total / num_sequences * dp_size


def reference_gspo_plus(batch: dict, eps: tuple[float, float], num_tokens: float, dp_size: int):
    """-(1/sum|o_i|) sum_i |o_i| w_i min(s_i A_i, clip(s_i) A_i)."""
    total = torch.zeros((), dtype=torch.float64)
    for i, length in enumerate(batch["lengths"]):
        if length > 0:
            total = total - length * reference_gspo_sequence_objective(batch, i, eps)
    return total / num_tokens * dp_size


def reference_loss(name: str, batch: dict, num_tokens: float, num_sequences: float, dp_size: int, dual_c=3.0):
    if name == "dapo":
        return reference_dapo(batch, DAPO_CLIP, dual_c, num_tokens, dp_size)
    if name == "gspo_seq":
        return reference_gspo_seq(batch, GSPO_CLIP, num_sequences, dp_size)
    return reference_gspo_plus(batch, GSPO_CLIP, num_tokens, dp_size)


# ---------------------------------------------------------------- random batches
def random_batch(seed: int, sequence_level_weights: bool, dtype=torch.float64, device="cpu") -> dict:
    """Varying lengths (incl. a fully masked row and a full row), padding holding NaN/huge garbage, all-equal and
    zero advantages, extreme log-ratios (|log r| up to 60) and TIS weights in (0, 2] with some at the cap 2."""
    generator = torch.Generator().manual_seed(seed)
    bs, width = 9, 14
    lengths = [width, 0, 1, 5, 9, width, 3, 12, 7]
    mask = torch.zeros(bs, width, dtype=torch.bool)
    for i, length in enumerate(lengths):
        mask[i, :length] = True
    old_log_prob = -torch.rand(bs, width, generator=generator, dtype=torch.float64) * 3
    log_prob = old_log_prob + 0.3 * torch.randn(bs, width, generator=generator, dtype=torch.float64)
    log_prob[0, 2], log_prob[5, 4], log_prob[7, 1] = 35.0, -60.0, old_log_prob[7, 1] + 25.0
    log_prob[8, :7] = old_log_prob[8, :7] + 0.0002  # inside the GSPO clip range
    sequence_advantage = torch.tensor([1.3, 0.7, -0.9, 0.0, -1.5, 2.0, 1.0, -0.4, 0.8], dtype=torch.float64)
    advantages = sequence_advantage[:, None].expand(bs, width).clone()
    if sequence_level_weights:
        weights = (0.2 + 1.8 * torch.rand(bs, 1, generator=generator, dtype=torch.float64)).expand(bs, width).clone()
    else:
        weights = 0.2 + 1.8 * torch.rand(bs, width, generator=generator, dtype=torch.float64)
    weights[3] = 2.0
    weights = weights * mask
    garbage = ~mask
    old_log_prob[garbage], log_prob[garbage], advantages[garbage] = float("nan"), 1e6, float("nan")
    cast = {"dtype": dtype, "device": device}
    return {
        "lengths": lengths,
        "mask": mask.to(device),
        "old_log_prob": old_log_prob.to(**cast),
        "log_prob": log_prob.to(**cast),
        "advantages": advantages.to(**cast),
        "weights": weights.to(**cast),
    }


def actor_config(name: str, dual_c: float = 3.0, **global_batch_info) -> ActorConfig:
    low, high = CLIP[name]
    config = ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio=low,
        clip_ratio_low=low,
        clip_ratio_high=high,
        clip_ratio_c=dual_c,
        loss_agg_mode=AGGREGATION[name],
        policy_loss=PolicyLossConfig(
            loss_mode=name,
            rollout_correction=RolloutCorrectionConfig(rollout_is="token", rollout_is_threshold=2.0),
        ),
    )
    config.global_batch_info.update(global_batch_info)
    return config


def registered_loss(name: str, batch: dict, config: ActorConfig, weights: torch.Tensor | None = None):
    """Loss and metrics of the registered loss and the gradient w.r.t. log_prob (a fresh leaf)."""
    log_prob = batch["log_prob"].detach().clone().requires_grad_(True)
    loss, metrics = get_policy_loss_fn(name)(
        old_log_prob=batch["old_log_prob"],
        log_prob=log_prob,
        advantages=batch["advantages"],
        response_mask=batch["mask"],
        loss_agg_mode=AGGREGATION[name],
        config=config,
        rollout_is_weights=batch["weights"] if weights is None else weights,
    )
    loss.backward()
    return loss, metrics, log_prob.grad


def reference_with_gradient(name: str, batch: dict, num_tokens, num_sequences, dp_size, dual_c=3.0):
    reference_batch = {
        key: value.detach().cpu().double() if torch.is_tensor(value) else value for key, value in batch.items()
    }
    log_prob = reference_batch["log_prob"].clone().requires_grad_(True)
    reference_batch["log_prob"] = log_prob
    loss = reference_loss(name, reference_batch, num_tokens, num_sequences, dp_size, dual_c)
    loss.backward()
    return loss, log_prob.grad


def assert_matches_reference(
    name, batch, config, num_tokens, num_sequences, dp_size, dual_c=3.0, rtol=1e-6, atol=1e-6, gradient_tolerance=None
):
    """Value and gradient agree with the reference; the gradient is stored in the log-prob's dtype, so bf16 inputs
    pass a looser `gradient_tolerance` (rtol, atol)."""
    loss, metrics, gradient = registered_loss(name, batch, config)
    expected_loss, expected_gradient = reference_with_gradient(name, batch, num_tokens, num_sequences, dp_size, dual_c)
    torch.testing.assert_close(loss.detach().cpu().double(), expected_loss, rtol=rtol, atol=atol)
    mask = batch["mask"].cpu()
    gradient_rtol, gradient_atol = gradient_tolerance or (rtol, atol)
    torch.testing.assert_close(
        gradient.cpu().double()[mask], expected_gradient[mask], rtol=gradient_rtol, atol=gradient_atol
    )
    assert torch.all(gradient.cpu()[~mask] == 0), "padding must receive no gradient"
    assert all(math.isfinite(value) for value in metrics.values())
    return loss, metrics


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_matches_reference_value_and_gradient(name, seed):
    batch = random_batch(seed, sequence_level_weights=name != "dapo")
    num_tokens = float(batch["mask"].sum())
    num_sequences = float(sum(length > 0 for length in batch["lengths"]))
    assert_matches_reference(name, batch, actor_config(name), num_tokens, num_sequences, dp_size=1)


@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
def test_loss_uses_global_batch_info_for_data_parallel_scaling(name):
    batch = random_batch(3, sequence_level_weights=True)
    info = {"dp_size": 4, "batch_num_tokens": 300, "global_batch_size": 40, "loss_scale_factor": None}
    config = actor_config(name, **info)
    assert_matches_reference(name, batch, config, num_tokens=300.0, num_sequences=40.0, dp_size=4)


def test_dapo_without_dual_clip_is_the_plain_formula():
    batch = random_batch(4, sequence_level_weights=False)
    num_tokens = float(batch["mask"].sum())
    config = actor_config("dapo", dual_c=float("inf"))
    loss, _ = assert_matches_reference("dapo", batch, config, num_tokens, 0.0, dp_size=1, dual_c=None)
    with_dual_clip, _, _ = registered_loss("dapo", batch, actor_config("dapo"))
    assert not torch.isclose(loss, with_dual_clip), "the extreme negative-advantage token must hit the dual clip"


@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
def test_loss_applies_tis_weights(name):
    batch = random_batch(5, sequence_level_weights=name != "dapo")
    config = actor_config(name)
    weighted, metrics, weighted_gradient = registered_loss(name, batch, config)
    unweighted, _, unweighted_gradient = registered_loss(name, batch, config, weights=batch["mask"].double())
    assert not torch.isclose(weighted, unweighted)
    assert not torch.allclose(weighted_gradient, unweighted_gradient)
    mask = batch["mask"]
    expected_capped = float(((batch["weights"] >= 2.0) & mask).sum() / mask.sum())
    assert metrics["actor/tis_capped_frac"] == pytest.approx(expected_capped)
    assert metrics["actor/tis_weight_mean"] == pytest.approx(float(batch["weights"][mask].mean()))


@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
def test_loss_refuses_other_aggregation(name):
    batch = random_batch(0, sequence_level_weights=True)
    other = "seq-mean-token-sum"
    with pytest.raises(ValueError, match="loss_agg_mode"):
        get_policy_loss_fn(name)(
            old_log_prob=batch["old_log_prob"],
            log_prob=batch["log_prob"],
            advantages=batch["advantages"],
            response_mask=batch["mask"],
            loss_agg_mode=other,
            config=actor_config(name),
        )


def test_gspo_metrics_describe_sequence_ratios_and_clipping():
    batch = random_batch(6, sequence_level_weights=True)
    _, metrics, _ = registered_loss("gspo_seq", batch, actor_config("gspo_seq"))
    ratios = torch.stack([reference_sequence_ratio(batch, i) for i, n in enumerate(batch["lengths"]) if n > 0])
    assert metrics["actor/seq_ratio_mean"] == pytest.approx(float(ratios.mean()))
    assert metrics["actor/seq_ratio_std"] == pytest.approx(float(ratios.std(unbiased=False)))
    assert metrics["actor/seq_ratio_max"] == pytest.approx(float(ratios.max()))
    assert metrics["actor/seq_ratio_min"] == pytest.approx(float(ratios.min()))
    low, high = GSPO_CLIP
    tokens_low = tokens_high = 0
    for i, length in enumerate(batch["lengths"]):
        if length == 0:
            continue
        ratio, advantage = reference_sequence_ratio(batch, i), batch["advantages"][i, 0]
        tokens_low += length * int(advantage < 0 and ratio < 1 - low)
        tokens_high += length * int(advantage > 0 and ratio > 1 + high)
    num_tokens = float(batch["mask"].sum())
    assert metrics["actor/clipfrac_low"] == pytest.approx(tokens_low / num_tokens)
    assert metrics["actor/clipfrac_high"] == pytest.approx(tokens_high / num_tokens)
    assert metrics["actor/pg_clipfrac"] == pytest.approx((tokens_low + tokens_high) / num_tokens)


def test_dapo_metrics_count_clipped_tokens():
    batch = random_batch(7, sequence_level_weights=False)
    _, metrics, _ = registered_loss("dapo", batch, actor_config("dapo"))
    low, high = DAPO_CLIP
    counts = {"low": 0, "high": 0, "dual": 0}
    for i, length in enumerate(batch["lengths"]):
        for t in range(length):
            ratio = math.exp(max(-20.0, min(20.0, float(batch["log_prob"][i, t] - batch["old_log_prob"][i, t]))))
            advantage = float(batch["advantages"][i, t])
            counts["low"] += advantage < 0 and ratio < 1 - low
            counts["high"] += advantage > 0 and ratio > 1 + high
            counts["dual"] += advantage < 0 and ratio > 3.0
    num_tokens = float(batch["mask"].sum())
    assert metrics["actor/clipfrac_low"] == pytest.approx(counts["low"] / num_tokens)
    assert metrics["actor/clipfrac_high"] == pytest.approx(counts["high"] / num_tokens)
    assert metrics["actor/pg_clipfrac_lower"] == pytest.approx(counts["dual"] / num_tokens)


def test_fp32_inputs_match_reference():
    batch = random_batch(8, sequence_level_weights=True, dtype=torch.float32)
    num_tokens = float(batch["mask"].sum())
    num_sequences = float(sum(length > 0 for length in batch["lengths"]))
    for name in ("dapo", "gspo_seq", "gspo_plus"):
        assert_matches_reference(name, batch, actor_config(name), num_tokens, num_sequences, 1, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- through verl's own actor loss (ppo_loss)
def ppo_loss_inputs(batch: dict, prompt_length: int = 3) -> tuple[dict, TensorDict, torch.Tensor]:
    """The TensorDict verl's engine hands to `ppo_loss` (padded prompts/responses, attention_mask, non-tensor
    global batch info) and the flat per-token log-prob output of the model (a leaf tensor)."""
    mask = batch["mask"]
    bs, width = mask.shape
    keep = mask.any(dim=-1)  # verl never trains on a row without a single response token
    rows = torch.nonzero(keep).flatten().tolist()
    attention_mask = torch.cat([torch.ones(len(rows), prompt_length, dtype=torch.long), mask[rows].long()], dim=1)
    data = TensorDict(
        {
            "prompts": torch.ones(len(rows), prompt_length, dtype=torch.long),
            "responses": torch.ones(len(rows), width, dtype=torch.long),
            "attention_mask": attention_mask,
            "response_mask": mask[rows].long(),
            "old_log_probs": batch["old_log_prob"][rows],
            "advantages": batch["advantages"][rows],
            "rollout_is_weights": batch["weights"][rows],
        },
        batch_size=[len(rows)],
    )
    num_tokens = int(mask.sum())
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=num_tokens, global_batch_size=len(rows))
    flat, positions = [], []
    for row in rows:
        length = int(mask[row].sum())
        offset = sum(len(chunk) for chunk in flat)
        # the model's output at position p predicts token p + 1: response token t sits at prompt_length - 1 + t
        sequence = torch.full((prompt_length + length,), 0.0, dtype=batch["log_prob"].dtype)
        sequence[prompt_length - 1 : prompt_length - 1 + length] = batch["log_prob"][row, :length]
        flat.append(sequence)
        positions.append((row, offset + prompt_length - 1, length))
    values = torch.cat(flat).requires_grad_(True)
    return {"positions": positions, "rows": rows}, data, values


@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
def test_verl_ppo_loss_runs_registered_loss_and_matches_reference(name):
    batch = random_batch(9, sequence_level_weights=name != "dapo")
    layout, data, flat_log_probs = ppo_loss_inputs(batch)
    config = actor_config(name)
    loss, metrics = ppo_loss(config, {"log_probs": flat_log_probs}, data)
    loss.backward()
    num_tokens = float(batch["mask"].sum())
    expected_loss, expected_gradient = reference_with_gradient(name, batch, num_tokens, float(len(layout["rows"])), 1)
    torch.testing.assert_close(loss.detach().double(), expected_loss, rtol=1e-6, atol=1e-6)
    for row, start, length in layout["positions"]:
        torch.testing.assert_close(
            flat_log_probs.grad[start : start + length].double(), expected_gradient[row, :length], rtol=1e-6, atol=1e-6
        )
    assert "actor/clipfrac_high" in metrics and "actor/tis_capped_frac" in metrics


# ---------------------------------------------------------------- opt-in CUDA run of the same comparisons
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", ["dapo", "gspo_seq", "gspo_plus"])
def test_loss_matches_reference_gpu(name, dtype):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    batch = random_batch(10, sequence_level_weights=name != "dapo", dtype=dtype, device="cuda")
    num_tokens = float(batch["mask"].sum())
    num_sequences = float(sum(length > 0 for length in batch["lengths"]))
    bf16_gradient = (1e-2, 1e-4) if dtype == torch.bfloat16 else None
    assert_matches_reference(
        name,
        batch,
        actor_config(name),
        num_tokens,
        num_sequences,
        1,
        rtol=2e-5,
        atol=1e-5,
        gradient_tolerance=bf16_gradient,
    )


@pytest.mark.parametrize(
    ("threshold", "cap"), [(2.0, 2.0), (3, 3.0), ("2.5", 2.5), ("0.5_2.0", 2.0), ("1e-3_1e1", 10.0), (None, None)]
)
def test_tis_cap_reads_the_threshold_as_verl_does(threshold, cap):
    config = {"policy_loss": {"rollout_correction": {"rollout_is_threshold": threshold}}}
    assert tis_cap(config) == cap


@pytest.mark.parametrize("threshold", ["two", "2.0_", "3.0_2.0", True])
def test_tis_cap_rejects_thresholds_verl_rejects(threshold):
    with pytest.raises((ValueError, TypeError)):
        tis_cap({"policy_loss": {"rollout_correction": {"rollout_is_threshold": threshold}}})
