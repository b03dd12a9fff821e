"""Task formulations: how each canonical schema is cast onto an encoder, one module per family.

A task type names its formulation (``TaskTypeSpec.formulation``); :func:`formulation_for`
resolves it through the plugin contributions and lets it pick a variant for the user's
:class:`TaskOptions`. The rest of the engine only talks to the :class:`Formulation` interface.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from biolm.specs import ImplementationError
from workers.engine.encoding import LabelSpace
from workers.engine.formulations.base import Formulation, ModelSource, TaskOptions
from workers.engine.task import Task

__all__ = ["Formulation", "ModelSource", "TaskOptions", "formulation_class", "formulation_for"]


def formulation_class(task: Task, options: TaskOptions) -> type[Formulation]:
    """The task type's formulation (or its variant for ``options``); the error says what is wrong."""
    named = task.task_type.resolve()
    if not issubclass(named, Formulation):
        raise ImplementationError(
            f"task type {task.task_type.slug!r}: formulation {named.__module__}.{named.__qualname__} "
            "is not a subclass of workers.engine.formulations.base.Formulation"
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
    """The formulation, ready to encode; ``source`` is the model, for formulations that need its length first."""
    return formulation_class(task, options)(task, labels, tokenizer, options, max_length, source)
