"""Everything the stage chain checks and derives from its configs before Ray starts, each config composed once.

    python launch/preflight.py --nodes 6 --gpus-per-node 8 --stages "dapo_32k dapo_40k" --rescore dapo_32k=eval_lcb_40k \\
        --eval-config eval_lcb_80k --offline-filter-config offline_filter --manifest LOG_DIR/bill_of_materials.json \\
        --output-root outputs --run-dir RUN_DIR [--gpu h100] [--init-model M] [--model-config config.json] \\
        [--budget-gpu-hours 4608] [--config-overrides 'dapo_40k=KEY=VALUE ...'] [hydra overrides...]

- the configs (`chain.py`): every stage and evaluation composed once with the common and its own overrides; an
  unknown name or a bad override is one line naming it;
- the GPU layout of every config against the allocation (`stage_layout.py`): derived for colocated configs, checked
  for separate-async ones; a mismatch exits 2 naming the overrides that would fit;
- the model (`model_spec.py`: the first stage's, its config.json local, cached or shipped, or --model-config) and the
  GPU (`gpu_spec.py`); without a readable model config, the model's checks are skipped with a warning;
- verl's shape rules (`verl_shapes.py`) and the memory of each GPU role (`gpu_memory.py`): a break exits 2 naming
  the rule, its line of verl and the overrides that fit;
- derived settings: `rollout.max_model_len` = prompt + response budget, the YaRN settings of a config longer than
  the model's positions (`rope_scaling.py`); `max_num_seqs` far from the KV cache's capacity is a warning;
- the bill of materials of every config (`bill_of_materials.py`), written to --manifest for the node check;
- the run plan (`run_plan.py`): with --budget-gpu-hours, each training stage's total_training_steps, save_freq and
  test_freq for that budget on this allocation; without, the stages' configured lengths with their expected time;
  a re-scored stage that validates fewer checkpoints than it re-scores exits 2;
- the plan's hours against the job's time limit (--time-limit-s): the jobs the chain takes, and each training
  stage's `save_lead_s` (how long before the limit it saves and stops);
- the disk the run's retention needs against the free space of --output-root (`disk_plan.py`): exits 3 with both
  numbers and the knobs when it does not fit;
- the data every run reads (`data_check.py`): parquet columns, and no LiveCodeBench prompt over its budget;
- with --site-manifest, what the site check (`site_check.py`) probes on every node.

Prints what the chain reads, one `KIND<TAB>NAME<TAB>VALUE` line each: `overrides` (per config, appended to its
command), `train_files` and `model` (of the first stage, for stage 0), `test_freq`, `steps` and `step_s` (per stage,
for the progress watchdog and its step-time check), `save_lead_s` (per stage, for the stop request), `site`
(the collective's backend and whether cupy is needed), `expected_s` (per validation-only config, for the watchdog); the
human-readable report goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq
import rope_scaling
from bill_of_materials import bill_of_materials, merged
from chain import Chain, ChainError, add_chain_arguments, chain_from_args, compose_chain, with_overrides
from data_check import DataUse, as_files, column_problems, prompt_budget_problems
from disk_plan import (
    CHECKPOINT_BYTES_PER_PARAM,
    free_bytes,
    gb,
    peak_bytes,
    replicas,
    stage_disk,
    used_bytes,
)
from gpu_memory import memory_problems
from gpu_spec import add_gpu_arguments, gpu_from_args
from model_spec import UnknownModel, add_model_arguments, model_from_args, resolve_model
from offline_filter import bytes_per_problem
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError
from run_plan import (
    LCB_V6_PROBLEMS,
    TRAIN_PROBLEMS,
    Assumptions,
    Basis,
    evaluation_s,
    max_num_seqs_warning,
    plan_chain,
    stage_cost,
)
from site_check import local_model_dir, site_needs
from verl_shapes import non_positive_sizes, violations

from recipe.nouscoder.run.required_values import check_required_values
from recipe.nouscoder.run.validation_coverage import runs_validation

PLAN_KEYS = ("trainer.total_training_steps", "trainer.save_freq", "trainer.test_freq")
PreflightError = ChainError  # what stops the job before Ray starts; `status` is the exit code (2: configs, 3: disk)
# A job's start before its trainer steps (Ray on every node; the trainer's own start-up is the plan's model_load_s),
# for the jobs a time limit takes.
RAY_START_S = 300.0
DEFAULT_SAVE_LEAD_S = 2700.0  # a training stage the plan does not cover: one 32k-stage step, a validation, a save
DISK_FALLBACK_MODEL = "Qwen/Qwen3-14B"  # the size a model unknown here is counted at (shipped in model_configs/)


def report(message: str) -> None:
    print(f"preflight: {message}", file=sys.stderr)


def emit(kind: str, name: str, value: object) -> None:
    print(f"{kind}\t{name}\t{value}")


def parquet_rows(path: str) -> int | None:
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # missing, unreadable, a list of files: the plan's stated count is used
        return None


def on_gpus(config: DictConfig) -> bool:
    return str(config.trainer.get("device", "cuda")) != "cpu"


def resolve_basis(args: argparse.Namespace, first: DictConfig) -> Basis | None:
    """The model and GPU of the model checks; None (with a warning) when the model's config.json is not here."""
    try:
        model = model_from_args(args, first)
    except UnknownModel as unknown:
        if on_gpus(first):
            report(f"WARNING: {unknown}; the checks that need the model (shapes, memory, plan) are skipped")
        return None
    basis = Basis(model, gpu_from_args(args), Assumptions())
    report(f"model and GPU: {basis.describe()}")
    return basis


