"""Everything the stage chain checks and derives from its configs before Ray starts, each config composed once.

    python launch/preflight.py --nodes 6 --gpus-per-node 8 --stages "dapo_32k dapo_40k" --config eval_lcb_40k \\
        --config eval_lcb_80k --manifest LOG_DIR/bill_of_materials.json --output-root outputs --run-dir RUN_DIR \\
        [--budget-gpu-hours 4608] [--offline-filter-config offline_filter] [hydra overrides...]

- the GPU layout of every config against the allocation (`stage_layout.py`): derived for colocated configs, checked
  for separate-async ones; a mismatch exits 2 naming the overrides that would fit;
- the bill of materials of every config (`bill_of_materials.py`), written to --manifest for the node check;
- the run plan (`run_plan.py`): with --budget-gpu-hours, each training stage's total_training_steps, save_freq and
  test_freq for that budget on this allocation; without, the stages' configured lengths with their expected time;
- the disk the run's retention needs against the free space of --output-root (`disk_plan.py`): exits 3 with both
  numbers and the knobs when it does not fit.

Prints what the chain reads, one `KIND<TAB>NAME<TAB>VALUE` line each: `overrides` (per config, appended to its
command), `train_files` and `model` (of the first stage, for stage 0), `test_freq` and `steps` (per stage, for the
progress watchdog), `expected_s` (per validation-only config, for the watchdog); the human-readable report goes to
stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq
from bill_of_materials import bill_of_materials, merged
from data_check import DataUse, as_files, column_problems, prompt_budget_problems
from disk_plan import free_bytes, gb, generations_bytes, model_params, peak_bytes, stage_disk, used_bytes
from offline_filter import bytes_per_problem
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError
from run_plan import (
    CHECKPOINT_BYTES_PER_PARAM,
    LCB_V6_PROBLEMS,
    MODEL_LOAD_S,
    PARAMS,
    TRAIN_PROBLEMS,
    evaluation_s,
    plan,
    replicas,
    stage_cost,
)
from site_check import local_model_dir, site_needs
from stage_layout import LayoutError, layout_overrides

from recipe.nouscoder.configs import compose_experiment
from recipe.nouscoder.run.required_values import check_required_values
from recipe.nouscoder.run.validation_coverage import runs_validation

PLAN_KEYS = ("trainer.total_training_steps", "trainer.save_freq", "trainer.test_freq")
# A job's start before its trainer steps (Ray on every node, then the trainer's start-up, run_plan.MODEL_LOAD_S), and
# what the chain leaves after the trainer's last save (selection, Ray's stop), for the jobs a time limit takes.
RAY_START_S = 300.0
DEFAULT_SAVE_LEAD_S = 2700.0  # a training stage the plan does not cover: one 32k-stage step, a validation, a save


class PreflightError(Exception):
    """What stops the job before Ray starts; `status` is the exit code (2: configs, 3: disk)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def report(message: str) -> None:
    print(f"preflight: {message}", file=sys.stderr)


def emit(kind: str, name: str, value: object) -> None:
    print(f"{kind}\t{name}\t{value}")


def with_overrides(config: DictConfig, overrides: list[str]) -> DictConfig:
    """`config` with simple `key=value` overrides applied (the layout's and the plan's integers)."""
    config = config.copy()
    for override in overrides:
        key, _, value = override.partition("=")
        OmegaConf.update(config, key, int(value) if value.lstrip("-").isdigit() else value, force_add=True)
    return config


def parquet_rows(path: str) -> int | None:
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # missing, unreadable, a list of files: the plan's stated count is used
        return None


def fit_layouts(composed: dict[str, DictConfig], nodes: int, gpus_per_node: int) -> dict[str, list[str]]:
    """Each config's layout overrides for the allocation (stage_layout.py); every misfit named at once."""
    layouts, errors = {}, []
    for name, config in composed.items():
        try:
            layouts[name] = layout_overrides(config, name, nodes, gpus_per_node)
        except LayoutError as misfit:
            errors.append(f"ERROR: {misfit}")
            continue
        fits = " ".join(layouts[name]) or "the config layout fits"
        report(f"{name} ({config.trainer.v1.trainer_mode}) on {nodes} x {gpus_per_node} GPUs: {fits}")
    if errors:
        raise PreflightError("\n".join(errors))
    return layouts


