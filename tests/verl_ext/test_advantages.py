"""verl_ext advantage estimators against independent per-response reference loops, directly and through verl's
own `compute_advantage` on a DataProto."""

import hashlib
import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict
from verl import DataProto
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from verl.trainer.ppo.ray_trainer import compute_advantage

import verl_ext  # noqa: F401  (registers the estimators even with VERL_USE_EXTERNAL_PLUGINS=none)
from verl_ext.advantage_inputs import advantage_inputs_from_fields, provide_advantage_inputs
from verl_ext.truncation import ends_in_repetition

MAX_LENGTH = 16
WINDOW = 3


# ---------------------------------------------------------------- reference formulas
def reference_group_stats(rewards: list[float], members: list[int]) -> tuple[float, float]:
    """mean and unbiased std of the members' rewards; fewer than two members -> (0, 1) (verl's grpo convention)."""
    if len(members) < 2:
        return 0.0, 1.0
    values = [rewards[j] for j in members]
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def reference_grpo_plus(sample: dict, norm_by_std=True, overlong_filter=True, truncated_in_stats=True, eps=1e-6):
    """A_i = (R_i - mean) / (std + eps) over the group (uid); A_i = 0 if |o_i| >= L_max."""
    advantages = []
    for i, uid in enumerate(sample["uids"]):
        truncated = [length >= MAX_LENGTH for length in sample["lengths"]]
        members = [
            j for j, other in enumerate(sample["uids"]) if other == uid and (truncated_in_stats or not truncated[j])
        ]
        mean, std = reference_group_stats(sample["rewards"], members)
        advantage = (sample["rewards"][i] - mean) / (std + eps) if norm_by_std else sample["rewards"][i] - mean
        advantages.append(0.0 if overlong_filter and truncated[i] else advantage)
    return advantages


def reference_uniform(seed: int, uid: str, rank: int) -> float:
    """The documented draw: top 53 bits of blake2b-64('{seed}:{uid}:{rank}') / 2^53."""
    digest = hashlib.blake2b(f"{seed}:{uid}:{rank}".encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) / 2.0**53


def reference_is_repetition(tokens: list[int], window: int, any_period: bool = True) -> bool:
    """The paper's rule: the last m tokens equal the m before them; any period: some p <= m with o_t = o_{t-p} for
    each of the last m positions."""
    if window <= 0:
        return False
    if not any_period:
        return len(tokens) >= 2 * window and tokens[-window:] == tokens[-2 * window : -window]
    n = len(tokens)
    return any(
        n >= window + period and all(tokens[t] == tokens[t - period] for t in range(n - window, n))
        for period in range(1, window + 1)
    )


def reference_microcoder(
    sample: dict, rho: float, seed: int, mask_when="incorrect", window=WINDOW, correct=None, any_period=True
):
    """MicroCoder eq. 2: A_i * (1 - I[|o_i| = L_max and incorrect and not repeat(o_i, m) and U < rho])."""
    advantages, ranks = [], {}
    for i, uid in enumerate(sample["uids"]):
        members = [j for j, other in enumerate(sample["uids"]) if other == uid]
        mean, std = reference_group_stats(sample["rewards"], members)
        advantage = (sample["rewards"][i] - mean) / (std + 1e-6)
        rank = ranks.get(uid, 0)
        ranks[uid] = rank + 1
        is_correct = sample["rewards"][i] > 0 if correct is None else correct[i]
        condition = {"incorrect": not is_correct, "correct": is_correct, "any": True}[mask_when]
        tokens = sample["tokens"][i][: sample["lengths"][i]]
        masked = (
            sample["lengths"][i] >= MAX_LENGTH
            and condition
            and not reference_is_repetition(tokens, window, any_period)
            and reference_uniform(seed, uid, rank) < rho
        )
        advantages.append(0.0 if masked else advantage)
    return advantages


