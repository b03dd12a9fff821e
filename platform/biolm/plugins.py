"""Build the plugin manager and collect what every plugin contributes.

Built-in plugins register exactly as third-party ones do (datasette's
``DEFAULT_PLUGINS``); third-party ones arrive through the ``biolm`` entry-point
group. A plugin that fails to import, raises in a hook, or returns an invalid
spec is recorded as a :class:`PluginProblem` naming it, and skipped: one broken
plugin must never stop the platform from starting.

No Django here: Celery workers and the engine use the same contributions.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from biolm import hookspecs
from biolm.column_limits import NAME_MAX
from biolm.contribution_kinds import KINDS
from biolm.spec_checks import SpecError
from biolm.specs import (
    ArchitectureSpec,
    BenchmarkSpec,
    DatasetSpec,
    MetricSpec,
    PreprocessorSpec,
    ProtocolSpec,
    RecipeSpec,
    TaskTypeSpec,
)

logger = logging.getLogger("biolm.plugins")

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME

DEFAULT_PLUGINS: tuple[str, ...] = (
    "plugins.tasks.metrics",
    "plugins.tasks.task_types",
    "plugins.architectures.transformers_encoders",
    "plugins.recipes.papers",
    "plugins.preprocessors.text",
    "plugins.datasets.blurb",
    "plugins.datasets.biomedical",
    "plugins.datasets.clinical",
    "plugins.datasets.demo_catalogue",
    "plugins.benchmarks.blurb",
    "plugins.benchmarks.lewis2020",
    "plugins.benchmarks.bioformer",
    "plugins.benchmarks.gatortron",
    "plugins.benchmarks.clinical_longformer",
    "plugins.benchmarks.blurb_mini",
    "plugins.protocols.papers",
)

# hook name -> (contribution kind, spec class), from the one table of kinds
HOOKS: dict[str, tuple[str, type]] = {kind.hook: (kind.name, kind.spec) for kind in KINDS}


@dataclass(frozen=True)
class PluginProblem:
    """Something wrong with one plugin, reported by name."""

    plugin: str
    message: str

    def __str__(self) -> str:
        return f"{self.plugin}: {self.message}"


@dataclass(frozen=True)
class PluginInfo:
    """Where a registered plugin came from."""

    name: str
    source: str  # "builtin" or "entrypoint"
    distribution: str = ""
    version: str = ""


@dataclass(init=False)
class Contributions:
    """Everything the loaded plugins contribute, validated and de-duplicated.

    One ``{slug: spec}`` per kind of :data:`biolm.contribution_kinds.KINDS`, read as an attribute of the
    kind's name (``contributions.metrics``, ``contributions.datasets``): a kind added to the table is here.
    A kind's contributions may be given by name too, so ``dataclasses.replace(contributions, benchmarks=...)``
    works as it did when each kind was a field.
    """

    origin: dict[tuple[str, str], str]  # (kind, slug) -> plugin name
    plugins: list[PluginInfo]
    problems: list[PluginProblem]
    by_kind: dict[str, dict[str, Any]]

    def __init__(self, origin: dict | None = None, plugins: list | None = None, problems: list | None = None,
                 by_kind: dict | None = None, **kinds: dict[str, Any]) -> None:  # fmt: skip
        self.origin = origin if origin is not None else {}
        self.plugins = plugins if plugins is not None else []
        self.problems = problems if problems is not None else []
        self.by_kind = {kind.name: {} for kind in KINDS} | dict(by_kind or {})
        unknown = sorted(set(kinds) - set(self.by_kind))
        if unknown:
            raise TypeError(f"no contribution kind {', '.join(unknown)}; the kinds: {', '.join(self.by_kind)}")
        self.by_kind.update({name: dict(specs) for name, specs in kinds.items()})

    if TYPE_CHECKING:  # what the built-in kinds hold, for type checkers; at run time __getattr__ reads by_kind
        metrics: dict[str, MetricSpec]
        task_types: dict[str, TaskTypeSpec]
        architectures: dict[str, ArchitectureSpec]
        recipes: dict[str, RecipeSpec]
        preprocessors: dict[str, PreprocessorSpec]
        datasets: dict[str, DatasetSpec]
        protocols: dict[str, ProtocolSpec]
        benchmarks: dict[str, BenchmarkSpec]

    def __getattr__(self, name: str) -> dict[str, Any]:
        by_kind = self.__dict__.get("by_kind")
        if by_kind is not None and name in by_kind:
            return by_kind[name]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def by_plugin(self, plugin: str) -> dict[str, list[str]]:
        """The slugs each kind of contribution that ``plugin`` provided."""
        result: dict[str, list[str]] = {}
        for (kind, slug), name in self.origin.items():
            if name == plugin:
                result.setdefault(kind, []).append(slug)
        return {kind: sorted(slugs) for kind, slugs in sorted(result.items())}


class _Manager(pluggy.PluginManager):
    """A PluginManager that also remembers plugins that failed to load."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT_NAME)
        self.load_problems: list[PluginProblem] = []
        self.infos: list[PluginInfo] = []


