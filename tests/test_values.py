"""tests/values.py: the one value generator of the tests and the op dashboard."""

import numpy as np
import pytest

from litert_py.schema.builder import quant
from tests.values import FLOAT_REGIMES, WORDS, ints, quantize, quantized, uniform, values


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64, np.int8, np.uint8, np.int16, np.int64])
@pytest.mark.parametrize("regime", [None, "unit", "wide", "special", "spread", "small", "full", "narrow", "ends"])
def test_every_regime_gives_the_dtype_and_shape(dtype, regime):
    x = values(np.random.default_rng(0), (3, 0, 2) if regime == "ends" else (4, 5), dtype, regime)
    assert x.dtype == np.dtype(dtype) and x.shape == ((3, 0, 2) if regime == "ends" else (4, 5))


def test_float_regimes():
    rng = np.random.default_rng(1)
    special = values(rng, (400,), np.float32, "special")
    assert np.isnan(special).any() and np.isposinf(special).any() and np.isneginf(special).any()
    assert np.signbit(special[special == 0]).any()  # -0.0
    wide = np.abs(values(rng, (400,), np.float32, "wide"))
    assert wide.max() > 1e20 and wide[wide > 0].min() < 1e-20
    unit = values(rng, (400,), np.float32, "unit")
    assert np.isfinite(unit).all() and (unit == 0).any() and (unit < 0).any()
    spread = values(rng, (400,), np.float32)
    assert np.unique(spread).size == 400
    assert set(FLOAT_REGIMES) == {"unit", "wide", "special"}


def test_integer_regimes():
    rng = np.random.default_rng(2)
    small = values(rng, (500,), np.int8, "small")
    assert small.min() == -10 and small.max() == 10
    assert values(rng, (500,), np.uint8, "small").min() == 0
    full = values(rng, (5000,), np.int8, "full")
    assert full.min() == -128 and full.max() == 127
    assert np.ptp(values(rng, (100,), np.int16, "narrow").astype(np.int64)) <= 16
    assert set(values(rng, (500,), np.int8, "ends").tolist()) == {-128, -127, 0, 126, 127}
    assert values(rng, (10,), np.int8, "unit").max() <= 10  # a float regime for an integer type: "small"
    assert values(rng, (10,), np.float32, "small").dtype == np.float32


def test_strings_and_bools():
    rng = np.random.default_rng(3)
    s = values(rng, (50,), np.bytes_)
    assert s.dtype == object and all(isinstance(v, bytes) and len(v) <= 3 for v in s)
    w = values(rng, (2, 3), np.bytes_, "words")
    assert w.shape == (2, 3) and all(v in WORDS for v in w.reshape(-1))
    b = values(rng, (200,), np.bool_)
    assert b.dtype == np.bool_ and 0 < b.sum() < 200


def test_ranges_and_quantization():
    rng = np.random.default_rng(4)
    x = ints(rng, (1000,), np.int16, -3, 3)
    assert x.dtype == np.int16 and x.min() == -3 and x.max() == 3
    f = uniform(rng, (1000,), np.float32, 0.25, 3.0)
    assert f.min() >= 0.25 and f.max() < 3.0
    q = quant(0.5, 10)
    np.testing.assert_array_equal(
        quantize([-100.0, 0.0, 0.25, 0.75, 1.0, 100.0], q, np.int8), [-128, 10, 10, 12, 12, 127]
    )
    real = quantized(rng, (1000,), np.int8, q, -1.0, 1.0)
    assert real.min() >= 8 and real.max() <= 12
    full = quantized(rng, (5000,), np.uint8, q)
    assert full.min() == 0 and full.max() == 255
