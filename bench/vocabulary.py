"""Vocabulary learning at corpus scale: today's learner with its fast count against its original per-text count.

Measures, each in a child process of its own (so its peak resident memory is its own, read from
``VmHWM``), with ``TOKENIZERS_PARALLELISM=true`` and ``RAYON_NUM_THREADS=threads``, three
ways of learning the same vocabulary:

* ``reference``: learner 1 as it was before issue 31, each text through the library's normaliser
  and pre-tokenizer from Python (:func:`workers.engine.word_counts.count_words_reference`), then
  the greedy merges in Python: the baseline;
* ``learner_1``: the same merges after the fast exact count (:mod:`workers.engine.word_counts`):
  the default, and byte-identical to the reference's vocabulary (``identical_to_reference``);
* ``learner_2``: the ``tokenizers`` Rust trainers made deterministic
  (:mod:`workers.engine.vocabulary_trainer`), counting and merging in Rust across threads.

On two corpora:

* **real text**: the official datasets' training and dev text (:mod:`bench.biomedical_corpus`,
  no test split) written to one file: a ``wordpiece_size`` WordPiece and a ``bpe_size``
  byte-level BPE by all three (``speedup``: the reference's seconds over learner 1's), with Gu et
  al. 2021's Table 1 coverage report of each (``learner_2_same_table_1_terms``: learner 2 keeps the same
  terms whole as learner 1; the default learner 1 is byte-identical to the reference, so its report is unchanged);
* **synthetic text**: ``synthetic_bytes`` (1 GiB by default) sampled by
  :mod:`bench.synthetic_corpus` from the same real text (real document lengths, words drawn by
  their real frequencies): learner 1, and learner 2 when ``rust_on_synthetic`` (its count alone
  takes several CPU-minutes per gigabyte). The goal of issue 31: each kind in under 5 minutes
  with a peak under 2 GB, streamed from the file.

Each run records wall seconds, MB/s, CPU seconds (user + system, all threads), peak RSS and the
SHA-256 of the saved ``tokenizer.json`` (the same corpus gives the same file: see
``tests/test_engine_vocabulary.py``). The synthetic corpus is kept under ``work`` and reused
when its seed and size match (it is byte-identical for a seed). Timings on a shared machine are
noisy: ``cpu_seconds`` over ``seconds`` beside the load average says how much of the two cores a
run got.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import common

NAME = "vocabulary"
GOAL_SECONDS = 300
GOAL_PEAK_MB = 2000


@dataclass(frozen=True)
class Config:
    synthetic_bytes: int = 1 << 30
    wordpiece_size: int = 30000
    bpe_size: int = 50000
    threads: int = 2
    seed: int = 0
    baseline: bool = True  # run the reference (the per-text count) on the real text
    rust_on_synthetic: bool = False  # run learner 2 on the synthetic corpus too (its count is slow)
    work: str = ""  # where the synthetic corpus is kept (default: var/bench/vocabulary-work)


def learn_in_child(path: Path, kind: str, size: int, learner: str, threads: int, out: Path) -> dict:
    """Learn one vocabulary in a fresh process; its seconds, CPU seconds, peak RSS and the file's hash."""
    env = {
        **os.environ,
        "TOKENIZERS_PARALLELISM": "true",
        "RAYON_NUM_THREADS": str(threads),
        "PYTHONPATH": os.pathsep.join([str(common.ROOT), str(common.ROOT / "platform")]),
    }
    command = [sys.executable, "-m", "bench.vocabulary", "--child", str(path), kind, str(size), str(learner), str(out)]
    subprocess.run(command, check=True, cwd=common.ROOT, env=env)
    figures = json.loads((out / "figures.json").read_text(encoding="utf-8"))
    megabytes = path.stat().st_size / 1e6
    figures.update(kind=kind, size=size, learner=learner, megabytes=round(megabytes, 1))
    figures["mb_per_s"] = round(megabytes / figures["seconds"], 2)
    return figures


def child(path: Path, kind: str, size: int, learner: str, out: Path) -> None:
    """The child's side: learn, save ``tokenizer.json``, write the figures (run as ``--child``).

    ``reference`` is learner 1 with its original count put back in place of the fast one.
    """
    from workers.engine import tokenization, vocabulary, word_counts
    from workers.engine.vocabulary import coverage, train_vocabulary_from_files

    if learner == "reference":

        def per_text(texts, normalizer, pre_tokenizer, *, byte_level: bool):
            return word_counts.count_words_reference(texts, normalizer, pre_tokenizer)

        tokenization.count_words = vocabulary.count_words = per_text
    load = os.getloadavg()[0]
    started, cpu = time.perf_counter(), _cpu_seconds()
    tokenizer = train_vocabulary_from_files([path], kind, size, learner=2 if learner == "2" else 1)
    seconds, cpu_seconds = time.perf_counter() - started, _cpu_seconds() - cpu
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    figures = {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "peak_rss_mb": _peak_rss_mb(),
        "vocabulary_size": len(tokenizer),
        "sha256": hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest(),
        "coverage": {key: value for key, value in coverage(tokenizer).to_dict().items() if key != "vocabulary_size"},
        "loadavg_1min_before": load,
        "loadavg_1min_after": os.getloadavg()[0],
    }
    (out / "figures.json").write_text(json.dumps(figures), encoding="utf-8")


