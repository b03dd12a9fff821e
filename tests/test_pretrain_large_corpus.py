"""A corpus larger than the memory the process may allocate still pretrains: the data path streams.

The pretraining runs in a subprocess whose private, writable memory (``RLIMIT_DATA``: heap and
anonymous mappings, not read-only file mappings) may grow by ``LIMIT`` bytes beyond what Python,
torch and transformers hold once imported, less than the corpus file's size. The vocabulary is
learned from word counts, the blocks are written to disk as the documents stream past and read
back memory-mapped read-only, so nothing of the corpus's size is ever held in memory; a data path
that read the corpus into a list would die with MemoryError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from official_data import data_env

from workers.engine.pretrain.loop import unigram_baseline

ROOT = Path(__file__).resolve().parents[1]
# The run itself needs about 92 MB past its imports whatever the corpus's size (measured with
# 16 MB and 128 MB corpora); the limit leaves room for a machine whose libraries allocate more.
LIMIT = 128 * 2**20
CORPUS_BYTES = 160 * 2**20

HARNESS = """
import json, resource, sys
import torch
import workers.engine.pretrain.run  # everything the run imports, before the limit
from workers.engine.__main__ import main

torch.ones(256, 256) @ torch.ones(256, 256)  # start the OpenMP threads first: their stacks are data too


def data_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmData"):
            return int(line.split()[1]) * 1024


limit = data_bytes() + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
try:
    bytearray(int(sys.argv[1]) + 2**20)
    sys.exit("the limit does not bite")
except MemoryError:
    pass
status = main(sys.argv[2:])
print(json.dumps({"status": status, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
sys.exit(status)
"""


def write_corpus(path: Path, size: int, train: Path) -> int:
    """HoC's training abstracts (``train``: its BLURB train.tsv), repeated until the file holds ``size`` bytes."""
    abstracts: dict[str, list[str]] = {}
    for row in train.read_text(encoding="utf-8").split("\n")[1:]:
        if row:
            _, sentence, index = row.split("\t")
            abstracts.setdefault(index.split("_")[0], []).append(sentence)
    lines = [(" ".join(sentences) + "\n").encode("utf-8") for sentences in abstracts.values()]
    written = 0
    with path.open("wb") as handle:
        while written < size:
            for line in lines:
                handle.write(line)
                written += len(line)
    return written


def test_a_corpus_larger_than_the_process_may_allocate_pretrains(tmp_path, official_data):
    corpus = tmp_path / "corpus.txt"
    size = write_corpus(corpus, CORPUS_BYTES, official_data("HoC", "blurb", "train.tsv"))
    assert size > LIMIT
    settings = json.dumps({"contamination_datasets": [], "batch_size": 8, "eval_every": 2, "eval_blocks": 16})
    command = [sys.executable, "-c", HARNESS, str(LIMIT), "pretrain", "--recipe", "tiny", "--corpus", str(corpus),
               "--steps", "2", "--precision", "fp32", "--device", "cpu", "--settings", settings,
               "--out", str(tmp_path / "out")]  # fmt: skip
    env = data_env(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MALLOC_ARENA_MAX="2",
                   OMP_NUM_THREADS="2", PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'platform'}")  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    report = json.loads((tmp_path / "out" / "pretraining.json").read_text())
    assert report["corpus"]["characters"] > LIMIT
    assert report["corpus"]["train_tokens"] * 4 > LIMIT  # the blocks on disk alone outweigh the limit
    assert report["training"]["steps"] == 2


def test_the_unigram_baseline_counted_in_chunks_equals_the_direct_count():
    rng = np.random.default_rng(0)
    train = rng.zipf(1.3, size=(300000, 4)).clip(max=3000).astype(np.int32)  # more than one chunk
    heldout = {"ids": rng.zipf(1.3, size=(50, 4)).clip(max=3000).astype(np.int32)}
    counts = np.bincount(train.reshape(-1)).astype(np.float64)
    counts[[0, 1]] = 0
    ids = heldout["ids"].reshape(-1)
    ids = ids[~np.isin(ids, [0, 1])]
    counts = np.pad(counts, (0, max(0, int(ids.max()) + 1 - len(counts)))) + 1.0
    expected = float(-np.log((counts / counts.sum())[ids]).mean())
    assert abs(unigram_baseline(train, heldout, [0, 1], 50) - expected) < 1e-12
