"""A researcher's request to evaluate a language model on one or more benchmarks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from registry.models import Benchmark, LanguageModel
from submissions.refunds import Refund


class Submission(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"
        CANCELLED = "cancelled"

    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="submissions")
    benchmarks = models.ManyToManyField(Benchmark, related_name="submissions")

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    preview = models.BooleanField(
        default=False,
        help_text="A quick preview (one grid point, one seed): its results are marked as such and never ranked "
        "beside results of the full protocol.",
    )
    notified_at = models.DateTimeField(
        null=True, blank=True, help_text="When its submitter was e-mailed that it finished or failed."
    )
    notes = models.TextField(blank=True)
    refunded = models.BooleanField(
        default=False,
        help_text="It failed through no fault of its submitter's (the platform's, or a plugin's code) and does not "
        "count against the quota (submissions.refunds).",
    )
    refund_cause = models.CharField(
        max_length=300, blank=True, help_text="Why it was refunded, in words: the platform's fault, or which plugin's."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.language_model} by {self.submitter} ({self.status_text})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.FINISHED, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def status_text(self) -> str:
        """The status, saying for a failed submission whether its quota was refunded.

        The status follows the submission's jobs (:func:`jobs.lifecycle.follow_submissions`).
        """
        if self.status == self.Status.FAILED:
            return f"failed ({self.refund.status_words})"
        return self.get_status_display()

    @property
    def refund(self) -> Refund:
        """Its refund as :mod:`submissions.refunds` words it (recorded when its job failed)."""
        return Refund(self.refunded, self.refund_cause or "not its submitter's fault")
