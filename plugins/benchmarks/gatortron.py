"""The GatorTron clinical benchmark: five clinical NLP tasks of Yang et al. 2022.

Entries are the columns of the paper's Table 1 (clinical concept extraction on 2010 i2b2, 2012
i2b2 and 2018 n2c2, each with precision, recall and F1; drug-ADE relation extraction on 2018
n2c2 with precision, recall and F1) and Table 2 (2019 n2c2 clinical STS, Pearson; MedNLI,
accuracy; emrQA Medication and Relation, F1 and exact match). The published rows of both
tables are in ``published/gatortron.json``, multiplied by 100 with the printed digits kept
(0.8996 -> 89.96, BioMegatron's three-digit 0.879 -> 87.9).

Why the aggregation looks like this:

* The paper defines no overall score; it compares models column by column. The groups and the
  ``mean-of-tasks`` summary are **the platform's own convention, not the paper's**, added so the
  benchmark can rank models on one number. ``mean-of-tasks`` is the plain mean of the five task
  groups (each of the paper's five tasks weighs the same, whatever its number of datasets).
* Each group averages the task's headline numbers only. Precision and recall are diagnostics
  whose trade-off F1 already summarises, so concept and relation extraction use F1 alone.
  For medical question answering the paper says it "utilized both F1-score and exact match
  score for evaluation" and its prose compares models on exact match, while F1 is the usual
  headline; neither is subordinate to the other, so the ``mqa`` group is the mean of all four
  numbers (F1 and EM on both emrQA subsets).
* Table 1 prints "NA" (not reported) for ClinicalBERT's precision and recall on 2010 and 2012
  i2b2. Those entries are simply absent from its scores. Because the groups use F1 only,
  ClinicalBERT's groups and summary are still complete; a model missing a headline number gets
  ``None`` from :func:`biolm.aggregation.aggregate`, never a partial average.
* The relation-extraction F1 uses ``binary-f1``: the paper scores a single relation (a drug
  causing an adverse event), the catalogue's ``n2c2-2018-ade-re`` is that binary task, and for
  one positive class the F1 of that class equals the micro F1 over positive classes.
* Paper inconsistencies, resolved in favour of the tables: the Results text quotes
  GatorTron-large's emrQA Relation EM as 0.9301 where Table 2 prints 0.9310 (the text's own
  margins, 9.5% and 7.77%, match 0.9310); the abstract's "9.6%" NLI gain over BioBERT is 9.7
  points from the table (0.9020 - 0.8050). Parameter counts differ between sections for
  BioBERT (110M in the Introduction, 345M in Methods) and BioMegatron (345M-1.2B, "1.2 billion"
  for the compared model); the JSON uses the Methods figures and says so in each model's notes.
"""

from __future__ import annotations

from pathlib import Path

from biolm import hookimpl
from biolm.published import load_published
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec

PUBLISHED = Path(__file__).parent / "published" / "gatortron.json"

CITATION = (
    "Yang X, Chen A, PourNejatian N, et al. A large language model for electronic health records. "
    "npj Digital Medicine 5, 194 (2022)."
)

DESCRIPTION = (
    "The five clinical NLP tasks GatorTron was evaluated on (Yang et al. 2022, Tables 1-2): clinical concept "
    "extraction (2010 i2b2, 2012 i2b2, 2018 n2c2), drug-ADE relation extraction (2018 n2c2), clinical semantic "
    "textual similarity (2019 n2c2), natural language inference (MedNLI) and medical question answering (emrQA "
    "Medication and Relation). The paper reports each column separately and defines no overall score: the "
    "task groups (F1 for extraction, Pearson for STS, accuracy for NLI, F1 and exact match for QA) and the "
    "'mean-of-tasks' summary, the plain mean of the five task groups, are the platform's own convention, "
    "not the paper's."
)

_CONCEPT_DATASETS = (
    ("i2b2-2010", "2010 i2b2"),
    ("i2b2-2012", "2012 i2b2"),
    ("n2c2-2018-ade", "2018 n2c2"),
)


def _entries() -> tuple[EntrySpec, ...]:
    entries: list[EntrySpec] = []
    for dataset, label in _CONCEPT_DATASETS:
        entries += [
            EntrySpec(f"{dataset}-precision", dataset, "entity-precision", f"{label} concepts precision"),
            EntrySpec(f"{dataset}-recall", dataset, "entity-recall", f"{label} concepts recall"),
            EntrySpec(f"{dataset}-f1", dataset, "entity-f1", f"{label} concepts F1"),
        ]
    entries += [
        EntrySpec("n2c2-2018-ade-re-precision", "n2c2-2018-ade-re", "precision", "2018 n2c2 drug-ADE precision"),
        EntrySpec("n2c2-2018-ade-re-recall", "n2c2-2018-ade-re", "recall", "2018 n2c2 drug-ADE recall"),
        EntrySpec("n2c2-2018-ade-re-f1", "n2c2-2018-ade-re", "binary-f1", "2018 n2c2 drug-ADE F1"),
        EntrySpec("n2c2-2019-sts", "n2c2-2019-sts", "pearson", "2019 n2c2 STS Pearson"),
        EntrySpec("mednli", "mednli", "accuracy", "MedNLI accuracy"),
        EntrySpec("emrqa-medication-f1", "emrqa-medication", "squad-f1", "emrQA Medication F1"),
        EntrySpec("emrqa-medication-em", "emrqa-medication", "exact-match", "emrQA Medication EM"),
        EntrySpec("emrqa-relation-f1", "emrqa-relation", "squad-f1", "emrQA Relation F1"),
        EntrySpec("emrqa-relation-em", "emrqa-relation", "exact-match", "emrQA Relation EM"),
    ]
    return tuple(entries)


GROUPS = (
    GroupSpec(
        "clinical-concept-extraction",
        "Clinical concept extraction",
        tuple(f"{dataset}-f1" for dataset, _ in _CONCEPT_DATASETS),
    ),
    GroupSpec("medical-relation-extraction", "Medical relation extraction", ("n2c2-2018-ade-re-f1",)),
    GroupSpec("sts", "Semantic textual similarity", ("n2c2-2019-sts",)),
    GroupSpec("nli", "Natural language inference", ("mednli",)),
    GroupSpec(
        "mqa",
        "Medical question answering",
        ("emrqa-medication-f1", "emrqa-medication-em", "emrqa-relation-f1", "emrqa-relation-em"),
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


def gatortron_benchmark() -> BenchmarkSpec:
    """Build the benchmark, reading the published rows from ``published/gatortron.json``."""
    source, models = load_published(PUBLISHED)
    return BenchmarkSpec(
        slug="gatortron",
        protocol="gatortron",
        name="GatorTron clinical tasks",
        description=DESCRIPTION,
        entries=_entries(),
        aggregation=AGGREGATION,
        citation=CITATION,
        source_paper="Yang et al. 2022, A large language model for electronic health records, npj Digital Medicine",
        published=models,
        published_source=source,
        precision=2,
    )


@hookimpl
def biolm_benchmarks() -> list[BenchmarkSpec]:
    return [gatortron_benchmark()]
