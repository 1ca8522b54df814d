"""The straight-line plans made at bind for the streaming steps, against the oracle (ai-edge-litert BUILTIN_REF),
exactly, over several invokes (the ring buffers' state included), with the plans asserted (a test fails when a plan
is no longer taken, and when its code is broken by hand):

- whole_window.run_rows: DepthwiseWholeIntoRows's sign path, or its tap sum with a ReLU-like small epilogue
  (plain or late zero points), then the pointwise conv's ReLU-like small epilogue, SmallFoldedEpilogue and
  SmallLateZeroPointEpilogue (right shifts of about 15 or more with zero point -128);
- slice_views.run_rows_ring: the first conv reading its input ring (ConvQuantizedFoldedRowsRing) or the
  concatenation tensor (ConvQuantizedFoldedRows), stored into the next ring's tail (StoreInto), both epilogues;
- StoreInto's plans for a RESHAPE's copy and QUANTIZE (QuantizeFloatStore.store) storing into the input ring.
"""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.conv.conv2d_quantized import ConvQuantizedFoldedRows, ConvQuantizedFoldedRowsRing
from litert_py.ops.conv.requant import SmallFoldedEpilogue, SmallLateZeroPointEpilogue
from litert_py.ops.conv.whole_window import DepthwiseWholeIntoRows
from litert_py.ops.quantize import QuantizeFloatStore
from litert_py.ops.ring_buffer import in_place_rings
from litert_py.ops.shape import CopyReshaped
from litert_py.ops.slice_views import StoreInto, run_rows_ring
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops.test_streaming_fast import _assert_equal
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE
S_IN, ZP_IN = 0.05, 3
VALID, RELU, NONE = 1, 1, 0


def _q(b: ModelBuilder, name: str, shape, scale: float, zp: int) -> int:
    return b.tensor(name, shape, np.int8, quantization=quant(scale, zp))


