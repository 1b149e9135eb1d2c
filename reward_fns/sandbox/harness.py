"""The child side: runs the program in the forked, isolated test process as a judge would.

Both kinds of test run the program in the environment of LiveCodeBench's judge (``LCB_PRELUDE_MODULES``): its
module globals start with the names that judge's prelude defines (``List``, ``deque``, ``gcd``, ...), and the
recursion limit is 50,000. A LeetCode starter-code copy (``def f(self, nums: List[int])`` without an import) runs
there, as it does on LiveCodeBench and on LeetCode.

stdin tests: the compiled program runs as a real ``__main__`` script in fresh module globals, with real file
descriptors 0/1/2 (stdin is the test's input file, stdout and stderr are capped files) and its source in
``solution.py`` in the working directory, where ``__file__`` points (``multiprocessing``'s spawn start method
runs it again from there, without the prelude), and exits the way CPython's ``main`` does (``SystemExit`` codes
as ``_Py_HandleSystemExit`` maps them, uncaught exception -> traceback and status 1, non-daemon threads joined,
``atexit`` handlers run, stdout flushed -- a failed flush is status 120 --, then C stdio flushed, as ``exit(3)``
does: ``printf`` through ``ctypes`` is not lost).

functional tests: the arguments (one JSON value per line on stdin, ``reward_fns.call_format``; the grader checked
them when it read the ground truth) are parsed *before* the program runs, then
``Solution().fn_name(*args)`` (or a top-level ``fn_name``) is called and the result is converted to JSON text by
``to_json_text``, which only trusts exact builtin types through references captured at import time (a program
that monkeypatches ``json`` or ``builtins`` or returns an object with a custom ``__eq__`` changes nothing: the
grader compares that text against the expected value, which never enters this process). Object keys are
written in sorted order, so the grader can compare the text as a stream (``compare.functional_matches``).

evalplus tests (HumanEval+, ``reward_fns.evalplus``): the test program EvalPlus runs, without its assertion. The
inputs and per-input limits come on stdin as JSON; the program is executed as module ``solution`` (as a test file
imports it), then ``entry_point`` is called on each input in turn with its limit on CPU time (``ITIMER_PROF``; a
wall-clock alarm at ``LOAD_STRETCH`` times the limit stops a call that sleeps or waits), and each call's CPU time and
returned value, as a
Python literal (``to_literal_text``: tuples, sets and floats keep their type, as EvalPlus's ``==`` sees them), go to
RESULT_FD one line each. The grader applies EvalPlus's assertion; the expected values never enter this process.
"""

from __future__ import annotations

import atexit
import builtins
import gc
import io
import json
import math
import os
import random
import signal
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, cast

from reward_fns import call_format
from reward_fns.sandbox.isolation import LOAD_STRETCH, flush_c_streams

RESULT_FD = 3
"""Functional tests: the harness writes ``OK <json>`` or ``ERR <reason>`` here after the call returns."""
SOURCE_FILE = "solution.py"
"""The program's file name: ``__file__``, ``sys.argv[0]``, written to the working directory by ``write_source``."""


LCB_PRELUDE_MODULES = (
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "sys",
    "json",
    "builtins",
    "typing",
)
"""LiveCodeBench's judge runs every program, stdin and call-based alike, after a prelude that star-imports each of
these modules in this order, then imports each of them but ``builtins`` and ``typing`` by name (so ``random``,
``copy``, ``datetime`` are the modules), then sets the recursion limit to ``LCB_RECURSION_LIMIT``
(``import_string`` in lcb_runner/evaluation/testing_util.py, github.com/LiveCodeBench/LiveCodeBench at commit
15808c76). Later star-imports win: ``Counter`` and ``OrderedDict`` are typing's aliases, ``pow`` and ``abs`` the
builtins."""
_LCB_PRELUDE_UNNAMED = frozenset({"builtins", "typing"})
LCB_RECURSION_LIMIT = 50_000
LAZY_PRELUDE_MODULES = frozenset({"datetime", "statistics"})
"""Prelude modules the fork server does not import (with ``decimal`` and ``fractions`` they would add 15 mappings to
copy at every fork, ~75 us a test): a child imports them, and completes its prelude, when its program names one of
the names they give it (``needs_lazy_prelude``; rare: ``mean``, ``date``, ``timedelta``, ...)."""