# ---------------------------------------------------------------- random batches
def random_sample(seed: int, reward_kind: str = "binary") -> dict:
    """Groups of sizes 1..8 (incl. all-equal rewards), lengths in [0, L_max] with many truncated responses, some of
    which end in a repeated block of WINDOW tokens."""
    rng = np.random.default_rng(seed)
    uids, rewards, lengths, tokens = [], [], [], []
    for group, size in enumerate([1, 2, 8, 5, 8, 3, 1, 8]):
        all_equal = group in (3, 6)
        for _ in range(size):
            uids.append(f"prompt-{seed}-{group}")
            if reward_kind == "binary":
                reward = -1.0 if all_equal else float(rng.choice([-1.0, 1.0]))
            else:
                reward = 0.5 if all_equal else float(rng.normal())
            rewards.append(reward)
            length = int(MAX_LENGTH if rng.random() < 0.5 else rng.integers(0, MAX_LENGTH))
            lengths.append(length)
            row = rng.integers(1, 50, size=MAX_LENGTH).tolist()
            draw = rng.random()
            if length >= 2 * WINDOW and draw < 0.3:
                row[length - WINDOW : length] = row[length - 2 * WINDOW : length - WINDOW]
            elif length >= 2 * WINDOW and draw < 0.5:
                period = int(rng.choice([3, 5, WINDOW - 1]))
                for t in range(length - WINDOW, length):
                    row[t] = row[t - period]
            tokens.append(row)
    return {"uids": uids, "rewards": rewards, "lengths": lengths, "tokens": tokens}


def tensors(sample: dict) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """token_level_rewards (reward on the last valid token), response_mask, index."""
    bs = len(sample["uids"])
    mask = torch.zeros(bs, MAX_LENGTH)
    rewards = torch.zeros(bs, MAX_LENGTH)
    for i, length in enumerate(sample["lengths"]):
        mask[i, :length] = 1
        rewards[i, max(length - 1, 0)] = sample["rewards"][i]
    return rewards, mask, np.array(sample["uids"], dtype=object)


def as_token_advantages(values: list[float], mask: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)[:, None] * mask


def data_proto(sample: dict, prompt_length: int = 2) -> DataProto:
    rewards, mask, index = tensors(sample)
    bs = len(sample["uids"])
    responses = torch.tensor(sample["tokens"]) * mask.long()
    attention_mask = torch.cat([torch.ones(bs, prompt_length, dtype=torch.long), mask.long()], dim=1)
    return DataProto.from_dict(
        tensors={
            "responses": responses,
            "attention_mask": attention_mask,
            "response_mask": mask,
            "token_level_rewards": rewards,
        },
        non_tensors={"uid": index},
    )


# ---------------------------------------------------------------- grpo_plus
GRPO_PLUS_VARIANTS = [
    {},
    {"overlong_filter": False},
    {"truncated_in_group_stats": False},
    {"norm_by_std": False},
]


@pytest.mark.parametrize("variant", GRPO_PLUS_VARIANTS)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("reward_kind", ["binary", "continuous"])
def test_grpo_plus_matches_reference(variant, seed, reward_kind):
    sample = random_sample(seed, reward_kind)
    rewards, mask, index = tensors(sample)
    section = {"max_response_length": MAX_LENGTH}
    section.update({k: v for k, v in variant.items() if k != "norm_by_std"})
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": variant.get("norm_by_std", True), "grpo_plus": section})
    advantages, returns = get_adv_estimator_fn("grpo_plus")(
        token_level_rewards=rewards, response_mask=mask, index=index, config=config
    )
    expected = reference_grpo_plus(
        sample,
        norm_by_std=variant.get("norm_by_std", True),
        overlong_filter=variant.get("overlong_filter", True),
        truncated_in_stats=variant.get("truncated_in_group_stats", True),
    )
    torch.testing.assert_close(advantages, as_token_advantages(expected, mask), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(returns, advantages)


def test_grpo_plus_without_filtering_equals_verl_grpo():
    sample = random_sample(2, "continuous")
    rewards, mask, index = tensors(sample)
    config = OmegaConf.create({"grpo_plus": {"max_response_length": MAX_LENGTH, "overlong_filter": False}})
    ours, _ = get_adv_estimator_fn("grpo_plus")(
        token_level_rewards=rewards, response_mask=mask, index=index, config=config
    )
    verls, _ = get_adv_estimator_fn("grpo")(token_level_rewards=rewards, response_mask=mask, index=index)
    torch.testing.assert_close(ours, verls, rtol=1e-6, atol=1e-6)


def test_grpo_plus_requires_max_length_and_rejects_unknown_options():
    rewards, mask, index = tensors(random_sample(0))
    estimator = get_adv_estimator_fn("grpo_plus")
    with pytest.raises(ValueError, match="max_response_length"):
        estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=OmegaConf.create({}))
    typo = OmegaConf.create({"grpo_plus": {"max_response_length": MAX_LENGTH, "overlong_filtr": True}})
    with pytest.raises(ValueError, match="overlong_filtr"):
        estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=typo)


