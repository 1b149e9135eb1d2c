"""Codeforces problem ids and ratings for the rows of DeepCoder's ``codeforces`` test config.

DeepCoder's rows carry the problem text and tests; the Codeforces problem id (contest + index, e.g. ``2013C``), which
the rating method needs, and the problem rating, which the per-band pass rates need, are not in rLLM's template.
rLLM built those rows from ``Qwen/CodeElo``'s test split, keeping the problems with examples, and wrote their ids, in
row order, to ``metadata_cf.json``; its rating script pairs results with that list by position (rllm-org/rllm
``rllm/data/preprocess/code/codeforces.ipynb``: ``contest_ids.append(entry["problem_id"])``;
``scripts/benchmark/codeforces/metadata_cf.json``: 408 ids; ``scripts/benchmark/cf_elo_calc.py``
``format_grouped_contest_data``). Either file can be given (``--codeforces-metadata``):

- rLLM's ``metadata_cf.json``: a JSON list of ids, one per row in row order (their count must equal the rows');
- ``Qwen/CodeElo`` test rows (JSON Lines or a JSON array of objects; the dataset card: ``description``, ``input``,
  ``output``, ``interaction`` and ``note`` in Markdown, ``interaction`` non-empty exactly for interactive problems;
  rLLM's notebook reads ``problem_id``, ``description``, ``tags`` and ``examples`` from them; ``rating`` is read when
  present): matched to a row by its description, the text rLLM's template starts with, compared by its words
  (``data_prep.statements.statement_words``), so the two files need not share an order. A row's own ``metadata``
  (``problem_id``, ``rating``) wins over both.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from data_prep.filters import INTERACTIVE_TAG
from data_prep.problem import Problem
from data_prep.raw_files import iter_json_records
from data_prep.statements import statement_words

PROBLEM_ID = re.compile(r"^(\d+)([A-Z][A-Z0-9]*)$")
"""A Codeforces problem id: the contest number and the problem index (``2013C``, ``1972D1``), as rLLM's
``format_grouped_contest_data`` splits it."""
TEMPLATE_INPUT_HEADER = "\nInput Format:"
"""Where the description ends in rLLM's Codeforces template (``CODEFORCES_TEMPLATE``)."""


def contest_of(problem_id: str) -> int | None:
    """The contest number of a Codeforces problem id (``codeforces/2013C`` or ``2013C``), None when it is not one."""
    match = PROBLEM_ID.match(problem_id.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


@dataclass
class CodeforcesMetadata:
    """Ids (and ratings, tags, interactive flags) by row position or by description."""

    by_position: list[str] = field(default_factory=list)
    by_description: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def read(cls, path: Path) -> CodeforcesMetadata:
        """Raises ValueError naming the file when it is neither layout."""
        text = path.read_text(encoding="utf-8").lstrip()
        if (
            text.startswith("[")
            and isinstance(parsed := _json_or_none(text), list)
            and all(isinstance(item, str) for item in parsed)
        ):
            bad = [item for item in parsed if not PROBLEM_ID.match(item)]
            if bad:
                raise ValueError(f"{path}: {len(bad)} entries are not Codeforces problem ids, e.g. {bad[:3]}")
            return cls(by_position=parsed, source=f"{path} (ids in row order)")
        rows: dict[str, dict[str, Any]] = {}
        for position, row in enumerate(iter_json_records(path)):
            record = json.loads(row) if isinstance(row, str) else row
            if not isinstance(record, dict) or not isinstance(record.get("problem_id"), str):
                raise ValueError(
                    f"{path}: record {position} has no problem_id; pass rLLM's metadata_cf.json (a list of ids) or "
                    "Qwen/CodeElo's test rows (objects with problem_id, description, rating, tags, interaction)"
                )
            rows[description_key(str(record.get("description") or ""))] = record
        return cls(by_description=rows, source=f"{path} (Qwen/CodeElo rows, matched by description)")


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def description_key(description: str) -> str:
    """A description's words, hashed: the same text in either file gives the same key."""
    return hashlib.sha256(" ".join(statement_words(description)).encode()).hexdigest()


def attach(problems: list[Problem], metadata: CodeforcesMetadata | None) -> tuple[list[Problem], dict[str, Any]]:
    """The problems with their Codeforces ids (``codeforces/<contest><index>``), ratings (``difficulty``) and
    tags; and a report (how each id was found, the rows without one).

    Raises:
        ValueError: an id list whose length differs from the rows'.
    """
    if metadata and metadata.by_position and len(metadata.by_position) != len(problems):
        raise ValueError(
            f"{metadata.source} lists {len(metadata.by_position)} ids but the codeforces config has {len(problems)} "
            "rows; it belongs to another revision of the data"
        )
    out, found, missing = [], {"row_metadata": 0, "position": 0, "description": 0}, []
    for position, problem in enumerate(problems):
        own = problem.problem_id if PROBLEM_ID.match(problem.problem_id) else None
        record = _record(problem, position, metadata)
        codeforces_id = own or (record or {}).get("problem_id")
        if own:
            found["row_metadata"] += 1
        elif record is not None:
            found["position" if metadata and metadata.by_position else "description"] += 1
        if not codeforces_id:
            missing.append(problem.problem_id)
            out.append(problem)
            continue
        record = record or {}
        tags = [*problem.tags, *(str(tag).strip().lower() for tag in record.get("tags") or [])]
        if str(record.get("interaction") or "").strip():
            tags.append(INTERACTIVE_TAG)
        rating = problem.difficulty or str(record.get("rating") or "")
        out.append(replace(problem, problem_id=f"codeforces/{codeforces_id}", difficulty=rating, tags=tags))
    report = {"source": metadata.source if metadata else None, "found_by": found, "without_id": missing}
    return out, report


def _record(problem: Problem, position: int, metadata: CodeforcesMetadata | None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if metadata.by_position:
        return {"problem_id": metadata.by_position[position]}
    description = problem.statement.split(TEMPLATE_INPUT_HEADER, 1)[0]
    return metadata.by_description.get(description_key(description))
