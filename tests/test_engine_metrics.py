"""The engine's metrics agree with independent references on seeded random inputs and edge cases.

References: seqeval (entity level), scikit-learn (classification, AUC), scipy (Pearson), the
official SQuAD v1.1 evaluation functions transcribed below, and plain loops written from
METRICS.md (BLUE's HoC) and the BioASQ measure definitions (Fang et al. 2023).
"""

from __future__ import annotations

import dataclasses
import random
import re
import string
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import seqeval.metrics as seqeval
from scipy.stats import pearsonr
from seqeval.scheme import BILOU, IOB2, IOBES
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score
from sklearn.preprocessing import MultiLabelBinarizer

from biolm.specs import ImplementationError
from plugins.tasks.metrics import METRICS as METRIC_SPECS
from workers.engine.metrics import (
    accuracy,
    average_micro_f1,
    binary_f1,
    entity_scores,
    exact_match,
    lenient_accuracy,
    macro_f1,
    micro_f1,
    mrr,
    pearson,
    pool_by_document,
    precision,
    recall,
    roc_auc,
    squad_f1,
    strict_accuracy,
    token_macro_f1,
)

TRIALS = 200
SEQEVAL_SCHEMES = {"IOB2": IOB2, "IOBES": IOBES, "BILOU": BILOU}
PREFIXES = {"IOB2": "BI", "IOBES": "BIES", "BILOU": "BILU", "IO": "I"}


# --- generators ----------------------------------------------------------------------------------


def random_tags(rng: random.Random, prefixes: str, types: tuple[str, ...]) -> list[list[str]]:
    """Sentences of random (often ill-formed) tags; empty sentences included."""
    sentences = []
    for _ in range(rng.randint(1, 6)):
        tags = []
        for _ in range(rng.randint(0, 12)):
            if rng.random() < 0.4:
                tags.append("O")
            else:
                prefix, type_ = rng.choice(prefixes), rng.choice(types)
                tags.append(f"{prefix}-{type_}" if type_ else prefix)
        sentences.append(tags)
    return sentences


def perturb(rng: random.Random, sentences: list[list[str]], pool: list[str], rate: float) -> list[list[str]]:
    """A prediction: the gold tags with a share replaced at random (rate 0: all correct)."""
    return [[rng.choice(pool) if rng.random() < rate else tag for tag in tags] for tags in sentences]


def tag_pool(prefixes: str, types: tuple[str, ...]) -> list[str]:
    return ["O", *(f"{p}-{t}" if t else p for p in prefixes for t in types)]


