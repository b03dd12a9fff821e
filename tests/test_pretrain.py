"""Pretraining: masking as the papers define it, corpus blocks on disk, the CLI, and exact resume after SIGKILL.

Real tokenizers (learned on real HoC text from the official data folder, BIOLM_DATA_DIR), real models, real
processes: the resume test kills a running ``python -m workers.engine pretrain`` with SIGKILL
and compares the resumed run's weights with an uninterrupted run's, tensor by tensor.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from official_data import data_env
from safetensors.torch import load_file

from workers.engine.__main__ import main
from workers.engine.pretrain.data import is_heldout, open_blocks, write_blocks
from workers.engine.pretrain.loop import LoopSettings, micro_batch_indices
from workers.engine.pretrain.masking import IGNORE, mask_tokens, masking_random, scheduled_rate
from workers.engine.pretrain.objectives import masked_language_model
from workers.engine.tokenization import train_wordpiece
from workers.engine.vocabulary import train_byte_level_bpe

ROOT = Path(__file__).resolve().parents[1]
NO_CONTAMINATION = json.dumps({"contamination_datasets": []})  # its own tests below; it reads every dataset


@pytest.fixture(scope="module")
def hoc_train(official_data) -> Path:
    """HoC's BLURB training file, from the official data folder."""
    return official_data("HoC", "blurb", "train.tsv")


def hoc_abstracts(train: Path, limit: int | None = None) -> list[str]:
    """HoC's training abstracts (sentences joined per PMID): real biomedical text, no test split."""
    documents: dict[str, list[str]] = {}
    for row in train.read_text(encoding="utf-8").split("\n")[1:]:
        if row:
            _, sentence, index = row.split("\t")
            documents.setdefault(index.split("_")[0], []).append(sentence)
    texts = [" ".join(sentences) for sentences in documents.values()]
    return texts[:limit] if limit else texts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, hoc_train) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "hoc.txt"
    path.write_text("\n".join(hoc_abstracts(hoc_train, 400)) + "\n", encoding="utf-8")
    return path


# --- masking -----------------------------------------------------------------------------------


def test_mlm_masks_the_rate_of_maskable_tokens_80_10_10_and_never_a_special_one():
    ids = torch.randint(5, 1000, (64, 512))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    draws = masking_random(1, 0, range(64))
    inputs, labels = mask_tokens(ids, special, rate=0.15, mask_id=4, vocab_size=1000, random=draws)
    chosen = labels != IGNORE
    assert not chosen[special].any()
    assert abs(chosen.float().mean().item() / (510 / 512) - 0.15) < 0.005
    assert torch.equal(labels[chosen], ids[chosen])
    masked = (inputs == 4) & chosen
    kept = (inputs == ids) & chosen
    assert abs(masked.sum().item() / chosen.sum().item() - 0.8) < 0.01
    assert abs(kept.sum().item() / chosen.sum().item() - 0.1 - 0.1 * 1 / 1000) < 0.01  # 10% kept (+ random hits)
    assert torch.equal(inputs[~chosen], ids[~chosen])


@pytest.mark.parametrize("kind", ["wordpiece", "byte-bpe"])
def test_whole_word_masking_masks_every_piece_of_a_chosen_word(kind, hoc_train):
    texts = hoc_abstracts(hoc_train, 200)
    tokenizer = train_wordpiece(texts, 600) if kind == "wordpiece" else train_byte_level_bpe(texts, 600)
    encoded = tokenizer(texts[:32], truncation=True, max_length=128, padding="max_length")
    ids = torch.tensor(encoded["input_ids"])
    words = torch.tensor([[w if w is not None else -1 for w in encoded.word_ids(i)] for i in range(32)])
    special = words < 0
    assert (torch.bincount(words[~special].view(-1)) > 1).any()  # some words have several pieces
    _, labels = mask_tokens(ids, special, rate=0.15, mask_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                            random=masking_random(3, 0, range(32)), word_ids=words)  # fmt: skip
    chosen = labels != IGNORE
    for row in range(32):
        for word in words[row].unique().tolist():
            if word >= 0:
                pieces = chosen[row][words[row] == word]
                assert pieces.all() or not pieces.any(), (kind, row, word)
    assert 0.08 < chosen[~special].float().mean().item() < 0.25


