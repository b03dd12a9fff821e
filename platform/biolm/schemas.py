"""The canonical example schemas every dataset adapter produces (after BigBIO).

One ``datasets.Features`` per task family, so the engine has one input format
per head instead of one per distribution format:

* ``token-tagging`` -- NER, de-identification and PICO: a sentence (or document)
  as words with one tag per word;
* ``classification`` -- single text or pair, single- or multi-label: ``labels``
  is a list (exactly one label unless the dataset is multi-label);
* ``regression`` -- a text pair with a real-valued score (BIOSSES, clinical STS);
* ``relation`` -- a text and two typed entity spans (character offsets,
  end exclusive) with the relation label;
* ``extractive-qa`` -- question, context and SQuAD-style answers.

Long documents keep their full text: truncation is the engine's choice.
"""

from __future__ import annotations

from datasets import Features, Sequence, Value

_SPAN = {"start": Value("int32"), "end": Value("int32"), "type": Value("string")}

SCHEMAS: dict[str, Features] = {
    "token-tagging": Features(
        {
            "id": Value("string"),
            "document_id": Value("string"),
            "tokens": Sequence(Value("string")),
            "tags": Sequence(Value("string")),
        }
    ),
    "classification": Features(
        {
            "id": Value("string"),
            "text": Value("string"),
            "text_pair": Value("string"),
            "labels": Sequence(Value("string")),
        }
    ),
    "regression": Features(
        {
            "id": Value("string"),
            "text": Value("string"),
            "text_pair": Value("string"),
            "score": Value("float32"),
        }
    ),
    "relation": Features(
        {
            "id": Value("string"),
            "text": Value("string"),
            "head": _SPAN,
            "tail": _SPAN,
            "label": Value("string"),
        }
    ),
    "extractive-qa": Features(
        {
            "id": Value("string"),
            "question": Value("string"),
            "context": Value("string"),
            "answers": {"text": Sequence(Value("string")), "answer_start": Sequence(Value("int32"))},
        }
    ),
}


def schema_fields(schema: str) -> set[str]:
    return set(SCHEMAS[schema])
