"""Honest ranks: shared resamples, linear benchmark weights, paired ranking, and the engine's resampled values.

The end-to-end tests score known per-example predictions of four models on the BLURB-mini
relation test set with ``workers.engine.bootstrap`` (the real formulation and metric) and check
every resampled value against an independent loop: the documented seeding rule written out with
numpy, and scikit-learn's micro F1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from checkpoints import demo_texts, tiny_bert
from contract_documents import results_document
from sklearn.metrics import f1_score

import biolm.significance as significance
from biolm.aggregation import Aggregate, aggregate
from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.contract import ResultsDocument
from biolm.dataset_io import LoadedDataset, fingerprint_of
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.significance import (
    aggregation_weights,
    benchmark_vector,
    difference,
    rank,
    rank_among,
    resample_indices,
)
from biolm.specs import AggregationSpec, BenchmarkSpec, EntrySpec, GroupSpec, SummarySpec
from workers.engine.bootstrap import resampled_values
from workers.engine.run_settings import FinetuneSpec
from workers.engine.withheld import score_withheld

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"
RELATIONS = ["CPR:3", "CPR:4", "CPR:9"]  # demo-relation's positive classes ("false" is the negative)


def independent_indices(dataset_key: str, n_examples: int, resamples: int) -> np.ndarray:
    """The seeding rule as resample_indices documents it, written out again."""
    digest = hashlib.sha256(f"{dataset_key}\n{n_examples}".encode()).digest()
    entropy = [20211, int.from_bytes(digest, "big")]
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    return rng.integers(0, n_examples, size=(resamples, n_examples), dtype=np.int64)


# -- shared resamples ----------------------------------------------------------------------------


def test_resamples_are_shared_reproducible_and_follow_the_documented_rule():
    first = resample_indices("chemprot", 50)
    assert first.shape == (significance.RESAMPLES, 50) and np.issubdtype(first.dtype, np.integer)
    assert first.min() >= 0 and first.max() < 50
    assert np.array_equal(first, resample_indices("chemprot", 50))
    assert np.array_equal(first, independent_indices("chemprot", 50, significance.RESAMPLES))
    assert resample_indices("chemprot", 50, resamples=7).shape == (7, 50)
    # every row is a draw with replacement, not a permutation
    assert any(len(set(row.tolist())) < 50 for row in first)


def test_resamples_differ_between_datasets_and_between_test_sizes():
    chemprot = resample_indices("chemprot", 50)
    assert not np.array_equal(chemprot, resample_indices("ddi", 50))
    assert not np.array_equal(chemprot[:, :49], resample_indices("chemprot", 49))
    assert not np.array_equal(resample_indices("gad/fold2", 50), resample_indices("gad/fold3", 50))


@pytest.mark.parametrize("n_examples", [0, -3, 2.5, True])
def test_nothing_to_resample_is_refused(n_examples):
    with pytest.raises(ValueError):
        resample_indices("chemprot", n_examples)


# -- benchmark weights -----------------------------------------------------------------------------


def blurb_like(summary: SummarySpec, extra: tuple[EntrySpec, ...] = ()) -> BenchmarkSpec:
    entries = tuple(EntrySpec(k, k, "f1") for k in ("a", "b", "c", "d", "e")) + extra
    groups = (GroupSpec("ner", "NER", ("a", "b")), GroupSpec("re", "RE", ("c",)), GroupSpec("qa", "QA", ("d", "e")))
    spec = BenchmarkSpec("toy", "Toy", "", entries, AggregationSpec("1", summary.slug, groups, (summary,)))
    spec.validate()
    return spec


def test_a_macro_average_of_group_means_weighs_each_entry_by_its_share_of_its_group():
    spec = blurb_like(SummarySpec("score", "Score", "mean_of_groups", ("ner", "re", "qa")))
    weights = aggregation_weights(spec)
    assert weights == pytest.approx({"a": 1 / 6, "b": 1 / 6, "c": 1 / 3, "d": 1 / 6, "e": 1 / 6}, abs=1e-12)
    rng = np.random.default_rng(1)
    for values in rng.uniform(0, 100, size=(5, 5)):
        scores = dict(zip("abcde", values, strict=True))
        assert sum(weights[k] * v for k, v in scores.items()) == pytest.approx(aggregate(spec, scores).score, abs=1e-9)


def test_a_weighted_mean_of_groups_and_entries_outside_the_primary():
    summary = SummarySpec("overall", "Overall", "weighted_mean_of_groups", ("ner", "re", "qa"), (8, 4, 3))
    spec = blurb_like(summary, extra=(EntrySpec("aside", "aside", "f1"),))
    weights = aggregation_weights(spec)
    assert weights == pytest.approx(
        {"a": 4 / 15, "b": 4 / 15, "c": 4 / 15, "d": 1.5 / 15, "e": 1.5 / 15, "aside": 0.0}, abs=1e-12
    )
    vectors = {k: np.full(4, float(i)) for i, k in enumerate("abcde")}  # "aside" has none: it weighs nothing
    assert benchmark_vector(weights, vectors) == pytest.approx(np.full(4, (8 * 0.5 + 4 * 2 + 3 * 3.5) / 15))


def test_the_shipped_benchmarks_have_weights_that_reproduce_their_scores():
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    blurb = contributions.benchmarks["blurb"]
    weights = aggregation_weights(blurb)
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights["biosses"] == pytest.approx(1 / 6)  # one dataset is a whole task type
    assert weights["bc5-chem"] == pytest.approx(1 / 30)  # one of NER's five
    for spec in contributions.benchmarks.values():
        published = [p for p in spec.published if set(p.scores) == set(spec.entry_keys())]
        for model in published[:3]:
            linear = sum(w * model.scores[k] for k, w in aggregation_weights(spec).items())
            assert linear == pytest.approx(aggregate(spec, model.scores).score, abs=1e-9), (spec.slug, model.slug)


def test_an_aggregation_that_is_not_a_weighted_sum_is_refused_by_name(monkeypatch):
    spec = blurb_like(SummarySpec("score", "Score", "mean_of_groups", ("ner", "re", "qa")))

    def best_entry(benchmark, scores):
        return Aggregate(score=max(scores.values()))

    monkeypatch.setattr(significance, "aggregate", best_entry)
    with pytest.raises(ValueError, match=r"'toy'.*not a weighted sum"):
        aggregation_weights(spec)

    def shifted(benchmark, scores):
        return Aggregate(score=aggregate(benchmark, scores).score + 1.0)

    monkeypatch.setattr(significance, "aggregate", shifted)
    with pytest.raises(ValueError, match="'toy'"):
        aggregation_weights(spec)


def test_a_benchmark_vector_needs_every_weighted_entry():
    with pytest.raises(ValueError, match="b"):
        benchmark_vector({"a": 0.5, "b": 0.5}, {"a": np.zeros(3)})
    with pytest.raises(ValueError, match="shape"):
        benchmark_vector({"a": 0.5, "b": 0.5}, {"a": np.zeros(3), "b": np.zeros(4)})


# -- ranking ---------------------------------------------------------------------------------------


def test_models_the_resamples_cannot_separate_share_rank_one():
    vector = np.random.default_rng(2).normal(80, 2, size=500)
    ranking = rank([80.0, 80.0, 80.0], [vector, vector.copy(), vector.copy()])
    assert ranking.ranks == [1, 1, 1]
    assert ranking.tied == [False, True, True]
    assert ranking.intervals == [None, (0.0, 0.0), (0.0, 0.0)]
    assert ranking.better_counts == [0, 0, 0] and ranking.worse_counts == [0, 0, 0]


def test_clearly_separated_models_rank_one_two_three():
    noise = np.random.default_rng(3).normal(0, 1, size=500)
    vectors = [90 + noise, 80 + noise * 1.1, 70 + noise * 0.9]
    ranking = rank([90.0, 80.0, 70.0], vectors)
    assert ranking.ranks == [1, 2, 3]
    assert ranking.tied == [False, False, False]
    assert ranking.worse_counts == [2, 1, 0]
    assert ranking.above_shares == [None, 1.0, 1.0]
    low, high = ranking.intervals[1]
    expected = np.percentile(vectors[0] - vectors[1], [2.5, 97.5])
    assert (low, high) == pytest.approx(tuple(expected)) and 5 < low < 10 < high < 15


def test_significance_needs_the_confidence_share_of_resamples_and_no_more():
    base = np.zeros(20)
    above = base.copy()
    above[:19] = 1.0  # ahead on 19 of 20 resamples: exactly 95%
    assert rank([1.0, 0.0], [above, base]).ranks == [1, 2]
    above[18] = 0.0  # 18 of 20: 90%
    assert rank([1.0, 0.0], [above, base]).ranks == [1, 1]
    assert rank([1.0, 0.0], [above, base], confidence=0.9).ranks == [1, 2]


def test_an_undefined_resample_is_evidence_for_no_one():
    above, below = np.ones(20), np.zeros(20)
    above[0] = np.nan  # ahead on 19 defined resamples, but that is 19 of 20 at most
    assert rank([1.0, 0.0], [above, below]).ranks == [1, 2]
    above[1] = np.nan
    ranking = rank([1.0, 0.0], [above, below])
    assert ranking.ranks == [1, 1] and ranking.intervals[1] == (1.0, 1.0)


def test_reported_rows_are_ranked_by_their_point_scores():
    noise = np.random.default_rng(4).normal(0, 0.1, size=300)
    vectors = [None, 85 + noise, 85 + noise + 0.01 * noise, None, None]
    ranking = rank([90.0, 85.0, 84.9, 84.9, 70.0], vectors)
    # the reported 90 beats everyone below it; the two tested rows cannot be told apart; the reported 84.9
    # is beaten by the two rows with a higher point score; 70 by everyone
    assert ranking.ranks == [1, 2, 2, 3, 5]
    assert ranking.tied == [False, False, True, False, False]
    assert ranking.intervals[0] is None and ranking.intervals[1] is None and ranking.intervals[3] is None
    assert ranking.intervals[2] is not None


def test_the_vectorised_ranking_equals_a_pair_by_pair_count(monkeypatch):
    monkeypatch.setattr(significance, "_BLOCK_BYTES", 3 * 40 * 97)  # three rows per block: many blocks, threads
    rng = np.random.default_rng(5)
    models, resamples = 40, 97
    means = np.sort(rng.uniform(60, 80, size=models))[::-1]
    vectors = [m + rng.normal(0, 2, size=resamples) for m in means]
    vectors[7][:5] = np.nan
    vectors[11] = None
    points = [float(m) for m in means]
    needed = math.ceil(0.95 * resamples - 1e-9)
    expected = []
    for i in range(models):
        better = 0
        for j in range(models):
            if j == i:
                continue
            if vectors[i] is None or vectors[j] is None:
                better += points[j] > points[i]
            else:
                better += sum(1 for a, b in zip(vectors[j], vectors[i], strict=True) if a - b > 0) >= needed
        expected.append(1 + better)
    ranking = rank(points, vectors)
    assert ranking.ranks == expected
    assert len(set(expected)) > 5  # a real mixture of ties and separations, not all one rank


def test_pairs_the_order_bounds_settle_are_ranked_as_a_full_count_ranks_them(monkeypatch):
    """A leaderboard-like board (a resample effect every model shares, a small own noise, exact ties, a
    NaN and an infinity) ranks exactly as counting every pair's resamples does, while the bounds settle
    most pairs without counting them."""
    monkeypatch.setattr(significance, "_BLOCK_BYTES", 7 * 33 * 200)  # many slices, and threads
    rng = np.random.default_rng(7)
    models, resamples = 160, 200
    shared = rng.normal(0, 2.0, resamples)
    means = np.sort(rng.normal(70, 3, models))[::-1]
    matrix = means[:, None] + shared[None, :] + rng.normal(0, 0.3, (models, resamples))
    matrix[41] = matrix[40]  # identical vectors: neither beats the other
    matrix[90, :3] = np.nan
    matrix[120, 5] = np.inf
    needed = math.ceil(0.95 * resamples - 1e-9)
    wins = np.count_nonzero(matrix[:, None, :] > matrix[None, :, :], axis=2)
    expected = wins >= needed
    np.fill_diagonal(expected, False)
    better, open_pairs, _ = significance._order_bounds(matrix, needed)
    assert np.array_equal(significance._significantly_better(matrix, needed), expected)
    assert open_pairs.sum() < 0.25 * models * models  # the bounds did most of the work
    assert not (better & ~expected).any()  # and every pair they settled as better is better
    assert 10 < len(set(rank(list(means), list(matrix)).ranks)) < models  # ties and separations


def test_each_rows_interval_to_the_row_above_is_what_it_gets_alone():
    rng = np.random.default_rng(8)
    vectors = [rng.normal(70 - 0.1 * i, rng.uniform(0.5, 2), 301) for i in range(60)]
    vectors[5] = None
    vectors[9][3] = np.nan
    vectors[20][:] = np.nan
    ranking = rank([70 - 0.1 * i for i in range(60)], vectors)
    for i in range(1, 60):
        if vectors[i] is None or vectors[i - 1] is None:
            assert ranking.intervals[i] is None and ranking.above_shares[i] is None
            continue
        diff = vectors[i - 1] - vectors[i]
        assert ranking.intervals[i] == significance._interval(diff, 0.95)  # one row's percentiles, bit for bit
        assert ranking.above_shares[i] == np.count_nonzero(diff > 0) / diff.size


def test_a_private_model_is_placed_among_the_public_ones_without_moving_them():
    noise = np.random.default_rng(6).normal(0, 1, size=400)
    public = [90 + noise, 80 + noise, 70 + noise]
    points = [90.0, 80.0, 70.0]
    before = rank(points, public).ranks
    placement = rank_among(points, public, 80.0, 80 + noise)
    assert placement.rank == 2 and placement.interval == pytest.approx((0.0, 0.0))  # level with the second
    rank_, interval = rank_among(points, public, 95.0, 95 + noise)
    assert (rank_, interval) == (1, None)
    assert rank_among(points, public, 75.0, 75 + noise).interval == pytest.approx((5.0, 5.0))
    assert rank_among(points, public, 75.0, None) == (3, None)  # no vector: by point score
    assert rank(points, public).ranks == before == [1, 2, 3]


def test_the_compare_page_difference():
    rng = np.random.default_rng(7)
    b = rng.normal(70, 1, size=1000)
    a = b + rng.normal(1.0, 0.2, size=1000)
    result = difference(a, b)
    assert result["mean"] == pytest.approx(float(np.mean(a - b)))
    assert (result["low"], result["high"]) == pytest.approx(tuple(np.percentile(a - b, [2.5, 97.5])))
    assert result["share_positive"] == 1.0 and result["significant"] is True
    reverse = difference(b, a)
    assert reverse["share_positive"] == 0.0 and reverse["significant"] is True and reverse["mean"] < 0
    close = difference(b + rng.normal(0, 1, size=1000), b)
    assert close["significant"] is False and 0.3 < close["share_positive"] < 0.7


# -- the engine's resampled values, end to end ------------------------------------------------------


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600)


def loaded(spec, test_rows: list[dict]) -> LoadedDataset:
    splits = {"test": test_rows}
    return LoadedDataset(spec, splits, sorted(spec.labels), fingerprint_of(splits))


def relation_rows() -> list[dict]:
    rows = read_canonical_jsonl(DEMO / "demo-relation")["test"]
    return [{k: v for k, v in row.items() if k != "_where"} for row in rows]


def job_results(
    tokenizer_dir: Path, dataset: str, predictions: dict[str, list], statistic: str = "mean",
    cross_validation: dict | None = None,
) -> ResultsDocument:  # fmt: skip
    """The results document of a job on ``dataset`` that predicted ``predictions`` (keyed by run)."""
    spec = FinetuneSpec.build(model=tokenizer_dir, dataset=dataset, out=tokenizer_dir / "out", load_entrypoints=False)
    document = results_document(
        spec.job, dict.fromkeys(predictions), predictions=predictions, statistic=statistic,
        cross_validation=cross_validation,
    )  # fmt: skip
    return ResultsDocument.from_json(document)


def independent_micro_f1(gold: list[str], predictions: dict[str, list[str]], key: str, resamples: int) -> np.ndarray:
    """Per resample, the mean over seeds of scikit-learn's micro F1 over the positive classes."""
    indices = independent_indices(key, len(gold), resamples)
    values = []
    for drawn in indices:
        g = [gold[i] for i in drawn]
        per_seed = [
            100 * f1_score(g, [p[i] for i in drawn], labels=RELATIONS, average="micro", zero_division=0)
            for p in predictions.values()
        ]
        values.append(statistics.fmean(per_seed))
    return np.array(values)


