"""Submitting: one request, checked completely, becomes a submission and its job graph, or nothing at all.

:func:`submit` is the one entry point: the form, the API and ``manage.py submit`` only parse what
they are given into a :class:`SubmissionRequest` and show its :class:`SubmissionError` beside the
field it names. Everything a submitter can get wrong is checked here, once, before anything is
written: the benchmark and its datasets (imported, and with their folds where the protocol runs on
folds), the overrides of the protocol's settings (values and ranges, :class:`biolm.contract.Overrides`),
the checkpoint (the intake: its files, its tokenizer) or the recipe and its corpus, the licence and
links, and the daily quota. Then the checkpoint or corpus is stored by content in the artefact
store (workers read it from there, never from the submitter's disk) and the submission and its
jobs are written in one transaction, so a failed submit leaves nothing behind.

Each job's spec is its typed, versioned contract (:mod:`biolm.contract`), built by
:mod:`biolm.job_contracts` and queued by :mod:`jobs.graph`: it pins the code the job runs. The same
owner's same weights on the same benchmark, datasets, protocol settings and pinned code are not
evaluated twice: that submission is returned with ``reused`` set, unless the request asks to
``rerun``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import stat
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import connection, transaction
from django.utils import timezone

from biolm.contract import ContractError, FetchJob, FinetuneJob, ModelInput, Overrides
from biolm.contract.jobs import GPUS_MAX, NODES_MAX, STEPS_MAX
from biolm.job_contracts import finetune_job
from biolm.memory_plan import PlanRefused, parse_memory, plan_for_recipe
from biolm.placement import Need
from biolm.protocols import preview_overrides
from jobs import artefacts, dispatch, graph, hub_tokens, tasks
from jobs.disk_room import no_room_sentence
from jobs.management.commands.plan_pretraining import DEFAULT_GPU_MEMORY
from registry import hub
from registry.intake import IntakeError, TakenCheckpoint, check_tokenizer, checkpoint_intake
from registry.models import (
    Benchmark,
    BenchmarkEntry,
    Dataset,
    DatasetImport,
    LanguageModel,
    PretrainingRecipe,
    default_namespace,
)
from registry.registration import (
    RegistrationError,
    check_slug_available,
    clean_display_name,
    derived_address,
    register_checkpoint,
)
from registry.sync import load_contributions
from submissions.models import Submission

DESCRIPTION_MAX = 5000
BASE_MODEL_MAX = 200  # LanguageModel.base_model
ARCHIVES = "a .zip, .tar.gz, .tgz or .tar of a Hugging Face checkpoint's folder"
# The rules every surface shares, said once, in words a web page, a JSON answer and a shell can all show.
NEITHER = (
    f"send a checkpoint ({ARCHIVES}, or its folder from the shell), a Hugging Face Hub id, or a pretraining "
    "recipe with a corpus"
)
BOTH = "send one of a checkpoint, a Hub id, or a recipe with a corpus, not two"
TOKEN_WITHOUT_HUB = "a Hub token goes with a Hub id: it reads a gated or private repository of the Hub"
CORPUS_NEEDED = "a recipe needs a corpus: a text file with one document per line"
CORPUS_WITHOUT_RECIPE = "a corpus goes with a recipe: name the recipe to pretrain, or send a checkpoint instead"
LICENCE_NEEDED = "name the licence the weights are released under (for example apache-2.0, mit or cc-by-4.0)"


class SubmissionError(ValueError):
    """The submission cannot be accepted; the message says what to change.

    ``field`` names the part of the request it concerns (``checkpoint``, ``corpus``, ``recipe``,
    ``benchmark``, ``datasets``, ``name``, ``licence``, ``homepage``, ``description``, ``steps``,
    ``pretraining_domain``, ``vocabulary_kind``, ``initialisation``, ``base_model``,
    ``overrides``, ``gpus``; ``model`` when neither or both of a checkpoint and a recipe were given), so a
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
    hub: str | None = None  # a Hugging Face Hub id, org/name[@revision], fetched by the submission's first job
    hub_token: str = field(default="", repr=False)  # the submitter's, for a gated or private repository
    recipe: str | None = None
    corpus: Path | None = None
    datasets: tuple[str, ...] = ()  # default: every dataset of the benchmark
    name: str | None = None
    slug: str | None = None  # the model's slug and address name (default: from the name, else the file's name)
    overrides: dict = field(default_factory=dict)  # of the protocol's settings (biolm.contract.Overrides), as JSON
    pretrain_steps: int | None = None
    pretrain_settings: dict = field(default_factory=dict)
    gpus: int = 1  # for the pretraining job: torchrun on this many GPUs of each node
    nodes: int = 1  # for the pretraining job: this many nodes (more than one: only a Slurm worker runs it)
    private: bool = False
    priority: int = 0
    preview: bool = False  # a quick preview: one grid point, one seed; marked as such, never ranked
    rerun: bool = False  # evaluate again even if the same weights and settings were evaluated before
    label: str | None = None  # what the submitter called the checkpoint or corpus file (an upload's own name)
    description: str = ""
    licence: str = ""
    homepage: str = ""
    # What the leaderboard's filters read (LanguageModel.Domain, .VocabularyKind, .Initialisation values; "" unstated).
    pretraining_domain: str = ""
    vocabulary_kind: str = ""
    base_model: str = ""  # the checkpoint it continued pretraining from: initialisation is then continual
    initialisation: str = ""  # "scratch" when stated; "continual" follows from a base model
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