def test_masks_are_dynamic_per_step_and_reproducible_from_seed_and_step():
    ids = torch.randint(5, 1000, (8, 128))
    special = torch.zeros_like(ids, dtype=torch.bool)

    def labels(seed, step):
        return mask_tokens(
            ids, special, rate=0.15, mask_id=4, vocab_size=1000, random=masking_random(seed, step, range(8))
        )[1]

    assert torch.equal(labels(7, 3), labels(7, 3))
    assert not torch.equal(labels(7, 3), labels(7, 4))


def test_the_masking_rate_schedule_of_gu_et_al_2021_rises_from_5_to_25_percent_every_fifth_of_training():
    rates = [round(scheduled_rate(step, 1000), 4) for step in (0, 199, 200, 400, 600, 800, 999)]
    assert rates == [0.05, 0.05, 0.10, 0.15, 0.20, 0.25, 0.25]


def test_recipes_name_their_objectives_and_unknown_ones_are_refused():
    objective = masked_language_model({"mask_rate": 0.2}, ("mlm-whole-word", "mlm-rate-schedule"))
    assert (objective.mask_rate, objective.whole_word, objective.rate_schedule) == (0.2, True, True)
    with pytest.raises(ValueError, match=r"objective\(s\) replaced-token-detection are not masked-language-model"):
        masked_language_model({}, ("mlm", "replaced-token-detection"))


# --- corpus blocks -------------------------------------------------------------------------------


def test_documents_become_framed_blocks_with_a_deterministic_held_out_part(tmp_path, hoc_train):
    texts = hoc_abstracts(hoc_train, 300)
    tokenizer = train_wordpiece(texts, 800)
    first = write_blocks(iter(texts), tokenizer, tmp_path / "a", block_size=64, heldout_share=0.1)
    second = write_blocks(iter(texts), tokenizer, tmp_path / "b", block_size=64, heldout_share=0.1)
    assert first == second and first.fingerprint
    assert first.heldout_documents == sum(is_heldout(t, 0.1) for t in texts) > 0
    ids, words = open_blocks(tmp_path / "a", "train", 64)
    assert ids.shape == (first.train_blocks, 64)
    assert (ids[:, 0] == tokenizer.cls_token_id).all() and (ids[:, -1] == tokenizer.sep_token_id).all()
    assert (words[:, 0] == -1).all() and words[ids == tokenizer.sep_token_id].max() == -1
    assert words[:, 1:-1].max(initial=0) < 64 and (words[words >= 0].min() == 0)
    assert first.train_tokens + first.heldout_tokens == sum(
        len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts
    )


def test_every_block_is_seen_once_per_epoch_in_a_seeded_order():
    settings = LoopSettings(steps=100, batch_size=8, accumulation=2, seed=5)
    per_epoch = 40 // 4
    epoch = [micro_batch_indices(40, settings, step, micro) for step in range(5) for micro in range(2)]
    assert sorted(np.concatenate(epoch).tolist()) == list(range(40)) and len(epoch) == per_epoch
    assert np.array_equal(micro_batch_indices(40, settings, 3, 1), micro_batch_indices(40, settings, 3, 1))


# --- the command ---------------------------------------------------------------------------------


def test_pretrain_writes_a_checkpoint_that_the_engine_fine_tunes_unchanged(corpus, tmp_path, official_data):
    official_data("HoC", "blurb", "test.tsv")  # the contamination report reads HoC's test split
    out = tmp_path / "tiny"
    only_hoc = json.dumps({"contamination_datasets": ["hoc"]})
    args = ["pretrain", "--recipe", "tiny", "--corpus", str(corpus), "--steps", "30", "--settings", only_hoc]
    assert main([*args, "--out", str(out)]) == 0
    report = json.loads((out / "pretraining.json").read_text())
    assert report["contamination"]["datasets"]["hoc"]["test_examples"] == 371  # HoC train only: its test is out
    assert report["contamination"]["datasets"]["hoc"]["share"] < 0.02
    assert report["recipe"]["slug"] == "tiny" and report["objective"]["whole_word"] is True
    assert report["corpus"]["documents"] == 400 and len(report["corpus"]["fingerprint"]) == 16
    assert report["vocabulary"]["new"]["vocabulary_size"] == 2048
    assert report["training"]["steps"] == 30 and report["unigram_baseline_loss"] > 0
    log = json.loads((out / "loss.json").read_text())
    assert [entry["step"] for entry in log] == list(range(1, 31))
    assert log[-1]["heldout_loss"] is not None
    args = ["finetune", "--model", str(out), "--dataset", "demo-ner", "--grid", "single", "--seeds", "1",
            "--epochs", "1", "--out", str(tmp_path / "ner")]  # fmt: skip
    assert main(args) == 0
    assert json.loads((tmp_path / "ner" / "results.json").read_text())["test"]["n"] == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [("\n\n  \n", "no documents"), (None, "no such file")],
    ids=["empty corpus", "missing corpus"],
)
def test_bad_corpora_are_refused_with_the_reason(tmp_path, capsys, content, expected):
    corpus = tmp_path / "corpus.txt"
    if content is not None:
        corpus.write_text(content)
    assert main(["pretrain", "--recipe", "tiny", "--corpus", str(corpus), "--out", str(tmp_path / "out")]) == 1
    assert expected in capsys.readouterr().err


