"""The papers' protocols: their grids, in-loop checkpoint selection, and the cross-validation of Lewis et al. 2020.

The selection tests drive :func:`train` with a scripted dev score, so which checkpoint the run
must end on is known in advance; the cross-validation tests run the CLI on EU-ADR's ten real
folds and on GAD, of which the official data folder (BIOLM_DATA_DIR) holds only fold 1.
"""

from __future__ import annotations

import json
import statistics
import time

import pytest
import torch

from biolm import protocols
from biolm.cross_validation import fold_directories
from biolm.plugins import collect_contributions, get_plugin_manager
from plugins.protocols.papers import LEWIS_CLASSIFICATION_LR
from workers.engine.__main__ import main
from workers.engine.runs import FinetuneSpec, prepare, resolve_device
from workers.engine.task import Task
from workers.engine.training import Hyperparameters, TrainingContext, train


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


def task(contributions, slug: str) -> Task:
    return Task.of(contributions, slug)


@pytest.fixture(scope="module")
def plan_for(contributions):
    """The registry's plan of a contributed protocol for a task, as the engine and submit ask for it."""

    def plan(name: str, of: Task, **overrides) -> protocols.Plan:
        spec = protocols.protocol_named(contributions.protocols, name)
        return protocols.plan_for(spec, of.dataset, of.task_type, protocols.Overrides(**overrides))

    return plan


def test_every_protocol_has_a_plan_and_every_benchmark_names_a_contributed_one(contributions, plan_for):
    assert set(contributions.protocols) == {"blurb", "lewis2020", "bioformer", "clinical-longformer", "gatortron"}
    for name in contributions.protocols:
        assert plan_for(name, task(contributions, "ncbi-disease")).points
    assert {b.slug: b.protocol for b in contributions.benchmarks.values()} == {
        "blurb": "blurb",
        "blurb-mini": "blurb",
        "lewis2020": "lewis2020",
        "bioformer": "bioformer",
        "clinical-longformer": "clinical-longformer",
        "gatortron": "gatortron",
    }


def test_a_benchmark_naming_a_protocol_no_plugin_provides_is_reported_and_skipped():
    import dataclasses

    from biolm import hookimpl
    from plugins.benchmarks.blurb import blurb_benchmark

    class Typo:
        @hookimpl
        def biolm_benchmarks(self):
            return [dataclasses.replace(blurb_benchmark(), slug="blurb-typo", protocol="lewis")]

    loaded = collect_contributions(get_plugin_manager(load_entrypoints=False, extra_plugins=[("typo", Typo())]))
    assert "blurb-typo" not in loaded.benchmarks
    assert any("protocol 'lewis' (known: bioformer, blurb" in str(problem) for problem in loaded.problems)


def test_overrides_change_the_plan_the_registry_gives(contributions, plan_for):
    chemprot = task(contributions, "chemprot")
    single = plan_for("blurb", chemprot, grid="single", seeds=2, epochs=3)
    assert [(p.learning_rate, p.batch_size, p.epochs) for p in single.points] == [(5e-5, 32, 3)]
    assert single.seeds == 2
    fixed = plan_for("blurb", chemprot, learning_rate=2e-5, batch_size=8)
    assert [(p.learning_rate, p.batch_size) for p in fixed.points] == [(2e-5, 8)]


def test_the_presets_follow_each_papers_grid(contributions, plan_for):
    ner, chemprot = task(contributions, "ncbi-disease"), task(contributions, "chemprot")
    blurb = plan_for("blurb", chemprot)
    assert {(p.learning_rate, p.batch_size) for p in blurb.points} == {
        (lr, bs) for lr in (1e-5, 3e-5, 5e-5) for bs in (16, 32)
    }
    assert not any(p.selects_checkpoint for p in blurb.points) and blurb.statistic == "mean"
    assert plan_for("gatortron", chemprot).points == blurb.points

    (tagging,) = plan_for("lewis2020", ner).points
    assert (tagging.learning_rate, tagging.batch_size, tagging.epochs) == (1e-5, 32, 20)
    assert tagging.evaluate_every_steps == 500 and tagging.patience is None
    (classification,) = plan_for("lewis2020", chemprot).points
    assert (classification.learning_rate, classification.batch_size, classification.epochs) == (2e-5, 16, 10)
    assert classification.learning_rate == LEWIS_CLASSIFICATION_LR
    assert classification.evaluate_every_steps == 200 and classification.patience
    lewis = plan_for("lewis2020", chemprot)
    assert (lewis.seeds, lewis.statistic, lewis.cross_validation) == (5, "median", False)
    assert plan_for("lewis2020", task(contributions, "eu-adr")).cross_validation

    bioformer = plan_for("bioformer", chemprot)
    assert sorted((p.batch_size, p.learning_rate) for p in bioformer.points) == sorted(
        (bs, lr) for bs in (8, 16, 32) for lr in (1e-5, 3e-5, 5e-5)
    )
    assert all(p.epochs == 20 and p.evaluate_each_epoch for p in bioformer.points)

    longformer = plan_for("clinical-longformer", chemprot)
    assert [p.learning_rate for p in longformer.points] == [1e-5, 2e-5, 5e-5]
    assert all(p.epochs == 6 and p.evaluate_each_epoch for p in longformer.points)


