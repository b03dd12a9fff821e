"""The GatorTron and Clinical-Longformer benchmarks and their published results.

The spot cells below are a second transcription of the papers' tables, typed independently of
the JSON files and written as the papers print them (0.8996, 0.240), so a slip in either the
digits or the x100 scaling shows up as a mismatch. Every model has at least one cell per table,
spread across the columns.
"""

from __future__ import annotations

from decimal import Decimal

import pluggy
import pytest
from published_checks import YANG_ET_AL_2022, check_size_statements, sizes_of

from biolm import hookspecs
from biolm.aggregation import aggregate
from biolm.specs import BenchmarkSpec
from plugins.benchmarks import clinical_longformer, gatortron
from plugins.datasets import biomedical, clinical
from plugins.tasks.metrics import METRICS

# --- second transcription: (model slug, entry key, value as printed) -------------------------

GATORTRON_TABLE_1 = [
    ("biobert", "i2b2-2012-recall", "0.8037"),
    ("biobert", "n2c2-2018-ade-re-f1", "0.9555"),
    ("clinicalbert", "i2b2-2010-f1", "0.8780"),
    ("clinicalbert", "n2c2-2018-ade-precision", "0.8592"),
    ("biomegatron", "i2b2-2010-recall", "0.8761"),
    ("biomegatron", "n2c2-2018-ade-re-precision", "0.9711"),
    ("gatortron-base-quarter-data", "i2b2-2012-f1", "0.7755"),
    ("gatortron-base-quarter-data", "n2c2-2018-ade-re-recall", "0.9457"),
    ("gatortron-base", "i2b2-2010-precision", "0.8748"),
    ("gatortron-base", "n2c2-2018-ade-f1", "0.8896"),
    ("gatortron-medium", "i2b2-2012-precision", "0.7812"),
    ("gatortron-medium", "n2c2-2018-ade-recall", "0.9035"),
    ("gatortron-large", "i2b2-2010-f1", "0.8996"),
    ("gatortron-large", "i2b2-2012-recall", "0.8333"),
    ("gatortron-large", "n2c2-2018-ade-re-f1", "0.9627"),
]

GATORTRON_TABLE_2 = [
    ("biobert", "mednli", "0.8050"),
    ("biobert", "emrqa-relation-em", "0.8361"),
    ("clinicalbert", "n2c2-2019-sts", "0.8787"),
    ("clinicalbert", "emrqa-medication-em", "0.2406"),
    ("biomegatron", "emrqa-medication-f1", "0.7231"),
    ("biomegatron", "emrqa-relation-em", "0.879"),
    ("gatortron-base-quarter-data", "mednli", "0.8643"),
    ("gatortron-base-quarter-data", "emrqa-relation-f1", "0.9390"),
    ("gatortron-base", "emrqa-medication-f1", "0.7181"),
    ("gatortron-base", "emrqa-relation-em", "0.9029"),
    ("gatortron-medium", "n2c2-2019-sts", "0.8903"),
    ("gatortron-medium", "emrqa-medication-em", "0.3018"),
    ("gatortron-large", "mednli", "0.9020"),
    ("gatortron-large", "emrqa-relation-em", "0.9310"),
]

LONGFORMER_TABLE_2 = [
    ("bert", "emrqa-medication-em", "0.240"),
    ("bert", "emrqa-relation-f1", "0.924"),
    ("biobert", "emrqa-heart-disease-em", "0.647"),
    ("clinicalbert", "emrqa-medication-f1", "0.698"),
    ("clinical-longformer", "emrqa-relation-em", "0.911"),
    ("clinical-longformer", "emrqa-heart-disease-f1", "0.734"),
    ("clinical-bigbird", "emrqa-medication-em", "0.300"),
    ("clinical-bigbird", "emrqa-heart-disease-f1", "0.711"),
]

