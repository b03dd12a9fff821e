"""Data parallelism and sharding on torch's own engines: ``DistributedDataParallel`` and FSDP2 (``fully_shard``).

biolm writes no gradient exchange of its own. A step's loss is a *sum* over the step's rows divided by
the whole step's masked (and real) token counts, so the gradient of one big batch is the *sum* of the
ranks' gradients, not their mean. DDP gets a communication hook that all-reduces without dividing
(:func:`sum_all_reduce_hook`); FSDP2 gets a gradient divide factor of 1. So 1, 2 or 64 processes give
the same weights, up to the order of floating-point additions.

* ``ddp``: weights, gradients and AdamW's states replicated (fp32, about 16 bytes a parameter), bucketed
  gradient all-reduce overlapped with the backward, and ``no_sync`` on every micro-batch of a step but
  the last, so a step costs one exchange whatever its accumulation.
* ``fsdp``: every encoder layer and the rest of the model (embeddings and head, tied, in the root
  group) sharded over the ranks; parameters gathered in bf16 for the forward and backward, gradients
  reduce-scattered in fp32 (``MixedPrecisionPolicy``), AdamW on the shards. Each micro-batch's
  gradients are reduce-scattered into the sharded gradients as they come: accumulating them unsharded
  would hold a full gradient per rank, the memory FSDP exists to save.
* ``auto``: the memory plan's choice (:mod:`biolm.memory_plan`), FSDP when the replicated run does not fit.

Both wrap :class:`StepModule`, whose forward is a micro-batch's whole loss (the model and a
distillation projection inside it), so the engines' hooks see every pass the objective makes (ALUM's
three, distillation's teacher beside the student) as one forward.

Only rank 0 draws a fresh model's weights. Every other rank builds it on the meta device (shapes, no
memory: :func:`build_context`) and receives rank 0's weights when it is wrapped: from DDP's broadcast at
construction, or, under FSDP, tensor by tensor into its shards (DCP's ``broadcast_from_rank0``), so that no
rank but 0 ever holds the whole model and rank 0's GPU never does. A host of eight GPUs starting a
GatorTron-large (Yang et al. 2022) thus holds one host copy of its fp32 weights (36 GB), not eight, and
every world size starts from the weights one process draws from the seed.
"""

import contextlib
from collections.abc import Callable, Iterator

import torch

from workers.engine.pretrain.mlm import masked_lm_loss

PARALLELISMS = ("ddp", "fsdp", "auto")


class StepModule(torch.nn.Module):
    """One micro-batch's training loss as a module: ``forward(batch, ...)`` is what the step backpropagates.

    ``objective`` (a :class:`~workers.engine.pretrain.distillation.Distillation` or
    :class:`~workers.engine.pretrain.adversarial.Adversarial`, or None for MLM) is held as a plain
    attribute: a teacher is frozen and is no parameter of the step, while a distillation's projection is
    trained and so is registered here, beside the model, in the same optimiser and checkpoint.
    """

    def __init__(self, model: torch.nn.Module, objective=None) -> None:
        super().__init__()
        self.model = model
        projection = getattr(objective, "projection", None)
        if projection is not None:
            self.projection = projection
        self.__dict__["objective"] = objective  # not a submodule: the teacher stays out of the parameters

    def forward(
        self, batch: dict, step: int, masked: int, tokens: int, rows: int, device, dtype, *, heldout: bool = False
    ) -> torch.Tensor:
        """The micro-batch's loss; ``heldout``: its MLM part alone, whatever the objective (held-out loss)."""
        from workers.engine.pretrain.adversarial import Adversarial
        from workers.engine.pretrain.distillation import Distillation

        objective = self.objective
        if heldout:
            return masked_lm_loss(self.model, batch, masked, device, dtype, pair_weight=0.0)
        if isinstance(objective, Distillation):
            return objective.loss(self.model, batch, masked, tokens, device, dtype)
        if isinstance(objective, Adversarial):
            return objective.loss(self.model, batch, step, masked, device, dtype, rows=rows)
        return masked_lm_loss(self.model, batch, masked, device, dtype, rows=rows)


def resolve(parallelism: str, planned: str | None = None) -> str:
    """``ddp`` or ``fsdp``: ``auto`` takes the memory plan's choice, else DDP (which any model that fits runs)."""
    if parallelism not in PARALLELISMS:
        raise ValueError(f"parallelism {parallelism!r}: expected one of {', '.join(PARALLELISMS)}")
    if parallelism == "auto":
        return planned or "ddp"
    return parallelism


def encoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's stack of transformer blocks (``encoder.layer`` in BERT, RoBERTa, Longformer, BigBird and
    Megatron-BERT alike): the units FSDP gathers one at a time and activation checkpointing recomputes."""
    lists = [module for module in model.base_model.modules() if isinstance(module, torch.nn.ModuleList)]
    if not lists:
        raise ValueError(f"{type(model).__name__} has no list of encoder layers to shard")
    return max(lists, key=len)


def builds_empty(rank: int, world: int) -> bool:
    """Whether this rank builds its model without weights, to receive rank 0's (see the module's docstring)."""
    return world > 1 and rank != 0


def build_context(rank: int, world: int) -> contextlib.AbstractContextManager:
    """Where this rank builds a fresh model: on the meta device for every rank of a group but 0 (see the module's
    docstring), else where torch builds by default (the host)."""
    return torch.device("meta") if builds_empty(rank, world) else contextlib.nullcontext()


def place(model: torch.nn.Module, device: torch.device) -> None:
    """``model`` onto ``device``: moved, or, built on the meta device, allocated there empty for rank 0's weights."""
    if not on_meta(model):
        model.to(device)
        return
    model.to_empty(device=device)
    retie(model)