def check_shapes(chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None) -> None:
    """verl's divisibility and size rules (verl_shapes.py) and each GPU role's memory, every break named at once."""
    problems = []
    for name in chain.names:
        model = basis.model if basis else None
        problems += [violation.describe(name) for violation in violations(fitted[name], name, model)]
        if basis and on_gpus(fitted[name]):
            problems += memory_problems(fitted[name], basis.model, basis.gpu, name)
    if problems:
        raise PreflightError("\n".join(problems))


def derived_overrides(chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None) -> dict[str, list[str]]:
    """Settings that follow from the others and the model: max_model_len, YaRN; warnings for max_num_seqs."""
    derived: dict[str, list[str]] = {}
    for name in chain.names:
        config = fitted[name]
        overrides = []
        data, rollout = config.data, config.actor_rollout_ref.rollout
        longest = int(data.max_prompt_length) + int(data.max_response_length)
        if int(rollout.max_model_len) != longest:
            overrides.append(f"actor_rollout_ref.rollout.max_model_len={longest}")
            report(f"{name}: actor_rollout_ref.rollout.max_model_len={longest} (prompt + response budget)")
        if basis is not None and on_gpus(config):
            sized = with_overrides(config, overrides)
            yarn = rope_scaling.yarn_overrides(sized, basis.model)
            if yarn or "rope_scaling" in str(config.actor_rollout_ref.model.get("override_config", {})):
                report(f"{name}: {rope_scaling.describe(sized, basis.model)}")
            overrides += yarn
            warning = max_num_seqs_warning(with_overrides(sized, yarn), name, basis)
            if warning:
                report(f"WARNING: {warning}")
        derived[name] = overrides
    return derived


def check_required(chain: Chain, fitted: dict[str, DictConfig]) -> None:
    """A stage's required values; a later stage's model is the earlier stage's selection, as the chain passes it, and
    the first stage's the launcher's INIT_MODEL when given (already in `fitted`)."""
    for index, name in enumerate(chain.stages):
        selected = ["actor_rollout_ref.model.path=the-earlier-stage's-selection"]
        config = fitted[name] if index == 0 else with_overrides(fitted[name], selected)
        try:
            check_required_values(config)
        except InterpolationResolutionError as missing:
            hint = " (the launcher: INIT_MODEL=PATH for the first stage's model)" if index == 0 else ""
            raise PreflightError(f"{name}: {str(missing).splitlines()[0]}{hint}") from None