LONGFORMER_TABLE_3 = [
    ("bert", "i2b2-2012", "0.759"),
    ("biobert", "i2b2-2010", "0.865"),
    ("clinicalbert", "i2b2-2006-deid", "0.951"),
    ("clinical-longformer", "i2b2-2014-deid", "0.961"),
    ("clinical-bigbird", "i2b2-2012", "0.787"),
]

LONGFORMER_TABLE_4 = [
    ("bert", "mimic-aki-f1", "0.293"),
    ("biobert", "ohsumed", "0.771"),
    ("clinicalbert", "mimic-aki-auc", "0.738"),
    ("clinical-longformer", "openi", "0.977"),
    ("clinical-longformer", "mednli", "0.842"),
    ("clinical-bigbird", "mednli", "0.827"),
    ("clinical-bigbird", "mimic-aki-f1", "0.480"),
]

GATORTRON_MODELS = {
    "biobert",
    "clinicalbert",
    "biomegatron",
    "gatortron-base-quarter-data",
    "gatortron-base",
    "gatortron-medium",
    "gatortron-large",
}
LONGFORMER_MODELS = {"bert", "biobert", "clinicalbert", "clinical-longformer", "clinical-bigbird"}
CLINICALBERT_NA = {"i2b2-2010-precision", "i2b2-2010-recall", "i2b2-2012-precision", "i2b2-2012-recall"}


@pytest.fixture(scope="module")
def gt() -> BenchmarkSpec:
    return gatortron.gatortron_benchmark()


@pytest.fixture(scope="module")
def cl() -> BenchmarkSpec:
    return clinical_longformer.clinical_longformer_benchmark()


def _scores(spec: BenchmarkSpec, slug: str) -> dict[str, float]:
    return dict(next(m for m in spec.published if m.slug == slug).scores)


def _x100(printed: str) -> float:
    return float(Decimal(printed) * 100)


# --- specs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [gatortron.gatortron_benchmark, clinical_longformer.clinical_longformer_benchmark])
def test_spec_validates_and_uses_known_metrics_and_datasets(build) -> None:
    spec = build()
    spec.validate()
    metric_slugs = {m.slug for m in METRICS}
    dataset_slugs = {d.slug for d in (*clinical.biolm_datasets(), *biomedical.biolm_datasets())}
    for entry in spec.entries:
        assert entry.metric in metric_slugs, entry
        assert entry.dataset in dataset_slugs, entry
    pairs = [(e.dataset, e.metric, e.variant) for e in spec.entries]
    assert len(pairs) == len(set(pairs)), "two entries would store results under the same dataset/metric"
    assert spec.aggregation.version == "1"
    assert spec.aggregation.primary == "mean-of-tasks"


def test_hooks_register_with_pluggy() -> None:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(gatortron)
    pm.register(clinical_longformer)
    slugs = sorted(spec.slug for specs in pm.hook.biolm_benchmarks() for spec in specs)
    assert slugs == ["clinical-longformer", "gatortron"]


def test_gatortron_shape(gt: BenchmarkSpec) -> None:
    assert gt.name == "GatorTron clinical tasks"
    assert gt.precision == 2
    assert len(gt.entries) == 18  # 12 columns of Table 1, 6 of Table 2
    groups = {g.slug: g.members for g in gt.aggregation.groups}
    assert groups == {
        "clinical-concept-extraction": ("i2b2-2010-f1", "i2b2-2012-f1", "n2c2-2018-ade-f1"),
        "medical-relation-extraction": ("n2c2-2018-ade-re-f1",),
        "sts": ("n2c2-2019-sts",),
        "nli": ("mednli",),
        "mqa": ("emrqa-medication-f1", "emrqa-medication-em", "emrqa-relation-f1", "emrqa-relation-em"),
    }
    (summary,) = gt.aggregation.summaries
    assert (summary.slug, summary.method) == ("mean-of-tasks", "mean_of_groups")
    assert set(summary.members) == set(groups)


