"""Float GELU (not approximate) of a static shape: GeluFloatExact, its float64 erfc steps in place in prepared
buffers. Bit for bit the textbook form of the Numerical Recipes ``erfcc`` it evaluates (written out here, with
its own temporaries), over many magnitudes and the special values; LiteRT's reference within the float
tolerance; the approximate form and another shape keep GeluFloat."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.elu_gelu import _ERFC_COEFFS as _NR  # Numerical Recipes erfcc's, the exponent's constant last
from litert_py.ops.elu_gelu import GeluFloat, GeluFloatExact
from tests.compare import assert_close
from tests.oracle import T, run_litert, single_op_model


def _textbook(x: np.ndarray) -> np.ndarray:
    """``(0.5f * x) * float32(erfcc(-x / sqrt 2))``, erfcc in float64 as Numerical Recipes writes it."""
    a = x.astype(np.float64) * -0.70710678118654752440
    z = np.abs(a)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in _NR[:-1]:
        poly = (poly + c) * t
    ans = t * np.exp(poly - z * z + _NR[-1])
    erfc = np.where(a >= 0, ans, 2.0 - ans)
    return (x * np.float32(0.5)) * erfc.astype(np.float32)


def _values(rng, shape) -> np.ndarray:
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 2.5, shape)).astype(np.float32)
    flat = x.reshape(-1)
    flat[:12] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-45, -1e-45, 9.0, -9.0, -5.5]
    flat[-64:] = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(np.float32)  # any bits
    return x


def _assert_same_bits(ours: np.ndarray, expected: np.ndarray) -> None:
    """Every bit, except a NaN's sign and payload on numpy 1.x: its float32 multiply picks one of two NaN
    operands by the buffer's alignment (the code before GeluFloatExact did the same)."""
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(ours), nan)
        ours, expected = ours[~nan], expected[~nan]
    np.testing.assert_array_equal(ours.view(np.uint32), expected.view(np.uint32))


def _model(shape, approximate):
    return single_op_model("GELU", [T(shape)], [T(shape)], {"approximate": approximate})


@pytest.mark.parametrize("shape", [(1, 32, 128), (3, 77), (100,)])
def test_exact_gelu_takes_the_prepared_path_bit_for_bit(shape):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = _values(rng, shape)
    it = Interpreter(model_content=_model(shape, False))
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps[0][0]) is GeluFloatExact
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    with np.errstate(all="ignore"):
        expected = _textbook(x)
    _assert_same_bits(ours, expected)
    moderate = np.abs(x) < 1e3  # finite, no overflow of LiteRT's float32 intermediates
    theirs = run_litert(_model(shape, False), [x])[0]
    assert_close([ours[moderate]], [theirs[moderate]], rtol=1e-5, atol=3e-7)


def test_approximate_and_other_shapes_keep_gelu_float():
    it = Interpreter(model_content=_model((2, 9), True))
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps[0][0]) is GeluFloat
    op = GeluFloatExact.build((4, 16))
    rng = np.random.default_rng(3)
    for shape in [(4, 16), (5, 16)]:
        x = _values(rng, shape)
        out = np.empty_like(x)
        with np.errstate(all="ignore"):
            op([x], [out])
            _assert_same_bits(out, _textbook(x))
