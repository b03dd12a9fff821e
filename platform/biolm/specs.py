"""The plain dataclasses that plugin hooks return: the contribution declarations.

Plugins never import Django or the platform's models: they describe what they
contribute with these frozen dataclasses, and the platform validates them on
load (``validate()`` raises :class:`SpecError` with a message naming the field)
before syncing them into the database. Keeping them free of Django lets the
Celery workers and the engine use the same descriptions.

What they are checked with lives apart, each in the module of its concept: the column sizes
(:mod:`biolm.column_limits`), the shapes of names (:mod:`biolm.name_patterns`), the checks and
:class:`SpecError` (:mod:`biolm.spec_checks`) and a published row's model (:mod:`biolm.model_identity`).
Plugins import them all from here, as before.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from biolm.column_limits import (
    BIG_INTEGER_MAX,
    CHECKPOINT_MAX,
    CORPUS_MAX,
    INTEGER_MAX,
    LABEL_MAX,
    LANGUAGE_MODEL_SLUG_MAX,
    MODEL_TYPE_MAX,
    NAME_MAX,
    SLUG_MAX,
    SOURCE_MAX,
    VERSION_MAX,
    VOCABULARY_MAX,
)
from biolm.model_identity import PAPERS_NAMESPACE, ModelIdentity
from biolm.name_patterns import CALLABLE_PATH_RE, HUB_ID_RE
from biolm.spec_checks import SpecError, check_slug
from biolm.spec_checks import check_count as _check_count
from biolm.spec_checks import check_finite as _check_finite
from biolm.spec_checks import check_json as _check_json
from biolm.spec_checks import check_length as _check_length
from biolm.spec_checks import require_text as _require_text

# Names that moved to the module of their concept and that this module no longer uses itself: still read from
# here, with a DeprecationWarning, until 0.2 (docs/plugins.md, "Changes").
_MOVED = {"NAMESPACE_MAX": "biolm.column_limits", "ADDRESS_RE": "biolm.name_patterns", "SLUG_RE": "biolm.name_patterns"}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module 'biolm.specs' has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(f"biolm.specs.{name} moved to {_MOVED[name]}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_MOVED[name]), name)


DEFAULT_PROTOCOL = "blurb"  # a benchmark's fine-tuning protocol when it names none: Gu et al. 2021's


DOMAINS = ("biomedical", "clinical")
# Canonical example schemas (after BigBIO); their datasets.Features live in biolm.schemas.
SCHEMA_NAMES = ("token-tagging", "classification", "regression", "relation", "extractive-qa")
SPLIT_NAMES = ("train", "dev", "test")
AGGREGATION_METHODS = ("mean", "mean_of_groups", "weighted_mean_of_groups")
# What a protocol may report over its runs (biolm.protocols.combine computes it).
STATISTICS = ("mean", "median")


class ImplementationError(RuntimeError):
    """A plugin's implementation cannot be imported, or broke its contract when called.

    Not a ``ValueError``: the engine reads ``ValueError`` from a metric as "undefined on this
    split" and records ``None``, while a broken plugin must stop the run with its name.
    ``contribution`` is ``(kind, slug)`` as :class:`biolm.plugins.Contributions` names them
    (``("metrics", "f1")``), so the error can be charged to the plugin that contributed it.
    """

    def __init__(self, message: str, contribution: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.contribution = contribution


class ContractBreach(ImplementationError):
    """A contribution's code returned without raising, but what it gave breaks its contract.

    A metric that returns NaN or a value outside its range, a reader that yields no examples: the
    fault is the plugin's, yet no line of its code raised, so ``conduct`` says what it did
    ("returned nan, not a finite number"), worded to follow the contribution's name, and
    ``implementation`` names the code that did it. :class:`biolm.plugin_faults.PluginFault` words
    the one line a job's error shows; ``str()`` keeps the subject ("metric f1 returned nan, ...").
    """

    def __init__(
        self, subject: str, conduct: str, contribution: tuple[str, str], implementation: object = None
    ) -> None:
        super().__init__(f"{subject} {conduct}", contribution)
        self.conduct = conduct
        self.implementation = implementation


Implementation = Callable[..., Any] | str


def check_implementation(value: object, what: str) -> None:
    """Raise SpecError unless ``value`` is a callable or a ``"module:attribute"`` path.

    Paths are not imported here: a web server that only lists plugins must not need torch.
    """
    if callable(value):
        return
    if not isinstance(value, str) or not CALLABLE_PATH_RE.match(value):
        raise SpecError(f"{what} must be a callable or a 'module:attribute' path, got {value!r}")


def resolve_implementation(value: Implementation, what: str, contribution: tuple[str, str] | None = None) -> Any:
    """The object ``value`` names: itself when callable, else ``module:attribute`` imported."""
    if callable(value):
        return value
    module_name, _, attribute = str(value).partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ImplementationError(
            f"{what}: cannot import {value!r}: {type(exc).__name__}: {exc}", contribution
        ) from exc
    if not callable(target):
        raise ImplementationError(f"{what}: {value!r} is a {type(target).__name__}, not a callable", contribution)
    return target


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
        _require_text(self.model_type, f"architecture {self.slug}: model_type", MODEL_TYPE_MAX)
        _check_count(self.max_sequence_length, f"architecture {self.slug}: max_sequence_length", INTEGER_MAX, False)
        for preset in self.presets:
            check_slug(preset, f"architecture {self.slug}: preset")
        _check_json(dict(self.presets), f"architecture {self.slug}: presets")


@dataclass(frozen=True)
class RecipeSpec:
    """A pretraining recipe: its objectives, the settings a paper used, and the code that trains it.

    ``objectives`` name the losses the recipe combines (``mlm``, ``mlm-whole-word``, ``nsp``, ...),
    ``settings`` the paper's numbers (mask rate, batch size, steps). ``implementation`` is the
    objective's code, a callable or ``"module:function"``, called as
    ``implementation(settings=..., objectives=...)`` by the pretraining engine to build the
    objective it trains. A recipe without one only describes a paper's setup: it is listed and
    stored, and refused, by name, when someone asks to pretrain with it.
    """

    slug: str
    name: str
    description: str
    objectives: tuple[str, ...]
    settings: Mapping[str, object] = field(default_factory=dict)
    citation: str = ""
    implementation: Implementation | None = None

    def validate(self) -> None:
        check_slug(self.slug, "recipe slug")
        _require_text(self.name, f"recipe {self.slug}: name")
        if not self.objectives or isinstance(self.objectives, str):
            raise SpecError(f"recipe {self.slug}: objectives must be a tuple naming at least one objective")
        for objective in self.objectives:
            check_slug(objective, f"recipe {self.slug}: objective")
        if not isinstance(self.settings, Mapping):
            raise SpecError(f"recipe {self.slug}: settings must be a mapping, got {type(self.settings).__name__}")
        _check_json(dict(self.settings), f"recipe {self.slug}: settings")
        if self.implementation is not None:
            check_implementation(self.implementation, f"recipe {self.slug}: implementation")

    def resolve(self) -> Callable[..., Any]:
        """The objective's implementation; the error says when the recipe has none."""
        if self.implementation is None:
            raise ImplementationError(
                f"recipe {self.slug!r} describes a paper's settings but names no implementation to pretrain with"
            )
        return resolve_implementation(self.implementation, f"recipe {self.slug}", ("recipes", self.slug))


