"""Programs get the environment and the exit status a judge gives them.

* LiveCodeBench's environment (``harness.LCB_PRELUDE_MODULES``): its judge runs every program after a prelude of
  imports and ``sys.setrecursionlimit(50000)``, so LeetCode starter-code copies (``List[int]`` without an import)
  run there; they ran here bare and failed with NameError at definition time.
* Output written by C stdio (``printf`` through ``ctypes``) is flushed at exit, as a normal interpreter exit does.
* The exit status is the one CPython would give (``SystemExit(2**64)`` is 255), and a signal the program sends
  itself acts as on any machine (the program used to be the init of its pid namespace, which ignores them).

Root: in-process fork servers; plain user: one grader subprocess (``run_grader_as``) for the whole list.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from reward_fns.sandbox.harness import LCB_PRELUDE_MODULES, LCB_RECURSION_LIMIT, lcb_prelude_names

STARTER_CODE_COPIES = {
    "List[int] -> int": (
        "class Solution:\n"
        "    def maxSubArray(self, nums: List[int]) -> int:\n"
        "        best = cur = -inf\n"
        "        for x in nums:\n"
        "            cur = max(x, cur + x)\n"
        "            best = max(best, cur)\n"
        "        return best\n",
        "maxSubArray",
        [("[-2, 1, -3, 4, -1, 2, 1, -5, 4]", "6")],
    ),
    "Optional, Dict, Counter, deque": (
        "class Solution:\n"
        "    def topTwo(self, words: List[str], k: Optional[int] = None) -> Dict[str, int]:\n"
        "        counts = Counter(words)\n"
        "        queue = deque(sorted(counts, key=lambda w: (-counts[w], w)))\n"
        "        return {queue.popleft(): 1, queue.popleft(): 2}\n",
        "topTwo",
        [('["b", "a", "b", "c", "a", "b"]', '{"a": 2, "b": 1}')],
    ),
    "heapq, bisect, lru_cache, comb, gcd, accumulate": (
        "class Solution:\n"
        "    def mix(self, nums: List[int]) -> List[int]:\n"
        "        heapify(nums)\n"
        "        smallest = heappop(nums)\n"
        "        @lru_cache(maxsize=None)\n"
        "        def fib(n: int) -> int:\n"
        "            return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "        return [smallest, bisect_left(sorted(nums), 5), fib(30), comb(5, 2), gcd(12, 18),"
        " list(accumulate(sorted(nums)))[-1]]\n",
        "mix",
        [("[7, 3, 9, 5]", "[3, 0, 832040, 10, 6, 21]")],
    ),
    "a top-level function, typing in a nested annotation": (
        "def pairs(grid: List[List[int]]) -> Tuple[int, int]:\n    return (len(grid), sum(map(len, grid)))\n",
        "pairs",
        [("[[1, 2], [3]]", "[2, 3]")],
    ),
}
STDIN_PROGRAMS = {
    "stdin names and the recursion limit": (
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "n = int(stdin.readline())\n"
        "print(depth(n), getrecursionlimit(), gcd(n, 10), floor(sqrt(n)), __name__)\n",
        [("10000", "10000 50000 10 100 __main__")],
    ),
    "names of the modules the server leaves to the child (statistics, datetime)": (
        "print(mean([1, 2, 6]), median([3, 1, 2]), (date(2024, 3, 1) - timedelta(days=1)).day, datetime.__name__)\n",
        [("", "3 2 29 datetime")],
    ),
    "a program without them does not load them": (
        "import sys\nprint(sorted(name for name in ('statistics', 'datetime', 'decimal') if name in sys.modules))\n",
        [("", "[]")],
    ),
    "the program's own names win": (
        "def gcd(a, b):\n    return -1\nprint(gcd(4, 6), random.randint(1, 1), copy.copy([1]))\n",
        [("", "-1 1 [1]")],
    ),
}


def test_the_prelude_names_are_livecodebenchs():
    """The names ``lcb_prelude_names`` gives every program are those LiveCodeBench's import lines bind."""
    prelude = "".join(f"from {name} import *\n" for name in LCB_PRELUDE_MODULES)
    prelude += "".join(f"import {name}\n" for name in LCB_PRELUDE_MODULES if name not in ("builtins", "typing"))
    expected: dict[str, object] = {}
    exec(prelude, expected)
    del expected["__builtins__"]
    names = lcb_prelude_names()
    assert names.keys() == expected.keys()
    assert all(names[name] is expected[name] for name in names)
    assert names["random"].__name__ == "random" and names["Counter"] is expected["Counter"]
    assert LCB_RECURSION_LIMIT == 50_000