def budget_overrides(
    args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None, rows: int
) -> dict[str, list[str]]:
    """{stage: the plan's overrides} for --budget-gpu-hours (run_plan.py), or PreflightError naming what to change."""
    given = [key for key in PLAN_KEYS for item in chain.overrides if item.lstrip("+").startswith(f"{key}=")]
    if given:
        raise PreflightError(f"BUDGET_GPU_HOURS plans {', '.join(PLAN_KEYS)}; the overrides set {given} too: drop one.")
    if basis is None:
        raise PreflightError("BUDGET_GPU_HOURS plans from the model's config.json: give it with MODEL_CONFIG=PATH.")
    try:
        result = plan_chain(
            chain, fitted, basis, args.nodes * args.gpus_per_node, args.budget_gpu_hours, args.rescore_top_k, rows
        )
    except ValueError as too_small:
        raise PreflightError(f"{too_small}: raise BUDGET_GPU_HOURS.") from None
    for warning in result.warnings:
        report(f"WARNING: {warning}")
    summary = "; ".join(
        f"{c.name} {s} steps of ~{c.step_s / 60:.0f} min" for c, s in zip(result.stages, result.steps, strict=True)
    )
    report(f"run plan for BUDGET_GPU_HOURS={args.budget_gpu_hours:.0f} on {result.gpus} GPUs: {summary}")
    return result.overrides()


def check_cadence(chain: Chain, fitted: dict[str, DictConfig], top_k: int) -> None:
    """A stage's validated checkpoints against its length: a re-scored stage needs RESCORE_TOP_K of them."""
    for name in chain.stages:
        trainer = fitted[name].trainer
        steps, test_freq = int(trainer.get("total_training_steps") or 0), int(trainer.test_freq)
        if not steps:
            continue
        validated = math.ceil(steps / test_freq) if test_freq > 0 else 0
        if name in chain.rescore and validated < top_k:
            fits = steps // top_k
            raise PreflightError(
                f"{name}: {steps} steps with trainer.test_freq={test_freq} validate {validated} checkpoint(s), "
                f"fewer than the RESCORE_TOP_K={top_k} it re-scores: set trainer.test_freq={max(1, fits)} "
                f"(a multiple of trainer.save_freq={trainer.save_freq}) or lower RESCORE_TOP_K"
            )
        if test_freq > steps:
            report(f"WARNING: {name}: trainer.test_freq={test_freq} > its {steps} steps: only the last is validated")


def validation_only_s(
    args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], basis: Basis, name: str, rows: int
) -> float:
    """The planned time of a validation-only run: stage 0 over the training problems, the others over LiveCodeBench."""
    problems = rows if name == chain.offline_filter_config else LCB_V6_PROBLEMS
    return evaluation_s(fitted[name], args.nodes * args.gpus_per_node, problems, basis)


def validation_only(chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None) -> list[str]:
    """The chain's validation-only configs the plan covers (on GPUs, with a known model)."""
    if basis is None:
        return []
    return [name for name in chain.names if name not in chain.stages and on_gpus(fitted[name])]


def report_durations(
    args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None, rows: int
) -> float:
    """The watchdog's facts per config, and the chain's expected duration (run_plan.py's assumptions)."""
    hours = 0.0
    for name in chain.stages:
        config = fitted[name]
        steps = int(config.trainer.get("total_training_steps") or 0)
        if basis is not None and on_gpus(config) and steps:
            cost = stage_cost(name, config, basis)
            wall = cost.wall_s(steps, validate_first=name == chain.stages[0])
            hours += wall / 3600
            report(
                f"{name}: {steps} steps x ~{cost.step_s / 60:.0f} min, save every {config.trainer.save_freq}, "
                f"validate every {config.trainer.test_freq}: ~{wall / 3600:.0f} h"
            )
            emit("step_s", name, math.ceil(cost.step_s))
        emit("test_freq", name, int(config.trainer.test_freq))
        emit("steps", name, steps)
    for name in validation_only(chain, fitted, basis):
        assert basis is not None
        seconds = validation_only_s(args, chain, fitted, basis, name, rows)
        hours += seconds / 3600 * (args.rescore_top_k if name in chain.rescore.values() else 1)
        emit("expected_s", name, math.ceil(seconds))
    if hours and basis is not None:
        report(
            f"the chain needs ~{hours:.0f} h of this allocation ({basis.model.name} on {basis.gpu.name}, "
            'configs/README.md "Run plan")'
        )
    return hours


