"""BLURB, the Biomedical Language Understanding & Reasoning Benchmark of Gu et al. 2021.

Entries are the 13 datasets of the paper's Table 3, in the row order of Table 6, each scored with
the metric Table 3 gives it (mapped to the slugs of ``plugins/tasks/metrics.py``):

* the five NER sets: "F1 entity-level" -> ``entity-f1``;
* EBM PICO: "Macro F1 word-level" -> ``token-macro-f1`` (word-level F1 per P, I, O element, then
  their mean, Section 4.2);
* ChemProt, DDI, GAD: "Micro F1" -> ``micro-f1``;
* BIOSSES: "Pearson" -> ``pearson``;
* HoC: "Average Micro F1" -> ``average-micro-f1`` (Section 4.5: the original HoC metric, not BLUE's);
* PubMedQA and BioASQ (Task 7b yes/no): "Accuracy" -> ``accuracy``.

Entry labels are the paper's row names ("BC5-chem", "EBM PICO", ...).

Why the aggregation looks like this (it is the paper's definition, not a platform convention):
Section 4 argues that a plain average over datasets "may place undue emphasis on simpler tasks
such as NER for which there are many existing datasets", so the datasets are grouped by task type,
each type is averaged, and the BLURB score is "the macro average among the task types" (Table 6
caption: "the macro average of average test results for each of the six tasks"). The six groups
are Table 3's task types with its names (NER, PICO, Relation Extraction, Sentence Similarity,
Document Classification, Question Answering); ``blurb-score`` is ``mean_of_groups`` over them, so
NER (five datasets) weighs as much as BIOSSES (one). A model missing any dataset gets no BLURB
score (:func:`biolm.aggregation.aggregate` never averages a partial group).

Published rows (``published/blurb.json``, digits as printed):

* the nine model columns of Table 6: BERT uncased and cased, RoBERTa, BioBERT (v1.1), SciBERT
  uncased and cased, ClinicalBERT (Bio+Clinical BERT), BlueBERT and PubMedBERT. The header prints
  the casing on a second line; the names carry it only where a model has two columns. There is no
  BioMegatron column in this paper;
* six PubMedBERT ablation columns that give all 13 datasets and a BLURB score: Table 7 (BERT's
  Wiki + Books vocabulary with and without whole-word masking, PubMed vocabulary without it),
  Table 8 (PubMed + PMC full text, standard and 60% longer training) and Table 9 (adversarial
  pretraining). Each of these tables repeats the standard PubMedBERT column with the same 14
  numbers as Table 6; it is not added again. Their ``notes`` name their table; the Table 6 rows'
  notes name Table 6. Tables 10-12 (fine-tuning ablations) cover only a few datasets and are
  skipped.

Every printed BLURB score is reproduced by :func:`aggregate` to two decimals from the printed
per-dataset numbers (tests/test_published_blurb.py); no exception is needed.

Other judgement calls:

* ``parameters``: Table 5 gives no parameter counts, and Section 6.1 only speaks of BERT-BASE "with
  12 transformer layers and 100 million parameters" as a size class. Each count is therefore taken
  from where it is stated, and ``parameters_source`` says where: PubMedBERT and BioBERT v1.1 from
  Fang et al. 2023 (Table 1, 110M each), ClinicalBERT from Yang et al. 2022 (110 million), BERT
  from Devlin et al. 2019 (BERT-BASE, 110M), SciBERT from Beltagy et al. 2019 (the size of
  BERT-Base), BlueBERT and the PubMedBERT ablations from Section 6.1 (BERT-BASE) with Devlin et al.
  2019's count. RoBERTa's size is not stated (base or large is never said), so it stays empty.
* Vocabulary and corpus strings follow Table 5 (vocabulary, pretraining, corpus, text size) and
  Section 6.1. Table 5 gives PubMedBERT's corpus as 3.1B words, Section 6.1 as 3.2 billion words;
  both are quoted.
* ``hf_checkpoint`` is recorded only where the public id is certain: none for RoBERTa (size not
  stated), BlueBERT (Table 6 says "cased", the public PubMed+MIMIC releases are uncased) and the
  ablation variants (including the two PubMed + PMC models, since the paper does not say which of
  them was released).
"""

from __future__ import annotations

from pathlib import Path

from biolm import hookimpl
from biolm.published import load_published
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec

