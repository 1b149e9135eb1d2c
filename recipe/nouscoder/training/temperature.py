"""Staged sampling temperature (MicroCoder section 2.4, "diversity-determined temperature").

MicroCoder finds that continuous temperature ramps destabilise output diversity, while staged changes
(e.g. low then high) beat a fixed temperature; so the schedule is piecewise constant by training step.

How the temperature reaches a running vLLM/SGLang engine without a restart (verl 0.9.1, V1 trainer):
the trainer writes the step's temperature on every training prompt it submits, as the per-row tensor field
``TEMPERATURE_FIELD`` of the prompt TensorDict (async trainers persist it with the prompt, so re-issued
prompts keep it). verl's ``AgentLoopWorkerTQ`` turns each prompt's fields into keyword arguments of
``_run_agent_loop(sampling_params, ...)``; ``StagedTemperatureAgentLoopWorker`` overrides that method to move
the field into ``sampling_params["temperature"]``, which the agent loop hands to the server's ``generate``
per request. Validation prompts carry no field and keep ``rollout.val_kwargs``; greedy requests
(temperature 0) stay greedy. ``StagedTemperatureAgentLoopManager`` is verl's ``AgentLoopManagerTQ`` with that
worker; the trainer selects it through ``actor_rollout_ref.rollout.agent.agent_loop_manager_class``.
"""

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ray
import torch
from tensordict import TensorDict
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

TEMPERATURE_FIELD = "__nouscoder_temperature__"
MANAGER_CLASS_FQN = "recipe.nouscoder.training.temperature.StagedTemperatureAgentLoopManager"


@dataclass(frozen=True)
class TemperatureStage:
    """From ``start_step`` (1-based global step, inclusive) on, sample at ``temperature``."""

    start_step: int
    temperature: float


class TemperatureSchedule:
    """Piecewise-constant temperature by global step: the last stage whose start_step <= step applies."""

    def __init__(self, stages: Sequence[TemperatureStage]):
        if not stages:
            raise ValueError("a temperature schedule needs at least one stage")
        starts = [stage.start_step for stage in stages]
        if starts[0] != 1 or any(later <= earlier for earlier, later in zip(starts, starts[1:], strict=False)):
            raise ValueError(
                f"temperature stages must start at step 1 and have increasing start_step, got {starts}; "
                "write e.g. [{start_step: 1, temperature: 0.8}, {start_step: 300, temperature: 1.2}]"
            )
        if any(stage.temperature <= 0 for stage in stages):
            raise ValueError(f"training temperatures must be > 0, got {[stage.temperature for stage in stages]}")
        self.stages = list(stages)
        self._starts = starts

    @classmethod
    def from_config(cls, stages: Sequence[Mapping[str, Any]], default_temperature: float) -> "TemperatureSchedule":
        """From ``nouscoder.temperature.stages``; an empty list is the fixed ``default_temperature``."""
        if not stages:
            return cls([TemperatureStage(1, float(default_temperature))])
        return cls([TemperatureStage(int(stage["start_step"]), float(stage["temperature"])) for stage in stages])

    @property
    def is_constant(self) -> bool:
        return len(self.stages) == 1

    def temperature_at(self, step: int) -> float:
        """Temperature of global step ``step`` (steps before 1 use the first stage)."""
        position = bisect.bisect_right(self._starts, step) - 1
        return self.stages[max(position, 0)].temperature


def attach_temperature(prompts: TensorDict, temperature: float) -> TensorDict:
    """Write ``temperature`` on every prompt row as the (bs,) float64 field ``TEMPERATURE_FIELD`` (exact value)."""
    prompts[TEMPERATURE_FIELD] = torch.full((len(prompts),), float(temperature), dtype=torch.float64)
    return prompts


def request_sampling_params(sampling_params: dict[str, Any], temperature: Any, validate: bool) -> dict[str, Any]:
    """Sampling params of one request: the prompt's staged temperature, unless validating or greedy."""
    if temperature is None or validate or sampling_params.get("temperature") == 0:
        return sampling_params
    return {**sampling_params, "temperature": float(temperature)}


class StagedTemperatureAgentLoopWorker(AgentLoopWorkerTQ.__ray_actor_class__):
    """verl's TransferQueue agent-loop worker, taking each request's temperature from its prompt."""

    def __init__(self, *args, **kwargs):
        # Defined here on purpose: without it Ray pickles the inherited verl ``__init__`` by value, and its
        # ``super()`` then names a copy of verl's class that is not in this actor's MRO ("super(type, obj): obj must
        # be an instance or subtype of type" when the worker starts).
        super().__init__(*args, **kwargs)

    async def _run_agent_loop(self, sampling_params, trajectory, *, agent_name, trace=True, **kwargs):
        temperature = kwargs.pop(TEMPERATURE_FIELD, None)
        sampling_params = request_sampling_params(sampling_params, temperature, trajectory["validate"])
        return await super()._run_agent_loop(sampling_params, trajectory, agent_name=agent_name, trace=trace, **kwargs)


class StagedTemperatureAgentLoopManager(AgentLoopManagerTQ):
    """verl's ``AgentLoopManagerTQ`` whose workers apply the per-prompt staged temperature."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.agent_loop_workers_class = ray.remote(StagedTemperatureAgentLoopWorker)
