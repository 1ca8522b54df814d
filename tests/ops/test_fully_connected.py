"""FULLY_CONNECTED float32 against the oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tests.oracle import T, assert_close, run_both, single_op_model


@given(batch=st.integers(1, 4), depth=st.integers(1, 33), units=st.integers(1, 17), act=st.sampled_from([0, 1, 2, 3]),
       with_bias=st.booleans(), keep=st.booleans(), lead=st.integers(1, 3), seed=st.integers(0, 2**31 - 1))
def test_fully_connected_float(batch, depth, units, act, with_bias, keep, lead, seed):
    rng = np.random.default_rng(seed)
    in_shape = (lead, batch, depth)
    w = rng.standard_normal((units, depth)).astype(np.float32)
    b = rng.standard_normal(units).astype(np.float32)
    out_shape = (lead, batch, units) if keep else (lead * batch, units)
    model = single_op_model("FULLY_CONNECTED", [T(in_shape), T.const(w), T.const(b) if with_bias else None],
                            [T(out_shape)], {"fused_activation_function": act, "keep_num_dims": keep})
    x = rng.standard_normal(in_shape).astype(np.float32)
    ours, theirs = run_both(model, [x])
    assert_close(ours, theirs, rtol=1e-5 * depth)
