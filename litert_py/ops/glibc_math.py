"""Bit-exact numpy emulations of glibc's ``logf`` and ``sincosf`` (x86-64, FMA builds), vectorized.

LiteRT's Linux wheels call the machine's glibc libm for the float transcendentals of Box-Muller
(RANDOM_STANDARD_NORMAL). Since glibc 2.28 ``logf`` and ``sinf``/``cosf``/``sincosf`` are the ARM
optimized-routines algorithms (glibc sysdeps/ieee754/flt-32/e_logf.c, e_logf_data.c, s_sincosf.c,
sincosf.h, s_sincosf_data.c; github ARM-software/optimized-routines math/logf.c, math/sincosf.c): table
lookup or quadrant reduction and a short polynomial evaluated in double, rounded once to float, so not
correctly rounded (up to 0.82 ulp for logf, 0.56 for sincosf). On x86-64 CPUs with FMA and AVX2 glibc's
ifunc picks the ``__logf_fma`` / ``__sincosf_fma`` builds (the same C compiled with -mfma), where GCC fused
the ``a * b + c`` of the evaluation into FMAs; which operations are fused (see ``_logf_fused``,
``_sincos_fused``) was read from the disassembly of glibc 2.36's libm.so.6 (Debian 12, whose table also
orders the coefficients c0, c1, s1, c2, s2, c3, s3, c4 for SIMD pairs; same values). Checked bit for bit
against it: exhaustively on every input Box-Muller reaches, and on samples of the whole domain
(tools/check_glibc_math.py, tests/ops/test_random.py). Other libms (macOS, Windows, musl, glibc on aarch64
or on x86-64 CPUs without FMA) may differ in the last bit.

numpy has no fused multiply-add, so each function evaluates with plain double operations in the same order,
then finds the (rare) lanes whose double result lies so close to a float rounding boundary that the fused
result could round differently (a bound far above the worst plain/fused difference) and re-evaluates only
those lanes with an exact FMA emulation (Boldo and Melquiond's error-free products and sums with rounding to
odd). ``check=False`` skips that search, for callers whose inputs are all known to be safe: the plain
evaluation already agrees on every one of the 2^23 u1 and 2^23 v1 of Box-Muller (checked exhaustively),
while near multiples of pi/2 beyond 2 pi it does not always.
"""

from __future__ import annotations

import numpy as np

# e_logf_data.c: (invc, logc) per subinterval, Ln2, polynomial A[0..2] (LOGF_TABLE_BITS 4, POLY_ORDER 4)
_LOGF_INVC = np.array(
    [
        float.fromhex(h)
        for h in (
            "0x1.661ec79f8f3bep+0",
            "0x1.571ed4aaf883dp+0",
            "0x1.49539f0f010bp+0",
            "0x1.3c995b0b80385p+0",
            "0x1.30d190c8864a5p+0",
            "0x1.25e227b0b8eap+0",
            "0x1.1bb4a4a1a343fp+0",
            "0x1.12358f08ae5bap+0",
            "0x1.0953f419900a7p+0",
            "0x1p+0",
            "0x1.e608cfd9a47acp-1",
            "0x1.ca4b31f026aap-1",
            "0x1.b2036576afce6p-1",
            "0x1.9c2d163a1aa2dp-1",
            "0x1.886e6037841edp-1",
            "0x1.767dcf5534862p-1",
        )
    ]
)
_LOGF_LOGC = np.array(
    [
        float.fromhex(h)
        for h in (
            "-0x1.57bf7808caadep-2",
            "-0x1.2bef0a7c06ddbp-2",
            "-0x1.01eae7f513a67p-2",
            "-0x1.b31d8a68224e9p-3",
            "-0x1.6574f0ac07758p-3",
            "-0x1.1aa2bc79c81p-3",
            "-0x1.a4e76ce8c0e5ep-4",
            "-0x1.1973c5a611cccp-4",
            "-0x1.252f438e10c1ep-5",
            "0x0p+0",
            "0x1.aa5aa5df25984p-5",
            "0x1.c5e53aa362eb4p-4",
            "0x1.526e57720db08p-3",
            "0x1.bc2860d22477p-3",
            "0x1.1058bc8a07ee1p-2",
            "0x1.4043057b6ee09p-2",
        )
    ]
)
_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_A0, _A1, _A2 = (float.fromhex(h) for h in ("-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2"))
_LOGF_OFF = np.uint32(0x3F330000)

# s_sincosf_data.c, first table (the second one is the same with the cosine polynomial negated)
_HPI_INV = float.fromhex("0x1.45F306DC9C883p+23")  # 2/pi * 2^24 (x86-64 has no TOINT_INTRINSICS)
_HPI = float.fromhex("0x1.921FB54442D18p0")
_C0, _C1, _C2, _C3, _C4 = (
    float.fromhex(h)
    for h in (
        "0x1p0",
        "-0x1.ffffffd0c621cp-2",
        "0x1.55553e1068f19p-5",
        "-0x1.6c087e89a359dp-10",
        "0x1.99343027bf8c3p-16",
    )
)
_S1, _S2, _S3 = (float.fromhex(h) for h in ("-0x1.555545995a603p-3", "0x1.1107605230bc4p-7", "-0x1.994eb3774cf24p-13"))

