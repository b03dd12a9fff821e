"""Every hook contributes behaviour the platform executes, is documented in docs/plugins.md, and has a test.

As in datasette, tests keep the plugin surface honest: ``test_every_hook_is_documented`` fails when
a hook has no section in docs/plugins.md, and ``test_every_hook_has_a_test`` when no test named
``test_hook_<hook>...`` exists. The ``test_hook_*`` tests below each register a plugin module that
implements one hook and show the platform running what it contributes.
"""

from __future__ import annotations

import ast
import types
from pathlib import Path

import numpy as np
import pytest

from biolm import hookimpl, hookspecs
from biolm.aggregation import aggregate
from biolm.canonical_jsonl import READER
from biolm.corpus import preprocess_corpus
from biolm.dataset_io import load_dataset_files
from biolm.specs import (
    AdapterSpec,
    AggregationSpec,
    ArchitectureSpec,
    BenchmarkSpec,
    DatasetSpec,
    EntrySpec,
    ImplementationError,
    MetricSample,
    MetricSpec,
    PreprocessorSpec,
    ProtocolSpec,
    RecipeSpec,
    SummarySpec,
    TaskTypeSpec,
)
from biolm.testing import check_plugin

ROOT = Path(__file__).resolve().parents[1]
HOOK_NAMES = sorted(name for name in dir(hookspecs) if name.startswith("biolm_"))
DEMO_QA = ROOT / "plugins" / "datasets" / "demo" / "demo-qa"


def plugin(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, answer in hooks.items():
        setattr(module, hook, hookimpl(lambda answer=answer: answer))
    return module


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_every_hook_is_documented(hook):
    docs = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert f"### `{hook}`" in docs, f"docs/plugins.md has no section for {hook}"


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_every_hook_has_a_test(hook):
    names = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert any(name.startswith(f"test_hook_{hook}") for name in names), f"no test named test_hook_{hook}..."


def test_the_readme_points_plugin_authors_to_the_plugin_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## For plugin authors", 1)[1].split("\n## ", 1)[0]
    assert "docs/plugins.md" in section


# --- one test per hook: the contribution is executed -------------------------------------------


def kappa(gold, predictions, *, negative=None):
    """Cohen's kappa x 100 (chance-corrected agreement), ignoring ``negative`` to show context passing."""
    labels = sorted(set(gold) | set(predictions))
    n = len(gold)
    observed = sum(g == p for g, p in zip(gold, predictions, strict=True)) / n
    expected = sum((gold.count(x) / n) * (predictions.count(x) / n) for x in labels)
    return 100 * (observed - expected) / (1 - expected) if expected < 1 else 100.0


KAPPA = MetricSpec(
    "kappa", "Cohen's kappa", "", kappa, context=("negative",), value_range=(-100.0, 100.0),
    sample=MetricSample(gold=("yes", "no", "maybe"), predictions=("yes", "no", "maybe")),
)  # fmt: skip


def test_hook_biolm_metrics_a_plugin_metric_scores_predictions_in_the_engine(register_plugin):
    from workers.engine.encoding import LabelSpace
    from workers.engine.prediction_scoring import score_predictions
    from workers.engine.task import Task

    contributions = register_plugin(plugin("kappa_plugin", biolm_metrics=[KAPPA]))
    dataset = DatasetSpec("kappa-qa", "Kappa QA", "question-answering", "kappa", "biomedical", "", negative_label="no")
    task = Task(dataset, contributions.task_types["question-answering"], contributions.metrics)
    rows = [{"labels": [label]} for label in ("yes", "no", "maybe", "yes")]
    scores = score_predictions(task, LabelSpace(("yes", "no", "maybe")), rows, ["yes", "no", "no", "yes"])
    assert scores["kappa"] == pytest.approx(kappa(["yes", "no", "maybe", "yes"], ["yes", "no", "no", "yes"]))
    assert set(scores) == {"kappa", "accuracy", "macro-f1"}  # the task type's companions too
    check_plugin(plugin("kappa_plugin", biolm_metrics=[KAPPA]))


def test_hook_biolm_metrics_a_metric_outside_its_range_stops_the_run_with_its_name():
    unit = MetricSpec("unit", "Unit", "", lambda gold, predictions: 150.0)
    with pytest.raises(ImplementationError, match=r"metric unit returned 150.0, outside its range \[0.0, 100.0\]"):
        unit.compute([1], [1])
    nan = MetricSpec("nan", "NaN", "", lambda gold, predictions: float("nan"))
    with pytest.raises(ImplementationError, match="metric nan returned nan, not a finite number"):
        nan.compute([1], [1])


POLARITY = TaskTypeSpec(
    "polarity", "Polarity", "Increase or decrease.", schema="classification",
    formulation="workers.engine.formulations.sequence:SequenceClassification", metric="accuracy", epochs=2, seeds=3,
)  # fmt: skip


def test_hook_biolm_task_types_a_plugin_task_type_is_accepted_and_dispatched(register_plugin):
    from workers.engine.formulations import TaskOptions, formulation_class
    from workers.engine.formulations.sequence import SequenceClassification
    from workers.engine.task import Task

    dataset = DatasetSpec(
        "polar", "Polar", "polarity", "accuracy", "biomedical", "", seeds=7,
        adapter=AdapterSpec("classification", READER, samples=str(DEMO_QA)),
    )  # fmt: skip
    contributions = register_plugin(plugin("polar_plugin", biolm_task_types=[POLARITY], biolm_datasets=[dataset]))
    assert not [p for p in contributions.problems if p.plugin == "polar_plugin"]
    task = Task.of(contributions, "polar")
    assert formulation_class(task, TaskOptions()) is SequenceClassification
    assert (task.epochs, task.seeds) == (2, 7)  # the task type's epochs, the dataset's seeds


def test_hook_biolm_task_types_references_to_missing_task_types_and_schemas_are_named(register_plugin):
    orphan = DatasetSpec("orphan", "Orphan", "no-such-type", "accuracy", "biomedical", "")
    mismatch = DatasetSpec(
        "mismatch", "Mismatch", "polarity", "accuracy", "biomedical", "", adapter=AdapterSpec("regression", READER)
    )
    vague = TaskTypeSpec("vague", "Vague", "", "classification", "a.module:Class", "no-such-metric")
    contributions = register_plugin(
        plugin("refs_plugin", biolm_task_types=[POLARITY, vague], biolm_datasets=[orphan, mismatch])
    )
    messages = [p.message for p in contributions.problems if p.plugin == "refs_plugin"]
    assert any("task type 'vague' names unknown metrics ['no-such-metric']" in m for m in messages)
    assert any("dataset 'orphan' names unknown task type 'no-such-type'" in m for m in messages)
    assert any(
        "read into the regression schema, but its task type 'polarity' uses classification" in m for m in messages
    )
    assert {"orphan", "mismatch"}.isdisjoint(contributions.datasets) and "vague" not in contributions.task_types


def test_hook_biolm_datasets_a_plugin_dataset_is_read_by_its_adapter(register_plugin):
    dataset = DatasetSpec(
        "my-qa", "My QA", "question-answering", "accuracy", "biomedical", "", labels=("yes", "no", "maybe"),
        adapter=AdapterSpec("classification", READER, default_path=str(DEMO_QA), samples=str(DEMO_QA)),
    )  # fmt: skip
    contributions = register_plugin(plugin("qa_plugin", biolm_datasets=[dataset]))
    loaded = load_dataset_files(contributions.datasets["my-qa"], DEMO_QA)
    assert loaded.sizes == {"train": 200, "dev": 40, "test": 40}
    check_plugin(plugin("qa_plugin", biolm_datasets=[dataset]))


def test_hook_biolm_benchmarks_a_plugin_benchmark_aggregates_scores(register_plugin):
    bench = BenchmarkSpec(
        "qa-pair", "QA pair", "", entries=(EntrySpec("pubmedqa", "pubmedqa", "accuracy"),
                                          EntrySpec("bioasq", "bioasq", "accuracy")),
        aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)),
    )  # fmt: skip
    contributions = register_plugin(plugin("bench_plugin", biolm_benchmarks=[bench]))
    assert aggregate(contributions.benchmarks["qa-pair"], {"pubmedqa": 60.0, "bioasq": 80.0}).score == 70.0


