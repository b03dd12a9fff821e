"""Which queue a job waits in: its dataset's holder's (gated data kept on the holder's hosts), else its kind's.

A restricted dataset bound to a :class:`registry.models.DataHolder` is fine-tuned and scored only by that
holder's workers, so every job on it (the protocol's job, each slice, the score job) waits in
``held-<holder>``: its inputs and its gold never leave the holder's hosts, where its worker reads its own
copy. Binding moves the jobs that wait unsent, so none of them reaches another worker after the operator
said so; releasing moves them back.
"""

from __future__ import annotations

from django.db import transaction

from jobs.models import WAITING, Job
from registry.holders import bindable
from registry.models import DataHolder, Dataset


def queue_for(kind_queue: str, dataset: Dataset | None) -> str:
    """The queue of a job of ``kind_queue`` (gpu, cpu) on ``dataset``: its holder's for a held dataset."""
    if dataset is not None and dataset.held_by_id is not None:
        return dataset.held_by.queue
    return kind_queue


@transaction.atomic
def bind(holder: DataHolder, slugs: list[str]) -> list[Dataset]:
    """Bind the restricted datasets ``slugs`` to ``holder``; their unsent GPU jobs move to its queue."""
    datasets = bindable(slugs)
    for dataset in datasets:
        Dataset.objects.filter(pk=dataset.pk).update(held_by=holder)
        Job.objects.filter(dataset=dataset, status__in=WAITING, queue=Job.Queue.GPU, dispatched_at__isnull=True).update(
            queue=holder.queue
        )
    return datasets


@transaction.atomic
def unbind(slugs: list[str]) -> list[Dataset]:
    """Release the datasets ``slugs`` from their holder: their unsent jobs go back to the platform's GPU queue."""
    datasets = bindable(slugs)
    for dataset in datasets:
        if dataset.held_by_id is None:
            continue
        queue = dataset.held_by.queue
        Dataset.objects.filter(pk=dataset.pk).update(held_by=None)
        moved = Job.objects.filter(dataset=dataset, status__in=WAITING, queue=queue, dispatched_at__isnull=True)
        moved.exclude(kind=Job.Kind.SCORE).update(queue=Job.Queue.GPU)
        moved.filter(kind=Job.Kind.SCORE).update(queue=Job.Queue.CPU)
    return datasets
