"""The canonical example schemas every dataset adapter produces (after BigBIO).

One schema per task family, so the engine has one input format per head instead of one per
distribution format. Each schema is one module that owns everything about its examples: the
``datasets.Features``, the validation of an example, the texts a tokenizer is trained on, how
gold values are read for scoring, how long an example is, and a few sample examples:

* ``token-tagging`` (:mod:`.token_tagging`) -- NER, de-identification and PICO: words with one
  tag per word;
* ``classification`` (:mod:`.classification`) -- single text or pair, single- or multi-label;
* ``regression`` (:mod:`.regression`) -- a text pair with a real-valued score;
* ``relation`` (:mod:`.relation`) -- a text and two typed entity spans with the relation label;
* ``extractive-qa`` (:mod:`.extractive_qa`) -- question, context and SQuAD-style answers.

Long documents keep their full text: truncation is the engine's choice.
"""

from __future__ import annotations

from biolm.schemas.base import Schema
from biolm.schemas.classification import ClassificationSchema
from biolm.schemas.extractive_qa import ExtractiveQASchema
from biolm.schemas.regression import RegressionSchema
from biolm.schemas.relation import RelationSchema
from biolm.schemas.token_tagging import TokenTaggingSchema

SCHEMAS: dict[str, Schema] = {
    schema.name: schema
    for schema in (
        TokenTaggingSchema(),
        ClassificationSchema(),
        RegressionSchema(),
        RelationSchema(),
        ExtractiveQASchema(),
    )
}


def get_schema(name: str) -> Schema:
    """The schema called ``name``; the error lists the known ones."""
    try:
        return SCHEMAS[name]
    except KeyError:
        raise KeyError(f"no canonical schema {name!r}; known: {', '.join(SCHEMAS)}") from None


def schema_fields(name: str) -> set[str]:
    return set(get_schema(name).fields)


__all__ = ["SCHEMAS", "Schema", "get_schema", "schema_fields"]
