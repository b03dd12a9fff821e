"""Lewis et al. 2020's cross-validation as jobs: the folds are imported, sent to a worker, scored on the platform.

lewis2020 reports EU-ADR (and GAD) as the median over the nine folds that fold 1 did not choose
the hyperparameters on. A submission on it becomes one fine-tuning job that runs every fold;
the worker receives the folds as canonical JSON Lines, with the reported folds' test gold
withheld, and the platform's recorded median must equal the engine's own, run on the official
folds with their gold.
"""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert
from django.core.management import call_command
from worker_side import API as INTERNAL_API
from worker_side import deliver_results, fetch, worker_client

from biolm.contract import parse_job_spec
from jobs import completion
from jobs.models import Job, Run
from leaderboard import recording
from leaderboard.models import Result
from registry.imports import import_dataset
from registry.models import DatasetImport
from submissions.submitting import SubmissionError, SubmissionRequest, submit
from workers.engine.__main__ import main as engine
from workers.runner.execution import JobRun

pytestmark = pytest.mark.django_db
QUICK = {"epochs": 2, "max_train_examples": 48, "max_length": 128}


@pytest.fixture(autouse=True)
def isolated(artefact_store):
    return artefact_store


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


def test_eu_adr_is_imported_with_its_ten_folds_and_gad_without_its_incomplete_ones(official_data):
    official_data("EU-ADR", "biobert-REdata")
    official_data("GAD", "blurb")
    eu_adr = import_dataset("eu-adr")
    assert eu_adr.folds_skipped is None and eu_adr.record.folds["count"] == 10
    sizes = {k: fold["sizes"] for k, fold in eu_adr.record.folds["per_fold"].items()}
    assert all(size["train"] + size["test"] == 355 for size in sizes.values())  # every fold covers the 355 sentences
    assert len({fold["fingerprint"] for fold in eu_adr.record.folds["per_fold"].values()}) == 10
    assert sorted(p.name for p in Path(eu_adr.record.folds["stored_path"]).iterdir()) == sorted(map(str, range(1, 11)))
    gad = import_dataset("gad")
    assert gad.record.folds == {}
    assert "missing folds 2, 3, 4, 5, 6, 7, 8, 9, 10" in gad.folds_skipped
    assert "import_dataset gad --folds DIR" in gad.folds_skipped


def test_folds_named_explicitly_must_all_be_there_and_nothing_is_written_otherwise(tmp_path, official_data):
    official_data("GAD", "blurb")
    official_data("GAD", "biobert-REdata-fold1")
    with pytest.raises(ValueError, match="missing folds 2, 3, 4, 5, 6, 7, 8, 9, 10"):
        import_dataset("gad", folds_path=official_data.root / "GAD" / "biobert-REdata")
    assert not DatasetImport.objects.filter(dataset__slug="gad").exists()
    assert not (tmp_path / "datasets" / "gad").exists() or not any((tmp_path / "datasets" / "gad").iterdir())


def test_a_reimport_without_the_folds_keeps_those_an_earlier_import_brought(tmp_path, official_data):
    official_data("EU-ADR", "biobert-REdata")
    first = import_dataset("eu-adr").record
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    call_command("import_dataset", "eu-adr", verbosity=0)
    assert DatasetImport.objects.get(pk=first.pk).folds == first.folds


def test_the_import_command_reports_the_folds_and_why_they_are_missing(capsys, official_data):
    official_data("EU-ADR", "biobert-REdata")
    official_data("GAD", "blurb")
    call_command("import_dataset", "eu-adr", "gad")
    out = capsys.readouterr().out
    assert "10 cross-validation folds from" in out and "1: 318/37" in out
    assert "gad: imported" in out and "cross-validation folds not imported" in out


def test_a_fold_dataset_without_imported_folds_is_refused_with_the_command_that_imports_them(
    alice, checkpoint, official_data
):
    official_data("GAD", "blurb")
    import_dataset("gad")
    request = SubmissionRequest(owner=alice, benchmark="lewis2020", model=checkpoint, datasets=("gad",))
    with pytest.raises(SubmissionError, match=r"no folds of it: import them first \(manage.py import_dataset gad"):
        submit(request)
    assert not Job.objects.exists()


