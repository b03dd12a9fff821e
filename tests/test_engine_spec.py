"""The engine's run (the job's contract spec plus this machine's paths: argument groups, spec files), the task's
protocol facts, the training context and parameter counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from biolm.contract import ContractError, FinetuneJob
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import TaskOptions, formulation_for
from workers.engine.formulations.base import Formulation, ModelSource
from workers.engine.run_settings import DataArguments, FinetuneSpec, ModelArguments, RunArguments
from workers.engine.runs import parameter_count
from workers.engine.task import Task
from workers.engine.tokenization import train_wordpiece
from workers.engine.training import TrainingContext

CONTRIBUTIONS = collect_contributions(get_plugin_manager(load_entrypoints=False))


def full_spec(tmp_path: Path) -> FinetuneSpec:
    return FinetuneSpec.build(
        model=tmp_path / "checkpoint", dataset="chemprot", data_dir=tmp_path / "data", max_length=256,
        max_train_examples=100, out=tmp_path / "out", seeds=3, grid="single", learning_rate=2e-5, fresh=True,
        relation_representation="markers", relation_features="cls+markers", qa_stride=300, load_entrypoints=False,
    )  # fmt: skip


def test_the_flags_build_the_job_spec_submit_builds_and_it_round_trips_through_json(tmp_path):
    spec = full_spec(tmp_path)
    job = spec.job
    assert (job.dataset, job.protocol, job.metric, job.benchmark) == ("chemprot", "blurb", "micro-f1", None)
    assert job.overrides.to_json() == {"grid": "single", "seeds": 3, "learning_rate": 2e-5, "max_length": 256,
                                       "max_train_examples": 100}  # fmt: skip
    assert job.task_options.to_json() == {"relation_representation": "markers", "relation_features": "cls+markers",
                                          "qa_stride": 300}  # fmt: skip
    assert job.model.to_json() == {"directory": str(tmp_path / "checkpoint")}
    text = json.dumps(job.to_json())
    assert FinetuneJob.from_json(json.loads(text)) == job
    assert (spec.max_length, spec.first_seed, spec.out) == (256, 42, tmp_path / "out")


def test_build_sends_each_flat_setting_to_its_group(tmp_path):
    spec = FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", crf=True, seeds=2)
    assert (spec.dataset, spec.model.architecture, spec.job.task_options.crf, spec.overrides.seeds) == (
        "demo-ner",
        "bert:tiny",
        True,
        2,
    )
    with pytest.raises(TypeError, match="no fine-tuning setting called colour"):
        FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", colour="red")


def test_a_spec_file_of_another_version_or_with_unknown_settings_is_refused(tmp_path):
    data = full_spec(tmp_path).job.to_json()
    with pytest.raises(ContractError, match="reads finetune spec version 1, not 99"):
        FinetuneJob.from_json({**data, "version": 99})
    with pytest.raises(ContractError, match="unknown field\\(s\\) extra"):
        FinetuneJob.from_json({**data, "extra": {}})
    with pytest.raises(ContractError, match="no task option 'colour'"):
        FinetuneJob.from_json({**data, "task_options": {"colour": "red"}})
    with pytest.raises(ContractError, match="--relation-features cls\\+markers needs --relation-representation"):
        FinetuneJob.from_json({**data, "task_options": {"relation_features": "cls+markers"}})
    with pytest.raises(ContractError, match="seeds must be a whole number from 1 to 100, not 0"):
        FinetuneJob.from_json({**data, "overrides": {"seeds": 0}})


def test_each_group_checks_its_own_settings(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        ModelArguments(model=tmp_path, architecture="bert:tiny")
    with pytest.raises(ValueError, match="max_length must be a whole number from 8"):
        FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", max_length=4)
    with pytest.raises(ValueError, match="grid must be one of full, single"):
        FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", grid="random")
    with pytest.raises(ValueError, match="--eval-batch-size must be at least 1"):
        RunArguments(out=tmp_path, eval_batch_size=0)
    with pytest.raises(ValueError, match="give its folder with --data-dir"):
        FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", data_format="canonical")
    # The selection and the gather of a sliced protocol read slice documents only: no data folder, no model.
    assert FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", data_format="canonical",
                              slice="gather").part.part == "gather"  # fmt: skip


def test_a_spec_file_runs_the_job_it_holds_and_refuses_flags_that_would_change_it(tmp_path):
    job = FinetuneSpec.build(dataset="demo-ner", out=tmp_path, architecture="bert:tiny", seeds=1).job
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(job.to_json()))
    spec = FinetuneSpec.from_arguments(
        ModelArguments(), DataArguments(), RunArguments(out=tmp_path / "o", spec=path), type(job.overrides)(),
        TaskOptions(),
    )  # fmt: skip
    assert spec.job == job and spec.model.architecture == "bert:tiny"
    with pytest.raises(ValueError, match="--spec gives the whole job: leave out --dataset"):
        groups = (ModelArguments(), DataArguments(dataset="demo-ner"), RunArguments(out=tmp_path, spec=path))
        FinetuneSpec.from_arguments(*groups, type(job.overrides)(), TaskOptions())


def test_results_record_the_spec_they_ran(tmp_path):
    from biolm.contract import ResultsDocument
    from workers.engine.finetune import finetune

    spec = FinetuneSpec.build(
        dataset="demo-similarity", out=tmp_path, architecture="bert:tiny", grid="single", seeds=1, epochs=1
    )
    results = finetune(spec)
    document = ResultsDocument.from_json(json.loads((tmp_path / "results.json").read_text()))
    assert document.spec == spec.job and document.to_json() == results
    assert all(run.fold is None for run in document.runs)


# --- the task: what the old engine's slug lists decided now comes from the specs -----------------

# protocol.py's EPOCHS_BY_TASK and TEN_SEED_DATASETS, and scoring.py's NEGATIVE_LABELS, before the
# task types and datasets carried them: every dataset must keep the epochs, seeds and negative class
# the engine gave it then.
OLD_EPOCHS_BY_TASK = {
    "ner": 20,
    "pico": 10,
    "relation-extraction": 10,
    "sentence-similarity": 30,
    "document-classification": 20,
    "question-answering": 20,
    "nli": 10,
    "deidentification": 20,
    "extractive-qa": 3,
}
OLD_TEN_SEED_DATASETS = {"biosses", "bioasq", "pubmedqa"}
# The invented BLURB-mini datasets declare epochs sized for make demo's two CPU cores since (issue 44): one pass
# where each token or pair has a label, 3 and 4 where an abstract or a question has one (docs/performance.md).
DEMO_EPOCHS = {
    "demo-ner": 1,
    "demo-pico": 1,
    "demo-relation": 1,
    "demo-similarity": 1,
    "demo-doc-classification": 3,
    "demo-qa": 4,
}
OLD_NEGATIVE_LABELS = ("false", "DDI-false", "0")


def test_every_built_in_task_type_resolves_to_a_formulation_subclass():
    from plugins.tasks.task_types import TASK_TYPES

    assert {spec.slug for spec in TASK_TYPES} == set(CONTRIBUTIONS.task_types)
    for spec in TASK_TYPES:
        formulation = spec.resolve()
        assert isinstance(formulation, type) and issubclass(formulation, Formulation), spec.slug


@pytest.mark.parametrize("slug", sorted(CONTRIBUTIONS.datasets))
def test_each_dataset_keeps_the_epochs_and_seeds_the_engine_gave_it(slug):
    task = Task.of(CONTRIBUTIONS, slug)
    assert task.epochs == DEMO_EPOCHS.get(slug, OLD_EPOCHS_BY_TASK.get(task.dataset.task_type, 10))
    assert task.seeds == (10 if slug in OLD_TEN_SEED_DATASETS else 5)


def test_only_the_invented_demo_datasets_declare_epochs_of_their_own():
    declaring = {slug for slug, spec in CONTRIBUTIONS.datasets.items() if spec.epochs is not None}
    assert declaring == set(DEMO_EPOCHS) and all(CONTRIBUTIONS.datasets[slug].demo for slug in declaring)


def test_the_small_high_variance_datasets_run_ten_seeds_declared_on_their_specs():
    for slug in sorted(OLD_TEN_SEED_DATASETS):
        task = Task.of(CONTRIBUTIONS, slug)
        assert (task.dataset.seeds, task.seeds) == (10, 10), slug
    assert Task.of(CONTRIBUTIONS, "chemprot").seeds == 5  # the task type's default


@pytest.mark.parametrize("slug", sorted(CONTRIBUTIONS.datasets))
def test_each_dataset_declares_the_negative_class_the_engine_left_out(slug):
    spec = CONTRIBUTIONS.datasets[slug]
    old = next((name for name in OLD_NEGATIVE_LABELS if name in (spec.labels or ())), None)
    assert (spec.negative_label or None) == old


def test_the_blurb_relation_datasets_name_their_negative_class():
    negatives = {slug: CONTRIBUTIONS.datasets[slug].negative_label for slug in ("chemprot", "ddi", "gad")}
    assert negatives == {"chemprot": "false", "ddi": "DDI-false", "gad": "0"}
    assert not CONTRIBUTIONS.datasets["hoc"].negative_label  # multi-label: nothing to leave out


def test_pico_is_multi_element_by_its_task_type_not_by_its_slug():
    pico = Task.of(CONTRIBUTIONS, "ebm-pico")
    assert pico.task_type.slug == "pico" and pico.task_type.multi_element
    assert pico.task_type.schema == "token-tagging" and pico.dataset.metric == "token-macro-f1"
    assert not Task.of(CONTRIBUTIONS, "ncbi-disease").task_type.multi_element


@pytest.fixture(scope="module")
def relation_setup():
    task = Task.of(CONTRIBUTIONS, "demo-relation")
    rows = [{"text": "@CHEMICAL$ inhibits @GENE$ .", "label": "false"}] * 4
    tokenizer = train_wordpiece([r["text"] for r in rows] * 5, 200)
    return task, tokenizer


@pytest.mark.parametrize(
    ("slug", "options"),
    [
        ("demo-ner", {}),
        ("demo-ner", {"crf": True}),
        ("demo-relation", {"relation_representation": "markers", "relation_features": "cls+markers"}),
        ("demo-relation", {"relation_representation": "markers"}),
    ],
)
def test_parameters_counted_on_the_meta_device_equal_those_of_the_real_model(slug, options):
    task = Task.of(CONTRIBUTIONS, slug)
    tokenizer = train_wordpiece(["aspirin inhibits cox", "@CHEMICAL$ and @GENE$"] * 5, 200)
    labels = LabelSpace(("O", "B", "I")) if slug == "demo-ner" else LabelSpace(("CPR:3", "CPR:4", "CPR:9", "false"))
    source = ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer))
    formulation = formulation_for(task, labels, tokenizer, TaskOptions(**options), 64, source)
    real = formulation.build_model(source)
    assert parameter_count(formulation, source) == sum(p.numel() for p in real.parameters())


def test_parameters_of_a_checkpoint_are_counted_without_reading_its_weights(tmp_path):
    from transformers import BertConfig, BertModel

    tokenizer = train_wordpiece(["aspirin inhibits cox"] * 5, 120)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    BertModel(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    task = Task.of(CONTRIBUTIONS, "demo-qa")
    source = ModelSource(model_dir=tmp_path)
    formulation = formulation_for(task, LabelSpace(("yes", "no", "maybe")), tokenizer, TaskOptions(), 64, source)
    (tmp_path / "model.safetensors").write_bytes(b"not weights")  # a meta build must not read them
    with pytest.raises(Exception):  # noqa: B017 -- the real load does read them
        formulation.build_model(source)
    expected = sum(p.numel() for p in BertModel(config, add_pooling_layer=True).parameters()) + 3 * 32 + 3
    assert parameter_count(formulation, source) == expected


def test_the_training_context_takes_the_formulations_padding_collate_and_token_count():
    task = Task.of(CONTRIBUTIONS, "demo-ner")
    tokenizer = train_wordpiece(["aspirin inhibits cox"] * 5, 120)
    formulation = formulation_for(task, LabelSpace(("O", "B", "I")), tokenizer, TaskOptions(), 64)
    context = TrainingContext.for_formulation(formulation, torch.device("cpu"), torch.bfloat16, eval_batch_size=7)
    assert context.pad_id == tokenizer.pad_token_id and context.eval_batch_size == 7
    assert context.collate == formulation.collate and context.computed_tokens == formulation.computed_tokens
    assert (context.device, context.dtype) == (torch.device("cpu"), torch.bfloat16)


def test_an_unwritable_out_and_an_incomplete_checkpoint_are_refused_before_any_training(tmp_path, capsys):
    from workers.engine.__main__ import main

    (tmp_path / "a-file").write_text("x")
    args = ["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--out", str(tmp_path / "a-file")]
    assert main(args) == 1
    assert "is a file, not a directory" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permissions: nothing to test here
            pytest.skip("running as a user who may write anywhere")
        assert (
            main(["finetune", "--architecture", "bert:tiny", "--dataset", "demo-ner", "--out", str(locked / "o")]) == 1
        )
        assert "cannot be created" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_a_checkpoint_without_weights_or_tokenizer_is_named_before_any_training(tmp_path, capsys):
    from transformers import BertConfig

    from workers.engine.__main__ import main

    checkpoint = tmp_path / "ckpt"
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(checkpoint)
    args = ["finetune", "--model", str(checkpoint), "--dataset", "demo-ner", "--out", str(tmp_path / "out")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "not a complete checkpoint: missing weights (model.safetensors or" in err
    assert "a tokenizer (tokenizer.json or" in err and "it holds config.json" in err
    assert main([*args[:2], str(tmp_path / "nowhere"), *args[3:]]) == 1
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        ("incomplete checkpoint", "not a complete checkpoint"),
        ("missing checkpoint", "no such directory"),
        ("unknown dataset", "unknown dataset 'nope'"),
        ("missing data dir", "nowhere"),
    ],
)
def test_a_refused_finetune_leaves_no_out_directory_it_created(tmp_path, capsys, refusal, expected):
    from transformers import BertConfig

    from workers.engine.__main__ import main

    checkpoint = tmp_path / "ckpt"
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(checkpoint)
    model = {
        "incomplete checkpoint": ["--model", str(checkpoint)],
        "missing checkpoint": ["--model", str(tmp_path / "no-checkpoint")],
    }.get(refusal, ["--architecture", "bert:tiny"])
    data = {
        "unknown dataset": ["--dataset", "nope"],
        "missing data dir": ["--dataset", "demo-ner", "--data_dir", str(tmp_path / "nowhere")],
    }.get(refusal, ["--dataset", "demo-ner"])
    common = ["finetune", *model, *data, "--grid", "single", "--seeds", "1", "--epochs", "1"]

    assert main([*common, "--out", str(tmp_path / "x" / "out")]) == 1
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # neither --out nor the parent the run made for it

    existing = tmp_path / "existing"  # a directory that was there before: it and its contents stay
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    assert main([*common, "--out", str(existing)]) == 1
    assert [p.name for p in existing.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*common, "--out", str(empty)]) == 1
    assert empty.is_dir()
