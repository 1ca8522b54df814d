"""RESHAPE, SQUEEZE, EXPAND_DIMS against the oracle, for every dtype (strings included).

One table (CASES) drives the differential test; every op copies bytes, so every comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.ops._diff import ALL_DTYPES, chain_model, check_both, values
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

#: Float tolerance per op: all exact (bytes are copied).
TOLERANCE = {"RESHAPE": 0.0, "SQUEEZE": 0.0, "EXPAND_DIMS": 0.0}

seeds = st.integers(0, 2**32 - 1)
dtype_names = st.sampled_from(list(ALL_DTYPES))


def shapes(min_rank=0, max_rank=4, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def _quant(name, draw):
    if name in ("int8", "uint8") and draw(st.booleans()):
        return quant(0.5, 3)
    if name == "int16" and draw(st.booleans()):
        return quant(0.25, 0)
    return None


def _factor(draw, n: int) -> list[int]:
    """A random shape with ``n`` elements."""
    dims = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        n //= d
    dims += [1] * draw(st.integers(0, 2))
    return draw(st.permutations(dims)) if dims else []


@st.composite
def reshape(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(shapes(min_side=0 if draw(st.booleans()) else 1))
    n = int(np.prod(shape))
    new = list(_factor(draw, n)) if n else [0] + list(draw(shapes(max_rank=2)))
    if new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    q = _quant(name, draw)
    source = draw(st.sampled_from(["tensor", "options", "int64-tensor-falls-back-to-options"]))
    if source == "tensor":
        ins = [T(shape, dt, q=q), T.const(np.array(new, np.int32))]
        opts = None
    elif source == "options":
        ins = [T(shape, dt, q=q)]
        opts = {"new_shape": new}
    else:
        ins = [T(shape, dt, q=q), T.const(np.array(new, np.int64))]
        opts = {"new_shape": new}
    model = single_op_model("RESHAPE", ins, [T((1,), dt, q=q)], opts)
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def squeeze(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=1, max_size=6).map(tuple))
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = []
    if ones and draw(st.booleans()):
        dims = draw(st.lists(st.sampled_from(ones), min_size=1, max_size=len(ones)))
        dims = [d - len(shape) if draw(st.booleans()) else d for d in dims]
    q = _quant(name, draw)
    model = single_op_model("SQUEEZE", [T(shape, dt, q=q)], [T((1,), dt, q=q)], {"squeeze_dims": dims})
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def expand_dims(draw):
    name = draw(dtype_names)
    dt = ALL_DTYPES[name]
    shape = draw(shapes(max_rank=4))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    adt = draw(st.sampled_from([np.int32, np.int64]))
    q = _quant(name, draw)
    model = single_op_model("EXPAND_DIMS", [T(shape, dt, q=q), T.const(np.array([axis], adt))],
                            [T((1,), dt, q=q)])
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def dynamic(draw):
    """The shape / axis is a graph input: the output shape is only known at invoke."""
    rng = np.random.default_rng(draw(seeds))
    name = draw(st.sampled_from([k for k in ALL_DTYPES if k != "string"]))
    dt = ALL_DTYPES[name]
    shape = draw(shapes(min_rank=1))
    x = values(rng, shape, dt)
    if draw(st.booleans()):
        new = np.array(_factor(draw, int(np.prod(shape))) or [1], np.int32)
        if draw(st.booleans()):
            new[0] = -1
        return chain_model("RESHAPE", [T(shape, dt), T(new.shape, np.int32)], 1), [x, new]
    axis = np.array([draw(st.integers(-len(shape) - 1, len(shape)))], np.int32)
    return chain_model("EXPAND_DIMS", [T(shape, dt), T((1,), np.int32)], 1), [x, axis]


CASES = {
    "reshape-any": reshape(),
    "squeeze-any": squeeze(),
    "expand_dims-any": expand_dims(),
    "dynamic-reshape-expand_dims": dynamic(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_shape_ops(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs)


def test_reshape_legacy_scalar_new_shape():
    """new_shape [0] in the options means a scalar (legacy converters)."""
    model = single_op_model("RESHAPE", [T((1, 1))], [T(())], {"new_shape": [0]})
    out = check_both(model, [np.array([[3.5]], np.float32)])
    assert out is not None and out[0].shape == ()


REJECTED = {
    "reshape-two-minus-one": ("RESHAPE", [T((2, 3)), T.const(np.array([-1, -1], np.int32))], None),
    "reshape-size-mismatch": ("RESHAPE", [T((2, 3)), T.const(np.array([4, 2], np.int32))], None),
    "reshape-negative": ("RESHAPE", [T((2, 3)), T.const(np.array([-2, -3], np.int32))], None),
    "reshape-options-mismatch": ("RESHAPE", [T((2, 3))], {"new_shape": [5]}),
    "squeeze-not-one": ("SQUEEZE", [T((2, 1))], {"squeeze_dims": [0]}),
    "squeeze-out-of-range": ("SQUEEZE", [T((2, 1))], {"squeeze_dims": [2]}),
    "squeeze-rank9": ("SQUEEZE", [T((1,) * 9)], None),
    "expand_dims-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([3], np.int32))], None),
    "expand_dims-negative-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([-4], np.int32))], None),
    "expand_dims-two-axes": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([0, 1], np.int32))], None),
    "expand_dims-float-axis": ("EXPAND_DIMS", [T((2, 3)), T.const(np.array([0], np.float32))], None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_shape_ops_rejected_at_prepare(case):
    op, ins, opts = REJECTED[case]
    model = single_op_model(op, ins, [T((1,))], opts)
    feeds = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)


def test_expand_dims_requires_same_quantization():
    model = single_op_model("EXPAND_DIMS", [T((2,), np.int8, q=quant(0.5, 1)), T.const(np.array([0], np.int32))],
                            [T((1, 2), np.int8, q=quant(0.25, 1))])
    feeds = [np.zeros(2, np.int8)]
    with pytest.raises(RuntimeError, match="scale"):
        run_litert(model, feeds)
    with pytest.raises(PrepareError, match="scale"):
        run_ours(model, feeds)
