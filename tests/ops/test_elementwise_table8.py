"""8-bit ADD / SUB / MUL through the 65536-entry table (litert_py/ops/elementwise_quantized.py): the byte-copy index
form (QuantizedTable8Bytes: same-shape inputs up to BYTES_MAX_TABLE elements) and the other forms (broadcasting,
larger outputs), each asserted by its prepared class, against the oracle (ai-edge-litert BUILTIN_REF) exactly over
several invokes, including the extreme bytes (-128 / 127, 0 / 255) whose index bytes a swapped order would
misplace."""

from __future__ import annotations

import numpy as np
import pytest

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
    "broadcast": ((1, 4, 4, 16), (1, 1, 1, 16), "QuantizedTable8"),
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
