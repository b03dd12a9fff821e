"""The job contract (biolm.contract): one typed, versioned document per job kind and one results document,
each checked by value where it is built, refused whole when its version or fields are unknown, and equal
after a trip through JSON; the run keys; and the one computation of the seed and fold statistic."""

from __future__ import annotations

import json
import math

import pytest
from contract_documents import BUILTIN, checkpoint_model, finetune_spec, pretrain_spec, results_document, score_spec

from biolm import plugin_set, protocols
from biolm.contract import (
    PRETRAIN_SPEC_VERSION,
    CodeMismatch,
    CodePin,
    ContractError,
    FinetuneJob,
    ModelInput,
    Overrides,
    PretrainJob,
    ResultsDocument,
    ScoreJob,
    check,
    parse_job_spec,
    parse_run_key,
    pins_for,
    run_key,
)
from biolm.protocols import RunValue, combine


@pytest.mark.parametrize(
    "spec",
    [
        finetune_spec("demo-ner", overrides={"seeds": 3, "learning_rate": 2e-5}),
        finetune_spec("eu-adr", "lewis2020"),
        finetune_spec("demo-qa", preview=True),
        finetune_spec("demo-ner", None, model=ModelInput(architecture="bert:tiny")),
        score_spec(finetune_spec("demo-ner"), 7),
        pretrain_spec(settings={"batch_size": 16}, gpus=2),
        pretrain_spec(gpus=4, nodes=2),
    ],
    ids=["finetune", "folds", "preview", "architecture", "score", "pretrain", "two-nodes"],
)
def test_every_kind_of_spec_is_equal_after_a_trip_through_json(spec):
    data = json.loads(json.dumps(spec.to_json()))
    assert data["version"] == (PRETRAIN_SPEC_VERSION if spec.KIND == "pretrain" else 1) and data["kind"] == spec.KIND
    assert parse_job_spec(data) == spec and type(parse_job_spec(data)) is type(spec)


def test_a_version_1_pretraining_spec_queued_before_nodes_existed_is_read_as_one_node():
    current = pretrain_spec(gpus=2).to_json()
    queued = {key: value for key, value in current.items() if key != "nodes"} | {"version": 1}
    assert parse_job_spec(queued) == pretrain_spec(gpus=2)
    assert parse_job_spec(queued).nodes == 1 and parse_job_spec(queued).processes == 2
    with pytest.raises(ContractError, match=r"pretrain spec: unknown field\(s\) nodes"):
        parse_job_spec({**queued, "nodes": 2})  # version 1 never had it
    with pytest.raises(ContractError, match=r"reads pretrain spec version 1 or 2, not 3"):
        parse_job_spec({**current, "version": 3})
    with pytest.raises(ContractError, match=r"nodes must be a whole number from 1 to 1,024, not 0"):
        parse_job_spec({**current, "nodes": 0})


def test_the_fold_decision_is_the_protocols_and_the_statistic_goes_with_it():
    assert finetune_spec("eu-adr", "lewis2020").cross_validation is True
    assert finetune_spec("gad", "blurb").cross_validation is False
    plan = protocols.plan_for(BUILTIN.protocols["lewis2020"], BUILTIN.datasets["eu-adr"],
                              BUILTIN.task_types[BUILTIN.datasets["eu-adr"].task_type])  # fmt: skip
    assert (plan.statistic, plan.cross_validation, plan.seeds) == ("median", True, 1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": 2}, r"reads finetune spec version 1, not 2"),
        ({"kind": "score"}, r"not a finetune spec"),
        ({"colour": "red"}, r"unknown field\(s\) colour"),
        ({"overrides": {"epochz": 1}}, r"no setting 'epochz'; the settings a submission may change: grid, seeds"),
        ({"overrides": {"seeds": 0}}, r"seeds must be a whole number from 1 to 100, not 0"),
        ({"overrides": {"seeds": True}}, r"seeds must be a whole number from 1 to 100, not True"),
        ({"overrides": {"learning_rate": "abc"}}, r"learning_rate must be a number above 0 and at most 1, not 'abc'"),
        ({"overrides": {"learning_rate": float("nan")}}, r"learning_rate must be a number above 0"),
        ({"overrides": {"grid": "random"}}, r"grid must be one of full, single, not 'random'"),
        ({"overrides": {"max_length": 4}}, r"max_length must be a whole number from 8"),
        ({"overrides": {"precision": "fp8"}}, r"precision must be one of auto, bf16, fp32"),
        ({"overrides": []}, r"overrides must be a JSON object"),
        ({"dataset": "Not A Slug"}, r"dataset 'Not A Slug' is not a lower-case slug"),
        ({"preview": "yes"}, r"preview must be true or false"),
        ({"model": {"architecture": "bert:tiny", "directory": "/x"}}, r"the model is exactly one of"),
        ({"code": [{"name": "biolm", "version": 1}]}, r"name, distribution, version and fingerprint are text"),
    ],
)
def test_a_spec_is_checked_by_value_and_refused_naming_the_setting(data, message):
    spec = finetune_spec("demo-ner").to_json()
    with pytest.raises(ContractError, match=message):
        FinetuneJob.from_json({**spec, **data})


