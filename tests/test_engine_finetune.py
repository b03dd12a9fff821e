"""The fine-tuning engine end to end on tiny models: real training, real data, no mocks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from workers.engine.__main__ import main
from workers.engine.batching import length_grouped_batches
from workers.engine.encoding import LabelSpace, decode_token_tagging, encode_token_tagging
from workers.engine.runs import FinetuneSpec, prepare, resolve_device, run_once
from workers.engine.tokenization import train_wordpiece
from workers.engine.training import Hyperparameters, TrainingContext

DEMO = ["demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa"]
# `make test-fast` runs the command on a classification dataset; the other formulations have tests of
# their own (tagging, QA, long documents, the withheld-gold check's regression), `make test` all six here.
FAST_DEMO = ("demo-relation",)


def test_length_grouped_batches_cover_every_example_exactly_once():
    lengths = list(np.random.default_rng(0).integers(5, 300, size=1000))
    batches = length_grouped_batches(lengths, 32, np.random.default_rng(1))
    seen = sorted(i for batch in batches for i in batch)
    assert seen == list(range(1000))
    spread = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches]
    assert np.median(spread) < 40  # batches hold similar lengths, so little padding


def test_long_sentences_are_split_into_windows_and_no_gold_word_is_dropped():
    words = [f"aspirin{i % 7}" if i % 5 else "cyclooxygenase" for i in range(300)]
    tags = ["B" if i % 5 == 0 else "O" for i in range(300)]
    tokenizer = train_wordpiece([" ".join(words)] * 5, vocab_size=200)
    labels = LabelSpace(("O", "B", "I"))
    example = {"id": "x", "document_id": "x", "tokens": words, "tags": tags}
    features = encode_token_tagging([example], tokenizer, labels, max_length=32)
    assert len(features) > 5 and all(len(f) <= 32 for f in features)
    assert sorted(w for f in features for w in f.words) == list(range(300))
    perfect = []
    for feature in features:
        logits = np.zeros((len(feature), 3))
        for position, target in enumerate(feature.labels):
            if target >= 0:
                logits[position, target] = 1.0
        perfect.append(logits)
    assert decode_token_tagging(features, perfect, [example], labels) == [tags]


def spec_for(dataset: str, tmp_path: Path, **changes) -> FinetuneSpec:
    fields = dict(dataset=dataset, out=tmp_path, architecture="bert:tiny", grid="single", seeds=1, epochs=1)
    return FinetuneSpec.build(**(fields | changes))


@pytest.mark.slow  # three runs
def test_the_same_seed_on_the_same_data_gives_identical_metrics(tmp_path):
    spec = spec_for("demo-relation", tmp_path)
    prepared = prepare(spec)
    device = resolve_device("cpu")
    hp = Hyperparameters(1e-3, 16, 1)
    first = run_once(prepared, hp, 7, ("dev",), TrainingContext.for_formulation(prepared.formulation, device, None))
    second = run_once(prepared, hp, 7, ("dev",), TrainingContext.for_formulation(prepared.formulation, device, None))
    other = run_once(prepared, hp, 8, ("dev",), TrainingContext.for_formulation(prepared.formulation, device, None))
    assert first.metrics == second.metrics
    assert first.predictions == second.predictions
    assert first.train["final_loss"] == second.train["final_loss"]
    assert first.train["final_loss"] != other.train["final_loss"]  # the seed matters


@pytest.mark.parametrize("dataset", [d if d in FAST_DEMO else pytest.param(d, marks=pytest.mark.slow) for d in DEMO])
def test_cli_fine_tunes_a_tiny_model_on_each_demo_dataset(tmp_path, dataset, capsys):
    out = tmp_path / dataset
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", dataset, "--grid", "single"]
    assert main([*args, "--seeds", "2", "--epochs", "1", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    metric = results["metric"]
    assert results["test"]["n"] == 2 and -100 <= results["test"]["mean"] <= 100  # Pearson can be negative
    assert {r["seed"] for r in results["runs"]} == {42, 43}
    assert all(metric in r["metrics"]["test"] and metric in r["metrics"]["dev"] for r in results["runs"])
    assert len(results["predictions"]["42"]) == results["data"]["sizes"]["test"]
    assert results["efficiency"]["parameters"] > 0
    assert results["efficiency"]["finetune_tokens_per_second"] > 0
    assert results["provenance"]["versions"]["torch"].startswith("2.13")
    assert results["provenance"]["plugins"]["plugins.datasets.demo_catalogue"].startswith("built-in (biolm ")
    assert f"{dataset}: test {metric}" in capsys.readouterr().out


@pytest.mark.slow  # 15 epochs
def test_a_tiny_model_really_learns_demo_ner(tmp_path):
    results = main(
        ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--grid", "single", "--seeds", "1",
         "--epochs", "15", "--learning-rate", "1e-3", "--out", str(tmp_path)]
    )  # fmt: skip
    assert results == 0
    f1 = json.loads((tmp_path / "results.json").read_text())["test"]["mean"]
    assert f1 > 50, f1  # an untrained model scores about 10


@pytest.mark.slow  # the withheld-gold tests fine-tune a local checkpoint directory too
def test_a_local_checkpoint_directory_is_fine_tuned(tmp_path):
    from transformers import AutoModelForTokenClassification

    from workers.engine.architectures import build_config

    tokenizer = train_wordpiece(["aspirin inhibits cyclooxygenase in arthritis"] * 20, vocab_size=120)
    model = AutoModelForTokenClassification.from_config(build_config("bert", "tiny", vocab_size=len(tokenizer)))
    checkpoint = tmp_path / "checkpoint"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    out = tmp_path / "out"
    args = ["finetune", "--model", str(checkpoint), "--dataset", "demo-ner", "--grid", "single", "--seeds", "1"]
    assert main([*args, "--epochs", "1", "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["model"] == str(checkpoint)


def test_model_and_architecture_are_mutually_exclusive(tmp_path):
    with pytest.raises(ValueError, match="exactly one of --model"):
        FinetuneSpec.build(dataset="demo-ner", out=tmp_path)


def test_an_unknown_dataset_is_reported_with_the_known_ones(tmp_path, capsys):
    assert main(["finetune", "--architecture", "bert:tiny", "--dataset", "nope", "--out", str(tmp_path)]) == 1
    assert "unknown dataset 'nope'" in capsys.readouterr().err


CLINICAL_FIXTURES = Path(__file__).parent / "fixtures" / "clinical"


@pytest.mark.parametrize(
    ("dataset", "fixture"),
    [
        ("mednli", "mednli"),
        ("i2b2-2010", "i2b2-2010"),
        ("i2b2-2010-re", "i2b2_2010_re"),
        ("i2b2-2012", "i2b2-2012"),
        ("i2b2-2006-deid", "i2b2-2006"),
        ("i2b2-2014-deid", "i2b2-2014"),
        ("n2c2-2018-ade", "n2c2-2018"),
        ("n2c2-2018-ade-re", "n2c2-2018"),
        ("n2c2-2019-sts", "n2c2-2019-sts"),
        ("mimic-aki", "mimic-aki"),
        ("ohsumed", "../sentence_level/ohsumed"),
    ],
)
def test_cli_fine_tunes_on_each_clinical_fixture(tmp_path, dataset, fixture):
    args = [
        "finetune",
        "--architecture",
        "bert:tiny",
        "--dataset",
        dataset,
        "--data-dir",
        str(CLINICAL_FIXTURES / fixture),
    ]
    assert main([*args, "--grid", "single", "--seeds", "1", "--epochs", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["runs"][0]["metrics"]["test"], results["runs"][0]["metrics"]


def test_a_test_only_distribution_cannot_be_fine_tuned(tmp_path, capsys):
    args = [
        "finetune",
        "--architecture",
        "bert:tiny",
        "--dataset",
        "openi",
        "--data-dir",
        str(CLINICAL_FIXTURES / "openi"),
    ]
    assert main([*args, "--out", str(tmp_path)]) == 1
    assert "no train split here" in capsys.readouterr().err


@pytest.mark.slow  # two engine processes
def test_the_same_seed_gives_identical_results_in_separate_processes(tmp_path):
    """Vocabulary, initialisation, batch order and dropout must not depend on the process (hash seeds, ...)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    outputs = []
    for run, hash_seed in enumerate(("1", "2")):
        out = tmp_path / f"run{run}"
        command = [sys.executable, "-m", "workers.engine", "finetune", "--architecture", "bert:tiny", "--dataset",
                   "demo-ner", "--grid", "single", "--seeds", "1", "--epochs", "2", "--out", str(out)]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "HF_HUB_OFFLINE": "1"}
        subprocess.run(command, cwd=root, env=env, check=True, capture_output=True, timeout=300)
        results = json.loads((out / "results.json").read_text())
        outputs.append(
            (results["runs"][0]["metrics"], results["predictions"], results["runs"][0]["train"]["final_loss"])
        )
    assert outputs[0] == outputs[1]


