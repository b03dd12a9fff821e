"""The refund rule, said once: a submission that failed through no fault of its submitter's is refunded.

A job that fails for good fails for one of three causes (``Job.Cause``): the submission's own (a bad
checkpoint, settings no worker can hold), the platform's (a lost worker, past its retries), or a
plugin's code (it raised, or a metric returned NaN: counted against that plugin in the admin). The
last two are not the submitter's, so the submission does not count against their daily quota.

Every place that says so asks :func:`refund_for` (the signal that marks the submission, the page and
its live updates, the status text, the e-mail, ``manage.py submission``, the API and the admin), so
none can disagree with another: a plugin's bug is refunded everywhere and named as the cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.models import Job

NOT_REFUNDED = "Not refunded: it counts against your daily quota."


@dataclass(frozen=True)
class Refund:
    """Whether a failure is refunded, and its cause in words ("" when it is the submitter's)."""

    refunded: bool
    cause: str = ""

    @property
    def sentence(self) -> str:
        """What the submitter reads beside the failure."""
        if not self.refunded:
            return NOT_REFUNDED
        return f"Refunded ({self.cause}): it does not count against your daily quota."

    @property
    def status_words(self) -> str:
        """What a failed submission's status adds in brackets."""
        return f"refunded: {self.cause}" if self.refunded else "counted against the quota"


def refund_for(cause: str, plugin: str = "") -> Refund:
    """The refund of a job that failed for good through ``cause``; ``plugin`` the plugin a plugin's failure is
    counted against, named as the cause."""
    if cause == Job.Cause.PLATFORM:
        return Refund(True, "the platform's fault")
    if cause == Job.Cause.PLUGIN:
        return Refund(True, f"a fault in plugin {plugin}'s code" if plugin else "a fault in a plugin's code")
    return Refund(False)


def job_refund(job: Job) -> Refund:
    """The refund of ``job``, which failed for good."""
    return refund_for(job.failure_cause, job.blamed_plugin)