def quota(user, now: dt.datetime | None = None) -> Quota:
    """``user``'s quota: a rolling 24 hours, so a slot comes back when the oldest counted submission turns a day old.

    Refunded submissions (those that failed through the platform's fault, or a plugin's) do not count.
    """
    since = (now or timezone.now()) - dt.timedelta(days=1)
    counted = Submission.objects.filter(submitter=user, created_at__gte=since, refunded=False)
    created = list(counted.order_by("created_at").values_list("created_at", flat=True))
    return Quota(settings.BIOLM_SUBMISSIONS_PER_DAY, len(created),
                 created[0] + dt.timedelta(days=1) if created else None)  # fmt: skip


def submit(request: SubmissionRequest) -> Submission:
    """Check ``request`` completely, store its checkpoint or corpus and queue its jobs; or refuse, leaving nothing.

    The same owner's same weights (by content) already submitted on the same benchmark, protocol
    settings and pinned code, for at least these datasets and neither failed nor cancelled, are not
    queued again unless ``request.rerun``: that submission is returned, with ``reused`` set to True
    (False on a new one).
    """
    benchmark = _benchmark(request.benchmark)
    entries = _entries(benchmark, request.datasets)
    _check_imported(benchmark, entries, explicit=bool(request.datasets))
    overrides = _overrides(request)
    _check_source(request)
    recipe = _recipe(request) if request.recipe else None
    from_hub = _resolve_hub(request) if request.hub is not None else None
    if from_hub is not None:  # what the Hub's card says fills what the submitter left empty
        request = dataclasses.replace(
            request, licence=request.licence or from_hub.licence, base_model=request.base_model or from_hub.base_model
        )
    _check_gpus(request)
    details = _details(request)
    contributions = load_contributions()
    if recipe is not None:
        _check_memory_plan(contributions, request)
    planned = _planned(contributions, benchmark, entries, overrides, request.preview)
    _check_quota(request.owner)  # at once, before the intake's work; counted again, under a lock, before the row
    _check_disk(request, from_hub)
    submission, created = None, []
    try:
        with ExitStack() as stack, transaction.atomic():
            if recipe is not None:
                checkpoint, model = None, _model_for_recipe(request, recipe)
            elif from_hub is not None:
                same = {"hub_id": from_hub.repository, "hub_commit": from_hub.commit}
                earlier = _reused(request, benchmark, planned, **same)
                if earlier is not None:
                    return earlier
                checkpoint, model = None, _model_for_hub(request, from_hub)
            else:
                # An upload's temporary file is no place: the model records the name it was uploaded under.
                location = (
                    f"upload:{request.label}" if request.label else str(Path(request.model).expanduser().resolve())
                )
                if request.slug is not None:  # a taken slug is refused before a byte is copied
                    check_slug_available(request.slug, request.owner, location)
                taken = stack.enter_context(checkpoint_intake(request.model, label=request.label))
                check_tokenizer(taken)
                earlier = _reused(request, benchmark, planned, content_sha256=taken.content_sha256)
                if earlier is not None:
                    return earlier
                checkpoint, model = taken.directory, _model_for_checkpoint(taken, request, location)
            if details:
                for key, value in details.items():
                    setattr(model, key, value)
                model.save(update_fields=[*details, "updated_at"])
            _check_quota(request.owner, lock=True)  # held until the transaction ends: parallel submits queue here
            submission = Submission.objects.create(
                submitter=request.owner, language_model=model, preview=request.preview
            )
            submission.benchmarks.add(benchmark)
            source = _source(contributions, request, submission, checkpoint, recipe, created, from_hub)
            jobs = graph.queue(contributions, submission, planned, source, request.priority)
            if from_hub is not None and request.hub_token:
                hub_tokens.keep(jobs[0], request.hub_token)  # the fetch job's, apart from its spec
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
        if isinstance(exc, ContractError):
            raise SubmissionError(str(exc), exc.field) from None
        raise
    submission.reused = False
    return submission


