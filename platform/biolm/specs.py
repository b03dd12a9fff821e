"""The plain dataclasses that plugin hooks return.

Plugins never import Django or the platform's models: they describe what they
contribute with these frozen dataclasses, and the platform validates them on
load (``validate()`` raises :class:`SpecError` with a message naming the field)
before syncing them into the database. Keeping them free of Django lets the
Celery workers and the engine use the same descriptions.

Slugs are stable, lower-case identifiers (``blurb``, ``ncbi-disease``) that
appear in URLs, command lines and score files, so they are validated strictly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

SLUG_RE = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")

TASK_TYPES = (
    "ner",
    "pico",
    "relation-extraction",
    "sentence-similarity",
    "document-classification",
    "question-answering",
    "nli",
    "deidentification",
    "extractive-qa",
)
DOMAINS = ("biomedical", "clinical")
# Canonical example schemas (after BigBIO); their datasets.Features live in biolm.schemas.
SCHEMA_NAMES = ("token-tagging", "classification", "regression", "relation", "extractive-qa")
SPLIT_NAMES = ("train", "dev", "test")
AGGREGATION_METHODS = ("mean", "mean_of_groups", "weighted_mean_of_groups")


class SpecError(ValueError):
    """A plugin returned a description that cannot be used."""


def check_slug(value: str, what: str) -> None:
    """Raise SpecError unless ``value`` is a lower-case slug."""
    if not isinstance(value, str) or not SLUG_RE.match(value):
        raise SpecError(f"{what} {value!r} is not a lower-case slug (letters, digits, '-', '_', '.')")


def _require_text(value: object, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{what} must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class ArchitectureSpec:
    """A model family the engine can build from a config or load from a checkpoint.

    ``presets`` maps a preset name (``tiny``, ``base``, ``large``) to the
    keyword arguments of the Hugging Face config class named by ``model_type``.
    """

    slug: str
    name: str
    model_type: str
    description: str
    presets: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    max_sequence_length: int = 512
    citation: str = ""

    def validate(self) -> None:
        check_slug(self.slug, "architecture slug")
        _require_text(self.name, f"architecture {self.slug}: name")
        _require_text(self.model_type, f"architecture {self.slug}: model_type")
        if self.max_sequence_length <= 0:
            raise SpecError(f"architecture {self.slug}: max_sequence_length must be positive")
        for preset in self.presets:
            check_slug(preset, f"architecture {self.slug}: preset")


@dataclass(frozen=True)
class RecipeSpec:
    """A pretraining recipe: objectives and the settings a paper used."""

    slug: str
    name: str
    description: str
    objectives: tuple[str, ...]
    settings: Mapping[str, object] = field(default_factory=dict)
    citation: str = ""

    def validate(self) -> None:
        check_slug(self.slug, "recipe slug")
        _require_text(self.name, f"recipe {self.slug}: name")
        if not self.objectives:
            raise SpecError(f"recipe {self.slug}: objectives must name at least one objective")


@dataclass(frozen=True)
class SplitSpec:
    """One split of a dataset and its size in the paper's unit (``unit``)."""

    name: Literal["train", "dev", "test"]
    size: int | None
    unit: str = "examples"