def one_point_median(dataset, task_type):
    """A protocol of one point for one epoch, three seeds, the median: what test_hook_biolm_protocols contributes."""
    from biolm.protocols import Hyperparameters, Plan

    return Plan("one-point-median", (Hyperparameters(5e-5, 16, 1),), 3, "median", description="one point")


ONE_POINT = ProtocolSpec(
    "one-point-median", "One point, median", "One grid point for one epoch; the median of three seeds.",
    one_point_median, statistic="median", citation="a test",
)  # fmt: skip


def test_hook_biolm_protocols_a_plugin_protocol_is_planned_run_and_combined_by_the_engine(register_plugin, tmp_path):
    from workers.engine.finetune import finetune
    from workers.engine.run_settings import FinetuneSpec

    bench = BenchmarkSpec(
        "one-point-bench", "One point", "", entries=(EntrySpec("demo-similarity", "demo-similarity", "pearson"),),
        aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)),
        protocol="one-point-median",
    )  # fmt: skip
    contributions = register_plugin(plugin("protocol_plugin", biolm_protocols=[ONE_POINT], biolm_benchmarks=[bench]))
    assert "one-point-bench" in contributions.benchmarks and "one-point-median" in contributions.protocols
    check_plugin(plugin("protocol_plugin", biolm_protocols=[ONE_POINT]))
    registered = (
        ("protocol_plugin", plugin("protocol_plugin", biolm_protocols=[ONE_POINT], biolm_benchmarks=[bench])),
    )
    spec = FinetuneSpec.build(dataset="demo-similarity", benchmark="one-point-bench", architecture="bert:tiny",
                              out=tmp_path, max_train_examples=40, max_eval_examples=20, max_length=64,
                              extra_plugins=registered)  # fmt: skip
    assert spec.job.protocol == "one-point-median"
    assert [pin.provides for pin in spec.job.code if "protocol one-point-median" in pin.provides]
    results = finetune(spec)
    assert results["protocol"]["name"] == "one-point-median" and results["protocol"]["statistic"] == "median"
    values = [run["metrics"]["test"]["pearson"] for run in results["runs"]]
    assert len(values) == 3 and results["reported"]["value"] == pytest.approx(float(np.median(values)))


