"""A submission becomes a graph of jobs: [pretrain] -> per dataset: the protocol -> record the results.

:func:`submit` is the one entry point: ``manage.py submit`` calls it and the web form will. It
checks everything a user can get wrong before anything is written (the benchmark, the datasets,
the recipe, the corpus or checkpoint, the daily quota), copies the checkpoint or corpus into the
artefact store (workers read them from there, never from the submitter's disk) and writes the
submission and its jobs in one transaction, so a failed submit leaves nothing behind.

Each job's ``spec`` is immutable and holds everything its worker needs besides artefact
locations, which are resolved when it is dispatched:

* ``pretrain`` (gpu): recipe, steps and settings, the corpus artefact, and the number of GPUs;
* ``finetune`` (gpu, one per dataset): the benchmark's protocol on that dataset, with optional
  overrides for quick runs (``grid``, ``seeds``, ``epochs``, ``max_train_examples``, ...), and
  the model: the submitted checkpoint's artefacts or the pretraining job's output. Where the
  protocol scores the dataset on cross-validation folds (Lewis et al. 2020 on GAD and EU-ADR), the job
  runs all of them (``cross_validation``: the worker receives the folds, not the split);
* ``aggregate`` (cpu, one per dataset): scores the test predictions against the gold labels,
  which only the platform holds, and records the ``Result`` (which rescoring follows).

The fine-tuning and aggregate jobs also name the installed plugins (``plugins``: name and
version) that contribute their dataset, task type and metrics, so a worker that lacks one says so
instead of failing on an unknown dataset.
"""

from __future__ import annotations

import datetime as dt
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from biolm import plugin_set
from biolm.specs import LANGUAGE_MODEL_SLUG_MAX
from jobs import artefacts, tasks
from jobs.models import Job
from registry.intake import IntakeError, TakenCheckpoint, checkpoint_intake
from registry.models import Benchmark, LanguageModel, PretrainingRecipe
from registry.registration import RegistrationError, check_slug_available, clean_display_name, register_checkpoint
from submissions.models import Submission
from workers.engine.tokenization import load_tokenizer

DESCRIPTION_MAX = 5000
PROTOCOL_OVERRIDES = (
    "grid",
    "seeds",
    "first_seed",
    "epochs",
    "learning_rate",
    "batch_size",
    "max_length",
    "max_train_examples",
    "max_eval_examples",
    "precision",
)


QUICK_PROTOCOL = {"grid": "single", "seeds": 1}  # a quick preview: one grid point, one seed


def quick_protocol() -> dict:
    """A quick preview's overrides: one grid point and one seed, plus what ``BIOLM_QUICK_PROTOCOL`` adds (the demo
    caps epochs and examples there, so a preview fits two CPU cores)."""
    return {**settings.BIOLM_QUICK_PROTOCOL, **QUICK_PROTOCOL}


class SubmissionError(ValueError):
    """The submission cannot be accepted; the message says what to change.

    ``field`` names the part of the request it concerns (``checkpoint``, ``corpus``, ``recipe``,
    ``benchmark``, ``datasets``, ``name``, ``licence``, ``homepage``, ``description``, ``steps``,
    ``protocol``, ``gpus``; ``model`` when neither or both of a checkpoint and a recipe were given), so a
    form can show the sentence beside that field; None for the submission as a whole (the quota).
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class QuotaExceeded(SubmissionError):
    def __init__(self, message: str, resets_at: dt.datetime) -> None:
        super().__init__(message)
        self.resets_at = resets_at


@dataclass(frozen=True)
class SubmissionRequest:
    owner: object  # a User
    benchmark: str
    model: Path | None = None  # a checkpoint directory or archive
    recipe: str | None = None
    corpus: Path | None = None
    datasets: tuple[str, ...] = ()  # default: every dataset of the benchmark
    name: str | None = None
    slug: str | None = None  # the model's slug (default: from the checkpoint's directory or archive name)
    protocol: dict = field(default_factory=dict)  # overrides of the benchmark's protocol (PROTOCOL_OVERRIDES)
    pretrain_steps: int | None = None
    pretrain_settings: dict = field(default_factory=dict)
    gpus: int = 1  # for the pretraining job: torchrun on this many GPUs of one host
    private: bool = False
    priority: int = 0
    quick: bool = False  # a quick preview (QUICK_PROTOCOL): marked as such, never ranked beside full results
    label: str | None = None  # what the submitter called the checkpoint or corpus file (an upload's own name)
    description: str = ""
    licence: str = ""
    homepage: str = ""
    require_licence: bool = False  # the web form and the API insist on a licence; an operator's shell may not


@dataclass(frozen=True)
class Quota:
    """A submitter's daily quota: how many submissions are left and when the oldest counted one expires."""

    limit: int
    used: int
    resets_at: dt.datetime | None  # None when nothing counts against it

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)


