"""Known answers: a test/demo option of the CPU mode that gives a random tiny model a learning signal.

A randomly initialised model never writes a fenced program, so every rollout is ``no_code`` (reward -1), every group
has zero reward variance and every step trains on zero advantage. With ``nouscoder.cpu.known_answers.fraction = f >
0`` a fraction f of the responses to prompts of the bundled sample (``data_prep/sample``) are replaced with one of
that problem's bundled programs (references, accepted variants and wrong ones), as a fenced python block. The
replaced text is still graded by the real grader and its log-probs are the model's own, so groups get mixed
rewards and non-zero advantages through the normal path.

It is off unless asked for (``fraction: 0.0``). This module decides which responses are replaced and with what;
``known_answer_client`` puts the programs into the rollout, in verl's rollout client, so the option works the same
with every rollout engine (``hf_cpu``, ``vllm``). Every response of a run with the option on is marked in its
``extra_fields["known_answer"]`` (the program's kind, ``""`` when sampled), which the recipe's trainers log as
``nouscoder/known_answers/*`` so a run's metrics say when it was on.

Which requests are replaced is deterministic per problem: the k-th request for a problem is replaced when
``floor((k + 1) f) > floor(k f)`` (an even spread at rate f), and replaced requests cycle through that problem's
programs in an order shuffled once with ``seed``.

Scripted turns for the multi-turn agent loop (``by_turn``, off when empty): ``by_turn[t]`` names the class of
program the t-th assistant turn of a conversation gets (``failing``: wrong answer, runtime error, compile error or
no code; ``passing``: reference or accepted; the last entry repeats), e.g. ``[failing, passing]`` writes a wrong
first answer and a correct revision after the feedback. The first turn is replaced at rate f as above; a later turn
is replaced exactly when the conversation's previous assistant turn was a replaced one (its text is one of the
problem's programs), so a conversation is scripted from start to end or not at all. Turns are counted by the chat
markers of the tiny model's template (``<|im_start|>assistant``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from data_prep.sample import load_problems, load_solutions
from data_prep.sample.solutions import kind_selected
from recipe.nouscoder.cpu.tiny_model import TURN_END, TURN_START

"""Key of the mark in a response's ``extra_fields``: the program's kind, or ``""`` for a sampled response."""
KNOWN_ANSWER_KINDS = ("reference", "accepted", "wrong_answer", "runtime_error", "compile_error", "no_code")
"""Programs that finish at once: no time/memory/output-limit or hostile ones (a 15 s wait per rollout is no demo)."""
STATEMENT_SNIPPET_CHARS = 120
PROGRAM_CLASSES = {
    "failing": ("wrong_answer", "runtime_error", "compile_error", "no_code"),
    "passing": ("reference", "accepted"),
}
"""``by_turn`` entries and the kinds each stands for."""
ASSISTANT_TURN = f"{TURN_START}assistant\n"


@dataclass(frozen=True)
class KnownAnswerOptions:
    """``nouscoder.cpu.known_answers``."""

    fraction: float = 0.0
    """Fraction of responses to bundled-sample prompts that are replaced; 0 = off."""
    seed: int = 0
    """Seed of the per-problem order of the programs."""
    by_turn: tuple[str, ...] = ()
    """Multi-turn scripts: the program class of each assistant turn (module docstring); empty = off."""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.fraction) <= 1.0:
            raise ValueError(f"known_answers.fraction must be in [0, 1], got {self.fraction}")
        object.__setattr__(self, "by_turn", tuple(self.by_turn))
        unknown = sorted(set(self.by_turn) - set(PROGRAM_CLASSES))
        if unknown:
            raise ValueError(f"known_answers.by_turn entries must be in {sorted(PROGRAM_CLASSES)}, got {unknown}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> KnownAnswerOptions:
        values = dict(values or {})
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown known_answers option(s) {unknown}; known options are {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class KnownAnswer:
    kind: str
    """The program's kind in the sample (``reference``, ``wrong_answer``, ...)."""
    text: str
    """The response text: the program in a python fence (the bundled text for ``no_code``)."""


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _response_text(code: str | None, completion: str) -> str:
    return completion if code is None else f"```python\n{code.rstrip()}\n```"


class KnownAnswerBook:
    """The bundled sample's programs by problem, and the problem a prompt belongs to."""

    def __init__(self, options: KnownAnswerOptions, answers: dict[str, list[KnownAnswer]], snippets: dict[str, str]):
        self.options = options
        self.answers = answers
        self.snippets = snippets
        self._requests_seen: dict[str, int] = {}

    @classmethod
    def from_bundled_sample(cls, options: KnownAnswerOptions) -> KnownAnswerBook:
        answers: dict[str, list[KnownAnswer]] = {}
        for solution in load_solutions(kinds=KNOWN_ANSWER_KINDS):
            if not solution.needs_large_tests:
                answer = KnownAnswer(solution.kind, _response_text(solution.code, solution.completion))
                answers.setdefault(solution.problem_id, []).append(answer)
        for problem_id, programs in answers.items():
            random.Random(f"{options.seed}:{problem_id}").shuffle(programs)
        snippets = {
            problem.problem_id: _normalised(problem.statement)[:STATEMENT_SNIPPET_CHARS]
            for problem in load_problems(include_large=False)
        }
        return cls(options, answers, snippets)

    @property
    def enabled(self) -> bool:
        return self.options.fraction > 0

    def all_answers(self) -> list[KnownAnswer]:
        return [answer for programs in self.answers.values() for answer in programs]

    def problem_of(self, prompt_text: str) -> str | None:
        """The sample problem whose statement opens in ``prompt_text``, or None."""
        text = _normalised(prompt_text)
        return next((problem for problem, snippet in self.snippets.items() if snippet in text), None)

    def next_answer(self, prompt_text: str) -> KnownAnswer | None:
        """The program replacing this request's response, or None to sample it (see the module docstring)."""
        if not self.enabled:
            return None
        problem = self.problem_of(prompt_text)
        if problem is None or not self.answers.get(problem):
            return None
        turn = prompt_text.count(ASSISTANT_TURN) - 1 if self.options.by_turn else 0
        if turn > 0:
            return self._scripted_revision(problem, prompt_text, turn)
        seen = self._requests_seen.get(problem, 0)
        self._requests_seen[problem] = seen + 1
        fraction = float(self.options.fraction)
        if int((seen + 1) * fraction) == int(seen * fraction):
            return None
        return self._program(problem, int(seen * fraction), turn)

    def _program(self, problem: str, replaced_before: int, turn: int) -> KnownAnswer | None:
        """The ``replaced_before``-th program (cycling) of the problem, of ``by_turn``'s class for ``turn`` if set."""
        programs = self.answers[problem]
        if self.options.by_turn:
            kinds = set(PROGRAM_CLASSES[self.options.by_turn[min(turn, len(self.options.by_turn) - 1)]])
            programs = [program for program in programs if kind_selected(program.kind, kinds)]
        return programs[replaced_before % len(programs)] if programs else None

    def _scripted_revision(self, problem: str, prompt_text: str, turn: int) -> KnownAnswer | None:
        """Turn ``turn`` >= 1 of a scripted conversation: replaced iff the previous assistant turn was a program."""
        previous = prompt_text.rsplit(ASSISTANT_TURN, 2)[-2].split(TURN_END, 1)[0]
        if previous not in {program.text for program in self.answers[problem]}:
            return None
        key = f"{problem}#{turn}"
        seen = self._requests_seen.get(key, 0)
        self._requests_seen[key] = seen + 1
        return self._program(problem, seen, turn)
