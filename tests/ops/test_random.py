"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL against the oracle (ai-edge-litert BUILTIN_REF).

With nonzero seeds LiteRT is deterministic (Philox4x32-10): the same numbers are required over several
consecutive invokes of one interpreter (the generator state advances across invokes; a new
allocate_tensors re-seeds). seed == seed2 == 0 draws random seeds: only shape, dtype and range are checked.
All outputs must be bit-identical, RANDOM_STANDARD_NORMAL included: its logf/sincosf are glibc's, emulated by
litert_py.ops.glibc_math (also checked here against this machine's libm when it is the glibc we emulate).
"""

from __future__ import annotations

import ctypes
import platform
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.ops import glibc_math
from tests.oracle import T, oracle, single_op_model

INVOKES = 3

SEEDS = st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1)).filter(
    lambda s: (s[0] & 0xFFFFFFFF, s[1] & 0xFFFFFFFF) != (0, 0)
)  # LiteRT keeps the low 32 bits; (0, 0) is random


def _invokes(it, inputs, n=INVOKES):
    it.allocate_tensors()
    res = []
    for _ in range(n):
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], np.asarray(x))
        it.invoke()
        res.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return res


def _pair(model):
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    return Interpreter(model_content=model), theirs


def run_both_invokes(model, inputs, n=INVOKES):
    ours, theirs = _pair(model)
    return _invokes(ours, inputs, n), _invokes(theirs, inputs, n)


def assert_identical(ours, theirs):
    """Every output of every invoke bit-identical (floats compared as their uint32 bits)."""
    for x, y in zip(ours, theirs):
        for a, b in zip(x, y):
            assert a.shape == b.shape and a.dtype == b.dtype
            if a.dtype == np.float32:
                a, b = a.view(np.uint32), b.view(np.uint32)
            bad = a != b
            assert not bad.any(), f"{bad.sum()} of {bad.size} differ: {x[0][bad][:5]} != {y[0][bad][:5]}"


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
@given(seeds=SEEDS, shape=st.lists(st.integers(1, 7), min_size=0, max_size=3), const=st.booleans())
def test_random_float32(op, seeds, shape, const):
    shp = np.array(shape, np.int32)
    inp = T.const(shp) if const else T((len(shape),), np.int32)
    model = single_op_model(op, [inp], [T(tuple(shape), np.float32)], {"seed": seeds[0], "seed2": seeds[1]})
    ours, theirs = run_both_invokes(model, [] if const else [shp])
    assert_identical(ours, theirs)


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
@pytest.mark.parametrize("seeds,n", [((12345, 678), 1001), ((-7, 2**40 + 3), 65537), ((1, 0), 200_000)])
def test_random_float32_large(op, seeds, n):
    """Many Box-Muller pairs (incl. u1 near 0 clamps, v1 near multiples of pi/2) and several invokes."""
    model = single_op_model(
        op, [T.const(np.array([n], np.int32))], [T((n,), np.float32)], {"seed": seeds[0], "seed2": seeds[1]}
    )
    ours, theirs = run_both_invokes(model, [], n=3)
    assert_identical(ours, theirs)


@given(
    seeds=SEEDS,
    batch=st.integers(1, 4),
    classes=st.integers(1, 6),
    n=st.integers(1, 9),
    out=st.sampled_from([np.int32, np.int64]),
    const=st.booleans(),
    vseed=st.integers(0, 2**31 - 1),
    special=st.booleans(),
)
def test_multinomial(seeds, batch, classes, n, out, const, vseed, special):
    # n >= 1: the oracle's get_tensor fails ("Invalid tensor size") on an empty output
    logits = (np.random.default_rng(vseed).standard_normal((batch, classes)) * 3).astype(np.float32)
    if special:  # non-finite logits count as probability 0
        logits.reshape(-1)[::3] = np.float32(-np.inf)
    ns = np.array(n, np.int32)
    inputs = [T((batch, classes), np.float32), T.const(ns) if const else T((), np.int32)]
    model = single_op_model("MULTINOMIAL", inputs, [T((batch, n), out)], {"seed": seeds[0], "seed2": seeds[1]})
    ours, theirs = run_both_invokes(model, [logits] if const else [logits, ns])
    assert_identical(ours, theirs)


@pytest.mark.parametrize("batch,classes,n", [(2, 300, 200), (1, 3, 30000)])
def test_multinomial_large(batch, classes, n):
    """Past the broadcast comparison (batch * n * classes > 2^16: upper_bound row by row) and many draws."""
    logits = (np.random.default_rng(classes).standard_normal((batch, classes)) * 2).astype(np.float32)
    logits[:, ::5] = -np.inf
    model = single_op_model(
        "MULTINOMIAL",
        [T.const(logits), T.const(np.array(n, np.int32))],
        [T((batch, n), np.int64)],
        {"seed": 77, "seed2": -3},
    )
    ours, theirs = run_both_invokes(model, [], n=2)
    assert_identical(ours, theirs)


@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MULTINOMIAL"])
def test_seed_zero_shape_dtype_range(op):
    if op == "MULTINOMIAL":
        model = single_op_model(
            op,
            [T.const(np.zeros((3, 4), np.float32)), T.const(np.array(50, np.int32))],
            [T((3, 50), np.int64)],
            {"seed": 0, "seed2": 0},
        )
    else:
        model = single_op_model(
            op, [T.const(np.array([40, 5], np.int32))], [T((40, 5), np.float32)], {"seed": 0, "seed2": 0}
        )
    ours, theirs = run_both_invokes(model, [], n=2)
    for (a,), (b,) in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        if op == "RANDOM_UNIFORM":
            assert a.min() >= 0 and a.max() < 1
        elif op == "MULTINOMIAL":
            assert a.min() >= 0 and a.max() < 4
        else:
            assert np.all(np.isfinite(a)) and abs(a.mean()) < 0.5
    assert not np.array_equal(ours[0][0], ours[1][0])  # the state advances


@pytest.mark.parametrize(
    "case",
    [
        ("RANDOM_UNIFORM", [T.const(np.array([2, 3], np.int64))], [T((2, 3), np.float32)]),
        ("RANDOM_UNIFORM", [T.const(np.array([[2, 3]], np.int32))], [T((2, 3), np.float32)]),
        ("RANDOM_STANDARD_NORMAL", [T.const(np.array([2], np.int32))], [T((2,), np.int32)]),
        ("MULTINOMIAL", [T((2, 3), np.int32), T.const(np.array(2, np.int32))], [T((2, 2), np.int64)]),
        ("MULTINOMIAL", [T((2, 3), np.float32), T.const(np.array(2, np.int64))], [T((2, 2), np.int64)]),
        ("MULTINOMIAL", [T((2, 3), np.float32), T.const(np.array(2, np.int32))], [T((2, 2), np.float32)]),
    ],
    ids=[
        "uniform-int64-shape",
        "uniform-2d-shape",
        "normal-int32-out",
        "multinomial-int32-logits",
        "multinomial-int64-num",
        "multinomial-float-out",
    ],
)
def test_rejected(case):
    op, inputs, outputs = case
    model = single_op_model(op, inputs, outputs, {"seed": 1, "seed2": 2})
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


def test_reseeded_when_prepared_again():
    """A resize to a new shape re-runs prepare, which re-seeds the generator (LiteRT's InitializeOpData)."""
    model = single_op_model(
        "MULTINOMIAL",
        [T((1, 3), np.float32), T.const(np.array(4, np.int32))],
        [T((1, 4), np.int64)],
        {"seed": 3, "seed2": 9},
    )
    res = []
    for it in _pair(model):
        i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        it.allocate_tensors()
        r = []
        for shp in ([1, 3], [2, 3], [1, 3]):
            if list(it.get_input_details()[0]["shape"]) != shp:
                it.resize_tensor_input(i, shp)
                it.allocate_tensors()
            for _ in range(2):
                it.set_tensor(i, np.linspace(-1, 1, int(np.prod(shp)), dtype=np.float32).reshape(shp))
                it.invoke()
                r.append(it.get_tensor(o).copy())
        res.append(r)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_allocate_twice_does_not_reseed():
    """LiteRT's AllocateTensors does nothing when nothing changed, so the generator's draws continue."""
    model = single_op_model(
        "MULTINOMIAL",
        [T.const(np.log(np.full((1, 3), 1 / 3, np.float32))), T.const(np.array(2, np.int32))],
        [T((1, 2), np.int32)],
        {"seed": 0, "seed2": 1},
    )
    runs = []
    for I in (oracle()[0], Interpreter):
        it = I(model_content=model)
        outs = []
        for _ in range(3):
            it.allocate_tensors()
            it.invoke()
            outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
        runs.append(np.array(outs))
    np.testing.assert_array_equal(runs[1], runs[0])


# --- glibc_math: the FMA emulation against exact rationals, logf/sincosf against this machine's libm ---------

FINITE = st.floats(min_value=-(2.0**200), max_value=2.0**200, allow_nan=False, allow_infinity=False).filter(
    lambda v: v == 0 or abs(v) > 2.0**-200
)


def _fma_exact(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))  # Fraction -> float rounds correctly


@given(abc=st.lists(st.tuples(FINITE, FINITE, FINITE), min_size=1, max_size=50))
def test_fma_emulation(abc):
    a, b, c = (np.array(v, np.float64) for v in zip(*abc))
    # hard cases as well: c cancelling the rounded product (result = the product's rounding error), and
    # c a tiny perturbation of it (rounding decided by bits far below the product's last one)
    p = a * b
    a, b = np.tile(a, 3), np.tile(b, 3)
    c = np.concatenate([c, -p, -p + np.where(p == 0, 0.0, np.spacing(p) * 2.0**-30)])
    got = glibc_math.fma(a, b, c)
    want = np.array([_fma_exact(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())])
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def _emulated_libm():
    """This machine's libm when it is the one glibc_math emulates (glibc >= 2.28 on x86-64 with FMA/AVX2)."""
    lib, ver = platform.libc_ver()
    if platform.system() != "Linux" or lib != "glibc" or tuple(map(int, ver.split(".")[:2])) < (2, 28):
        pytest.skip(f"libm is not glibc >= 2.28 ({lib} {ver})")
    if platform.machine() != "x86_64":
        pytest.skip(f"glibc_math emulates glibc's x86-64 FMA builds, not {platform.machine()}")
    with open("/proc/cpuinfo") as f:
        flags = next((ln.split(":")[1].split() for ln in f if ln.startswith("flags")), [])
    if "fma" not in flags or "avx2" not in flags:
        pytest.skip("CPU without FMA/AVX2: glibc uses its non-FMA builds")
    m = ctypes.CDLL("libm.so.6")
    m.logf.restype, m.logf.argtypes = ctypes.c_float, [ctypes.c_float]
    m.sincosf.restype = None
    m.sincosf.argtypes = [ctypes.c_float, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float)]
    return m


