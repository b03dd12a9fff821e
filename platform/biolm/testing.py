"""A test kit for plugin authors: fixtures that register a plugin, and a contract check.

In a plugin's own tests (``conftest.py``: ``pytest_plugins = ["biolm.testing"]``)::

    import my_biolm_plugin
    from biolm.testing import check_plugin

    def test_the_plugin_keeps_the_contract():
        check_plugin(my_biolm_plugin)

    def test_my_dataset_is_registered(register_plugin):
        contributions = register_plugin(my_biolm_plugin)
        assert "my-sts" in contributions.datasets

:func:`check_plugin` registers the plugin beside the built-ins (its specs may name built-in
metrics, task types and datasets) and asserts, for what the plugin contributes:

* every spec validates and every reference resolves (nothing reported as a problem);
* every dataset adapter reads its ``samples`` directory and the examples validate;
* every metric gives 100 on its sample's perfect predictions and stays in its range on random ones;
* every architecture preset builds (shrunk to a tiny size) and runs a forward and backward pass;
* every task type's formulation encodes a sample, and its predictions decode and score;
* every preprocessor streams (gives its first documents before reading the whole input);
* every recipe's implementation, when it names one, resolves to a callable;
* every protocol's planner gives a plan (hyperparameter points, at least one seed) for every dataset,
  to which overrides apply, and its statistic combines runs.

All failures are collected and raised together as one ``AssertionError``, so a plugin author
sees everything that is wrong in one run. The architecture and formulation checks use the
engine (torch, transformers); the rest needs only the core.
"""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from biolm.contract import Overrides
from biolm.contribution_kinds import KINDS
from biolm.dataset_io import DataFormatError, load_dataset_files
from biolm.plugins import Contributions, collect_contributions, get_plugin_manager
from biolm.protocols import RunValue, combine, plan_for
from biolm.schemas import get_schema
from biolm.specs import (
    AdapterSpec,
    ArchitectureSpec,
    DatasetSpec,
    ImplementationError,
    MetricSpec,
    PreprocessorSpec,
    ProtocolSpec,
    RecipeSpec,
    TaskTypeSpec,
)

TINY = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128}
TINY_VOCABULARY = 1024
RANDOM_TRIALS = 20
STREAM_PROBE_LIMIT = 10_000  # documents a streaming preprocessor may read before its first three answers


# --- fixtures ---------------------------------------------------------------------------------


def contributions_with(plugin: Any, name: str | None = None, builtins: bool = True) -> Contributions:
    """What the built-ins (unless ``builtins=False``) plus ``plugin`` contribute, in a fresh manager."""
    from biolm.plugins import DEFAULT_PLUGINS

    name = name or _plugin_name(plugin)
    # A built-in checked on its own is registered once, as the plugin under test.
    defaults = tuple(module for module in DEFAULT_PLUGINS if module not in {name, _plugin_name(plugin)})
    manager = get_plugin_manager(
        default_plugins=defaults if builtins else (), load_entrypoints=False, extra_plugins=[(name, plugin)]
    )
    try:
        return collect_contributions(manager)
    finally:
        if manager.get_plugin(name) is not None:
            manager.unregister(name=name)


@pytest.fixture
def register_plugin() -> Iterator[Callable[..., Contributions]]:
    """``register_plugin(module, name=None, builtins=True)``: the contributions of a fresh manager with it.

    Each call builds its own manager (never the platform's), so tests cannot leak plugins into
    each other; the plugin is unregistered when the call returns.
    """
    yield contributions_with


@pytest.fixture
def plugin_manager() -> Iterator[Callable[..., Any]]:
    """``plugin_manager(module, name=None, builtins=True)``: a fresh pluggy manager with the plugin registered.

    For tests that call hooks themselves (``manager.hook.biolm_metrics()``). Every plugin registered
    through it is unregistered when the test ends.
    """
    from biolm.plugins import DEFAULT_PLUGINS

    registered: list[tuple[Any, str]] = []

    def register(plugin: Any, name: str | None = None, builtins: bool = True) -> Any:
        name = name or _plugin_name(plugin)
        defaults = tuple(module for module in DEFAULT_PLUGINS if module not in {name, _plugin_name(plugin)})
        manager = get_plugin_manager(
            default_plugins=defaults if builtins else (), load_entrypoints=False, extra_plugins=[(name, plugin)]
        )
        registered.append((manager, name))
        return manager

    yield register
    for manager, name in registered:
        if manager.get_plugin(name) is not None:
            manager.unregister(name=name)


