"""RESIZE_BILINEAR float32 / uint8 by integer-factor upsampling: one block of scalar-weight slices per phase.

When the output size is an integer multiple ``f`` of the input size along an axis (2x with half_pixel_centers
in the MediaPipe segmentation decoders, or with neither flag), the reference kernel's per-output tables
(ComputeInterpolationValues: lower, upper, 1 - d, d) are periodic: output ``o = f*i + p`` reads input
``i + a_p`` and ``i + b_p`` with the weights of phase ``p`` — except at a few edge outputs (half_pixel_centers
clamps ``floor(-0.25)`` to 0 and keeps ``d = -0.25``). :func:`phase_plan` checks this at prepare, value by
value, against the tables the generic kernel uses (bilinear_axis_float), so nothing is assumed about the
coordinate arithmetic: the clamped indices become an edge-replicated padding of the input, the weights
become float32 scalars, and the outputs where the pattern does not hold are listed as exceptions.

Per invoke, the edge-padded input P is multiplied once by each distinct row weight and each of those by each
column weight it meets (2 x 2 products for 2x half_pixel_centers; a gather commutes with an elementwise
multiply); every (row phase, column phase) block of the output is then three adds of slices of these
products, ``((P*wy0*wx0)[y0, x0] + (P*wy1*wx0)[y1, x0]) + (P*wy0*wx1)[y0, x1]) + (P*wy1*wx1)[y1, x1]``,
copied into the strided output block as opaque C*4-byte pixels; the exception rows and columns are recomputed
by the reference formula on their own. The adds run over flat contiguous ranges of the products in their
padded layout (a slice ``[y0:y0+H, x0:x0+W]`` is the flat range starting at ``(y0*Wp + x0)*C`` read with the
padded row pitch), into a scratch of the padded shape whose ``[:H, :W]`` corner is the block: the few pad columns
between rows are computed and dropped. Contiguous 1-D adds run about 3x faster than adds over the 4-D slices
(64x64x16 -> 128x128x16: the four blocks' adds 220 -> ~80 us). Every output is the reference's float32 expression
``p00*(1-dy)*(1-dx) + p10*dy*(1-dx) + p01*(1-dy)*dx + p11*dy*dx`` on the same operands in the same order:
bit-identical to the gather kernel (resize.ResizeBilinearFloat; inf, NaN and signed zeros included), with
about half its passes and no index gathers.

Source matched: tensorflow/lite/kernels/internal/reference/resize_bilinear.h (ResizeBilinear,
ComputeInterpolationValues).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import aligned_empty

_F32 = np.float32
#: at most this many edge-replicated elements on each side, and this many exception outputs per axis
MAX_PAD, MAX_EXCEPTIONS = 2, 4


@dataclass(frozen=True)
class AxisPlan:
    """Per phase p: input offsets (a_p, b_p) of the lower/upper neighbour in padded coordinates, the weights
    (1 - d, d) as float32 scalars; the outputs not following the pattern; the padding (before, after)."""

    factor: int
    lo_start: tuple  # padded index of the lower neighbour of output f*0 + p
    hi_start: tuple
    w0: tuple
    w1: tuple
    exceptions: np.ndarray  # output indices recomputed by the reference formula
    pad: tuple


def phase_plan(in_size: int, out_size: int, lo, hi, w0, w1) -> AxisPlan | None:
    """The periodic form of one axis's tables, or None when the output is not an integer multiple of the
    input, a neighbour lies more than MAX_PAD outside the input, or more than MAX_EXCEPTIONS outputs differ."""
    if in_size <= 0 or out_size % in_size:
        return None
    f, n = out_size // in_size, in_size
    i = np.arange(n)
    mid = n // 2
    offs, ws, bad = [], [], []
    for p in range(f):
        lo_p, hi_p, w0_p, w1_p = lo[p::f], hi[p::f], w0[p::f], w1[p::f]
        a, b = int(lo_p[mid]) - mid, int(hi_p[mid]) - mid
        u, v = w0_p[mid], w1_p[mid]
        same = (np.clip(i + a, 0, n - 1) == lo_p) & (np.clip(i + b, 0, n - 1) == hi_p)
        same &= (w0_p.view(np.uint32) == u.view(np.uint32)) & (w1_p.view(np.uint32) == v.view(np.uint32))
        bad.extend((f * i + p)[~same].tolist())
        offs.append((a, b))
        ws.append((_F32(u), _F32(v)))
    before = max(0, -min(min(ab) for ab in offs))
    after = max(0, max(max(ab) for ab in offs))
    if before > MAX_PAD or after > MAX_PAD or len(bad) > MAX_EXCEPTIONS:
        return None
    return AxisPlan(
        f,
        tuple(a + before for a, _ in offs),
        tuple(b + before for _, b in offs),
        tuple(u for u, _ in ws),
        tuple(v for _, v in ws),
        np.array(sorted(bad), np.int64),
        (before, after),
    )


@dataclass(frozen=True)
class EdgePixels:
    """The output pixels outside the periodic pattern, computed by the reference formula in one gather: the
    four neighbours' flat indices into the padded input (4, K), the row and column weights (4, K, 1) in the
    reference's term order, and the pixels' flat output indices (K,)."""

    corners: np.ndarray
    wy: np.ndarray
    wx: np.ndarray
    at: np.ndarray

    @staticmethod
    def build(ys: AxisPlan, xs: AxisPlan, ytab, xtab, padded_w: int, out_w: int) -> EdgePixels | None:
        out_h = len(ytab[0])
        mask = np.zeros((out_h, out_w), bool)
        mask[ys.exceptions] = True
        mask[:, xs.exceptions] = True
        r, c = np.nonzero(mask)
        if not r.size:
            return None
        (ylo, yhi, wy0, wy1), (xlo, xhi, wx0, wx1) = ytab, xtab
        top, left = ys.pad[0], xs.pad[0]

        def flat(y, x):
            return (y[r] + top) * padded_w + x[c] + left

        corners = np.stack([flat(ylo, xlo), flat(yhi, xlo), flat(ylo, xhi), flat(yhi, xhi)])
        wy = np.stack([wy0[r], wy1[r], wy0[r], wy1[r]])[..., None]
        wx = np.stack([wx0[c], wx0[c], wx1[c], wx1[c]])[..., None]
        return EdgePixels(corners, wy, wx, r * out_w + c)

    def __call__(self, padded: np.ndarray, out: np.ndarray) -> None:
        n, c = padded.shape[0], padded.shape[3]
        t = np.take(padded.reshape(n, -1, c), self.corners, axis=1)  # (N, 4, K, C)
        t *= self.wy
        t *= self.wx
        out.reshape(n, -1, c)[:, self.at] = ((t[:, 0] + t[:, 1]) + t[:, 2]) + t[:, 3]


def pad_edges(p: np.ndarray, x: np.ndarray, ypad: tuple, xpad: tuple) -> None:
    """Copy ``x`` (N, H, W, C) into ``p`` (N, H + sum(ypad), W + sum(xpad), C) with its edges replicated
    (``ypad``, ``xpad``: the (before, after) pads); the conversion to ``p``'s dtype is exact."""
    (t, b), (lft, r) = ypad, xpad
    h, w = x.shape[1:3]
    inner = p[:, t : t + h, lft : lft + w]
    np.copyto(inner, x, casting="unsafe")
    if lft:
        p[:, t : t + h, :lft] = inner[:, :, :1]
    if r:
        p[:, t : t + h, lft + w :] = inner[:, :, w - 1 : w]
    if t:
        p[:, :t] = p[:, t : t + 1]
    if b:
        p[:, t + h :] = p[:, t + h - 1 : t + h]


