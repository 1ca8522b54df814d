"""MediaPipe's Convolution2DTransposeBias, MaxPoolingWithArgmax2D and MaxUnpooling2D (litert_py/ops/
mediapipe_pooling.py).

Against the oracle's default resolver (AUTO), where XNNPACK runs them: it claims the pools only with the filter
equal to the stride (and VALID padding for the unpooling), and it encodes argmax indices its own way (uint32
bits in the float32 tensor, column-major in a window whose padding repeats the edge pixels), so the tests
compare the *input position* each index names, and unpooled outputs for the same positions. Everything XNNPACK
does not run (other strides, fused activations, NaN / -inf, out-of-range indices) is checked against a direct
loop transcription of MediaPipe's C++ kernels (max_pool_argmax.cc, max_unpooling.cc) below.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.oracle import T, run_litert, run_ours, single_op_model

SAME, VALID = 1, 2  # TfLitePadding
POOL, UNPOOL, DECONV = "MaxPoolingWithArgmax2D", "MaxUnpooling2D", "Convolution2DTransposeBias"
ACT_RANGE = {0: (-np.inf, np.inf), 1: (0, np.inf), 2: (-1, 1), 3: (0, 6), 4: (-np.inf, np.inf)}
FLT_MAX = float(np.finfo(np.float32).max)


def pool_options(padding, sw, sh, fw, fh, activation=0) -> bytes:
    return struct.pack("<6i", padding, sw, sh, fw, fh, activation) + bytes(16)  # + computed.padding


def deconv_options(padding, sw, sh) -> bytes:
    return struct.pack("<3i", padding, sw, sh)


def pool_geometry(padding, size, f, s):
    out = (size + s - 1) // s if padding == SAME else (size - f + s) // s
    return out, max((out - 1) * s + f - size, 0) // 2


def pool_model(shape, padding, s, f, activation=0) -> bytes:
    n, h, w, c = shape
    (oh, _), (ow, _) = pool_geometry(padding, h, f[0], s[0]), pool_geometry(padding, w, f[1], s[1])
    out = (n, oh, ow, c)
    return single_op_model(
        "CUSTOM",
        [T(shape)],
        [T(out), T(out)],
        custom_code=POOL,
        custom_options=pool_options(padding, s[1], s[0], f[1], f[0], activation),
    )


def unpool_model(shape, padding, s, f) -> bytes:
    n, h, w, c = shape
    return single_op_model(
        "CUSTOM",
        [T(shape), T(shape)],
        [T((n, h * f[0], w * f[1], c))],
        custom_code=UNPOOL,
        custom_options=pool_options(padding, s[1], s[0], f[1], f[0]),
    )


# -- MediaPipe's loops, transcribed -------------------------------------------------------------------------


def reference_pool(x, padding, s, f, activation=0):
    n, h, w, c = x.shape
    (oh, ph), (ow, pw) = pool_geometry(padding, h, f[0], s[0]), pool_geometry(padding, w, f[1], s[1])
    values, indices = np.zeros((n, oh, ow, c), np.float32), np.zeros((n, oh, ow, c), np.float32)
    lo, hi = ACT_RANGE.get(activation, (-np.inf, np.inf))
    for b, oy, ox, ch in np.ndindex(n, oh, ow, c):
        y0, x0 = oy * s[0] - ph, ox * s[1] - pw
        best, by, bx = -FLT_MAX, 0, 0
        for fy in range(max(0, -y0), min(f[0], h - y0)):
            for fx in range(max(0, -x0), min(f[1], w - x0)):
                v = float(x[b, y0 + fy, x0 + fx, ch])
                if v > best:
                    best, by, bx = v, fy, fx
        values[b, oy, ox, ch] = min(max(best, lo, -FLT_MAX), hi, FLT_MAX)
        indices[b, oy, ox, ch] = np.float32(by * f[1] + bx) + np.float32(0.1)
    return values, indices


def reference_unpool(x, idx, s, f):
    n, h, w, c = x.shape
    oh, ow = h * f[0], w * f[1]
    ph, pw = max((h - 1) * s[0] + f[0] - oh, 0) // 2, max((w - 1) * s[1] + f[1] - ow, 0) // 2
    out = np.zeros((n, oh, ow, c), np.float32)
    for b, iy, ix, ch in np.ndindex(n, h, w, c):
        k = int(idx[b, iy, ix, ch])  # truncation toward zero, as C's float -> int
        dy, dx = int(k / f[1]), int(np.fmod(k, f[1]))
        y, x_ = iy * s[0] - ph + dy, ix * s[1] - pw + dx
        if 0 <= y < oh and 0 <= x_ < ow:  # MediaPipe writes out of bounds; litert_py drops those
            out[b, y, x_, ch] = x[b, iy, ix, ch]
    return out


# -- against LiteRT AUTO (XNNPACK) --------------------------------------------------------------------------


def _positions(codes, padding, size_hw, f, s, column_major: bool):
    """The input (y, x) each argmax index names: ours ``fy * fw + fx (+ 0.1)``, XNNPACK's ``fx * fh + fy`` as
    uint32 bits, in a window whose padding XNNPACK fills with the nearest edge pixel."""
    n, oh, ow, c = codes.shape
    (_, ph), (_, pw) = pool_geometry(padding, size_hw[0], f[0], s[0]), pool_geometry(padding, size_hw[1], f[1], s[1])
    if column_major:
        k = codes.view(np.uint32).astype(np.int64)
        fx, fy = k // f[0], k % f[0]
    else:
        k = codes.astype(np.int64)
        fy, fx = k // f[1], k % f[1]
    y = np.arange(oh).reshape(1, oh, 1, 1) * s[0] - ph + fy
    x = np.arange(ow).reshape(1, 1, ow, 1) * s[1] - pw + fx
    return np.clip(y, 0, size_hw[0] - 1), np.clip(x, 0, size_hw[1] - 1)


@st.composite
def pool_case(draw, unpool=False):
    f = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    padding = VALID if unpool else draw(st.sampled_from([SAME, VALID]))
    h, w = draw(st.integers(f[0], 10)), draw(st.integers(f[1], 10))
    shape = (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(shape) * draw(st.sampled_from([1e-3, 1.0, 1e4]))).astype(np.float32)
    return shape, padding, f, x, rng


@given(c=pool_case())
def test_max_pool_argmax_matches_auto(c):
    shape, padding, f, x, _ = c
    assume(np.unique(x).size == x.size)  # a tie picks different positions (row- vs column-major scan)
    model = pool_model(shape, padding, f, f)
    (values, codes), (their_values, their_codes) = run_ours(model, [x]), run_litert(model, [x], "AUTO")
    np.testing.assert_array_equal(values, their_values)
    ours, theirs = (_positions(k, padding, shape[1:3], f, f, cm) for k, cm in ((codes, False), (their_codes, True)))
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    rv, ri = reference_pool(x, padding, f, f)
    np.testing.assert_array_equal(values, rv)
    np.testing.assert_array_equal(codes, ri)


@given(c=pool_case(unpool=True))
def test_max_unpool_matches_auto(c):
    shape, padding, f, x, rng = c
    k = rng.integers(0, f[0] * f[1], shape)
    ours_codes = (k // f[1] * f[1] + k % f[1]).astype(np.float32) + np.float32(0.1)  # row-major fy * fw + fx
    their_codes = ((k % f[1]) * f[0] + k // f[1]).astype(np.uint32).view(np.float32)  # fx * fh + fy
    model = unpool_model(shape, padding, f, f)
    (ours,), (theirs,) = run_ours(model, [x, ours_codes]), run_litert(model, [x, their_codes], "AUTO")
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, reference_unpool(x, ours_codes, f, f))


@given(c=pool_case(unpool=True))
def test_pool_then_unpool_matches_auto(c):
    """The pair as models use it (each runtime reads its own index encoding): equal outputs."""
    from litert_py.schema.builder import ModelBuilder

    shape, _, f, x, _ = c
    assume(np.unique(x).size == x.size)
    n, h, w, ch = shape
    oh, ow = h // f[0], w // f[1]
    b = ModelBuilder()
    i = b.input("x", shape, np.float32)
    v, k = b.tensor("values", (n, oh, ow, ch), np.float32), b.tensor("indices", (n, oh, ow, ch), np.float32)
    y = b.tensor("y", (n, oh * f[0], ow * f[1], ch), np.float32)
    b.op("CUSTOM", [i], [v, k], custom_code=POOL, custom_options=pool_options(VALID, f[1], f[0], f[1], f[0]))
    b.op("CUSTOM", [v, k], [y], custom_code=UNPOOL, custom_options=pool_options(VALID, f[1], f[0], f[1], f[0]))
    b.output(y)
    model = b.build()
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x], "AUTO")[0])


@st.composite
def deconv_case(draw):
    padding = draw(st.sampled_from([SAME, VALID]))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    # XNNPACK takes SAME only with the kernel at least the stride
    k = tuple(draw(st.integers(s[i] if padding == SAME else 1, 5)) for i in range(2))
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    c, o = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    weights = rng.standard_normal((o, k[0], k[1], c)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    return padding, s, x, weights, bias


def deconv_out(padding, size, k, s):
    p = max(0, k - (size - 1) % s - 1) if padding == SAME else 0
    return s * (size - 1) + k - p


@given(c=deconv_case())
def test_convolution_2d_transpose_bias_matches_auto(c):
    padding, s, x, weights, bias = c
    n, h, w, _ = x.shape
    o, kh, kw, _ = weights.shape
    out = (n, deconv_out(padding, h, kh, s[0]), deconv_out(padding, w, kw, s[1]), o)
    model = single_op_model(
        "CUSTOM",
        [T(x.shape), T.const(weights), T.const(bias)],
        [T(out)],
        custom_code=DECONV,
        custom_options=deconv_options(padding, s[1], s[0]),
    )
    ours, theirs = run_ours(model, [x]), run_litert(model, [x], "AUTO")
    assert_close(ours, theirs, rtol=1e-5 * weights[0].size, atol=1e-6)


# -- beyond XNNPACK: MediaPipe's loops ----------------------------------------------------------------------


@given(data=st.data())
def test_max_pool_argmax_any_stride_activation_specials(data):
    f = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    s = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    padding = data.draw(st.sampled_from([SAME, VALID]))
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(f[0], 8)),
        data.draw(st.integers(f[1], 8)),
        data.draw(st.integers(1, 3)),
    )
    activation = data.draw(st.sampled_from([0, 1, 2, 3, 4]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(shape).astype(np.float32) * 3
    if data.draw(st.booleans()):  # ties, NaN, infinities and -FLT_MAX
        k = rng.integers(0, x.size, max(1, x.size // 3))
        x.reshape(-1)[k] = rng.choice(np.array([np.nan, np.inf, -np.inf, -FLT_MAX, 0.5, 0.5], np.float32), k.size)
    values, codes = run_ours(pool_model(shape, padding, s, f, activation), [x])
    rv, ri = reference_pool(x, padding, s, f, activation)
    np.testing.assert_array_equal(values, rv)
    np.testing.assert_array_equal(codes, ri)


@given(data=st.data())
def test_max_unpool_any_stride_and_indices(data):
    f = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    s = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(1, 3)),
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(shape).astype(np.float32)
    # in-window indices, others past the window (overlapping writes: the later input wins), negatives
    idx = (rng.integers(-3, f[0] * f[1] + 4, shape) + rng.choice([0.0, 0.1, 0.9], shape)).astype(np.float32)
    (ours,) = run_ours(unpool_model(shape, VALID, s, f), [x, idx])
    np.testing.assert_array_equal(ours, reference_unpool(x, idx, s, f))


def test_max_unpool_non_finite_indices_write_nothing():
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1)
    idx = np.array([np.nan, np.inf, -np.inf, 3e9], np.float32).reshape(1, 2, 2, 1)
    (ours,) = run_ours(unpool_model(x.shape, VALID, (2, 2), (2, 2)), [x, idx])
    np.testing.assert_array_equal(ours, np.zeros((1, 4, 4, 1), np.float32))


def test_max_pool_argmax_hand_computed():
    x = np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]], np.float32).reshape(1, 3, 3, 1)
    values, codes = run_ours(pool_model(x.shape, SAME, (2, 2), (2, 2)), [x])  # 2x2 output, no top padding
    np.testing.assert_array_equal(values.reshape(2, 2), [[7, 9], [8, 6]])
    np.testing.assert_array_equal(codes.reshape(2, 2), np.float32([[2, 2], [1, 0]]) + np.float32(0.1))


# -- bad options ----------------------------------------------------------------------------------------------


def _refused(model: bytes, *fragments: str) -> None:
    with pytest.raises(PrepareError) as e:
        Interpreter(model_content=model).allocate_tensors()
    for frag in fragments:
        assert frag in str(e.value), str(e.value)


BAD_POOL = {
    "truncated": (struct.pack("<3i", SAME, 2, 2), "filter_width"),
    "empty": (b"", "padding"),
    "padding-unknown": (pool_options(0, 2, 2, 2, 2), "padding"),
    "padding-out-of-range": (pool_options(7, 2, 2, 2, 2), "padding"),
    "stride-zero": (pool_options(SAME, 0, 2, 2, 2), "stride_width"),
    "filter-negative": (pool_options(SAME, 2, 2, 2, -1), "filter_height"),
    "activation-unknown": (pool_options(SAME, 2, 2, 2, 2, 9), "activation"),
}


@pytest.mark.parametrize("op", [POOL, UNPOOL])
@pytest.mark.parametrize("case", sorted(BAD_POOL))
def test_pool_bad_options(op, case):
    raw, field = BAD_POOL[case]
    if op == POOL:
        model = single_op_model(
            "CUSTOM", [T((1, 4, 4, 1))], [T((1, 2, 2, 1)), T((1, 2, 2, 1))], custom_code=op, custom_options=raw
        )
    else:
        model = single_op_model(
            "CUSTOM", [T((1, 2, 2, 1)), T((1, 2, 2, 1))], [T((1, 4, 4, 1))], custom_code=op, custom_options=raw
        )
    _refused(model, op, field)


BAD_DECONV = [
    (struct.pack("<2i", SAME, 2), "stride_height"),
    (deconv_options(3, 2, 2), "padding"),
    (deconv_options(SAME, 2, 0), "stride_height"),
]


@pytest.mark.parametrize("raw, field", BAD_DECONV)
def test_deconv_bad_options(raw, field):
    model = single_op_model(
        "CUSTOM",
        [T((1, 2, 2, 1)), T.const(np.ones((1, 2, 2, 1), np.float32)), T.const(np.zeros(1, np.float32))],
        [T((1, 4, 4, 1))],
        custom_code=DECONV,
        custom_options=raw,
    )
    _refused(model, DECONV, field)


def test_non_float_refused():
    model = single_op_model(
        "CUSTOM",
        [T((1, 4, 4, 1), np.int8)],
        [T((1, 2, 2, 1), np.int8), T((1, 2, 2, 1))],
        custom_code=POOL,
        custom_options=pool_options(SAME, 2, 2, 2, 2),
    )
    with pytest.raises(PrepareError, match="only float32"):
        run_ours(model, [np.zeros((1, 4, 4, 1), np.int8)])


def reference_deconv(x, weights, bias, padding, s):
    """transpose_conv_bias.cc's loops: the bias, then every input * filter product scattered, in float64."""
    n, h, w, _ = x.shape
    o, kh, kw, _ = weights.shape
    ph = max(0, kh - (h - 1) % s[0] - 1) if padding == SAME else 0
    pw = max(0, kw - (w - 1) % s[1] - 1) if padding == SAME else 0
    oh, ow = s[0] * (h - 1) + kh - ph, s[1] * (w - 1) + kw - pw
    out = np.zeros((n, oh, ow, o)) + bias
    for b, iy, ix, fy, fx in np.ndindex(n, h, w, kh, kw):
        y, x_ = iy * s[0] - ph // 2 + fy, ix * s[1] - pw // 2 + fx
        if 0 <= y < oh and 0 <= x_ < ow:
            out[b, y, x_] += weights[:, fy, fx, :].astype(np.float64) @ x[b, iy, ix].astype(np.float64)
    return out


@given(c=deconv_case(), any_stride=st.booleans())
def test_convolution_2d_transpose_bias_runtime_weights(c, any_stride):
    """Weights and bias as graph inputs (XNNPACK needs them constant), any kernel / stride combination."""
    padding, s, x, weights, bias = c
    if any_stride:
        s = (s[0] + 1, s[1] + 2)  # strides above the kernel size with SAME padding too
    expected = reference_deconv(x, weights, bias, padding, s)
    model = single_op_model(
        "CUSTOM",
        [T(x.shape), T(weights.shape), T(bias.shape)],
        [T(expected.shape)],
        custom_code=DECONV,
        custom_options=deconv_options(padding, s[1], s[0]),
    )
    (ours,) = run_ours(model, [x, weights, bias])
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5 * max(1.0, np.abs(expected).max()))
