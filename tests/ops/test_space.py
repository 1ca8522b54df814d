"""SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, DILATE against the oracle.

One table (CASES) drives the differential test; every op moves bytes, so every comparison is exact.
Every op here (DILATE included) is registered by ai-edge-litert's BUILTIN_REF resolver, so no comparison
needs the BUILTIN_WITHOUT_DEFAULT_DELEGATES fallback.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.ops._diff import ALL_DTYPES, check_both
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import values

#: Float tolerance per op: all exact (bytes are moved).
TOLERANCE = {
    "SPACE_TO_DEPTH": 0.0,
    "DEPTH_TO_SPACE": 0.0,
    "SPACE_TO_BATCH_ND": 0.0,
    "BATCH_TO_SPACE_ND": 0.0,
    "DILATE": 0.0,
}

WIDE_DTYPES = {**ALL_DTYPES, "uint16": np.uint16, "uint32": np.uint32, "float64": np.float64}
NUMERIC = [k for k in WIDE_DTYPES if k != "string"]
seeds = st.integers(0, 2**32 - 1)


def _q(name, draw):
    if name in ("int8", "uint8", "int16") and draw(st.booleans()):
        zp = 0 if name == "int16" else draw(st.integers(-20, 20)) + (128 if name == "uint8" else 0)
        return quant(draw(st.floats(0.01, 2.0)), zp)
    return None


def _other_q(q, draw):
    if q is not None and draw(st.integers(0, 4)) == 0:
        if draw(st.booleans()):
            return quant(q.scale[0] * 2, q.zero_point[0])
        return quant(q.scale[0], q.zero_point[0] + 1)
    return q


@st.composite
def depth(draw):
    op = draw(st.sampled_from(["SPACE_TO_DEPTH", "DEPTH_TO_SPACE"]))
    name = draw(st.sampled_from(NUMERIC))
    dt = WIDE_DTYPES[name]
    b = draw(st.integers(1, 3))
    n, h, w, c = (draw(st.integers(1, 3)) for _ in range(4))
    if op == "SPACE_TO_DEPTH":
        shape, out = (n, h * b, w * b, c), (n, h, w, c * b * b)
    else:
        shape, out = (n, h, w, c * b * b), (n, h * b, w * b, c)
    if draw(st.integers(0, 6)) == 0:  # not divisible: both refuse
        shape = shape[:3] + (shape[3] + 1,) if op == "DEPTH_TO_SPACE" else (n, h * b + 1, w * b, c)
    q = _q(name, draw)
    model = single_op_model(op, [T(shape, dt, q=q)], [T(out, dt, q=_other_q(q, draw))], {"block_size": b})
    return model, [values(np.random.default_rng(draw(seeds)), shape, dt)]


@st.composite
def batch(draw):
    op = draw(st.sampled_from(["SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"]))
    name = draw(st.sampled_from(NUMERIC))
    dt = WIDE_DTYPES[name]
    rank = draw(st.integers(3, 4))
    m = rank - 2
    block = [draw(st.integers(1, 3)) for _ in range(m)]
    pads = []
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    spatial = []
    for bk in block:
        a, z = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        s = draw(st.integers(0, 3)) * bk
        if op == "SPACE_TO_BATCH_ND":
            size = s - a - z
            if size < 0:
                a, z, size = 0, 0, s
            spatial.append(size)
        else:
            size = draw(st.integers(1, 3))
            a, z = min(a, size * bk // 2), min(z, size * bk - size * bk // 2)
            spatial.append(size)
        pads.append([a, z])
    if op == "SPACE_TO_BATCH_ND":
        shape = (n, *spatial, c)
    else:
        shape = (n * int(np.prod(block)), *spatial, c)
    if draw(st.integers(0, 6)) == 0:  # a block that does not divide: both refuse (a block of 0 crashes
        block[0] = 5  # LiteRT with a division by zero, see test_block_below_one_refused)
    if op == "SPACE_TO_BATCH_ND" and draw(st.integers(0, 3)) == 0:  # a negative padding crops
        k = draw(st.integers(0, m - 1))
        cut = draw(st.integers(1, 2))
        pads[k][draw(st.integers(0, 1))] -= cut
        pads[k][draw(st.integers(0, 1))] += cut * draw(st.integers(0, 1))
    bv, pv = np.array(block, np.int32), np.array(pads, np.int32).reshape(m, 2)
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    x = values(rng, shape, dt)
    out_q = _other_q(q, draw)
    if draw(st.booleans()):
        model = single_op_model(op, [T(shape, dt, q=q), T.const(bv), T.const(pv)], [T((1,) * rank, dt, q=out_q)])
        return model, [x]
    model = single_op_model(op, [T(shape, dt, q=q), T(bv.shape, np.int32), T(pv.shape, np.int32)], [T((), dt, q=out_q)])
    return model, [x, bv, pv]


@st.composite
def dilate(draw):
    name = draw(st.sampled_from(NUMERIC))
    dt = WIDE_DTYPES[name]
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=7).map(tuple))
    d = np.array([draw(st.integers(1, 3)) for _ in shape], np.int32)
    q = _q(name, draw)
    rng = np.random.default_rng(draw(seeds))
    x, v = values(rng, shape, dt), values(rng, (), dt)
    out = tuple((n - 1) * k + 1 for n, k in zip(shape, d.tolist()))
    ins = [T(shape, dt, q=q), T.const(d) if draw(st.booleans()) else T(d.shape, np.int32), T((), dt, q=q)]
    feeds = [x] + ([] if ins[1].data is not None else [d]) + [v]
    return single_op_model("DILATE", ins, [T(out if ins[1].data is not None else (), dt, q=q)]), feeds


CASES = {
    "space_to_depth-depth_to_space-any": depth(),
    "space_to_batch_nd-batch_to_space_nd-any": batch(),
    "dilate-any": dilate(),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_space(case, data):
    model, inputs = data.draw(CASES[case])
    check_both(model, inputs)


def test_space_to_batch_pads_with_output_zero_point():
    """Quantized SPACE_TO_BATCH_ND fills the padding with the zero point (0.0), not with 0."""
    q = quant(0.5, -7)
    model = single_op_model(
        "SPACE_TO_BATCH_ND",
        [
            T((1, 2, 2, 1), np.int8, q=q),
            T.const(np.array([2, 2], np.int32)),
            T.const(np.array([[1, 1], [1, 1]], np.int32)),
        ],
        [T((4, 2, 2, 1), np.int8, q=q)],
    )
    x = np.array([1, 2, 3, 4], np.int8).reshape(1, 2, 2, 1)
    ours, theirs = run_ours(model, [x]), run_litert(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert (ours[0] == -7).sum() == 12


def test_dynamic_shape_reported_after_each_invoke():
    model = single_op_model("DILATE", [T((2, 3)), T((2,), np.int32), T(())], [T(())])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for d in ([1, 1], [3, 2], [2, 1]):
        ins = it.get_input_details()
        it.set_tensor(ins[0]["index"], x)
        it.set_tensor(ins[1]["index"], np.array(d, np.int32))
        it.set_tensor(ins[2]["index"], np.array(-1, np.float32))
        it.invoke()
        expected = (1 * d[0] + 1, 2 * d[1] + 1)
        assert tuple(it.get_output_details()[0]["shape"]) == expected
        assert it.get_tensor(it.get_output_details()[0]["index"]).shape == expected


@pytest.mark.parametrize("op", ["SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"])
@pytest.mark.parametrize("block", [0, -1])
def test_block_below_one_refused(op, block):
    """LiteRT divides by the block (SIGFPE for 0): litert_py refuses it at prepare."""
    model = single_op_model(
        op,
        [T((4, 2, 2, 1)), T.const(np.array([block, 1], np.int32)), T.const(np.zeros((2, 2), np.int32))],
        [T((4, 2, 2, 1))],
    )
    with pytest.raises(PrepareError, match="block_shape"):
        run_ours(model, [np.zeros((4, 2, 2, 1), np.float32)])


REJECTED = {
    "space_to_depth-int16": (
        "SPACE_TO_DEPTH",
        [T((1, 2, 2, 1), np.int16)],
        [T((1, 1, 1, 4), np.int16)],
        {"block_size": 2},
    ),
    "space_to_depth-rank3": ("SPACE_TO_DEPTH", [T((2, 2, 1))], [T((1, 1, 4))], {"block_size": 2}),
    "depth_to_space-zero-block": ("DEPTH_TO_SPACE", [T((1, 1, 1, 4))], [T((1, 2, 2, 1))], {"block_size": 0}),
    "space_to_batch_nd-string": (
        "SPACE_TO_BATCH_ND",
        [T((1, 2, 2, 1), np.bytes_), T.const(np.array([2, 2], np.int32)), T.const(np.zeros((2, 2), np.int32))],
        [T((4, 1, 1, 1), np.bytes_)],
        None,
    ),
    "space_to_batch_nd-rank5": (
        "SPACE_TO_BATCH_ND",
        [T((1, 2, 2, 1, 1)), T.const(np.array([2, 2, 1], np.int32)), T.const(np.zeros((3, 2), np.int32))],
        [T((4, 1, 1, 1, 1))],
        None,
    ),
    "batch_to_space_nd-negative-crop": (
        "BATCH_TO_SPACE_ND",
        [T((4, 1, 1, 1)), T.const(np.array([2, 2], np.int32)), T.const(np.array([[-2, 0], [0, 0]], np.int32))],
        [T((1, 4, 2, 1))],
        None,
    ),
    "batch_to_space_nd-batch": (
        "BATCH_TO_SPACE_ND",
        [T((3, 1, 1, 1)), T.const(np.array([2, 2], np.int32)), T.const(np.zeros((2, 2), np.int32))],
        [T((1, 2, 2, 1))],
        None,
    ),
    "batch_to_space_nd-crops": (
        "BATCH_TO_SPACE_ND",
        [T((4, 1, 1, 1)), T.const(np.array([2, 2], np.int32)), T.const(np.array([[2, 1], [0, 0]], np.int32))],
        [T((1, 1, 2, 1))],
        None,
    ),
    "dilate-rank0": ("DILATE", [T(()), T.const(np.zeros((0,), np.int32)), T(())], [T(())], None),
    "dilate-value-type": ("DILATE", [T((2,)), T.const(np.array([2], np.int32)), T((), np.int32)], [T((3,))], None),
    "dilate-zero": ("DILATE", [T((2,)), T.const(np.array([0], np.int32)), T(())], [T((1,))], None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_space_rejected(case):
    op, ins, outs, opts = REJECTED[case]
    model = single_op_model(op, ins, outs, opts)
    feeds = [
        np.zeros(t.shape, t.dtype) if t.dtype is not np.bytes_ else np.full(t.shape, b"", object)
        for t in ins
        if t.data is None
    ]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