def test_lewis2020_on_eu_adr_runs_the_folds_as_one_job_and_the_platform_scores_them_as_the_engine_does(
    alice, checkpoint, isolated, official_data
):
    eu_adr_folds = official_data("EU-ADR", "biobert-REdata")
    import_dataset("eu-adr")
    request = SubmissionRequest(
        owner=alice, benchmark="lewis2020", model=checkpoint, datasets=("eu-adr",), overrides=dict(QUICK)
    )
    submission = submit(request)
    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    assert finetune.spec["cross_validation"] is True

    client = worker_client(finetune)
    response = client.post(f"{INTERNAL_API}jobs/{finetune.pk}/claim", {"delivery": "d1", "worker": "gpu0@test"})
    assert response.status_code == 200, response.content
    claimed = response.json()
    data = fetch(client, claimed["inputs"]["dataset"], isolated / "worker" / "dataset")
    model = fetch(client, claimed["inputs"]["model"], isolated / "worker" / "model")
    assert sorted(p.relative_to(data).as_posix() for p in data.rglob("*.jsonl")) == sorted(
        f"folds/{k}/{split}.jsonl" for k in range(1, 11) for split in ("train", "test")
    )
    tests = {k: [json.loads(line) for line in (data / f"folds/{k}/test.jsonl").open()] for k in range(1, 11)}
    assert {row["label"] for row in tests[1]} == {"0", "1"}  # fold 1 chooses the hyperparameters: its gold is sent
    for k in range(2, 11):
        assert {row["label"] for row in tests[k]} == {"0"}, k  # the reported folds' gold is not

    # the worker's own command line, run in this process
    out = isolated / "worker" / "out"
    run = JobRun(finetune.pk, finetune.token, api_url="http://testserver/internal/", worker="gpu0@test",
                 work_dir=isolated / "worker")  # fmt: skip
    run.spec = parse_job_spec(claimed["spec"])
    spec_file = isolated / "worker" / "spec.json"
    spec_file.write_text(json.dumps(claimed["spec"]))
    command = run._finetune_command(spec_file, {"model": model, "dataset": data}, out)
    assert engine(command[3:]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["test"] is None and set(results["test_scores"]) == {f"fold{k}-seed42" for k in range(2, 11)}
    deliver_results(client, finetune, out / "results.json")

    score = submission.jobs.get(kind=Job.Kind.SCORE)
    result = recording.record(score)
    assert recording.record(score) == result  # a redelivered score job counts nothing twice
    assert Run.objects.filter(job=finetune).count() == 9

    # the engine alone, on the official fold files with their gold, at the same settings
    reference_out = isolated / "reference"
    reference = ["finetune", "--model", str(checkpoint), "--dataset", "eu-adr", "--protocol", "lewis2020",
                 "--benchmark", "lewis2020", "--data_dir", str(eu_adr_folds), "--out", str(reference_out),
                 *(f"--{k}={v}" for k, v in QUICK.items())]  # fmt: skip
    assert engine(reference) == 0
    expected = json.loads((reference_out / "results.json").read_text())
    per_fold = expected["cross_validation"]["per_fold"]
    assert result.value == pytest.approx(expected["reported"]["value"], abs=1e-12)
    assert result.value == pytest.approx(statistics.median(per_fold.values()), abs=1e-12)
    assert result.n_seeds == 9 and "median of 9 folds" in result.source
    recorded = {run.fold: run.metrics[score.spec["metric"]] for run in Run.objects.filter(job=finetune)}
    assert recorded == pytest.approx({int(k): v for k, v in per_fold.items()}, abs=1e-12)
    assert Result.objects.filter(language_model=submission.language_model, dataset__slug="eu-adr").count() == 1


def test_a_canonical_fold_missing_from_a_workers_copy_is_named(tmp_path):
    from biolm.cross_validation import fold_directories
    from biolm.plugins import collect_contributions, get_plugin_manager

    eu_adr = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets["eu-adr"]
    for k in (1, 2, 3):
        (tmp_path / "folds" / str(k)).mkdir(parents=True)
        (tmp_path / "folds" / str(k) / "train.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"missing folds 4, 5, 6, 7, 8, 9, 10 \(each expected as .*folds/<k>/"):
        fold_directories(eu_adr, tmp_path / "folds", canonical=True)


def test_lewis2020_sliced_cuts_the_folds_into_a_job_each_after_the_selection_on_fold_1(
    alice, checkpoint, official_data, settings
):
    from biolm.contract import FinetuneJob

    official_data("EU-ADR", "biobert-REdata")
    import_dataset("eu-adr")
    settings.BIOLM_SLICE_PROTOCOLS = True
    request = SubmissionRequest(owner=alice, benchmark="lewis2020", model=checkpoint, datasets=("eu-adr",),
                                overrides={**QUICK, "seeds": 2})  # fmt: skip
    jobs = list(submit(request).jobs.order_by("pk"))
    slices = {FinetuneJob.from_json(job.spec).slice: job for job in jobs if job.kind == Job.Kind.SLICE}
    points = [name for name in slices if name.startswith("point:")]
    assert list(slices) == [*points, "select", *(f"fold:{k}" for k in range(2, 11))]
    assert all(set(slices[f"fold:{k}"].depends_on.all()) == {slices["select"]} for k in range(2, 11))
    (gather,) = [job for job in jobs if job.kind == Job.Kind.FINETUNE]
    assert gather.contract.cross_validation and set(gather.depends_on.all()) == set(slices.values())
    # A fold's worker receives the model, the folds and the selection's document once the selection recorded it.
    fold = slices["fold:3"]
    with pytest.raises(completion.InputError, match=r"slice select \(job #\d+\) has no slice.json recorded"):
        completion.inputs_of(fold, "http://testserver/internal/jobs/")
    completion.record_output(slices["select"].pk, "slice.json", io.BytesIO(b'{"slice": "select"}'))
    inputs = completion.inputs_of(fold, "http://testserver/internal/jobs/")
    assert set(inputs) == {"model", "dataset", "slices"} and [e["path"] for e in inputs["slices"]] == ["select.json"]
    with pytest.raises(completion.InputError, match=r"slice point-0 \(job #\d+\) has no slice.json recorded"):
        completion.inputs_of(slices["select"], "http://testserver/internal/jobs/")  # its points have not run
