"""Honest ranks from sufficient statistics: the fast bootstrap gives exactly what scoring each resample gives.

Two levels. Each decomposable metric's per-example statistics, weighted by how often a resample
drew each example (``np.bincount`` of the shared resample indices), must give the metric itself
computed on that resample's examples: exactly for counts, including resamples with no gold and no
predicted entity. The vectorised Pearson and ROC AUC must give the metric on each resample to
1e-9, undefined (NaN) on exactly the resamples where the metric raises. Then, end to end,
:func:`workers.engine.bootstrap.resampled_values` must give the same vector as its exact path
(``exact=True``: the formulation's ``score`` on each resample's rows) for every formulation, with
several seeds and under cross-validation, on synthetic test sets of real size and, where the
official files are present, on BC5-chem's real test set.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from checkpoints import demo_texts, tiny_bert
from contract_documents import results_document

from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.contract import ResultsDocument
from biolm.dataset_io import LoadedDataset, fingerprint_of, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.significance import resample_indices
from workers.engine import bootstrap
from workers.engine.bootstrap import resampled_values
from workers.engine.metrics import classification, qa, tagging
from workers.engine.metrics.common import Sufficient
from workers.engine.run_settings import FinetuneSpec

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"
RESAMPLES = 200  # metric level: cheap, so many resamples
ENGINE_RESAMPLES = 25  # end to end: the exact path scores each of these with score()


def draws(n: int, key: str = "statistics", resamples: int = RESAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """The shared resample indices of ``n`` examples and, per resample, how often it drew each one."""
    drawn = resample_indices(key, n, resamples)
    return drawn, np.stack([np.bincount(row, minlength=n) for row in drawn])


def each_resample(metric, gold, pred, drawn, **options) -> np.ndarray:
    """The metric itself on every resample's examples; NaN where it raises (undefined)."""
    values = []
    for row in drawn:
        try:
            values.append(metric([gold[i] for i in row], [pred[i] for i in row], **options))
        except ValueError:
            values.append(math.nan)
    return np.array(values)


# -- synthetic predictions ----------------------------------------------------------------------------


