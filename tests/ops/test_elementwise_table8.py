"""8-bit ADD / SUB / MUL through the 65536-entry table (litert_py/ops/elementwise_quantized.py): the byte-copy index
form (QuantizedTable8Bytes: inputs broadcasting to the output up to BYTES_MAX_TABLE elements) and the other forms
(one full input of more than SMALL_TABLE values, larger outputs), each asserted by its prepared class, against
the oracle (ai-edge-litert BUILTIN_REF) exactly over several invokes, including the extreme bytes (-128 / 127,
0 / 255) whose index bytes a swapped order would misplace; SQUARED_DIFFERENCE's forms likewise."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.errors import InvokeError
from litert_py.ops import elementwise_quantized
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._single_step import both_with_step, invoke_both

I8, U8 = np.int8, np.uint8
RELU = 1


def _model(op: str, shape1, shape2, out_shape, dtype) -> bytes:
    signed = dtype == I8
    b = ModelBuilder()
    x = b.input("x", shape1, dtype, quantization=quant(0.05, -7 if signed else 121))
    y = b.input("y", shape2, dtype, quantization=quant(0.03, 11 if signed else 130))
    z = b.tensor("z", out_shape, dtype, quantization=quant(0.07 if op != "MUL" else 0.04, 3 if signed else 125))
    b.op(op, [x, y], [z], {"fused_activation_function": RELU if op == "SUB" else 0})
    b.output(z)
    return b.build()


CASES = {
    "bytes-4x4x16": ((1, 4, 4, 16), (1, 4, 4, 16), "QuantizedTable8Bytes"),
    "bytes-2048": ((1, 8, 16, 16), (1, 8, 16, 16), "QuantizedTable8Bytes"),
    "bytes-scalar": ((), (), "QuantizedTable8Bytes"),
    "gather-larger": ((1, 30, 25, 8), (1, 30, 25, 8), "QuantizedTable8"),
    "broadcast": ((1, 4, 4, 16), (1, 1, 1, 16), "QuantizedTable8Bytes"),  # broadcasting byte copies
    "broadcast-outer": ((1, 32, 1), (1, 1, 64), "QuantizedTable8Bytes"),  # 2048 values: the bound
    "broadcast-outer-larger": ((1, 33, 1), (1, 1, 64), "QuantizedTable8"),  # 2112: shift / or / take
    "broadcast-rank": ((16,), (4, 2, 16), "QuantizedTable8Bytes"),  # a lower-rank input
    "broadcast-column": ((1, 32, 64), (1, 32, 1), "QuantizedTable8Broadcast"),  # one full input, > SMALL_TABLE
    "broadcast-column-small": ((1, 32, 16), (1, 32, 1), "QuantizedTable8Bytes"),  # 512 = SMALL_TABLE
    "broadcast-gate": ((1, 8, 8, 40), (1, 1, 1, 40), "QuantizedTable8Broadcast"),
    "broadcast-gate-first": ((1, 1, 1, 40), (1, 8, 8, 40), "QuantizedTable8Broadcast"),
    "broadcast-row": ((1, 8, 8, 40), (1, 1, 8, 40), "QuantizedTable8Broadcast"),
    "broadcast-both": ((1, 8, 1, 40), (1, 1, 8, 40), "QuantizedTable8"),
    "broadcast-scalar": ((1000,), (), "QuantizedTable8Broadcast"),  # numpy 1.x: a 0-d uint16 OR made int16
}


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("case", list(CASES))
def test_table8_forms_against_reference(case, op, dtype):
    shape1, shape2, cls = CASES[case]
    out_shape = np.broadcast_shapes(shape1, shape2)
    model = _model(op, shape1, shape2, out_shape, dtype)
    theirs, ours, step = both_with_step(model)
    assert type(step).__name__ == cls
    assert cls != "QuantizedTable8Bytes" or int(np.prod(out_shape)) <= elementwise_quantized.BYTES_MAX_TABLE
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    for k in range(4):
        feeds = []
        for shape in (shape1, shape2):
            v = rng.integers(info.min, info.max + 1, shape).astype(dtype)
            if k == 0:  # the extreme bytes
                v = np.asarray(np.where(rng.random(shape) < 0.5, info.min, info.max), dtype)
            feeds.append(v)
        got, want = invoke_both(theirs, ours, feeds)
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 1 or not out_shape  # the outputs vary: a wrong index shows


def _scalar_model(op: str, dtype, const_first: bool, const_value: int, shape, const_shape, scales, act: int) -> bytes:
    """``op(x, c)`` (or ``op(c, x)``) with ``c`` a one-value constant of shape ``const_shape``."""
    signed = dtype == I8
    sx, sc, so = scales
    b = ModelBuilder()
    x = b.input("x", shape, dtype, quantization=quant(sx, -5 if signed else 120))
    c = b.const("c", np.full(const_shape, const_value, dtype), quantization=quant(sc, 9 if signed else 131))
    out_shape = np.broadcast_shapes(tuple(shape), tuple(const_shape))
    z = b.tensor("z", out_shape, dtype, quantization=quant(so, -2 if signed else 127))
    b.op(op, [c, x] if const_first else [x, c], [z], {"fused_activation_function": act})
    b.output(z)
    return b.build()


SCALAR_SCALES = {  # (x, constant, output)
    "plain": (0.05, 0.03, 0.07),
    "output-fine": (0.5, 0.25, 1e-3),  # most results saturate at the ends
    "input-fine": (1e-4, 2.0, 0.02),
}


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
@pytest.mark.parametrize("const_first", [False, True], ids=["x-op-c", "c-op-x"])
@pytest.mark.parametrize("scales", list(SCALAR_SCALES))
def test_table8_scalar_constant(dtype, op, const_first, scales):
    """QuantizedTable8Scalar (one input a one-value constant: one gather from a 256-entry row of the pair
    table) against the oracle on every input byte, with the constant at both ends of the type and in between,
    in either position, fused RELU and none, an output of higher rank than the input (a reshape)."""
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 16, 16)
    for const_value, act, const_shape in ((info.min, 0, (1,)), (info.max, RELU, (1, 1, 1, 1)), (3, 0, ())):
        if op == "DIV" and const_first:
            const_value = info.max  # x is the divisor: its zero point is among the inputs, so it is not folded
        model = _scalar_model(op, dtype, const_first, const_value, x.shape, const_shape, SCALAR_SCALES[scales], act)
        theirs, ours, step = both_with_step(model)
        if op == "DIV" and const_first:
            assert type(step).__name__ == "QuantizedTable8"  # the divisor check stays at invoke
            x = x[x != (-5 if dtype == I8 else 120)].reshape(1, 1, -1)  # LiteRT fails on a zero divisor
            theirs, ours, step = both_with_step(
                _scalar_model(op, dtype, True, const_value, x.shape, const_shape, SCALAR_SCALES[scales], act)
            )
        else:
            assert type(step).__name__ == "QuantizedTable8Scalar"
        got, want = invoke_both(theirs, ours, [x])
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 1 or scales != "plain"


def test_table8_scalar_constant_zero_divisor_fails_at_invoke():
    """DIV by a constant equal to its zero point keeps the pair table, which fails the invoke as LiteRT does."""
    model = _scalar_model("DIV", I8, False, 9, (1, 4), (1,), (0.05, 0.03, 0.07), 0)
    _, ours, step = both_with_step(model)
    assert type(step).__name__ == "QuantizedTable8"
    ours.set_tensor(ours.get_input_details()[0]["index"], np.ones((1, 4), I8))
    with pytest.raises(InvokeError):
        ours.invoke()


@pytest.mark.parametrize(
    ("shape1", "shape2", "cls"),
    [
        ((1, 32, 64), (1, 32, 1), "QuantizedTable8Broadcast"),  # a layer norm's (x - mean)^2
        ((1, 16, 16), (1, 16, 1), "QuantizedTable8Bytes"),
        ((1, 8, 1), (1, 1, 24), "QuantizedTable8Bytes"),
        ((1, 8, 8), (1, 8, 8), "QuantizedTable8Bytes"),
    ],
)
def test_squared_difference_table_forms(shape1, shape2, cls):
    """int8 SQUARED_DIFFERENCE takes the same table forms as ADD / SUB / MUL (table_op), against BUILTIN_REF."""
    out_shape = np.broadcast_shapes(shape1, shape2)
    b = ModelBuilder()
    x = b.input("x", shape1, I8, quantization=quant(0.05, -7))
    y = b.input("y", shape2, I8, quantization=quant(0.03, 11))
    z = b.tensor("z", out_shape, I8, quantization=quant(0.02, -100))
    b.op("SQUARED_DIFFERENCE", [x, y], [z])
    b.output(z)
    theirs, ours, step = both_with_step(b.build())
    assert type(step).__name__ == cls
    rng = np.random.default_rng(5)
    for k in range(4):
        feeds = [rng.integers(-128, 128, s).astype(I8) for s in (shape1, shape2)]
        if k == 0:
            feeds = [np.asarray(np.where(rng.random(s) < 0.5, -128, 127), I8) for s in (shape1, shape2)]
        got, want = invoke_both(theirs, ours, feeds)
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 1
