"""recipe.nouscoder.cpu.known_answers: which responses the test/demo option replaces, and with what."""

import pytest

from data_prep.sample import load_problems
from recipe.nouscoder.cpu.known_answers import KNOWN_ANSWER_KINDS, KnownAnswerBook, KnownAnswerOptions


def prompt_of(problem_id: str) -> str:
    statement = next(
        problem.statement for problem in load_problems(include_large=False) if problem.problem_id == problem_id
    )
    return f"<|im_start|>user\n### Question:\n{statement}\n\n### Format: ...<|im_end|>\n<|im_start|>assistant\n"


def test_off_by_default_replaces_nothing():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions())
    assert not book.enabled
    assert all(book.next_answer(prompt_of("average_rainfall")) is None for _ in range(8))


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75, 1.0])
def test_a_fraction_of_each_problems_requests_is_replaced_evenly(fraction):
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=fraction))
    answers = [book.next_answer(prompt_of("average_rainfall")) for _ in range(8)]
    # after k requests, floor(k * fraction) were replaced: never bunched, never behind
    for k in range(9):
        assert sum(answer is not None for answer in answers[:k]) == int(k * fraction)


def test_replacements_cycle_through_the_problems_programs_and_are_fenced():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=1.0, seed=3))
    programs = book.answers["average_rainfall"]
    served = [book.next_answer(prompt_of("average_rainfall")) for _ in range(2 * len(programs))]
    assert served == programs + programs
    assert {answer.kind for answer in programs} >= {"reference", "wrong_answer"}
    assert all(answer.text.startswith("```python\n") for answer in programs if answer.kind != "no_code")
    assert {answer.kind for answer in book.all_answers()} <= {
        *KNOWN_ANSWER_KINDS,
        *(kind for kind in (a.kind for a in book.all_answers()) if kind.startswith("accepted_")),
    }


def test_prompts_of_other_problems_or_sources_are_not_replaced():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=1.0))
    assert book.problem_of(prompt_of("coin_purse")) == "coin_purse"
    assert book.next_answer("<|im_start|>user\nReverse a linked list.<|im_end|>\n") is None


def test_unknown_options_and_fractions_out_of_range_are_rejected():
    with pytest.raises(ValueError, match="unknown known_answers option"):
        KnownAnswerOptions.from_mapping({"fractoin": 0.5})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        KnownAnswerOptions(fraction=1.5)
