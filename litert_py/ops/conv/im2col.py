"""The im2col matrix of CONV_2D (float and quantized paths) and the filter as its GEMM operand."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bound_plan import contiguous_source
from ..common import aligned_empty, aligned_full, reshape_view
from .common import (
    IM2COL_BLOCK_BYTES,
    Geometry,
    padded_buffer,
    quantized_weights,
)

# -- CONV_2D --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Im2Col:
    """Lays the receptive fields of an NHWC input out as the rows of a (G, M, KH*KW*Cg) GEMM operand and
    multiplies it (`gemm`).

    Each block A, in a buffer allocated at prepare, holds the rows of output rows r0:r1 of batches n0:n1 (one
    block unless the matrix exceeds IM2COL_BLOCK_BYTES). Padding comes from a buffer allocated at prepare
    whose border holds the pad value (0.0 for float, the input zero point for quantized inputs); 1x1 stride-1
    convs use the input itself as A when it already has A's type. The padded buffer has the input's type
    (``src_dtype``); the copy into A converts.
    """

    geo: Geometry
    groups: int
    padded: np.ndarray | None  # (N, Hp, Wp, C) when the windows need padding
    interior: tuple | None  # where the input goes in `padded`
    window: np.ndarray | None  # (G, N, OH, OW, KH, KW, Cg) strided view of `padded`
    blocks: tuple  # ((n0, n1, r0, r1, A, A as (G, n, r, OW, KH, KW, Cg)), ...); A is None for 1x1 stride 1
    pointwise: bool = False  # 1x1 stride 1 (or one window over the whole input) unpadded, one block: A is the
    # input converted (no window view)

    @staticmethod
    def build(geo: Geometry, groups: int, dtype, pad_value=0, src_dtype=None, ones: bool = False) -> Im2Col:
        """``ones`` (groups 1): A gets a last column of ones (the folded constant row of the weights)."""
        g = geo
        src_dtype = np.dtype(dtype if src_dtype is None else src_dtype)
        cg = g.in_c // groups
        kg = g.filter_h * g.filter_w * cg
        if (
            g.filter_h == g.filter_w == g.stride_h == g.stride_w == 1
            and not g.padded
            and src_dtype == dtype
            and not ones
        ):
            return Im2Col(geo, groups, None, None, None, ((0, g.batches, 0, g.out_h, None, None),))
        row_bytes = g.out_w * (kg + ones) * groups * np.dtype(dtype).itemsize
        if g.batches * g.out_h * row_bytes <= IM2COL_BLOCK_BYTES:
            spans = [(0, g.batches, 0, g.out_h)]
        else:
            step = max(1, IM2COL_BLOCK_BYTES // row_bytes)
            spans = [(n, n + 1, r, min(r + step, g.out_h)) for n in range(g.batches) for r in range(0, g.out_h, step)]
        rows = max((n1 - n0) * (r1 - r0) for n0, n1, r0, r1 in spans) * g.out_w
        cols = aligned_empty((groups, rows, kg + ones), dtype)
        if ones:
            cols[..., kg] = 1
        blocks = []
        for n0, n1, r0, r1 in spans:
            a = cols[:, : (n1 - n0) * (r1 - r0) * g.out_w]
            shape = (groups, n1 - n0, r1 - r0, g.out_w, g.filter_h, g.filter_w, cg)
            if ones:  # splits the two axes of a strided view: still a view
                dest = a[..., :kg].reshape(shape)
                assert np.shares_memory(dest, cols)
            else:
                dest = reshape_view(a, shape)
            blocks.append((n0, n1, r0, r1, a, dest))
        padded = interior = window = None
        if g.padded:
            padded, interior = padded_buffer(g, g.in_c, src_dtype, pad_value)
            window = Im2Col._window(g, groups, padded)
        # one window covering the whole (unpadded) input: its rows are the input's, as for 1x1 stride 1
        whole = (
            groups == 1
            and g.out_h == g.out_w == 1
            and (g.filter_h, g.filter_w) == (g.in_h, g.in_w)
            and g.dilation_h == g.dilation_w == 1
        )
        pointwise = (
            (g.filter_h == g.filter_w == g.stride_h == g.stride_w == 1 or whole) and not g.padded and len(blocks) == 1
        )
        return Im2Col(geo, groups, padded, interior, window, tuple(blocks), pointwise)

    @staticmethod
    def _window(g: Geometry, groups: int, src: np.ndarray) -> np.ndarray:
        sn, sh, sw, sc = src.strides
        cg = g.in_c // groups
        shape = (groups, g.batches, g.out_h, g.out_w, g.filter_h, g.filter_w, cg)
        strides = (cg * sc, sn, sh * g.stride_h, sw * g.stride_w, sh * g.dilation_h, sw * g.dilation_w, sc)
        if src.flags.c_contiguous:  # the ndarray constructor is 5x cheaper than as_strided
            return np.ndarray(shape, src.dtype, src, 0, strides)
        return np.lib.stride_tricks.as_strided(src, shape, strides, writeable=False)

    def calls(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> tuple:
        """The numpy calls of out (N, OH, OW, O) = im2col(x) @ weights (G, Kg, Og), one GEMM per block, as
        (function, args, kwargs) triples on views made here (a bound plan makes them once: bound_plan.py; `gemm`
        runs them at once). ``out`` is C-contiguous (its reshapes are views); an ``x`` that is not is read
        through a C-contiguous copy where a reshape of it would be one (bound_plan.contiguous_source)."""
        groups = self.groups
        og = weights.shape[2]
        w = weights[0] if groups == 1 else weights
        blocks = self.blocks
        a = blocks[0][4]
        calls = []
        if a is None or self.pointwise:  # 1x1 stride 1 (or one whole window): the input's rows are A's
            x = contiguous_source(x, calls)
            if groups == 1:
                rows = out.reshape(-1, og)
                if a is None:  # the input is the (M, C) matrix
                    return (*calls, (np.matmul, (x.reshape(-1, x.shape[3]), w), {"out": rows}))
                dest = blocks[0][5]
                return (*calls, (np.copyto, (dest, x.reshape(dest.shape)), {}), (np.matmul, (a[0], w), {"out": rows}))
            xg = x.reshape(-1, groups, x.shape[3] // groups).transpose(1, 0, 2)
            rows = out.reshape(-1, groups, og).transpose(1, 0, 2)
            if a is None:
                return (*calls, (np.matmul, (xg, w), {"out": rows}))
            return (*calls, (np.copyto, (a, xg), {}), (np.matmul, (a, w), {"out": rows}))
        if self.padded is not None:  # (the padded buffer has the input's type or a wider one: a safe cast)
            calls.append((np.copyto, (self.padded[self.interior], x), {}))
            window = self.window
        else:
            window = self._window(self.geo, groups, x)  # a view of x, whatever its layout
        one = len(blocks) == 1
        for n0, n1, r0, r1, a, dest in blocks:
            calls.append((np.copyto, (dest, window if one else window[:, n0:n1, r0:r1]), {}))
            rows = out[n0:n1, r0:r1].reshape(-1, og)
            if groups == 1:
                calls.append((np.matmul, (a[0], w), {"out": rows}))
            else:
                calls.append((np.matmul, (a, w), {"out": rows.reshape(-1, groups, og).transpose(1, 0, 2)}))
        return tuple(calls)

    def gemm(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
        """`calls` run at once, for arrays that change at every call (ConvHybrid's quantized input, ConvQuantized's
        weights made from its filter input)."""
        for f, a, k in self.calls(x, weights, out):
            f(*a, **k)


def gemm_calls(im2col, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> tuple:
    """The numpy calls of the GEMM of ``x``'s im2col matrix with ``weights`` into ``out``, as (function, args,
    kwargs) triples: the layout's own ``calls`` (Im2Col, RowBands, Im2ColT: their one description; Im2Col.gemm runs
    them at once for the kernels whose operands change at every call)."""
    return im2col.calls(x, weights, out)


def gemm_weights(f: np.ndarray, groups: int, dtype, filter_zp: int = 0) -> np.ndarray:
    """OHWI filter -> (G, KH*KW*Cg, Og): each group's GEMM right operand, contiguous."""
    o = f.shape[0]
    w = f.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    if filter_zp or f.dtype != dtype:
        w = quantized_weights(w, filter_zp, dtype)
    return np.ascontiguousarray(w, dtype=dtype)


