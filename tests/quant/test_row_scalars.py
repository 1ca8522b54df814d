"""quant.hybrid.RowScalars (the one row-scalar routine of the one-row hybrid FULLY_CONNECTED and the one-batch hybrid
conv plans) and BatchRowQuantizer against batch_quantize_floats, byte for byte, on hostile rows: NaN of both signs,
+-0.0, +-inf, denormals, ties, all-zero rows, the edges of NONNEG_MAX_MIN and SYM_R_MIN, symmetric and
asymmetric. (batch_quantize_floats itself is checked against BUILTIN_REF in tests/ops/test_hybrid_fc_edges.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops.bound_plan import bound_plan
from litert_py.quant.hybrid import (
    NONNEG_MAX_MIN,
    SYM_R_MIN,
    BatchRowQuantizer,
    RowScalars,
    batch_quantize_floats,
)

F32 = np.float32
_NEG_NAN = -np.float32(np.nan)
_TINY = np.finfo(F32).tiny


def _edge(v: float, down: bool) -> F32:
    return np.nextafter(F32(v), F32(0) if down else F32(1))


def hostile_rows(depth: int) -> dict:
    rng = np.random.default_rng(depth)
    base = rng.standard_normal(depth).astype(F32)
    pos = np.abs(base)
    rows = {
        "normal": base,
        "positive": pos,
        "negative": -pos,
        "zeros": np.zeros(depth, F32),
        "negative-zeros": np.full(depth, -0.0, F32),
        "negzero-positive": np.where(np.arange(depth) % 3 == 0, F32(-0.0), pos).astype(F32),
        "zero-positive": np.where(np.arange(depth) % 3 == 0, F32(0.0), pos).astype(F32),
        "nan": np.where(np.arange(depth) == 1, F32(np.nan), base).astype(F32),
        "negative-nan": np.where(np.arange(depth) == 1, _NEG_NAN, base).astype(F32),
        "nan-positive": np.where(np.arange(depth) == 1, F32(np.nan), pos).astype(F32),
        "negative-nan-positive": np.where(np.arange(depth) == 1, _NEG_NAN, pos).astype(F32),
        "inf": np.where(np.arange(depth) == 2, F32(np.inf), base).astype(F32),
        "minus-inf": np.where(np.arange(depth) == 2, F32(-np.inf), base).astype(F32),
        "inf-positive": np.where(np.arange(depth) == 2, F32(np.inf), pos).astype(F32),
        "denormal": (base * F32(1e-40)).astype(F32),
        "denormal-positive": (pos * F32(1e-40)).astype(F32),
        "flt-max": np.where(np.arange(depth) == 0, np.finfo(F32).max, pos).astype(F32),
        "minus-flt-max": np.where(np.arange(depth) == 0, -np.finfo(F32).max, base).astype(F32),
        "sym-ties": np.resize(np.array([127.0, -3.5, 2.5, 0.49999997, -0.49999997, 1.5, -0.5, 0.0], F32), depth),
        "sym-ties-nonneg": np.resize(np.array([127.0, 3.5, 2.5, 0.49999997, 0.49999997, 1.5, 0.5, 0.0], F32), depth),
        "asym-ties-nonneg": np.resize(np.array([255.0, 3.5, 2.5, 0.49999997, 0.49999997, 1.5, 0.5, 0.0], F32), depth),
        "min-just-negative": np.where(np.arange(depth) == 1, F32(-1e-30), pos).astype(F32),
        "constant": np.full(depth, base[0], F32),
    }
    for name, edge in (("nonneg-max-min", NONNEG_MAX_MIN), ("sym-r-min", SYM_R_MIN)):
        for down in (False, True):
            x = np.zeros(depth, F32)
            x[[0, -1]] = _edge(edge, down)
            rows[f"{name}-{'below' if down else 'above'}"] = x
            rows[f"{name}-{'below' if down else 'above'}-negative"] = -x
    rows["denormal-tiny"] = np.where(np.arange(depth) == 0, F32(_TINY / 8), F32(0)).astype(F32)
    return rows


DEPTHS = (8, 13, 40, 1100)  # 1100: BatchRowQuantizer's copysign as bit operations (SIGN_BITS_MIN)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_row_scalars_and_quantizer_equal_batch_quantize_floats(asymmetric, depth):
    rs = RowScalars.build(asymmetric)
    quantizer = BatchRowQuantizer.build((depth,), asymmetric)
    taken = set()
    for name, x in hostile_rows(depth).items():
        with np.errstate(all="ignore"):  # as an invoke runs it
            q, sf, zp = batch_quantize_floats(x.reshape(1, depth), asymmetric)
        s = rs(x)
        if s is None:  # declined: the callers' general path (zero, tiny, non-finite rows)
            finite = np.isfinite(x).all()
            assert not finite or np.abs(x).max() < 1e-35 or not asymmetric and np.abs(x).max() < 2e-36, name
            continue
        taken.add(name)
        sf_got, zp_got, nonneg = s
        assert F32(sf_got).tobytes() == sf[0].tobytes() == rs.sf.tobytes(), name
        assert zp_got == (0.0 if zp is None else float(zp[0])), name
        signs = np.signbit(x)
        assert nonneg == (not signs.any() or asymmetric and bool((x >= 0).all())), name
        if asymmetric and not nonneg:
            assert (float(rs.lo), float(rs.hi)) == (-128.0 - zp_got, 127.0 - zp_got), name
        # the quantizer's calls (as the conv plans run them: q, or q - zp) into dest, against q (- zp)
        quantizer.scalars.inv[...] = rs.inv
        quantizer.scalars.lo[...], quantizer.scalars.hi[...] = rs.lo, rs.hi
        dest = np.full(depth, np.nan, F32)
        calls = quantizer.nonneg_calls(x, dest) if nonneg else quantizer.calls(x, dest)
        for call in bound_plan(calls):
            call()
        want = q[0] if zp is None else (q[0] - zp[0]).astype(F32)
        assert dest.tobytes() == want.tobytes(), name
    assert {"normal", "positive", "negzero-positive", "sym-ties", "flt-max"} <= taken
    assert "nan" not in taken and "negative-nan-positive" not in taken and "zeros" not in taken
    if asymmetric:
        assert "nonneg-max-min-below" not in taken and {"nonneg-max-min-above", "asym-ties-nonneg"} <= taken
    else:
        assert "sym-r-min-above" in taken and "sym-r-min-below" not in taken


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_row_scalars_random_rows(asymmetric):
    """Rows of many magnitudes and sign mixes (ties of the zero point's nudge among them): RowScalars' sf, zp and
    inv against batch_quantize_floats (inv through q: x * inv at the row's extremes)."""
    rng = np.random.default_rng(11)
    rs = RowScalars.build(asymmetric)
    for trial in range(1500):
        depth = int(rng.integers(1, 40))
        x = (rng.standard_normal(depth) * 10.0 ** rng.integers(-30, 30)).astype(F32)
        if trial % 4 == 1:
            x = np.abs(x)
        elif trial % 4 == 2:
            x = -np.abs(x)
        elif trial % 4 == 3:
            x = (np.round(x * 4) / 4).astype(F32)
        q, sf, zp = batch_quantize_floats(x.reshape(1, depth), asymmetric)
        s = rs(x)
        if s is None:  # rows that underflowed to zeros or near them: the callers' general path
            assert np.abs(x).max() < 1e-35, x
            continue
        assert F32(s[0]).tobytes() == sf[0].tobytes(), x
        assert s[1] == (0.0 if zp is None else float(zp[0])), x
        want_inv = F32(127.0 / max(-float(x.min()), float(x.max()))) if not asymmetric else F32(1.0 / float(sf[0]))
        assert rs.inv.tobytes() == want_inv.tobytes(), x


@pytest.mark.parametrize("depth", DEPTHS)
def test_asymmetric_rows_quantizer_on_hostile_rows(depth):
    """quant.hybrid.AsymmetricRowsQuantizer (the rows FULLY_CONNECTED's quantizer) row by row on the hostile rows:
    byte for byte batch_quantize_floats' q, sf and zp wherever its bound (``finite``) holds; it declines exactly the
    zero, tiny and non-finite rows."""
    from litert_py.quant.hybrid import AsymmetricRowsQuantizer

    taken = set()
    for name, x in hostile_rows(depth).items():
        x2 = x.reshape(1, depth)
        for dtype in (np.float32, np.float64):
            qq = np.full((1, depth + 1), np.nan, dtype)
            quantize = AsymmetricRowsQuantizer.build(qq[:, :depth], qq[:, -1:])
            ok = quantize(x2)
            with np.errstate(all="ignore"):
                q, sf, zp = batch_quantize_floats(x2, True)
            if not ok:
                assert not np.isfinite(x).all() or np.abs(x).max() < NONNEG_MAX_MIN, name
                continue
            taken.add(name)
            assert qq[:, :depth].astype(F32).tobytes() == q.tobytes(), name
            assert quantize.sf.tobytes() == sf.tobytes(), name
            assert qq[:, -1].astype(F32).tobytes() == zp.tobytes(), name
    assert {"normal", "negative", "asym-ties-nonneg", "flt-max", "minus-flt-max", "nonneg-max-min-above"} <= taken
    assert not {"zeros", "nan", "inf", "nonneg-max-min-below", "denormal"} & taken
