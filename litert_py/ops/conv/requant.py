"""The folded requantization epilogue of the 8-bit quantized CONV_2D and DEPTHWISE_CONV_2D: the per-channel
scale M * 2^(ls-31-rs) of MultiplyByQuantizedMultiplier and the constant offset bias - x_zp * sum(w - w_zp) are
folded into the weights at prepare (a ones column of the im2col GEMM, or a per-channel constant added to the
depthwise tap sums), so the invoke does GEMM (or tap sums) -> clip -> floor.

The formula (derivation in litert_py.quant.requantizer.Requantizer, "fused"): with t = acc * M * 2^(ls-31),
h = 2^(rs-1) (0 when rs = 0), MBQM(acc) = floor((t + 1/2 + h - [t < 0]) * 2^-rs) (double rounding, common.cc
MultiplyByQuantizedMultiplier; SRDHM ties up, RoundingDivideByPOT ties away from zero).

* ReLU-like layers (the fused activation's lower clamp ``lo`` is at or above the output zero point): the
  ``- [t < 0]`` correction is not needed. Where t < 0, SRDHM <= 0, so the true result r <= 0 and the formula
  without it, floor((t + 1/2 + h) * 2^-rs) <= 0 too: both clamp to ``lo`` (r + zp <= zp <= lo); where t >= 0
  they are equal. So out = floor(clip(u + c, lo, hi)) with u = acc * M * 2^(ls-31-rs) and
  c = zp + (1/2 + h) * 2^-rs, and the GEMM computes u + c directly. Without right shifts (rs = 0 on every
  channel) the correction is 0 as well, whatever the clamp.
* Other layers: the GEMM gives u; then u + copysign(2^-(rs+1), u) + zp + 1/2, clip, floor (Requantizer's
  fused form without its multiply and offset passes).

Exactness bound (checked per channel at prepare): every value is an integer multiple of the unit
2^(ls-31-rs) (needs ls <= 30) and every partial sum of the GEMM, in whatever order BLAS adds, stays below 2^53
units: M * (max|x| * sum|w - w_zp| + |offset|) + (|zp| + 1) * 2^(31+rs-ls) + 2^(31-ls) <= 2^53. Also
0 <= M < 2^31 (no SRDHM saturation) and the C++ accumulator times 2^ls stays in int32
(acc_bound * 2^ls <= INT32_MAX). Channels with right shifts of about 15 or more and zero point -128 (near-dead
channels of ReLU layers) fail the bound because of the zero point term: zp is then added after the floor on
those channels (`LateZeroPointEpilogue`, bound M * (max|x| * sum|w - w_zp| + |offset|) + 2^(31+rs-ls) +
2^(31-ls) <= 2^53, one more pass). Channels failing that too: when some channels pass, the layer still folds
(`MixedEpilogue`): the failing channels' GEMM columns hold the raw accumulator (scale 1, constant = offset:
exact integers, |acc| < 2^32), which the epilogue gathers and requantizes with litert_py.quant.Requantizer
(exact by its own proofs and fallbacks) after the folded epilogue has run over every channel, then writes over
those channels' outputs.
When no channel passes, or the C++ accumulator could wrap (acc_bound > INT32_MAX), the unfolded kernel with
the Requantizer runs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, Requantizer
from ..common import clip_ufunc

FLOAT64_EXACT = 1 << 53


def epilogue_calls(epilogue, v: np.ndarray, out: np.ndarray) -> tuple:
    """The numpy calls ``epilogue(v, out)`` makes on these arrays, as ((function, args, kwargs), ...), with their
    views made once (the int8 kernels' bound plans, ops/fusion.bind_steps): running them in order
    is the epilogue's call without the nested Python call, its reshapes
    and attribute reads (bound_plan makes them the partial objects the bound __call__s run). Bit-identical: the
    same calls on the same arrays. An epilogue without ``calls`` (the MixedEpilogue's Requantizer) is one call of
    itself."""
    calls = getattr(epilogue, "calls", None)
    return ((epilogue, (v, out), {}),) if calls is None else calls(v, out)


#: FoldedEpilogue floors ``v`` in place and assigns it to the output (two plain calls) for outputs of at most this
#: many values, instead of one casting floor into the output (a casting ufunc call costs about twice a plain one).
#: Measured (hot, 1 thread, the two forms alone, numpy 2.x / 1.23): 600 values 1.13 -> 0.73 us, 784 1.17 -> 0.81 /
#: 1.15 -> 0.87 us, 2000 1.66 -> 1.33 us; at 4096 1.23 is even (2.77 vs 2.87 us). Inside real invokes TC-ResNet's
#: 784- and 600-value layers' casting floor took 1.5-2.0 us.
FLOOR_ASSIGN_MAX_VALUES = 2048


@dataclass(frozen=True, eq=False)
class FoldedEpilogue:
    """The invoke-time part: ``out = floor(clip(v, lo, hi))`` where ``v`` (float64, overwritten) already holds
    u + c (``half`` is None), or u, then ``v + copysign(half, v) + zp + 1/2`` first. Up to FLOOR_ASSIGN_MAX_VALUES
    values the floor is made in place and ``v`` assigned to the output (integers within the output type's range
    after the clip: the conversion is exact, the same values as the casting floor)."""

    lo: np.ndarray  # 0-d float64 (a Python float operand is converted on every ufunc call)
    hi: np.ndarray  # 0-d float64
    half: np.ndarray | None  # (OW*O,) float64 2^-(rs+1) per channel (0 where rs = 0), tiled over the width
    const: np.ndarray | float  # 0-d float64 zp + 1/2, added after the sign term (0.0 when half is None)
    sign: np.ndarray | None  # float64 scratch (rows, OW*O)

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        if self.half is not None:
            v = v.reshape(self.sign.shape)
        self._run(v, out.reshape(v.shape))

    def _run(self, v: np.ndarray, out: np.ndarray) -> None:
        """The epilogue on ``v`` (``sign``'s shape on the sign path) into ``out`` (v's shape)."""
        if self.half is not None:
            np.copysign(self.half, v, out=self.sign)
            np.add(v, self.sign, out=v)
            np.add(v, self.const, out=v)
        clip_ufunc(v, self.lo, self.hi, out=v)  # floor(clip(v)) == clip(floor(v)) for integer bounds
        if v.size <= FLOOR_ASSIGN_MAX_VALUES:
            np.floor(v, out=v)
            out[...] = v
        else:
            np.floor(v, out=out, casting="unsafe")

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (epilogue_calls)."""
        c = []
        if self.half is not None:
            sign = self.sign
            v = v.reshape(sign.shape)
            c += [(np.copysign, (self.half, v, sign), {}), (np.add, (v, sign, v), {}), (np.add, (v, self.const, v), {})]
        c.append((clip_ufunc, (v, self.lo, self.hi, v), {}))
        if v.size <= FLOOR_ASSIGN_MAX_VALUES:
            c += [(np.floor, (v, v), {}), (operator.setitem, (out.reshape(v.shape), ..., v), {})]
        else:
            c.append((np.floor, (v, out.reshape(v.shape)), {"casting": "unsafe"}))
        return tuple(c)


#: Outputs of at most this many values take SmallFoldedEpilogue; larger ones FoldedEpilogue (one pass less).
SMALL_EPILOGUE_VALUES = 512


@dataclass(frozen=True, eq=False)
class SmallFoldedEpilogue(FoldedEpilogue):
    """FoldedEpilogue for small outputs (streaming layers, where each numpy call costs about a microsecond
    whatever its size): ``v`` must have the output's shape (the callers allocate it so), ``half`` and ``sign``
    have the output's shape (a broadcasting ufunc call costs about twice a plain one), so a direct call makes no
    reshape; its outputs are within FLOOR_ASSIGN_MAX_VALUES, so the floor is in place and assigned: the same
    values. Its bound-plan ``calls`` are FoldedEpilogue's (their reshapes keep the shapes)."""

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        self._run(v, out)


@dataclass(frozen=True, eq=False)
class LateZeroPointEpilogue:
    """FoldedEpilogue for layers of which some channels are exact only with the output zero point added after
    the floor (right shifts of about 15 or more: zp * 2^(31+rs-ls) units do not fit in float64's 53 bits, the
    rounded value does): floor(v + zp) = floor(v) + zp for an integer zp, so on those channels the constant (or
    the sign path's ``const``) leaves zp out, the clip bounds are [lo - zp, hi - zp], and zp is added to the
    floored value. Per channel: ``v`` (rows, OW*O) view of the output-shaped values."""

    lo: np.ndarray  # (OW*O,) float64 lo - late zp
    hi: np.ndarray  # (OW*O,) float64 hi - late zp
    late_zp: np.ndarray  # (OW*O,) float64: zp on the late channels, 0 elsewhere
    half: np.ndarray | None  # (OW*O,) 2^-(rs+1) (sign path); None: ReLU-like, ``v`` holds u + c
    const: np.ndarray | None  # (OW*O,) early zp + 1/2 (sign path)
    sign: np.ndarray | None  # (rows, OW*O) float64 scratch (sign path)

    @staticmethod
    def build(relu_like: bool, rs, early_zp, late_zp, lo: int, hi: int, out_shape) -> LateZeroPointEpilogue:
        out_w = out_shape[2]
        rows = int(np.prod(out_shape)) // (out_w * np.size(rs))
        late = np.tile(np.asarray(late_zp, np.float64), out_w)
        half = const = sign = None
        if not relu_like:
            half = np.tile(np.where(rs > 0, np.ldexp(1.0, -rs - 1), 0.0), out_w)
            const = np.tile(np.asarray(early_zp, np.float64) + 0.5, out_w)
            sign = np.empty((rows, half.size))
        if int(np.prod(out_shape)) <= SMALL_EPILOGUE_VALUES:  # every operand with the output's shape

            def full(a):
                return None if a is None else np.ascontiguousarray(np.broadcast_to(a.reshape(out_w, -1), out_shape))

            return SmallLateZeroPointEpilogue(
                full(lo - late),
                full(hi - late),
                full(late),
                full(half),
                full(const),
                None if sign is None else np.empty(out_shape),
            )
        return LateZeroPointEpilogue(lo - late, hi - late, late, half, const, sign)

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        v = v.reshape(-1, self.late_zp.size)
        self.floor_clipped(v)
        np.add(v, self.late_zp, out=out.reshape(v.shape), casting="unsafe")  # integers in range: exact

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (epilogue_calls)."""
        v = v.reshape(-1, self.late_zp.size)
        return (*self.floor_calls(v), (np.add, (v, self.late_zp, out.reshape(v.shape)), {"casting": "unsafe"}))

    def floor_calls(self, v: np.ndarray) -> list:
        """floor_clipped's numpy calls on ``v``."""
        c = []
        if self.half is not None:
            c += [(np.copysign, (self.half, v, self.sign), {}), (np.add, (v, self.sign, v), {})]
            c.append((np.add, (v, self.const, v), {}))
        return [*c, (clip_ufunc, (v, self.lo, self.hi, v), {}), (np.floor, (v, v), {})]

    def floor_clipped(self, v: np.ndarray) -> None:
        """In place: the sign term (sign path), the clip to [lo - zp, hi - zp] and the floor."""
        if self.half is not None:
            np.copysign(self.half, v, out=self.sign)
            np.add(v, self.sign, out=v)
            np.add(v, self.const, out=v)
        clip_ufunc(v, self.lo, self.hi, out=v)
        np.floor(v, out=v)


@dataclass(frozen=True, eq=False)
class SmallLateZeroPointEpilogue(LateZeroPointEpilogue):
    """LateZeroPointEpilogue for outputs of at most SMALL_EPILOGUE_VALUES values, as SmallFoldedEpilogue: every
    operand has the output's shape (no reshapes, no broadcasting), the zero point added in place and the result
    assigned (no casting ufunc call): the same values."""

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        self.floor_clipped(v)
        np.add(v, self.late_zp, out=v)
        out[...] = v

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (epilogue_calls)."""
        return (*self.floor_calls(v), (np.add, (v, self.late_zp, v), {}), (operator.setitem, (out, ..., v), {}))


@dataclass(frozen=True, eq=False)
class MixedEpilogue:
    """A folded epilogue for a layer of which only some channels fold (module docstring): ``v`` (the output's
    shape) holds u + c (or u) on the folded channels and the raw accumulator on ``channels``. Those are gathered
    first (the folded epilogue overwrites ``v``), requantized by ``requant`` (exact), and written over the
    folded epilogue's outputs for them."""

    folded: FoldedEpilogue | LateZeroPointEpilogue
    channels: np.ndarray  # (B,) intp: the channels whose fold is not exact
    sub_acc: np.ndarray  # (N, OH, OW, B) float64 scratch
    sub_out: np.ndarray  # (N, OH, OW, B) in the output type
    requant: Requantizer  # for the B channels

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        np.take(v, self.channels, axis=-1, out=self.sub_acc)
        self.folded(v, out)
        self.requant(self.sub_acc, self.sub_out)
        out[..., self.channels] = self.sub_out


@dataclass(frozen=True)
class Folding:
    """What prepare folds into the weights: ``scale`` (O,) float64 M * 2^(ls-31-rs) per output channel (the
    weights times it are exact) and ``const`` (O,) float64 offset * scale (+ c when the epilogue needs no sign
    term), exact."""

    scale: np.ndarray
    const: np.ndarray
    epilogue: FoldedEpilogue


def fold_requantization(
    multiplier,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    offset,
    weight_abs_sums,
    max_abs_x: int,
    acc_bound: float,
    out_shape,
    out_dtype=np.int8,
) -> Folding | None:
    """The folding of clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) with acc = sum_k x_k * w_kc + offset[c]
    (a MixedEpilogue when the bound of the module docstring fails on some channels), or None when it fails on
    every channel or the C++ accumulator could wrap.

    ``offset``: (O,) exact integers; ``weight_abs_sums``: (O,) sum over k of |w_kc| (integers);
    ``max_abs_x``: the largest |x| the sums read (raw input values, padding included);
    ``acc_bound``: a bound of |acc| (the C++ int32 accumulator); ``out_shape``: NHWC output shape;
    ``out_dtype``: the output's type."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.asarray(shift, np.int64).reshape(-1)
    offset = np.asarray(offset, np.int64).reshape(-1)
    wsum = np.asarray(weight_abs_sums, np.int64).reshape(-1)
    if acc_bound > INT32_MAX or (m < 0).any():
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    exact = np.zeros(m.size, bool)
    late = np.zeros(m.size, bool)  # exact only with the zero point added after the floor
    for c, (mc, lc, rc, w, off) in enumerate(zip(m.tolist(), ls.tolist(), rs.tolist(), wsum.tolist(), offset.tolist())):
        if lc > 30 or rc > 31 or acc_bound * 2.0**lc > INT32_MAX:
            continue
        units = mc * (max_abs_x * w + abs(off)) + (1 << (31 - lc))
        exact[c] = units + ((abs(zero_point) + 1) << (31 + rc - lc)) <= FLOAT64_EXACT
        late[c] = not exact[c] and units + (1 << (31 + rc - lc)) <= FLOAT64_EXACT
    exact |= late
    if not exact.any():
        return None
    ls, rs = np.where(exact, ls, 0), np.where(exact, rs, 0)  # the other channels: scale 1, the raw accumulator
    unit = np.ldexp(1.0, ls - 31 - rs)
    scale = np.where(exact, m * unit, 1.0)
    const = np.where(exact, (offset * m).astype(np.float64) * unit, offset)  # |offset * M| < 2^53: exact
    relu_like = lo >= zero_point or not rs.any()
    early_zp = np.where(late, 0, zero_point)  # the zero point added before the floor (in the constant)
    if relu_like:
        const = const + np.where(exact, early_zp + np.where(rs > 0, np.ldexp(1.0, -1 - rs) + 0.5, 0.5), 0.0)
    if late.any():
        epilogue = LateZeroPointEpilogue.build(
            relu_like, rs, early_zp, np.where(late, zero_point, 0), lo, hi, out_shape
        )
    else:
        epilogue = _folded_epilogue(relu_like, rs, zero_point, lo, hi, out_shape)
    if not exact.all():
        channels = np.flatnonzero(~exact)
        sub_shape = tuple(out_shape[:3]) + (channels.size,)
        requant = Requantizer.build(m[channels], s[channels], zero_point, lo, hi, acc_bound, sub_shape)
        epilogue = MixedEpilogue(epilogue, channels, np.empty(sub_shape), np.empty(sub_shape, out_dtype), requant)
    return Folding(scale, const, epilogue)


def _folded_epilogue(relu_like: bool, rs: np.ndarray, zero_point: int, lo: int, hi: int, out_shape) -> FoldedEpilogue:
    out_w = out_shape[2]
    small = int(np.prod(out_shape)) <= SMALL_EPILOGUE_VALUES
    if relu_like:
        if small:
            return SmallFoldedEpilogue(np.array(float(lo)), np.array(float(hi)), None, 0.0, None)
        return FoldedEpilogue(np.array(float(lo)), np.array(float(hi)), None, 0.0, None)
    half = np.tile(np.where(rs > 0, np.ldexp(1.0, -rs - 1), 0.0), out_w)
    if small:  # v has the output's shape
        return SmallFoldedEpilogue(
            np.array(float(lo)),
            np.array(float(hi)),
            np.ascontiguousarray(np.broadcast_to(half.reshape(out_w, -1), out_shape)),
            np.array(zero_point + 0.5),
            np.empty(out_shape),
        )
    rows = int(np.prod(out_shape)) // half.size
    return FoldedEpilogue(
        np.array(float(lo)), np.array(float(hi)), half, np.array(zero_point + 0.5), np.empty((rows, half.size))
    )