def _counted(user, now: dt.datetime | None = None):
    since = (now or timezone.now()) - dt.timedelta(days=1)
    return Submission.objects.filter(submitter=user, created_at__gte=since, refunded=False)


def submissions_today(user, now: dt.datetime | None = None) -> int:
    """Submissions of the last 24 hours that count against the quota (refunded ones do not)."""
    return _counted(user, now).count()


def quota(user, now: dt.datetime | None = None) -> Quota:
    """``user``'s quota: a rolling 24 hours, so a slot comes back when the oldest counted submission turns a day old."""
    created = list(_counted(user, now).order_by("created_at").values_list("created_at", flat=True))
    return Quota(settings.BIOLM_SUBMISSIONS_PER_DAY, len(created),
                 created[0] + dt.timedelta(days=1) if created else None)  # fmt: skip


def submit(request: SubmissionRequest) -> Submission:
    """Check ``request`` completely, store its checkpoint or corpus and queue its jobs; or refuse, leaving nothing.

    The same owner's same weights (by content) already submitted on the same benchmark and protocol,
    for at least these datasets and neither failed nor cancelled, are not queued again: that
    submission is returned, with ``reused`` set to True (False on a new one).
    """
    benchmark = _benchmark(request.benchmark)
    entries = _entries(benchmark, request.datasets)
    protocol = _protocol({**quick_protocol(), **request.protocol} if request.quick else request.protocol)
    if (request.model is None) == (request.recipe is None):
        raise SubmissionError(
            "give either a checkpoint (--model DIR or archive) or a recipe with a corpus", "checkpoint"
        )
    recipe = _recipe(request) if request.recipe else None
    if request.gpus < 1:
        raise SubmissionError(f"--gpus must be at least 1, not {request.gpus}", "gpus")
    details = _details(request)
    used = quota(request.owner)
    if used.left == 0:
        raise QuotaExceeded(
            f"{request.owner} has made {used.limit} submission{'s' if used.limit != 1 else ''} in the last 24 hours, "
            "the daily quota; the next "
            f"slot frees at {used.resets_at:%Y-%m-%d %H:%M} UTC (submissions that failed through the platform's "
            "fault are refunded and do not count)",
            used.resets_at,
        )
    submission, created = None, []
    try:
        with ExitStack() as stack, transaction.atomic():
            if recipe is not None:
                checkpoint, model = None, _model_for_recipe(request, recipe)
            else:
                # An upload's temporary file is no place: the model records the name it was uploaded under.
                location = (
                    f"upload:{request.label}" if request.label else str(Path(request.model).expanduser().resolve())
                )
                if request.slug is not None:  # a taken slug is refused before a byte is copied
                    check_slug_available(request.slug, request.owner, location)
                taken = stack.enter_context(checkpoint_intake(request.model, label=request.label))
                _check_tokenizer(taken)
                earlier = _same_weights_submitted(request, taken, benchmark, entries)
                if earlier is not None:
                    earlier.reused = True
                    return earlier
                checkpoint, model = taken.directory, _model_for_checkpoint(taken, request, location)
            if details:
                for key, value in details.items():
                    setattr(model, key, value)
                model.save(update_fields=[*details, "updated_at"])
            submission = Submission.objects.create(
                submitter=request.owner,
                language_model=model,
                protocol=Submission.Protocol.QUICK if request.quick else Submission.Protocol.FULL,
            )
            submission.benchmarks.add(benchmark)
            source = _source(request, submission, checkpoint, recipe, created)
            _jobs(request, submission, benchmark, entries, protocol, source)
            transaction.on_commit(tasks.kick)  # workers with a free slot start at once, not at the next tick
    except BaseException as exc:
        if submission is not None:  # the rows rolled back; the copied files must go too
            artefacts.delete_prefix(f"submissions/{submission.pk}")
        artefacts.delete_names(created)  # the blobs this submission wrote, and only those
        if isinstance(exc, IntakeError):
            raise SubmissionError(str(exc), "corpus" if recipe is not None else "checkpoint") from None
        if isinstance(exc, RegistrationError):
            raise SubmissionError(str(exc), "name") from None
        if isinstance(exc, artefacts.ArtefactError):
            raise SubmissionError(str(exc), "checkpoint") from None
        raise
    submission.reused = False
    return submission


