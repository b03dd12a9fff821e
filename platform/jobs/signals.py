"""What the jobs app tells the apps above it, without importing them.

A job belongs to a submission, and a submission's status, refund and e-mail follow its jobs; but
the submissions app is above this one (it builds jobs, this app never builds submissions), so the
jobs app announces and the submissions app listens (:mod:`submissions.signals`).

* :data:`jobs_changed` (``job_ids``): these jobs changed state; whoever summarises them catches up.
* :data:`job_failed_for_good` (``job``, ``cause``, ``plugin``): a job failed finally, with its cause and, for a
  plugin's failure, the plugin it is counted against; the platform's and a plugin's failures are refunded to
  the submitter (:mod:`submissions.refunds`).
"""

from __future__ import annotations

from django.dispatch import Signal

jobs_changed = Signal()
job_failed_for_good = Signal()
