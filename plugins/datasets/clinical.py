"""Clinical datasets of Lewis et al. 2020, GatorTron (Yang et al. 2022) and Clinical-Longformer (Li et al. 2022).

Why these values:

* Access. Everything here except OpenI is built from patient records and is only available under
  a data use agreement, so it is ``restricted`` and ``source`` says where to apply: the i2b2/n2c2
  sets (and emrQA, generated from i2b2 annotations) through the n2c2 DBMI Data Portal; MedNLI
  and MIMIC-derived sets through PhysioNet credentialed access. This follows the "Data
  availability" section of Yang et al. 2022. OpenI (Indiana University chest X-ray reports) is a public download from
  NLM Open-i, so it is ``public``.
* Split sizes. None of the papers gives per-split sizes for these sets: Lewis et al. 2020 give
  corpus sizes in their prose, Li et al. 2022 (Table 1) a total "sample size" (unit unstated), Yang
  et al. 2022 nothing.
  Splits are therefore ``None`` and the totals are quoted in the descriptions. The one exception
  is OpenI, which Li et al. 2022 use as a test set only (their models are fine-tuned on MIMIC-CXR), so
  its whole 3,684 reports are the test split.
* Metrics. De-identification and concept extraction: entity-level F1; i2b2 2010 relations: micro
  F1 over the relation types; the n2c2 2018 drug-ADE relation: F1 of the positive class; STS:
  Pearson; MedNLI: accuracy; emrQA: SQuAD token F1 (exact match is also reported); OpenI and
  MIMIC-AKI: ROC AUC (Li et al. 2022 also report F1 for MIMIC-AKI).
* Labels are the annotation categories of each challenge written as BIO tags for the tagging
  tasks. The papers' preprocessing may use subsets (Yang et al. 2022 tag only problems, treatments
  and tests in i2b2 2012); the file readers of a later issue will derive the exact set from the data.
* Citations: the reference lists of Lewis et al. 2020 and Yang et al. 2022 where they cite the
  dataset paper. The text of Li et al. 2022 we have has no reference list, so i2b2 2006, OpenI and
  MIMIC-AKI cite the usual dataset papers; for n2c2 2018 Yang et al. 2022 cite their own earlier
  system (Yang et al. 2020), and we cite the challenge overview (Henry et al. 2020) instead.
"""

from __future__ import annotations

from biolm import hookimpl
from biolm.specs import DatasetSpec, SplitSpec
from plugins.datasets.readers import all_adapters, with_adapters

N2C2_PORTAL = "https://portal.dbmi.hms.harvard.edu/projects/n2c2-nlp/"
N2C2_SOURCE = (
    "n2c2 NLP Research Data Sets on the DBMI Data Portal, Harvard Medical School (" + N2C2_PORTAL + "), "
    "after registering and signing the n2c2 Data Use Agreement"
)
N2C2_LICENCE = "n2c2 Data Use Agreement (DBMI Data Portal); research use only; not redistributable"
PHYSIONET_LICENCE = (
    "PhysioNet Credentialed Health Data License 1.5.0 and Data Use Agreement (credentialed access); not redistributable"
)
EMRQA_SOURCE = (
    "Generated from i2b2/n2c2 challenge annotations; the dataset is downloaded from the n2c2 DBMI Data Portal ("
    + N2C2_PORTAL
    + ") after signing the n2c2 Data Use Agreement (instructions: github.com/panushri25/emrQA#download-dataset)"
)
EMRQA_LICENCE = "inherits the n2c2 Data Use Agreement of the underlying i2b2 notes; not redistributable"
EMRQA_CITATION = (
    "Pampari A, Raghavan P, Liang J, Peng J. emrQA: a large corpus for question answering on electronic medical "
    "records. EMNLP, 2018 (arXiv:1809.00732)."
)


def _bio(*types: str) -> tuple[str, ...]:
    """BIO tags for entity types, ``O`` first."""
    return ("O", *(f"{prefix}-{t}" for t in types for prefix in ("B", "I")))