def _libm_sincosf(m, x):
    s, c = ctypes.c_float(), ctypes.c_float()
    ps, pc = ctypes.byref(s), ctypes.byref(c)
    out = np.empty((x.size, 2), np.float32)
    for j, v in enumerate(x.tolist()):
        m.sincosf(v, ps, pc)
        out[j] = s.value, c.value
    return out[:, 0], out[:, 1]


@pytest.mark.parametrize("domain", ["box-muller", "wide"])
def test_glibc_math_vs_libm(domain):
    """Bit-identical to glibc's logf/sincosf (tools/check_glibc_math.py checks all 2^23 Box-Muller inputs).

    box-muller: the inputs BoxMullerFloat reaches (u1 = max(k 2^-23, 1e-7f), v1 = float(2 pi k 2^-23)).
    wide: any positive normal float for logf; |x| < 120 for sincosf, and floats next to multiples of pi/2,
    where the plain double evaluation would round differently from glibc's fused one.
    """
    m = _emulated_libm()
    rng = np.random.default_rng(20261122)
    if domain == "box-muller":
        u = rng.integers(0, 2**23, 100_000, dtype=np.uint32).astype(np.float32) * np.float32(2.0**-23)
        u[:3] = 0, 2.0**-23, 1 - 2.0**-23
        x_log = np.maximum(u, np.float32(1e-7))
        x_sc = (2.0 * np.pi * rng.permutation(u).astype(np.float64)).astype(np.float32)
    else:
        edges = [0x00800000, 0x3F32FFFF, 0x3F330000, 0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x7F7FFFFF]
        x_log = np.concatenate([rng.integers(0x00800000, 0x7F800000, 100_000, dtype=np.uint32), edges])
        x_log = x_log.astype(np.uint32).view(np.float32)
        k = np.arange(1, 76)
        near = ((k * np.pi / 2).astype(np.float32).view(np.int32)[:, None] + np.arange(-300, 301)).reshape(-1)
        wide = rng.integers(0, 0x42F00000, 60_000, dtype=np.uint32) | (rng.integers(0, 2, 60_000, np.uint32) << 31)
        # zeros, subnormals, the 2^-12 (sin x = x) and 0.75 (no reduction) thresholds, the 120 limit
        edges = np.array([0, 0x7FFFFF, 0x800000, 0x39800000, 0x3F400000, 0x3F490FDB, 0x42F00000], np.int64)
        edges = (edges[:, None] + np.arange(-2, 3)).reshape(-1)
        edges = edges[edges >= 0]
        edges = np.concatenate([edges, edges | 0x80000000]).astype(np.uint32)
        x_sc = np.concatenate([near.astype(np.uint32), wide, edges]).view(np.float32)
        x_sc = x_sc[np.abs(x_sc) < 120]
    want_log = np.fromiter(map(m.logf, x_log.tolist()), np.float32, x_log.size)
    want_sin, want_cos = _libm_sincosf(m, x_sc)
    for exact in (False, True):
        sin, cos = glibc_math.sincosf(x_sc, exact=exact)
        np.testing.assert_array_equal(glibc_math.logf(x_log, exact=exact).view(np.uint32), want_log.view(np.uint32))
        np.testing.assert_array_equal(sin.view(np.uint32), want_sin.view(np.uint32))
        np.testing.assert_array_equal(cos.view(np.uint32), want_cos.view(np.uint32))
