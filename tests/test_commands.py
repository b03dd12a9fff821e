"""The commands other tools and people rely on: score, leaderboard, plugins, sync_plugins."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from biolm.plugins import collect_contributions, get_plugin_manager

pytestmark = pytest.mark.backend  # manage.py's commands, most without a database fixture
BLURB = collect_contributions(get_plugin_manager(load_entrypoints=False)).benchmarks["blurb"]
TABLE_6_MODELS = [m for m in BLURB.published if m.source.endswith("Table 6")]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def write_scores(tmp_path, scores) -> str:
    path = tmp_path / "scores.json"
    path.write_text(json.dumps(scores))
    return str(path)


def test_table_6_has_nine_models():
    assert len(TABLE_6_MODELS) == 9


@pytest.mark.parametrize("model", TABLE_6_MODELS, ids=lambda m: m.slug)
def test_score_reproduces_the_blurb_score_of_every_table_6_model(tmp_path, model):
    out = run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, dict(model.scores)), "--json")
    result = json.loads(out)
    assert f"{result['score']:.2f}" == f"{model.reported_summaries['blurb-score']:.2f}"


def test_score_of_pubmedbert_is_81_10_from_the_papers_numbers(tmp_path):
    # Gu et al. 2021, Table 6, PubMedBERT column, typed here independently of the plugin's JSON.
    pubmedbert = {
        "bc5-chem": 93.33, "bc5-disease": 85.62, "ncbi-disease": 87.82, "bc2gm": 84.52, "jnlpba": 80.06,
        "ebm-pico": 73.38, "chemprot": 77.24, "ddi": 82.36, "gad": 82.34, "biosses": 92.30, "hoc": 82.32,
        "pubmedqa": 55.84, "bioasq": 87.56,
    }  # fmt: skip
    out = run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, pubmedbert))
    assert "score: 81.10" in out
    assert "Named Entity Recognition" in out or "NER" in out


def test_unknown_dataset_names_are_named_with_a_suggestion(tmp_path):
    scores = {**BLURB.published[0].scores, "BC5-chem": 90.0, "mystery": 1.0}
    with pytest.raises(CommandError) as error:
        run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores))
    assert "'BC5-chem' (did you mean 'bc5-chem'?)" in str(error.value)
    assert "'mystery'" in str(error.value)


def test_missing_dataset_names_are_listed(tmp_path):
    scores = {k: v for k, v in BLURB.published[0].scores.items() if k not in ("hoc", "gad")}
    with pytest.raises(CommandError, match="missing score\\(s\\) for gad, hoc"):
        run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores))


def test_partial_scores_are_aggregated_on_request_with_empty_groups(tmp_path):
    scores = {k: v for k, v in BLURB.published[0].scores.items() if k != "hoc"}
    result = json.loads(
        run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores), "--json", "--partial")
    )
    assert result["score"] is None
    assert result["missing"] == ["hoc"]
    assert result["groups"]["ner"] is not None


def test_unknown_benchmark_lists_the_known_ones(tmp_path):
    with pytest.raises(CommandError, match=r"unknown benchmark 'blurp'; known benchmarks: .*blurb"):
        run("score", "--benchmark", "blurp", "--scores", write_scores(tmp_path, {}))


def test_broken_json_reports_file_and_line(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text('{\n  "bc5-chem": 93.3,\n  "bc2gm" 84.5\n}\n')
    with pytest.raises(CommandError, match=r"scores.json:3:\d+: invalid JSON"):
        run("score", "--benchmark", "blurb", "--scores", str(path))


def test_non_numeric_score_is_rejected(tmp_path):
    scores = {**BLURB.published[0].scores, "bc5-chem": "93.3"}
    with pytest.raises(CommandError, match="score for 'bc5-chem' must be a number"):
        run("score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores))


def test_scores_on_a_zero_to_one_scale_get_a_warning(tmp_path):
    err = io.StringIO()
    scores = {k: v / 100 for k, v in BLURB.published[0].scores.items()}
    call_command(
        "score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores), stdout=io.StringIO(), stderr=err
    )
    assert "0-100 scale" in err.getvalue()


def test_plugins_command_lists_builtins_and_their_contributions():
    data = json.loads(run("plugins", "--json"))
    blurb_plugin = next(p for p in data["plugins"] if p["name"] == "plugins.benchmarks.blurb")
    assert blurb_plugin["contributes"] == {"benchmarks": ["blurb"]}
    assert data["problems"] == []
    assert "plugins.datasets.blurb" in run("plugins")


def test_plugins_command_shows_each_task_types_schema_and_metrics_and_each_datasets_task_type():
    data = json.loads(run("plugins", "--json"))
    assert data["task_types"]["ner"] == {
        "plugin": "plugins.tasks.task_types",
        "schema": "token-tagging",
        "formulation": "workers.engine.formulations.token_tagging:TokenTagging",
        "metric": "entity-f1",
        "companion_metrics": ["entity-precision", "entity-recall"],
        "epochs": 20,
        "seeds": 5,
        "multi_element": False,
    }
    assert data["task_types"]["pico"]["multi_element"] is True
    assert data["datasets"]["bc5-chem"]["companion_metrics"] is None  # the task type's apply
    assert data["datasets"]["bioasq-factoid"] == {
        "plugin": "plugins.datasets.biomedical",
        "task_type": "extractive-qa",
        "schema": "extractive-qa",
        "multi_label": False,
        "metric": "strict-accuracy",
        "companion_metrics": ["lenient-accuracy", "mrr"],
    }
    text = run("plugins")
    assert "  task_types: deidentification, document-classification," in text  # the slug list is unchanged
    assert "    ner: schema token-tagging, metric entity-f1, companions entity-precision, entity-recall\n" in text
    assert "    pico: schema token-tagging (multi-element), metric token-macro-f1\n" in text
    assert "    bc5-chem: task type ner, metric entity-f1\n" in text
    assert (
        "    bioasq-factoid: task type extractive-qa, metric strict-accuracy, "
        "companions lenient-accuracy, mrr (instead of the task type's)\n"
    ) in text
    assert "    hoc: task type document-classification, multi-label, metric average-micro-f1," in text


@pytest.mark.django_db
def test_leaderboard_lists_reported_blurb_models_best_first():
    data = json.loads(run("leaderboard", "--benchmark", "blurb", "--json"))
    scores = [row["score"] for row in data["rows"]]
    assert scores == sorted(scores, reverse=True)
    top = data["rows"][0]
    assert (top["rank"], top["origin"]) == (1, "reported")
    assert {row["name"] for row in data["rows"]} >= {m.identity_in("blurb").name for m in TABLE_6_MODELS}
    assert "PubMedBERT" in run("leaderboard", "--benchmark", "blurb")


@pytest.mark.django_db
def test_leaderboard_of_an_unknown_benchmark_names_the_known_ones():
    with pytest.raises(CommandError, match=r"known: .*blurb"):
        run("leaderboard", "--benchmark", "nope")


@pytest.mark.django_db
def test_sync_plugins_twice_reports_up_to_date():
    run("sync_plugins")
    assert "already up to date" in run("sync_plugins")


@pytest.mark.django_db
def test_sync_plugins_says_a_vanished_contribution_is_marked_inactive_not_removed(monkeypatch):
    import registry.sync
    from registry.models import Benchmark

    run("sync_plugins")
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    del contributions.benchmarks["gatortron"]
    monkeypatch.setattr(registry.sync, "load_contributions", lambda: contributions)
    out = run("sync_plugins")
    assert "marked inactive" in out and "1 benchmarks" in out
    assert "removed" not in out
    assert Benchmark.objects.get(slug="gatortron").active is False  # the row (and its results) is still there


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"bc5-chem": NaN}', "NaN is not a score"),
        ('{"bc5-chem": Infinity}', "Infinity is not a score"),
        ('{"bc5-chem": -Infinity}', "-Infinity is not a score"),
        ('{"bc5-chem": 1e999}', "score for 'bc5-chem' must be a finite number, got inf"),
        ('{"bc5-chem": 101.5}', "score for 'bc5-chem' is 101.5, outside 0 to 100"),
        ('{"bc5-chem": -3}', "score for 'bc5-chem' is -3, outside 0 to 100"),
        ('{"biosses": -120}', "score for 'biosses' is -120, outside -100 to 100"),
        ('{"bc5-chem": 90, "bc5-chem": 91}', "the key 'bc5-chem' appears twice"),
        ('{"bc5-chem": ' + "9" * 5000 + "}", "invalid score file"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_score_refuses_values_that_are_no_scores_with_a_clear_error(tmp_path, text, message):
    path = tmp_path / "scores.json"
    path.write_text(text)
    with pytest.raises(CommandError, match=re.escape(message)):
        run("score", "--benchmark", "blurb", "--scores", str(path), "--partial")


def test_score_refuses_a_directory_and_a_huge_integer_from_the_command_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "manage.py", "score", "--benchmark", "blurb", "--scores", str(tmp_path), "--json"],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1 and "is a directory" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "big.json").write_text('{"bc5-chem": ' + "9" * 400 + "}")
    result = subprocess.run(
        [sys.executable, "manage.py", "score", "--benchmark", "blurb", "--scores", str(tmp_path / "big.json"),
         "--partial"],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1 and "far too large" in result.stderr and "Traceback" not in result.stderr


def test_a_single_score_on_the_zero_to_one_scale_gets_a_warning_naming_it(tmp_path):
    err = io.StringIO()
    scores = {**BLURB.published[0].scores, "biosses": 0.92}
    call_command(
        "score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, scores), stdout=io.StringIO(), stderr=err
    )
    assert "biosses lie(s) between 0 and 1" in err.getvalue()


def test_score_json_output_is_strict_json(tmp_path):
    out = run(
        "score", "--benchmark", "blurb", "--scores", write_scores(tmp_path, {"biosses": 90}), "--partial", "--json"
    )
    data = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in --json output"))
    assert data["score"] is None and data["entries"] == {"biosses": 90.0}