@dataclass(frozen=True)
class SplitSpec:
    """One split of a dataset and its size in the paper's unit (``unit``)."""

    name: Literal["train", "dev", "test"]
    size: int | None
    unit: str = "examples"


@dataclass(frozen=True)
class CrossValidationSpec:
    """A dataset's k-fold distribution, read fold by fold by the protocols that evaluate on folds.

    Lewis et al. 2020 score GAD and EU-ADR on BioBERT's 10 cross-validation folds (hyperparameters chosen
    on one fold, the median reported over the other nine), while BLURB reads one fixed split of
    GAD. ``locate`` is ``"module:function"`` called as ``locate(directory, folds)``; it returns
    ``{fold number: fold directory}`` for the folds present, so a protocol can name the missing
    ones instead of silently using fewer. ``reader`` reads one fold directory, as an adapter's
    reader does, into train and test (dev is optional: the protocol validates on a fold's test).
    ``default_path`` is the folds' root, relative to BIOLM_DATA_DIR.
    """

    folds: int
    locate: str
    reader: str
    default_path: str = ""
    options: Mapping[str, object] = field(default_factory=dict)

    def validate(self, dataset: str) -> None:
        if isinstance(self.folds, bool) or not isinstance(self.folds, int) or not 2 <= self.folds <= 100:
            raise SpecError(f"dataset {dataset}: cross_validation folds must be a whole number from 2 to 100")
        for name in ("locate", "reader"):
            if not CALLABLE_PATH_RE.match(str(getattr(self, name))):
                raise SpecError(f"dataset {dataset}: cross_validation {name} must look like 'module:function'")
        _check_json(dict(self.options), f"dataset {dataset}: cross_validation options")