@pytest.mark.parametrize("name", sorted(STARTER_CODE_COPIES))
def test_leetcode_starter_code_copies_are_accepted(name, grade_functional):
    code, fn_name, tests = STARTER_CODE_COPIES[name]
    result = grade_functional(code, fn_name, tests)
    assert result.verdict == "accepted", result


@pytest.mark.parametrize("name", sorted(STDIN_PROGRAMS))
def test_stdin_programs_run_after_the_prelude(name, grade):
    code, tests = STDIN_PROGRAMS[name]
    result = grade(code, tests)
    assert result.verdict == "accepted", result


EXIT_PARITY = {
    "printf through ctypes after print": (
        "import ctypes\nprint('a', flush=True)\nctypes.CDLL(None).printf(b'b %d\\n', 42)\n",
        "a\nb 42",
        "accepted",
    ),
    "printf, then sys.exit(0)": ("import ctypes, sys\nctypes.CDLL(None).puts(b'42')\nsys.exit(0)\n", "42", "accepted"),
    "SystemExit(2**64) after the answer": ("print(42)\nraise SystemExit(2**64)\n", "42", "runtime_error"),
    "SystemExit(-2**63 - 1) after the answer": ("print(42)\nraise SystemExit(-2**63 - 1)\n", "42", "runtime_error"),
    "SystemExit(256) is status 0, as in CPython": ("print(42)\nraise SystemExit(256)\n", "42", "accepted"),
    "SystemExit(True) is status 1": ("print(42)\nraise SystemExit(True)\n", "42", "runtime_error"),
    "an int subclass exits by its value": (
        "class Code(int):\n    def __and__(self, other):\n        return 0\nprint(42)\nraise SystemExit(Code(3))\n",
        "42",
        "runtime_error",
    ),
    "SIGKILL to itself after the answer": (
        "import os, signal\nprint(42, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "42",
        "runtime_error",
    ),
    "SIGTERM to itself after the answer": (
        "import signal\nprint(42, flush=True)\nsignal.raise_signal(signal.SIGTERM)\n",
        "42",
        "runtime_error",
    ),
    "its child kills it after the answer": (
        "import os, signal, time\nprint(42, flush=True)\n"
        "if os.fork() == 0:\n    os.kill(os.getppid(), signal.SIGUSR1)\n    os._exit(0)\ntime.sleep(5)\n",
        "42",
        "runtime_error",
    ),
}


@pytest.mark.parametrize("name", sorted(EXIT_PARITY))
def test_output_flush_and_exit_status_as_on_a_judge_as_root(name, grade):
    code, output, verdict = EXIT_PARITY[name]
    result = grade(code, [("", output)])
    assert result.verdict == verdict, result


@pytest.mark.integration  # one grader subprocess as a plain user: ~1 s
def test_environment_flush_and_exit_status_as_on_a_judge_as_a_plain_user(run_grader_as):
    runs = [{"code": code, "tests": [("", output)]} for code, output, _ in EXIT_PARITY.values()]
    runs += [{"code": code, "tests": tests} for code, tests in STDIN_PROGRAMS.values()]
    runs += [
        {"code": code, "tests": tests, "testtype": "functional", "fn_name": fn_name}
        for code, fn_name, tests in STARTER_CODE_COPIES.values()
    ]
    expected = [verdict for _, _, verdict in EXIT_PARITY.values()]
    expected += ["accepted"] * (len(STDIN_PROGRAMS) + len(STARTER_CODE_COPIES))
    observed = run_grader_as("user", runs)
    verdicts = [result["verdict"] for result in observed["results"]]
    assert verdicts == expected, observed["results"]


