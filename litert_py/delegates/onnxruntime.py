"""The ONNX Runtime delegate: each claimed partition runs as one ``onnxruntime.InferenceSession``.

    from litert_py import Interpreter, load_delegate
    it = Interpreter(model_path="model.tflite", experimental_delegates=[load_delegate("onnxruntime")])

Options (``load_delegate("onnxruntime", {...})``):

- ``providers``: ONNX Runtime execution providers, in order (default ``["CPUExecutionProvider"]``; e.g.
  ``["CUDAExecutionProvider", "CPUExecutionProvider"]`` on a GPU machine).
- ``num_threads``: intra-op threads of each session (default: the Interpreter's ``num_threads``).
- ``min_nodes``: the smallest partition to claim (default 1).
- ``graph_optimization_level``: 0 (disable), 1 (basic), 2 (extended), 99 (all, default).
- ``allow_inexact_quantized``: also claim int8/uint8 nodes (default False: they stay on litert_py's bit-exact
  kernels). They run as float ops between QuantizeLinear/DequantizeLinear pairs (onnx_quant), which round
  differently from LiteRT's fixed-point kernels: outputs differ by a few quantization steps.

Claimed: float32 nodes of the ops in :mod:`litert_py.delegates.onnx_lowering` whose weights, shapes, axes and
paddings are constants. Needs the ``onnxruntime`` extra (``pip install litert-py[onnxruntime]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import Delegate

EXTRA_HINT = "the ONNX Runtime delegate needs onnxruntime and onnx: pip install 'litert-py[onnxruntime]'"


def _import_backends():
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as e:
        err = ImportError(f"{EXTRA_HINT} ({e})")
        err.litert_py_extra = "onnxruntime"
        raise err from e
    return onnxruntime


@dataclass(frozen=True, eq=False)
class OrtPartition:
    """The prepared op of one partition: feeds its non-constant inputs, copies the session's outputs."""

    session: object
    feed_names: tuple[str, ...]
    feed_positions: tuple[int, ...]  # positions in the partition's inputs
    output_names: tuple[str, ...]

    def __call__(self, inputs, outputs) -> None:
        feeds = {n: inputs[k] for n, k in zip(self.feed_names, self.feed_positions)}
        results = self.session.run(self.output_names, feeds)
        for dst, src in zip(outputs, results):
            np.copyto(dst, src, casting="no")


class OnnxRuntimeDelegate(Delegate):
    name = "OnnxRuntimeDelegate"

    def __init__(self, options: dict | None = None):
        super().__init__(options)
        self._ort = _import_backends()
        known = {"providers", "num_threads", "min_nodes", "graph_optimization_level", "allow_inexact_quantized"}
        unknown = set(self.options) - known
        if unknown:
            raise ValueError(f"unknown onnxruntime delegate options: {sorted(unknown)} (known: {sorted(known)})")
        self.providers = list(self.options.get("providers") or ["CPUExecutionProvider"])
        available = set(self._ort.get_available_providers())
        missing = [p for p in self.providers if p not in available]
        if missing:
            raise ValueError(f"onnxruntime providers {missing} are not available here (available: {sorted(available)})")
        self.min_nodes = int(self.options.get("min_nodes", 1))
        self.allow_inexact_quantized = bool(self.options.get("allow_inexact_quantized", False))
        self.num_threads = self.options.get("num_threads")
        self.optimization_level = int(self.options.get("graph_optimization_level", 99))
        self.sessions_built = 0

    def supports(self, node, ctx) -> bool:
        from .onnx_lowering import lowerable
        from .onnx_quant import float_context, quantized_supported

        if lowerable(node, ctx):
            return True
        return self.allow_inexact_quantized and quantized_supported(node, ctx) and lowerable(node, float_context(ctx))

    def prepare(self, partition):
        from .onnx_quant import float_view, is_quantized

        partition.infer_shapes()  # litert_py's prepare of each node: checks and every inner shape
        for o in partition.outputs:
            if partition.tensors[o].dynamic:
                raise ValueError(f"tensor {o} has a value-dependent shape")
        float_tensors = None
        if any(is_quantized(t) for t in partition.tensors.values()):
            float_tensors = {i: float_view(t) for i, t in partition.tensors.items()}
        tensors = float_tensors or partition.tensors
        lower_nodes = [(n, partition.context(n, tensors)) for n in partition.nodes]
        model, feeds, output_names = build_model(partition, lower_nodes, float_tensors)
        ort = self._ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(self.num_threads or partition.num_threads or 1)
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        levels = {
            0: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            2: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            99: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }
        so.graph_optimization_level = levels.get(self.optimization_level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        session = ort.InferenceSession(model.SerializeToString(), sess_options=so, providers=self.providers)
        self.sessions_built += 1
        positions = {t: k for k, t in enumerate(partition.inputs)}
        return OrtPartition(
            session, tuple(n for n, _ in feeds), tuple(positions[i] for _, i in feeds), tuple(output_names)
        )


def _qparams(g, info) -> list[str]:
    return [g.const(np.float32(info.scale), "s"), g.const(np.array(info.zero_point, info.dtype), "z")]


def build_model(part, lower_nodes, float_tensors=None):
    """The ONNX ModelProto of a partition: graph inputs are its non-constant inputs, outputs its outputs.

    ``float_tensors``: for a partition with quantized (int8/uint8) tensors, their float views
    (onnx_quant.float_view); the graph then reads quantized inputs through DequantizeLinear and requantizes every
    quantized node output with a QuantizeLinear / DequantizeLinear pair (ONNX Runtime's QDQ form)."""
    from onnx import TensorProto, helper

    from .onnx_lowering import LOWERINGS, OPSET, GraphBuilder
    from .onnx_quant import is_quantized

    g = GraphBuilder(float_tensors or part.tensors)
    quantized = {i for i, t in part.tensors.items() if is_quantized(t) and t.data is None}
    for i in part.inputs:
        if i in quantized:
            g.node("DequantizeLinear", [f"q{i}", *_qparams(g, part.tensors[i])], f"t{i}")
    for node, ctx in lower_nodes:
        outs = [o for o in node.operator.outputs if o in quantized]
        for o in outs:
            g.alias[o] = g.fresh("pre")
        LOWERINGS[node.code.builtin_code](g, node, ctx)
        for o in outs:
            pre = g.alias.pop(o)
            q = g.node("QuantizeLinear", [pre, *_qparams(g, part.tensors[o])], f"q{o}")
            g.node("DequantizeLinear", [q, *_qparams(g, part.tensors[o])], f"t{o}")

    def value_info(i):
        info = part.tensors[i]
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype))
        name = f"q{i}" if i in quantized else f"t{i}"
        return helper.make_tensor_value_info(name, elem if elem else TensorProto.FLOAT, list(info.shape))

    feeds = [i for i in part.inputs if part.tensors[i].data is None]
    graph = helper.make_graph(
        g.nodes,
        "litert_py_partition",
        [value_info(i) for i in feeds],
        [value_info(o) for o in part.outputs],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="litert_py")
    model.ir_version = 8
    return (
        model,
        [(f"q{i}" if i in quantized else f"t{i}", i) for i in feeds],
        [f"q{o}" if o in quantized else f"t{o}" for o in part.outputs],
    )


def create_delegate(options: dict | None = None) -> OnnxRuntimeDelegate:
    """Entry point of the ``litert_py.delegates`` group (``load_delegate("onnxruntime", options)``)."""
    return OnnxRuntimeDelegate(options)