def seqeval_prf(gold: list[list[str]], pred: list[list[str]], **kwargs) -> tuple[float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(
            100 * fn(gold, pred, **kwargs) for fn in (seqeval.precision_score, seqeval.recall_score, seqeval.f1_score)
        )


TYPE_SETS = {"typed": ("Chemical", "Disease", "Gene-or-protein"), "untyped": ("",)}


# --- entity level --------------------------------------------------------------------------------


@pytest.mark.parametrize("typing", TYPE_SETS)
@pytest.mark.parametrize("prefixes", ["BI", "BIES", "I"])
def test_conlleval_mode_matches_seqeval_default_mode_on_random_tags(typing, prefixes):
    rng = random.Random(f"conll-{typing}-{prefixes}")
    types = TYPE_SETS[typing]
    pool = tag_pool(prefixes, types)
    for _ in range(TRIALS):
        gold = random_tags(rng, prefixes, types)
        pred = perturb(rng, gold, pool, rng.choice([0.0, 0.1, 0.5, 1.0]))
        assert entity_scores(gold, pred) == pytest.approx(seqeval_prf(gold, pred), abs=1e-9), (gold, pred)


@pytest.mark.parametrize("typing", TYPE_SETS)
@pytest.mark.parametrize("scheme", SEQEVAL_SCHEMES)
def test_strict_mode_matches_seqeval_strict_mode_for_each_scheme(typing, scheme):
    rng = random.Random(f"strict-{typing}-{scheme}")
    types = TYPE_SETS[typing]
    pool = tag_pool(PREFIXES[scheme], types)
    for _ in range(TRIALS):
        gold = random_tags(rng, PREFIXES[scheme], types)
        pred = perturb(rng, gold, pool, rng.choice([0.0, 0.1, 0.5, 1.0]))
        expected = seqeval_prf(gold, pred, mode="strict", scheme=SEQEVAL_SCHEMES[scheme])
        assert entity_scores(gold, pred, mode="strict", scheme=scheme) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("typing", TYPE_SETS)
def test_strict_io_scheme_scores_maximal_runs_as_seqeval_default_mode_does_on_io_tags(typing):
    # seqeval has no IO scheme; on I-only tags its default mode reads exactly the maximal runs.
    rng = random.Random(f"io-{typing}")
    types = TYPE_SETS[typing]
    for _ in range(TRIALS):
        gold = random_tags(rng, "I", types)
        pred = perturb(rng, gold, tag_pool("I", types), 0.3)
        assert entity_scores(gold, pred, mode="strict", scheme="IO") == pytest.approx(seqeval_prf(gold, pred))


def test_bioul_in_conlleval_mode_reads_u_and_l_as_s_and_e():
    rng = random.Random("bioul-conll")
    types = TYPE_SETS["typed"]
    as_iobes = str.maketrans({"U": "S", "L": "E"})
    for _ in range(TRIALS):
        gold = random_tags(rng, "BILU", types)
        pred = perturb(rng, gold, tag_pool("BILU", types), 0.2)
        mapped = [[[t.translate(as_iobes) for t in s] for s in seqs] for seqs in (gold, pred)]
        assert entity_scores(gold, pred) == pytest.approx(seqeval_prf(*mapped))


def test_seqeval_default_mode_loses_bioul_entities_which_is_why_we_map_them():
    gold, pred = [["B-X", "L-X", "B-X", "L-X"]], [["B-X", "L-X", "O", "O"]]
    assert seqeval_prf(gold, pred)[2] == 0.0  # the trap: seqeval merges B L B L into one chunk
    assert entity_scores(gold, pred).f1 == pytest.approx(200 / 3)
    assert entity_scores(gold, pred, mode="strict", scheme="BIOUL").f1 == pytest.approx(200 / 3)


def test_an_entity_starting_with_i_counts_in_conlleval_mode_but_not_in_strict_mode():
    gold, pred = [["O", "B-Disease", "I-Disease", "O"]], [["O", "I-Disease", "I-Disease", "O"]]
    assert entity_scores(gold, pred).f1 == 100.0
    assert entity_scores(gold, pred, mode="strict", scheme="IOB2") == (0.0, 0.0, 0.0)


def test_entity_type_must_match_and_types_may_contain_hyphens():
    gold = [["B-Gene-or-protein", "I-Gene-or-protein", "O", "B-Chemical"]]
    pred = [["B-Gene-or-protein", "I-Gene-or-protein", "O", "B-Disease"]]
    assert entity_scores(gold, pred) == pytest.approx((50.0, 50.0, 50.0))


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
def test_entity_edge_cases_score_zero_or_hundred(mode):
    gold = [["B", "I", "O"], [], ["O", "B"]]
    assert entity_scores(gold, [["O"] * 3, [], ["O", "O"]], mode=mode) == (0.0, 0.0, 0.0)  # predicts nothing
    assert entity_scores([["O"] * 3], [["B", "I", "O"]], mode=mode) == (0.0, 0.0, 0.0)  # no gold entity
    assert entity_scores([["O"] * 3], [["O"] * 3], mode=mode) == (0.0, 0.0, 0.0)  # nothing at all: as seqeval
    assert entity_scores(gold, gold, mode=mode) == (100.0, 100.0, 100.0)
    assert entity_scores([], [], mode=mode) == (0.0, 0.0, 0.0)


def test_entity_inputs_that_do_not_align_or_are_not_tags_are_rejected():
    with pytest.raises(ValueError, match="nothing may be dropped"):
        entity_scores([["B", "I", "O"]], [["B", "I"]])
    with pytest.raises(ValueError, match="nothing may be dropped"):
        entity_scores([["B"], ["O"]], [["B"]])
    with pytest.raises(ValueError, match="not a tag"):
        entity_scores([["B-X", "Chemical"]], [["O", "O"]])
    with pytest.raises(ValueError, match="not allowed in scheme IOB2"):
        entity_scores([["B-X", "E-X"]], [["O", "O"]], mode="strict")
    with pytest.raises(ValueError, match="strict"):
        entity_scores([["B"]], [["B"]], scheme="IOB2")
    with pytest.raises(ValueError, match="unknown scheme"):
        entity_scores([["B"]], [["B"]], mode="strict", scheme="IOE1")


# --- word level (PICO) ---------------------------------------------------------------------------

PICO_TAGS = ["O", "O", "I-PAR", "I-INT", "I-OUT"]
PICO = ["PAR", "INT", "OUT"]


def random_pico(rng: random.Random) -> tuple[list[list[str]], list[list[str]]]:
    gold = [[rng.choice(PICO_TAGS) for _ in range(rng.randint(1, 15))] for _ in range(rng.randint(1, 5))]
    rate = rng.choice([0.0, 0.2, 0.6, 1.0])
    return gold, [[rng.choice(PICO_TAGS) if rng.random() < rate else t for t in s] for s in gold]


def test_pico_macro_f1_matches_sklearn_per_element_f1_over_words():
    rng = random.Random("pico")
    for _ in range(TRIALS):
        gold, pred = random_pico(rng)
        flat_gold = [t.removeprefix("I-") for s in gold for t in s]
        flat_pred = [t.removeprefix("I-") for s in pred for t in s]
        expected = 100 * f1_score(flat_gold, flat_pred, labels=PICO, average="macro", zero_division=0)
        assert token_macro_f1(gold, pred, labels=PICO) == pytest.approx(expected)
        assert token_macro_f1(gold, pred, labels=("I-PAR", "I-INT", "I-OUT", "O")) == pytest.approx(expected)
        seen = sorted({t for t in flat_gold + flat_pred if t != "O"})
        if seen:
            expected_seen = 100 * f1_score(flat_gold, flat_pred, labels=seen, average="macro", zero_division=0)
            assert token_macro_f1(gold, pred) == pytest.approx(expected_seen)


def test_pico_words_carrying_several_elements_are_scored_per_element():
    rng = random.Random("pico-sets")
    binarizer = MultiLabelBinarizer(classes=PICO)
    for _ in range(TRIALS):
        gold = [[set(rng.sample(PICO, rng.randint(0, 2))) for _ in range(rng.randint(1, 12))] for _ in range(3)]
        pred = [[set(rng.sample(PICO, rng.randint(0, 2))) for _ in s] for s in gold]
        g = binarizer.fit_transform([w for s in gold for w in s])
        p = binarizer.fit_transform([w for s in pred for w in s])
        expected = 100 * f1_score(g, p, average="macro", zero_division=0)
        assert token_macro_f1(gold, pred, labels=PICO) == pytest.approx(expected)


def test_pico_edge_cases():
    gold = [["I-PAR", "O", "I-OUT", "I-INT"]]
    assert token_macro_f1(gold, gold, labels=PICO) == 100.0
    assert token_macro_f1(gold, [["O"] * 4], labels=PICO) == 0.0
    assert token_macro_f1([["O", "O"]], [["O", "O"]]) == 0.0  # no element anywhere
    # an element absent from gold and pred still counts in the mean when named, as in sklearn
    assert token_macro_f1([["I-PAR"]], [["I-PAR"]], labels=PICO) == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match="nothing may be dropped"):
        token_macro_f1([["I-PAR", "O"]], [["I-PAR"]])


