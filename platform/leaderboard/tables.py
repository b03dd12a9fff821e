"""The leaderboard of one benchmark as plain rows, shared by the web page and the command.

Ranks are given only to complete scores: a model missing datasets is listed
below the ranked ones with its partial numbers, never ranked on a partial mean.
A model pretrained on biolm carries its contamination report: the share of each
of the benchmark's test sets found in its pretraining corpus is shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from leaderboard.models import Score
from leaderboard.scoring import aggregation_from_json
from registry.models import Benchmark, LanguageModel


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str  # "summary", "group" or "entry"
    title: str = ""


@dataclass
class Row:
    rank: int | None
    model: LanguageModel
    score: float | None
    values: dict[str, float | None] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    test_overlap: dict[str, float] = field(default_factory=dict)  # dataset slug -> share of test examples

    @property
    def overlap_summary(self) -> str:
        """The largest overlap in words (empty when the model has no report or no overlap)."""
        if not self.test_overlap or max(self.test_overlap.values()) <= 0:
            return ""
        slug, share = max(self.test_overlap.items(), key=lambda item: item[1])
        return f"test-set overlap up to {100 * share:.1f}% ({slug})"

    @property
    def overlap_detail(self) -> str:
        return "; ".join(f"{slug}: {100 * share:.2f}%" for slug, share in sorted(self.test_overlap.items()))


@dataclass
class Leaderboard:
    benchmark: Benchmark
    columns: list[Column]
    rows: list[Row]

    @property
    def primary_label(self) -> str:
        aggregation = aggregation_from_json(self.benchmark.aggregation)
        names = {s.slug: s.name for s in aggregation.summaries} | {g.slug: g.name for g in aggregation.groups}
        return names.get(aggregation.primary, "score")

    def as_json(self) -> dict:
        precision = self.benchmark.precision
        return {
            "benchmark": self.benchmark.slug,
            "name": self.benchmark.name,
            "aggregation_version": self.benchmark.aggregation_version,
            "primary": self.benchmark.aggregation["primary"],
            "columns": [{"key": c.key, "label": c.label, "kind": c.kind} for c in self.columns],
            "rows": [
                {
                    "rank": row.rank,
                    "model": row.model.slug,
                    "name": row.model.name,
                    "origin": row.model.origin,
                    "source": row.model.source_paper,
                    "parameters": row.model.parameter_count,
                    "score": _round(row.score, precision),
                    "values": {k: _round(v, precision) for k, v in row.values.items()},
                    "missing": row.missing,
                    "test_overlap": row.test_overlap,
                }
                for row in self.rows
            ],
        }


def _round(value: float | None, precision: int) -> float | None:
    return None if value is None else round(value, precision)


def columns_for(benchmark: Benchmark) -> list[Column]:
    aggregation = aggregation_from_json(benchmark.aggregation)
    columns = [Column(s.slug, s.name, "summary") for s in aggregation.summaries if s.slug != aggregation.primary]
    if aggregation.show_group_scores:
        columns += [Column(g.slug, g.name, "group") for g in aggregation.groups if g.slug != aggregation.primary]
    for entry in benchmark.entries.select_related("dataset", "metric"):
        title = f"{entry.dataset.name}: {entry.metric.name}" + (f" ({entry.variant})" if entry.variant else "")
        columns.append(Column(entry.key, entry.display_label, "entry", title))
    return columns


def test_overlap(model: LanguageModel, datasets: list[str]) -> dict[str, float]:
    """Shares of ``datasets``' test examples found in the model's pretraining corpus, from its report."""
    report = ((model.pretraining or {}).get("contamination") or {}).get("datasets") or {}
    return {slug: float(report[slug]["share"]) for slug in datasets if "share" in report.get(slug, {})}


def leaderboard_for(benchmark: Benchmark, models=None) -> Leaderboard:
    """Scores of ``models`` (a LanguageModel queryset; default: public ones), best first."""
    models = LanguageModel.objects.public() if models is None else models
    scores = (
        Score.objects.filter(benchmark=benchmark, language_model__in=models)
        .select_related("language_model", "language_model__architecture")
        .ranked()
    )
    columns = columns_for(benchmark)
    datasets = list(dict.fromkeys(benchmark.entries.values_list("dataset__slug", flat=True)))
    ranked: list[Row] = []
    unranked: list[Row] = []
    for score in scores:
        values: dict[str, float | None] = {}
        for column in columns:
            source = {"summary": score.summaries, "group": score.groups, "entry": score.entries}[column.kind]
            values[column.key] = source.get(column.key)
        model = score.language_model
        row = Row(None, model, score.score, values, list(score.missing), test_overlap(model, datasets))
        if score.complete and score.score is not None:
            row.rank = len(ranked) + 1
            ranked.append(row)
        else:  # a primary score can exist without every entry (GatorTron's F1 headline): still not ranked
            unranked.append(row)
    return Leaderboard(benchmark, columns, ranked + unranked)