def test_a_bad_override_names_its_field_and_setting_for_the_form_and_the_api():
    with pytest.raises(ContractError) as refused:
        Overrides.from_json({"seeds": 0})
    assert (refused.value.field, refused.value.setting) == ("overrides", "seeds")
    assert Overrides.from_json({"learning_rate": 1}).learning_rate == 1.0  # a whole number is a number
    assert Overrides().to_json() == {} and not Overrides().custom and Overrides(seeds=2).custom


def test_the_score_and_pretraining_specs_check_their_values_too():
    data = score_spec(finetune_spec("demo-ner"), 7).to_json()
    with pytest.raises(ContractError, match="finetune_job must be a whole number from 1"):
        ScoreJob.from_json({**data, "finetune_job": 0})
    pretrain = pretrain_spec().to_json()
    with pytest.raises(ContractError, match="gpus must be a whole number from 1 to 64, not 65"):
        PretrainJob.from_json({**pretrain, "gpus": 65})
    with pytest.raises(ContractError, match="steps must be a whole number from 1"):
        PretrainJob.from_json({**pretrain, "steps": -3})
    with pytest.raises(ContractError, match="unknown job kind 'aggregate'"):
        parse_job_spec({**data, "kind": "aggregate"})


def test_a_spec_pins_biolm_and_names_what_the_job_uses_of_it():
    spec = finetune_spec("demo-ner")
    (biolm,) = spec.code
    own = plugin_set.own_code()
    assert (biolm.name, biolm.version, biolm.fingerprint) == ("biolm", own.version, own.fingerprint)
    assert {"dataset demo-ner", "protocol blurb", "benchmark blurb-mini", "task type ner"} <= set(biolm.provides)
    assert check(spec.code).ok


def test_code_that_differs_from_the_pins_is_refused_in_one_line(monkeypatch):
    spec = finetune_spec("demo-ner")
    monkeypatch.setattr(plugin_set, "own_code", lambda: plugin_set.CodeVersion("0.1.0", "sha256:ffffffffffffffff"))
    checked = check(spec.code)
    assert not checked.ok and checked.differing[0][0] == "biolm"
    with pytest.raises(CodeMismatch, match=r"^plugin version mismatch: biolm biolm 0\.1\.0 \(sha256:[0-9a-f]{16}\) "
                       r"pinned, biolm 0\.1\.0 \(sha256:ffffffffffffffff\) installed$"):  # fmt: skip
        checked.require()


def test_a_pin_recorded_before_fingerprints_is_compared_by_version_only():
    old = CodePin("biolm", "biolm", plugin_set.own_code().version, "")
    assert check([old]).ok
    assert not check([CodePin("biolm", "biolm", "0.0.1", "")]).ok
    assert check([CodePin("acme", "biolm-acme", "0.1", "sha256:1")]).missing == ("acme (biolm-acme 0.1)",)


def test_pins_name_an_installed_plugin_by_its_distribution_version_and_fingerprint(monkeypatch):
    installed = plugin_set.InstalledPlugin(
        "blurb-extra", "x", "biolm-blurb-extra", "0.2.0", "", fingerprint="sha256:ab"
    )
    monkeypatch.setattr(plugin_set, "installed", lambda: {"blurb-extra": installed})
    origin = dict(BUILTIN.origin)
    origin[("metrics", "entity-f1")] = "blurb-extra"
    contributions = type(BUILTIN)(**{**BUILTIN.__dict__, "origin": origin})
    pins = pins_for(contributions, [("datasets", "demo-ner"), ("metrics", "entity-f1")])
    assert [(p.name, p.distribution, p.version, p.fingerprint) for p in pins[1:]] == [
        ("blurb-extra", "biolm-blurb-extra", "0.2.0", "sha256:ab")
    ]
    assert pins[1].provides == ("metric entity-f1",) and pins[0].provides == ("dataset demo-ner",)


