"""Write plugin contributions into the database, idempotently.

Running it twice changes nothing the second time. Rows no longer contributed
are marked inactive (results that refer to them survive). Published results
are upserted as "reported" language models; their numbers, and the scores a
changed aggregation or changed numbers make stale, are the leaderboard's: the
registry announces each synced benchmark (``registry.signals``) and
``leaderboard.sync`` records the results and recomputes the scores.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q

from biolm import plugin_set
from biolm.column_limits import SOURCE_MAX
from biolm.model_identity import ModelIdentity
from biolm.plugins import Contributions, collect_contributions, get_plugin_manager
from biolm.specs import BenchmarkSpec, PublishedModelSpec
from registry.locks import hold_for_transaction
from registry.models import (
    Architecture,
    Benchmark,
    BenchmarkEntry,
    Dataset,
    LanguageModel,
    Metric,
    ModelAlias,
    Plugin,
    PretrainingRecipe,
    Protocol,
    TaskType,
)
from registry.signals import BenchmarkSynced, benchmark_synced, contributions_synced

logger = logging.getLogger("biolm.sync")


@dataclass
class SyncReport:
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    deactivated: dict[str, int] = field(default_factory=dict)
    rescored: int = 0
    problems: list[str] = field(default_factory=list)
    orphans: set[int] = field(default_factory=set)  # reported models that lost a published row

    def count(self, bucket: dict[str, int], kind: str) -> None:
        bucket[kind] = bucket.get(kind, 0) + 1

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deactivated or self.rescored)


def load_contributions() -> Contributions:
    """Contributions of the built-in plugins plus installed entry points (per settings).

    A long-lived process (a worker, the web server) first catches up with plugins installed,
    upgraded or removed since it last looked (:func:`biolm.plugin_set.ensure_current`).
    """
    from django.conf import settings

    if settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS:
        plugin_set.ensure_current()
    return collect_contributions(get_plugin_manager(load_entrypoints=settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS))


def upsert(model, report: SyncReport, kind: str, lookup: dict, values: dict) -> tuple:
    """update_or_create that only writes (and counts) when something differs; returns (row, changed)."""
    obj = model.objects.filter(**lookup).first()
    if obj is None:
        obj = model.objects.create(**lookup, **values)
        report.count(report.created, kind)
        return obj, True
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    if changed:
        for name in changed:
            setattr(obj, name, values[name])
        obj.save()
        report.count(report.updated, kind)
    return obj, bool(changed)


CONTRIBUTED = (
    (Metric, "metrics"),
    (TaskType, "task_types"),
    (Architecture, "architectures"),
    (PretrainingRecipe, "recipes"),
    (Protocol, "protocols"),
    (Dataset, "datasets"),
    (Benchmark, "benchmarks"),
)


def _deactivate_missing(model, kind: str, slugs: set[str], report: SyncReport) -> None:
    n = model.objects.filter(active=True).exclude(slug__in=slugs).update(active=False)
    if n:
        report.deactivated[kind] = n


@transaction.atomic
def sync_contributions(contributions: Contributions | None = None) -> SyncReport:
    """Mirror ``contributions`` (default: the installed plugins) into the database.

    Concurrent syncs (two web replicas starting) run one after the other: both succeed.
    """
    hold_for_transaction("sync_plugins")
    contributions = contributions or load_contributions()
    report = SyncReport(problems=[str(p) for p in contributions.problems])
    _sync_plugins(contributions, report)
    _sync_simple(contributions, report)
    _sync_datasets(contributions, report)
    models = _sync_identities(contributions, report)
    for slug, spec in contributions.benchmarks.items():
        _sync_benchmark(spec, contributions.origin[("benchmarks", slug)], report, models)
    orphans = LanguageModel.objects.filter(
        pk__in=report.orphans, origin=LanguageModel.Origin.REPORTED, aliases__isnull=True
    )  # a reported model no published row names any more
    if orphans.delete()[0]:
        report.count(report.deactivated, "reported_models")
    for model, kind in CONTRIBUTED:
        _deactivate_missing(model, kind, set(getattr(contributions, kind)), report)
    contributions_synced.send(sender=sync_contributions, report=report)  # the leaderboard rescores stale scores
    for problem in report.problems:
        logger.warning("plugin problem: %s", problem)
    return report


def _simple_rows(contributions: Contributions) -> dict[str, tuple[type, dict[str, dict]]]:
    """The contributions that become a row each with no reference to another, as the values of their rows."""
    return {
        "metrics": (Metric, {
            slug: {"name": spec.name, "description": spec.description, "higher_is_better": spec.higher_is_better}
            for slug, spec in contributions.metrics.items()
        }),
        "task_types": (TaskType, {
            slug: {"name": spec.name, "description": spec.description}
            for slug, spec in contributions.task_types.items()
        }),
        "architectures": (Architecture, {
            slug: {"name": spec.name, "description": spec.description, "model_type": spec.model_type,
                   "presets": _jsonable(spec.presets), "max_sequence_length": spec.max_sequence_length,
                   "citation": spec.citation}
            for slug, spec in contributions.architectures.items()
        }),
        "recipes": (PretrainingRecipe, {
            slug: {"name": spec.name, "description": spec.description, "objectives": list(spec.objectives),
                   "settings": _jsonable(spec.settings), "citation": spec.citation}
            for slug, spec in contributions.recipes.items()
        }),
        "protocols": (Protocol, {
            slug: {"name": spec.name, "description": spec.description, "statistic": spec.statistic,
                   "citation": spec.citation}
            for slug, spec in contributions.protocols.items()
        }),
    }  # fmt: skip


def _sync_simple(contributions: Contributions, report: SyncReport) -> None:
    for kind, (model, rows) in _simple_rows(contributions).items():
        for slug, values in rows.items():
            values = {**values, "plugin": contributions.origin[(kind, slug)], "active": True}
            upsert(model, report, kind, {"slug": slug}, values)


def _sync_datasets(contributions: Contributions, report: SyncReport) -> None:
    metrics = {m.slug: m for m in Metric.objects.all()}
    task_types = {t.slug: t for t in TaskType.objects.all()}
    for slug, spec in contributions.datasets.items():
        upsert(
            Dataset,
            report,
            "datasets",
            {"slug": slug},
            {
                "name": spec.name,
                "description": spec.description,
                "task_type": task_types[spec.task_type],
                "metric": metrics[spec.metric],
                "domain": spec.domain,
                "access": spec.access,
                "splits": [dataclasses.asdict(s) for s in spec.splits],
                "labels": list(spec.labels),
                "source": spec.source,
                "licence": spec.licence,
                "citation": spec.citation,
                "adapter": _jsonable(dataclasses.asdict(spec.adapter)) if spec.adapter else None,
                "demo": spec.demo,
                "hub_dataset": spec.hub_dataset,
                "text_shareable": spec.text_shareable,
                "hub_task": spec.hub_task,
                "plugin": contributions.origin[("datasets", slug)],
                "active": True,
            },
        )


def _sync_plugins(contributions: Contributions, report: SyncReport) -> None:
    """One row per loaded plugin: its version and content fingerprint (what jobs pin), and what it contributes.

    Built-in plugins are biolm's own code: they carry biolm's version and fingerprint.
    """
    for info in contributions.plugins:
        source = Plugin.Source.BUILTIN if info.source == "builtin" else Plugin.Source.ENTRYPOINT
        identity = plugin_set.identity_of(info.name, info.source, info.distribution, info.version)
        values = {"source": source, **identity.row(), "contributes": contributions.by_plugin(info.name),
                  "active": True}  # fmt: skip
        upsert(Plugin, report, "plugins", {"name": info.name}, values)
    gone = Plugin.objects.filter(active=True).exclude(name__in=[info.name for info in contributions.plugins])
    removed = gone.update(active=False)
    if removed:
        report.deactivated["plugins"] = removed


def _jsonable(value: object) -> object:
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _jsonable(v) for k, v in value.items()}  # type: ignore[union-attr]
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _sync_benchmark(
    spec: BenchmarkSpec, plugin: str, report: SyncReport, models: dict[str, LanguageModel | None]
) -> None:
    aggregation = _jsonable(dataclasses.asdict(spec.aggregation))
    existing = Benchmark.objects.filter(slug=spec.slug).first()
    aggregation_changed = existing is not None and (
        existing.aggregation != aggregation or existing.aggregation_version != spec.aggregation.version
    )
    if aggregation_changed and existing.aggregation_version == spec.aggregation.version:
        report.problems.append(
            f"{plugin}: benchmark {spec.slug!r} changed its aggregation without a new version "
            f"(still {spec.aggregation.version!r}); scores were recomputed anyway"
        )
    benchmark, _ = upsert(
        Benchmark,
        report,
        "benchmarks",
        {"slug": spec.slug},
        {
            "name": spec.name,
            "description": spec.description,
            "citation": spec.citation,
            "source_paper": spec.source_paper,
            "aggregation": aggregation,
            "aggregation_version": spec.aggregation.version,
            "precision": spec.precision,
            "protocol": spec.protocol,
            "published_source": spec.published_source,
            "plugin": plugin,
            "active": True,
        },
    )
    datasets = {d.slug: d for d in Dataset.objects.filter(slug__in={e.dataset for e in spec.entries})}
    metrics = {m.slug: m for m in Metric.objects.filter(slug__in={e.metric for e in spec.entries})}
    entries_changed = False
    for position, entry in enumerate(spec.entries):
        _, changed = upsert(
            BenchmarkEntry,
            report,
            "benchmark_entries",
            {"benchmark": benchmark, "key": entry.key},
            {
                "dataset": datasets[entry.dataset],
                "metric": metrics[entry.metric],
                "label": entry.label,
                "variant": entry.variant,
                "position": position,
            },
        )
        entries_changed |= changed
    removed, _ = benchmark.entries.exclude(key__in=spec.entry_keys()).delete()
    entries_changed |= bool(removed)

    published = [(models[row.identity_in(spec.slug).address], row) for row in spec.published]
    published = [(model, row) for model, row in published if model is not None]
    _sync_aliases(benchmark, spec, published, report)
    # The leaderboard records the published results and recomputes the scores that changed.
    synced = BenchmarkSynced(benchmark, spec, aggregation_changed or entries_changed, published)
    benchmark_synced.send(sender=_sync_benchmark, synced=synced, report=report)


def _sync_aliases(
    benchmark: Benchmark,
    spec: BenchmarkSpec,
    published: list[tuple[LanguageModel, PublishedModelSpec]],
    report: SyncReport,
) -> None:
    """One alias per published row (its paper's name for the model, its table); rows gone lose theirs."""
    for model, row in published:
        upsert(ModelAlias, report, "model_aliases", {"benchmark": benchmark, "row": row.slug}, {
            "language_model": model, "name": row.name, "source": _row_source(spec, row), "notes": row.notes,
            "former_slug": f"{spec.slug}--{row.slug}",
        })  # fmt: skip
    gone = benchmark.model_aliases.exclude(row__in=[row.slug for _, row in published])
    report.orphans.update(gone.values_list("language_model_id", flat=True))
    if gone.delete()[0]:
        report.count(report.deactivated, "model_aliases")


def _row_source(spec: BenchmarkSpec, row: PublishedModelSpec) -> str:
    return (row.source or spec.published_source or spec.source_paper)[:SOURCE_MAX]


def _sync_identities(contributions: Contributions, report: SyncReport) -> dict[str, LanguageModel | None]:
    """Upsert one reported model per identity the published rows name, whichever papers print it.

    Its card (architecture, size, vocabulary, ...) takes each field from the first row, in the
    benchmarks' order, that states it; rows of one identity stating different sizes are a problem
    reported (two checkpoints are two identities). An address held by a model that is not reported
    (a user's) is never taken over: its rows are left out, with a problem. Returns address -> model.
    """
    rows: dict[str, list[tuple[BenchmarkSpec, PublishedModelSpec]]] = {}
    for spec in contributions.benchmarks.values():
        for row in spec.published:
            rows.setdefault(row.identity_in(spec.slug).address, []).append((spec, row))
    models: dict[str, LanguageModel | None] = {}
    for address, found in rows.items():
        models[address] = _sync_identity(found[0][1].identity_in(found[0][0].slug), found, report)
    for address, found in rows.items():
        link = found[0][1].identity_in(found[0][0].slug).version_of
        if models[address] is not None:
            target = _version_target(link, models, address, report)
            upsert(LanguageModel, report, "language_models", {"pk": models[address].pk}, {"version_of": target})
    return models


def _version_target(
    link: str, models: dict[str, LanguageModel | None], address: str, report: SyncReport
) -> LanguageModel | None:
    """The model an identity is a version of (None when it names none, or one no model has: a problem)."""
    if not link:
        return None
    namespace, name = link.split("/", 1)
    target = models.get(link) or LanguageModel.objects.filter(namespace=namespace, address_name=name).first()
    if target is None:
        report.problems.append(f"identity {address} is a version of {link}, which no model has")
    return target


def _card_values(found: list[tuple[BenchmarkSpec, PublishedModelSpec]], report: SyncReport) -> dict:
    """The card of an identity from its rows: each field from the first row that states it."""
    fields = {"architecture": "architecture", "parameter_count": "parameters", "vocabulary": "vocabulary",
              "pretraining_corpus": "pretraining_corpus", "max_sequence_length": "max_sequence_length",
              "notes": "notes"}  # fmt: skip
    values = {
        name: next((getattr(row, attr) for _, row in found if getattr(row, attr)), None)
        for name, attr in fields.items()
    }
    sized = [(spec, row) for spec, row in found if row.parameters is not None]
    values["parameter_count_source"] = sized[0][1].parameters_source if sized else ""
    sizes = {row.parameters for _, row in sized}
    if len(sizes) > 1:
        report.problems.append(
            f"identity {found[0][1].identity_in(found[0][0].slug).address}: its rows state different sizes "
            f"{sorted(sizes)}; the first ({sized[0][0].slug}) is shown. Different checkpoints are different identities"
        )
    for name in ("vocabulary", "pretraining_corpus", "notes"):
        values[name] = values[name] or ""
    architecture = values["architecture"] or "bert"
    values["architecture"] = Architecture.objects.filter(slug=architecture).first()
    if values["architecture"] is None:
        report.problems.append(f"published model {found[0][1].slug} names unknown architecture {architecture!r}")
    return values


def _sync_identity(
    identity: ModelIdentity, found: list[tuple[BenchmarkSpec, PublishedModelSpec]], report: SyncReport
) -> LanguageModel | None:
    held = LanguageModel.objects.filter(
        Q(namespace=identity.namespace, address_name=identity.address_name) | Q(slug=identity.slug)
    ).exclude(origin=LanguageModel.Origin.REPORTED)
    if held.exists():
        report.problems.append(f"identity {identity.address}: a model that is not reported holds the address; left out")
        return None
    first_spec, first_row = found[0]
    values = {
        **_card_values(found, report),
        "slug": identity.slug,
        "name": identity.name,
        "checkpoint": identity.hf_id,
        "visibility": LanguageModel.Visibility.PUBLIC,
        "origin": LanguageModel.Origin.REPORTED,
        "source_paper": _row_source(first_spec, first_row),
    }
    lookup = {"namespace": identity.namespace, "address_name": identity.address_name}
    model, _ = upsert(LanguageModel, report, "language_models", lookup, values)
    return model
