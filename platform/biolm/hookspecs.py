"""Every hook a biolm plugin can implement, one docstring each (docs/plugins.md has examples).

A plugin is a module or object with functions decorated by ``biolm.hookimpl``
(``from biolm import hookimpl``); it never needs to import the platform's Django code.
Each hook returns a list of dataclasses from :mod:`biolm.specs` (or ``None``
to contribute nothing). All answers are collected: no hook here is
``firstresult``, because several plugins may each contribute, say, datasets.

Every contribution is something the platform executes, not only a description: metrics carry
their implementation, task types their formulation, preprocessors their streaming function,
dataset adapters their reader, architectures their config presets, recipes (optionally) their
objective, protocols their planner. Implementations are callables or ``"module:function"`` paths,
imported only when used.

Hooks only grow by adding arguments, so an implementation may accept any
subset of the documented arguments (pluggy passes only the ones it names).
"""

from __future__ import annotations

import pluggy

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

PROJECT_NAME = "biolm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


@hookspec
def biolm_architectures() -> list[ArchitectureSpec] | None:
    """Model families the engine can build (BERT, RoBERTa, Longformer, ...).

    Return a list of :class:`~biolm.specs.ArchitectureSpec`. Slugs must be
    unique across all plugins; a duplicate is reported and the later one skipped.
    """


@hookspec
def biolm_pretraining_recipes() -> list[RecipeSpec] | None:
    """Pretraining recipes (objectives and settings, e.g. MLM + WWM + NSP).

    Return a list of :class:`~biolm.specs.RecipeSpec`. ``implementation`` (optional) is the
    objective's code, called by the pretraining engine as
    ``implementation(settings=..., objectives=...)``; a recipe without one describes a paper's
    setup and is refused by name when someone asks to pretrain with it.
    """


@hookspec
def biolm_datasets() -> list[DatasetSpec] | None:
    """Datasets with their task type, default metric, splits, licence, citation and adapter.

    Return a list of :class:`~biolm.specs.DatasetSpec`. Its ``task_type`` must be a contributed
    task type whose schema is the adapter's; its ``adapter.reader`` (``"module:function"``) reads
    the official files into that schema, and ``adapter.samples`` points at a few sample files.
    Benchmarks refer to datasets by slug, so a benchmark whose datasets no plugin provides is
    reported and skipped.
    """


@hookspec
def biolm_task_types() -> list[TaskTypeSpec] | None:
    """Task families (NER, PICO, relation extraction, QA, ...) and how the engine fine-tunes them.

    Return a list of :class:`~biolm.specs.TaskTypeSpec`: its canonical schema, its formulation
    (a ``workers.engine.formulations.base.Formulation`` subclass or its path), its primary and
    companion metrics, and its protocol defaults (epochs, seeds). The engine dispatches every
    dataset through its task type's formulation.
    """


@hookspec
def biolm_metrics() -> list[MetricSpec] | None:
    """Metrics that task types, datasets and benchmark entries may name.

    Return a list of :class:`~biolm.specs.MetricSpec`. ``implementation(gold, predictions,
    **options)`` returns a value on the 0-100 scale the papers print; the engine computes every
    metric, built-in or not, through these specs.
    """


@hookspec
def biolm_benchmarks() -> list[BenchmarkSpec] | None:
    """Benchmarks: entries (dataset x metric), groups, aggregation, published results.

    Return a list of :class:`~biolm.specs.BenchmarkSpec`. Changing a
    benchmark's aggregation requires a new ``aggregation.version``; the platform
    then recomputes every stored score of that benchmark.
    """


@hookspec
def biolm_corpus_preprocessors() -> list[PreprocessorSpec] | None:
    """Corpus preprocessors applied to pretraining corpora (:mod:`biolm.corpus`).

    Return a list of :class:`~biolm.specs.PreprocessorSpec` whose ``implementation`` (a callable
    or ``"module:function"``) takes an iterable of documents and returns an iterable of
    documents, streaming: one document in, its result out, so corpora larger than memory pass.
    """


@hookspec
def biolm_protocols() -> list[ProtocolSpec] | None:
    """Fine-tuning protocols: a paper's procedure (grid, checkpoint choice, seeds, folds, statistic).

    Return a list of :class:`~biolm.specs.ProtocolSpec`. A benchmark names the protocol its paper
    used (``BenchmarkSpec.protocol``); a benchmark whose protocol no plugin provides is reported and
    skipped. The ``planner`` is called as ``planner(dataset, task_type)`` and returns a
    :class:`biolm.protocols.Plan`; the statistic over the runs is computed by
    :func:`biolm.protocols.combine`, the same for the engine, the recording and the honest ranks'
    bootstrap. Every job that runs a protocol pins the plugin that contributed it.
    """