@dataclass(frozen=True)
class AdapterSpec:
    """How to read a dataset's official distribution files into a canonical schema.

    ``reader`` is ``"module:function"``; the function is called as
    ``reader(directory, **options)`` and returns ``{split: [example, ...]}``, each
    example a dict in the ``schema`` plus a ``"_where"`` key (``"file:line"``) that
    validation errors quote. ``default_path`` is relative to BIOLM_DATA_DIR.
    ``optional_splits`` may be absent from a distribution (say why in the docstring).
    ``samples`` is a directory of a few examples in exactly the official format, shipped with the
    plugin, that :func:`biolm.testing.check_plugin` reads to prove the reader works.
    ``cross_validation`` describes the dataset's k-fold distribution, when it has one.
    ``test_types`` (``"module:function"``, optional) reads, beside the files, a copy of the test
    split with the entity types the distribution merged (JNLPBA's GENIA types): called as
    ``function(directory, test_rows)``, it returns ``{example id: typed tags}``, None when the
    copy is absent, and raises :class:`DataFormatError` when it does not align with the test rows.
    The import keeps it beside the examples (their fingerprint unchanged) for the per-class pages.
    """

    schema: str
    reader: str
    options: Mapping[str, object] = field(default_factory=dict)
    default_path: str = ""
    optional_splits: tuple[str, ...] = ()
    multi_label: bool = False
    samples: str = ""
    cross_validation: CrossValidationSpec | None = None
    test_types: str = ""

    def validate(self, dataset: str) -> None:
        if self.schema not in SCHEMA_NAMES:
            raise SpecError(f"dataset {dataset}: adapter schema {self.schema!r} is not one of {SCHEMA_NAMES}")
        module, _, function = self.reader.partition(":")
        if not module or not function:
            raise SpecError(f"dataset {dataset}: adapter reader {self.reader!r} must look like 'module:function'")
        unknown = sorted(set(self.optional_splits) - set(SPLIT_NAMES))
        if unknown:
            raise SpecError(f"dataset {dataset}: unknown optional splits {unknown}")
        _check_json(dict(self.options), f"dataset {dataset}: adapter options")
        if self.cross_validation is not None:
            self.cross_validation.validate(dataset)


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset: what it is, how it is scored, and its terms of use.

    ``metric`` is the dataset's default metric slug; a benchmark may score the
    same dataset with another metric (ChemProt: micro F1 in BLURB, macro F1 in
    Lewis et al.), which is why benchmark entries name their metric too.

    ``text_shareable`` says that the dataset's licence lets anyone redistribute its text (CC BY, MIT, GPL):
    the readers' dev-example viewer then shows it; otherwise it shows ids, labels and predictions only.
    Invented demo data (``demo``) is always shown.

    ``hub_dataset`` is the dataset's id on the Hugging Face Hub (``org/name``) where one exists, and
    ``hub_task`` the task within it that the Hub's evaluation results name (default: the slug): a model's
    results then also come in the Hub's ``.eval_results`` form (:mod:`leaderboard.hub_card`).

    ``task_type`` names a contributed :class:`TaskTypeSpec`; the adapter's schema must be that
    task type's. ``negative_label`` is the class that "positive-class" metrics leave out
    (ChemProt's ``false``, DDI's ``DDI-false``, GAD's ``0``). ``seeds`` and ``epochs`` override
    the task type's protocol defaults for this dataset (Gu et al. 2021 run 10 seeds on the small,
    high-variance BIOSSES, BioASQ and PubMedQA); ``companion_metrics``, when given, replaces the
    task type's (BioASQ factoid reports lenient accuracy and MRR beside strict accuracy).
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
    negative_label: str = ""
    seeds: int | None = None
    epochs: int | None = None
    companion_metrics: tuple[str, ...] | None = None  # None: the task type's
    hub_dataset: str = ""
    hub_task: str = ""
    text_shareable: bool = False

    def validate(self) -> None:
        check_slug(self.slug, "dataset slug")
        if self.hub_dataset and not HUB_ID_RE.match(self.hub_dataset):
            raise SpecError(f"dataset {self.slug}: hub_dataset {self.hub_dataset!r} is not a Hub id (org/name)")
        if self.hub_task:
            _check_length(self.hub_task, NAME_MAX, f"dataset {self.slug}: hub_task")
        if self.adapter is not None:
            self.adapter.validate(self.slug)
        _require_text(self.name, f"dataset {self.slug}: name")
        # Any contributed task type is accepted; collect_contributions checks that one exists.
        check_slug(self.task_type, f"dataset {self.slug}: task_type")
        check_slug(self.metric, f"dataset {self.slug}: metric")
        for label in self.labels:
            _check_length(label, NAME_MAX, f"dataset {self.slug}: label")
        if self.labels and self.negative_label and self.negative_label not in self.labels:
            raise SpecError(f"dataset {self.slug}: negative_label {self.negative_label!r} is not one of its labels")
        for name in ("seeds", "epochs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise SpecError(f"dataset {self.slug}: {name} must be a positive integer, got {value!r}")
        if self.companion_metrics is not None:
            if isinstance(self.companion_metrics, str):
                raise SpecError(f"dataset {self.slug}: companion_metrics must be a tuple of metric slugs")
            for slug in self.companion_metrics:
                check_slug(slug, f"dataset {self.slug}: companion metric")
        if self.domain not in DOMAINS:
            raise SpecError(f"dataset {self.slug}: domain {self.domain!r} is not one of {DOMAINS}")
        names = [s.name for s in self.splits]
        if len(names) != len(set(names)):
            raise SpecError(f"dataset {self.slug}: split names repeat: {names}")
        for split in self.splits:
            if split.name not in ("train", "dev", "test"):
                raise SpecError(f"dataset {self.slug}: unknown split {split.name!r}")
            if split.size is not None and (
                isinstance(split.size, bool) or not isinstance(split.size, int) or split.size < 0
            ):
                raise SpecError(f"dataset {self.slug}: split {split.name} size must be a whole number >= 0")


@dataclass(frozen=True)
class TaskTypeSpec:
    """A task family (NER, relation extraction, ...) and how the engine fine-tunes it.

    ``schema`` is the canonical example schema its datasets use (``biolm.schemas``);
    ``formulation`` the engine's way of casting it onto an encoder, a subclass of
    ``workers.engine.formulations.base.Formulation`` or its ``"module:Class"`` path;
    ``metric`` its primary metric and ``companion_metrics`` the ones reported beside it.
    ``epochs`` and ``seeds`` are its protocol defaults (Gu et al. 2021, section 6.2: epochs are tuned
    per dataset in 2-60 and not printed; datasets may override both). ``multi_element``: a word
    may carry several tags joined by ``|`` (PICO, Gu et al. 2021, section 5), so token formulations
    predict a set of elements per word.
    """

    slug: str
    name: str
    description: str
    schema: str
    formulation: Implementation
    metric: str
    companion_metrics: tuple[str, ...] = ()
    epochs: int = 10
    seeds: int = 5
    multi_element: bool = False

    def validate(self) -> None:
        check_slug(self.slug, "task type slug")
        _require_text(self.name, f"task type {self.slug}: name")
        if self.schema not in SCHEMA_NAMES:
            raise SpecError(f"task type {self.slug}: schema {self.schema!r} is not one of {SCHEMA_NAMES}")
        check_implementation(self.formulation, f"task type {self.slug}: formulation")
        check_slug(self.metric, f"task type {self.slug}: metric")
        if isinstance(self.companion_metrics, str):
            raise SpecError(f"task type {self.slug}: companion_metrics must be a tuple of metric slugs")
        for slug in self.companion_metrics:
            check_slug(slug, f"task type {self.slug}: companion metric")
        for name in ("epochs", "seeds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"task type {self.slug}: {name} must be a positive integer, got {value!r}")
        if self.multi_element and self.schema != "token-tagging":
            raise SpecError(f"task type {self.slug}: multi_element applies to the token-tagging schema only")

    def metrics(self, primary: str | None = None) -> tuple[str, ...]:
        """``primary`` (default: the task type's) then the companions, each once."""
        return tuple(dict.fromkeys((primary or self.metric, *self.companion_metrics)))

    def resolve(self) -> type:
        """The formulation class."""
        formulation = resolve_implementation(
            self.formulation, f"task type {self.slug}: formulation", ("task_types", self.slug)
        )
        if not isinstance(formulation, type):
            raise ImplementationError(
                f"task type {self.slug}: formulation {self.formulation!r} is not a class", ("task_types", self.slug)
            )
        return formulation


METRIC_CONTEXT = ("labels", "negative")
METRIC_INPUTS = ("predictions", "scores", "ranked")
RETURNED_MAX = 80  # characters of a wrong return value quoted in the error: a returned list can be huge


@dataclass(frozen=True)
class MetricSample:
    """A few gold values with perfect predictions, in the metric's input form, for the contract check."""

    gold: tuple
    predictions: tuple
    options: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """A metric and its implementation, reported on the 0-100 scale the papers print.

    ``implementation`` (a callable or ``"module:function"``) is called as
    ``implementation(gold, predictions, **options)`` and returns a float. ``inputs`` says what
    ``predictions`` holds: the decoded ``predictions`` (labels, tags, answers), the model's
    ``scores`` (ROC AUC), or ``ranked`` answers per example (BioASQ factoid's top 5).
    ``context`` names the dataset facts the engine passes as keyword options when the dataset
    has them: ``labels`` (the label names) and ``negative`` (the
    class positive-class metrics leave out). ``options`` are fixed keyword options, so one
    function can back several metrics (HoC's BLUE definition). A value outside
    ``value_range`` (Pearson may be negative) or not finite is a broken implementation.
    A ``ValueError`` means "undefined on these inputs" (AUC with one class): the engine then
    records ``None``. ``per_class`` (optional, a callable or path) is called like the metric,
    with the same options, and returns ``{class: Counts(tp, predicted, gold)}``: the parts the
    metric pools or averages, which the pages show per class (ChemProt's relation types, PICO's
    elements, NER's entity types, HoC's hallmarks).
    """

    slug: str
    name: str
    description: str
    implementation: Implementation
    higher_is_better: bool = True
    inputs: Literal["predictions", "scores", "ranked"] = "predictions"
    context: tuple[str, ...] = ()
    options: Mapping[str, object] = field(default_factory=dict)
    value_range: tuple[float, float] = (0.0, 100.0)
    sample: MetricSample | None = None
    per_class: Implementation | None = None

    def validate(self) -> None:
        check_slug(self.slug, "metric slug")
        _require_text(self.name, f"metric {self.slug}: name")
        check_implementation(self.implementation, f"metric {self.slug}: implementation")
        if self.per_class is not None:
            check_implementation(self.per_class, f"metric {self.slug}: per_class")
        if self.inputs not in METRIC_INPUTS:
            raise SpecError(f"metric {self.slug}: inputs {self.inputs!r} is not one of {METRIC_INPUTS}")
        unknown = sorted(set(self.context) - set(METRIC_CONTEXT))
        if isinstance(self.context, str) or unknown:
            raise SpecError(f"metric {self.slug}: context names {unknown or self.context!r}; known: {METRIC_CONTEXT}")
        low, high = self.value_range
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise SpecError(
                f"metric {self.slug}: value_range {self.value_range!r} must be two finite numbers, low first"
            )
        if not isinstance(self.options, Mapping):
            raise SpecError(f"metric {self.slug}: options must be a mapping")
        if self.sample is not None and len(self.sample.gold) != len(self.sample.predictions):
            raise SpecError(f"metric {self.slug}: sample gold and predictions differ in length")

    def resolve(self) -> Callable[..., Any]:
        return resolve_implementation(self.implementation, f"metric {self.slug}", ("metrics", self.slug))

    def class_counts(self, gold: Any, predictions: Any, **options: Any) -> dict | None:
        """The metric's per-class counts (``per_class``), or None when it declares none."""
        if self.per_class is None:
            return None
        function = resolve_implementation(self.per_class, f"metric {self.slug}: per_class", ("metrics", self.slug))
        return function(gold, predictions, **{**self.options, **options})

    def compute(self, gold: Any, predictions: Any, **options: Any) -> float:
        """The metric's value; ``options`` add to (and override) the spec's fixed ``options``.

        Raises :class:`ContractBreach` when the implementation returns something that is not a
        finite number in ``value_range``; its own ``ValueError`` passes through.
        """
        value = self.resolve()(gold, predictions, **{**self.options, **options})
        shown = repr(value) if len(repr(value)) <= RETURNED_MAX else repr(value)[: RETURNED_MAX - 3] + "..."
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            conduct = f"returned {shown}, not a finite number"
            raise ContractBreach(f"metric {self.slug}", conduct, ("metrics", self.slug), self.implementation)
        low, high = self.value_range
        if not low - 1e-9 <= value <= high + 1e-9:
            conduct = f"returned {shown}, outside its range [{low}, {high}] (the 0-100 scale?)"
            raise ContractBreach(f"metric {self.slug}", conduct, ("metrics", self.slug), self.implementation)
        return float(value)


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
        _check_length(self.label, LABEL_MAX, f"benchmark {benchmark}: entry {self.key}: label")
        _check_length(self.variant, LABEL_MAX, f"benchmark {benchmark}: entry {self.key}: variant")


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

    ``identity`` names the model the row's numbers belong to (:class:`ModelIdentity`, or a dict of its
    fields); without one the row is a model of its own, ``papers/<benchmark>--<slug>``, named as the
    paper names it.

    ``scores`` maps entry keys to the published numbers. ``reported_summaries``
    holds the paper's own summary columns (group means, overall scores) exactly
    as printed, so tests can recompute them through the platform's aggregation.
    """

    slug: str
    name: str
    scores: Mapping[str, float]
    architecture: str = "bert"
    parameters: int | None = None
    # Where ``parameters`` is stated: the paper and its table or section ("Fang et al. 2023, Table 1"), or
    # "model card" with the Hugging Face id. Required with a count, so no size on a page is a guess.
    parameters_source: str = ""
    vocabulary: str = ""
    pretraining_corpus: str = ""
    max_sequence_length: int | None = None
    hf_checkpoint: str = ""
    reported_summaries: Mapping[str, float] = field(default_factory=dict)
    notes: str = ""
    source: str = ""  # the table this row comes from, when not the benchmark's published_source
    identity: ModelIdentity | Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.identity, Mapping):
            unknown = sorted(set(self.identity) - set(ModelIdentity.__dataclass_fields__))
            if unknown:
                raise SpecError(f"published model {self.slug}: identity has unknown fields {unknown}")
            try:
                object.__setattr__(self, "identity", ModelIdentity(**self.identity))
            except TypeError as exc:
                raise SpecError(f"published model {self.slug}: identity: {exc}") from exc

    def identity_in(self, benchmark: str) -> ModelIdentity:
        """The row's identity; a row that names none is its own model under ``papers/``, as before identities."""
        if isinstance(self.identity, ModelIdentity):
            return self.identity
        return ModelIdentity(f"{PAPERS_NAMESPACE}/{benchmark}--{self.slug}", self.name, self.hf_checkpoint)


def _check_parameters(model: PublishedModelSpec, what: str) -> None:
    """A published size is a positive whole count with the paper or card that states it; neither alone."""
    _check_count(model.parameters, f"{what}: parameters", BIG_INTEGER_MAX)
    stated = model.parameters_source.strip()
    if model.parameters is not None and not stated:
        raise SpecError(
            f"{what}: parameters_source is empty; name where {model.parameters:,} parameters is stated "
            "(a paper and its table, or 'model card' and the Hugging Face id), or leave parameters out"
        )
    if model.parameters is None and stated:
        raise SpecError(f"{what}: parameters_source is given without parameters; add the count it states or remove it")


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
    protocol: str = DEFAULT_PROTOCOL  # the slug of the contributed protocol (ProtocolSpec) the paper used

    def entry_keys(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.entries)

    def validate(self) -> None:
        check_slug(self.slug, "benchmark slug")
        _require_text(self.name, f"benchmark {self.slug}: name")
        _check_length(self.source_paper, SOURCE_MAX, f"benchmark {self.slug}: source_paper")
        _check_length(self.published_source, SOURCE_MAX, f"benchmark {self.slug}: published_source")
        if isinstance(self.precision, bool) or not isinstance(self.precision, int) or not 0 <= self.precision <= 6:
            raise SpecError(f"benchmark {self.slug}: precision must be a whole number of decimals from 0 to 6")
        # Any contributed protocol is accepted; collect_contributions checks that one exists.
        check_slug(self.protocol, f"benchmark {self.slug}: protocol")
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
        _require_text(agg.version, f"benchmark {self.slug}: aggregation version", VERSION_MAX)
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
                len(summary.weights) != len(summary.members)
                or any(
                    isinstance(w, bool) or not isinstance(w, int | float) or not 0 < w < math.inf
                    for w in summary.weights
                )
            ):
                raise SpecError(f"benchmark {self.slug}: summary {summary.slug} needs one positive weight per group")

    def _validate_published(self, keys: set[str]) -> None:
        seen: set[str] = set()
        identities: dict[str, str] = {}
        for model in self.published:
            what = f"benchmark {self.slug}: published model {model.slug}"
            check_slug(
                model.slug, f"benchmark {self.slug}: published model slug", LANGUAGE_MODEL_SLUG_MAX - 2 - len(self.slug)
            )
            _require_text(model.name, f"{what}: name")
            for name, limit in (
                ("vocabulary", VOCABULARY_MAX),
                ("pretraining_corpus", CORPUS_MAX),
                ("hf_checkpoint", CHECKPOINT_MAX),
                ("source", SOURCE_MAX),
                ("parameters_source", SOURCE_MAX),
                ("architecture", SLUG_MAX),
            ):
                _check_length(getattr(model, name), limit, f"{what}: {name}")
            _check_parameters(model, what)
            _check_count(model.max_sequence_length, f"{what}: max_sequence_length", INTEGER_MAX)
            for key, value in model.reported_summaries.items():
                _check_finite(value, f"{what}: reported summary {key}")
            if model.slug in seen:
                raise SpecError(f"benchmark {self.slug}: published model {model.slug} appears twice")
            seen.add(model.slug)
            identity = model.identity_in(self.slug)
            identity.check(what)
            if identity.address in identities:
                raise SpecError(
                    f"{what}: identity {identity.address} is also {identities[identity.address]}'s; "
                    "one table lists a model once"
                )
            identities[identity.address] = model.slug
            unknown = sorted(set(model.scores) - keys)
            if unknown:
                raise SpecError(f"benchmark {self.slug}: published model {model.slug} scores unknown entries {unknown}")
            for key, value in model.scores.items():
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    raise SpecError(f"benchmark {self.slug}: {model.slug}.{key} is not a number: {value!r}")
                if not math.isfinite(value):
                    raise SpecError(f"benchmark {self.slug}: {model.slug}.{key} is not finite: {value!r}")