BLURB = ["bc5-chem", "bc5-disease", "ncbi-disease", "bc2gm", "jnlpba", "ebm-pico", "chemprot", "ddi", "gad",
         "biosses", "hoc", "pubmedqa", "bioasq"]  # fmt: skip


@pytest.mark.parametrize("dataset", BLURB)
def test_cli_fine_tunes_a_tiny_model_on_every_real_blurb_dataset(tmp_path, dataset, official_data):
    """The official files through their adapters, a tiny model and a few steps: every formulation and metric runs."""
    directory = official_data(_dataset_spec(dataset).adapter.default_path)
    if dataset == "ebm-pico" and not (directory / "train.tsv").exists():
        # BLURB's EBM PICO comes without train.tsv (the official data folder's README.md): a stand-in train split of the
        # first dev abstracts, in the official format, so the CLI still runs end to end on real files.
        directory = _ebm_pico_with_stand_in_train(directory, tmp_path / "ebm-pico")
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", dataset, "--data-dir", str(directory),
            "--grid", "single", "--seeds", "1", "--epochs", "1", "--max-length", "128",
            "--max-train-examples", "64", "--max-eval-examples", "64", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(args) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    run = results["runs"][0]
    assert results["metric"] in run["metrics"]["dev"] and results["metric"] in run["metrics"]["test"]
    assert run["train"]["steps"] >= 2  # 64 examples (more features if a long input is split) in batches of 32
    assert results["data"]["sizes"]["train"] <= 64 and results["data"]["sizes"]["test"] <= 64


