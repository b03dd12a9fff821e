"""The kinds of contribution a plugin makes, in one table: everything else about a kind derives from its row.

A row names the kind as :class:`biolm.plugins.Contributions` holds it (``contributions.metrics``), the hook a
plugin implements to contribute it (:mod:`biolm.hookspecs` makes each hook from its row, with the row's
docstring), the spec class the hook returns, the word a code pin uses for one (``metric entity-f1``,
:mod:`biolm.contract.code`), how a fault names its code when it raises (:mod:`biolm.plugin_faults`; empty
for a kind whose contributions run no code of their own), what its contract lets that code raise to refuse
its input rather than to fail, and the plugin kit's check (:func:`biolm.testing.check_plugin`; a kind
without one has its specs validated). Adding a kind is adding a row.

The rows are in the order the contributions are collected: a kind may refer only to kinds above it
(datasets name task types and metrics; benchmarks name datasets, metrics and protocols).
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class ContributionKind:
    name: str  # as Contributions holds it and pins record it: "metrics"
    hook: str  # the hook a plugin implements: "biolm_metrics"
    spec: type  # what the hook returns a list of
    word: str  # one of them, in a pin's words: "metric"
    doc: str  # the hook's docstring, for plugin authors
    runs_as: str = ""  # its code, in a fault's words ("dataset reader"); "" when it runs none
    refuses_with: tuple[type[BaseException], ...] = ()  # what its code may raise to refuse an input
    kit_check: str = ""  # the plugin kit's check of one (a biolm.testing function's name); "": validate() only

    @property
    def runs_code(self) -> bool:
        return bool(self.runs_as)


KINDS: tuple[ContributionKind, ...] = (
    ContributionKind(
        "metrics", "biolm_metrics", MetricSpec, "metric", runs_as="metric", refuses_with=(ValueError,),
        kit_check="_check_metric",
        doc="""Metrics that task types, datasets and benchmark entries may name.

    Return a list of :class:`~biolm.specs.MetricSpec`. ``implementation(gold, predictions,
    **options)`` returns a value on the 0-100 scale the papers print; the engine computes every
    metric, built-in or not, through these specs.
    """,
    ),
    ContributionKind(
        "task_types", "biolm_task_types", TaskTypeSpec, "task type", runs_as="task type formulation",
        refuses_with=(ValueError,), kit_check="_check_task_type",
        doc="""Task families (NER, PICO, relation extraction, QA, ...) and how the engine fine-tunes them.

    Return a list of :class:`~biolm.specs.TaskTypeSpec`: its canonical schema, its formulation
    (a ``workers.engine.formulations.base.Formulation`` subclass or its path), its primary and
    companion metrics, and its protocol defaults (epochs, seeds). The engine dispatches every
    dataset through its task type's formulation.
    """,
    ),
    ContributionKind(
        "architectures", "biolm_architectures", ArchitectureSpec, "architecture", kit_check="_check_architecture",
        doc="""Model families the engine can build (BERT, RoBERTa, Longformer, ...).

    Return a list of :class:`~biolm.specs.ArchitectureSpec`. Slugs must be
    unique across all plugins; a duplicate is reported and the later one skipped.
    """,
    ),
    ContributionKind(
        "recipes", "biolm_pretraining_recipes", RecipeSpec, "recipe", runs_as="recipe implementation",
        kit_check="_check_recipe",
        doc="""Pretraining recipes (objectives and settings, e.g. MLM + WWM + NSP).

    Return a list of :class:`~biolm.specs.RecipeSpec`. ``implementation`` (optional) is the
    objective's code, called by the pretraining engine as
    ``implementation(settings=..., objectives=...)``; a recipe without one describes a paper's
    setup and is refused by name when someone asks to pretrain with it.
    """,
    ),
    ContributionKind(
        "preprocessors", "biolm_corpus_preprocessors", PreprocessorSpec, "preprocessor",
        runs_as="corpus preprocessor", kit_check="_check_preprocessor",
        doc="""Corpus preprocessors applied to pretraining corpora (:mod:`biolm.corpus`).

    Return a list of :class:`~biolm.specs.PreprocessorSpec` whose ``implementation`` (a callable
    or ``"module:function"``) takes an iterable of documents and returns an iterable of
    documents, streaming: one document in, its result out, so corpora larger than memory pass.
    """,
    ),
    ContributionKind(
        "datasets", "biolm_datasets", DatasetSpec, "dataset", runs_as="dataset reader", kit_check="_check_dataset",
        doc="""Datasets with their task type, default metric, splits, licence, citation and adapter.

    Return a list of :class:`~biolm.specs.DatasetSpec`. Its ``task_type`` must be a contributed
    task type whose schema is the adapter's; its ``adapter.reader`` (``"module:function"``) reads
    the official files into that schema, and ``adapter.samples`` points at a few sample files.
    Benchmarks refer to datasets by slug, so a benchmark whose datasets no plugin provides is
    reported and skipped.
    """,
    ),
    ContributionKind(
        "protocols", "biolm_protocols", ProtocolSpec, "protocol", runs_as="protocol planner",
        kit_check="_check_protocol",
        doc="""Fine-tuning protocols: a paper's procedure (grid, checkpoint choice, seeds, folds, statistic).

    Return a list of :class:`~biolm.specs.ProtocolSpec`. A benchmark names the protocol its paper
    used (``BenchmarkSpec.protocol``); a benchmark whose protocol no plugin provides is reported and
    skipped. The ``planner`` is called as ``planner(dataset, task_type)`` and returns a
    :class:`biolm.protocols.Plan`; the statistic over the runs is computed by
    :func:`biolm.protocols.combine`, the same for the engine, the recording and the honest ranks'
    bootstrap. Every job that runs a protocol pins the plugin that contributed it.
    """,
    ),
    ContributionKind(
        "benchmarks", "biolm_benchmarks", BenchmarkSpec, "benchmark",
        doc="""Benchmarks: entries (dataset x metric), groups, aggregation, published results.

    Return a list of :class:`~biolm.specs.BenchmarkSpec`. Changing a
    benchmark's aggregation requires a new ``aggregation.version``; the platform
    then recomputes every stored score of that benchmark.
    """,
    ),
)  # fmt: skip


def kind_named(name: str) -> ContributionKind | None:
    return next((kind for kind in KINDS if kind.name == name), None)
