"""8-bit table activations gathered two bytes at a time (ActivationLutPairs, quant.lut_pairs): each case asserts
the prepared class (pairs from PAIRS_MIN_VALUES even-sized values on, the byte gather below or for odd sizes)
and compares with the oracle (ai-edge-litert BUILTIN_REF) exactly, over every input byte in both positions of
a pair (a swapped byte order or a wrong pair entry shows)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops import activations_quantized
from litert_py.quant import lut_lookup_pairs, lut_pairs
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._single_step import both_with_step, invoke_both

I8, U8 = np.int8, np.uint8


def _model(op: str, shape, dtype, q_in, q_out) -> bytes:
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(*q_in))
    y = b.tensor("y", shape, dtype, quantization=quant(*q_out))
    b.op(op, [x], [y])
    b.output(y)
    return b.build()


CASES = {  # op, dtype, shape, input (scale, zero point), output (scale, zero point)
    "hard_swish-int8": ("HARD_SWISH", I8, (1, 32, 32, 16), (0.05, -3), (0.03, -100)),
    "hard_swish-uint8": ("HARD_SWISH", U8, (1, 16, 32, 40), (0.04, 130), (0.025, 20)),
    "logistic-int8": ("LOGISTIC", I8, (1, 128, 128), (0.06, 5), (1 / 256, -128)),
    "tanh-uint8": ("TANH", U8, (16384,), (0.03, 120), (1 / 128, 128)),
    "relu6-int8": ("RELU6", I8, (1, 16, 16, 66), (0.05, 10), (0.03, -128)),
    "gelu-int8": ("GELU", I8, (1, 16, 32, 32), (0.05, 0), (0.04, 30)),
}
BYTEWISE = {  # too few values, or an odd number of them
    "hard_swish-small": ("HARD_SWISH", I8, (1, 8, 8, 96), (0.05, -3), (0.03, -100)),
    "hard_swish-odd": ("HARD_SWISH", I8, (1, 11, 11, 129), (0.05, -3), (0.03, -100)),
}


def _feeds(shape, dtype, rng) -> list[np.ndarray]:
    """Every byte value at even and odd positions (a rolled ramp), then random values."""
    info = np.iinfo(dtype)
    size = int(np.prod(shape))
    ramp = np.arange(size) % 256 + info.min
    ramp2 = (np.arange(size) // 2 * 7 + np.arange(size) % 2 * 101) % 256 + info.min
    return [v.astype(dtype).reshape(shape) for v in (ramp, ramp2, rng.integers(info.min, info.max + 1, size))]


@pytest.mark.parametrize("case", list(CASES) + list(BYTEWISE))
def test_lut_pairs_against_reference(case):
    op, dtype, shape, q_in, q_out = {**CASES, **BYTEWISE}[case]
    theirs, ours, step = both_with_step(_model(op, shape, dtype, q_in, q_out))
    want_cls = "ActivationLutPairs" if case in CASES else "ActivationLut"
    assert type(step).__name__ == want_cls
    assert case in BYTEWISE or int(np.prod(shape)) >= activations_quantized.PAIRS_MIN_VALUES
    rng = np.random.default_rng(5)
    for feed in _feeds(shape, dtype, rng):
        got, want = invoke_both(theirs, ours, [feed])
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 8  # the outputs vary: a misplaced byte shows


def test_lut_pairs_all_pairs_and_fallback():
    """Every one of the 65,536 byte pairs against the byte table; non-contiguous or odd inputs are refused."""
    rng = np.random.default_rng(0)
    lut = rng.integers(-128, 128, 256).astype(np.int8)
    pairs = lut_pairs(lut)
    x = np.arange(65536, dtype=np.uint16).view(np.int8)
    out = np.empty_like(x)
    assert lut_lookup_pairs(x, pairs, out)
    np.testing.assert_array_equal(out, lut[x.view(np.uint8)])
    assert not lut_lookup_pairs(x[:-1], pairs, out[:-1])
    assert not lut_lookup_pairs(x[::2], pairs, out[: x.size // 2])
    with pytest.raises(ValueError):
        lut_pairs(np.zeros(255, np.int8))


def _scalar_model(op: str, dtype, shape, const_shape, out_shape, const_first: bool) -> bytes:
    signed = dtype == I8
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(0.05, -5 if signed else 120))
    c = b.const("c", np.full(const_shape, 37, dtype), quantization=quant(0.03, 9 if signed else 131))
    z = b.tensor("z", out_shape, dtype, quantization=quant(0.07 if op == "ADD" else 0.02, -2 if signed else 127))
    b.op(op, [c, x] if const_first else [x, c], [z])
    b.output(z)
    return b.build()


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize(
    "op, shape, const_shape, out_shape, const_first, cls",
    [
        ("MUL", (1, 32, 32, 16), (1,), (1, 32, 32, 16), False, "QuantizedTable8ScalarPairs"),
        ("ADD", (1, 32, 32, 16), (1, 1, 1, 1), (1, 32, 32, 16), True, "QuantizedTable8ScalarPairs"),
        ("MUL", (32, 32, 16), (1, 1, 1, 1), (1, 32, 32, 16), False, "QuantizedTable8Scalar"),  # a reshape
        ("MUL", (1, 8, 8, 16), (1,), (1, 8, 8, 16), False, "QuantizedTable8Scalar"),  # few values
    ],
)
def test_scalar_constant_pairs_against_reference(dtype, op, shape, const_shape, out_shape, const_first, cls):
    """8-bit ADD / MUL by a one-value constant over many values: QuantizedTable8ScalarPairs, exact."""
    theirs, ours, step = both_with_step(_scalar_model(op, dtype, shape, const_shape, out_shape, const_first))
    assert type(step).__name__ == cls
    for feed in _feeds(shape, dtype, np.random.default_rng(9)):
        got, want = invoke_both(theirs, ours, [feed])
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 8
