"""A submission's job graph: [pretrain | fetch] -> per dataset: the protocol -> score and record, each with its spec.

The submissions app decides what to evaluate and checks it (:mod:`submissions.submitting`); this
module writes the jobs. Every job's ``spec`` is its typed, versioned contract (:mod:`biolm.contract`),
and its ``kind``, ``queue``, ``benchmark`` and ``dataset`` columns are set from that spec here and
nowhere else (they are columns so the queue can be filtered and ordered by them):

* ``pretrain`` (gpu): a :class:`~biolm.contract.PretrainJob`: recipe, steps and settings, the corpus
  artefact, the number of GPUs, where the checkpoint goes;
* ``fetch`` (cpu): a :class:`~biolm.contract.FetchJob`: a Hugging Face Hub repository at one commit, fetched
  (only the files a checkpoint may hold), checked by the intake as an upload is, and stored
  (:mod:`jobs.hub_fetch`), on the platform's CPU worker rather than in the web request;
* ``finetune`` (gpu, one per dataset): a :class:`~biolm.contract.FinetuneJob`: the benchmark's
  protocol on that dataset with the submitter's overrides, and the model: the submitted
  checkpoint's stored files or the pretraining job's output. Where the protocol scores the
  dataset on cross-validation folds (Lewis et al. 2020 on GAD and EU-ADR), the job runs all of them;
* ``score`` (cpu, one per dataset): a :class:`~biolm.contract.ScoreJob`: scores the test
  predictions against the gold labels, which only the platform holds, and records the ``Result``.

Each spec pins the code its job runs (biolm and the plugins that contribute what it uses), so a
worker that would run other code refuses it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from biolm.contract import (
    Artefact,
    FetchJob,
    FinetuneJob,
    JobSpec,
    ModelInput,
    PretrainJob,
    ScoreJob,
    Slice,
    pins_for,
)
from biolm.contract.slices import planned, reads_of
from biolm.job_contracts import job_plan, score_job
from biolm.plugins import Contributions
from jobs import exports
from jobs.held import queue_for
from jobs.models import Job
from registry.models import Benchmark, Dataset

QUEUE_OF = {PretrainJob.KIND: Job.Queue.GPU, FinetuneJob.KIND: Job.Queue.GPU, ScoreJob.KIND: Job.Queue.CPU,
            FetchJob.KIND: Job.Queue.CPU}  # fmt: skip


@dataclass(frozen=True)
class Planned:
    """One dataset's evaluation: its fine-tuning spec (its model filled in when queued) and the entry it records."""

    spec: FinetuneJob
    dataset: Dataset
    metric: str
    variant: str = ""


@dataclass(frozen=True)
class Source:
    """Where the fine-tuning jobs' model comes from: stored files, or a pretraining or Hub fetch job queued first."""

    model: ModelInput | None = None
    pretrain: PretrainJob | None = None
    fetch: FetchJob | None = None


def stored_checkpoint(entries: Iterable[dict], prefix: str) -> ModelInput:
    """A submitted checkpoint's files in the artefact store, as a fine-tuning job's model."""
    return ModelInput(checkpoint=tuple(Artefact.from_json(entry) for entry in entries), prefix=prefix)


def pretrain_spec(contributions: Contributions, recipe: str, corpus: dict, output: str, steps: int | None,
                  settings: dict, gpus: int, nodes: int = 1) -> PretrainJob:  # fmt: skip
    """The pretraining job's spec, pinning the recipe's code."""
    return PretrainJob(
        recipe=recipe, corpus=Artefact.from_json(corpus), output=output, steps=steps, settings=dict(settings),
        gpus=gpus, nodes=nodes, code=pins_for(contributions, [("recipes", recipe)]),
    )  # fmt: skip


