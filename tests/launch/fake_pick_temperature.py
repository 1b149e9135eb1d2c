"""CPU stand-in for `python -m recipe.nouscoder.selection.pick_temperature` in the launch tests (PICK_TEMPERATURE_CMD):
the real picker (problem subset, diversity measure, threshold, report) with vLLM's sampling replaced by a generator
whose samples grow more diverse with the temperature: at T, the first round((T - 0.6) / 0.2) samples of a problem are
distinct and the rest identical (with 8 samples, the mean diversity at 0.8 / 1.0 / 1.2 / 1.4 is 0.25 / 0.46 / 0.64 /
0.79, so a threshold of 0.75 picks 1.4)."""

from __future__ import annotations

import sys

from recipe.nouscoder.selection.pick_temperature import main


def diverging_samples(conversations: list, temperature: float, samples: int) -> list[list[list[int]]]:
    distinct = round((temperature - 0.6) / 0.2)
    return [
        [
            [1000 + 100 * problem + 10 * sample + k for k in range(4)] if sample < distinct else [1, 2, 3, 4]
            for sample in range(samples)
        ]
        for problem in range(len(conversations))
    ]


if __name__ == "__main__":
    main(sys.argv[1:], generator=diverging_samples)
