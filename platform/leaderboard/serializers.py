"""The public JSON shapes of the leaderboard, shared by the pages, the API, the exports and snapshots.

A page renders the same dictionaries the API returns, so what a reader sees and what a script
downloads cannot drift apart. Numbers are rounded to the benchmark's printed precision.
"""

from __future__ import annotations

from rest_framework import serializers


def _round(value: float | None, precision: int) -> float | None:
    return None if value is None else round(value, precision)


class ColumnSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.ChoiceField(choices=["summary", "group", "entry"])
    title = serializers.CharField(allow_blank=True)


class RankIntervalSerializer(serializers.Serializer):
    model = serializers.CharField(required=False, help_text="The model ranked directly above.")
    name = serializers.CharField(required=False)
    low = serializers.FloatField(help_text="2.5th percentile of the paired difference (above minus this).")
    high = serializers.FloatField(help_text="97.5th percentile.")


class RowSerializer(serializers.Serializer):
    """One model on one benchmark."""

    rank = serializers.IntegerField(allow_null=True, help_text="1 + the models significantly better; null: unranked.")
    tied = serializers.BooleanField(help_text="Shares its rank with the model above (cannot be told apart).")
    rank_basis = serializers.CharField(
        help_text='"bootstrap" (paired test on predictions) or "point" (no predictions).'
    )
    rank_note = serializers.CharField()
    rank_interval = RankIntervalSerializer(allow_null=True)
    model = serializers.CharField(help_text="The model's slug.")
    name = serializers.CharField()
    url = serializers.CharField(help_text="The model's page.")
    origin = serializers.ChoiceField(choices=["reported", "reproduced"])
    source = serializers.CharField(allow_blank=True, help_text="The paper and table a reported row comes from.")
    architecture = serializers.CharField(allow_blank=True)
    parameters = serializers.IntegerField(allow_null=True)
    size = serializers.CharField(allow_blank=True)
    domain = serializers.CharField(allow_blank=True)
    vocabulary = serializers.CharField(allow_blank=True)
    start = serializers.CharField(allow_blank=True)
    score = serializers.FloatField(allow_null=True)
    values = serializers.DictField(child=serializers.FloatField(allow_null=True))
    std = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text="Per entry, over seeds.")
    seeds = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    missing = serializers.ListField(child=serializers.CharField())
    test_overlap = serializers.DictField(child=serializers.FloatField())
    inference_per_s = serializers.FloatField(allow_null=True, help_text="Test-set inference, examples per second.")
    pinned = serializers.BooleanField()
    preview = serializers.BooleanField(
        help_text="A quick preview (one grid point, one seed): never ranked (rank null), listed after every "
        "full-protocol row."
    )

    def to_representation(self, row) -> dict:
        precision = self.context.get("precision", 2)
        model = row.model
        return {
            "rank": row.rank,
            "tied": row.rank_tied,
            "rank_basis": row.rank_basis,
            "rank_note": row.rank_note,
            "rank_interval": row.rank_interval,
            "model": model.slug,
            "name": model.name,
            "url": model.get_absolute_url(),
            "origin": model.origin,
            "source": model.source_paper,
            "architecture": model.architecture.slug if model.architecture_id else "",
            "parameters": model.parameter_count,
            "size": model.size_bucket,
            "domain": model.pretraining_domain,
            "vocabulary": model.vocabulary_kind,
            "start": model.initialisation,
            "score": _round(row.score, precision),
            "values": {k: _round(v, precision) for k, v in row.values.items()},
            "std": {k: _round(s.get("std"), precision) for k, s in row.spread.items()},
            "seeds": {k: s.get("n") for k, s in row.spread.items()},
            "missing": list(row.missing),
            "test_overlap": row.test_overlap,
            "inference_per_s": _round(row.inference_per_s, 1),
            "pinned": row.pinned,
            "preview": row.preview,
        }


class RankingSerializer(serializers.Serializer):
    method = serializers.CharField()
    resamples = serializers.IntegerField()
    confidence = serializers.FloatField()
    models_ranked = serializers.IntegerField()
    models_tested = serializers.IntegerField()
    computed_at = serializers.DateTimeField()


class LeaderboardSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    name = serializers.CharField()
    aggregation_version = serializers.CharField()
    primary = serializers.CharField()
    primary_label = serializers.CharField()
    ranking = RankingSerializer(allow_null=True)
    view = serializers.DictField(child=serializers.CharField(), help_text="The filters, sort and pins applied.")
    total = serializers.IntegerField(help_text="Models on the benchmark before filtering.")
    columns = ColumnSerializer(many=True)
    rows = RowSerializer(many=True)

    def _rows(self, board) -> list:
        """The rows asked for in the context (a page of them), else every row of the board."""
        rows = self.context.get("rows")
        return board.rows if rows is None else rows

    def to_representation(self, board) -> dict:
        benchmark = board.benchmark
        ranking = board.ranking
        context = {"precision": benchmark.precision}
        return {
            "benchmark": benchmark.slug,
            "name": benchmark.name,
            "aggregation_version": benchmark.aggregation_version,
            "primary": benchmark.aggregation["primary"],
            "primary_label": board.primary_label,
            "ranking": None
            if ranking is None
            else {
                "method": "paired bootstrap over test examples; rank = 1 + models significantly better",
                "resamples": ranking.resamples,
                "confidence": ranking.confidence,
                "models_ranked": ranking.models_ranked,
                "models_tested": ranking.models_tested,
                "computed_at": ranking.computed_at.isoformat(),
            },
            "view": board.view.params(),
            "total": board.total,
            "columns": [{"key": c.key, "label": c.label, "kind": c.kind, "title": c.title} for c in board.columns],
            "rows": [RowSerializer(context=context).to_representation(row) for row in self._rows(board)],
        }
