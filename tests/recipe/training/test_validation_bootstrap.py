"""recipe.nouscoder.training.validation_bootstrap against verl's own functions: the same figures on random validation
results (numeric, boolean, integer, missing, string and non-finite fields, the majority vote, verl's expected counts),
and the recipe's trainers computing their validation statistics through it."""

import math
import random

import numpy as np
import pytest
from verl.trainer.ppo import metric_utils
from verl.trainer.ppo.v1.trainer_base import PPOTrainer

from recipe.nouscoder.training import validation_bootstrap
from recipe.nouscoder.training.trainer import NousCoderSyncTrainer
from recipe.nouscoder.training.validation_bootstrap import bootstrap_metric, vectorized_bootstrap
from tests.recipe.training.test_trainer_hooks import make_config


def random_results(seed: int, prompts: int, samples: int) -> tuple[list[str], list[str], dict[str, list]]:
    """Validation results shaped as verl collects them: a data source and uid per sample, and per reward field one
    value per sample (floats, 0/1 scores, booleans, integer counts, None where a field is missing, strings, and a
    field with a NaN; prompts with fewer samples than the others, as when a session failed)."""
    rng = random.Random(seed)
    sources, uids = [], []
    for prompt in range(prompts):
        for _ in range(samples if prompt % 5 else max(1, samples - 1)):
            sources.append(f"source{prompt % 2}")
            uids.append(f"uid{prompt}")
    count = len(uids)
    fields = {
        "score": [rng.choice([-1.0, 1.0]) for _ in range(count)],
        "acc": [rng.random() < 0.4 for _ in range(count)],
        "latency_s": [rng.uniform(0.01, 3.0) for _ in range(count)],
        "tests_executed": [rng.randrange(0, 40) for _ in range(count)],
        "sometimes": [rng.random() if rng.random() < 0.7 else None for _ in range(count)],
        "verdict": [rng.choice(["accepted", "wrong_answer"]) for _ in range(count)],
        "with_nan": [float("nan") if index == 3 else rng.random() for index in range(count)],
        "pred": [rng.choice("AB") for _ in range(count)],
    }
    return sources, uids, fields


def same_values(ours: dict, verls: dict) -> None:
    assert ours.keys() == verls.keys()
    for name, value in verls.items():
        assert ours[name] == value or (math.isnan(ours[name]) and math.isnan(value)), (name, ours[name], value)


def same_figures(ours: dict, verls: dict) -> None:
    assert ours.keys() == verls.keys()
    for source in verls:
        assert ours[source].keys() == verls[source].keys()
        for var, metrics in verls[source].items():
            assert ours[source][var].keys() == metrics.keys(), (source, var)
            same_values(ours[source][var], metrics)


@pytest.mark.parametrize(("seed", "prompts", "samples"), [(0, 12, 4), (1, 7, 16), (2, 9, 1), (3, 5, 5), (4, 3, 8)])
def test_process_validation_metrics_gives_verls_figures(seed, prompts, samples):
    sources, uids, fields = random_results(seed, prompts, samples)
    expected = {("source1", "uid1"): samples + 2, ("source0", "uid4"): samples}
    for kwargs in ({}, {"expected_acc_counts": expected}):
        verls = metric_utils.process_validation_metrics(sources, uids, fields, **kwargs)
        with vectorized_bootstrap():
            ours = metric_utils.process_validation_metrics(sources, uids, fields, **kwargs)
        same_figures(ours, verls)
    assert metric_utils.bootstrap_metric is validation_bootstrap.VERL_BOOTSTRAP_METRIC  # restored after the block


@pytest.mark.parametrize("seed", range(6))
def test_bootstrap_metric_gives_verls_mean_and_std(seed):
    rng = np.random.default_rng(seed)
    n_data, subset, n_bootstrap = int(rng.integers(1, 20)), int(rng.integers(1, 17)), int(rng.integers(1, 1500))
    data = [float(value) for value in rng.normal(size=n_data)]
    fns = [np.max, np.min]
    ours = bootstrap_metric(data, subset, fns, n_bootstrap=n_bootstrap, seed=seed)
    assert ours == metric_utils.bootstrap_metric(data, subset, fns, n_bootstrap=n_bootstrap, seed=seed)
    assert bootstrap_metric(data, subset, fns[::-1], n_bootstrap=n_bootstrap, seed=seed) == ours[::-1]


def test_other_reduce_functions_and_data_go_to_verls_function(monkeypatch):
    calls = []

    def verls(data, subset_size, reduce_fns, n_bootstrap=1000, seed=42):
        calls.append((list(data), tuple(reduce_fns)))
        return [(0.0, 0.0)] * len(reduce_fns)

    monkeypatch.setattr(validation_bootstrap, "VERL_BOOTSTRAP_METRIC", verls)
    bootstrap_metric([1.0, 2.0], 2, [np.mean])  # a reduce function other than max / min
    bootstrap_metric([1.0, "x"], 2, [np.max])  # not all numbers
    bootstrap_metric([1.0, float("inf")], 2, [np.min])  # not all finite
    assert [data for data, _ in calls] == [[1.0, 2.0], [1.0, "x"], [1.0, float("inf")]]
    bootstrap_metric([1, True, 2.5], 2, [np.max, np.min])
    assert len(calls) == 3  # ints, bools and floats: vectorized


def test_numpys_global_generator_is_left_alone():
    np.random.seed(7)
    expected = np.random.random()
    np.random.seed(7)
    bootstrap_metric([0.1, 0.5, 0.9], 2, [np.max, np.min], seed=42)
    assert np.random.random() == expected


def test_the_recipes_trainer_computes_verls_validation_metrics_through_it(tmp_path, monkeypatch):
    trainer = NousCoderSyncTrainer(make_config(tmp_path))
    sources, uids, fields = random_results(5, prompts=6, samples=4)
    turns = [1] * len(uids)
    verls = PPOTrainer._val_metrics_update(trainer, sources, uids, fields, turns)
    vectorized_calls = []
    real = validation_bootstrap.bootstrap_indices
    monkeypatch.setattr(validation_bootstrap, "bootstrap_indices", lambda *a: vectorized_calls.append(a) or real(*a))
    ours = trainer._val_metrics_update(sources, uids, fields, turns)
    same_values(ours, verls)
    assert any(key.endswith("best@4/mean") for key in ours)
    assert vectorized_calls  # the vectorized path ran inside the trainer's own method