@dataclass(frozen=True, eq=False)
class RowBands:
    """CONV_2D (groups 1) as KH GEMMs over horizontal windows: ``bands`` B[n, p, r, x] holds the KW*C values
    P[n, r*SH + p, x*SW + kw*DW, c] of the padded input P (and a ones column when asked), so the im2col rows of
    filter row kh, output rows y, are B[n, (kh*DH) % SH, (kh*DH) // SH + y]: OH*OW contiguous rows, a GEMM
    operand without a copy. The copy into B is about 1/KH of the im2col matrix's (the padded rows once instead of
    KH times); the KH products are added (``gemm``): exact in float32 while every partial sum of the full GEMM
    is (each is a sum of a subset of its terms), which the caller proves. ``weights`` (KH, KW*C [+1], O): the
    filter rows (the ones column's row in the first, zeros in the others)."""

    padded: np.ndarray  # (N, R*SH, Wp, C) in the input's type, border = the pad value
    interior: tuple
    window: np.ndarray  # (N, SH, R, OW, KW, C) strided view of `padded`
    dest: np.ndarray  # (N, SH, R, OW, KW, C) view of `bands` (its first KW*C columns)
    rows: tuple  # rows[n][kh]: (OH*OW, KW*C [+1]) views of `bands`
    scratch: np.ndarray  # (OH*OW, O) float32: the products of the filter rows after the first

    @staticmethod
    def build(geo: Geometry, dtype, pad_value, src_dtype, ones: bool) -> RowBands:
        g = geo
        sh = g.stride_h
        hp = g.pad_top + g.in_h + g.pad_bottom
        r = -(-hp // sh)
        wp = g.pad_left + g.in_w + g.pad_right
        padded = aligned_full((g.batches, r * sh, wp, g.in_c), pad_value, src_dtype)
        interior = (slice(None), slice(g.pad_top, g.pad_top + g.in_h), slice(g.pad_left, g.pad_left + g.in_w))
        kwc = g.filter_w * g.in_c
        bands = aligned_empty((g.batches, sh, r, g.out_w, kwc + ones), dtype)
        if ones:
            bands[..., kwc] = 1
        dest = bands[..., :kwc].reshape(g.batches, sh, r, g.out_w, g.filter_w, g.in_c)
        assert np.shares_memory(dest, bands)
        sn, s_h, s_w, sc = padded.strides
        window = np.ndarray(
            (g.batches, sh, r, g.out_w, g.filter_w, g.in_c),
            padded.dtype,
            padded,
            0,
            (sn, s_h, s_h * sh, s_w * g.stride_w, s_w * g.dilation_w, sc),
        )
        rows = tuple(
            tuple(
                reshape_view(
                    bands[n, kh * g.dilation_h % sh, kh * g.dilation_h // sh : kh * g.dilation_h // sh + g.out_h],
                    (g.out_h * g.out_w, kwc + ones),
                )
                for kh in range(g.filter_h)
            )
            for n in range(g.batches)
        )
        scratch = aligned_empty((g.out_h * g.out_w, g.out_c), dtype)
        return RowBands(padded, interior, window, dest, rows, scratch)

    def calls(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> tuple:
        """The numpy calls of out (N, OH, OW, O) = the convolution of x with ``weights`` (KH, KW*C [+1], O), as
        (function, args, kwargs) triples on views made here (a bound plan makes them once; `gemm` runs them):
        the input into the padded buffer (an unsafe cast, as an assignment makes), the bands, per batch the KH
        products added."""
        scratch = self.scratch
        calls = [(np.copyto, (self.padded[self.interior], x), {"casting": "unsafe"})]
        calls.append((np.copyto, (self.dest, self.window), {}))
        for n, rows in enumerate(self.rows):
            acc = out[n].reshape(scratch.shape)
            calls.append((np.matmul, (rows[0], weights[0]), {"out": acc}))
            for kh in range(1, len(rows)):
                calls += [(np.matmul, (rows[kh], weights[kh]), {"out": scratch}), (np.add, (acc, scratch, acc), {})]
        return tuple(calls)


def row_band_weights(w: np.ndarray, geo: Geometry, offset: np.ndarray | None, dtype) -> np.ndarray:
    """(K, O) weights in (KH, KW, C) row order (gemm_weights's) -> RowBands's (KH, KW*C [+1], O): the offset row
    (the ones column's) in the first filter row, zeros in the others."""
    kh = geo.filter_h
    bands = w.reshape(kh, -1, w.shape[1])
    if offset is None:
        return np.ascontiguousarray(bands, dtype)
    extra = np.zeros((kh, 1, w.shape[1]), w.dtype)
    extra[0, 0] = offset
    return np.ascontiguousarray(np.concatenate([bands, extra], axis=1), dtype)


@dataclass(frozen=True, eq=False)
class Im2ColT:
    """The im2col matrix of a CONV_2D (groups 1) laid out transposed, (K [+1], M) with rows in (kh, kw, c) order,
    multiplied as its transpose (BLAS takes the transposed operand without a copy). The copy of each row is a
    strided (N, OH, OW) plane of the padded input: inner loops over the output width instead of over KW*C
    values, for inputs of 1 or 2 channels (first layers), whose im2col rows are made of a few 1-3 value runs."""

    padded: np.ndarray  # (N, Hp, Wp, C), border = the pad value
    interior: tuple
    window: np.ndarray  # (KH, KW, C, N, OH, OW) strided view of `padded`
    dest: np.ndarray  # (KH, KW, C, N, OH, OW) view of the first K rows of `at`
    a: np.ndarray  # (M, K [+1]) F-ordered view of `at`: the GEMM operand

    @staticmethod
    def build(geo: Geometry, dtype, pad_value, src_dtype, ones: bool) -> Im2ColT:
        g = geo
        padded, interior = padded_buffer(g, g.in_c, src_dtype, pad_value)
        k = g.filter_h * g.filter_w * g.in_c
        m = g.batches * g.out_h * g.out_w
        at = aligned_empty((k + ones, m), dtype)
        if ones:
            at[k] = 1
        dest = at[:k].reshape(g.filter_h, g.filter_w, g.in_c, g.batches, g.out_h, g.out_w)
        assert np.shares_memory(dest, at)
        sn, sh, sw, sc = padded.strides
        window = np.ndarray(
            dest.shape,
            padded.dtype,
            padded,
            0,
            (sh * g.dilation_h, sw * g.dilation_w, sc, sn, sh * g.stride_h, sw * g.stride_w),
        )
        return Im2ColT(padded, interior, window, dest, at.T)

    def calls(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> tuple:
        """The numpy calls of out (N, OH, OW, O) = im2col(x) @ weights (1, K [+1], O), as (function, args, kwargs)
        triples on views made here (a bound plan makes them once; `gemm` runs them)."""
        return (
            (np.copyto, (self.padded[self.interior], x), {"casting": "unsafe"}),  # as an assignment casts
            (np.copyto, (self.dest, self.window), {}),
            (np.matmul, (self.a, weights[0]), {"out": out.reshape(self.a.shape[0], -1)}),
        )