def _check_source(request: SubmissionRequest) -> None:
    """A checkpoint, a Hub id, or a recipe with its corpus: exactly one, and never a corpus alone."""
    given = [request.model is not None, request.hub is not None, bool(request.recipe or request.corpus is not None)]
    if sum(given) > 1:
        raise SubmissionError(BOTH, "hub" if request.hub is not None else "checkpoint")
    if request.hub_token and request.hub is None:
        raise SubmissionError(TOKEN_WITHOUT_HUB, "hub_token")
    if request.hub is not None:
        return
    if request.model is None and not request.recipe:
        raise SubmissionError(
            *((CORPUS_WITHOUT_RECIPE, "corpus") if request.corpus is not None else (NEITHER, "checkpoint"))
        )
    if request.recipe and request.corpus is None:
        raise SubmissionError(CORPUS_NEEDED, "corpus")
    if request.pretrain_steps is not None and not 1 <= request.pretrain_steps <= STEPS_MAX:
        raise SubmissionError(
            f"give from 1 to {STEPS_MAX:,} pretraining steps, not {request.pretrain_steps:,}", "steps"
        )


def _overrides(request: SubmissionRequest) -> Overrides:
    """The submitter's overrides, checked; a preview's one grid point and one seed (and the site's caps) under them."""
    try:
        given = Overrides.from_json(request.overrides)
    except ContractError as exc:
        raise SubmissionError(f"overrides: {exc}", "overrides") from None
    return preview_overrides(settings.BIOLM_PREVIEW_OVERRIDES).merged(given) if request.preview else given


def _check_quota(owner, lock: bool = False) -> None:
    """Refuse a submission past the daily quota.

    ``lock``, in submit's transaction just before the submission's row is created: the count is
    made under a lock on the submitter's row that the transaction holds until it ends, so that
    parallel submissions of one user are counted one after the other, each seeing the rows of those
    before it, and no more than the quota get through (other users are not held up). On PostgreSQL
    it is ``FOR NO KEY UPDATE``, which waits for another such lock but not for the ``KEY SHARE``
    locks that this transaction's own inserts referring to the user (its model's row) already hold:
    ``FOR UPDATE`` would wait for those of a parallel submission too, and two would deadlock.
    SQLite, the demo's database, serialises writes already: its transactions begin ``IMMEDIATE``
    (settings), taking the database's write lock before their first statement, so a second submit
    waits at its BEGIN until the first commits; ``select_for_update`` is a no-op there.
    """
    if lock:
        no_key = connection.features.has_select_for_no_key_update
        list(get_user_model().objects.select_for_update(no_key=no_key).filter(pk=owner.pk).values_list("pk"))
    used = quota(owner)
    if used.left == 0:
        raise QuotaExceeded(
            f"{owner} has made {used.limit} submission{'s' if used.limit != 1 else ''} in the last 24 hours, "
            "the daily quota; the next "
            f"slot frees at {used.resets_at:%Y-%m-%d %H:%M} UTC (submissions that failed through the platform's "
            "fault are refunded and do not count)",
            used.resets_at,
        )


