"""NSP and SOP: sentence pairs built as BERT's create_pretraining_data builds them, and the models that train them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

import plugins.recipes.papers as papers
from biolm.corpus import apply_preprocessors
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.pretrain.data import open_pairs, write_pair_blocks
from workers.engine.pretrain.objectives import masked_language_model
from workers.engine.pretrain.run import PretrainArguments, pretrain
from workers.engine.tokenization import train_wordpiece

PREPROCESSORS = collect_contributions(get_plugin_manager(load_entrypoints=False)).preprocessors


@pytest.fixture(scope="module")
def pubmedqa(official_data) -> Path:
    """PubMedQA's first BLURB training fold, from the official data folder."""
    return official_data("PubMedQA", "blurb", "pqal_fold0", "train_set.json")


def abstracts(train_set: Path, limit: int) -> list[str]:
    entries = json.loads(train_set.read_text())
    return [" ".join(entry["CONTEXTS"]) for entry in list(entries.values())[:limit]]


@pytest.fixture(scope="module")
def segmented(pubmedqa) -> list[str]:
    return list(apply_preprocessors(abstracts(pubmedqa, 200), [PREPROCESSORS["sentences"]]))


@pytest.fixture(scope="module")
def tokenizer(segmented):
    return train_wordpiece([text.replace("\n", " ") for text in segmented], 1500)


@pytest.mark.parametrize("task", ["nsp", "sop"])
def test_pairs_are_framed_typed_and_labelled_half_and_half(tmp_path, segmented, tokenizer, task):
    stats = write_pair_blocks(iter(segmented), tokenizer, tmp_path, block_size=96, heldout_share=0.0, task=task)
    data = open_pairs(tmp_path, "train", 96)
    assert stats.train_blocks == len(data["ids"]) == len(data["labels"]) > 200
    assert 0.4 < data["labels"].mean() < 0.6
    for row in range(20):
        ids, types = data["ids"][row], data["types"][row]
        length = int((ids != tokenizer.pad_token_id).sum())
        seps = np.flatnonzero(ids[:length] == tokenizer.sep_token_id)
        assert ids[0] == tokenizer.cls_token_id and len(seps) == 2 and seps[1] == length - 1
        assert (types[: seps[0] + 1] == 0).all() and (types[seps[0] + 1 : length] == 1).all()
        assert (data["words"][row][length:] == -1).all() and data["words"][row][1] == 0


def test_sop_swaps_two_consecutive_segments_of_one_document(tmp_path, tokenizer):
    document = "\n".join(f"Sentence number {word} is about cells." for word in ("one", "two", "three", "four"))
    write_pair_blocks(iter([document] * 40), tokenizer, tmp_path, block_size=96, heldout_share=0.0, task="sop")
    data = open_pairs(tmp_path, "train", 96)
    for ids, label in zip(data["ids"], data["labels"], strict=True):
        text = tokenizer.decode(ids, skip_special_tokens=True)
        order = [text.index(word) for word in ("one", "two", "three", "four") if word in text]
        assert (order == sorted(order)) == (label == 0), (text, label)


def test_nsp_and_sop_need_sentences_and_one_of_them_only(tmp_path, tokenizer, pubmedqa):
    with pytest.raises(ValueError, match="every document is one sentence here: add the 'sentences' preprocessor"):
        write_pair_blocks(
            iter(abstracts(pubmedqa, 20)), tokenizer, tmp_path, block_size=96, heldout_share=0.0, task="nsp"
        )
    with pytest.raises(ValueError, match="NSP or SOP, not both"):
        masked_language_model({}, ("mlm", "nsp", "sop"))


@pytest.fixture
def pair_recipe(monkeypatch):
    def make(objective: str, architecture: str) -> str:
        tiny = papers.RECIPES[0]
        settings = {**tiny.settings, "architecture": architecture, "preprocessors": ["drop-empty", "sentences"],
                    "contamination_datasets": [], "eval_every": 10}  # fmt: skip
        recipe = dataclasses.replace(tiny, slug=f"tiny-{objective}", objectives=("mlm-whole-word", objective),
                                     settings=settings)  # fmt: skip
        monkeypatch.setattr(papers, "RECIPES", (*papers.RECIPES, recipe))
        return recipe.slug

    return make


@pytest.mark.parametrize(("objective", "architecture"), [("nsp", "bert:tiny"), ("sop", "megatron-bert:tiny")])
def test_a_pair_recipe_trains_the_sentence_pair_head_beside_mlm(
    tmp_path, pair_recipe, objective, architecture, pubmedqa
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(abstracts(pubmedqa, 150)) + "\n", encoding="utf-8")
    slug = pair_recipe(objective, architecture)
    report = pretrain(PretrainArguments(recipe=slug, corpus=corpus, out=tmp_path / "out", steps=20,
                                        load_entrypoints=False))  # fmt: skip
    assert report["corpus"]["pairs"] == objective and report["training"]["steps"] == 20
    weights = load_file(tmp_path / "out" / "model.safetensors")
    assert any("seq_relationship" in name for name in weights)


def test_a_pair_recipe_is_refused_on_an_architecture_without_a_pair_head_before_any_work(
    tmp_path, pair_recipe, pubmedqa
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(abstracts(pubmedqa, 10)) + "\n", encoding="utf-8")
    slug = pair_recipe("sop", "roberta:tiny")
    with pytest.raises(ValueError, match="trains SOP, which needs a sentence-pair head; roberta has none"):
        pretrain(PretrainArguments(recipe=slug, corpus=corpus, out=tmp_path / "out", load_entrypoints=False))
    assert not (tmp_path / "out" / "data").exists()