@pytest.fixture
def biolm_builtin_contributions() -> Contributions:
    """Deprecated (removed in biolm 0.2): ``collect_contributions(get_plugin_manager(load_entrypoints=False))`` gives
    the built-in plugins' contributions, and :func:`check_plugin` a plugin's own. Nothing used this fixture, and
    it was never documented; it stays one minor version, warning, for any plugin's tests that found it."""
    warnings.warn(
        "the biolm_builtin_contributions fixture is deprecated and goes in biolm 0.2: call "
        "biolm.plugins.collect_contributions(biolm.plugins.get_plugin_manager(load_entrypoints=False)) instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


# --- the contract check -----------------------------------------------------------------------


def check_plugin(plugin: ModuleType | Any, name: str | None = None, *, builtins: bool = True) -> Contributions:
    """Assert that ``plugin`` keeps the plugin contract (see the module docstring); return its contributions.

    Raises one ``AssertionError`` listing every failure.
    """
    name = name or _plugin_name(plugin)
    contributions = contributions_with(plugin, name, builtins)
    failures = [f"{problem.plugin}: {problem.message}" for problem in contributions.problems if problem.plugin == name]
    own = contributions.by_plugin(name)
    if not own and not failures:
        failures.append(f"{name} contributes nothing: implement at least one hook of biolm.hookspecs")
    # Each kind's check, named by its row of the one table of kinds; a kind without one was validated when collected.
    checks: dict[str, Callable[[Any, Contributions], None]] = {
        kind.name: globals()[kind.kit_check] for kind in KINDS if kind.kit_check
    }
    for kind, check in checks.items():
        for slug in own.get(kind, ()):
            spec = getattr(contributions, kind)[slug]
            try:
                check(spec, contributions)
            except AssertionError as exc:
                failures.append(f"{kind} {slug}: {exc}")
            except Exception as exc:  # a contract check reports every failure, whatever it raised
                failures.append(f"{kind} {slug}: {type(exc).__name__}: {exc}")
    if failures:
        raise AssertionError(f"plugin {name} breaks the biolm plugin contract:\n- " + "\n- ".join(failures))
    return contributions


def _plugin_name(plugin: Any) -> str:
    return getattr(plugin, "__name__", None) or type(plugin).__name__


# --- datasets -----------------------------------------------------------------------------------


def _check_dataset(spec: DatasetSpec, contributions: Contributions) -> None:
    adapter = spec.adapter
    if adapter is None:
        return  # a dataset described without a reader (users bring files another way) has nothing to read
    if not adapter.samples:
        raise AssertionError("its adapter has no samples= directory of example files in the official format")
    samples = Path(adapter.samples)
    if not samples.is_dir():
        raise AssertionError(f"its adapter's samples directory {samples} does not exist")
    try:
        loaded = load_dataset_files(spec, samples)
    except DataFormatError as exc:
        raise AssertionError(f"its adapter cannot read its own samples: {exc}") from None
    empty = [split for split, rows in loaded.splits.items() if not rows]
    if empty:
        raise AssertionError(f"its samples give no examples for {empty}")


# --- metrics ------------------------------------------------------------------------------------


def _check_metric(spec: MetricSpec, contributions: Contributions) -> None:
    spec.resolve()
    sample = spec.sample
    if sample is None:
        raise AssertionError("it has no sample= (gold values and perfect predictions) to check it with")
    perfect = spec.compute(list(sample.gold), list(sample.predictions), **sample.options)
    best = spec.value_range[1] if spec.higher_is_better else spec.value_range[0]
    if abs(perfect - best) > 1e-6:
        raise AssertionError(f"perfect predictions score {perfect}, not {best}")
    rng = random.Random(0)
    leaves = _leaves(sample.predictions)
    for _ in range(RANDOM_TRIALS):
        predictions = [_random_like(item, sample.predictions, leaves, rng) for item in sample.predictions]
        try:
            spec.compute(list(sample.gold), predictions, **sample.options)  # checks finiteness and range
        except ValueError:
            continue  # undefined on these inputs (e.g. constant predictions), which a metric may say


def _leaves(values: Any) -> list:
    found = []
    for value in values:
        if isinstance(value, list | tuple | set | frozenset):
            found.extend(_leaves(list(value)))
        else:
            found.append(value)
    return found or list(values)


def _random_like(item: Any, pool: Any, leaves: list, rng: random.Random) -> Any:
    """A random value of the same form: a sequence of random leaves, a random set, or a random item."""
    if isinstance(item, frozenset | set):
        # Sorted: a set of strings iterates in the hash seed's order, so the same seed would
        # draw other members in another process and a failing trial could not be replayed.
        return frozenset(x for x in sorted(set(leaves), key=repr) if rng.random() < 0.5)
    if isinstance(item, list | tuple):
        return type(item)(rng.choice(leaves) for _ in item)
    if isinstance(item, float) and not isinstance(item, bool):
        return rng.uniform(min(leaves), max(leaves))
    return rng.choice(list(pool))


# --- architectures ------------------------------------------------------------------------------


def _check_architecture(spec: ArchitectureSpec, contributions: Contributions) -> None:
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForMaskedLM

    if spec.model_type not in CONFIG_MAPPING:
        raise AssertionError(f"the installed transformers has no model_type {spec.model_type!r}")
    if not spec.presets:
        raise AssertionError("it has no presets to build")
    for preset, kwargs in spec.presets.items():
        settings = {
            **kwargs,
            **TINY,
            "vocab_size": min(int(kwargs.get("vocab_size", TINY_VOCABULARY)), TINY_VOCABULARY),
        }
        try:
            config = CONFIG_MAPPING[spec.model_type](**settings)
        except (TypeError, ValueError) as exc:
            raise AssertionError(
                f"preset {preset}: its settings do not make a {spec.model_type} config: {exc}"
            ) from None
        unknown = sorted(key for key in kwargs if not hasattr(CONFIG_MAPPING[spec.model_type](), key))
        if unknown:
            raise AssertionError(f"preset {preset}: {spec.model_type} configs have no setting(s) {unknown}")
        torch.manual_seed(0)
        model = AutoModelForMaskedLM.from_config(config)
        length = min(32, int(getattr(config, "max_position_embeddings", 32)) - 2)
        input_ids = torch.randint(5, config.vocab_size, (2, length))
        labels = input_ids.clone()
        output = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels)
        if not torch.isfinite(output.loss):
            raise AssertionError(f"preset {preset}: the tiny model's loss is {output.loss.item()}")
        output.loss.backward()
        if not any(p.grad is not None and torch.any(p.grad != 0) for p in model.parameters()):
            raise AssertionError(f"preset {preset}: the backward pass gave no gradient")


