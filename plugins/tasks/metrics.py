"""Built-in task types and metrics, with the definitions the papers use.

Every value is reported on the 0-100 scale the papers print (a Pearson
correlation of 0.923 is stored as 92.3), so scores of different metrics can be
averaged the way BLURB and the other benchmarks average them.
"""

from __future__ import annotations

import pluggy

from biolm.specs import MetricSpec, TaskTypeSpec

hookimpl = pluggy.HookimplMarker("biolm")

TASK_TYPES = (
    TaskTypeSpec("ner", "Named entity recognition", "Token tagging of entity mentions (BIO, BIOUL or IO tags)."),
    TaskTypeSpec(
        "pico",
        "PICO extraction",
        "Word-level tagging of Participants, Interventions and Outcomes in clinical-trial abstracts.",
    ),
    TaskTypeSpec(
        "relation-extraction",
        "Relation extraction",
        "Classify the relation between two marked or dummified entity mentions in a sentence.",
    ),
    TaskTypeSpec("sentence-similarity", "Sentence similarity", "Regress a similarity score for a sentence pair."),
    TaskTypeSpec(
        "document-classification",
        "Document classification",
        "Single-label, multi-label or binary classification of a document.",
    ),
    TaskTypeSpec(
        "question-answering",
        "Question answering (classification)",
        "Yes/no(/maybe) answers to a question given a passage, as pair classification.",
    ),
    TaskTypeSpec("nli", "Natural language inference", "Entailment, contradiction or neutral for a sentence pair."),
    TaskTypeSpec("deidentification", "De-identification", "Token tagging of protected health information."),
    TaskTypeSpec(
        "extractive-qa",
        "Extractive question answering",
        "Predict the answer span in a (long) context; sliding windows for contexts beyond the model's length.",
    ),
)

METRICS = (
    MetricSpec("entity-f1", "Entity-level F1", "Micro F1 over entity mentions, exact span and type (seqeval)."),
    MetricSpec("entity-precision", "Entity-level precision", "Micro precision over entity mentions, exact span."),
    MetricSpec("entity-recall", "Entity-level recall", "Micro recall over entity mentions, exact span."),
    MetricSpec(
        "token-macro-f1",
        "Word-level macro F1",
        "F1 per PICO element (P, I, O) over words, then the mean of the three (BLURB's EBM PICO).",
    ),
    MetricSpec(
        "micro-f1",
        "Micro F1 (positive classes)",
        "Micro F1 over all classes except the negative one (BLURB's ChemProt, DDI, GAD).",
    ),
    MetricSpec("macro-f1", "Macro F1", "Unweighted mean of the per-class F1 (ChemProt and HoC in Lewis et al.)."),
    MetricSpec("binary-f1", "F1", "F1 of the positive class of a binary task."),
    MetricSpec("precision", "Precision", "Precision of the positive classes."),
    MetricSpec("recall", "Recall", "Recall of the positive classes."),
    MetricSpec(
        "average-micro-f1",
        "Average micro F1",
        "HoC as BLURB defines it: abstract-level labels (OR of sentences), micro F1 over the abstract x label matrix.",
    ),
    MetricSpec("pearson", "Pearson correlation", "Pearson correlation between predicted and gold scores."),
    MetricSpec("accuracy", "Accuracy", "Share of examples whose predicted label equals the gold label."),
    MetricSpec("exact-match", "Exact match", "SQuAD-style exact match after answer normalisation."),
    MetricSpec("squad-f1", "Token F1 (SQuAD)", "SQuAD-style token overlap F1 between predicted and gold answers."),
    MetricSpec(
        "roc-auc",
        "ROC AUC",
        "Area under the ROC curve; for multi-label tasks the label-frequency-weighted mean (OpenI as seed 000).",
    ),
    MetricSpec("strict-accuracy", "Strict accuracy", "BioASQ factoid: the top answer is correct."),
    MetricSpec("lenient-accuracy", "Lenient accuracy", "BioASQ factoid: a correct answer is among the top 5."),
    MetricSpec("mrr", "Mean reciprocal rank", "BioASQ factoid: mean of 1/rank of the first correct answer."),
)


@hookimpl
def biolm_task_types() -> list[TaskTypeSpec]:
    return list(TASK_TYPES)


@hookimpl
def biolm_metrics() -> list[MetricSpec]:
    return list(METRICS)
