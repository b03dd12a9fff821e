"""The operators' job queue: filters, live progress, bulk actions, the log, queue depth and live workers;
and the installed plugins with the failures their code caused.

Every action goes through :mod:`jobs.lifecycle`, so cancelling from the admin stops a running
loop at its next heartbeat exactly as any other cancellation does.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from jobs import dispatch, lifecycle, waiting
from jobs.models import FINISHED, WAITING, Attempt, Job, Run, Worker
from registry.models import Plugin

# PostgreSQL sorts NULL first in a descending order, SQLite last: a job that never finished
# (killed before it could stamp the time) must not pass for the newest failure on either.
NEWEST_FIRST = F("finished_at").desc(nulls_last=True)


class OwnerFilter(admin.SimpleListFilter):
    title = "user"
    parameter_name = "user"

    def lookups(self, request, model_admin):
        users = Job.objects.exclude(submission__isnull=True).values_list(
            "submission__submitter_id", "submission__submitter__username"
        )
        return sorted(set(users), key=lambda pair: pair[1])

    def queryset(self, request, queryset):
        return queryset.filter(submission__submitter_id=self.value()) if self.value() else queryset


class AttemptInline(admin.TabularInline):
    """Each delivery that held the job: its worker, the GPUs it held and for how long (what the job cost)."""

    model = Attempt
    fields = ("number", "worker", "gpus", "gpu_model", "started_at", "ended_at", "gpu_seconds")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = (
        "id", "kind", "language_model", "dataset", "queue", "status", "waiting_on", "progress_bar", "eta", "priority",
        "attempts", "worker", "heartbeat_age", "created_at",
    )  # fmt: skip
    list_filter = ("status", "queue", "kind", OwnerFilter, "failure_cause", "submission")
    search_fields = ("language_model__name", "dataset__slug", "worker", "error")
    list_select_related = ("language_model", "dataset")
    raw_id_fields = ("language_model", "submission", "depends_on")
    readonly_fields = (
        "token", "claim", "attempts", "worker", "last_heartbeat", "progress_step", "progress_total", "progress_loss",
        "eta_s", "queued_at", "dispatched_at", "sent_to", "started_at", "finished_at", "failure_cause", "error",
        "log_tail",
    )  # fmt: skip
    exclude = ("log",)
    inlines = (AttemptInline,)
    actions = ("cancel_jobs", "retry_jobs", "requeue_jobs", "raise_priority")
    change_list_template = "admin/jobs/job/change_list.html"
    _rendering = threading.local()  # what one request's rows share (the admin object serves every thread)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(blocked=lifecycle.blocked_by_dependencies())

    @admin.display(description="waiting on")
    def waiting_on(self, job: Job) -> str:
        # The queues' workers are read once per request (changelist_view), not once per row.
        states = getattr(self._rendering, "states", None) or waiting.queue_states(settings.BIOLM_HEARTBEAT_STALE_S)
        return waiting.reason(job, states, blocked=getattr(job, "blocked", None)) or "-"

    @admin.display(description="progress")
    def progress_bar(self, job: Job) -> str:
        if job.progress is None:
            return "-"
        loss = f", loss {job.progress_loss:.3f}" if job.progress_loss is not None else ""
        return format_html(
            '<progress value="{}" max="{}"></progress> {}/{}{}',
            job.progress_step, job.progress_total, job.progress_step, job.progress_total, loss,
        )  # fmt: skip

    @admin.display(description="ETA")
    def eta(self, job: Job) -> str:
        if job.status != Job.Status.RUNNING or job.eta_s is None:
            return "-"
        minutes, seconds = divmod(int(job.eta_s), 60)
        return f"{minutes}:{seconds:02d}"

    @admin.display(description="last heartbeat")
    def heartbeat_age(self, job: Job) -> str:
        if job.status != Job.Status.RUNNING or job.last_heartbeat is None:
            return "-"
        return f"{(timezone.now() - job.last_heartbeat).total_seconds():.0f} s ago"

    @admin.display(description="log (tail)")
    def log_tail(self, job: Job) -> str:
        return format_html('<pre style="max-height:40em;overflow:auto">{}</pre>', job.log or "(empty)")

    @admin.action(description="Cancel the selected jobs (and what waits on them)")
    def cancel_jobs(self, request, queryset) -> None:
        count = lifecycle.cancel(queryset)
        self.message_user(request, f"{count} jobs cancelled", messages.SUCCESS)

    @admin.action(description="Retry the selected failed or cancelled jobs (attempts reset)")
    def retry_jobs(self, request, queryset) -> None:
        count = lifecycle.requeue(queryset.filter(status__in=(Job.Status.FAILED, Job.Status.CANCELLED)))
        self.message_user(request, f"{count} jobs queued again", messages.SUCCESS)

    @admin.action(description="Requeue the selected jobs whatever their state (a stuck one included)")
    def requeue_jobs(self, request, queryset) -> None:
        count = lifecycle.requeue(queryset.exclude(status=Job.Status.SUCCEEDED), reset_attempts=False)
        self.message_user(request, f"{count} jobs requeued", messages.SUCCESS)

    @admin.action(description="Raise the priority of the selected waiting jobs by 10")
    def raise_priority(self, request, queryset) -> None:
        count = queryset.exclude(status__in=FINISHED).update(priority=F("priority") + 10)
        self.message_user(request, f"{count} jobs raised", messages.SUCCESS)

    def changelist_view(self, request, extra_context=None):
        stale = settings.BIOLM_HEARTBEAT_STALE_S
        states = self._rendering.states = waiting.queue_states(stale)
        depth = dict(
            Job.objects.filter(status__in=WAITING)
            .values_list("queue")
            .annotate(n=Count("pk"))
            .values_list("queue", "n")
        )
        running = dict(
            Job.objects.filter(status=Job.Status.RUNNING)
            .values_list("queue")
            .annotate(n=Count("pk"))
            .values_list("queue", "n")
        )
        held = sorted({queue for queue in [*depth, *running, *states] if queue not in Job.Queue.values})
        for queue in held:  # a data holder's queue: shown while it has jobs or workers
            states.setdefault(queue, waiting.QueueState(queue))
        queues = [
            {"name": f"{states[queue].name} ({queue})", "waiting": depth.get(queue, 0),
             "running": running.get(queue, 0),
             "slots": dispatch.capacity(queue, stale),
             "note": states[queue].unserved_note() if depth.get(queue) and not states[queue].served else ""}
            for queue in [*Job.Queue.values, *held]
        ]  # fmt: skip
        now = timezone.now()
        workers = [
            {"worker": worker, "state": waiting.worker_state(worker, stale, now)}
            for worker in sorted(waiting.recent_workers(now), key=lambda w: w.name)
        ]
        extra = {"queues": queues, "workers": workers, "stale_after_s": stale}
        return super().changelist_view(request, {**(extra_context or {}), **extra})


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("name", "queues", "holder", "slots", "runs_on", "gpus_free", "last_heartbeat", "state", "problem",
                    "code_note", "started_at")  # fmt: skip
    readonly_fields = ("name", "queues", "slots", "gpus", "gpus_free", "shares_gpu", "workers_per_gpu", "gpu_devices",
                       "started_at", "last_heartbeat", "problem", "problem_at", "code_note",
                       "code_note_at")  # fmt: skip

    @admin.display(description="runs on")
    def runs_on(self, worker: Worker) -> str:
        return worker.device

    @admin.display(description="state")
    def state(self, worker: Worker) -> str:
        return waiting.worker_state(worker, settings.BIOLM_HEARTBEAT_STALE_S)


@admin.register(Plugin)
class PluginAdmin(admin.ModelAdmin):
    """Every plugin the last sync saw, what jobs pin of it, and the jobs its code failed, newest error first.

    A plugin's failure (its code raised, or its installed code was not the code a job pinned) is
    refunded to the submitter and counted here, against the plugin: an operator sees which plugin
    to fix or roll back.
    """

    list_display = ("name", "distribution", "version", "fingerprint", "active", "failures", "last_error")
    list_filter = ("active", "source")
    search_fields = ("name", "distribution")
    readonly_fields = ("name", "source", "distribution", "version", "fingerprint", "contributes", "active",
                       "synced_at", "recent_failures")  # fmt: skip

    def get_queryset(self, request):
        failed = Job.objects.filter(failure_cause=Job.Cause.PLUGIN, blamed_plugin=OuterRef("name"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                failure_count=Subquery(failed.values("blamed_plugin").annotate(n=Count("pk")).values("n")[:1]),
                newest_error=Subquery(failed.order_by(NEWEST_FIRST, "-pk").values("error")[:1]),
            )
        )

    def has_add_permission(self, request) -> bool:
        return False  # plugins are installed with pip and synced, not typed in

    @admin.display(description="failures", ordering="failure_count")
    def failures(self, plugin: Plugin) -> int:
        return plugin.failure_count or 0

    @admin.display(description="last error")
    def last_error(self, plugin: Plugin) -> str:
        return (plugin.newest_error or "").strip().splitlines()[-1][:200] if plugin.newest_error else ""

    @admin.display(description="recent failures")
    def recent_failures(self, plugin: Plugin) -> str:
        jobs = Job.objects.filter(Q(failure_cause=Job.Cause.PLUGIN) & Q(blamed_plugin=plugin.name))
        newest = jobs.order_by(NEWEST_FIRST, "-pk")[:10]
        rows = [(job.pk, job.finished_at or "", job.error.strip()[:300]) for job in newest]
        if not rows:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>job #{} ({}): {}</li>", rows))


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "language_model", "dataset", "split", "fold", "seed", "hyperparameters_key", "created_at")
    list_filter = ("split", "dataset")
    search_fields = ("language_model__name", "dataset__slug")
    list_select_related = ("language_model", "dataset")
    raw_id_fields = ("job", "language_model")