# --- classification ------------------------------------------------------------------------------

CHEMPROT = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]


def random_labels(rng: random.Random, classes: list, negative_share: float = 0.6) -> tuple[list, list]:
    n = rng.randint(1, 60)
    negative, positives = classes[-1], classes[:-1]
    gold = [negative if rng.random() < negative_share else rng.choice(positives) for _ in range(n)]
    rate = rng.choice([0.0, 0.3, 1.0])
    pred = [rng.choice(classes) if rng.random() < rate else g for g in gold]
    return gold, pred


def test_micro_f1_precision_and_recall_of_positive_classes_match_sklearn():
    rng = random.Random("micro")
    classes = [*CHEMPROT, "false"]
    for _ in range(TRIALS):
        gold, pred = random_labels(rng, classes, rng.choice([0.0, 0.6, 1.0]))
        kwargs = {"labels": CHEMPROT, "average": "micro", "zero_division": 0}
        assert micro_f1(gold, pred, negative="false") == pytest.approx(100 * f1_score(gold, pred, **kwargs))
        assert micro_f1(gold, pred, labels=CHEMPROT) == pytest.approx(100 * f1_score(gold, pred, **kwargs))
        assert precision(gold, pred, negative="false") == pytest.approx(100 * precision_score(gold, pred, **kwargs))
        assert recall(gold, pred, negative="false") == pytest.approx(100 * recall_score(gold, pred, **kwargs))