def _ring(b: ModelBuilder, name: str, frame: int, rows: int, scale: float, zp: int) -> int:
    """READ_VARIABLE -> CONCATENATION(state, frame) -> STRIDED_SLICE -> ASSIGN_VARIABLE over a (1, rows, 1, 8)
    state of the frame's quantization; returns the concatenation."""
    h = b.tensor(f"{name}_h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
    state = _q(b, f"{name}_state", (1, rows, 1, 8), scale, zp)
    b.op("READ_VARIABLE", [h], [state])
    c = _q(b, f"{name}_c", (1, rows + 1, 1, 8), scale, zp)
    b.op("CONCATENATION", [state, frame], [c], {"axis": 1})
    kept = _q(b, f"{name}_kept", (1, rows, 1, 8), scale, zp)
    ends = [b.const(f"{name}_{n}", np.array(v, np.int32)) for n, v in (("b", [0, 1, 0, 0]), ("e", [1, rows + 1, 1, 8]))]
    b.op("STRIDED_SLICE", [c, *ends, b.const(f"{name}_s", np.ones(4, np.int32))], [kept], {})
    b.op("ASSIGN_VARIABLE", [h, kept], [])
    return c


def _conv(b, rng, x: int, rows: int, in_scale: float, name: str, factor: float, bias: int) -> tuple[int, float]:
    """A per-channel int8 CONV_2D (8 units, ReLU, zero point -128) over the whole (1, rows, 1, 8) window ``x``:
    the output and its scale ``in_scale * factor``."""
    w = rng.integers(-127, 128, (8, rows, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.004, 0.008, 8)
    b_q = b.const(name + "_b", rng.integers(-bias, 3 * bias, 8).astype(np.int32), quantization=quant(in_scale * s_w))
    y = _q(b, name, (1, 1, 1, 8), in_scale * factor, -128)
    opts = {"padding": VALID, "stride_h": 1, "stride_w": 1, "fused_activation_function": RELU}
    b.op("CONV_2D", [x, b.const(name + "_w", w, quantization=quant(s_w, 0, 0)), b_q], [y], opts)
    return y, in_scale * factor


def _depthwise(b, rng, x: int, rows: int, in_scale: float, name: str, block: str) -> tuple[int, float]:
    """A per-channel int8 DEPTHWISE_CONV_2D over the whole window: the output and its scale. ``block``: "signed"
    (linear: its epilogue takes the sign path), "relu" (ReLU, zero point -128), "relu_late" (the same with a
    scale making right shifts of about 15: the late zero points)."""
    w = rng.integers(-127, 128, (1, rows, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.02, 8)
    b_q = b.const(name + "_b", rng.integers(-3000, 3000, 8).astype(np.int32), quantization=quant(in_scale * s_w))
    scale = in_scale * (400.0 if block == "relu_late" else 2.0)
    y = _q(b, name, (1, 1, 1, 8), scale, 5 if block == "signed" else -128)
    act = NONE if block == "signed" else RELU
    opts = {"padding": VALID, "stride_h": 1, "stride_w": 1, "depth_multiplier": 1, "fused_activation_function": act}
    b.op("DEPTHWISE_CONV_2D", [x, b.const(name + "_w", w, quantization=quant(s_w, 0, 3)), b_q], [y], opts)
    return y, scale


def _stream_model(late: bool, first: str, block: str) -> bytes:
    """Input ring r0 (4 rows) -> a whole-window CONV_2D (5x1) into ring r1 (6 rows) -> a linear whole-window
    depthwise and a pointwise conv into ring r2 (2 rows) -> another such block, the output. Every conv has ReLU
    and zero point -128; ``late``: their output scales (300x their input's) make right shifts of about 15 (the
    late zero points, SmallLateZeroPointEpilogue; large biases keep several output levels). ``first``:
    "reshape" (a (1, 8) int8 input RESHAPEd), "quantize" (a (1, 8) float input QUANTIZEd and RESHAPEd) or
    "frame" (a (1, 1, 1, 8) int8 input: ring r0 concatenates it, the conv reads the concatenation tensor);
    ``block``: the depthwise kernels' kind (``_depthwise``)."""
    rng = np.random.default_rng(31)
    factor, bias = (300.0, 400000) if late else (6.0, 3000)
    b = ModelBuilder()
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    if first == "frame":
        x = b.input("x", (1, 1, 1, 8), np.int8, quantization=quant(S_IN, ZP_IN))
    else:
        if first == "quantize":
            x0 = _q(b, "xq", (1, 8), S_IN, ZP_IN)
            b.op("QUANTIZE", [b.input("x", (1, 8), np.float32)], [x0])
        else:
            x0 = b.input("x", (1, 8), np.int8, quantization=quant(S_IN, ZP_IN))
        x = _q(b, "x4", (1, 1, 1, 8), S_IN, ZP_IN)
        b.op("RESHAPE", [x0, b.const("shape", np.array([1, 1, 1, 8], np.int32))], [x], {})
    f, s1 = _conv(b, rng, _ring(b, "r0", x, 4, S_IN, ZP_IN), 5, S_IN, "f", factor, bias)
    d1, t1 = _depthwise(b, rng, _ring(b, "r1", f, 6, s1, -128), 7, s1, "d1", block)
    g, s2 = _conv(b, rng, d1, 1, t1, "g", factor, bias)
    d2, t2 = _depthwise(b, rng, _ring(b, "r2", g, 2, s2, -128), 3, s2, "d2", block)
    b.output(_conv(b, rng, d2, 1, t2, "y", factor, bias)[0])
    b.subgraph("init")
    for name, rows, scale, zp in (("r0", 4, S_IN, ZP_IN), ("r1", 6, s1, -128), ("r2", 2, s2, -128)):
        h = b.tensor(f"{name}_h", (), None, tensor_type=RESOURCE)
        init = b.const(
            f"{name}_init", rng.integers(-128, 128, (1, rows, 1, 8)).astype(np.int8), quantization=quant(scale, zp)
        )
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
        b.op("ASSIGN_VARIABLE", [h, init], [])
    return b.build()


def _feeds(first: str, n: int = 15) -> list:
    rng = np.random.default_rng(5)
    if first == "quantize":
        feeds = [[(rng.standard_normal((1, 8)) * 4).astype(np.float32)] for _ in range(n)]
        feeds[3][0][0, :4] = [0.025, -0.025, 0.075, -1e12]  # ties of the rounding and an overflowing quotient
        return feeds
    shape = (1, 1, 1, 8) if first == "frame" else (1, 8)
    return [[rng.integers(-128, 128, shape).astype(np.int8)] for _ in range(n)]


def _assert_ring_states(model: bytes, feeds: list, in_place: int) -> None:
    """After every invoke, each ring buffer's state (our variable's value, kept by RingBufferInPlace in its own
    array) equals the STRIDED_SLICE output BUILTIN_REF assigns (its tensors preserved): the late model's output
    depends little on its input (its right shifts of about 15), its rings' frames do. ``in_place``: the rings kept
    so."""
    LiteRT, resolver = oracle()
    theirs = LiteRT(
        model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF, experimental_preserve_all_tensors=True
    )
    ours = litert_py.Interpreter(model_content=model)
    for it in (ours, theirs):
        it.allocate_tensors()
    rings = in_place_rings(ours._subgraphs[0].steps_nodes)
    assert len(rings) == in_place
    for k, feed in enumerate(feeds):
        for it in (ours, theirs):
            it.set_tensor(it.get_input_details()[0]["index"], feed[0])
            it.invoke()
        for node, op in rings:
            state = op.read.resources[op.key].value
            np.testing.assert_array_equal(state, theirs.get_tensor(node.operator.outputs[1]), err_msg=f"invoke {k}")


@pytest.mark.parametrize(
    ("late", "first", "block"),
    [
        (False, "reshape", "signed"),
        (True, "quantize", "signed"),
        (False, "quantize", "relu"),
        (True, "reshape", "relu"),
        (False, "reshape", "relu_late"),
        (True, "frame", "signed"),
    ],
)
def test_streaming_plans(late, first, block):
    model = _stream_model(late, first, block)
    names = _assert_equal(model, _feeds(first))  # every output of every invoke equals BUILTIN_REF's
    _assert_ring_states(model, _feeds(first), 2 if first == "frame" else 3)  # ring r0 of "frame": RingBufferShift
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    steps = [op for _, op in it._subgraphs[0].steps_nodes]
    epilogue = SmallLateZeroPointEpilogue if late else SmallFoldedEpilogue
    blocks = [op for op in steps if isinstance(op, DepthwiseWholeIntoRows)]
    assert len(blocks) == 2, names
    for op in blocks:  # the depthwise's sign path or tap sum, the conv's ReLU-like epilogue: run_rows
        assert (op.signed is not None) == (block == "signed") and op._plan is not None
        assert type(op.conv_epilogue) is epilogue and (op._plan[-1] is not None) == late  # the late zero points
        dw_late = type(op.epilogue) is SmallLateZeroPointEpilogue
        assert dw_late == (block == "relu_late") and (op._plan[14] is not None) == dw_late
    stores = [op for op in steps if isinstance(op, StoreInto)]
    conv = [op for op in stores if op._plan[0] is run_rows_ring]
    assert len(conv) == 1 and type(conv[0].op.epilogue) is epilogue
    conv_kind = ConvQuantizedFoldedRows if first == "frame" else ConvQuantizedFoldedRowsRing
    assert type(conv[0].op) is conv_kind and (conv[0]._plan[1][0][2] is None) == (first == "frame")  # no shift
    if first != "frame":
        (store,) = [op for op in stores if op is not conv[0]]  # the input's store into ring r0
        kind = QuantizeFloatStore if first == "quantize" else CopyReshaped  # np.copyto, QuantizeFloatStore.store
        assert type(store.op) is kind and store._plan is not None and store._plan[0] is not store.op
