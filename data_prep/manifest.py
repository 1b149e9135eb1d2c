"""``manifest.json`` of a build, and the summary (with the per-source table) printed at its end.

The manifest records what was read (repository, config, the commit actually read and the one asked for, files),
every count (per split and family, per filter, per source name), malformed rows, duplicates by source pair, the
contamination report and gold-solution verdicts, and a content hash per split, so a run can prove which data it used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from data_prep.sources import SOURCES

if TYPE_CHECKING:
    from data_prep.build_settings import BuildConfig, BuildStats

REPORT_LIST_LIMIT = 2000
TABLE_COLUMNS = ("rows", "malformed", "train", "test", "filtered", "gold", "contaminated", "dup_within", "dup_across")


def build_manifest(
    config: BuildConfig, mode: str, lcb_files: tuple[str, ...], stats: BuildStats, hashes: dict[str, str]
) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for split in ("train", "test"):
        by_source = {source: n for (s, source), n in sorted(stats.kept.items()) if s == split}
        seen = {source: n for (s, source), n in sorted(stats.seen.items()) if s == split}
        counts[split] = {"total": sum(by_source.values()), "by_source": by_source, "read_by_source": seen}
    filters: dict[str, dict[str, dict[str, int]]] = {"train": {}, "test": {}}
    for (split, source, reason), n in sorted(stats.dropped.items()):
        filters[split].setdefault(reason, {})[source] = n
    manifest = {
        "created_by": "python -m data_prep.build_deepcoder_mix",
        "mode": mode,
        "sources": source_report(config, mode, stats),
        "livecodebench_version": config.lcb_version,
        "livecodebench_files": list(lcb_files),
        "date_window": asdict(config.window) | {"train_before": config.window.train_before or config.window.test_start},
        "prompt_variant": config.prompt_variant,
        "settings": {
            "quality": asdict(config.quality),
            "near_duplicate": {
                "method": "MinHash over word shingles with LSH banding; estimated Jaccard >= threshold is a duplicate",
                "threshold": config.near_duplicate_threshold,
                "permutations": config.minhash_permutations,
                "bands": config.minhash_bands,
                "shingle_words": config.shingle_words,
            },
            "limit_per_source": config.limit_per_source,
            "public_tests_from_hidden": config.public_tests,
        },
        "counts": counts,
        "public_tests": {
            split: {kind: n for (s, kind), n in sorted(stats.public_tests.items()) if s == split}
            for split in ("train", "test")
        },
        "filters": filters,
        "per_source": per_source_table(stats),
        "malformed_rows": stats.skips.to_dict(),
        "decontamination": config.decontamination.describe()
        | {
            "flagged_total": len(stats.contamination),
            "flagged": [asdict(flag) for flag in stats.contamination[:REPORT_LIST_LIMIT]],
        },
        "duplicates": {
            "exact": stats.exact_duplicates,
            "near": stats.near_duplicates,
            "by_source_pair": duplicate_pairs(stats.pair_duplicates),
        },
        "content_sha256": hashes,
        "files": {"train": "train.parquet", "test": "test.parquet"},
        "warnings": stats.warnings,
    }
    if config.verified is not None:
        manifest["gold_verification"] = {
            "results": str(config.verified),
            "by_source": {name: dict(sorted(counts.items())) for name, counts in sorted(stats.gold.items())},
            "rule": "dropped (reason gold_failed_<verdict>) when every graded gold solution failed; kept when no "
            "gold solution exists, the grader itself failed, or the ground truth changed since it was graded (stale)",
        }
    return manifest


def source_report(config: BuildConfig, mode: str, stats: BuildStats) -> list[dict[str, Any]]:
    """One entry per source read: repository, config, splits, and what ``stats.reads`` recorded (revision, files)."""
    if mode == "sample":
        return [{"name": "sample", "repo": "data_prep/sample", "splits": ["train", "test"]}]
    roles = {name: ["train"] for name in config.train_sources}
    roles.setdefault("lcb", []).insert(0, "test")
    report = []
    for name, splits in roles.items():
        source = SOURCES[name]
        entry = {"name": name, "repo": source.repo, "config": source.config, "splits": splits}
        report.append(entry | stats.reads.get(name, {"revision": None}))
    return report


def duplicate_pairs(pairs: Counter) -> dict[str, dict[str, int]]:
    """``"<dropped source> -> <kept source>": {"exact": n, "near": m}`` (a source paired with itself: within)."""
    report: dict[str, dict[str, int]] = {}
    for (dropped, kept, kind), n in sorted(pairs.items()):
        report.setdefault(f"{dropped} -> {kept}", {})[kind] = n
    return report


def per_source_table(stats: BuildStats) -> dict[str, dict[str, Any]]:
    """Per source name: rows read, malformed, kept per split, every drop reason, duplicates within and across."""
    malformed: Counter = Counter()
    for key, n in stats.skips.counts.items():
        malformed[key.split("/", 1)[0]] += n
    within: Counter = Counter()
    across: Counter = Counter()
    for (dropped, kept, _), n in stats.pair_duplicates.items():
        (within if dropped == kept else across)[dropped] += n
    table = {}
    for name in sorted(set(stats.table) | set(malformed)):
        counts = stats.table.get(name, Counter())
        dropped = {key.split("/", 1)[1]: n for key, n in sorted(counts.items()) if key.startswith("dropped/")}
        table[name] = {
            "rows_read": counts["read"] + malformed[name],
            "malformed": malformed[name],
            "kept": {"train": counts["kept/train"], "test": counts["kept/test"]},
            "dropped": dropped,
            "duplicates": {"within_source": within[name], "across_sources": across[name]},
            "contaminated": sum(n for reason, n in dropped.items() if reason.startswith("contaminated_")),
        }
    return table


def format_table(table: dict[str, dict[str, Any]]) -> list[str]:
    """The per-source table as aligned text lines (``TABLE_COLUMNS``)."""
    rows = [("source", *TABLE_COLUMNS)]
    for name, entry in table.items():
        dropped = entry["dropped"]
        filtered = sum(
            n for reason, n in dropped.items() if not reason.startswith(("duplicate", "contaminated", "gold_"))
        )
        gold = sum(n for reason, n in dropped.items() if reason.startswith("gold_"))
        values = (
            entry["rows_read"],
            entry["malformed"],
            entry["kept"]["train"],
            entry["kept"]["test"],
            filtered,
            gold,
            entry["contaminated"],
            entry["duplicates"]["within_source"],
            entry["duplicates"]["across_sources"],
        )
        rows.append((name, *(str(value) for value in values)))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if i else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]


def log_summary(manifest: dict[str, Any], log: Callable[[str], None]) -> None:
    for split in ("train", "test"):
        counts = manifest["counts"][split]
        log(f"data_prep: {split}: {counts['total']} problems {counts['by_source']}")
    for line in format_table(manifest["per_source"]):
        log(f"data_prep:   {line}")
    for split, reasons in manifest["filters"].items():
        for reason, by_source in reasons.items():
            log(f"data_prep: {split} dropped {sum(by_source.values())} ({reason}) {by_source}")
    for pair, kinds in manifest["duplicates"]["by_source_pair"].items():
        log(f"data_prep: duplicates {pair}: {kinds}")
    skipped = manifest["malformed_rows"]
    if skipped["total"]:
        log(f"data_prep: skipped {skipped['total']} malformed rows {skipped['by_source_and_reason']}")
        for row in skipped["rows"][:20]:
            log(f"data_prep:   skipped {row['source']} {row['id']}: {row['reason']} ({row['detail']})")
    log(f"data_prep: decontamination flagged {manifest['decontamination']['flagged_total']} train problems")
    for source in manifest["sources"]:
        if source.get("revision"):
            log(
                f"data_prep: read {source['repo']}"
                + (f":{source['config']}" if source.get("config") else "")
                + f" at revision {source['revision']}"
            )
    for warning in manifest["warnings"]:
        log(f"data_prep: WARNING: {warning}")