#: Bound on |plain - fused| relative to the size of the terms summed (the real one is a few 2^-53)
_TOL = 2.0**-44
_SPLIT = 134217729.0  # 2^27 + 1 (Veltkamp)
#: Long inputs go by chunks: their ~20 float64 temporaries then stay in cache and in malloc's reused heap
#: (fresh multi-100 kB arrays are mmapped and page-faulted on every call: 3x slower at 10^5 elements)
_CHUNK = 8192


def _two_prod(a, b):
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fma(a, b, c) -> np.ndarray:
    """Correctly rounded a * b + c for float64 arrays (no overflow or underflow in the partial terms).

    Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
    odd" (IEEE TC 2008): uh + ul = a*b, th + tl = c + uh exactly, v = RO(tl + ul), result RN(th + v).
    """
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    uh, ul = _two_prod(a, b)
    th, tl = _two_sum(c, uh)
    v, e = _two_sum(tl, ul)
    even = (v.view(np.int64) & 1) == 0
    fix = (e != 0) & even  # inexact and even: the odd neighbour towards the exact sum
    v = np.where(fix, np.nextafter(v, np.where(e > 0, np.inf, -np.inf)), v)
    return th + v


def _unsafe(y, tol):
    """Lanes where a double within tol of y may round to another float than y does."""
    return (y - tol).astype(np.float32) != (y + tol).astype(np.float32)


# ---- logf ---------------------------------------------------------------------------------------------------

_LOGF_TAB = np.stack([_LOGF_INVC, _LOGF_LOGC], axis=1)


def _logf_parts(x):
    """k (exponent), z (mantissa scaled into [OFF, 2 OFF]) and the table entries of positive normal float32 x."""
    ix = x.view(np.uint32)
    tmp = ix - _LOGF_OFF
    tab = _LOGF_TAB.take((tmp >> np.uint32(19)) & np.uint32(15), axis=0)
    k = (tmp.view(np.int32) >> np.int32(23)).astype(np.float64)
    z = (ix - (tmp & np.uint32(0xFF800000))).view(np.float32).astype(np.float64)
    return k, z, tab[..., 0], tab[..., 1]


def _logf_fused(k, z, invc, logc):
    """logf's evaluation with __logf_fma's five FMAs: log(x) = log1p(z/c - 1) + log(c) + k ln2."""
    y0 = fma(k, _LN2, logc)
    r = fma(z, invc, -1.0)
    y = fma(r, _A1, _A2)
    r2 = r * r
    y = fma(r2, _A0, y)
    return fma(y, r2, y0 + r)


def _logf_plain(k, z, invc, logc, with_tol: bool = True):
    """The same evaluation unfused: (y, tol) with |y - fused y| well below tol (tol None without with_tol)."""
    y0 = k * _LN2
    y0 += logc
    r = z * invc
    r -= 1.0
    r2 = r * r
    y = r * _A1
    y += _A2
    y += r2 * _A0
    y *= r2
    tol = None
    if with_tol:
        tol = np.abs(y0)
        tol += np.abs(r)
    y0 += r
    y += y0
    if with_tol:
        tol += np.abs(y)
        tol *= _TOL
    return y, tol


def logf(x: np.ndarray, exact: bool = False, check: bool = True) -> np.ndarray:
    """glibc logf (FMA build) of float32 x, for positive normal finite x.

    exact=True emulates every FMA (slow; for checks). check=False skips the search for lanes where the plain
    double evaluation could round differently from the fused one: only for inputs where it is known to agree,
    e.g. every float in [1e-7, 1) reachable by Box-Muller (tools/check_glibc_math.py checks all of them).
    """
    x = np.ascontiguousarray(x, np.float32)
    if x.size <= _CHUNK:
        return _logf(x, exact, check)
    out = np.empty(x.shape, np.float32)
    xf, of = x.reshape(-1), out.reshape(-1)
    for i in range(0, xf.size, _CHUNK):
        of[i : i + _CHUNK] = _logf(xf[i : i + _CHUNK], exact, check)
    return out


def _logf(x, exact, check):
    k, z, invc, logc = _logf_parts(x)
    if exact:
        return _logf_fused(k, z, invc, logc).astype(np.float32)
    y, tol = _logf_plain(k, z, invc, logc, check)
    res = y.astype(np.float32)
    if check:
        bad = _unsafe(y, tol)
        if bad.any():
            res[bad] = _logf_fused(k[bad], z[bad], invc[bad], logc[bad]).astype(np.float32)
    return res


