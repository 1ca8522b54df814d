"""Delegates: a backend claims parts of a graph and runs each claimed part as one node.

The flow mirrors TFLite's (tensorflow/lite/core/subgraph.cc ``ModifyGraphWithDelegate``, delegates/utils.cc):

1. For every node of every subgraph the runtime asks ``delegate.supports(node, ctx)``: ``node`` has ``index``,
   ``name`` (``"CONV_2D"``, or a custom op's name), ``code`` (builtin code, version) and ``operator``; ``ctx`` is
   the :class:`~litert_py.ops.registry.OpContext` a kernel's prepare sees (options, input/output
   ``TensorInfo`` with shapes, dtypes, quantization and constant data). Nodes whose inputs are all constant
   (e.g. a float16 weight's DEQUANTIZE) are folded by the runtime and never asked about; their outputs reach
   ``supports`` as constants. A node of constants that fails its kernel's value check (a zero divisor, a
   negative int32 exponent: ``checks_values_at_eval``) is not folded, as it fails at invoke, and is asked about;
   the node of a partition is never folded: the delegate's op runs at invoke, even on constant inputs.
2. The runtime splits the supported nodes into partitions that create no cycle (litert_py.runtime.partition),
   drops partitions with fewer than ``delegate.min_nodes`` nodes, and replaces each by one node.
3. At ``allocate_tensors`` (and again after a resize) that node's prepare calls ``delegate.prepare(partition)``
   with a :class:`Partition`; the delegate returns a prepared op, ``op(inputs, outputs)``, with the same
   contract as a kernel's (one array per partition input, preallocated outputs filled in place). If it raises,
   the partition falls back to litert_py's own kernels with a warning.

Delegates in ``experimental_delegates=[...]`` are applied in order; a later one sees only the nodes earlier
ones left. Delegation happens before the unsupported-op check, so a delegate can supply ops (or custom ops)
litert_py has no kernel for.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Short names ``load_delegate`` knows without an installed entry point (entry points may add more).
BUILTIN_DELEGATES = {"onnxruntime": "litert_py.delegates.onnxruntime:create_delegate"}
ENTRY_POINT_GROUP = "litert_py.delegates"


class Delegate:
    """Base class of partitioning delegates. Override ``supports`` and ``prepare``.

    ``name`` names the delegate's nodes in error messages (as ``TfLiteXNNPackDelegate`` does in LiteRT);
    ``min_nodes`` is the smallest partition worth claiming.
    """

    name = "PythonDelegate"
    min_nodes = 1

    def __init__(self, options: dict | None = None):
        self.options = dict(options or {})

    def supports(self, node, ctx) -> bool:
        """Whether this delegate runs ``node`` (see the module docstring for what node and ctx hold)."""
        return False

    def prepare(self, partition: Partition):
        """A prepared op running the whole ``partition``; raise to let litert_py's kernels run it instead."""
        raise NotImplementedError(f"{type(self).__name__} does not implement prepare()")


class Partition:
    """One claimed part of a graph, as ``Delegate.prepare`` sees it.

    ``nodes``: the claimed nodes in an execution order; ``inputs`` / ``outputs``: tensor indices of the
    partition's node (inputs include constants, as TFLite's delegate node does); ``tensors``: index ->
    TensorInfo for every tensor the nodes touch (inputs carry their current shapes and constant data; the
    delegate must leave the output infos with their shapes set, e.g. through :meth:`infer_shapes`).
    """

    def __init__(
        self, runtime, nodes: list, inputs: list[int], outputs: list[int], tensors: dict, num_threads: int = 1
    ):
        self._runtime = runtime
        self.nodes = nodes
        self.inputs = inputs
        self.outputs = outputs
        self.tensors = tensors
        self.num_threads = num_threads
        self.subgraph_index = runtime.index

    def context(self, node, tensors: dict | None = None):
        """The OpContext of ``node`` over this partition's tensors (or over ``tensors``, e.g. float views)."""
        return self._runtime._context(node, self.tensors if tensors is None else tensors)

    def infer_shapes(self) -> list[Any]:
        """Run litert_py's own prepare of every node in order, setting the shapes of every tensor of the
        partition; returns the prepared ops. Raises PrepareError for a node litert_py has no kernel for."""
        from ..errors import PrepareError

        ops = []
        for node in self.nodes:
            if node.kernel is None:
                raise PrepareError(f"{node.name} (node {node.index}) has no litert_py kernel to infer its shapes")
            ops.append(self._runtime._prepare_node(node, self.tensors))
        return ops


def _resolve_target(target: str):
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr or "create_delegate")


def _entry_point(name: str):
    from importlib import metadata

    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:  # Python < 3.10
        eps = metadata.entry_points().get(ENTRY_POINT_GROUP, [])
    for ep in eps:
        if ep.name == name:
            return ep
    return None


def load_delegate(library, options=None) -> Delegate:
    """Load a delegate by short name (entry point group ``litert_py.delegates``, e.g. ``"onnxruntime"``) or by
    import path (``"pkg.module"`` defining ``create_delegate(options)``, or ``"pkg.module:factory"``).

    tf.lite loads a shared library here; a load failure raises ValueError as tf.lite's does, except a
    missing optional dependency, which raises its ImportError (naming the extra to install).
    """
    name = str(library)
    options = dict(options or {})
    try:
        ep = _entry_point(name)
        if ep is not None:
            factory = ep.load()
        elif name in BUILTIN_DELEGATES:
            factory = _resolve_target(BUILTIN_DELEGATES[name])
        else:
            factory = _resolve_target(name)
        return factory(options)
    except ImportError as e:
        if getattr(e, "litert_py_extra", None):
            raise
        raise ValueError(f"Failed to load delegate from {library}\n{e}") from None
    except Exception as e:
        raise ValueError(f"Failed to load delegate from {library}\n{e}") from None
