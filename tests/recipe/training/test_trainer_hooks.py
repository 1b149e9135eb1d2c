"""The nouscoder_* trainers, built from verl's own generated PPO config (no Ray, no GPU): registration,
buffer / temperature / dataloader wiring, per-step observation and checkpoint save/restore through verl's
real _save_checkpoint / _load_checkpoint with a stub actor worker group."""

import datasets
import pytest
import torch
import verl
from omegaconf import OmegaConf, open_dict
from torchdata.stateful_dataloader import StatefulDataLoader
from verl.trainer.ppo.v1 import PPOTrainerSeparateAsync, PPOTrainerSync, get_trainer_cls
from verl.utils.dataset.rl_dataset import collate_fn

from recipe.nouscoder.training.dynamic_sampling import CappedReplayBuffer, CappedReplayBufferAsync
from recipe.nouscoder.training.online_filter import STATE_FILE_NAME
from recipe.nouscoder.training.temperature import MANAGER_CLASS_FQN, TEMPERATURE_FIELD
from recipe.nouscoder.training.trainer import NousCoderSeparateAsyncTrainer, NousCoderSyncTrainer

VERL_CONFIG = f"{verl.__path__[0]}/trainer/config/_generated_ppo_trainer.yaml"
STAGES = [{"start_step": 1, "temperature": 0.7}, {"start_step": 3, "temperature": 1.1}]
PROBLEMS = ["p0", "p1", "p2", "p3", "p4", "p5"]


def make_config(tmp_path, mode: str = "nouscoder_sync", **nouscoder_overrides):
    config = OmegaConf.merge(
        OmegaConf.load(VERL_CONFIG), {"nouscoder": OmegaConf.load("configs/nouscoder/extensions.yaml")}
    )
    config.trainer.v1.trainer_mode = mode
    config.trainer.default_local_dir = str(tmp_path / "ckpt")
    config.data.train_batch_size = 2
    config.data.gen_batch_size = 1
    config.data.dataloader_num_workers = 0
    config.actor_rollout_ref.actor.ppo_mini_batch_size = 2
    config.actor_rollout_ref.rollout.response_length = 6
    config.algorithm.adv_estimator = "grpo"
    config.algorithm.filter_groups.enable = True
    config.nouscoder.temperature.stages = STAGES
    for key, value in nouscoder_overrides.items():
        OmegaConf.update(config, f"nouscoder.{key}", value)
    OmegaConf.set_struct(config, True)  # as hydra hands it over
    return config


class PromptDataset(torch.utils.data.Dataset):
    """RLHFDataset-shaped rows (raw_prompt, extra_info, dummy_tensor) with a HF ``dataframe``."""

    def __init__(self):
        self.dataframe = datasets.Dataset.from_list(
            [{"raw_prompt": [{"role": "user", "content": pid}], "extra_info": {"problem_id": pid}} for pid in PROBLEMS]
        )

    def __len__(self):
        return len(self.dataframe)

    def __getitem__(self, index):
        return {**self.dataframe[index], "dummy_tensor": torch.tensor([0], dtype=torch.uint8)}


class StubActorWorkerGroup:
    """Records what verl's checkpoint code asks the actor to save/load."""

    def __init__(self):
        self.calls = []

    def save_checkpoint(self, local_path, *args, **kwargs):
        self.calls.append(("save", local_path))

    def load_checkpoint(self, local_path, **kwargs):
        self.calls.append(("load", local_path))


def with_data(trainer):
    """What verl's _init_dataloader would have built (minus the tokenizer), then the nouscoder filter on top."""
    trainer.train_dataset = PromptDataset()
    trainer.train_dataloader = StatefulDataLoader(
        trainer.train_dataset,
        batch_size=1,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=torch.utils.data.SequentialSampler(trainer.train_dataset),
    )
    trainer.train_dataloader_it = None
    trainer.total_training_steps = 100
    trainer._filter_train_dataloader()
    trainer.actor_rollout_wg = StubActorWorkerGroup()
    return trainer


def test_registered_names_resolve_to_verl_trainers():
    assert get_trainer_cls("nouscoder_sync") is NousCoderSyncTrainer
    assert get_trainer_cls("nouscoder_separate_async") is NousCoderSeparateAsyncTrainer
    assert issubclass(NousCoderSyncTrainer, PPOTrainerSync)
    assert issubclass(NousCoderSeparateAsyncTrainer, PPOTrainerSeparateAsync)


def test_sync_trainer_wires_capped_buffer_temperature_manager_and_base_mode(tmp_path):
    config = make_config(tmp_path)
    trainer = NousCoderSyncTrainer(config)
    assert trainer.trainer_mode == "sync" and config.trainer.v1.trainer_mode == "sync"
    assert type(trainer.replay_buffer) is CappedReplayBuffer
    assert trainer.replay_buffer.max_extra_prompts == 3 * 2  # max_extra_rounds x train_batch_size
    assert trainer.replay_buffer.filter_groups_metric == "reward"
    assert config.actor_rollout_ref.rollout.agent.agent_loop_manager_class == MANAGER_CLASS_FQN


