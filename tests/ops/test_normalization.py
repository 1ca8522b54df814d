"""L2_NORMALIZATION (float32, uint8, int8) vs ai-edge-litert BUILTIN_REF, LOCAL_RESPONSE_NORMALIZATION (float32) vs
LiteRT's default kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES and AUTO), which follow TensorFlow's definition.

One case table drives the tests: hypothesis draws shapes, values, input qparams (scales 1e-6 .. 1e3, zero points
at the type ends included) and LRN options. Quantized results are compared exactly, float ones within TOLERANCE.
LiteRT's reference LRN sums the window [c - r, c + r) instead of [c - r, c + r]: the comparison with it is a strict
xfail. LiteRT 2.3.0 has no integer LOCAL_RESPONSE_NORMALIZATION (output type must be float32): int8 is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, quant, run_both, run_litert, single_op_model
from tests.values import values

I8, U8 = np.int8, np.uint8

#: float tolerance (rtol, times the reduction length): L2 sums squares in a different order (einsum) than the
#: C++ loop; LRN is exact for beta 1 and 0.5 (the optimized kernel's running sum in its order), a few ulp from
#: Eigen's float pow otherwise (LRN_POW_RTOL, not scaled by the length)
TOLERANCE = {"l2_normalization-float32": 1e-6, "local_response_normalization-float32": 0.0}
LRN_POW_RTOL = 1e-6
#: the resolver each case is compared with: LRN follows LiteRT's default kernels (the reference kernel is wrong)
RESOLVER = {"local_response_normalization-float32": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}

CASES = [
    ("L2_NORMALIZATION", np.float32),
    ("L2_NORMALIZATION", U8),
    ("L2_NORMALIZATION", I8),
    ("LOCAL_RESPONSE_NORMALIZATION", np.float32),
]
OUTPUT_QPARAMS = {U8: (1 / 128, 128), I8: (1 / 128, 0)}


def _id(case) -> str:
    return f"{case[0].lower()}-{np.dtype(case[1]).name}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_normalization(case, data, seed):
    op, dtype = case
    rng = np.random.default_rng(seed)
    lrn = op == "LOCAL_RESPONSE_NORMALIZATION"
    shape = data.draw(shapes(4, 4, max_dim=6) if lrn else shapes(1, 6, max_dim=4), label="shape")
    if not lrn and data.draw(st.booleans(), label="long rows"):
        shape = shape[:-1] + (data.draw(st.integers(50, 3000), label="depth"),)
    options = None
    if lrn:
        options = {
            "radius": data.draw(st.integers(0, 8), label="radius"),
            "bias": data.draw(st.sampled_from([1.0, 2.0, 0.5, 1e-3]), label="bias"),
            "alpha": data.draw(st.sampled_from([1.0, 1e-4, 0.5, 3.0]), label="alpha"),
            "beta": data.draw(st.sampled_from([0.75, 0.5, 1.0, 2.0, -1.0]), label="beta"),
        }
    if np.dtype(dtype).kind == "f":
        regime = data.draw(regimes(dtype), label="regime")
        x = values(rng, shape, dtype, regime)
        model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)], options)
        ours, theirs = run_both(model, [x], RESOLVER.get(_id(case), "BUILTIN_REF"))
        rtol = TOLERANCE[_id(case)] * max(shape[-1], 1)
        atol = 0.0
        if lrn and options["beta"] not in (0.5, 1.0):
            rtol = LRN_POW_RTOL
            # d^-beta, or the output itself, may be subnormal (d ~ 5e19, beta 2: 4e-40), where a few ulp of the two
            # pows are 2^-149 each, not relative to the value: times x in the output, plus the output's own
            # (found by the long hypothesis profile)
            with np.errstate(over="ignore", invalid="ignore"):
                atol = 4 * (np.abs(x.astype(np.float64)) + 1) * 2.0**-149
        assert_close(ours, theirs, rtol_each=rtol, atol=atol)
        return
    info = np.iinfo(dtype)
    s_in, z_in = data.draw(qparams(dtype, -6.0, 3.0), label="in")
    regime = data.draw(st.sampled_from(["full", "narrow", "zero"]), label="regime")
    if regime == "narrow":
        x = np.clip(z_in + rng.integers(-3, 4, size=shape), info.min, info.max).astype(dtype)
    elif regime == "zero":  # rows equal to the zero point: GetInvSqrtQuantizedMultiplierExp(0)
        x = np.full(shape, z_in, dtype)
    else:
        x = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True).astype(dtype)
    model = single_op_model(
        op, [T(shape, dtype, q=quant(s_in, z_in))], [T(shape, dtype, q=quant(*OUTPUT_QPARAMS[dtype]))]
    )
    assert_close(*run_both(model, [x]))


_Q = quant(0.1, 0)
REJECTS = [  # (id, op, input spec, output spec, options): refused at prepare by both runtimes
    ("l2_normalization-int16", "L2_NORMALIZATION", T((2, 3), np.int16, q=_Q), T((2, 3), np.int16, q=_Q), None),
    ("l2_normalization-rank0", "L2_NORMALIZATION", T(()), T(()), None),
    ("l2_normalization-relu", "L2_NORMALIZATION", T((2, 3)), T((2, 3)), {"fused_activation_function": 1}),
    (
        "l2_normalization-uint8-bad-scale",
        "L2_NORMALIZATION",
        T((2, 3), U8, q=_Q),
        T((2, 3), U8, q=quant(0.1, 128)),
        None,
    ),
    (
        "l2_normalization-int8-bad-zero-point",
        "L2_NORMALIZATION",
        T((2, 3), I8, q=_Q),
        T((2, 3), I8, q=quant(1 / 128, 128 - 256 + 1)),
        None,
    ),
    ("lrn-rank3", "LOCAL_RESPONSE_NORMALIZATION", T((2, 3, 4)), T((2, 3, 4)), {"radius": 1}),
    ("lrn-int8", "LOCAL_RESPONSE_NORMALIZATION", T((1, 2, 2, 4), I8, q=_Q), T((1, 2, 2, 4), I8, q=_Q), {"radius": 1}),
]


@pytest.mark.parametrize("case", REJECTS, ids=lambda c: c[0])
def test_rejected(case):
    _, op, x, y, options = case
    model = single_op_model(op, [x], [y], options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, [np.zeros(tuple(x.shape), x.dtype)])


def _lrn_tensorflow(x: np.ndarray, radius: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """tf.nn.local_response_normalization's documented definition, in float64: the window [c - r, c + r]."""
    x64 = x.astype(np.float64)
    out = np.empty_like(x64)
    for c in range(x.shape[-1]):
        sqr_sum = np.sum(x64[..., max(0, c - radius) : c + radius + 1] ** 2, axis=-1)
        out[..., c] = x64[..., c] / (bias + alpha * sqr_sum) ** beta
    return out


