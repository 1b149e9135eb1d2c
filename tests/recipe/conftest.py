"""Shared fixtures of tests/recipe: real verl DataProto rollout batches with made-up numbers, and an in-memory
stand-in for TransferQueue's key-value API (``kv_batch_get`` / ``kv_batch_put``) as verl's V1 trainer calls it."""

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transfer_queue
from tensordict import TensorDict
from transfer_queue import KVBatchMeta
from verl import DataProto
from verl.utils.tensordict_utils import list_of_dict_to_tensordict


@dataclass
class Rollout:
    """One response of a group: its sequence reward, generated token ids and (optional) advantage."""

    score: float
    tokens: list[int]
    advantage: float = 0.0
    masked: bool = False  # advantage zeroed by overlong / conditional truncation masking


@dataclass
class Group:
    """The rollouts of one prompt."""

    uid: str
    rollouts: list[Rollout]
    problem_id: str = ""
    extra: dict = field(default_factory=dict)


def build_rollout_batch(groups: list[Group], response_width: int | None = None, prompt_width: int = 3) -> DataProto:
    """DataProto laid out like verl's rollout batch after reward and advantage computation.

    batch: prompts (bs, P), responses (bs, L) right-padded with 0, response_mask (bs, L), attention_mask
    (bs, P+L), token_level_scores / token_level_rewards / rm_scores (bs, L) with the reward on the last
    response token, advantages (bs, L) = the rollout's advantage on its tokens (0 where masked).
    non_tensor_batch: uid, extra_info {"problem_id"}.
    """
    rollouts = [(group, rollout) for group in groups for rollout in group.rollouts]
    width = response_width or max(len(rollout.tokens) for _, rollout in rollouts)
    rows = len(rollouts)
    responses = torch.zeros(rows, width, dtype=torch.long)
    response_mask = torch.zeros(rows, width, dtype=torch.long)
    scores = torch.zeros(rows, width, dtype=torch.float32)
    advantages = torch.zeros(rows, width, dtype=torch.float32)
    for row, (_, rollout) in enumerate(rollouts):
        length = len(rollout.tokens)
        if length > width:
            raise ValueError(f"rollout of {length} tokens does not fit response_width={width}")
        responses[row, :length] = torch.tensor(rollout.tokens, dtype=torch.long)
        response_mask[row, :length] = 1
        scores[row, max(length - 1, 0)] = rollout.score
        advantages[row, :length] = 0.0 if rollout.masked else rollout.advantage
    prompts = torch.ones(rows, prompt_width, dtype=torch.long)
    attention_mask = torch.cat([torch.ones(rows, prompt_width, dtype=torch.long), response_mask], dim=1)
    tensors = TensorDict(
        {
            "prompts": prompts,
            "responses": responses,
            "response_mask": response_mask,
            "attention_mask": attention_mask,
            "token_level_scores": scores,
            "token_level_rewards": scores.clone(),
            "rm_scores": scores.clone(),
            "advantages": advantages,
        },
        batch_size=[rows],
    )
    uids = np.array([group.uid for group, _ in rollouts], dtype=object)
    extra_info = np.array([{"problem_id": group.problem_id or group.uid, **group.extra} for group, _ in rollouts])
    return DataProto(batch=tensors, non_tensor_batch={"uid": uids, "extra_info": extra_info})


@pytest.fixture
def kit() -> SimpleNamespace:
    """``kit.Group``, ``kit.Rollout`` and ``kit.build`` (``build_rollout_batch``) for tests of this folder."""
    return SimpleNamespace(Group=Group, Rollout=Rollout, build=build_rollout_batch)


class InMemoryTransferQueue:
    """Rows by (partition_id, key) -> {field: value}; the two calls verl's V1 trainer makes on them.

    Like TransferQueue, ``kv_batch_get`` returns the requested fields that exist (verl asks for optional ones such
    as ``values``), rows in the order of ``keys``, variable-length tensors as a jagged nested tensor (verl's own
    ``list_of_dict_to_tensordict``); ``kv_batch_put`` stores each row of the given fields under its key and
    returns the keys' ``KVBatchMeta`` (tags, all stored fields).
    """

    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}
        self.tags: dict[tuple[str, str], dict] = {}
        self.get_calls: list[tuple[list[str], list[str]]] = []

    def put_rows(self, partition_id: str, rows: dict[str, dict], tags: dict[str, dict] | None = None) -> KVBatchMeta:
        """Store ``rows`` ({key: {field: value}}); the ``KVBatchMeta`` of those keys, as the trainer would hold it."""
        for key, fields in rows.items():
            self.rows.setdefault((partition_id, key), {}).update(fields)
            self.tags[(partition_id, key)] = (tags or {}).get(key, {})
        return self.meta(partition_id, list(rows))

    def meta(self, partition_id: str, keys: list[str]) -> KVBatchMeta:
        fields = sorted({name for key in keys for name in self.rows[(partition_id, key)]})
        tags = [self.tags.get((partition_id, key), {}) for key in keys]
        return KVBatchMeta(keys=list(keys), tags=tags, partition_id=partition_id, fields=fields)

    def row(self, partition_id: str, key: str) -> dict:
        return self.rows[(partition_id, key)]

    def kv_batch_get(self, keys: list[str], partition_id: str, select_fields: list[str]) -> TensorDict:
        self.get_calls.append((list(keys), list(select_fields)))
        rows = [self.rows[(partition_id, key)] for key in keys]
        present = [name for name in select_fields if all(name in row for row in rows)]
        return list_of_dict_to_tensordict([{name: row[name] for name in present} for row in rows])

    def kv_batch_put(self, keys: list[str], partition_id: str, fields: TensorDict) -> KVBatchMeta:
        for name, value in fields.items():
            per_row = value.unbind(0) if isinstance(value, torch.Tensor) else list(value)
            for key, row_value in zip(keys, per_row, strict=True):
                self.rows.setdefault((partition_id, key), {})[name] = row_value
        return self.meta(partition_id, keys)


@pytest.fixture
def tq_store(monkeypatch) -> InMemoryTransferQueue:
    """An ``InMemoryTransferQueue`` installed as ``transfer_queue.kv_batch_get`` / ``kv_batch_put``."""
    store = InMemoryTransferQueue()
    monkeypatch.setattr(transfer_queue, "kv_batch_get", store.kv_batch_get)
    monkeypatch.setattr(transfer_queue, "kv_batch_put", store.kv_batch_put)
    return store


@pytest.fixture(scope="session")
def sample_data_dir(tmp_path_factory) -> Path:
    """train/test parquet of the bundled sample, built once by the real data_prep CLI entry."""
    from data_prep.build_deepcoder_mix import main as build_data

    out = Path(tmp_path_factory.mktemp("sample_data"))
    assert build_data(["--from", "sample", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(sample_data_dir: Path) -> Path:
    """The CPU mode's tiny Qwen2 + tokenizer, built once from the sample's prompts."""
    from recipe.nouscoder.cpu.tiny_model import build_tiny_model

    out = sample_data_dir.parent / "tiny_qwen2"
    build_tiny_model([sample_data_dir / "train.parquet", sample_data_dir / "test.parquet"], out)
    return out