def test_micro_f1_follows_the_blurb_definition_written_out():
    gold = ["CPR:3", "false", "CPR:4", "CPR:4", "false"]
    pred = ["CPR:3", "CPR:9", "false", "CPR:5", "false"]
    tp, n_pred, n_gold = 1, 3, 3  # TP: pred == gold and pred != negative
    assert micro_f1(gold, pred, negative="false") == pytest.approx(100 * 2 * tp / (n_pred + n_gold))


def test_micro_f1_refuses_to_guess_the_negative_class():
    with pytest.raises(ValueError, match="positive"):
        micro_f1(["CPR:3", "false"], ["CPR:3", "false"])


def test_binary_f1_matches_sklearn_for_numeric_and_named_classes():
    rng = random.Random("binary")
    for _ in range(TRIALS):
        gold, pred = random_labels(rng, [1, 0], rng.choice([0.0, 0.5, 1.0]))
        expected = 100 * f1_score(gold, pred, pos_label=1, average="binary", zero_division=0)
        assert binary_f1(gold, pred) == pytest.approx(expected)
        assert micro_f1(gold, pred) == pytest.approx(expected)  # GAD: micro F1 of the positive class
        named = [["ADE-Drug" if x else "false" for x in seq] for seq in (gold, pred)]
        assert binary_f1(*named, positive="ADE-Drug") == pytest.approx(expected)
        assert binary_f1(*named, negative="false") == pytest.approx(expected)
        as_strings = [[str(x) for x in seq] for seq in (gold, pred)]
        assert binary_f1(*as_strings) == pytest.approx(expected)


def test_binary_f1_rejects_several_positive_classes():
    with pytest.raises(ValueError, match="one positive class"):
        binary_f1(["a", "b", "c"], ["a", "b", "c"], negative="c")


def test_macro_f1_matches_sklearn_with_and_without_a_label_list():
    rng = random.Random("macro")
    classes = [*CHEMPROT, "false"]
    for _ in range(TRIALS):
        gold, pred = random_labels(rng, classes)
        assert macro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="macro", zero_division=0))
        expected = 100 * f1_score(gold, pred, labels=classes, average="macro", zero_division=0)
        assert macro_f1(gold, pred, labels=classes) == pytest.approx(expected)
        expected = 100 * f1_score(gold, pred, labels=CHEMPROT, average="macro", zero_division=0)
        assert macro_f1(gold, pred, labels=classes, negative="false") == pytest.approx(expected)


def random_multilabel(rng: random.Random, n_labels: int = 10) -> tuple[np.ndarray, np.ndarray]:
    n = rng.randint(1, 40)
    nprng = np.random.default_rng(rng.randrange(2**32))
    gold = (nprng.random((n, n_labels)) < rng.choice([0.0, 0.2, 0.5])).astype(int)
    flips = nprng.random((n, n_labels)) < rng.choice([0.0, 0.1, 0.5])
    return gold, np.where(flips, 1 - gold, gold)