def test_clinical_longformer_shape(cl: BenchmarkSpec) -> None:
    assert cl.name == "Clinical-Longformer clinical tasks"
    assert cl.precision == 1
    assert len(cl.entries) == 15
    groups = {g.slug: set(g.members) for g in cl.aggregation.groups}
    assert set(groups) == {"question-answering", "ner", "document-classification"}
    assert "mednli" in groups["document-classification"]
    assert sum(len(m) for m in groups.values()) == 15
    (summary,) = cl.aggregation.summaries
    assert (summary.slug, summary.method) == ("mean-of-tasks", "mean_of_groups")


@pytest.mark.parametrize("module", [gatortron, clinical_longformer])
def test_overall_summary_is_documented_as_platform_convention(module) -> None:
    spec = module.biolm_benchmarks()[0]
    for text in (module.__doc__, spec.description):
        assert "platform's own convention" in text
        assert "not the paper's" in text
    assert all(not m.reported_summaries for m in spec.published)


# --- transcription ------------------------------------------------------------------------------


def test_every_gatortron_row_names_the_sentence_or_table_of_yang_et_al_2022_that_sizes_it(gt: BenchmarkSpec) -> None:
    sources = {slug: source for slug, (_, source) in sizes_of(gt).items()}
    assert all(source.startswith("Yang et al. 2022, ") for source in sources.values()), sources
    assert (
        sources["gatortron-base"]
        == sources["gatortron-medium"]
        == sources["gatortron-large"]
        == ("Yang et al. 2022, Table 3")
    )
    assert "345 million" in sources["biobert"] and "1.2 billion" in sources["biomegatron"]
    assert sizes_of(gt)["biomegatron"][0] == 1_200_000_000


def test_the_sizes_the_clinical_benchmarks_cite_are_stated_in_yang_et_al_2022(official_data) -> None:
    check_size_statements(official_data, YANG_ET_AL_2022)


def test_published_models(gt: BenchmarkSpec, cl: BenchmarkSpec) -> None:
    assert {m.slug for m in gt.published} == GATORTRON_MODELS
    assert {m.slug for m in cl.published} == LONGFORMER_MODELS
    params = {m.slug: m.parameters for m in gt.published}
    assert params["gatortron-base"] == params["gatortron-base-quarter-data"] == 345_000_000
    assert params["gatortron-medium"] == 3_900_000_000
    assert params["gatortron-large"] == 8_900_000_000
    assert params["clinicalbert"] == 110_000_000
    arch = {m.slug: m.architecture for m in cl.published}
    assert arch == {
        "bert": "bert",
        "biobert": "bert",
        "clinicalbert": "bert",
        "clinical-longformer": "longformer",
        "clinical-bigbird": "big-bird",
    }
    # Li et al. 2022 state no counts, nor BERT's or BioBERT's size (base or large); only ClinicalBERT's
    # 110 million is stated, by Yang et al. 2022.
    assert sizes_of(cl) == {
        "bert": (None, ""),
        "biobert": (None, ""),
        "clinicalbert": (110_000_000, "Yang et al. 2022, Introduction and Methods (ClinicalBERT, 110 million)"),
        "clinical-longformer": (None, ""),
        "clinical-bigbird": (None, ""),
    }
    lengths = {m.slug: m.max_sequence_length for m in cl.published}
    assert lengths["clinical-longformer"] == lengths["clinical-bigbird"] == 4096
    assert lengths["bert"] == 512


@pytest.mark.parametrize("slug, key, printed", GATORTRON_TABLE_1 + GATORTRON_TABLE_2)
def test_gatortron_spot_cells(gt: BenchmarkSpec, slug: str, key: str, printed: str) -> None:
    assert _scores(gt, slug)[key] == _x100(printed)


@pytest.mark.parametrize("slug, key, printed", LONGFORMER_TABLE_2 + LONGFORMER_TABLE_3 + LONGFORMER_TABLE_4)
def test_clinical_longformer_spot_cells(cl: BenchmarkSpec, slug: str, key: str, printed: str) -> None:
    assert _scores(cl, slug)[key] == _x100(printed)


