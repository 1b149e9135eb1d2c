"""The import graph of our packages: no cycle (counting every import: module level, in functions, for type
checking), no arrow from a lower layer to a higher one.

Layers (docs/DESIGN.md "Layers"), bottom first: ``verl_ext`` and ``reward_fns`` (independent of each other),
``data_prep``, ``recipe``, then the scripts (``launch``, ``benchmarks``). Inside ``reward_fns``, pure modules
(types, layouts, comparison, metrics, settings) never import a module that starts processes or Ray actors.
Inside ``recipe.nouscoder``, each room imports only the rooms that ``ROOM_IMPORTS`` lists for it (docs/DESIGN.md
"Rooms of recipe/nouscoder").

The reward-only distribution (``packages/nouscoder-reward``, reward_fns/README.md "Install") requires every
distribution ``reward_fns`` imports from outside the standard library, and the modules that need its ``pool`` extra
(Ray) are the pool's own: the reward function of verl's loader and the grading CLI run without it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
    "recipe.nouscoder.training.step_metrics",
    "recipe.nouscoder.training.diversity",
)


REWARD_DISTRIBUTION = REPO / "packages" / "nouscoder-reward" / "pyproject.toml"
POOL_MODULES = ("reward_fns.ray_pool", "reward_fns.async_score")
"""The Ray grading pool (reward_fns/RAY_POOL.md): the only modules that may need the ``pool`` extra."""

ROOM_IMPORTS = {
    "main": {"configs", "extra_fields", "cpu", "multi_turn", "training", "run"},
    "configs": set(),
    "extra_fields": set(),
    "cpu": {"configs", "extra_fields"},
    "multi_turn": {"extra_fields"},
    "training": {"configs", "extra_fields", "cpu", "multi_turn"},
    "run": {"configs"},
    "eval": {"configs", "multi_turn"},
    "selection": {"configs", "run", "training"},
}
"""Room of ``recipe.nouscoder`` (its subpackage or top-level module) -> the rooms it may import."""


def module_files() -> dict[str, Path]:
    modules = {}
    for package in LAYERS:
        for path in (REPO / package).rglob("*.py"):
            if "sample/problems" in path.as_posix():
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_in(path: Path, modules: dict[str, Path] | None = None) -> set[str]:
    """Every module an import statement of ``path`` names, wherever it stands (``from a import b``: ``a.b`` when
    that is one of ``modules``, else ``a``)."""
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if submodule in (modules or {}) else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            else:
                visit([child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules that ``path`` imports, wherever the import statement stands."""
    return {name for name in imports_in(path, modules) if name in modules}


def graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported(path, modules) - {name} for name, path in modules.items()}


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


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_upward_or_sideways_arrow_between_packages():
    wrong = [
        f"{source} -> {target}"
        for source, targets in graph().items()
        for target in targets
        if (top := source.split(".")[0]) != (other := target.split(".")[0])
        and (LAYERS[other] > LAYERS[top] or (top, other) in INDEPENDENT)
    ]
    assert not wrong, f'imports against the layers (docs/DESIGN.md "Layers"): {wrong}'


def test_pure_modules_start_no_processes():
    edges = graph()
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
    tree = graph()
    assert "reward_fns.score" in tree["reward_fns.grade"]  # the graph sees real imports
    assert "data_prep.build_settings" in tree["data_prep.manifest"]  # an import under TYPE_CHECKING counts
    assert "recipe.nouscoder.configs" in tree["recipe.nouscoder.cpu"]  # and one inside a function
    assert room_violations({"recipe.nouscoder.run.console": {"recipe.nouscoder.training.trainer"}}) == [
        "recipe.nouscoder.run.console -> recipe.nouscoder.training.trainer"
    ]


