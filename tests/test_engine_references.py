"""Engine references the import contracts can see: every ``"module:attribute"`` path the built-in plugins contribute.

The built-in plugins name engine code as strings (a metric's implementation and its per-class counter, a task
type's formulation, a recipe's trainer, a protocol's planner, a dataset's reader), resolved only in the
process that runs them. import-linter reads imports, not strings, so nothing checked these against the
layering, and ``check_plugin`` checked the per-class counters as syntax only. Here each one is imported and
looked up, and its module must be one a plugin's code may use: not one the plugins' own import contract
forbids (Django and its apps), except the engine itself, whose process resolves them (never the GPU worker's
runner, which holds no plugin code).
"""

from __future__ import annotations

import dataclasses
import importlib
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from biolm.name_patterns import CALLABLE_PATH_RE
from biolm.plugins import collect_contributions, get_plugin_manager

ROOT = Path(__file__).resolve().parents[1]
PLUGINS_CONTRACT = "plugins import only biolm's Django-free core"
ENGINE = "workers.engine"
CODE_FIELDS = ("reader", "locate")  # the adapters' and folds' paths, typed str; the others are Implementation


def forbidden_to_plugins() -> list[str]:
    """The plugins' contract's forbidden modules, from pyproject.toml (so this test restates none of them)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == PLUGINS_CONTRACT]
    return list(contract["forbidden_modules"])


def code_paths(value: object, where: str) -> Iterator[tuple[str, str]]:
    """``(where, "module:attribute")`` for every field of ``value`` (a spec, recursively) that holds a code path."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            inner = getattr(value, field.name)
            holds_code = "Implementation" in str(field.type) or field.name in CODE_FIELDS
            if holds_code and isinstance(inner, str):
                yield f"{where}.{field.name}", inner
            else:
                yield from code_paths(inner, f"{where}.{field.name}")
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from code_paths(inner, f"{where}[{key!r}]")
    elif isinstance(value, tuple | list):
        for index, inner in enumerate(value):
            yield from code_paths(inner, f"{where}[{index}]")


def built_in_references() -> list[tuple[str, str]]:
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    kinds = [field.name for field in dataclasses.fields(contributions) if field.name not in ("origin", "plugins",
                                                                                               "problems")]  # fmt: skip
    return [found for kind in kinds for slug, spec in getattr(contributions, kind).items()
            for found in code_paths(spec, f"{kind}.{slug}")]  # fmt: skip


REFERENCES = built_in_references()


def test_the_built_in_plugins_name_engine_code_and_per_class_counters_by_path():
    where = {place.rsplit(".", 1)[-1] for place, _ in REFERENCES}
    assert {"implementation", "per_class", "formulation", "reader"} <= where, where
    assert sum(path.startswith(ENGINE) for _, path in REFERENCES) >= 30  # 28 metrics' paths, the formulations


def problem(place: str, path: str) -> str | None:
    """Why ``path`` is not code a plugin may name, or None: it must import, hold a callable, and lie outside what the
    plugins' import contract forbids (the engine excepted, whose process resolves it)."""
    if not CALLABLE_PATH_RE.match(path):
        return f"{place}: {path!r} is not a 'module:attribute' path"
    module_name, _, attribute = path.partition(":")
    for forbidden in forbidden_to_plugins():
        inside = module_name == forbidden or module_name.startswith(forbidden + ".")
        if forbidden == "workers":  # the engine resolves these paths in its own process; nothing else of workers
            inside = inside and not (module_name == ENGINE or module_name.startswith(ENGINE + "."))
        if inside:
            return f"{place}: {path!r} is in {forbidden}, which the import contracts keep from plugins"
    try:
        target = importlib.import_module(module_name)
    except ImportError as exc:
        return f"{place}: {path!r}: {exc}"
    for part in attribute.split("."):
        if not hasattr(target, part):
            return f"{place}: {path!r}: {module_name} has no {attribute}"
        target = getattr(target, part)
    return None if callable(target) else f"{place}: {path!r} is a {type(target).__name__}, not a callable"


@pytest.mark.parametrize(("place", "path"), REFERENCES, ids=[place for place, _ in REFERENCES])
def test_each_code_path_resolves_to_code_a_plugin_may_use(place: str, path: str):
    assert problem(place, path) is None, problem(place, path)


@pytest.mark.parametrize(
    "path",
    ["leaderboard.score_aggregation:recompute_scores", "workers.runner.health:main",
     "workers.engine.metrics.tagging:nothing", "plugins.tasks.metrics:METRICS", "not a path"],
)  # fmt: skip
def test_a_path_into_the_platform_the_runner_or_nowhere_is_refused(path: str):
    assert problem("metrics.made-up.implementation", path) is not None
