"""Built-in metrics, with the definitions the papers use, contributed like any plugin's.

Every value is reported on the 0-100 scale the papers print (a Pearson correlation of 0.923 is
stored as 92.3), so scores of different metrics can be averaged the way BLURB and the other
benchmarks average them.

The implementations are the engine's (``workers/engine/metrics/``, each tested against an
independent reference). They are named by ``"module:function"`` path rather than imported, so
this plugin loads on a web server without numpy's metrics or torch, and the engine computes
every metric through these specs: no second table keyed by the same slugs exists. A metric with
classes also names its per-class counting function (``per_class``), the counts it pools or
averages, so the per-class figures the pages show are the metric's own parts.
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import MetricSample, MetricSpec

TAGGING = "workers.engine.metrics.tagging"
CLASSIFICATION = "workers.engine.metrics.classification"
QA = "workers.engine.metrics.qa"

_TAGS = MetricSample(gold=(("B-Chemical", "I-Chemical", "O", "B-Disease"), ("O", "O", "B-Chemical")), predictions=())
_PICO = MetricSample(gold=(("I-PAR", "I-PAR", "O", "I-INT"), ("O", "I-OUT", "I-OUT", "O")), predictions=())
_RELATIONS = MetricSample(
    gold=("CPR:3", "false", "CPR:4", "false", "CPR:3", "CPR:9"), predictions=(), options={"negative": "false"}
)
_BINARY = MetricSample(gold=("1", "0", "1", "0", "0", "1"), predictions=(), options={"negative": "0"})
_CLASSES = MetricSample(gold=("yes", "no", "maybe", "yes", "no", "yes"), predictions=())
_HALLMARKS = MetricSample(
    gold=(frozenset({"angiogenesis"}), frozenset(), frozenset({"immune", "angiogenesis"}), frozenset({"immune"})),
    predictions=(),
)
_SCORES = MetricSample(gold=(4.0, 0.5, 3.0, 1.5, 2.0), predictions=())
_ANSWERS = MetricSample(
    gold=(("81 mg", "81 mg daily"), ("metformin",), ("chest pain",)), predictions=("81 mg", "metformin", "chest pain")
)
_RANKED = MetricSample(
    gold=(("BRCA1",), ("TP53", "p53"), ("EGFR",)),
    predictions=(("BRCA1", "BRCA2"), ("p53", "MDM2"), ("EGFR", "KRAS")),
)


def _perfect(sample: MetricSample) -> MetricSample:
    """Most metrics' perfect predictions are the gold values themselves."""
    if sample.predictions:
        return sample
    return MetricSample(sample.gold, sample.gold, sample.options)


