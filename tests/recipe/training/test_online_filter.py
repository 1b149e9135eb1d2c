"""Offline list + online removal of fully solved problems, through a real StatefulDataLoader, with save/restore."""

import json

import pytest
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from torchdata.stateful_dataloader.sampler import RandomSampler

from recipe.nouscoder.training.online_filter import (
    STATE_FILE_NAME,
    ProblemFilterSampler,
    SolvedProblemFilter,
    dataset_problem_ids,
    fully_solved_problems,
    load_problem_id_list,
    load_solved_problems,
)

PROBLEMS = [f"p{index}" for index in range(8)]


def make_loader(problem_filter: SolvedProblemFilter, seed: int = 0) -> StatefulDataLoader:
    dataset = [{"problem_id": problem_id} for problem_id in PROBLEMS]
    base = RandomSampler(dataset, generator=torch.Generator().manual_seed(seed))
    sampler = ProblemFilterSampler(base, dataset_problem_ids(dataset), problem_filter)
    return StatefulDataLoader(dataset, batch_size=1, sampler=sampler, drop_last=True, collate_fn=lambda rows: rows[0])


def test_fully_solved_problems_from_dataproto_batch(kit):
    batch = kit.build(
        [
            kit.Group("u1", [kit.Rollout(1, [1]), kit.Rollout(1, [2])], problem_id="solved"),
            kit.Group("u2", [kit.Rollout(1, [1]), kit.Rollout(-1, [2])], problem_id="mixed"),
            kit.Group("u3", [kit.Rollout(-1, [1]), kit.Rollout(-1, [2])], problem_id="failed"),
        ]
    )
    scores = batch.batch["token_level_scores"].sum(-1).tolist()
    problem_ids = [info["problem_id"] for info in batch.non_tensor_batch["extra_info"]]
    assert fully_solved_problems(batch.non_tensor_batch["uid"], problem_ids, scores) == {"solved"}
    # acc-style 1/0 rewards use the same rule (above 0 passes)
    assert fully_solved_problems(["a", "a"], ["q", "q"], [1.0, 1.0]) == {"q"}
    assert fully_solved_problems(["a", "a"], ["q", "q"], [1.0, 0.0]) == set()


def test_load_problem_id_list_formats(tmp_path):
    (tmp_path / "ids.json").write_text(json.dumps(["a", 7]))
    (tmp_path / "obj.json").write_text(json.dumps({"problem_ids": ["b"]}))
    (tmp_path / "ids.txt").write_text("# solved by the base model\nc\n\nd\n")
    assert load_problem_id_list(tmp_path / "ids.json") == {"a", "7"}
    assert load_problem_id_list(tmp_path / "obj.json") == {"b"}
    assert load_problem_id_list(tmp_path / "ids.txt") == {"c", "d"}


def test_solved_problem_leaves_only_later_epochs_and_offline_never_enters():
    problem_filter = SolvedProblemFilter(offline_excluded={"p0"})
    loader = make_loader(problem_filter)
    iterator = iter(loader)
    epoch0_first = [next(iterator)["problem_id"] for _ in range(3)]
    problem_filter.record_solved({"p5"}, epoch=0)  # solved during epoch 0 ...
    epoch0_rest = [row["problem_id"] for row in iterator]
    epoch0 = epoch0_first + epoch0_rest
    assert sorted(epoch0) == sorted(set(PROBLEMS) - {"p0"})  # ... still seen in the rest of epoch 0
    epoch1 = [row["problem_id"] for row in loader]
    assert sorted(epoch1) == sorted(set(PROBLEMS) - {"p0", "p5"})


def test_removed_set_and_position_survive_save_restore(tmp_path):
    problem_filter = SolvedProblemFilter()
    loader = make_loader(problem_filter)
    first_epoch = [row["problem_id"] for row in loader]
    problem_filter.record_solved({"p1", "p2"}, epoch=0)
    iterator = iter(loader)  # epoch 1 without p1, p2
    seen = [next(iterator)["problem_id"] for _ in range(2)]
    loader_state = loader.state_dict()
    problem_filter.save(tmp_path)
    expected_rest = [row["problem_id"] for row in iterator]

    restored_filter = SolvedProblemFilter()
    assert restored_filter.load(tmp_path)
    assert json.loads((tmp_path / STATE_FILE_NAME).read_text()) == {
        "solved_in_epoch": {"p1": 0, "p2": 0},
        "solved_before": [],
    }
    restored_loader = make_loader(restored_filter)
    restored_loader.load_state_dict(loader_state)
    restored_rest = [row["problem_id"] for row in restored_loader]
    assert restored_rest == expected_rest
    assert sorted(seen + restored_rest) == sorted(set(first_epoch) - {"p1", "p2"})
    assert restored_filter.online_removed_count == 2


def test_an_epoch_with_every_problem_filtered_says_what_to_do():
    problem_filter = SolvedProblemFilter(offline_excluded=set(PROBLEMS[:4]))
    loader = make_loader(problem_filter)
    assert sorted(row["problem_id"] for row in loader) == PROBLEMS[4:]
    problem_filter.record_solved(set(PROBLEMS[4:]), epoch=0)
    with pytest.raises(RuntimeError, match="online_filter.enable=False"):
        list(loader)


def test_the_next_stage_starts_without_what_the_earlier_stages_solved(tmp_path):
    """32k -> 40k: the 32k stage's saved state (its own solved problems and those handed to it) is the 40k stage's
    earlier_stage_solved; those problems are out from the 40k stage's first epoch, and its own state hands all of them
    on again."""
    first_stage = SolvedProblemFilter(solved_before={"p7"})  # a stage before the 32k one
    first_stage.record_solved({"p1", "p7"}, epoch=0)  # p7 is not counted twice
    assert first_stage.online_removed_count == 1
    first_stage.record_solved({"p2"}, epoch=2)
    state = first_stage.save(tmp_path / "global_step_9")
    assert load_solved_problems(state) == {"p1", "p2", "p7"}

    second_stage = SolvedProblemFilter(solved_before=load_solved_problems(state))
    epoch0 = [row["problem_id"] for row in make_loader(second_stage)]
    assert sorted(epoch0) == sorted(set(PROBLEMS) - {"p1", "p2", "p7"})
    second_stage.record_solved({"p3"}, epoch=0)
    handed_on = second_stage.save(tmp_path / "second")
    assert load_solved_problems(handed_on) == {"p1", "p2", "p3", "p7"}
    restored = SolvedProblemFilter()  # a resume of the second stage without the override keeps them out too
    restored.load(tmp_path / "second")
    assert restored.is_excluded("p1", 0) and not restored.is_excluded("p3", 0) and restored.is_excluded("p3", 1)
    (tmp_path / "list.txt").write_text("p4\np5\n")  # a plain list works as well
    assert load_solved_problems(tmp_path / "list.txt") == {"p4", "p5"}
    assert not SolvedProblemFilter(online_enabled=False, solved_before={"p4"}).is_excluded("p4", 0)
