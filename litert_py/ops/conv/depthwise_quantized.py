"""DEPTHWISE_CONV_2D, quantized (uint8 / int8 per-channel / int16x8, bit-exact with BUILTIN_REF) and hybrid
(float32 input, int8 filter) prepared ops: `DepthwiseConvQuantized`, `DepthwiseConvQuantizedFolded`,
`DepthwiseConvWholeFolded`, `DepthwiseConvHybrid`. The sources matched, the paths and the measured speed are
described with CONV_2D in conv2d.py; depthwise.py's registered prepare_depthwise_conv_2d dispatches here, and the tap
views (`DepthwiseTaps`) are shared with the float path there. Constant-filter uint8 / int8 layers over more than
depthwise_rows.ROWS_MIN_VALUES output values (or stride-1 layers below that) whose requantization folds take
depthwise_rows's `DepthwiseConvQuantizedRows` instead of `DepthwiseConvQuantizedFolded` (1.5-2.5x faster on 3x3
layers). Both offer ``feeding``: with the pointwise CONV_2D that alone reads their output they become one step
(depthwise_into_rows.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import numpy as np

from ...quant import (
    Requantizer,
    dtype_range,
)
from ..common import clip_ufunc, float_activation_range, reshape_view
from ..fully_connected_folded import FullyConnectedQuantizedFolded, FullyConnectedQuantizedFoldedScalar
from ..registry import OpContext, TensorInfo
from .common import (
    BIAS,
    EMPTY_OUTPUT,
    FILTER,
    INPUT,
    OUTPUT,
    Geometry,
    add_offset,
    bias_tile,
    exact_dtype,
    hybrid_scales,
    quantization_params,
    quantize_batches,
    quantized_weights,
    requantizer_for,
    tile_over_width,
)
from .conv2d_quantized import ConvQuantizedFoldedRows
from .depthwise_into_rows import DepthwiseIntoRows, feeding
from .depthwise_rows import einsum, prepare_depthwise_rows
from .requant import (
    FoldedEpilogue,
    MixedEpilogue,
    SmallFoldedEpilogue,
    SmallLateZeroPointEpilogue,
    fold_requantization,
)
from .taps import DepthwiseTaps, exact_tap_weights
from .whole_window import ALL, adjacent, full_index, merge_epilogues, merged_window, tap_dot

#: Constant-filter exact depthwise sums with at least this many output channels take one np.einsum over the
#: window view (`EinsumTaps`): 1.1-3.5x faster than the stacked multiply + reduction or the tap loop from 48
#: channels on (4x4x96, 6x6x128, 25x5x64, 15x13x48 stride 2, 64x64x64), 1.3-4x slower at 8-32 channels.
EINSUM_MIN_CHANNELS = 48

#: Constant-filter layers whose requantization folds take DepthwiseConvQuantizedRows (depthwise_rows.py, 1.5-3x
#: faster) unless they are one whole-window output pixel; tests set this False to reach the paths below.
ROWS_PATH = True


@dataclass(frozen=True, eq=False)
class EinsumTaps:
    """DepthwiseTaps whose exact_sum is one np.einsum of the whole (KH, KW, N, OH, OW, O) window view of the
    padded buffer with the (KH, KW, OW, O) weights (tiled over the output width): one call, no products
    buffer. Exact: einsum adds in its own order, but every partial sum of the integer products is an integer
    of magnitude at most max|x| * sum|w - w_zp|, which prepare's exact_dtype keeps within the accumulation
    type's exact range (2^24 for float32, 2^53 for float64): any order gives the exact sum."""

    taps: DepthwiseTaps  # built with a padded buffer (copy=True): `window` is set

    def __call__(self, x: np.ndarray):
        return self.taps(x)  # fills the padded buffer

    def exact_sum(self, views, weights: np.ndarray, out: np.ndarray, tmp=None) -> None:
        einsum("ijnhwc,ijwc->nhwc", self.taps.window, weights, out=out)


