"""Extractive QA (Yang et al. 2022; BioASQ factoid of Fang et al. 2023) on tiny models, real fixtures, no mocks."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.__main__ import main
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import TaskOptions, formulation_class
from workers.engine.formulations.base import ModelSource
from workers.engine.formulations.extractive_qa import ExtractiveQA, question_key
from workers.engine.metrics import exact_match, squad_f1
from workers.engine.runs import FinetuneSpec, prepare
from workers.engine.task import Task
from workers.engine.tokenization import train_wordpiece
from workers.engine.training import Hyperparameters, TrainingContext, predict, train

FIXTURES = Path(__file__).parent / "fixtures"
EMRQA = {subset: FIXTURES / "clinical" / "emrqa" / subset for subset in ("medication", "relation", "heart-disease")}
BIOASQ = FIXTURES / "sentence_level" / "bioasq-factoid"
CONTRIBUTIONS = collect_contributions(get_plugin_manager(load_entrypoints=False))
DATASETS = {slug: Task.of(CONTRIBUTIONS, slug) for slug in CONTRIBUTIONS.datasets}  # slug -> Task
CPU = torch.device("cpu")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models on a shared 2-core machine: one intra-op thread avoids spinning against other jobs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- windows ---------------------------------------------------------------------------------


WORDS = [f"w{i}" for i in range(100)]


@pytest.fixture(scope="module")
def word_tokenizer():
    """A WordPiece vocabulary where every ``wN`` is one token, so token counts are word counts."""
    tokenizer = train_wordpiece([" ".join(WORDS)] * 20 + ["what is it ?"], vocab_size=400)
    assert len(tokenizer(" ".join(WORDS), add_special_tokens=False)["input_ids"]) == len(WORDS)
    return tokenizer


def synthetic_row(n_words: int, answer_words: tuple[int, int] | None, question_words: int = 5) -> dict:
    words = [WORDS[(7 * i) % len(WORDS)] for i in range(n_words)]
    context = " ".join(words)
    starts = [m.start() for m in re.finditer(r"\S+", context)]
    answers = {"text": [], "answer_start": []}
    if answer_words is not None:
        first, last = answer_words
        begin, end = starts[first], starts[last] + len(words[last])
        answers = {"text": [context[begin:end]], "answer_start": [begin]}
    question = " ".join(WORDS[i % len(WORDS)] for i in range(question_words))
    return {"id": f"q{n_words}", "question": question, "context": context, "answers": answers}


def word_starts(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", text)]


def formulation(dataset: str, tokenizer, **options) -> ExtractiveQA:
    return ExtractiveQA(DATASETS[dataset], LabelSpace(()), tokenizer, TaskOptions(**options), 512)


def test_qa_datasets_select_the_extractive_formulation():
    for slug in ("emrqa-medication", "emrqa-relation", "emrqa-heart-disease", "bioasq-factoid"):
        assert formulation_class(DATASETS[slug], TaskOptions()) is ExtractiveQA


def test_windows_cover_every_context_token_with_seed_002_lengths(word_tokenizer):
    qa = formulation("emrqa-medication", word_tokenizer)
    # Yang et al. 2022: 446 tokens per window *including* [CLS], [SEP], [SEP]; so 443 context tokens.
    per_window, stride = 446 - 3, 396
    for n_words in (1, 443, 444, 839, 840, 2000):
        row = synthetic_row(n_words, None, question_words=100)
        features = qa.encode([row])
        expected = 1 + math.ceil(max(0, n_words - per_window) / stride)
        assert len(features) == expected, n_words
        starts = word_starts(row["context"])
        covered = set()
        for k, feature in enumerate(features):
            ids = feature.input_ids
            sep = word_tokenizer.sep_token_id
            assert ids[0] == word_tokenizer.cls_token_id and ids[-1] == sep
            assert ids.index(sep) == 1 + 64  # the 100-word question is cut to 64 tokens
            context_tokens = len(ids) - 64 - 3
            assert context_tokens == min(per_window, n_words - k * stride)
            assert len(ids) <= 64 + 446
            first_word = starts.index(int(feature.offsets[0, 0]))
            assert first_word == k * stride  # windows start 396 context tokens apart
            covered.update(range(first_word, first_word + context_tokens))
            assert [starts.index(int(o)) for o in feature.offsets[:, 0]] == list(
                range(first_word, first_word + context_tokens)
            )
        assert covered == set(range(n_words))


def test_an_answer_across_a_window_boundary_is_labelled_in_the_window_holding_it_whole(word_tokenizer):
    qa = formulation("emrqa-medication", word_tokenizer)
    # Windows hold context words 0-442, 396-838 and 792-999: words 440-445 cross the first boundary.
    row = synthetic_row(1000, (440, 445))
    features = qa.encode([row])
    assert len(features) == 3
    assert features[0].labels == [0, 0] and features[2].labels == [0, 0]
    start, end = features[1].labels
    offset = features[1].context_start
    begin = row["answers"]["answer_start"][0]
    assert features[1].offsets[start - offset, 0] == begin
    assert features[1].offsets[end - offset, 1] == begin + len(row["answers"]["text"][0])
    assert end - start == 5 and start == offset + 440 - 396

    inside_both = synthetic_row(1000, (400, 402))  # in the 47-word overlap of windows 0 and 1
    both = qa.encode([inside_both])
    assert both[0].labels == [both[0].context_start + 400, both[0].context_start + 402]
    assert both[1].labels == [both[1].context_start + 4, both[1].context_start + 6]
    assert both[2].labels == [0, 0]


def test_question_and_window_options_are_checked_against_the_model_length(word_tokenizer):
    with pytest.raises(ValueError, match="more than --max-length 256"):
        ExtractiveQA(DATASETS["emrqa-medication"], LabelSpace(()), word_tokenizer, TaskOptions(), 256)
    with pytest.raises(ValueError, match="windows would skip context"):
        formulation("emrqa-medication", word_tokenizer, qa_window=400, qa_stride=399)


# -- decoding --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def medication(tmp_path_factory):
    spec = FinetuneSpec.build(
        dataset="emrqa-medication", out=tmp_path_factory.mktemp("med"), architecture="bert:tiny",
        data_dir=EMRQA["medication"],
    )  # fmt: skip
    return prepare(spec)


def perfect_logits(features) -> list[np.ndarray]:
    logits = []
    for feature in features:
        values = np.full((len(feature), 2), -10.0)
        start, end = feature.labels
        if (start, end) != (0, 0):
            values[start, 0] = values[end, 1] = 10.0
        logits.append(values)
    return logits


def test_decoding_perfect_logits_recovers_every_gold_answer_exactly(medication):
    features, rows = medication.features["test"], medication.data.splits["test"]
    assert len(features) > 2 * len(rows)  # long notes: several windows per question
    predicted = medication.formulation.decode(features, perfect_logits(features), rows, None)
    assert predicted == [row["answers"]["text"][0] for row in rows]
    factoid = ExtractiveQA(DATASETS["bioasq-factoid"], LabelSpace(()), medication.tokenizer, TaskOptions(), 512)
    ranked = factoid.decode(features, perfect_logits(features), rows, None)
    assert [answers[0] for answers in ranked] == [row["answers"]["text"][0] for row in rows]
    assert all(len(answers) == 5 for answers in ranked)


def brute_force_n_best(qa: ExtractiveQA, features, logits, context: str, n_best: int) -> list[str]:
    """Every (start, end) pair of context tokens in every window, by plain loops."""
    spans = []
    for feature, values in zip(features, logits, strict=True):
        context_positions = range(feature.context_start, feature.context_start + len(feature.offsets))
        for s in context_positions:
            for e in context_positions:
                if s <= e and e - s + 1 <= qa.options.max_answer_length:
                    first = feature.offsets[s - feature.context_start, 0]
                    last = feature.offsets[e - feature.context_start, 1]
                    spans.append((values[s, 0] + values[e, 1], context[first:last].strip()))
    answers, seen = [], set()
    for _, text in sorted(spans, key=lambda span: -span[0]):
        if text.lower() not in seen:
            seen.add(text.lower())
            answers.append(text)
    return answers[:n_best]


def test_decoding_returns_the_best_valid_spans_never_too_long_nor_in_the_question(word_tokenizer):
    factoid = formulation("bioasq-factoid", word_tokenizer, qa_window=40, qa_stride=30, max_answer_length=4)
    repetitive = {**synthetic_row(70, None), "id": "a"}
    repetitive["context"] = " ".join(["w1", "w2"] * 35)  # many windows offer the same few texts
    rows = [{**synthetic_row(90, None), "id": "b"}, repetitive]
    features = factoid.encode(rows)
    rng = np.random.default_rng(3)
    logits = [rng.normal(size=(len(f), 2)) for f in features]
    for feature, values in zip(features, logits, strict=True):
        values[1 : feature.context_start - 1] += 100.0  # the question's tokens score best of all
        values[feature.context_start + 1, 0] += 50.0  # and a span far longer than 4 tokens
        values[feature.context_start + 9, 1] += 50.0
    predicted = factoid.decode(features, logits, rows, None)
    for index, row in enumerate(rows):
        own = [i for i, f in enumerate(features) if f.example == index]
        expected = brute_force_n_best(
            factoid, [features[i] for i in own], [logits[i] for i in own], row["context"], n_best=5
        )
        assert predicted[index] == expected
        for text in predicted[index]:
            assert len(text.split()) <= 4 and text in row["context"]
    assert len(predicted[1]) == len({t.lower() for t in predicted[1]}) == 5  # 8 distinct texts, repeated often

    # One word fills every window's best spans: the other answers are found among the held-back ones.
    single_token = formulation("bioasq-factoid", word_tokenizer, qa_window=40, qa_stride=30, max_answer_length=1)
    crowded = {**synthetic_row(66, None), "id": "c", "context": " ".join(["w1"] * 60 + [f"w{i}" for i in range(2, 8)])}
    features = single_token.encode([crowded])
    logits = [rng.normal(size=(len(f), 2)) for f in features]
    for feature, values in zip(features, logits, strict=True):
        for i, (first, last) in enumerate(feature.offsets):
            if crowded["context"][first:last] == "w1":
                values[feature.context_start + i, 0] += 10.0
    expected = brute_force_n_best(single_token, features, logits, crowded["context"], n_best=5)
    assert single_token.decode(features, logits, [crowded], None) == [expected]
    assert expected[0] == "w1" and len(expected) == 5

    # Five distinct texts among the spans offered, yet the second window held back a better one (w8).
    words = ["w1"] * 16 + ["w2", "w3", "w4", "w5"] + ["w9"] * 17 + ["w1"] * 21 + ["w8"] + ["w9"] * 8
    hidden = {**crowded, "id": "d", "context": " ".join(words)}
    features = single_token.encode([hidden])
    assert len(features) == 2 and features[1].window_start == 30
    scores = {"w1": 10.0, "w2": 5.4, "w3": 5.3, "w4": 5.2, "w5": 5.1, "w8": 7.0, "w9": 0.0}
    logits = [rng.normal(scale=0.01, size=(len(f), 2)) for f in features]
    for feature, values in zip(features, logits, strict=True):
        for i, (first, last) in enumerate(feature.offsets):
            values[feature.context_start + i, 0] += scores[hidden["context"][first:last]]
    assert single_token.decode(features, logits, [hidden], None) == [["w1", "w8", "w2", "w3", "w4"]]


# -- scoring ---------------------------------------------------------------------------------


def test_bioasq_snippets_of_one_question_are_merged_and_the_question_scored_once(word_tokenizer):
    qa = formulation("bioasq-factoid", word_tokenizer, n_best=2)
    rows = [
        {"id": "q1_001", "question": "w1", "context": "w3 w4", "answers": {"text": ["w4"], "answer_start": [3]}},
        {"id": "q1_002", "question": "w1", "context": "w5 w6", "answers": {"text": ["w5"], "answer_start": [0]}},
        {"id": "q2_001", "question": "w2", "context": "w7 w8", "answers": {"text": ["w8"], "answer_start": [3]}},
    ]
    assert [question_key(row["id"]) for row in rows] == ["q1", "q1", "q2"]
    features = qa.encode(rows)
    logits = []
    for feature in features:
        values = np.zeros((len(feature), 2))
        c = feature.context_start
        # q1_001 is sure of w3, q1_002 of w5 (more sure still); q2 prefers w7, then w8, then "w7 w8".
        boost = {0: 4.0, 1: 8.0, 2: 1.0}[feature.example]
        values[c, 0] = values[c, 1] = boost
        if feature.example == 2:
            values[c + 1, 0] = 1.2
        logits.append(values)
    predicted = qa.decode(features, logits, rows, None)
    assert predicted[0] == predicted[1] == ["w5", "w3"]  # by probability across both snippets
    assert predicted[2] == ["w7", "w8"]
    scores = qa.score(rows, predicted, logits)
    # Two questions: q1's first answer w5 is gold (from its second snippet); q2's gold w8 is second.
    assert scores == pytest.approx({"strict-accuracy": 50.0, "lenient-accuracy": 100.0, "mrr": 75.0})


def test_a_split_without_gold_answers_is_unscored_and_a_partial_one_refused(word_tokenizer):
    qa = formulation("emrqa-relation", word_tokenizer)
    empty = {"text": [], "answer_start": []}
    rows = [{"id": "a", "question": "w1", "context": "w2", "answers": empty}]
    assert qa.score(rows, ["w2"], []) == {"squad-f1": None, "exact-match": None}
    rows.append({"id": "b", "question": "w1", "context": "w2", "answers": {"text": ["w2"], "answer_start": [0]}})
    with pytest.raises(ValueError, match="1 of 2 questions have no gold answer"):
        qa.score(rows, ["w2", "w2"], [])


# -- the CLI end to end ----------------------------------------------------------------------


def gold_answers(path: Path) -> list[list[str]]:
    data = json.loads(path.read_text())
    return [
        [answer["text"] for answer in qa.get("answers", [])]
        for article in data["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def finetune_cli(tmp_path: Path, dataset: str, data_dir: Path, architecture: str = "bert:tiny") -> dict:
    out = tmp_path / dataset
    args = ["finetune", "--architecture", architecture, "--dataset", dataset, "--data-dir", str(data_dir)]
    assert main([*args, "--grid", "single", "--seeds", "1", "--epochs", "1", "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("subset", sorted(EMRQA))
def test_cli_fine_tunes_bert_tiny_on_each_emrqa_fixture(tmp_path, subset):
    dataset = f"emrqa-{subset}"
    results = finetune_cli(tmp_path, dataset, EMRQA[subset])
    assert results["metric"] == "squad-f1" and results["formulation"]["qa_window"] == 446
    run = results["runs"][0]
    predictions = results["predictions"]["42"]
    gold = gold_answers(EMRQA[subset] / "test.json")
    assert len(predictions) == len(gold) and all(isinstance(p, str) for p in predictions)
    assert run["metrics"]["test"] == pytest.approx(
        {"squad-f1": squad_f1(gold, predictions), "exact-match": exact_match(gold, predictions)}
    )
    assert set(run["metrics"]["dev"]) == {"squad-f1", "exact-match"}
    assert results["test"]["mean"] == pytest.approx(run["metrics"]["test"]["squad-f1"])


def test_cli_fine_tunes_bert_tiny_on_the_bioasq_factoid_fixture(tmp_path):
    # BioBERT's test file has no answers: the run completes and the scores are undefined.
    results = finetune_cli(tmp_path, "bioasq-factoid", BIOASQ)
    assert results["runs"][0]["metrics"]["test"] == dict.fromkeys(("strict-accuracy", "lenient-accuracy", "mrr"))
    assert results["test"] is None
    assert len(results["predictions"]["42"]) == 1 and 1 <= len(results["predictions"]["42"][0]) <= 5

    answered = tmp_path / "answered"
    answered.mkdir()
    shutil.copy(BIOASQ / "BioASQ-train-factoid-7b.json", answered / "train.json")
    shutil.copy(BIOASQ / "BioASQ-train-factoid-7b.json", answered / "test.json")
    results = finetune_cli(tmp_path, "bioasq-factoid", answered)
    ranked = results["predictions"]["42"]
    gold = gold_answers(answered / "test.json")
    scores = results["runs"][0]["metrics"]["test"]
    assert all(1 <= len(answers) <= 5 for answers in ranked)
    ranks = []  # 1-based rank of the first gold synonym among a question's answers, or None
    for answers, golds in zip(ranked, gold, strict=True):
        hits = [r for r, answer in enumerate(answers, 1) if answer.lower() in {g.lower() for g in golds}]
        ranks.append(hits[0] if hits else None)
    assert scores["strict-accuracy"] == pytest.approx(100 * ranks.count(1) / 2)
    assert scores["lenient-accuracy"] == pytest.approx(100 * sum(r is not None for r in ranks) / 2)
    assert scores["mrr"] == pytest.approx(100 * sum(1 / r for r in ranks if r) / 2)
    assert set(scores) == {"strict-accuracy", "lenient-accuracy", "mrr"}
    assert results["test"]["mean"] == pytest.approx(scores["strict-accuracy"])


# -- learning --------------------------------------------------------------------------------


def dose_rows(rng: random.Random, n: int, offset: int) -> list[dict]:
    """'What is the dose?': the answer is the word after 'dose', somewhere in 16 filler words."""
    rows = []
    for i in range(n):
        words = [f"filler{rng.randrange(40)}" for _ in range(16)]
        at, dose = rng.randrange(17), f"{rng.randrange(1, 40) * 10}mg"
        words[at:at] = ["dose", dose]
        context = " ".join(words)
        start = len(" ".join(words[: at + 1])) + 1
        answers = {"text": [dose], "answer_start": [start]}
        rows.append({"id": str(offset + i), "question": "what is the dose ?", "context": context, "answers": answers})
    return rows


def test_a_tiny_model_learns_to_extract_the_answer():
    rng = random.Random(0)
    train_rows, test_rows = dose_rows(rng, 200, 0), dose_rows(rng, 50, 1000)
    tokenizer = train_wordpiece([row["context"] for row in train_rows] + ["what is the dose ?"], 1024)
    qa = ExtractiveQA(DATASETS["emrqa-medication"], LabelSpace(()), tokenizer, TaskOptions(), 512)
    train_features, test_features = qa.encode(train_rows), qa.encode(test_rows)

    def exact_match(model: torch.nn.Module) -> float:
        logits, _ = predict(
            model, test_features, TrainingContext(CPU, None, tokenizer.pad_token_id, qa.collate, eval_batch_size=64)
        )
        return qa.score(test_rows, qa.decode(test_features, logits, test_rows, model), logits)["exact-match"]

    torch.manual_seed(0)
    model = qa.build_model(ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer)))
    before = exact_match(model)
    train(
        model,
        train_features,
        Hyperparameters(1e-3, 16, 3),
        0,
        TrainingContext(CPU, None, tokenizer.pad_token_id, qa.collate),
    )
    after = exact_match(model)
    assert before <= 10 and after >= 80, (before, after)


# -- Longformer ------------------------------------------------------------------------------


def test_longformer_gets_global_attention_on_cls_and_the_question_and_trains(tmp_path):
    spec = FinetuneSpec.build(
        dataset="emrqa-relation", out=tmp_path, architecture="longformer:tiny", data_dir=EMRQA["relation"]
    )
    prepared = prepare(spec)
    qa, features = prepared.formulation, prepared.features["test"]
    batch = qa.collate(features[:3], prepared.tokenizer.pad_token_id)
    sep = prepared.tokenizer.sep_token_id
    for row, feature in enumerate(features[:3]):
        question_end = feature.input_ids.index(sep)  # [CLS] and the question come before the first [SEP]
        expected = [1] * question_end + [0] * (batch["input_ids"].shape[1] - question_end)
        assert batch["global_attention_mask"][row].tolist() == expected

    model = qa.build_model(prepared.source)
    assert model.config.model_type == "longformer"
    model.eval()
    with torch.no_grad():
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        with_global = model(**inputs).logits
        without = model(**{**inputs, "global_attention_mask": torch.zeros_like(batch["global_attention_mask"])}).logits
    assert not torch.allclose(with_global, without)  # the mask reaches the model

    before = [p.detach().clone() for p in model.parameters()]
    pad = prepared.tokenizer.pad_token_id
    stats = train(
        model, prepared.features["train"], Hyperparameters(1e-3, 4, 2), 0, TrainingContext(CPU, None, pad, qa.collate)
    )
    assert stats.steps == 2 and math.isfinite(stats.final_loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    logits, _ = predict(model, features, TrainingContext(CPU, None, pad, qa.collate, eval_batch_size=8))
    rows = prepared.data.splits["test"]
    predicted = qa.decode(features, logits, rows, model)
    assert len(predicted) == len(rows) and set(qa.score(rows, predicted, logits)) == {"squad-f1", "exact-match"}
