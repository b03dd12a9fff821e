"""What the submission page and the API share: who may see a submission, its jobs' live state,
cancelling, publishing.

A private submission is the owner's and staff's alone: anyone else is told it does not exist
(404, never 403, which would confirm that it does). A submission's model is private until its
owner publishes it; publishing saves the model's ``visibility`` through the ORM, so the
leaderboard re-ranks (``leaderboard.signals.visibility_changed``) exactly as when an operator
changes it in the admin.

:func:`job_states` is the one description of a job's progress that the page, its live updates
and the API all show: state, progress, ETA, queue position and estimated start, the last
heartbeat's age, attempts, why it waits, and, on failure, the reason in plain words with the log's
tail and whether the quota was refunded.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from django.conf import settings
from django.http import Http404
from django.utils import timezone

from jobs import dispatch, lifecycle, waiting
from jobs.models import WAITING, Job
from registry.models import LanguageModel, Protocol
from submissions.models import Submission

LOG_TAIL_LINES = 20
CAUSE_WORDS = {
    Job.Cause.PLATFORM: "the platform failed (a worker died or lost its connection); it is not counted against you",
    Job.Cause.SUBMISSION: "the submission failed",
    Job.Cause.PLUGIN: "a plugin's code failed; it was not retried",
}


def may_see(user, submission: Submission) -> bool:
    """A submission is seen by whoever may see its model (the privacy rule: everyone once it is public, its
    owner and staff while it is private), since its page names the model."""
    return submission.language_model.is_visible_to(user)


def may_manage(user, submission: Submission) -> bool:
    """Cancelling and publishing: its submitter's and staff's, and only while they may see its model, so no
    action reaches a model that is not theirs to see."""
    if user is None or not user.is_authenticated or not (user.is_staff or user.pk == submission.submitter_id):
        return False
    return may_see(user, submission)


def submission_for(user, pk: int, *, manage: bool = True) -> Submission:
    """Submission ``pk`` if ``user`` may see it (``manage``: cancel or publish it); else Http404, never a 403."""
    submission = Submission.objects.select_related("language_model", "submitter").filter(pk=pk).first()
    if submission is None or not (may_manage(user, submission) if manage else may_see(user, submission)):
        raise Http404("no such submission")
    return submission


@dataclass(frozen=True)
class JobState:
    """One job as the person waiting sees it; :meth:`as_json` is what the page's live updates and the API send."""

    id: int
    kind: str
    dataset: str | None
    seeds: int | None
    status: str
    status_label: str
    progress: float | None  # 0..1
    step: int
    total: int
    eta_s: float | None
    queue: str
    queue_name: str  # what its queue does here (jobs.waiting.queue_name): "training", "GPU training", "scoring"
    queue_position: int | None
    estimated_start: dt.datetime | None
    waiting_reason: str
    heartbeat_age_s: float | None
    attempts: int
    max_attempts: int
    failure: str
    failure_cause: str
    refunded: bool | None
    log_tail: str
    started_at: dt.datetime | None
    finished_at: dt.datetime | None

    def as_json(self) -> dict:
        data = asdict(self)
        for key in ("estimated_start", "started_at", "finished_at"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


def job_states(submission: Submission, now: dt.datetime | None = None) -> list[JobState]:
    """Every job of ``submission``, in the order they run, with what its submitter needs to know."""
    now = now or timezone.now()
    stale = settings.BIOLM_HEARTBEAT_STALE_S
    jobs = list(
        Job.objects.filter(submission=submission)
        .select_related("dataset")
        .annotate(blocked=lifecycle.blocked_by_dependencies())
        .order_by("pk")
    )
    states = waiting.queue_states(stale, now)
    places: dict[int, dispatch.Place] = {}
    for queue in {job.queue for job in jobs if job.status in WAITING}:
        places.update(dispatch.places(queue, stale, now))
    return [_state(job, places.get(job.pk), states, now, submission) for job in jobs]


def _state(job: Job, place, states, now: dt.datetime, submission: Submission) -> JobState:
    waiting_now = job.status in WAITING
    reason = waiting.reason(job, states, now, blocked=job.blocked) if waiting_now else ""
    failed = job.status == Job.Status.FAILED
    return JobState(
        id=job.pk,
        kind=job.kind,
        dataset=job.dataset.slug if job.dataset_id else None,
        seeds=_seeds(job),
        status=job.status,
        status_label=job.get_status_display(),
        progress=1.0 if job.status == Job.Status.SUCCEEDED else job.progress,
        step=job.progress_step,
        total=job.progress_total,
        eta_s=job.eta_s if job.status == Job.Status.RUNNING else None,
        queue=job.queue,
        queue_name=states[job.queue].name if job.queue in states else waiting.queue_name(job.queue),
        queue_position=place.position if (place and waiting_now and not job.blocked) else None,
        estimated_start=place.estimated_start if (place and waiting_now and not job.blocked) else None,
        waiting_reason=reason,
        heartbeat_age_s=(now - job.last_heartbeat).total_seconds() if job.last_heartbeat else None,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        failure=plain_failure(job) if failed else "",
        failure_cause=job.failure_cause if failed else "",
        refunded=(job.failure_cause == Job.Cause.PLATFORM) if failed else None,
        log_tail="\n".join(job.log.splitlines()[-LOG_TAIL_LINES:]) if (failed or job.log) else "",
        started_at=job.started_at,
        finished_at=job.finished_at,
    )


def _seeds(job: Job) -> int | None:
    """How many seeds the job's protocol runs, where its spec changes them (quick previews and overrides do)."""
    overrides = getattr(job.contract, "overrides", None)
    return overrides.seeds if overrides is not None else None


def plain_failure(job: Job) -> str:
    """Why the job failed, in words: whose fault, then the error's last line (the log tail has the rest)."""
    cause = CAUSE_WORDS.get(job.failure_cause, "it failed")
    lines = [line.strip() for line in job.error.strip().splitlines() if line.strip()]
    return f"{cause}: {lines[-1][:500]}" if lines else cause


def cancel_submission(submission: Submission) -> int:
    """Cancel every unfinished job of ``submission`` (a running one stops at its next heartbeat); how many."""
    return lifecycle.cancel(Job.objects.filter(submission=submission))


def set_published(submission: Submission, published: bool) -> LanguageModel:
    """Make the submission's model public (on the leaderboard) or private again; saved so ranks follow."""
    model = submission.language_model
    wanted = LanguageModel.Visibility.PUBLIC if published else LanguageModel.Visibility.PRIVATE
    if model.visibility != wanted:
        model.visibility = wanted
        model.save(update_fields=["visibility", "updated_at"])
    return model


def datasets_of(submission: Submission) -> list[str]:
    """The slugs of the datasets the submission evaluates on, in job order."""
    slugs = Job.objects.filter(submission=submission, kind=Job.Kind.FINETUNE).order_by("pk")
    return list(dict.fromkeys(slugs.values_list("dataset__slug", flat=True)))


def evaluation_of(submission: Submission) -> tuple[dict, Protocol | None]:
    """What the submission evaluates by: the protocol's settings it changed (``{}``: none) and the protocol.

    A quick preview's own settings (one grid point, one seed, the site's caps) are not "changed
    settings": the page says it is a preview instead.
    """
    job = Job.objects.filter(submission=submission, kind=Job.Kind.FINETUNE).order_by("pk").first()
    if job is None:
        return {}, None
    spec = job.contract
    changed = {} if spec.preview else spec.overrides.to_json()
    return changed, Protocol.objects.filter(slug=spec.protocol).first()
