"""Long models from short ones (Li et al. 2022, section 3.2): weights copied, positions tiled, outputs unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM

from workers.engine.pretrain.long_models import convert
from workers.engine.tokenization import train_wordpiece
from workers.engine.vocabulary import train_byte_level_bpe

TEXTS = ["Cisplatin induced apoptosis in lymphoma cells of the mouse.", "Aspirin reduced fever in adults."] * 20
SIZES = {"vocab_size": 300, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 64, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}  # fmt: skip


@pytest.fixture
def roberta(tmp_path) -> Path:
    tokenizer = train_byte_level_bpe(TEXTS, 300)
    torch.manual_seed(0)
    model = RobertaForMaskedLM(RobertaConfig(**SIZES, max_position_embeddings=66, pad_token_id=tokenizer.pad_token_id))
    model.save_pretrained(tmp_path / "roberta")
    tokenizer.save_pretrained(tmp_path / "roberta")
    return tmp_path / "roberta"


@pytest.fixture
def bert(tmp_path) -> Path:
    tokenizer = train_wordpiece(TEXTS, 300)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(**SIZES, max_position_embeddings=64))
    model.save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    return tmp_path / "bert"


def logits(directory: Path, ids: torch.Tensor) -> torch.Tensor:
    model = AutoModelForMaskedLM.from_pretrained(str(directory), local_files_only=True).eval()
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def test_roberta_becomes_a_longformer_that_computes_what_it_did_on_a_short_input(roberta, tmp_path):
    out = convert(roberta, tmp_path / "long", "longformer", max_length=256, attention_window=32)
    source = RobertaForMaskedLM.from_pretrained(str(roberta))
    long = AutoModelForMaskedLM.from_pretrained(str(out))
    assert long.config.model_type == "longformer" and long.config.max_position_embeddings == 258
    table, old = (
        long.longformer.embeddings.position_embeddings.weight,
        source.roberta.embeddings.position_embeddings.weight,
    )
    assert torch.equal(table[2:66], old[2:66]) and torch.equal(table[66:130], old[2:66])  # tiled after the offset
    layer = long.longformer.encoder.layer[0].attention.self
    assert torch.equal(layer.query_global.weight, layer.query.weight) and torch.equal(
        layer.value_global.bias, layer.value.bias
    )
    ids = torch.tensor([[0, *range(10, 24), 2]])  # 16 tokens: within one window
    torch.testing.assert_close(logits(out, ids), logits(roberta, ids), atol=1e-4, rtol=1e-4)


def test_bert_becomes_a_bigbird_with_the_same_weights_and_tiled_positions(bert, tmp_path):
    out = convert(bert, tmp_path / "long", "big_bird", max_length=256)
    long = AutoModelForMaskedLM.from_pretrained(str(out))
    source = BertForMaskedLM.from_pretrained(str(bert))
    assert long.config.model_type == "big_bird" and long.config.max_position_embeddings == 256
    table = long.bert.embeddings.position_embeddings.weight
    assert torch.equal(table[64:128], source.bert.embeddings.position_embeddings.weight)
    long.bert.set_attention_type("original_full")
    ids = torch.tensor([[2, *range(10, 40), 3]])
    with torch.no_grad():
        ours = long(input_ids=ids).logits
        theirs = source(input_ids=ids).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


def test_unsupported_conversions_and_shorter_targets_are_refused(roberta, tmp_path):
    with pytest.raises(ValueError, match="converting roberta to big_bird is not supported"):
        convert(roberta, tmp_path / "x", "big_bird", max_length=256)
    with pytest.raises(ValueError, match="already takes 64 tokens"):
        convert(roberta, tmp_path / "x", "longformer", max_length=64)


def test_a_converted_longformer_continues_mlm_at_its_new_length_with_the_clinical_longformer_recipe(roberta, tmp_path):
    import json

    from workers.engine.__main__ import main

    long = tmp_path / "long"
    args = ["convert-long", "--model", str(roberta), "--to", "longformer", "--max-length", "256",
            "--attention-window", "32", "--out", str(long)]  # fmt: skip
    assert main(args) == 0
    corpus = tmp_path / "notes.txt"
    corpus.write_text("\n".join(" ".join(TEXTS[i : i + 12]) for i in range(0, 40, 2)) + "\n", encoding="utf-8")
    toy = {"block_size": 256, "batch_size": 2, "steps": 2, "eval_every": 2, "contamination_datasets": []}
    out = tmp_path / "clinical"
    args = ["pretrain", "--recipe", "clinical-longformer", "--corpus", str(corpus), "--model", str(long),
            "--settings", json.dumps(toy), "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    report = json.loads((out / "pretraining.json").read_text())
    assert report["training"]["steps"] == 2 and report["starting_checkpoint"] == str(long)
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "longformer" and config["max_position_embeddings"] == 258
