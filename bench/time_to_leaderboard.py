"""Time to the leaderboard: BLURB's full protocol for BERT-base on 1 to 16 GPU workers (``bench time_to_leaderboard``).

The jobs are those the platform queues for a BLURB submission, cut by the same functions
(:func:`biolm.job_contracts.job_plan` for each dataset's plan, :func:`biolm.contract.slices.planned` and
:func:`~biolm.contract.slices.reads_of` for the slices and what each waits for):

* **sliced** (``BIOLM_SLICE_PROTOCOLS=1``, the default): per dataset each grid point, the selection,
  each further seed, the gather, then the score job;
* **one job per dataset** (``BIOLM_SLICE_PROTOCOLS=0``): the fine-tuning job, then the score job.

The engine is replaced by a timed stand-in: each job takes the time its measured parts add up to, on
a simulated clock, and the jobs are scheduled as dispatch sends them to one submitter's workers: a
ready job goes to the first free GPU worker in the order it was queued (``jobs.dispatch.fair_order``:
priority, then queued time, then id), and score jobs to the CPU worker. Efficiency at N workers is
the one-worker time over N times the N-worker time, for the same graph.

Where each duration comes from (``durations`` in the JSON says, per dataset):

* **a training**: the task type's epochs times the dataset's seconds per epoch at the point's batch
  size (whole training set, BERT-base on one H200, ``bench blurb_gpu``), plus its dev and test
  prediction and its other per-run work where that run recorded them. Taken from
  ``var/bench/blurb_gpu.json`` when it holds a GPU run, else from the figures recorded in
  docs/performance.md (2026-11-29: BC5-chem, BC5-disease, NCBI-disease, BC2GM, JNLPBA, ChemProt, DDI;
  prediction not recorded there, so counted as 0 s);
* **the datasets not measured** (GAD, BIOSSES, HoC, PubMedQA, BioASQ): seconds per training word, the
  median over the measured datasets of the same task type (over all of them for a task type with none
  measured), times the dataset's training words counted in its official files. EBM PICO cannot be
  trained from the official data (its training file is missing) and is left out, and said so;
* **the further seeds** train at the grid's slowest point, as the GPU projection assumes (the chosen
  point is not known before the grid has run);
* **each job's start**: a fresh interpreter importing the engine and starting CUDA (17 s, measured by
  ``bench blurb_gpu``) plus reading and tokenising its data (3.5 s, the middle of the 2-5 s measured);
  the selection and the gather read documents only, so they pay the start alone;
* **a score job**: 2 s on the CPU worker (five of them took 10 s in ``bench protocol``).

Goal: **>= 80% efficiency at 8 workers and >= 60% at 16** (sliced). One job per dataset is bounded by
its slowest dataset's whole protocol.
"""

from __future__ import annotations

import heapq
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench import common

NAME = "time_to_leaderboard"
ROOT = Path(__file__).resolve().parents[1]
GOALS = {8: 0.80, 16: 0.60}
# Seconds per epoch of the whole training set at batch 32 and 16, BERT-base on one H200 (bench blurb_gpu,
# docs/performance.md, "The whole BLURB protocol"): the figures used when no var/bench/blurb_gpu.json holds a run.
RECORDED_EPOCH_SECONDS = {
    "bc5-chem": {32: 12.6, 16: 13.6},
    "bc5-disease": {32: 5.0, 16: 9.4},
    "ncbi-disease": {32: 7.7, 16: 13.1},
    "bc2gm": {32: 17.6, 16: 31.0},
    "jnlpba": {32: 22.5, 16: 40.7},
    "chemprot": {32: 49.4, 16: 60.0},
    "ddi": {32: 31.3, 16: 67.1},
}


@dataclass
class Config:
    workers: str = "1,2,4,8,16"
    figures: str = str(common.OUT_DIR / "blurb_gpu.json")  # a bench blurb_gpu run; the recorded figures without it
    process_start_seconds: float = 17.0
    tokenise_seconds: float = 3.5
    score_seconds: float = 2.0
    benchmark: str = "blurb"


@dataclass
class Job:
    """One job of the simulated graph: what it is, how long it takes, and the jobs it waits for."""

    id: int
    dataset: str
    kind: str  # slice, finetune or score
    seconds: float
    after: list[int] = field(default_factory=list)
    queue: str = "gpu"


@dataclass
class Rates:
    """One dataset's measured (or derived) figures."""

    epoch_seconds: dict[int, float]
    per_run_seconds: float = 0.0  # prediction and other work of each run
    source: str = "measured"