def test_a_refused_pretraining_leaves_no_out_directory_it_created(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Aspirin inhibits cyclooxygenase.\n")
    refusals = [
        (["--recipe", "tiny", "--corpus", str(tmp_path / "missing.txt")], "no such file"),
        (["--recipe", "no-such-recipe", "--corpus", str(corpus)], "unknown recipe 'no-such-recipe'"),
        (["--recipe", "tiny", "--corpus", str(corpus), "--model", str(tmp_path / "nowhere")], "no such directory"),
    ]
    existing = tmp_path / "existing"  # a directory that was there before: it and its contents stay
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    for args, expected in refusals:
        assert main(["pretrain", *args, "--out", str(tmp_path / "x" / "out")]) == 1
        assert expected in capsys.readouterr().err
        assert not (tmp_path / "x").exists()  # neither --out nor the parent the run made for it
        assert main(["pretrain", *args, "--out", str(existing)]) == 1
        assert [p.name for p in existing.iterdir()] == ["notes.txt"]


def test_a_vocabulary_too_small_and_a_recipe_without_an_implementation_are_refused(
    corpus, tmp_path, capsys, monkeypatch
):
    import dataclasses

    import plugins.recipes.papers as papers

    tiny = papers.RECIPES[0]
    small = dataclasses.replace(tiny, slug="tiny-small", settings={**tiny.settings, "vocab_size": 40})
    monkeypatch.setattr(papers, "RECIPES", (*papers.RECIPES, small))
    assert main(["pretrain", "--recipe", "tiny-small", "--corpus", str(corpus), "--out", str(tmp_path / "a")]) == 1
    assert "a vocabulary of 40 entries is too small for this corpus" in capsys.readouterr().err
    described = dataclasses.replace(tiny, slug="paper-only", implementation=None)
    monkeypatch.setattr(papers, "RECIPES", (*papers.RECIPES, described))
    args = ["pretrain", "--recipe", "paper-only", "--corpus", str(corpus), "--out", str(tmp_path / "b")]
    assert main(args) == 1
    assert "recipe 'paper-only' describes a paper's settings but names no implementation" in capsys.readouterr().err


# --- exact resume ---------------------------------------------------------------------------------


def run_pretrain(corpus: Path, out: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "workers.engine", "pretrain", "--recipe", "tiny", "--corpus", str(corpus),
               "--steps", "70", "--device", "cpu", "--out", str(out), "--settings", NO_CONTAMINATION,
               *extra]  # fmt: skip
    env = data_env(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_run_killed_with_sigkill_and_resumed_ends_with_the_weights_of_an_uninterrupted_run(corpus, tmp_path):
    whole = run_pretrain(corpus, tmp_path / "whole")
    assert whole.wait(timeout=600) == 0, whole.stdout.read()

    killed = run_pretrain(corpus, tmp_path / "killed")
    state = tmp_path / "killed" / "checkpoint" / "state.json"
    deadline = time.monotonic() + 300
    while not state.exists() and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)  # after the step-50 checkpoint, before step 70
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert not (tmp_path / "killed" / "model.safetensors").exists()

    resumed = run_pretrain(corpus, tmp_path / "killed", "--resume")
    assert resumed.wait(timeout=600) == 0, resumed.stdout.read()
    expected = load_file(tmp_path / "whole" / "model.safetensors")
    actual = load_file(tmp_path / "killed" / "model.safetensors")
    assert expected.keys() == actual.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, actual[name]), name
    log = json.loads((tmp_path / "killed" / "loss.json").read_text())
    assert [entry["step"] for entry in log] == list(range(1, 71))