def _exact_taps(geo: Geometry, multiplier: int, dtype, pad_value, f: np.ndarray, filter_zp: int = 0):
    """(taps, weights, scratch) for the exact tap sums of a constant filter: EinsumTaps from
    EINSUM_MIN_CHANNELS output channels on, else DepthwiseTaps with exact_tap_weights."""
    taps = DepthwiseTaps.build(geo, multiplier, dtype, pad_value, copy=True)
    if geo.out_c >= EINSUM_MIN_CHANNELS:
        w = quantized_weights(f.reshape(geo.filter_h, geo.filter_w, 1, geo.out_c), filter_zp, dtype)
        w = np.ascontiguousarray(np.broadcast_to(w, (geo.filter_h, geo.filter_w, geo.out_w, geo.out_c)))
        return EinsumTaps(taps), w, None
    weights, scratch = exact_tap_weights(f, geo, dtype, filter_zp)
    return taps, weights, scratch


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantized:
    """DEPTHWISE_CONV_2D uint8 / int8 / int16x8: per-tap exact multiply-accumulate (float32 or float64), the
    per-channel offset bias - x_zp * sum(w - w_zp), then the requantization into the output."""

    taps: DepthwiseTaps | EinsumTaps  # raw input values in the accumulation type, border = input zp
    weights: tuple | np.ndarray | None  # w - w_zp for taps.exact_sum; None: from the filter input
    offset: np.ndarray | None  # (OW, O) float64 (int64 with an int64 bias); None: made at every invoke
    sums: np.ndarray  # (N, OH, OW, O) tap sums
    scratch: np.ndarray | None  # one tap's products (None with EinsumTaps)
    acc: np.ndarray  # (N, OH, OW, O) accumulators: float64 (may be `sums` itself) or int64 (int64 bias)
    requant: Requantizer
    input_zp: int
    filter_zp: int
    has_bias: bool
    zp_term: np.ndarray | None  # (O,) -x_zp * sum over the taps of (w - w_zp), for constant weights

    def __call__(self, inputs, outputs):
        views = self.taps(inputs[INPUT])
        weights, offset = self.weights, self.offset
        if weights is None:
            weights = quantized_weights(inputs[FILTER].reshape(len(views), -1), self.filter_zp, self.sums.dtype)
        if offset is None:
            zp_term = self.zp_term
            if zp_term is None:
                zp_term = -self.input_zp * weights.sum(axis=0, dtype=np.float64)
            offset = zp_term.astype(self.acc.dtype)
            if self.has_bias:
                offset = offset + inputs[BIAS].astype(self.acc.dtype)
        self.taps.exact_sum(views, weights, self.sums, self.scratch)
        add_offset(self.acc, self.sums, offset)
        self.requant(self.acc, outputs[OUTPUT])


