"""The fast forms of DEQUANTIZE and QUANTIZE on large tensors against BUILTIN_REF, bit for bit.

DEQUANTIZE per tensor in float32 arithmetic (quantize.DequantizeAffine: ``f32(q - zp) * f32(scale)``) against
the reference's ``f32(f64(scale) * (q - zp))`` over every input value: scales whose products round (0.1, 1/3),
fall to subnormals, overflow to inf; zero points at the type's ends and far outside it (up to
DEQUANTIZE_ZP_MAX); and the inputs that keep the 256 / 65536-entry table. QUANTIZE float32 -> int with the
bitwise copysign (quantize.copysign_half_down, from BITWISE_COPYSIGN_FROM values): the halves and their float32
neighbours of both signs, +-0, infinities and NaN."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.quantize import BITWISE_COPYSIGN_FROM, DEQUANTIZE_ZP_MAX
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

SCALES = [0.1, 1 / 3, 0.0078125, 1.7e-40, 3e-38, 1e-45, 3.0e36, 3.4e38]


def prepared_name(model: bytes) -> str:
    """The class name of the one-op model's prepared op."""
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    return type(prepared).__name__


def every_value(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype)


@pytest.mark.parametrize(
    "dtype, zero_point, kind",
    [
        (np.int8, 0, "DequantizeAffine"),
        (np.int8, -128, "DequantizeAffine"),
        (np.int8, 127, "DequantizeAffine"),
        (np.int8, 2**20 + 3, "DequantizeAffine"),
        (np.int8, -DEQUANTIZE_ZP_MAX, "DequantizeAffine"),
        (np.int8, DEQUANTIZE_ZP_MAX + 1, "TableLookup"),  # q - zp may pass 2^24: the exact table
        (np.uint8, 128, "DequantizeAffine"),
        (np.uint8, 255, "DequantizeAffine"),
        (np.int16, 0, "DequantizeAffine"),
    ],
)
def test_dequantize_per_tensor_every_value(dtype, zero_point, kind):
    x = every_value(dtype)
    for scale in SCALES:
        model = single_op_model("DEQUANTIZE", [T(x.shape, dtype, q=quant(scale, zero_point))], [T(x.shape, np.float32)])
        assert prepared_name(model) == kind
        (ours,) = run_ours(model, [x])
        (theirs,) = run_litert(model, [x])
        assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), f"scale {scale}: {ours} != {theirs}"


def test_dequantize_small_inputs_keep_the_table():
    """Fewer than DEQUANTIZE_TABLE_BELOW values: one np.take (TableLookup), one value: TableLookupScalar."""
    for n, kind in ((1, "TableLookupScalar"), (63, "TableLookup"), (64, "DequantizeAffine")):
        model = single_op_model("DEQUANTIZE", [T((n,), np.int8, q=quant(0.5, 3))], [T((n,), np.float32)])
        assert prepared_name(model) == kind


@pytest.mark.parametrize(
    "dtype, zp, kind",
    [
        (np.int8, -5, "QuantizeFloatStore"),  # v in [-123, 132]: the int16 store
        (np.int8, 0, "QuantizeFloatStore"),
        (np.int16, 0, "QuantizeFloatStore"),
        (np.uint8, 100, "QuantizeFloatStore"),
        (np.int16, 5, "QuantizeFloat"),
    ],
)
def test_quantize_float_large_signed_rounding(dtype, zp, kind):
    """Quotients at x.5 and one ulp either side, both signs, through the bitwise copysign: half away from zero."""
    halves = np.arange(-70, 70, dtype=np.float32) + np.float32(0.5)
    near = np.concatenate([np.nextafter(halves, -np.inf), halves, np.nextafter(halves, np.inf)])
    special = np.float32([0.0, -0.0, 0.49999997, -0.49999997, np.inf, -np.inf, np.nan, 1e12, -1e12])
    rng = np.random.default_rng(7)
    x = np.concatenate([near, special, (rng.standard_normal(BITWISE_COPYSIGN_FROM) * 60).astype(np.float32)])
    x = x.reshape(1, -1)
    model = single_op_model("QUANTIZE", [T(x.shape, np.float32)], [T(x.shape, dtype, q=quant(1.0, zp))])
    assert prepared_name(model) == kind
    (ours,) = run_ours(model, [x])
    (theirs,) = run_litert(model, [x])
    np.testing.assert_array_equal(ours, theirs)
