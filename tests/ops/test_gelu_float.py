"""Float GELU against ai-edge-litert 2.3.0 (BUILTIN_REF and BUILTIN_WITHOUT_DEFAULT_DELEGATES: reference/gelu.h's
Eigen expression): the exact form (GeluFloat with Eigen's erfc, litert_py/ops/eigen_erfc.py) bit for bit, every bit
of every output, NaN payloads included on numpy 2; the approximate form (numpy's tanh for Eigen's) within its
tolerance, few ulps of 1 times |x|. The tensor lengths 1..40 (the scalar path of the last ``n % 4`` values); passes
of GELU_CHUNK values; other shapes and strided inputs; eigen_erfc's merged calls against a plain transcription of
generic_fast_erfc<float>."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.libm import libm_float
from litert_py.ops.eigen_erfc import _X2_ZERO, ErfcWork, eigen_erfc
from litert_py.ops.elu_gelu import GELU_CHUNK, GeluFloat
from tests.ops._bound import check_bound
from tests.oracle import T, oracle, run_litert, run_ours, single_op_model

RESOLVERS = ("BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
F32 = np.float32
_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-45, -1e-45, 1e-40, -1e-40, 9.0, -9.0, -5.5]
# erfc's argument is -x / sqrt 2: its branch (|a| = 1), pexp's thresholds (a^2 = 87, 104) and clamp (11); the tanh's
# clamp (7.90739) at x = +-4.84016
_EDGES = np.concatenate(
    [np.sqrt(2.0) * np.sqrt([1.0, 87.0, 88.72283935546875, 104.0, 121.0]), [4.8401594, 4.84016]]
)  # a^2 = 1 (the branch), 87 (pldexp), 88.72 (pexp's upper clamp, never acting), 104 (zero), 121 (the clamp at 11)


def _values(rng, shape) -> np.ndarray:
    """Many magnitudes, the special values, neighbourhoods of the branch points, any bit patterns."""
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 2.5, shape)).astype(F32)
    flat = x.reshape(-1)
    edges = np.concatenate([_EDGES, -_EDGES]).astype(F32)
    near = np.concatenate([np.nextafter(edges, np.inf), edges, np.nextafter(edges, -np.inf)])
    fixed = np.concatenate([np.array(_SPECIALS, F32), near])[: flat.size // 2]
    flat[: fixed.size] = fixed
    k = min(64, flat.size // 4)
    flat[flat.size - k :] = rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(F32)
    return x


def _assert_same_bits(ours: np.ndarray, expected: np.ndarray, x: np.ndarray) -> None:
    """Every bit, except a NaN's sign and payload on numpy 1.x: its float32 multiply picks one of two NaN
    operands by the buffer's alignment."""
    assert ours.shape == expected.shape and ours.dtype == expected.dtype == F32
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(ours), nan)
        ours, expected, x = ours[~nan], expected[~nan], x[~nan]
    bad = ours.view(np.uint32) != expected.view(np.uint32)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} differ: x={x[bad][:4]!r} ours={ours[bad][:4]!r} " + (
        f"theirs={expected[bad][:4]!r}"
    )


#: the approximate form's tolerance (numpy's tanh for Eigen's ptanh_float): |ours - theirs| <= RTOL |theirs| + XTOL |x|
APPROX_RTOL, APPROX_XTOL = 1e-6, 3e-7


def _assert_matches(ours: np.ndarray, expected: np.ndarray, x: np.ndarray, approximate: bool) -> None:
    """The exact form: every bit (_assert_same_bits); the approximate form: within its tolerance, NaN and the
    infinities in the same places."""
    if not approximate:
        _assert_same_bits(ours, expected, x)
        return
    assert ours.shape == expected.shape and ours.dtype == expected.dtype == F32
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected))
    ok = np.isnan(expected) | (ours == expected)
    with np.errstate(all="ignore"):
        e64, x64 = expected.astype(np.float64), np.abs(x.astype(np.float64))
        ok |= np.abs(ours - e64) <= APPROX_RTOL * np.abs(e64) + APPROX_XTOL * x64
    assert ok.all(), f"x={x[~ok][:4]!r} ours={ours[~ok][:4]!r} theirs={expected[~ok][:4]!r}"


def _model(shape, approximate):
    return single_op_model("GELU", [T(shape)], [T(shape)], {"approximate": approximate})


def _ours(shape, approximate, x) -> np.ndarray:
    it = Interpreter(model_content=_model(shape, approximate))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
@pytest.mark.parametrize("shape", [(1, 32, 128), (3, 77), (100,), (2, GELU_CHUNK + 3)])
def test_gelu_float_bit_for_bit(shape, approximate):
    """Static shapes (the last one: two passes and a scalar tail), under both resolvers (the approximate form within
    its tolerance)."""
    rng = np.random.default_rng(len(shape) + shape[-1] + approximate)
    x = _values(rng, shape)
    ours = _ours(shape, approximate, x)
    for resolver in RESOLVERS:
        _assert_matches(ours, run_litert(_model(shape, approximate), [x], resolver)[0], x, approximate)