def blue_eval_hoc(gold: np.ndarray, pred: np.ndarray) -> float:
    """METRICS.md's definition (b), written plainly: mean per-document P and R, then their F1."""
    precisions, recalls = [], []
    for i in range(gold.shape[0]):
        gold_set = {j for j in range(gold.shape[1]) if gold[i, j] == 1}
        pred_set = {j for j in range(gold.shape[1]) if pred[i, j] == 1}
        both = len(gold_set & pred_set)
        precisions.append(both / len(pred_set) if pred_set else 0.0)
        recalls.append(both / len(gold_set) if gold_set else 0.0)
    p, r = np.mean(precisions), np.mean(recalls)
    return 100 * 2 * p * r / (p + r) if p + r else 0.0


def test_hoc_average_micro_f1_definitions_match_their_references():
    rng = random.Random("hoc")
    for _ in range(TRIALS):
        gold, pred = random_multilabel(rng)
        micro = 100 * f1_score(gold, pred, average="micro", zero_division=0)
        assert average_micro_f1(gold, pred) == pytest.approx(micro)
        assert average_micro_f1(gold, pred, definition="blue") == pytest.approx(blue_eval_hoc(gold, pred))
        assert micro_f1(gold, pred) == pytest.approx(micro)  # LitCovid: the same micro over rows
        assert precision(gold, pred) == pytest.approx(
            100 * precision_score(gold, pred, average="micro", zero_division=0)
        )
        assert recall(gold, pred) == pytest.approx(100 * recall_score(gold, pred, average="micro", zero_division=0))
        assert macro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="macro", zero_division=0))
        assert accuracy(gold, pred) == pytest.approx(100 * accuracy_score(gold, pred))


def test_hoc_definitions_differ_and_accept_label_sets():
    gold = [{"angiogenesis"}, {"angiogenesis", "immune"}, {"immune"}]
    pred = [{"angiogenesis"}, set(), {"immune", "death", "energetics"}]
    # micro: TP 2, 4 predicted, 4 gold -> 50; BLUE: P mean (1+0+1/3)/3, R mean (1+0+1)/3
    assert average_micro_f1(gold, pred) == pytest.approx(50.0)
    p, r = (1 + 0 + 1 / 3) / 3, 2 / 3
    assert average_micro_f1(gold, pred, definition="blue") == pytest.approx(100 * 2 * p * r / (p + r))


def test_sentence_labels_are_ored_up_to_their_abstract():
    pooled = pool_by_document(["d1", "d1", "d2", "d1"], [{"a"}, {"b"}, set(), {"a", "c"}])
    assert pooled == [frozenset({"a", "b", "c"}), frozenset()]


def test_classification_edge_cases():
    assert micro_f1(["false"] * 3, ["false"] * 3, negative="false") == 0.0  # no gold positives
    assert micro_f1(["CPR:3", "false"], ["false", "false"], negative="false") == 0.0  # predicts nothing
    assert micro_f1(["CPR:3", "CPR:4"], ["CPR:3", "CPR:4"], negative="false") == 100.0
    assert binary_f1([0, 0], [0, 0]) == 0.0
    assert average_micro_f1(np.zeros((2, 10)), np.zeros((2, 10)), definition="blue") == 0.0
    assert accuracy(["yes", "no", "maybe"], ["yes", "no", "maybe"]) == 100.0
    with pytest.raises(ValueError):
        accuracy([], [])
    with pytest.raises(ValueError, match="nothing may be dropped"):
        micro_f1([1, 0], [1], negative=0)
    with pytest.raises(ValueError, match="no negative class"):
        micro_f1([{"Treatment"}], [{"Treatment"}], negative="none")


def test_accuracy_matches_sklearn():
    rng = random.Random("accuracy")
    for _ in range(TRIALS):
        gold, pred = random_labels(rng, ["yes", "no", "maybe"], 0.3)
        assert accuracy(gold, pred) == pytest.approx(100 * accuracy_score(gold, pred))


# --- regression and ranking ----------------------------------------------------------------------