def budget_overrides(args: argparse.Namespace, fitted: dict[str, DictConfig], rescore: dict[str, str], rows: int):
    """{stage: the plan's overrides} for --budget-gpu-hours (run_plan.py), or PreflightError naming what to change."""
    stages = args.stages.split()
    given = [key for key in PLAN_KEYS for item in args.overrides if item.lstrip("+").startswith(f"{key}=")]
    if given:
        raise PreflightError(f"BUDGET_GPU_HOURS plans {', '.join(PLAN_KEYS)}; the overrides set {given} too: drop one.")
    separate = all(fitted[stage].trainer.v1.trainer_mode.endswith("separate_async") for stage in stages)
    if not (rescore and args.eval_config and separate):
        raise PreflightError(
            "BUDGET_GPU_HOURS plans the NousCoder chain (separate-async stages, a re-scored stage, a final "
            "evaluation); set trainer.total_training_steps instead."
        )
    try:
        result = plan(
            {stage: fitted[stage] for stage in stages},
            rescore=fitted[next(iter(rescore.values()))],
            final_eval=fitted[args.eval_config],
            offline_filter=fitted[args.offline_filter_config] if args.offline_filter_config else None,
            budget_gpu_hours=args.budget_gpu_hours,
            rescore_candidates=args.rescore_top_k * len(rescore),
            train_problems=rows,
        )
    except ValueError as too_small:
        raise PreflightError(f"{too_small}: raise BUDGET_GPU_HOURS.") from None
    planned = {
        cost.name: [
            f"trainer.total_training_steps={steps}",
            f"trainer.save_freq={cost.save_freq}",
            f"trainer.test_freq={cost.test_freq}",
        ]
        for cost, steps in zip(result.stages, result.steps, strict=True)
    }
    summary = "; ".join(
        f"{c.name} {s} steps of ~{c.step_s / 60:.0f} min" for c, s in zip(result.stages, result.steps, strict=True)
    )
    report(f"run plan for BUDGET_GPU_HOURS={args.budget_gpu_hours:.0f} on {result.gpus} GPUs: {summary}")
    return planned


def validation_only_s(args: argparse.Namespace, fitted: dict[str, DictConfig], name: str, rows: int) -> float:
    """The planned time of a validation-only run: stage 0 over the training problems, the others over LiveCodeBench."""
    problems = rows if name == args.offline_filter_config else LCB_V6_PROBLEMS
    return evaluation_s(fitted[name], args.nodes * args.gpus_per_node, problems)


def report_durations(
    args: argparse.Namespace, fitted: dict[str, DictConfig], others: list[str], rescore: dict[str, str], rows: int
) -> float:
    """The watchdog's facts per config, and the chain's expected duration (run_plan.py's assumptions)."""
    stages = args.stages.split()
    hours = 0.0
    for name in stages:
        config = fitted[name]
        steps = int(config.trainer.get("total_training_steps") or 0)
        if config.trainer.v1.trainer_mode.endswith("separate_async") and steps:
            cost = stage_cost(name, config)
            wall = cost.wall_s(steps, validate_first=name == stages[0])
            hours += wall / 3600
            report(
                f"{name}: {steps} steps x ~{cost.step_s / 60:.0f} min, save every {config.trainer.save_freq}, "
                f"validate every {config.trainer.test_freq}: ~{wall / 3600:.0f} h"
            )
        emit("test_freq", name, int(config.trainer.test_freq))
        emit("steps", name, steps)
    for name in others:
        seconds = validation_only_s(args, fitted, name, rows)
        hours += seconds / 3600 * (args.rescore_top_k if name in rescore.values() else 1)
        emit("expected_s", name, math.ceil(seconds))
    if hours:
        report(f'the chain needs ~{hours:.0f} h of this allocation (Qwen3-14B on H100s, configs/README.md "Run plan")')
    return hours