def get_plugin_manager(
    default_plugins: Iterable[str] = DEFAULT_PLUGINS,
    load_entrypoints: bool = True,
    extra_plugins: Iterable[tuple[str, Any]] = (),
) -> _Manager:
    """Return a fresh manager with built-ins, entry-point plugins and ``extra_plugins``.

    A factory rather than a module global so tests (and plugin authors' own
    tests) can build one with exactly the plugins they want.
    """
    pm = _Manager()
    pm.add_hookspecs(hookspecs)
    for module_name in default_plugins:
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # a broken plugin must not stop the platform, nor exit it
            _record(pm, module_name, f"failed to import: {type(exc).__name__}: {exc}")
            continue
        _register(pm, module, module_name, PluginInfo(module_name, "builtin"))
    if load_entrypoints:
        _load_entrypoints(pm)
    for name, plugin in extra_plugins:
        _register(pm, plugin, name, PluginInfo(name, "extra"))
    return pm


def _record(pm: _Manager, plugin: str, message: str) -> None:
    logger.error("biolm plugin %s skipped: %s", plugin, message)
    pm.load_problems.append(PluginProblem(plugin, message))


def _register(pm: _Manager, plugin: Any, name: str, info: PluginInfo) -> None:
    if len(name) > NAME_MAX:  # the name is stored with every row the plugin contributes
        _record(pm, name[:60] + "...", f"plugin name is {len(name)} characters long; at most {NAME_MAX} fit")
        return
    try:
        pm.register(plugin, name=name)
    except Exception as exc:  # pluggy validates signatures of known hooks here
        _record(pm, name, f"cannot be registered: {exc}")
        return
    # pluggy accepts implementations of hooks it does not know (a typo would be silently ignored).
    unknown = sorted(caller.name for caller in pm.get_hookcallers(plugin) or () if not caller.has_spec())
    if unknown:
        pm.unregister(plugin)
        _record(pm, name, f"implements unknown hook(s) {', '.join(unknown)}; known hooks: {', '.join(HOOKS)}")
        return
    pm.infos.append(info)


def _load_entrypoints(pm: _Manager) -> None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else ""
        version = dist.version if dist is not None else ""
        label = f"{ep.name} ({dist_name} {version})".strip() if dist_name else ep.name
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:
            _record(pm, label, f"failed to import {ep.value}: {type(exc).__name__}: {exc}")
            continue
        _register(pm, plugin, ep.name, PluginInfo(ep.name, "entrypoint", dist_name, version))


def collect_contributions(pm: _Manager | None = None) -> Contributions:
    """Call every hook of every plugin, validate the answers and cross-check references."""
    pm = pm or get_plugin_manager()
    contributions = Contributions(plugins=list(pm.infos), problems=list(pm.load_problems))
    for hook_name, (kind, spec_class) in HOOKS.items():
        caller = getattr(pm.hook, hook_name)
        # get_hookimpls() is in registration order: built-ins first, so they win slug clashes.
        for impl in caller.get_hookimpls():
            _collect_one(contributions, impl.plugin_name, kind, spec_class, impl.function)
    _cross_check(contributions)
    return contributions


