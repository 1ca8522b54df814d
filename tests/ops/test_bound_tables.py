"""The 8-bit table ops' bound plans (ops/elementwise_quantized.py QuantizedTable8, QuantizedTable8Bytes,
QuantizedTable8Broadcast; ops/activations_quantized.py ActivationLut, ActivationLutPairs): inside invokes they run
their numpy calls on the bound arrays, and give the bytes of the op bound to fresh copies on inputs with both
extremes and random values; removing any call of a plan is caught (tests/ops/_bound_int8.py). The values
themselves are checked against the oracle by test_elementwise_table8.py and test_activations_quantized.py."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops import activations_quantized, elementwise_quantized
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._bound_int8 import check_bound_int8
from tests.ops.test_elementwise_table8 import _model, _scalar_model

I8, U8 = np.int8, np.uint8


@pytest.mark.parametrize("dtype", [I8, U8])
@pytest.mark.parametrize(
    "op, shape1, shape2, kind",
    [
        ("ADD", (1, 4, 4, 16), (1, 4, 4, 16), elementwise_quantized.QuantizedTable8Bytes),
        ("SUB", (1, 30, 25, 8), (1, 30, 25, 8), elementwise_quantized.QuantizedTable8),
        ("MUL", (1, 8, 8, 40), (1, 1, 1, 40), elementwise_quantized.QuantizedTable8Broadcast),
        ("MUL", (1, 1, 1, 40), (1, 8, 8, 40), elementwise_quantized.QuantizedTable8Broadcast),
    ],
)
def test_table8_bound(op, shape1, shape2, kind, dtype):
    out_shape = tuple(np.broadcast_shapes(shape1, shape2))
    check_bound_int8(_model(op, shape1, shape2, out_shape, dtype), kind)


def _activation(op: str, shape, dtype) -> bytes:
    signed = dtype == I8
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(0.05, -7 if signed else 121))
    y = b.tensor("y", shape, dtype, quantization=quant(0.04, -3 if signed else 120))
    b.op(op, [x], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("dtype", [I8, U8])
@pytest.mark.parametrize(
    "shape, kind",
    [((1, 5, 5, 3), activations_quantized.ActivationLut), ((1, 48, 40, 8), activations_quantized.ActivationLutPairs)],
)
def test_activation_lut_bound(shape, kind, dtype):
    check_bound_int8(_activation("HARD_SWISH", shape, dtype), kind)


@pytest.mark.parametrize("dtype", [I8, U8])
@pytest.mark.parametrize(
    "op, shape, const_first, kind",
    [
        ("ADD", (1, 16, 16), False, elementwise_quantized.QuantizedTable8Scalar),
        ("MUL", (1, 4, 5), True, elementwise_quantized.QuantizedTable8Scalar),
        ("ADD", (1, 48, 40, 8), False, elementwise_quantized.QuantizedTable8ScalarPairs),
    ],
)
def test_table8_scalar_bound(op, shape, const_first, kind, dtype):
    """One input a one-value constant (of shape (1, 1, 1, 1): an output of higher rank than a 3-d input)."""
    model = _scalar_model(op, dtype, const_first, 3, shape, (1, 1, 1, 1), (0.05, 0.03, 0.07), 0)
    check_bound_int8(model, kind)