def test_run_keys_are_written_and_read_by_one_pair_of_functions():
    assert run_key(None, 42) == "42" and run_key(3, 42) == "fold3-seed42"
    assert parse_run_key("42") == (None, 42) and parse_run_key("fold3-seed1042") == (3, 1042)
    assert parse_run_key("-1") == (None, -1)
    for bad in ("fold0-seed1", "seed42", "fold3_seed42", ""):
        with pytest.raises(ContractError, match="is neither a seed"):
            parse_run_key(bad)


def test_the_statistic_is_seeds_within_a_fold_then_folds():
    seeds = [RunValue(None, 42, 70.0), RunValue(None, 43, 80.0), RunValue(None, 44, 90.0)]
    mean = combine(seeds, "mean")
    assert (mean.value, mean.median, mean.n, mean.std) == (80.0, 80.0, 3, 10.0)
    assert combine(seeds[:2], "median").value == 75.0
    folds = [RunValue(2, 42, 60.0), RunValue(2, 43, 64.0), RunValue(3, 42, 80.0), RunValue(4, 42, 90.0)]
    summary = combine(folds, "median")  # fold 2: median of its seeds (62), then the median of 62, 80, 90
    assert (summary.value, summary.n) == (80.0, 3)
    assert combine(folds, "mean").value == pytest.approx((62 + 80 + 90) / 3)
    assert combine([RunValue(None, 1, math.nan)], "mean") is None and combine([], "median") is None
    with pytest.raises(ValueError, match="statistic 'mode' is not one of mean, median"):
        combine(seeds, "mode")


def test_a_first_seed_above_a_thousand_is_its_own_seed_not_a_fold():
    runs = [RunValue(None, 1042, 50.0), RunValue(None, 1043, 70.0)]
    assert combine(runs, "mean").n == 2 and parse_run_key(run_key(None, 1042)) == (None, 1042)


def test_a_results_document_round_trips_and_refuses_another_version_or_unknown_fields():
    spec = finetune_spec("eu-adr", "lewis2020")
    data = results_document(spec, {"fold2-seed42": 71.0, "fold3-seed42": 73.0},
                            cross_validation={"folds": 10, "selection_fold": 1, "reported_folds": [2, 3]})  # fmt: skip
    document = ResultsDocument.from_json(json.loads(json.dumps(data)))
    assert document.to_json() == data and document.spec == spec
    assert [(run.fold, run.seed) for run in document.runs] == [(2, 42), (3, 42)]
    assert document.on_folds and document.reported_folds() == [2, 3] and document.test_gold_withheld
    with pytest.raises(ContractError, match="reads results version 1 or 2, not None"):
        ResultsDocument.from_json({key: value for key, value in data.items() if key != "version"})
    with pytest.raises(ContractError, match="reads results version 1 or 2, not 3"):
        ResultsDocument.from_json({**data, "version": 3})
    with pytest.raises(ContractError, match=r"unknown field\(s\) dev_predictions"):  # version 1 had none
        ResultsDocument.from_json({**data, "version": 1, "dev_predictions": {"fold2-seed42": []}})
    older = ResultsDocument.from_json({**data, "version": 1})
    assert older.dev_predictions is None  # recorded before they were kept
    with pytest.raises(ContractError, match=r"unknown field\(s\) _all_runs"):
        ResultsDocument.from_json({**data, "_all_runs": []})
    with pytest.raises(ContractError, match="run key 'fold2_seed42' is neither"):
        ResultsDocument.from_json({**data, "predictions": {"fold2_seed42": []}})
    with pytest.raises(ContractError, match="a run's fold must be a whole number from 1"):
        ResultsDocument.from_json({**data, "runs": [{**data["runs"][0], "fold": 0}]})


def test_a_preview_is_one_grid_point_and_one_seed_under_the_sites_caps():
    assert protocols.preview_overrides({"epochs": 2, "seeds": 5}).to_json() == {"grid": "single", "seeds": 1,
                                                                               "epochs": 2}  # fmt: skip
    with pytest.raises(ContractError, match="epochs must be a whole number"):
        protocols.preview_overrides({"epochs": 0})


def test_a_checkpoint_model_names_its_stored_files():
    model = checkpoint_model("submissions/9/model")
    assert ModelInput.from_json(model.to_json()) == model and model.name == "submissions/9/model"
    with pytest.raises(ContractError, match="a stored model needs its prefix"):
        ModelInput(checkpoint=model.checkpoint)
