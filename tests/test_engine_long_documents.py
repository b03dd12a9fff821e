"""Long documents for sequence tasks (Li et al. 2022, section 3.5): snippets pooled, or the whole note in a long model.

Real tiny models and real tokenizers, no mocks; the documents are synthetic (a few hundred to a
thousand tokens) because the clinical fixtures' notes are mostly short.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import AutoConfig, AutoModelForSequenceClassification

from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.__main__ import main
from workers.engine.architectures import bigbird_block_sparse_threshold, build_config, model_max_tokens
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import ModelSource, TaskOptions, formulation_class, formulation_for
from workers.engine.formulations.long_document import (
    BigBirdGuard,
    LongDocumentClassification,
    SpecialTemplate,
    longest_first,
)
from workers.engine.formulations.sequence import SequenceClassification
from workers.engine.task import Task
from workers.engine.tokenization import roberta_style, train_wordpiece
from workers.engine.training import Hyperparameters, TrainingContext, predict, train

CLINICAL_FIXTURES = Path(__file__).parent / "fixtures" / "clinical"
WORDS = [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6)]  # 36 words, one token each


@pytest.fixture(scope="module")
def datasets() -> dict[str, Task]:
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    return {slug: Task.of(contributions, slug) for slug in contributions.datasets}


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece([" ".join(WORDS)] * 20, vocab_size=200)


def document(n_words: int, offset: int = 0) -> str:
    return " ".join(WORDS[(offset + i * 7) % len(WORDS)] for i in range(n_words))


def formulation(datasets, tokenizer, slug="mimic-aki", source=None, labels=None, **options):
    options.setdefault("long_documents", "snippets")
    labels = labels or LabelSpace(("0", "1"))
    return LongDocumentClassification(datasets[slug], labels, tokenizer, TaskOptions(**options), 512, source=source)


def source(architecture: str, tokenizer) -> ModelSource:
    return ModelSource(architecture=architecture, vocab_size=len(tokenizer))


def row(text: str, label: str = "1", pair: str = "") -> dict:
    return {"id": "x", "text": text, "text_pair": pair, "labels": [label], "score": 0.5}


def snippets_of(feature) -> list[list[int]]:
    out, start = [], 0
    for length in feature.snippet_lengths:
        out.append(feature.input_ids[start : start + length])
        start += length
    return out


# ---------------------------------------------------------------------------
# Splitting


def test_snippets_cover_every_token_once_in_order_with_cls_and_sep_each(datasets, tokenizer):
    text = document(300)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 300  # every synthetic word is one token
    long_docs = formulation(datasets, tokenizer, snippet_length=32, max_snippets=100)
    [feature] = long_docs.encode([row(text)])
    snippets = snippets_of(feature)
    assert len(snippets) == math.ceil(300 / (32 - 2))
    assert all(len(s) <= 32 for s in snippets)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert all(s[0] == cls and s[-1] == sep and cls not in s[1:-1] and sep not in s[1:-1] for s in snippets)
    assert [t for s in snippets for t in s[1:-1]] == ids
    assert len(feature) == 300 + 2 * len(snippets)  # the training loop's real-token count
    assert long_docs.describe()["documents_cut"] == 0


def test_the_tail_beyond_max_snippets_is_dropped_and_counted(datasets, tokenizer):
    ids = tokenizer(document(300), add_special_tokens=False)["input_ids"]
    long_docs = formulation(datasets, tokenizer, snippet_length=32, max_snippets=3)
    features = long_docs.encode([row(document(300)), row(document(50))])
    assert [len(f.snippet_lengths) for f in features] == [3, 2]
    assert [t for s in snippets_of(features[0]) for t in s[1:-1]] == ids[: 3 * 30]  # the first 90 tokens
    described = long_docs.describe()
    assert (described["documents"], described["documents_cut"], described["tokens_dropped"]) == (2, 1, 300 - 90)
    assert "tail" in described["dropped"]


def test_the_shorter_member_of_a_pair_is_repeated_in_every_snippet(datasets, tokenizer):
    question, passage = document(5, offset=3), document(100)
    q_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    p_ids = tokenizer(passage, add_special_tokens=False)["input_ids"]
    long_docs = formulation(
        datasets, tokenizer, slug="pubmedqa", labels=LabelSpace(("yes", "no", "maybe")), snippet_length=32
    )
    [feature] = long_docs.encode([row(question, "yes", pair=passage)])
    budget = 32 - 3 - len(q_ids)  # [CLS] question [SEP] chunk [SEP]
    assert len(feature.snippet_lengths) == math.ceil(100 / budget)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    chunks, start = [], 0
    for snippet, length in zip(snippets_of(feature), feature.snippet_lengths, strict=True):
        types = feature.token_type_ids[start : start + length]
        start += length
        assert snippet[: len(q_ids) + 2] == [cls, *q_ids, sep] and snippet[-1] == sep
        assert types == [0] * (len(q_ids) + 2) + [1] * (length - len(q_ids) - 2)  # the pair's order is kept
        chunks.extend(snippet[len(q_ids) + 2 : -1])
    assert chunks == p_ids


def test_the_special_template_is_read_off_a_roberta_style_tokenizer(tokenizer):
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, **{w: 5 + i for i, w in enumerate(WORDS)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    roberta = roberta_style(backend)
    for tok in (roberta, tokenizer):
        template = SpecialTemplate.of(tok)
        first, second = document(7), document(4, offset=1)
        a = tok(first, add_special_tokens=False)["input_ids"]
        b = tok(second, add_special_tokens=False)["input_ids"]
        assert template.build(a)[0] == tok(first)["input_ids"]
        assert template.build(a, b)[0] == tok(first, second)["input_ids"]
    assert SpecialTemplate.of(roberta).specials(pair=True) == 4  # <s> A </s></s> B </s>


def test_longest_first_keeps_what_the_tokenizer_keeps(tokenizer):
    for first, second, budget in [(50, 10, 40), (10, 50, 40), (30, 30, 41), (25, 24, 10), (5, 5, 20), (2, 3, 3)]:
        a, b = document(first), document(second, offset=2)
        expected = tokenizer(a, b, truncation="longest_first", max_length=budget + 3, return_token_type_ids=True)
        kept = longest_first(first, second, budget)
        assert kept == (expected["token_type_ids"].count(0) - 2, expected["token_type_ids"].count(1) - 1)


# ---------------------------------------------------------------------------
# Pooling


def snippet_model(datasets, tokenizer, pooling="max", kind="single", n_labels=2):
    names = ("score",) if kind == "regression" else tuple(str(i) for i in range(n_labels))
    labels = LabelSpace(names, kind)
    long_docs = formulation(
        datasets,
        tokenizer,
        labels=labels,
        snippet_length=32,
        snippet_pooling=pooling,
        source=source("bert:tiny", tokenizer),
    )
    torch.manual_seed(0)
    return long_docs, long_docs.build_model(source("bert:tiny", tokenizer)).eval()


def test_padding_snippets_change_nothing_and_are_never_encoded(datasets, tokenizer):
    long_docs, model = snippet_model(datasets, tokenizer)
    short, long = long_docs.encode([row(document(12)), row(document(80, offset=5))])
    assert (len(short.snippet_lengths), len(long.snippet_lengths)) == (1, 3)
    encoded_rows = []

    def count_rows(module, args, kwargs, output):
        encoded_rows.append(len(kwargs["input_ids"]))

    model.encoder.register_forward_hook(count_rows, with_kwargs=True)
    pad = tokenizer.pad_token_id
    with torch.no_grad():
        batch = long_docs.collate([short, long], pad)
        assert batch["input_ids"].shape == (2, 3, 32) and batch["snippet_mask"].tolist() == [[1, 0, 0], [1, 1, 1]]
        batch.pop("labels")
        together = model(**batch).logits
        alone = model(**{k: v for k, v in long_docs.collate([short], pad).items() if k != "labels"}).logits
    assert encoded_rows == [4, 1]  # 1 + 3 real snippets, then the short document alone
    torch.testing.assert_close(together[0], alone[0], rtol=0, atol=1e-5)
    # The padding overhead counts what the encoder computes: 4 snippets of 32, not the 6 of the tensor.
    assert long_docs.computed_tokens(batch) == 4 * 32


def test_max_and_mean_pooling_equal_a_manual_pooling_of_the_cls_states(datasets, tokenizer):
    long_docs, model = snippet_model(datasets, tokenizer, pooling="max")
    docs = long_docs.encode([row(document(70)), row(document(20, offset=9))])
    batch = long_docs.collate(docs, tokenizer.pad_token_id)
    batch.pop("labels")
    with torch.no_grad():
        max_logits = model(**batch).logits
        model.pooling = "mean"
        mean_logits = model(**batch).logits
        for index, feature in enumerate(docs):  # each snippet on its own, no padding at all
            states = torch.stack(
                [model.encoder(input_ids=torch.tensor([s])).last_hidden_state[0, 0] for s in snippets_of(feature)]
            )
            weight, bias = model.classifier.weight, model.classifier.bias
            torch.testing.assert_close(max_logits[index], states.max(dim=0).values @ weight.T + bias, atol=1e-5, rtol=0)
            torch.testing.assert_close(mean_logits[index], states.mean(dim=0) @ weight.T + bias, atol=1e-5, rtol=0)
    assert not torch.allclose(max_logits[0], mean_logits[0], atol=1e-4)


@pytest.mark.parametrize("kind", ["single", "multi", "regression"])
def test_the_loss_follows_the_label_kind(datasets, tokenizer, kind):
    long_docs, model = snippet_model(datasets, tokenizer, kind=kind, n_labels=3)
    labels = {"single": [2, 0], "multi": [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]], "regression": [0.7, -1.2]}[kind]
    docs = long_docs.encode([row(document(40)), row(document(9))])
    batch = long_docs.collate(docs, tokenizer.pad_token_id)
    batch["labels"] = torch.tensor(labels)
    with torch.no_grad():
        output = model(**batch)
    logits, y = output.logits.double().numpy(), np.array(labels)
    if kind == "single":
        log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        expected = -log_softmax[np.arange(2), y].mean()
    elif kind == "multi":
        probability = 1 / (1 + np.exp(-logits))
        expected = -(y * np.log(probability) + (1 - y) * np.log(1 - probability)).mean()
    else:
        expected = ((logits[:, 0] - y) ** 2).mean()
    assert output.logits.shape == (2, 1 if kind == "regression" else 3)
    assert float(output.loss) == pytest.approx(expected, rel=1e-5)


# ---------------------------------------------------------------------------
# Full documents in long models


def test_model_lengths_come_from_the_spec_and_the_position_embeddings(tokenizer, tmp_path):
    assert model_max_tokens(source("longformer:tiny", tokenizer)) == 1024  # 1,026 positions - padding offset
    assert model_max_tokens(source("big-bird:tiny", tokenizer)) == 4096
    assert model_max_tokens(source("bert:tiny", tokenizer)) == 512
    assert model_max_tokens(source("roberta:tiny", tokenizer)) == 512
    assert model_max_tokens(source("bioformer:16l", tokenizer)) == 512  # 1,024 positions, a 512-token spec
    for model_type, positions, expected in [("longformer", 4098, 4096), ("roberta", 514, 512), ("bert", 1024, 1024)]:
        directory = tmp_path / model_type
        AutoConfig.for_model(model_type, max_position_embeddings=positions).save_pretrained(directory)
        assert model_max_tokens(ModelSource(model_dir=directory)) == expected


@pytest.mark.parametrize("architecture", ["bert:tiny", "roberta:tiny"])
def test_full_documents_are_refused_for_a_512_token_model(datasets, tokenizer, architecture):
    with pytest.raises(ValueError, match=r"reads 512.*--long-documents snippets"):
        formulation(datasets, tokenizer, long_documents="full", source=source(architecture, tokenizer))


def test_full_pairs_are_cut_longest_first_at_the_models_length(datasets, tokenizer):
    long_docs = formulation(
        datasets,
        tokenizer,
        slug="pubmedqa",
        labels=LabelSpace(("yes", "no", "maybe")),
        long_documents="full",
        source=source("longformer:tiny", tokenizer),
    )
    question, passage = document(700, offset=1), document(600)
    [feature] = long_docs.encode([row(question, "no", pair=passage)])
    expected = tokenizer(question, passage, truncation="longest_first", max_length=1024, return_token_type_ids=True)
    assert feature.input_ids == expected["input_ids"] and feature.token_type_ids == expected["token_type_ids"]
    assert long_docs.describe()["tokens_dropped"] == 700 + 600 + 3 - 1024


def long_training_set(long_docs, lengths):
    return long_docs.encode([row(document(n, offset=i), label=str(i % 2)) for i, n in enumerate(lengths)])


def test_full_longformer_trains_on_long_documents_with_global_attention_on_cls(datasets, tokenizer):
    longformer = source("longformer:tiny", tokenizer)
    long_docs = formulation(datasets, tokenizer, long_documents="full", source=longformer)
    features = long_training_set(long_docs, [600, 700, 1500, 550])
    assert [len(f) for f in features] == [602, 702, 1024, 552]  # the 1,500-token note is cut at the model's length
    assert long_docs.describe()["documents_cut"] == 1 and long_docs.describe()["global_attention"] == "cls"
    torch.manual_seed(0)
    model = long_docs.build_model(longformer)
    before = [p.detach().clone() for p in model.parameters()]
    stats = train(
        model,
        features,
        Hyperparameters(1e-3, 2, 2),
        0,
        TrainingContext(torch.device("cpu"), None, 0, long_docs.collate),
    )
    assert stats.steps == 4 and math.isfinite(stats.final_loss)
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True) if a.ndim == 2)
    batch = long_docs.collate(features[:2], tokenizer.pad_token_id)
    batch.pop("labels")
    assert batch["global_attention_mask"][:, 0].tolist() == [1, 1] and batch["global_attention_mask"][:, 1:].sum() == 0
    model.eval()
    with torch.no_grad():
        with_global = model(**batch).logits
        local_only = model(**(batch | {"global_attention_mask": torch.zeros_like(batch["input_ids"])})).logits
    assert not torch.allclose(with_global, local_only)
    logits, _ = predict(
        model, features, TrainingContext(torch.device("cpu"), None, 0, long_docs.collate, eval_batch_size=2)
    )
    assert np.allclose(logits[0], with_global[0].numpy(), atol=1e-5)


def test_plain_bigbird_block_sparse_attention_fails_under_bf16_autocast(tokenizer):
    """Why BigBirdGuard turns autocast off for block-sparse batches (remove it once transformers is fixed)."""
    config = build_config("big-bird", num_labels=2, vocab_size=len(tokenizer))
    model = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager").eval()
    input_ids = torch.randint(5, len(tokenizer), (1, 2 * bigbird_block_sparse_threshold(config)))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="scatter"):
            model(input_ids=input_ids)
        guarded = BigBirdGuard(model)(input_ids=input_ids).logits
    assert guarded.dtype == torch.float32 and torch.isfinite(guarded).all()


def test_full_bigbird_stays_block_sparse_after_short_batches_in_training_and_prediction(datasets, tokenizer):
    bigbird = source("big-bird:tiny", tokenizer)
    long_docs = formulation(datasets, tokenizer, long_documents="full", source=bigbird)
    features = long_training_set(long_docs, [600, 40, 530, 30])
    torch.manual_seed(0)
    model = long_docs.build_model(bigbird)
    threshold = bigbird_block_sparse_threshold(model.config)
    calls: list[tuple[int, str]] = []
    attention = model.base_model.encoder.layer[0].attention  # persists when its inner attention is swapped

    def record(module, args):
        calls.append((args[0].shape[1], type(module.self).__name__))

    attention.register_forward_pre_hook(record)
    # Batches of 2 grouped by length: one short and one long batch per epoch, so a short one precedes a long one.
    bf16 = torch.bfloat16  # --precision auto's choice on CPUs with native bf16
    stats = train(
        model,
        features,
        Hyperparameters(1e-3, 2, 2),
        3,
        TrainingContext(torch.device("cpu"), bf16, 0, long_docs.collate),
    )
    assert math.isfinite(stats.final_loss)
    assert model.base_model.attention_type == "block_sparse"
    logits, _ = predict(
        model, features, TrainingContext(torch.device("cpu"), bf16, 0, long_docs.collate, eval_batch_size=2)
    )
    assert all(np.isfinite(row).all() for row in logits)
    assert model.base_model.attention_type == "block_sparse"
    kinds = ["short" if length <= threshold else "long" for length, _ in calls]
    assert len(calls) == 6 and "short" in kinds[:2] and "long" in kinds[2:4] and kinds[4:] == ["long", "short"]
    for length, attention_class in calls:
        assert attention_class == ("BigBirdSelfAttention" if length <= threshold else "BigBirdBlockSparseAttention")


def test_bigbird_snippets_keep_block_sparse_attention_in_bf16(datasets, tokenizer):
    bigbird = source("big-bird:tiny", tokenizer)
    long_docs = formulation(datasets, tokenizer, source=bigbird, snippet_length=160)  # 160 > the 144 threshold
    features = long_training_set(long_docs, [400, 20])
    assert [len(f.snippet_lengths) for f in features] == [3, 1]
    torch.manual_seed(0)
    model = long_docs.build_model(bigbird)
    assert isinstance(model.encoder, BigBirdGuard)
    bf16 = torch.bfloat16
    stats = train(
        model,
        features,
        Hyperparameters(1e-3, 1, 1),
        0,
        TrainingContext(torch.device("cpu"), bf16, 0, long_docs.collate),
    )
    assert stats.steps == 2 and math.isfinite(stats.final_loss)
    assert model.encoder.base_model.attention_type == "block_sparse"


# ---------------------------------------------------------------------------
# Selection and the command line


def test_long_documents_select_this_formulation_for_classification_and_regression_only(datasets):
    snippets = TaskOptions(long_documents="snippets")
    for slug in ("mimic-aki", "hoc", "openi", "pubmedqa", "biosses"):
        assert formulation_class(datasets[slug], snippets) is LongDocumentClassification
        assert formulation_class(datasets[slug], TaskOptions()) is SequenceClassification
    for slug in ("ncbi-disease", "i2b2-2006-deid", "emrqa-medication"):
        with pytest.raises(ValueError, match="leave --long-documents at truncate"):
            formulation_class(datasets[slug], TaskOptions(long_documents="full"))


def test_formulation_for_hands_the_model_to_full_documents(datasets, tokenizer):
    options = TaskOptions(long_documents="full")
    labels = LabelSpace(("a", "b"), "multi")
    chosen = formulation_for(datasets["hoc"], labels, tokenizer, options, 512, source("big-bird:tiny", tokenizer))
    assert chosen.document_length == 4096
    with pytest.raises(ValueError, match="needs the model"):
        formulation_for(datasets["hoc"], labels, tokenizer, options, 512)


def run_cli(tmp_path: Path, *args: str) -> dict:
    base = ["finetune", "--dataset", "mimic-aki", "--data-dir", str(CLINICAL_FIXTURES / "mimic-aki")]
    common = ["--grid", "single", "--seeds", "1", "--epochs", "1", "--batch-size", "2", "--out", str(tmp_path)]
    assert main([*base, *args, *common]) == 0
    return json.loads((tmp_path / "results.json").read_text())


def test_cli_snippets_with_bert_on_the_mimic_aki_fixture(tmp_path):
    args = ["--architecture", "bert:tiny", "--long-documents", "snippets", "--snippet-length", "64"]
    results = run_cli(tmp_path, *args, "--max-snippets", "4", "--snippet-pooling", "mean")
    described = results["formulation"]
    assert described["name"] == "long-document-snippets" and described["snippet_pooling"] == "mean"
    assert described["documents"] == 8 and described["documents_cut"] == 1  # the one long nursing note
    assert described["tokens_dropped"] > 0
    assert results["runs"][0]["metrics"]["test"]["roc-auc"] is not None
    assert len(results["predictions"]["42"]) == 2


def test_cli_full_documents_with_longformer_on_the_mimic_aki_fixture(tmp_path):
    results = run_cli(tmp_path, "--architecture", "longformer:tiny", "--long-documents", "full")
    described = results["formulation"]
    assert described["name"] == "long-document-full" and described["document_length"] == 1024
    assert described["global_attention"] == "cls"
    assert results["runs"][0]["train"]["real_tokens"] > 512  # the long note is read past 512 tokens
    assert results["runs"][0]["metrics"]["test"]["roc-auc"] is not None


def test_cli_refuses_full_documents_for_bert(tmp_path, capsys):
    base = ["finetune", "--dataset", "mimic-aki", "--data-dir", str(CLINICAL_FIXTURES / "mimic-aki")]
    assert main([*base, "--architecture", "bert:tiny", "--long-documents", "full", "--out", str(tmp_path)]) == 1
    assert "--long-documents snippets" in capsys.readouterr().err
