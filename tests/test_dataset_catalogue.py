"""The built-in dataset catalogue: complete, valid, faithful to BLURB's Table 3, honest about access.

The expected BLURB table below is transcribed a second time from Gu et al. 2021 (Table 3),
independently of plugins/datasets/blurb.py, so a typo in either place shows up here.
"""

from __future__ import annotations

import re

from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import DatasetSpec
from plugins.datasets import biomedical, blurb, clinical

MODULES = {"blurb": blurb, "biomedical": biomedical, "clinical": clinical}

CANONICAL_SLUGS = {
    "blurb": {
        "bc5-chem",
        "bc5-disease",
        "ncbi-disease",
        "bc2gm",
        "jnlpba",
        "ebm-pico",
        "chemprot",
        "ddi",
        "gad",
        "biosses",
        "hoc",
        "pubmedqa",
        "bioasq",
    },
    "biomedical": {"bc4chemd", "linnaeus", "s800", "eu-adr", "litcovid", "bioasq-factoid", "ohsumed"},
    "clinical": {
        "i2b2-2006-deid",
        "i2b2-2010",
        "i2b2-2010-re",
        "i2b2-2012",
        "i2b2-2014-deid",
        "n2c2-2018-ade",
        "n2c2-2018-ade-re",
        "n2c2-2019-sts",
        "mednli",
        "emrqa-medication",
        "emrqa-relation",
        "emrqa-heart-disease",
        "openi",
        "mimic-aki",
    },
}

# Gu et al. 2021, Table 3: dataset -> (train, dev, test, metric as printed). Slugs stand for the row names.
BLURB_TABLE_3 = {
    "bc5-chem": (5203, 5347, 5385, "F1 entity-level"),
    "bc5-disease": (4182, 4244, 4424, "F1 entity-level"),
    "ncbi-disease": (5134, 787, 960, "F1 entity-level"),
    "bc2gm": (15197, 3061, 6325, "F1 entity-level"),
    "jnlpba": (46750, 4551, 8662, "F1 entity-level"),
    "ebm-pico": (339167, 85321, 16364, "Macro F1 word-level"),
    "chemprot": (18035, 11268, 15745, "Micro F1"),
    "ddi": (22233, 5559, 5716, "Micro F1"),
    "gad": (4261, 534, 535, "Micro F1"),
    "biosses": (64, 16, 20, "Pearson"),
    "hoc": (1295, 186, 371, "Average Micro F1"),
    "pubmedqa": (450, 50, 500, "Accuracy"),
    "bioasq": (670, 75, 140, "Accuracy"),
}
TABLE_3_ROW_NAMES = {
    "BC5-chem": "bc5-chem",
    "BC5-disease": "bc5-disease",
    "NCBI-disease": "ncbi-disease",
    "BC2GM": "bc2gm",
    "JNLPBA": "jnlpba",
    "EBM PICO": "ebm-pico",
    "ChemProt": "chemprot",
    "DDI": "ddi",
    "GAD": "gad",
    "BIOSSES": "biosses",
    "HoC": "hoc",
    "PubMedQA": "pubmedqa",
    "BioASQ": "bioasq",
}
TABLE_3_METRIC_SLUGS = {
    "F1 entity-level": "entity-f1",
    "Macro F1 word-level": "token-macro-f1",
    "Micro F1": "micro-f1",
    "Pearson": "pearson",
    "Average Micro F1": "average-micro-f1",
    "Accuracy": "accuracy",
}
GU_ET_AL_2021 = "Domain-Specific Language Model Pretraining for Biomedical Natural Language Processing"

# Clinical sets available only under a data use agreement, and where their source must point.
DUA_SOURCES = {
    "i2b2-2006-deid": "portal.dbmi.hms.harvard.edu",
    "i2b2-2010": "portal.dbmi.hms.harvard.edu",
    "i2b2-2010-re": "portal.dbmi.hms.harvard.edu",
    "i2b2-2012": "portal.dbmi.hms.harvard.edu",
    "i2b2-2014-deid": "portal.dbmi.hms.harvard.edu",
    "n2c2-2018-ade": "portal.dbmi.hms.harvard.edu",
    "n2c2-2018-ade-re": "portal.dbmi.hms.harvard.edu",
    "n2c2-2019-sts": "portal.dbmi.hms.harvard.edu",
    "emrqa-medication": "portal.dbmi.hms.harvard.edu",
    "emrqa-relation": "portal.dbmi.hms.harvard.edu",
    "emrqa-heart-disease": "portal.dbmi.hms.harvard.edu",
    "mednli": "physionet.org",
    "mimic-aki": "physionet.org",
}


def specs_of(module) -> list[DatasetSpec]:
    return module.biolm_datasets()


def all_specs() -> list[DatasetSpec]:
    return [spec for module in MODULES.values() for spec in specs_of(module)]


def by_slug() -> dict[str, DatasetSpec]:
    return {spec.slug: spec for spec in all_specs()}


def test_every_dataset_spec_validates_and_is_fully_described():
    for spec in all_specs():
        assert isinstance(spec, DatasetSpec)
        spec.validate()
        for field in ("description", "source", "licence", "citation"):
            assert getattr(spec, field).strip(), f"{spec.slug}: {field} is empty"


def test_dataset_slugs_are_unique_across_the_three_modules():
    slugs = [spec.slug for spec in all_specs()]
    assert len(slugs) == len(set(slugs)), sorted({s for s in slugs if slugs.count(s) > 1})