def prepare_depthwise_quantized(ctx: OpContext, geo: Geometry, multiplier: int):
    x, f, bias, out = ctx.input(INPUT), ctx.input(FILTER), ctx.optional_input(BIAS), ctx.outputs[OUTPUT]
    expected = {np.dtype(np.uint8): ("UINT8",), np.dtype(np.int8): ("INT8", "INT4"), np.dtype(np.int16): ("INT8",)}
    ctx.check(
        f.type_name in expected[x.dtype],
        f"{x.type_name} DEPTHWISE_CONV_2D needs a {' or '.join(expected[x.dtype])} filter, got {f.type_name}",
    )
    uint8 = x.dtype == np.uint8
    m, shift, lo, hi = quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
    if geo.empty:
        return EMPTY_OUTPUT
    int64_bias = x.dtype == np.int16
    x_zp, f_zp = x.zero_point, f.zero_point if uint8 else 0  # the int8 kernel ignores the filter zero point
    qmin, qmax = dtype_range(x.dtype)
    taps = geo.filter_h * geo.filter_w
    dev = max(qmax - x_zp, x_zp - qmin)
    if f.is_constant:
        wmax = int(np.abs(f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp).sum(axis=0).max())
    else:
        wmax = taps * (255 if uint8 else 128)
    dtype = exact_dtype(max(-qmin, qmax) * wmax)
    if f.is_constant:
        sum_taps, weights, scratch = _exact_taps(geo, multiplier, dtype, x_zp, f.data, f_zp)
    else:
        sum_taps = DepthwiseTaps.build(geo, multiplier, dtype, x_zp, copy=True)
        weights, scratch = None, np.empty(geo.out_shape, dtype)
    acc_dtype = np.int64 if int64_bias else np.float64
    offset = zp_term = None
    bias_max = 0.0 if bias is None else 2.0 ** (63 if int64_bias else 31)
    if weights is not None:
        zp_term = -x_zp * (f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp).sum(axis=0)
    if weights is not None and (bias is None or bias.is_constant):
        offset = zp_term
        if bias is not None:
            offset = offset + bias.data.astype(np.int64)
            bias_max = float(np.abs(bias.data.astype(np.float64)).max())
        offset = tile_over_width(offset, geo.out_w, acc_dtype)
    if offset is not None and not int64_bias:
        folded = _prepare_depthwise_folded(
            geo,
            x,
            f,
            bias,
            f_zp,
            multiplier,
            m,
            shift,
            out.zero_point,
            lo,
            hi,
            max(-qmin, qmax),
            dev * wmax + bias_max,
            dtype,
        )
        if folded is not None:
            return folded
    sums = np.empty(geo.out_shape, dtype)
    acc = sums if dtype == acc_dtype else np.empty(geo.out_shape, acc_dtype)
    requant = requantizer_for(
        ctx, m, shift, out.zero_point, lo, hi, geo.out_shape, dev * wmax + bias_max, int64_acc=int64_bias
    )
    return DepthwiseConvQuantized(
        sum_taps,
        weights,
        offset,
        sums,
        scratch,
        acc,
        requant,
        x_zp,
        f_zp,
        bias is not None,
        zp_term,
    )


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantizedFolded:
    """DEPTHWISE_CONV_2D uint8 / int8 with constant weights (and bias) whose requantization folds
    (litert_py.ops.conv.requant, exactness bound checked at prepare): the exact tap sums of the raw input
    values times (w - w_zp) (float32 or float64 as DepthwiseConvQuantized), then sums * scale[c] + the folded
    per-channel constant in float64, clip and floor (4 passes after the sums instead of 7). Scaling the sums
    rather than the weights keeps the taps in float32 where they are exact there (half the bytes)."""

    taps: DepthwiseTaps | EinsumTaps  # raw input values, border = input zero point
    weights: tuple | np.ndarray  # w - w_zp for taps.exact_sum
    scratch: np.ndarray | None
    sums: np.ndarray  # (N, OH, OW, O) tap sums
    scale: np.ndarray  # (OW, O) float64
    const: np.ndarray  # (OW, O) float64
    acc: np.ndarray  # (N, OH, OW, O) float64
    epilogue: FoldedEpilogue

    def __call__(self, inputs, outputs):
        self.accumulate(inputs[INPUT])
        self.epilogue(self.acc, outputs[OUTPUT])

    def accumulate(self, x: np.ndarray) -> None:
        """The folded accumulators sums * scale + const of the input ``x`` into ``acc``."""
        acc = self.acc
        self.taps.exact_sum(self.taps(x), self.weights, self.sums, self.scratch)
        np.multiply(self.sums, self.scale, out=acc)  # |sum * M| < 2^53 (the folding's bound): exact
        np.add(acc, self.const, out=acc)

    def feeding(self, conv) -> DepthwiseIntoRows | None:
        """This op and ``conv``, the step that alone reads its output, as one DepthwiseIntoRows
        (depthwise_into_rows.py: the epilogue's integer values stored straight into a ConvQuantizedFoldedRows's
        float64 GEMM rows), or None when that module's bound is not checked (or for a MixedEpilogue)."""
        if isinstance(self.epilogue, MixedEpilogue):
            return None
        return feeding(self, self.epilogue, self.acc, 0, conv)


