"""QUANTIZE float32 -> int through quantize.quantize_store's overflow screen (``dot(t, t) < 4^k`` before the exact
check of quotients outside int32 or NaN) against BUILTIN_REF, bit for bit, on a streaming model's frame size: each
special quotient alone among ordinary ones (NaN, +-inf, +-2^31 and the float32 just below, +-1e12, +-3e38), many
quotients just inside int32 (the screen fires, the exact check finds nothing), for zero points of every store kind
(unsigned: int8 -128 / uint8 0; signed: int8 0, int16 0; the int16 store of an 8-bit output: int8 5, uint8 128)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.quantize import QuantizeFloatStore, quantize_store
from litert_py.ops.slice_views import StoreInto
from litert_py.schema.builder import ModelBuilder
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

BELOW = float(np.nextafter(np.float32(2.0**31), np.float32(0)))  # 2147483520: inside int32
SPECIAL = [np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31), BELOW, -BELOW, 1e12, -1e12, 3e38, -3e38]
CASES = [(np.int8, -128), (np.uint8, 0), (np.int8, 0), (np.int16, 0), (np.int8, 5), (np.uint8, 128)]


def quantize_model(dtype, zp: int, stored: bool, n: int = 40) -> bytes:
    """QUANTIZE of a (1, 1, 1, n) float input; ``stored``: then a RESHAPE to (1, n), the output (QUANTIZE stores
    into it: StoreInto with quantize_store over 1-d views)."""
    if not stored:
        return single_op_model("QUANTIZE", [T((1, 1, 1, n), np.float32)], [T((1, 1, 1, n), dtype, q=quant(1.0, zp))])
    b = ModelBuilder()
    x = b.input("x", (1, 1, 1, n), np.float32)
    q = b.tensor("q", (1, 1, 1, n), dtype, quantization=quant(1.0, zp))
    b.op("QUANTIZE", [x], [q])
    y = b.tensor("y", (1, n), dtype, quantization=quant(1.0, zp))
    b.op("RESHAPE", [q, b.const("shape", np.array([1, n], np.int32))], [y], {})
    b.output(y)
    return b.build()


@pytest.mark.parametrize("stored", [False, True], ids=["call", "stored"])
@pytest.mark.parametrize("dtype, zp", CASES, ids=[f"{np.dtype(d).name}-zp{z}" for d, z in CASES])
def test_quantize_store_overflow_screen(dtype, zp, stored):
    model = quantize_model(dtype, zp, stored)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    if stored:  # the plan over 1-d views
        assert type(op) is StoreInto and type(op.op) is QuantizeFloatStore
        assert op._plan[0] is quantize_store and op._plan[1][0] is op.op._flat_plan
    else:
        assert type(op) is QuantizeFloatStore
    rng = np.random.default_rng(3)
    frames = []
    for v in SPECIAL:
        for pos in (0, 17, 39):
            x = (rng.standard_normal(40) * 90).astype(np.float32)
            x[pos] = v
            frames.append(x)
    frames.append(np.full(40, BELOW, np.float32))  # squares above the screen, nothing outside int32
    frames.append(np.full(40, -BELOW, np.float32))
    frames.append(np.where(np.arange(40) % 2 == 0, BELOW, -BELOW).astype(np.float32))
    for x in frames:
        x = x.reshape(1, 1, 1, 40)
        (ours,) = run_ours(model, [x])
        (theirs,) = run_litert(model, [x])
        np.testing.assert_array_equal(ours, theirs, err_msg=f"input {x.ravel()[[0, 17, 39]]}")


WIDE = [2**16, 2**24 - 1, 2**24 + 1, 2**30, 2**31 - 1, 2**31 - 40000, -(2**16), -(2**30), -(2**31), -(2**31) + 50]


@pytest.mark.parametrize("zp", WIDE)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_quantize_wide_zero_points(dtype, zp):
    """Zero points of 2^16 and more in magnitude (quantize.QuantizeFloatWideZeroPoint: int64 arithmetic, the
    quotient outside int32 or NaN as INT32_MIN, the zero point added with int32 wrap-around) against BUILTIN_REF:
    float32 bounds qmin - zp are inexact from 2^24 on, and near the int32 limits a wrapped round(t) + zp lands
    anywhere (int16, zp = 2^31 - 1, x = 1: -32768)."""
    x = np.array([0, 1, -1, 2.5, -2.5, 100, -100, 1e6, -1e6, 3e7, -3e7, *SPECIAL], np.float32)
    model = single_op_model("QUANTIZE", [T(x.shape, np.float32)], [T(x.shape, dtype, q=quant(1.0, zp))])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])