# --- task types ---------------------------------------------------------------------------------


def _check_task_type(spec: TaskTypeSpec, contributions: Contributions) -> None:
    """Encode a sample with the formulation, predict with an untrained tiny BERT, decode and score."""
    import torch

    from workers.engine.encoding import LabelSpace
    from workers.engine.formulations import TaskOptions, formulation_for
    from workers.engine.formulations.base import Formulation, ModelSource
    from workers.engine.task import Task
    from workers.engine.tokenization import train_wordpiece
    from workers.engine.training import TrainingContext, predict

    formulation_class = spec.resolve()
    if not (isinstance(formulation_class, type) and issubclass(formulation_class, Formulation)):
        raise AssertionError(f"its formulation {spec.formulation!r} is not a workers.engine Formulation subclass")
    dataset, rows = _sample_dataset(spec, contributions)
    task = Task(dataset, spec, dict(contributions.metrics))
    schema = get_schema(spec.schema)
    tokenizer = train_wordpiece(schema.texts(rows), 256)
    if spec.schema == "regression":
        labels = LabelSpace(("score",), "regression")
    else:
        names = tuple(dataset.labels) or tuple(
            sorted({x for row in rows for x in schema.validate(dict(row), "", True)})
        )
        if spec.schema == "token-tagging" and "O" in names:
            names = ("O", *(n for n in names if n != "O"))
        labels = LabelSpace(names, "multi" if dataset.adapter.multi_label else "single")
    source = ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer))
    formulation = formulation_for(task, labels, tokenizer, TaskOptions(), 512, source)
    features = formulation.encode(rows)
    if not features:
        raise AssertionError("its formulation encodes the sample into no features")
    torch.manual_seed(0)
    model = formulation.build_model(source)
    context = TrainingContext.for_formulation(formulation, torch.device("cpu"), None)
    logits, _ = predict(model, features, context)
    predicted = formulation.decode(features, logits, rows, model)
    if len(predicted) != len(rows):
        raise AssertionError(f"its formulation decoded {len(predicted)} predictions for {len(rows)} examples")
    scores = formulation.score(rows, predicted, logits)
    missing = [slug for slug in task.metric_slugs if slug not in scores]
    if missing:
        raise AssertionError(f"its formulation's scores lack the task's metrics {missing}")