def _peak_rss_mb() -> float:
    """This process's peak resident memory: ``VmHWM`` (reset by exec; ``ru_maxrss`` keeps the forking parent's)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def real_text(config: Config, corpus: Path, scratch: Path) -> dict:
    """Both kinds by both learners on the real text, with the coverage of Gu et al. 2021's terms."""
    arms: dict[str, dict] = {}
    for kind, size in (("wordpiece", config.wordpiece_size), ("byte-bpe", config.bpe_size)):
        learners = ("1", "2", "reference") if config.baseline else ("1", "2")
        runs = {n: learn_in_child(corpus, kind, size, n, config.threads, scratch / f"{kind}-{n}") for n in learners}
        arm = {"learner_1": runs["1"], "learner_2": runs["2"]}
        whole = {n: runs[n]["coverage"]["whole_terms"] for n in ("1", "2")}
        arm["learner_2_same_table_1_terms"] = whole["1"] == whole["2"]
        if "reference" in runs:
            arm.update(
                reference=runs["reference"],
                speedup=round(runs["reference"]["seconds"] / runs["1"]["seconds"], 2),
                cpu_speedup=round(runs["reference"]["cpu_seconds"] / runs["1"]["cpu_seconds"], 2),
                identical_to_reference=runs["reference"]["sha256"] == runs["1"]["sha256"],
            )
        arms[kind] = arm
    return arms


def synthetic_corpus(config: Config) -> tuple[Path, dict]:
    """The sampled corpus of ``synthetic_bytes`` for ``seed``, generated once and reused."""
    from bench.synthetic_corpus import write_synthetic_corpus

    work = Path(config.work) if config.work else common.OUT_DIR / "vocabulary-work"
    path = work / f"synthetic-{config.seed}-{config.synthetic_bytes}.txt"
    sidecar = path.with_suffix(".json")
    if path.is_file() and sidecar.is_file():
        made = json.loads(sidecar.read_text(encoding="utf-8"))
        if made.get("bytes") == path.stat().st_size:
            return path, {**made, "reused": True}
    made = write_synthetic_corpus(path, config.synthetic_bytes, seed=config.seed, data=common.data_dir())
    sidecar.write_text(json.dumps(made), encoding="utf-8")
    return path, {**made, "reused": False}


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    from bench.biomedical_corpus import write_corpus

    config = config or Config()
    data = common.data_dir()
    if not (data / "HoC" / "blurb" / "train.tsv").is_file():
        return common.skipped(NAME, f"the official datasets are missing: {data} (set BIOLM_DATA_DIR)", config, out_dir)
    with tempfile.TemporaryDirectory(prefix="biolm-bench-vocabulary-") as scratch:
        scratch = Path(scratch)
        corpus = Path(write_corpus(scratch / "real.txt", data)["path"])
        real = real_text(config, corpus, scratch)
        path, made = synthetic_corpus(config)
        learners = ("1", "2") if config.rust_on_synthetic else ("1",)
        synthetic = {
            f"{kind}_learner_{n}": learn_in_child(path, kind, size, n, config.threads, scratch / f"{kind}{n}-synthetic")
            for kind, size in (("wordpiece", config.wordpiece_size), ("byte-bpe", config.bpe_size))
            for n in learners
        }
        real_megabytes = round(corpus.stat().st_size / 1e6, 1)
    result = {
        "name": NAME,
        "real_text": {"megabytes": real_megabytes, **real},
        "synthetic": {"corpus": made, **synthetic},
        "goals": _goals(synthetic),
    }
    return common.publish(NAME, result, config, __doc__.split("\n\n")[0], summary, out_dir)


def _goals(synthetic: dict) -> dict:
    return {
        kind: {
            "under_5_minutes": figures["seconds"] < GOAL_SECONDS,
            "peak_under_2_gb": figures["peak_rss_mb"] < GOAL_PEAK_MB,
        }
        for kind, figures in synthetic.items()
    }


def summary(result: dict) -> str:
    lines = [f"vocabulary: real text {result['real_text']['megabytes']} MB"]
    for kind in ("wordpiece", "byte-bpe"):
        arm = result["real_text"][kind]
        ours, rust = arm["learner_1"], arm["learner_2"]
        line = (
            f"  real {kind} {ours['vocabulary_size']}: learner 1 {ours['seconds']} s (peak {ours['peak_rss_mb']} MB), "
            f"learner 2 {rust['seconds']} s (same Table 1 terms whole: {arm['learner_2_same_table_1_terms']})"
        )
        if "reference" in arm:
            line += (
                f"; per-text count {arm['reference']['seconds']} s ({arm['speedup']}x, CPU {arm['cpu_speedup']}x), "
                f"identical: {arm['identical_to_reference']}"
            )
        lines.append(line)
    for name, run_ in result["synthetic"].items():
        if name == "corpus":
            continue
        lines.append(
            f"  synthetic {run_['megabytes']} MB {name} {run_['vocabulary_size']}: {run_['seconds']} s "
            f"({run_['mb_per_s']} MB/s, CPU {run_['cpu_seconds']} s), peak {run_['peak_rss_mb']} MB"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] != "--child":
        sys.exit("usage: python -m bench vocabulary (this module's own command line is its child's)")
    child(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], Path(sys.argv[6]))
