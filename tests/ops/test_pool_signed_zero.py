"""Float AVERAGE_POOL_2D sums from +0.0 as LiteRT's reference (``float total = 0.f``): a window of -0.0 values
averages to +0.0, not -0.0 (pool_common.sum_taps). Compared bit for bit with BUILTIN_REF, on the per-tap path
(AveragePoolFloat: padded windows, one channel) and the tiled one."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from tests.oracle import T, run_litert, single_op_model

F32 = np.float32


def _pool(shape, k, stride, padding):
    opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "filter_height": k, "filter_width": k}
    n, h, w, c = shape
    oh = -(-h // stride) if padding == 0 else (h - k) // stride + 1
    ow = -(-w // stride) if padding == 0 else (w - k) // stride + 1
    return single_op_model("AVERAGE_POOL_2D", [T(shape)], [T((n, oh, ow, c))], opts)


@pytest.mark.parametrize(
    "shape, k, stride, padding, step",
    [
        ((1, 6, 6, 3), 3, 1, 0, "AveragePoolFloat"),  # SAME: no tap covers every output
        ((1, 6, 6, 3), 2, 1, 1, "AveragePoolFloat"),  # VALID, stride 1: the first two taps cover every output
        ((1, 7, 5, 1), 3, 2, 1, "AveragePoolFloat"),  # one channel
        ((1, 6, 6, 1), 1, 1, 1, "AveragePoolFloat"),  # 1x1: one tap
        ((1, 8, 8, 4), 4, 4, 1, "AveragePoolFloatTiled"),  # tiling windows, one reduction
    ],
)
def test_negative_zero_windows_average_to_positive_zero(shape, k, stride, padding, step):
    model = _pool(shape, k, stride, padding)
    x = np.full(shape, -0.0, F32)
    x[0, -1, -1, 0] = 2.0  # one window with a value, the rest of -0.0 only
    x[0, 0, 0, -1] = np.nan
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps_nodes[0][1]).__name__ == step
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    ours = it.get_tensor(it.get_output_details()[0]["index"])
    (ref,) = run_litert(model, [x], "BUILTIN_REF")
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours.view(np.uint32)[~nan], ref.view(np.uint32)[~nan])
    assert (ref[~nan] == 0).any() and not np.signbit(ref[~nan][ref[~nan] == 0]).any()  # the case is exercised


@pytest.mark.parametrize(
    "shape, k, stride, padding, step",
    [
        ((1, 6, 6, 3), 2, 1, 1, "AveragePoolFloat"),  # one count
        ((1, 6, 6, 3), 3, 1, 0, "AveragePoolFloat"),  # SAME: a count per output position
        ((1, 8, 8, 4), 4, 4, 1, "AveragePoolFloatTiled"),
    ],
)
def test_float_constants_are_prepared_arrays(shape, k, stride, padding, step):
    """The divisor and the clamp bounds are arrays made at prepare (0-d for one value: no scalar conversion per
    call); the values compared with BUILTIN_REF bit for bit above and in test_pooling.py."""
    it = litert_py.Interpreter(model_content=_pool(shape, k, stride, padding))
    it.allocate_tensors()
    ((_, op),) = it._subgraphs[0].steps_nodes
    assert type(op).__name__ == step
    for value in (op.count, op.out_min, op.out_max):
        assert type(value) is np.ndarray and value.dtype == F32
    assert op.out_min.shape == op.out_max.shape == ()
    assert (op.count.shape == ()) == (padding == 1)
