"""Lookup-table builders and lookups of TFLite's 8-bit and 16-bit activation kernels.

Reproduces ``LUTPopulate`` / ``LUTLookup`` of tflite/kernels/internal/common.h (docs section 5.8).

**libm caveat** (docs section 1.4): the C++ transforms call the platform libm (``expf``, ``tanhf``,
``logf``, ``expm1f``, ``erfcf``...). Here ``fn`` is any vectorized numpy function; its result is
rounded to the table precision (float32 for the 8-bit tables and the default 16-bit tables). numpy
float32 transcendentals, float64-then-rounded and glibc through ctypes produced identical int8
tables in the doc's 1,500-table experiment, but a table entry can in principle differ where libm and
numpy disagree by an ulp right at a rounding boundary. ARM builds may also fuse multiply-adds (FMA);
we follow x86 (every float operation rounded separately).
"""

from __future__ import annotations

import numpy as np

from litert_py.quant.fixedpoint import round_away, trunc_to_int32

__all__ = [
    "LUT_PAIRS_MIN_VALUES",
    "lut_int8",
    "lut_lookup_int8",
    "lut_pairs",
    "lut_lookup_pairs",
    "lut_int16",
    "lut_lookup_int16",
]


def _apply(fn, x: np.ndarray, ftype) -> np.ndarray:
    with np.errstate(all="ignore"):
        y = np.asarray(fn(x))
    if y.shape != x.shape:
        raise ValueError(f"LUT transform must be elementwise: got shape {y.shape} for input {x.shape}")
    return y.astype(ftype)


def lut_int8(fn, in_scale, in_zp, out_scale, out_zp, dtype=np.int8) -> np.ndarray:
    """``LUTPopulate<int8_t/uint8_t>`` (``detail::LUTPopulateInt8``) of tflite/kernels/internal/common.h.

    For every representable input ``v`` (all float32 arithmetic)::

        deq = f32(in_scale) * f32(v - in_zp)
        q   = int32( roundf(f32(fn(deq)) * (1.0f / out_scale)) + f32(out_zp) )     # truncating cast
        lut[uint8(v)] = clamp(q, type_min, type_max)

    ``fn`` receives a float32 array of the 256 dequantized inputs and must work elementwise. The
    table is indexed by the input byte as uint8 (so int8 tables are ordered 0..127, -128..-1), as
    :func:`lut_lookup_int8` expects. The cast of a value beyond int32 is undefined in C++, and the ai-edge-litert
    2.3.0 x86 wheel compiles the two instantiations differently: int8 saturates (EXP int8 with s_in 0.5 at
    x=127 gives 127; GELU int8 with s_in 1000, s_out 1e-4 gives 127), so its clamp is applied to the float
    before the cast; uint8 converts like cvttss2si, INT32_MIN for anything outside int32, which the clamp
    then makes 0 (GELU uint8 with s_in 100, s_out 1e-5 gives 0 for x >= 215). NaN gives the type minimum.
    Returns a 256-entry array of ``dtype`` (int8 or uint8).
    """
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise TypeError(f"lut_int8: dtype must be int8 or uint8, got {dt}")
    info = np.iinfo(dt)
    vals = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64)
    f32 = np.float32
    with np.errstate(all="ignore"):
        inverse_scale = f32(1.0) / f32(out_scale)
        deq = f32(in_scale) * (vals - int(in_zp)).astype(f32)
        t = _apply(fn, deq, f32)
        rescaled = round_away(t * inverse_scale)
        q = rescaled + f32(int(out_zp))
        if dt == np.dtype(np.int8):
            np.clip(q, f32(info.min), f32(info.max), out=q)
        q = trunc_to_int32(q)
    q = np.clip(q, int(info.min), int(info.max))
    lut = np.empty(256, dtype=dt)
    lut[vals & 0xFF] = q
    return lut


def lut_lookup_int8(x, lut) -> np.ndarray:
    """``LUTLookup(int8_t/uint8_t, lut)`` of tflite/kernels/internal/common.h: ``lut[uint8(x)]``."""
    idx = np.asarray(x).astype(np.int64) & 0xFF
    return np.asarray(lut)[idx]


#: The pair gather (lut_lookup_pairs) from this many input values on. Measured, 1 thread, alone (hot caches):
#: 1,024 values 2.1 us bytewise, 2.3 us in pairs; 4,096 6.3 -> 3.4 us; 16,384 12.8 -> 7.5 us. In a model the
#: 128 KB pair table is evicted by the layers between two lookups (tools/bench_families.py se_mobilenet, HARD_SWISH
#: per node, interleaved medians of 400 invokes): 6,144-7,680 values 8.3-9.2 -> 8.6-11.0 us (slower), 15,360
#: 15.8 -> 14.9, 16,384 18.4 -> 17.9, 24,576 26.1 -> 20.4 us; alone with evicted caches 65,536 values 67 -> 44 us.
LUT_PAIRS_MIN_VALUES = 15360