def room_of(module: str) -> str | None:
    """``recipe.nouscoder.<room>[...]`` -> room; None outside the package."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["recipe", "nouscoder"] and len(parts) > 2 else None


def room_violations(edges: dict[str, set[str]]) -> list[str]:
    return [
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if (room := room_of(source))
        and (other := room_of(target))
        and other != room
        and other not in ROOM_IMPORTS[room]
    ]


def test_every_room_of_the_recipe_is_listed():
    rooms = {room_of(name) for name in module_files()} - {None}
    assert rooms == set(ROOM_IMPORTS), (
        f"rooms without a rule (ROOM_IMPORTS, docs/DESIGN.md): {rooms ^ set(ROOM_IMPORTS)}"
    )


def test_rooms_import_only_the_rooms_their_rule_allows():
    wrong = room_violations(graph())
    assert not wrong, (
        f'imports against the rooms of recipe/nouscoder (docs/DESIGN.md "Rooms of recipe/nouscoder"): {wrong}'
    )


def reward_requirements() -> dict[str, set[str]]:
    """The reward-only distribution's requirements (canonical names) by extra; ``""`` = always installed."""
    project = tomllib.loads(REWARD_DISTRIBUTION.read_text(encoding="utf-8"))["project"]
    by_extra = {"": project["dependencies"], **project.get("optional-dependencies", {})}
    return {extra: {canonicalize_name(Requirement(text).name) for text in texts} for extra, texts in by_extra.items()}


def reward_fns_distributions() -> dict[str, set[str]]:
    """Module of reward_fns -> the distributions (canonical names) of what it imports from outside the standard
    library and reward_fns, wherever the import stands; an import name no installed distribution provides stays
    as itself."""
    providers = importlib.metadata.packages_distributions()
    ours = set(sys.stdlib_module_names) | {"reward_fns"}
    return {
        module: {
            canonicalize_name(distribution)
            for top in {name.split(".")[0] for name in imports_in(path)} - ours
            for distribution in providers.get(top, [top])
        }
        for module, path in module_files().items()
        if module.split(".")[0] == "reward_fns"
    }


def needing(distributions: set[str]) -> set[str]:
    """Modules of reward_fns that import one of ``distributions``, directly or through other modules of ours."""
    direct = {module for module, used in reward_fns_distributions().items() if used & distributions}
    edges = {module: targets for module, targets in graph().items() if module.split(".")[0] == "reward_fns"}
    found, frontier = set(direct), set(direct)
    while frontier:
        frontier = {module for module, targets in edges.items() if targets & frontier} - found
        found |= frontier
    return found


def test_the_reward_distribution_requires_every_distribution_reward_fns_imports():
    required = set().union(*reward_requirements().values())
    undeclared = {
        f"{module} imports {distribution}"
        for module, used in reward_fns_distributions().items()
        for distribution in used - required
    }
    assert not undeclared, f"add them to {REWARD_DISTRIBUTION.relative_to(REPO)}: {sorted(undeclared)}"
    assert reward_fns_distributions()["reward_fns.grade"] == {"tqdm"}  # the check sees third-party imports


def test_only_the_pool_needs_the_pool_extra():
    """verl's loader (``reward_fns.verl_reward``) and the grading CLI must import with the base install."""
    pool_only = reward_requirements()["pool"] - reward_requirements()[""]
    outside = sorted(module for module in needing(pool_only) if not module.startswith(POOL_MODULES))
    assert not outside, f"modules outside the pool ({POOL_MODULES}) that need {sorted(pool_only)}: {outside}"
    assert "reward_fns.async_score" in needing(pool_only)  # reached through reward_fns.ray_pool.client


def test_modules_the_sandbox_imports_by_name_are_standard_library():
    """The fork server and the test child import these by name (``__import__``), unseen by the checks above."""
    from reward_fns.sandbox import harness, server

    names = {*server.PREIMPORTED_MODULES, *harness.LCB_PRELUDE_MODULES, *harness.LAZY_PRELUDE_MODULES}
    assert names - set(sys.stdlib_module_names) == set()