# ---------------------------------------------------------------- microcoder_grpo
def microcoder_config(**options) -> dict:
    return OmegaConf.create(
        {"microcoder_grpo": {"max_response_length": MAX_LENGTH, "repetition_window": WINDOW, **options}}
    )


@pytest.mark.parametrize("rho", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("mask_when", ["incorrect", "correct", "any"])
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("periods", ["any", "window"])
def test_microcoder_matches_reference(rho, mask_when, seed, periods):
    sample = random_sample(seed)
    rewards, mask, index = tensors(sample)
    config = microcoder_config(mask_probability=rho, mask_when=mask_when, seed=seed, repetition_periods=periods)
    with provide_advantage_inputs(data_proto(sample)):
        advantages, _ = get_adv_estimator_fn("microcoder_grpo")(
            token_level_rewards=rewards, response_mask=mask, index=index, config=config
        )
    expected = reference_microcoder(sample, rho, seed, mask_when, any_period=periods == "any")
    torch.testing.assert_close(advantages, as_token_advantages(expected, mask), rtol=1e-6, atol=1e-6)


def test_microcoder_masks_about_rho_of_qualifying_responses_reproducibly():
    sample = random_sample(4)
    sample["uids"] = [f"u{i // 8}" for i in range(len(sample["uids"]))]
    many = {key: value * 40 for key, value in sample.items()}
    many["uids"] = [f"{uid}-{copy}" for copy in range(40) for uid in sample["uids"]]
    rewards, mask, index = tensors(many)
    estimator = get_adv_estimator_fn("microcoder_grpo")
    config = microcoder_config(mask_probability=0.3, seed=7, repetition_window=0)
    first, _ = estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=config)
    again, _ = estimator(token_level_rewards=rewards, response_mask=mask, index=index, config=config)
    other_seed, _ = estimator(
        token_level_rewards=rewards,
        response_mask=mask,
        index=index,
        config=microcoder_config(mask_probability=0.3, seed=8, repetition_window=0),
    )
    unmasked, _ = estimator(
        token_level_rewards=rewards,
        response_mask=mask,
        index=index,
        config=microcoder_config(mask_probability=0.0, repetition_window=0),
    )
    torch.testing.assert_close(first, again)
    assert not torch.equal(first, other_seed)
    qualifying = torch.tensor(
        [length >= MAX_LENGTH and r <= 0 for length, r in zip(many["lengths"], many["rewards"], strict=True)]
    )
    changed = (first != unmasked).any(dim=-1)
    qualifying_nonzero = qualifying & (unmasked != 0).any(dim=-1)
    assert not changed[~qualifying].any()
    fraction = changed[qualifying_nonzero].float().mean().item()
    assert 0.2 < fraction < 0.4, fraction