@dataclass(frozen=True, eq=False)
class DepthwiseConvWholeFolded:
    """DepthwiseConvQuantizedFolded for one output pixel whose window is the whole unpadded input (depth
    multiplier 1; a streaming model's depthwise conv over its ring buffer): the input read as (N, taps, C) times
    the (taps, C) weights already scaled by M * 2^(ls-31-rs) in float64 (|w * M| < 2^40: exact; every sum
    below 2^53 units by the folding's bound), summed over the taps and a row holding the folded constant, then
    the epilogue: 4 numpy calls instead of 7."""

    weights: np.ndarray  # (H, W, C) float64, scaled
    products: np.ndarray  # (N, taps + 1, C) float64; the last row holds the folded constant
    taps_products: np.ndarray  # (N, H, W, C) view of products' tap rows (the input's shape: no reshape)
    acc: np.ndarray  # (N, 1, 1, C) float64, the epilogue's input
    acc_rows: np.ndarray  # (N, C) view of acc
    epilogue: FoldedEpilogue
    tap_dot: tuple | None  # (ones, products[0]): the tap sum as one np.dot (whole_window.tap_dot); None: add.reduce

    def __call__(self, inputs, outputs):
        np.multiply(inputs[INPUT], self.weights, out=self.taps_products)
        if self.tap_dot is None:
            np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
        else:
            np.dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
        self.epilogue(self.acc, outputs[OUTPUT])

    def reading(self, index: tuple) -> DepthwiseConvWholeFoldedView:
        """This op reading its input as the view ``source[index]`` (ops/slice_views.py)."""
        return DepthwiseConvWholeFoldedView(*(getattr(self, f.name) for f in fields(self)), index, (Ellipsis,))

    def writing(self, index: tuple) -> DepthwiseConvWholeFoldedView | None:
        """This op storing its output into the view ``target[index]`` (ops/slice_views.py), or None when its
        epilogue might reshape the output (a copy for a strided view): only the small epilogues assign it."""
        if type(self.epilogue) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue):
            return None
        return DepthwiseConvWholeFoldedView(*(getattr(self, f.name) for f in fields(self)), (Ellipsis,), index)

    def feeding(self, conv) -> DepthwiseWholeIntoRows | None:
        """This op and ``conv``, the ConvQuantizedFoldedRows that alone reads its output, as one step, or None when
        DepthwiseWholeIntoRows's bound does not hold: a small epilogue (values clipped to the output type's range,
        assigned with ``out[...] = v``), an integer output, the conv's rows of this op's output shape."""
        small = type(self.epilogue) in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue)
        index = getattr(self, "index", (Ellipsis,))
        if (
            not small
            or getattr(self, "out_index", (Ellipsis,)) != (Ellipsis,)
            or type(conv) is not ConvQuantizedFoldedRows
            or conv.a_input.shape != self.acc.shape
            or conv.a_input.dtype != np.float64
        ):
            return None
        try:  # the sums straight into the conv's rows, the epilogue in place there (its final store a no-op)
            acc, acc_rows = conv.a_input, reshape_view(conv.a_input, self.acc_rows.shape)
        except ValueError:
            acc, acc_rows = self.acc, self.acc_rows
        return DepthwiseWholeIntoRows(
            index, self.weights, self.products, self.taps_products, acc, acc_rows, self.epilogue,
            conv.a, conv.a_input, conv.weights, conv.acc, conv.acc_rows, conv.epilogue, conv.product,
            tap_dot(self.products, acc_rows),
        )  # fmt: skip

    def merging(self, other, out_channels: int) -> DepthwiseConvWholeFoldedView | None:
        """This op and ``other``, both reading windows of one tensor and storing into adjacent channel slices of
        one output (a MixConv block's two depthwise kernels after ops/slice_views.py's fusions: this one's
        channels first), as one op over both channel ranges, or None when the conditions fail.

        The merged op reads the longer window: the shorter kernel's taps are padded at the window's start with
        zero weights. Exact: a padded tap adds x * 0.0 (a zero) to an exact integer-valued float64 sum whose
        every partial sum stays below 2^53 units (each kernel's own folding bound, unchanged by zeros), so
        every channel's sum, constant and epilogue input are the ones its own op computes (a -0.0 sum rounds
        as +0.0 does: the sign term 2^-(rs+1) is below 1/2); the epilogue is elementwise, its per-channel
        arrays concatenated (``whole_window.merge_epilogues``: only the small epilogues, equal scalar fields).
        Conditions: basic step-1 slices, the same batch and width slices, windows ending at the same row, channel slices
        [c0, c1) and [c1, c2) of the input and of the output. ``out_channels``: the output's channel count (the
        merged op stores into the whole output when it covers it)."""
        a_in, b_in = getattr(self, "index", None), getattr(other, "index", None)
        a_out, b_out = getattr(self, "out_index", None), getattr(other, "out_index", None)
        if type(other) is not DepthwiseConvWholeFoldedView or None in (a_in, b_in, a_out, b_out):
            return None
        window = merged_window(a_in, b_in)
        a_out, b_out = full_index(a_out, 4), full_index(b_out, 4)
        channels = adjacent(a_out[3], b_out[3])
        epilogue = merge_epilogues(self.epilogue, other.epilogue, self.acc.shape, other.acc.shape)
        if window is None or channels is None or epilogue is None or not a_out[:3] == b_out[:3] == ALL[:3]:
            return None
        (rows_a, width, ca), (rows_b, _, cb) = self.weights.shape, other.weights.shape
        if other.weights.shape[1] != width or channels.stop - channels.start != ca + cb:
            return None
        rows = max(rows_a, rows_b)
        if window[1].stop - window[1].start != rows:
            return None
        weights = np.zeros((rows, width, ca + cb))
        weights[rows - rows_a :, :, :ca] = self.weights
        weights[rows - rows_b :, :, ca:] = other.weights
        n = self.acc.shape[0]
        taps = rows * width
        products = np.empty((n, taps + 1, ca + cb))
        products[:, taps] = np.concatenate([self.products[:, -1], other.products[:, -1]], axis=-1)
        acc = np.empty((n, 1, 1, ca + cb))
        whole = channels == slice(0, out_channels, 1)
        return DepthwiseConvWholeFoldedView(
            weights,
            products,
            products[:, :taps].reshape(n, rows, width, ca + cb),  # a view
            acc,
            acc.reshape(n, ca + cb),
            epilogue,
            tap_dot(products, acc.reshape(n, ca + cb)),
            window,
            (Ellipsis,) if whole else ALL[:3] + (channels,),
        )