def create(spec: JobSpec, *, submission, language_model, priority: int = 0, benchmark: Benchmark | None = None,
           dataset: Dataset | None = None, after: Job | list[Job] | None = None) -> Job:  # fmt: skip
    """One job of ``spec``: its columns from the spec, its dependency on ``after`` (a job or several)."""
    job = Job.objects.create(
        submission=submission, language_model=language_model, benchmark=benchmark, dataset=dataset,
        kind=kind_of(spec), queue=queue_for(QUEUE_OF[spec.KIND], dataset), priority=priority, spec=spec.to_json(),
    )  # fmt: skip
    if after is not None:
        job.depends_on.add(*(after if isinstance(after, list) else [after]))
    return job


def kind_of(spec: JobSpec) -> str:
    """The job's kind column: a slice of a protocol is a ``slice`` job, but its gather is the dataset's ``finetune``
    job, whose results are recorded and scored as an unsliced one's."""
    part = spec.part if isinstance(spec, FinetuneJob) else None
    return Job.Kind.SLICE if part is not None and part.part != "gather" else spec.KIND


def queue(contributions: Contributions, submission, planned: list[Planned], source: Source, priority: int) -> list[Job]:
    """Write ``submission``'s jobs: the pretraining job if any, then per dataset its fine-tuning and score jobs."""
    model, after, jobs = source.model, None, []
    common = {"submission": submission, "language_model": submission.language_model, "priority": priority}
    if source.pretrain is not None:
        after = create(source.pretrain, **common)
        model = ModelInput(pretrained_by=after.pk, prefix=source.pretrain.output)
        jobs.append(after)
    elif source.fetch is not None:
        after = create(source.fetch, **common)
        model = ModelInput(fetched_by=after.pk, prefix=source.fetch.output)
        jobs.append(after)
    benchmarks = {}
    for item in planned:
        spec = _with_model(item.spec, model)
        benchmark = benchmarks.setdefault(spec.benchmark, Benchmark.objects.filter(slug=spec.benchmark).first())
        place = {"benchmark": benchmark, "dataset": item.dataset, **common}
        slices = protocol_slices(contributions, spec, item.dataset)
        if slices:
            jobs += sliced(spec, slices, after, place)
            finetune = jobs[-1]
        else:
            finetune = create(spec, after=after, **place)
            jobs.append(finetune)
        score = score_job(contributions, spec, finetune.pk, item.metric, item.variant)
        jobs.append(create(score, after=finetune, **place))
    return jobs


def protocol_slices(contributions: Contributions, spec: FinetuneJob, dataset: Dataset) -> list[Slice]:
    """The slices ``spec``'s protocol is cut into, or none where it trains once (or slicing is off)."""
    if not settings.BIOLM_SLICE_PROTOCOLS:
        return []
    plan = job_plan(contributions, spec)
    folds = sorted(int(fold) for fold in exports.folds_of(dataset)["per_fold"]) if plan.cross_validation else []
    slices = planned(len(plan.points), plan.seeds, folds)
    return slices if sum(part.trains for part in slices) > 1 else []


def sliced(spec: FinetuneJob, slices: list[Slice], after: Job | None, place: dict) -> list[Job]:
    """One job per slice, each after the jobs whose documents it reads; the gather, last, is the ``finetune`` job."""
    jobs: dict[str, Job] = {}
    for part in slices:
        read = {other.name: jobs[other.name] for other in reads_of(part, slices)}
        piece = dataclasses.replace(spec, slice=str(part), reads=tuple((name, job.pk) for name, job in read.items()))
        jobs[part.name] = create(piece, after=list(read.values()) or after, **place)
    return list(jobs.values())


def _with_model(spec: FinetuneJob, model: ModelInput) -> FinetuneJob:
    return FinetuneJob.from_json({**spec.to_json(), "model": model.to_json()})


def comparable(spec: FinetuneJob) -> str:
    """The spec as the evaluation it describes, whatever model files it names and however it is sliced: what
    reuse compares."""
    data = spec.whole().to_json()
    data.pop("model")
    return json.dumps(data, sort_keys=True)


def finetune_specs(submission) -> list[dict]:
    """The specs of ``submission``'s fine-tuning jobs."""
    return list(Job.objects.filter(submission=submission, kind=Job.Kind.FINETUNE).values_list("spec", flat=True))
