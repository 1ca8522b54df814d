"""CONV_3D and CONV_3D_TRANSPOSE (float32) against the oracle (ai-edge-litert BUILTIN_REF).

One hypothesis case table per op draws shapes, strides, dilations, padding, activation, bias and constness;
windows LiteRT rejects must be rejected at prepare; the error table checks shapes/types LiteRT refuses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.compare import assert_close
from tests.oracle import T, run_both_unless_rejected, run_litert, run_ours, single_op_model

#: Float tolerance, relative, per term of the accumulation (KD*KH*KW*C).
TOLERANCE = {"CONV_3D": 1e-5, "CONV_3D_TRANSPOSE": 1e-5}


def _opts(d):
    return {
        "padding": d["padding"],
        "stride_d": d["s"][0],
        "stride_h": d["s"][1],
        "stride_w": d["s"][2],
        "dilation_d_factor": d["dl"][0],
        "dilation_h_factor": d["dl"][1],
        "dilation_w_factor": d["dl"][2],
        "fused_activation_function": d["act"],
    }


@st.composite
def cases(draw, transpose: bool):
    d = {
        "n": draw(st.integers(1, 2)),
        "in": tuple(draw(st.integers(1, 5)) for _ in range(3)),
        "k": tuple(draw(st.integers(1, 3)) for _ in range(3)),
        "s": tuple(draw(st.integers(1, 2)) for _ in range(3)),
        "dl": tuple(draw(st.integers(1, 2)) for _ in range(3)),
        "c": draw(st.integers(1, 4)),
        "o": draw(st.integers(1, 4)),
        "padding": draw(st.sampled_from([0, 1])),
        "act": draw(st.sampled_from([0, 1, 2, 3])),
        "bias": draw(st.booleans()),
        "const": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }
    if transpose:
        d["dl"] = (1, 1, 1) if draw(st.booleans()) else d["dl"]
        outs = []
        for i, k, s, dl in zip(d["in"], d["k"], d["s"], d["dl"]):
            eff = (k - 1) * dl + 1
            if d["padding"] == 1:
                outs.append((i - 1) * s + eff + draw(st.integers(0, s - 1)))
            else:
                outs.append((i - 1) * s + draw(st.integers(1, s)))
        d["out"] = tuple(outs)
        if draw(st.integers(0, 4)) == 0:  # any output size: LiteRT rejects those not mapping onto the input
            d["out"] = tuple(draw(st.integers(1, 8)) for _ in range(3))
    return d


def _run(op, d):
    rng = np.random.default_rng(d["seed"])
    x = rng.standard_normal((d["n"], *d["in"], d["c"])).astype(np.float32)
    b = rng.standard_normal(d["o"]).astype(np.float32)
    if op == "CONV_3D":
        f = rng.standard_normal((*d["k"], d["c"], d["o"])).astype(np.float32)
        lead, out_shape = [], (1, 1, 1, 1, d["o"])
    else:
        f = rng.standard_normal((*d["k"], d["o"], d["c"])).astype(np.float32)
        out_shape = (d["n"], *d["out"], d["o"])
        lead = [T.const(np.array(out_shape, np.int32))]
    consts = [f] + ([b] if d["bias"] else [])
    if d["const"]:
        tensors, feeds = [T.const(a) for a in consts], []
    else:
        tensors, feeds = [T(a.shape) for a in consts], list(consts)
    if op == "CONV_3D":
        ins, feeds = [T(x.shape), *tensors], [x, *feeds]
    else:
        ins = [*lead, tensors[0], T(x.shape), *tensors[1:]]
        feeds = ([feeds[0]] if feeds else []) + [x] + feeds[1:]
    model = single_op_model(op, ins, [T(out_shape)], _opts(d))
    return model, feeds, int(np.prod(d["k"])) * d["c"]


def _check(op, d):
    model, feeds, terms = _run(op, d)
    both = run_both_unless_rejected(model, feeds)
    if both is None:
        return
    ours, theirs = both
    assert_close(ours, theirs, rtol=TOLERANCE[op] * terms, atol=1e-5)


@given(d=cases(False))
def test_conv_3d_float32(d):
    _check("CONV_3D", d)


@given(d=cases(True))
def test_conv_3d_transpose_float32(d):
    _check("CONV_3D_TRANSPOSE", d)


ERRORS = {
    "conv3d-int8": ("CONV_3D", [T((1, 2, 2, 2, 1), np.int8), T.const(np.ones((1, 1, 1, 1, 1), np.int8))]),
    "conv3d-4d": ("CONV_3D", [T((1, 2, 2, 1)), T.const(np.ones((1, 1, 1, 1, 1), np.float32))]),
    "conv3d-channels": ("CONV_3D", [T((1, 2, 2, 2, 2)), T.const(np.ones((1, 1, 1, 3, 1), np.float32))]),
    "conv3d-bias": (
        "CONV_3D",
        [T((1, 2, 2, 2, 1)), T.const(np.ones((1, 1, 1, 1, 2), np.float32)), T.const(np.ones(3, np.float32))],
    ),
    "transpose-channels": (
        "CONV_3D_TRANSPOSE",
        [
            T.const(np.array([1, 2, 2, 2, 1], np.int32)),
            T.const(np.ones((1, 1, 1, 1, 3), np.float32)),
            T((1, 2, 2, 2, 2)),
        ],
    ),
    "transpose-shape-4": (
        "CONV_3D_TRANSPOSE",
        [T.const(np.array([1, 2, 2, 1], np.int32)), T.const(np.ones((1, 1, 1, 1, 2), np.float32)), T((1, 2, 2, 2, 2))],
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_conv3d_errors(name):
    op, ins = ERRORS[name]
    dtype = ins[-1].dtype if op == "CONV_3D" else np.float32
    model = single_op_model(op, ins, [T((1, 2, 2, 2, 1), dtype)], {"padding": 1})
    feeds = [np.zeros(t.shape, t.dtype) for t in ins if t.data is None]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