def test_pearson_matches_scipy():
    rng = np.random.default_rng(7)
    for _ in range(TRIALS):
        n = int(rng.integers(2, 100))
        gold = rng.uniform(0, 4, n).round(1)
        pred = gold * rng.uniform(-1, 1) + rng.normal(0, rng.uniform(0.01, 3), n)
        if np.ptp(gold) == 0:
            continue
        assert pearson(gold, pred) == pytest.approx(100 * pearsonr(gold, pred).statistic, abs=1e-9)
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(100.0)


def test_pearson_of_a_constant_prediction_is_zero_and_of_constant_gold_is_an_error():
    assert pearson([1.0, 2.0, 3.0], [2.5, 2.5, 2.5]) == 0.0
    with pytest.raises(ValueError, match="constant"):
        pearson([2.0, 2.0], [1.0, 3.0])
    with pytest.raises(ValueError):
        pearson([1.0], [1.0])


def test_binary_roc_auc_matches_sklearn_including_ties():
    rng = np.random.default_rng(11)
    for _ in range(TRIALS):
        n = int(rng.integers(2, 80))
        gold = rng.integers(0, 2, n)
        if gold.min() == gold.max():
            continue
        scores = (gold * rng.uniform(0, 2) + rng.normal(0, 1, n)).round(int(rng.integers(0, 3)))
        assert roc_auc(gold, scores) == pytest.approx(100 * roc_auc_score(gold, scores), abs=1e-9)
        assert roc_auc(np.where(gold, "AKI", "no"), scores, positive="AKI") == pytest.approx(roc_auc(gold, scores))
    assert roc_auc([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8]) == 100.0


def test_multilabel_roc_auc_is_weighted_by_label_support_as_sklearn_weighted():
    rng = np.random.default_rng(13)
    checked = 0
    for _ in range(TRIALS):
        n = int(rng.integers(4, 80))
        gold = (rng.random((n, 7)) < rng.uniform(0.05, 0.6)).astype(int)
        scores = (gold * rng.uniform(0, 2) + rng.normal(0, 1, gold.shape)).round(1)
        defined = (gold.sum(0) > 0) & (gold.sum(0) < n)
        if not defined.all():
            if defined.any() and (gold.sum(0)[~defined] == 0).all():  # skipped labels have weight 0
                expected = roc_auc_score(gold[:, defined], scores[:, defined], average="weighted")
                assert roc_auc(gold, scores) == pytest.approx(100 * expected, abs=1e-9)
            continue
        checked += 1
        assert roc_auc(gold, scores) == pytest.approx(100 * roc_auc_score(gold, scores, average="weighted"))
        expected_macro = roc_auc_score(gold, scores, average="macro")
        assert roc_auc(gold, scores, average="macro") == pytest.approx(100 * expected_macro)
    assert checked > TRIALS // 4


def test_roc_auc_is_an_error_when_gold_has_one_class():
    with pytest.raises(ValueError, match="one class"):
        roc_auc([1, 1, 1], [0.2, 0.5, 0.9])
    with pytest.raises(ValueError, match="one class"):
        roc_auc(np.array([[1, 0], [1, 1]]), np.array([[0.3, 0.1], [0.4, 0.8]]))  # label 0 always positive


# --- question answering --------------------------------------------------------------------------


# The official SQuAD v1.1 evaluate script's functions, transcribed as the reference.
def squad_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def squad_f1_score(prediction, ground_truth):
    prediction_tokens = squad_normalize_answer(prediction).split()
    ground_truth_tokens = squad_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def squad_exact_match_score(prediction, ground_truth):
    return squad_normalize_answer(prediction) == squad_normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


WORDS = ["The", "the", "a", "An", "anthe", "p53", "IL-2", "(TNF)", "mg/kg", ",", "\u03b1-helix", "Café", "10.5", "DNA."]


def random_answer(rng: random.Random) -> str:
    return rng.choice([" ", "  ", "\t"]).join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))