def _check_gpus(request: SubmissionRequest) -> None:
    if not 1 <= request.gpus <= GPUS_MAX:
        raise SubmissionError(f"--gpus must be from 1 to {GPUS_MAX}, not {request.gpus}", "gpus")
    if not 1 <= request.nodes <= NODES_MAX:
        raise SubmissionError(f"--nodes must be from 1 to {NODES_MAX}, not {request.nodes}", "nodes")


def _resolve_hub(request: SubmissionRequest) -> hub.HubCheckpoint:
    """The Hub id's revision as a commit and its files checked, within ``BIOLM_HUB_TIMEOUT_S``; or why not."""
    try:
        return hub.resolve(hub.HubReference.parse(request.hub), request.hub_token)
    except hub.HubRefused as exc:
        raise SubmissionError(str(exc), exc.field) from None
    except hub.HubUnavailable as exc:
        raise SubmissionError(f"{exc}; nothing was queued: send it again in a minute", "hub") from None


def _check_disk(request: SubmissionRequest, from_hub: hub.HubCheckpoint | None = None) -> None:
    """Unpacking and storing the checkpoint or corpus must leave the disk's reserve free (``BIOLM_DISK_RESERVE_BYTES``).

    Its size (an archive's, or a folder's files') stands for what the intake unpacks and the store
    keeps. An upload was already checked by its declared length before its body was read; this is
    the shell's check, and the upload's again now that other uploads may have taken the room.
    """
    if from_hub is not None:  # fetched, unpacked in the scratch folder and stored: its size, twice over
        sentence = no_room_sentence(str(from_hub), 2 * from_hub.size)
        if sentence is not None:
            raise SubmissionError(sentence, "hub")
        return
    path = Path(request.model if request.model is not None else request.corpus).expanduser()
    sentence = no_room_sentence(request.label or str(path), _bytes_in(path))
    if sentence is not None:
        raise SubmissionError(sentence, "checkpoint" if request.model is not None else "corpus")


def _bytes_in(path: Path) -> int:
    """A file's size, or the sum of the regular files' under a folder (links not followed); 0 for anything else."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with suppress(OSError):
                found = os.lstat(os.path.join(folder, name))
                total += found.st_size if stat.S_ISREG(found.st_mode) else 0
    return total


def _planned(contributions, benchmark: Benchmark, entries: list[BenchmarkEntry], overrides: Overrides,
             preview: bool) -> list[graph.Planned]:  # fmt: skip
    """Per dataset, its fine-tuning job's spec (on a placeholder model until the model is stored) and its entry.

    Built now, before anything is written, so every refusal the contract makes comes first: a
    dataset whose plugin is gone, a protocol no plugin provides, folds the platform does not hold.
    """
    planned = []
    for entry in entries:
        try:
            spec = finetune_job(
                contributions, dataset=entry.dataset.slug, model=ModelInput(directory="(the submitted model)"),
                benchmark=benchmark.slug, overrides=overrides, preview=preview,
            )  # fmt: skip
        except ContractError as exc:
            field = "benchmark" if exc.field in ("protocol", "benchmark") else "datasets"
            raise SubmissionError(str(exc), field) from None
        planned.append(graph.Planned(spec, entry.dataset, entry.metric.slug, entry.variant))
    held = [p.dataset.slug for p in planned if p.spec.cross_validation and p.dataset.held_by_id is not None]
    if held:  # its folds are on its holder's hosts, and the graph is cut by fold here
        raise SubmissionError(
            f"{', '.join(held)} is held on its data holder's hosts, and a held dataset's "
            "cross-validation protocol cannot be run yet: leave it out with --datasets",
            "datasets",
        )
    without = [p.dataset.slug for p in planned if p.spec.cross_validation and not _has_folds(p.dataset)]
    if without:
        commands = "; ".join(f"manage.py import_dataset {slug} --folds DIR" for slug in without)
        raise SubmissionError(
            f"{benchmark.slug} scores {', '.join(without)} on cross-validation folds, and the platform holds "
            f"no folds of {'it' if len(without) == 1 else 'them'}: import them first ({commands}), "
            f"or leave {'it' if len(without) == 1 else 'them'} out with --datasets",
            "datasets",
        )
    return planned


def _details(request: SubmissionRequest) -> dict:
    """The model's description, licence and homepage, checked: a licence where required, an http(s) homepage."""
    licence = " ".join(request.licence.split())
    if request.require_licence and not licence:
        raise SubmissionError(LICENCE_NEEDED, "licence")
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
    details = {"licence": licence, "homepage": homepage, "description": description, **_facets(request)}
    return {key: value for key, value in details.items() if value}