def test_microcoder_uses_grader_acc_when_provided():
    sample = random_sample(5)
    rewards, mask, index = tensors(sample)
    flipped = [not (r > 0) for r in sample["rewards"]]
    batch = data_proto(sample)
    batch.non_tensor_batch["acc"] = np.array(flipped, dtype=bool)
    with provide_advantage_inputs(batch):
        advantages, _ = get_adv_estimator_fn("microcoder_grpo")(
            token_level_rewards=rewards, response_mask=mask, index=index, config=microcoder_config(mask_probability=1.0)
        )
    expected = reference_microcoder(sample, 1.0, 0, correct=flipped)
    torch.testing.assert_close(advantages, as_token_advantages(expected, mask), rtol=1e-6, atol=1e-6)


def test_microcoder_without_token_ids_says_what_to_do():
    rewards, mask, index = tensors(random_sample(0))
    with pytest.raises(ValueError, match="provide_advantage_inputs"):
        get_adv_estimator_fn("microcoder_grpo")(
            token_level_rewards=rewards, response_mask=mask, index=index, config=microcoder_config(mask_probability=1.0)
        )


def test_provided_inputs_must_match_the_batch():
    sample = random_sample(0)
    rewards, mask, index = tensors(sample)
    with provide_advantage_inputs(data_proto(random_sample(1))[:5]), pytest.raises(ValueError, match="rows"):
        get_adv_estimator_fn("grpo_plus")(
            token_level_rewards=rewards,
            response_mask=mask,
            index=index,
            config=OmegaConf.create({"grpo_plus": {"max_response_length": MAX_LENGTH}}),
        )


# ---------------------------------------------------------------- through verl's compute_advantage on a DataProto
def test_verl_compute_advantage_runs_grpo_plus():
    sample = random_sample(6)
    batch = data_proto(sample)
    config = OmegaConf.create({"adv_estimator": "grpo_plus", "grpo_plus": {"max_response_length": MAX_LENGTH}})
    batch = compute_advantage(batch, adv_estimator="grpo_plus", config=config)
    expected = as_token_advantages(reference_grpo_plus(sample), batch.batch["response_mask"])
    torch.testing.assert_close(batch.batch["advantages"], expected, rtol=1e-6, atol=1e-6)


def test_verl_compute_advantage_runs_microcoder_with_provided_inputs():
    sample = random_sample(7)
    batch = data_proto(sample)
    config = OmegaConf.create({"adv_estimator": "microcoder_grpo", **microcoder_config(mask_probability=0.5, seed=3)})
    with provide_advantage_inputs(batch):
        batch = compute_advantage(batch, adv_estimator="microcoder_grpo", config=config)
    expected = as_token_advantages(reference_microcoder(sample, 0.5, 3), batch.batch["response_mask"])
    torch.testing.assert_close(batch.batch["advantages"], expected, rtol=1e-6, atol=1e-6)


def test_true_lengths_come_from_attention_mask_when_rejection_sampling_thinned_the_mask():
    sample = random_sample(8)
    batch = data_proto(sample)
    batch.batch["response_mask"][:, 0] = 0  # token-level rejection sampling dropped the first token of every row
    config = OmegaConf.create({"grpo_plus": {"max_response_length": MAX_LENGTH}})
    with provide_advantage_inputs(batch):
        batch = compute_advantage(batch, adv_estimator="grpo_plus", config=config)
    expected = as_token_advantages(reference_grpo_plus(sample), batch.batch["response_mask"])
    torch.testing.assert_close(batch.batch["advantages"], expected, rtol=1e-6, atol=1e-6)


def test_transfer_queue_fields_give_the_v1_trainer_its_inputs():
    """v1 trainer: `responses` comes from the transfer queue as a nested tensor of the true response lengths, while
    the DataProto that reaches compute_advantage is padded only to the longest response of the batch."""
    sample = random_sample(10)
    nested = torch.nested.as_nested_tensor(
        [
            torch.tensor(tokens[:length], dtype=torch.long)
            for tokens, length in zip(sample["tokens"], sample["lengths"], strict=True)
        ],
        layout=torch.jagged,
    )
    fields = TensorDict({"responses": nested}, batch_size=[len(sample["uids"])])
    rewards, mask, index = tensors(sample)
    width = max(sample["lengths"])
    config = microcoder_config(mask_probability=1.0)
    with provide_advantage_inputs(advantage_inputs_from_fields(fields)):
        advantages, _ = get_adv_estimator_fn("microcoder_grpo")(
            token_level_rewards=rewards[:, :width], response_mask=mask[:, :width], index=index, config=config
        )
    expected = reference_microcoder(sample, 1.0, 0)
    torch.testing.assert_close(advantages, as_token_advantages(expected, mask[:, :width]), rtol=1e-6, atol=1e-6)


