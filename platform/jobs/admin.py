from django.contrib import admin

from jobs.models import Job, Run


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "language_model", "dataset", "queue", "status", "priority", "attempts", "created_at")
    list_filter = ("status", "queue", "kind")
    search_fields = ("language_model__name", "dataset__slug", "worker", "error")
    list_select_related = ("language_model", "dataset")
    raw_id_fields = ("language_model", "submission", "depends_on")
    readonly_fields = ("token", "last_heartbeat", "started_at", "finished_at")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "language_model", "dataset", "split", "seed", "hyperparameters_key", "created_at")
    list_filter = ("split", "dataset")
    search_fields = ("language_model__name", "dataset__slug")
    list_select_related = ("language_model", "dataset")
    raw_id_fields = ("job", "language_model")