def test_squad_exact_match_and_f1_match_the_official_v1_1_functions():
    rng = random.Random("squad")
    for _ in range(TRIALS):
        gold = [[random_answer(rng) for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(1, 20))]
        pred = [rng.choice(g) if rng.random() < 0.3 else random_answer(rng) for g in gold]
        em = 100 * sum(
            metric_max_over_ground_truths(squad_exact_match_score, p, g) for p, g in zip(pred, gold, strict=True)
        )
        f1 = 100 * sum(metric_max_over_ground_truths(squad_f1_score, p, g) for p, g in zip(pred, gold, strict=True))
        assert exact_match(gold, pred) == pytest.approx(em / len(gold))
        assert squad_f1(gold, pred) == pytest.approx(f1 / len(gold))


def test_squad_edge_cases():
    assert exact_match(["The p53 protein."], ["p53 protein"]) == 100.0
    assert squad_f1(["p53"], [""]) == 0.0  # empty prediction
    assert exact_match(["the"], [""]) == 100.0 and squad_f1(["the"], [""]) == 0.0  # v1.1's own quirk
    with pytest.raises(ValueError, match="gold answer"):
        squad_f1([[]], ["x"])


def bioasq_reference(gold: list[list[str]], pred: list[list[str]]) -> tuple[float, float, float]:
    """Strict/lenient accuracy and MRR over the top 5, written as plain loops (the measures of Fang et al. 2023)."""
    strict = lenient = reciprocal = 0.0
    for synonyms, answers in zip(gold, pred, strict=True):
        lowered = [s.lower() for s in synonyms]
        top = answers[:5]
        if top and top[0].lower() in lowered:
            strict += 1
        for rank, answer in enumerate(top, start=1):
            if answer.lower() in lowered:
                lenient += 1
                reciprocal += 1 / rank
                break
    return tuple(100 * x / len(gold) for x in (strict, lenient, reciprocal))


def test_bioasq_factoid_measures_match_plain_loops():
    rng = random.Random("bioasq")
    entities = ["BRCA1", "brca1", "TP53", "Imatinib", "imatinib mesylate", "EGFR", "HER2", "insulin"]
    for _ in range(TRIALS):
        gold = [rng.sample(entities, rng.randint(1, 3)) for _ in range(rng.randint(1, 15))]
        pred = [[rng.choice(entities).upper() if rng.random() < 0.2 else rng.choice(entities) for _ in range(7)][
            : rng.randint(0, 7)] for _ in gold]  # fmt: skip
        expected = bioasq_reference(gold, pred)
        assert (strict_accuracy(gold, pred), lenient_accuracy(gold, pred), mrr(gold, pred)) == pytest.approx(expected)


def test_bioasq_matching_ignores_case_and_accepts_nested_synonym_lists():
    gold = [[["Imatinib", "Gleevec"]], ["TP53"]]
    pred = [["aspirin", " gleevec "], ["tp53", "p53"]]
    assert strict_accuracy(gold, pred) == 50.0
    assert lenient_accuracy(gold, pred) == 100.0
    assert mrr(gold, pred) == pytest.approx(75.0)
    assert lenient_accuracy([["x"]], [["a", "b", "c", "d", "e", "x"]]) == 0.0  # sixth answer is beyond the top 5


# --- the plugin contributions --------------------------------------------------------------------

SPECS = {spec.slug: spec for spec in METRIC_SPECS}


def test_every_built_in_metric_contribution_resolves_to_an_engine_metric_function():
    import workers.engine.metrics as engine_metrics

    for spec in METRIC_SPECS:
        function = spec.resolve()
        assert callable(function) and function.__module__.startswith("workers.engine.metrics."), spec.slug
        assert getattr(engine_metrics, function.__name__) is function, spec.slug