def test_separate_async_trainer_builds_with_async_capped_buffer(tmp_path):
    config = make_config(tmp_path, mode="nouscoder_separate_async")
    with open_dict(config):
        config.actor_rollout_ref.rollout.nnodes = 1
        config.actor_rollout_ref.rollout.n_gpus_per_node = 1
        config.actor_rollout_ref.rollout.checkpoint_engine.backend = "nccl"
        config.trainer.v1.separate_async.parameter_sync_step = 1
    trainer = NousCoderSeparateAsyncTrainer(config)
    assert trainer.trainer_mode == "separate_async"
    assert type(trainer.replay_buffer) is CappedReplayBufferAsync


def test_separate_async_setup_without_hybrid_engine_logs_at_info_level(tmp_path, monkeypatch):
    """verl's ``_setup`` logs ``logger.info(..., flush=True)`` when hybrid_engine=false: a TypeError at INFO level
    unless the recipe's logger fix is in place (every async config of the recipe sets hybrid_engine=false)."""
    from verl.trainer.ppo.v1 import trainer_base, trainer_separate_async

    config = make_config(tmp_path, mode="nouscoder_separate_async")
    with open_dict(config):
        config.actor_rollout_ref.hybrid_engine = False
        config.actor_rollout_ref.rollout.nnodes = 1
        config.actor_rollout_ref.rollout.n_gpus_per_node = 1
        config.actor_rollout_ref.rollout.checkpoint_engine.backend = "nccl"
        config.trainer.v1.separate_async.parameter_sync_step = 1
    trainer = NousCoderSeparateAsyncTrainer(config)

    class NoServers:
        server_addresses, server_handles, rollout_replicas = [], [], []

        def get_replicas(self):
            return []

    monkeypatch.setattr(
        trainer_base.PPOTrainer, "_setup", lambda self: setattr(self, "llm_server_manager", NoServers())
    )
    monkeypatch.setattr(trainer_separate_async.LLMServerManager, "create", lambda **kwargs: NoServers())
    monkeypatch.setattr(trainer_separate_async, "CheckpointEngineManager", lambda **kwargs: None)
    trainer_separate_async.logger.setLevel("INFO")
    trainer.actor_rollout_wg = None
    trainer._setup()  # reaches verl's logger.info(..., flush=True)
    assert trainer.current_mode.value == "trainer"


def test_config_errors_say_what_to_do(tmp_path):
    config = make_config(tmp_path)
    with open_dict(config):
        del config["nouscoder"]
    with pytest.raises(ValueError, match="nouscoder: extensions"):
        NousCoderSyncTrainer(config)
    config = make_config(tmp_path)
    with open_dict(config):
        config.actor_rollout_ref.rollout.agent.agent_loop_manager_class = "my.Manager"
    with pytest.raises(ValueError, match="agent_loop_manager_class"):
        NousCoderSyncTrainer(config)


def test_offline_filter_and_staged_temperature_on_submitted_prompts(tmp_path):
    (tmp_path / "solved.txt").write_text("p1\np4\n")
    trainer = with_data(
        NousCoderSyncTrainer(make_config(tmp_path, **{"offline_filter.problem_ids_path": str(tmp_path / "solved.txt")}))
    )
    assert trainer.steps_per_epoch == 2  # 4 rows left / train_batch_size 2

    submitted = []
    for step in (1, 2, 3):
        trainer.global_steps = step
        trainer.on_step_begin()
        assert trainer.config.actor_rollout_ref.rollout.temperature == {1: 0.7, 2: 0.7, 3: 1.1}[step]
        batch = trainer._next_train_batch()
        assert batch[TEMPERATURE_FIELD].tolist() == [trainer.config.actor_rollout_ref.rollout.temperature] * 2
        submitted += [info["problem_id"] for info in list(batch["extra_info"])]
    assert submitted == ["p0", "p2", "p3", "p5", "p0", "p2"]  # p1, p4 never; epoch 2 starts over


def test_observe_rollouts_records_solved_problems_and_logs_metrics(tmp_path, kit):
    trainer = with_data(NousCoderSyncTrainer(make_config(tmp_path)))
    trainer.global_steps = 3
    trainer.on_step_begin()
    trainer.replay_buffer.stats.dropped_groups = 2  # as if the buffer dropped two groups this step
    trainer._record_solved_in_buffer({"p5"})
    rollouts = kit.build(
        [
            kit.Group("u1", [kit.Rollout(1, [1, 2]), kit.Rollout(1, [3])], problem_id="p0"),
            kit.Group("u2", [kit.Rollout(1, [1, 2, 3]), kit.Rollout(-1, [4, 5, 6, 7])], problem_id="p2"),
        ]
    )
    metrics = {}
    trainer.observe_rollouts(rollouts, metrics)
    assert metrics["nouscoder/temperature"] == 1.1
    assert metrics["nouscoder/online_filter/newly_removed"] == 2.0  # p0 here + p5 dropped in the buffer
    assert metrics["nouscoder/online_filter/removed_problems"] == 2.0
    assert metrics["nouscoder/dynamic_sampling/dropped_groups"] == 2.0
    assert metrics["nouscoder/pass_rate"] == 0.75
    assert metrics["nouscoder/groups/solve_all"] == 1.0
    assert metrics["length_bias/incorrect_length_mean"] == 4.0
    assert trainer.problem_filter.solved_in_epoch == {"p0": 0, "p5": 0}


