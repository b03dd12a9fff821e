"""The leaderboard of one benchmark as plain rows, shared by the web page and the command.

Ranks are given only to complete scores: a model missing datasets is listed
below the ranked ones with its partial numbers, never ranked on a partial mean.
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


def leaderboard_for(benchmark: Benchmark, models=None) -> Leaderboard:
    """Scores of ``models`` (a LanguageModel queryset; default: public ones), best first."""
    models = LanguageModel.objects.public() if models is None else models
    scores = (
        Score.objects.filter(benchmark=benchmark, language_model__in=models)
        .select_related("language_model", "language_model__architecture")
        .ranked()
    )
    columns = columns_for(benchmark)
    ranked: list[Row] = []
    unranked: list[Row] = []
    for score in scores:
        values: dict[str, float | None] = {}
        for column in columns:
            source = {"summary": score.summaries, "group": score.groups, "entry": score.entries}[column.kind]
            values[column.key] = source.get(column.key)
        row = Row(None, score.language_model, score.score, values, list(score.missing))
        if score.complete and score.score is not None:
            row.rank = len(ranked) + 1
            ranked.append(row)
        else:  # a primary score can exist without every entry (GatorTron's F1 headline): still not ranked
            unranked.append(row)
    return Leaderboard(benchmark, columns, ranked + unranked)