def test_gelu_float_prepares_gelu_float():
    for approximate in (False, True):
        it = Interpreter(model_content=_model((2, 9), approximate))
        it.allocate_tensors()
        assert type(it._subgraphs[0].steps[0][0]) is GeluFloat


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
def test_gelu_float_every_length(approximate):
    """Lengths 1..40: the last n % 4 values take Eigen's scalar path (for erfc: the C library's expf instead of
    pexp). Their values are drawn from ones whose scalar and packet erfc differ, so a wrong path shows."""
    rng = np.random.default_rng(40 + approximate)
    pool = rng.uniform(-16, 16, 256).astype(F32)
    if not approximate:
        pool = _tail_sensitive(pool)
    LiteRT, Resolver = oracle()
    for n in range(1, 41):
        model = _model((n,), approximate)
        theirs = {
            r: LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=getattr(Resolver, r))
            for r in RESOLVERS
        }
        it = Interpreter(model_content=model)
        for interp in (it, *theirs.values()):
            interp.allocate_tensors()
        for _ in range(4):
            x = _values(rng, (n,)) if n >= 8 else rng.standard_normal(n).astype(F32)
            x[n - n % 4 :] = rng.choice(pool, n % 4)
            outs = []
            for interp in (it, *theirs.values()):
                interp.set_tensor(interp.get_input_details()[0]["index"], x)
                interp.invoke()
                outs.append(interp.get_tensor(interp.get_output_details()[0]["index"]).copy())
            for theirs_out in outs[1:]:
                _assert_matches(outs[0], theirs_out, x, approximate)


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
def test_other_shapes_and_strided_inputs(approximate):
    """GeluFloat prepared for 64 values, called on (4, 16), (5, 16) and a strided (4, 16): the same bits as
    LiteRT on those arrays (contiguous copies)."""
    op = GeluFloat.build(approximate, 64)
    rng = np.random.default_rng(7)
    big = _values(rng, (4, 32))
    for x in (_values(rng, (4, 16)), _values(rng, (5, 16)), big[:, ::2]):
        out = np.empty(x.shape, F32)
        with np.errstate(all="ignore"):
            op([x], [out])
        xc = np.ascontiguousarray(x)
        _assert_matches(out, run_litert(_model(x.shape, approximate), [xc])[0], xc, approximate)


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
@pytest.mark.parametrize("shape", [(3, 5, 7), (2, GELU_CHUNK + 1)])
def test_gelu_float_bound_plan(shape, approximate):
    """The plan bound at prepare sees new values at each invoke and equals one made on fresh (and on Fortran-
    ordered) arrays (tests/ops/_bound.check_bound)."""
    check_bound(_model(shape, approximate), _values(np.random.default_rng(9), shape), GeluFloat)


_EXPF = libm_float("expf")
_S = (5.61802298761904239654541015625e-04, -4.91381669417023658752441406250e-03, 2.67075151205062866210937500000e-02)
_S += (-1.12800106406211853027343750000e-01, 3.76122951507568359375000000000e-01, -1.12837910652160644531250000000e00)
_P = (1.0208116471767425537109375e-01, 4.2920666933059692382812500e-01, 3.2379078865051269531250000e-01)
_P += (5.3971976041793823242187500e-02,)
_Q = (1.7251677811145782470703125e-02, 3.9137163758277893066406250e-01, 1.0, 6.2173241376876831054687500e-01)
_Q += (9.5662862062454223632812500e-02,)


def _polevl(x, coeffs):
    acc = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + F32(c)
    return acc


def _pexp_float(v):
    """pexp_float as written: zero below -104, ``pldexp`` as np.ldexp (the correctly rounded y * 2^m)."""
    x = np.where(np.isnan(v), v, np.minimum(v, F32(88.723)))
    m = np.floor(x * F32(1.44269504088896341) + F32(0.5))
    r = m * F32(-0.693359375) + x
    r = m * F32(2.12194440e-4) + r
    r2 = r * r
    p_even = r2 * F32(1.37449637986719608306884765625e-3) + F32(4.166965186595916748046875e-2)
    p_odd = r2 * F32(8.36894474923610687255859375e-3) + F32(0.16666518151760101318359375)
    p_even = r2 * p_even + F32(0.49999988079071044921875)
    y = r * p_odd + p_even
    y = r2 * y + (r + F32(1))
    y = np.ldexp(y, np.where(np.isfinite(m), m, 0).astype(np.int32)).astype(F32)
    return np.where(v < F32(-104), F32(0), np.where(np.isnan(v), v, np.maximum(y, v)))