def _details(request: SubmissionRequest) -> dict:
    """The model's description, licence and homepage, checked: a licence where required, an http(s) homepage."""
    licence = " ".join(request.licence.split())
    if request.require_licence and not licence:
        raise SubmissionError(
            "name the licence the weights are released under (for example apache-2.0, mit or cc-by-4.0)", "licence"
        )
    if len(licence) > 100:
        raise SubmissionError(f"the licence is {len(licence)} characters long; name it in at most 100", "licence")
    homepage = request.homepage.strip()
    if homepage:
        try:
            URLValidator(schemes=["http", "https"])(homepage)
        except ValidationError:
            raise SubmissionError("the paper or code URL must be an http:// or https:// address", "homepage") from None
        if len(homepage) > 500:
            raise SubmissionError("the paper or code URL is over 500 characters; give a shorter one", "homepage")
    description = request.description.strip()
    if len(description) > DESCRIPTION_MAX:
        raise SubmissionError(
            f"the description is {len(description):,} characters long; shorten it to {DESCRIPTION_MAX:,}", "description"
        )
    details = {"licence": licence, "homepage": homepage, "description": description}
    return {key: value for key, value in details.items() if value}


def _check_tokenizer(taken: TakenCheckpoint) -> None:
    """The fine-tuning jobs load the checkpoint's tokenizer first: one that does not load is refused now."""
    try:
        load_tokenizer(taken.directory)
    except Exception as exc:  # transformers raises many types for a missing or broken tokenizer
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise IntakeError(
            f"{taken.label}: its tokenizer does not load ({reason}); include the tokenizer files "
            "(tokenizer.json, or vocab.txt with tokenizer_config.json) that AutoTokenizer.from_pretrained reads"
        ) from None


def _same_weights_submitted(request: SubmissionRequest, taken: TakenCheckpoint, benchmark: Benchmark, entries):
    """The owner's earlier submission of the same content, benchmark and protocol covering these datasets, if any."""
    earlier = (
        Submission.objects.filter(
            submitter=request.owner,
            language_model__content_sha256=taken.content_sha256,
            benchmarks=benchmark,
            protocol=Submission.Protocol.QUICK if request.quick else Submission.Protocol.FULL,
        )
        .exclude(status__in=(Submission.Status.FAILED, Submission.Status.CANCELLED))
        .order_by("-created_at")
    )
    wanted = {entry.dataset_id for entry in entries}
    for submission in earlier:
        if wanted <= set(submission.jobs.exclude(dataset=None).values_list("dataset_id", flat=True)):
            return submission
    return None


