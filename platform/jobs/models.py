"""Units of work on the GPU/CPU queues, the workers that run them, and the runs they produce.

The database row is the source of truth for a job's state. Its ``spec`` is the job's typed,
versioned document (:mod:`biolm.contract`), built and checked at submit and never changed: a
worker receives only the job's id and token, and the claim returns the spec once. Workers never
need database credentials. Every change of state goes through :mod:`jobs.lifecycle`, whose
conditional UPDATEs are what make a redelivered or reaped task harmless. A :class:`Run` is one
fine-tuning/evaluation of a model on a dataset at one hyperparameter point, seed and fold; it is
unique per job, so a redelivered task cannot record the same run twice.
"""

from __future__ import annotations

import secrets
from functools import cached_property

from django.db import models
from django.utils import timezone

from biolm.contract import FetchJob, FinetuneJob, PretrainJob, ScoreJob, parse_job_spec
from biolm.placement import Need, Seat, holder_of, plural
from registry.models import Benchmark, Dataset, LanguageModel


def new_token() -> str:
    return secrets.token_urlsafe(32)


class Job(models.Model):
    class Kind(models.TextChoices):
        PRETRAIN = "pretrain", "pretrain a recipe on a corpus"
        FINETUNE = "finetune", "the benchmark's protocol on one dataset (sliced: the gather of its slices)"
        SLICE = "slice", "one slice of a protocol: a grid point, the selection, a seed or a fold"
        SCORE = "score", "score the test predictions and record the results"
        FETCH = "fetch", "fetch a checkpoint from the Hugging Face Hub and check it"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        RETRYING = "retrying", "retrying (waiting out its back-off)"

    class Cause(models.TextChoices):
        NONE = "", "-"
        PLATFORM = "platform", "the platform's (refunded)"
        SUBMISSION = "submission", "the submission's"
        PLUGIN = "plugin", "a plugin's code (not retried, refunded)"

    class Queue(models.TextChoices):
        """The platform-wide queues; a data holder's jobs wait in its own, ``held-<name>`` (:mod:`biolm.placement`)."""

        GPU = "gpu"
        CPU = "cpu"

    submission = models.ForeignKey(
        "submissions.Submission", null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="jobs")
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs")
    depends_on = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="dependents")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    queue = models.CharField(
        max_length=50, default=Queue.GPU,
        help_text="gpu, cpu, or a data holder's held-<name>: the workers that may take it.",
    )  # fmt: skip
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    priority = models.SmallIntegerField(default=0, help_text="Higher runs first.")
    spec = models.JSONField(
        default=dict, help_text="The job's typed, versioned spec (biolm.contract), checked at submit, never changed."
    )
    token = models.CharField(max_length=64, default=new_token, editable=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=3, help_text="Attempts before a platform failure is final.")
    time_limit_s = models.PositiveIntegerField(default=24 * 3600, help_text="Seconds one attempt may run.")
    claim = models.CharField(max_length=64, blank=True, help_text="The delivery that holds the job while it runs.")
    worker = models.CharField(max_length=200, blank=True)
    progress_step = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    progress_loss = models.FloatField(null=True, blank=True)
    eta_s = models.FloatField(null=True, blank=True, help_text="Seconds left, as the worker estimates them.")
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    log = models.TextField(blank=True, help_text="The tail of the worker's log.")
    error = models.TextField(blank=True)
    failure_cause = models.CharField(max_length=10, choices=Cause.choices, blank=True, default=Cause.NONE)
    blamed_plugin = models.CharField(
        max_length=200, blank=True, help_text="The plugin whose code failed the job (cause: plugin), or biolm."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(default=timezone.now, help_text="When it last entered its queue.")
    not_before = models.DateTimeField(null=True, blank=True, help_text="Back-off: not dispatched before this.")
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="When its message was last sent.")
    sent_to = models.CharField(
        max_length=20, blank=True, help_text="The broker queue its last message went to (gpu, gpu-4, gpu-shared, cpu)."
    )
    first_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When its first message of this wait was sent (no consumer took it since)."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-priority", "created_at"]
        indexes = [models.Index(fields=["status", "queue", "-priority", "created_at"])]

    def __str__(self) -> str:
        target = self.dataset.slug if self.dataset_id else (self.benchmark.slug if self.benchmark_id else "-")
        return f"#{self.pk} {self.kind} {self.language_model} {target} ({self.status})"

    @property
    def progress(self) -> float | None:
        return self.progress_step / self.progress_total if self.progress_total else None

    @property
    def need(self) -> Need:
        """The GPUs it asks for (:mod:`biolm.placement`): a pretraining job its spec's ``gpus``, on no shared GPU."""
        return Need.of(self.kind, self.spec if isinstance(self.spec, dict) else {}, holder_of(self.queue))

    @cached_property
    def contract(self) -> PretrainJob | FinetuneJob | ScoreJob | FetchJob:
        """The job's spec as its typed document (:func:`biolm.contract.parse_job_spec`)."""
        return parse_job_spec(self.spec)