def on_meta(module: torch.nn.Module) -> bool:
    return any(tensor.is_meta for tensor in (*module.parameters(), *module.buffers()))


def retie(module: torch.nn.Module) -> None:
    """Tie the input embeddings and the MLM decoder into one parameter again, as the model was built.

    ``to_empty`` and ``to("meta")`` give every module its own copy of a plain tied tensor; rank 0's model and
    the broadcast assume one (DDP compares the ranks' parameter lists; FSDP must see one parameter to shard).
    """
    for candidate in module.modules():
        if callable(getattr(candidate, "tie_weights", None)) and hasattr(candidate, "config"):
            candidate.tie_weights()
            return


def wrap(
    step_module: StepModule,
    parallelism: str,
    world: int,
    device: torch.device,
    dtype: torch.dtype | None,
    *,
    activation_checkpointing: bool = False,
) -> torch.nn.Module:
    """``step_module`` under DDP or FSDP2 (one process: as it is), with sums, not means, as the reduction."""
    if activation_checkpointing:
        # Non-reentrant: it composes with DDP's hooks and FSDP's, and with the ALUM pass's autograd.grad.
        step_module.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if world == 1:
        return step_module
    if parallelism == "fsdp":
        return _fully_shard(step_module, dtype, device)
    from torch.nn.parallel import DistributedDataParallel

    place(step_module, device)  # a rank but 0's empty parameters: DDP broadcasts rank 0's into them

    ids = [device.index] if device.type == "cuda" else None
    # The buffers (position ids) are the same on every rank: synced once at start, never before a forward.
    ddp = DistributedDataParallel(step_module, device_ids=ids, forward_sync_buffers=False)
    ddp.register_comm_hook(state=None, hook=sum_all_reduce_hook)
    return ddp


def _fully_shard(step_module: StepModule, dtype: torch.dtype | None, device: torch.device) -> torch.nn.Module:
    """Shard ``step_module`` on the meta device, allocate the shards on ``device``, then fill them from rank 0."""
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    source = dist.get_rank() == 0
    # Rank 0's weights stay where they were drawn (the host) until broadcast: its GPU holds only its shards.
    weights = step_module.state_dict() if source else {}
    buffers = dict(step_module.named_buffers()) if source else {}
    step_module.to(torch.device("meta"))
    retie(step_module.model)
    policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32) if dtype else MixedPrecisionPolicy()
    for layer in encoder_layers(step_module.model):
        fully_shard(layer, mp_policy=policy)
    fully_shard(step_module, mp_policy=policy)  # the root: embeddings, the tied head, a projection
    step_module.to_empty(device=device)  # sharded parameters are swapped in place: the tie holds
    _broadcast_from_rank0(step_module, weights, buffers, device)
    _sum_reductions(step_module)
    return step_module


def _broadcast_from_rank0(step_module: torch.nn.Module, weights: dict, buffers: dict, device: torch.device) -> None:
    """Rank 0's parameters, tensor by tensor, into every rank's shards; its buffers (position ids, which no state
    dict holds) whole to every rank."""
    import torch.distributed as dist
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(step_module, weights, options=options)
    for name, buffer in step_module.named_buffers():
        staged = buffers[name] if name in buffers else torch.empty_like(buffer)
        staged = staged.to(collective_device(device))
        dist.broadcast(staged, src=0)
        buffer.copy_(staged)


def _sum_reductions(step_module: torch.nn.Module) -> None:
    """Every FSDP group reduce-scatters a sum of the ranks' gradients (see the module's docstring)."""
    for module in step_module.modules():
        if hasattr(module, "set_gradient_divide_factor"):
            module.set_gradient_divide_factor(1.0)
            # A plain SUM collective (a divide factor of 1 then scales by nothing): NCCL's zero-copy path, and
            # the only reduction gloo has (no PREMUL_SUM), so the same code runs on CPU clusters and in tests.
            module.set_force_sum_reduction_for_comms(True)
    return step_module


def sum_all_reduce_hook(_state, bucket) -> torch.futures.Future[torch.Tensor]:
    """DDP's all-reduce of one gradient bucket, summed instead of averaged (see the module's docstring)."""
    import torch.distributed as dist

    work = dist.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


@contextlib.contextmanager
def gradient_sync(wrapped: torch.nn.Module, last: bool) -> Iterator[None]:
    """Around one micro-batch's forward and backward: DDP exchanges gradients on the step's last only."""
    no_sync: Callable | None = getattr(wrapped, "no_sync", None)
    if no_sync is None or last:
        yield
        return
    with no_sync():
        yield


def all_reduce_sum(values: list[float], device: torch.device, world: int) -> list[float]:
    """``values`` summed over the processes (float64, one small collective): step token counts, held-out sums."""
    if world == 1:
        return list(values)
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64, device=collective_device(device))
    dist.all_reduce(tensor)
    return tensor.tolist()


def collective_device(device: torch.device) -> torch.device:
    """Where a collective's tensors must be: the GPU under NCCL, the host under gloo (which runs on CPUs)."""
    import torch.distributed as dist

    return device if dist.get_backend() == "nccl" else torch.device("cpu")


def is_sharded(wrapped: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(wrapped, FSDPModule)