def tagged_sentences(n: int, seed: int, types: tuple[str, ...] = ("Chemical", "Disease")) -> list[list[str]]:
    """``n`` IOB2 sentences of 0 to 14 words, a fifth of them without any entity."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        tags, length = [], rng.randrange(15)
        while len(tags) < length:
            if rng.random() < 0.15 and len(sentences) % 5:
                type_ = rng.choice(types)
                span = rng.randrange(1, 4)
                tags += [f"B-{type_}"] + [f"I-{type_}"] * (span - 1)
            else:
                tags.append("O")
        sentences.append(tags[:length])
    return sentences


def perturbed_tags(gold: list[list[str]], seed: int, rate: float = 0.05) -> list[list[str]]:
    """Gold with about ``rate`` of its words changed: boundaries moved, types swapped, entities missed or invented."""
    rng = random.Random(seed)
    choices = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    return [[rng.choice(choices) if rng.random() < rate else tag for tag in sentence] for sentence in gold]


def labels(n: int, seed: int, classes: list, noise: float = 0.2, weights: list[float] | None = None) -> tuple:
    """(gold, predictions): ``n`` labels drawn with ``weights``, each prediction wrong with chance ``noise``."""
    rng = random.Random(seed)
    gold = rng.choices(classes, weights=weights, k=n)
    return gold, [rng.choice(classes) if rng.random() < noise else g for g in gold]


def label_sets(n: int, seed: int, names: list[str]) -> tuple[list[frozenset], list[frozenset]]:
    """Multi-label rows (some empty) and predictions with one label flipped in a third of them."""
    rng = random.Random(seed)
    gold = [frozenset(x for x in names if rng.random() < 0.25) for _ in range(n)]
    return gold, [g ^ {rng.choice(names)} if rng.random() < 0.3 else g for g in gold]


def pico_words(n: int, seed: int, sets: bool = False) -> tuple[list, list]:
    """EBM-PICO-like sentences: IO tags per word, or (``sets``) sets of elements per word."""
    rng = random.Random(seed)
    tags = ["O", "O", "O", "I-PAR", "I-INT", "I-OUT"]
    gold = [[rng.choice(tags) for _ in range(rng.randrange(12))] for _ in range(n)]
    pred = [[rng.choice(tags) if rng.random() < 0.2 else t for t in s] for s in gold]
    if not sets:
        return gold, pred
    as_set = {"O": frozenset(), **{t: frozenset({t[2:]}) for t in tags if t != "O"}}
    both = frozenset({"PAR", "INT"})
    gold_sets = [[both if rng.random() < 0.1 else as_set[t] for t in s] for s in gold]
    return gold_sets, [[as_set[t] for t in s] for s in pred]


# -- metric level: decomposable metrics --------------------------------------------------------------


def _answers(n: int = 300, seed: int = 26):
    """SQuAD-style gold (one or two acceptable answers) and predictions overlapping them in part."""
    rng = random.Random(seed)
    words = ["aspirin", "daily", "81", "mg", "the", "chest", "pain", "metformin", "twice", "a"]
    gold = [[" ".join(rng.choices(words, k=rng.randrange(1, 4))) for _ in range(rng.randrange(1, 3))] for _ in range(n)]
    pred = [g[0] if rng.random() < 0.5 else " ".join(rng.choices(words, k=rng.randrange(1, 4))) for g in gold]
    return gold, pred


def _ranked(n: int = 300, seed: int = 27):
    """BioASQ-style synonyms per question and five ranked answers, the right one anywhere or nowhere."""
    rng = random.Random(seed)
    gold = [[f"gene{i}", f"GENE{i}"] for i in range(n)]
    pred = []
    for i in range(n):
        answers = [f"other{i}-{j}" for j in range(5)]
        where = rng.randrange(7)
        if where < 5:
            answers[where] = f"Gene{i}"
        pred.append(answers)
    return gold, pred


def _entities(n: int = 300):
    gold = tagged_sentences(n, 1)
    return gold, perturbed_tags(gold, 2)


def _relations(n: int = 500):
    return labels(n, 3, ["CPR:3", "CPR:4", "CPR:9", "false"], weights=[1, 1, 1, 5])


DECOMPOSABLE = {
    "entity-f1": (tagging.entity_f1, _entities, {}),
    "entity-precision": (tagging.entity_precision, _entities, {}),
    "entity-recall": (tagging.entity_recall, _entities, {}),
    "entity-f1-strict-iob2": (tagging.entity_f1, _entities, {"mode": "strict", "scheme": "IOB2"}),
    "token-macro-f1": (tagging.token_macro_f1, lambda: pico_words(300, 4), {}),
    "token-macro-f1-labels": (tagging.token_macro_f1, lambda: pico_words(300, 4), {"labels": ["PAR", "INT", "OUT"]}),
    "token-macro-f1-sets": (tagging.token_macro_f1, lambda: pico_words(300, 5, sets=True), {}),
    "micro-f1-relations": (classification.micro_f1, _relations, {"negative": "false"}),
    "precision-relations": (classification.precision, _relations, {"negative": "false"}),
    "recall-relations": (classification.recall, _relations, {"negative": "false"}),
    "micro-f1-label-sets": (classification.micro_f1, lambda: label_sets(300, 6, list("abcde")), {}),
    "binary-f1": (classification.binary_f1, lambda: labels(300, 7, ["0", "1"], weights=[3, 1]), {"negative": "0"}),
    "binary-f1-ints": (classification.binary_f1, lambda: labels(300, 8, [0, 1]), {}),
    "macro-f1-labels": (
        classification.macro_f1,
        _relations,
        {"labels": ["CPR:3", "CPR:4", "CPR:9", "false"], "negative": "false"},
    ),
    "accuracy": (classification.accuracy, lambda: labels(300, 9, ["yes", "no", "maybe"]), {}),
    "accuracy-label-sets": (classification.accuracy, lambda: label_sets(300, 10, list("abc")), {}),
    "average-micro-f1": (classification.average_micro_f1, lambda: label_sets(300, 11, list("abcdefghij")), {}),
    "exact-match": (qa.exact_match, _answers, {}),
    "strict-accuracy": (qa.strict_accuracy, _ranked, {}),
    "lenient-accuracy": (qa.lenient_accuracy, _ranked, {}),
}
# Question scores that are fractions: their sums run in another order than the metric's, so equal to rounding.
ROUNDED = {"squad-f1": (qa.squad_f1, _answers, {}), "mrr": (qa.mrr, _ranked, {})}


@pytest.mark.parametrize("case", sorted(DECOMPOSABLE))
def test_summed_statistics_of_a_resample_are_exactly_the_metric_on_that_resample(case):
    metric, data, options = DECOMPOSABLE[case]
    gold, pred = data()
    drawn, counts = draws(len(gold))
    sufficient = metric.sufficient_statistics(gold, pred, **options)
    assert sufficient.total() == metric(gold, pred, **options)  # the metric is its statistics' formula
    fast = sufficient.resampled(counts)
    np.testing.assert_array_equal(fast, each_resample(metric, gold, pred, drawn, **options))
    assert len(set(fast.tolist())) > 20  # the resamples really differ


@pytest.mark.parametrize("case", sorted(ROUNDED))
def test_summed_fractional_question_scores_of_a_resample_are_the_metric_to_rounding(case):
    metric, data, options = ROUNDED[case]
    gold, pred = data()
    drawn, counts = draws(len(gold))
    sufficient = metric.sufficient_statistics(gold, pred, **options)
    assert sufficient.total() == pytest.approx(metric(gold, pred, **options), abs=1e-12)
    exact = each_resample(metric, gold, pred, drawn, **options)
    np.testing.assert_allclose(sufficient.resampled(counts), exact, rtol=0, atol=1e-12)
    assert len(set(exact.tolist())) > 20


def test_resamples_without_any_gold_or_predicted_entity_score_as_the_metric_does():
    gold = [["O", "O"], [], ["O"], ["B-Chemical", "I-Chemical", "O"]]
    pred = [["O", "O"], [], ["O"], ["B-Chemical", "O", "O"]]
    drawn, counts = draws(len(gold), "empty-entities")
    for metric in (tagging.entity_f1, tagging.entity_precision, tagging.entity_recall):
        fast = metric.sufficient_statistics(gold, pred).resampled(counts)
        np.testing.assert_array_equal(fast, each_resample(metric, gold, pred, drawn))
    none = [row for row in drawn if 3 not in row]
    assert none and {tagging.entity_f1([gold[i] for i in row], [pred[i] for i in row]) for row in none} == {0.0}


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        pytest.param(*labels(400, 12, ["yes", "no", "maybe", "rare"], weights=[10, 10, 10, 1]), id="single-label"),
        pytest.param(*label_sets(400, 13, list("abcdefghijkl")), id="label-sets"),
        pytest.param(*labels(12, 14, ["yes", "no", "maybe", "rare"], weights=[10, 10, 10, 1]), id="classes-missing"),
    ],
)
def test_macro_f1_without_labels_averages_the_classes_each_resample_saw(gold, pred):
    drawn, counts = draws(len(gold), "macro")
    fast = classification.macro_f1.sufficient_statistics(gold, pred).resampled(counts)
    # the mean runs over the classes present, in another order than the metric's: equal to rounding
    np.testing.assert_allclose(fast, each_resample(classification.macro_f1, gold, pred, drawn), rtol=0, atol=1e-12)


def test_options_under_which_a_metric_does_not_decompose_leave_it_to_the_exact_path():
    gold, pred = label_sets(50, 15, list("abc"))
    assert classification.average_micro_f1.sufficient_statistics(gold, pred, definition="blue") is None
    with pytest.raises(ValueError, match="positive"):  # three classes, none said negative: undefined, not guessed
        classification.micro_f1.sufficient_statistics(*labels(50, 16, ["a", "b", "c"]))


# -- metric level: vectorised, non-decomposable metrics -----------------------------------------------


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        pytest.param([1.0, 1.0, 1.0, 3.0, 1.0], [0.5, 1.5, 2.0, 3.5, 0.5], id="constant-gold-on-some-resamples"),
        pytest.param([1.0, 2.0, 2.5, 4.0, 0.5], [2.0, 2.0, 2.0, 2.0, 1.0], id="constant-predictions-on-some"),
        pytest.param(
            list(np.random.default_rng(17).uniform(0, 5, 400)),
            list(np.random.default_rng(18).uniform(0, 5, 400)),
            id="biosses-like-400",
        ),
    ],
)
def test_vectorised_pearson_is_pearson_on_each_resample_and_undefined_where_it_raises(gold, pred):
    drawn, _ = draws(len(gold), "pearson")
    fast = classification.pearson.resampled(gold, pred, drawn)
    exact = each_resample(classification.pearson, gold, pred, drawn)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(exact))
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-9)
    if len(gold) < 10:  # the small cases really take the undefined and the constant branches
        assert np.isnan(exact).any() or (exact == 0.0).any()


def test_vectorised_roc_auc_of_scores_with_ties_is_exactly_roc_auc_on_each_resample():
    rng = np.random.default_rng(19)
    gold = [str(x) for x in rng.integers(0, 2, 300)]
    scores = np.round(rng.normal(size=300) + np.array([g == "1" for g in gold]), 1)  # many ties
    drawn, _ = draws(300, "auc")
    fast = classification.roc_auc.resampled(gold, scores, drawn, positive="1")
    np.testing.assert_array_equal(fast, each_resample(classification.roc_auc, gold, scores, drawn, positive="1"))
    few = ["1", "0", "0", "0"]  # resamples drawing only negatives: undefined
    drawn, _ = draws(4, "auc-few")
    fast = classification.roc_auc.resampled(few, [0.3, 0.1, 0.3, 0.2], drawn, positive="1")
    exact = each_resample(classification.roc_auc, few, [0.3, 0.1, 0.3, 0.2], drawn, positive="1")
    np.testing.assert_array_equal(fast, exact)
    assert np.isnan(exact).any() and not np.isnan(exact).all()


@pytest.mark.parametrize("average", ["weighted", "macro"])
def test_vectorised_multi_label_roc_auc_is_roc_auc_on_each_resample(average):
    rng = np.random.default_rng(20)
    gold = (rng.random((60, 5)) < [0.5, 0.3, 0.1, 0.05, 0.02]).astype(int)  # rare labels: some resamples lack them
    scores = np.round(gold + rng.normal(size=gold.shape), 1)
    drawn, _ = draws(60, "auc-multi")
    fast = classification.roc_auc.resampled(gold, scores, drawn, average=average)
    exact = each_resample(classification.roc_auc, gold, scores, drawn, average=average)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(exact))
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-9)


# -- end to end: resampled_values, fast against exact --------------------------------------------------


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600)


def loaded(spec, rows: list[dict]) -> LoadedDataset:
    splits = {"test": rows}
    return LoadedDataset(spec, splits, sorted(spec.labels), fingerprint_of(splits))


def job(tokenizer_dir: Path, dataset: str, predictions: dict[str, list], **options) -> ResultsDocument:
    spec = FinetuneSpec.build(model=tokenizer_dir, dataset=dataset, out=tokenizer_dir / "out", load_entrypoints=False)
    return ResultsDocument.from_json(
        results_document(spec.job, dict.fromkeys(predictions), predictions=predictions, **options)
    )


def fast_and_exact(results, tokenizer_dir, data, metric, key, resamples=ENGINE_RESAMPLES):
    fast = resampled_values(results, tokenizer_dir, data, data, metric, key, resamples)
    exact = resampled_values(results, tokenizer_dir, data, data, metric, key, resamples, exact=True)
    return fast, exact


def demo_rows(slug: str) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "_where"} for row in read_canonical_jsonl(DEMO / slug)["test"]]


def test_entity_scores_of_a_large_ner_test_set_with_five_seeds_equal_the_exact_path(contributions, tokenizer_dir):
    tags = [[t[0] if t != "O" else t for t in s] for s in tagged_sentences(1500, 21)]  # demo-ner is untyped B/I/O
    rows = [{"id": f"s{i}", "tokens": [f"w{j}" for j in range(len(t))], "tags": t} for i, t in enumerate(tags)]
    predictions = {str(seed): [[t[0] if t != "O" else t for t in s] for s in perturbed_tags(tags, seed)]
                   for seed in range(42, 47)}  # fmt: skip
    results = job(tokenizer_dir, "demo-ner", predictions)
    data = loaded(contributions.datasets["demo-ner"], rows)
    for metric in ("entity-f1", "entity-precision", "entity-recall"):
        fast, exact = fast_and_exact(results, tokenizer_dir, data, metric, "ner-1500")
        np.testing.assert_array_equal(fast, exact, err_msg=metric)


def test_word_level_macro_f1_of_pico_equals_the_exact_path(contributions, tokenizer_dir):
    rows = demo_rows("demo-pico")
    rng = random.Random(22)
    elements = ["O", "I-PAR", "I-INT", "I-OUT"]
    predictions = {str(seed): [[rng.choice(elements) if rng.random() < 0.2 else t for t in r["tags"]] for r in rows]
                   for seed in (42, 43)}  # fmt: skip
    results = job(tokenizer_dir, "demo-pico", predictions)
    fast, exact = fast_and_exact(results, tokenizer_dir, loaded(contributions.datasets["demo-pico"], rows),
                                 "token-macro-f1", "demo-pico")  # fmt: skip
    np.testing.assert_array_equal(fast, exact)


@pytest.mark.parametrize("metric", ["micro-f1", "accuracy", "macro-f1"])
def test_relation_scores_under_cross_validation_equal_the_exact_path(contributions, tokenizer_dir, metric):
    rows = demo_rows("demo-relation")
    folds = {2: rows[:30], 3: rows[30:]}
    classes = ["CPR:3", "CPR:4", "CPR:9", "false"]
    rng = random.Random(23)
    predictions = {
        f"fold{fold}-seed{seed}": [rng.choice(classes) if rng.random() < 0.3 else r["label"] for r in fold_rows]
        for fold, fold_rows in folds.items()
        for seed in (41, 42, 43)
    }
    cross_validation = {"folds": 3, "selection_fold": 1, "reported_folds": [2, 3]}
    results = job(tokenizer_dir, "demo-relation", predictions, cross_validation=cross_validation, statistic="median")
    data = {fold: loaded(contributions.datasets["demo-relation"], fold_rows) for fold, fold_rows in folds.items()}
    fast = resampled_values(results, tokenizer_dir, data, data, metric, "demo-relation", ENGINE_RESAMPLES)
    exact = resampled_values(results, tokenizer_dir, data, data, metric, "demo-relation", ENGINE_RESAMPLES, exact=True)
    np.testing.assert_array_equal(fast, exact)


@pytest.mark.parametrize(
    ("dataset", "metric"),
    [
        ("demo-doc-classification", "average-micro-f1"),
        ("demo-doc-classification", "accuracy"),
        ("demo-doc-classification", "macro-f1"),
        ("hoc", "micro-f1"),
        ("hoc", "hoc-blue-f1"),  # does not decompose: the exact path, through the same function
    ],
)
def test_hoc_like_document_scores_equal_the_exact_path(contributions, tokenizer_dir, dataset, metric):
    rows = demo_rows("demo-doc-classification")
    names = sorted({label for row in rows for label in row["labels"]})
    rng = random.Random(24)
    predictions = {
        str(seed): [sorted(set(r["labels"]) ^ {rng.choice(names)}) if rng.random() < 0.4 else r["labels"] for r in rows]
        for seed in (42, 43, 44)
    }
    results = job(tokenizer_dir, dataset, predictions)
    spec = contributions.datasets[dataset]
    data = LoadedDataset(spec, {"test": rows}, names, fingerprint_of({"test": rows}))
    fast, exact = fast_and_exact(results, tokenizer_dir, data, metric, "demo-doc")
    # macro F1 of label sets averages the labels each resample saw, in its own order: equal to rounding
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-12)
    assert not np.isnan(fast).any() and len(set(fast.tolist())) > 5


def test_similarity_scores_take_the_vectorised_pearson_and_equal_the_exact_path(contributions, tokenizer_dir):
    rows = demo_rows("demo-similarity")
    rng = np.random.default_rng(25)
    predictions = {str(seed): [float(r["score"]) + float(rng.normal(0, 1)) for r in rows] for seed in (42, 43, 44)}
    results = job(tokenizer_dir, "demo-similarity", predictions)
    data = loaded(contributions.datasets["demo-similarity"], rows)
    fast, exact = fast_and_exact(results, tokenizer_dir, data, "pearson", "demo-similarity", 100)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(exact))
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-9)


def test_the_fast_paths_are_taken_for_every_built_in_formulation_of_a_decomposable_metric(contributions, tokenizer_dir):
    rows = demo_rows("demo-relation")
    results = job(tokenizer_dir, "demo-relation", {"42": [r["label"] for r in rows]})
    data = loaded(contributions.datasets["demo-relation"], rows)
    scoring = bootstrap.gold_scoring(results, tokenizer_dir, data, data)
    predicted, logits = scoring.run_inputs(results, "42")
    indices = resample_indices("demo-relation", len(rows), 10)
    for metric in ("micro-f1", "accuracy", "macro-f1"):
        assert isinstance(bootstrap._fast_plan(scoring, metric, predicted, logits, indices, None), Sufficient), metric


@pytest.mark.official_data
def test_bc5_chem_real_test_set_five_seeds_fast_equals_exact(contributions, tokenizer_dir, official_data):
    folder = official_data("BC5-chem", "blurb")
    data = load_dataset_files(contributions.datasets["bc5-chem"], folder)
    rows = data.splits["test"]
    assert len(rows) == 4797
    gold = [list(r["tags"]) for r in rows]
    predictions = {str(seed): perturbed_tags(gold, seed, rate=0.01) for seed in range(42, 47)}
    results = job(tokenizer_dir, "bc5-chem", predictions)
    fast, exact = fast_and_exact(results, tokenizer_dir, data, "entity-f1", "bc5-chem", 8)
    np.testing.assert_array_equal(fast, exact)
    assert 80 < fast.mean() < 98


def test_a_shortcut_that_disagrees_with_score_on_the_check_resample_is_not_used(contributions, tokenizer_dir):
    rows = demo_rows("demo-relation")
    wrong = [r["label"] if i % 3 else "CPR:9" for i, r in enumerate(rows)]  # a third of the pairs called CPR:9
    results = job(tokenizer_dir, "demo-relation", {"42": wrong})
    data = loaded(contributions.datasets["demo-relation"], rows)
    scoring = bootstrap.gold_scoring(results, tokenizer_dir, data, data)
    predicted, logits = scoring.run_inputs(results, "42")
    sufficient = classification.micro_f1.sufficient_statistics([r["label"] for r in rows], predicted, negative="false")
    right = lambda drawn, counts: sufficient.resampled(counts)  # noqa: E731
    reversed_rows = lambda drawn, counts: sufficient.resampled(counts[:, ::-1])  # noqa: E731 -- misaligned units
    assert bootstrap._checked(scoring, "micro-f1", predicted, logits, None, right)
    assert not bootstrap._checked(scoring, "micro-f1", predicted, logits, None, reversed_rows)


def test_the_benchmark_says_it_was_skipped_when_the_official_data_is_missing(tmp_path, monkeypatch):
    from bench import honest_ranks

    monkeypatch.setenv("BIOLM_DATA_DIR", str(tmp_path / "nowhere"))
    result = honest_ranks.run(honest_ranks.Config(), out_dir=tmp_path)
    assert "official data not found" in result["skipped"] and (tmp_path / "honest_ranks.json").is_file()


@pytest.mark.official_data
def test_the_benchmark_times_both_paths_on_bc5_chem_and_finds_them_identical(tmp_path, official_data):
    from bench import honest_ranks

    official_data("BC5-chem", "blurb")
    config = honest_ranks.Config(seeds=2, resamples=100, exact_resamples=2)
    result = honest_ranks.run(config, out_dir=tmp_path)
    assert result["identical"] and result["exact"]["extrapolated"] and result["exact"]["measured"]["resamples"] == 2
    assert result["data"]["test_sentences"] == 4797 and 85 < min(result["values"]["point_f1_per_seed"]) < 95
    assert result["ratio"] > 1


@pytest.mark.parametrize("metric", ["strict-accuracy", "lenient-accuracy", "mrr"])
def test_factoid_questions_resampled_whole_score_as_the_exact_path(contributions, tokenizer_dir, metric):
    rng = random.Random(28)
    rows, predicted = [], []
    for q in range(120):
        answer, rank = f"GENE{q}", rng.randrange(7)  # the right answer ranked 1-5, or missing
        ranked = [f"OTHER{q}-{j}" for j in range(5)]
        if rank < 5:
            ranked[rank] = answer
        for n in range(rng.randrange(1, 4)):  # one to three snippets per question, predicted alike
            context = f"Snippet {n}: the gene {answer} is mutated in this tumour."
            rows.append({"id": f"q{q}_{n:03d}", "question": f"Which gene ({q})?", "context": context,
                         "answers": {"text": [answer], "answer_start": [context.index(answer)]}})  # fmt: skip
            predicted.append(ranked)
    results = job(tokenizer_dir, "bioasq-factoid", {"42": predicted, "43": predicted[::-1][::-1]})
    data = LoadedDataset(contributions.datasets["bioasq-factoid"], {"test": rows}, [], fingerprint_of({"test": rows}))
    fast, exact = fast_and_exact(results, tokenizer_dir, data, metric, "bioasq-7b")
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-12)
    assert len(set(fast.tolist())) > 5
