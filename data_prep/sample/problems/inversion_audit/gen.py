"""Tests for inversion_audit: sorted, reversed, equal values, N = 2000 (an O(N^2) count is too slow only on the
large tests of large_tests.py)."""

import random

TITLE = "Ledger Disorder"
PLATFORM = "codeforces"
DIFFICULTY = "hard"
CONTEST_DATE = "2023-05-27"


def case(values: list[int]) -> str:
    return f"{len(values)}\n{' '.join(map(str, values))}\n"


def generate(rng: random.Random) -> list[str]:
    tests = [case([3, 1, 2, 5, 4]), case([42]), case([1, 2, 3, 4]), case([4, 3, 2, 1]), case([2, 2, 2])]
    tests.append(case([rng.randint(1, 10) for _ in range(200)]))
    tests.append(case([rng.randint(1, 10**5) for _ in range(2000)]))
    return tests
