"""The streaming models' small-op fast paths against the oracle (ai-edge-litert BUILTIN_REF), each on a model whose
geometry selects it (the prepared op's class is asserted, so a test also fails when the path is no longer taken):

- litert_py.ops.slice_views: CONCATENATION -> SPLIT_V -> STRIDED_SLICE -> DEPTHWISE_CONV_2D over the whole window,
  the depthwise reading a view of the concatenation (the slicing steps dropped), and the chains it must leave
  alone (a sliced tensor that is also an output); the depthwise outputs stored straight into their
  CONCATENATION's output (fuse_concat_writes), unless one is an output too;
- the same for CONCATENATION -> STRIDED_SLICE -> CONV_2D (whole-window or pointwise, the folded GEMM rows path);
- fuse_feeding: a whole-window DEPTHWISE_CONV_2D (reading its tensor or a slice's view) whose output only a
  pointwise CONV_2D reads, as one step storing into the conv's GEMM rows (DepthwiseWholeIntoRows), and the
  cases it must leave alone (the depthwise output also an output or read twice, all tensors preserved);
- StridedSliceDirect (no reshapes) with a step;
- TableLookupScalar (QUANTIZE / DEQUANTIZE of a one-value input) over every int8 input value and int16 extremes;
- FullyConnectedQuantizedFoldedRelu (the ReLU-like folded FULLY_CONNECTED without the sign term) and the
  sign path it must not take without a ReLU-like clamp.
"""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.schema.builder import ModelBuilder, quant
from tests.compare import assert_close
from tests.oracle import T, oracle, single_op_model

RELU, NONE = 1, 0
S_IN = 0.05


def _int8(b: ModelBuilder, name: str, shape, scale=S_IN, zp=3) -> int:
    return b.tensor(name, shape, np.int8, quantization=quant(scale, zp))


def _frames() -> tuple[ModelBuilder, int]:
    """A builder with inputs x0 (1, 8, 1, 8) and x1 (1, 1, 1, 8) and c = CONCATENATION(x0, x1) (1, 9, 1, 8)."""
    b = ModelBuilder()
    x0 = b.input("x0", (1, 8, 1, 8), np.int8, quantization=quant(S_IN, 3))
    x1 = b.input("x1", (1, 1, 1, 8), np.int8, quantization=quant(S_IN, 3))
    c = _int8(b, "c", (1, 9, 1, 8))
    b.op("CONCATENATION", [x0, x1], [c], {"axis": 1})
    return b, c


def _depthwise(b, rng, x: int, shape, name: str, act: int) -> int:
    """A per-channel int8 DEPTHWISE_CONV_2D whose window is the whole (1, T, 1, C) input: output (1, 1, 1, C)."""
    _, t, _, c = shape
    w = rng.integers(-127, 128, (1, t, 1, c)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.02, c)
    f = b.const(name + "_w", w, quantization=quant(s_w, 0, 3))
    bias = b.const(name + "_b", rng.integers(-3000, 3000, c).astype(np.int32), quantization=quant(S_IN * s_w))
    y = _int8(b, name, (1, 1, 1, c), 0.1, -128 if act == RELU else 5)
    opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "depth_multiplier": 1, "fused_activation_function": act}
    b.op("DEPTHWISE_CONV_2D", [x, f, bias], [y], opts)
    return y


