"""DEQUANTIZE per tensor in float32 arithmetic (quantize.DequantizeAffine: ``f32(q - zp) * f32(scale)``)
against BUILTIN_REF's ``f32(f64(scale) * (q - zp))``, bit for bit, over every input value: scales whose
products round (0.1, 1/3), fall to subnormals, overflow to inf; zero points at the type's ends and far
outside it (up to DEQUANTIZE_ZP_MAX); and the inputs that keep the 256 / 65536-entry table."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.quantize import DEQUANTIZE_ZP_MAX
from tests.oracle import T, quant, run_litert, run_ours, single_op_model

SCALES = [0.1, 1 / 3, 0.0078125, 1.7e-40, 3e-38, 1e-45, 3.0e36, 3.4e38]


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
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert type(prepared).__name__ == kind
        (ours,) = run_ours(model, [x])
        (theirs,) = run_litert(model, [x])
        assert np.array_equal(ours.view(np.int32), theirs.view(np.int32)), f"scale {scale}: {ours} != {theirs}"


def test_dequantize_small_inputs_keep_the_table():
    """Fewer than DEQUANTIZE_TABLE_BELOW values: one np.take (TableLookup), one value: TableLookupScalar."""
    for n, kind in ((1, "TableLookupScalar"), (63, "TableLookup"), (64, "DequantizeAffine")):
        model = single_op_model("DEQUANTIZE", [T((n,), np.int8, q=quant(0.5, 3))], [T((n,), np.float32)])
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (prepared,) = it._subgraphs[0].prepared_ops.values()
        assert type(prepared).__name__ == kind
