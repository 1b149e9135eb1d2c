"""Grade samples with the training grader (``reward_fns``), appending each result to a resumable cache.

The program is the last fenced python block (``reward_fns.extract.extract_code``), run by
``reward_fns.sandbox.GraderPool`` with the same ``GraderConfig`` as the training reward, in input order through
``reward_fns.batch_grading`` (the library behind the grading CLI). Samples already in the cache are skipped, so
a killed run resumes where it stopped (a sample whose text changed is graded again). When grading ends, the cache is
rewritten to hold exactly this evaluation's samples, once each: an ``--out`` reused with other completions, another
``--n`` or changed texts keeps no stale rows.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from recipe.nouscoder.eval.cache import AppendOnlyJsonl, keep_only, read_records
from recipe.nouscoder.eval.data import iter_ground_truths
from recipe.nouscoder.eval.samples import Sample
from reward_fns.batch_grading import Completion, grade_in_order, output_record
from reward_fns.extract import extract_code
from reward_fns.sandbox import GraderPool
from reward_fns.types import GraderConfig, GradeResult, GroundTruthError, Problem

logger = logging.getLogger(__name__)


def sample_record(sample: Sample) -> dict[str, Any]:
    """What the graded cache keeps of a sample besides its grade (not the text)."""
    return {
        "problem_id": sample.problem_id,
        "sample_index": sample.sample_index,
        "response_tokens": sample.response_tokens,
        "response_chars": len(sample.completion),
        "truncated": sample.truncated,
        "completion_sha256": completion_digest(sample.completion),
    }


def completion_digest(completion: str) -> str:
    """Identifies the graded text: a sample whose text changed since it was graded is graded again."""
    return hashlib.sha256(completion.encode()).hexdigest()


def prepare(sample: Sample, problem: Problem | GroundTruthError) -> Completion:
    """A ``Completion`` for ``grade_in_order``: runnable, or decided (bad ground truth, no code block)."""
    record = sample_record(sample)
    if isinstance(problem, GroundTruthError):
        return Completion(0, record, decided=GradeResult.bad_ground_truth(problem))
    code = extract_code(sample.completion)
    if code is None:
        return Completion(0, record, decided=GradeResult.no_code(problem))
    return Completion(0, record, code=code, problem=problem)


GroundTruthView = Callable[[str], str]
"""What is graded of a ground truth (e.g. HumanEval+'s base suite alone: ``humanevalplus.base_suite``)."""


def completions_in_file_order(
    pending: Sequence[Sample], data_path: Path, view: GroundTruthView | None = None
) -> Iterator[Completion]:
    """Pending samples grouped by problem, problems in parquet order; one problem's tests parsed at a time."""
    by_problem: dict[str, list[Sample]] = defaultdict(list)
    for sample in pending:
        by_problem[sample.problem_id].append(sample)
    for problem_id, ground_truth in iter_ground_truths(data_path, set(by_problem)):
        problem: Problem | GroundTruthError
        try:
            problem = Problem.from_ground_truth(view(ground_truth) if view else ground_truth)
        except GroundTruthError as exc:
            problem = exc
            logger.error("problem %s: bad ground truth: %s; its samples are internal_error", problem_id, exc)
        for sample in sorted(by_problem[problem_id], key=lambda s: s.sample_index):
            yield prepare(sample, problem)


def grade_pending(
    samples: Sequence[Sample],
    data_path: Path,
    config: GraderConfig,
    workers: int,
    cache_path: Path,
    view: GroundTruthView | None = None,
) -> int:
    """Grade the samples not yet in ``cache_path`` and append their results, then keep only ``samples``' records in
    it; returns how many were graded."""
    done = read_records([cache_path])
    pending = [
        sample
        for sample in samples
        if sample.key not in done or done[sample.key].get("completion_sha256") != completion_digest(sample.completion)
    ]
    if pending:
        with AppendOnlyJsonl(cache_path) as cache, GraderPool(workers, config) as pool:
            graded = grade_in_order(completions_in_file_order(pending, data_path, view), pool)
            for completion, result in tqdm(graded, total=len(pending), desc="grading", unit="sample", file=sys.stderr):
                cache.append(output_record(completion, result))
    dropped = keep_only(cache_path, (sample.key for sample in samples))
    if dropped:
        logger.warning("%s: dropped %d rows of samples not in this evaluation or graded again", cache_path, dropped)
    return len(pending)
