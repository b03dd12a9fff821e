"""A pretraining run's memory per GPU, estimated before anything runs: parallelism, micro-batch, accumulation.

A run that does not fit should be refused at submit, in one sentence that names the fix, not
discovered as an out-of-memory error an hour into a queue. The web process computes this plan, so
this module imports neither torch nor transformers: a model is its :class:`ModelDims`, and its
parameter count is computed from them (a test checks it against the engine's count on the meta
device, ``workers.engine.architectures.count_parameters``).

**Model states** (Rajbhandari et al. 2020, ZeRO, section 3.1: mixed-precision AdamW holds 16 bytes
per parameter). Under ``ddp`` every GPU holds fp32 weights (4 bytes per parameter), fp32
gradients (4) and AdamW's two fp32 moments (8); on top of them, bf16 autocast keeps a bf16 copy of
every weight from the forward pass to its backward (2), and DDP's reducer keeps the gradients
again in its communication buckets (4; PyTorch's default ``gradient_as_bucket_view=False``):
22 bytes per parameter. Under ``fsdp`` (FSDP2's ``fully_shard`` per layer and on the root, with
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``; Zhao et al. 2023) the 16 bytes are
sharded over the ranks: the sharded parameters keep their fp32 dtype, the policy only sets the
dtype they are all-gathered in. Each GPU also holds unsharded units while it computes: the root
(embeddings, tied decoder, heads) in bf16 for the whole step, the current and the prefetched layer
in bf16, and one unit's unsharded bf16 gradient with the fp32 copy it is reduce-scattered from.

**Activations** per sequence of ``s`` tokens (Korthikanti et al. 2022, section 4.1: a layer of
hidden size ``h`` and ``a`` heads stores ``s*h*(34 + 5*a*s/h)`` bytes with 16-bit activations and
no tensor parallelism). Their count, with the intermediate size ``f`` written out (their 19 MLP
bytes assume ``f = 4h``): attention 11*s*h (the QKV input 2, Q and K 4, V 2, the output
projection's input 2, its dropout mask 1) + 5*a*s^2 (softmax output 2, dropout mask 1, dropout
output 2); MLP 3*s*h + 4*s*f (first linear's input 2*s*h, GeLU's input 2*s*f, the second linear's
input 2*s*f, dropout mask s*h); the two layer norms' inputs 4*s*h. Adapted to how biolm runs: the
loop computes under bf16 autocast with either engine (fp32 weights under ``ddp``, bf16 gathered ones
under ``fsdp``), and autocast runs layer norm and softmax in fp32. So each layer norm stores a 4-byte
input, not 2, and the residual stream it feeds is fp32; autocast casts that fp32 input once for each
of Hugging Face's three separate query, key and value projections (6 bytes, not 2); softmax stores
its 4-byte output and the product with V keeps a bf16 copy (7 bytes a score, not 5). A layer then
stores 26*s*h + 4*s*f + 7*a*(its scores) bytes; more precisely:

* BERT and RoBERTa run PyTorch's fused attention (SDPA: FlashAttention or the memory-efficient
  kernel, Dao et al. 2022), which stores no score matrix, only a 4-byte log-sum-exp per head and
  token. Megatron-BERT, Longformer and BigBird run eager attention: Longformer's chunked sliding
  window materialises 2*w scores per token for a window of ``w`` (Beltagy et al. 2020, section
  3.2: "2x the amount of memory" of a banded kernel); BigBird's block-sparse attention scores
  (5 + r) blocks per query block (3 sliding, 2 global, ``r`` random; the two global query blocks
  score everything) and gathers copies of the keys and values of its 3 + r blocks (Zaheer et al.
  2020), and falls back to full attention on sequences of at most (5 + 2r) blocks, as the engine
  does.
* The embeddings store their layer norm's input and a dropout mask; the attention mask takes
  2*s^2 bytes; the MLM head runs on the masked positions only (the engine's ``mlm_forward``),
  storing its transform's inputs and, per masked token, bf16 logits, fp32 log-probabilities and,
  in the backward, their fp32 gradient (10 bytes per vocabulary entry).
* With activation checkpointing each layer keeps only its input (Korthikanti et al. 2022,
  section 5: 2*s*h bytes per layer in bf16; 4 here, the fp32 residual), and one layer is
  recomputed at a time.
* The backward pass holds one layer's activation gradients beside what is stored: one more
  layer's worth, with or without checkpointing.

**Fixed costs.** 2 GiB per GPU for the CUDA context, the cuBLAS and cuDNN workspaces and NCCL's
buffers (:data:`CONTEXT_BYTES`), and 10% of the card kept free (:data:`SAFETY_MARGIN`) for the
caching allocator's fragmentation and this estimate's error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PARALLELISMS = ("auto", "ddp", "fsdp")
CONTEXT_BYTES = 2 * 2**30
SAFETY_MARGIN = 0.10

# What workers/engine/pretrain/run.py and LoopSettings use when a recipe leaves a setting out (a test keeps them equal).
DEFAULT_ARCHITECTURE = "bert:tiny"
DEFAULT_PRESET = "tiny"
DEFAULT_BLOCK_SIZE = 128
DEFAULT_BATCH_SIZE = 32
DEFAULT_LEARNED_VOCABULARY = 8000
DEFAULT_MASK_RATE = 0.15

# The config classes' defaults in transformers (BertConfig, RobertaConfig, LongformerConfig, BigBirdConfig,
# MegatronBertConfig), for the keys a preset leaves out: fixed numbers, not multiples of the hidden size, so a
# preset that sets hidden_size but not intermediate_size gets 3,072 as transformers would give it. A test
# compares this table with the installed transformers.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "bert": {
        "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
    },
    "roberta": {
        "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
    },
    "longformer": {
        "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2, "attention_window": 512,
    },
    "big_bird": {
        "vocab_size": 50358, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "max_position_embeddings": 4096, "type_vocab_size": 2,
        "attention_type": "block_sparse", "block_size": 64, "num_random_blocks": 3,
    },
    "megatron-bert": {
        "vocab_size": 29056, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
        "intermediate_size": 4096, "max_position_embeddings": 512, "type_vocab_size": 2,
    },
}  # fmt: skip

# Families whose Hugging Face model classes support SDPA (``_supports_sdpa``); the others run eager attention.
FUSED_ATTENTION_MODEL_TYPES = frozenset({"bert", "roberta"})
FUSED_ATTENTION_IMPLEMENTATIONS = frozenset({"sdpa", "flash_attention_2", "flash_attention_3", "flex_attention"})


class PlanRefused(ValueError):
    """The run does not fit, or cannot be split as asked; the message is one sentence that names the fix."""


@dataclass(frozen=True)
class ModelDims:
    """An encoder's sizes: enough to count its parameters and its activations without building it.

    The optional fields describe attention that is not full: Longformer's window, BigBird's block-sparse
    blocks. ``attn_implementation`` is the config's (``None``: the family's default, SDPA for BERT and RoBERTa).
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    num_attention_heads: int
    model_type: str = "bert"
    attention_window: int | None = None
    sparse_block_size: int | None = None
    num_random_blocks: int = 0
    attn_implementation: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                    "max_position_embeddings", "num_attention_heads"):  # fmt: skip
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{self.label}: {key} must be a positive integer, not {value!r}")
        if self.type_vocab_size < 0 or self.num_random_blocks < 0:
            raise ValueError(f"{self.label}: type_vocab_size and num_random_blocks cannot be negative")

    @property
    def label(self) -> str:
        return self.name or f"a {self.model_type} encoder"

    def layer_parameters(self) -> int:
        """One encoder layer: Q, K, V and output projections, two layer norms, the two MLP linears."""
        h, f = self.hidden_size, self.intermediate_size
        attention = 4 * (h * h + h)
        if self.model_type == "longformer":  # separate projections for the global tokens' queries, keys and values
            attention += 3 * (h * h + h)
        return attention + 2 * (2 * h) + (h * f + f) + (f * h + h)

    def embedding_parameters(self) -> int:
        """Word, position and token-type embeddings and one layer norm (BERT's after the embeddings, or
        Megatron-BERT's final one: the same size)."""
        h = self.hidden_size
        return (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h + 2 * h

    def parameter_count(self) -> int:
        """The bare encoder's parameters, pooler included: what the engine's ``count_parameters`` measures."""
        h = self.hidden_size
        return self.embedding_parameters() + self.num_hidden_layers * self.layer_parameters() + (h * h + h)

    def pretraining_parameter_count(self) -> int:
        """What pretraining trains: the encoder, the MLM head's transform, layer norm and output bias (its
        decoder weight is tied to the word embeddings) and the two-way sentence-pair head."""
        h = self.hidden_size
        return self.parameter_count() + (h * h + h) + 2 * h + self.vocab_size + (2 * h + 2)

    def root_parameters(self) -> int:
        """Everything outside the layers: one FSDP unit that stays gathered for the whole step."""
        return self.pretraining_parameter_count() - self.num_hidden_layers * self.layer_parameters()

    @property
    def fused_attention(self) -> bool:
        if self.attn_implementation is not None:
            return self.attn_implementation in FUSED_ATTENTION_IMPLEMENTATIONS
        return self.model_type in FUSED_ATTENTION_MODEL_TYPES

    def attention_scores(self, tokens: int) -> int:
        """Scores one head materialises for a sequence of ``tokens`` (0 with fused attention)."""
        s = tokens
        if self.fused_attention:
            return 0
        if self.model_type == "longformer" and self.attention_window:
            return s * min(s, 2 * self.attention_window)
        if self.model_type == "big_bird" and self.sparse_block_size and s > self.big_bird_full_attention_limit:
            block = self.sparse_block_size
            return 2 * block * s + (s - 2 * block) * (5 + self.num_random_blocks) * block
        return s * s

    @property
    def big_bird_full_attention_limit(self) -> int:
        """The longest sequence on which BigBird runs full attention: ``(5 + 2 * r) * block_size``."""
        return (5 + 2 * self.num_random_blocks) * (self.sparse_block_size or 0)


@dataclass(frozen=True)
class Estimate:
    """The bytes one GPU holds for one configuration, the activations given per sequence."""

    parameter_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    working_bytes: int
    activation_bytes_per_sequence: int

    def total(self, micro_batch: int) -> int:
        return self.fixed_bytes + micro_batch * self.activation_bytes_per_sequence

    @property
    def fixed_bytes(self) -> int:
        """Everything but the activations: model states, working copies and the CUDA context."""
        return self.parameter_bytes + self.gradient_bytes + self.optimizer_bytes + self.working_bytes + CONTEXT_BYTES


@dataclass(frozen=True)
class MemoryPlan:
    """How a pretraining run is laid out on its GPUs, with the bytes per GPU that led there."""

    architecture: str
    parameters: int
    block_size: int
    global_batch: int
    gpus_per_node: int
    nodes: int
    gpu_memory_bytes: int
    requested_parallelism: str
    parallelism: str
    activation_checkpointing: bool
    micro_batch: int
    accumulation: int
    parameter_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    working_bytes: int
    activation_bytes_per_sequence: int
    context_bytes: int = CONTEXT_BYTES
    replicated_bytes: int | None = field(default=None)  # the card ddp would need (margin kept), when auto chose fsdp

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def activation_bytes(self) -> int:
        return self.micro_batch * self.activation_bytes_per_sequence

    @property
    def margin_bytes(self) -> int:
        return math.ceil(self.gpu_memory_bytes * SAFETY_MARGIN)

    @property
    def usable_bytes(self) -> int:
        return self.gpu_memory_bytes - self.margin_bytes

    @property
    def total_bytes(self) -> int:
        return (self.parameter_bytes + self.gradient_bytes + self.optimizer_bytes + self.working_bytes
                + self.activation_bytes + self.context_bytes)  # fmt: skip

    def describe(self) -> str:
        """The plan as a person reads it before starting the run."""
        chosen = self.parallelism
        if self.requested_parallelism == "auto":
            why = (
                f"replicated it would need {gib(self.replicated_bytes)} per GPU"
                if self.replicated_bytes is not None
                else "it fits replicated"
            )
            chosen = f"{self.parallelism} (chosen by auto: {why})"
        sharded = f" / {self.ranks} ranks" if self.parallelism == "fsdp" else ""
        working = (
            "bf16 weight copies of autocast and DDP's gradient buckets"
            if self.parallelism == "ddp"
            else "gathered bf16 layers and root, one unit's unsharded gradient"
        )
        nodes = "node" if self.nodes == 1 else "nodes"
        rows = [
            ("parameters", self.parameter_bytes, f"fp32, 4 bytes x {self.parameters:,}{sharded}"),
            ("gradients", self.gradient_bytes, f"fp32{sharded}"),
            ("optimizer states", self.optimizer_bytes, f"AdamW's two fp32 moments{sharded}"),
            ("working copies", self.working_bytes, working),
            ("activations", self.activation_bytes,
             f"{gib(self.activation_bytes_per_sequence)} per sequence x {self.micro_batch}"),
            ("CUDA context", self.context_bytes, "context, cuBLAS/cuDNN workspaces, NCCL buffers"),
        ]  # fmt: skip
        lines = [
            f"Memory plan for {self.architecture} ({billions(self.parameters)} parameters trained), "
            f"{self.block_size}-token sequences, global batch {self.global_batch}",
            f"  {self.ranks} GPU{'s' if self.ranks != 1 else ''} ({self.nodes} {nodes} x {self.gpus_per_node}) of "
            f"{card(self.gpu_memory_bytes)} ({gib(self.gpu_memory_bytes)}); parallelism {chosen}; "
            f"activation checkpointing {'on' if self.activation_checkpointing else 'off'}",
            f"  micro-batch {self.micro_batch} x accumulation {self.accumulation} x {self.ranks} ranks = "
            f"{self.micro_batch * self.accumulation * self.ranks} sequences per optimiser step",
            "  per GPU:",
            *(f"    {label:<17}{gib(value):>11}  {note}" for label, value, note in rows),
            f"    {'total':<17}{gib(self.total_bytes):>11}  of {gib(self.usable_bytes)} usable "
            f"({gib(self.margin_bytes)}, {SAFETY_MARGIN:.0%} of the card, kept free)",
        ]
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Estimating


def activation_bytes_per_sequence(
    dims: ModelDims, tokens: int, *, activation_checkpointing: bool = False, masked_fraction: float = DEFAULT_MASK_RATE
) -> int:
    """Activation bytes one sequence of ``tokens`` costs at the backward pass's peak, under bf16 autocast with
    DDP and FSDP alike (see the module's docstring for each term)."""
    s, h, f, a, v = tokens, dims.hidden_size, dims.intermediate_size, dims.num_attention_heads, dims.vocab_size
    residual = 4  # bytes of the residual stream and of a layer norm's input: fp32 under autocast
    qkv_input = 6  # autocast casts the fp32 input once for each of the three projections
    score = 7  # softmax's fp32 output, the dropout mask, the bf16 copy the product with V keeps
    per_token = qkv_input + 4 + 2 + 2 + 1 + 2 + 1 + 2 * residual
    layer = s * h * per_token + 4 * s * f
    if dims.fused_attention:
        layer += a * s * 4  # the kernel's log-sum-exp, fp32
    else:
        layer += a * score * dims.attention_scores(s)
    if dims.model_type == "big_bird" and dims.attention_scores(s) != s * s:
        layer += 2 * 2 * (3 + dims.num_random_blocks) * s * h  # gathered bf16 keys and values of band and random blocks
    embeddings = s * h * (residual + 1) + 2 * s * s
    masked = math.ceil(masked_fraction * s)
    head = masked * (h * (2 + 2 + residual + 2) + 10 * v)
    if activation_checkpointing:  # each layer's input, and the one layer being recomputed
        stored = dims.num_hidden_layers * residual * s * h + layer
    else:
        stored = dims.num_hidden_layers * layer
    return stored + embeddings + head + layer  # + one layer's activation gradients in the backward


def estimate(
    dims: ModelDims, tokens: int, parallelism: str, ranks: int, *, activation_checkpointing: bool = False,
    masked_fraction: float = DEFAULT_MASK_RATE,
) -> Estimate:  # fmt: skip
    """The bytes per GPU of ``parallelism`` over ``ranks`` GPUs (see the module's docstring for each term)."""
    p = dims.pretraining_parameter_count()
    if parallelism == "ddp":
        states = (4 * p, 4 * p, 8 * p)
        working = 2 * p + 4 * p  # autocast's bf16 weight copies, DDP's gradient buckets
    elif parallelism == "fsdp":
        states = (math.ceil(4 * p / ranks), math.ceil(4 * p / ranks), math.ceil(8 * p / ranks))
        layer, root = dims.layer_parameters(), dims.root_parameters()
        working = 2 * root + 2 * 2 * layer + (2 + 4) * max(layer, root)
    else:
        raise ValueError(f"parallelism {parallelism!r}: expected ddp or fsdp")
    per_sequence = activation_bytes_per_sequence(
        dims, tokens, activation_checkpointing=activation_checkpointing, masked_fraction=masked_fraction
    )
    return Estimate(*states, working, per_sequence)


def usable_bytes(gpu_memory_bytes: int) -> int:
    """The share of a card a plan may fill: all of it but the safety margin."""
    return gpu_memory_bytes - math.ceil(gpu_memory_bytes * SAFETY_MARGIN)


def needed_card_bytes(total_bytes: int) -> int:
    """The smallest card on which ``total_bytes`` fit with the safety margin kept free."""
    return math.ceil(total_bytes / (1 - SAFETY_MARGIN))


def fits(dims: ModelDims, tokens: int, parallelism: str, ranks: int, gpu_memory_bytes: int, **options: Any) -> bool:
    """Whether one sequence per GPU fits: the least a run needs."""
    return estimate(dims, tokens, parallelism, ranks, **options).total(1) <= usable_bytes(gpu_memory_bytes)


def minimum_fsdp_ranks(dims: ModelDims, tokens: int, gpu_memory_bytes: int, *, limit: int = 1 << 20,
                       **options: Any) -> int | None:  # fmt: skip
    """The fewest GPUs over which FSDP fits one sequence per GPU; None when no number of GPUs is enough
    (what stays unsharded, the layers being computed and the activations, exceeds the card alone)."""
    if not fits(dims, tokens, "fsdp", limit, gpu_memory_bytes, **options):
        return None
    low, high = 1, limit  # fits() only gets truer with more ranks: bisect
    while low < high:
        middle = (low + high) // 2
        if fits(dims, tokens, "fsdp", middle, gpu_memory_bytes, **options):
            high = middle
        else:
            low = middle + 1
    return low


def choose_micro_batch(share: int, largest: int) -> int:
    """The micro-batch for a rank's ``share`` of the global batch when at most ``largest`` sequences fit.

    The whole share when it fits: accumulating would only slow the step. Otherwise a divisor of the
    share, so every accumulation step runs the same number of sequences and the step's gradients are
    exactly those of the global batch: the largest power of two among those that fit, as the papers'
    batches are, so the same micro-batch stays valid when the GPU count doubles or halves. A share
    with no power of two above 1 among its fitting divisors (an odd one) takes its largest fitting divisor.
    """
    if share <= largest:
        return share
    fitting = [d for d in range(1, min(share, largest) + 1) if share % d == 0]
    best_power = max(d for d in fitting if d & (d - 1) == 0)
    return best_power if best_power > 1 else max(fitting)


def plan_memory(
    dims: ModelDims, *, block_size: int, global_batch: int, gpus_per_node: int, nodes: int = 1,
    parallelism: str = "auto", gpu_memory_bytes: int, activation_checkpointing: bool = False,
    masked_fraction: float = DEFAULT_MASK_RATE,
) -> MemoryPlan:  # fmt: skip
    """Lay a run out on ``nodes`` x ``gpus_per_node`` GPUs of ``gpu_memory_bytes``, or refuse it in one sentence.

    ``auto`` replicates (DDP: no communication inside the step but the gradients' all-reduce) when that
    fits one sequence per GPU, and shards (FSDP) otherwise. The micro-batch is the largest that fits
    (:func:`choose_micro_batch`), and the accumulation makes micro-batch x accumulation x ranks the
    global batch exactly, so the run optimises the recipe's batch at any GPU count.
    """
    _check_inputs(block_size, global_batch, gpus_per_node, nodes, parallelism, gpu_memory_bytes)
    ranks = gpus_per_node * nodes
    if global_batch % ranks:
        raise PlanRefused(
            f"a global batch of {global_batch} sequences does not divide among {ranks} GPUs ({nodes} node"
            f"{'s' if nodes != 1 else ''} x {gpus_per_node}): give a batch_size that is a multiple of {ranks} "
            f"or a GPU count that divides {global_batch}"
        )
    options = {"activation_checkpointing": activation_checkpointing, "masked_fraction": masked_fraction}
    usable = usable_bytes(gpu_memory_bytes)
    subject = f"{dims.label} ({billions(dims.pretraining_parameter_count())} parameters) at {block_size} tokens"
    replicated = estimate(dims, block_size, "ddp", ranks, **options)
    chosen = parallelism
    if parallelism == "auto":
        chosen = "ddp" if replicated.total(1) <= usable else "fsdp"
    if chosen == "ddp" and replicated.total(1) > usable:
        raise PlanRefused(_replicated_refusal(dims, subject, block_size, ranks, gpu_memory_bytes, replicated, options))
    result = replicated if chosen == "ddp" else estimate(dims, block_size, "fsdp", ranks, **options)
    if result.total(1) > usable:
        raise PlanRefused(_sharded_refusal(dims, subject, block_size, global_batch, gpu_memory_bytes, options))
    share = global_batch // ranks
    micro = choose_micro_batch(share, (usable - result.fixed_bytes) // result.activation_bytes_per_sequence)
    return MemoryPlan(
        architecture=dims.label, parameters=dims.pretraining_parameter_count(), block_size=block_size,
        global_batch=global_batch, gpus_per_node=gpus_per_node, nodes=nodes, gpu_memory_bytes=gpu_memory_bytes,
        requested_parallelism=parallelism, parallelism=chosen, activation_checkpointing=activation_checkpointing,
        micro_batch=micro, accumulation=share // micro, parameter_bytes=result.parameter_bytes,
        gradient_bytes=result.gradient_bytes, optimizer_bytes=result.optimizer_bytes,
        working_bytes=result.working_bytes, activation_bytes_per_sequence=result.activation_bytes_per_sequence,
        replicated_bytes=needed_card_bytes(replicated.total(1)) if parallelism == "auto" and chosen == "fsdp" else None,
    )  # fmt: skip


def _check_inputs(block_size: int, global_batch: int, gpus_per_node: int, nodes: int, parallelism: str,
                  gpu_memory_bytes: int) -> None:  # fmt: skip
    if parallelism not in PARALLELISMS:
        raise ValueError(f"parallelism {parallelism!r}: expected one of {', '.join(PARALLELISMS)}")
    checked = {"block size": block_size, "global batch": global_batch, "GPUs per node": gpus_per_node,
               "nodes": nodes, "GPU memory": gpu_memory_bytes}  # fmt: skip
    for name, value in checked.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")


def _replicated_refusal(dims: ModelDims, subject: str, tokens: int, ranks: int, memory: int, replicated: Estimate,
                        options: dict) -> str:  # fmt: skip
    needs = gib(needed_card_bytes(replicated.total(1)))
    head = f"{subject} does not fit replicated on a{an(card(memory))} {card(memory)} GPU (needs {needs} per GPU)"
    if not options["activation_checkpointing"] and fits(dims, tokens, "ddp", ranks, memory,
                                                        **{**options, "activation_checkpointing": True}):  # fmt: skip
        return f"{head}: needs activation_checkpointing (or fsdp)"
    if fits(dims, tokens, "fsdp", ranks, memory, **options):
        return f"{head}: needs fsdp"
    minimum = minimum_fsdp_ranks(dims, tokens, memory, **options)
    if minimum is None:
        return f"{head}: needs fsdp and GPUs with more memory"
    return f"{head}: needs fsdp on at least {minimum} GPUs of {card(memory)}"


def _sharded_refusal(dims: ModelDims, subject: str, tokens: int, global_batch: int, memory: int,
                     options: dict) -> str:  # fmt: skip
    minimum = minimum_fsdp_ranks(dims, tokens, memory, **options)
    if minimum is None:
        sharded = estimate(dims, tokens, "fsdp", 1 << 20, **options)
        needs = gib(needed_card_bytes(sharded.total(1)))
        fix = "more memory or a shorter block_size"
        if not options["activation_checkpointing"]:
            with_checkpointing = {**options, "activation_checkpointing": True}
            if minimum_fsdp_ranks(dims, tokens, memory, **with_checkpointing) is not None:
                fix = "activation_checkpointing"
        return (f"{subject} does not fit on a{an(card(memory))} {card(memory)} GPU even fully sharded (the unsharded "
                f"layers and one sequence's activations need {needs} per GPU): needs {fix}")  # fmt: skip
    divisors = (n for n in range(minimum, global_batch + 1) if global_batch % n == 0)
    divides = next(divisors, 0)  # the fewest GPUs from the minimum up that also split the batch evenly
    tail = ""
    if divides != minimum:
        tail = (f" ({divides} to divide the global batch of {global_batch})" if divides
                else f" (and a global batch of at least {minimum} sequences)")  # fmt: skip
    return f"{subject} needs at least {minimum} GPUs of {card(memory)} with fsdp{tail}"


# ---------------------------------------------------------------------------
# Models and recipes from the plugins


def model_dims(
    architecture: str, overrides: Mapping[str, object] | None = None, *, contributions: Any = None,
    load_entrypoints: bool = True,
) -> ModelDims:  # fmt: skip
    """The :class:`ModelDims` of ``"SLUG[:PRESET]"`` as the plugins contribute it, ``overrides`` applied last.

    Read from the plugins' presets (plain config keyword arguments), with :data:`FAMILY_DEFAULTS` for the
    keys a preset leaves out, as the engine's ``build_config`` gets them from transformers' config class.
    """
    from biolm.plugins import collect_contributions, get_plugin_manager

    slug, _, preset = architecture.strip().partition(":")
    preset = preset or DEFAULT_PRESET
    if contributions is None:
        contributions = collect_contributions(get_plugin_manager(load_entrypoints=load_entrypoints))
    spec = contributions.architectures.get(slug)
    if spec is None:
        known = ", ".join(sorted(contributions.architectures)) or "none"
        raise ValueError(f"unknown architecture {slug!r}; known architectures: {known}")
    if preset not in spec.presets:
        raise ValueError(f"architecture {slug!r} has no preset {preset!r}; its presets: {', '.join(spec.presets)}")
    defaults = FAMILY_DEFAULTS.get(spec.model_type)
    if defaults is None:
        raise ValueError(
            f"{slug}:{preset}: the memory plan has no model of {spec.model_type!r} encoders "
            f"(it knows {', '.join(sorted(FAMILY_DEFAULTS))})"
        )
    config = {**defaults, **spec.presets[preset], **(overrides or {})}
    return dims_from_config(config, spec.model_type, f"{slug}:{preset}")


def dims_from_config(config: Mapping[str, Any], model_type: str, name: str = "") -> ModelDims:
    """The :class:`ModelDims` of a config's keyword arguments (a preset's, or a built model's ``to_dict()``)."""
    window = config.get("attention_window")
    if isinstance(window, list | tuple):
        window = max(window)  # per-layer windows: the widest decides the peak
    sparse = model_type == "big_bird" and config.get("attention_type") == "block_sparse"
    return ModelDims(
        vocab_size=int(config["vocab_size"]), hidden_size=int(config["hidden_size"]),
        num_hidden_layers=int(config["num_hidden_layers"]), intermediate_size=int(config["intermediate_size"]),
        max_position_embeddings=int(config["max_position_embeddings"]),
        type_vocab_size=int(config["type_vocab_size"]), num_attention_heads=int(config["num_attention_heads"]),
        model_type=model_type, attention_window=int(window) if window else None,
        sparse_block_size=int(config["block_size"]) if sparse else None,
        num_random_blocks=int(config.get("num_random_blocks", 0)) if sparse else 0,
        attn_implementation=config.get("attn_implementation") or config.get("_attn_implementation"), name=name,
    )  # fmt: skip


def recipe_dims(
    recipe_settings: Mapping[str, Any], architecture: str | None = None, *, contributions: Any = None,
    load_entrypoints: bool = True,
) -> ModelDims:  # fmt: skip
    """The model a recipe's settings build, as ``workers/engine/pretrain/run.py`` builds it (see plan_for_recipe)."""
    settings = dict(recipe_settings)
    block_size = int(settings.get("block_size", DEFAULT_BLOCK_SIZE))
    overrides = dict(settings.get("config", {}))
    if not settings.get("continual"):
        overrides["vocab_size"] = int(settings.get("vocab_size", DEFAULT_LEARNED_VOCABULARY))
        overrides["max_position_embeddings"] = max(block_size, 128) + 2
    return model_dims(
        str(architecture or settings.get("architecture", DEFAULT_ARCHITECTURE)), overrides,
        contributions=contributions, load_entrypoints=load_entrypoints,
    )  # fmt: skip


def plan_for_recipe(
    recipe_settings: Mapping[str, Any], architecture: str | None, gpus_per_node: int, nodes: int,
    parallelism: str | None, gpu_memory_bytes: int, *, activation_checkpointing: bool | None = None,
    contributions: Any = None, load_entrypoints: bool = True,
) -> MemoryPlan:  # fmt: skip
    """Plan a recipe's run as ``workers/engine/pretrain/run.py`` would build it from the same settings.

    ``architecture`` (None: the recipe's), ``parallelism`` and ``activation_checkpointing`` (None: the
    recipe's, else ``auto`` and off) override the settings. As in the engine, a model pretrained from
    scratch gets the learned vocabulary's size (``vocab_size``) and ``max(block_size, 128) + 2``
    positions over its preset and the recipe's ``config``; a continual recipe keeps its checkpoint's,
    here the named preset's. The recipe's ``accumulation`` is replaced by the plan's.
    """
    settings = dict(recipe_settings)
    block_size = int(settings.get("block_size", DEFAULT_BLOCK_SIZE))
    dims = recipe_dims(settings, architecture, contributions=contributions, load_entrypoints=load_entrypoints)
    return plan_memory(
        dims, block_size=block_size, global_batch=int(settings.get("batch_size", DEFAULT_BATCH_SIZE)),
        gpus_per_node=gpus_per_node, nodes=nodes,
        parallelism=str(parallelism or settings.get("parallelism", "auto")), gpu_memory_bytes=gpu_memory_bytes,
        activation_checkpointing=bool(
            settings.get("activation_checkpointing", False) if activation_checkpointing is None
            else activation_checkpointing
        ),
        masked_fraction=float(settings.get("mask_rate", DEFAULT_MASK_RATE)),
    )  # fmt: skip


# ---------------------------------------------------------------------------
# Sizes as people write them

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_memory(text: str) -> int:
    """Bytes from ``"80GB"`` (10^9 bytes a GB, as cards are sold), ``"80GiB"`` (2^30) or a plain byte count.

    Raises ValueError saying what was expected.
    """
    match = _SIZE.match(str(text))
    unit = match and _UNITS.get(match.group(2).lower())
    if not match or unit is None:
        raise ValueError(f"{text!r} is not a memory size: expected e.g. 80GB, 141GB, 80GiB or a number of bytes")
    value = round(float(match.group(1)) * unit)
    if value < 1:
        raise ValueError(f"{text!r} is not a memory size: it must be more than 0 bytes")
    return value


def gib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**30:.1f} GiB"


def card(value: int) -> str:
    """A card's memory as it is sold (``80 GB``), or in GiB where it is not a whole number of GB."""
    if value % 10**9 == 0:
        return f"{value // 10**9} GB"
    if value % 2**30 == 0:
        return f"{value // 2**30} GiB"
    return gib(value)


def an(word: str) -> str:
    """``"n"`` when ``a`` + ``word`` reads ``an``: an 80 GB GPU, an 8 GB GPU, an 11 GB GPU, a 141 GB GPU."""
    digits = word.split(" ")[0].split(".")[0]
    eleven_or_eighteen = len(digits) % 3 == 2 and digits[:2] in ("11", "18")  # eleven, eighteen (thousand...)
    return "n" if digits.startswith("8") or eleven_or_eighteen else ""


def billions(count: int) -> str:
    if count >= 10**9:
        return f"{count / 10**9:.2f} billion"
    if count >= 10**6:
        return f"{count / 10**6:.1f} million"
    return f"{count:,}"
