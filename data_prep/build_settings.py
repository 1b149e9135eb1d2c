"""What a build of the training mix is asked for (``BuildConfig``, the LiveCodeBench ``DateWindow``) and what it
counts on the way (``BuildStats``, which ``data_prep.manifest`` turns into manifest.json)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from data_prep.decontamination import ContaminationFlag, DecontaminationConfig
from data_prep.filters import QualityConfig
from data_prep.ground_truth import as_malformed
from data_prep.problem import Problem, SkipLog

DEFAULT_TRAIN_SOURCES = ("lcb", "deepcoder_taco", "deepcoder_primeintellect")
"""DeepCoder's mix: LiveCodeBench before the test window, and DeepCoder's own cleaned TACO-verified and
PrimeIntellect SYNTHETIC-1 configs (the "~24K unique problem-tests pairs" of the DeepCoder model card)."""


@dataclass(frozen=True)
class DateWindow:
    """LiveCodeBench split by contest date: test = [test_start, test_end), train = before ``train_before``."""

    test_start: str = "2024-08-01"
    test_end: str = "2025-05-01"
    train_before: str | None = None
    """Defaults to ``test_start``: every problem before the test window trains."""

    def split_of(self, contest_date: str) -> str | None:
        day = contest_date[:10]
        if self.test_start <= day < self.test_end:
            return "test"
        if day < (self.train_before or self.test_start):
            return "train"
        return None


KNOWN_TEST_COUNTS = {("release_v6", "2024-08-01", "2025-05-01"): 454}
"""Published sizes of LiveCodeBench test windows (NousCoder blog: "LiveCodeBench v6 (08/01/2024-05/01/2025) consisting
of 454 problems")."""


def known_test_count(lcb_version: str, window: DateWindow) -> int | None:
    """The published size of this release's test window, or None when nothing is known (no warning then)."""
    if window.train_before not in (None, window.test_start):
        return None
    return KNOWN_TEST_COUNTS.get((lcb_version, window.test_start, window.test_end))


@dataclass(frozen=True)
class BuildConfig:
    out_dir: Path
    mode: str = "auto"
    """``auto`` (local if a directory is given, else the hub; an error when neither can be read), ``local``,
    ``hub`` or ``sample`` (the 44 bundled problems, only when asked for)."""
    local_dir: Path | None = None
    source_dirs: dict[str, Path] = field(default_factory=dict)
    train_sources: tuple[str, ...] = DEFAULT_TRAIN_SOURCES
    revisions: dict[str, str] = field(default_factory=dict)
    """Repository -> branch, tag or commit to read (hub) or to insist on (local copy)."""
    lcb_version: str = "release_v6"
    window: DateWindow = field(default_factory=DateWindow)
    expected_test_count: int | None = None
    """Warn when the test split has another size; None = the known size of the window (``known_test_count``)."""
    prompt_variant: str = "nouscoder"
    quality: QualityConfig = field(default_factory=QualityConfig)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    near_duplicate_threshold: float = 0.8
    minhash_permutations: int = 64
    minhash_bands: int = 16
    shingle_words: int = 5
    limit_per_source: int | None = None
    row_group_mb: int = 64
    verified: Path | None = None
    """Results of ``python -m data_prep.verify_solutions``: problems none of whose gold solutions pass are dropped."""
    public_tests: int = 0
    """Problems without public tests (TACO, SYNTHETIC-1, the sample): their first N tests become public and leave
    the hidden set (``Problem.with_public_tests``); 0 = none (the hidden sets stay as the sources give them)."""


@dataclass
class BuildStats:
    """Everything the manifest counts. ``seen``/``kept``/``dropped`` by (split, family); ``table`` by source name."""

    seen: Counter = field(default_factory=Counter)
    kept: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    table: dict[str, Counter] = field(default_factory=dict)
    public_tests: Counter = field(default_factory=Counter)
    """(split, ``native`` | ``from_hidden`` | ``none``) -> rows written."""
    contamination: list[ContaminationFlag] = field(default_factory=list)
    near_duplicates: list[dict[str, Any]] = field(default_factory=list)
    exact_duplicates: list[dict[str, str]] = field(default_factory=list)
    pair_duplicates: Counter = field(default_factory=Counter)
    """(dropped source name, kept source name, ``exact``|``near``) -> count."""
    gold: dict[str, Counter] = field(default_factory=dict)
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Source name -> what was read: revision (commit), the one asked for, files or hub streaming."""
    skips: SkipLog = field(default_factory=SkipLog)
    warnings: list[str] = field(default_factory=list)

    def count(self, problem: Problem, key: str) -> None:
        self.table.setdefault(problem.source_name, Counter())[key] += 1

    def drop(self, split: str, problem: Problem, reason: str) -> None:
        self.dropped[(split, problem.source, reason)] += 1
        self.count(problem, f"dropped/{reason}")

    def written(self, split: str, problem: Problem, written: Problem) -> None:
        """``problem`` went to ``split`` as ``written`` (public tests from the source, moved from the hidden set, or
        none)."""
        self.kept[(split, problem.source)] += 1
        self.count(problem, f"kept/{split}")
        kind = "native" if problem.public_tests else ("from_hidden" if written.public_tests else "none")
        self.public_tests[(split, kind)] += 1

    def row_failed(self, split: str, problem: Problem, error: Exception) -> None:
        """A fault while filtering or writing a converted problem: it is reported as a malformed row of its source
        (so counted once, as malformed, not as read) and the build goes on."""
        self.seen[(split, problem.source)] -= 1
        self.table[problem.source_name]["read"] -= 1
        self.skips.record(problem.source_name, problem.problem_id, as_malformed(error))