#: the issue's example: radius 2, bias 1, alpha 0.5, beta 0.75
LRN_EXAMPLE = (
    np.array([2.884, -2.714, -2.589, 1.3, 0.7, -0.2], np.float32).reshape(1, 1, 1, 6),
    {"radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75},
)


@pytest.mark.parametrize("radius", [0, 1, 2, 7])
@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "AUTO"])
def test_lrn_follows_tensorflow_and_the_default_kernels(radius, resolver):
    x, options = LRN_EXAMPLE
    options = {**options, "radius": radius}
    model = single_op_model("LOCAL_RESPONSE_NORMALIZATION", [T(x.shape)], [T(x.shape)], options)
    ours, default = run_both(model, [x], resolver)
    assert_close(ours, default, rtol_each=LRN_POW_RTOL)
    np.testing.assert_allclose(ours[0], _lrn_tensorflow(x, **options), rtol=1e-6)
    if radius == 2:
        assert round(float(ours[0].flat[0]), 3) == 0.442  # the reference kernel gives 0.5625


@pytest.mark.xfail(
    strict=True,
    reason="LiteRT's reference LOCAL_RESPONSE_NORMALIZATION sums [c - r, c + r), not "
    "TensorFlow's [c - r, c + r]; litert_py follows the default kernels",
)
@pytest.mark.parametrize("radius", [0, 2])
def test_lrn_reference_kernel_window(radius):
    x, options = LRN_EXAMPLE
    model = single_op_model("LOCAL_RESPONSE_NORMALIZATION", [T(x.shape)], [T(x.shape)], {**options, "radius": radius})
    assert_close(*run_both(model, [x], "BUILTIN_REF"), rtol_each=1e-6)


def test_lrn_negative_radius_refused():
    """LiteRT's default kernels abort the process on a negative radius (free(): invalid pointer); litert_py refuses
    it at prepare and stays usable."""
    x, options = LRN_EXAMPLE
    model = single_op_model("LOCAL_RESPONSE_NORMALIZATION", [T(x.shape)], [T(x.shape)], {**options, "radius": -1})
    it = Interpreter(model_content=model)
    with pytest.raises(PrepareError, match="radius -1 < 0"):
        it.allocate_tensors()