def test_fetch_rollout_batch_reads_transfer_queue_fields_without_padding_rows(tmp_path, tq_store):
    trainer = NousCoderSyncTrainer(make_config(tmp_path))
    stored = {
        "a_0_0": {"uid": "a", "responses": torch.tensor([5, 6, 7]), "rm_scores": torch.tensor([0.0, 0.0, 1.0])},
        "a_1_0": {"uid": "a", "responses": torch.tensor([8]), "rm_scores": torch.tensor([-1.0])},
        "pad_0": {"uid": "pad", "responses": torch.tensor([9]), "rm_scores": torch.tensor([0.0])},
    }
    for fields in stored.values():
        length = len(fields["responses"])
        fields.update(
            response_mask=torch.ones(length, dtype=torch.long),
            advantages=torch.zeros(length),
            extra_info={"problem_id": "pa"},
        )
    meta = tq_store.put_rows("train", stored, tags={"pad_0": {"is_padding": True}})
    rollouts = trainer._fetch_rollout_batch(meta)
    assert [keys for keys, _ in tq_store.get_calls] == [["a_0_0", "a_1_0"]]
    assert rollouts.batch["responses"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert rollouts.batch["token_level_scores"].sum(-1).tolist() == [1.0, -1.0]
    assert list(rollouts.non_tensor_batch["uid"]) == ["a", "a"]
    assert rollouts.non_tensor_batch["extra_info"][0] == {"problem_id": "pa"}


def test_online_filter_state_saved_with_verl_checkpoint_and_restored(tmp_path):
    trainer = with_data(NousCoderSyncTrainer(make_config(tmp_path)))
    trainer.global_steps = 1
    trainer._next_train_batch()  # consume p0, p1
    trainer.problem_filter.record_solved({"p3"}, epoch=0)
    trainer.global_steps = 4
    trainer._save_checkpoint()
    step_folder = tmp_path / "ckpt" / "global_step_4"
    assert (step_folder / STATE_FILE_NAME).exists() and (step_folder / "data.pt").exists()
    assert trainer.actor_rollout_wg.calls == [("save", str(step_folder / "actor"))]

    resumed = with_data(NousCoderSyncTrainer(make_config(tmp_path)))
    resumed._load_checkpoint()  # verl's resume_mode=auto finds global_step_4
    assert resumed.global_steps == 4
    assert resumed.problem_filter.solved_in_epoch == {"p3": 0}
    rest_of_epoch = [list(resumed._next_train_batch()["extra_info"]) for _ in range(2)]
    next_epoch = [list(resumed._next_train_batch()["extra_info"]) for _ in range(3)]
    ids = [[info["problem_id"] for info in batch] for batch in rest_of_epoch + next_epoch]
    assert ids == [["p2", "p3"], ["p4", "p5"], ["p0", "p1"], ["p2", "p4"], ["p5", "p0"]]  # p3 gone from epoch 1


class RecordingCheckpointManager:
    """The sync trainer's weight sync (verl's on_step_end), recorded."""

    def __init__(self):
        self.synced = []

    def update_weights(self, global_steps):
        self.synced.append(global_steps)


@pytest.mark.parametrize(("save_freq", "saves"), [(5, 1), (3, 0)])
def test_a_stop_request_saves_the_step_unless_verl_did_and_ends_the_loop_after_it(
    tmp_path, monkeypatch, save_freq, saves
):
    """stop_request.py: the launcher's file exists at the end of step 3; verl's fit saved step 3 itself only when
    save_freq divides it. After verl's on_step_end (the weight sync), the trainer saves through verl's real
    _save_checkpoint when verl did not, writes <file>.saved with the step, and lowers the step total to end fit's loop."""
    request = tmp_path / "stop_request_dapo_32k"
    monkeypatch.setenv("NOUSCODER_STOP_REQUEST", str(request))
    config = make_config(tmp_path)
    with open_dict(config):
        config.trainer.save_freq = save_freq
    trainer = with_data(NousCoderSyncTrainer(config))
    trainer.checkpoint_manager = RecordingCheckpointManager()
    trainer.timing_raw = {}
    trainer.global_steps, trainer.total_training_steps = 3, 10
    trainer.on_step_end()  # no request yet: nothing but verl's sync
    assert trainer.checkpoint_manager.synced == [3] and trainer.actor_rollout_wg.calls == []
    assert trainer.total_training_steps == 10 and not request.with_name(request.name + ".saved").exists()
    request.write_text("save and stop\n")
    trainer.on_step_end()
    assert trainer.checkpoint_manager.synced == [3, 3]
    assert trainer.actor_rollout_wg.calls == [("save", str(tmp_path / "ckpt" / "global_step_3" / "actor"))] * saves
    assert request.with_name(request.name + ".saved").read_text() == "3\n"
    assert trainer.total_training_steps == 3  # verl's loop runs while global_steps <= total_training_steps
