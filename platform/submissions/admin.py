"""Submissions in the admin: their status follows their jobs, so status and refund are read-only here; the
"view on site" link opens the submission's own page (jobs, waiting reasons, logs)."""

from django.contrib import admin
from django.urls import reverse

from submissions.models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = (
        "id", "language_model", "submitter", "status_text", "preview", "refunded", "created_at", "updated_at",
    )  # fmt: skip
    list_filter = ("status", "preview", "refunded", "benchmarks")
    search_fields = ("language_model__name", "submitter__username", "notes")
    list_select_related = ("language_model", "submitter")
    raw_id_fields = ("language_model",)
    readonly_fields = ("status", "refunded", "refund_cause", "preview", "notified_at")  # they follow its jobs

    @admin.display(description="status", ordering="status")
    def status_text(self, submission: Submission) -> str:
        return submission.status_text

    def view_on_site(self, submission: Submission) -> str:
        return reverse("submissions:detail", args=[submission.pk])