def check_disk(
    args: argparse.Namespace, fitted: dict[str, DictConfig], rescore: dict[str, str], model: str, rows: int
) -> None:
    """The run's peak disk need (disk_plan.py) against the free space of OUTPUT_ROOT."""
    stages = args.stages.split()
    first = fitted[stages[0]]
    if args.checkpoint_gb:  # one checkpoint of the first stage as saved: 12 B per parameter per replica
        params = args.checkpoint_gb * 1e9 / (CHECKPOINT_BYTES_PER_PARAM * replicas(first))
    else:
        params = model_params(model)
    if params is None and built_by_the_run(first, model):
        report(f"disk: not checked: {model} is the CPU mode's tiny model, built by the run (checkpoints of megabytes)")
        return
    if params is None:
        params = PARAMS
        report(
            f"WARNING: disk: the size of {model} is unknown here (not a local model or in the Hugging Face cache): "
            f"checked with the plan's model size, {PARAMS / 1e9:.1f}B parameters (Qwen3-14B, run_plan.py); set "
            "CHECKPOINT_GB for another model's"
        )
    top_k = args.rescore_top_k
    disks = [
        stage_disk(name, fitted[name], params, args.keep_last, top_k if name in rescore else None) for name in stages
    ]
    extra = generations_bytes(fitted[args.offline_filter_config], rows) if args.offline_filter_config else 0.0
    need, phase, kept = peak_bytes(disks, extra)
    held, free = used_bytes(args.run_dir), free_bytes(args.output_root)
    detail = f"{gb(kept)} kept from the earlier stages; " if kept else ""
    detail += "; ".join(
        f"{d.name}: {gb(d.checkpoint_bytes)} per checkpoint x ({args.keep_last} newest + {d.keep_best} best + 1 being written)"
        for d in disks
    )
    if need > free + held:
        raise PreflightError(
            f"disk: this run needs ~{gb(need)} in OUTPUT_ROOT={args.output_root} at its peak ({phase}; {detail}), "
            f"but that filesystem has {gb(free)} free (+{gb(held)} the run holds already). Set OUTPUT_ROOT to a "
            "filesystem shared by all nodes with room (a project or scratch space, not a home directory with a quota), "
            'or lower KEEP_LAST_CHECKPOINTS / RESCORE_TOP_K (launch/README.md, "Where logs and checkpoints go").',
            status=3,
        )
    report(
        f"disk: the run needs ~{gb(need)} at its peak ({phase}); OUTPUT_ROOT={args.output_root} has {gb(free)} free (+{gb(held)} held)"
    )


def save_lead_s(name: str, config: DictConfig) -> float:
    """How long before the job's time limit a training stage is asked to save and stop: one planned step that may
    validate, its save, and 5 minutes for the trainer and Ray to stop (run_plan.stage_cost)."""
    if not config.trainer.v1.trainer_mode.endswith("separate_async"):
        return DEFAULT_SAVE_LEAD_S
    cost = stage_cost(name, config)
    return cost.step_s + cost.validation_s + cost.save_s + 300.0


def report_time_limit(
    args: argparse.Namespace, fitted: dict[str, DictConfig], others: list[str], hours: float, rows: int
) -> None:
    """The plan's hours against the job's --time: the jobs the chain takes (each ends with a clean save before its
    limit and requeues itself, launch/README.md "A chain longer than the time limit"); per stage, `save_lead_s`."""
    stages = args.stages.split()
    leads = {name: args.save_lead_s or save_lead_s(name, fitted[name]) for name in stages}
    for name, lead in leads.items():
        emit("save_lead_s", name, math.ceil(lead))
    if not args.time_limit_s:
        return
    lead = max(leads.values())
    limit = f"--time={args.time_limit_s / 3600:.1f} h"
    if args.time_limit_s <= lead:
        raise PreflightError(
            f"{limit} is shorter than the ~{lead / 60:.0f} min a training stage stops before the job's limit to save "
            "(one step, a validation, the save; SAVE_BEFORE_LIMIT_S): no step would ever be kept. Raise --time."
        )
    if not hours:  # no plan for these stages (not separate-async): nothing to count jobs with
        return
    startup = RAY_START_S + MODEL_LOAD_S
    usable = args.time_limit_s - startup - lead
    if usable <= 0:
        report(
            f"WARNING: {limit} is mostly spent starting (Ray and the trainer, ~{startup / 60:.0f} min planned) and "
            f"saving before the limit (~{lead / 60:.0f} min): raise --time"
        )
        usable = args.time_limit_s - lead
    for name in others:
        seconds = validation_only_s(args, fitted, name, rows)
        if seconds > args.time_limit_s - RAY_START_S:
            report(
                f"WARNING: {name} (validation only, ~{seconds / 3600:.1f} h) does not fit in {limit}: it cannot stop "
                "for a save, so every job would restart it; raise --time"
            )
    jobs = math.ceil(hours * 3600 / usable)
    report(
        f"time limit: the plan's ~{hours:.1f} h against {limit} ({usable / 3600:.1f} h of it usable: start-up "
        f"~{startup / 60:.0f} min, a clean save ~{lead / 60:.0f} min before the limit): "
        f"{jobs} job(s); each requeues itself and the next resumes from its save"
    )


def built_by_the_run(config: DictConfig, path: str) -> bool:
    """Whether the CPU mode builds `path` itself when missing: its bundled sample's parquet and its tiny model
    (recipe/nouscoder/cpu/__init__.py ``build_missing_inputs``)."""
    built = [OmegaConf.select(config, f"nouscoder.cpu.{key}") for key in ("sample_data_dir", "tiny_model_dir")]
    return any(directory and Path(path).is_relative_to(str(directory)) for directory in built)