PERFECT = {
    "entity-f1": ([["B-Chemical", "I-Chemical", "O"]], {}),
    "entity-precision": ([["B", "O", "B"]], {"mode": "strict", "scheme": "IOB2"}),
    "entity-recall": ([["U-X", "O", "B-X", "L-X"]], {"mode": "strict", "scheme": "BIOUL"}),
    "token-macro-f1": ([["I-PAR", "I-INT", "O", "I-OUT"]], {"labels": ("I-PAR", "I-INT", "I-OUT", "O")}),
    "micro-f1": (["CPR:3", "false", "CPR:9"], {"negative": "false"}),
    "macro-f1": (["a", "b", "c"], {}),
    "binary-f1": (["1", "0", "1"], {}),
    "precision": ([1, 0, 1], {}),
    "recall": (["DDI-effect", "DDI-false"], {"negative": "DDI-false"}),
    "average-micro-f1": ([[1, 0, 1], [0, 1, 0]], {}),
    "hoc-blue-f1": ([[1, 0, 1], [0, 1, 0]], {}),  # average_micro_f1 with the spec's definition="blue"
    "pearson": ([0.5, 1.5, 4.0], {}),
    "accuracy": (["yes", "no", "maybe"], {}),
    "exact-match": (["warfarin"], {}),
    "squad-f1": (["500 mg daily"], {}),
    "strict-accuracy": ([["TP53"]], {}),
    "lenient-accuracy": ([["TP53"]], {}),
    "mrr": ([["TP53"]], {}),
}


@pytest.mark.parametrize("slug", sorted(SPECS))
def test_every_metric_takes_gold_pred_and_options_and_scores_a_perfect_prediction_100(slug):
    if slug == "roc-auc":
        gold, pred, options = [0, 1, 1], [0.1, 0.7, 0.9], {}
    else:
        gold, options = PERFECT[slug]
        pred = gold
    assert SPECS[slug].compute(gold, pred, **options) == pytest.approx(100.0)


def test_the_metrics_import_without_django():
    code = "import sys, workers.engine.metrics; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], check=False).returncode == 0


def test_an_unknown_option_is_an_error_and_an_unimportable_implementation_is_named():
    with pytest.raises(TypeError):
        SPECS["accuracy"].compute([1], [1], negative=0)
    missing = dataclasses.replace(SPECS["accuracy"], implementation="workers.engine.metrics:no_such_metric")
    with pytest.raises(
        ImplementationError, match=r"metric accuracy: cannot import 'workers\.engine\.metrics:no_such_metric'"
    ):
        missing.compute([1], [1])


# --- scoring: each metric gets the dataset facts its spec asks for --------------------------------


def test_score_predictions_passes_the_negative_class_to_a_metric_whose_context_asks_for_it():
    from biolm.plugins import collect_contributions, get_plugin_manager
    from biolm.specs import MetricSpec
    from workers.engine.encoding import LabelSpace
    from workers.engine.prediction_scoring import score_predictions
    from workers.engine.task import Task

    received: dict[str, dict] = {}

    def recorder(slug):
        def metric(gold, predictions, **options):
            received[slug] = options
            return micro_f1(gold, predictions, **options) if options else accuracy(gold, predictions)

        return metric

    asks = MetricSpec("asks", "Asks", "", recorder("asks"), context=("negative",))
    blind = MetricSpec("blind", "Blind", "", recorder("blind"))
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    chemprot = Task.of(contributions, "chemprot")
    metrics = {**contributions.metrics, "asks": asks, "blind": blind}
    dataset = dataclasses.replace(chemprot.dataset, metric="asks", companion_metrics=("blind", "micro-f1"))
    task = Task(dataset, chemprot.task_type, metrics)
    labels = LabelSpace(("CPR:3", "CPR:4", "false"))
    gold = ["CPR:3", "false", "CPR:4", "false", "CPR:3"]
    predicted = ["CPR:3", "CPR:4", "CPR:4", "false", "false"]

    scores = score_predictions(task, labels, [{"label": g} for g in gold], predicted)
    assert received == {"asks": {"negative": "false"}, "blind": {}}
    assert scores["asks"] == pytest.approx(micro_f1(gold, predicted, negative="false"))
    assert scores["asks"] == scores["micro-f1"] != scores["blind"]
    assert scores["blind"] == pytest.approx(accuracy(gold, predicted))

    received.clear()  # a dataset without a negative class: the option is left out, not passed as None
    plain = Task(dataclasses.replace(dataset, negative_label=""), chemprot.task_type, metrics)
    score_predictions(plain, labels, [{"label": g} for g in gold], predicted)
    assert received == {"asks": {}, "blind": {}}
