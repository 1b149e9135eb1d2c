"""recipe.nouscoder.training.sequence_tis: both forms of sequence-level TIS against the blog's formula, written
directly as probability ratios, and the per-step weight metrics."""

import math

import numpy as np
import pytest
import torch

from recipe.nouscoder.training.sequence_tis import (
    SequenceTISOptions,
    correlation,
    sequence_log_ratios,
    sequence_weights,
    weight_metrics,
)


def reference_weight(old: list[float], sampler: list[float], form: str, cap: float) -> float:
    """TIS(a_i) = min(C, pi_old(a_i|q) / pi_sampler(a_i|q)) with the rollout's probability the product of its tokens'
    (product), or that ratio to the power 1/|o_i| (geometric mean of the token ratios)."""
    ratio = math.prod(math.exp(o) / math.exp(s) for o, s in zip(old, sampler, strict=True))
    if form == "geometric_mean":
        ratio = ratio ** (1.0 / len(old))
    return min(cap, ratio)


def random_batch(seed: int, rows: int = 12, width: int = 40):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, width + 1, size=rows)
    sampler = rng.uniform(-3.0, -0.05, size=(rows, width))
    old = sampler + rng.normal(0.0, 0.05, size=(rows, width))
    mask = np.arange(width)[None, :] < lengths[:, None]
    garbage = np.where(mask, 0.0, rng.normal(0, 50, size=(rows, width)))  # padding never counts
    return old + garbage, sampler, mask, lengths


@pytest.mark.parametrize("form", ["product", "geometric_mean"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_match_the_formula_written_as_probability_ratios(form, seed):
    old, sampler, mask, lengths = random_batch(seed)
    log_sum, counted = sequence_log_ratios(torch.tensor(old), torch.tensor(sampler), torch.tensor(mask))
    assert counted.tolist() == lengths.tolist()
    weights = sequence_weights(log_sum, counted, form, 1.5)
    expected = [
        reference_weight(list(old[i, :n]), list(sampler[i, :n]), form, 1.5) for i, n in enumerate(lengths.tolist())
    ]
    torch.testing.assert_close(weights, torch.tensor(expected, dtype=torch.float64), rtol=1e-9, atol=1e-12)


def test_icepop_bounds_zero_what_falls_outside_as_verl_does():
    log_sum = torch.tensor([math.log(0.2), math.log(1.0), math.log(3.0)], dtype=torch.float64)
    weights = sequence_weights(log_sum, torch.tensor([1, 1, 1]), "product", "0.5_2.0")
    assert weights.tolist() == [0.0, 1.0, 0.0]


def test_the_product_falls_with_length_and_the_geometric_mean_does_not():
    """The same per-token divergence at every token: log w_i = -L d for the product, -d for the mean."""
    divergence = 1e-3
    lengths = torch.tensor([1_000, 4_000, 16_000, 32_000])
    log_sum = -divergence * lengths.double()
    product = sequence_weights(log_sum, lengths, "product", 2.0)
    geometric = sequence_weights(log_sum, lengths, "geometric_mean", 2.0)
    assert product.tolist() == pytest.approx([math.exp(-1), math.exp(-4), math.exp(-16), math.exp(-20)])  # clamp
    assert geometric.tolist() == pytest.approx([math.exp(-divergence)] * 4)
    metrics = weight_metrics(log_sum, lengths, 2.0)
    assert metrics["nouscoder/sequence_tis/product/log_weight_length_correlation"] == pytest.approx(-1.0)
    assert metrics["nouscoder/sequence_tis/geometric_mean/log_weight_length_correlation"] == 0.0


def test_metrics_of_both_forms_over_valid_rollouts():
    log_sum = torch.tensor([math.log(4.0), math.log(0.5), 0.0, 7.0], dtype=torch.float64)
    lengths = torch.tensor([2, 1, 4, 0])  # the last row has no valid token
    metrics = weight_metrics(log_sum, lengths, 2.0)
    # product: min(2, [4, 0.5, 1]) = [2, 0.5, 1]; geometric: min(2, [2, 0.5, 1])
    for form in ("product", "geometric_mean"):
        prefix = f"nouscoder/sequence_tis/{form}"
        assert metrics[f"{prefix}/mean"] == pytest.approx(3.5 / 3)
        assert metrics[f"{prefix}/min"] == pytest.approx(0.5)
        assert metrics[f"{prefix}/p50"] == pytest.approx(1.0)
        assert metrics[f"{prefix}/capped_fraction"] == pytest.approx(1 / 3)
    assert weight_metrics(torch.zeros(2, dtype=torch.float64), torch.tensor([0, 0]), 2.0) == {}


def test_correlation_of_constant_data_is_zero_and_options_refuse_unknown_forms():
    assert correlation(torch.ones(3), torch.arange(3.0)) == 0.0
    assert correlation(torch.arange(3.0), torch.arange(3.0) * 2) == pytest.approx(1.0)
    assert SequenceTISOptions.from_config(None).form == "geometric_mean"
    with pytest.raises(ValueError, match="nouscoder.sequence_tis.form"):
        SequenceTISOptions.from_config({"form": "arithmetic"})