def mistaken(gold: list[str], wrong: range | set[int]) -> list[str]:
    """Predictions right everywhere but on ``wrong``, where each takes the next label round the cycle."""
    labels = [*RELATIONS, "false"]
    return [labels[(labels.index(g) + 1) % 4] if i in wrong else g for i, g in enumerate(gold)]


# Per seed, the examples each model gets wrong: nested sets, so on every resample a >= b >= c >= d. b and c differ
# by one example per seed, which a resample misses about 13% of the time: not significant at 95%.
ERRORS = {"a": 2, "b": 12, "c": 13, "d": 36}
ENGINE_RESAMPLES = 100


def test_resampled_values_score_real_predictions_as_an_independent_loop_and_rank_as_expected(
    contributions, tokenizer_dir
):
    spec = contributions.datasets["demo-relation"]
    rows = relation_rows()
    gold = [row["label"] for row in rows]
    data = loaded(spec, rows)
    engine, independent, points = [], [], []
    for model, errors in ERRORS.items():
        predictions = {
            str(seed): mistaken(gold, {(start + i) % len(gold) for i in range(errors)})
            for seed, start in ((42, 0), (43, 30))
        }
        results = job_results(tokenizer_dir, "demo-relation", predictions)
        vector = resampled_values(results, tokenizer_dir, data, data, "micro-f1", "demo-relation", ENGINE_RESAMPLES)
        expected = independent_micro_f1(gold, predictions, "demo-relation", ENGINE_RESAMPLES)
        assert vector.shape == (ENGINE_RESAMPLES,) and not np.isnan(vector).any(), model
        np.testing.assert_allclose(vector, expected, atol=1e-9, err_msg=model)
        engine.append(vector)
        independent.append(expected)
        point = statistics.fmean(
            100 * f1_score(gold, p, labels=RELATIONS, average="micro", zero_division=0) for p in predictions.values()
        )
        points.append(point)
    assert points == sorted(points, reverse=True) and len(set(points)) == 4
    ranking = rank(points, engine)
    assert ranking.ranks == rank(points, independent).ranks == [1, 2, 2, 4]
    assert ranking.tied == [False, False, True, False]
    assert 0.5 < ranking.above_shares[2] < 0.95 and ranking.above_shares[1] == ranking.above_shares[3] == 1.0


