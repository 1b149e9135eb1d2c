"""Per-step metrics on a hand-made DataProto batch, every value computed by hand."""

import math

from recipe.nouscoder.training.step_metrics import compute_step_metrics

MAX_LEN = 6


def test_step_metrics_by_hand(kit):
    R = kit.Rollout
    batch = kit.build(
        [
            # all pass; lengths 2, 4
            kit.Group("a", [R(1, [1, 2], 0.0), R(1, [1, 2, 3, 4], 0.0)]),
            # mixed; the wrong one is truncated (6 tokens = max) and its advantage masked
            kit.Group("b", [R(1, [5, 6, 7], 1.0), R(-1, [5, 6, 7, 8, 9, 10], -1.0, masked=True)]),
            # none pass; lengths 5, 1
            kit.Group("c", [R(-1, [1, 1, 1, 1, 1], 0.0), R(-1, [2], 0.0)]),
        ],
        response_width=MAX_LEN,
    )
    metrics = compute_step_metrics(batch, max_response_length=MAX_LEN, diversity_ngram=2)

    # correct lengths 2, 4, 3 ; incorrect lengths 6, 5, 1
    assert metrics["length_bias/correct_length_mean"] == 3.0
    assert metrics["length_bias/correct_length_median"] == 3.0
    assert metrics["length_bias/incorrect_length_mean"] == 4.0
    assert metrics["length_bias/incorrect_length_median"] == 5.0
    assert math.isclose(metrics["length_bias/truncation_rate"], 1 / 6, rel_tol=1e-6)
    # one masked response out of 6 (group b has differing rewards, the truncated one has zero advantage)
    assert math.isclose(metrics["length_bias/masked_advantage_fraction"], 1 / 6, rel_tol=1e-6)
    assert metrics["nouscoder/pass_rate"] == 0.5
    assert metrics["nouscoder/groups/total"] == 3
    assert metrics["nouscoder/groups/solve_all"] == 1
    assert metrics["nouscoder/groups/solve_none"] == 1
    assert metrics["nouscoder/groups/mixed"] == 1
    # bigram sets: a {12} vs {12,23,34} -> 1 - 1/3 ; b {56,67} vs {56,67,78,89,9 10} -> 1 - 2/5 ;
    # c {11} vs {(2,)} -> 1
    expected_diversity = ((1 - 1 / 3) + (1 - 2 / 5) + 1.0) / 3
    assert math.isclose(metrics["nouscoder/diversity/within_group"], expected_diversity)


def test_pass_threshold_moves_the_pass_rule(kit):
    R = kit.Rollout
    batch = kit.build([kit.Group("a", [R(0.5, [1]), R(2.0, [2])])])
    assert compute_step_metrics(batch, max_response_length=4)["nouscoder/pass_rate"] == 1.0
    metrics = compute_step_metrics(batch, max_response_length=4, pass_threshold=1.0)
    assert metrics["nouscoder/pass_rate"] == 0.5
    assert metrics["nouscoder/groups/mixed"] == 1


def test_known_answer_metrics_appear_only_when_the_cpu_option_marked_rollouts():
    from tensordict import NonTensorData

    from recipe.nouscoder.training.step_metrics import known_answer_metrics

    assert known_answer_metrics([{"reward_extra_info": {}}, {}]) == {}
    marked = [{"known_answer": "reference"}, NonTensorData({"known_answer": ""}), {"known_answer": "wrong_answer"}, {}]
    assert known_answer_metrics(marked) == {
        "nouscoder/known_answers/active": 1.0,
        "nouscoder/known_answers/replaced": 2.0,
        "nouscoder/known_answers/replaced_fraction": 0.5,
    }