# References captured at import (in the fork server, long before any program runs).
_type, _int, _float, _str, _bool, _list, _tuple, _dict = type, int, float, str, bool, list, tuple, dict
_isinstance = isinstance
_issubclass, _getattr, _str = issubclass, getattr, str
_gc_collect = gc.collect
_int_repr, _float_repr = int.__repr__, float.__repr__
_isfinite = math.isfinite
_encode_string = json.encoder.encode_basestring_ascii
_parse_arguments = call_format.parse_arguments
_json_loads = json.loads
_str_join = str.join
_sorted = sorted
_set_int_digits = sys.set_int_max_str_digits
_set_recursion_limit = sys.setrecursionlimit
_os_write, _os_exit = os.write, os._exit
_modules = sys.modules
_set, _frozenset, _bytes = set, frozenset, bytes
_str_repr, _bytes_repr = str.__repr__, bytes.__repr__
_process_time, _setitimer, _set_handler = time.process_time, signal.setitimer, signal.signal


class UnconvertibleResult(Exception):
    """The returned value is not plain JSON data (custom class, NaN/inf, non-string key, too deep)."""


def to_json_text(value: object) -> str:
    """JSON text of ``value`` using only exact builtin types; tuples become lists; numpy scalars/arrays allowed."""
    return _text_of(value, _convert)


def _text_of(value: object, convert: Any) -> str:
    """``convert(value, 0)`` with no limit on an integer's digits; too deep a value is ``UnconvertibleResult``."""
    _set_int_digits(0)
    try:
        return convert(value, 0)
    except RecursionError as exc:
        raise UnconvertibleResult("result nested too deeply to convert") from exc


def _convert(value: object, depth: int) -> str:
    if depth > call_format.MAX_DEPTH:
        raise UnconvertibleResult(f"result nested deeper than {call_format.MAX_DEPTH}")
    kind = _type(value)
    if value is None:
        return "null"
    if kind is _bool:
        return "true" if value is True else "false"
    if kind is _int:
        return _int_repr(value)
    if kind is _float:
        if not _isfinite(value):
            raise UnconvertibleResult(f"result contains the non-finite float {_float_repr(value)}")
        return _float_repr(value)
    if kind is _str:
        return _encode_string(value)
    if kind is _list or kind is _tuple:
        return "[" + _str_join(",", [_convert(item, depth + 1) for item in value]) + "]"
    if kind is _dict:
        items = _sorted([_dict_item(key, item, depth) for key, item in value.items()])
        return "{" + _str_join(",", [text for _, text in items]) + "}"
    numpy = _modules.get("numpy")
    if numpy is not None and _isinstance(value, numpy.generic | numpy.ndarray):
        return _convert(value.tolist(), depth + 1)
    raise UnconvertibleResult(f"result contains a {kind.__module__}.{kind.__qualname__}, not plain JSON data")


def _dict_item(key: object, item: object, depth: int) -> tuple[str, str]:
    """(key as a JSON string, value as JSON text): sorted by the key's code points, as the grader walks them."""
    kind = _type(key)
    if kind is _str:
        text = key
    elif kind is _int or kind is _bool:
        text = _convert(key, depth + 1)
    else:
        raise UnconvertibleResult(f"result has a dict key of type {kind.__qualname__}")
    return text, _encode_string(text) + ":" + _convert(item, depth + 1)


