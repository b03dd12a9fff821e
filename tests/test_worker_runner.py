"""What a GPU worker runs for a job, and how it tells the submission's failures from the platform's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from contract_documents import finetune_spec, pretrain_spec

from biolm.engine_exits import failure_cause, failure_summary, plugin_of
from workers.runner.execution import JobRun, _readable


def job(spec, tmp_path: Path) -> JobRun:
    run = JobRun(7, "token", api_url="http://platform/internal/", worker="gpu0@test", work_dir=tmp_path)
    run.spec = spec  # what the claim answered
    return run


def test_a_pretraining_job_on_several_gpus_is_launched_with_torchrun_on_its_spec_restarting_in_place(
    tmp_path, monkeypatch
):
    corpus = tmp_path / "inputs" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "corpus.txt").write_text("text\n")
    spec_file = tmp_path / "spec.json"
    command = job(pretrain_spec(gpus=4), tmp_path)._pretrain_command(spec_file, {"corpus": corpus}, tmp_path / "out")
    assert command[:6] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4",
                           "--max-restarts=2"]  # fmt: skip
    assert command[6:11] == ["-m", "workers.engine", "pretrain", "--spec", str(spec_file)]
    assert "--resume" not in command and "--steps" not in command  # the spec says them
    single = job(pretrain_spec(gpus=1), tmp_path)._pretrain_command(spec_file, {"corpus": corpus}, tmp_path / "out")
    assert single[:4] == [sys.executable, "-m", "workers.engine", "pretrain"]
    monkeypatch.setenv("BIOLM_TORCHRUN_MAX_RESTARTS", "0")
    assert "--max-restarts=0" in job(pretrain_spec(gpus=2), tmp_path)._pretrain_command(spec_file, {"corpus": corpus},
                                                                                         tmp_path / "out")  # fmt: skip
    monkeypatch.setenv("BIOLM_TORCHRUN_MAX_RESTARTS", "many")
    with pytest.raises(ValueError, match="BIOLM_TORCHRUN_MAX_RESTARTS takes a whole number from 0 to 100, not 'many'"):
        job(pretrain_spec(gpus=2), tmp_path)._pretrain_command(spec_file, {"corpus": corpus}, tmp_path / "out")


def test_a_fine_tuning_job_runs_its_spec_on_the_withheld_canonical_split(tmp_path):
    spec_file = tmp_path / "spec.json"
    inputs = {"model": tmp_path / "model", "dataset": tmp_path / "data"}
    command = job(finetune_spec("demo-ner"), tmp_path)._finetune_command(spec_file, inputs, tmp_path / "out")
    assert "--test_gold_withheld" in command and command[command.index("--data_format") + 1] == "canonical"
    assert command[command.index("--spec") + 1] == str(spec_file)
    assert "--seeds" not in command and "--benchmark" not in command and "--dataset" not in command


def test_a_plugin_failure_line_names_the_plugin_to_count_it_against():
    assert plugin_of("Traceback...\nerror: plugin acme (biolm-acme 0.1): metric 'x' raised ...\n") == "acme"
    assert plugin_of("error: plugin version mismatch: acme biolm-acme 0.1 pinned, biolm-acme 0.2 installed\n") == (
        "acme"
    )
    assert plugin_of("error: --model /x: its weights cannot be loaded\n") == ""


def test_only_an_input_the_engine_refused_is_charged_to_the_submission():
    refused = "INFO loading\nerror: --model /x: its weights cannot be loaded: header too large\n"
    assert failure_cause(1, refused) == "submission"
    crashed = "Traceback (most recent call last):\n  File ...\nRuntimeError: CUDA out of memory\n"
    assert failure_cause(1, crashed) == "platform"
    assert failure_cause(-9, refused) == "platform"  # killed (out of memory): not the submission's doing
    assert failure_cause(2, refused) == "platform"


def test_progress_bar_redraws_collapse_to_their_latest_state_in_the_log():
    bars = "".join(f"train:  {p}%|##| {p}/100 [00:01, 5.0step/s]\r" for p in range(0, 101, 10))
    log = _readable("warming up\n" + bars + "\nresults written\n")
    assert log.splitlines() == ["warming up", "train:  100%|##| 100/100 [00:01, 5.0step/s]", "results written"]


def test_a_jobs_error_is_one_line_and_the_engines_chatter_stays_in_its_log():
    chatter = "INFO biolm.plugins: loaded 15 plugins\nWARNING transformers: some weights were not initialised\n"
    refused = chatter + "error: --model /x: its weights cannot be loaded: header too large\n"
    assert failure_summary(1, refused) == "--model /x: its weights cannot be loaded: header too large"
    crashed = (
        chatter + 'Traceback (most recent call last):\n  File "a.py", line 1\nRuntimeError: CUDA error: device lost\n'
    )
    assert failure_summary(1, crashed) == (
        "the engine exited with status 1: RuntimeError: CUDA error: device lost (the traceback is in the job's log)"
    )
    assert (
        failure_summary(-9, chatter)
        == "the engine was killed by SIGKILL (out of memory?); its last lines are in the job's log"
    )
    line = "plugin acme: metric 'm' raised ZeroDivisionError: x at a/m.py:3"
    plugin = chatter + f"Traceback ...\nZeroDivisionError: x\nerror: {line}\n"
    assert failure_summary(3, plugin) == line
    assert failure_cause(3, plugin) == "plugin"
    assert failure_cause(3, chatter) == "platform"  # status 3 without the engine's line: a crash


def test_a_worker_on_the_cpu_reports_no_gpu_and_one_pinned_to_a_gpu_reports_one(monkeypatch):
    from workers.runner.app import gpu_count
    from workers.runner.gpu_workers import worker_processes

    (on_cpu,) = worker_processes(0, environment={})
    pinned = worker_processes(2, environment={})
    assert on_cpu.environment["BIOLM_WORKER_GPUS"] == "0"
    assert [p.environment["BIOLM_WORKER_GPUS"] for p in pinned] == ["1", "1"]
    monkeypatch.setenv("BIOLM_WORKER_GPUS", "0")
    assert gpu_count() == 0
    monkeypatch.delenv("BIOLM_WORKER_GPUS")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # a worker started by hand on two devices
    assert gpu_count() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_count() == 0


def test_workers_sharing_a_gpu_are_pinned_to_it_in_order_and_report_one_gpu_each():
    from workers.runner.gpu_workers import node_name, worker_processes

    shared = worker_processes(2, environment={"DATABASE_URL": "postgres://secret"}, per_gpu=3)
    assert [p.name for p in shared] == [node_name("gpu", i) for i in range(6)]
    assert [p.environment["CUDA_VISIBLE_DEVICES"] for p in shared] == ["0", "0", "0", "1", "1", "1"]
    assert {p.environment["BIOLM_WORKER_GPUS"] for p in shared} == {"1"}
    assert not any("DATABASE_URL" in p.environment for p in shared)
    # A host without a GPU runs one worker whatever the setting: its CPU is busy with one job already.
    (on_cpu,) = worker_processes(0, environment={}, per_gpu=3)
    assert "CUDA_VISIBLE_DEVICES" not in on_cpu.environment


def test_the_number_of_workers_per_gpu_comes_from_the_flag_else_the_variable_and_is_checked(monkeypatch):
    from workers.runner.gpu_workers import workers_per_gpu

    monkeypatch.delenv("BIOLM_WORKERS_PER_GPU", raising=False)
    assert workers_per_gpu() == 1
    monkeypatch.setenv("BIOLM_WORKERS_PER_GPU", "4")
    assert workers_per_gpu() == 4
    assert workers_per_gpu("2") == 2
    for bad in ("0", "two", "-1", "65"):
        with pytest.raises(ValueError, match=f"--per-gpu takes a whole number from 1 to 64, not '{bad}'"):
            workers_per_gpu(bad)
    monkeypatch.setenv("BIOLM_WORKERS_PER_GPU", "0")
    with pytest.raises(ValueError, match="BIOLM_WORKERS_PER_GPU takes"):
        workers_per_gpu()


def test_the_runner_refuses_a_bad_per_gpu_setting_before_starting_anything(monkeypatch, capsys):
    from workers.runner.__main__ import main

    started = []
    monkeypatch.setattr("workers.runner.__main__.Supervisor", lambda *a, **k: started.append(a))
    with pytest.raises(SystemExit) as exit_info:
        main(["--gpus", "1", "--per-gpu", "0"])
    assert exit_info.value.code == 2 and not started
    assert "--per-gpu takes a whole number from 1 to 64, not '0'" in capsys.readouterr().err
