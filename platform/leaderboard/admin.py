from django import forms
from django.contrib import admin, messages

from leaderboard.approvals import ApprovalRefused, decide, may_decide
from leaderboard.models import HeldResult, Result, Score, Snapshot
from leaderboard.snapshots import SnapshotExists, permalink, take_snapshot
from registry.admin import BenchmarkAdmin
from registry.models import Benchmark


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ("language_model", "dataset", "metric", "variant", "value", "std", "n_seeds", "scope", "preview",
                    "approval")  # fmt: skip
    list_filter = ("scope", "preview", "approval", "metric", "dataset__domain", "language_model__origin")
    search_fields = ("language_model__name", "dataset__slug", "source")
    list_select_related = ("language_model", "dataset", "metric")
    raw_id_fields = ("language_model",)
    readonly_fields = ("approval", "approval_reason", "approved_by", "approval_at")

    def get_queryset(self, request):
        return Result.everything.select_related("language_model", "dataset", "metric")


class DecisionForm(forms.ModelForm):
    approval = forms.ChoiceField(
        choices=[(Result.Approval.APPROVED, "approve: publish it"), (Result.Approval.REJECTED, "reject: keep it off")],
        widget=forms.RadioSelect,
    )

    class Meta:
        model = HeldResult
        fields = ("approval", "approval_reason")

    def clean(self):
        data = super().clean()
        if data.get("approval") == Result.Approval.REJECTED and not (data.get("approval_reason") or "").strip():
            self.add_error("approval_reason", "Say why it is rejected: the submitter reads the reason.")
        return data


@admin.register(HeldResult)
class HeldResultAdmin(admin.ModelAdmin):
    """The approval queue of held datasets' results: each holder's approvers see and decide on theirs."""

    form = DecisionForm
    list_display = ("language_model", "dataset", "metric", "value", "approval", "approval_at")
    list_filter = ("approval", "dataset__held_by")
    list_select_related = ("language_model", "dataset__held_by", "metric")
    readonly_fields = ("language_model", "dataset", "metric", "value", "std", "n_seeds", "source", "approved_by",
                       "approval_at")  # fmt: skip
    fields = (*readonly_fields, "approval", "approval_reason")

    def get_queryset(self, request):
        held = (
            HeldResult.everything.filter(dataset__held_by__isnull=False)
            .exclude(approval=Result.Approval.NOT_NEEDED)  # recorded before its dataset was bound: public data then
            .select_related("dataset__held_by")
        )
        if request.user.is_superuser:
            return held
        return held.filter(dataset__held_by__approvers=request.user)

    def has_module_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return self.has_module_permission(request) and (obj is None or may_decide(obj, request.user))

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        try:
            decide(obj, request.user, form.cleaned_data["approval"], form.cleaned_data.get("approval_reason", ""))
        except ApprovalRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)


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