def _facets(request: SubmissionRequest) -> dict:
    """The leaderboard's filters as the submitter states them: pretraining domain, vocabulary, base model.

    A base model makes the initialisation continual; "scratch" is taken only as stated, and with no base model.
    Unstated ones stay empty, for :meth:`LanguageModel.fill_defaults` to derive from the model's words.
    """
    choices = (
        ("pretraining_domain", LanguageModel.Domain, "pretraining domain"),
        ("vocabulary_kind", LanguageModel.VocabularyKind, "vocabulary"),
        ("initialisation", LanguageModel.Initialisation, "initialisation"),
    )
    stated = {}
    for name, kind, words in choices:
        value = getattr(request, name).strip()
        if value and value not in kind.values:
            raise SubmissionError(f"the {words} is one of {', '.join(kind.values)}, not {value!r}", name)
        stated[name] = value
    base = " ".join(request.base_model.split())
    if len(base) > BASE_MODEL_MAX:
        raise SubmissionError(
            f"the base model's name is over {BASE_MODEL_MAX} characters; give its Hub id", "base_model"
        )
    if base and stated["initialisation"] == LanguageModel.Initialisation.SCRATCH:
        raise SubmissionError("a model pretrained from scratch has no base model: leave one of them out", "base_model")
    if base:
        stated["initialisation"] = LanguageModel.Initialisation.CONTINUAL
    return {**stated, "base_model": base}


def _reused(request: SubmissionRequest, benchmark: Benchmark, planned: list[graph.Planned],
            **same_weights: str) -> Submission | None:  # fmt: skip
    """The earlier submission of the same evaluation, marked ``reused``; None when there is none or a rerun is asked."""
    earlier = None if request.rerun else _same_evaluation(request, benchmark, planned, **same_weights)
    if earlier is not None:
        earlier.reused = True
    return earlier


def _same_evaluation(request: SubmissionRequest, benchmark: Benchmark, planned: list[graph.Planned],
                     **same_weights: str) -> Submission | None:  # fmt: skip
    """The owner's earlier submission of the same weights whose jobs ran exactly the specs planned now, if any.

    The same weights: the same content (``content_sha256``), or the same Hub repository at the same commit
    (``hub_id`` and ``hub_commit``). The specs are compared whole but for where the model's files are: the
    same dataset, protocol, metric, overrides, preview, task options and pinned code (versions and content
    fingerprints). A plugin upgraded since, or other overrides, is a new evaluation.
    """
    model = {f"language_model__{name}": value for name, value in same_weights.items()}
    earlier = (
        Submission.objects.filter(submitter=request.owner, benchmarks=benchmark, **model)
        .exclude(status__in=(Submission.Status.FAILED, Submission.Status.CANCELLED))
        .order_by("-created_at")
    )
    wanted = {graph.comparable(p.spec) for p in planned}
    for submission in earlier:
        ran = {graph.comparable(FinetuneJob.from_json(spec)) for spec in graph.finetune_specs(submission)}
        if wanted <= ran:
            return submission
    return None


def _benchmark(slug: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=slug, active=True).first()
    if benchmark is None:
        known = ", ".join(Benchmark.objects.filter(active=True).order_by("slug").values_list("slug", flat=True))
        raise SubmissionError(
            f"no benchmark {slug!r}; known: {known or 'none (run manage.py sync_plugins)'}", "benchmark"
        )
    return benchmark


def _entries(benchmark: Benchmark, datasets: tuple[str, ...]) -> list[BenchmarkEntry]:
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
    return chosen