@dataclass(frozen=True, eq=False)
class DepthwiseConvWholeFoldedView(DepthwiseConvWholeFolded):
    """DepthwiseConvWholeFolded whose input is ``source[index]`` and whose output is ``target[out_index]``, strided
    views (ops/slice_views.py): of the tensor a chain of slicing steps (SPLIT_V, STRIDED_SLICE) would have copied
    the input from, and of the CONCATENATION output the result would have been copied into. np.multiply reads
    the view's values as it read the copy's, and the small epilogue assigns ``out[...] = v`` into the view as
    into the tensor: the same values, without the copies. The views are made once per bound array."""

    index: tuple
    out_index: tuple

    def __post_init__(self):
        # (input array, its view, output array, its view): made once per bound array (a view sees new values)
        object.__setattr__(self, "_views", [None, None, None, None])

    def __call__(self, inputs, outputs):
        x, y, views = inputs[INPUT], outputs[OUTPUT], self._views
        if x is not views[0] or y is not views[2]:
            views[:] = x, x[self.index], y, y[self.out_index]
        np.multiply(views[1], self.weights, out=self.taps_products)
        if self.tap_dot is None:
            np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
        else:
            np.dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
        self.epilogue(self.acc, views[3])

    def reading(self, index: tuple):  # fused before any writing: not again
        raise NotImplementedError

    def writing(self, index: tuple) -> DepthwiseConvWholeFoldedView | None:
        small = type(self.epilogue) in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue)
        return dataclasses.replace(self, out_index=index) if small and self.out_index == (Ellipsis,) else None


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRows:
    """DepthwiseConvWholeFolded (or its view reading, ``index``) whose output only a ConvQuantizedFoldedRows reads
    (a streaming block's depthwise then pointwise conv), as one step: the depthwise's tap sums are reduced
    straight into the conv's float64 GEMM rows (``acc`` is the conv's ``a_input`` when that reshapes as a view)
    and its small epilogue runs there in place (its final ``out[...] = v`` assigns the array to itself, which
    numpy skips), instead of into the int8 tensor the conv's np.copyto would convert them from. Bound: those
    values are integers clipped to the output type's range (exact in float64 and in the int8 tensor alike), so
    the conv multiplies the same rows; one numpy call and one step fewer. The input view ``x[index]`` is made
    once per input array (kept with the array it views: the arrays are bound to the step for good, and a view
    sees their new values). Built by :meth:`DepthwiseConvWholeFolded.feeding` (checked there); fused by
    ops/slice_views.py."""

    index: tuple  # the depthwise's input view; (Ellipsis,) when it reads its own tensor
    weights: np.ndarray  # the depthwise's fields (DepthwiseConvWholeFolded)
    products: np.ndarray
    taps_products: np.ndarray
    acc: np.ndarray
    acc_rows: np.ndarray
    epilogue: object
    a: np.ndarray  # the conv's fields (ConvQuantizedFoldedRows)
    a_input: np.ndarray
    conv_weights: np.ndarray
    conv_acc: np.ndarray
    conv_acc_rows: np.ndarray
    conv_epilogue: object
    product: object
    tap_dot: tuple | None  # the depthwise's tap sum as one np.dot into acc_rows (whole_window.tap_dot)

    def __post_init__(self):
        object.__setattr__(self, "_window", [None, None])  # (input array, its view x[index])

    def __call__(self, inputs, outputs):
        x, window = inputs[INPUT], self._window
        if x is not window[0]:
            window[:] = x, x[self.index]
        np.multiply(window[1], self.weights, out=self.taps_products)
        if self.tap_dot is None:
            np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
        else:
            np.dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
        self.epilogue(self.acc, self.a_input)  # the conv's rows: the values its np.copyto would have read
        self.product(self.a, self.conv_weights, out=self.conv_acc_rows)
        self.conv_epilogue(self.conv_acc, outputs[OUTPUT])

    def writing(self, index: tuple) -> DepthwiseWholeIntoRowsWriting | None:
        """This step storing its output into the view ``target[index]`` (ops/ring_buffer.py's fuse_ring_writes: the
        next ring buffer's tail), or None when the conv's epilogue might reshape the output (a copy for a view):
        the small epilogues assign ``out[...] = v``, into a view as into the tensor."""
        if type(self.conv_epilogue) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue):
            return None
        return DepthwiseWholeIntoRowsWriting(*(getattr(self, f.name) for f in fields(DepthwiseWholeIntoRows)), index)

    def feeding(self, consumer) -> DepthwiseWholeIntoRowsFeeding | None:
        """This step and ``consumer``, a folded quantized FULLY_CONNECTED that alone reads the conv's output (a
        streaming classifier's head), as one step (ops/slice_views.py's fuse_feeding), or None: the conv's small
        epilogue assigns its values into the FULLY_CONNECTED's GEMM rows (``rows()``, float) instead of into
        the int8 tensor the FULLY_CONNECTED would copy from. Bound: those values are integers in the output
        type's range (exact in float32 and float64 alike), in the tensor's element order (the rows viewed with
        the conv output's shape), so the GEMM multiplies the same rows (its own exactness bound is for raw input
        values)."""
        if type(self.conv_epilogue) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue):
            return None
        if not isinstance(consumer, (FullyConnectedQuantizedFolded, FullyConnectedQuantizedFoldedScalar)):
            return None
        rows = consumer.rows()
        if rows.size != self.conv_acc.size:
            return None
        try:
            target = reshape_view(rows, self.conv_acc.shape)
        except ValueError:
            return None
        fed = (getattr(self, f.name) for f in fields(DepthwiseWholeIntoRows))
        return DepthwiseWholeIntoRowsFeeding(*fed, consumer, target)


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRowsFeeding(DepthwiseWholeIntoRows):
    """DepthwiseWholeIntoRows whose conv stores into the GEMM rows of the FULLY_CONNECTED that reads its output,
    which then runs from its loaded rows (``DepthwiseWholeIntoRows.feeding``): one numpy call and a step fewer."""

    then: object = None  # the FULLY_CONNECTED's prepared op (``run_loaded``)
    then_rows: np.ndarray = None  # its GEMM rows viewed with the conv output's shape

    def __call__(self, inputs, outputs):
        DepthwiseWholeIntoRows.__call__(self, inputs, (self.then_rows,))  # what the FULLY_CONNECTED would copy
        self.then.run_loaded(outputs)

    def feeding(self, consumer):  # already feeding: not again
        return None


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRowsWriting(DepthwiseWholeIntoRows):
    """DepthwiseWholeIntoRows storing its output into ``target[out_index]`` (``DepthwiseWholeIntoRows.writing``),
    the view made once per bound array: the same values in the view."""

    out_index: tuple = (Ellipsis,)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "_target", [None, None])  # (output array, its view)

    def __call__(self, inputs, outputs):
        y, target = outputs[OUTPUT], self._target
        if y is not target[0]:
            target[:] = y, y[self.out_index]
        DepthwiseWholeIntoRows.__call__(self, inputs, (target[1],))

    def writing(self, index: tuple):  # already writing: not again
        return None

    def feeding(self, consumer):
        return None


