"""Does pretraining pay? A tiny model pretrained on real biomedical text against the same one untrained.

``python -m bench.pretraining_gain [--steps N] [--dataset SLUG] [--learning-rates A,B,C] [--seeds N]
[--work DIR]`` runs, through the command lines a user runs:

1. ``bench.biomedical_corpus``: the BLURB datasets' training and dev text (no test split);
2. ``python -m workers.engine pretrain --recipe tiny`` on it (hidden 128; its report gives the
   held-out MLM loss beside the unigram baseline, and the contamination report proves the
   benchmarks' test splits stayed out);
3. a checkpoint of the same architecture and vocabulary with freshly initialised weights;
4. ``python -m workers.engine finetune`` of both on ``--dataset`` at each learning rate, several
   seeds each; each model's learning rate is chosen on dev, as the protocols do.

It writes ``var/bench/pretraining_gain.json`` with top-level ``gain`` (test points, pretrained
minus random at each one's chosen rate). Everything lands under ``--work``: a rerun reuses the
finished pretraining (or resumes it from its checkpoint) and the stored fine-tuning runs.
Not part of ``make bench``: it takes about 25 minutes on two CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench import biomedical_corpus, common

NAME = "pretraining_gain"
MODEL_SIZE = {"config": {"hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512}}


def _engine(*arguments: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run([sys.executable, "-m", "workers.engine", *arguments], check=True, cwd=common.ROOT, env=env)


def pretrain(work: Path, steps: int) -> dict:
    out = work / "pretrained"
    report_path = out / "pretraining.json"
    if report_path.is_file() and json.loads(report_path.read_text())["training"]["steps"] == steps:
        print(f"pretraining: reusing {out}", flush=True)
        return json.loads(report_path.read_text())
    settings = json.dumps({**MODEL_SIZE, "eval_every": 250, "checkpoint_every": 500})
    resume = ["--resume"] if (out / "checkpoint").is_dir() else []
    _engine("pretrain", "--recipe", "tiny", "--corpus", str(work / "corpus.txt"), "--steps", str(steps),
            "--settings", settings, "--out", str(out), *resume)  # fmt: skip
    return json.loads(report_path.read_text())


def random_twin(work: Path) -> Path:
    """The pretrained checkpoint's architecture and vocabulary with fresh weights (seed 42)."""
    import torch
    from transformers import AutoConfig, AutoModelForMaskedLM

    out = work / "random"
    if (out / "model.safetensors").is_file():
        return out
    config = AutoConfig.from_pretrained(str(work / "pretrained"), local_files_only=True)
    torch.manual_seed(42)
    AutoModelForMaskedLM.from_config(config).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(work / "pretrained" / name, out / name)
    return out


def finetune(work: Path, model: str, dataset: str, learning_rate: str, seeds: int) -> dict:
    out = work / "finetune" / f"{model}-{dataset}-{learning_rate}"
    _engine("finetune", "--dataset", dataset, "--model", str(work / model), "--out", str(out),
            "--learning_rate", learning_rate, "--batch_size", "32", "--epochs", "5", "--seeds", str(seeds),
            "--max_length", "128")  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    metric = results["metric"]
    return {
        "learning_rate": float(learning_rate),
        "dev": results["selection"][0]["dev"][metric],
        "test_mean": results["test"]["mean"],
        "test_std": results["test"]["std"],
        "test_per_seed": [run["metrics"]["test"][metric] for run in results["runs"]],
        "metric": metric,
        "results": str(out / "results.json"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pretraining_gain", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--dataset", default="ncbi-disease")
    parser.add_argument("--learning-rates", default="3e-4,1e-3,3e-3")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=common.ROOT / "var" / "pretraining_gain")
    args = parser.parse_args(argv)
    absent = biomedical_corpus.missing() or common.missing_data(common.dataset_directory(args.dataset))
    if absent:
        print(f"skipped: {absent}", file=sys.stderr)
        common.write_json(NAME, {"name": NAME, "skipped": absent, "settings": {**vars(args), "work": str(args.work)}})
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    if not (args.work / "corpus.txt").is_file():
        print(json.dumps(biomedical_corpus.write_corpus(args.work / "corpus.txt")), flush=True)
    report = pretrain(args.work, args.steps)
    random_twin(args.work)
    rates = [rate.strip() for rate in args.learning_rates.split(",") if rate.strip()]
    grids = {
        model: [finetune(args.work, model, args.dataset, rate, args.seeds) for rate in rates]
        for model in ("pretrained", "random")
    }
    chosen = {model: max(points, key=lambda p: p["dev"]) for model, points in grids.items()}
    contamination = report["contamination"]["datasets"]
    result = {
        "name": NAME,
        "gain": chosen["pretrained"]["test_mean"] - chosen["random"]["test_mean"],
        "dataset": args.dataset,
        "metric": chosen["pretrained"]["metric"],
        "chosen": chosen,
        "grid": grids,
        "pretraining": {
            "steps": report["training"]["steps"],
            "heldout_loss": report["training"]["heldout_loss"],
            "unigram_baseline_loss": report["unigram_baseline_loss"],
            "corpus": report["corpus"],
            "tokens_per_second": report["training"]["tokens_per_second_this_session"],
        },
        "contamination": {slug: entry["share"] for slug, entry in contamination.items()},
        "contamination_skipped": sorted(report["contamination"].get("skipped", {})),
        "settings": {**vars(args), "work": str(args.work), "model": MODEL_SIZE},
        "machine": common.machine(),
        "versions": common.versions(),
        "notes": __doc__,
    }
    path = common.write_json(NAME, result)
    print(
        f"held-out MLM loss {result['pretraining']['heldout_loss']:.3f} "
        f"(unigram baseline {result['pretraining']['unigram_baseline_loss']:.3f})"
    )
    for model, point in chosen.items():
        print(
            f"{model}: {args.dataset} test {point['metric']} {point['test_mean']:.2f} ± {point['test_std']:.2f} "
            f"at lr {point['learning_rate']:g} (chosen on dev)"
        )
    print(f"gain {result['gain']:+.2f} points; written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