def missing_datasets(slugs: list[str]) -> list[str]:
    """Those of ``slugs`` not imported on this site, in order: a job on one would only fail in the worker.

    A held dataset is never missing: its data is on its holder's hosts, which is the point (:mod:`jobs.held`).
    """
    imported = set(DatasetImport.objects.filter(dataset__slug__in=slugs).values_list("dataset__slug", flat=True))
    imported |= set(Dataset.objects.filter(slug__in=slugs, held_by__isnull=False).values_list("slug", flat=True))
    return [slug for slug in slugs if slug not in imported]


def import_command(slugs: list[str]) -> str:
    """The operator's command that imports ``slugs`` (licence-restricted ones also need ``--path DIR``)."""
    return f"manage.py import_dataset {' '.join(slugs)}"


def _check_imported(benchmark: Benchmark, entries: list[BenchmarkEntry], explicit: bool) -> None:
    """Refuse, before anything is written, a dataset whose data this site has not imported.

    Beside the datasets when the request chose them and some of the benchmark's others could run;
    else beside the benchmark, which cannot run here at all.
    """
    missing = missing_datasets([entry.dataset.slug for entry in entries])
    if not missing:
        return
    every = list(dict.fromkeys(benchmark.entries.values_list("dataset__slug", flat=True)))
    runnable = explicit and len(missing_datasets(every)) < len(every)
    raise SubmissionError(
        f"{benchmark.slug} needs {', '.join(missing)} imported on this site, and "
        f"{'it is' if len(missing) == 1 else 'they are'} not: an operator imports "
        f"{'it' if len(missing) == 1 else 'them'} with {import_command(missing)}, "
        "or choose a benchmark or datasets whose data is imported",
        "datasets" if runnable else "benchmark",
    )


def _has_folds(dataset) -> bool:
    imported = dataset.imports.order_by("-imported_at").first()
    return imported is not None and bool(imported.folds)


def _recipe(request: SubmissionRequest) -> PretrainingRecipe:
    recipe = PretrainingRecipe.objects.filter(slug=request.recipe, active=True).first()
    if recipe is None:
        known = ", ".join(PretrainingRecipe.objects.filter(active=True).order_by("slug").values_list("slug", flat=True))
        raise SubmissionError(f"no recipe {request.recipe!r}; known: {known}", "recipe")
    corpus = Path(request.corpus)
    label = request.label or str(corpus)
    if not corpus.is_file():
        raise SubmissionError(f"{label}: no such corpus file", "corpus")
    if corpus.stat().st_size == 0:
        raise SubmissionError(f"{label}: the corpus is empty; give a text file with one document per line", "corpus")
    return recipe


def _model_for_checkpoint(taken: TakenCheckpoint, request: SubmissionRequest, location: str) -> LanguageModel:
    """The checkpoint's model: the owner's own model of the same content, or a new one named after what they gave."""
    model, _ = register_checkpoint(
        taken, location=location, slug=request.slug, name=request.name, owner=request.owner, private=request.private
    )
    return model


def _check_memory_plan(contributions, request: SubmissionRequest) -> None:
    """Refuse, in the memory plan's one sentence naming the fix, a pretraining run that fits no GPU it could get.

    The cards are the largest that a live worker able to hold the job reports (a Slurm worker's are its
    settings, ``BIOLM_SLURM_GPU_MEMORY``), else ``manage.py plan_pretraining``'s default (80 GB) when none
    reports its memory: so "needs fsdp" or "needs at least 16 GPUs" is said at submit, not
    found as an out-of-memory error after a day in the queue. A run the plan cannot model (an architecture it
    has no formula for) is left to the engine.
    """
    recipe = contributions.recipes.get(request.recipe)
    if recipe is None:
        return
    need = Need(gpus=request.gpus, shareable=False, nodes=request.nodes)
    memory = dispatch.largest_gpu_memory(need, settings.BIOLM_HEARTBEAT_STALE_S) or parse_memory(DEFAULT_GPU_MEMORY)
    try:
        plan_for_recipe({**recipe.settings, **request.pretrain_settings}, None, request.gpus, request.nodes, None,
                        memory, contributions=contributions)  # fmt: skip
    except PlanRefused as refused:
        raise SubmissionError(f"recipe {recipe.slug}: {refused}", "gpus") from None
    except (ValueError, TypeError, KeyError):  # settings the engine refuses in its own words, or no formula
        return