METRICS = (
    MetricSpec(
        "entity-f1",
        "Entity-level F1",
        "Micro F1 over entity mentions, exact span and type (seqeval's default, conlleval reading).",
        f"{TAGGING}:entity_f1",
        sample=_perfect(_TAGS),
        per_class=f"{TAGGING}:entity_counts",
    ),
    MetricSpec(
        "entity-precision",
        "Entity-level precision",
        "Micro precision over entity mentions, exact span and type.",
        f"{TAGGING}:entity_precision",
        sample=_perfect(_TAGS),
        per_class=f"{TAGGING}:entity_counts",
    ),
    MetricSpec(
        "entity-recall",
        "Entity-level recall",
        "Micro recall over entity mentions, exact span and type.",
        f"{TAGGING}:entity_recall",
        sample=_perfect(_TAGS),
        per_class=f"{TAGGING}:entity_counts",
    ),
    MetricSpec(
        "token-macro-f1",
        "Word-level macro F1",
        "F1 per PICO element (P, I, O) over words, then the mean of the three (BLURB's EBM PICO).",
        f"{TAGGING}:token_macro_f1",
        sample=_perfect(_PICO),
        per_class=f"{TAGGING}:element_counts",
    ),
    MetricSpec(
        "micro-f1",
        "Micro F1 (positive classes)",
        "Micro F1 over all classes except the negative one (BLURB's ChemProt, DDI, GAD).",
        f"{CLASSIFICATION}:micro_f1",
        context=("negative",),
        sample=_perfect(_RELATIONS),
        per_class=f"{CLASSIFICATION}:class_counts",
    ),
    MetricSpec(
        "macro-f1",
        "Macro F1",
        "Unweighted mean of the per-class F1, negative class left out (ChemProt and HoC in Lewis et al.).",
        f"{CLASSIFICATION}:macro_f1",
        context=("labels", "negative"),
        sample=_perfect(_RELATIONS),
        per_class=f"{CLASSIFICATION}:class_counts",
    ),
    MetricSpec(
        "binary-f1",
        "F1",
        "F1 of the positive class of a binary task.",
        f"{CLASSIFICATION}:binary_f1",
        context=("negative",),
        sample=_perfect(_BINARY),
    ),
    MetricSpec(
        "precision",
        "Precision",
        "Precision of the positive classes.",
        f"{CLASSIFICATION}:precision",
        context=("negative",),
        sample=_perfect(_RELATIONS),
        per_class=f"{CLASSIFICATION}:class_counts",
    ),
    MetricSpec(
        "recall",
        "Recall",
        "Recall of the positive classes.",
        f"{CLASSIFICATION}:recall",
        context=("negative",),
        sample=_perfect(_RELATIONS),
        per_class=f"{CLASSIFICATION}:class_counts",
    ),
    MetricSpec(
        "average-micro-f1",
        "Average micro F1",
        "HoC as BLURB defines it: abstract-level labels (OR of sentences), micro F1 over the abstract x label matrix.",
        f"{CLASSIFICATION}:average_micro_f1",
        sample=_perfect(_HALLMARKS),
        per_class=f"{CLASSIFICATION}:class_counts",
    ),
    MetricSpec(
        "hoc-blue-f1",
        "Average F1 (BLUE)",
        "HoC as BLUE's eval_hoc.py defines it: precision and recall per abstract, their means, then F1.",
        f"{CLASSIFICATION}:average_micro_f1",
        options={"definition": "blue"},
        # every abstract with a label: BLUE counts an abstract without gold labels as 0
        sample=_perfect(
            MetricSample(gold=(frozenset({"immune"}), frozenset({"angiogenesis", "immune"})), predictions=())
        ),
    ),
    MetricSpec(
        "pearson",
        "Pearson correlation",
        "Pearson correlation between predicted and gold scores (-100 to 100).",
        f"{CLASSIFICATION}:pearson",
        value_range=(-100.0, 100.0),
        sample=_perfect(_SCORES),
    ),
    MetricSpec(
        "accuracy",
        "Accuracy",
        "Share of examples whose predicted label equals the gold label.",
        f"{CLASSIFICATION}:accuracy",
        sample=_perfect(_CLASSES),
    ),
    MetricSpec(
        "exact-match",
        "Exact match",
        "SQuAD-style exact match after answer normalisation, best over the gold answers.",
        f"{QA}:exact_match",
        sample=_ANSWERS,
    ),
    MetricSpec(
        "squad-f1",
        "Token F1 (SQuAD)",
        "SQuAD-style token overlap F1 between predicted and gold answers, best over the gold answers.",
        f"{QA}:squad_f1",
        sample=_ANSWERS,
    ),
    MetricSpec(
        "roc-auc",
        "ROC AUC",
        "Area under the ROC curve of the model's scores; for multi-label tasks the label-frequency-weighted mean "
        "(OpenI as in Li et al. 2022).",
        f"{CLASSIFICATION}:roc_auc",
        inputs="scores",
        sample=MetricSample(gold=("1", "0", "1", "0"), predictions=(2.5, -1.0, 0.7, 0.1), options={"positive": "1"}),
    ),
    MetricSpec(
        "strict-accuracy",
        "Strict accuracy",
        "BioASQ factoid: the top answer is correct.",
        f"{QA}:strict_accuracy",
        inputs="ranked",
        sample=_RANKED,
    ),
    MetricSpec(
        "lenient-accuracy",
        "Lenient accuracy",
        "BioASQ factoid: a correct answer is among the top 5.",
        f"{QA}:lenient_accuracy",
        inputs="ranked",
        sample=_RANKED,
    ),
    MetricSpec(
        "mrr",
        "Mean reciprocal rank",
        "BioASQ factoid: mean of 1/rank of the first correct answer among the top 5.",
        f"{QA}:mrr",
        inputs="ranked",
        sample=_RANKED,
    ),
)


@hookimpl
def biolm_metrics() -> list[MetricSpec]:
    return list(METRICS)