def to_literal_text(value: object) -> str:
    """``value`` as a Python literal (``ast.literal_eval`` reads it back with its types: tuple, list, set, dict,
    int, float, str, bytes, bool, None), using only exact builtin types like ``to_json_text``; infinities are written
    ``1e999``; NaN, other classes and deeper nesting raise ``UnconvertibleResult``."""
    return _text_of(value, _literal)


def _literal(value: Any, depth: int) -> str:
    if depth > call_format.MAX_DEPTH:
        raise UnconvertibleResult(f"result nested deeper than {call_format.MAX_DEPTH}")
    kind = _type(value)
    if value is None or kind is _bool:
        return "True" if value is True else "False" if value is False else "None"
    if kind is _int:
        return _int_repr(value)
    if kind is _float:
        if value != value:
            raise UnconvertibleResult("result contains NaN")
        return _float_repr(value) if _isfinite(value) else ("1e999" if value > 0 else "-1e999")
    if kind is _str:
        return _str_repr(value)
    if kind is _bytes:
        return _bytes_repr(value)
    if kind is _list:
        return "[" + _str_join(", ", [_literal(item, depth + 1) for item in value]) + "]"
    if kind is _tuple:
        items = [_literal(item, depth + 1) for item in value]
        return "(" + _str_join(", ", items) + ("," if len(items) == 1 else "") + ")"
    if kind is _set or kind is _frozenset:
        items = _sorted([_literal(item, depth + 1) for item in value])
        body = "{" + _str_join(", ", items) + "}" if items else "set()"
        return body if kind is _set else f"frozenset({body})" if items else "frozenset()"
    if kind is _dict:
        pairs = [_literal(key, depth + 1) + ": " + _literal(item, depth + 1) for key, item in value.items()]
        return "{" + _str_join(", ", pairs) + "}"
    numpy = _modules.get("numpy")
    if numpy is not None and _isinstance(value, numpy.generic | numpy.ndarray):
        return _literal(value.tolist(), depth + 1)
    raise UnconvertibleResult(f"result contains a {kind.__module__}.{kind.__qualname__}, not plain data")


def reopen_std_streams() -> None:
    """Fresh ``sys.stdin/stdout/stderr`` on fds 0/1/2, as CPython's ``create_stdio`` makes them for files that are not
    terminals in the child's environment (``PYTHONIOENCODING=utf-8``): buffered, named ``<stdin>``, ``<stdout>``,
    ``<stderr>``, UTF-8, strict (stderr: backslashreplace and line-buffered), and ``newline="\\n"``, so that no
    newline is translated either way (a lone ``\\r`` does not end a line, ``\\r\\n`` stays as it is).

    Called once in the fork server, which never reads or writes them: each child inherits the objects with empty
    buffers, and after ``dup2`` they read the test's input and write its output files (no per-test set-up).
    """
    sys.stdin = sys.__stdin__ = _std_stream(0, "r", "<stdin>", "strict", line_buffering=False)
    sys.stdout = sys.__stdout__ = _std_stream(1, "w", "<stdout>", "strict", line_buffering=False)
    sys.stderr = sys.__stderr__ = _std_stream(2, "w", "<stderr>", "backslashreplace", line_buffering=True)


def _std_stream(fd: int, mode: str, name: str, errors: str, line_buffering: bool) -> io.TextIOWrapper:
    raw = io.FileIO(fd, mode, closefd=False)
    raw.name = name
    buffer = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffer, encoding="utf-8", errors=errors, newline="\n", line_buffering=line_buffering)


