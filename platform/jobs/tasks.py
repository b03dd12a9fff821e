"""The platform's Celery tasks (queue ``cpu``): the tick that reaps and dispatches, and the platform's own jobs.

* ``biolm.jobs.tick`` (beat, every ``BIOLM_TICK_S``): records the CPU worker running it as
  alive, requeues the jobs of silent workers (:func:`jobs.lifecycle.reap`) and sends the next
  jobs to free worker slots (:func:`jobs.dispatch.dispatch`).
* ``biolm.jobs.run_platform_job``: a job of the ``cpu`` queue, run where the database is: a score
  job records its fine-tuning job's results (the leaderboard's handler, :mod:`jobs.handlers`). The
  CPU worker's watchdog runs the same code in-process for a job whose messages no consumer took
  (:mod:`jobs.watchdog`). Before it runs, the worker brings its plugins up to date and checks that
  the code it loaded is the code the job pins (:mod:`biolm.contract.code`): a plugin of another
  version or content fails the job as the plugin's, not retried and refunded.
* ``biolm.jobs.check_outputs``: a pretraining job's delivered model, unpacked and checked before
  it becomes its language model's files (:func:`jobs.completion.accept_outputs`), here rather than in
  the web request of the worker's ``/complete``, which only hands the job over.

GPU jobs go to :data:`biolm.broker.GPU_TASK` on the broker queue the dispatcher chose for them
(``Job.sent_to``: ``gpu``, ``gpu-4``, ``gpu-shared``, :mod:`biolm.placement`), a task of the database-free
worker (:mod:`workers.runner`); it is sent by name, since the platform does not import it. Every
message carries the job's id and token only: the claim returns the job's spec, once.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from celery import current_app, shared_task
from celery.signals import worker_process_init, worker_ready
from django.conf import settings
from django.db import DatabaseError

from biolm import contract, plugin_set
from biolm.broker import GPU_TASK
from biolm.placement import on_gpu_workers
from biolm.plugin_faults import PluginFault, blame
from jobs import completion, dispatch, handlers, hub_tokens, keepalive, lifecycle
from jobs.models import Job
from registry.sync import load_contributions

logger = logging.getLogger("biolm.jobs")

CPU_SLOTS = 1
INSTALL_HINT = (
    "install it where the workers run (they load newly installed plugins before each job, no restart needed); "
    "the job is retried"
)


def send(job: Job) -> None:
    """One message per dispatched job: its id and its token (the claim returns the spec), on its seat's queue."""
    if on_gpu_workers(job.queue):
        current_app.send_task(GPU_TASK, args=[job.pk, job.token], queue=job.sent_to or Job.Queue.GPU)
    else:
        run_platform_job.apply_async(args=[job.pk, job.token], queue=Job.Queue.CPU)


def kick() -> list[int]:
    """Dispatch now (a job finished, a worker appeared, a submission arrived) instead of at the next tick."""
    try:
        return dispatch.dispatch(
            send, stale_after_s=settings.BIOLM_HEARTBEAT_STALE_S, redispatch_after_s=settings.BIOLM_REDISPATCH_AFTER_S
        )
    except Exception:  # the broker is down: the tick sends them when it is back
        logger.exception("dispatch failed; the next tick retries")
        return []


@shared_task(bind=True, name="biolm.jobs.tick", ignore_result=True)
def tick(self) -> dict:
    return tick_once(self.request.hostname)


def tick_once(hostname: str | None) -> dict:
    """The tick's work: ``hostname`` (the CPU worker) is alive, silent workers' jobs are requeued, jobs sent."""
    if hostname:
        dispatch.record_worker(hostname, [Job.Queue.CPU], slots=CPU_SLOTS)
    moved = lifecycle.reap(
        settings.BIOLM_HEARTBEAT_STALE_S, settings.BIOLM_QUEUE_LIMIT_S, intake_wait_s=settings.BIOLM_INTAKE_WAIT_S
    )
    if moved:
        logger.warning("requeued or failed jobs %s", moved)
    hub_tokens.forget_finished()  # a cancelled Hub fetch's token too, within a tick
    return {"reaped": moved, "sent": kick()}


@worker_process_init.connect
def _note_the_plugins(**_: object) -> None:
    """Each pool process notes the plugin set it starts with, so a later change is noticed and loaded."""
    plugin_set.ensure_current()


@worker_ready.connect
def _watch_the_beat(sender, **_: object) -> None:
    """A worker consuming the cpu queue ticks by itself if the beat goes quiet (:mod:`jobs.watchdog`)."""
    if Job.Queue.CPU in sender.app.amqp.queues.consume_from:
        from jobs import watchdog

        watchdog.start(sender.hostname, tick_once, execute_platform_job)


@shared_task(
    bind=True,
    name="biolm.jobs.run_platform_job",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=0,
)
def run_platform_job(self, job_id: int, token: str) -> str | None:
    """Claim and run a ``cpu`` job; a redelivery that finds it taken does nothing."""
    return execute_platform_job(job_id, token, self.request.id or "eager", self.request.hostname or "local")


