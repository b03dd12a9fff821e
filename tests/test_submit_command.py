"""``manage.py submit`` and ``manage.py submission``: overrides refused at submit naming the setting, a reused
submission said as such, ``--wait`` following the jobs to the end, and a submission's state and scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from leaderboard.models import Result
from registry.models import Dataset, DatasetImport, Metric
from submissions import terminal
from submissions.models import Submission
from submissions.signals import follow

SUBMIT = ("submit", "--benchmark", "blurb-mini", "--datasets", "demo-qa", "--owner", "alice")


@pytest.fixture(autouse=True)
def isolated(artefact_store):
    """A platform of the test's own (tests/conftest.py's ``artefact_store``)."""
    return artefact_store


@pytest.fixture
def checkpoint(tiny_bert_checkpoint) -> Path:
    return tiny_bert_checkpoint


def finish(submission: Submission, status: str = Job.Status.SUCCEEDED) -> None:
    """What workers do, done here: every job ends (``status``), and the submission follows its jobs."""
    jobs = Job.objects.filter(submission=submission)
    jobs.update(status=status, failure_cause=Job.Cause.SUBMISSION if status == Job.Status.FAILED else "")
    follow(jobs.values_list("pk", flat=True))


@pytest.mark.parametrize("option", ["--overrides", "--protocol"])
def test_a_bad_override_is_refused_at_submit_naming_the_setting_and_nothing_is_queued(alice, checkpoint, option,
                                                                                        capsys):  # fmt: skip
    for value, setting in (('{"seeds": 0}', "seeds must be a whole number from 1 to 100, not 0"),
                           ('{"learning_rate": "abc"}', "learning_rate must be a number above 0")):  # fmt: skip
        with pytest.raises(CommandError, match=f"--overrides: overrides: {setting}"):
            call_command(*SUBMIT, "--model", str(checkpoint), option, value)
    assert not Submission.objects.exists() and not Job.objects.exists()
    if option == "--protocol":
        assert "--protocol is deprecated: it is now --overrides" in capsys.readouterr().err


def test_a_benchmark_whose_data_is_not_imported_is_refused_in_one_sentence_with_the_command(alice, checkpoint):
    with pytest.raises(CommandError) as refused:
        call_command("submit", "--benchmark", "blurb", "--owner", "alice", "--model", str(checkpoint))
    message = str(refused.value)
    assert message.startswith("blurb needs bc5-chem, bc5-disease, ncbi-disease,")
    assert "an operator imports them with manage.py import_dataset bc5-chem bc5-disease ncbi-disease " in message
    assert message.count(". ") == 0 and "\n" not in message  # one sentence
    assert not Submission.objects.exists() and not Job.objects.exists()


def test_datasets_not_imported_beside_imported_ones_are_refused_under_datasets(alice, checkpoint):
    """Where some of the benchmark's datasets can run, leaving the others out is the fix: said under --datasets."""
    DatasetImport.objects.create(
        dataset=Dataset.objects.get(slug="ncbi-disease"), fingerprint="f" * 32, source_path="/x", stored_path="/x"
    )
    refusal = r"^blurb needs bc5-chem imported on this site, and it is not: an operator imports it with "
    with pytest.raises(CommandError, match=refusal + r"manage.py import_dataset bc5-chem, or"):
        call_command(*SUBMIT[:2], "blurb", "--datasets", "ncbi-disease", "bc5-chem", "--owner", "alice",
                     "--model", str(checkpoint))  # fmt: skip
    assert not Submission.objects.exists() and not Job.objects.exists()


def test_overrides_reach_the_jobs_and_the_same_evaluation_again_is_reused_and_said_so(alice, checkpoint, capsys):
    call_command(*SUBMIT, "--model", str(checkpoint), "--overrides", '{"seeds": 2, "grid": "single"}')
    first = Submission.objects.get()
    (finetune,) = first.jobs.filter(kind=Job.Kind.FINETUNE)
    assert finetune.spec["overrides"] == {"grid": "single", "seeds": 2}
    capsys.readouterr()
    finish(first)
    call_command(*SUBMIT, "--model", str(checkpoint), "--overrides", '{"grid": "single", "seeds": 2}')
    out = capsys.readouterr().out
    assert f"reused submission #{first.pk} (finished " in out and "; nothing queued" in out
    assert Submission.objects.count() == 1
    call_command(*SUBMIT, "--model", str(checkpoint), "--overrides", '{"grid": "single", "seeds": 2}', "--json")
    answer = json.loads(capsys.readouterr().out)
    assert answer["reused"] is True and answer["submission"] == first.pk and answer["status"] == "finished"
    call_command(*SUBMIT, "--model", str(checkpoint), "--overrides", '{"grid": "single", "seeds": 2}', "--rerun",
                 "--json")  # fmt: skip
    rerun = json.loads(capsys.readouterr().out)
    assert rerun["reused"] is False and rerun["submission"] != first.pk and len(rerun["jobs"]) == 2


@pytest.mark.parametrize(("ending", "exits"), [(Job.Status.SUCCEEDED, "0"), (Job.Status.FAILED, "non-zero")])
def test_wait_follows_the_jobs_until_they_end_and_exits_non_zero_when_the_submission_fails(
    alice, checkpoint, monkeypatch, capsys, ending, exits
):
    def workers_finish(seconds: float) -> None:  # the jobs end while the command waits
        finish(Submission.objects.get(), ending)

    monkeypatch.setattr(terminal.time, "sleep", workers_finish)
    if exits == "0":
        call_command(*SUBMIT, "--model", str(checkpoint), "--wait")
    else:
        with pytest.raises(CommandError, match=r"submission #\d+ failed \(counted against the quota\)"):
            call_command(*SUBMIT, "--model", str(checkpoint), "--wait")
    out = capsys.readouterr().out
    assert "demo-qa" in out and "queued" in out and ending in out  # each job's line, printed as it changed


def test_the_submission_command_prints_its_state_settings_jobs_and_scores(alice, checkpoint, capsys):
    call_command(*SUBMIT, "--model", str(checkpoint), "--overrides", '{"seeds": 2}')
    submission = Submission.objects.get()
    finish(submission)
    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    Result.objects.create(
        language_model=submission.language_model, dataset=finetune.dataset, metric=Metric.objects.get(slug="accuracy"),
        value=71.25, std=1.5, median=71.25, n_seeds=2, job=finetune, provenance={"protocol": {"name": "blurb"}},
    )  # fmt: skip
    capsys.readouterr()
    call_command("submission", str(submission.pk))
    out = capsys.readouterr().out
    assert f"submission #{submission.pk}: alice/tiny-bert by alice on blurb-mini" in out and "Finished" in out
    assert 'settings: {"seeds": 2}' in out
    assert "demo-qa" in out and "71.25 ± 1.50 (2 seeds)" in out
    call_command("submission", str(submission.pk), "--json")
    shown = json.loads(capsys.readouterr().out)
    assert shown["overrides"] == {"seeds": 2} and shown["results"][0]["value"] == 71.25
    assert shown["address"] == "alice/tiny-bert" and shown["model"] == submission.language_model.slug
    with pytest.raises(CommandError, match="no submission #999"):
        call_command("submission", "999")
