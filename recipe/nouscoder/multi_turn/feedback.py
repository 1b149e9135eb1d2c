"""The feedback message after a failed public check, and the "done" reply.

A message is built from a ``PublicCheck`` only: the public test that failed and what the program printed on it.
Nothing of the hidden tests reaches this module. ``full`` format (the default)::

    Your program failed public test 2 of 3: wrong answer.

    Input:
    ```text
    3
    1 2 3
    ```
    Expected output:
    ```text
    6
    ```
    Your output:
    ```text
    5
    ```
    Fix the program and reply with the complete corrected program in a ```python code block.

``verdict`` format: the first line and the closing instruction only. Every shown field is cut to
``feedback_field_chars`` characters (inputs and outputs keep their head, a stderr tail its end), with a line saying
so (the program's output reaches this module already cut by the grader, so no total length is claimed). Shown text is
fenced as ``text`` blocks, never as python (the grader's extraction rules never take them for a program).
"""

from __future__ import annotations

from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import PublicCheck
from reward_fns.extract import extract_code, fenced_block, strip_reasoning
from reward_fns.types import GraderConfig, Verdict


def _verdict_phrase(check: PublicCheck, limits: GraderConfig) -> str:
    phrases = {
        Verdict.WRONG_ANSWER: "wrong answer",
        Verdict.TIME_LIMIT: f"time limit exceeded (limit {limits.time_limit_s:g} s per test)",
        Verdict.MEMORY_LIMIT: f"memory limit exceeded (limit {limits.memory_limit_mb} MB)",
        Verdict.RUNTIME_ERROR: "runtime error",
        Verdict.OUTPUT_LIMIT: f"output limit exceeded (limit {limits.output_limit_mb} MB)",
    }
    return phrases.get(check.verdict, str(check.verdict).replace("_", " "))


def _fence(text: str) -> str:
    return fenced_block(text.removesuffix("\n"), language="text")


def _cut(text: str, limit: int, keep: str = "head") -> str:
    """``text`` cut to ``limit`` characters, keeping its head (or tail), with a line saying it was cut."""
    if len(text) <= limit:
        return text
    if keep == "tail":
        return f"... (cut: only the last {limit} characters are shown)\n{text[-limit:]}"
    return f"{text[:limit]}\n... (cut: only the first {limit} characters are shown)"


def _closing(options: MultiTurnOptions) -> str:
    closing = "Fix the program and reply with the complete corrected program in a ```python code block."
    if options.allow_done:
        closing += f" If you are sure your last program is right, reply with {options.done_marker} alone instead."
    return closing


def feedback_message(check: PublicCheck, options: MultiTurnOptions, limits: GraderConfig) -> str:
    """The user message sent after ``check`` failed (module docstring)."""
    if check.verdict is Verdict.NO_CODE:
        headline = "I found no Python program in your answer (a ```python code block)."
    elif check.verdict is Verdict.COMPILE_ERROR:
        headline = "Your program does not compile."
    else:
        headline = (
            f"Your program failed public test {check.passed + 1} of {check.total}: {_verdict_phrase(check, limits)}."
        )
    parts = [headline]
    if options.feedback_format == "full":
        parts.extend(_details(check, options.feedback_field_chars))
    parts.append(_closing(options))
    return "\n\n".join(parts)


def _details(check: PublicCheck, limit: int) -> list[str]:
    details = []
    if check.verdict is Verdict.COMPILE_ERROR and check.detail:
        details.append("Error:\n" + _fence(_cut(check.detail, limit, keep="tail")))
    test = check.failed_test
    if test is not None:
        functional = test.testtype == "functional"
        details.append(
            ("Arguments (one JSON value per line):\n" if functional else "Input:\n") + _fence(_cut(test.input, limit))
        )
        if check.verdict is Verdict.WRONG_ANSWER:
            details.append(
                ("Expected return value:\n" if functional else "Expected output:\n") + _fence(_cut(test.output, limit))
            )
            if check.actual_output is not None:
                label = "Your return value:\n" if functional else "Your output:\n"
                details.append(label + _fence(_cut(check.actual_output, limit)))
    if check.stderr_tail:
        details.append("End of stderr:\n" + _fence(_cut(check.stderr_tail, limit, keep="tail")))
    return details


def is_done_reply(text: str, options: MultiTurnOptions) -> bool:
    """True when ``allow_done`` is on and the answer (reasoning removed) has no python block and ends with the marker."""
    answer = strip_reasoning(text)
    if not options.allow_done or answer is None or extract_code(answer) is not None:
        return False
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    return bool(lines) and lines[-1] == options.done_marker