def execute_platform_job(job_id: int, token: str, delivery: str, worker: str) -> str | None:
    """What a ``cpu`` job's delivery does, from the broker or from the watchdog (:func:`jobs.watchdog.run_stranded`)."""
    job = lifecycle.claim(job_id, token, delivery, worker)
    if job is None:
        return None
    changes = plugin_set.ensure_current()  # a plugin installed while this worker runs is used without a restart
    if changes:
        lifecycle.heartbeat(job.pk, token, delivery, log=f"reloaded the plugins, which changed: {'; '.join(changes)}\n")
    try:
        contract.check(job.contract.code).require()
        with keepalive.heartbeats(job.pk, token, delivery):  # from a connection of their own
            write = handlers.handler_for(job.kind)(job)
            with lifecycle.succeeding(job.pk, token, delivery):
                lifecycle.heartbeat(job.pk, token, delivery, log=write() + "\n")
    except lifecycle.DeliveryLost:  # reaped or cancelled meanwhile: another delivery (or nobody) records
        logger.info("job #%s: delivery %s lost the job before it succeeded; nothing recorded", job.pk, delivery)
        return None
    except contract.CodeMissing as exc:  # another worker may have the plugin: the platform's, retried
        lifecycle.fail(job.pk, token, delivery, f"{exc} on {worker}: {INSTALL_HINT}", Job.Cause.PLATFORM)
        return Job.Status.FAILED
    except contract.CodeMismatch as exc:  # reloading gave other code than the job pins: the plugin's
        lifecycle.fail(job.pk, token, delivery, str(exc), Job.Cause.PLUGIN, plugin=exc.plugin)
        return Job.Status.FAILED
    except handlers.JobRefused as exc:
        _log_process_output(job, token, delivery, exc)
        lifecycle.fail(job.pk, token, delivery, str(exc), Job.Cause.SUBMISSION)
        return Job.Status.FAILED
    except handlers.PluginRaised as exc:  # in a process the handler ran: the engine named the plugin
        _log_process_output(job, token, delivery, exc)
        lifecycle.fail(job.pk, token, delivery, str(exc), Job.Cause.PLUGIN, plugin=exc.plugin)
        return Job.Status.FAILED
    except Exception as exc:
        return _failed(job, token, delivery, exc)
    kick()
    return Job.Status.SUCCEEDED


def send_check(job_id: int, token: str, claim: str) -> None:
    """After ``/complete`` handed a job over (:func:`jobs.lifecycle.hand_over`): its outputs are checked on ``cpu``."""
    try:
        check_outputs.apply_async(args=[job_id, token, claim], queue=Job.Queue.CPU)
    except Exception:  # the broker is down: the reaper retries the job once its check is overdue
        logger.exception("job #%s: its outputs' check could not be sent", job_id)


@shared_task(name="biolm.jobs.check_outputs", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def check_outputs(job_id: int, token: str, claim: str) -> str | None:
    """Check a delivered job's outputs where the database is, not in the web request that delivered them.

    The job succeeds with its outputs accepted, or fails as the submission's when they are unusable (a
    model that is not a checkpoint); a platform error retries it. A check that outlives the delivering
    worker's claim (reaped: it waited too long) records nothing.
    """
    job = Job.objects.filter(pk=job_id, token=token).first()
    if job is None or not lifecycle.holds(job_id, token, claim):
        return None
    try:
        with keepalive.heartbeats(job_id, token, claim), lifecycle.succeeding(job_id, token, claim):
            done = completion.accept_outputs(job)
            if done:
                lifecycle.heartbeat(job_id, token, claim, log=done + "\n")
    except lifecycle.DeliveryLost:
        return None
    except completion.OutputError as exc:
        lifecycle.fail(job_id, token, claim, str(exc), Job.Cause.SUBMISSION)
        return Job.Status.FAILED
    except Exception as exc:
        return _failed(job, token, claim, exc)
    kick()
    return Job.Status.SUCCEEDED


def _log_process_output(job: Job, token: str, delivery: str, exc: Exception) -> None:
    """What a process the handler ran printed before it failed (an engine's traceback), into the job's log."""
    output = getattr(exc, "log", "")
    if output:
        lifecycle.heartbeat(job.pk, token, delivery, log=output if output.endswith("\n") else output + "\n")


def _failed(job: Job, token: str, delivery: str, exc: Exception) -> str:
    """The job raised: the plugin's fault when a plugin's code raised (not retried), else the platform's."""
    _log_process_output(job, token, delivery, exc)
    fault = plugin_fault(exc, job)
    lifecycle.heartbeat(job.pk, token, delivery, log="".join(traceback.format_exception(exc)))
    if fault is not None:  # the plugin's code raised: running it again would raise again
        logger.error("job #%s: %s", job.pk, fault)
        lifecycle.fail(job.pk, token, delivery, str(fault), Job.Cause.PLUGIN, plugin=plugin_name(fault))
        return Job.Status.FAILED
    logger.exception("job #%s failed on the platform", job.pk)
    lifecycle.fail(job.pk, token, delivery, platform_error(exc), Job.Cause.PLATFORM)
    return Job.Status.FAILED


def plugin_fault(exc: BaseException, job: Job) -> PluginFault | None:
    """The plugin whose code raised ``exc`` while ``job`` ran (scoring with its metric, re-reading with its reader)."""
    try:
        return blame(exc, load_contributions(), dataset=job.dataset.slug if job.dataset_id else None)
    except Exception:  # the plugins cannot be listed now: the platform's failure, as before
        logger.exception("job #%s: could not tell whether a plugin raised", job.pk)
        return None


def plugin_name(fault: PluginFault) -> str:
    """The plugin's registered name, without the distribution and version its label adds."""
    return fault.plugin.split(" (", 1)[0]


def platform_error(exc: BaseException) -> str:
    """What went wrong on the platform and where: a bare ``KeyError: 'language_model'`` (seen when the
    database connection was cut mid-query) says nothing until it names the code that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/platform/" in f.filename or "/workers/" in f.filename] or frames
    where = f" (in {ours[-1].name}, {Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else ""
    database = "; the database connection failed" if isinstance(exc, DatabaseError) else ""
    return f"{type(exc).__name__}: {exc}{where}{database}"