def test_spot_cells_cover_every_model_in_every_table() -> None:
    for table, models in [
        (GATORTRON_TABLE_1, GATORTRON_MODELS),
        (GATORTRON_TABLE_2, GATORTRON_MODELS),
        (LONGFORMER_TABLE_2, LONGFORMER_MODELS),
        (LONGFORMER_TABLE_3, LONGFORMER_MODELS),
        (LONGFORMER_TABLE_4, LONGFORMER_MODELS),
    ]:
        assert {slug for slug, _, _ in table} == models


def test_values_keep_the_printed_digits(gt: BenchmarkSpec, cl: BenchmarkSpec) -> None:
    for spec in (gt, cl):
        for model in spec.published:
            for key, value in model.scores.items():
                assert 0 <= value <= 100, (model.slug, key)
                assert round(value, spec.precision) == value, (model.slug, key, value)


def test_only_na_cells_are_missing(gt: BenchmarkSpec, cl: BenchmarkSpec) -> None:
    for spec in (gt, cl):
        for model in spec.published:
            missing = set(spec.entry_keys()) - set(model.scores)
            expected = CLINICALBERT_NA if (spec.slug, model.slug) == ("gatortron", "clinicalbert") else set()
            assert missing == expected, (spec.slug, model.slug)


# --- aggregation --------------------------------------------------------------------------------


def test_gatortron_large_mean_of_tasks(gt: BenchmarkSpec) -> None:
    result = aggregate(gt, _scores(gt, "gatortron-large"))
    concept = (89.96 + 80.91 + 90.00) / 3
    mqa = (74.08 + 31.55 + 97.19 + 93.10) / 4
    assert result.groups["clinical-concept-extraction"] == pytest.approx(concept)
    assert result.groups["mqa"] == pytest.approx(mqa)
    assert result.score == pytest.approx((concept + 96.27 + 88.96 + 90.20 + mqa) / 5)
    assert result.complete


def test_clinical_longformer_mean_of_tasks(cl: BenchmarkSpec) -> None:
    result = aggregate(cl, _scores(cl, "clinical-longformer"))
    qa = (30.2 + 71.6 + 91.1 + 94.8 + 69.8 + 73.4) / 6
    ner = (97.4 + 88.7 + 80.0 + 96.1) / 4
    dc = (76.6 + 97.7 + 76.2 + 48.4 + 84.2) / 5
    assert result.score == pytest.approx((qa + ner + dc) / 3)


def test_every_complete_model_gets_a_summary(gt: BenchmarkSpec, cl: BenchmarkSpec) -> None:
    for spec in (gt, cl):
        for model in spec.published:
            result = aggregate(spec, model.scores)
            assert result.score is not None, (spec.slug, model.slug)
            assert result.summaries["mean-of-tasks"] == result.score


def test_clinicalbert_na_cells_do_not_block_the_summary(gt: BenchmarkSpec) -> None:
    # ClinicalBERT's NA cells are precision/recall only; the F1-based groups are complete.
    result = aggregate(gt, _scores(gt, "clinicalbert"))
    assert set(result.missing) == CLINICALBERT_NA
    assert not result.complete
    assert all(v is not None for v in result.groups.values())
    assert result.summaries["mean-of-tasks"] is not None


@pytest.mark.parametrize(
    "benchmark, model, drop, group",
    [
        ("gt", "clinicalbert", "i2b2-2010-f1", "clinical-concept-extraction"),
        ("gt", "gatortron-large", "emrqa-relation-em", "mqa"),
        ("cl", "clinical-bigbird", "mimic-aki-f1", "document-classification"),
        ("cl", "bert", "i2b2-2014-deid", "ner"),
    ],
)
def test_missing_headline_number_gives_no_summary(request, benchmark, model, drop, group) -> None:
    spec = request.getfixturevalue(benchmark)
    scores = _scores(spec, model)
    del scores[drop]
    result = aggregate(spec, scores)
    assert result.groups[group] is None
    assert result.summaries["mean-of-tasks"] is None
    assert result.score is None
