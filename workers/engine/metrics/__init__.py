"""Every metric the platform's benchmarks use, on the 0-100 scale the papers print.

Uniform signature: ``metric(gold, pred, **options) -> float``. The platform reaches them through the
metric contributions of ``plugins/tasks/metrics.py``, which name each function by path (the engine
has no table of its own). ``gold`` and ``pred`` are aligned sequences (one item per example);
options are keyword-only and an unknown option raises ``TypeError`` rather than being ignored.
Inputs per family (modules: ``tagging``, ``classification``, ``qa``):

* entity-*: lists of sentences of tags (``B-Chemical``, ``I``, ``O``); ``mode="conlleval"``
  (default) or ``mode="strict", scheme="IOB2" | "IOBES" | "BILOU" | "IO"``.
* token-macro-f1: sentences of word tags (``I-PAR``/``O``), or of sets of elements per word.
* micro-f1, macro-f1, binary-f1, precision, recall: one label per example, or multi-label rows
  (a 2-D 0/1 matrix, or one ``set``/``frozenset`` of labels per example). Options ``positive=``,
  ``negative=`` and ``labels=`` say which classes count (see ``classification._positive_labels``).
* average-micro-f1 (HoC): multi-label rows per abstract (``pool_by_document`` ORs sentence labels);
  ``definition="micro"`` (default: the leaderboard's, as LinkBERT computes it) or ``"blue"`` (BLUE).
* pearson: numbers; accuracy: labels; roc-auc: ``pred`` holds scores, not labels.
* exact-match, squad-f1: ``gold`` holds one answer or a list of acceptable answers per question.
* strict-accuracy, lenient-accuracy, mrr: ``pred`` holds each question's ranked answers.

Per-class counts (``class_counts``, ``entity_counts``, ``element_counts``) are the parts the
micro and macro scores pool or average, one ``Counts(tp, predicted, gold)`` per class; a metric
names its counting function as ``MetricSpec.per_class`` and the pages show them per class.

Undefined precision, recall and F1 (no predicted or no gold positives) count as 0, as in seqeval and scikit-learn
(``zero_division="warn"``), so a model that predicts nothing scores 0 instead of crashing a run.
Nothing is ever dropped: inputs of different lengths raise ``ValueError`` (METRICS.md's trap of
the Hugging Face NER example silently ignoring gold labels beyond the maximum length).
"""

from __future__ import annotations

from workers.engine.metrics.classification import (
    accuracy,
    average_micro_f1,
    binary_f1,
    class_counts,
    macro_f1,
    micro_f1,
    pearson,
    pool_by_document,
    precision,
    recall,
    roc_auc,
)
from workers.engine.metrics.common import PRF, Counts
from workers.engine.metrics.qa import exact_match, lenient_accuracy, mrr, normalize_answer, squad_f1, strict_accuracy
from workers.engine.metrics.tagging import (
    element_counts,
    entity_counts,
    entity_f1,
    entity_precision,
    entity_recall,
    entity_scores,
    token_macro_f1,
)

__all__ = [
    "PRF",
    "Counts",
    "accuracy",
    "average_micro_f1",
    "binary_f1",
    "class_counts",
    "element_counts",
    "entity_counts",
    "entity_f1",
    "entity_precision",
    "entity_recall",
    "entity_scores",
    "exact_match",
    "lenient_accuracy",
    "macro_f1",
    "micro_f1",
    "mrr",
    "normalize_answer",
    "pearson",
    "pool_by_document",
    "precision",
    "recall",
    "roc_auc",
    "squad_f1",
    "strict_accuracy",
    "token_macro_f1",
]
