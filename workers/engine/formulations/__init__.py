"""Task formulations: how each canonical schema is cast onto an encoder, one module per family.

A task type names its formulation (``TaskTypeSpec.formulation``); :func:`formulation_for`
resolves it through the plugin contributions and lets it pick a variant for the user's
:class:`TaskOptions`. The rest of the engine only talks to the :class:`Formulation` interface.
"""

from __future__ import annotations

import functools
import logging

from transformers import PreTrainedTokenizerBase

from biolm.specs import ImplementationError
from workers.engine.architectures import model_max_tokens
from workers.engine.batching import PAD_MULTIPLE
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import long_document  # noqa: F401 -- declares the long-document variant
from workers.engine.formulations.base import Formulation, ModelSource, TaskOptions
from workers.engine.task import Task

__all__ = ["Formulation", "ModelSource", "TaskOptions", "formulation_class", "formulation_for"]
logger = logging.getLogger("biolm.engine")


def formulation_class(task: Task, options: TaskOptions) -> type[Formulation]:
    """The task type's formulation (or its variant for ``options``); the error says what is wrong."""
    named = task.task_type.resolve()
    if not issubclass(named, Formulation):
        raise ImplementationError(
            f"task type {task.task_type.slug!r}: formulation {named.__module__}.{named.__qualname__} "
            "is not a subclass of workers.engine.formulations.base.Formulation",
            ("task_types", task.task_type.slug),
        )
    chosen = named.select(task, options)
    if task.task_type.schema not in chosen.schemas:
        raise ValueError(
            f"task type {task.task_type.slug!r} uses the {task.task_type.schema} schema, but its formulation "
            f"{chosen.__name__} reads {', '.join(chosen.schemas) or 'no schema'}"
        )
    return chosen


def formulation_for(
    task: Task,
    labels: LabelSpace,
    tokenizer: PreTrainedTokenizerBase,
    options: TaskOptions,
    max_length: int,
    source: ModelSource | None = None,
) -> Formulation:
    """The formulation, ready to encode; ``source`` is the model, for formulations that need its length first.

    ``max_length`` is capped at what the model's position embeddings take (rounded down to the
    padding multiple of :func:`~workers.engine.batching.collate`): a checkpoint pretrained on
    128-token blocks has 130 positions, and a 512-token input would fail deep in its embeddings.
    Every path that builds the formulation (the worker, the platform scoring its withheld
    predictions) comes through here, so both cut or split inputs at the same length.
    """
    if source is not None:
        usable = model_max_tokens(source)
        usable -= usable % PAD_MULTIPLE  # a batch padded up to the multiple must still fit the positions
        if max_length > usable:
            _say_capped(str(source.model_dir or source.architecture), usable, max_length)
            max_length = usable
    return formulation_class(task, options)(task, labels, tokenizer, options, max_length, source)


@functools.cache
def _say_capped(model: str, usable: int, asked: int) -> None:
    """Once per model and length (a cross-validation prepares every fold, the platform again to score)."""
    logger.warning("%s takes at most %d tokens per input: inputs are cut or split there, not at --max-length %d",
                   model, usable, asked)  # fmt: skip
