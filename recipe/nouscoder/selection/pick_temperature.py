"""Pick the training temperature from the base model's output diversity (MicroCoder section 2.4).

MicroCoder: when the initial output diversity is below the value training converges to, diversity keeps
falling and training fails; too high a temperature makes diversity swing. So sample the base model at a few
candidate temperatures on a subset of training problems, measure within-group diversity
(``recipe.nouscoder.training.diversity``: mean pairwise distinct-n-gram Jaccard distance of the n samples of a problem)
and take the lowest temperature whose diversity reaches a threshold.

    python -m recipe.nouscoder.selection.pick_temperature --model Qwen/Qwen3-14B --problems data/train.parquet \\
        --temperatures 0.6,0.8,1.0,1.2 --threshold 0.75 --out temperature_report.json

Generation runs on a GPU through vLLM (``pip install vllm``); the rest is CPU code.
"""

import argparse
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from recipe.nouscoder.training.diversity import group_diversity

# (conversations, temperature, samples per problem) -> per problem, the token ids of each sample
Generator = Callable[[list[list[dict]], float, int], list[list[list[int]]]]


@dataclass
class TemperatureResult:
    """Diversity of the base model's samples at one temperature, over the problem subset."""

    temperature: float
    mean_diversity: float
    median_diversity: float
    mean_response_tokens: float


def load_problem_prompts(parquet_path: str | Path, num_problems: int, seed: int) -> list[list[dict]]:
    """Chat-message prompts (verl parquet column ``prompt``) of ``num_problems`` rows drawn with ``seed``."""
    frame = pd.read_parquet(parquet_path, columns=["prompt"])
    if len(frame) == 0:
        raise ValueError(f"{parquet_path} has no rows")
    rows = random.Random(seed).sample(range(len(frame)), min(num_problems, len(frame)))
    return [[dict(message) for message in frame["prompt"].iloc[row]] for row in rows]


def measure_temperature(
    samples: Sequence[Sequence[Sequence[int]]], temperature: float, ngram: int
) -> TemperatureResult:
    """Diversity per problem (group of samples), summarised over problems."""
    diversities = [group_diversity(group, ngram) for group in samples]
    lengths = [len(tokens) for group in samples for tokens in group]
    return TemperatureResult(
        temperature=temperature,
        mean_diversity=float(np.nanmean(diversities)),
        median_diversity=float(np.nanmedian(diversities)),
        mean_response_tokens=float(np.mean(lengths)) if lengths else 0.0,
    )


def recommend_temperature(results: Sequence[TemperatureResult], threshold: float) -> float | None:
    """Lowest temperature whose mean diversity is >= ``threshold``; None when none reaches it."""
    passing = [result.temperature for result in results if result.mean_diversity >= threshold]
    return min(passing) if passing else None


def vllm_generator(
    model: str, max_tokens: int, seed: int, tensor_parallel_size: int, gpu_memory_utilization: float
) -> Generator:
    """A ``Generator`` sampling ``model`` with vLLM's offline ``LLM.chat`` (one engine for all temperatures)."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError as error:
        raise SystemExit(
            "pick_temperature generates with vLLM on a GPU, and vllm is not installed: `pip install vllm` "
            "(or the package's `gpu` extra) on a CUDA machine."
        ) from error
    llm = LLM(
        model=model, seed=seed, tensor_parallel_size=tensor_parallel_size, gpu_memory_utilization=gpu_memory_utilization
    )

    def generate(conversations: list[list[dict]], temperature: float, samples: int) -> list[list[list[int]]]:
        params = SamplingParams(n=samples, temperature=temperature, max_tokens=max_tokens, seed=seed)
        outputs = llm.chat(conversations, params, use_tqdm=False)
        return [[list(completion.token_ids) for completion in output.outputs] for output in outputs]

    return generate


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.selection.pick_temperature",
        description="Sample a base model at candidate temperatures on a subset of training problems, report the "
        "within-group output diversity at each, and recommend the lowest temperature whose diversity reaches "
        "--threshold (MicroCoder's diversity-determined temperature). Needs vLLM and a GPU.",
    )
    parser.add_argument("--model", required=True, help="HF model id or local path of the base model (vLLM loads it)")
    parser.add_argument("--problems", required=True, help="verl parquet file of training problems (column `prompt`)")
    parser.add_argument("--num-problems", type=int, default=64, help="problems sampled from the file (default 64)")
    parser.add_argument("--samples", type=int, default=8, help="samples per problem, the group size (default 8)")
    parser.add_argument(
        "--temperatures",
        default="0.6,0.8,1.0,1.2,1.4",
        help="comma-separated candidate temperatures (default 0.6,0.8,1.0,1.2,1.4)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.75,
        help="minimum mean within-group diversity (distinct-n-gram Jaccard distance, 0..1) a "
        "temperature must reach (default 0.75)",
    )
    parser.add_argument("--ngram", type=int, default=4, help="n of the n-gram diversity measure (default 4)")
    parser.add_argument("--max-tokens", type=int, default=4096, help="max new tokens per sample (default 4096)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the problem subset and of sampling (default 0)")
    parser.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallel size (default 1)")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.9, help="fraction of GPU memory vLLM may use (default 0.9)"
    )
    parser.add_argument("--out", default=None, help="write the report as JSON to this path")
    args = parser.parse_args(argv)
    try:
        args.temperatures = sorted(float(value) for value in args.temperatures.split(","))
    except ValueError:
        parser.error(f"--temperatures must be comma-separated numbers, got {args.temperatures!r}")
    if any(value <= 0 for value in args.temperatures):
        parser.error("--temperatures must all be > 0 (0 is greedy decoding: no diversity to measure)")
    if args.samples < 2:
        parser.error("--samples must be >= 2: diversity is measured between samples of a problem")
    return args


def main(argv: list[str] | None = None, generator: Generator | None = None) -> dict:
    """Run the sweep; ``generator`` replaces vLLM (tests). Returns the report that is printed / written."""
    args = parse_args(argv)
    conversations = load_problem_prompts(args.problems, args.num_problems, args.seed)
    generate = generator or vllm_generator(
        args.model, args.max_tokens, args.seed, args.tensor_parallel_size, args.gpu_memory_utilization
    )
    results = []
    for temperature in tqdm(args.temperatures, desc="temperatures"):
        samples = generate(conversations, temperature, args.samples)
        results.append(measure_temperature(samples, temperature, args.ngram))
    recommended = recommend_temperature(results, args.threshold)
    report = {
        "model": args.model,
        "problems": len(conversations),
        "samples_per_problem": args.samples,
        "ngram": args.ngram,
        "threshold": args.threshold,
        "results": [asdict(result) for result in results],
        "recommended_temperature": recommended,
    }
    print(f"{'temperature':>11}  {'mean div':>8}  {'median div':>10}  {'mean tokens':>11}")
    for result in results:
        print(
            f"{result.temperature:>11.2f}  {result.mean_diversity:>8.3f}  {result.median_diversity:>10.3f}  "
            f"{result.mean_response_tokens:>11.1f}"
        )
    if recommended is None:
        print(f"no candidate reaches diversity {args.threshold}; try higher temperatures or a lower --threshold")
    else:
        print(f"recommended temperature: {recommended} (lowest with mean diversity >= {args.threshold})")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
