"""Pick a stage's best checkpoint by its LiveCodeBench score at another context, as NousCoder picks the 32k model.

NousCoder "Iterative Context Extension": "We select the highest performing model, in terms of LiveCodeBench score
evaluated at 40k context, trained at 32k context and use it as the starting point for training at 40k context."
verl validates at the training length, so the 32k stage's own scores are 32k scores. The stage chain therefore
re-scores the stage's best few checkpoints (by their in-run score) with a validation-only run at the longer
context (configs/eval_lcb_40k.yaml, every GPU of the job) and keeps the best of those:

    python launch/rescore_checkpoints.py candidates CKPT_DIR RESCORE_DIR --top-k 3   # merge; print pending runs
    (the chain runs the validation of each pending candidate: trainer.default_local_dir=RESCORE_DIR/global_step_N/eval)
    python launch/rescore_checkpoints.py pick RESCORE_DIR                              # best model on stdout
    python launch/rescore_checkpoints.py score EVAL_DIR                                # "KEY = SCORE" of one run

Layout of RESCORE_DIR (STAGE_DIR/rescore):
    candidates.json                  the candidates, their in-run score and metric key
    global_step_N/model/             the merged Hugging Face model (verl's FSDP merger, select_checkpoint.merge_to_hf)
    global_step_N/eval/metrics.jsonl the validation-only run's metrics; its step-0 score is the candidate's score
    selection.json                   the scores at the new context and the pick

A candidate's score is the one key of its metrics.jsonl that matches `--metric` (select_checkpoint's default: the
LiveCodeBench `val-core/.../acc/mean@n`). Ties go to the earlier step, as in select_checkpoint. The merged models
of the candidates not picked are deleted (each is a whole model: 30-60 GB for 14B).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, read_step_metrics
from recipe.nouscoder.selection.select_checkpoint import (
    DEFAULT_METRIC_PATTERN,
    merge_to_hf,
    ranked_checkpoints,
    resolve_metric_key,
)

CANDIDATES_FILE = "candidates.json"
SELECTION_FILE = "selection.json"


def candidate_dir(rescore_dir: Path, step: int) -> Path:
    return rescore_dir / f"global_step_{step}"


def eval_score(eval_dir: Path, metric_pattern: str) -> float | None:
    """The step-0 validation score of a finished validation-only run in `eval_dir`, None if it has none yet."""
    metrics_file = eval_dir / METRICS_FILE_NAME
    if not metrics_file.is_file():
        return None
    step_metrics = read_step_metrics(metrics_file)
    if 0 not in step_metrics:
        return None
    return float(step_metrics[0][resolve_metric_key(step_metrics, metric_pattern)])


def merged_model(actor_dir: Path, target: Path) -> Path:
    """`target` holding the merged model of `actor_dir`; merged into a temporary directory first, so a merge cut
    short by the job's end is redone, never taken for a complete model."""
    if not target.is_dir():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        merge_to_hf(actor_dir, partial)
        partial.rename(target)
    return target


def prepare_candidates(checkpoint_dir: Path, rescore_dir: Path, top_k: int, metric_pattern: str) -> list[str]:
    """Merge the `top_k` best checkpoints (in-run score); lines `STEP MODEL_DIR EVAL_DIR` of those not yet scored."""
    rescore_dir.mkdir(parents=True, exist_ok=True)
    candidates_file = rescore_dir / CANDIDATES_FILE
    if candidates_file.is_file():  # a resubmission keeps the candidates chosen the first time
        chosen = json.loads(candidates_file.read_text())["candidates"]
    else:
        ranked = ranked_checkpoints(checkpoint_dir, checkpoint_dir / METRICS_FILE_NAME, metric_pattern)[:top_k]
        chosen = [
            {"step": s.step, "in_run_score": s.score, "metric_key": s.metric_key, "actor_dir": str(s.actor_dir)}
            for s in ranked
        ]
        candidates_file.write_text(json.dumps({"checkpoint_dir": str(checkpoint_dir), "candidates": chosen}, indent=2))
    pending = []
    for candidate in chosen:
        step = candidate["step"]
        print(
            f"rescore: candidate global_step_{step}, in-run {candidate['metric_key']} = {candidate['in_run_score']:.4f}",
            file=sys.stderr,
        )
        eval_dir = candidate_dir(rescore_dir, step) / "eval"
        if eval_score(eval_dir, metric_pattern) is not None:
            continue
        model = merged_model(Path(candidate["actor_dir"]), candidate_dir(rescore_dir, step) / "model")
        pending.append(f"{step} {model} {eval_dir}")
    return pending


