"""Task formulations: how each canonical schema is cast onto an encoder, one module per family.

:func:`formulation_for` picks the formulation for a dataset and the user's
:class:`TaskOptions`; the rest of the engine only talks to the :class:`Formulation` interface.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from biolm.specs import DatasetSpec
from workers.engine.encoding import LabelSpace
from workers.engine.formulations.base import Formulation, ModelSource, TaskOptions
from workers.engine.formulations.extractive_qa import ExtractiveQA
from workers.engine.formulations.long_document import LongDocumentClassification
from workers.engine.formulations.relation import RelationClassification
from workers.engine.formulations.sequence import SequenceClassification
from workers.engine.formulations.token_tagging import TokenTagging

__all__ = ["Formulation", "ModelSource", "TaskOptions", "formulation_for"]


def formulation_class(dataset: DatasetSpec, options: TaskOptions) -> type[Formulation]:
    """The formulation for ``dataset``'s schema under ``options``; the error says what is supported."""
    schema = dataset.adapter.schema
    if options.long_documents != "truncate":  # seed 000 section 3.5: snippets pooled, or one long model
        if schema in LongDocumentClassification.schemas:
            return LongDocumentClassification
        raise ValueError(
            f"--long-documents {options.long_documents} applies to classification and regression datasets, but "
            f"{dataset.slug!r} uses the {schema} schema: leave --long-documents at truncate (token tasks are "
            "split into windows of whole words, QA contexts into --qa-window windows, with nothing dropped)"
        )
    if schema == "token-tagging":
        return TokenTagging
    if schema in ExtractiveQA.schemas:
        return ExtractiveQA
    if schema in RelationClassification.schemas:
        return RelationClassification
    if schema in SequenceClassification.schemas:
        return SequenceClassification
    raise ValueError(f"dataset {dataset.slug!r} uses the {schema} schema, which the engine does not fine-tune yet")


def formulation_for(
    dataset: DatasetSpec,
    labels: LabelSpace,
    tokenizer: PreTrainedTokenizerBase,
    options: TaskOptions,
    max_length: int,
    source: ModelSource | None = None,
) -> Formulation:
    """The formulation, ready to encode; ``source`` is the model, for formulations that need its length first."""
    return formulation_class(dataset, options)(dataset, labels, tokenizer, options, max_length, source)
