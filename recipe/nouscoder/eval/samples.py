"""Model samples to grade: the ``--completions`` file or the generation cache, one JSON object a line.

Keys: ``problem_id``, ``completion`` (model text), optional ``sample_index`` (else numbered 0, 1, ... in
order of appearance within the problem), ``response_tokens`` (generated tokens), ``finish_reason`` (vLLM's;
``"length"`` = truncated at the token limit) or ``truncated`` (bool); multi-turn samples (``--turns``) also
``first_completion`` (the first turn's text) and ``multi_turn`` (the conversation's record). The generation cache
writes this layout, so generations can be re-graded elsewhere with ``--completions``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recipe.nouscoder.eval.cache import SampleKey


@dataclass(frozen=True, slots=True)
class Sample:
    """One completion of one problem."""

    problem_id: str
    sample_index: int
    completion: str
    response_tokens: int | None = None
    truncated: bool = False
    first_completion: str | None = None
    """Multi-turn samples: the first turn's text (graded as the single-turn answer)."""
    multi_turn: dict[str, Any] | None = None
    """Multi-turn samples: the conversation's record (turns, public results, stop reason, feedback tokens)."""

    @property
    def key(self) -> SampleKey:
        return self.problem_id, self.sample_index

    @classmethod
    def from_record(cls, record: dict[str, Any], sample_index: int) -> Sample:
        tokens = record.get("response_tokens")
        truncated = bool(record.get("truncated", False)) or record.get("finish_reason") == "length"
        return cls(
            str(record["problem_id"]),
            sample_index,
            record["completion"],
            tokens,
            truncated,
            record.get("first_completion"),
            record.get("multi_turn"),
        )

    def first_turn(self) -> Sample:
        """The first turn of a multi-turn sample as a sample of its own (its single-turn answer).

        It was cut at the token limit when the conversation ended right there, unchecked, for lack of tokens.
        """
        record = self.multi_turn or {}
        tokens = (record.get("turn_tokens") or [None])[0]
        cut = (
            record.get("turns") == 1
            and record.get("stop_reason") == "token_budget"
            and not record.get("public_verdicts", [None])[0]
        )
        return Sample(self.problem_id, self.sample_index, self.first_completion or "", tokens, cut)


def read_completions_file(path: Path) -> list[Sample]:
    """Every line of ``path`` as a ``Sample``.

    Raises:
        ValueError: naming ``FILE:LINE`` for a line that is not a JSON object with ``problem_id`` and a string
            ``completion``, or that repeats a ``(problem_id, sample_index)``.
    """
    samples: list[Sample] = []
    seen: set[SampleKey] = set()
    next_index: dict[str, int] = defaultdict(int)
    with path.open(encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = _parse_line(path, line_number, line)
            problem_id = str(record["problem_id"])
            sample_index = int(record.get("sample_index", next_index[problem_id]))
            next_index[problem_id] = max(next_index[problem_id], sample_index + 1)
            sample = Sample.from_record(record, sample_index)
            if sample.key in seen:
                raise ValueError(f"{path}:{line_number}: duplicate sample {sample.key} (problem_id, sample_index)")
            seen.add(sample.key)
            samples.append(sample)
    return samples


def _parse_line(path: Path, line_number: int, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{line_number}: not valid JSON ({exc.msg}); fix or remove the line") from exc
    if not isinstance(record, dict) or "problem_id" not in record or not isinstance(record.get("completion"), str):
        raise ValueError(f'{path}:{line_number}: a completion line needs "problem_id" and a string "completion"')
    return record
