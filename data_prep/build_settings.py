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


KNOWN_TEST_COUNTS = {("release_v6", "2024-08-01", "2025-05-01"): 454, ("release_v5", "2024-08-01", "2025-02-01"): 279}
"""Published sizes of LiveCodeBench test windows. v6: the NousCoder blog ("LiveCodeBench v6 (08/01/2024-05/01/2025)
consisting of 454 problems"). v5: DeepCoder's (its model card: "LiveCodeBench v5 (8/1/24-2/1/25)"), 279 problems in
the test data rLLM released for it (rllm-org/rllm ``rllm/data/test/code/livecodebench.json`` at commit d3c3c8f3,
"changed lcb to use aug 24 to jan 25", written by ``rllm/data/preprocess/code/livecodebench.ipynb`` from
``release_v5`` with ``2024-08-01 <= contest_date < 2025-02-01``), the size of DeepCoder-Preview-Dataset's ``lcbv5``
test config too."""


@dataclass(frozen=True)
class LcbWindow:
    """A named LiveCodeBench test window: the release whose files are read and the contest dates kept."""

    lcb_version: str
    window: DateWindow
    description: str


LCB_WINDOWS = {
    "nouscoder_v6": LcbWindow(
        "release_v6", DateWindow("2024-08-01", "2025-05-01"), "LiveCodeBench v6, 2024-08-01 to 2025-05-01 (NousCoder)"
    ),
    "deepcoder_v5": LcbWindow(
        "release_v5",
        DateWindow("2024-08-01", "2025-02-01"),
        "LiveCodeBench v5, 2024-08-01 to 2025-02-01 (DeepCoder); problems before it train, as DeepCoder's "
        "'LiveCodeBench v5 (5/1/23-7/31/24)' training data",
    ),
}
"""The windows the seeds evaluate on. DeepCoder's v5 window is taken as rLLM's notebook builds it (``release_v5``,
dates in [2024-08-01, 2025-02-01)) rather than by reading DeepCoder's ``lcbv5`` test config: the same 279 problems,
converted from LiveCodeBench's own rows as the v6 window is (same public/private tests, same metadata), so the two
windows differ only in their dates."""


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