def _mixconv_model(split_out: bool = False, frame_step: int = 1, act: int = NONE, ya_out: bool = False) -> bytes:
    """x0 (1, 8, 1, 8), x1 (1, 1, 1, 8): c = concat (1, 9, 1, 8); a, b = SPLIT_V(c, [3, 5], axis 3);
    a5 = a[:, 4:9:frame_step]; b9 = b[:, 0:9]; one whole-window depthwise on each, outputs concatenated (the
    depthwise ops store into the concatenation's output). ``split_out``: ``a`` is an output too (its chain must
    not be fused); ``ya_out``: the first depthwise output is an output too (the concatenation stays)."""
    rng = np.random.default_rng(7)
    b, c = _frames()
    a, bb = _int8(b, "a", (1, 9, 1, 3)), _int8(b, "b", (1, 9, 1, 5))
    sizes = b.const("sizes", np.array([3, 5], np.int32))
    axis = b.const("axis", np.array(3, np.int32))
    b.op("SPLIT_V", [c, sizes, axis], [a, bb], {"num_splits": 2})
    frames = len(range(4, 9, frame_step))
    a5 = _int8(b, "a5", (1, frames, 1, 3))
    b9 = _int8(b, "b9", (1, 9, 1, 5))
    for src, dst, begin, end, step in ((a, a5, 4, 9, frame_step), (bb, b9, 0, 9, 1)):
        ins = [
            src,
            b.const(f"begin{dst}", np.array([0, begin, 0, 0], np.int32)),
            b.const(f"end{dst}", np.array([1, end, 1, 8], np.int32)),
            b.const(f"strides{dst}", np.array([1, step, 1, 1], np.int32)),
        ]
        b.op("STRIDED_SLICE", ins, [dst], {})
    ya = _depthwise(b, rng, a5, (1, frames, 1, 3), "ya", act)
    yb = _depthwise(b, rng, b9, (1, 9, 1, 5), "yb", act)
    y = _int8(b, "y", (1, 1, 1, 8), 0.1, -128 if act == RELU else 5)
    b.op("CONCATENATION", [ya, yb], [y], {"axis": 3})
    b.output(*([y] + ([a] if split_out else []) + ([ya] if ya_out else [])))
    return b.build()


def _run(interpreter_class, model: bytes, feeds, **options):
    it = interpreter_class(model_content=model, **options)
    it.allocate_tensors()
    results = []
    for feed in feeds:
        for d, v in zip(it.get_input_details(), feed):
            it.set_tensor(d["index"], v)
        it.invoke()
        results.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return it, results


def _feeds(model: bytes, count: int = 6):
    rng = np.random.default_rng(11)
    it = litert_py.Interpreter(model_content=model)
    return [[rng.integers(-128, 128, d["shape"]).astype(np.int8) for d in it.get_input_details()] for _ in range(count)]


