"""What the fused-steps fuzzer (tests/fuzz/test_fuzz_fused.py, tools/fuzz_fused.py) found, each as a minimal model
compared with BUILTIN_REF by the fuzzer's check (``fused_check.compare``: equal outputs over several invokes, or
both runtimes refusing the model). A known gap is a strict xfail naming the suspected cause; when it is fixed the
test passes, the xfail fails, and the mark goes (as for the bias-scale check below, fixed after it was found).
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant
from tests.fuzz.fused_check import compare
from tests.fuzz.fused_models import Case


def _per_tensor_weights_per_channel_bias(op: str, dtype) -> bytes:
    """``op`` with per-tensor weights (scale 0.01) and a bias quantized with two (equal) scales 0.0005, input scale
    0.05, output scale 0.02: input * weights / output = 0.025 (found by the fuzzer drawing uint8 layers whose
    bias scales were broadcast per channel)."""
    b = ModelBuilder()
    x = b.input("x", (1, 1, 1, 2), dtype, quantization=quant(0.05, 3))
    shape = {"CONV_2D": (2, 1, 1, 2), "DEPTHWISE_CONV_2D": (1, 1, 1, 2), "FULLY_CONNECTED": (2, 2)}[op]
    w = b.const("w", np.full(shape, 5, dtype), quantization=quant(0.01, 128 if dtype == np.uint8 else 0))
    bias = b.const("b", np.array([10, -10], np.int32), quantization=quant([0.0005, 0.0005]))
    y = b.tensor("y", (1, 2) if op == "FULLY_CONNECTED" else (1, 1, 1, 2), dtype, quantization=quant(0.02, 5))
    opts = {} if op == "FULLY_CONNECTED" else {"padding": 1, "stride_h": 1, "stride_w": 1}
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = 1
    b.op(op, [x, w, bias], [y], opts)
    b.output(y)
    return b.build()


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        ("CONV_2D", np.uint8),
        ("DEPTHWISE_CONV_2D", np.uint8),
        ("FULLY_CONNECTED", np.uint8),
        ("FULLY_CONNECTED", np.int8),
    ],
)
def test_per_tensor_weights_with_a_per_channel_bias_refused(op, dtype):
    """Both refuse: GetQuantizedConvolutionMultipler (kernel_util.cc) reads the bias's legacy params.scale, 0 for a
    tensor quantized with several scales (InterpreterBuilder sets it only for one), so |s_in * s_w - 0| / s_out =
    0.025 > 0.02 (litert_py: TensorInfo.legacy_scale; it compared with the first scale before)."""
    r = compare(Case(_per_tensor_weights_per_channel_bias(op, dtype), "found", [], 0, False, 3))
    assert r.kind in ("ok", "rejected"), r.message


@pytest.mark.parametrize(("op", "dtype"), [("CONV_2D", np.int8), ("DEPTHWISE_CONV_2D", np.int8)])
def test_per_tensor_int8_conv_with_a_per_channel_bias_runs(op, dtype):
    """The int8 conv kernels take the per-channel path (no bias-scale check in LiteRT): both run it, equal."""
    r = compare(Case(_per_tensor_weights_per_channel_bias(op, dtype), "found", [], 0, False, 3))
    assert r.kind == "ok", r.message