def test_each_resample_is_scored_exactly_as_the_platform_scores_a_withheld_split(contributions, tokenizer_dir):
    spec = contributions.datasets["demo-relation"]
    rows = relation_rows()
    predicted = mistaken([row["label"] for row in rows], range(0, 60, 3))
    results = job_results(tokenizer_dir, "demo-relation", {"42": predicted})
    calls = []
    vector = resampled_values(
        results, tokenizer_dir, loaded(spec, rows), loaded(spec, rows), "micro-f1", "demo-relation", 5,
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert calls == [(i, 5) for i in range(1, 6)]
    for r, drawn in enumerate(resample_indices("demo-relation", len(rows), 5)):
        resampled = loaded(spec, [rows[i] for i in drawn])
        single = dataclasses.replace(results, predictions={"42": [predicted[i] for i in drawn]})
        assert vector[r] == score_withheld(single, tokenizer_dir, resampled, resampled)["42"]["micro-f1"]


def test_cross_validation_takes_each_folds_median_then_the_statistic_over_folds(contributions, tokenizer_dir):
    spec = contributions.datasets["demo-relation"]
    rows = relation_rows()
    folds = {2: rows[:30], 3: rows[30:]}
    predictions = {
        f"fold{fold}-seed{seed}": mistaken([r["label"] for r in fold_rows], range(fold, 30, seed - 37))
        for fold, fold_rows in folds.items()
        for seed in (41, 42, 43)
    }
    results = job_results(
        tokenizer_dir, "demo-relation", predictions,
        cross_validation={"folds": 3, "selection_fold": 1, "reported_folds": [2, 3]},
    )  # fmt: skip
    data = {fold: loaded(spec, fold_rows) for fold, fold_rows in folds.items()}
    vector = resampled_values(results, tokenizer_dir, data, data, "micro-f1", "eu-adr", 50)
    per_fold = []
    for fold, fold_rows in folds.items():
        gold = [r["label"] for r in fold_rows]
        seeds = [
            independent_micro_f1(gold, {"one": predictions[f"fold{fold}-seed{seed}"]}, f"eu-adr/fold{fold}", 50)
            for seed in (41, 42, 43)
        ]
        per_fold.append(np.median(np.stack(seeds), axis=0))
    np.testing.assert_allclose(vector, np.mean(np.stack(per_fold), axis=0), atol=1e-9)
    with pytest.raises(ValueError, match="fold"):
        resampled_values(results, tokenizer_dir, data[2], data[2], "micro-f1", "eu-adr", 5)
    with pytest.raises(ValueError, match="3"):
        resampled_values(results, tokenizer_dir, {2: data[2]}, {2: data[2]}, "micro-f1", "eu-adr", 5)


def test_a_resample_where_the_metric_is_undefined_is_nan(contributions, tokenizer_dir):
    spec = contributions.datasets["demo-similarity"]
    shipped = read_canonical_jsonl(DEMO / "demo-similarity")["test"][:4]
    gold_scores = [1.0, 1.0, 1.0, 3.0]
    rows = [
        {"id": r["id"], "text": r["text"], "text_pair": r["text_pair"], "score": score}
        for r, score in zip(shipped, gold_scores, strict=True)
    ]
    predicted = [0.5, 1.5, 2.0, 3.5]
    results = job_results(tokenizer_dir, "demo-similarity", {"42": predicted})
    data = loaded(spec, rows)
    vector = resampled_values(results, tokenizer_dir, data, data, "pearson", "tiny-sts", 100)
    for value, drawn in zip(vector, independent_indices("tiny-sts", 4, 100), strict=True):
        gold, pred = [rows[i]["score"] for i in drawn], [predicted[i] for i in drawn]
        if len(set(gold)) == 1:  # Pearson of constant gold is undefined
            assert math.isnan(value)
        elif len(set(pred)) == 1:  # the engine's convention: constant predictions carry no signal
            assert value == 0.0
        else:
            assert value == pytest.approx(100 * np.corrcoef(gold, pred)[0, 1])
    assert 10 < np.isnan(vector).sum() < 60  # both branches really taken


def test_a_metric_the_job_does_not_score_is_refused(contributions, tokenizer_dir):
    spec = contributions.datasets["demo-relation"]
    rows = relation_rows()
    results = job_results(tokenizer_dir, "demo-relation", {"42": [r["label"] for r in rows]})
    with pytest.raises(ValueError, match="pearson"):
        resampled_values(results, tokenizer_dir, loaded(spec, rows), loaded(spec, rows), "pearson", "x", 3)


def test_factoid_questions_are_resampled_whole_and_a_question_drawn_twice_counts_twice(contributions, tokenizer_dir):
    spec = contributions.datasets["bioasq-factoid"]
    questions = {"q1": ("EGFR", 2, True), "q2": ("BRCA1", 1, False), "q3": ("TP53", 3, True), "q4": ("KRAS", 1, False)}
    rows, predicted = [], []
    for question, (answer, snippets, right) in questions.items():
        for n in range(snippets):
            context = f"Snippet {n}: the gene {answer} is mutated in this tumour."
            start = context.index(answer)
            rows.append({"id": f"{question}_{n:03d}", "question": f"Which gene is mutated ({question})?",
                         "context": context, "answers": {"text": [answer], "answer_start": [start]}})  # fmt: skip
            predicted.append([answer, "MYC"] if right else ["MYC", answer])
    results = job_results(tokenizer_dir, "bioasq-factoid", {"42": predicted})
    data = LoadedDataset(spec, {"test": rows}, [], fingerprint_of({"test": rows}))
    vector = resampled_values(results, tokenizer_dir, data, data, "strict-accuracy", "bioasq-7b", 60)
    right = [flag for _, _, flag in questions.values()]
    expected = [100 * statistics.fmean(right[q] for q in drawn) for drawn in independent_indices("bioasq-7b", 4, 60)]
    np.testing.assert_allclose(vector, expected, atol=1e-9)
    assert len(set(vector.tolist())) > 3  # 0, 25, 50, 75, 100 all possible: the draws really vary