@dataclass(frozen=True, eq=False)
class ResizeBilinearPhases:
    """Integer-factor float32 (round_offset 0) or uint8 (round_offset 0.5) upsampling; see the module doc."""

    ys: AxisPlan
    xs: AxisPlan
    edges: EdgePixels | None  # the exception rows and columns
    in_hw: tuple
    round_offset: float
    wy: tuple  # the distinct row weights (float32)
    pairs: tuple  # per product: (row weight index, column weight)
    blocks: tuple  # (py, px, ((product, flat offset) x 4 in the reference's term order))
    padded: np.ndarray  # (N, H + pads, W + pads, C) float32
    rows: tuple  # per distinct row weight: padded * wy
    products: tuple  # per pair: (padded * wy) * wx, flat
    tmp: np.ndarray  # flat, the padded size: the block's sums in the padded layout
    span: int  # the flat length of the adds: up to the block's last pixel in the padded layout
    unit: np.dtype  # void of C*4 bytes
    acc: np.ndarray | None  # uint8: the float32 result before rounding

    def _pad(self, x):
        pad_edges(self.padded, x, self.ys.pad, self.xs.pad)

    def __call__(self, inputs, outputs):
        ys, xs = self.ys, self.xs
        h, w = self.in_hw
        self._pad(inputs[0])
        out = outputs[0] if self.acc is None else self.acc
        for wy, r in zip(self.wy, self.rows, strict=True):
            np.multiply(self.padded, wy, out=r)
        for (iy, wx), q in zip(self.pairs, self.products, strict=True):
            np.multiply(self.rows[iy].reshape(-1), wx, out=q)
        q, span = self.products, self.span
        t = self.tmp[:span]
        n, oh, ow, c = out.shape
        units = out.reshape(-1, c).view(self.unit).reshape(n, oh, ow)  # a pixel's C values as one item
        hp, wp = self.padded.shape[1:3]
        t_units = self.tmp.reshape(-1, c).view(self.unit).reshape(n, hp, wp)[:, :h, :w]
        for py, px, ((k0, o0), (k1, o1), (k2, o2), (k3, o3)) in self.blocks:
            np.add(q[k0][o0 : o0 + span], q[k1][o1 : o1 + span], out=t)
            t += q[k2][o2 : o2 + span]
            t += q[k3][o3 : o3 + span]
            # into the strided output block as opaque C*4-byte items: 2x faster than a float32 add into it
            np.copyto(units[:, py :: ys.factor, px :: xs.factor], t_units)
        if self.edges is not None:
            self.edges(self.padded, out)
        if self.acc is not None:  # uint8: + 0.5 then static_cast (truncation)
            out += _F32(self.round_offset)
            np.copyto(outputs[0], out, casting="unsafe")


