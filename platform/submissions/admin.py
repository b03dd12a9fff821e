from django.contrib import admin

from submissions.models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "language_model", "submitter", "status_text", "refunded", "created_at", "updated_at")
    list_filter = ("status", "refunded", "benchmarks")
    search_fields = ("language_model__name", "submitter__username", "notes")
    list_select_related = ("language_model", "submitter")
    raw_id_fields = ("language_model",)
    readonly_fields = ("status", "refunded")  # they follow the submission's jobs

    @admin.display(description="status", ordering="status")
    def status_text(self, submission: Submission) -> str:
        return submission.status_text