def pick(rescore_dir: Path, metric_pattern: str) -> Path:
    """The merged model of the best re-scored candidate (ties -> earlier step); the others' models are deleted."""
    chosen = json.loads((rescore_dir / CANDIDATES_FILE).read_text())["candidates"]
    rows = []
    for candidate in chosen:
        step = candidate["step"]
        score = eval_score(candidate_dir(rescore_dir, step) / "eval", metric_pattern)
        if score is None:
            raise ValueError(
                f"candidate global_step_{step} has no score in {candidate_dir(rescore_dir, step) / 'eval'}: "
                "its validation run did not finish; resubmit the job to redo it."
            )
        rows.append({"step": step, "in_run_score": candidate["in_run_score"], "rescored": score})
    best = max(rows, key=lambda row: (row["rescored"], -row["step"]))
    for row in rows:
        mark = "  <- picked" if row is best else ""
        print(
            f"rescore: global_step_{row['step']}: in-run {row['in_run_score']:.4f}, "
            f"re-scored {row['rescored']:.4f}{mark}",
            file=sys.stderr,
        )
        if row is not best:
            shutil.rmtree(candidate_dir(rescore_dir, row["step"]) / "model", ignore_errors=True)
    model = candidate_dir(rescore_dir, best["step"]) / "model"
    (rescore_dir / SELECTION_FILE).write_text(json.dumps({"candidates": rows, "picked": best, "model": str(model)}))
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python launch/rescore_checkpoints.py",
        description="Re-score a stage's best checkpoints at another context and pick the best (NousCoder: the 32k "
        "model chosen by its LiveCodeBench score at 40k).",
    )
    parser.add_argument("--metric", default=DEFAULT_METRIC_PATTERN, help="score key pattern (default: %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True)
    candidates = commands.add_parser("candidates", help="merge the top-k checkpoints; print the unscored ones")
    candidates.add_argument("checkpoint_dir", type=Path, help="the stage's trainer.default_local_dir")
    candidates.add_argument("rescore_dir", type=Path, help="where candidates, their models and runs go")
    candidates.add_argument("--top-k", type=int, default=3, help="candidates, best by in-run score (default: 3)")
    chooser = commands.add_parser("pick", help="print the best re-scored candidate's merged model directory")
    chooser.add_argument("rescore_dir", type=Path)
    scorer = commands.add_parser("score", help="print 'KEY = SCORE' of a finished validation-only run")
    scorer.add_argument("eval_dir", type=Path, help="the run's trainer.default_local_dir (holds metrics.jsonl)")
    args = parser.parse_args(argv)
    if args.command == "candidates":
        if args.top_k < 1:
            parser.error(f"--top-k {args.top_k}: re-score at least one checkpoint")
        for line in prepare_candidates(args.checkpoint_dir, args.rescore_dir, args.top_k, args.metric):
            print(line)
    elif args.command == "pick":
        print(pick(args.rescore_dir, args.metric))
    else:
        score = eval_score(args.eval_dir, args.metric)
        if score is None:
            sys.exit(f"rescore: no step-0 validation score in {args.eval_dir / METRICS_FILE_NAME}")
        step_metrics = read_step_metrics(args.eval_dir / METRICS_FILE_NAME)
        print(f"{resolve_metric_key(step_metrics, args.metric)} = {score:.4f}")


if __name__ == "__main__":
    main()
