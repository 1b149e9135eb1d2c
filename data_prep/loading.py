"""Where rows come from: a local copy of each repository, the hub, or the bundled sample."""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from data_prep import ground_truth
from data_prep.problem import MalformedRow, Problem, SkipLog
from data_prep.sources import Source, iter_local_rows, lcb_row_date, local_files, problem_id_for


class SourceUnavailable(RuntimeError):
    """A source cannot be read at all (missing directory, unreachable hub); the message says what to pass."""


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """False when HF_HUB_OFFLINE / HF_DATASETS_OFFLINE is set or the hub endpoint does not accept a connection."""
    if any(
        os.environ.get(name, "").lower() in ("1", "true", "yes") for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    ):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection(
            (endpoint.hostname or "huggingface.co", endpoint.port or 443), timeout=timeout_s
        ).close()
    except OSError:
        return False
    return True


def hub_revision(repo: str, revision: str | None = None) -> str:
    """The commit sha that ``revision`` (a branch, tag or sha; default the main branch) of a dataset repository
    names on the hub now; every file of the repository is then read at that sha."""
    from huggingface_hub import HfApi

    try:
        return str(HfApi().dataset_info(repo, revision=revision).sha)
    except Exception as exc:  # noqa: BLE001 - any hub failure (network, 404, auth) means: cannot pin this repository
        raise SourceUnavailable(
            f"cannot resolve revision {revision or 'main'!r} of {repo} on the hub ({type(exc).__name__}: {exc}). "
            "Check the name and --revision, or pass --local-dir ROOT with a downloaded copy."
        ) from exc


def local_revision(repo_dir: Path, files: list[Path]) -> str | None:
    """The commit the local copy was downloaded at: ``huggingface-cli download --local-dir`` writes
    ``.cache/huggingface/download/<file>.metadata`` whose first line is the commit sha (``huggingface_hub
    _local_folder.py``). None when no file has one; ``"a, b"`` when files come from different commits."""
    commits = set()
    for path in files:
        metadata = repo_dir / ".cache" / "huggingface" / "download" / f"{path.relative_to(repo_dir)}.metadata"
        if metadata.is_file():
            with open(metadata, encoding="utf-8") as handle:
                commits.add(handle.readline().strip())
    return ", ".join(sorted(commits)) if commits else None


def local_rows(source: Source, repo_dir: Path, lcb_files: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    try:
        files = local_files(source, repo_dir, lcb_files)
    except FileNotFoundError as exc:
        raise SourceUnavailable(str(exc)) from exc
    return iter_local_rows(source, files)


def hub_rows(source: Source, lcb_files: tuple[str, ...], revision: str | None = None) -> Iterator[tuple[str, Any]]:
    """Rows from the hub at ``revision`` (a commit sha: see ``hub_revision``). Parquet repositories stream through
    ``datasets``; LiveCodeBench's JSON Lines files (its dataset script no longer runs in current ``datasets``) and
    TACO-verified's single JSON array (which the ``json`` builder would load whole) are downloaded file by file and
    streamed like local files."""
    try:
        if source.file_format == "parquet":
            import datasets

            stream = iter(
                datasets.load_dataset(
                    source.repo, name=source.config, split=source.split, streaming=True, revision=revision
                )
            )
            first = next(stream, None)
            rows = itertools.chain([first] if first is not None else [], stream)
            return ((f"{source.split}:{position}", row) for position, row in enumerate(rows))
        from huggingface_hub import hf_hub_download

        names = lcb_files if source.name == "lcb" else ("taco_verified.json",)
        paths = [Path(hf_hub_download(source.repo, name, repo_type="dataset", revision=revision)) for name in names]
    except (OSError, ValueError, ConnectionError) as exc:
        raise SourceUnavailable(
            f"source {source.name!r}: cannot read {source.describe()} from the hub ({type(exc).__name__}: {exc}). "
            "Pass --local-dir ROOT with a downloaded copy of each repository (--from sample builds only the 44-problem "
            "bundled sample, a demo)."
        ) from exc
    return iter_local_rows(source, paths)


def iter_problems(
    source: Source,
    rows: Iterator[tuple[str, Any]],
    skips: SkipLog,
    wanted_date: Callable[[str], bool] | None = None,
) -> Iterator[Problem]:
    """Convert raw rows to problems; a row that cannot be converted, for whatever reason, is recorded in ``skips``
    (source, row id, reason) and the stream goes on.

    ``wanted_date`` (LiveCodeBench only) selects rows by contest date before their tests are decoded.
    """
    for fallback_id, raw in rows:
        problem = convert_row(source, fallback_id, raw, skips, wanted_date)
        if problem is not None:
            yield problem


def convert_row(
    source: Source,
    fallback_id: str,
    raw: Any,
    skips: SkipLog,
    wanted_date: Callable[[str], bool] | None = None,
) -> Problem | None:
    """One raw row as a problem; None when it is malformed (recorded in ``skips``) or not wanted. Integers up to
    ``ground_truth.MAX_INTEGER_DIGITS`` digits are read exactly."""
    row_id = f"{source.name}/{fallback_id}"
    try:
        with ground_truth.long_integers():
            row = ground_truth.loads_json(raw, "row")
            if not isinstance(row, dict):
                raise MalformedRow("bad_json", f"row is a {type(row).__name__}, expected an object")
            row_id = problem_id_for(source, row, fallback_id)
            if wanted_date is not None and not wanted_date(lcb_row_date(row)):
                return None
            return source.convert(row, row_id)
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever one row does is that row's fault, reported by id
        skips.record(source.name, row_id, ground_truth.as_malformed(error))
        return None


def sample_problems(include_large: bool = True) -> list[Problem]:
    """The bundled sample (``data_prep.sample``) as problems; its ground truth is already in the DESIGN layout.

    Ids stay the sample's own (so they match ``load_solutions``), ``source`` is the sample's ``DATA_SOURCE``."""
    from data_prep.sample import DATA_SOURCE, load_problems, load_solutions

    references = {solution.problem_id: solution.code or "" for solution in load_solutions(kinds=["reference"])}
    problems = []
    for sample in load_problems(include_large=include_large):
        truth = sample.ground_truth
        problems.append(
            Problem(
                source_name="sample",
                solutions=[references[sample.problem_id]] if sample.problem_id in references else [],
                problem_id=sample.problem_id,
                source=DATA_SOURCE,
                origin="data_prep/sample",
                statement=sample.statement,
                tests=[dict(test) for test in truth["tests"]],
                fn_name=truth.get("fn_name") or sample.fn_name or None,
                starter_code=sample.starter_code or "",
                title=sample.title or "",
                difficulty=str(sample.difficulty or ""),
                contest_date=sample.contest_date or "",
                platform=sample.platform or "",
            )
        )
    return problems