def contributions():
    sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
    from biolm.plugins import collect_contributions, get_plugin_manager

    return collect_contributions(get_plugin_manager(load_entrypoints=False))


def plans(found, benchmark: str) -> dict:
    """Each of the benchmark's datasets' plans, as the platform's job specs make them."""
    from biolm.contract import ModelInput
    from biolm.job_contracts import finetune_job, job_plan

    datasets = dict.fromkeys(entry.dataset for entry in found.benchmarks[benchmark].entries)
    model = ModelInput(architecture="bert:base")
    return {
        slug: job_plan(found, finetune_job(found, dataset=slug, model=model, benchmark=benchmark)) for slug in datasets
    }


def recorded_rates(path: Path) -> tuple[dict[str, Rates], float | None, str]:
    """The measured datasets' rates: a blurb_gpu run's when ``path`` holds one, else the recorded figures."""
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
        projected = run["projection"]["per_dataset"]
    except (OSError, ValueError, KeyError, TypeError):
        rates = {slug: Rates(dict(epochs), 0.0, "recorded") for slug, epochs in RECORDED_EPOCH_SECONDS.items()}
        return rates, None, "docs/performance.md (bench blurb_gpu, 2026-11-29, one H200)"
    rates = {}
    for slug, figure in projected.items():
        rate = figure["rates"]
        per_run = rate.get("prediction_seconds", 0.0) + rate.get("run_other_seconds", 0.0)
        rates[slug] = Rates({int(b): s for b, s in rate["epoch_seconds"].items()}, per_run, "measured")
    return rates, run.get("process_start_seconds"), f"{path} ({run.get('device', 'a GPU')})"


def training_words(found, slug: str) -> int:
    """The words of ``slug``'s training texts in its official files (what the derived rates scale by)."""
    from workers.engine.runs import data_directory, load_dataset_files
    from workers.engine.task import Task

    task = Task.of(found, slug)
    directory = data_directory(task.dataset.adapter.default_path)
    data = load_dataset_files(task.dataset, directory)
    if "train" not in data.splits:
        raise ValueError(f"{directory} has no training file")
    return sum(len(text.split()) for text in task.schema.texts(data.splits["train"]))


def derived_rates(found, measured: dict[str, Rates], slugs: list[str]) -> tuple[dict[str, Rates], dict[str, str]]:
    """Rates of the datasets not measured: seconds per training word of the same task type, times their words;
    and why a dataset that cannot be trained here is left out."""
    words, left_out = {}, {}
    for slug in slugs:
        try:
            words[slug] = training_words(found, slug)
        except ValueError as exc:  # EBM PICO: its train.tsv is missing from the official data
            if slug in measured:
                raise
            left_out[slug] = f"not scheduled: {exc}"
    kind = {slug: found.datasets[slug].task_type for slug in words}
    per_word: dict[tuple[str, int], list[float]] = {}
    for slug, rate in measured.items():
        for batch, seconds in rate.epoch_seconds.items():
            per_word.setdefault((kind[slug], batch), []).append(seconds / words[slug])
            per_word.setdefault(("*", batch), []).append(seconds / words[slug])
    derived = {}
    for slug in words:
        if slug in measured:
            continue
        own = kind[slug] if any(key[0] == kind[slug] for key in per_word) else "*"
        epochs = {b: statistics.median(v) * words[slug] for (k, b), v in per_word.items() if k == own}
        basis = f"the median seconds per training word of {'its task type' if own != '*' else 'every measured dataset'}"
        derived[slug] = Rates(epochs, 0.0, f"derived: {basis} x {words[slug]:,} words")
    return derived, left_out


def training_seconds(rate: Rates, batch_size: int, epochs: int) -> float:
    epoch = rate.epoch_seconds.get(batch_size)
    if epoch is None:  # a batch size not measured: the nearest, scaled by its steps
        near = min(rate.epoch_seconds, key=lambda b: abs(b - batch_size))
        epoch = rate.epoch_seconds[near] * near / batch_size
    return epochs * epoch + rate.per_run_seconds


