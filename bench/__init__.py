"""Benchmarks (``make bench``): engine and pretraining throughput, the job queue, checkpoint intake, page loads.

Each module has ``NAME`` and ``run(config=None, out_dir=None) -> dict``: it measures, writes
``var/bench/<NAME>.json`` and returns the same dictionary. ``python -m bench [NAME ...]`` runs
them (all by default). Timings on a shared machine are noisy: compare the ratios measured in
one run, not absolute figures across runs.
"""

from __future__ import annotations

BENCHMARKS = (
    "finetune_throughput",
    "inference_throughput",
    "pretrain_throughput",
    "pretrain_unpadded",
    "distributed_pretraining",
    "jobs",
    "many_workers",
    "checkpoint_intake",
    "leaderboard",
    "submission_store",
    "pages",
    "honest_ranks",
    "vocabulary",
    "corpus_prep",
    "protocol",
    "blurb_gpu",
    "time_to_leaderboard",
)
