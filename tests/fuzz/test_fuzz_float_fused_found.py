"""What the float fusion fuzzer (tests/fuzz/test_fuzz_float_fused.py, ``tools/fuzz_fused.py --float``) found, each
as a minimal model. A known gap is a strict xfail naming the cause; when it is fixed the xfail fails and the mark
goes.

Found in the first 3500-case campaign (seed 1): a float CONV_2D / DEPTHWISE_CONV_2D with SAME padding whose
constant filter holds a NaN (or +-inf) at a tap that, for some output pixel, lies over the padding. LiteRT's
reference kernels (reference/conv.h, reference/depthwiseconv_float.h: ``if (is_point_inside_image)``) skip such a
tap, so the NaN never enters that pixel's sum; XNNPACK (LiteRT's AUTO) and litert_py multiply the zero padding by
it (im2col / padded einsum: 0 * NaN = NaN). Fused and unfused litert_py agree: not a fusion bug.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_litert, run_ours


def _padded_tap_model(op: str, bad: float) -> bytes:
    """``op`` with a 2x2 filter of ones over a 1x1x1 input, SAME padding: only tap (0, 0) is over the image; tap
    (1, 1) holds ``bad``. The reference's output is x * 1 + bias."""
    b = ModelBuilder()
    x = b.input("x", (1, 1, 1, 1), np.float32)
    w = np.ones((1, 2, 2, 1), np.float32)
    w[0, 1, 1, 0] = bad
    opts = {"padding": 0, "stride_h": 1, "stride_w": 1}
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = 1
    y = b.tensor("y", (1, 1, 1, 1), np.float32)
    b.op(op, [x, b.const("w", w), b.const("b", np.full(1, 0.5, np.float32))], [y], opts)
    b.output(y)
    return b.build()


CASES = [(op, bad) for op in ("CONV_2D", "DEPTHWISE_CONV_2D") for bad in (np.nan, np.inf)]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="a non-finite filter tap over the padding: BUILTIN_REF skips it, litert_py (as XNNPACK) multiplies "
    "the zero padding by it (NaN); ops/conv/* would have to skip out-of-image taps when the filter is non-finite",
)
@pytest.mark.parametrize(("op", "bad"), CASES)
def test_non_finite_filter_tap_over_padding_like_builtin_ref(op, bad):
    model, x = _padded_tap_model(op, bad), np.full((1, 1, 1, 1), 2.0, np.float32)
    assert_close(run_ours(model, [x]), run_litert(model, [x], "BUILTIN_REF"))


@pytest.mark.parametrize(("op", "bad"), CASES)
def test_non_finite_filter_tap_over_padding_like_auto(op, bad):
    """What litert_py does today, as LiteRT's default (XNNPACK) does: NaN."""
    model, x = _padded_tap_model(op, bad), np.full((1, 1, 1, 1), 2.0, np.float32)
    ours, auto = run_ours(model, [x]), run_litert(model, [x], "AUTO")
    assert_close(ours, auto)
    assert np.isnan(ours[0]).all()
