"""verl V1 trainers of the NousCoder recipe: verl's sync / separate-async trainers plus the recipe's hooks.

Registered names (select with ``trainer.v1.trainer_mode``): ``nouscoder_sync`` (verl's ``PPOTrainerSync``)
and ``nouscoder_separate_async`` (verl's ``PPOTrainerSeparateAsync``). Options live under ``nouscoder:``
(configs/nouscoder/extensions.yaml). Hooks, in the order a step meets them:

* ``__init__``: selects the staged-temperature agent-loop manager; resets ``trainer.v1.trainer_mode`` to the
  base mode, because verl's base trainer compares it to ``"sync"`` to pick its buffer, dataloader fetch size
  and checkpoint layout.
* ``_build_replay_buffer``: verl's own buffer, specialised with the dynamic-sampling cap (dynamic_sampling.py).
* ``_init_dataloader``: verl's dataloader over a sampler that skips offline-listed and online-solved problems.
* ``on_step_begin``: the step's temperature into the trainer's log-prob temperature; resets the refill budget.
* ``_next_train_batch``: the step's temperature on every prompt sent to rollout (temperature.py).
* ``_compute_advantage``: for ``algorithm.adv_estimator=microcoder_grpo`` with a repetition window, or with the
  multi-turn agent loop, verl's advantage step runs inside ``verl_ext``'s ``provide_advantage_inputs`` with the
  response token ids and true lengths read from TransferQueue (verl passes neither to estimators; a multi-turn
  response_mask leaves out feedback tokens, and overlong filtering must see the whole trajectory's length); other
  runs go straight to verl. A negative control (``nouscoder.negative_control``, negative_control.py) shuffles the
  rewards before it or flips the advantages after it. With TIS on, both forms of the sequence weights are logged
  and, for ``rollout_is=sequence``, verl's weights are replaced by the form ``nouscoder.sequence_tis.form`` names
  (sequence_tis.py).
* ``on_init_end``: after verl's, one memory sampler per node of each role's workers (role_memory.py).
* ``step``: after verl's step, reads the trained batch back from TransferQueue, records fully solved problems
  and adds the ``nouscoder/*`` (peak memory per role included), ``length_bias/*`` and ``grading/*`` metrics to the step's metrics (logged by
  verl's Tracking). ``grading/*`` come from each rollout's ``extra_fields["reward_extra_info"]`` (where verl
  0.9.1's agent loop stores the reward dict), read in the same TransferQueue call; ``multi_turn/*`` from each
  rollout's multi-turn record there (recipe/nouscoder/multi_turn/metrics.py).
* ``on_step_end``: after verl's (the separate-async weight sync), the launcher's stop request before the job's time
  limit: a save if verl did not save this step, and the end of the loop (stop_request.py).
* ``_save_checkpoint`` / ``_load_checkpoint``: the online-filter state in ``global_step_N/``.
* ``get_llm_client``: verl's rollout client (the separate-async trainer: ``ExtraFieldsClient``), or its variant with
  the CPU mode's known answers when they are on (cpu/known_answer_client.py).
* ``_val_metrics_update``: verl's validation statistics, with their best@n / worst@n bootstrap vectorized (the
  same figures; validation_bootstrap.py).
* ``fit``: after verl's loop, the rollout's vLLM engines are shut down cleanly (rollout_shutdown.py).
"""

import logging
import os
from typing import TYPE_CHECKING, cast

import numpy as np
import transfer_queue as tq
from omegaconf import DictConfig, OmegaConf, open_dict
from tensordict import TensorDict
from torchdata.stateful_dataloader import StatefulDataLoader
from transfer_queue import KVBatchMeta
from verl import DataProto
from verl.trainer.ppo.v1 import PPOTrainerSeparateAsync, PPOTrainerSync, register_trainer
from verl.trainer.ppo.v1 import trainer_separate_async as verl_separate_async
from verl.utils.dataset.rl_dataset import collate_fn
from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.utils.padding import response_to_nested

