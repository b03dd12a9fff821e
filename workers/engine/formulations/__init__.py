"""Task formulations: how each canonical schema is cast onto an encoder, one module per family.

:func:`formulation_for` picks the formulation for a dataset and the user's
:class:`TaskOptions`; the rest of the engine only talks to the :class:`Formulation` interface.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from biolm.specs import DatasetSpec
from workers.engine.encoding import LabelSpace
from workers.engine.formulations.base import Formulation, ModelSource, TaskOptions
from workers.engine.formulations.sequence import SequenceClassification
from workers.engine.formulations.token_tagging import TokenTagging

__all__ = ["Formulation", "ModelSource", "TaskOptions", "formulation_for"]


def formulation_class(dataset: DatasetSpec, options: TaskOptions) -> type[Formulation]:
    """The formulation for ``dataset``'s schema under ``options``; the error says what is supported."""
    schema = dataset.adapter.schema
    if schema == "token-tagging":
        return TokenTagging
    if schema in SequenceClassification.schemas:
        return SequenceClassification
    raise ValueError(f"dataset {dataset.slug!r} uses the {schema} schema, which the engine does not fine-tune yet")


def formulation_for(
    dataset: DatasetSpec,
    labels: LabelSpace,
    tokenizer: PreTrainedTokenizerBase,
    options: TaskOptions,
    max_length: int,
) -> Formulation:
    return formulation_class(dataset, options)(dataset, labels, tokenizer, options, max_length)
