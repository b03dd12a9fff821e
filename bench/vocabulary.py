"""Vocabulary learning at corpus scale: learner 1 on real text and on a gigabyte that grows as PubMed does.

Measures, each in a child process of its own (so its peak resident memory is its own, read from
``VmHWM``), with ``TOKENIZERS_PARALLELISM=true`` and ``RAYON_NUM_THREADS=threads``, these ways
of learning the same vocabulary:

* ``learner_1``: the default: the fast exact count (:mod:`workers.engine.word_counts`), then the
  greedy merges compiled with numba (:mod:`workers.engine.merge_kernels`, issue 41);
* ``python_merges``: learner 1 as it was before issue 41, the same count and the merges in Python
  (:func:`workers.engine.tokenization.greedy_merges`): ``identical_to_python_merges`` compares
  the saved files;
* ``reference``: learner 1 as it was before issue 31 (each text through the library's normaliser
  and pre-tokenizer from Python, then the Python merges), when ``baseline``;
* ``learner_2``: the ``tokenizers`` Rust trainers made deterministic
  (:mod:`workers.engine.vocabulary_trainer`), counting and merging in Rust across threads.

On these corpora:

* **real text**: the largest real biomedical text of the official files' training and dev splits
  (:func:`bench.heaps_corpus.real_documents`: the text of :mod:`bench.biomedical_corpus` and
  ChemProt's abstracts, duplicates dropped), one document per line: a ``wordpiece_size``
  WordPiece and a ``bpe_size`` byte-level BPE by each way, MB/s, and Gu et al. 2021's Table 1
  coverage report of each;
* **Heaps' text**: ``heaps_bytes`` (1 GiB by default) of :mod:`bench.heaps_corpus`, whose
  distinct words follow Heaps' law fitted on that real text (the fit and the distinct words at
  that size are recorded): learner 1 for both kinds (the byte-level BPE when ``bpe_on_heaps``),
  each learned twice when ``repeat``, in processes with different ``PYTHONHASHSEED``, so
  ``identical_across_processes`` compares the two files' SHA-256. The goal of issue 41: under 5
  minutes on two cores;
* **sampled text** (``sampled``, off by default): ``synthetic_bytes`` sampled by
  :mod:`bench.synthetic_corpus` from the real unigram table (issue 31's corpus; its distinct words
  stop at the real text's).

Each run records wall seconds, MB/s, CPU seconds (user + system, all threads), peak RSS and the
SHA-256 of the saved ``tokenizer.json``. The generated corpora are kept under ``work`` and reused
when their seed and size match (each is byte-identical for a seed). The numba kernels are compiled
(or loaded from numba's cache) once in the parent first, and that time is recorded apart. Timings
on a shared machine are noisy: ``cpu_seconds`` over ``seconds`` beside the load average says how
much of the two cores a run got.
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
    heaps_bytes: int = 1 << 30
    synthetic_bytes: int = 1 << 30
    wordpiece_size: int = 30000
    bpe_size: int = 50000
    threads: int = 2
    seed: int = 0
    baseline: bool = True  # run the reference (the per-text count, Python merges) on the real text
    bpe_on_heaps: bool = True  # learn the byte-level BPE on the Heaps' corpus too
    repeat: bool = True  # learn each Heaps' vocabulary twice, PYTHONHASHSEED 1 and 2, and compare the files
    sampled: bool = False  # learner 1 on issue 31's sampled corpus too
    rust_on_synthetic: bool = False  # learner 2 on the generated corpora too (its count is slow)
    work: str = ""  # where the generated corpora are kept (default: var/bench/vocabulary-work)


def learn_in_child(
    path: Path, kind: str, size: int, learner: str, threads: int, out: Path, hash_seed: str = "0"
) -> dict:
    """Learn one vocabulary in a fresh process; its seconds, CPU seconds, peak RSS and the file's hash."""
    env = {
        **os.environ,
        "TOKENIZERS_PARALLELISM": "true",
        "RAYON_NUM_THREADS": str(threads),
        "PYTHONHASHSEED": hash_seed,
        "PYTHONPATH": os.pathsep.join([str(common.ROOT), str(common.ROOT / "platform")]),
    }
    command = [sys.executable, "-m", "bench.vocabulary", "--child", str(path), kind, str(size), str(learner), str(out)]
    subprocess.run(command, check=True, cwd=common.ROOT, env=env)
    figures = json.loads((out / "figures.json").read_text(encoding="utf-8"))
    megabytes = path.stat().st_size / 1e6
    figures.update(kind=kind, size=size, learner=learner, megabytes=round(megabytes, 1), pythonhashseed=hash_seed)
    figures["mb_per_s"] = round(megabytes / figures["seconds"], 2)
    return figures


