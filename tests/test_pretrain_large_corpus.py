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
import pytest
from official_data import data_env

from workers.engine.pretrain.data import batch_encoder, write_blocks
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


# --- batched Rust tokenisation and vectorised packing give today's blocks, byte for byte (issue 31) ----------


def reference_write_blocks(documents, tokenizer, directory: Path, *, block_size: int, heldout_share: float) -> None:
    """The packing the vectorised one replaced: one document at a time, in Python lists."""
    from workers.engine.pretrain.data import is_heldout

    directory.mkdir(parents=True, exist_ok=True)
    body, cls_id, sep_id = block_size - 2, tokenizer.cls_token_id, tokenizer.sep_token_id
    for part in ("train", "heldout"):
        ids: list[int] = []
        words: list[int] = []
        next_word = 0
        with open(directory / f"{part}.ids", "wb") as ids_file, open(directory / f"{part}.words", "wb") as words_file:
            for text in documents:
                if is_heldout(text, heldout_share) != (part == "heldout"):
                    continue
                encoded = tokenizer([text], add_special_tokens=False, return_attention_mask=False)
                word_ids = encoded.word_ids(0)
                ids.extend(encoded["input_ids"][0])
                words.extend(next_word + w if w is not None else -1 for w in word_ids)
                next_word += max((w for w in word_ids if w is not None), default=-1) + 1
                ids.append(sep_id)
                words.append(-1)
                while len(ids) >= body:
                    block_words = words[:body]
                    first = min((w for w in block_words if w >= 0), default=0)
                    np.asarray([cls_id, *ids[:body], sep_id], dtype=np.int32).tofile(ids_file)
                    local = [w - first if w >= 0 else -1 for w in block_words]
                    np.asarray([-1, *local, -1], dtype=np.int32).tofile(words_file)
                    del ids[:body], words[:body]


DOCUMENTS = [
    "Aspirin (acetylsalicylic acid) reduced IL-2R\u03b1 expression in CD4+ T cells by 35 ± 4%.",
    "\u200b",  # tokenises to no piece at all
    "short",
    " ".join(f"Word{n} and the naïve Straße of {n % 7} cells" for n in range(400)),  # many blocks
    "Ⅻ 😀 ünïcode [MASK] and [SEP] written in the text",
] * 7


@pytest.fixture(scope="module")
def tokenizers_to_check():
    from bench.common import model_dir
    from workers.engine.tokenization import load_tokenizer
    from workers.engine.vocabulary import train_vocabulary

    texts = [d for d in DOCUMENTS if d.strip()] * 3
    return {
        "wordpiece": train_vocabulary(texts, "wordpiece", 400),
        "byte-bpe": train_vocabulary(texts, "byte-bpe", 400),
        "minilm (truncation and padding in its tokenizer.json)": load_tokenizer(model_dir()),
    }


def test_the_batch_encoder_gives_what_the_tokenizer_call_gives(tokenizers_to_check):
    for name, tokenizer in tokenizers_to_check.items():
        encoded = tokenizer(DOCUMENTS, add_special_tokens=False, return_attention_mask=False)
        expected = [(encoded["input_ids"][i], encoded.word_ids(i)) for i in range(len(DOCUMENTS))]
        assert batch_encoder(tokenizer)(DOCUMENTS) == expected, name


@pytest.mark.parametrize("block_size", [8, 64])
def test_packed_blocks_are_byte_identical_to_one_document_at_a_time_packing(tmp_path, tokenizers_to_check, block_size):
    for name, tokenizer in tokenizers_to_check.items():
        ours, theirs = tmp_path / name / "ours", tmp_path / name / "reference"
        stats = write_blocks(iter(DOCUMENTS), tokenizer, ours, block_size=block_size, heldout_share=0.3)
        reference_write_blocks(DOCUMENTS, tokenizer, theirs, block_size=block_size, heldout_share=0.3)
        assert stats.train_blocks > 1 and stats.heldout_blocks > 1
        for file in ("train.ids", "train.words", "heldout.ids", "heldout.words"):
            assert (ours / file).read_bytes() == (theirs / file).read_bytes(), (name, file)


def test_corpus_progress_reports_throughput_and_an_eta_from_the_file_size(tmp_path, monkeypatch, caplog):
    from workers.engine.pretrain.data import CorpusProgress
    from workers.engine.progress_file import ENVIRONMENT_VARIABLE, read

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a document\n" * 1000, encoding="utf-8")
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(tmp_path / "progress.json"))
    progress = CorpusProgress("corpus blocks", corpus, interval_s=0.0)
    with caplog.at_level("INFO", logger="biolm.pretrain"):
        progress(5500)
    state = read(tmp_path / "progress.json")
    assert state["label"] == "corpus blocks" and state["step"] == 5500 and state["total"] == 11000
    assert state["mb_per_second"] > 0 and state["eta_seconds"] >= 0
    assert "corpus blocks: 0.0 of 0.0 MB" in caplog.text and "ETA" in caplog.text
