"""The import graph of our packages: no cycles at import time, no arrow from a lower layer to a higher one.

Layers (docs/DESIGN.md "Layers"), bottom first: ``verl_ext`` and ``reward_fns`` (independent of each other),
``data_prep``, ``recipe``, then the scripts (``launch``, ``benchmarks``). Inside ``reward_fns``, pure modules
(types, layouts, comparison, metrics, settings) never import a module that starts processes or Ray actors.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = {"verl_ext": 0, "reward_fns": 0, "data_prep": 1, "recipe": 2, "launch": 3, "benchmarks": 3}
INDEPENDENT = {("verl_ext", "reward_fns"), ("reward_fns", "verl_ext")}
PROCESS_MODULES = (
    "reward_fns.sandbox",
    "reward_fns.ray_pool.worker",
    "reward_fns.ray_pool.dispatcher",
    "reward_fns.ray_pool.client",
)
PURE_MODULES = (
    "reward_fns.types",
    "reward_fns.layouts",
    "reward_fns.extract",
    "reward_fns.compare",
    "reward_fns.settings",
    "reward_fns.ray_pool.metrics",
    "reward_fns.ray_pool.config",
    "recipe.nouscoder.step_metrics",
    "recipe.nouscoder.diversity",
)


def module_files() -> dict[str, Path]:
    modules = {}
    for package in LAYERS:
        for path in (REPO / package).rglob("*.py"):
            if "sample/problems" in path.as_posix():
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name | ast.Attribute) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(path: Path, modules: dict[str, Path], at_import_time: bool) -> set[str]:
    """Our modules that ``path`` imports: all of them, or only those run when it is imported (module level, outside
    ``if TYPE_CHECKING:`` and function bodies)."""
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if submodule in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.If) and at_import_time and _is_type_checking(node):
                visit(node.orelse)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and at_import_time:
                continue
            else:
                visit([child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {name for name in found if name in modules}


def graph(at_import_time: bool) -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported(path, modules, at_import_time) - {name} for name, path in modules.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle_at_import_time():
    cycle = find_cycle(graph(at_import_time=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_upward_or_sideways_arrow_between_packages():
    wrong = [
        f"{source} -> {target}"
        for source, targets in graph(at_import_time=False).items()
        for target in targets
        if (top := source.split(".")[0]) != (other := target.split(".")[0])
        and (LAYERS[other] > LAYERS[top] or (top, other) in INDEPENDENT)
    ]
    assert not wrong, f'imports against the layers (docs/DESIGN.md "Layers"): {wrong}'


def test_pure_modules_start_no_processes():
    edges = graph(at_import_time=False)
    wrong = [
        f"{module} -> {target}"
        for module in PURE_MODULES
        for target in edges[module]
        if target.startswith(PROCESS_MODULES)
    ]
    assert not wrong, f"a pure module imports one that starts processes or Ray actors: {wrong}"


def test_the_checks_see_a_planted_cycle_and_an_upward_arrow():
    planted = {"reward_fns.a": {"reward_fns.b"}, "reward_fns.b": {"reward_fns.a"}}
    assert find_cycle(planted) == ["reward_fns.a", "reward_fns.b", "reward_fns.a"]
    tree = graph(at_import_time=False)
    assert "reward_fns.score" in tree["reward_fns.grade"]  # the graph sees real imports
    assert "data_prep.build" not in graph(at_import_time=True)["data_prep.manifest"]  # TYPE_CHECKING only