def child(path: Path, kind: str, size: int, learner: str, out: Path) -> None:
    """The child's side: learn, save ``tokenizer.json``, write the figures (run as ``--child``).

    ``python`` is learner 1 with the Python merges put back in place of the compiled ones;
    ``reference`` also puts back the original per-text count.
    """
    from workers.engine import merge_kernels, tokenization, vocabulary, word_counts
    from workers.engine.vocabulary import coverage, train_vocabulary_from_files

    if learner in ("python", "reference"):
        vocabulary.merges = merge_kernels.reference_merges
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
    """Both kinds by every way on the real text, with the coverage of Gu et al. 2021's terms."""
    arms: dict[str, dict] = {}
    for kind, size in (("wordpiece", config.wordpiece_size), ("byte-bpe", config.bpe_size)):
        learners = ("1", "python", "2", "reference") if config.baseline else ("1", "python", "2")
        runs = {n: learn_in_child(corpus, kind, size, n, config.threads, scratch / f"{kind}-{n}") for n in learners}
        arm = {"learner_1": runs["1"], "python_merges": runs["python"], "learner_2": runs["2"]}
        arm["identical_to_python_merges"] = runs["python"]["sha256"] == runs["1"]["sha256"]
        arm["speedup_over_python_merges"] = round(runs["python"]["seconds"] / runs["1"]["seconds"], 2)
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


def _work(config: Config) -> Path:
    return Path(config.work) if config.work else common.OUT_DIR / "vocabulary-work"


def _generated(path: Path, make) -> tuple[Path, dict]:
    """``path`` made by ``make(path)`` once (its figures in a sidecar), then reused while its size matches."""
    sidecar = path.with_suffix(".json")
    if path.is_file() and sidecar.is_file():
        made = json.loads(sidecar.read_text(encoding="utf-8"))
        if made.get("bytes") == path.stat().st_size and "distinct_words" in made:
            return path, {**made, "reused": True}
    made = make(path)
    sidecar.write_text(json.dumps(made), encoding="utf-8")
    return path, {**made, "reused": False}


def synthetic_corpus(config: Config) -> tuple[Path, dict]:
    """The sampled corpus of ``synthetic_bytes`` for ``seed``, generated once and reused."""
    from bench.synthetic_corpus import write_synthetic_corpus

    def make(path: Path) -> dict:
        made = write_synthetic_corpus(path, config.synthetic_bytes, seed=config.seed, data=common.data_dir())
        return {**made, "distinct_words": made["source_distinct_words"]}

    return _generated(_work(config) / f"synthetic-{config.seed}-{config.synthetic_bytes}.txt", make)


def heaps_corpus(config: Config) -> tuple[Path, dict]:
    """The Heaps'-law corpus of ``heaps_bytes`` for ``seed``, generated once and reused."""
    from bench.heaps_corpus import write_heaps_corpus

    def make(path: Path) -> dict:
        return write_heaps_corpus(path, config.heaps_bytes, seed=config.seed, data=common.data_dir())

    return _generated(_work(config) / f"heaps-{config.seed}-{config.heaps_bytes}.txt", make)


def compile_kernels() -> float:
    """Compile the merge kernels (or load them from numba's cache) before any timed child; the seconds."""
    from workers.engine import merge_kernels

    started = time.perf_counter()
    merge_kernels.greedy_merges({"ab": 2, "abc": 1}, ["a", "b", "c"], 2)
    return round(time.perf_counter() - started, 2)