from recipe.nouscoder.cpu.known_answer_client import rollout_client_class
from recipe.nouscoder.extra_fields import ExtraFieldsClient, reward_infos_from_extra_fields
from recipe.nouscoder.multi_turn import uses_multi_turn
from recipe.nouscoder.multi_turn.metrics import multi_turn_metrics
from recipe.nouscoder.training.dynamic_sampling import CAPPED_BUFFER_OF, CappedGroupFilterMixin
from recipe.nouscoder.training.negative_control import NegativeControl
from recipe.nouscoder.training.online_filter import (
    ProblemFilterSampler,
    SolvedProblemFilter,
    dataset_problem_ids,
    fully_solved_problems,
    load_problem_id_list,
    load_solved_problems,
)
from recipe.nouscoder.training.role_memory import RoleMemory
from recipe.nouscoder.training.rollout_shutdown import shut_down_vllm_engines
from recipe.nouscoder.training.sequence_tis import (
    SequenceTISOptions,
    sequence_log_ratios,
    sequence_weights,
    weight_metrics,
)
from recipe.nouscoder.training.step_metrics import (
    compute_step_metrics,
    grading_metrics,
    known_answer_metrics,
)
from recipe.nouscoder.training.stop_request import acknowledge, stop_requested, verl_saves_step
from recipe.nouscoder.training.temperature import MANAGER_CLASS_FQN, TemperatureSchedule, attach_temperature
from recipe.nouscoder.training.validation_bootstrap import vectorized_bootstrap
from verl_ext.advantage_inputs import advantage_inputs_from_fields, provide_advantage_inputs
from verl_ext.estimator_options import MicrocoderOptions

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

ROLLOUT_FIELDS = ["uid", "responses", "response_mask", "rm_scores", "advantages", "extra_info", "extra_fields"]
NON_TENSOR_FIELDS = ("uid", "extra_info", "extra_fields")
MICROCODER_ESTIMATOR = "microcoder_grpo"


class _DropPrintKeywords(logging.LoggerAdapter):
    """A logger that ignores ``print``'s ``flush=`` keyword instead of raising ``TypeError``.

    verl 0.9.1's ``PPOTrainerSeparateAsync._setup`` logs ``logger.info(..., flush=True)`` when
    ``actor_rollout_ref.hybrid_engine=false`` (every async config of this recipe); ``Logger._log`` has no ``flush``
    argument, so at the default INFO level the trainer dies at init. Installed on that module's logger only.
    """

    def process(self, msg, kwargs):
        kwargs.pop("flush", None)
        return msg, kwargs


def tolerate_flush_keyword_in_verl_logs() -> None:
    if not isinstance(verl_separate_async.logger, _DropPrintKeywords):
        verl_separate_async.logger = _DropPrintKeywords(verl_separate_async.logger, {})  # type: ignore[assignment]


tolerate_flush_keyword_in_verl_logs()


def nouscoder_options(config: DictConfig) -> DictConfig:
    """The ``nouscoder:`` node, or an error saying how to add it."""
    options = config.get("nouscoder")
    if options is None:
        raise ValueError(
            "config has no `nouscoder` node: add `- nouscoder: extensions` to the defaults list of your experiment "
            "config (configs/nouscoder/extensions.yaml) to use the nouscoder_* trainers."
        )
    return options


def select_staged_temperature_manager(config: DictConfig) -> None:
    """Point ``actor_rollout_ref.rollout.agent.agent_loop_manager_class`` at the staged-temperature manager."""
    agent_config = config.actor_rollout_ref.rollout.agent
    current = agent_config.get("agent_loop_manager_class")
    if current and current != MANAGER_CLASS_FQN:
        raise ValueError(
            f"nouscoder.temperature.stages needs actor_rollout_ref.rollout.agent.agent_loop_manager_class="
            f"{MANAGER_CLASS_FQN}, but it is set to {current}; unset it or drop the temperature stages."
        )
    with open_dict(config):
        agent_config.agent_loop_manager_class = MANAGER_CLASS_FQN


def estimator_needs_response_ids(algorithm: DictConfig) -> bool:
    """True when the advantage estimator reads response token ids: ``microcoder_grpo`` with a repetition window.

    Checked once at construction (``MicrocoderOptions`` also rejects a missing ``max_response_length`` there),
    so the other estimators (``grpo``, ``grpo_plus``, ``gae``, ...) add no TransferQueue read per step.
    """
    if algorithm.adv_estimator != MICROCODER_ESTIMATOR:
        return False
    return MicrocoderOptions.from_config(algorithm).repetition_window > 0