def _collect_one(
    contributions: Contributions,
    plugin: str,
    kind: str,
    spec_class: type,
    function: Callable[[], Any],
) -> None:
    try:
        answer = function()
    except (Exception, SystemExit) as exc:  # SystemExit too: a plugin must not end the command silently
        _problem(contributions, plugin, f"{function.__name__} raised {type(exc).__name__}: {exc}")
        return
    if answer is None:
        return
    if not isinstance(answer, list | tuple):
        _problem(contributions, plugin, f"{function.__name__} must return a list, got {type(answer).__name__}")
        return
    registry: dict[str, Any] = getattr(contributions, kind)
    for spec in answer:
        if not isinstance(spec, spec_class):
            _problem(contributions, plugin, f"{function.__name__} returned {spec!r}, expected {spec_class.__name__}")
            continue
        try:
            spec.validate()
        except SpecError as exc:
            _problem(contributions, plugin, f"invalid {spec_class.__name__}: {exc}")
            continue
        if spec.slug in registry:
            owner = contributions.origin[(kind, spec.slug)]
            _problem(contributions, plugin, f"{kind} {spec.slug!r} is already provided by {owner}; skipped")
            continue
        registry[spec.slug] = spec
        contributions.origin[(kind, spec.slug)] = plugin


def _problem(contributions: Contributions, plugin: str, message: str) -> None:
    logger.error("biolm plugin %s: %s", plugin, message)
    contributions.problems.append(PluginProblem(plugin, message))


def _drop(contributions: Contributions, kind: str, slug: str, message: str) -> None:
    plugin = contributions.origin.pop((kind, slug))
    getattr(contributions, kind).pop(slug)
    _problem(contributions, plugin, message)


def _cross_check(contributions: Contributions) -> None:
    """Skip task types, datasets and benchmarks that refer to things no plugin provides."""
    for slug, task_type in list(contributions.task_types.items()):
        unknown = [m for m in task_type.metrics() if m not in contributions.metrics]
        if unknown:
            _drop(contributions, "task_types", slug, f"task type {slug!r} names unknown metrics {unknown}; skipped")
    for slug, dataset in list(contributions.datasets.items()):
        task_type = contributions.task_types.get(dataset.task_type)
        unknown_metrics = [
            m for m in (dataset.metric, *(dataset.companion_metrics or ())) if m not in contributions.metrics
        ]
        if unknown_metrics:
            _drop(contributions, "datasets", slug, f"dataset {slug!r} names unknown metrics {unknown_metrics}; skipped")
        elif task_type is None:
            known = ", ".join(sorted(contributions.task_types))
            _drop(
                contributions,
                "datasets",
                slug,
                f"dataset {slug!r} names unknown task type {dataset.task_type!r} (known: {known}); skipped",
            )
        elif dataset.adapter is not None and dataset.adapter.schema != task_type.schema:
            _drop(
                contributions,
                "datasets",
                slug,
                f"dataset {slug!r} is read into the {dataset.adapter.schema} schema, but its task type "
                f"{task_type.slug!r} uses {task_type.schema}; skipped",
            )
    for slug, benchmark in list(contributions.benchmarks.items()):
        missing_datasets = sorted({e.dataset for e in benchmark.entries} - set(contributions.datasets))
        missing_metrics = sorted({e.metric for e in benchmark.entries} - set(contributions.metrics))
        missing_protocol = benchmark.protocol not in contributions.protocols
        if missing_datasets or missing_metrics or missing_protocol:
            what = []
            if missing_datasets:
                what.append(f"datasets {missing_datasets}")
            if missing_metrics:
                what.append(f"metrics {missing_metrics}")
            if missing_protocol:
                what.append(f"protocol {benchmark.protocol!r} (known: {', '.join(sorted(contributions.protocols))})")
            _drop(contributions, "benchmarks", slug, f"benchmark {slug!r} needs unknown {' and '.join(what)}; skipped")
            continue
        out_of_range = _published_out_of_range(benchmark, contributions.metrics)
        if out_of_range:
            _drop(contributions, "benchmarks", slug, f"benchmark {slug!r}: published {out_of_range}; skipped")


def _published_out_of_range(benchmark: BenchmarkSpec, metrics: dict[str, MetricSpec]) -> str:
    """The first published number outside its metric's range (a 0-1 value where 0-100 is meant is inside)."""
    metric_of = {entry.key: metrics[entry.metric] for entry in benchmark.entries}
    for model in benchmark.published:
        for key, value in model.scores.items():
            low, high = metric_of[key].value_range
            if not low <= value <= high:
                return f"{model.slug}.{key} = {value} is outside {metric_of[key].slug}'s range [{low:g}, {high:g}]"
    return ""