def check_disk(
    args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None, model: str, rows: int
) -> None:
    """The run's peak disk need (disk_plan.py) against the free space of OUTPUT_ROOT."""
    first = fitted[chain.stages[0]]
    if args.checkpoint_gb:  # one checkpoint of the first stage as saved: 12 B per parameter per replica
        params: float | None = args.checkpoint_gb * 1e9 / (CHECKPOINT_BYTES_PER_PARAM * replicas(first))
    else:
        params = basis.model.params if basis else None
    if params is None and built_by_the_run(first, model):
        report(f"disk: not checked: {model} is the CPU mode's tiny model, built by the run (checkpoints of megabytes)")
        return
    if params is None:
        params = resolve_model(DISK_FALLBACK_MODEL).params
        report(
            f"WARNING: disk: the size of {model} is unknown here (its config.json is not local, cached or shipped): "
            f"checked at {DISK_FALLBACK_MODEL}'s {params / 1e9:.1f}B parameters; set CHECKPOINT_GB or MODEL_CONFIG "
            "for another model's"
        )
    top_k = args.rescore_top_k
    disks = [
        stage_disk(name, fitted[name], params, args.keep_last, top_k if name in chain.rescore else None)
        for name in chain.stages
    ]
    extra = 0.0
    if chain.offline_filter_config:
        extra = bytes_per_problem(fitted[chain.offline_filter_config]) * rows  # stage 0's dump
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


def save_lead_s(name: str, config: DictConfig, basis: Basis | None) -> float:
    """How long before the job's time limit a training stage is asked to save and stop: one planned step that may
    validate, its save, and 5 minutes for the trainer and Ray to stop (run_plan.stage_cost)."""
    if basis is None or not on_gpus(config) or not config.trainer.v1.trainer_mode.endswith("separate_async"):
        return DEFAULT_SAVE_LEAD_S
    cost = stage_cost(name, config, basis)
    return cost.step_s + cost.validation_s + cost.save_s + 300.0


def report_time_limit(
    args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], basis: Basis | None, hours: float, rows: int
) -> None:
    """The plan's hours against the job's --time: the jobs the chain takes (each ends with a clean save before its
    limit and requeues itself, launch/README.md "A chain longer than the time limit"); per stage, `save_lead_s`."""
    leads = {name: args.save_lead_s or save_lead_s(name, fitted[name], basis) for name in chain.stages}
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
    if not hours or basis is None:  # no plan for these stages: nothing to count jobs with
        return
    startup = RAY_START_S + basis.assumptions.model_load_s
    usable = args.time_limit_s - startup - lead
    if usable <= 0:
        report(
            f"WARNING: {limit} is mostly spent starting (Ray and the trainer, ~{startup / 60:.0f} min planned) and "
            f"saving before the limit (~{lead / 60:.0f} min): raise --time"
        )
        usable = args.time_limit_s - lead
    for name in validation_only(chain, fitted, basis):
        seconds = validation_only_s(args, chain, fitted, basis, name, rows)
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


def data_uses(args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig]) -> list[DataUse]:
    """What each run of the job reads, as the chain will pass it (stage 0: the first stage's training data; the
    re-scoring and final evaluation: EVAL_DATA)."""
    uses = []
    for name in chain.stages:
        config = fitted[name]
        uses.append(DataUse(name, "data.train_files", as_files(config.data.train_files), config, True))
        if runs_validation(config):
            uses.append(DataUse(name, "data.val_files", as_files(config.data.val_files), config, False))
    if chain.offline_filter_config:
        stage0 = fitted[chain.offline_filter_config]
        uses.append(DataUse(chain.offline_filter_config, "data.val_files", uses[0].files, stage0, True))
    for name in chain.rescore.values():
        files = (str(args.eval_data),) if args.eval_data else as_files(fitted[name].data.val_files)
        uses.append(DataUse(name, "data.val_files", files, fitted[name], False))
    if chain.eval_config:
        benchmarks = tuple(str(path) for path in args.eval_benchmark) or (
            (str(args.eval_data),) if args.eval_data else ()
        )
        files = benchmarks or as_files(fitted[chain.eval_config].data.val_files)
        config = fitted[chain.eval_config]
        uses += [DataUse(chain.eval_config, "data.val_files", (path,), config, False) for path in files]
    for name in chain.others:
        if runs_validation(fitted[name]):
            uses.append(DataUse(name, "data.val_files", as_files(fitted[name].data.val_files), fitted[name], False))
    return [use for use in uses if not any(built_by_the_run(use.config, path) for path in use.files)]


def check_data(args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], model: str) -> None:
    """Every run's parquet columns and the LiveCodeBench prompt budget (data_check.py), before Ray and stage 0."""
    uses = data_uses(args, chain, fitted)
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


