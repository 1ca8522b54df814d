"""Bound plans of the classifier tail's steps (ops/bound_plan.BoundCalls): the fused pool -> FULLY_CONNECTED
(-> SOFTMAX) step PooledIntoRows (the pool's reduction, the gather into the FC's GEMM rows, the FC's calls),
PooledReshaped, MeanQuantizedTable (its sums into a buffer of the plan, no allocation per invoke; the copy path
when the reduced axes do not lead) and FullyConnectedSoftmaxTiny: tests/ops/_bound_int8.check_bound_int8 (the
bound invokes give the general path's bytes, every call of the plan is needed) and BUILTIN_REF over many
invokes (tests/ops/test_classifier_tail._compare)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.fully_connected_tail import FullyConnectedSoftmaxTiny, PooledIntoRows, PooledReshaped
from litert_py.ops.reduce import MeanQuantizedTable
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._bound_int8 import check_bound_int8
from tests.ops.test_classifier_tail import _compare, _tail, pool_reshape_model


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", ["mean", "avg"])
@pytest.mark.parametrize("flatten", [False, True])
def test_pooled_into_rows_bound(dtype, pool, flatten):
    model = _tail(dtype, pool, flatten=flatten, ties=False, w_max=20)  # wide weights: the clamp acts (its call needed)
    check_bound_int8(model, PooledIntoRows)
    assert _compare(model, n=20) == ["PooledIntoRows/FullyConnectedSoftmaxTiny"]


def test_pooled_into_fc_without_softmax_bound():
    """The consumer without loaded_calls (a folded FC alone): its run_loaded is one call of the plan."""
    check_bound_int8(_tail(pool="avg", softmax=False, ties=False), PooledIntoRows)


def test_pooled_reshaped_bound():
    check_bound_int8(pool_reshape_model(), PooledReshaped)


def _mean(dtype, shape, axes) -> bytes:
    signed = dtype == np.int8
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(0.05, -5 if signed else 120))
    out_shape = tuple(1 if k in axes else n for k, n in enumerate(shape))
    y = b.tensor("y", out_shape, dtype, quantization=quant(0.03, 7 if signed else 131))
    b.op("MEAN", [x, b.const("axes", np.array(axes, np.int32))], [y], {"keep_dims": True})
    b.output(y)
    return b.build()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize(
    "shape, axes",
    [((1, 6, 5, 16), [1, 2]), ((1, 6, 5, 16), [2]), ((2, 4, 3, 8), [1])],  # rows a view; copied; copied (batch 2)
)
def test_mean_table_bound(dtype, shape, axes):
    model = _mean(dtype, shape, axes)
    check_bound_int8(model, MeanQuantizedTable)
    assert _compare(model, n=20) == ["MeanQuantizedTable"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_fc_softmax_tiny_bound(dtype):
    model = _tail(dtype, pool=None, units=12, w_max=20, ties=False)
    check_bound_int8(model, FullyConnectedSoftmaxTiny)
    assert _compare(model, n=20) == ["FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_fc_softmax_tiny_bound_input_of_more_axes(dtype):
    """An FC input of shape (1, 4, 4) (16 values, one row): the plan loads it through the GEMM buffer's (1, 16)
    view, which for a non-contiguous array is a copy (check_bound's non-contiguous check: a copy made once)."""
    model = _tail(dtype, pool=None, units=8, w_max=20, ties=False, in_shape=(1, 4, 4))
    check_bound_int8(model, FullyConnectedSoftmaxTiny)
    assert _compare(model, n=20) == ["FullyConnectedSoftmaxTiny"]


@pytest.mark.parametrize(("dtype", "per_channel"), [(np.int8, False), (np.uint8, False), (np.int8, True)])
@pytest.mark.parametrize("ties", [True, False])
def test_fc_softmax_tiny_round_when_ties_free(dtype, ties, per_channel):
    """Without ties inside the clamp (``ties=False``: scales that are not powers of two) the requantization rounds
    with Python's round (``ties_free``); with ties (eff = 1/8 or 1/4: many t on a half) it keeps round half away;
    wide weights put values beyond both clamp bounds. Both equal BUILTIN_REF."""
    model = _tail(dtype, pool="mean", units=12, w_max=20, ties=ties, per_channel=per_channel)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    ((step, _, _),) = it._subgraphs[0].steps
    assert step.consumer.ties_free is (not ties)
    assert _compare(model, n=40) == ["PooledIntoRows/FullyConnectedSoftmaxTiny"]
