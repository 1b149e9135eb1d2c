"""What every registered policy loss and advantage estimator must do, checked for each one found in verl's registries
(verl_ext's and the toy plugin's in toy_plugin/, which follows verl_ext/README.md "Adding a loss or an estimator"):
no list of names to edit when one is added. A new plugin package adds its module prefix to PLUGIN_PREFIXES.

These are properties, not formulas: each formula is checked against its reference in test_losses.py and
test_advantages.py.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn

import verl_ext  # noqa: F401  (registers verl_ext's names even with VERL_USE_EXTERNAL_PLUGINS=none)
from verl_ext.advantage_inputs import AdvantageInputs, provide_advantage_inputs
from verl_ext.registered import registered_estimators, registered_losses

TOY_PLUGIN = Path(__file__).with_name("toy_plugin")
sys.path.insert(0, str(TOY_PLUGIN))
import toy_loss_plugin  # noqa: E402, F401  (registers toy_reinforce, as its entry point does in a fresh process)

PLUGIN_PREFIXES = ("verl_ext.", "toy_loss_plugin")
LOSSES = registered_losses(*PLUGIN_PREFIXES)
ESTIMATORS = registered_estimators(*PLUGIN_PREFIXES)
AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm", "token-sum")
WIDTH = 12


def actor_config(options: dict | None = None):
    """The keys of the actor config a loss may read (verl's ActorConfig is a dataclass; ``get`` works the same)."""
    return OmegaConf.create(
        {
            "clip_ratio": 0.2,
            "clip_ratio_low": 0.2,
            "clip_ratio_high": 0.28,
            "clip_ratio_c": 3.0,
            "policy_loss": {"options": options or {}},
            "global_batch_info": {},
        }
    )


def loss_batch(seed: int, on_policy: bool = False):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([WIDTH, 7, 3, 10, 1, 12])
    mask = torch.arange(WIDTH)[None, :] < lengths[:, None]
    old = -torch.rand(len(lengths), WIDTH, generator=generator, dtype=torch.float64) * 3
    new = old if on_policy else old + torch.randn(old.shape, generator=generator, dtype=torch.float64) * 0.05
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, -2.0], dtype=torch.float64)[:, None].expand(-1, WIDTH)
    return old, new.clone().requires_grad_(True), advantages.clone(), mask


def call_loss(name: str, old, new, advantages, mask, weights=None, options=None):
    """The loss with the first aggregation it accepts (a loss may require the one its formula defines)."""
    loss_fn = get_policy_loss_fn(name)
    for mode in AGGREGATIONS:
        try:
            return loss_fn(
                old_log_prob=old,
                log_prob=new,
                advantages=advantages,
                response_mask=mask,
                loss_agg_mode=mode,
                config=actor_config(options),
                rollout_is_weights=weights,
            )
        except ValueError as error:
            if "loss_agg_mode" not in str(error):
                raise
    raise AssertionError(f"policy loss {name} accepts none of {AGGREGATIONS}")


def test_the_registries_list_every_plugin_name():
    assert {"dapo", "gspo_seq", "gspo_plus", "toy_reinforce"} <= set(LOSSES)
    assert {"grpo_plus", "microcoder_grpo"} <= set(ESTIMATORS)


@pytest.mark.parametrize("name", LOSSES)
def test_a_loss_is_a_finite_scalar_with_float_metrics_and_a_gradient(name):
    old, new, advantages, mask = loss_batch(0)
    loss, metrics = call_loss(name, old, new, advantages, mask)
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert all(isinstance(value, float) for value in metrics.values()), metrics
    loss.backward()
    assert torch.isfinite(new.grad).all() and new.grad[mask].abs().sum() > 0


@pytest.mark.parametrize("name", LOSSES)
def test_padding_never_reaches_the_value_or_the_gradient(name):
    old, new, advantages, mask = loss_batch(1)
    clean, _ = call_loss(name, old, new, advantages, mask)
    (clean_grad,) = torch.autograd.grad(clean, new)
    garbage = torch.where(mask, 0.0, torch.full_like(old, 1e4))
    new_dirty = (new.detach() + garbage).requires_grad_(True)
    dirty, _ = call_loss(name, old - garbage, new_dirty, advantages + garbage, mask)
    (dirty_grad,) = torch.autograd.grad(dirty, new_dirty)
    torch.testing.assert_close(dirty, clean)
    torch.testing.assert_close(dirty_grad[mask], clean_grad[mask])
    assert (dirty_grad[~mask] == 0).all()