class HubToken(models.Model):
    """A submitter's Hugging Face token for a gated or private repository, for its Hub fetch job only.

    Kept encrypted (:mod:`jobs.hub_tokens`), never in the job's spec, its claim, its log or an error, and
    deleted when the fetch job ends (retries included), or earlier when its submitter revokes it.
    """

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="hub_token")
    ciphertext = models.TextField(help_text="Fernet-encrypted (cryptography); never shown.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Hub token of job #{self.job_id}"


class Attempt(models.Model):
    """One delivery's hold on a job: who ran it, on what, and for how long, kept whatever the attempt's end.

    What a result cost is the sum of its jobs' attempts, the lost and retried ones included: a GPU
    held by a worker that then died was held all the same. ``gpus`` is the share of GPUs the attempt
    held (a pretraining job's ``gpus`` times its nodes; one fine-tuning job on a GPU shared by four
    workers, 0.25; 0 on a CPU). It ends when its delivery stops holding the job: succeeded, failed,
    reaped, cancelled, or handed to the platform to check its outputs.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    delivery = models.CharField(max_length=64)
    worker = models.CharField(max_length=200)
    gpus = models.FloatField(default=0, help_text="The GPUs it held: a share where its worker shares a GPU; 0: CPU.")
    gpu_model = models.CharField(max_length=200, blank=True, help_text="Its worker's GPU, as nvidia-smi names it.")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    gpu_seconds = models.FloatField(default=0, help_text="GPUs held times seconds held, once it ended.")

    class Meta:
        ordering = ["job", "number"]
        indexes = [models.Index(fields=["job", "ended_at"])]

    def __str__(self) -> str:
        return f"job #{self.job_id} attempt {self.number} on {self.worker}"


FINISHED = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)
WAITING = (Job.Status.QUEUED, Job.Status.RETRYING)


class Worker(models.Model):
    """A live (or lately live) worker process, as its own heartbeats describe it.

    ``problem`` is what its supervisor reported when it gave up on it (it kept dying at
    start-up); the next heartbeat clears it. A worker that failed before it ever heartbeated has
    no ``last_heartbeat``.
    """

    name = models.CharField(max_length=200, unique=True, help_text="Celery's hostname, e.g. gpu0@host.")
    queues = models.CharField(max_length=100, help_text="Comma-separated queues it consumes.")
    holder = models.CharField(
        max_length=40, blank=True, help_text="The data holder whose credential it beats with: it serves held-<holder>."
    )
    slots = models.PositiveSmallIntegerField(default=1, help_text="Jobs it runs at once.")
    gpus = models.PositiveSmallIntegerField(
        default=0, help_text="GPUs its jobs run on, as its heartbeat reports them; 0: it runs them on the CPU."
    )
    gpus_free = models.PositiveSmallIntegerField(
        default=0, help_text="Of its GPUs, those no running job holds, as its last heartbeat said."
    )
    shares_gpu = models.BooleanField(
        default=False, help_text="It shares its GPU with other workers (BIOLM_WORKERS_PER_GPU): fine-tuning jobs only."
    )
    workers_per_gpu = models.PositiveSmallIntegerField(
        default=1,
        help_text="Workers sharing its GPU (BIOLM_WORKERS_PER_GPU) when it shares one: a job holds that share.",
    )
    gpu_devices = models.JSONField(
        default=list, blank=True, help_text="Each of its GPUs as nvidia-smi names it: [{name, memory_bytes}]."
    )
    executor = models.CharField(
        max_length=10, default="local", choices=[("local", "local"), ("slurm", "Slurm")],
        help_text="How it runs a job: as its own child process (local), or as a Slurm batch job (slurm).",
    )  # fmt: skip
    nodes = models.PositiveSmallIntegerField(
        default=1, help_text="A Slurm worker: the nodes one job may span (gpus and gpu_devices are per node)."
    )
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(default=timezone.now, null=True, blank=True, db_index=True)
    problem = models.TextField(blank=True, help_text="Why its supervisor stopped restarting it.")
    problem_at = models.DateTimeField(null=True, blank=True)
    code_note = models.TextField(
        blank=True,
        help_text="Why it last handed a job back: the code it runs is not the code the job pins (its claim said so).",
    )
    code_note_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def seat(self) -> Seat:
        """What it can hold (:class:`biolm.placement.Seat`), and so the broker queue it consumes."""
        return Seat(self.gpus, shared=self.shares_gpu, nodes=self.nodes or 1, slurm=self.executor == "slurm",
                    holder=self.holder)  # fmt: skip

    @property
    def device(self) -> str:
        """What its jobs run on, in words: "CPU", "1 GPU, shared", "4 GPUs (NVIDIA H200, 140 GiB each)", and for a
        Slurm worker "Slurm: up to 2 nodes of 4 GPUs (NVIDIA A100, 80 GiB each)"."""
        if self.executor == "slurm":
            each = f"{plural(self.gpus)}" if self.gpus else "CPUs"
            kinds = sorted({(d.get("name", "?"), d.get("memory_bytes", 0)) for d in self.gpu_devices or []})
            details = "; ".join(f"{name}, {memory / 2**30:.0f} GiB" for name, memory in kinds)
            reach = f"Slurm: up to {plural(self.nodes or 1, 'node')} of {each}"
            return reach + (f" ({details} each)" if details else "")
        if not self.gpus:
            return "CPU"
        kinds = sorted({(d.get("name", "?"), d.get("memory_bytes", 0)) for d in self.gpu_devices or []})
        details = "; ".join(f"{name}, {memory / 2**30:.0f} GiB" for name, memory in kinds)
        each = " each" if details and len(kinds) == 1 and self.gpus > 1 else ""
        shared = ", shared" if self.shares_gpu else ""
        return f"{plural(self.gpus)}{shared}" + (f" ({details}{each})" if details else "")

    @property
    def free(self) -> str:
        """Its GPUs that no running job holds, "3 of 4", as its last heartbeat said ("-" on the CPU)."""
        return f"{self.gpus_free} of {self.gpus}" if self.gpus else "-"


class Run(models.Model):
    class Split(models.TextChoices):
        DEV = "dev"
        TEST = "test"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="runs")
    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")
    hyperparameters = models.JSONField(default=dict)
    hyperparameters_key = models.CharField(max_length=200, help_text="Canonical form of hyperparameters.")
    seed = models.IntegerField()
    fold = models.PositiveSmallIntegerField(
        default=0, help_text="The cross-validation fold (from 1) of a protocol that runs on folds; 0 without folds."
    )
    split = models.CharField(max_length=4, choices=Split.choices)
    metrics = models.JSONField(default=dict, help_text="{metric slug: value on the 0-100 scale}")
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "hyperparameters_key", "fold", "seed", "split"],
                name="unique_run_per_job_point_fold_seed_split",
            )
        ]

    def __str__(self) -> str:
        fold = f" fold={self.fold}" if self.fold else ""
        return f"{self.language_model} {self.dataset.slug}{fold} seed={self.seed} {self.split}"

    def save(self, *args, **kwargs) -> None:
        if not self.hyperparameters_key:
            self.hyperparameters_key = canonical_key(self.hyperparameters)
        super().save(*args, **kwargs)


def canonical_key(hyperparameters: dict) -> str:
    """A stable text form of a hyperparameter point, so equal points compare equal."""
    return ",".join(f"{k}={hyperparameters[k]!r}" for k in sorted(hyperparameters))[:200]
