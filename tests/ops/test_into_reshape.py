"""Bound-plan ops storing into the RESHAPE copies that alone read their output (ops/into_reshape.py, fused by
ops/slice_views.py's fuse_feeding): a keyword spotter's 1-D int8 convolutions (ConvQuantizedFolded,
ConvQuantizedScaled) and residual ADD (the pair tables) each followed by two RESHAPEs, as TC-ResNet has them.
Compared exactly with BUILTIN_REF over several invokes with the prepared steps asserted; a reshaped tensor that
is also a model output keeps its copy; the wrapper's buffer path for an output that is not C-contiguous."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import compare_steps

I8 = np.int8


def _conv(b, x, w_in: int, c_in: int, c_out: int, kw: int, name: str, rng, act: int = 1, zo: int = -128):
    w = b.const(f"w{name}", rng.integers(-127, 128, (c_out, 1, kw, c_in)).astype(I8), quantization=quant(0.01))
    bias = b.const(f"b{name}", rng.integers(-2000, 2000, c_out).astype(np.int32), quantization=quant(0.05 * 0.01))
    y = b.tensor(f"y{name}", (1, 1, w_in, c_out), I8, quantization=quant(0.05, zo))
    options = {"padding": 0, "stride_w": 1, "stride_h": 1, "fused_activation_function": act}
    b.op("CONV_2D", [x, w, bias], [y], options)
    return y


def _reshapes(b, y, shape, name: str, keep_middle: bool = False):
    """Two RESHAPEs: (1, 1, W, C) -> (1, W, C) -> (1, 1, W, C) (a Keras Conv1D's squeeze and expand)."""
    mid = b.tensor(f"m{name}", shape[1:], I8, quantization=quant(0.05, -128))
    b.op("RESHAPE", [y, b.const(f"s{name}", np.array(shape[1:], np.int32))], [mid])
    out = b.tensor(f"r{name}", shape, I8, quantization=quant(0.05, -128))
    b.op("RESHAPE", [mid, b.const(f"t{name}", np.array(shape, np.int32))], [out])
    return out, (mid if keep_middle else None)


def _model(c_in: int, kw: int, keep_middle: bool = False, add: bool = False) -> bytes:
    rng = np.random.default_rng(c_in + kw)
    b = ModelBuilder()
    x = b.input("x", (1, 1, 25, 8), I8, quantization=quant(0.05, -128))
    y = _conv(b, x, 25, 8, c_in, kw, "0", rng)
    r, mid = _reshapes(b, y, (1, 1, 25, c_in), "0", keep_middle)
    z = _conv(b, r, 25, c_in, 16, kw, "1", rng, act=0, zo=3)
    if add:
        s = _conv(b, r, 25, c_in, 16, 1, "2", rng, act=0, zo=-5)
        total = b.tensor("sum", (1, 1, 25, 16), I8, quantization=quant(0.08, -128))
        b.op("ADD", [z, s], [total], {"fused_activation_function": 1})
        z, _ = _reshapes(b, total, (1, 1, 25, 16), "3")
    b.output(z, *([mid] if mid is not None else []))
    return b.build()


def _compare(model: bytes) -> list[str]:
    def inputs(d):
        rng = np.random.default_rng(9)
        return [rng.integers(-128, 128, d["shape"]).astype(I8) for _ in range(5)]

    return [name.split("/")[0] for name in compare_steps(model, inputs)]


@pytest.mark.parametrize(
    ("c_in", "kw", "first"),
    [
        (12, 3, "ConvQuantizedFolded"),  # K = 24: the folded float64 GEMM
        (24, 9, "ConvQuantizedScaled"),  # K = 216: the float32 GEMM and its ScaledEpilogue
    ],
)
def test_conv_stores_into_its_reshapes(c_in, kw, first):
    names = _compare(_model(c_in, kw))
    assert names[0] == "IntoReshaped" and "CopyReshaped" not in names
    from litert_py import Interpreter

    it = Interpreter(model_content=_model(c_in, kw))
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps_nodes[0][1].op).__name__ == first


def test_add_stores_into_its_reshapes():
    names = _compare(_model(12, 3, add=True))
    assert "IntoReshaped2" in names and "CopyReshaped" not in names


def test_reshape_output_kept():
    """The middle reshape is a model output: the conv stores into it (one copy absorbed); the second reshape's
    output, an intermediate, shares the middle tensor's bytes (runtime/subgraph._unmodified_aliases: no copy)."""
    names = _compare(_model(12, 3, keep_middle=True))
    assert names.count("CopyReshaped") == 0 and names[:2] == ["IntoReshaped", "SharedInput"]


def test_not_contiguous_output_takes_a_buffer():
    """IntoReshaped's plan on an output that is not C-contiguous: the values through a buffer and one copy."""
    from litert_py import Interpreter

    model = _model(12, 3)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    x = np.random.default_rng(1).integers(-128, 128, (1, 1, 25, 8)).astype(I8)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    step = it._subgraphs[0].steps_nodes[0][1]
    want = np.empty((1, 1, 25, 12), I8)
    step([x], [want])
    assert len(np.unique(want)) > 10
    wide = np.zeros((1, 1, 25, 24), I8)
    out = wide[..., ::2]  # the reshaped tensor's shape, not C-contiguous
    step([x], [out])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((1, 1, 40, 12), (slice(None), slice(None), slice(10, 35), slice(None))),  # a ring's tail: C-contiguous
        ((1, 1, 25, 20), (slice(None), slice(None), slice(0, 25), slice(3, 15))),  # not: through the buffer
    ],
)
def test_writing_into_a_ring_tail(shape, index):
    """``writing`` (ops/ring_buffer.py's tail stores): the same values into ``out[index]``, nothing else written;
    a second ``writing`` is refused."""
    from litert_py import Interpreter

    it = Interpreter(model_content=_model(12, 3))
    it.allocate_tensors()
    step = it._subgraphs[0].steps_nodes[0][1]
    assert type(step).__name__ == "IntoReshaped"
    x = np.random.default_rng(2).integers(-128, 128, (1, 1, 25, 8)).astype(I8)
    want = np.empty((1, 1, 25, 12), I8)
    step([x], [want])
    writer = step.writing(index)
    assert writer.writing(index) is None
    big = np.full(shape, 77, I8)
    writer([x], [big])
    np.testing.assert_array_equal(big[index], want)
    rest = np.ones(big.shape, bool)
    rest[index] = False
    assert (big[rest] == 77).all()