def graph(plans_: dict, rates: dict[str, Rates], config: Config, start: float, sliced: bool) -> list[Job]:
    """The jobs the platform queues for the benchmark, in the order it creates them."""
    from biolm.contract.slices import planned, reads_of

    jobs: list[Job] = []
    for slug, plan in plans_.items():
        if slug not in rates:
            continue
        points = [training_seconds(rates[slug], hp.batch_size, hp.epochs) for hp in plan.points]
        slowest, data = max(points), start + config.tokenise_seconds
        if not sliced:
            jobs.append(Job(len(jobs), slug, "finetune", data + sum(points) + (plan.seeds - 1) * slowest))
        else:
            ids: dict[str, int] = {}
            slices = planned(len(plan.points), plan.seeds)
            for part in slices:
                seconds = start if not part.trains else data + (points[part.index] if part.part == "point" else slowest)
                after = [ids[other.name] for other in reads_of(part, slices)]
                ids[part.name] = len(jobs)
                jobs.append(Job(len(jobs), slug, "finetune" if part.part == "gather" else "slice", seconds, after))
        jobs.append(Job(len(jobs), slug, "score", config.score_seconds, [len(jobs) - 1], "cpu"))
    return jobs


def schedule(jobs: list[Job], gpu_workers: int, cpu_workers: int = 1) -> dict:
    """Each job to the first free worker of its queue, ready jobs in queued order; when each dataset was scored."""
    free = {"gpu": gpu_workers, "cpu": cpu_workers}
    done, started, running, now = set(), set(), [], 0.0
    finished: dict[int, float] = {}
    while len(done) < len(jobs):
        for job in jobs:  # queued order: the graph is written in it
            if job.id not in started and free[job.queue] and all(a in done for a in job.after):
                started.add(job.id)
                free[job.queue] -= 1
                heapq.heappush(running, (now + job.seconds, job.id))
        now, ended = heapq.heappop(running)
        done.add(ended)
        finished[ended] = now
        free[jobs[ended].queue] += 1
    scored = {job.dataset: finished[job.id] for job in jobs if job.kind == "score"}
    busy = sum(job.seconds for job in jobs if job.queue == "gpu")
    return {"wall_seconds": now, "gpu_busy_seconds": busy, "scored_at_seconds": scored}


def scaling(jobs: list[Job], counts: list[int]) -> dict:
    runs = {n: schedule(jobs, n) for n in counts}
    one = runs[counts[0]]["wall_seconds"] * counts[0]
    return {
        str(n): {**run, "wall_minutes": run["wall_seconds"] / 60, "efficiency": one / (n * run["wall_seconds"])}
        for n, run in runs.items()
    }


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    found = contributions()
    plans_ = plans(found, config.benchmark)
    measured, start, source = recorded_rates(Path(config.figures))
    start = start if start is not None else config.process_start_seconds
    try:
        derived, left_out = derived_rates(found, measured, list(plans_))
    except (OSError, ValueError) as exc:  # the official files the derived rates count words in
        return common.skipped(NAME, f"official data missing: {exc}", config, out_dir)
    rates = {**measured, **derived}
    counts = [int(n) for n in config.workers.split(",")]
    sliced, whole = graph(plans_, rates, config, start, True), graph(plans_, rates, config, start, False)
    result = {
        "name": NAME,
        "figures_from": source,
        "job_start_seconds": start,
        "durations": {
            slug: {"epoch_seconds": r.epoch_seconds, "per_run_seconds": r.per_run_seconds, "source": r.source}
            for slug, r in rates.items()
        },
        "not_scheduled": left_out,
        "jobs": {"sliced": len(sliced), "one_per_dataset": len(whole)},
        "sliced": scaling(sliced, counts),
        "one_per_dataset": scaling(whole, counts),
    }
    result["goals"] = {str(n): {"goal": goal, "efficiency": result["sliced"][str(n)]["efficiency"],
                                "met": result["sliced"][str(n)]["efficiency"] >= goal}
                       for n, goal in GOALS.items() if str(n) in result["sliced"]}  # fmt: skip
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    rows = []
    for n, sliced in result["sliced"].items():
        whole = result["one_per_dataset"][n]
        rows.append([n, f"{sliced['wall_minutes']:.0f}", f"{sliced['efficiency']:.0%}",
                     f"{whole['wall_minutes']:.0f}", f"{whole['efficiency']:.0%}"])  # fmt: skip
    table = common.table(["GPU workers", "sliced (min)", "efficiency", "one job per dataset (min)", "efficiency"], rows)
    goals = "; ".join(f"{n} workers {g['efficiency']:.0%} (goal {g['goal']:.0%}: {'met' if g['met'] else 'not met'})"
                      for n, g in result["goals"].items())  # fmt: skip
    return f"{table}\n  {goals}\n  figures: {result['figures_from']}"