def data_uses(args: argparse.Namespace, fitted: dict[str, DictConfig], rescore: dict[str, str]) -> list[DataUse]:
    """What each run of the job reads, as the chain will pass it (stage 0: the first stage's training data; the
    re-scoring and final evaluation: EVAL_DATA)."""
    stages = args.stages.split()
    uses = []
    for name in stages:
        config = fitted[name]
        uses.append(DataUse(name, "data.train_files", as_files(config.data.train_files), config, True))
        if runs_validation(config):
            uses.append(DataUse(name, "data.val_files", as_files(config.data.val_files), config, False))
    if args.offline_filter_config:
        train = as_files(fitted[stages[0]].data.train_files)
        uses.append(
            DataUse(args.offline_filter_config, "data.val_files", train, fitted[args.offline_filter_config], True)
        )
    for name in rescore.values():
        files = (str(args.eval_data),) if args.eval_data else as_files(fitted[name].data.val_files)
        uses.append(DataUse(name, "data.val_files", files, fitted[name], False))
    if args.eval_config:
        benchmarks = tuple(str(path) for path in args.eval_benchmark) or (
            (str(args.eval_data),) if args.eval_data else ()
        )
        files = benchmarks or as_files(fitted[args.eval_config].data.val_files)
        uses += [
            DataUse(args.eval_config, "data.val_files", (path,), fitted[args.eval_config], False) for path in files
        ]
    for name in args.config:
        if runs_validation(fitted[name]):
            uses.append(DataUse(name, "data.val_files", as_files(fitted[name].data.val_files), fitted[name], False))
    return [use for use in uses if not any(built_by_the_run(use.config, path) for path in use.files)]


def check_data(args: argparse.Namespace, fitted: dict[str, DictConfig], rescore: dict[str, str], model: str) -> None:
    """Every run's parquet columns and the LiveCodeBench prompt budget (data_check.py), before Ray and stage 0."""
    uses = data_uses(args, fitted, rescore)
    problems = column_problems(uses)
    if problems:
        raise PreflightError("\n".join(f"data: {problem}" for problem in problems))
    directory = local_model_dir(model)
    if directory is None:
        report(
            f"data: the prompt budget is not checked here: {model} is not on this host (the site check says where to put it)"
        )
    else:
        problems = prompt_budget_problems(uses, str(directory))
        if problems:
            raise PreflightError("\n".join(f"prompt budget: {problem}" for problem in problems))
    files = sorted({path for use in uses for path in use.files})
    report(f"data: {len(files)} parquet file(s) with the columns every run reads; no validation prompt over its budget")


def report_stage0(args: argparse.Namespace, fitted: dict[str, DictConfig], rows: int) -> None:
    """What stage 0 holds per problem, on disk and in the trainer's memory until its dump (offline_filter.py)."""
    per_problem = bytes_per_problem(fitted[args.offline_filter_config])
    report(
        f"stage 0: per problem {fitted[args.offline_filter_config].actor_rollout_ref.rollout.val_kwargs.n} generations, "
        f"~{per_problem / 1e6:.2f} MB of prompt and response text on disk and in the trainer until its dump (no tests: "
        f"launch/offline_filter.py), {gb(per_problem * rows)} for {rows:,} problems"
    )