def test_algo_config_dataclass_without_options_is_rejected_clearly():
    rewards, mask, index = tensors(random_sample(0))
    with pytest.raises(ValueError, match="max_response_length"):
        get_adv_estimator_fn("grpo_plus")(
            token_level_rewards=rewards, response_mask=mask, index=index, config=AlgoConfig()
        )


# ---------------------------------------------------------------- opt-in CUDA run of the same comparisons
@pytest.mark.gpu
def test_estimators_match_reference_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    sample = random_sample(9)
    rewards, mask, index = tensors(sample)
    rewards, mask = rewards.cuda(), mask.cuda()
    config = OmegaConf.create({"grpo_plus": {"max_response_length": MAX_LENGTH}})
    advantages, _ = get_adv_estimator_fn("grpo_plus")(
        token_level_rewards=rewards, response_mask=mask, index=index, config=config
    )
    assert advantages.is_cuda
    expected = as_token_advantages(reference_grpo_plus(sample), mask.cpu())
    torch.testing.assert_close(advantages.cpu(), expected, rtol=1e-6, atol=1e-6)
    batch = data_proto(sample)
    with provide_advantage_inputs(batch.to("cuda")):
        advantages, _ = get_adv_estimator_fn("microcoder_grpo")(
            token_level_rewards=rewards, response_mask=mask, index=index, config=microcoder_config(mask_probability=0.5)
        )
    expected = as_token_advantages(reference_microcoder(sample, 0.5, 0), mask.cpu())
    torch.testing.assert_close(advantages.cpu(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("period", [1, 2, 3, 7, 64, 100, 127, 128])
def test_a_loop_of_any_period_up_to_the_window_is_a_repetition_and_the_papers_rule_sees_only_divisors(period):
    """m = 128 as MicroCoder: a response whose last 256 tokens loop with period p. The paper's rule (last 128 tokens
    equal the 128 before them) sees it only when p divides 128; the default sees every p <= 128."""
    rng = np.random.default_rng(period)
    length = 400
    tokens = rng.integers(1000, 2000, size=length)
    loop = rng.integers(0, 1000, size=period)
    tokens[length - 256 :] = np.resize(loop, 256)
    responses = torch.tensor(tokens).unsqueeze(0)
    lengths, rows = torch.tensor([length]), torch.tensor([True])
    assert bool(ends_in_repetition(responses, lengths, 128, rows, any_period=True)[0])
    paper = bool(ends_in_repetition(responses, lengths, 128, rows, any_period=False)[0])
    assert paper == (128 % period == 0)
    assert reference_is_repetition(tokens.tolist(), 128, any_period=False) == paper


def test_no_loop_and_a_loop_longer_than_the_window_are_not_repetitions():
    rng = np.random.default_rng(0)
    plain = torch.tensor(rng.permutation(400)).unsqueeze(0)  # no token repeats
    long_loop = np.resize(rng.permutation(200), 400)  # period 200 > m
    for tokens in (plain, torch.tensor(long_loop).unsqueeze(0)):
        assert not bool(ends_in_repetition(tokens, torch.tensor([400]), 128, torch.tensor([True]))[0])
    short = torch.tensor(np.resize([1, 2, 3], 130)).unsqueeze(0)  # period 3 but only 130 tokens: needs m + p = 131
    assert not bool(ends_in_repetition(short, torch.tensor([130]), 128, torch.tensor([True]))[0])
