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
import statistics
from dataclasses import asdict, dataclass

from django.conf import settings
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from jobs import dispatch, lifecycle, waiting
from jobs.models import FINISHED, WAITING, Job
from leaderboard.models import Result, Score
from registry.models import LanguageModel, Protocol
from submissions.models import Submission
from submissions.refunds import job_refund

LOG_TAIL_LINES = 20
STALLED_AFTER_S = 60  # a running job whose step has not moved for this long is shown as stalled
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
    refund: str  # the refund in words (submissions.refunds), "" unless it failed
    log_tail: str
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    stalled_since: dt.datetime | None = None  # running, and no step has moved (or no heartbeat came) since

    def as_json(self) -> dict:
        data = asdict(self)
        for key in ("estimated_start", "started_at", "finished_at", "stalled_since"):
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
    refund = job_refund(job) if failed else None
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
        refunded=refund.refunded if refund else None,
        refund=refund.sentence if refund else "",
        log_tail="\n".join(job.log.splitlines()[-LOG_TAIL_LINES:]) if (failed or job.log) else "",
        started_at=job.started_at,
        finished_at=job.finished_at,
        stalled_since=stalled_since(job, now),
    )


def stalled_since(job: Job, now: dt.datetime) -> dt.datetime | None:
    """For a running job: since when no step has moved, once that is over :data:`STALLED_AFTER_S` ago, or since
    its last heartbeat when that is stale; else None. The page then says so instead of an estimate."""
    if job.status != Job.Status.RUNNING:
        return None
    stale = dt.timedelta(seconds=settings.BIOLM_HEARTBEAT_STALE_S)
    if job.last_heartbeat is not None and now - job.last_heartbeat > stale:
        return job.last_heartbeat
    moved = lifecycle.advanced_at(job)
    return moved if moved is not None and now - moved > dt.timedelta(seconds=STALLED_AFTER_S) else None


@dataclass(frozen=True)
class Overall:
    """How long the whole submission has left: ``seconds`` for the jobs whose time is known, ``unknown`` of them
    have none (no job of their kind finished here yet), so ``seconds`` is then a lower bound."""

    seconds: float | None
    unknown: int
    left: int  # jobs not finished

    def as_json(self) -> dict:
        return asdict(self)


def overall_eta(submission: Submission, states: list[JobState], now: dt.datetime | None = None) -> Overall:
    """The time left for all of ``submission``'s jobs: the running ones' ETAs, the waiting ones' typical durations.

    A waiting job takes what the same kind of job on the same dataset took lately on this site (the median of the
    last successes), else what its kind took. Each queue's work is shared among its live workers' slots; the
    training queue's work comes before the scoring queue's (a dataset is scored once it is fine-tuned).
    """
    now = now or timezone.now()
    unfinished = [state for state in states if state.status not in FINISHED]
    if not unfinished:
        return Overall(0.0, 0, 0)
    typical = typical_durations({state.kind for state in unfinished})
    datasets = dict(Job.objects.filter(pk__in=[s.id for s in unfinished]).values_list("pk", "dataset_id"))
    work: dict[str, float] = {}
    unknown = 0
    for state in unfinished:
        seconds = _left(state, typical, datasets.get(state.id), now)
        if seconds is None:
            unknown += 1
            continue
        work[state.queue] = work.get(state.queue, 0.0) + seconds
    queues = waiting.queue_states(settings.BIOLM_HEARTBEAT_STALE_S, now)
    total = sum(seconds / max(1, sum(w.slots for w in queues[queue].live) if queue in queues else 1)
                for queue, seconds in work.items())  # fmt: skip
    known = len(unfinished) - unknown
    return Overall(total if known else None, unknown, len(unfinished))


def _left(state: JobState, typical: dict, dataset_id: int | None, now: dt.datetime) -> float | None:
    """Seconds ``state``'s job has left: its ETA while it runs (or its typical duration less the time run)."""
    usual = typical.get((state.kind, dataset_id), typical.get((state.kind, None)))
    if state.status == Job.Status.RUNNING:
        if state.eta_s is not None:
            return state.eta_s
        if usual is not None and state.started_at is not None:
            return max(0.0, usual - (now - state.started_at).total_seconds())
    return usual


