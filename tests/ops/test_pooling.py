"""AVERAGE_POOL_2D and MAX_POOL_2D (float32, uint8, int8, int16) against the oracle (ai-edge-litert
BUILTIN_REF).

The float paths add (or compare) the same elements in the same order as LiteRT's reference kernels, so the
comparison is exact, NaN and +-inf included (TOLERANCE records it). The quantized paths are compared for
equality over every fused activation, scales from tiny to huge and zero points at the ends of their range.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, quant, run_both, run_both_unless_rejected, run_litert, single_op_model

OPS = ["AVERAGE_POOL_2D", "MAX_POOL_2D"]
#: Float tolerance (relative to the largest output magnitude): both paths are bit-exact.
TOLERANCE = {"AVERAGE_POOL_2D": 0.0, "MAX_POOL_2D": 0.0}


def pool_model(op, shape, fh, fw, sh, sw, padding=0, act=0, dtype=np.float32, q=None, out_shape=None):
    """A one-op pooling model; without ``out_shape`` the output is declared (1, .., 1, C): the op resizes it."""
    return single_op_model(
        op,
        [T(shape, dtype, q=q)],
        [T(out_shape or (1,) * (len(shape) - 1) + shape[-1:], dtype, q=q)],
        {
            "padding": padding,
            "stride_h": sh,
            "stride_w": sw,
            "filter_height": fh,
            "filter_width": fw,
            "fused_activation_function": act,
        },
    )


def _assert_same(ours, theirs, op):
    assert_close(ours, theirs, rtol=TOLERANCE[op], atol=1e-6 if TOLERANCE[op] else 0.0)


#: the pooling geometry both differential tests draw: input shape, window, strides, padding, fused activation
GEOMETRY = dict(
    batch=st.integers(1, 2),
    h=st.integers(1, 12),
    w=st.integers(1, 12),
    c=st.integers(1, 8),
    fh=st.integers(1, 4),
    fw=st.integers(1, 4),
    sh=st.integers(1, 3),
    sw=st.integers(1, 3),
    padding=st.sampled_from([0, 1]),
    act=st.sampled_from([0, 1, 2, 3, 4, 5]),
)


@pytest.mark.parametrize("op", OPS)
@given(
    **GEOMETRY,
    special=st.sampled_from([False, False, True]),
    seed=st.integers(0, 2**31 - 1),
)
def test_pool_float32(op, batch, h, w, c, fh, fw, sh, sw, padding, act, special, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((batch, h, w, c)) * 4).astype(np.float32)
    if special:  # NaN, +-inf: max skips NaN, both clamp +-inf to +-FLT_MAX
        for value in (np.nan, np.inf, -np.inf):
            x.flat[rng.integers(0, x.size, max(1, x.size // 10))] = value
    with np.errstate(invalid="ignore"):
        ours, theirs = run_both(pool_model(op, x.shape, fh, fw, sh, sw, padding, act), [x])
    _assert_same(ours, theirs, op)


# Windows LiteRT's unchecked ComputePaddingHeightWidth turns into empty outputs (prepare still succeeds).
EMPTY = [
    ("valid-filter-wider-than-input", dict(fh=2, fw=7, sh=2, sw=1, padding=1)),  # width fails: (0, 0)
    ("valid-filter-taller-than-input", dict(fh=7, fw=2, sh=1, sw=2, padding=1)),  # height fails: (0, OW)
    ("valid-output-width-0", dict(fh=2, fw=7, sh=2, sw=3, padding=1)),  # (5+3-7)/3 = 0: (OH, 0)
    ("filter-width-0", dict(fh=2, fw=0, sh=2, sw=2, padding=0)),
    ("filter-height-0", dict(fh=0, fw=2, sh=2, sw=2, padding=1)),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kw", [e[1] for e in EMPTY], ids=[e[0] for e in EMPTY])
def test_pool_empty_outputs(op, kw):
    x = np.ones((1, 5, 5, 3), np.float32)
    ours, theirs = run_both(pool_model(op, x.shape, **kw), [x])
    assert ours[0].shape == theirs[0].shape and ours[0].size == 0


def test_max_pool_window_of_nans_is_lowest():
    x = np.full((1, 4, 4, 2), np.nan, np.float32)
    x[0, 0, 0, 0] = -np.inf
    ours, theirs = run_both(pool_model("MAX_POOL_2D", x.shape, 2, 2, 2, 2), [x])
    assert (theirs[0] == -np.finfo(np.float32).max).all()
    _assert_same(ours, theirs, "MAX_POOL_2D")


ERRORS = [
    ("input-rank-3", dict(shape=(5, 5, 3))),
    ("stride-0", dict(sw=0)),
    ("int32", dict(dtype=np.int32)),  # LiteRT fails at invoke ("Type INT32 not currently supported.")
    ("float16", dict(dtype=np.float16)),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kw", [e[1] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_pool_rejected_like_litert(op, kw):
    args = dict(shape=(1, 5, 5, 3), fh=2, fw=2, sh=2, sw=2) | kw
    model = pool_model(op, **args)
    x = np.ones(args["shape"], args.get("dtype", np.float32))
    with pytest.raises(RuntimeError):  # at LiteRT's prepare, or its invoke for the types it does not run
        run_litert(model, [x])
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


QUANTIZED = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", list(QUANTIZED))
@given(
    **GEOMETRY,
    log_scale=st.floats(-6, 3),
    zp_kind=st.sampled_from(["min", "max", "zero", "any"]),
    narrow=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_pool_quantized(op, dtype, batch, h, w, c, fh, fw, sh, sw, padding, act, log_scale, zp_kind, narrow, seed):
    """Rounding division of the int32 window sum (halves away from zero; uint8: + n/2, truncated), the
    max from the type's lowest value, then the activation clamp from the output's scale and zero point."""
    dt = np.dtype(QUANTIZED[dtype])
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    lo, hi = (int(info.min), int(info.max)) if not narrow else (max(int(info.min), -3), min(int(info.max), 3))
    x = rng.integers(lo, hi, (batch, h, w, c), endpoint=True).astype(dt)
    zp = (
        0
        if dt == np.int16
        else {
            "min": int(info.min),
            "max": int(info.max),
            "zero": 0,
            "any": int(rng.integers(info.min, info.max, endpoint=True)),
        }[zp_kind]
    )
    model = pool_model(op, x.shape, fh, fw, sh, sw, padding, act, dt, quant(10.0**log_scale, zp))
    both = run_both_unless_rejected(model, [x])  # e.g. RELU6 bound overflowing int32 with a tiny scale
    if both is not None:
        _assert_same(*both, op)


@pytest.mark.parametrize("op", OPS)
def test_pool_int8_rounding(op):
    """Window sums at exact halves: int8 rounds them away from zero (-3/2 -> -2, 3/2 -> 2), uint8 up."""
    x = np.array([-1, -2, 1, 2, -3, 0, 3, 0], np.int8).reshape(1, 1, 8, 1)
    (ours,), (theirs,) = run_both(pool_model(op, x.shape, 1, 2, 1, 2, 1, 0, np.int8, quant(0.1)), [x])
    np.testing.assert_array_equal(ours, theirs)
    if op == "AVERAGE_POOL_2D":
        np.testing.assert_array_equal(ours.ravel(), [-2, 2, -2, 2])