def _sample_dataset(spec: TaskTypeSpec, contributions: Contributions) -> tuple[DatasetSpec, list[dict]]:
    """The plugin's own dataset of this task type and its samples, else the schema's sample."""
    for dataset in contributions.datasets.values():
        if dataset.task_type == spec.slug and dataset.adapter is not None and dataset.adapter.samples:
            loaded = load_dataset_files(dataset, Path(dataset.adapter.samples))
            return dataset, loaded.splits["train"]
    rows = get_schema(spec.schema).sample()
    labels = sorted({x for row in rows for x in get_schema(spec.schema).validate(dict(row), "", True)})
    dataset = DatasetSpec(
        slug=f"{spec.slug}-sample",
        name=f"{spec.name} sample",
        task_type=spec.slug,
        metric=spec.metric,
        domain="biomedical",
        description="The schema's sample examples, for the contract check.",
        labels=tuple(labels),
        adapter=AdapterSpec(schema=spec.schema, reader="biolm.canonical_jsonl:read_canonical_jsonl"),
        negative_label="false" if "false" in labels else "",
    )
    return dataset, [dict(row) for row in rows]


# --- preprocessors and recipes ------------------------------------------------------------------


def _check_preprocessor(spec: PreprocessorSpec, contributions: Contributions) -> None:
    implementation = spec.resolve()
    read = itertools.count()

    def documents() -> Iterator[str]:
        for n in read:
            if n >= STREAM_PROBE_LIMIT:
                raise AssertionError(
                    f"it read {STREAM_PROBE_LIMIT:,} documents without giving 3 back: it must stream "
                    "(yield as it reads) so corpora larger than memory pass through"
                )
            yield f"Document {n}: aspirin 81 mg was given to patient [**Name {n}**] for chest pain."

    produced = implementation(documents())
    if isinstance(produced, str | bytes) or not hasattr(produced, "__iter__"):
        raise AssertionError(f"it returned {type(produced).__name__}, not an iterable of documents")
    first = list(itertools.islice(produced, 3))
    if len(first) < 3:
        raise AssertionError(f"it gave {len(first)} documents for an endless stream of distinct documents")
    for document in first:
        if not isinstance(document, str):
            raise AssertionError(f"it produced {type(document).__name__}, not str")


def _check_recipe(spec: RecipeSpec, contributions: Contributions) -> None:
    if spec.implementation is not None:
        try:
            spec.resolve()
        except ImplementationError as exc:
            raise AssertionError(str(exc)) from None


def _check_protocol(spec: ProtocolSpec, contributions: Contributions) -> None:
    """A plan for every dataset the platform knows, which overrides narrow, and a statistic that combines runs."""
    for dataset in contributions.datasets.values():
        task_type = contributions.task_types[dataset.task_type]
        plan = plan_for(spec, dataset, task_type)
        if not plan.points or plan.seeds < 1:
            raise AssertionError(f"its plan for {dataset.slug} has no points or no seeds")
        single = plan_for(spec, dataset, task_type, Overrides(grid="single", seeds=1, epochs=1))
        if len(single.points) != 1 or single.seeds != 1 or single.points[0].epochs != 1:
            raise AssertionError(f"overrides do not apply to its plan for {dataset.slug}")
    summary = combine([RunValue(None, 42, 70.0), RunValue(None, 43, 80.0), RunValue(None, 44, 90.0)], spec.statistic)
    if summary is None or summary.value != 80.0:
        raise AssertionError(f"its statistic {spec.statistic} does not combine runs")