PUBLISHED = Path(__file__).parent / "published" / "blurb.json"

CITATION = (
    "Gu Y, Tinn R, Cheng H, Lucas M, Usuyama N, Liu X, Naumann T, Gao J, Poon H. Domain-specific language "
    "model pretraining for biomedical natural language processing. ACM Transactions on Computing for "
    "Healthcare 3(1):2 (2021). doi:10.1145/3458754. arXiv:2007.15779."
)

DESCRIPTION = (
    "The Biomedical Language Understanding & Reasoning Benchmark (Gu et al. 2021): 13 PubMed-based datasets in "
    "six task types. Named entity recognition: BC5-chem, BC5-disease, NCBI-disease, BC2GM, JNLPBA (entity-level "
    "F1). PICO extraction: EBM PICO (word-level macro F1). Relation extraction: ChemProt, DDI, GAD (micro F1). "
    "Sentence similarity: BIOSSES (Pearson). Document classification: HoC (average micro F1). Question "
    "answering: PubMedQA and BioASQ 7b yes/no (accuracy). The BLURB score averages the datasets within each task "
    "type, then takes the macro average over the six task types, so that the five NER datasets do not dominate."
)

NER_ENTRIES = (
    EntrySpec("bc5-chem", "bc5-chem", "entity-f1", "BC5-chem"),
    EntrySpec("bc5-disease", "bc5-disease", "entity-f1", "BC5-disease"),
    EntrySpec("ncbi-disease", "ncbi-disease", "entity-f1", "NCBI-disease"),
    EntrySpec("bc2gm", "bc2gm", "entity-f1", "BC2GM"),
    EntrySpec("jnlpba", "jnlpba", "entity-f1", "JNLPBA"),
)
PICO_ENTRIES = (EntrySpec("ebm-pico", "ebm-pico", "token-macro-f1", "EBM PICO"),)
RE_ENTRIES = (
    EntrySpec("chemprot", "chemprot", "micro-f1", "ChemProt"),
    EntrySpec("ddi", "ddi", "micro-f1", "DDI"),
    EntrySpec("gad", "gad", "micro-f1", "GAD"),
)
SIMILARITY_ENTRIES = (EntrySpec("biosses", "biosses", "pearson", "BIOSSES"),)
DC_ENTRIES = (EntrySpec("hoc", "hoc", "average-micro-f1", "HoC"),)
QA_ENTRIES = (
    EntrySpec("pubmedqa", "pubmedqa", "accuracy", "PubMedQA"),
    EntrySpec("bioasq", "bioasq", "accuracy", "BioASQ"),
)

ENTRIES = NER_ENTRIES + PICO_ENTRIES + RE_ENTRIES + SIMILARITY_ENTRIES + DC_ENTRIES + QA_ENTRIES


def _group(slug: str, name: str, entries: tuple[EntrySpec, ...]) -> GroupSpec:
    return GroupSpec(slug, name, tuple(e.key for e in entries))


GROUPS = (
    _group("ner", "NER", NER_ENTRIES),
    _group("pico", "PICO", PICO_ENTRIES),
    _group("relation-extraction", "Relation Extraction", RE_ENTRIES),
    _group("sentence-similarity", "Sentence Similarity", SIMILARITY_ENTRIES),
    _group("document-classification", "Document Classification", DC_ENTRIES),
    _group("question-answering", "Question Answering", QA_ENTRIES),
)

AGGREGATION = AggregationSpec(
    version="1",
    primary="blurb-score",
    groups=GROUPS,
    summaries=(SummarySpec("blurb-score", "BLURB score", "mean_of_groups", tuple(g.slug for g in GROUPS)),),
)


def blurb_benchmark() -> BenchmarkSpec:
    """Build the benchmark, reading the published rows from ``published/blurb.json``."""
    source, models = load_published(PUBLISHED)
    return BenchmarkSpec(
        slug="blurb",
        protocol="blurb",
        name="BLURB",
        description=DESCRIPTION,
        entries=ENTRIES,
        aggregation=AGGREGATION,
        citation=CITATION,
        source_paper="Gu et al. 2021, Domain-Specific Language Model Pretraining for Biomedical Natural Language "
        "Processing (PubMedBERT)",
        published=models,
        published_source=source,
        precision=2,
    )


@hookimpl
def biolm_benchmarks() -> list[BenchmarkSpec]:
    return [blurb_benchmark()]
