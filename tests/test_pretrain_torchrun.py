"""The engine's CLI under torchrun, as the platform launches it: two nodes meeting in a c10d rendezvous, and a
worker group that torchrun restarts after a rank is killed, resuming from the run's last checkpoint.

The corpus is generated here (seeded biomedical-looking sentences), so these run on a clone with nothing
beside it. Dropout is off where weights are compared across numbers of processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from distributed_pretraining import free_port
from safetensors.torch import load_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """600 documents of 3-8 sentences over a Zipf-distributed vocabulary of invented biomedical words."""
    rng = np.random.default_rng(0)
    stems = ["cyto", "kine", "onco", "gen", "lymph", "hepat", "neur", "cardi", "immun", "path", "fibr", "myel"]
    suffixes = ["ase", "itis", "oma", "ine", "osis", "ocyte", "ogen", "al", "ic", "in"]
    words = [s + t for s in stems for t in suffixes] + ["the", "of", "in", "and", "with", "was", "patients", "cells"]
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    documents = []
    for _ in range(600):
        sentences = [
            " ".join(rng.choice(words, size=int(rng.integers(6, 20)), p=weights)).capitalize() + "."
            for _ in range(int(rng.integers(3, 9)))
        ]
        documents.append(" ".join(sentences))
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(documents) + "\n", encoding="utf-8")
    return path


def engine_arguments(corpus: Path, out: Path, steps: int, **settings) -> list[str]:
    recipe = {"config": NO_DROPOUT, "contamination_datasets": [], "batch_size": 8, "block_size": 64, **settings}
    return ["-m", "workers.engine", "pretrain", "--recipe", "tiny", "--corpus", str(corpus), "--steps", str(steps),
            "--precision", "fp32", "--device", "cpu", "--settings", json.dumps(recipe), "--out", str(out)]  # fmt: skip


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def test_two_torchrun_launchers_with_nnodes_2_shard_as_one_job_and_write_the_weights_of_one_process(corpus, tmp_path):
    """FSDP across the two nodes: the final checkpoint is gathered from the shards onto rank 0's host."""
    one = subprocess.run([sys.executable, *engine_arguments(corpus, tmp_path / "one", 12)], cwd=ROOT,
                         env=environment(), capture_output=True, text=True, timeout=600)  # fmt: skip
    assert one.returncode == 0, one.stdout + one.stderr
    port = free_port()
    node = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=two-nodes", "--max-restarts=0",
            *engine_arguments(corpus, tmp_path / "two", 12, parallelism="fsdp")]  # fmt: skip
    launchers = [
        subprocess.Popen(node, cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [launcher.communicate(timeout=600)[0] for launcher in launchers]
    assert [launcher.returncode for launcher in launchers] == [0, 0], "\n".join(outputs)
    report = json.loads((tmp_path / "two" / "pretraining.json").read_text())
    assert report["training"]["processes"] == 2 and report["provenance"]["processes"] == 2
    assert report["training"]["parallelism"] == "fsdp" and report["provenance"]["masking_scheme"] == 2
    assert sorted(rank["node_rank"] for rank in report["provenance"]["ranks"]) == [0, 1]
    single = load_file(tmp_path / "one" / "model.safetensors")
    two_nodes = load_file(tmp_path / "two" / "model.safetensors")
    for name, tensor in single.items():
        torch.testing.assert_close(two_nodes[name], tensor, rtol=0, atol=1e-5, msg=name)


def worker_processes(launcher: int) -> list[int]:
    """The pids of torchrun's worker processes (its children), read from /proc."""
    children = []
    for task in Path(f"/proc/{launcher}/task").iterdir():
        children += [int(pid) for pid in (task / "children").read_text().split()]
    return children


def test_a_rank_killed_mid_run_restarts_the_group_from_its_last_checkpoint_and_ends_as_an_uninterrupted_run(
    corpus, tmp_path
):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    settings = {"checkpoint_every": 10, "eval_every": 10}
    whole = subprocess.run([*torchrun, "--max-restarts=0", *engine_arguments(corpus, tmp_path / "whole", 60,
                            **settings)], cwd=ROOT, env=environment(), capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert whole.returncode == 0, whole.stdout + whole.stderr
    out = tmp_path / "restarted"
    launcher = subprocess.Popen([*torchrun, "--max-restarts=1", *engine_arguments(corpus, out, 60, **settings)],
                                cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while not (out / "checkpoint" / "state.json").exists() and launcher.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    victims = worker_processes(launcher.pid)
    assert launcher.poll() is None and victims, "the run finished before a rank could be killed"
    os.kill(victims[-1], signal.SIGKILL)
    output = launcher.communicate(timeout=600)[0]
    assert launcher.returncode == 0, output
    assert "resuming at step " in output  # the restarted group resumed; it did not start over
    log = json.loads((out / "loss.json").read_text())
    assert [entry["step"] for entry in log] == list(range(1, 61))  # resumed at its checkpoint: no step twice
    expected, actual = load_file(tmp_path / "whole" / "model.safetensors"), load_file(out / "model.safetensors")
    for name, tensor in expected.items():
        assert torch.equal(actual[name], tensor), name


def test_a_refusal_under_torchrun_is_replayed_by_the_restarted_group_instead_of_run_again(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1", "--max-restarts=1"]
    refused = subprocess.run([*torchrun, *engine_arguments(empty, tmp_path / "out", 5)], cwd=ROOT, env=environment(),
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert f"error: --corpus {empty}: no documents" in output
    # The restarted process replays the refusal instead of starting the run again.
    assert output.count("the same refusal again, without running") == 1, output
