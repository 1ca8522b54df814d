"""LOG_SOFTMAX, ELU, GELU vs the oracle (litert_py/ops/log_softmax.py, elu_gelu.py): float and quantized paths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.compare import assert_close
from tests.ops._activations import I8, I16, U8, _assert_refused_empty_rows, _empty_rows
from tests.ops._bound import same_bits
from tests.ops._values import qparams, regimes, shapes
from tests.oracle import T, quant, run_both, run_litert, single_op_model
from tests.values import values

# -- LOG_SOFTMAX, ELU, GELU -----------------------------------------------------------------------
# ELU is not registered by LiteRT's reference resolver: it is compared with BUILTIN_WITHOUT_DEFAULT_DELEGATES
# (the builtin kernels, no XNNPACK). The others run against BUILTIN_REF.
#: float tolerance: (rtol, atol relative to |x|), None for bit equality. LOG_SOFTMAX sums exp over the last axis
#: (rtol times its length, atol on top since results near 0 cancel); ELU float32 expm1; GELU: the same bits as
#: LiteRT's Eigen expression (its erfc emulated: ops/eigen_erfc.py), NaN anywhere NaN; approximate GELU: numpy's tanh
#: for Eigen's (which saturates to +-1 early, so 1 + tanh differs by an ulp of 1 times |x|).
MORE_TOLERANCE = {
    "log_softmax-float32": (1e-6, 1e-6),
    "elu-float32": (1e-6, 0.0),
    "gelu-float32": None,
    "gelu-approximate-float32": (1e-6, 3e-7),
}
MORE_RESOLVER = {"ELU": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}
#: (op, options, dtype): every path LiteRT 2.3.0 accepts
MORE_CASES = [
    ("LOG_SOFTMAX", None, np.float32),
    ("LOG_SOFTMAX", None, I8),
    ("LOG_SOFTMAX", None, U8),
    ("ELU", None, np.float32),
    ("ELU", None, I8),
    ("GELU", {"approximate": False}, np.float32),
    ("GELU", {"approximate": True}, np.float32),
    ("GELU", {"approximate": False}, I8),
    ("GELU", {"approximate": True}, I8),
    ("GELU", {"approximate": False}, U8),
    ("GELU", {"approximate": True}, U8),
    ("GELU", {"approximate": False}, I16),
    ("GELU", {"approximate": True}, I16),
]


def _more_id(case) -> str:
    op, options, dtype = case
    approx = "-approximate" if options and options["approximate"] else ""
    return f"{op.lower()}{approx}-{np.dtype(dtype).name}"


def _assert_scaled(ours, theirs, x, rtol: float, xtol: float) -> None:
    """|ours - theirs| <= rtol * |theirs| + xtol * |x| elementwise, NaN and infinities in the same places."""
    a, b = ours[0], theirs[0]
    assert a.shape == b.shape and a.dtype == b.dtype
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        ok = same | (np.abs(a - b) <= rtol * np.abs(b) + xtol * np.abs(x.astype(np.float64)))
    bad = np.flatnonzero(~ok)
    assert not bad.size, (
        f"{bad.size} mismatches, e.g. x={x.ravel()[bad[:4]]} ours={a.ravel()[bad[:4]]} theirs={b.ravel()[bad[:4]]}"
    )


@pytest.mark.parametrize("case", MORE_CASES, ids=_more_id)
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_more_activations(case, data, seed):
    """Drawn shapes and values; quantized: drawn scales (1e-7 .. 1e3) and zero points (type ends included), with
    the output qparams LOG_SOFTMAX requires (16/256, zero point at the type maximum); GELU int16 symmetric."""
    op, options, dtype = case
    rng = np.random.default_rng(seed)
    resolver = MORE_RESOLVER.get(op, "BUILTIN_REF")
    shape = data.draw(shapes(1 if op == "LOG_SOFTMAX" else 0, 4, max_dim=6), label="shape")
    if np.dtype(dtype).kind == "f":
        x = values(rng, shape, dtype, data.draw(regimes(dtype), label="regime"))
        model = single_op_model(op, [T(shape, dtype)], [T(shape, dtype)], options)
        if op == "LOG_SOFTMAX" and _empty_rows(shape):
            _assert_refused_empty_rows(model, x)
            return
        ours, theirs = run_both(model, [x], resolver=resolver)
        tolerance = MORE_TOLERANCE[_more_id(case)]
        if tolerance is None:
            assert same_bits(ours[0], theirs[0]), (
                f"x={x.ravel()[:8]} ours={ours[0].ravel()[:8]} {theirs[0].ravel()[:8]}"
            )
            return
        rtol, xtol = tolerance
        if op == "LOG_SOFTMAX":
            rtol, xtol = rtol * max(shape[-1], 1), 0.0
            assert_close(ours, theirs, rtol_each=rtol, atol=1e-6 * max(shape[-1], 1))
        else:
            _assert_scaled(ours, theirs, x, rtol, xtol)
        return
    info = np.iinfo(dtype)
    symmetric = dtype == I16
    s_in, z_in = data.draw(qparams(dtype, -7.0 if op == "LOG_SOFTMAX" else -5.0, 3.0, symmetric), label="in")
    if op == "LOG_SOFTMAX":
        assume(s_in * 2**26 > 1.0001)  # below, LiteRT aborts the process (QuantizeMultiplierGreaterThanOne)
        s_out, z_out = 16 / 256, int(info.max)
    else:
        s_out, z_out = data.draw(qparams(dtype, -5.0, 2.0, symmetric), label="out")
    regime = data.draw(st.sampled_from(["full", "narrow", "max"]), label="regime")
    if regime == "max":  # rows of (near-)maximal values: the largest sums of exps
        x = rng.integers(int(info.max) - 2, int(info.max), size=shape, endpoint=True).astype(dtype)
    elif regime == "narrow":
        x = np.clip(z_in + rng.integers(-3, 4, size=shape), info.min, info.max).astype(dtype)
    else:
        x = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True).astype(dtype)
    model = single_op_model(
        op, [T(shape, dtype, q=quant(s_in, z_in))], [T(shape, dtype, q=quant(s_out, z_out))], options
    )
    assert_close(*run_both(model, [x], resolver=resolver))


@pytest.mark.parametrize(
    "case", [c for c in MORE_CASES if c[0] != "LOG_SOFTMAX" and np.dtype(c[2]).kind != "f"], ids=_more_id
)
@given(data=st.data())
def test_more_activations_every_input(case, data):
    """The whole table: every input value of the type at once, under drawn qparams."""
    op, options, dtype = case
    info = np.iinfo(dtype)
    x = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    s_in, z_in = data.draw(qparams(dtype, -5.0, 1.0, dtype == I16), label="in")
    s_out, z_out = data.draw(qparams(dtype, -5.0, 1.0, dtype == I16), label="out")
    model = single_op_model(
        op, [T(x.shape, dtype, q=quant(s_in, z_in))], [T(x.shape, dtype, q=quant(s_out, z_out))], options
    )
    assert_close(*run_both(model, [x], resolver=MORE_RESOLVER.get(op, "BUILTIN_REF")))


@pytest.mark.parametrize("depth", [1, 300, 4095])
def test_log_softmax_quantized_long_equal_rows(depth):
    """Rows of equal values: the sum of exps is depth * 1.0 in Q12.19 (up to the 2^12 LiteRT can hold)."""
    for dtype in (U8, I8):
        x = np.full((2, depth), np.iinfo(dtype).max, dtype)
        x[1, ::2] = 0
        model = single_op_model(
            "LOG_SOFTMAX",
            [T(x.shape, dtype, q=quant(0.05, 3))],
            [T(x.shape, dtype, q=quant(16 / 256, int(np.iinfo(dtype).max)))],
        )
        assert_close(*run_both(model, [x]))


_QL = quant(0.1, 0)
MORE_REJECTS = [  # (id, op, input spec, output spec, options): LiteRT refuses these at prepare as well
    ("log_softmax-int16", "LOG_SOFTMAX", T((3,), I16, q=_QL), T((3,), I16, q=_QL), None, "BUILTIN_REF"),
    (
        "log_softmax-uint8-bad-zero-point",
        "LOG_SOFTMAX",
        T((3,), U8, q=_QL),
        T((3,), U8, q=quant(16 / 256, 0)),
        None,
        "BUILTIN_REF",
    ),
    (
        "log_softmax-int8-bad-scale",
        "LOG_SOFTMAX",
        T((3,), I8, q=_QL),
        T((3,), I8, q=quant(0.1, 127)),
        None,
        "BUILTIN_REF",
    ),
    ("log_softmax-type-mismatch", "LOG_SOFTMAX", T((3,), np.float32), T((3,), I8, q=_QL), None, "BUILTIN_REF"),
    ("elu-uint8", "ELU", T((3,), U8, q=_QL), T((3,), U8, q=_QL), None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
    ("elu-int16", "ELU", T((3,), I16, q=_QL), T((3,), I16, q=_QL), None, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
    ("gelu-int32", "GELU", T((3,), np.int32), T((3,), np.int32), {"approximate": False}, "BUILTIN_REF"),
]


@pytest.mark.parametrize("case", MORE_REJECTS, ids=lambda c: c[0])
def test_more_rejected(case):
    _, op, x, y, options, resolver = case
    model = single_op_model(op, [x], [y], options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, [np.zeros((3,), x.dtype)], resolver=resolver)


@pytest.mark.parametrize("op,options", [("GELU", {"approximate": False}), ("EXP", None)], ids=["gelu", "exp"])
def test_int8_lut_saturates_like_litert(op, options):
    """Found by hypothesis in CI: a table value beyond the int8 range saturates in LiteRT's LUT building
    (it is not the x86 cast's INT_MIN)."""
    qi, qo = quant(1000.0, -128), quant(1e-4, -128)
    model = single_op_model(op, [T((256,), np.int8, q=qi)], [T((256,), np.int8, q=qo)], options)
    x = np.arange(-128, 128, dtype=np.int8)
    ours, theirs = run_both(model, [x], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize("dtype,zero_point", [(np.uint8, 0), (np.uint8, 128), (np.int8, -128), (np.int8, 0)])
@pytest.mark.parametrize("out_scale", [1e-5, 1e-8])
def test_lut_entries_beyond_int32(dtype, zero_point, out_scale):
    """GELU of large inputs over a tiny output scale: the table's float -> int32 cast overflows. LiteRT's uint8
    tables get INT32_MIN there (then 0), its int8 tables saturate (litert_py.quant.lut_int8)."""
    info = np.iinfo(dtype)
    model = single_op_model(
        "GELU",
        inputs=[T((256,), dtype, q=quant(100.0, zero_point))],
        outputs=[T((256,), dtype, q=quant(out_scale, zero_point))],
        options={"approximate": False},
    )
    ours, theirs = run_both(model, [np.arange(info.min, info.max + 1).astype(dtype)])
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_elu_int8_table_uses_expm1():
    """EluPrepare's LUT calls std::expm1: expf(x) - 1 differs by an ulp near 0, enough to move an entry
    (scale 0.000406, zero point 127: the entry of -53 steps). Found by the long hypothesis profile."""
    q = quant(0.0004066091787535697, 127)
    model = single_op_model("ELU", inputs=[T((256,), np.int8, q=q)], outputs=[T((256,), np.int8, q=q)])
    ours, theirs = run_both(model, [np.arange(-128, 128).astype(np.int8)], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    np.testing.assert_array_equal(ours[0], theirs[0])
