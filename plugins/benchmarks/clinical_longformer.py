"""The Clinical-Longformer benchmark: the clinical tasks of Li et al. 2022.

Entries are the columns of the paper's three results tables: Table 2, question answering (emrQA
Medication, Relation and Heart Disease, each with exact match and F1); Table 3, named entity
recognition (i2b2 2006 and 2014 de-identification, i2b2 2010 and 2012 concepts, F1); Table 4,
document classification (OHSUMed accuracy, OpenI sample-weighted ROC AUC, MIMIC-AKI ROC AUC and
F1, MedNLI accuracy). The five published rows are in ``published/clinical-longformer.json``,
multiplied by 100 with the printed digits kept (0.240 -> 24.0, 0.675 -> 67.5).

Why the aggregation looks like this:

* The paper defines no overall score. The groups and the ``mean-of-tasks`` summary are **the
  platform's own convention, not the paper's**, added so the benchmark can rank models on one
  number. ``mean-of-tasks`` is the plain mean of the three groups.
* The groups follow the paper's three tables, and every number a table prints counts once in
  its group: ``question-answering`` is the mean of the six EM and F1 columns,
  ``ner`` of the four F1 columns and ``document-classification`` of the five columns of
  Table 4. MIMIC-AKI therefore contributes both its AUC and its F1, as the paper reports both
  ("We evaluated the model performance using AUC and F1 score") and prefers neither.
* MedNLI sits in ``document-classification`` because the paper puts it there: it is a column
  of Table 4, described in Section 3.3.3, "Transformer-based models process NLI tasks also as
  document classification".
* The abstract speaks of "10 baseline tasks" while Table 1 lists 11 datasets and the results
  tables score 11; the benchmark has all 11 (15 numbers).
* Tables 3 and 4 spell the model "Clinical-Big Bird"; it is the same Clinical-BigBird as in
  Table 2. No model's parameter count is stated in the paper, so none is recorded.
"""

from __future__ import annotations

from pathlib import Path

from biolm import hookimpl
from biolm.published import load_published
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec

PUBLISHED = Path(__file__).parent / "published" / "clinical-longformer.json"

CITATION = (
    "Li Y, et al. Clinical-Longformer and Clinical-BigBird: Transformers for long clinical sequences. "
    "arXiv:2201.11838 (2022)."
)

DESCRIPTION = (
    "The clinical tasks Clinical-Longformer and Clinical-BigBird were evaluated on (Li et al. 2022, Tables 2-4): "
    "extractive question answering on three emrQA subsets (exact match and F1), named entity recognition and "
    "de-identification on four i2b2 challenges (F1), and document classification on OHSUMed, OpenI, MIMIC-AKI "
    "and MedNLI. The paper reports each column separately and defines no overall score: the three groups "
    "(one per results table, each the mean of that table's columns) and the 'mean-of-tasks' summary, the plain "
    "mean of the three groups, are the platform's own convention, not the paper's."
)

ENTRIES = (
    EntrySpec("emrqa-medication-em", "emrqa-medication", "exact-match", "emrQA Medication EM"),
    EntrySpec("emrqa-medication-f1", "emrqa-medication", "squad-f1", "emrQA Medication F1"),
    EntrySpec("emrqa-relation-em", "emrqa-relation", "exact-match", "emrQA Relation EM"),
    EntrySpec("emrqa-relation-f1", "emrqa-relation", "squad-f1", "emrQA Relation F1"),
    EntrySpec("emrqa-heart-disease-em", "emrqa-heart-disease", "exact-match", "emrQA Heart Disease EM"),
    EntrySpec("emrqa-heart-disease-f1", "emrqa-heart-disease", "squad-f1", "emrQA Heart Disease F1"),
    EntrySpec("i2b2-2006-deid", "i2b2-2006-deid", "entity-f1", "i2b2 2006 F1"),
    EntrySpec("i2b2-2010", "i2b2-2010", "entity-f1", "i2b2 2010 F1"),
    EntrySpec("i2b2-2012", "i2b2-2012", "entity-f1", "i2b2 2012 F1"),
    EntrySpec("i2b2-2014-deid", "i2b2-2014-deid", "entity-f1", "i2b2 2014 F1"),
    EntrySpec("ohsumed", "ohsumed", "accuracy", "OHSUMed accuracy"),
    EntrySpec("openi", "openi", "roc-auc", "OpenI AUC"),
    EntrySpec("mimic-aki-auc", "mimic-aki", "roc-auc", "MIMIC-AKI AUC"),
    EntrySpec("mimic-aki-f1", "mimic-aki", "binary-f1", "MIMIC-AKI F1"),
    EntrySpec("mednli", "mednli", "accuracy", "MedNLI accuracy"),
)

GROUPS = (
    GroupSpec(
        "question-answering",
        "Question answering (Table 2)",
        tuple(e.key for e in ENTRIES if e.dataset.startswith("emrqa-")),
    ),
    GroupSpec(
        "ner", "Named entity recognition (Table 3)", ("i2b2-2006-deid", "i2b2-2010", "i2b2-2012", "i2b2-2014-deid")
    ),
    GroupSpec(
        "document-classification",
        "Document classification (Table 4)",
        ("ohsumed", "openi", "mimic-aki-auc", "mimic-aki-f1", "mednli"),
    ),
)

AGGREGATION = AggregationSpec(
    version="1",
    primary="mean-of-tasks",
    groups=GROUPS,
    summaries=(
        SummarySpec(
            "mean-of-tasks",
            "Mean of tasks (platform convention)",
            "mean_of_groups",
            tuple(g.slug for g in GROUPS),
        ),
    ),
)


def clinical_longformer_benchmark() -> BenchmarkSpec:
    """Build the benchmark, reading the published rows from ``published/clinical-longformer.json``."""
    source, models = load_published(PUBLISHED)
    return BenchmarkSpec(
        slug="clinical-longformer",
        protocol="clinical-longformer",
        name="Clinical-Longformer clinical tasks",
        description=DESCRIPTION,
        entries=ENTRIES,
        aggregation=AGGREGATION,
        citation=CITATION,
        source_paper=(
            "Li et al. 2022, Clinical-Longformer and Clinical-BigBird: Transformers for long clinical sequences"
        ),
        published=models,
        published_source=source,
        precision=1,
    )


@hookimpl
def biolm_benchmarks() -> list[BenchmarkSpec]:
    return [clinical_longformer_benchmark()]