def test_hook_biolm_protocols_a_planner_that_gives_no_plan_breaks_the_contract(register_plugin):
    broken = ProtocolSpec("no-plan", "No plan", "Returns nothing.", lambda dataset, task_type: None)
    with pytest.raises(AssertionError, match=r"protocols no-plan: .*its planner returned 'None', not a Plan"):
        check_plugin(plugin("broken_protocol", biolm_protocols=[broken]))
    from biolm.plugin_faults import blame
    from biolm.protocols import plan_for

    contributions = register_plugin(plugin("broken", biolm_protocols=[broken]))
    try:
        plan_for(broken, contributions.datasets["demo-ner"], contributions.task_types["ner"])
    except Exception as exc:  # the plugin's fault, in one line, not a submission's ValueError
        assert not isinstance(exc, ValueError)
        fault = blame(exc, contributions)
    assert str(fault).startswith("plugin broken: protocol planner 'no-plan' returned 'None', not a Plan")


def test_hook_biolm_architectures_a_plugin_preset_builds_and_trains_a_step():
    narrow = ArchitectureSpec(
        "narrow-bert", "Narrow BERT", "bert", "", presets={"tiny": {"num_hidden_layers": 1, "hidden_size": 32,
                                                                     "num_attention_heads": 2}},
    )  # fmt: skip
    contributions = check_plugin(plugin("arch_plugin", biolm_architectures=[narrow]))
    assert contributions.architectures["narrow-bert"].presets["tiny"]["hidden_size"] == 32


def make_objective(settings, objectives):
    return {"mask_rate": settings["mask_rate"], "objectives": list(objectives)}


def test_hook_biolm_pretraining_recipes_an_implementation_resolves_and_one_without_is_refused(register_plugin):
    working = RecipeSpec("my-mlm", "My MLM", "", ("mlm",), {"mask_rate": 0.2}, implementation=make_objective)
    described = RecipeSpec("paper-only", "Paper only", "", ("mlm", "nsp"))
    contributions = register_plugin(plugin("recipe_plugin", biolm_pretraining_recipes=[working, described]))
    recipe = contributions.recipes["my-mlm"]
    assert recipe.resolve()(settings=recipe.settings, objectives=recipe.objectives) == {
        "mask_rate": 0.2,
        "objectives": ["mlm"],
    }
    with pytest.raises(ImplementationError, match="recipe 'paper-only' describes a paper's settings"):
        contributions.recipes["paper-only"].resolve()
    broken = RecipeSpec("broken", "Broken", "", ("mlm",), implementation="no_such_module:objective")
    with pytest.raises(AssertionError, match="recipes broken: recipe broken: cannot import 'no_such_module:objective'"):
        check_plugin(plugin("broken_recipe_plugin", biolm_pretraining_recipes=[broken]))


def shout(documents):
    for document in documents:
        yield document.upper()


def test_hook_biolm_corpus_preprocessors_a_plugin_preprocessor_is_applied_to_a_corpus_file(tmp_path, register_plugin):
    spec = PreprocessorSpec("shout", "Shout", "", "tests.test_plugin_hooks:shout")
    contributions = register_plugin(plugin("shout_plugin", biolm_corpus_preprocessors=[spec]))
    path = tmp_path / "corpus.txt"
    path.write_text("aspirin reduces fever\n\nibuprofen too\n", encoding="utf-8")
    chain = [contributions.preprocessors["shout"], contributions.preprocessors["clinical-longformer-clean"]]
    assert list(preprocess_corpus(path, chain)) == ["aspirin reduces fever", "ibuprofen too"]
    assert list(preprocess_corpus(path, chain[:1])) == ["ASPIRIN REDUCES FEVER", "IBUPROFEN TOO"]
    check_plugin(plugin("shout_plugin", biolm_corpus_preprocessors=[spec]))


def test_metric_scores_reach_roc_auc_through_the_scores_input():
    from biolm.plugins import collect_contributions, get_plugin_manager
    from workers.engine.encoding import LabelSpace
    from workers.engine.prediction_scoring import score_predictions
    from workers.engine.task import Task

    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    task = Task.of(contributions, "mimic-aki")
    rows = [{"labels": [label]} for label in ("1", "0", "1", "0")]
    logits = np.array([[0.0, 2.0], [1.0, -1.0], [0.0, 0.5], [0.0, 0.1]])
    scores = score_predictions(task, LabelSpace(("0", "1")), rows, ["1", "0", "1", "1"], logits)
    assert scores["roc-auc"] == pytest.approx(100.0)