def _jobs(request: SubmissionRequest, submission: Submission, benchmark: Benchmark, entries, protocol: dict,
          source: dict) -> None:  # fmt: skip
    """Per dataset, the protocol's job and the job that records its results."""
    installed = plugin_set.installed()
    for entry in entries:
        dataset = entry.dataset
        folds = {"cross_validation": True} if _runs_on_folds(benchmark, dataset) else {}
        plugins = _installed_providers(installed, dataset.plugin, dataset.task_type.plugin, dataset.metric.plugin,
                                       entry.metric.plugin)  # fmt: skip
        finetune = _job(
            submission, request, Job.Kind.FINETUNE, Job.Queue.GPU, after=source["pretrain"], benchmark=benchmark,
            dataset=dataset, protocol=protocol, model=source["model"], plugins=plugins, **folds,
        )  # fmt: skip
        _job(
            submission, request, Job.Kind.AGGREGATE, Job.Queue.CPU, after=finetune, benchmark=benchmark,
            dataset=dataset, metric=entry.metric.slug, variant=entry.variant, finetune_job=finetune.pk,
            plugins=plugins, **({"preview": True} if request.quick else {}),
        )  # fmt: skip


def _installed_providers(installed: dict[str, plugin_set.InstalledPlugin], *names: str) -> dict[str, str]:
    """``{plugin: "distribution version"}`` of the installed plugins (not the built-in ones) a job's work comes from.

    Workers check that they have them before they start (a GPU host may lack a plugin the web host has).
    """
    return {name: installed[name].label for name in sorted(set(names)) if name in installed}


def _job(submission: Submission, request: SubmissionRequest, kind: str, queue: str, after: Job | None = None,
         benchmark: Benchmark | None = None, dataset=None, **spec) -> Job:  # fmt: skip
    """One job of the graph; its spec records its kind and, where it has them, its benchmark and dataset."""
    named = {"benchmark": benchmark.slug} if benchmark else {}
    named.update({"dataset": dataset.slug} if dataset else {})
    job = Job.objects.create(
        submission=submission, language_model=submission.language_model, benchmark=benchmark, dataset=dataset,
        kind=kind, queue=queue, priority=request.priority, spec={"kind": kind, **named, **spec},
    )  # fmt: skip
    if after is not None:
        job.depends_on.add(after)
    return job


def _benchmark(slug: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=slug, active=True).first()
    if benchmark is None:
        known = ", ".join(Benchmark.objects.filter(active=True).order_by("slug").values_list("slug", flat=True))
        raise SubmissionError(
            f"no benchmark {slug!r}; known: {known or 'none (run manage.py sync_plugins)'}", "benchmark"
        )
    return benchmark


def _entries(benchmark: Benchmark, datasets: tuple[str, ...]):
    """One entry per dataset (a dataset scored twice, as BioASQ is in bioformer, is fine-tuned once)."""
    by_dataset = {}
    for entry in benchmark.entries.select_related("dataset", "metric").order_by("position"):
        by_dataset.setdefault(entry.dataset.slug, entry)
    unknown = [slug for slug in datasets if slug not in by_dataset]
    if unknown:
        raise SubmissionError(
            f"{benchmark.slug} has no dataset {', '.join(map(repr, unknown))}; its datasets: {', '.join(by_dataset)}",
            "datasets",
        )
    chosen = [by_dataset[slug] for slug in dict.fromkeys(datasets)] if datasets else list(by_dataset.values())
    if not chosen:
        raise SubmissionError(f"{benchmark.slug} has no datasets", "benchmark")
    without = [e.dataset.slug for e in chosen if _runs_on_folds(benchmark, e.dataset) and not _has_folds(e.dataset)]
    if without:
        commands = "; ".join(f"manage.py import_dataset {slug} --folds DIR" for slug in without)
        raise SubmissionError(
            f"{benchmark.slug} scores {', '.join(without)} on cross-validation folds, and the platform holds "
            f"no folds of {'it' if len(without) == 1 else 'them'}: import them first ({commands}), "
            f"or leave {'it' if len(without) == 1 else 'them'} out with --datasets",
            "datasets",
        )
    return chosen


def _has_folds(dataset) -> bool:
    imported = dataset.imports.order_by("-imported_at").first()
    return imported is not None and bool(imported.folds)