def _prepare_depthwise_folded(
    geo: Geometry,
    x: TensorInfo,
    f: TensorInfo,
    bias: TensorInfo | None,
    f_zp: int,
    multiplier: int,
    m,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    max_abs_x: int,
    acc_bound: float,
    dtype,
):
    """The folded prepared op, or None when requant.py's bound fails."""
    taps = geo.filter_h * geo.filter_w
    w = f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp
    offset = -x.zero_point * w.sum(axis=0)
    if bias is not None:
        offset = offset + bias.data.reshape(-1).astype(np.int64)
    whole = (
        multiplier == 1
        and not geo.padded
        and geo.out_h == geo.out_w == 1
        and geo.dilation_h == geo.dilation_w == 1
        and (geo.filter_h, geo.filter_w) == (geo.in_h, geo.in_w)
    )
    if ROWS_PATH and not whole:
        rows = prepare_depthwise_rows(
            geo, x, multiplier, w, offset, (m, shift, zero_point, lo, hi, max_abs_x, acc_bound)
        )
        if rows is not None:
            return rows
    folding = fold_requantization(
        m, shift, zero_point, lo, hi, offset, np.abs(w).sum(axis=0), max_abs_x, acc_bound, geo.out_shape, x.dtype
    )
    if folding is None:
        return None
    if whole:
        products = np.empty((geo.batches, taps + 1, geo.out_c))
        products[:, taps] = folding.const
        taps_products = products[:, :taps].reshape(geo.batches, geo.in_h, geo.in_w, geo.in_c)  # a view
        assert np.shares_memory(taps_products, products)
        acc = np.empty(geo.out_shape)
        return DepthwiseConvWholeFolded(
            (w * folding.scale).reshape(geo.in_h, geo.in_w, geo.in_c),
            products,
            taps_products,
            acc,
            acc.reshape(geo.batches, geo.out_c),
            folding.epilogue,
            tap_dot(products, acc.reshape(geo.batches, geo.out_c)),
        )
    sum_taps, weights, scratch = _exact_taps(geo, multiplier, dtype, x.zero_point, f.data, f_zp)
    return DepthwiseConvQuantizedFolded(
        sum_taps,
        weights,
        scratch,
        np.empty(geo.out_shape, dtype),
        tile_over_width(folding.scale, geo.out_w, np.float64),
        tile_over_width(folding.const, geo.out_w, np.float64),
        np.empty(geo.out_shape),
        folding.epilogue,
    )


