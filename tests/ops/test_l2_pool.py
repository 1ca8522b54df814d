"""L2_POOL_2D (float32) against the oracle (ai-edge-litert BUILTIN_REF); non-float types are rejected."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from tests.compare import assert_close
from tests.oracle import T, quant, run_both, run_litert, run_ours, single_op_model

#: The reference's float sum of squares in the same order, then sqrt: exact (correctly rounded sqrt).
TOLERANCE = {"L2_POOL_2D": 0.0}


@st.composite
def cases(draw):
    return {
        "n": draw(st.integers(1, 2)),
        "h": draw(st.integers(1, 9)),
        "w": draw(st.integers(1, 9)),
        "c": draw(st.integers(1, 4)),
        "fh": draw(st.integers(1, 4)),
        "fw": draw(st.integers(1, 4)),
        "sh": draw(st.integers(1, 3)),
        "sw": draw(st.integers(1, 3)),
        "padding": draw(st.sampled_from([0, 1])),
        "act": draw(st.sampled_from([0, 1, 2, 3])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@given(d=cases())
def test_l2_pool_2d_float32(d):
    x = (np.random.default_rng(d["seed"]).standard_normal((d["n"], d["h"], d["w"], d["c"])) * 2).astype(np.float32)
    opts = {
        "padding": d["padding"],
        "stride_h": d["sh"],
        "stride_w": d["sw"],
        "filter_height": d["fh"],
        "filter_width": d["fw"],
        "fused_activation_function": d["act"],
    }
    model = single_op_model("L2_POOL_2D", [T(x.shape)], [T(x.shape)], opts)
    ours, theirs = run_both(model, [x])
    assert ours[0].shape == theirs[0].shape
    assert_close(ours, theirs, rtol=TOLERANCE["L2_POOL_2D"], atol=0)


@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_l2_pool_2d_rejects_non_float(dtype):
    q = quant(0.1, 0) if dtype == np.int8 else None
    model = single_op_model(
        "L2_POOL_2D",
        [T((1, 4, 4, 1), dtype, q=q)],
        [T((1, 2, 2, 1), dtype, q=q)],
        {"padding": 1, "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2},
    )
    feeds = [np.zeros((1, 4, 4, 1), dtype)]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
