"""Build a CPU learning config's inputs once: its task family and its warm-started model (about a minute on one
core), in a directory that several runs then share; prints the overrides that point a run at them.

    python -m recipe.nouscoder.cpu.build_learning_inputs --out DIR [--config-name debug_cpu_learn_async]
    python -m recipe.nouscoder.main --config-name debug_cpu_learn_async <the printed overrides> ...

The settings (seed, problem counts) are the config's own (``nouscoder.cpu.learning``); what is already built with
them is kept (``recipe.nouscoder.cpu.learning_inputs``). `make test` runs this beside its set-up, so that the
learning test (tests/recipe/test_cpu_learning.py, ``NOUSCODER_LEARNING_INPUTS``) starts from a built model.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from recipe.nouscoder.cpu import learning_inputs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="directory of the inputs (learn_data/, learn_model/)")
    parser.add_argument(
        "--config-name",
        default="debug_cpu_learn_async",
        help="the learning config whose settings the inputs are built with (default %(default)s)",
    )
    args = parser.parse_args(argv)
    overrides = learning_inputs(args.config_name, args.out.resolve())
    print(f"build_learning_inputs: {args.config_name}'s inputs in {args.out}; a run uses them with:")
    print(" ".join(overrides))


if __name__ == "__main__":
    main()
