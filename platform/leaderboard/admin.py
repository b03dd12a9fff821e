from django.contrib import admin

from leaderboard.models import Result, Score


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ("language_model", "dataset", "metric", "variant", "value", "std", "n_seeds", "scope")
    list_filter = ("scope", "metric", "dataset__domain", "language_model__origin")
    search_fields = ("language_model__name", "dataset__slug", "source")
    list_select_related = ("language_model", "dataset", "metric")
    raw_id_fields = ("language_model",)


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    list_display = ("language_model", "benchmark", "score", "aggregation_version", "computed_at")
    list_filter = ("benchmark", "language_model__origin")
    search_fields = ("language_model__name",)
    list_select_related = ("language_model", "benchmark")
    readonly_fields = ("groups", "summaries", "entries", "missing", "aggregation_version", "computed_at")
