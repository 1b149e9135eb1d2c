"""The grader's own memory stays bounded whatever a program prints or returns, up to the output cap.

Each case runs in a fresh interpreter that grades one honest-but-wrong program and prints its verdict and its own
peak RSS (VmHWM: ``ru_maxrss`` keeps the peak of the forked pytest process across exec). Before the outputs were compared as
streams, 60 MB printed as 20 million short lines drove the grader to 1.4 GB.
"""

import subprocess
import sys

import pytest

from reward_fns.types import Verdict

pytestmark = pytest.mark.integration  # whole graders in subprocesses

RSS_LIMIT_MB = 256

_GRADE_SCRIPT = """
import sys
from reward_fns.sandbox import grade_program
from reward_fns.types import GraderConfig, Problem, TestCase

mode, code, expected, fn_name = sys.argv[1], sys.argv[2], eval(sys.argv[3]), sys.argv[4] or None
problem = Problem(tests=(TestCase("", expected, mode),), fn_name=fn_name)
result = grade_program(code, problem, GraderConfig(time_limit_s=60, total_time_budget_s=120))
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(result.verdict, peak_kb // 1024, result.detail[:200])
"""

CASES = {
    "20M short lines, short answer": (
        "stdin",
        "import sys\nsys.stdout.write('ab\\n' * 20_000_000)",
        "'ab\\nab'",
        "",
        Verdict.WRONG_ANSWER,
    ),
    "10M short lines, 10M-line answer differing at the end": (
        "stdin",
        "import sys\nsys.stdout.write('ab\\n' * 10_000_000)",
        "'ab\\n' * 9_999_999 + 'ac'",
        "",
        Verdict.WRONG_ANSWER,
    ),
    "one 60 MB line of tokens": (
        "stdin",
        "import sys\nsys.stdout.write('7 ' * 30_000_000)",
        "'7 7 7'",
        "",
        Verdict.WRONG_ANSWER,
    ),
    "7M-element list returned (55 MB of JSON)": (
        "functional",
        "def f():\n    return list(range(7_000_000))",
        "'[0, 1, 2]'",
        "f",
        Verdict.WRONG_ANSWER,
    ),
    "50 MB string returned": (
        "functional",
        "def f():\n    return 'x' * 50_000_000",
        "'\"x\"'",
        "f",
        Verdict.WRONG_ANSWER,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grader_peak_rss_stays_under_256_mb(name):
    mode, code, expected, fn_name, verdict = CASES[name]
    completed = subprocess.run(
        [sys.executable, "-c", _GRADE_SCRIPT, mode, code, expected, fn_name],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    got, peak_rss_mb, *detail = completed.stdout.split(maxsplit=2)
    assert got == verdict, detail
    assert int(peak_rss_mb) < RSS_LIMIT_MB, f"{name}: grader peak RSS {peak_rss_mb} MB"
