from django.contrib import admin, messages

from leaderboard.models import Result, Score, Snapshot
from leaderboard.snapshots import SnapshotExists, permalink, take_snapshot
from registry.admin import BenchmarkAdmin
from registry.models import Benchmark


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ("language_model", "dataset", "metric", "variant", "value", "std", "n_seeds", "scope", "preview")
    list_filter = ("scope", "preview", "metric", "dataset__domain", "language_model__origin")
    search_fields = ("language_model__name", "dataset__slug", "source")
    list_select_related = ("language_model", "dataset", "metric")
    raw_id_fields = ("language_model",)


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    list_display = ("language_model", "benchmark", "score", "rank", "preview", "aggregation_version", "computed_at")
    list_filter = ("benchmark", "preview", "language_model__origin")
    search_fields = ("language_model__name",)
    list_select_related = ("language_model", "benchmark")
    readonly_fields = ("groups", "summaries", "entries", "missing", "preview", "aggregation_version", "computed_at")


@admin.register(Snapshot)
class SnapshotAdmin(admin.ModelAdmin):
    """Snapshots are taken (the benchmarks' action, ``manage.py snapshot``), never edited."""

    list_display = ("benchmark", "date", "aggregation_version", "created_by", "created_at")
    list_filter = ("benchmark",)
    readonly_fields = ("benchmark", "date", "aggregation_version", "board", "created_by", "created_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.action(description="Snapshot today's public leaderboard (dated, immutable permalink)")
def snapshot_leaderboards(modeladmin, request, queryset) -> None:
    for benchmark in queryset:
        try:
            snapshot = take_snapshot(benchmark, by=request.user.get_username())
        except SnapshotExists as exc:
            modeladmin.message_user(request, str(exc), messages.WARNING)
            continue
        modeladmin.message_user(request, f"{benchmark.slug}: snapshot {snapshot.date} at {permalink(snapshot)}")


class BenchmarkWithSnapshotsAdmin(BenchmarkAdmin):
    """The registry's benchmark admin, with the leaderboard's snapshot action (the registry cannot import us)."""

    actions = [snapshot_leaderboards]


admin.site.unregister(Benchmark)
admin.site.register(Benchmark, BenchmarkWithSnapshotsAdmin)