def _runs_on_folds(benchmark: Benchmark, dataset) -> bool:
    """The protocol of Lewis et al. 2020 evaluates a dataset with a k-fold distribution on its folds."""
    return benchmark.protocol == "lewis2020" and bool((dataset.adapter or {}).get("cross_validation"))


def _protocol(overrides: dict) -> dict:
    unknown = sorted(set(overrides) - set(PROTOCOL_OVERRIDES))
    if unknown:
        raise SubmissionError(
            f"no protocol setting {', '.join(unknown)}; the settings a submission may change: "
            + ", ".join(PROTOCOL_OVERRIDES),
            "protocol",
        )
    return dict(overrides)


def _recipe(request: SubmissionRequest) -> PretrainingRecipe:
    recipe = PretrainingRecipe.objects.filter(slug=request.recipe, active=True).first()
    if recipe is None:
        known = ", ".join(PretrainingRecipe.objects.filter(active=True).order_by("slug").values_list("slug", flat=True))
        raise SubmissionError(f"no recipe {request.recipe!r}; known: {known}", "recipe")
    if request.corpus is None:
        raise SubmissionError(
            "a recipe needs a corpus (--corpus PATH, a text file with one document per line)", "corpus"
        )
    corpus = Path(request.corpus)
    label = request.label or str(corpus)
    if not corpus.is_file():
        raise SubmissionError(f"{label}: no such corpus file", "corpus")
    if corpus.stat().st_size == 0:
        raise SubmissionError(f"{label}: the corpus is empty; give a text file with one document per line", "corpus")
    if request.pretrain_steps is not None and request.pretrain_steps < 1:
        raise SubmissionError(f"--steps must be at least 1, not {request.pretrain_steps}", "steps")
    return recipe


def _model_for_checkpoint(taken: TakenCheckpoint, request: SubmissionRequest, location: str) -> LanguageModel:
    """The checkpoint's model: the owner's own model of the same content, or a new one named after what they gave."""
    model, _ = register_checkpoint(
        taken, location=location, slug=request.slug, name=request.name, owner=request.owner, private=request.private
    )
    return model


def _model_for_recipe(request: SubmissionRequest, recipe: PretrainingRecipe) -> LanguageModel:
    """A model row for what the pretraining job will produce; its checkpoint is filled when it succeeds."""
    base = slugify(f"{recipe.slug}-{request.owner}")[: LANGUAGE_MODEL_SLUG_MAX - 6] or recipe.slug
    slug, number = base, 1
    while LanguageModel.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return LanguageModel.objects.create(
        slug=slug,
        name=clean_display_name(request.name or f"{recipe.name} ({request.owner})"),
        owner=request.owner,
        recipe=recipe,
        architecture=None,
        pretraining_corpus=request.label or str(Path(request.corpus).resolve()),
        visibility=LanguageModel.Visibility.PRIVATE if request.private else LanguageModel.Visibility.PUBLIC,
        origin=LanguageModel.Origin.REPRODUCED,
    )


def _source(request: SubmissionRequest, submission: Submission, checkpoint: Path | None,
            recipe: PretrainingRecipe | None, created: list[str]) -> dict:  # fmt: skip
    """Store the checkpoint or corpus by content; the fine-tuning jobs' model and the pretraining job, if any."""
    prefix = f"submissions/{submission.pk}"
    if checkpoint is not None:
        stored = artefacts.store_directory_blobs(checkpoint, created)
        return {"model": {"artefacts": stored, "prefix": f"{prefix}/model"}, "pretrain": None}
    corpus = artefacts.store_blob(Path(request.corpus), "corpus.txt", created)
    pretrain = _job(
        submission, request, Job.Kind.PRETRAIN, Job.Queue.GPU, recipe=recipe.slug, steps=request.pretrain_steps,
        settings=dict(request.pretrain_settings), corpus=corpus, gpus=request.gpus, output=f"{prefix}/pretrained",
    )  # fmt: skip
    return {"model": {"from_job": pretrain.pk, "prefix": f"{prefix}/pretrained"}, "pretrain": pretrain}