@dataclass(frozen=True)
class AdapterSpec:
    """How to read a dataset's official distribution files into a canonical schema.

    ``reader`` is ``"module:function"``; the function is called as
    ``reader(directory, **options)`` and returns ``{split: [example, ...]}``, each
    example a dict in the ``schema`` plus a ``"_where"`` key (``"file:line"``) that
    validation errors quote. ``default_path`` is relative to BIOLM_DATA_DIR.
    ``optional_splits`` may be absent from a distribution (say why in the docstring).
    """

    schema: str
    reader: str
    options: Mapping[str, object] = field(default_factory=dict)
    default_path: str = ""
    optional_splits: tuple[str, ...] = ()
    multi_label: bool = False

    def validate(self, dataset: str) -> None:
        if self.schema not in SCHEMA_NAMES:
            raise SpecError(f"dataset {dataset}: adapter schema {self.schema!r} is not one of {SCHEMA_NAMES}")
        module, _, function = self.reader.partition(":")
        if not module or not function:
            raise SpecError(f"dataset {dataset}: adapter reader {self.reader!r} must look like 'module:function'")
        unknown = sorted(set(self.optional_splits) - set(SPLIT_NAMES))
        if unknown:
            raise SpecError(f"dataset {dataset}: unknown optional splits {unknown}")


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset: what it is, how it is scored, and its terms of use.

    ``metric`` is the dataset's default metric slug; a benchmark may score the
    same dataset with another metric (ChemProt: micro F1 in BLURB, macro F1 in
    Lewis et al.), which is why benchmark entries name their metric too.
    """

    slug: str
    name: str
    task_type: str
    metric: str
    domain: Literal["biomedical", "clinical"]
    description: str
    splits: tuple[SplitSpec, ...] = ()
    source: str = ""
    licence: str = ""
    citation: str = ""
    labels: tuple[str, ...] = ()
    access: Literal["public", "restricted"] = "public"
    adapter: AdapterSpec | None = None
    demo: bool = False

    def validate(self) -> None:
        check_slug(self.slug, "dataset slug")
        if self.adapter is not None:
            self.adapter.validate(self.slug)
        _require_text(self.name, f"dataset {self.slug}: name")
        if self.task_type not in TASK_TYPES:
            raise SpecError(f"dataset {self.slug}: task_type {self.task_type!r} is not one of {TASK_TYPES}")
        check_slug(self.metric, f"dataset {self.slug}: metric")
        if self.domain not in DOMAINS:
            raise SpecError(f"dataset {self.slug}: domain {self.domain!r} is not one of {DOMAINS}")
        names = [s.name for s in self.splits]
        if len(names) != len(set(names)):
            raise SpecError(f"dataset {self.slug}: split names repeat: {names}")
        for split in self.splits:
            if split.name not in ("train", "dev", "test"):
                raise SpecError(f"dataset {self.slug}: unknown split {split.name!r}")
            if split.size is not None and split.size < 0:
                raise SpecError(f"dataset {self.slug}: split {split.name} has a negative size")


@dataclass(frozen=True)
class TaskTypeSpec:
    """A task formulation family (NER, relation extraction, ...)."""

    slug: str
    name: str
    description: str

    def validate(self) -> None:
        check_slug(self.slug, "task type slug")
        _require_text(self.name, f"task type {self.slug}: name")


@dataclass(frozen=True)
class MetricSpec:
    """A metric, reported on a 0-100 scale as the papers print it."""

    slug: str
    name: str
    description: str
    higher_is_better: bool = True

    def validate(self) -> None:
        check_slug(self.slug, "metric slug")
        _require_text(self.name, f"metric {self.slug}: name")


@dataclass(frozen=True)
class EntrySpec:
    """One scored column of a benchmark: a dataset, a metric and an optional variant.

    Most entries are simply a dataset with its metric and ``key`` equal to the
    dataset slug. Papers that report several numbers per dataset (Bioformer's
    BioASQ factoid: strict/lenient accuracy and MRR, with and without SQuAD
    pre-fine-tuning) get one entry per number, each with its own ``key``.
    """

    key: str
    dataset: str
    metric: str
    label: str = ""
    variant: str = ""

    def validate(self, benchmark: str) -> None:
        check_slug(self.key, f"benchmark {benchmark}: entry key")
        check_slug(self.dataset, f"benchmark {benchmark}: entry {self.key}: dataset")
        check_slug(self.metric, f"benchmark {benchmark}: entry {self.key}: metric")


@dataclass(frozen=True)
class GroupSpec:
    """A named group of entries; its score is the plain mean of its entries."""

    slug: str
    name: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class SummarySpec:
    """A summary column computed from entries or groups.

    ``method``:
      * ``mean`` -- plain mean over the entry keys in ``members``
        (all entries when ``members`` is empty);
      * ``mean_of_groups`` -- plain mean over the group scores named in
        ``members`` (BLURB: macro average over task types);
      * ``weighted_mean_of_groups`` -- sum(weight * group score) / sum(weight)
        (Bioformer: (NER*8 + RE*4 + DC*2 + QA) / 15).
    """

    slug: str
    name: str
    method: Literal["mean", "mean_of_groups", "weighted_mean_of_groups"]
    members: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()


@dataclass(frozen=True)
class AggregationSpec:
    """How a benchmark turns per-entry numbers into its summary score.

    ``version`` must change whenever the definition changes; the platform keeps
    the version each stored score was computed with and recomputes scores whose
    version differs. ``primary`` names the summary shown as the leaderboard score.
    """

    version: str
    primary: str
    groups: tuple[GroupSpec, ...] = ()
    summaries: tuple[SummarySpec, ...] = ()
    show_group_scores: bool = True


@dataclass(frozen=True)
class PublishedModelSpec:
    """A model row of a paper's results table, loaded as a "reported" result.

    ``scores`` maps entry keys to the published numbers. ``reported_summaries``
    holds the paper's own summary columns (group means, overall scores) exactly
    as printed, so tests can recompute them through the platform's aggregation.
    """

    slug: str
    name: str
    scores: Mapping[str, float]
    architecture: str = "bert"
    parameters: int | None = None
    vocabulary: str = ""
    pretraining_corpus: str = ""
    max_sequence_length: int | None = None
    hf_checkpoint: str = ""
    reported_summaries: Mapping[str, float] = field(default_factory=dict)
    notes: str = ""
    source: str = ""  # the table this row comes from, when not the benchmark's published_source


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark: its entries, its aggregation and the paper's published results."""

    slug: str
    name: str
    description: str
    entries: tuple[EntrySpec, ...]
    aggregation: AggregationSpec
    citation: str = ""
    source_paper: str = ""
    published: tuple[PublishedModelSpec, ...] = ()
    published_source: str = ""
    precision: int = 2

    def entry_keys(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.entries)

    def validate(self) -> None:
        check_slug(self.slug, "benchmark slug")
        _require_text(self.name, f"benchmark {self.slug}: name")
        if not self.entries:
            raise SpecError(f"benchmark {self.slug}: has no entries")
        keys = self.entry_keys()
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise SpecError(f"benchmark {self.slug}: entry keys repeat: {dupes}")
        for entry in self.entries:
            entry.validate(self.slug)
        self._validate_aggregation(set(keys))
        self._validate_published(set(keys))

    def _validate_aggregation(self, keys: set[str]) -> None:
        agg = self.aggregation
        _require_text(agg.version, f"benchmark {self.slug}: aggregation version")
        group_slugs = {g.slug for g in agg.groups}
        for group in agg.groups:
            check_slug(group.slug, f"benchmark {self.slug}: group slug")
            unknown = sorted(set(group.members) - keys)
            if unknown or not group.members:
                raise SpecError(f"benchmark {self.slug}: group {group.slug} has unknown or no entries: {unknown}")
        summary_slugs = {s.slug for s in agg.summaries}
        if agg.primary not in summary_slugs | group_slugs:
            raise SpecError(f"benchmark {self.slug}: primary {agg.primary!r} is neither a summary nor a group")
        for summary in agg.summaries:
            check_slug(summary.slug, f"benchmark {self.slug}: summary slug")
            if summary.method not in AGGREGATION_METHODS:
                raise SpecError(
                    f"benchmark {self.slug}: summary {summary.slug} method {summary.method!r} "
                    f"is not one of {AGGREGATION_METHODS}"
                )
            pool = keys if summary.method == "mean" else group_slugs
            unknown = sorted(set(summary.members) - pool)
            if unknown:
                raise SpecError(f"benchmark {self.slug}: summary {summary.slug} names unknown members {unknown}")
            if summary.method != "mean" and not summary.members:
                raise SpecError(f"benchmark {self.slug}: summary {summary.slug} must name its groups")
            if summary.method == "weighted_mean_of_groups" and (
                len(summary.weights) != len(summary.members) or any(w <= 0 for w in summary.weights)
            ):
                raise SpecError(f"benchmark {self.slug}: summary {summary.slug} needs one positive weight per group")

    def _validate_published(self, keys: set[str]) -> None:
        seen: set[str] = set()
        for model in self.published:
            check_slug(model.slug, f"benchmark {self.slug}: published model slug")
            if model.slug in seen:
                raise SpecError(f"benchmark {self.slug}: published model {model.slug} appears twice")
            seen.add(model.slug)
            unknown = sorted(set(model.scores) - keys)
            if unknown:
                raise SpecError(f"benchmark {self.slug}: published model {model.slug} scores unknown entries {unknown}")
            for key, value in model.scores.items():
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    raise SpecError(f"benchmark {self.slug}: {model.slug}.{key} is not a number: {value!r}")


@dataclass(frozen=True)
class PreprocessorSpec:
    """A corpus preprocessor (sentence splitting, de-identification tag handling, ...)."""

    slug: str
    name: str
    description: str
    callable_path: str

    def validate(self) -> None:
        check_slug(self.slug, "preprocessor slug")
        _require_text(self.callable_path, f"preprocessor {self.slug}: callable_path")
