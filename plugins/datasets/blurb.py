"""The 13 BLURB datasets (Gu et al. 2021), as a built-in dataset plugin.

Why these values:

* Split sizes and their units are Table 3 of Gu et al. 2021 exactly as printed. Its caption counts
  "instances": entity mentions for NER and PICO elements for EBM PICO; the relation-extraction
  rows count candidate relation instances, BIOSSES counts sentence pairs, HoC abstracts and the
  two QA sets questions (section 4.6 says "450, 50, and 500 questions").
* Where the official files (BIOLM_DATA_DIR/<Dataset>/blurb) disagree with Table 3 we keep the paper's
  number and say so in the description, so a reader can see both (BC5-disease dev, EBM PICO dev,
  the DDI train/dev split, and GAD dev/test, whose two numbers the table appears to swap).
* ``labels`` is the label set found in those files (data README), not the paper's prose: NER
  files use untyped B/I/O, EBM PICO uses IO-only I-PAR/I-INT/I-OUT/O, ChemProt has the five CPR
  groups the files contain plus ``false``, and so on. BIOSSES is a regression task: no labels.
* ``metric`` is the BLURB metric of Table 3 mapped to the slugs of plugins/tasks/metrics.py.
* ``licence`` repeats what the official files' README states, including "not stated".
* Citations come from the reference list of Gu et al. 2021 (HoC: they print 2015, the journal issue,
  Lewis et al. 2020 and Fang et al. 2023 say 2016; we give 2016).
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import DatasetSpec, SplitSpec
from plugins.datasets.readers import all_adapters, with_adapters

CRICHTON = "Crichton et al. 2017 preprocessed {corpus} (github.com/cambridgeltl/MTL-Bioinformatics-2016, {folder})"
CRICHTON_LICENCE = "CC BY 4.0 (Crichton et al. MTL-Bioinformatics-2016 materials); BLURB data_generation code is MIT"
NER_TAGS = ("B", "I", "O")

HOC_HALLMARKS = (
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
)


# The Hub's copy of BLURB (EMBO's): it holds the five NER sets, BIOSSES and PubMedQA, not the others.
BLURB_ON_THE_HUB = "EMBO/BLURB"


def _splits(train: int, dev: int, test: int, unit: str) -> tuple[SplitSpec, ...]:
    return (SplitSpec("train", train, unit), SplitSpec("dev", dev, unit), SplitSpec("test", test, unit))


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        slug="bc5-chem",
        hub_dataset=BLURB_ON_THE_HUB,
        name="BC5-chem",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Chemical mention recognition in the 1,500 PubMed abstracts of the BioCreative V CDR corpus, "
            "using Crichton et al.'s train/dev/test split with the relation labels dropped."
        ),
        splits=_splits(5203, 5347, 5385, "mentions"),
        source=CRICHTON.format(corpus="BC5CDR", folder="BC5CDR-chem-IOB") + "; BLURB strips the entity type",
        licence=CRICHTON_LICENCE,
        text_shareable=True,
        citation=(
            "Li J, Sun Y, Johnson RJ, et al. BioCreative V CDR task corpus: a resource for chemical disease "
            "relation extraction. Database, 2016."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="bc5-disease",
        hub_dataset=BLURB_ON_THE_HUB,
        name="BC5-disease",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Disease mention recognition on the same BioCreative V CDR abstracts and split as BC5-chem. "
            "Gu et al. 2021 (Table 3) give 4,244 dev mentions; the BLURB dev file has 4,246 B tags."
        ),
        splits=_splits(4182, 4244, 4424, "mentions"),
        source=CRICHTON.format(corpus="BC5CDR", folder="BC5CDR-disease-IOB") + "; BLURB strips the entity type",
        licence=CRICHTON_LICENCE,
        text_shareable=True,
        citation=(
            "Li J, Sun Y, Johnson RJ, et al. BioCreative V CDR task corpus: a resource for chemical disease "
            "relation extraction. Database, 2016."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="ncbi-disease",
        hub_dataset=BLURB_ON_THE_HUB,
        name="NCBI-disease",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description="Disease mention recognition in 793 PubMed abstracts of the NCBI Disease corpus.",
        splits=_splits(5134, 787, 960, "mentions"),
        source=CRICHTON.format(corpus="NCBI Disease corpus", folder="NCBI-disease-IOB"),
        licence=CRICHTON_LICENCE,
        text_shareable=True,
        citation=(
            "Doğan RI, Leaman R, Lu Z. NCBI disease corpus: a resource for disease name recognition and concept "
            "normalization. Journal of Biomedical Informatics 47, 2014."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="bc2gm",
        hub_dataset=BLURB_ON_THE_HUB,
        name="BC2GM",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Gene mention recognition in PubMed sentences (BioCreative II Gene Mention); Crichton et al. carve "
            "2,500 training sentences out as the dev set."
        ),
        splits=_splits(15197, 3061, 6325, "mentions"),
        source=CRICHTON.format(corpus="BioCreative II GM", folder="BC2GM-IOB"),
        licence=CRICHTON_LICENCE,
        text_shareable=True,
        citation=(
            "Smith L, Tanabe LK, Ando RJ, et al. Overview of BioCreative II gene mention recognition. "
            "Genome Biology 9 Suppl 2, 2008."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="jnlpba",
        hub_dataset=BLURB_ON_THE_HUB,
        name="JNLPBA",
        task_type="ner",
        metric="entity-f1",
        domain="biomedical",
        description=(
            "Bio-entity recognition in GENIA abstracts (JNLPBA 2004 shared task); BLURB merges the five types "
            "protein, DNA, RNA, cell line and cell type into a single untyped entity."
        ),
        splits=_splits(46750, 4551, 8662, "mentions"),
        source=(
            "JNLPBA 2004 shared-task GENIA files (Genia4ERtask2.iob2, Genia4EReval2.iob2), split into train/dev "
            "as Crichton et al. 2017 (github.com/cambridgeltl/MTL-Bioinformatics-2016, JNLPBA)"
        ),
        licence="GENIA Project License: annotations CC BY 3.0, abstracts under PubMed terms",
        citation=(
            "Kim J-D, Ohta T, Tsuruoka Y, Tateisi Y, Collier N. Introduction to the Bio-entity Recognition Task "
            "at JNLPBA. NLPBA/BioNLP workshop, COLING, 2004."
        ),
        labels=NER_TAGS,
    ),
    DatasetSpec(
        slug="ebm-pico",
        name="EBM PICO",
        task_type="pico",
        metric="token-macro-f1",
        domain="biomedical",
        description=(
            "Word-level tagging of Participants, Interventions and Outcomes in clinical-trial abstracts "
            "(EBM-NLP), scored as the mean of the per-element word-level F1. Table 3's counts are PIO-tagged "
            "words; the BLURB dev file has 87,308 such words against the table's 85,321."
        ),
        splits=_splits(339167, 85321, 16364, "PICO elements"),
        source=(
            "EBM-NLP corpus (github.com/bepnye/EBM-NLP, ebm_nlp_2_00.tar.gz) through BLURB's data_generation "
            "scripts and PMID lists (3,842 / 960 / 191 abstracts)"
        ),
        licence="not stated (the EBM-NLP repository has no licence)",
        citation=(
            "Nye B, Li JJ, Patel R, et al. A corpus with multi-level annotations of patients, interventions and "
            "outcomes to support language processing for medical literature. ACL, 2018."
        ),
        labels=("I-PAR", "I-INT", "I-OUT", "O"),
    ),
    DatasetSpec(
        slug="chemprot",
        name="ChemProt",
        task_type="relation-extraction",
        metric="micro-f1",
        domain="biomedical",
        description=(
            "Sentence-level chemical-protein interaction classification into five CPR groups or false, with "
            "both entities masked; micro F1 over the five CPR groups."
        ),
        splits=_splits(18035, 11268, 15745, "relations"),
        source=(
            "BioCreative VI ChemProt track corpus (registration with BioCreative), turned into one row per "
            "chemical-gene pair by BLURB's data_generation"
        ),
        licence="not stated in the source repository; BLURB asks users to register and download from BioCreative",
        citation=(
            "Krallinger M, Rabal O, Akhondi SA, et al. Overview of the BioCreative VI chemical-protein "
            "interaction Track. Proceedings of the Sixth BioCreative Challenge Evaluation Workshop, 2017."
        ),
        labels=("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"),
        negative_label="false",
    ),
    DatasetSpec(
        slug="ddi",
        name="DDI",
        task_type="relation-extraction",
        metric="micro-f1",
        domain="biomedical",
        description=(
            "Drug-drug interaction classification (mechanism, effect, advise, int, or none) for masked drug "
            "pairs in DDI-2013 sentences, over BLURB's 624/90/191-file split. Table 3 prints 22,233/5,559/5,716; "
            "the BLURB files hold 25,296/2,496/5,716 candidate pairs (same train+dev total)."
        ),
        splits=_splits(22233, 5559, 5716, "relations"),
        source=(
            "DDI-2013 corpus (Herrero-Zazo et al.; github.com/isegura/DDICorpus), the copy BLURB downloads from "
            "github.com/zhangyijia1979/hierarchical-RNNs-model-for-DDI-extraction"
        ),
        licence="CC BY-NC 4.0 (non-commercial), per the corpus authors' README",
        citation=(
            "Herrero-Zazo M, Segura-Bedmar I, Martínez P, Declerck T. The DDI corpus: an annotated corpus with "
            "pharmacological substances and drug-drug interactions. Journal of Biomedical Informatics 46(5), 2013."
        ),
        labels=("DDI-false", "DDI-mechanism", "DDI-effect", "DDI-advise", "DDI-int"),
        negative_label="DDI-false",
    ),
    DatasetSpec(
        slug="gad",
        # Lewis et al. and Bioformer report F1 of the positive class (binary-f1) beside BLURB's micro F1.
        companion_metrics=("accuracy", "macro-f1", "binary-f1"),
        name="GAD",
        task_type="relation-extraction",
        metric="micro-f1",
        domain="biomedical",
        description=(
            "Binary gene-disease association classification of masked sentences from the Genetic Association "
            "Database. Table 3 prints dev 534 / test 535; the BLURB files have dev 535 / test 534."
        ),
        splits=_splits(4261, 534, 535, "relations"),
        source=(
            "BioBERT's preprocessed GAD, cross-validation fold 1 (Lee et al.); BLURB's dev is the last 535 rows "
            "of that fold's train file"
        ),
        licence="not stated",
        citation=(
            "Bravo À, Piñero J, Queralt-Rosinach N, Rautschka M, Furlong LI. Extraction of relations between genes "
            "and diseases from text and large-scale data analysis: implications for translational research. "
            "BMC Bioinformatics 16, 2015."
        ),
        labels=("0", "1"),
        negative_label="0",
    ),
    DatasetSpec(
        slug="biosses",
        hub_dataset=BLURB_ON_THE_HUB,
        seeds=10,  # Gu et al. 2021, section 6.2: small and high-variance
        name="BIOSSES",
        task_type="sentence-similarity",
        metric="pearson",
        domain="biomedical",
        description=(
            "Regression of the similarity (0-4, mean of five expert annotators) of 100 PubMed sentence pairs, "
            "with BLUE's 64/16/20 split; scored by Pearson correlation."
        ),
        splits=_splits(64, 16, 20, "pairs"),
        source="BIOSSES dataset from its authors' site (BIOSSES-Dataset.rar), with the 64/16/20 split of BLUE",
        licence="not stated for the data; the BIOSSES repository is GPL-3.0",
        citation=(
            "Soğancıoğlu G, Öztürk H, Özgür A. BIOSSES: a semantic sentence similarity estimation system "  # noqa: RUF001
            "for the biomedical domain. Bioinformatics 33(14), 2017."
        ),
    ),
    DatasetSpec(
        slug="hoc",
        # Bioformer reports HoC as micro F1 (here equal to BLURB's matrix micro F1); Lewis et al. macro F1;
        # BLUE's per-document definition is hoc-blue-f1.
        companion_metrics=("accuracy", "macro-f1", "micro-f1", "hoc-blue-f1"),
        name="HoC",
        task_type="document-classification",
        metric="average-micro-f1",
        domain="biomedical",
        description=(
            "Multi-label classification of PubMed abstracts into the ten top-level hallmarks of cancer; "
            "sentence labels are OR-ed per abstract and scored with micro F1."
        ),
        splits=_splits(1295, 186, 371, "documents"),
        source="Hallmarks of Cancer corpus (github.com/sb895/Hallmarks-of-Cancer) with BLURB's PMID split lists",
        licence="GPL-3.0 (HoC repository licence)",
        text_shareable=True,
        citation=(
            "Baker S, Silins I, Guo Y, et al. Automatic semantic classification of scientific literature "
            "according to the hallmarks of cancer. Bioinformatics 32(3), 2016."
        ),
        labels=HOC_HALLMARKS,
    ),
    DatasetSpec(
        slug="pubmedqa",
        hub_dataset=BLURB_ON_THE_HUB,
        seeds=10,  # Gu et al. 2021, section 6.2: small and high-variance
        name="PubMedQA",
        task_type="question-answering",
        metric="accuracy",
        domain="biomedical",
        description=(
            "Yes/no/maybe answers to research questions given the abstract without its conclusion (PQA-L), "
            "with the original 450/50/500 split."
        ),
        splits=_splits(450, 50, 500, "questions"),
        source="PubMedQA PQA-L (github.com/pubmedqa/pubmedqa, ori_pqal.json), fold-0 split of split_dataset.py",
        licence="MIT",
        text_shareable=True,
        citation=(
            "Jin Q, Dhingra B, Liu Z, Cohen W, Lu X. PubMedQA: a dataset for biomedical research question "
            "answering. EMNLP-IJCNLP, 2019."
        ),
        labels=("yes", "no", "maybe"),
    ),
    DatasetSpec(
        slug="bioasq",
        seeds=10,  # Gu et al. 2021, section 6.2: small and high-variance
        name="BioASQ 7b yes/no",
        task_type="question-answering",
        metric="accuracy",
        domain="biomedical",
        description=(
            "Yes/no biomedical questions from BioASQ Task 7b, each paired with its gold snippets as the passage, "
            "with the official 670/75/140 split."
        ),
        splits=_splits(670, 75, 140, "questions"),
        source=(
            "BioASQ Task 7b training set and golden test batches (participants-area.bioasq.org, registration), "
            "selected with BLURB's question-id lists"
        ),
        licence="not stated; BioASQ distributes its data to registered users under its own terms",
        citation=(
            "Nentidis A, Bougiosiotis K, Krithara A, Paliouras G. Results of the seventh edition of the BioASQ "
            "challenge. ECML PKDD, 2019."
        ),
        labels=("yes", "no"),
    ),
)


@hookimpl
def biolm_datasets() -> list[DatasetSpec]:
    """The BLURB datasets with the split sizes and metrics of Gu et al. 2021, Table 3."""
    return list(with_adapters(DATASETS, all_adapters()))
