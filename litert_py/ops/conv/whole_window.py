"""int8 / uint8 DEPTHWISE_CONV_2D over one output pixel whose window is the whole unpadded input (a streaming
model's depthwise over its ring buffer): `DepthwiseConvWholeFolded` (chosen by depthwise_quantized.py), its view
reading (`DepthwiseConvWholeFoldedView`) and the steps it becomes when fused into the pointwise conv or FULLY_CONNECTED
that reads it (`DepthwiseWholeIntoRows` and subclasses); the index and epilogue helpers for merging two such kernels
into one op (``DepthwiseConvWholeFolded.merging``: a MixConv block's two kernels, which read windows of one tensor and
store into adjacent channel slices of one output), and the tap sum as one BLAS product (``tap_dot``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import numpy as np

from ..common import clip_ufunc, dot_impl, flat_views, reshape_view
from ..fully_connected_folded import FullyConnectedQuantizedFolded, FullyConnectedQuantizedFoldedScalar
from .common import INPUT, OUTPUT
from .conv2d_quantized import ConvQuantizedFoldedRows
from .requant import FoldedEpilogue, SmallFoldedEpilogue, SmallLateZeroPointEpilogue

ALL = (slice(None),) * 4
_add, _multiply, _dot, _floor = np.add, np.multiply, dot_impl, np.floor


def full_index(index: tuple, rank: int) -> tuple:
    """``index`` with (Ellipsis,) spelled out as full slices."""
    return ALL[:rank] if index == (Ellipsis,) else tuple(index)


def adjacent(a, b) -> slice | None:
    """slice(c0, c2, 1) for the step-1 slices [c0, c1) and [c1, c2) with explicit bounds, else None."""
    ok = all(isinstance(s, slice) and s.step in (None, 1) and s.stop is not None for s in (a, b))
    return slice(a.start or 0, b.stop, 1) if ok and a.stop == (b.start or 0) else None


def merged_window(a: tuple, b: tuple) -> tuple | None:
    """The index covering two NHWC windows ``a`` and ``b`` (basic slices, step 1) that agree on batch and width,
    end at the same row, and take channels [c0, c1) then [c1, c2): rows from the earlier start, channels
    [c0, c2); None otherwise."""
    if len(a) != 4 or len(b) != 4 or not all(isinstance(s, slice) and s.step in (None, 1) for s in a + b):
        return None
    channels = adjacent(a[3], b[3])
    if a[0] != b[0] or a[2] != b[2] or a[1].stop is None or a[1].stop != b[1].stop or channels is None:
        return None
    return (a[0], slice(min(a[1].start or 0, b[1].start or 0), a[1].stop, 1), a[2], channels)


def merge_epilogues(a, b, shape_a: tuple, shape_b: tuple):
    """One small epilogue for two ops' outputs concatenated along channels: array fields with the outputs' shapes
    concatenated, every other field equal in both (None, 0-d bounds, constants); None when the two differ
    otherwise or are not small epilogues (whose every operation is elementwise)."""
    if type(a) is not type(b) or type(a) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue):
        return None
    merged = {}
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None or y is None:
            if x is not y:
                return None
            merged[f.name] = None
        elif isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and (x.shape, y.shape) == (shape_a, shape_b):
            merged[f.name] = np.concatenate([x, y], axis=-1)
        elif np.ndim(x) == 0 and np.ndim(y) == 0 and float(x) == float(y):
            merged[f.name] = x
        else:
            return None
    return type(a)(**merged)


def tap_dot(products: np.ndarray, acc_rows: np.ndarray) -> tuple | None:
    """``(ones, rows)`` such that ``np.dot(ones, rows, out=acc_rows)`` sums the (1, taps + 1, C) ``products`` of a
    whole-window depthwise conv over its taps and its constant row: one BLAS matrix-vector product instead of
    np.add.reduce along the middle axis (about 0.45 us instead of 0.75-1.1 us for 4-18 rows of 64 channels).

    Exactness bound (the folding's, requant.py, checked where the op is prepared): every partial sum of the
    products is a multiple of the channel's unit 2^(ls-31-rs) below 2^53 units in whatever order they are added
    (the bound is on the sum of the terms' magnitudes), and each term ``1.0 * p`` is ``p`` exactly (in a fused
    multiply-add too), so BLAS's totals equal add.reduce's. A zero total may come out as -0.0 instead of +0.0:
    the folded epilogues round both alike (the sign term 2^-(rs+1) is below 1/2; see ``merging``). None (the
    add.reduce path) for a batch above 1 or an ``acc_rows`` np.dot cannot write into (not a C-contiguous
    (1, C) array)."""
    if products.ndim != 3 or products.shape[0] != 1 or acc_rows.shape != (1, products.shape[2]):
        return None
    if not acc_rows.flags.c_contiguous or acc_rows.dtype != np.float64 or products.dtype != np.float64:
        return None
    return np.ones((1, products.shape[1])), products[0]


@dataclass(frozen=True, eq=False)
class SignedTaps:
    """DepthwiseWholeIntoRows's buffers for a sign-path epilogue (``signed_taps``)."""

    ones: np.ndarray  # (3, taps + 3) float64: [1 .. 1, 1, 1, 1], [1 .. 1, 1, 1, -1], [K .. K, K, 0, 0]
    sums: np.ndarray  # (3, C) float64: A = u + c + e, B = u + c - e, G = K * u
    a: np.ndarray  # sums[0] viewed with the depthwise output's shape
    b: np.ndarray  # sums[1] viewed so
    g: np.ndarray  # sums[2] viewed so
    rows: np.ndarray  # products[0]: the (taps + 3, C) operand of the np.dot (a view made once)


def lowest_bit(v: np.ndarray) -> float:
    """The largest power of two dividing every nonzero float64 in ``v`` (1.0 when all are zero): an integer
    combination of them is a multiple of it."""
    v = v[v != 0]
    if not v.size:
        return 1.0
    m, ex = np.frexp(v)
    mant = (m * 2.0**53).astype(np.int64)  # exact: |m| in [1/2, 1)
    return float(np.min(np.ldexp((mant & -mant).astype(np.float64), ex - 53)))


def signed_taps(op, a_input: np.ndarray) -> tuple | None:
    """``(products, taps_products, SignedTaps)`` for the whole-window depthwise ``op`` fused into a conv's GEMM rows
    ``a_input`` (DepthwiseWholeIntoRows) when its epilogue takes the sign path (a SmallFoldedEpilogue with
    ``half``: ``floor(clip(u + copysign(e, u) + c))``, ``e = half``, ``c = zp + 1/2``), else None. ``products``
    gets two more rows, ``c`` and ``e``, and one np.dot with three rows gives A = u + c + e, B = u + c - e and
    G = K * u; then ``clip(G, B, A)`` is A where u > 0 and B where u < 0 (the sign term without copysign and its
    add), a second clip the epilogue's and a floor stored straight into the conv's rows: 4 numpy calls after the
    taps' multiply instead of 5.

    Exactness bound, checked here: (1) A and B have the terms of the epilogue's ``u + sign + zp + 1/2`` (the
    taps, the folded constant, zp + 1/2, the sign term 2^-(rs+1)), each a multiple of the channel's unit
    2^(ls-31-rs) with the sum of their magnitudes below 2^53 units (the folding's bound, requant.py, checked
    where the depthwise was prepared, counts (|zp| + 1) * 2^(31+rs-ls) units for zp + 1/2 and 2^(31-ls) for
    the sign term), so every partial sum is exact in whatever order BLAS takes them: A and B are the exact
    values. (2) K is a power of two, so K times each term and every partial sum is exact too (no overflow:
    K * (256 * sum|w| + |constant|) < 2^1000, checked): G = K * u exactly, with u the exact tap sum. (3) u is an
    integer combination of the weights and the folded constant (the inputs are integers), so a nonzero u has
    |u| >= g, the largest power of two dividing them all (``lowest_bit``); K >= 1 + (|c| + max e) / g (checked)
    gives (K - 1) |u| >= |c| + e: G >= A where u > 0, G <= B where u < 0, so ``clip(G, B, A)`` (B <= A: e >= 0)
    is ``u + c + copysign(e, u)`` there. Where u = 0 (+0.0 or -0.0) it lies in [c - e, c + e], inside
    (zp, zp + 1) (e <= 1/4), which floors to zp as c +- e do. The range clip and the floor are the epilogue's
    (integer bounds: floor and clip commute). Checked also: a batch of 1, ``tap_dot``'s layout, the
    epilogue's class and a 0-d constant c = zp + 1/2, an ``a_input`` of the output's shape."""
    e = op.epilogue
    if type(e) is not SmallFoldedEpilogue or e.half is None or np.ndim(e.const) != 0:
        return None
    n, rows, c = op.products.shape
    if n != 1 or tap_dot(op.products, op.acc_rows) is None or not a_input.shape == op.acc.shape == e.half.shape:
        return None
    if a_input.dtype != np.float64 or not a_input.flags.c_contiguous or float(e.const) % 1.0 != 0.5:
        return None
    half = np.asarray(e.half, np.float64).reshape(c)
    const_row = op.products[0, rows - 1]  # the folded constant (set at prepare; the tap rows are scratch)
    weights = op.weights.reshape(rows - 1, c)
    if not (np.all(half >= 0) and np.all(half <= 0.25)):
        return None
    g = lowest_bit(np.concatenate([weights.ravel(), const_row]))
    k = max(1, int(np.ceil(np.log2((abs(float(e.const)) + float(half.max())) / g + 1.0))))
    big = 2.0**k
    u_max = float(np.max(256.0 * np.abs(weights).sum(axis=0) + np.abs(const_row)))  # |x| <= 255
    if not ((big - 1.0) * g >= abs(float(e.const)) + float(half.max()) and big * u_max < 2.0**1000):
        return None
    products = np.empty((1, rows + 2, c))
    products[:, :rows] = op.products
    products[:, rows] = float(e.const)
    products[:, rows + 1] = half
    try:
        taps_products = reshape_view(products[:, : rows - 1], op.taps_products.shape)
    except ValueError:
        return None
    ones = np.ones((3, rows + 2))
    ones[1, rows + 1] = -1.0
    ones[2, :rows] = big
    ones[2, rows:] = 0.0
    sums = np.empty((3, c))
    shape = op.acc.shape
    views = (sums[0].reshape(shape), sums[1].reshape(shape), sums[2].reshape(shape), products[0])
    signed = SignedTaps(ones, sums, *views)
    return products, taps_products, signed


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
        taps = self.taps_products
        taps[...] = inputs[INPUT]  # exact int -> float64, then a float64 multiply (run_rows)
        _multiply(taps, self.weights, out=taps)
        if self.tap_dot is None:
            np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
        else:
            _dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
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
        products, taps_products, signed = self.products, self.taps_products, signed_taps(self, conv.a_input)
        if signed is not None:
            products, taps_products, signed = signed
        return DepthwiseWholeIntoRows(
            index, self.weights, products, taps_products, acc, acc_rows, self.epilogue,
            conv.a, conv.a_input, conv.weights, conv.acc, conv.acc_rows, conv.epilogue, conv.product,
            tap_dot(self.products, acc_rows), signed,
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
    into the tensor: the same values, without the copies. The views are made when the arrays are bound (``bind``)."""

    index: tuple
    out_index: tuple

    def bind(self, inputs, outputs) -> None:
        """The views ``x[index]`` and ``y[out_index]`` of the bound arrays (ops/fusion.bind_steps)."""
        object.__setattr__(self, "_views", (inputs[INPUT][self.index], outputs[OUTPUT][self.out_index]))

    def __call__(self, inputs, outputs):
        views = self._views
        taps = self.taps_products
        taps[...] = views[0]  # exact int -> float64, then a float64 multiply (run_rows)
        _multiply(taps, self.weights, out=taps)
        if self.tap_dot is None:
            np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
        else:
            _dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
        self.epilogue(self.acc, views[1])

    def reading(self, index: tuple):  # fused before any writing: not again
        raise NotImplementedError

    def writing(self, index: tuple) -> DepthwiseConvWholeFoldedView | None:
        small = type(self.epilogue) in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue)
        return dataclasses.replace(self, out_index=index) if small and self.out_index == (Ellipsis,) else None


def run_rows(plan: tuple) -> None:
    """DepthwiseWholeIntoRows as straight-line code over the arrays gathered at bind (``rows_plan``), for a small
    conv epilogue without sign term (ReLU-like: ``floor(clip(v))``, plus the late zero points, assigned): the
    numpy calls of ``DepthwiseWholeIntoRows.__call__`` and of the epilogues' ``__call__`` (SmallFoldedEpilogue,
    SmallLateZeroPointEpilogue), the same ones in the same order on the same arrays (so the same values),
    without their attribute lookups and nested calls (about 0.8 us of an 8-10 us step inside an invoke); the
    ring's shift ``np.copyto(head, kept)`` as the assignment ``head[...] = kept``, the same copy (numpy's
    PyArray_AssignArray for both: a 1-d overlapping copy runs in place, as a memmove) without np.copyto's
    dispatch and keyword parsing (0.28 -> 0.13 us hot, about 0.3 us a step inside an invoke), and np.dot (the
    tap sum's and the conv's product) as its C implementation without the array-function dispatch
    (common.dot_impl: the same function on the same arrays, about 0.15-0.3 us a call less); every elementwise
    call over 1-d views of its operands where they can be (common.flat_views: the same elements paired). The
    taps' multiply of the int8 window by the float64 weights as the window's conversion into the products
    (``taps[...] = window``: exact) and a float64 multiply in place: the same products, and a casting ufunc
    call (its buffered iteration) costs more than the two inside an invoke (5-8 % of a streaming model's).
    ``out``: the array the step stores into, bound with the plan (``store_target``).
    ``signed``: the depthwise's sign path (``signed_taps``: A, B and G from one np.dot); else its tap sum
    (``tap_dot``) and its own small epilogue without sign term, in place in ``g``, the conv's rows themselves
    (the epilogue's final ``out[...] = v`` assigns them to themselves: nothing to do)."""
    (window, weights, taps, head, kept, ones, rows, sums, signed, g, b, a, lo, hi, dw_late, a_input, rows_a,
     conv_weights, conv_acc_rows, product, conv_acc, conv_lo, conv_hi, out, late_zp) = plan  # fmt: skip
    taps[...] = window  # int8 -> float64, exact: then one float64 multiply instead of a casting one
    _multiply(taps, weights, out=taps)
    if head is not None:  # the window is read: shift the ring for the next invoke (the variable's value)
        head[...] = kept  # np.copyto's copy (a 1-d overlapping one: a memmove) without its dispatch
    _dot(ones, rows, out=sums)  # A, B and G (signed_taps), or the tap sums (tap_dot)
    if signed:
        clip_ufunc(g, b, a, out=g)  # the sign term's choice
        clip_ufunc(g, lo, hi, out=g)
        _floor(g, out=a_input)  # the conv's rows
    else:
        clip_ufunc(g, lo, hi, out=g)
        _floor(g, out=g)
        if dw_late is not None:
            _add(g, dw_late, out=g)  # g is the conv's rows (rows_plan): the epilogue's final store is a no-op
    product(rows_a, conv_weights, out=conv_acc_rows)
    clip_ufunc(conv_acc, conv_lo, conv_hi, out=conv_acc)  # the conv's small epilogue (half None)
    _floor(conv_acc, out=conv_acc)
    if late_zp is not None:  # SmallLateZeroPointEpilogue
        _add(conv_acc, late_zp, out=conv_acc)
    out[...] = conv_acc


def _flat_epilogue(v: np.ndarray, e, *out: np.ndarray) -> tuple:
    """``(v, lo, hi, late_zp, *out)`` of the small epilogue ``e`` without sign term as flat_views makes them: its
    0-d bounds alone (SmallFoldedEpilogue), or with its output-shaped bounds and late zero points
    (SmallLateZeroPointEpilogue; late_zp None otherwise)."""
    late = getattr(e, "late_zp", None)
    if late is None and np.ndim(e.lo) == np.ndim(e.hi) == 0:
        v, *out = flat_views(v, *out)
        return (v, e.lo, e.hi, None, *out)
    if late is None:  # output-shaped bounds (no constructor makes them today): flattened with the rest, or not
        v, lo, hi, *out = flat_views(v, e.lo, e.hi, *out)
        return (v, lo, hi, None, *out)
    return flat_views(v, e.lo, e.hi, late, *out)


def _small_relu(e) -> bool:
    """Whether ``e`` is a small epilogue without sign term (``floor(clip(v))``, plus the late zero points)."""
    return type(e) in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue) and e.half is None


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRows:
    """DepthwiseConvWholeFolded (or its view reading, ``index``) whose output only a ConvQuantizedFoldedRows reads
    (a streaming block's depthwise then pointwise conv), as one step: the depthwise's tap sums are reduced
    straight into the conv's float64 GEMM rows (``acc`` is the conv's ``a_input`` when that reshapes as a view)
    and its small epilogue runs there in place (its final ``out[...] = v`` assigns the array to itself, which
    numpy skips), instead of into the int8 tensor the conv's np.copyto would convert them from. Bound: those
    values are integers clipped to the output type's range (exact in float64 and in the int8 tensor alike), so
    the conv multiplies the same rows; one numpy call and one step fewer. The input view ``x[index]`` is made
    when the arrays are bound (``bind``: they are bound to the step for good, and a view sees their new values).
    Built by :meth:`DepthwiseConvWholeFolded.feeding` (checked there); fused by ops/slice_views.py."""

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
    signed: SignedTaps | None = None  # the sign-path epilogue from three dot rows (whole_window.signed_taps)
    ring: tuple | None = None  # (window, head, kept) of a persistent ring buffer (``reading_ring``)

    def bind(self, inputs, outputs) -> None:
        """The view ``x[index]`` of the bound input array (ops/fusion.bind_steps), or the ring's window, and the
        step's arrays gathered for ``run_rows`` when it applies (``rows_plan``)."""
        window = inputs[INPUT][self.index] if self.ring is None else self.ring[0]
        target = self.store_target(outputs)
        object.__setattr__(self, "_window", window)
        object.__setattr__(self, "_target", (target,))
        object.__setattr__(self, "_plan", self.rows_plan(window, target))

    def store_target(self, outputs) -> np.ndarray:
        """The array the conv's epilogue stores into: the bound output tensor."""
        return outputs[OUTPUT]

    def rows_plan(self, window: np.ndarray, out: np.ndarray) -> tuple | None:
        """The arrays ``run_rows`` reads, in its order, when the conv's epilogue is a small one without sign term
        and the depthwise takes the sign path (``signed``) or sums its taps with one np.dot (``tap_dot``) straight
        into the conv's rows (``acc`` is ``a_input``: ``feeding``) for a small epilogue without sign term (the
        usual streaming blocks); else None (the general ``__call__``)."""
        s, e, ce = self.signed, self.epilogue, self.conv_epilogue
        head, kept = (None, None) if self.ring is None else self.ring[1:]
        if not _small_relu(ce):
            return None
        if s is not None:  # 0-d bounds (signed_taps: a SmallFoldedEpilogue)
            g, b, a, a_input = flat_views(s.g, s.b, s.a, self.a_input)
            taps = (s.ones, s.rows, s.sums, True, g, b, a, e.lo, e.hi, None, a_input)
        elif self.tap_dot is not None and _small_relu(e) and self.acc is self.a_input:
            g, lo, hi, late = _flat_epilogue(self.acc, e)
            taps = (*self.tap_dot, self.acc_rows, False, g, None, None, lo, hi, late, self.a_input)
        else:
            return None
        product = dot_impl if self.product is np.dot else self.product  # the same product, without the dispatch
        multiply = flat_views(window, self.weights, self.taps_products)  # 1-d views when they can be
        conv_acc, conv_lo, conv_hi, late_zp, out = _flat_epilogue(self.conv_acc, ce, out)
        return (
            *multiply, head, kept, *taps, self.a, self.conv_weights,
            self.conv_acc_rows, product, conv_acc, conv_lo, conv_hi, out, late_zp,
        )  # fmt: skip

    def reading_ring(self, ring: np.ndarray, head: np.ndarray, kept: np.ndarray) -> DepthwiseWholeIntoRows | None:
        """This step reading its window ``ring[index]`` from a persistent ring buffer's array instead of the
        concatenation tensor, and shifting that array after its taps' multiply, the one read of the window:
        ``head[...] = kept`` (ops/ring_buffer.py's RingBufferInPlace, whose conditions and invariant say why
        the values are the ones the concatenation and the variable would hold); None when it already does."""
        if self.ring is not None:
            return None
        return dataclasses.replace(self, ring=(ring[self.index], head, kept))

    def __call__(self, inputs, outputs):
        plan = self._plan
        if plan is not None:
            return run_rows(plan)
        taps = self.taps_products
        taps[...] = self._window  # exact int -> float64, then a float64 multiply (run_rows)
        _multiply(taps, self.weights, out=taps)
        if self.ring is not None:  # the window is read: shift the ring for the next invoke (the variable's value)
            np.copyto(self.ring[1], self.ring[2])
        if self.signed is not None:  # A, B and G in one np.dot; clip(G, B, A) is the sign term's choice
            s, e = self.signed, self.epilogue
            _dot(s.ones, s.rows, out=s.sums)
            clip_ufunc(s.g, s.b, s.a, out=s.g)
            clip_ufunc(s.g, e.lo, e.hi, out=s.g)
            np.floor(s.g, out=self.a_input)  # the conv's rows: the values its np.copyto would have read
        else:
            if self.tap_dot is None:
                np.add.reduce(self.products, axis=1, out=self.acc_rows)  # the taps and the constant
            else:
                _dot(*self.tap_dot, out=self.acc_rows)  # the same exact sums (whole_window.tap_dot)
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
        target = self._rows_target(consumer.rows())
        if target is None:
            return None
        fed = (getattr(self, f.name) for f in fields(DepthwiseWholeIntoRows))
        return DepthwiseWholeIntoRowsFeeding(*fed, consumer, target)

    def _rows_target(self, rows: np.ndarray) -> np.ndarray | None:
        """The GEMM rows ``rows`` viewed with the conv output's shape (the tensor's element order), or None."""
        if rows.size != self.conv_acc.size:
            return None
        try:
            return reshape_view(rows, self.conv_acc.shape)
        except ValueError:
            return None


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRowsFeeding(DepthwiseWholeIntoRows):
    """DepthwiseWholeIntoRows whose conv stores into the GEMM rows of the FULLY_CONNECTED that reads its output,
    which then runs from its loaded rows (``DepthwiseWholeIntoRows.feeding``): one numpy call and a step fewer."""

    then: object = None  # the FULLY_CONNECTED's prepared op (``run_loaded``)
    then_rows: np.ndarray = None  # its GEMM rows viewed with the conv output's shape

    def __call__(self, inputs, outputs):
        plan = self._plan
        if plan is not None:
            run_rows(plan)  # into then_rows: what the FULLY_CONNECTED would copy (store_target)
        else:
            DepthwiseWholeIntoRows.__call__(self, inputs, (self.then_rows,))
        self.then.run_loaded(outputs)

    def store_target(self, outputs) -> np.ndarray:
        """The FULLY_CONNECTED's rows viewed with the conv output's shape."""
        return self.then_rows

    def feeding(self, consumer) -> DepthwiseWholeIntoRowsFeeding | None:
        """This step with the FULLY_CONNECTED's own fusion with ``consumer`` (its ``feeding``: a one-value
        FULLY_CONNECTED then a table lookup, fully_connected_folded.FullyConnectedScalarLookup, or a chain of
        FULLY_CONNECTED layers), or None. The fused op may have rows of its own (a chain rebuilds its first
        layer): the conv stores into the rows the fused op reads (``rows()``), else there is no fusion."""
        feeding = getattr(self.then, "feeding", None)
        then = feeding(consumer) if feeding is not None else None
        if then is None or not hasattr(then, "run_loaded") or not hasattr(then, "rows"):
            return None
        target = self._rows_target(then.rows())
        return None if target is None else dataclasses.replace(self, then=then, then_rows=target)


@dataclass(frozen=True, eq=False)
class DepthwiseWholeIntoRowsWriting(DepthwiseWholeIntoRows):
    """DepthwiseWholeIntoRows storing its output into ``target[out_index]`` (``DepthwiseWholeIntoRows.writing``),
    the view made when the arrays are bound: the same values in the view."""

    out_index: tuple = (Ellipsis,)
    into: np.ndarray | None = None  # a persistent ring buffer's array, stored into instead of the target tensor

    def store_target(self, outputs) -> np.ndarray:
        """The view ``target[out_index]`` of the bound output tensor, or of ``into``."""
        return (outputs[OUTPUT] if self.into is None else self.into)[self.out_index]

    def writing_into(self, array: np.ndarray) -> DepthwiseWholeIntoRowsWriting:
        """This step storing into ``array[out_index]`` (an array of the target's shape: a persistent ring
        buffer's, ops/ring_buffer.py's RingBufferInPlace) instead of into the target tensor."""
        return dataclasses.replace(self, into=array)

    def __call__(self, inputs, outputs):
        plan = self._plan
        if plan is not None:
            return run_rows(plan)
        DepthwiseWholeIntoRows.__call__(self, inputs, self._target)

    def writing(self, index: tuple):  # already writing: not again
        return None

    def feeding(self, consumer):
        return None