def write_site_manifest(args: argparse.Namespace, fitted: dict[str, DictConfig], model: str) -> None:
    """What the site check probes on every node (site_check.py), and the collective's backend for the launcher."""
    models = [] if built_by_the_run(fitted[args.stages.split()[0]], model) else [model]
    needs = site_needs(list(fitted.values()), args.gpus_per_node, args.allocation_gpus, models, args.wandb)
    args.site_manifest.write_text(json.dumps(needs, indent=1))
    emit("site", "backend", "nccl" if needs["device"] == "cuda" else "gloo")
    emit("site", "cupy", int(needs["nccl"]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python launch/preflight.py", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True, help="nodes of the Ray cluster (the job's NNODES)")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="GPUs per node (the job's GPUS_PER_NODE)")
    parser.add_argument("--stages", required=True, help="the training stage configs in order (STAGES)")
    parser.add_argument("--config", action="append", default=[], help="another config the job runs (repeatable)")
    parser.add_argument("--rescore", action="append", default=[], help="STAGE=CONFIG: a re-scored stage (RESCORE)")
    parser.add_argument("--rescore-top-k", type=int, default=3, help="candidates re-scored per re-scored stage")
    parser.add_argument("--eval-config", default=None, help="the final evaluation's config (EVAL_CONFIG)")
    parser.add_argument("--offline-filter-config", default=None, help="stage 0's config, when it builds the filter")
    parser.add_argument("--manifest", type=Path, required=True, help="where to write the bill of materials (JSON)")
    parser.add_argument("--budget-gpu-hours", type=float, default=None, help="plan the stages for this budget")
    parser.add_argument("--output-root", type=Path, required=True, help="OUTPUT_ROOT, whose free space is checked")
    parser.add_argument("--run-dir", type=Path, required=True, help="RUN_DIR, whose present size counts as free")
    parser.add_argument("--keep-last", type=int, default=2, help="KEEP_LAST_CHECKPOINTS")
    parser.add_argument(
        "--checkpoint-gb",
        type=float,
        default=None,
        help="size of one checkpoint of the first stage as saved (CHECKPOINT_GB); default: from the model's config",
    )
    parser.add_argument("--init-model", default=None, help="the first stage's model (INIT_MODEL)")
    parser.add_argument(
        "--eval-data", type=Path, default=None, help="the re-scoring and final evaluation's data (EVAL_DATA)"
    )
    parser.add_argument(
        "--eval-benchmark", type=Path, action="append", default=[], help="a final evaluation's data (EVAL_BENCHMARKS)"
    )
    parser.add_argument(
        "--site-manifest", type=Path, default=None, help="where to write what the site check probes (JSON)"
    )
    parser.add_argument(
        "--allocation-gpus", type=int, default=0, help="the allocation's GPUs per node (0: none, CPU mode)"
    )
    parser.add_argument("--wandb", action="store_true", help="the runs log to wandb (WANDB_API_KEY is set)")
    parser.add_argument(
        "--time-limit-s", type=float, default=None, help="the job's time limit (sbatch --time), seconds"
    )
    parser.add_argument(
        "--save-lead-s",
        type=float,
        default=None,
        help="SAVE_BEFORE_LIMIT_S; default: one planned step + a save + 5 min",
    )
    parser.add_argument("overrides", nargs="*", help="the hydra overrides every config runs with")
    return parser


def preflight(args: argparse.Namespace) -> None:
    stages = args.stages.split()
    rescore = dict(pair.split("=", 1) for pair in args.rescore)
    others = [*args.config, *rescore.values(), *filter(None, [args.eval_config, args.offline_filter_config])]
    names = list(dict.fromkeys([*stages, *others]))
    composed = {name: compose_experiment(name, args.overrides) for name in names}
    layouts = fit_layouts(composed, args.nodes, args.gpus_per_node)
    fitted = {name: with_overrides(config, layouts[name]) for name, config in composed.items()}
    for name in stages:
        try:
            check_required_values(fitted[name])
        except InterpolationResolutionError as missing:
            raise PreflightError(f"{name}: {missing}") from None
    entries = merged({name: bill_of_materials(config) for name, config in fitted.items()})
    args.manifest.write_text(json.dumps([entry.to_json() for entry in entries], indent=1))
    report(f"bill of materials of {len(fitted)} config(s), {len(entries)} parts: {args.manifest}")
    first = fitted[stages[0]]
    train_files = str(first.data.train_files)
    rows = parquet_rows(train_files) or TRAIN_PROBLEMS
    planned = budget_overrides(args, fitted, rescore, rows) if args.budget_gpu_hours is not None else {}
    fitted |= {name: with_overrides(fitted[name], overrides) for name, overrides in planned.items()}
    hours = report_durations(args, fitted, list(dict.fromkeys(others)), rescore, rows)
    report_time_limit(args, fitted, list(dict.fromkeys(others)), hours, rows)
    model = args.init_model or str(first.actor_rollout_ref.model.path)
    check_disk(args, fitted, rescore, model, rows)
    if args.offline_filter_config:
        report_stage0(args, fitted, rows)
    check_data(args, fitted, rescore, model)
    if args.site_manifest:
        write_site_manifest(args, fitted, model)
    emit("train_files", stages[0], train_files)
    emit("model", stages[0], model)
    for name in names:
        emit("overrides", name, " ".join([*layouts[name], *planned.get(name, [])]))


def main(argv: list[str] | None = None) -> None:
    try:
        preflight(build_parser().parse_args(argv))
    except PreflightError as stop:
        for line in str(stop).splitlines():
            report(line if line.startswith("ERROR") else f"ERROR: {line}")
        sys.exit(stop.status)


if __name__ == "__main__":
    main()