def _erfc_transcription(a: np.ndarray, scalar_tail: int) -> np.ndarray:
    """generic_fast_erfc<float>::run written out step by step (Veltkamp / Dekker, pexp, the select); the last
    ``scalar_tail`` values with expf for pexp."""
    x = np.where(np.isnan(a), a, np.clip(a, F32(-11), F32(11)))
    x2 = x * x
    small = x * _polevl(x2, _S) + F32(1)
    gamma = F32(4097) * x
    hi = (x - gamma) + gamma
    lo = x - hi
    x2_lo = lo * lo + (lo * hi + (hi * lo + (hi * hi + -x2)))
    e = _pexp_float(-x2)
    if scalar_tail:
        e[-scalar_tail:] = _EXPF(-x2[-scalar_tail:])
    z = e - e * x2_lo
    q2 = F32(1) / x2
    r = _polevl(q2, _P) / (x * _polevl(q2, _Q))
    large = z * r + np.where(x < 0, F32(2), F32(0))
    return np.where(F32(1) < x2, large, small)


def _tail_sensitive(x: np.ndarray) -> np.ndarray:
    """The values of ``x`` whose GELU erfc (of -x / sqrt 2) differs between the packet path and the scalar one."""
    a = x * F32(-0.70710678118654752440)
    with np.errstate(all="ignore"):
        keep = _erfc_transcription(a, 0).view(np.uint32) != _erfc_transcription(a, a.size).view(np.uint32)
    assert keep.sum() >= 8
    return x[keep]


def test_eigen_erfc_equals_its_transcription():
    """ErfcWork's merged calls (its docstring) give the transcription's bits: random bit patterns, a dense range
    over both branches and the clamp, x^2 around pexp's 87 and 104 (the zero by clamping x^2), every tail."""
    rng = np.random.default_rng(11)
    around = np.sqrt(np.array([1.0, 87.0, 104.0, float(_X2_ZERO), 121.0])).astype(F32)
    near = np.concatenate([around + F32(d) * np.spacing(around) for d in range(-40, 41)])
    a = np.concatenate(
        [
            rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(F32),
            rng.uniform(-12, 12, 1 << 17).astype(F32),
            near,
            -near,
            np.array(_SPECIALS, F32),
        ]
    )
    with np.errstate(all="ignore"):
        for n in (a.size - a.size % 4, *range(1, 9)):
            _assert_same_bits(eigen_erfc(a[-n:]), _erfc_transcription(a[-n:], n % 4), a[-n:])
        sensitive = _tail_sensitive(rng.uniform(-16, 16, 256).astype(F32)) * F32(-0.70710678118654752440)
        for tail in range(4):  # tails of values whose scalar and packet paths differ
            b = np.concatenate([a[: 4 * 1000], sensitive[:tail]])
            _assert_same_bits(eigen_erfc(b), _erfc_transcription(b, tail), b)


def test_erfc_work_lists_calls_on_its_own_scratch():
    """ErfcWork(n).calls reads only its input and writes only its output and its scratch (a plan can be bound)."""
    w = ErfcWork(12)
    a, out = np.linspace(-3, 3, 12, dtype=F32), np.empty(12, F32)
    keep = a.copy()
    with np.errstate(all="ignore"):
        for f, args, kwargs in w.calls(a, out):
            f(*args, **kwargs)
    np.testing.assert_array_equal(a, keep)
    _assert_same_bits(out, _erfc_transcription(a, 0), a)


def test_eigen_erfc_refuses_an_out_it_could_not_write():
    """An ``out`` that is not a C-contiguous float32 array of the input's shape is refused (a reshape of it would be
    a copy, written and lost), as eigen_math's functions refuse theirs."""
    a = np.linspace(-3, 3, 12, dtype=F32).reshape(3, 4)
    for bad in (np.zeros((4, 3), F32).T, np.zeros((3, 4), np.float64), np.zeros(12, F32)):
        with pytest.raises(ValueError, match="out must be"):
            eigen_erfc(a, out=bad)
    out = np.empty((3, 4), F32)
    assert eigen_erfc(a, out=out) is out
    _assert_same_bits(out, eigen_erfc(a), a)


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
def test_gelu_float16_every_input(approximate):
    """float16 GELU (GeluHalf): all 65536 float16 bit patterns, bit for bit against both resolvers (NaN anywhere
    NaN), as a (256, 256) tensor; and a 0-d tensor."""
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    model = single_op_model("GELU", [T(x.shape, np.float16)], [T(x.shape, np.float16)], {"approximate": approximate})
    ours = run_ours(model, [x])[0]
    for resolver in RESOLVERS:
        theirs = run_litert(model, [x], resolver)[0]
        assert ours.dtype == theirs.dtype == np.float16
        nan = np.isnan(theirs)
        np.testing.assert_array_equal(np.isnan(ours), nan)
        np.testing.assert_array_equal(ours.view(np.uint16)[~nan], theirs.view(np.uint16)[~nan])
    scalar = single_op_model("GELU", [T((), np.float16)], [T((), np.float16)], {"approximate": approximate})
    x0 = np.array(-1.5, np.float16)
    assert run_ours(scalar, [x0])[0].view(np.uint16) == run_litert(scalar, [x0])[0].view(np.uint16)
