"""BLURB-mini: BLURB's shape on invented demo data, so ``make demo`` can show a leaderboard offline.

One demo dataset per BLURB task type (plugins/datasets/demo_catalogue.py), each scored with the
metric BLURB uses for that task type, grouped and aggregated exactly as BLURB is
(plugins/benchmarks/blurb.py): the six task-type groups with BLURB's slugs and names, and
``blurb-score`` as ``mean_of_groups`` over them. With one dataset per group the score equals the
plain mean of the six entries, but keeping BLURB's groups means the demo exercises the real
aggregation path and shows the same group columns.

There are no published rows: nobody has run a model on this data but the demo itself. The data
is invented, and scores on it mean nothing about real performance.
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec

DESCRIPTION = (
    "Invented demo data, not a real benchmark; scores mean nothing about real performance. BLURB-mini has "
    "one small dataset written by the biolm project for each of BLURB's six task types (NER, PICO, relation "
    "extraction, sentence similarity, document classification, question answering), scored with BLURB's "
    "metrics and aggregated as BLURB is (mean over task types), so that make demo can fine-tune a tiny "
    "model and show a leaderboard without downloading anything."
)

# (group slug, group name as in BLURB, entry)
TASKS = (
    ("ner", "NER", EntrySpec("demo-ner", "demo-ner", "entity-f1", "Demo NER")),
    ("pico", "PICO", EntrySpec("demo-pico", "demo-pico", "token-macro-f1", "Demo PICO")),
    (
        "relation-extraction",
        "Relation Extraction",
        EntrySpec("demo-relation", "demo-relation", "micro-f1", "Demo relations"),
    ),
    (
        "sentence-similarity",
        "Sentence Similarity",
        EntrySpec("demo-similarity", "demo-similarity", "pearson", "Demo similarity"),
    ),
    (
        "document-classification",
        "Document Classification",
        EntrySpec("demo-doc-classification", "demo-doc-classification", "average-micro-f1", "Demo documents"),
    ),
    ("question-answering", "Question Answering", EntrySpec("demo-qa", "demo-qa", "accuracy", "Demo QA")),
)

ENTRIES = tuple(entry for _slug, _name, entry in TASKS)
GROUPS = tuple(GroupSpec(slug, name, (entry.key,)) for slug, name, entry in TASKS)
AGGREGATION = AggregationSpec(
    version="1",
    primary="blurb-score",
    groups=GROUPS,
    summaries=(SummarySpec("blurb-score", "BLURB score", "mean_of_groups", tuple(g.slug for g in GROUPS)),),
)


def blurb_mini_benchmark() -> BenchmarkSpec:
    return BenchmarkSpec(
        slug="blurb-mini",
        protocol="blurb",
        name="BLURB-mini (demo data)",
        description=DESCRIPTION,
        entries=ENTRIES,
        aggregation=AGGREGATION,
        citation="None: invented demo data written by the biolm project.",
        source_paper="",
        published=(),
        precision=2,
    )


@hookimpl
def biolm_benchmarks() -> list[BenchmarkSpec]:
    return [blurb_mini_benchmark()]