def test_every_canonical_slug_is_in_the_catalogue_in_its_module():
    for module_name, expected in CANONICAL_SLUGS.items():
        provided = {spec.slug for spec in specs_of(MODULES[module_name])}
        assert provided == expected, f"{module_name}: missing {expected - provided}, extra {provided - expected}"


def test_the_catalogue_loads_through_the_plugin_manager_with_known_metrics():
    pm = get_plugin_manager(
        default_plugins=(
            "plugins.tasks.metrics",
            "plugins.tasks.task_types",
            "plugins.datasets.blurb",
            "plugins.datasets.biomedical",
            "plugins.datasets.clinical",
        ),
        load_entrypoints=False,
    )
    contributions = collect_contributions(pm)
    assert contributions.problems == []
    assert set(contributions.datasets) == set().union(*CANONICAL_SLUGS.values())
    for spec in contributions.datasets.values():
        assert spec.metric in contributions.metrics
        if spec.adapter is not None:  # OHSUMed has no adapter yet
            assert contributions.task_types[spec.task_type].schema == spec.adapter.schema
        assert spec.task_type in contributions.task_types


def test_domains_follow_the_module_a_dataset_lives_in():
    for module_name, module in MODULES.items():
        expected = "clinical" if module_name == "clinical" else "biomedical"
        for spec in specs_of(module):
            assert spec.domain == expected, spec.slug


def test_blurb_split_sizes_equal_table_3_of_gu_et_al():
    datasets = by_slug()
    for slug, (train, dev, test, _metric) in BLURB_TABLE_3.items():
        sizes = {split.name: split.size for split in datasets[slug].splits}
        assert sizes == {"train": train, "dev": dev, "test": test}, slug


def test_blurb_metrics_are_the_table_3_evaluation_metrics():
    datasets = by_slug()
    for slug, (*_sizes, printed_metric) in BLURB_TABLE_3.items():
        assert datasets[slug].metric == TABLE_3_METRIC_SLUGS[printed_metric], slug


def test_blurb_split_units_are_the_instances_table_3_counts():
    units = {
        "ner": "mentions",
        "pico": "PICO elements",
        "relation-extraction": "relations",
        "sentence-similarity": "pairs",
        "document-classification": "documents",
        "question-answering": "questions",
    }
    for spec in specs_of(blurb):
        assert {split.unit for split in spec.splits} == {units[spec.task_type]}, spec.slug
        assert spec.access == "public"


def test_the_expected_blurb_table_matches_the_text_of_gu_et_al_2021(official_data):
    text = official_data.paper(GU_ET_AL_2021).read_text(encoding="utf-8")  # in the papers' folder (BIOLM_PAPERS_DIR)
    block = text.split("Dataset\tTask\tTrain\tDev\tTest\tEvaluation Metrics", 1)[1].split("Table 3.", 1)[0]
    rows = {}
    for line in block.strip().splitlines():
        name, _task, train, dev, test, metric = line.split("\t")
        rows[TABLE_3_ROW_NAMES[name]] = (int(train), int(dev), int(test), metric.strip())
    assert rows == BLURB_TABLE_3


def test_blurb_labels_are_those_of_the_shared_data_files():
    datasets = by_slug()
    for slug in ("bc5-chem", "bc5-disease", "ncbi-disease", "bc2gm", "jnlpba"):
        assert set(datasets[slug].labels) == {"B", "I", "O"}, slug
    assert set(datasets["ebm-pico"].labels) == {"I-PAR", "I-INT", "I-OUT", "O"}
    assert set(datasets["chemprot"].labels) == {"CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"}
    assert set(datasets["ddi"].labels) == {"DDI-false", "DDI-mechanism", "DDI-effect", "DDI-advise", "DDI-int"}
    assert set(datasets["gad"].labels) == {"0", "1"}
    assert len(datasets["hoc"].labels) == 10
    assert datasets["biosses"].labels == ()
    assert set(datasets["pubmedqa"].labels) == {"yes", "no", "maybe"}
    assert set(datasets["bioasq"].labels) == {"yes", "no"}


def test_ddi_is_marked_non_commercial():
    assert "CC BY-NC 4.0" in by_slug()["ddi"].licence


def test_clinical_datasets_behind_a_data_use_agreement_are_restricted_and_say_where_to_get_them():
    datasets = by_slug()
    for slug, where in DUA_SOURCES.items():
        spec = datasets[slug]
        assert spec.access == "restricted", slug
        assert where in spec.source, f"{slug}: source should point to {where}"
        assert re.search(r"agreement|credentialed", spec.source, re.IGNORECASE), slug
        assert re.search(r"agreement|licen[cs]e", spec.licence, re.IGNORECASE), slug


def test_openi_is_the_only_public_clinical_dataset():
    public = {spec.slug for spec in specs_of(clinical) if spec.access == "public"}
    assert public == {"openi"}
    assert set(DUA_SOURCES) | public == CANONICAL_SLUGS["clinical"]
    assert "public" in by_slug()["openi"].source.lower()


def test_split_sizes_the_papers_do_not_give_are_unknown_rather_than_invented():
    datasets = by_slug()
    for slug in ("bioasq-factoid", "ohsumed", "mednli", "i2b2-2010", "emrqa-medication", "mimic-aki"):
        assert all(split.size is None for split in datasets[slug].splits), slug
    assert [(s.name, s.size) for s in datasets["openi"].splits] == [("test", 3684)]
    assert {s.name: s.size for s in datasets["bc4chemd"].splits} == {"train": 29478, "dev": 29486, "test": 25346}
    assert {s.name: s.size for s in datasets["litcovid"].splits} == {"train": 24960, "dev": 6239, "test": 2500}
