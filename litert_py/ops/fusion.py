"""The prepare-time step fusions, in the order they run (docs/architecture.md, "Flow", step 3).

Each pass takes the subgraph's ``(node, prepared op)`` steps and returns them with some steps merged, where the
tensor between them has one reader and is not a subgraph output (its value is then not written, as in LiteRT's
arena). SubgraphRuntime.prepare runs them unless ``experimental_preserve_all_tensors`` is set or a node is deferred.
The order matters: the ring buffers and slice views first (they change which op reads which tensor), the clamp
activations before ``fuse_feeding`` (so FC -> RELU -> FC still links into one chain; it also lets producers store
through a RESHAPE copy that alone reads them, ops/into_reshape.py: the int8 convs and pair tables, the folded FC,
BATCH_MATMUL, one-value lookups), then the sibling LOGISTIC gates, the remaining stores into a RESHAPE's output and
a ring buffer's tail (a copy a producer absorbed earlier no longer reaches fuse_ring_writes: only IntoReshaped
writes into a ring's tail), and the bound chains last (they take whatever steps are left as they are).
"""

from __future__ import annotations

from .activation_fusion import fuse_activations
from .bound_chain import fuse_bound_chains
from .gate_pairs import fuse_logistic_pairs
from .lut_fusion import fuse_table_chains
from .ring_buffer import fuse_ring_buffers, fuse_ring_writes
from .slice_views import fuse_concat_writes, fuse_feeding, fuse_reshape_stores, fuse_sibling_windows, fuse_slice_views


def fuse_steps(steps: list, infos: list, inputs, outputs) -> list:
    """``steps`` with every fusion applied; ``inputs`` / ``outputs``: the subgraph's tensor indices."""
    steps = fuse_ring_buffers(steps, infos, outputs)  # streaming state: one step per group
    steps = fuse_slice_views(steps, infos, outputs)  # slices read as views, copies dropped
    steps = fuse_concat_writes(steps, infos, outputs)  # producers store into the concatenation
    steps = fuse_activations(steps, infos, inputs, outputs)  # RELU-type clamps into their producer
    steps = fuse_table_chains(steps, infos, outputs)  # 8-bit table lookups composed into one (lut_fusion.py)
    steps = fuse_sibling_windows(steps, infos, outputs)  # MixConv's two depthwise kernels as one
    steps = fuse_feeding(steps, infos, outputs)  # values straight into the reader's GEMM rows; chains link up
    steps = fuse_logistic_pairs(steps, infos, outputs)  # sibling arithmetic -> LOGISTIC gates as one (a GRU's)
    steps = fuse_reshape_stores(steps, infos, outputs)  # QUANTIZE, ... into a RESHAPE's output
    steps = fuse_ring_writes(steps, infos, outputs)  # a block's frame into the next ring's tail
    return fuse_bound_chains(steps, infos, inputs, outputs)  # consecutive bound steps as one flat plan


def bind_steps(steps: list) -> None:
    """Let each step offering ``bind(inputs, outputs)`` make its views of the arrays it is bound to (a fused step
    reading or writing part of a tensor), once, when SubgraphRuntime binds the arrays: they stay the step's until
    the next prepare, and a view sees their new values on every invoke. Fused steps exist only in a bound step
    list. An unfused kernel may also run elsewhere (a delegate's fallback chain runs prepared ops on arrays of
    its own): the kernels that offer ``bind`` (ops/bound_plan.BoundCalls) keep the arrays they were bound to and
    are bound to others when called with them (an identity test per call)."""
    for op, ins, outs in steps:
        bind = getattr(op, "bind", None)
        if bind is not None:
            bind(ins, outs)