def test_the_engine_defaults_to_the_benchmarks_protocol_and_scores_by_its_metric():
    def job(**settings):
        return FinetuneSpec.build(dataset="gad", out="/tmp/unused", architecture="bert:tiny", **settings).job

    assert (job().protocol, job().metric) == ("blurb", "micro-f1")
    lewis = job(benchmark="lewis2020")
    assert (lewis.protocol, lewis.metric, lewis.benchmark) == ("lewis2020", "binary-f1", "lewis2020")
    assert job(benchmark="lewis2020", protocol="blurb").protocol == "blurb"  # --protocol wins
    with pytest.raises(ValueError, match="benchmark 'clinical-longformer' does not score 'gad'"):
        job(benchmark="clinical-longformer")
    with pytest.raises(ValueError, match="unknown benchmark 'nope'"):
        job(benchmark="nope")


def test_an_unknown_protocol_is_refused_before_anything_runs(tmp_path, capsys):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--out", str(tmp_path / "out")]
    assert main([*args, "--protocol", "lewis"]) == 1
    assert "unknown protocol 'lewis'; known: bioformer, blurb, clinical-longformer" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- in-loop checkpoint selection -------------------------------------------------------------


@pytest.fixture(scope="module")
def relation(tmp_path_factory):
    spec = FinetuneSpec.build(
        dataset="demo-relation", out=tmp_path_factory.mktemp("out"), architecture="bert:tiny", grid="single"
    )
    prepared = prepare(spec)
    context = TrainingContext.for_formulation(prepared.formulation, resolve_device("cpu"), None)
    return prepared, context


def scripted(scores: list[float], snapshots: list[dict], pause: float = 0.0):
    """A dev score read from ``scores`` in turn; each evaluated checkpoint's weights kept in ``snapshots``."""
    remaining = list(scores)

    def evaluate(model: torch.nn.Module) -> float:
        snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        time.sleep(pause)
        return remaining.pop(0)

    return evaluate


def same_weights(model: torch.nn.Module, state: dict) -> bool:
    return all(torch.equal(value, state[name]) for name, value in model.state_dict().items())