def _assert_equal(model: bytes, feeds=None):
    feeds = _feeds(model) if feeds is None else feeds
    LiteRT, OpResolverType = oracle()
    _, theirs = _run(LiteRT, model, feeds, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it, ours = _run(litert_py.Interpreter, model, feeds)
    assert len(ours) == len(theirs) == len(feeds)
    assert_close(sum(ours, []), sum(theirs, []))  # every output of every invoke, exactly
    return [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]


@pytest.mark.parametrize("act", [NONE, RELU])
@pytest.mark.parametrize("frame_step", [1, 2])
def test_split_slice_depthwise_reads_views(frame_step, act):
    names = _assert_equal(_mixconv_model(frame_step=frame_step, act=act))
    # step 1: both kernels merged into one op (fuse_sibling_windows); a strided window keeps them apart
    assert names.count("DepthwiseConvWholeFoldedView") == (1 if frame_step == 1 else 2)
    assert "Split" not in names and "StridedSliceDirect" not in names  # both slicing steps dropped
    assert names.count("Concatenation") == 1  # the depthwise outputs' concatenation dropped


def test_concatenation_of_an_output_stays():
    names = _assert_equal(_mixconv_model(ya_out=True))
    assert names.count("Concatenation") == 2


def test_sliced_tensor_that_is_an_output_keeps_its_chain():
    names = _assert_equal(_mixconv_model(split_out=True))
    # a is an output: its SPLIT_V stays, and a5's slice is read through a (a has two readers: no walk past it)
    assert "Split" in names
    assert names.count("DepthwiseConvWholeFoldedView") == 2


def _slice_conv_model(kernel_frames: int, act: int) -> bytes:
    """x0 (1, 8, 1, 8), x1 (1, 1, 1, 8): c = concat (1, 9, 1, 8); s = c[:, 4:9:1]; a per-channel int8 CONV_2D
    (VALID) with a (kernel_frames x 1) kernel: 5 (one window over the whole slice) or 1 (pointwise)."""
    rng = np.random.default_rng(5)
    b, c = _frames()
    s = _int8(b, "s", (1, 5, 1, 8))
    ins = [c] + [b.const(n, np.array(v, np.int32)) for n, v in (("bg", [0, 4, 0, 0]), ("en", [1, 9, 1, 8]))]
    b.op("STRIDED_SLICE", ins + [b.const("st", np.ones(4, np.int32))], [s], {})
    units = 6
    w = rng.integers(-127, 128, (units, kernel_frames, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.01, units)
    f = b.const("w", w, quantization=quant(s_w, 0, 0))
    bias = b.const("bias", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quant(S_IN * s_w))
    y = _int8(b, "y", (1, 6 - kernel_frames, 1, units), 0.1, -128 if act == RELU else 5)
    b.op("CONV_2D", [s, f, bias], [y], {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": act})
    b.output(y)
    return b.build()


@pytest.mark.parametrize("act", [NONE, RELU])
@pytest.mark.parametrize("kernel_frames", [5, 1])
def test_slice_conv_rows_reads_view(kernel_frames, act):
    names = _assert_equal(_slice_conv_model(kernel_frames, act))
    assert names == ["Concatenation", "ConvQuantizedFoldedRowsView"]  # the slice dropped


def _pointwise(b, rng, x: int, name: str, act: int, units: int = 6) -> int:
    """A per-channel int8 1x1 CONV_2D of the (1, 1, 1, C) tensor ``x``: output (1, 1, 1, units)."""
    w = rng.integers(-127, 128, (units, 1, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.01, units)
    f = b.const(name + "_w", w, quantization=quant(s_w, 0, 0))
    bias = b.const(name + "_b", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quant(0.1 * s_w))
    y = _int8(b, name, (1, 1, 1, units), 0.2, -128 if act == RELU else 7)
    b.op("CONV_2D", [x, f, bias], [y], {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": act})
    return y


def _depthwise_pointwise_model(act: int, sliced: bool = False, dw_out: bool = False, twice: bool = False) -> bytes:
    """c = concat (1, 9, 1, 8) (or its slice c[:, 4:9] when ``sliced``); a whole-window depthwise d (1, 1, 1, 8);
    a pointwise CONV_2D of d. ``dw_out``: d is an output too; ``twice``: a second pointwise conv reads d."""
    rng = np.random.default_rng(13)
    b, c = _frames()
    x, frames = c, 9
    if sliced:
        x, frames = _int8(b, "s", (1, 5, 1, 8)), 5
        ins = [c] + [b.const(n, np.array(v, np.int32)) for n, v in (("bg", [0, 4, 0, 0]), ("en", [1, 9, 1, 8]))]
        b.op("STRIDED_SLICE", ins + [b.const("st", np.ones(4, np.int32))], [x], {})
    d = _depthwise(b, rng, x, (1, frames, 1, 8), "d", act)
    outs = [_pointwise(b, rng, d, "y", act)]
    if twice:
        outs.append(_pointwise(b, rng, d, "z", NONE))
    b.output(*(outs + ([d] if dw_out else [])))
    return b.build()


@pytest.mark.parametrize("act", [NONE, RELU])
@pytest.mark.parametrize("sliced", [False, True])
def test_depthwise_feeds_pointwise_rows(sliced, act):
    names = _assert_equal(_depthwise_pointwise_model(act, sliced=sliced))
    assert names == ["Concatenation", "DepthwiseWholeIntoRows"]  # the slice and the conv's own step gone


@pytest.mark.parametrize(("dw_out", "twice"), [(True, False), (False, True)])
def test_depthwise_output_read_elsewhere_is_not_fused(dw_out, twice):
    names = _assert_equal(_depthwise_pointwise_model(NONE, dw_out=dw_out, twice=twice))
    assert "DepthwiseWholeIntoRows" not in names
    assert names.count("ConvQuantizedFoldedRows") == 1 + twice


def _tap_dots(model: bytes) -> list:
    """Whether each whole-window depthwise step of ``model`` sums its taps with np.dot (whole_window.tap_dot)."""
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    return [op.tap_dot is not None for _, op in it._subgraphs[0].steps_nodes if hasattr(op, "tap_dot")]


@pytest.mark.parametrize(
    ("model", "steps"),
    [
        (lambda: _depthwise_pointwise_model(NONE), 1),  # DepthwiseWholeIntoRows, the sign path
        (lambda: _depthwise_pointwise_model(RELU, dw_out=True), 1),  # DepthwiseConvWholeFolded alone, ReLU-like
        (lambda: _mixconv_model(frame_step=1, act=NONE), 1),  # the merged MixConv view
        (lambda: _mixconv_model(frame_step=2, act=RELU), 2),  # two views (a strided window each)
    ],
)
def test_whole_window_tap_sum_as_dot(model, steps):
    """The whole-window depthwise steps sum their taps and constant row with one np.dot (one batch): the same
    exact sums as add.reduce, every output equal to BUILTIN_REF."""
    model = model()
    _assert_equal(model)
    assert _tap_dots(model) == [True] * steps


def test_depthwise_pointwise_not_fused_when_preserving_tensors():
    model = _depthwise_pointwise_model(RELU)
    it = litert_py.Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
    assert names == ["Concatenation", "DepthwiseConvWholeFolded", "ConvQuantizedFoldedRows"]


def _fc_model(act: int, zo: int, units: int = 6, depth: int = 20) -> bytes:
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("x", (2, depth), np.int8, quantization=quant(S_IN, -4))
    w = b.const("w", rng.integers(-127, 128, (units, depth)).astype(np.int8), quantization=quant(0.01))
    bias = b.const("bias", rng.integers(-2000, 2000, units).astype(np.int32), quantization=quant(S_IN * 0.01))
    y = b.tensor("y", (2, units), np.int8, quantization=quant(0.02, zo))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": act})
    b.output(y)
    return b.build()


@pytest.mark.parametrize(
    ("act", "zo", "cls"),
    [
        (RELU, -128, "FullyConnectedQuantizedFoldedRelu"),
        (RELU, 10, "FullyConnectedQuantizedFoldedRelu"),
        (NONE, 10, "FullyConnectedQuantizedFoldedRoundedRows"),  # lower clamp below the zero point: no tie, rint
    ],
)
def test_folded_fully_connected_paths(act, zo, cls):
    names = _assert_equal(_fc_model(act, zo))
    assert names == [cls]


@pytest.mark.parametrize(
    ("op", "x_dtype", "x_q", "y_dtype", "y_q"),
    [
        ("QUANTIZE", np.int8, quant(0.3, 5), np.uint8, quant(0.7, 131)),  # microWakeWord's int8 -> uint8 score
        ("QUANTIZE", np.int8, quant(0.5, -3), np.int8, quant(0.125, 2)),
        ("QUANTIZE", np.int16, quant(0.3, 0), np.int16, quant(0.7, 0)),
        ("DEQUANTIZE", np.int8, quant(0.0390625, -128), np.float32, None),
        ("DEQUANTIZE", np.int16, quant(0.001, 0), np.float32, None),
    ],
)
def test_one_value_table_lookup(op, x_dtype, x_q, y_dtype, y_q):
    info = np.iinfo(x_dtype)
    if x_dtype == np.int8:
        values = np.arange(info.min, info.max + 1)
    else:
        values = np.concatenate([[info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], np.arange(-400, 400, 7)])
    model = single_op_model(op, [T((1, 1), x_dtype, q=x_q)], [T((1, 1), y_dtype, q=y_q)])
    names = _assert_equal(model, [[np.full((1, 1), v, x_dtype)] for v in values])
    assert names == ["TableLookupScalar"]
