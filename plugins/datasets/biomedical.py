"""Biomedical datasets outside BLURB, used by Lewis et al. 2020, Bioformer (Fang et al. 2023) and Li et al. 2022.

Why these values:

* Split sizes are those of the papers' dataset tables. Bioformer's Table 2 (Fang et al. 2023) gives
  train/valid/test for BC4CHEMD, LINNAEUS, S800 and BioCreative VII LitCovid; their NER counts are
  entity mentions (the LINNAEUS and S800 numbers equal the B-tag counts of the files in the official
  data folder, BIOLM_DATA_DIR). Lewis et al. 2020 give only corpus totals, and Li et al. 2022 (Table 1)
  only a total sample size (OHSUMed), so those splits are ``None`` and the totals go in the description.
* EU-ADR: Fang et al. 2023 (Table 2) print ``euadr 4796 / 0 / 535`` and ``GAD-10 318 / 0 / 38``. These two
  rows are evidently swapped: 4,796 + 534 is BioBERT's GAD fold, while BioBERT's EU-ADR folds
  have 318-320 training and 35-37 test sentences (EU-ADR in the official data folder). We therefore take
  318 / 38 for EU-ADR, and record no dev split (the table's 0; the dev files are empty).
* BioASQ factoid is modelled as extractive QA scored by strict accuracy (Fang et al. 2023 also
  report lenient accuracy and MRR); no split sizes are given in the papers.
* OHSUMed follows Li et al. 2022: single-label abstracts over the 23 MeSH disease categories, accuracy.
* Licences repeat the official data files' README where it covers the dataset; otherwise "not stated".
* Citations come from the papers' reference lists, except OHSUMed: the text of Li et al. 2022 we have has no
  reference list, so its citation is the collection's standard paper (Hersh et al. 1994).
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import DatasetSpec, SplitSpec
from plugins.datasets.readers import all_adapters, with_adapters

NER_TAGS = ("B", "I", "O")

LITCOVID_TOPICS = (
    "Treatment",
    "Diagnosis",
    "Prevention",
    "Mechanism",
    "Transmission",
    "Epidemic Forecasting",
    "Case Report",
)

OHSUMED_CATEGORIES = tuple(f"C{i:02d}" for i in range(1, 24))


def _splits(train: int | None, dev: int | None, test: int | None, unit: str) -> tuple[SplitSpec, ...]:
    return (SplitSpec("train", train, unit), SplitSpec("dev", dev, unit), SplitSpec("test", test, unit))


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        slug="bc4chemd",
        name="BC4CHEMD",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Chemical and drug mention recognition in the 10,000 PubMed abstracts of the BioCreative IV CHEMDNER "
            "corpus (84,310 annotations, Lewis et al. 2020). Split sizes: Fang et al. 2023, Table 2."
        ),
        splits=_splits(29478, 29486, 25346, "mentions"),
        source=(
            "BioCreative IV CHEMDNER corpus; the usual IOB version is Crichton et al. 2017 "
            "(github.com/cambridgeltl/MTL-Bioinformatics-2016, BC4CHEMD) as used by BioBERT"
        ),
        licence="not stated; Crichton et al.'s README calls its redistribution status unclear",
        citation=(
            "Krallinger M, Rabal O, Leitner F, et al. The CHEMDNER corpus of chemicals and drugs and its "
            "annotation principles. Journal of Cheminformatics 7(1):S2, 2015."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="linnaeus",
        name="LINNAEUS",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Species mention recognition in 153 full-text articles (4,077 annotations, Lewis et al. 2020). "
            "Split sizes: Fang et al. 2023, Table 2, equal to the B-Species counts of Crichton et al.'s files."
        ),
        splits=_splits(2119, 711, 1433, "mentions"),
        source=(
            "LINNAEUS corpus as preprocessed by Crichton et al. 2017 "
            "(github.com/cambridgeltl/MTL-Bioinformatics-2016, linnaeus-IOB)"
        ),
        licence="CC BY 4.0 (Crichton et al. MTL-Bioinformatics-2016 materials)",
        citation=(
            "Gerner M, Nenadic G, Bergman CM. LINNAEUS: a species name identification system for biomedical "
            "literature. BMC Bioinformatics 11:85, 2010."
        ),
        labels=("B-Species", "I-Species", "O"),
    ),
    DatasetSpec(
        slug="s800",
        name="Species-800",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Species mention recognition in 800 PubMed abstracts (3,708 annotations, Lewis et al. 2020). "
            "Split sizes: Fang et al. 2023, Table 2, equal to the B counts of BioBERT's preprocessed files."
        ),
        splits=_splits(2557, 384, 767, "mentions"),
        source="S800 corpus (Pafilis et al.) as preprocessed for NER by BioBERT (Lee et al.), datasets/NER/s800",
        licence="not stated",
        citation=(
            "Pafilis E, Frankild SP, Fanini L, et al. The SPECIES and ORGANISMS resources for fast and accurate "
            "identification of taxonomic names in text. PLoS One 8(6):e65390, 2013."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="eu-adr",
        name="EU-ADR",
        task_type="relation-extraction",
        metric="binary-f1",
        domain="biomedical",
        description=(
            "Small binary gene-disease relation extraction set (355 annotated sentences, Lewis et al. 2020), "
            "evaluated with BioBERT's 10-fold cross-validation. Sizes are one fold as in Fang et al. 2023, Table 2, "
            "whose EU-ADR and GAD rows we read as swapped (318 train / 38 test here); there is no dev split."
        ),
        splits=(SplitSpec("train", 318, "relations"), SplitSpec("test", 38, "relations")),
        source="EU-ADR corpus (van Mulligen et al.) as BioBERT's 10 cross-validation folds, datasets/RE/euadr",
        licence="not stated",
        citation=(
            "van Mulligen EM, Fourrier-Reglat A, Gurwitz D, et al. The EU-ADR corpus: annotated drugs, diseases, "
            "targets, and their relationships. Journal of Biomedical Informatics 45(5), 2012."
        ),
        labels=("0", "1"),
        negative_label="0",
    ),
    DatasetSpec(
        slug="litcovid",
        name="BioCreative VII LitCovid",
        task_type="document-classification",
        metric="micro-f1",
        domain="biomedical",
        description=(
            "Multi-label topic classification of COVID-19 articles (title and abstract) into seven LitCovid "
            "topics, from the BioCreative VII LitCovid track. Split sizes: Fang et al. 2023, Table 2; "
            "the paper reports results on the dev set."
        ),
        splits=_splits(24960, 6239, 2500, "documents"),
        source="BioCreative VII LitCovid track data released by NCBI (LitCovid, ftp.ncbi.nlm.nih.gov/pub/lu/LitCovid)",
        licence="not stated (not among the collected data files)",
        citation=(
            "Chen Q, Allot A, Leaman R, et al. Multi-label classification for biomedical literature: an overview "
            "of the BioCreative VII LitCovid Track for COVID-19 literature topic annotations. Database, 2022."
        ),
        labels=LITCOVID_TOPICS,
    ),
    DatasetSpec(
        slug="bioasq-factoid",
        name="BioASQ 7b factoid",
        task_type="extractive-qa",
        metric="strict-accuracy",
        companion_metrics=("lenient-accuracy", "mrr"),
        domain="biomedical",
        description=(
            "Factoid questions from BioASQ Task 7b answered by extracting a span from the gold snippets, in "
            "BioBERT's preprocessing that drops about 30% unanswerable questions; scored by strict accuracy, "
            "lenient accuracy and MRR (Fang et al. 2023). The papers give no split sizes."
        ),
        splits=_splits(None, None, None, "questions"),
        source=(
            "BioBERT's preprocessed BioASQ 7b factoid data (SQuAD format, from the BioBERT authors); the raw "
            "BioASQ data needs registration at participants-area.bioasq.org"
        ),
        licence="not stated; BioASQ distributes its data to registered users under its own terms",
        citation=(
            "Tsatsaronis G, Balikas G, Malakasiotis P, et al. An overview of the BIOASQ large-scale biomedical "
            "semantic indexing and question answering competition. BMC Bioinformatics 16:138, 2015."
        ),
    ),
    DatasetSpec(
        slug="ohsumed",
        name="OHSUMed",
        task_type="document-classification",
        metric="accuracy",
        domain="biomedical",
        description=(
            "Single-label classification of MEDLINE cardiovascular-disease abstracts into the 23 MeSH disease "
            "categories (C01-C23), keeping only abstracts with exactly one category, as in Li et al. 2022, "
            "whose Table 1 gives 4,056 samples in total and no per-split sizes. Read from the public "
            "ohsumed-first-20000-docs release (training/ and test/ with one directory per category); its "
            "training documents give 10% to a dev split, chosen by a hash of their ids."
        ),
        splits=_splits(None, None, None, "abstracts"),
        source="OHSUMED test collection of MEDLINE references (Hersh et al.), subset as described in Li et al. 2022",
        licence="not stated",
        citation=(
            "Hersh W, Buckley C, Leone TJ, Hickam D. OHSUMED: an interactive retrieval evaluation and new large "
            "test collection for research. SIGIR, 1994."
        ),
        labels=OHSUMED_CATEGORIES,
    ),
)


@hookimpl
def biolm_datasets() -> list[DatasetSpec]:
    """Biomedical datasets of Li et al. 2022, Lewis et al. 2020 and Fang et al. 2023 that BLURB does not include."""
    return list(with_adapters(DATASETS, all_adapters()))