@pytest.mark.parametrize("name", LOSSES)
def test_on_policy_a_step_makes_positive_advantage_tokens_more_likely(name):
    old, new, advantages, mask = loss_batch(2, on_policy=True)
    loss, _ = call_loss(name, old, new, advantages, mask)
    (grad,) = torch.autograd.grad(loss, new)
    positive, negative = mask & (advantages > 0), mask & (advantages < 0)
    assert (grad[positive] < 0).all() and (grad[negative] > 0).all()


@pytest.mark.parametrize("name", LOSSES)
def test_unit_tis_weights_change_nothing_and_zero_advantages_give_no_gradient(name):
    old, new, advantages, mask = loss_batch(3)
    plain, _ = call_loss(name, old, new, advantages, mask)
    weighted, _ = call_loss(name, old, new, advantages, mask, weights=mask.to(old.dtype))
    torch.testing.assert_close(weighted, plain, check_dtype=False)
    zero, _ = call_loss(name, old, new, torch.zeros_like(advantages), mask)
    (grad,) = torch.autograd.grad(zero, new)
    assert (grad == 0).all()


def estimator_batch(seed: int):
    rng = np.random.default_rng(seed)
    index = np.array([f"g{i // 4}" for i in range(16)], dtype=object)
    rewards = rng.choice([-1.0, 1.0], size=16)
    rewards[8:12] = 1.0  # a group whose rewards are all equal
    lengths = rng.integers(1, WIDTH, size=16)  # no response reaches L_max = WIDTH + 1: nothing is truncated
    mask = torch.tensor(np.arange(WIDTH)[None, :] < lengths[:, None], dtype=torch.float32)
    scores = torch.zeros(16, WIDTH)
    scores[torch.arange(16), torch.tensor(lengths - 1)] = torch.tensor(rewards, dtype=torch.float32)
    responses = torch.tensor(rng.integers(0, 100, size=(16, WIDTH)))
    return scores, mask, index, rewards, AdvantageInputs(responses=responses, response_lengths=None, correct=None)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_estimator_ranks_responses_of_a_group_by_reward_and_is_zero_on_padding(name):
    scores, mask, index, rewards, inputs = estimator_batch(4)
    config = OmegaConf.create({name: {"max_response_length": WIDTH + 1}})
    estimator = get_adv_estimator_fn(name)
    with provide_advantage_inputs(inputs):
        advantages, _ = estimator(token_level_rewards=scores, response_mask=mask, index=index, config=config)
        again, _ = estimator(token_level_rewards=scores, response_mask=mask, index=index, config=config)
    assert advantages.shape == mask.shape and torch.isfinite(advantages).all()
    torch.testing.assert_close(advantages, again)
    assert (advantages[mask == 0] == 0).all()
    per_response = advantages.sum(-1) / mask.sum(-1)
    for group in sorted(set(index)):
        rows = [i for i, uid in enumerate(index) if uid == group]
        if len(set(rewards[rows])) == 1:
            assert (per_response[rows] == 0).all(), group
        for i in rows:
            for j in rows:
                if rewards[i] > rewards[j]:
                    assert per_response[i] > per_response[j], (group, i, j)


def test_a_loss_reads_its_own_hyperparameters_and_refuses_a_misspelt_one():
    old, new, advantages, mask = loss_batch(5)
    _, metrics = call_loss("toy_reinforce", old, new, advantages, mask, options={"toy_reinforce": {"cap": 1.5}})
    assert metrics["actor/toy_cap"] == 1.5
    with pytest.raises(ValueError, match=r"policy_loss\.options\.toy_reinforce\.\['cpa'\]"):
        call_loss("toy_reinforce", old, new, advantages, mask, options={"toy_reinforce": {"cpa": 1.5}})


PROBE = """
import json
import verl
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.utils.config import omega_conf_to_dataclass
from recipe.nouscoder.configs import compose_experiment

config = compose_experiment("debug_cpu_learn", [
    "actor_rollout_ref.actor.policy_loss.loss_mode=toy_reinforce",
    "+actor_rollout_ref.actor.policy_loss.options.toy_reinforce.cap=1.25",
])
actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
print(json.dumps({
    "module": get_policy_loss_fn("toy_reinforce").__module__,
    "options_class": type(actor.policy_loss).__name__,
    "cap": actor.policy_loss.options["toy_reinforce"]["cap"],
}))
"""


@pytest.mark.integration  # a fresh interpreter importing verl and composing a config: ~10 s
def test_a_package_of_ones_own_registers_through_the_entry_point_and_gets_its_options_from_the_config():
    env = {key: value for key, value in os.environ.items() if key != "VERL_USE_EXTERNAL_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TOY_PLUGIN), env.get("PYTHONPATH")]))
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == {"module": "toy_loss_plugin", "options_class": "PolicyLossOptionsConfig", "cap": 1.25}