def write_source(source: bytes) -> None:
    """The program's source as ``SOURCE_FILE`` in the working directory (the run's, already the current one)."""
    fd = os.open(SOURCE_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        _write_all(fd, source)
    finally:
        os.close(fd)


def prepare_fork_server(run_dir: str) -> None:
    """Make the fork server's interpreter look as every program's should (``python3 solution.py`` in ``run_dir``,
    after LiveCodeBench's prelude), once: each child inherits it, and only what differs per child is left to
    ``reset_interpreter_state``. Then freezes the garbage collector on everything the server holds: a child's
    collections (at its program's exit, ``_tear_down_program``) walk only what the program made."""
    atexit._clear()
    sys.argv = [SOURCE_FILE]
    sys.path[0] = run_dir
    sys.setrecursionlimit(LCB_RECURSION_LIMIT)
    _set_int_digits(4300)
    reopen_std_streams()
    _add_prelude(lcb_prelude_names(without=LAZY_PRELUDE_MODULES))
    gc.freeze()


def complete_the_prelude() -> None:
    """In a child whose program needs them: the names of ``LAZY_PRELUDE_MODULES`` too (the whole prelude again, in
    its order, so that whatever a later module overrides stays overridden)."""
    _add_prelude(lcb_prelude_names())


def _add_prelude(names: dict[str, object]) -> None:
    """The prelude's names in the real ``builtins``, where they resolve after the program's own globals, as the
    prelude's globals would (a program's own definitions win), nothing is copied per test, and a program's
    ``builtins.input = sys.stdin.readline`` replaces ``input`` as under ``python3``. A name of the builtins is left
    alone: the prelude binds each to the builtins' own object (``from builtins import *`` comes late), and one it did
    not would go into each program's globals (``_shadowing``) rather than change what every module sees."""
    for name, value in names.items():
        if name not in _native_builtins:
            _builtin_names[name] = value
        elif _builtin_names[name] is not value:
            _shadowing[name] = value


_builtin_names = vars(builtins)
_native_builtins = frozenset(_builtin_names)
"""The builtins' own names, before the prelude's were added."""
_shadowing: dict[str, object] = {}
"""Prelude names that are builtins' names bound to another object (none in Python 3.11): each program's globals get
them, as LiveCodeBench's prelude does."""


def lcb_prelude_names(without: frozenset[str] = frozenset()) -> dict[str, object]:
    """The globals LiveCodeBench's prelude leaves (``LCB_PRELUDE_MODULES``, but those in ``without``): ``from M import
    *`` takes ``M.__all__``, or every name of ``M`` not starting with ``_``. Built after ``reopen_std_streams``:
    ``stdin``/``stdout`` (from ``sys``) are the streams every program gets."""
    names: dict[str, object] = {}
    modules = [__import__(name) for name in LCB_PRELUDE_MODULES if name not in without]
    for module in modules:
        public = getattr(module, "__all__", None)
        if public is None:
            public = [name for name in vars(module) if not name.startswith("_")]
        names.update({name: getattr(module, name) for name in public})
    names.update({module.__name__: module for module in modules if module.__name__ not in _LCB_PRELUDE_UNNAMED})
    return names


def lazy_prelude_names() -> frozenset[str]:
    """Names the prelude binds to an object from ``LAZY_PRELUDE_MODULES`` (computed by the grader, which may import
    anything)."""
    full, lean = lcb_prelude_names(), lcb_prelude_names(without=LAZY_PRELUDE_MODULES)
    return frozenset(name for name, value in full.items() if lean.get(name, full) is not value)


def needs_lazy_prelude(code: types.CodeType, lazy_names: frozenset[str]) -> bool:
    """Whether ``code`` (or a function or class body in it) names one of ``lazy_names`` (``co_names``: globals and
    attributes alike, so a few programs load the lazy modules for nothing, none misses them)."""
    pending = [code]
    while pending:
        current = pending.pop()
        if not lazy_names.isdisjoint(current.co_names):
            return True
        pending += [constant for constant in current.co_consts if isinstance(constant, types.CodeType)]
    return False


def _program_namespace(name: str) -> dict[str, object]:
    """The globals of a new module ``name`` (registered in ``sys.modules``) for the program, on the real
    ``builtins``."""
    module = types.ModuleType(name)
    namespace = vars(module)
    namespace["__builtins__"] = builtins
    namespace.update(_shadowing)
    sys.modules[name] = module
    return namespace


def reset_interpreter_state() -> None:
    """What differs from the fork server in each child: a fresh ``random`` seed (the fork skipped CPython's
    at-fork hooks, random's reseeding among them) and Ctrl-C's default handler (the server ignores SIGINT)."""
    random.seed()
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run_main_script(code: types.CodeType) -> int:
    """Execute ``code`` as ``__main__`` and return the exit status CPython would return."""
    namespace = _program_namespace("__main__")
    namespace["__file__"] = SOURCE_FILE
    try:
        exec(code, namespace)
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException:
        _print_exception()
        status = 1
    del namespace
    return _finalize(status, tear_down=True)


def _parsed_stdin(parse: Any) -> Any:
    """``parse`` of the test's stdin with no limit on an integer's digits; the program then runs under CPython's
    default limit (4,300 digits), as under ``python3``."""
    _set_int_digits(0)
    try:
        return parse(sys.stdin.buffer.read().decode("utf-8"))
    finally:
        _set_int_digits(4300)


def run_functional(code: types.CodeType, fn_name: str) -> int:
    """Parse the arguments from stdin, run the definitions, call the function, write the result to RESULT_FD."""
    arguments = _parsed_stdin(_parse_arguments)
    namespace = _program_namespace("solution")
    try:
        exec(code, namespace)
        function = _find_function(namespace, fn_name)
        value = function(*arguments)
        _set_recursion_limit(10 * call_format.MAX_DEPTH)
        message = "OK " + to_json_text(value)
    except SystemExit as exc:
        return _finalize(_exit_status(exc))
    except UnconvertibleResult as exc:
        message = f"ERR {exc}"
    except BaseException:
        _print_exception()
        return _finalize(1)
    _write_all(RESULT_FD, message.encode("utf-8"))
    return _finalize(0)


class _CallTimedOut(BaseException):
    """Raised into a call when its wall-clock stop (``LOAD_STRETCH`` times its limit) passes."""


_stopped = [False]
"""Set by ``_stop_call``: a call whose stop fired timed out, even when it caught the exception and returned."""


def _stop_call(signum: int, frame: object) -> None:
    _stopped[0] = True
    raise _CallTimedOut


def _stop_timers() -> None:
    _setitimer(signal.ITIMER_PROF, 0)
    _setitimer(signal.ITIMER_REAL, 0)


def run_evalplus(code: types.CodeType, fn_name: str) -> int:
    """EvalPlus's test program without the assertion (module docstring): import the program as ``solution``, call
    ``fn_name`` on each input of stdin's ``{"calls": [...], "time_limits_s": [...]}``, one RESULT_FD line per call.
    A call that raises (``SystemExit`` included, as EvalPlus catches ``BaseException``) or overruns ends the run."""
    request = _parsed_stdin(_json_loads)
    namespace = _program_namespace("solution")
    try:
        exec(code, namespace)
        function = _find_function(namespace, fn_name)
    except SystemExit as exc:
        return _finalize(_exit_status(exc))
    except BaseException:
        _print_exception()
        return _finalize(1)
    _set_handler(signal.SIGALRM, _stop_call)
    _set_handler(signal.SIGPROF, _stop_call)
    for arguments, limit in zip(request["calls"], request["time_limits_s"], strict=True):
        started = _process_time()
        try:
            _setitimer(signal.ITIMER_PROF, limit)
            _setitimer(signal.ITIMER_REAL, LOAD_STRETCH * limit)
            value = function(*arguments)
            _stop_timers()
            if _stopped[0]:
                raise _CallTimedOut
        except _CallTimedOut:
            _stop_timers()
            _write_all(RESULT_FD, b"TIMEOUT\n")
            return _finalize(0)
        except BaseException as exc:
            _stop_timers()
            _write_all(RESULT_FD, f"ERR {_type(exc).__qualname__}\n".encode())
            return _finalize(0)
        cpu_s = _float_repr(_process_time() - started)
        try:
            line = f"OK {cpu_s} {to_literal_text(value)}\n"
        except UnconvertibleResult as exc:
            line = f"BAD {cpu_s} {exc}\n"
        _write_all(RESULT_FD, line.encode("utf-8", errors="surrogatepass"))
    return _finalize(0)


def _find_function(namespace: dict[str, object], fn_name: str) -> Callable[..., object]:
    """``Solution().fn_name``, else a top-level ``fn_name`` of the program."""
    solution = namespace.get("Solution")
    if _isinstance(solution, _type):
        return _getattr(cast(type, solution)(), fn_name)
    function = namespace.get(fn_name)
    if function is None:
        raise NameError(f"the program defines neither class Solution nor a function {fn_name!r}")
    return cast(Callable[..., object], function)


_C_LONG_MIN, _C_LONG_MAX = -(1 << 63), (1 << 63) - 1


def _exit_status(exc: SystemExit) -> int:
    """The exit status CPython gives an uncaught ``SystemExit`` (``_Py_HandleSystemExit``): ``None`` -> 0; an int
    -> ``exit((int)PyLong_AsLong(code))``, i.e. its low 8 bits, and 255 outside the C long range (2**64 is 255, not
    0); anything else is written to ``sys.stderr`` as ``str(code)`` and a newline -> 1. An int subclass counts by its
    value, whatever its operators do."""
    code: object = exc.code
    if code is None:
        return 0
    if _isinstance(code, _int) and _issubclass(_type(code), _int):  # the type itself, not a faked __class__
        value = _int.__int__(cast(int, code))
        return value & 0xFF if _C_LONG_MIN <= value <= _C_LONG_MAX else 0xFF
    try:
        sys.stderr.write(_str(code))
        sys.stderr.write("\n")
    except BaseException:  # noqa: S110 - CPython clears an error of this write too
        pass
    return 1


def _print_exception() -> None:
    """The traceback on stderr, through the program's ``sys.excepthook`` if it set one (as CPython does)."""
    try:
        sys.excepthook(*sys.exc_info())
    except BaseException:
        sys.__excepthook__(*sys.exc_info())


def _finalize(status: int, tear_down: bool = False) -> int:
    """CPython's shutdown (``Py_FinalizeEx``): join non-daemon threads, run atexit handlers, flush stdout and stderr;
    with ``tear_down``, the program's module is then finalized (``_tear_down_program``) and both flushed again. A
    failed flush makes the status 120, whatever it was (``Py_RunMain``)."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except BaseException:
        _print_exception()
    atexit._run_exitfuncs()
    flushed = _flush_std_files()
    if tear_down:
        _tear_down_program()
        flushed = _flush_std_files() and flushed
    return status if flushed else 120


def _flush_std_files() -> bool:
    """Flush ``sys.stdout`` and ``sys.stderr`` (those not closed); False when a flush failed."""
    flushed = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not _getattr(stream, "closed", False):
                stream.flush()
        except BaseException:
            flushed = False
    return flushed


def _tear_down_program() -> None:
    """What ``Py_FinalizeEx`` does to a script's objects after atexit: the original standard streams back in ``sys``,
    the program's module out of ``sys.modules`` and dropped, then a garbage collection. Whatever the program's
    globals held is finalized as under ``python3 solution.py``: ``__del__`` methods run, suspended generators run
    their ``finally`` blocks, and files the program opened on fd 1 or 2 (``io.TextIOWrapper(open(1, "wb"))``,
    ``os.fdopen(1, "w")``) are closed, which flushes what they buffered."""
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
    sys.modules.pop("__main__", None)
    _gc_collect()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_os_write(fd, view) :]


def exit_now(status: int) -> None:
    """Leave the child without running the fork server's cleanup (``os._exit`` captured before the program), after
    flushing C stdio as ``exit(3)`` would (output a program wrote with ``printf`` through ``ctypes``)."""
    flush_c_streams()
    _os_exit(status)
