"""Programs a judge accepts must be accepted: real stdin/stdout, __main__, threads, exits, functional calls."""

from __future__ import annotations

import pytest

from reward_fns.types import Verdict

SUM_INPUT = "3\n1 2\n3 4\n5 6\n"
SUM_OUTPUT = "3\n7\n11\n"

STDIN_PATTERNS = {
    "stdin_buffer": "import sys\ndata = sys.stdin.buffer.read().split()\n"
    "print('\\n'.join(str(int(a) + int(b)) for a, b in zip(data[1::2], data[2::2])))",
    "open_fd_0": "lines = open(0).read().splitlines()\nfor line in lines[1:]:\n    print(sum(map(int, line.split())))",
    "iterate_stdin": "import sys\nnext(sys.stdin)\nfor line in sys.stdin:\n    print(sum(map(int, line.split())))",
    "input_until_eof": "input()\nwhile True:\n    try:\n        line = input()\n    except EOFError:\n        break\n"
    "    print(sum(map(int, line.split())))",
    "readline": "import sys\nfor _ in range(int(sys.stdin.readline())):\n"
    "    print(sum(map(int, sys.stdin.readline().split())))",
    "os_write": "import os, sys\nrows = sys.stdin.read().split('\\n')[1:4]\n"
    "os.write(1, ''.join(f'{sum(map(int, r.split()))}\\n' for r in rows).encode())",
    "main_guard_and_globals": "total = 0\ndef add(x):\n    global total\n    total += x\n"
    "def main():\n    n = int(input())\n    for _ in range(n):\n        a, b = map(int, input().split())\n"
    "        add(a + b)\n        print(a + b)\n    assert total == 21\n"
    "if __name__ == '__main__':\n    main()",
    "quit_after_output": "input()\nfor _ in range(3):\n    print(sum(map(int, input().split())))\nquit()\nprint('never')",
    "exit_after_output": "input()\nfor _ in range(3):\n    print(sum(map(int, input().split())))\nexit()",
    "sys_exit_zero": "import sys\ninput()\nfor _ in range(3):\n    print(sum(map(int, input().split())))\nsys.exit(0)",
    "atexit_flush": "import atexit, io, os, sys\nout = io.StringIO()\n"
    "atexit.register(lambda: os.write(1, out.getvalue().encode()))\ninput()\n"
    "for line in sys.stdin:\n    out.write(f'{sum(map(int, line.split()))}\\n')",
    "threading_big_stack_deep_recursion": "import sys, threading\nsys.setrecursionlimit(1 << 20)\n"
    "threading.stack_size(256 << 20)\n"
    "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
    "def main():\n    assert depth(200000) == 200000\n    input()\n"
    "    for line in sys.stdin:\n        print(sum(map(int, line.split())))\n"
    "thread = threading.Thread(target=main)\nthread.start()\nthread.join()",
    "recursion_in_main_thread": "import sys\nsys.setrecursionlimit(100000)\n"
    "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nassert depth(50000) == 50000\n"
    "input()\nfor line in sys.stdin:\n    print(sum(map(int, line.split())))",
    "no_trailing_newline": "import sys\ninput()\nsys.stdout.write(' \\n'.join(str(sum(map(int, l.split()))) "
    "for l in sys.stdin))",
    "stdout_closed_at_the_end": "import sys\ninput()\nfor line in sys.stdin:\n    print(sum(map(int, line.split())))\n"
    "sys.stdout.close()",
    "numpy_with_one_thread_per_library": "import os, numpy as np\nassert os.environ['OPENBLAS_NUM_THREADS'] == '1'\n"
    "n = int(input())\nrows = np.array([list(map(int, input().split())) for _ in range(n)])\n"
    "print('\\n'.join(map(str, rows.sum(axis=1))))",
    "open_dev_stdin_and_dev_stdout": "import sys\nsys.stdin = open('/dev/stdin')\nout = open('/dev/stdout', 'w')\n"
    "input()\nout.write(''.join(f'{sum(map(int, line.split()))}\\n' for line in sys.stdin))\nout.close()",
    "subprocess_and_multiprocessing": "import multiprocessing, subprocess, sys\n"
    "def square(x):\n    return x * x\n"
    "if __name__ == '__main__':\n"
    "    assert subprocess.run(['true']).returncode == 0\n"
    "    with multiprocessing.Pool(2) as pool:\n        assert pool.map(square, [1, 2]) == [1, 4]\n"
    "    input()\n    for line in sys.stdin:\n        print(sum(map(int, line.split())))",
}


@pytest.mark.parametrize("name", sorted(STDIN_PATTERNS))
def test_judge_stdin_pattern_is_accepted(grade, name):
    result = grade(STDIN_PATTERNS[name], [(SUM_INPUT, SUM_OUTPUT)])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_large_input_through_real_stdin(grade):
    numbers = list(range(300_000))
    test_input = f"{len(numbers)}\n" + " ".join(map(str, numbers)) + "\n"
    assert len(test_input) > 1 << 20
    code = "import sys\nn, *xs = map(int, sys.stdin.buffer.read().split())\nprint(n, sum(xs))"
    result = grade(code, [(test_input, f"{len(numbers)} {sum(numbers)}")])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_functional_solution_class_with_nested_tuples(grade_functional):
    code = (
        "from typing import List\n"
        "class Solution:\n"
        "    def pairs(self, nums: List[int], k: int) -> List[List[int]]:\n"
        "        return tuple((a, b) for a in nums for b in nums if a < b and a + b == k)\n"
    )
    result = grade_functional(code, "pairs", [("[1, 2, 3, 4]\n5", "[[1, 4], [2, 3]]"), ("[5]\n5", "[]")])
    assert result.verdict is Verdict.ACCEPTED, result.detail
    assert result.passed == 2


def test_functional_top_level_function_and_plain_values(grade_functional):
    code = "def describe(name, scores):\n    return {'name': name, 'best': max(scores), 'ok': True, 'none': None}\n"
    expected = '{"name": "ada", "best": 2.5, "ok": true, "none": null}'
    result = grade_functional(code, "describe", [('"ada"\n[1, 2.5]', expected)])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_functional_main_guard_does_not_run_and_prints_are_ignored(grade_functional):
    code = (
        "class Solution:\n"
        "    def twice(self, x):\n"
        "        print('debug output is ignored')\n"
        "        return 2 * x\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit(Solution().twice(int(input())))\n"
    )
    result = grade_functional(code, "twice", [("21", "42")])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_every_test_process_gets_fresh_random_state(run_raw):
    """The fork skips CPython's at-fork hooks; the harness reseeds ``random`` so runs do not repeat."""
    outputs = {run_raw("import random\nprint(random.getrandbits(64))")[1] for _ in range(3)}
    assert len(outputs) == 3, outputs


def test_quit_and_exit_builtins_exist_without_site(run_raw):
    outcome, stdout, _ = run_raw("print(callable(quit), callable(exit))\nexit(0)")
    assert outcome.exit_code == 0 and stdout.strip() == "True True"