def typical_durations(kinds: set[str], recent: int = 200) -> dict[tuple[str, int | None], float]:
    """The median seconds of the last successes per (kind, dataset id), and per (kind, None) over all datasets."""
    done = (
        Job.objects.filter(kind__in=kinds, status=Job.Status.SUCCEEDED, started_at__isnull=False,
                           finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("kind", "dataset_id", "started_at", "finished_at")[:recent]
    )  # fmt: skip
    seconds: dict[tuple[str, int | None], list[float]] = {}
    for kind, dataset_id, started, finished in done:
        took = max(0.0, (finished - started).total_seconds())
        seconds.setdefault((kind, dataset_id), []).append(took)
        seconds.setdefault((kind, None), []).append(took)
    return {key: statistics.median(values) for key, values in seconds.items()}


@dataclass(frozen=True)
class DatasetScore:
    """One dataset's result: the protocol's statistic over its seeds (or folds), with their spread."""

    slug: str
    name: str
    url: str
    metric: str
    value: float
    std: float | None
    n: int | None
    over: str  # "seeds" or "folds"
    preview: bool
    held: str = ""  # a held dataset's result not published: whose approval it awaits, or why it was rejected


@dataclass(frozen=True)
class BenchmarkScore:
    """The benchmark score and the rank it has (or, private, would have) among the public models ranked there."""

    name: str
    url: str
    score: float | None
    rank: int | None
    tied: bool
    ranked: int  # public models ranked on the benchmark
    preview: bool
    missing: tuple[str, ...] = ()  # what the score lacks (entries with no result): then it has none


def results_of(submission: Submission) -> tuple[list[DatasetScore], list[BenchmarkScore]]:
    """What the finished submission scored: each dataset's result from its jobs, and each benchmark's score."""
    model = submission.language_model
    jobs = Job.objects.filter(submission=submission, kind=Job.Kind.FINETUNE).values_list("pk", flat=True)
    rows = Result.everything.filter(language_model=model, job__in=list(jobs)).select_related(
        "dataset__held_by", "metric"
    )  # unpublished too: the submitter reads that a held dataset's result awaits its holder, not that it is lost
    datasets = [_dataset_score(r) for r in rows.order_by("dataset__name")]
    benchmarks = []
    scores = Score.objects.filter(language_model=model, benchmark__in=submission.benchmarks.all())
    for score in scores.select_related("benchmark"):
        public = LanguageModel.objects.public()
        ranked = Score.objects.filter(benchmark=score.benchmark, rank__isnull=False, language_model__in=public)
        shown = BenchmarkScore(
            name=score.benchmark.name, url=score.benchmark.get_absolute_url(), score=score.score, rank=score.rank,
            tied=score.rank_tied, ranked=ranked.filter(preview=False).count(), preview=score.preview,
            missing=tuple(score.missing or ()),
        )  # fmt: skip
        benchmarks.append(shown)
    return datasets, benchmarks


def _dataset_score(result: Result) -> DatasetScore:
    cross_validated = ((result.provenance or {}).get("protocol") or {}).get("cross_validation")
    return DatasetScore(
        slug=result.dataset.slug, name=result.dataset.name,
        url=reverse("registry:dataset-detail", args=[result.dataset.slug]), metric=result.metric.name,
        value=result.value, std=result.std, n=result.n_seeds, over="folds" if cross_validated else "seeds",
        preview=result.preview, held=_unpublished(result),
    )  # fmt: skip


def _unpublished(result: Result) -> str:
    """Why a held dataset's result is on no page yet, in words; "" once it is published (or needs no approval)."""
    holder = result.dataset.held_by
    if result.approval == Result.Approval.PENDING:
        return f"awaiting {holder}'s approval before it is published (its data is held under a data use agreement)"
    if result.approval == Result.Approval.REJECTED:
        return f"not published: {holder} rejected it ({result.approval_reason})"
    return ""


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


def pretraining_ranks(model: LanguageModel) -> list[dict]:
    """Where each rank of the model's pretraining ran (its report's ``provenance.ranks``: rank, host, node rank,
    local rank), in rank order, for a run of several processes; [] for one process or no report yet. A two-node
    job's page then says which node each rank was on, which is where a slow or failing node is found."""
    report = model.pretraining if isinstance(model.pretraining, dict) else {}
    ranks = (report.get("provenance") or {}).get("ranks") or []
    rows = [
        {key: entry.get(key, "") for key in ("rank", "host", "node_rank", "local_rank")}
        for entry in ranks
        if isinstance(entry, dict)
    ]
    if len(rows) < 2:
        return []
    return sorted(rows, key=lambda row: row["rank"] if isinstance(row["rank"], int) else 1 << 30)