# ---- sincosf ------------------------------------------------------------------------------------------------

# per quadrant n & 3: sign of the sine polynomial's argument (p->sign), and -1 where the second table (with
# the cosine polynomial negated) is used; odd quadrants swap the sine and cosine results
_SIGNS = np.array([[1.0, -1.0, -1.0, 1.0], [1.0, 1.0, -1.0, -1.0]])
_ODD = np.array([False, True, False, True])
_SC_MUL = np.array([[_S3], [_C4]])
_SC_ADD = np.array([[_S2], [_C3]])
_SC_1 = np.array([[_S1], [_C2]])


def _reduce(x):
    """reduce_fast's quadrant: n = (int32(x * 2/pi * 2^24) + 2^23) >> 24 (0 for |x| < 0.75)."""
    return ((x * _HPI_INV).astype(np.int32) + np.int32(0x800000)) >> np.int32(24)


def _sincos_fused(r, q):
    """sincosf_poly as __sincosf_fma fuses it (every product-sum), on r = fma(-n, pi/2, x) and q = n & 3."""
    sign, csign = _SIGNS.take(q, axis=1)
    xs = r * sign
    x2 = r * r
    x3 = x2 * xs
    x4 = x2 * x2
    x5 = x2 * x3
    x6 = x2 * x4
    s1 = fma(x2, _S3, _S2)
    c2 = fma(x2, _C4, _C3)
    c1 = fma(x2, _C1, _C0)
    sp = fma(s1, x5, fma(x3, _S1, xs))
    cp = fma(c2, x6, fma(x4, _C2, c1))
    return np.stack([sp, cp * csign])


def _sincos_plain(r, q):
    """The same evaluation unfused, sine and cosine polynomials stacked: rows (sin poly, cos poly)."""
    signs = _SIGNS.take(q, axis=1)
    x2 = r * r
    xq = np.empty((2, r.size))
    np.multiply(r, signs[0], out=xq[0])  # xs
    xq[1] = x2
    x34 = xq * x2  # x3 = x2 xs, x4 = x2 x2
    x56 = x34 * x2  # x5, x6
    inner = x2 * _SC_MUL
    inner += _SC_ADD  # s1 = s2 + x2 s3, c2 = c3 + x2 c4
    xq[1] = x2 * _C1
    xq[1] += _C0  # c1 = c0 + x2 c1
    p = x34 * _SC_1
    p += xq  # s = xs + x3 s1, c = c1 + x4 c2
    x56 *= inner
    p += x56  # s + x5 s1, c + x6 c2
    p[1] *= signs[1]
    return p


def sincosf(x: np.ndarray, exact: bool = False, check: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """glibc sincosf (FMA build) of float32 x, finite |x| < 120 (its fast-reduction range): (sin, cos).

    exact=True emulates every FMA (slow; for checks). check=False: see logf (known to agree on every
    float(2 pi k 2^-23) that Box-Muller reaches).
    """
    x = np.ascontiguousarray(x, np.float32)
    if x.size <= _CHUNK:
        sin, cos = _sincosf(x.reshape(-1), exact, check)
        return sin.reshape(x.shape), cos.reshape(x.shape)
    sin, cos = np.empty(x.shape, np.float32), np.empty(x.shape, np.float32)
    xf, sf, cf = x.reshape(-1), sin.reshape(-1), cos.reshape(-1)
    for i in range(0, xf.size, _CHUNK):
        sf[i : i + _CHUNK], cf[i : i + _CHUNK] = _sincosf(xf[i : i + _CHUNK], exact, check)
    return sin, cos


def _sincosf(x, exact, check):
    xd = x.astype(np.float64)
    n = _reduce(xd)
    q = n & 3
    if exact:
        p = _sincos_fused(fma(-n.astype(np.float64), _HPI, xd), q)
    else:
        r = n * _HPI
        np.subtract(xd, r, out=r)
        p = _sincos_plain(r, q)
        if check:
            # error in r up to ~2^-53 |x|, in the polynomials ~2^-53 (both results are at most 1 in magnitude)
            tol = np.abs(xd)
            tol += 1.0
            tol *= _TOL
            bad = _unsafe(p, tol).any(axis=0)
            if bad.any():
                nb = n[bad]
                p[:, bad] = _sincos_fused(fma(-nb.astype(np.float64), _HPI, xd[bad]), q[bad])
    sin, cos = np.where(_ODD.take(q), p[::-1], p).astype(np.float32)
    ax = np.abs(x)
    if ax.min(initial=1.0) < 2.0**-12:  # abstop12(x) < abstop12(0x1p-12f): sin x = x, cos x = 1
        tiny = ax < np.float32(2.0**-12)
        sin[tiny] = x[tiny]
        cos[tiny] = np.float32(1.0)
    return sin, cos
