"""pass@k and aggregation against hand-computed values (Chen et al. 2021, eq. 1)."""

import pytest

from recipe.nouscoder.eval.metrics import GradedSample, ProblemResult, default_ks, pass_at_k, summarize


def codex_product_form(n: int, c: int, k: int) -> float:
    """1 - prod_{i=n-c+1}^{n} (1 - k / i): the paper's numerically stable form, written as a loop."""
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 1, 1 / 4),
        (4, 1, 2, 1 - 3 / 6),  # C(3,2)/C(4,2)
        (4, 2, 2, 1 - 1 / 6),  # C(2,2)/C(4,2)
        (4, 3, 2, 1.0),  # fewer than k wrong samples: some draw of 2 always holds a correct one
        (5, 2, 3, 1 - 1 / 10),  # C(3,3)/C(5,3)
        (16, 4, 8, 1 - 495 / 12870),  # C(12,8)/C(16,8)
        (4, 0, 1, 0.0),
        (4, 0, 4, 0.0),
        (4, 4, 1, 1.0),
        (4, 4, 4, 1.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_hand_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(codex_product_form(n, c, k), abs=1e-12)


def test_pass_at_k_matches_product_form_on_a_grid() -> None:
    for n in range(1, 17):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(codex_product_form(n, c, k), abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 1, 5), (1, 0, 2), (4, 1, 0), (4, 5, 1), (4, -1, 1)])
def test_pass_at_k_rejects_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"pass@|must lie"):
        pass_at_k(n, c, k)


def test_default_ks_are_powers_of_two_and_n() -> None:
    assert default_ks(1) == [1]
    assert default_ks(8) == [1, 2, 4, 8]
    assert default_ks(12) == [1, 2, 4, 8, 12]


def _problem(problem_id: str, difficulty: str, date: str, verdicts: list[str], lengths: list[int]) -> ProblemResult:
    result = ProblemResult(problem_id, difficulty, "atcoder", date)
    for index, (verdict, length) in enumerate(zip(verdicts, lengths, strict=True)):
        result.samples.append(GradedSample(problem_id, index, verdict, length, truncated=length >= 100))
    return result


def test_summary_breakdowns_verdicts_lengths_and_overlong() -> None:
    problems = [
        _problem(
            "a",
            "easy",
            "2024-08-03T00:00:00",
            ["accepted", "accepted", "wrong_answer", "time_limit"],
            [10, 20, 100, 50],
        ),
        _problem("b", "hard", "2024-09-10T00:00:00", ["wrong_answer"] * 4, [100, 100, 40, 60]),
        _problem("c", "hard", "2024-09-30T00:00:00", ["accepted"] * 4, [30, 30, 30, 30]),
    ]
    summary = summarize(problems, [1, 2, 4])
    # a: c=2 of 4, b: 0, c: 4 of 4
    assert summary["pass_at_k"]["1"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert summary["pass_at_k"]["2"] == pytest.approx(((1 - 1 / 6) + 0.0 + 1.0) / 3)
    assert summary["pass_at_k"]["4"] == pytest.approx(2 / 3)
    assert summary["by_difficulty"]["easy"]["pass_at_k"]["1"] == pytest.approx(0.5)
    assert summary["by_difficulty"]["hard"]["pass_at_k"]["1"] == pytest.approx(0.5)
    assert summary["by_difficulty"]["hard"]["problems"] == 2
    assert set(summary["by_contest_month"]) == {"2024-08", "2024-09"}
    assert summary["by_contest_month"]["2024-09"]["pass_at_k"]["4"] == pytest.approx(0.5)
    assert summary["verdicts"] == {"accepted": 6, "wrong_answer": 5, "time_limit": 1}
    assert summary["overlong_ratio"] == pytest.approx(3 / 12)
    assert summary["length"]["correct_mean"] == pytest.approx((10 + 20 + 4 * 30) / 6)
    assert summary["length"]["incorrect_mean"] == pytest.approx((100 + 50 + 100 + 100 + 40 + 60) / 6)
    low, high = summary["pass_at_1_ci95"]
    assert 0.0 <= low <= summary["pass_at_k"]["1"] <= high <= 1.0


def test_summary_rejects_k_above_the_fewest_samples() -> None:
    problems = [
        _problem("a", "easy", "2024-08-03", ["accepted"] * 2, [1, 1]),
        _problem("b", "easy", "2024-08-03", ["accepted"] * 4, [1] * 4),
    ]
    with pytest.raises(ValueError, match="n=2"):
        summarize(problems, [1, 4])


def test_pass_at_k_plot_labels_the_published_points_on_a_k_axis_that_reaches_8() -> None:
    """With n = 4 samples the published Pass@8 still sits on a labelled k = 8 tick, and both points say what they are."""
    from recipe.nouscoder.eval.metrics import GradedSample, ProblemResult
    from recipe.nouscoder.eval.report import pass_at_k_figure

    problem = ProblemResult("p", "easy", "leetcode", "2024-09-01")
    problem.samples.extend(GradedSample("p", i, "accepted" if i < 2 else "wrong_answer", 100, False) for i in range(4))
    axes = pass_at_k_figure([problem], 4).axes[0]
    assert [label.get_text() for label in axes.get_xticklabels()] == ["1", "2", "4", "8"]
    assert axes.get_xlim()[1] > 8
    notes = {text.get_text() for text in axes.texts}
    assert notes == {"pass@1 60.79%", "pass@8 75.11%"}  # Qwen3-14B, NousCoder blog Tables 1-2 (the v6 base model)
