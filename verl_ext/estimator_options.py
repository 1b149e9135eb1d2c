"""Options of the verl_ext advantage estimators, read from verl's `algorithm` config node.

verl hands a registered estimator the `algorithm` node as `config` (an OmegaConf DictConfig in the trainers, an
`AlgoConfig` dataclass or a plain dict elsewhere). Our options live in a sub-node named after the estimator
(`algorithm.grpo_plus.*`, `algorithm.microcoder_grpo.*`); verl's own `algorithm.norm_adv_by_std_in_grpo` is reused.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

MASK_WHEN_CHOICES = ("incorrect", "correct", "any")
REPETITION_PERIODS_CHOICES = ("any", "window")


def _section(config: Any, name: str) -> dict[str, Any]:
    """The `config.<name>` sub-node as a plain dict ({} when absent)."""
    if config is None:
        return {}
    node = config.get(name, None) if hasattr(config, "get") else None
    if node is None:
        return {}
    if not isinstance(node, Mapping) and not hasattr(node, "items"):
        raise TypeError(f"algorithm.{name} must be a mapping of options, got {type(node).__name__}")
    return {str(key): value for key, value in node.items()}


def _norm_by_std(config: Any) -> bool:
    if config is None or not hasattr(config, "get"):
        return True
    return bool(config.get("norm_adv_by_std_in_grpo", True))


def _build(cls: type, name: str, config: Any) -> Any:
    """Instantiate an options dataclass from `algorithm.<name>`, rejecting unknown keys (typos)."""
    values = _section(config, name)
    known = {f.name for f in fields(cls)} - {"norm_by_std"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown option(s) algorithm.{name}.{unknown}; known options are {sorted(known)}")
    if values.get("max_response_length") is None:
        raise ValueError(
            f"algorithm.adv_estimator={name} needs algorithm.{name}.max_response_length (the L_max of overlong "
            f"filtering); set it to the rollout's maximum response length, e.g. "
            f"'+algorithm.{name}.max_response_length=${{data.max_response_length}}'"
        )
    return cls(norm_by_std=_norm_by_std(config), **values)


@dataclass(frozen=True)
class GrpoPlusOptions:
    """`algorithm.grpo_plus.*`: GRPO with overlong filtering (NousCoder "Iterative Context Extension", DAPO)."""

    max_response_length: int
    """L_max: a response with |o_i| >= L_max was truncated (hit the length limit without finishing)."""
    norm_by_std: bool = True
    """From verl's `algorithm.norm_adv_by_std_in_grpo`: divide by the group std (False = Dr. GRPO)."""
    overlong_filter: bool = True
    """Set the advantage of truncated responses to 0."""
    truncated_in_group_stats: bool = True
    """Truncated responses still count in their group's mean/std (NousCoder overrides the computed advantage)."""
    epsilon: float = 1e-6
    """eps in (R - mean) / (std + eps)."""

    def __post_init__(self) -> None:
        if int(self.max_response_length) <= 0:
            raise ValueError(f"algorithm.grpo_plus.max_response_length must be > 0, got {self.max_response_length}")

    @classmethod
    def from_config(cls, config: Any) -> "GrpoPlusOptions":
        return _build(cls, "grpo_plus", config)


@dataclass(frozen=True)
class MicrocoderOptions:
    """`algorithm.microcoder_grpo.*`: conditional truncation masking (MicroCoder section 2, eq. 2)."""

    max_response_length: int
    """L_max of eq. 2: the condition is |o_i| >= L_max."""
    norm_by_std: bool = True
    """From verl's `algorithm.norm_adv_by_std_in_grpo`."""
    mask_probability: float = 0.3
    """rho: a qualifying response is masked when U(0,1) < rho."""
    mask_when: str = "incorrect"
    """'incorrect' (eq. 2), 'correct' (the prose of section 2.3) or 'any' (correctness not tested)."""
    repetition_window: int = 128
    """m: a response that ends in a loop over its last m tokens is a repetition and never masked (0 = off)."""
    repetition_periods: str = "any"
    """'any': a loop of any period p <= m (o_t = o_{t-p} over the last m tokens); 'window': the paper's rule as
    written, the last m tokens equal the m before them (only periods dividing m)."""
    correct_reward_threshold: float = 0.0
    """A response is correct when its reward > threshold (unless the trainer provides `acc`)."""
    seed: int = 0
    """Seed of the U(0,1) draws (a stateless hash of seed, uid and rank in the group)."""
    epsilon: float = 1e-6
    """eps in (R - mean) / (std + eps)."""

    def __post_init__(self) -> None:
        if int(self.max_response_length) <= 0:
            raise ValueError(
                f"algorithm.microcoder_grpo.max_response_length must be > 0, got {self.max_response_length}"
            )
        if not 0.0 <= float(self.mask_probability) <= 1.0:
            raise ValueError(
                f"algorithm.microcoder_grpo.mask_probability must be in [0, 1], got {self.mask_probability}"
            )
        if self.mask_when not in MASK_WHEN_CHOICES:
            raise ValueError(
                f"algorithm.microcoder_grpo.mask_when must be one of {MASK_WHEN_CHOICES}, got {self.mask_when!r}"
            )
        if self.repetition_periods not in REPETITION_PERIODS_CHOICES:
            raise ValueError(
                f"algorithm.microcoder_grpo.repetition_periods must be one of {REPETITION_PERIODS_CHOICES}, "
                f"got {self.repetition_periods!r}"
            )
        if int(self.repetition_window) < 0:
            raise ValueError(f"algorithm.microcoder_grpo.repetition_window must be >= 0, got {self.repetition_window}")

    @classmethod
    def from_config(cls, config: Any) -> "MicrocoderOptions":
        return _build(cls, "microcoder_grpo", config)
