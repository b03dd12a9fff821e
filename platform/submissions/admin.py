from django.contrib import admin

from submissions.models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "language_model", "submitter", "status", "created_at")
    list_filter = ("status", "benchmarks")
    search_fields = ("language_model__name", "submitter__username", "notes")
    list_select_related = ("language_model", "submitter")
    raw_id_fields = ("language_model",)