#: ResizeBilinearPhases bands its work when its buffers (padded input, row and pair products, sums) pass this
#: many bytes, in bands of about BAND_BYTES of them: each pass then reads what the previous one wrote while it
#: is still in L2 (measured, 1 thread, half_pixel_centers 2x, hot loop: 32x32x64 402 -> 362 us, 64x64x16
#: 401 -> 357, 128x128x16 2180 -> 1244, 32x32x128 876 -> 664; 16x16x128, 1.3 MB of buffers, 193 -> 203: left
#: unbanded); bands of 64-256 KB were slower (more numpy calls), 2 MB bands slower again.
BANDED_MIN_BYTES = 2 << 20
BAND_BYTES = 1 << 20


@dataclass(frozen=True, eq=False)
class ResizeBilinearPhasesBanded(ResizeBilinearPhases):
    """ResizeBilinearPhases (one batch) run in bands of input rows: per band, the row and pair products of the
    padded rows the band's sums read (those not made by an earlier band), the four blocks' sums of the band's
    rows, their copies into the output. The same operations on the same operands as the unbanded kernel, each
    output value computed once: bit-identical. ``bands``: per band, ``(products, sums, (r0, r1), units)``,
    views of the op's own buffers made at prepare: products ``(source, weight, destination)``, sums
    ``(a, b, c, d, into)`` per block in ``blocks`` order, and the band's rows of the sums as C*4-byte units."""

    bands: tuple = ()

    def __call__(self, inputs, outputs):
        ys, xs = self.ys, self.xs
        self._pad(inputs[0])
        out = outputs[0] if self.acc is None else self.acc
        n, oh, ow, c = out.shape
        units = out.reshape(-1, c).view(self.unit).reshape(n, oh, ow)
        fy, fx = ys.factor, xs.factor
        for products, sums, (r0, r1), band_units in self.bands:
            for src, weight, dst in products:
                np.multiply(src, weight, out=dst)
            for (py, px, _), (a, b, c2, d, t) in zip(self.blocks, sums, strict=True):
                np.add(a, b, out=t)
                t += c2
                t += d
                np.copyto(units[:, py + fy * r0 : fy * r1 : fy, px::fx], band_units)
        if self.edges is not None:
            self.edges(self.padded, out)
        if self.acc is not None:  # uint8: + 0.5 then static_cast (truncation)
            out += _F32(self.round_offset)
            np.copyto(outputs[0], out, casting="unsafe")


