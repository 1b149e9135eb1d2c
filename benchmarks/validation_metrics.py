"""Time verl's validation statistics (``process_validation_metrics``) with verl's bootstrap and with the recipe's
vectorized one (recipe/nouscoder/training/validation_bootstrap.py), in the same run, on the same random results.

    python benchmarks/validation_metrics.py

Two shapes: the CPU learning run's validation (64 prompts x 4 samples, 15 numeric reward fields, as its metrics.jsonl
has them) and a LiveCodeBench one (454 problems x 16 samples, 15 fields). Each is timed alternately, CPU time of this
process; the figure is verl's time / ours (min of the repeats), and the values are checked equal.
"""

import argparse
import math
import random
import time

from tqdm import tqdm
from verl.trainer.ppo.metric_utils import process_validation_metrics

from recipe.nouscoder.training.validation_bootstrap import bootstrap_indices, vectorized_bootstrap

SHAPES = {"cpu learning run (64 x 4)": (64, 4), "LiveCodeBench (454 x 16)": (454, 16)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fields", type=int, default=15, help="numeric reward fields per sample (default 15)")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each version per shape (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random results (default 0)")
    return parser.parse_args()


def random_results(prompts: int, samples: int, fields: int, seed: int) -> tuple[list[str], list[str], dict]:
    rng = random.Random(seed)
    uids = [f"uid{prompt}" for prompt in range(prompts) for _ in range(samples)]
    values = {f"field{index}": [rng.random() for _ in uids] for index in range(fields)}
    return ["source"] * len(uids), uids, values


def timed(function, *args) -> tuple[float, dict]:
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def vectorized(*args) -> dict:
    bootstrap_indices.cache_clear()  # each timed run draws its indices, as a validation in a new process would
    with vectorized_bootstrap():
        return process_validation_metrics(*args)


def same(ours: dict, verls: dict) -> bool:
    return all(
        ours[source][var][name] == value or (math.isnan(value) and math.isnan(ours[source][var][name]))
        for source in verls
        for var in verls[source]
        for name, value in verls[source][var].items()
    )


def main() -> None:
    args = parse_args()
    print(
        f"process_validation_metrics, {args.fields} numeric fields, CPU seconds of this process, min of {args.repeats}"
    )
    print(f"{'shape':<28} {'verl s':>8} {'ours s':>8} {'verl / ours':>12}  same values")
    for name, (prompts, samples) in SHAPES.items():
        results = random_results(prompts, samples, args.fields, args.seed)
        verl_times, our_times, equal = [], [], True
        for _ in tqdm(range(args.repeats), desc=name, leave=False):
            verl_s, verls = timed(process_validation_metrics, *results)
            our_s, ours = timed(vectorized, *results)
            verl_times.append(verl_s)
            our_times.append(our_s)
            equal = equal and same(ours, verls)
        verl_s, our_s = min(verl_times), min(our_times)
        print(f"{name:<28} {verl_s:8.2f} {our_s:8.2f} {verl_s / our_s:12.0f}  {equal}")


if __name__ == "__main__":
    main()