def active_rollout_correction(config: DictConfig) -> DictConfig | None:
    """``algorithm.rollout_correction`` when verl computes TIS weights in the trainer (decoupled mode, with the
    sampler's log-probs: verl 0.9.1 ``trainer_base._compute_advantage`` step 2), else None."""
    correction = config.algorithm.get("rollout_correction")
    if correction is None or correction.get("bypass_mode", False) or correction.get("rollout_is") is None:
        return None
    if not config.actor_rollout_ref.rollout.get("calculate_log_probs", False):
        return None
    return correction


def rollout_batch_from_fields(data: TensorDict) -> DataProto:
    """DataProto of the trained rollouts from TransferQueue fields (nested tensors padded, non-tensors split).

    ``extra_fields`` (the agent loop's per-rollout dict, reward info included) is optional: absent, it is left out.
    """
    padded = data.to_padded_tensor()
    non_tensor = {
        name: np.array(padded.pop(name).tolist(), dtype=object) for name in NON_TENSOR_FIELDS if name in padded.keys()
    }
    padded["token_level_scores"] = padded.pop("rm_scores")
    return DataProto(batch=padded, non_tensor_batch=non_tensor)


if TYPE_CHECKING:  # the mixin always sits before a verl trainer in the MRO: let the type checker see that base
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer as _VerlTrainer
else:
    _VerlTrainer = object