@dataclass(frozen=True, eq=False)
class DepthwiseConvHybrid:
    """DEPTHWISE_CONV_2D with float input and int8 filter: per-batch asymmetric input quantization (q - zp),
    exact per-tap sums, then f32(acc) * f32(s_w[c] * sf), bias and the float clamp."""

    taps: DepthwiseTaps | EinsumTaps  # float32 holding q - zp, border 0
    weights: tuple | np.ndarray  # for taps.exact_sum
    sums: np.ndarray  # (N, OH, OW, O) float64 when the sums may exceed 2**24; else the output is used
    scratch: np.ndarray | None
    scale: np.ndarray  # (O,) float32 filter scales
    bias: np.ndarray | None  # (OW, O) float32
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        q, sf = quantize_batches(inputs[INPUT], asymmetric=True)
        views = self.taps(q)
        sums = out if self.sums is None else self.sums
        self.taps.exact_sum(views, self.weights, sums, self.scratch)
        if sums is not out:
            np.copyto(out, sums, casting="same_kind")
        np.multiply(out, self.scale * sf.reshape(-1, 1, 1, 1), out=out)  # f32(acc) * f32(s_w[c] * sf)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def prepare_depthwise_hybrid(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    scales = hybrid_scales(ctx, f)
    qd = f.quantization.quantized_dimension
    ctx.check(
        0 <= qd < 4 and scales.size == f.shape[qd],
        f"hybrid DEPTHWISE_CONV_2D: {scales.size} filter scales for quantized dimension {qd} of shape {list(f.shape)}",
    )
    # DepthwiseConvHybridPerChannel reads s_w[output channel]: past the end of a single scale (garbage).
    ctx.check(
        scales.size == geo.out_c,
        f"hybrid DEPTHWISE_CONV_2D needs one filter scale per output channel "
        f"({geo.out_c}), got {scales.size} (LiteRT reads past the end of the scales)",
    )
    if geo.empty:
        return EMPTY_OUTPUT
    taps = geo.filter_h * geo.filter_w
    wmax = int(np.abs(f.data.reshape(taps, geo.out_c).astype(np.int64)).sum(axis=0).max())
    dtype = exact_dtype(255 * wmax)  # |q - zp| <= 255
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    sum_taps, weights, scratch = _exact_taps(geo, multiplier, np.float32, 0, f.data)
    return DepthwiseConvHybrid(
        sum_taps,
        weights,
        None if dtype == np.float32 else np.empty(geo.out_shape),
        scratch,
        np.broadcast_to(scales, (geo.out_c,)).astype(np.float32),
        bias_tile(bias, geo.out_w),
        bias is not None and not bias.is_constant,
        lo,
        hi,
    )
