"""Every hook a biolm plugin can implement, one docstring each.

A plugin is a module or object with functions decorated by
``pluggy.HookimplMarker("biolm")``; it never needs to import the platform.
Each hook returns a list of dataclasses from :mod:`biolm.specs` (or ``None``
to contribute nothing). All answers are collected: no hook here is
``firstresult``, because several plugins may each contribute, say, datasets.

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

    Return a list of :class:`~biolm.specs.RecipeSpec`.
    """


@hookspec
def biolm_datasets() -> list[DatasetSpec] | None:
    """Datasets with their task type, default metric, splits, licence and citation.

    Return a list of :class:`~biolm.specs.DatasetSpec`. Benchmarks refer to
    datasets by slug, so a benchmark whose datasets no plugin provides is
    reported and skipped.
    """


@hookspec
def biolm_task_types() -> list[TaskTypeSpec] | None:
    """Task formulation families (NER, PICO, relation extraction, QA, ...).

    Return a list of :class:`~biolm.specs.TaskTypeSpec`.
    """


@hookspec
def biolm_metrics() -> list[MetricSpec] | None:
    """Metrics that datasets and benchmark entries may name.

    Return a list of :class:`~biolm.specs.MetricSpec`; values are on the
    0-100 scale the papers print.
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
    """Corpus preprocessors applied before pretraining or fine-tuning.

    Return a list of :class:`~biolm.specs.PreprocessorSpec` whose
    ``callable_path`` (``module:function``) takes and returns an iterable of
    strings.
    """