def _banded(op: ResizeBilinearPhases) -> ResizeBilinearPhasesBanded | None:
    """``op`` in bands (ResizeBilinearPhasesBanded) when its buffers pass BANDED_MIN_BYTES (one batch only)."""
    n, hp, wp, c = op.padded.shape
    buffers = 2 + len(op.rows) + len(op.products)
    if n != 1 or op.padded.nbytes * buffers < BANDED_MIN_BYTES:
        return None
    h, w = op.in_hw
    pitch = wp * c
    band_rows = max(2, BAND_BYTES // (pitch * 4 * buffers))
    reach = max(max(ys) for ys in (op.ys.lo_start, op.ys.hi_start))  # rows below a block row that its sums read
    flat_padded = op.padded.reshape(-1)
    flat_rows = [r.reshape(-1) for r in op.rows]
    tmp_units = op.tmp.reshape(-1, c).view(op.unit).reshape(n, hp, wp)
    bands, done = [], 0
    for r0 in range(0, h, band_rows):
        r1 = min(r0 + band_rows, h)
        end = hp * pitch if r1 == h else (r1 + reach) * pitch
        products = [(flat_padded[done:end], wy, r[done:end]) for wy, r in zip(op.wy, flat_rows, strict=True)]
        products += [
            (flat_rows[iy][done:end], wx, q[done:end]) for (iy, wx), q in zip(op.pairs, op.products, strict=True)
        ]
        done = end
        start, length = r0 * pitch, (r1 - r0 - 1) * pitch + w * c  # the band's rows up to its last pixel
        t = op.tmp[start : start + length]
        sums = tuple(
            tuple(op.products[k][o + start : o + start + length] for k, o in terms) + (t,) for _, _, terms in op.blocks
        )
        bands.append((tuple(products), sums, (r0, r1), tmp_units[:, r0:r1, :w]))
    fields = {f: getattr(op, f) for f in op.__dataclass_fields__}
    return ResizeBilinearPhasesBanded(**fields, bands=tuple(bands))


def make_phases_op(in_shape, out_hw, dtype, ytab, xtab) -> ResizeBilinearPhases | None:
    """The phase kernel for these (lo, hi, 1 - d, d) tables, or None when an axis is not periodic."""
    n, h, w, c = in_shape
    oh, ow = out_hw
    if n * c == 0:
        return None
    ys, xs = phase_plan(h, oh, *ytab), phase_plan(w, ow, *xtab)
    if ys is None or xs is None or (ys.factor == 1 and xs.factor == 1):
        return None
    wy, pairs, blocks = {}, {}, []  # keyed by the weights' bits: -0.0 and 0.0 stay apart

    def product(wyv, wxv):
        iy = wy.setdefault(wyv.view(np.uint32).item(), (len(wy), wyv))[0]
        return pairs.setdefault((iy, wxv.view(np.uint32).item()), (len(pairs), (iy, wxv)))[0]

    for py in range(ys.factor):
        y0, y1, wy0, wy1 = ys.lo_start[py], ys.hi_start[py], ys.w0[py], ys.w1[py]
        for px in range(xs.factor):
            x0, x1, wx0, wx1 = xs.lo_start[px], xs.hi_start[px], xs.w0[px], xs.w1[px]
            terms = ((wy0, y0, wx0, x0), (wy1, y1, wx0, x0), (wy0, y0, wx1, x1), (wy1, y1, wx1, x1))
            blocks.append((py, px, tuple((product(a, b), r, col) for a, r, b, col in terms)))
    hp, wp = h + sum(ys.pad), w + sum(xs.pad)
    padded_shape = (n, hp, wp, c)
    # term (product, r, col) -> the flat offset of its slice; the adds cover the padded layout up to the block's
    # last pixel (batch n-1, row h-1, column w-1), which with any offset r <= hp - h, col <= wp - w stays inside
    blocks = [(py, px, tuple((k, (r * wp + col) * c) for k, r, col in terms)) for py, px, terms in blocks]
    span = (((n - 1) * hp + h - 1) * wp + w) * c
    op = ResizeBilinearPhases(
        ys,
        xs,
        EdgePixels.build(ys, xs, ytab, xtab, w + sum(xs.pad), ow),
        (h, w),
        0.5 if dtype == np.uint8 else 0.0,
        tuple(v for _, v in wy.values()),
        tuple(v for _, v in pairs.values()),
        tuple(blocks),
        aligned_empty(padded_shape, _F32),
        tuple(aligned_empty(padded_shape, _F32) for _ in wy),
        tuple(aligned_empty(padded_shape, _F32).reshape(-1) for _ in pairs),
        aligned_empty(n * hp * wp * c, _F32),
        span,
        np.dtype((np.void, 4 * c)),
        None if dtype == _F32 else aligned_empty((n, oh, ow, c), _F32),
    )
    return _banded(op) or op