@dataclass(frozen=True)
class PreprocessorSpec:
    """A corpus preprocessor (cleaning, de-duplication, sentence splitting, ...).

    ``implementation`` (a callable or ``"module:function"``) takes an iterable of documents
    (strings) and returns an iterable of documents. It must stream: read one document, yield
    what it makes of it, so a corpus larger than memory passes through (``biolm.corpus``).
    """

    slug: str
    name: str
    description: str
    implementation: Implementation

    def validate(self) -> None:
        check_slug(self.slug, "preprocessor slug")
        _require_text(self.name, f"preprocessor {self.slug}: name")
        check_implementation(self.implementation, f"preprocessor {self.slug}: implementation")

    def resolve(self) -> Callable[..., Any]:
        return resolve_implementation(self.implementation, f"preprocessor {self.slug}", ("preprocessors", self.slug))


@dataclass(frozen=True)
class ProtocolSpec:
    """A paper's fine-tuning procedure: its grid, its checkpoint choice, its seeds, its folds, its statistic.

    ``planner`` (a callable or ``"module:function"``) is called as ``planner(dataset, task_type)``
    with the dataset's :class:`DatasetSpec` and :class:`TaskTypeSpec` and returns a
    :class:`biolm.protocols.Plan`: the hyperparameter points searched on dev, the seeds run on test
    and whether the dataset is scored on its cross-validation folds. ``statistic`` is what the
    paper reports over the runs, one of :data:`STATISTICS`; :func:`biolm.protocols.combine`
    computes it, for the engine, the recording and the bootstrap alike. ``citation`` names the
    paper and section the procedure comes from (``Gu et al. 2021, section 6.2``).
    """

    slug: str
    name: str
    description: str
    planner: Implementation
    statistic: str = "mean"
    citation: str = ""

    def validate(self) -> None:
        check_slug(self.slug, "protocol slug")
        _require_text(self.name, f"protocol {self.slug}: name")
        _require_text(self.description, f"protocol {self.slug}: description", 2000)
        _check_length(self.citation, SOURCE_MAX, f"protocol {self.slug}: citation")
        if self.statistic not in STATISTICS:
            raise SpecError(f"protocol {self.slug}: statistic {self.statistic!r} is not one of {STATISTICS}")
        check_implementation(self.planner, f"protocol {self.slug}: planner")

    def plan(self, dataset: DatasetSpec, task_type: TaskTypeSpec) -> Any:
        """The planner's :class:`biolm.protocols.Plan` for ``dataset`` (use :func:`biolm.protocols.plan_for`)."""
        planner = resolve_implementation(self.planner, f"protocol {self.slug}: planner", ("protocols", self.slug))
        return planner(dataset, task_type)