def lut_pairs(lut) -> np.ndarray:
    """The 65,536-entry pair table of a 256-entry 8-bit table: entry ``v`` holds, as the two bytes of a uint16, the
    table's entries for the two bytes of ``v`` in memory order (``lut[byte0(v)]``, ``lut[byte1(v)]``), so one
    gather of a uint16 view of the input does two lookups (:func:`lut_lookup_pairs`). Exact: every output byte is
    the 8-bit table's own entry for its input byte, on either byte order (the table is built through the same
    uint16 <-> byte views the lookup uses)."""
    table = np.asarray(lut)
    if table.shape != (256,) or table.dtype.itemsize != 1:
        raise ValueError(f"lut_pairs: need a 256-entry 8-bit table, got {table.dtype} {table.shape}")
    byte_pairs = np.arange(65536, dtype=np.uint16).view(np.uint8).reshape(65536, 2)
    return np.ascontiguousarray(table.view(np.uint8)[byte_pairs]).view(np.uint16).reshape(65536)


def lut_lookup_pairs(x: np.ndarray, pairs: np.ndarray, out: np.ndarray) -> bool:
    """``out[...] = lut[uint8(x)]`` two bytes per gather through ``pairs = lut_pairs(lut)``: about 0.55x the time
    of the byte gather from 2,048 values on (np.take converts every index to intp; half as many here). ``x``
    and ``out`` are 8-bit arrays of one shape. Returns False (nothing written) unless both are C-contiguous with
    an even number of values; the caller then gathers bytewise."""
    if x.size % 2 or not (x.flags.c_contiguous and out.flags.c_contiguous):
        return False
    np.take(pairs, x.reshape(-1).view(np.uint16), out=out.reshape(-1).view(np.uint16), mode="wrap")
    return True


def lut_int16(fn, in_scale, in_zp, out_scale, out_zp, precision=np.float32) -> np.ndarray:
    """``LUTPopulate<int16_t>`` (``detail::LUTPopulateInt16<FloatT>``) of tflite/kernels/internal/common.h.

    513 entries: 512 samples spaced ``(in_max - in_min)/512`` apart plus a last one at ``in_max``,
    each corrected by half the midpoint interpolation error. ``precision`` is ``FloatT``:
    ``np.float32`` (the default ``LUTPopulate`` overloads: EXP, LOG, RSQRT, GELU int16, ...) or
    ``np.float64`` (the deprecated ``double`` overload used by int16 SOFTMAX in TFLite). Every
    operation is done in that precision, in the source's order. Scales are converted to
    ``precision`` (float32 for the float overload, as its ``float`` parameters do). The quirks of the
    source are kept: the ``65536 / (out_max - out_min)`` scaling (~``65536/65535`` off ``1/s``) and a
    table step of ``65535/512`` input LSBs while the lookup assumes 128. ``fn`` is called once on an
    array of all needed points and must work elementwise. Returns int16 (NaN entries give 0, as a
    truncating x86 cast to int16 does).
    """
    ft = np.dtype(precision).type
    if ft not in (np.float32, np.float64):
        raise TypeError("lut_int16: precision must be float32 or float64")
    with np.errstate(all="ignore"):
        s_in = ft(in_scale)
        s_out = ft(out_scale)
        input_min = s_in * ft(-32768 - int(in_zp))
        input_max = s_in * ft(32767 - int(in_zp))
        output_min = s_out * ft(-32768 - int(out_zp))
        output_max = s_out * ft(32767 - int(out_zp))
        step = (input_max - input_min) / ft(512)
        half_step = step / ft(2)
        scaling_inv = ft(65536) / (output_max - output_min)

        i = np.arange(512).astype(ft)
        x0 = input_min + i * step
        xmid = x0 + half_step
        # input_min + (i + 1) * step: equal to x0[i + 1] except for i = 511, computed separately.
        x_last = input_min + ft(512) * step
        pts = np.concatenate([x0, xmid, np.array([x_last, input_max], dtype=ft)])
        y = _apply(fn, pts, ft)
        val, val_mid = y[:512], y[512:1024]
        val_next = np.concatenate([val[1:], y[1024:1025]])

        sample_val = round_away(val * scaling_inv)
        midpoint_interp_val = round_away((val_next * scaling_inv + sample_val) / ft(2))
        midpoint_val = round_away(val_mid * scaling_inv)
        midpoint_err = midpoint_interp_val - midpoint_val
        bias = round_away(midpoint_err / ft(2))
        entries = np.empty(513, dtype=ft)
        entries[:512] = sample_val - bias
        entries[512] = round_away(y[1025] * scaling_inv)
        # std::min(std::max(v, -32768), 32767) propagates NaN, like np.maximum/np.minimum.
        entries = np.minimum(np.maximum(entries, ft(-32768.0)), ft(32767.0))
    return trunc_to_int32(entries).astype(np.int16)


def lut_lookup_int16(x, lut) -> np.ndarray:
    """``LUTLookup(int16_t, const int16_t* lut)`` of tflite/kernels/internal/common.h::

        idx = 256 + (x >> 7);  off = x & 127
        slope = int16(lut[idx+1] - lut[idx])          # stored in an int16_t: wraps
        out = int16(lut[idx] + ((slope * off + 64) >> 7))

    ``x`` must be in int16 range; ``lut`` has 513 entries. Returns int16.
    """
    xi = np.asarray(x).astype(np.int64)
    table = np.asarray(lut).astype(np.int64)
    idx = 256 + (xi >> 7)
    off = xi & 0x7F
    base = table[idx]
    slope = (table[idx + 1] - base).astype(np.int16).astype(np.int64)
    delta = (slope * off + 64) >> 7
    return (base + delta).astype(np.int16)