def report_stage0(chain: Chain, fitted: dict[str, DictConfig], rows: int) -> None:
    """What stage 0 holds per problem, on disk and in the trainer's memory until its dump (offline_filter.py)."""
    stage0 = fitted[str(chain.offline_filter_config)]
    per_problem = bytes_per_problem(stage0)
    report(
        f"stage 0: per problem {stage0.actor_rollout_ref.rollout.val_kwargs.n} generations, "
        f"~{per_problem / 1e6:.2f} MB of prompt and response text on disk and in the trainer until its dump (no tests: "
        f"launch/offline_filter.py), {gb(per_problem * rows)} for {rows:,} problems"
    )


def write_site_manifest(args: argparse.Namespace, chain: Chain, fitted: dict[str, DictConfig], model: str) -> None:
    """What the site check probes on every node (site_check.py), and the collective's backend for the launcher."""
    models = [] if built_by_the_run(fitted[chain.stages[0]], model) else [model]
    needs = site_needs(list(fitted.values()), args.gpus_per_node, args.allocation_gpus, models, args.wandb)
    args.site_manifest.write_text(json.dumps(needs, indent=1))
    emit("site", "backend", "nccl" if needs["device"] == "cuda" else "gloo")
    emit("site", "cupy", int(needs["nccl"]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python launch/preflight.py", description=__doc__.splitlines()[0])
    add_chain_arguments(parser, defaults=False)
    add_gpu_arguments(parser)
    add_model_arguments(parser, model_flag="--init-model")
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
    return parser


def preflight(args: argparse.Namespace) -> None:
    chain = chain_from_args(args)
    layouts, fitted = compose_chain(chain, args.nodes, args.gpus_per_node)
    for name, config in fitted.items():
        fits = " ".join(layouts[name]) or "the config layout fits"
        report(f"{name} ({config.trainer.v1.trainer_mode}) on {args.nodes} x {args.gpus_per_node} GPUs: {fits}")
    if args.model:  # INIT_MODEL: the first stage's model, as the chain passes it
        fitted[chain.stages[0]] = with_overrides(
            fitted[chain.stages[0]], [f"actor_rollout_ref.model.path={args.model}"]
        )
    check_required(chain, fitted)
    if sizes := [line for name, config in fitted.items() for line in non_positive_sizes(config, name)]:
        raise PreflightError("\n".join(sizes))
    first = fitted[chain.stages[0]]
    model = str(first.actor_rollout_ref.model.path)
    basis = resolve_basis(args, first)
    derived = derived_overrides(chain, fitted, basis)
    fitted = {name: with_overrides(config, derived[name]) for name, config in fitted.items()}
    check_shapes(chain, fitted, basis)
    entries = merged({name: bill_of_materials(config) for name, config in fitted.items()})
    args.manifest.write_text(json.dumps([entry.to_json() for entry in entries], indent=1))
    report(f"bill of materials of {len(fitted)} config(s), {len(entries)} parts: {args.manifest}")
    train_files = str(first.data.train_files)
    rows = parquet_rows(train_files) or TRAIN_PROBLEMS
    planned = budget_overrides(args, chain, fitted, basis, rows) if args.budget_gpu_hours is not None else {}
    fitted |= {name: with_overrides(fitted[name], overrides) for name, overrides in planned.items()}
    check_cadence(chain, fitted, args.rescore_top_k)
    hours = report_durations(args, chain, fitted, basis, rows)
    report_time_limit(args, chain, fitted, basis, hours, rows)
    check_disk(args, chain, fitted, basis, model, rows)
    if chain.offline_filter_config:
        report_stage0(chain, fitted, rows)
    check_data(args, chain, fitted, model)
    if args.site_manifest:
        write_site_manifest(args, chain, fitted, model)
    emit("train_files", chain.stages[0], train_files)
    emit("model", chain.stages[0], model)
    for name in chain.names:
        emit("overrides", name, " ".join([*layouts[name], *derived[name], *planned.get(name, [])]))


def main(argv: list[str] | None = None) -> None:
    try:
        preflight(build_parser().parse_intermixed_args(argv))
    except (PreflightError, UnknownModel) as stop:
        status = getattr(stop, "status", 2)
        for line in str(stop).splitlines():
            report(line if line.startswith("ERROR") else f"ERROR: {line}")
        sys.exit(status)


if __name__ == "__main__":
    main()
