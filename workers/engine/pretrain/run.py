"""Pretrain a model from a recipe and a corpus, and write a checkpoint the engine fine-tunes unchanged.

``python -m workers.engine pretrain --recipe NAME --corpus PATH [--steps N] [--resume] --out DIR``.
The recipe (a plugin contribution) gives the objective's implementation and the settings:
architecture, vocabulary, block size, batch, learning rate, steps, preprocessors. The run:

1. streams the corpus through the recipe's preprocessors and learns the vocabulary on the
   training documents (or keeps a continual run's checkpoint vocabulary), with the
   coverage report of Gu et al. 2021 beside the starting vocabulary when there is one;
2. packs the documents into token blocks on disk (training and held-out parts, fingerprinted);
3. trains (:mod:`workers.engine.pretrain.loop`), checkpointing for exact resume;
4. writes a Hugging Face checkpoint into ``--out`` (safetensors, config, tokenizer) with
   ``pretraining.json`` (recipe, settings, corpus statistics and fingerprint, vocabulary
   report, losses against the unigram baseline) and ``loss.json`` (the curve).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoModelForMaskedLM, AutoModelForPreTraining

import biolm
from biolm.corpus import preprocess_corpus
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import ImplementationError
from workers.engine import efficiency, preflight
from workers.engine.architectures import build_config, load_config
from workers.engine.pretrain import parallel
from workers.engine.pretrain.adversarial import Adversarial
from workers.engine.pretrain.checkpoints import full_model_state
from workers.engine.pretrain.contamination import collect_test_shingles, contamination
from workers.engine.pretrain.data import (
    CorpusProgress,
    is_heldout,
    open_blocks,
    open_pairs,
    write_blocks,
    write_pair_blocks,
)
from workers.engine.pretrain.distillation import Distillation
from workers.engine.pretrain.loop import LoopSettings, Masker, ProgressCallback, pretrain_loop, unigram_baseline
from workers.engine.pretrain.masking import MASKING_SCHEME
from workers.engine.pretrain.mlm import has_pair_head
from workers.engine.pretrain.objectives import MaskedLanguageModel
from workers.engine.tokenization import load_tokenizer
from workers.engine.vocabulary import compare, coverage, train_vocabulary

logger = logging.getLogger("biolm.pretrain")
REFUSAL_RECORD = ".engine-refusal.json"  # under torchrun: the first attempt's refusal, which restarts replay

LOOP_KEYS = {
    "batch_size", "accumulation", "learning_rate", "warmup_ratio", "weight_decay", "checkpoint_every",
    "eval_every", "eval_blocks", "seed", "unpadded", "compile", "optimizer_kernel", "varlen_attention",
    "parallelism", "activation_checkpointing",
}  # fmt: skip


@dataclass
class PretrainArguments:
    """``python -m workers.engine pretrain``: what to pretrain, on what, and where the checkpoint goes."""

    recipe: str = field(metadata={"help": "A pretraining recipe (see manage.py plugins), e.g. tiny."})
    corpus: Path = field(metadata={"help": "A text file (.gz too), one document per line."})
    out: Path = field(metadata={"help": "Directory for the checkpoint, its reports and the resumable state."})
    steps: int | None = field(default=None, metadata={"help": "Optimiser steps (default: the recipe's)."})
    resume: bool = field(default=False, metadata={"help": "Continue from the last checkpoint in --out."})
    model: Path | None = field(
        default=None, metadata={"help": "Continual pretraining from this checkpoint, keeping its vocabulary."}
    )
    teacher: Path | None = field(
        default=None, metadata={"help": "The teacher checkpoint of a distillation recipe (its vocabulary is used)."}
    )
    settings: str | None = field(
        default=None,
        metadata={"help": 'JSON object over the recipe\'s settings, e.g. \'{"batch_size": 64, "steps": 5000}\'.'},
    )
    device: str = field(default="auto", metadata={"help": "auto, cpu, cuda or cuda:N."})
    precision: str = field(default="auto", metadata={"help": "auto (bf16 where native), bf16 or fp32."})
    load_entrypoints: bool = True

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if self.model is not None:
            self.model = Path(self.model)
        if self.teacher is not None:
            self.teacher = Path(self.teacher)
        if self.steps is not None and self.steps < 1:
            raise ValueError("--steps must be at least 1")
        if self.settings is not None:
            try:
                overrides = json.loads(self.settings)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--settings must be a JSON object: {exc}") from None
            if not isinstance(overrides, dict):
                raise ValueError("--settings must be a JSON object")


def pretrain(args: PretrainArguments, progress: ProgressCallback | None = None) -> dict:
    """Pretrain by ``args.recipe``; returns (and writes to ``args.out``) the report.

    Refused (a bad corpus, recipe or checkpoint), it leaves no ``--out`` directory that it created
    (:func:`preflight.output_directory`).
    """
    with preflight.output_directory(args.out):
        return _pretrain(args, progress)


def _pretrain(args: PretrainArguments, progress: ProgressCallback | None) -> dict:
    if args.model is not None:
        preflight.check_checkpoint(args.model)
    if not args.corpus.is_file():
        raise ValueError(f"--corpus {args.corpus}: no such file")
    manager = get_plugin_manager(load_entrypoints=args.load_entrypoints)
    contributions = collect_contributions(manager)
    recipe, settings, objective = _recipe_objective(contributions, args)
    preprocessors = [_preprocessor(contributions, slug) for slug in settings.get("preprocessors", ())]
    rank, world = start_processes()
    device, dtype = _device_and_dtype(args, world)
    if world > 1:
        check_shared_output(args.out, rank, world)
    resume = args.resume or restarted_by_torchrun()
    block_size = int(settings.get("block_size", 128))
    heldout_share = float(settings.get("heldout_share", 0.05))

    def documents():
        return preprocess_corpus(args.corpus, preprocessors)

    _check_recipe_inputs(args, settings, recipe.slug, objective)
    adversarial = Adversarial.of(settings, int(settings.get("seed", 42))) if objective.adversarial else None
    _check_teacher(args, recipe.slug, objective)
    if next(iter(documents()), None) is None:
        raise ValueError(f"--corpus {args.corpus}: no documents (after the recipe's preprocessors)")
    tokenizer, vocabulary = _tokenizer_and_vocabulary(args, settings, objective, documents, heldout_share)
    stats, train_blocks, heldout_blocks = _corpus_blocks(
        args, settings, objective, tokenizer, documents, block_size, heldout_share, rank, world, resume
    )
    loop = LoopSettings(
        steps=args.steps or int(settings.get("steps", 1000)),
        mask_rate=objective.mask_rate,
        whole_word=objective.whole_word,
        rate_schedule=objective.rate_schedule,
        **{key: settings[key] for key in LOOP_KEYS if key in settings},
    )
    model = _build_model(args, settings, tokenizer, block_size, pairs=bool(objective.pairs), rank=rank, world=world)
    if objective.pairs and not has_pair_head(model):  # the configuration check passed but the class disagrees
        raise ImplementationError(f"{type(model).__name__} has no sentence-pair head for {objective.pairs.upper()}")
    specials = tuple(sorted({tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}))
    masker = Masker(tokenizer.mask_token_id, len(tokenizer), specials, tokenizer.pad_token_id)
    distillation = _distillation(args, settings, model) if objective.distill else None
    loop, planned = plan_on_device(loop, model, block_size, settings, device, world)
    placement = rank_placement(rank, world)
    started = time.perf_counter()
    summary = pretrain_loop(
        model, train_blocks, heldout_blocks, masker, loop, args.out,
        device=device, dtype=dtype, resume=resume, progress=progress, distillation=distillation,
        adversarial=adversarial, planned_parallelism=planned,
    )  # fmt: skip
    # A sharded model is gathered, tensor by tensor, onto rank 0's host; a replicated one is whole on every rank.
    weights = full_model_state(model, world) if summary["parallelism"] == "fsdp" else None
    if rank != 0:
        return {"training": summary, "rank": rank}
    contamination_report = _contamination(contributions, settings, documents, args.corpus)
    model.save_pretrained(args.out, state_dict=weights)
    tokenizer.save_pretrained(args.out)
    report = {
        "recipe": {"slug": recipe.slug, "objectives": list(recipe.objectives), "settings": settings},
        "objective": objective.describe(),
        "starting_checkpoint": str(args.model) if args.model else None,
        "teacher": str(args.teacher) if args.teacher else None,
        "corpus": {"path": str(args.corpus), **stats},
        "vocabulary": vocabulary,
        "contamination": contamination_report,
        "training": summary,
        "unigram_baseline_loss": unigram_baseline(
            train_blocks["ids"], heldout_blocks, list(specials), loop.eval_blocks
        ),
        "seconds": time.perf_counter() - started,
        "provenance": {
            **efficiency.provenance(device, dtype, [loop.seed], efficiency.plugin_versions(manager)),
            "biolm": biolm.__version__,
            "masking_scheme": MASKING_SCHEME,
            "processes": world,
            "ranks": placement,
        },
    }
    (args.out / "pretraining.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return report


def _recipe_objective(contributions, args: PretrainArguments) -> tuple:
    """The recipe ``--recipe`` names, its settings with ``--settings`` over them, and the objective it builds.

    An implementation that returns anything but a :class:`MaskedLanguageModel` is the plugin's
    fault, so it is an ``ImplementationError`` naming the recipe, not a user error.
    """
    recipe = contributions.recipes.get(args.recipe)
    if recipe is None:
        raise ValueError(f"unknown recipe {args.recipe!r}; known: {', '.join(sorted(contributions.recipes))}")
    settings = {**recipe.settings, **json.loads(args.settings or "{}")}
    objective = recipe.resolve()(settings=settings, objectives=recipe.objectives)
    if not isinstance(objective, MaskedLanguageModel):
        raise ImplementationError(
            f"recipe {recipe.slug}: its implementation returned {type(objective).__name__}", ("recipes", recipe.slug)
        )
    return recipe, settings, objective


def _device_and_dtype(args: PretrainArguments, world: int) -> tuple[torch.device, torch.dtype | None]:
    """``--device`` and ``--precision`` resolved; under torchrun each process takes the GPU of its local rank."""
    from workers.engine.runs import resolve_device, resolve_dtype

    device = resolve_device(args.device)
    if world > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return device, resolve_dtype(args.precision, device)


def _check_recipe_inputs(args: PretrainArguments, settings: dict, recipe: str, objective) -> None:
    """Refuse, before any corpus work, a continual recipe without ``--model`` and NSP/SOP without a pair head."""
    if settings.get("continual") and args.model is None:
        raise ValueError(f"recipe {recipe} continues a checkpoint's pretraining: give it with --model DIR")
    if objective.pairs:
        _check_pair_head(args, settings, recipe, objective.pairs)


def _check_teacher(args: PretrainArguments, recipe: str, objective) -> None:
    """``--teacher`` is required by a distillation recipe (and checked as a checkpoint) and refused by others."""
    if objective.distill:
        if args.teacher is None:
            raise ValueError(f"recipe {recipe} distils a teacher: give its checkpoint with --teacher DIR")
        preflight.check_checkpoint(args.teacher)
    elif args.teacher is not None:
        raise ValueError(f"recipe {recipe} does not distil; --teacher is for a distillation recipe")


def _tokenizer_and_vocabulary(args: PretrainArguments, settings: dict, objective, documents, heldout_share: float):
    """The tokenizer to pretrain with, and the vocabulary report that goes into ``pretraining.json``.

    A continual run keeps its checkpoint's vocabulary, a distillation student the teacher's (it
    predicts the teacher's tokens); otherwise one is learned on the training documents. The
    report is the new vocabulary's coverage, or, for a kept one, the comparison with a vocabulary
    learned on this corpus, as Gu et al. 2021 compare them (Table 1).
    """
    base_tokenizer = load_tokenizer(args.model) if args.model is not None else None
    if objective.distill:
        teacher_tokenizer = load_tokenizer(args.teacher)
        if base_tokenizer is not None and base_tokenizer.get_vocab() != teacher_tokenizer.get_vocab():
            raise ValueError(f"--model {args.model} and --teacher {args.teacher} have different vocabularies")
        base_tokenizer = base_tokenizer or teacher_tokenizer
    tokenizer = base_tokenizer or _learn_vocabulary(documents(), settings, heldout_share)
    sample = [
        text for text, _ in zip((d for d in documents() if is_heldout(d, heldout_share)), range(500), strict=False)
    ]
    if base_tokenizer is None:
        return tokenizer, {"new": coverage(tokenizer, texts=sample).to_dict()}
    domain = _domain_vocabulary(documents(), base_tokenizer, heldout_share)
    return tokenizer, {"kept": "the starting checkpoint's", **compare(domain, base_tokenizer, texts=sample)}


def _corpus_blocks(
    args: PretrainArguments, settings: dict, objective, tokenizer, documents, block_size: int, heldout_share: float,
    rank: int, world: int, resume: bool,
) -> tuple[dict, dict, dict]:  # fmt: skip
    """The corpus statistics and the training and held-out token blocks (sentence pairs for NSP/SOP).

    Process 0 packs the blocks on disk (a resumed run keeps those it packed before, so its data
    is the interrupted run's); every process then opens them, memory-mapped, from ``--out``, which
    across nodes is a shared filesystem (:func:`check_shared_output`).
    """
    data_dir = args.out / "data"
    stats_path = data_dir / "corpus.json"
    if rank == 0 and not (resume and stats_path.is_file()):
        progress = CorpusProgress("corpus blocks", args.corpus)
        if objective.pairs:
            write_pair_blocks(documents(), tokenizer, data_dir, block_size=block_size, heldout_share=heldout_share,
                              task=objective.pairs, seed=int(settings.get("seed", 42)), progress=progress)  # fmt: skip
        else:
            write_blocks(documents(), tokenizer, data_dir, block_size=block_size, heldout_share=heldout_share,
                         progress=progress)  # fmt: skip
        progress.report()
    _barrier(world)  # the other processes read the blocks process 0 wrote
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    opener = open_pairs if objective.pairs else open_arrays
    return stats, opener(data_dir, "train", block_size), opener(data_dir, "heldout", block_size)


def _distillation(args: PretrainArguments, settings: dict, model: torch.nn.Module) -> Distillation:
    """The teacher loaded from ``--teacher`` and a fresh projection from the student's width to its own."""
    teacher = AutoModelForMaskedLM.from_pretrained(str(args.teacher), local_files_only=True, trust_remote_code=False)
    return Distillation.of(teacher, model.config.hidden_size, settings)


def start_processes() -> tuple[int, int]:
    """Join the process group torchrun describes (NCCL on GPUs, gloo on CPUs); (rank, world size)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        store = _attempt_store(int(os.environ["RANK"]), world)
        if store is None:
            dist.init_process_group(backend=backend)
        else:
            dist.init_process_group(backend=backend, store=store, rank=int(os.environ["RANK"]), world_size=world)
    return dist.get_rank(), dist.get_world_size()


def _attempt_store(rank: int, world: int):
    """torchrun's store, under a prefix of its own for each restart of the group (None outside torchrun and on
    the group's first start).

    torchrun's agent keeps one store across the group's restarts, and the process group's keys (each
    rank's address) have the same names every time: a restarted rank read a dead rank's address and the
    group failed to connect. A prefix per ``TORCHELASTIC_RESTART_COUNT`` gives each attempt fresh keys.
    """
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt in (None, "", "0"):  # outside torchrun, or its first start: torch's own store, untouched
        return None
    from datetime import timedelta

    from torch.distributed import PrefixStore, TCPStore

    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"  # the agent hosts it; else rank 0 does
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    store = TCPStore(host, port, world, is_master=not agent and rank == 0, timeout=timedelta(minutes=30),
                     multi_tenant=not agent)  # fmt: skip
    return PrefixStore(f"biolm/attempt-{attempt}", store)


def _barrier(world: int) -> None:
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


def plan_on_device(
    loop: LoopSettings, model: torch.nn.Module, block_size: int, settings: dict, device: torch.device, world: int
) -> tuple[LoopSettings, str | None]:
    """The memory plan on this run's GPUs (:mod:`biolm.memory_plan`): its parallelism for ``auto``, and its
    accumulation unless the recipe or ``--settings`` names one; logged. (On a CPU, none: DDP, as given.)

    The plan is the submit-time plan again, now with the card's real memory: a run that cannot fit stops
    here with the plan's sentence, before it packs a corpus or takes a step.
    """
    if device.type != "cuda":
        return loop, None
    from biolm.memory_plan import dims_from_config, plan_memory

    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    config = {**model.config.to_dict(), "attn_implementation": model.config._attn_implementation}
    dims = dims_from_config(config, model.config.model_type, str(settings.get("architecture", "")))
    plan = plan_memory(
        dims, block_size=block_size, global_batch=loop.batch_size, gpus_per_node=per_node, nodes=world // per_node,
        parallelism=loop.parallelism, gpu_memory_bytes=torch.cuda.get_device_properties(device).total_memory,
        activation_checkpointing=loop.activation_checkpointing, masked_fraction=loop.mask_rate,
    )  # fmt: skip
    logger.info("memory plan:\n%s", plan.describe())
    if "accumulation" not in settings:
        loop = dataclasses.replace(loop, accumulation=plan.accumulation)
    return loop, plan.parallelism


def restarted_by_torchrun() -> bool:
    """Whether torchrun restarted this worker group (``--max-restarts``): it then resumes its last checkpoint.

    torchrun restarts every process of the group with the same arguments; without this, a group
    restarted after one rank's crash would start again from step 0 over its own checkpoint.
    """
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0) > 0


def check_shared_output(out: Path, rank: int, world: int) -> None:
    """Refuse, before any work, ranks that do not all see ``--out``: the corpus blocks and checkpoint live there.

    Rank 0 writes a token there; every rank must read it back. On one host it always can; across
    nodes it can only on a filesystem the nodes share (NFS, Lustre, GPFS), which biolm requires.
    """

    import torch.distributed as dist

    marker = out / ".biolm-ranks-share-this-folder"
    token = f"{os.getpid()}@{socket.gethostname()}:{time.time_ns()}"
    shared = [token]
    dist.broadcast_object_list(shared, src=0)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        marker.write_text(shared[0], encoding="utf-8")
    dist.barrier()
    sees = marker.is_file() and marker.read_text(encoding="utf-8") == shared[0]
    hosts: list = [None] * world
    dist.all_gather_object(hosts, (socket.gethostname(), sees))
    blind = sorted({host for host, saw in hosts if not saw})
    dist.barrier()
    if rank == 0:
        marker.unlink(missing_ok=True)
    if blind:
        raise ValueError(
            f"--out {out}: the ranks on {', '.join(blind)} do not see what rank 0 writes there; pretraining across "
            "nodes needs --out on a filesystem every node shares (the corpus blocks and the checkpoint live there)"
        )


def rank_placement(rank: int, world: int) -> list[dict]:
    """Where each rank runs (host, local rank, device), gathered on every rank: a job's page shows it."""
    here = {
        "rank": rank,
        "host": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "node_rank": int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")) or 0),
    }
    if world == 1:
        return [here]
    import torch.distributed as dist

    everyone: list = [None] * world
    dist.all_gather_object(everyone, here)
    return everyone


def _contamination(contributions, settings: dict, documents, corpus: Path) -> dict:
    """Seed-independent 13-gram overlap of the corpus with the test splits of the registered datasets.

    The scan's progress (throughput, ETA from the characters read over the file's size) is logged
    and written to the progress file as it goes.
    """
    from workers.engine.runs import data_directory

    wanted = settings.get("contamination_datasets", "all")
    if wanted == "all":
        datasets = dict(contributions.datasets)
    else:
        unknown = sorted(set(wanted) - set(contributions.datasets))
        if unknown:
            raise ValueError(f"contamination_datasets names unknown datasets: {', '.join(unknown)}")
        datasets = {slug: contributions.datasets[slug] for slug in wanted}
    sets, skipped = collect_test_shingles(datasets, lambda spec: data_directory(spec.adapter.default_path))
    progress = CorpusProgress("contamination scan", corpus)
    report = contamination(documents(), sets, skipped, progress=progress)
    if sets:
        progress.report()
    return report


def _preprocessor(contributions, slug: str):
    spec = contributions.preprocessors.get(slug)
    if spec is None:
        raise ValueError(f"the recipe names the preprocessor {slug!r}, which no plugin provides")
    return spec


def _learn_vocabulary(documents, settings: dict, heldout_share: float):
    kind = str(settings.get("vocabulary", "wordpiece"))
    size = int(settings.get("vocab_size", 8000))
    training = (text for text in documents if not is_heldout(text, heldout_share))
    tokenizer = train_vocabulary(training, kind, size, lowercase=settings.get("lowercase"))
    if len(tokenizer) > size:
        raise ValueError(
            f"a vocabulary of {size} entries is too small for this corpus: its characters and the special tokens "
            f"alone need {len(tokenizer)}; raise the recipe's vocab_size"
        )
    return tokenizer


def continued_model(auto, directory: Path, rank: int = 0, world: int = 1) -> torch.nn.Module:
    """The checkpoint a run continues from, read by rank 0 alone; the other ranks build its shape on the meta
    device and receive its weights when wrapped, as for a fresh model (see ``parallel``), so a host of 8 GPUs
    holds one copy of it, not 8.

    In fp32 whatever dtype it was saved in: the optimiser steps fp32 master weights, and bf16 is autocast's or
    FSDP's policy. It also keeps every rank's tensors of one dtype for the broadcast.
    """
    if parallel.builds_empty(rank, world):
        with parallel.build_context(rank, world):
            return auto.from_config(load_config(directory), dtype=torch.float32)
    return auto.from_pretrained(str(directory), local_files_only=True, trust_remote_code=False, dtype=torch.float32)


def _check_pair_head(args: PretrainArguments, settings: dict, recipe: str, task: str) -> None:
    """NSP and SOP need a sentence-pair head: refuse, before any work, an architecture without one."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_PRETRAINING_MAPPING_NAMES

    if args.model is not None:
        model_type = load_config(args.model).model_type
    else:
        model_type = build_config(str(settings.get("architecture", "bert:tiny"))).model_type
    if not MODEL_FOR_PRETRAINING_MAPPING_NAMES.get(model_type, "").endswith("ForPreTraining"):
        raise ValueError(
            f"recipe {recipe} trains {task.upper()}, which needs a sentence-pair head; {model_type} has none "
            "(use bert, megatron-bert or big-bird)"
        )


def open_arrays(directory: Path, part: str, block_size: int) -> dict:
    ids, words = open_blocks(directory, part, block_size)
    return {"ids": ids, "words": words}


def _domain_vocabulary(documents, base, heldout_share: float, limit: int = 20000):
    """A vocabulary of the starting one's kind and size, learned on (the first ``limit``) training documents."""
    kind = "wordpiece" if any(token.startswith("##") for token in list(base.get_vocab())[:5000]) else "byte-bpe"
    training = (text for text in documents if not is_heldout(text, heldout_share))
    first = (text for text, _ in zip(training, range(limit), strict=False))
    return train_vocabulary(first, kind, len(base), lowercase=bool(getattr(base, "do_lower_case", False)) or None)


def _build_model(
    args: PretrainArguments,
    settings: dict,
    tokenizer,
    block_size: int,
    *,
    pairs: bool = False,
    rank: int = 0,
    world: int = 1,
) -> torch.nn.Module:
    auto = AutoModelForPreTraining if pairs else AutoModelForMaskedLM
    if args.model is not None:
        return continued_model(auto, args.model, rank, world)
    config = build_config(
        str(settings.get("architecture", "bert:tiny")),
        **dict(settings.get("config", {})),  # the recipe's changes to the preset (sizes)
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=max(block_size, 128) + 2,
    )
    torch.manual_seed(int(settings.get("seed", 42)))
    with parallel.build_context(rank, world):  # rank 0 draws the weights; the others receive them when wrapped
        return auto.from_config(config)