class NousCoderTrainerMixin(_VerlTrainer):
    """Training-loop extensions shared by both trainers; see the module docstring for the hook order."""

    base_trainer_mode: str

    def __init__(self, config: DictConfig):
        self.nouscoder = nouscoder_options(config)
        with open_dict(config):
            config.trainer.v1.trainer_mode = self.base_trainer_mode
        self.temperature_schedule = TemperatureSchedule.from_config(
            self.nouscoder.temperature.stages, config.actor_rollout_ref.rollout.temperature
        )
        if not self.temperature_schedule.is_constant:
            select_staged_temperature_manager(config)
        offline_path = self.nouscoder.offline_filter.problem_ids_path
        earlier = self.nouscoder.online_filter.earlier_stage_solved
        self.problem_filter = SolvedProblemFilter(
            offline_excluded=load_problem_id_list(offline_path) if offline_path else None,
            online_enabled=bool(self.nouscoder.online_filter.enable),
            solved_before=load_solved_problems(earlier) if earlier else None,
        )
        self.problem_sampler: ProblemFilterSampler | None = None
        self.solved_in_buffer = 0
        self.advantage_needs_response_ids = estimator_needs_response_ids(config.algorithm) or uses_multi_turn(config)
        self.negative_control = NegativeControl.from_config(self.nouscoder.get("negative_control"))
        self.sequence_tis = SequenceTISOptions.from_config(self.nouscoder.get("sequence_tis"))
        self.rollout_correction = active_rollout_correction(config)
        super().__init__(config)

    def _val_metrics_update(self, *args, **kwargs) -> dict[str, float]:
        """verl's validation statistics, the bootstrap vectorized (validation_bootstrap.py: the same figures)."""
        with vectorized_bootstrap():
            return super()._val_metrics_update(*args, **kwargs)

    def fit(self, agent_loop_manager):
        """verl's training loop; then the rollout's vLLM engines are shut down (rollout_shutdown.py)."""
        try:
            return super().fit(agent_loop_manager)
        finally:
            replicas = [replica for manager in self._rollout_server_managers() for replica in manager.get_replicas()]
            shut_down_vllm_engines(self.config.actor_rollout_ref.rollout.name, replicas)

    # ------------------------------ dynamic sampling ------------------------------

    def _build_replay_buffer(self):
        buffer = super()._build_replay_buffer()
        capped_cls = CAPPED_BUFFER_OF.get(type(buffer))
        if capped_cls is None:
            logger.warning(f"custom replay buffer {type(buffer).__name__}: nouscoder.dynamic_sampling is not applied")
            return buffer
        # verl chooses its buffer class from trainer_mode with no injection point that keeps its constructor
        # arguments; the capped classes only add methods, so the built buffer is specialised in place.
        buffer.__class__ = capped_cls
        capped = cast(CappedGroupFilterMixin, buffer)
        max_rounds = self.nouscoder.dynamic_sampling.max_extra_rounds
        capped.configure_dynamic_sampling(
            max_extra_prompts=None if max_rounds is None else int(max_rounds) * self.config.data.train_batch_size,
            pass_threshold=float(self.nouscoder.online_filter.pass_threshold),
            on_solved_problems=self._record_solved_in_buffer,
            max_failed_groups=self.nouscoder.dynamic_sampling.max_failed_groups,
        )
        return buffer

    def _record_solved_in_buffer(self, problem_ids: set[str]) -> None:
        self.solved_in_buffer += self.problem_filter.record_solved(problem_ids, self._current_data_epoch())

    # ------------------------------ data: offline / online filter ------------------------------

    def _init_dataloader(self):
        super()._init_dataloader()
        if self.problem_filter.offline_excluded or self.problem_filter.online_enabled:
            self._filter_train_dataloader()

    def _filter_train_dataloader(self) -> None:
        """Rebuild verl's train dataloader over ``ProblemFilterSampler`` and size epochs by what is left."""
        dataframe = self.train_dataset.dataframe
        extra_infos = dataframe["extra_info"] if "extra_info" in dataframe.column_names else [None] * len(dataframe)
        self.problem_sampler = ProblemFilterSampler(
            self.train_dataloader.sampler, dataset_problem_ids(extra_infos), self.problem_filter
        )
        self.train_dataloader = StatefulDataLoader(
            dataset=self.train_dataset,
            batch_size=self.train_dataloader.batch_size,
            num_workers=self.config.data["dataloader_num_workers"],
            drop_last=True,
            collate_fn=collate_fn,
            sampler=self.problem_sampler,
        )
        active_rows = self.problem_sampler.active_count(0)
        ids = self.problem_sampler.problem_ids
        carried = sum(problem in self.problem_filter.solved_before for problem in ids)
        logger.info(
            f"nouscoder filter: {len(ids) - active_rows} of {len(ids)} training rows excluded: "
            f"{len(ids) - active_rows - carried} by the offline list, {carried} solved in an earlier stage "
            "(nouscoder.online_filter.earlier_stage_solved)"
        )
        self._size_epochs(active_rows)

    def _size_epochs(self, active_rows: int) -> None:
        """steps_per_epoch (and, unless fixed by config, the total steps and LR horizon) for ``active_rows``."""
        train_batch_size = self.config.data.train_batch_size
        if active_rows < train_batch_size:
            raise ValueError(
                f"only {active_rows} training rows are left after the offline filter, fewer than "
                f"data.train_batch_size={train_batch_size}; shorten nouscoder.offline_filter.problem_ids_path's list"
            )
        self.steps_per_epoch = active_rows // train_batch_size
        if self.config.trainer.total_training_steps is not None:
            return
        self.total_training_steps = self.steps_per_epoch * self.config.trainer.total_epochs
        with open_dict(self.config):
            for optim_path in ("actor_rollout_ref.actor.optim", "critic.optim"):
                optim = OmegaConf.select(self.config, optim_path)
                if optim is not None:
                    optim.total_training_steps = self.total_training_steps * self.parameter_sync_step

    def _current_data_epoch(self) -> int:
        return max(self.problem_sampler.epoch, 0) if self.problem_sampler is not None else 0

    # ------------------------------ temperature stages ------------------------------

    def current_temperature(self) -> float:
        return self.temperature_schedule.temperature_at(self.global_steps)

    def on_step_begin(self):
        super().on_step_begin()
        with open_dict(self.config):
            self.config.actor_rollout_ref.rollout.temperature = self.current_temperature()
        if isinstance(self.replay_buffer, CappedGroupFilterMixin):
            self.replay_buffer.begin_step()

    def _next_train_batch(self, num_prompts: int | None = None) -> TensorDict:
        batch = super()._next_train_batch(num_prompts)
        if not self.temperature_schedule.is_constant:
            attach_temperature(batch, self.current_temperature())
        return batch

    # ------------------------------ advantage inputs ------------------------------

    def _compute_advantage(self, batch: KVBatchMeta, metrics: dict) -> KVBatchMeta:
        """verl's advantage step, given the response ids and true lengths when the estimator needs them, inside the
        negative control when one is on (negative_control.py).

        verl's ``_compute_advantage`` reads ``batch.keys`` in order and hands the rows unchanged to the estimator
        (non-``grpo`` estimators bypass its multi-trajectory regrouping), so ``responses`` read for the same keys
        are row-aligned with what the estimator receives.
        """
        if self.negative_control.mode is None:
            batch = self._advantage_with_inputs(batch, metrics)
        else:
            with self.negative_control.around_advantage(batch, self.global_steps, metrics):
                batch = self._advantage_with_inputs(batch, metrics)
        if self.rollout_correction is not None:
            self._sequence_tis(batch, metrics, self.rollout_correction)
        return batch

    def _advantage_with_inputs(self, batch: KVBatchMeta, metrics: dict) -> KVBatchMeta:
        if not self.advantage_needs_response_ids:
            return super()._compute_advantage(batch, metrics)
        fields = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["responses"])
        with provide_advantage_inputs(advantage_inputs_from_fields(fields)):
            return super()._compute_advantage(batch, metrics)

    def _sequence_tis(self, batch: KVBatchMeta, metrics: dict, correction: DictConfig) -> None:
        """Both forms' sequence weights as metrics; with ``rollout_is=sequence`` and the length-normalised form,
        verl's ``rollout_is_weights`` replaced by it (sequence_tis.py)."""
        fields = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["old_log_probs", "rollout_log_probs", "response_mask"],
        )
        nested_mask = fields["response_mask"]
        padded = fields.to_padded_tensor()
        log_ratio_sum, lengths = sequence_log_ratios(
            padded["old_log_probs"], padded["rollout_log_probs"], padded["response_mask"].bool()
        )
        threshold = correction.get("rollout_is_threshold", 2.0)
        metrics.update(weight_metrics(log_ratio_sum, lengths, threshold))
        if correction.get("rollout_is") != "sequence" or self.sequence_tis.form == "product":
            return
        weights = sequence_weights(log_ratio_sum, lengths, self.sequence_tis.form, threshold)
        per_token = weights.to(padded["old_log_probs"].dtype).unsqueeze(-1) * padded["response_mask"]
        nested = TensorDict({"rollout_is_weights": response_to_nested(per_token, nested_mask)}, batch_size=len(batch))
        tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=nested)

    # ------------------------------ per-step observation ------------------------------

    def on_init_end(self):
        """verl's (the separate-async trainer's first weight sync), then the memory samplers of each role's workers
        (role_memory.py); a sampler that cannot start leaves the memory metrics out, never the run."""
        super().on_init_end()
        self.role_memory = None
        try:
            replicas = [replica for manager in self._rollout_server_managers() for replica in manager.get_replicas()]
            rollout = [worker for replica in replicas for worker in replica.workers]
            self.role_memory = RoleMemory.start({"trainer": self.actor_rollout_wg.workers, "rollout": rollout})
        except Exception as error:
            logger.warning(
                f"memory per role is not logged: its samplers did not start ({type(error).__name__}: {error})"
            )

    def step(self, metrics: dict, timing_raw: dict) -> KVBatchMeta:
        batch = super().step(metrics, timing_raw)
        self.observe_rollouts(self._fetch_rollout_batch(batch), metrics)
        role_memory: RoleMemory | None = getattr(self, "role_memory", None)
        if role_memory is not None:
            metrics.update(role_memory.step_metrics())
        return batch

    def _fetch_rollout_batch(self, batch: KVBatchMeta) -> DataProto:
        """The step's trained rollouts (padding rows added for DP balance left out) from TransferQueue."""
        keys = [key for key, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)]
        data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=ROLLOUT_FIELDS)
        return rollout_batch_from_fields(data)

    def observe_rollouts(self, rollouts: DataProto, metrics: dict) -> None:
        """Record fully solved problems and add this step's nouscoder, length_bias and grading metrics to ``metrics``.

        ``grading/*`` (``step_metrics.grading_metrics``) need ``extra_fields`` in ``rollouts.non_tensor_batch``; they
        are logged whatever ``nouscoder.metrics.enable`` says (cheap, and they carry the grader's internal errors).
        """
        pass_threshold = float(self.nouscoder.online_filter.pass_threshold)
        scores = rollouts.batch["token_level_scores"].sum(dim=-1).tolist()
        problem_ids = [(info or {}).get("problem_id") or "" for info in rollouts.non_tensor_batch["extra_info"]]
        solved = fully_solved_problems(rollouts.non_tensor_batch["uid"], problem_ids, scores, pass_threshold)
        solved.discard("")  # rows without extra_info.problem_id cannot be filtered
        newly_removed = self.problem_filter.record_solved(solved, self._current_data_epoch())
        newly_removed += self.solved_in_buffer
        self.solved_in_buffer = 0
        metrics.update(
            {
                "nouscoder/temperature": self.current_temperature(),
                "nouscoder/online_filter/newly_removed": float(newly_removed),
                "nouscoder/online_filter/removed_problems": float(self.problem_filter.online_removed_count),
                "nouscoder/online_filter/solved_in_earlier_stages": float(len(self.problem_filter.solved_before)),
            }
        )
        if isinstance(self.replay_buffer, CappedGroupFilterMixin):
            metrics.update(self.replay_buffer.take_stats().as_metrics())
        if "extra_fields" in rollouts.non_tensor_batch:
            extra_fields = rollouts.non_tensor_batch["extra_fields"]
            metrics.update(grading_metrics(reward_infos_from_extra_fields(extra_fields)))
            metrics.update(known_answer_metrics(extra_fields))
            trained_tokens = rollouts.batch["response_mask"].sum(dim=-1).tolist()
            metrics.update(multi_turn_metrics(extra_fields, trained_tokens))
        if self.nouscoder.metrics.enable:
            metrics.update(
                compute_step_metrics(
                    rollouts,
                    max_response_length=self.config.actor_rollout_ref.rollout.response_length,
                    pass_threshold=pass_threshold,
                    diversity_ngram=int(self.nouscoder.metrics.diversity_ngram),
                    diversity_max_groups=self.nouscoder.metrics.diversity_max_groups,
                )
            )

    # ------------------------------ a stop before the time limit ------------------------------

    def on_step_end(self):
        """verl's end of step (the separate-async trainer's weight sync), then the launcher's stop request, if any:
        save this step unless verl just did, acknowledge, and end the loop after this step is logged (stop_request.py)."""
        super().on_step_end()
        request = stop_requested()
        if request is None:
            return
        if not verl_saves_step(self.global_steps, self.total_training_steps, int(self.config.trainer.save_freq)):
            self._save_checkpoint()
        acknowledge(request, self.global_steps)
        logger.warning(f"stop request {request}: saved global_step_{self.global_steps}; ending after this step")
        self.total_training_steps = self.global_steps  # verl's loop runs while global_steps <= total_training_steps

    # ------------------------------ checkpoints ------------------------------

    def _save_checkpoint(self):
        folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
        self.problem_filter.save(folder)
        super()._save_checkpoint()

    def _load_checkpoint(self):
        super()._load_checkpoint()
        folder = self._resumed_checkpoint_folder()
        if folder is not None and not self.problem_filter.load(folder):
            logger.warning(f"{folder} has no nouscoder online-filter state; starting with no problem removed")

    def _resumed_checkpoint_folder(self) -> str | None:
        """The ``global_step_N`` folder verl resumed from (same rules as verl's ``_load_checkpoint``)."""
        if self.global_steps == 0:
            return None
        if self.config.trainer.resume_mode == "resume_path":
            folder = self.config.trainer.resume_from_path
        else:
            folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
        return folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)


@register_trainer("nouscoder_sync")
class NousCoderSyncTrainer(NousCoderTrainerMixin, PPOTrainerSync):
    """verl's colocated synchronous trainer with the NousCoder extensions."""

    base_trainer_mode = "sync"

    def get_llm_client(self):
        """verl's rollout client (with the CPU mode's known answers when they are on, cpu/known_answer_client.py)."""
        return self.llm_server_manager.get_client(client_cls=rollout_client_class(LLMServerClient, self.config))


@register_trainer("nouscoder_separate_async")
class NousCoderSeparateAsyncTrainer(NousCoderTrainerMixin, PPOTrainerSeparateAsync):
    """verl's separate-rollout asynchronous trainer with the NousCoder extensions."""

    base_trainer_mode = "separate_async"

    def get_llm_client(self):
        """verl's partial-rollout client, keeping the rollout server's ``extra_fields`` (extra_fields.py), with the
        CPU mode's known answers when they are on (cpu/known_answer_client.py)."""
        client_cls = rollout_client_class(ExtraFieldsClient, self.config)
        return self.standalone_server_manager.get_client(client_cls=client_cls)