def _model_for_recipe(request: SubmissionRequest, recipe: PretrainingRecipe) -> LanguageModel:
    """A model row for what the pretraining job will produce; its checkpoint is filled when it succeeds.

    Its address is the owner's, named from the typed name (else the recipe), unique among their own models; an
    operator's ``--slug`` names it instead (numbered when taken: the demo's second run is ``tiny-demo-2``)."""
    if request.slug is not None:
        slug, address_name = derived_address(request.slug, request.owner, None, recipe.slug, slug_as_named=True)
    else:
        slug, address_name = derived_address(request.name, request.owner, None, recipe.slug)
    return LanguageModel.objects.create(
        slug=slug,
        namespace=default_namespace(request.owner),
        address_name=address_name,
        name=clean_display_name(request.name or f"{recipe.name} ({request.owner})"),
        owner=request.owner,
        recipe=recipe,
        architecture=None,
        pretraining_corpus=request.label or str(Path(request.corpus).resolve()),
        visibility=LanguageModel.Visibility.PRIVATE if request.private else LanguageModel.Visibility.PUBLIC,
        origin=LanguageModel.Origin.REPRODUCED,
    )


def _model_for_hub(request: SubmissionRequest, from_hub: hub.HubCheckpoint) -> LanguageModel:
    """The model row of a Hub repository at a commit, in the submitter's own namespace (a Hub id is not a biolm
    address); its checkpoint's figures are filled by the fetch job. The same commit submitted again (with
    "evaluate again") is the same model."""
    location = f"hub:{from_hub.repository}@{from_hub.commit}"
    existing = LanguageModel.objects.filter(owner=request.owner, checkpoint=location).first()
    if existing is not None:
        return existing
    fallback = from_hub.repository.split("/", 1)[1]
    if request.slug is not None:
        slug, address_name = derived_address(request.slug, request.owner, location, fallback, slug_as_named=True)
    else:
        slug, address_name = derived_address(request.name, request.owner, location, fallback)
    return LanguageModel.objects.create(
        slug=slug,
        namespace=default_namespace(request.owner),
        address_name=address_name,
        name=clean_display_name(request.name or from_hub.repository),
        owner=request.owner,
        architecture=None,
        checkpoint=location,
        hub_id=from_hub.repository,
        hub_commit=from_hub.commit,
        visibility=LanguageModel.Visibility.PRIVATE if request.private else LanguageModel.Visibility.PUBLIC,
        origin=LanguageModel.Origin.REPRODUCED,
    )


def _source(contributions, request: SubmissionRequest, submission: Submission, checkpoint: Path | None,
            recipe: PretrainingRecipe | None, created: list[str],
            from_hub: hub.HubCheckpoint | None = None) -> graph.Source:  # fmt: skip
    """Store the checkpoint or corpus by content: the fine-tuning jobs' model, or the job that makes or fetches it."""
    prefix = f"submissions/{submission.pk}"
    if from_hub is not None:
        return graph.Source(fetch=FetchJob(repository=from_hub.repository, revision=from_hub.commit,
                                           output=f"{prefix}/model"))  # fmt: skip
    if checkpoint is not None:
        stored = artefacts.store_directory_blobs(checkpoint, created)
        return graph.Source(model=graph.stored_checkpoint(stored, f"{prefix}/model"))
    corpus = artefacts.store_blob(Path(request.corpus), "corpus.txt", created)
    try:
        pretrain = graph.pretrain_spec(
            contributions, recipe.slug, corpus, f"{prefix}/pretrained", request.pretrain_steps,
            request.pretrain_settings, request.gpus, request.nodes,
        )  # fmt: skip
    except ContractError as exc:
        raise SubmissionError(str(exc), "steps" if exc.field == "steps" else "recipe") from None
    return graph.Source(pretrain=pretrain)
