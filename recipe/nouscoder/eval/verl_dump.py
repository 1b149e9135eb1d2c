"""verl's validation dump -> an ``eval_lcb --completions`` file, so a cluster evaluation gets the same pass@k report.

    python -m recipe.nouscoder.eval.verl_dump --generations RUN_DIR/final_eval/lcb_v6/generations \\
        --data data/deepcoder_mix/test.parquet --out RUN_DIR/final_eval/lcb_v6/completions.jsonl \\
        [--config-name eval_lcb_80k OVERRIDE ...]
    python -m recipe.nouscoder.eval.eval_lcb --completions .../completions.jsonl \\
        --completions-settings .../completions.settings.json --data data/deepcoder_mix/test.parquet --out ...

verl's validation-only run (``trainer.validation_data_dir``) writes ``<step>.jsonl``, one line per generation, with the
keys of verl's ``_write_generations`` (``trainer/ppo/v1/trainer_base.py``): ``input`` (the prompt), ``output`` (the
response text), ``gts`` (the row's ``reward_model.ground_truth``), ``score``, ``step``, the reward's extra keys and
``uid`` (``<prompt uid>_<sample>_<turn>``; the lines of one conversation share all but the last part, and its final
turn is the sample). The dump does not carry the row's problem id, so each line is matched to its problem by its
ground truth, which the test parquet holds per row (rows sharing a ground truth share their generations; a line no
row matches is an error: it was generated for other data). Samples are numbered in dump order per problem.

With ``--config-name`` (the evaluation's config and overrides, as the trainer was called), the settings the samples
were drawn with (model, temperature, top-p, samples per problem, response budget, context and YaRN) are composed
from it and written to ``<out stem>.settings.json`` for the report. The responses' token counts and finish reasons
are not in the dump: lengths are reported in characters and truncation is not known.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from reward_fns.cli import DefaultsHelpFormatter

SESSION_KEY = re.compile(r"^(.*)_(\d+)_(\d+)$")


def problem_ids_by_ground_truth(paths: list[Path]) -> dict[str, list[str]]:
    """``{reward_model.ground_truth: [extra_info.problem_id, ...]}`` over the rows of the parquets."""
    owners: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        table = pq.read_table(path, columns=["reward_model", "extra_info"])
        for reward_model, extra_info in zip(
            table.column("reward_model").to_pylist(), table.column("extra_info").to_pylist(), strict=True
        ):
            owners[reward_model["ground_truth"]].append(str(extra_info["problem_id"]))
    return owners


def final_turns(generations: Path) -> list[dict[str, Any]]:
    """The dump's lines, one per sample: the last line of each conversation (``uid`` session), in dump order.

    Raises:
        FileNotFoundError: no ``<step>.jsonl``; ValueError: naming ``FILE:LINE`` of a line without ``gts``/``output``.
    """
    files = sorted(generations.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no <step>.jsonl in {generations}: the validation run dumped no generations")
    samples: dict[str, dict[str, Any]] = {}
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                line = json.loads(text)
                if not isinstance(line, dict) or "gts" not in line or not isinstance(line.get("output"), str):
                    raise ValueError(f"{path}:{number}: a verl generation line needs 'gts' and a string 'output'")
                match = SESSION_KEY.match(str(line.get("uid", "")))
                session = f"{match.group(1)}_{match.group(2)}" if match else f"{path.name}:{number}"
                samples.pop(session, None)  # a later turn of the same conversation replaces it, at the end
                samples[session] = line
    return list(samples.values())


def completions(generations: list[Path], data: list[Path]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``eval_lcb --completions`` lines (``problem_id``, ``sample_index``, ``completion``) of every dump, and counts.

    Raises:
        ValueError: a generation whose ground truth no row of ``data`` has.
    """
    owners = problem_ids_by_ground_truth(data)
    lines: list[dict[str, Any]] = []
    next_index: dict[str, int] = defaultdict(int)
    counts = {"generations": 0, "shared_ground_truth": 0}
    for line in (line for directory in generations for line in final_turns(directory)):
        counts["generations"] += 1
        problem_ids = owners.get(line["gts"])
        if not problem_ids:
            raise ValueError(
                f"a generation in {', '.join(map(str, generations))} has a ground truth no row of "
                f"{', '.join(map(str, data))} has: the "
                "dump is of other data (pass the parquet the validation ran on)"
            )
        counts["shared_ground_truth"] += len(problem_ids) > 1
        for problem_id in problem_ids:
            lines.append(
                {"problem_id": problem_id, "sample_index": next_index[problem_id], "completion": line["output"]}
            )
            next_index[problem_id] += 1
    return lines, counts


def sampling_settings(config_name: str, overrides: list[str]) -> dict[str, Any]:
    """What the validation sampled with, from the composed evaluation config."""
    from recipe.nouscoder.configs import compose_experiment

    config = compose_experiment(config_name, overrides)
    rollout = config.actor_rollout_ref.rollout
    scaling = (config.actor_rollout_ref.model.get("override_config") or {}).get("rope_scaling") or {}
    context = str(rollout.get("max_model_len") or "model default")
    if scaling.get("rope_type") == "yarn":
        context += f" (YaRN x{float(scaling['factor']):g})"
    return {
        "model": str(config.actor_rollout_ref.model.path),
        "temperature": float(rollout.val_kwargs.temperature),
        "top_p": float(rollout.val_kwargs.top_p),
        "n_sampled": int(rollout.val_kwargs.n),
        "max_tokens": int(config.data.max_response_length),
        "context": context,
        "sampled_by": f"verl validation, config {config_name}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.eval.verl_dump",
        description="Turn verl's validation generation dump into an eval_lcb --completions file (problem ids "
        "matched through the ground truth), and with --config-name the sampling settings beside it.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--generations", type=Path, nargs="+", required=True, help="the runs' trainer.validation_data_dir(s)"
    )
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="the parquet(s) the validation ran on")
    parser.add_argument("--out", type=Path, required=True, help="the completions JSONL to write")
    parser.add_argument("--config-name", default=None, help="the evaluation config the validation ran (settings)")
    parser.add_argument("overrides", nargs="*", help="the hydra overrides the validation ran with")
    args = parser.parse_args(argv)
    try:
        lines, counts = completions(args.generations, args.data)
        settings = sampling_settings(args.config_name, args.overrides) if args.config_name else None
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"verl_dump: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    written = [str(args.out)]
    if settings is not None:
        settings_path = args.out.with_name(args.out.stem + ".settings.json")
        settings_path.write_text(json.dumps(settings, indent=2))
        written.append(str(settings_path))
    print(
        f"verl_dump: {counts['generations']} generations -> {len(lines)} completions of "
        f"{len({line['problem_id'] for line in lines})} problems ({counts['shared_ground_truth']} on a ground truth "
        f"shared by several rows); wrote {', '.join(written)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