def _dataset_spec(slug: str):
    from biolm.plugins import collect_contributions, get_plugin_manager

    return collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets[slug]


def _ebm_pico_with_stand_in_train(official: Path, directory: Path) -> Path:
    import shutil

    directory.mkdir()
    for name in ("dev.tsv", "test.tsv"):
        shutil.copy(official / name, directory / name)
    lines = (official / "dev.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("-DOCSTART-")]
    (directory / "train.tsv").write_text("".join(lines[: starts[20]]), encoding="utf-8")  # 20 abstracts
    return directory


@pytest.mark.slow  # three protocols of three seeds
def test_an_interrupted_protocol_resumes_from_the_runs_it_had_finished(tmp_path, monkeypatch):
    import workers.engine.runs as finetune_module

    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-relation", "--grid", "single",
            "--seeds", "3", "--epochs", "1", "--out", str(tmp_path / "out")]  # fmt: skip
    real_run_once = finetune_module.run_once

    def crash_on_the_third_seed(prepared, hp, seed, *rest):
        if seed == 44:
            raise RuntimeError("worker lost")  # a failure injected into our own loop, not a stand-in for it
        return real_run_once(prepared, hp, seed, *rest)

    monkeypatch.setattr(finetune_module, "run_once", crash_on_the_third_seed)
    with pytest.raises(RuntimeError, match="worker lost"):
        main(args)
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 2  # seeds 42 and 43 were kept
    monkeypatch.setattr(finetune_module, "run_once", real_run_once)

    assert main(args) == 0
    resumed = json.loads((tmp_path / "out" / "results.json").read_text())
    assert resumed["provenance"]["reused_runs"] == 2 and [r["seed"] for r in resumed["runs"]] == [42, 43, 44]
    assert main([*args[:-1], str(tmp_path / "uninterrupted")]) == 0
    uninterrupted = json.loads((tmp_path / "uninterrupted" / "results.json").read_text())
    assert [r["metrics"] for r in resumed["runs"]] == [r["metrics"] for r in uninterrupted["runs"]]
    assert resumed["predictions"] == uninterrupted["predictions"]


@pytest.mark.slow  # five protocols
def test_stored_runs_are_retrained_when_anything_that_decides_them_changes(tmp_path):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-relation", "--grid", "single",
            "--seeds", "1", "--epochs", "1", "--out", str(tmp_path)]  # fmt: skip

    def reused(*extra: str) -> int:
        assert main([*args, *extra]) == 0
        return json.loads((tmp_path / "results.json").read_text())["provenance"]["reused_runs"]

    assert reused() == 0
    assert reused() == 1
    assert reused("--max-length", "64") == 0  # another input length: another run
    assert reused("--learning-rate", "1e-4") == 0  # other hyperparameters
    assert reused("--fresh") == 0


def test_a_folds_data_that_takes_a_freed_folds_address_is_trained_not_handed_that_folds_runs(tmp_path, monkeypatch):
    """Lewis et al. 2020's folds are prepared one after another, each freeing the last, and Python
    may give a later fold an earlier one's ``id()`` ("two objects with non-overlapping lifetimes may
    have the same id() value"). The later fold must still get its own runs, not the earlier fold's
    stored predictions: CI once recorded 36 of them for a fold of 35 examples. Every object here
    is given one id, which is that reuse made certain rather than left to the allocator."""
    import workers.engine.runs as finetune_module
    from workers.engine.runs import Runner

    monkeypatch.setattr(finetune_module, "id", lambda _: 1, raising=False)
    runner = Runner(spec_for("demo-relation", tmp_path / "runner"), resolve_device("cpu"), None, None)
    hp, select = Hyperparameters(1e-3, 16, 1), ("test", "micro-f1")
    earlier = prepare(spec_for("demo-relation", tmp_path / "a", max_train_examples=16, max_eval_examples=12))
    assert len(runner.run(earlier, hp, 42, "earlier fold", select, ("test",)).predictions["test"]) == 12
    later = prepare(spec_for("demo-relation", tmp_path / "b", max_train_examples=16, max_eval_examples=8))
    assert len(runner.run(later, hp, 42, "later fold", select, ("test",)).predictions["test"]) == 8
    assert runner.reused == 0
    assert len(runner.run(later, hp, 42, "later fold again", select, ("test",)).predictions["test"]) == 8
    assert runner.reused == 1  # the same fold's finished run is still found