def generated_runs(config: Config, path: Path, scratch: Path, label: str) -> dict:
    """Learner 1 (and learner 2 when asked) on a generated corpus; twice, hash seeds 1 and 2, when ``repeat``."""
    kinds = [("wordpiece", config.wordpiece_size)]
    if config.bpe_on_heaps or label != "heaps":
        kinds.append(("byte-bpe", config.bpe_size))
    learners = ("1", "2") if config.rust_on_synthetic else ("1",)
    runs: dict[str, dict] = {}
    for kind, size in kinds:
        for n in learners:
            seeds = ("1", "2") if config.repeat and label == "heaps" else ("1",)
            first, *again = (
                learn_in_child(path, kind, size, n, config.threads, scratch / f"{label}-{kind}{n}-{s}", hash_seed=s)
                for s in seeds
            )
            if again:
                first["repeat"] = {key: again[0][key] for key in ("seconds", "cpu_seconds", "peak_rss_mb", "sha256")}
                first["identical_across_processes"] = again[0]["sha256"] == first["sha256"]
            runs[f"{kind}_learner_{n}"] = first
    return runs


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    from bench.heaps_corpus import real_documents

    config = config or Config()
    data = common.data_dir()
    if not (data / "HoC" / "blurb" / "train.tsv").is_file():
        return common.skipped(NAME, f"the official datasets are missing: {data} (set BIOLM_DATA_DIR)", config, out_dir)
    compile_seconds = compile_kernels()
    with tempfile.TemporaryDirectory(prefix="biolm-bench-vocabulary-") as scratch:
        scratch = Path(scratch)
        corpus = scratch / "real.txt"
        documents = real_documents(data)
        corpus.write_text("".join(document + "\n" for document in documents), encoding="utf-8")
        real = real_text(config, corpus, scratch)
        path, made = heaps_corpus(config)
        heaps = {"corpus": made, **generated_runs(config, path, scratch, "heaps")}
        result = {
            "name": NAME,
            "numba_compile_or_load_seconds": compile_seconds,
            "real_text": {"megabytes": round(corpus.stat().st_size / 1e6, 1), "documents": len(documents), **real},
            "heaps": heaps,
        }
        if config.sampled:
            path, made = synthetic_corpus(config)
            result["synthetic"] = {"corpus": made, **generated_runs(config, path, scratch, "sampled")}
    result["goals"] = _goals(heaps)
    return common.publish(NAME, result, config, __doc__.split("\n\n")[0], summary, out_dir)


def _goals(runs: dict) -> dict:
    return {
        kind: {
            "under_5_minutes": figures["seconds"] < GOAL_SECONDS,
            "identical_across_processes": figures.get("identical_across_processes"),
            "peak_under_2_gb": figures["peak_rss_mb"] < GOAL_PEAK_MB,  # issue 31's, on the sampled corpus
        }
        for kind, figures in runs.items()
        if kind != "corpus"
    }


def summary(result: dict) -> str:
    real = result["real_text"]
    lines = [f"vocabulary: real text {real['megabytes']} MB ({real['documents']} documents)"]
    for kind in ("wordpiece", "byte-bpe"):
        arm = real[kind]
        ours, python, rust = arm["learner_1"], arm["python_merges"], arm["learner_2"]
        line = (
            f"  real {kind} {ours['vocabulary_size']}: learner 1 {ours['seconds']} s ({ours['mb_per_s']} MB/s, peak "
            f"{ours['peak_rss_mb']} MB); Python merges {python['seconds']} s ({python['mb_per_s']} MB/s), identical: "
            f"{arm['identical_to_python_merges']}; learner 2 {rust['seconds']} s ({rust['mb_per_s']} MB/s)"
        )
        if "reference" in arm:
            line += f"; per-text count {arm['reference']['seconds']} s, identical: {arm['identical_to_reference']}"
        lines.append(line)
    for label in ("heaps", "synthetic"):
        if label not in result:
            continue
        made = result[label]["corpus"]
        line = f"  {label} corpus {made['bytes'] / 1e6:.0f} MB, {made['distinct_words']} distinct words"
        if "fit" in made:
            line += f" (Heaps' fit K {made['fit']['K']:.3f}, beta {made['fit']['beta']:.4f})"
        lines.append(line)
        for name, run_ in result[label].items():
            if name == "corpus":
                continue
            lines.append(
                f"  {label} {name} {run_['vocabulary_size']}: {run_['seconds']} s ({run_['mb_per_s']} MB/s, CPU "
                f"{run_['cpu_seconds']} s), peak {run_['peak_rss_mb']} MB; identical across processes: "
                f"{run_.get('identical_across_processes')}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] != "--child":
        sys.exit("usage: python -m bench vocabulary (this module's own command line is its child's)")
    child(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], Path(sys.argv[6]))
