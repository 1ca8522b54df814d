"""RFFT2D and FAKE_QUANT against the oracle (BUILTIN_REF registers both)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, run_both, single_op_model

# RFFT2D: LiteRT's Ooura FFT and numpy's pocketfft both run in double; the complex64 results agree to float
# rounding relative to the largest magnitude. FAKE_QUANT is float32 arithmetic in the source's order: exact.
TOLERANCE = {"RFFT2D": 1e-6, "FAKE_QUANT": 0.0}
RESOLVER = {"RFFT2D": "BUILTIN_REF", "FAKE_QUANT": "BUILTIN_REF"}

seeds = st.integers(0, 2**32 - 1)


@st.composite
def rfft2d_case(draw):
    rng = np.random.default_rng(draw(seeds))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    fh, fw = 2 ** draw(st.integers(0, 4)), 2 ** draw(st.integers(1, 4))  # crop or zero-pad; width 1 refused
    x = rng.uniform(-4, 4, batch + (h, w)).astype(np.float32)
    fl = np.array([fh, fw], np.int32)
    const_len = draw(st.booleans())  # a graph-input fft_length makes the output dynamic
    model = single_op_model(
        "RFFT2D",
        [T(x.shape), T.const(fl) if const_len else T((2,), np.int32)],
        [T(batch + (fh, fw // 2 + 1), np.complex64)],
    )
    return model, [x] + ([] if const_len else [fl])


@given(case=rfft2d_case())
def test_rfft2d(case):
    model, inputs = case
    ours, theirs = run_both(model, inputs, RESOLVER["RFFT2D"])
    assert_close(ours, theirs, rtol=TOLERANCE["RFFT2D"], atol=1e-6)


@st.composite
def fake_quant_case(draw):
    rng = np.random.default_rng(draw(seeds))
    num_bits = draw(st.integers(2, 16))
    # ranges with and without zero inside (the zero point then clamps to 0 or 2**num_bits - 1)
    lo = draw(st.sampled_from([0.0, -1.0, -2.5, -0.3, -6.0, 0.5, -9.0]))
    hi = draw(st.sampled_from([0.0, 1.0, 2.5, 0.7, 6.0, -0.4, 3.3]))
    if lo >= hi:
        lo, hi = hi - 1.0, lo + 0.5
    x = rng.uniform(lo - 1, hi + 1, (draw(st.integers(1, 40)),)).astype(np.float32)
    # values on and half-way between grid points: the rounding of ties is visible
    step = np.float32((hi - lo) / (2**num_bits - 1))
    k = rng.integers(0, 2**num_bits, x.size)
    x = np.where(rng.random(x.size) < 0.5, x, (k + rng.choice([0.0, 0.5], x.size)) * step + np.float32(lo))
    x = x.astype(np.float32)
    opts = dict(min=lo, max=hi, num_bits=num_bits, narrow_range=False)
    return single_op_model("FAKE_QUANT", [T(x.shape)], [T(x.shape)], opts), [x]


@given(case=fake_quant_case())
def test_fake_quant(case):
    model, inputs = case
    ours, theirs = run_both(model, inputs, RESOLVER["FAKE_QUANT"])
    assert_close(ours, theirs, rtol=0, atol=TOLERANCE["FAKE_QUANT"])


ERRORS = {
    "rfft2d-int32-input": lambda: single_op_model(
        "RFFT2D", [T((4, 4), np.int32), T.const(np.int32([4, 4]))], [T((4, 3), np.complex64)]
    ),
    "rfft2d-rank-1": lambda: single_op_model("RFFT2D", [T((4,)), T.const(np.int32([4, 4]))], [T((4, 3), np.complex64)]),
    "rfft2d-not-power-of-two": lambda: single_op_model(
        "RFFT2D", [T((4, 4)), T.const(np.int32([4, 6]))], [T((4, 4), np.complex64)]
    ),
    "rfft2d-width-1": lambda: single_op_model(
        "RFFT2D", [T((4, 4)), T.const(np.int32([4, 1]))], [T((4, 1), np.complex64)]
    ),
    "rfft2d-int64-fft-length": lambda: single_op_model(
        "RFFT2D", [T((4, 4)), T.const(np.int64([4, 4]))], [T((4, 3), np.complex64)]
    ),
    "fake-quant-narrow-range": lambda: single_op_model(
        "FAKE_QUANT", [T((3,))], [T((3,))], dict(min=-1.0, max=1.0, num_bits=8, narrow_range=True)
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    with pytest.raises(PrepareError):
        Interpreter(model_content=ERRORS[name]()).allocate_tensors()
