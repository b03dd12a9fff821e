"""The e-mail a submitter gets when their submission finishes, fails or is cancelled by an operator.

It is sent once (``Submission.notified_at`` is claimed by a conditional UPDATE first, so two
processes following the same jobs cannot both send it), through Django's e-mail backend: the
console by default, SMTP when ``EMAIL_HOST`` is set. A failure to send is logged, never raised:
the jobs' state must not depend on a mail server.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from submissions.models import Submission

log = logging.getLogger("biolm.submissions")
ENDED = (Submission.Status.FINISHED, Submission.Status.FAILED)


def notify_ended(submission_ids: Iterable[int]) -> int:
    """E-mail the submitters of the finished or failed ``submission_ids`` not yet told; how many were sent."""
    sent = 0
    for submission in Submission.objects.filter(pk__in=list(submission_ids), status__in=ENDED, notified_at=None):
        claimed = Submission.objects.filter(pk=submission.pk, notified_at=None).update(notified_at=timezone.now())
        if not claimed or not submission.submitter.email:
            continue
        try:
            send_mail(subject(submission), body(submission), None, [submission.submitter.email])
            sent += 1
        except Exception:  # SMTP errors, refused connections: the submission's state stands regardless
            log.exception("could not e-mail %s about submission #%s", submission.submitter.email, submission.pk)
    return sent


def subject(submission: Submission) -> str:
    return f"biolm: your submission of {submission.language_model.name} {submission.status}"


def body(submission: Submission) -> str:
    url = settings.BIOLM_SITE_URL + reverse("submissions:detail", args=[submission.pk])
    lines = [f"Your submission #{submission.pk} of {submission.language_model.name} has {submission.status}."]
    if submission.status == Submission.Status.FAILED:
        failed = submission.jobs.filter(status="failed").order_by("finished_at").first()
        if failed is not None and failed.error:
            lines.append(f"Why: {failed.error.strip().splitlines()[-1][:500]}")
        lines.append(submission.refund.sentence)
    lines.append(f"Its page: {url}")
    return "\n\n".join(lines) + "\n"
