"""Built-in task types: each names its schema, the engine formulation that fine-tunes it, its
metrics and its protocol defaults, contributed exactly as a third-party task type would be.

Formulations are named by ``"module:Class"`` path, so this plugin loads without torch.
Epochs are the platform's defaults inside the tuned range of 2-60 of Gu et al. 2021 (the paper does
not print its choice): more epochs for small datasets. Seeds: 5 (Gu et al. 2021, section 6.2;
datasets that need 10 say so themselves).
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import TaskTypeSpec

FORMULATIONS = "workers.engine.formulations"
TOKEN_TAGGING = f"{FORMULATIONS}.token_tagging:TokenTagging"
SEQUENCE = f"{FORMULATIONS}.sequence:SequenceClassification"
RELATION = f"{FORMULATIONS}.relation:RelationClassification"
EXTRACTIVE_QA = f"{FORMULATIONS}.extractive_qa:ExtractiveQA"
ENTITY_COMPANIONS = ("entity-precision", "entity-recall")
LABEL_COMPANIONS = ("accuracy", "macro-f1")

TASK_TYPES = (
    TaskTypeSpec(
        "ner",
        "Named entity recognition",
        "Token tagging of entity mentions (BIO, BIOUL or IO tags).",
        schema="token-tagging",
        formulation=TOKEN_TAGGING,
        metric="entity-f1",
        companion_metrics=ENTITY_COMPANIONS,
        epochs=20,
    ),
    TaskTypeSpec(
        "pico",
        "PICO extraction",
        "Word-level tagging of Participants, Interventions and Outcomes in clinical-trial abstracts; "
        "a word may belong to several elements.",
        schema="token-tagging",
        formulation=TOKEN_TAGGING,
        metric="token-macro-f1",
        epochs=10,
        multi_element=True,
    ),
    TaskTypeSpec(
        "relation-extraction",
        "Relation extraction",
        "Classify the relation between two marked or dummified entity mentions in a sentence.",
        schema="relation",
        formulation=RELATION,
        metric="micro-f1",
        companion_metrics=LABEL_COMPANIONS,
        epochs=10,
    ),
    TaskTypeSpec(
        "sentence-similarity",
        "Sentence similarity",
        "Regress a similarity score for a sentence pair.",
        schema="regression",
        formulation=SEQUENCE,
        metric="pearson",
        epochs=30,
    ),
    TaskTypeSpec(
        "document-classification",
        "Document classification",
        "Single-label, multi-label or binary classification of a document.",
        schema="classification",
        formulation=SEQUENCE,
        metric="accuracy",
        companion_metrics=LABEL_COMPANIONS,
        epochs=20,
    ),
    TaskTypeSpec(
        "question-answering",
        "Question answering (classification)",
        "Yes/no(/maybe) answers to a question given a passage, as pair classification.",
        schema="classification",
        formulation=SEQUENCE,
        metric="accuracy",
        companion_metrics=LABEL_COMPANIONS,
        epochs=20,
    ),
    TaskTypeSpec(
        "nli",
        "Natural language inference",
        "Entailment, contradiction or neutral for a sentence pair.",
        schema="classification",
        formulation=SEQUENCE,
        metric="accuracy",
        companion_metrics=LABEL_COMPANIONS,
        epochs=10,
    ),
    TaskTypeSpec(
        "deidentification",
        "De-identification",
        "Token tagging of protected health information.",
        schema="token-tagging",
        formulation=TOKEN_TAGGING,
        metric="entity-f1",
        companion_metrics=ENTITY_COMPANIONS,
        epochs=20,
    ),
    TaskTypeSpec(
        "extractive-qa",
        "Extractive question answering",
        "Predict the answer span in a (long) context; sliding windows for contexts beyond the model's length.",
        schema="extractive-qa",
        formulation=EXTRACTIVE_QA,
        metric="squad-f1",
        companion_metrics=("exact-match",),
        epochs=3,
    ),
)


@hookimpl
def biolm_task_types() -> list[TaskTypeSpec]:
    return list(TASK_TYPES)