@pytest.mark.slow  # three epochs with a snapshot at every evaluation
def test_the_run_ends_on_the_checkpoint_with_the_best_dev_score(relation):
    prepared, context = relation
    features = prepared.features["train"]
    model = prepared.formulation.build_model(prepared.source)
    hp = Hyperparameters(1e-3, 4, 3, evaluate_every_steps=2)
    steps = 3 * -(-len(features) // 4)
    evaluations = steps // 2 + (steps % 2 > 0)
    scores = [10.0] * evaluations
    scores[1] = 90.0  # the second evaluation (step 4) is the best
    snapshots: list[dict] = []
    stats = train(model, features, hp, 0, context, evaluate=scripted(scores, snapshots))
    assert [step for step, _ in stats.evaluations][:3] == [2, 4, 6]
    assert stats.best_step == 4 and stats.steps == steps and not stats.stopped_early
    assert same_weights(model, snapshots[1])
    assert not same_weights(model, snapshots[-1])


def test_training_stops_after_patience_evaluations_without_improvement(relation):
    prepared, context = relation
    model = prepared.formulation.build_model(prepared.source)
    hp = Hyperparameters(1e-3, 4, 20, evaluate_every_steps=1, patience=3)
    snapshots: list[dict] = []
    stats = train(
        model, prepared.features["train"], hp, 0, context, evaluate=scripted([5, 7, 6, 6, 6] + [9] * 99, snapshots)
    )
    assert stats.stopped_early and stats.steps == 5 and stats.best_step == 2
    assert same_weights(model, snapshots[1])


@pytest.mark.slow  # three epochs; evaluating every few steps is checked by the patience test above
def test_evaluating_each_epoch_and_the_cost_of_evaluation_is_counted(relation):
    prepared, context = relation
    features = prepared.features["train"]
    model = prepared.formulation.build_model(prepared.source)
    per_epoch = -(-len(features) // 8)
    stats = train(
        model, features, Hyperparameters(1e-3, 8, 3, evaluate_each_epoch=True), 0, context,
        evaluate=scripted([1.0, 3.0, 2.0], [], pause=0.05),
    )  # fmt: skip
    assert [step for step, _ in stats.evaluations] == [per_epoch, 2 * per_epoch, 3 * per_epoch]
    assert stats.best_step == 2 * per_epoch
    assert stats.evaluation_seconds >= 0.15 and stats.seconds >= stats.evaluation_seconds


def test_max_steps_stops_a_run_where_a_fold_chose_to_stop(relation):
    prepared, context = relation
    model = prepared.formulation.build_model(prepared.source)
    stats = train(model, prepared.features["train"], Hyperparameters(1e-3, 4, 5, max_steps=7), 0, context)
    assert stats.steps == 7 and stats.evaluations == []


def test_a_selecting_protocol_records_its_evaluations_and_the_protocol_in_results(tmp_path):
    out = tmp_path / "out"
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-relation", "--protocol", "bioformer",
            "--grid", "single", "--epochs", "2", "--seeds", "1", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["protocol"]["name"] == "bioformer" and results["reported"]["statistic"] == "mean"
    (run,) = results["runs"]
    assert len(run["train"]["evaluations"]) == 2
    assert run["train"]["best_step"] in [step for step, _ in run["train"]["evaluations"]]
    assert results["efficiency"]["in_loop_evaluation_seconds"] > 0
    assert results["efficiency"]["protocol_training_seconds"] >= results["efficiency"]["in_loop_evaluation_seconds"]


def test_results_record_the_blurb_protocol_by_default(tmp_path):
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--grid", "single",
            "--epochs", "1", "--seeds", "1", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["protocol"]["name"] == "blurb" and results["benchmark"] is None
    assert results["reported"] == {"statistic": "mean", "value": results["test"]["mean"]}


# --- the cross-validation of Lewis et al. 2020 ---------------------------------------------------


def test_lewis2020_on_eu_adr_reports_the_median_over_the_nine_folds_fold_1_did_not_choose(
    tmp_path, capsys, official_data
):
    official_data("EU-ADR", "biobert-REdata")
    out = tmp_path / "eu-adr"
    args = ["finetune", "--protocol", "lewis2020", "--dataset", "eu-adr", "--architecture", "bert:tiny",
            "--max-train-examples", "48", "--epochs", "2", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    folds = results["cross_validation"]
    assert folds["folds"] == 10 and folds["selection_fold"] == 1 and folds["reported_folds"] == list(range(2, 11))
    assert sorted(int(f) for f in results["data"]["folds"]) == list(range(1, 11))
    assert len({record["fingerprint"] for record in results["data"]["folds"].values()}) == 10
    assert [run["fold"] for run in results["runs"]] == list(range(2, 11))
    per_fold = [folds["per_fold"][str(fold)] for fold in range(2, 11)]
    assert results["test"]["n"] == 9
    assert results["reported"] == {"statistic": "median", "value": statistics.median(per_fold)}
    (selection,) = results["selection"]
    assert selection["fold"] == 1 and selection["best_step"] == results["chosen_hyperparameters"]["max_steps"]
    assert all(run["train"]["steps"] <= selection["best_step"] for run in results["runs"])
    assert "median" in printed and "over 9 folds" in printed


def test_gad_under_lewis2020_names_the_missing_folds_instead_of_using_one(tmp_path, capsys, official_data):
    fold_1 = official_data("GAD", "biobert-REdata-fold1")
    args = ["finetune", "--protocol", "lewis2020", "--dataset", "gad", "--architecture", "bert:tiny",
            "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 1
    error = capsys.readouterr().err
    assert "GAD is evaluated on 10 cross-validation folds" in error
    assert f"found fold 1 ({fold_1})" in error
    assert "missing folds 2, 3, 4, 5, 6, 7, 8, 9, 10" in error
    assert not (tmp_path / "results.json").exists()


def test_both_fold_layouts_are_found_and_a_gap_is_named(contributions, tmp_path):
    eu_adr = contributions.datasets["eu-adr"]
    root = tmp_path / "folds"
    for fold in (1, 2, 4):
        (root / str(fold)).mkdir(parents=True)
        (root / str(fold) / "train.tsv").write_text("")
    (tmp_path / "folds-fold3").mkdir()
    (tmp_path / "folds-fold3" / "train.tsv").write_text("")
    with pytest.raises(ValueError, match=r"missing folds 5, 6, 7, 8, 9, 10 \(each expected as"):
        fold_directories(eu_adr, root)
    for fold in range(5, 11):
        (root / str(fold)).mkdir()
        (root / str(fold) / "train.tsv").write_text("")
    found = fold_directories(eu_adr, root)
    assert list(found) == list(range(1, 11)) and found[3] == tmp_path / "folds-fold3"


# --- the model's length ------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["demo-relation", "demo-ner", "demo-similarity"])
def test_a_checkpoint_with_fewer_positions_than_max_length_is_fine_tuned_within_them(dataset, tmp_path, caplog):
    """A model pretrained on short blocks (here 70 positions) fine-tuned at the default --max-length 512.

    Found on the H100: the pubmedbert recipe on 128-token blocks gives 130 positions, and batches
    padded past them failed in the embeddings. Inputs are cut at 64 (70 down to the padding multiple).
    """
    from checkpoints import demo_texts, tiny_bert

    short = tiny_bert(tmp_path / "short", demo_texts(), 600, hidden=32, positions=70)
    out = tmp_path / "out"
    args = ["finetune", "--model", str(short), "--dataset", dataset, "--grid", "single", "--epochs", "1",
            "--seeds", "1", "--out", str(out)]  # fmt: skip
    with caplog.at_level("WARNING", logger="biolm.engine"):
        assert main(args) == 0
    assert "takes at most 64 tokens per input" in caplog.text
    results = json.loads((out / "results.json").read_text())
    assert results["test"]["n"] == 1
