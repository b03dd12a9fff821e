"""The job contract's data migration: jobs queued before it get the versioned spec of their kind, aggregate
jobs become score jobs, and the runs of cross-validation jobs get their fold in its own column, chosen by
the job's cross-validation flag and first seed (a first seed above 1000 is a seed, not a fold)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from biolm.contract import parse_job_spec

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("session_rows_restored")]
BEFORE = [("jobs", "0003_worker_problems_and_plugin_failures"), ("submissions", "0003_protocol_and_notification"),
          ("registry", "0008_model_description_licence_homepage")]  # fmt: skip
AFTER = [("jobs", "0006_job_contract_constraints"), ("submissions", "0004_preview"),
         ("registry", "0009_protocols_and_plugins")]  # fmt: skip
DIGEST = "a" * 64


def migrate(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def old_rows(apps) -> dict:
    """Jobs and runs as the platform wrote them before the contract."""
    User = apps.get_model("auth", "User")
    LanguageModel = apps.get_model("registry", "LanguageModel")
    Dataset = apps.get_model("registry", "Dataset")
    Submission = apps.get_model("submissions", "Submission")
    Job = apps.get_model("jobs", "Job")
    Run = apps.get_model("jobs", "Run")
    owner = User.objects.create(username="migrated")
    model = LanguageModel.objects.create(slug="migrated-model", name="Migrated", owner=owner)
    quick = Submission.objects.create(submitter=owner, language_model=model, protocol="quick")
    eu_adr, demo = Dataset.objects.get(slug="eu-adr"), Dataset.objects.get(slug="demo-ner")
    model_spec = {"artefacts": [{"name": "blobs/sha256/aa/" + DIGEST, "path": "config.json", "size": 2,
                                 "sha256": DIGEST}], "prefix": "submissions/1/model"}  # fmt: skip
    folds = Job.objects.create(
        submission=quick, language_model=model, dataset=eu_adr, kind="finetune",
        spec={"kind": "finetune", "benchmark": "lewis2020", "dataset": "eu-adr", "cross_validation": True,
              "protocol": {"seeds": 2, "first_seed": 1042}, "model": model_spec, "plugins": {"acme": "biolm-acme 0.1"}},
    )  # fmt: skip
    plain = Job.objects.create(
        submission=quick, language_model=model, dataset=demo, kind="finetune",
        spec={"kind": "finetune", "benchmark": "blurb-mini", "dataset": "demo-ner", "protocol": {"grid": "single"},
              "model": model_spec},
    )  # fmt: skip
    score = Job.objects.create(
        submission=quick, language_model=model, dataset=demo, kind="aggregate",
        spec={"kind": "aggregate", "benchmark": "blurb-mini", "dataset": "demo-ner", "metric": "entity-f1",
              "variant": "", "finetune_job": plain.pk, "preview": True},
    )  # fmt: skip
    for fold in (2, 3):
        for seed in (1042, 1043):  # a first seed above 1000: fold * 1000 + seed is ambiguous without the flag
            Run.objects.create(job=folds, language_model=model, dataset=eu_adr, hyperparameters_key="lr=1e-05",
                               seed=fold * 1000 + seed, split="test", metrics={"binary-f1": 70.0})  # fmt: skip
    Run.objects.create(job=plain, language_model=model, dataset=demo, hyperparameters_key="lr=5e-05", seed=2042,
                       split="test", metrics={"entity-f1": 60.0})  # fmt: skip
    return {"folds": folds.pk, "plain": plain.pk, "score": score.pk, "submission": quick.pk}


def test_old_jobs_and_runs_become_the_contracts_and_back():
    rows = old_rows(migrate(BEFORE))
    apps = migrate(AFTER)
    Job, Run = apps.get_model("jobs", "Job"), apps.get_model("jobs", "Run")
    folds = parse_job_spec(Job.objects.get(pk=rows["folds"]).spec)
    assert (folds.protocol, folds.metric, folds.cross_validation) == ("lewis2020", "binary-f1", True)
    assert folds.overrides.to_json() == {"seeds": 2, "first_seed": 1042} and folds.preview is True
    assert [(pin.name, pin.distribution, pin.version, pin.fingerprint) for pin in folds.code][1] == (
        "acme", "biolm-acme", "0.1", ""
    )  # fmt: skip
    assert sorted(Run.objects.filter(job_id=rows["folds"]).values_list("fold", "seed")) == [
        (2, 1042), (2, 1043), (3, 1042), (3, 1043)
    ]  # fmt: skip
    assert list(Run.objects.filter(job_id=rows["plain"]).values_list("fold", "seed")) == [(0, 2042)]
    score = Job.objects.get(pk=rows["score"])
    assert score.kind == "score" and parse_job_spec(score.spec).preview is True
    assert apps.get_model("submissions", "Submission").objects.get(pk=rows["submission"]).preview is True

    apps = migrate(BEFORE)  # a rollback of the release gives the old shapes back
    Job, Run = apps.get_model("jobs", "Job"), apps.get_model("jobs", "Run")
    assert Job.objects.get(pk=rows["score"]).kind == "aggregate"
    assert Job.objects.get(pk=rows["folds"]).spec["protocol"] == {"seeds": 2, "first_seed": 1042}
    assert sorted(Run.objects.filter(job_id=rows["folds"]).values_list("seed", flat=True)) == [3042, 3043, 4042, 4043]
    executor = MigrationExecutor(connection)  # the latest schema again, for the tests after this one
    executor.migrate(executor.loader.graph.leaf_nodes())