def _unknown_splits(unit: str) -> tuple[SplitSpec, ...]:
    return (SplitSpec("train", None, unit), SplitSpec("dev", None, unit), SplitSpec("test", None, unit))


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        slug="i2b2-2006-deid",
        name="i2b2 2006 de-identification",
        task_type="deidentification",
        metric="entity-f1",
        domain="clinical",
        description=(
            "Tagging of protected health information in discharge summaries (2006 i2b2 de-identification "
            "challenge), converted to IOB as in ClinicalBERT. Li et al. 2022, Table 1: sample size 66,034; no "
            "per-split sizes."
        ),
        splits=_unknown_splits("examples"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Uzuner Ö, Luo Y, Szolovits P. Evaluating the state-of-the-art in automatic de-identification. "
            "Journal of the American Medical Informatics Association 14(5), 2007."
        ),
        labels=_bio("AGE", "DATE", "DOCTOR", "HOSPITAL", "ID", "LOCATION", "PATIENT", "PHONE"),
        access="restricted",
    ),
    DatasetSpec(
        slug="i2b2-2010",
        name="i2b2 2010 concept extraction",
        task_type="ner",
        metric="entity-f1",
        domain="clinical",
        description=(
            "Extraction of medical problems, treatments and tests from clinical reports (2010 i2b2/VA challenge; "
            "871 reports per Lewis et al. 2020). Li et al. 2022, Table 1: sample size 43,947; no per-split sizes."
        ),
        splits=_unknown_splits("examples"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Uzuner Ö, South BR, Shen S, DuVall SL. 2010 i2b2/VA challenge on concepts, assertions, and relations "
            "in clinical text. Journal of the American Medical Informatics Association 18(5), 2011."
        ),
        labels=_bio("problem", "treatment", "test"),
        access="restricted",
    ),
    DatasetSpec(
        slug="i2b2-2010-re",
        name="i2b2 2010 relation extraction",
        task_type="relation-extraction",
        metric="micro-f1",
        domain="clinical",
        description=(
            "Classification of the relation between a medical problem and a treatment, test or other problem in "
            "the same sentence (8 relation types, Lewis et al. 2020), with 'false' for pairs without a relation. "
            "The papers give no split sizes."
        ),
        splits=_unknown_splits("relations"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Uzuner Ö, South BR, Shen S, DuVall SL. 2010 i2b2/VA challenge on concepts, assertions, and relations "
            "in clinical text. Journal of the American Medical Informatics Association 18(5), 2011."
        ),
        labels=("TrIP", "TrWP", "TrCP", "TrAP", "TrNAP", "TeRP", "TeCP", "PIP", "false"),
        negative_label="false",
        access="restricted",
    ),
    DatasetSpec(
        slug="i2b2-2012",
        name="i2b2 2012 clinical events",
        task_type="ner",
        metric="entity-f1",
        domain="clinical",
        description=(
            "Recognition of clinical events and temporal expressions in discharge summaries (2012 i2b2 temporal "
            "relations challenge; 310 summaries per Lewis et al. 2020). Li et al. 2022, Table 1: sample size "
            "13,108; no per-split sizes. Yang et al. 2022 tag only problems, treatments and tests."
        ),
        splits=_unknown_splits("examples"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Sun W, Rumshisky A, Uzuner Ö. Evaluating temporal relations in clinical text: 2012 i2b2 Challenge. "
            "Journal of the American Medical Informatics Association 20(5), 2013."
        ),
        labels=_bio(
            "PROBLEM",
            "TEST",
            "TREATMENT",
            "CLINICAL_DEPT",
            "EVIDENTIAL",
            "OCCURRENCE",
            "DATE",
            "TIME",
            "DURATION",
            "FREQUENCY",
        ),
        access="restricted",
    ),
    DatasetSpec(
        slug="i2b2-2014-deid",
        name="i2b2 2014 de-identification",
        task_type="deidentification",
        metric="entity-f1",
        domain="clinical",
        description=(
            "Tagging of protected health information in longitudinal medical records (2014 i2b2/UTHealth track 1; "
            "1,304 records per Lewis et al. 2020). Li et al. 2022, Table 1: sample size 83,466; no per-split "
            "sizes. Labels are the seven top-level PHI categories."
        ),
        splits=_unknown_splits("examples"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Stubbs A, Kotfila C, Uzuner Ö. Automated systems for the de-identification of longitudinal clinical "
            "narratives: overview of 2014 i2b2/UTHealth shared task Track 1. Journal of Biomedical Informatics 58, "
            "2015."
        ),
        labels=_bio("NAME", "PROFESSION", "LOCATION", "AGE", "DATE", "CONTACT", "ID"),
        access="restricted",
    ),
    DatasetSpec(
        slug="n2c2-2018-ade",
        name="n2c2 2018 medication and ADE extraction",
        task_type="ner",
        metric="entity-f1",
        domain="clinical",
        description=(
            "Extraction of drugs, adverse drug events and drug attributes (dose, route, ...) from discharge "
            "summaries (2018 n2c2 track 2), as used by Yang et al. 2022. The papers give no split sizes."
        ),
        splits=_unknown_splits("examples"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Henry S, Buchan K, Filannino M, Stubbs A, Uzuner Ö. 2018 n2c2 shared task on adverse drug events and "
            "medication extraction in electronic health records. Journal of the American Medical Informatics "
            "Association 27(1), 2020."
        ),
        labels=_bio("Drug", "Strength", "Dosage", "Duration", "Frequency", "Form", "Route", "Reason", "ADE"),
        access="restricted",
    ),
    DatasetSpec(
        slug="n2c2-2018-ade-re",
        # GatorTron (Yang et al. 2022, Table 2) reports precision and recall beside F1.
        companion_metrics=("accuracy", "macro-f1", "precision", "recall"),
        name="n2c2 2018 drug-ADE relation extraction",
        task_type="relation-extraction",
        metric="binary-f1",
        domain="clinical",
        description=(
            "Deciding whether a drug caused an adverse drug event for candidate drug-ADE pairs from the 2018 n2c2 "
            "track 2 corpus, marked with entity markers as in Yang et al. 2022; F1 of the ADE-Drug relation. "
            "The papers give no split sizes."
        ),
        splits=_unknown_splits("relations"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Henry S, Buchan K, Filannino M, Stubbs A, Uzuner Ö. 2018 n2c2 shared task on adverse drug events and "
            "medication extraction in electronic health records. Journal of the American Medical Informatics "
            "Association 27(1), 2020."
        ),
        labels=("ADE-Drug", "false"),
        negative_label="false",
        access="restricted",
    ),
    DatasetSpec(
        slug="n2c2-2019-sts",
        name="n2c2 2019 clinical STS",
        task_type="sentence-similarity",
        metric="pearson",
        domain="clinical",
        description=(
            "Regression of the semantic similarity (0-5) of sentence pairs from clinical notes (2019 n2c2/OHNLP "
            "ClinicalSTS, built on MedSTS), scored by Pearson correlation. The papers give no split sizes."
        ),
        splits=_unknown_splits("pairs"),
        source=N2C2_SOURCE,
        licence=N2C2_LICENCE,
        citation=(
            "Wang Y, Fu S, Shen F, et al. Overview of the 2019 n2c2/OHNLP Track on Clinical Semantic Textual "
            "Similarity. JMIR Medical Informatics, 2020."
        ),
        access="restricted",
    ),
    DatasetSpec(
        slug="mednli",
        name="MedNLI",
        task_type="nli",
        metric="accuracy",
        domain="clinical",
        description=(
            "Three-way natural language inference on premise/hypothesis pairs written by clinicians from "
            "MIMIC-III past-medical-history sentences. Li et al. 2022, Table 1: 14,049 pairs; the original "
            "release splits them 11,232/1,395/1,422, which the papers do not print."
        ),
        splits=_unknown_splits("pairs"),
        source=(
            "PhysioNet (https://physionet.org/content/mednli/1.0.0/), credentialed access: PhysioNet account, "
            "human-subjects training and a signed data use agreement"
        ),
        licence=PHYSIONET_LICENCE,
        citation=("Romanov A, Shivade C. Lessons from natural language inference in the clinical domain. EMNLP, 2018."),
        labels=("entailment", "contradiction", "neutral"),
        access="restricted",
    ),
    DatasetSpec(
        slug="emrqa-medication",
        name="emrQA Medication",
        task_type="extractive-qa",
        metric="squad-f1",
        domain="clinical",
        description=(
            "Extractive QA over long clinical notes with question-answer pairs generated from the i2b2 2009 "
            "medication annotations; scored by token F1 and exact match. Li et al. 2022, Table 1: sample size 255,908; "
            "its training set is under-sampled and no per-split sizes are given."
        ),
        splits=_unknown_splits("question-answer pairs"),
        source=EMRQA_SOURCE,
        licence=EMRQA_LICENCE,
        citation=EMRQA_CITATION,
        access="restricted",
    ),
    DatasetSpec(
        slug="emrqa-relation",
        name="emrQA Relation",
        task_type="extractive-qa",
        metric="squad-f1",
        domain="clinical",
        description=(
            "Extractive QA over long clinical notes with question-answer pairs generated from the i2b2 2010 "
            "relation annotations; scored by token F1 and exact match. Li et al. 2022, Table 1: sample size 141,243; "
            "its training set is under-sampled and no per-split sizes are given."
        ),
        splits=_unknown_splits("question-answer pairs"),
        source=EMRQA_SOURCE,
        licence=EMRQA_LICENCE,
        citation=EMRQA_CITATION,
        access="restricted",
    ),
    DatasetSpec(
        slug="emrqa-heart-disease",
        name="emrQA Heart Disease",
        task_type="extractive-qa",
        metric="squad-f1",
        domain="clinical",
        description=(
            "Extractive QA over long clinical notes with question-answer pairs generated from the i2b2 2014 heart "
            "disease risk factor annotations; scored by token F1 and exact match. Li et al. 2022, Table 1: sample size "
            "30,731; no per-split sizes."
        ),
        splits=_unknown_splits("question-answer pairs"),
        source=EMRQA_SOURCE,
        licence=EMRQA_LICENCE,
        citation=EMRQA_CITATION,
        access="restricted",
    ),
    DatasetSpec(
        slug="openi",
        name="OpenI chest X-ray reports",
        task_type="document-classification",
        metric="roc-auc",
        domain="clinical",
        description=(
            "Multi-label detection of thoracic findings in Indiana University chest X-ray reports, scored by the "
            "sample-weighted mean ROC AUC. Li et al. 2022 fine-tune on MIMIC-CXR (PhysioNet credentialed access) and "
            "uses all 3,684 OpenI reports (Table 1) as the test set. The data itself is public."
        ),
        splits=(SplitSpec("test", 3684, "reports"),),
        source=(
            "Public download from NLM Open-i (https://openi.nlm.nih.gov/), Indiana University chest X-ray "
            "collection reports"
        ),
        licence="public download from NLM Open-i; no licence stated in the papers - check Open-i's terms before reuse",
        citation=(
            "Demner-Fushman D, Kohli MD, Rosenman MB, et al. Preparing a collection of radiology examinations for "
            "distribution and retrieval. Journal of the American Medical Informatics Association 23(2), 2016."
        ),
        labels=(
            "Cardiomegaly",
            "Edema",
            "Consolidation",
            "Pneumonia",
            "Atelectasis",
            "Pneumothorax",
            "Pleural Effusion",
        ),
        access="public",
    ),
    DatasetSpec(
        slug="mimic-aki",
        # Clinical-Longformer (Li et al. 2022, Table 4) reports F1 of AKI beside the AUC.
        companion_metrics=("accuracy", "macro-f1", "binary-f1"),
        name="MIMIC-AKI",
        task_type="document-classification",
        metric="roc-auc",
        domain="clinical",
        description=(
            "Binary prediction of acute kidney injury in critically ill patients from the clinical notes of the "
            "first 24 hours after ICU admission (label 1 = AKI); ROC AUC, with F1 also reported by Li et al. 2022. "
            "Their Table 1: 16,536 samples; no per-split sizes."
        ),
        splits=_unknown_splits("examples"),
        source=(
            "Rebuilt from MIMIC-III v1.4 notes (https://physionet.org/content/mimiciii/1.4/, PhysioNet credentialed "
            "access) with the AKI cohort definition of Li et al. 2018; no prepared copy is distributed"
        ),
        licence=PHYSIONET_LICENCE,
        citation=(
            "Li Y, Yao L, Mao C, Srivastava A, Jiang X, Luo Y. Early prediction of acute kidney injury in critical "
            "care setting using clinical notes. IEEE BIBM, 2018; notes from Johnson AEW et al. MIMIC-III, a freely "
            "accessible critical care database. Scientific Data 3, 2016."
        ),
        labels=("0", "1"),
        negative_label="0",
        access="restricted",
    ),
)


@hookimpl
def biolm_datasets() -> list[DatasetSpec]:
    """Clinical datasets of Li et al. 2022, Lewis et al. 2020 and Yang et al. 2022.

    All but OpenI need a data use agreement.
    """
    return list(with_adapters(DATASETS, all_adapters()))