CPYTHON_PARITY = {
    "a buffered writer of its own on fd 1, never flushed": (
        "import io\nout = io.TextIOWrapper(open(1, 'wb'))\nout.write(input() + '!\\n')\n",
        "answer\n",
    ),
    "os.fdopen(1) kept in a global": ("import os\nw = os.fdopen(1, 'w')\nw.write('x' * 3)\n", ""),
    "its own writer as sys.stdout": (
        "import io, sys\nsys.stdout = io.TextIOWrapper(open(1, 'wb', buffering=1 << 16))\nprint(sum(range(10)))\n",
        "",
    ),
    "__del__, a generator's finally and atexit at shutdown, in CPython's order": (
        "import atexit\n"
        "class Last:\n    def __del__(self):\n        print('del', self.name)\n"
        "def steps():\n    try:\n        yield 1\n        yield 2\n    finally:\n        print('finally')\n"
        "a = Last()\na.name = 'a'\ncycle = Last()\ncycle.name = 'cycle'\ncycle.me = cycle\n"
        "gen = steps()\nnext(gen)\natexit.register(print, 'atexit')\nprint('main')\n",
        "",
    ),
    "a script without functions: its file object flushed when the module goes": (
        "import sys\nf = open(sys.stdout.fileno(), 'w', closefd=False)\nf.write('no function here')\n",
        "",
    ),
    "stdout closed before the exit: status 120": ("import os\nprint('lost')\nos.close(1)\n", ""),
    "sys.exit with a message": ("import sys\nprint('x')\nsys.exit('bad input')\n", ""),
    "builtins.input replaced (fast input)": (
        "import builtins, sys\ntokens = iter(sys.stdin.read().split())\nbuiltins.input = lambda: next(tokens)\n"
        "print(int(input()) + int(input()))\n",
        "1\n2\n",
    ),
    "builtins.print replaced": (
        "import builtins, sys\nbuiltins.print = lambda *args, **kw: sys.stdout.write('|'.join(map(str, args)) + '\\n')\n"
        "print(1, 2, 3)\n",
        "",
    ),
    "stdin lines: a lone CR does not end a line, CRLF stays": (
        "import sys\nprint([line for line in sys.stdin])\n",
        "a\rb\r\nc\n\rd",
    ),
    "input() and readline() on CRLF": (
        "import sys\nfirst = input()\nprint(repr(first), repr(sys.stdin.readline()), repr(sys.stdin.read()))\n",
        "1 2\r\n3\r\r\n4",
    ),
    "the standard streams as CPython makes them": (
        "import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n"
        "    print(s.name, s.encoding, s.errors, s.line_buffering, type(s.buffer).__name__, s.buffer.raw.name)\n",
        "",
    ),
}
"""Programs whose exit path or standard streams a harness can get wrong: the reference is ``python3 solution.py`` itself
(stdout byte for byte and the exit status), run here in the child's environment."""


def _python3(code: str, stdin: str, tmp_path) -> tuple[str, int]:
    script = tmp_path / "solution.py"
    script.write_text(code)
    completed = subprocess.run(
        [sys.executable, "-S", "solution.py"],
        input=stdin.encode(),
        capture_output=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"},
        timeout=30,
        check=False,
    )
    return completed.stdout.decode(), completed.returncode


@pytest.mark.parametrize("name", sorted(CPYTHON_PARITY))
def test_exit_path_and_standard_streams_as_python3_as_root(name, run_raw, tmp_path):
    code, stdin = CPYTHON_PARITY[name]
    outcome, stdout, _ = run_raw(code, stdin)
    assert (stdout, outcome.exit_code) == _python3(code, stdin, tmp_path)


@pytest.mark.integration  # one grader subprocess as a plain user: ~1 s
def test_exit_path_and_standard_streams_as_python3_as_a_plain_user(run_grader_as, tmp_path):
    runs = [{"code": code, "tests": [(stdin, "")], "raw": True} for code, stdin in CPYTHON_PARITY.values()]
    observed = run_grader_as("user", runs)
    for (code, stdin), result in zip(CPYTHON_PARITY.values(), observed["results"], strict=True):
        assert (result["stdout"], result["exit_code"]) == _python3(code, stdin, tmp_path), code
