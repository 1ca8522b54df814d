"""Quantized FULLY_CONNECTED (int8 / uint8 -> int8 / uint8 / int16x8 with int64 bias) with constant weights and
bias: the exact-GEMM path of fully_connected_quantized.FullyConnectedQuantized with the bias and input zero point folded
into the GEMM (sources and the float requantization: fully_connected.py); FullyConnectedChain runs a stack of them
whose outputs only the next layer reads as one step (fused by ops/slice_views.py's fuse_feeding). Where no
t = acc * eff can be a tie inside the clamp (``_ties_free``, checked at prepare), the rounding is np.rint
(FullyConnectedChainRounded, FullyConnectedQuantizedFoldedRounded): fewer numpy calls per layer."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from ..quant.hybrid import HALF_DOWN_F64
from .common import clip_ufunc, reshape_view, small_gemm
from .into_reshape import is_reshape_copy
from .quantize import TableLookupScalar, composed_table

INPUT = 0
#: the requantization product's loop: a float32 acc times a 0-d float64 eff is a float32 product under numpy 1.x's
#: value-based casting (150 * 0.07 rounds to the tie 10.5 there), a float64 one under numpy 2 (NEP 50)
_F64 = np.dtype(np.float64)


#: One-row folded GEMMs of at most this many units hold their weights as the transposed (Fortran-ordered) view of a
#: C-contiguous (units, depth + 1) array: np.dot then runs OpenBLAS's dot-product gemv over contiguous weight rows
#: (process CPU time, float32: (1, 4001) x (4001, 4) 2.4 -> 1.2 us, (1, 1025) x (1025, 8) 0.95 -> 0.68 us, about
#: equal at 16 units, slower at 64; float64 alike). The sums are exact integers in any order (the GEMM's bound), so
#: the layout changes no value: the classifier head of a keyword spotter or a flattened CNN.
NARROW_UNITS = 12
#: Outputs of two or more rows and at least this many values take FullyConnectedQuantizedFoldedRounded (where its
#: no-tie check holds) before the integer stores (FullyConnectedQuantizedFoldedRelu / Signed): rint, + zo and one
#: casting clamp against the clip, the sign term, the truncating copy and the zero-point add. Measured (1 thread,
#: whole invokes, medians of 15 alternated rounds in one process): transformer_int8's (32, 64) -> 128 GELU layer
#: (FoldedSigned before), 392-396 -> 369-374 us per invoke. Smaller and one-row (streaming, classifier) layers keep
#: the integer stores (not re-measured).
ROUNDED_FIRST_MIN_VALUES = 1024


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFolded:
    """FullyConnectedQuantized's exact path with the bias and the input zero point folded into the GEMM: a
    ones column after the raw input values (a buffer made at prepare) meets the row bias - zx * sum(w - zw),
    so acc = [x, 1] @ [(W - zw)^T; row] with every partial sum an exact integer (|x| * sum|w - zw| + |row|
    below 2^24 for float32, 2^53 for float64, checked at prepare), then LiteRT's float requantization
    clamp(round_half_away(f64(acc) * eff) + zo) into scratch buffers: no allocation per invoke."""

    weights_t: np.ndarray  # (depth + 1, units) float32 or float64; Fortran-ordered up to NARROW_UNITS units
    xbuf: np.ndarray  # (rows, depth + 1) of weights_t's type, last column ones
    acc: np.ndarray  # (rows, units) of weights_t's type
    t: np.ndarray  # (rows, units) float64 (acc itself when float64)
    sign: np.ndarray  # (rows, units) float64
    eff: np.ndarray
    zo: int
    lo: int  # act_min - zo
    hi: int  # act_max - zo

    xview: np.ndarray  # xbuf[:, :-1], made at prepare
    half: np.ndarray  # (rows, units) float64 HALF_DOWN_F64
    lo_hi_zo: tuple  # lo, hi, zo as 0-d float64 arrays (a Python number operand is converted on every call)
    product: object  # np.dot or np.matmul (common.small_gemm); acc is C-contiguous of weights_t's type

    @staticmethod
    def build(
        rows: int, wz: np.ndarray, row: np.ndarray, dtype, eff, zo: int, lo: int, hi: int, x_shape=None, out=None
    ):
        """``wz``: (units, depth) w - zw; ``row``: (units,) bias - zx * sum(w - zw); ``dtype``: the GEMM's
        exact float type (the caller checked the bound). One output value (a streaming classifier's head):
        FullyConnectedQuantizedFoldedScalar. ``x_shape`` and ``out`` (the input's shape, the output's TensorInfo)
        select the integer-store subclasses (``_integer_store``) when their bounds hold."""
        units, depth = wz.shape
        if rows == 1 and units <= NARROW_UNITS:  # the transposed view of (units, depth + 1): see NARROW_UNITS
            wt = np.empty((units, depth + 1), dtype).T
        else:
            wt = np.empty((depth + 1, units), dtype)
        wt[:-1] = wz.T
        wt[-1] = row
        xbuf = np.zeros((rows, depth + 1), dtype)  # zeros: no NaN before a first load (a bound-plan test removes it)
        xbuf[:, -1] = 1
        if rows * units == 1:
            return FullyConnectedQuantizedFoldedScalar(
                np.ascontiguousarray(wt[:, 0]), xbuf[0], xbuf[0, :-1], float(np.asarray(eff).reshape(-1)[0]), zo, lo, hi
            )
        acc = np.empty((rows, units), dtype)
        t = acc if acc.dtype == np.float64 else np.empty((rows, units))
        eff = np.asarray(eff, np.float64)
        bounds = tuple(np.array(float(v)) for v in (lo, hi, zo))
        half = np.full((rows, units), HALF_DOWN_F64)
        sign = np.empty((rows, units))
        args = (wt, xbuf, acc, t, sign, eff, zo, lo, hi, xbuf[:, :-1], half, bounds, small_gemm(rows))
        rounded = _rounded(args, out)
        if rounded is not None and rows > 1 and rows * units >= ROUNDED_FIRST_MIN_VALUES:
            return rounded
        stored = None if x_shape is None or out is None else _integer_store(args, x_shape, out)
        return stored or rounded or FullyConnectedQuantizedFolded(*args)

    def __call__(self, inputs, outputs):
        self.load(inputs[INPUT])
        self.run_loaded(outputs)

    def load(self, x: np.ndarray) -> None:
        """The input's values into the GEMM's buffer."""
        np.copyto(self.xview, x.reshape(self.xview.shape), casting="unsafe")

    def clipped(self) -> np.ndarray:
        """clamp(f64(acc) * eff, lo, hi) in ``self.t``, the GEMM's input already loaded."""
        t = self.t
        lo, hi, _ = self.lo_hi_zo
        self.product(self.xbuf, self.weights_t, out=self.acc)  # exact sums in any order
        np.multiply(self.acc, self.eff, out=t, dtype=_F64)  # C++: double(acc) * the double eff (_F64)
        return clip_ufunc(t, lo, hi, out=t)

    def rows(self) -> np.ndarray:
        """The (rows, depth) view of the GEMM buffer's input columns (what a feeding producer writes)."""
        return self.xbuf[:, :-1]

    def folded_input_offset(self, zero_point: int, max_abs_v: int):
        """This op with ``zero_point * sum(w - zw)`` added to its folded row, so that it reads v = x - zero_point
        instead of x, or None when the GEMM would not stay exact for |v| <= max_abs_v (see feeding)."""
        wt = self.weights_t
        wz = wt[:-1].astype(np.int64)
        row = wt[-1].astype(np.int64) + zero_point * wz.sum(axis=0)
        if not _exact_sums(wz, row, max_abs_v, wt.dtype):
            return None
        new = wt.copy(order="K")  # keeps a NARROW_UNITS layout
        new[-1] = row
        return dataclasses.replace(self, weights_t=new)

    def feeding(self, consumer):
        """This op and ``consumer``, the folded FULLY_CONNECTED (FullyConnectedChain's conditions) or the short
        SOFTMAX (fully_connected_tail.FullyConnectedSoftmaxTiny's) that alone reads its output
        (ops/slice_views.py's fuse_feeding), as one step, or None."""
        from .fully_connected_tail import fc_feeding  # it imports this module

        return fc_feeding(self, consumer) or FullyConnectedChain.link((self,), consumer)

    def run_loaded(self, outputs) -> None:
        t = self.clipped()
        zo = self.lo_hi_zo[2]
        np.copysign(self.half, t, out=self.sign)
        t += self.sign  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        np.trunc(t, out=t)
        t += zo
        outputs[0].reshape(t.shape)[...] = t  # integers within the output type's range: exact


def _integer_store(args: tuple, x_shape, out):
    """FullyConnectedQuantizedFoldedRelu or FullyConnectedQuantizedFoldedSigned from FullyConnectedQuantizedFolded's
    fields ``args`` when their bound holds and the input's shape is a view of the ones-column buffer, else None
    (FullyConnectedQuantizedFolded is exact for any clamp)."""
    out_dtype = np.dtype(out.dtype)
    xbuf, zo, lo, hi = args[1], args[6], args[7], args[8]
    rows, units = args[2].shape
    if out_dtype.kind not in "iu" or math.prod(out.shape) != rows * units:
        return None
    if lo >= 0:
        cls, store = FullyConnectedQuantizedFoldedRelu, np.dtype(f"u{out_dtype.itemsize}")
    else:
        cls, store = FullyConnectedQuantizedFoldedSigned, np.dtype(f"i{out_dtype.itemsize}")
    info, out_info = np.iinfo(store), np.iinfo(out_dtype)
    if not (info.min <= lo <= hi <= info.max and out_info.min <= zo <= out_info.max):
        return None
    try:
        xview = reshape_view(xbuf[:, :-1], tuple(x_shape))  # the input's values land in the GEMM's buffer
    except ValueError:
        return None
    ibuf = np.empty((rows, units), store)
    return cls(*args[:9], xview, *args[10:], ibuf, ibuf.view(out_dtype).reshape(tuple(out.shape)), out_dtype.type(zo))


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedRelu(FullyConnectedQuantizedFolded):
    """FullyConnectedQuantizedFolded when the clamp's lower bound is at or above the output zero point
    (``lo = act_min - zo >= 0``: ReLU-like layers): after the clip every value is >= 0 (or -0.0), where
    round half away is floor(t + HALF_DOWN_F64) (quant.hybrid.HALF_DOWN; -0.0 gives 0 either way), so the sign
    term is not needed, and the floor and the output zero point move into integer stores: seven numpy calls
    instead of nine, no reshape per invoke. Bound (checked at prepare in ``_integer_store``):
    ``0 <= lo <= hi < 2^bits`` of the output type (always true: act_max and zo lie in the output type's range).
    Then, after the clip, ``t + HALF_DOWN_F64`` lies in [0, 2^bits), so numpy's truncating float -> unsigned
    cast (``copyto`` with casting="unsafe", C's conversion of an in-range value) is that floor, giving v in
    [lo, hi]; ``v + zo`` is in the output type's range, so adding zo in the output type (a signed output reads
    the unsigned buffer through a view: addition mod 2^bits, which is the exact sum when that is in range)
    stores the same integers. The input is read through a view of the ones-column buffer shaped as the input
    tensor, and the sum is written into the output tensor as it is shaped (both made at prepare)."""

    ibuf: np.ndarray = None  # (rows, units) integer buffer of the output's width: the rounded value v
    iout: np.ndarray = None  # ibuf viewed as the output's type and shaped as the output tensor
    zo_out: object = None  # zo as a scalar of the output's type

    def load(self, x: np.ndarray) -> None:
        np.copyto(self.xview, x, casting="unsafe")  # xview is shaped as the input tensor: no reshape

    def run_loaded(self, outputs) -> None:
        t = self.clipped()
        t += self.half
        np.copyto(self.ibuf, t, casting="unsafe")  # t in [0, 2^bits): truncation is the floor
        np.add(self.iout, self.zo_out, out=outputs[0])  # in range: exact (mod 2^bits for a signed output)


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedSigned(FullyConnectedQuantizedFoldedRelu):
    """FullyConnectedQuantizedFolded when the clamp's lower bound is below the output zero point and
    ``[lo, hi] = [act_min - zo, act_max - zo]`` fits the signed integer type of the output's width (checked at
    prepare in ``_integer_store``; e.g. int8 output with zero point 0, or a RELU6 / RELU_N1_TO_1 range): the
    sign-corrected ``t + copysign(HALF_DOWN_F64, t)`` lies in (lo - 1, hi + 1), so numpy's truncating
    float -> signed cast (C's conversion toward zero of a value whose truncation is in range) is the trunc of
    FullyConnectedQuantizedFolded, and zo is added in the output type as in FullyConnectedQuantizedFoldedRelu
    (an unsigned output reads the signed buffer through a view, mod 2^bits): eight numpy calls instead of
    nine, no reshape per invoke."""

    def run_loaded(self, outputs) -> None:
        t = self.clipped()
        np.copysign(self.half, t, out=self.sign)
        t += self.sign  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        np.copyto(self.ibuf, t, casting="unsafe")  # truncation toward zero, in [lo, hi]
        np.add(self.iout, self.zo_out, out=outputs[0])  # in range: exact (mod 2^bits for an unsigned output)


def _rounded(args: tuple, out):
    """FullyConnectedQuantizedFoldedRounded from FullyConnectedQuantizedFolded's fields ``args`` when its bound
    holds (an integer output of the GEMM's size, no tie inside the clamp: ``_ties_free``), else None."""
    acc, t, eff, zo, lo, hi = args[2], args[3], args[5], args[6], args[7], args[8]
    if out is None or np.dtype(out.dtype).kind not in "iu" or math.prod(out.shape) != acc.size:
        return None
    if max(abs(lo), abs(hi)) >= 1 << 16 or not _ties_free(eff, lo, hi):
        return None
    zo_f = np.array(float(zo)) if zo else None
    bounds = np.array(float(lo + zo)), np.array(float(hi + zo))
    rounded = args + (t.reshape(tuple(out.shape)), zo_f, *bounds)
    if acc.shape[0] == 1:
        return FullyConnectedQuantizedFoldedRounded(*rounded)
    eff_full = eff if eff.ndim == 0 else np.ascontiguousarray(np.broadcast_to(eff.reshape(-1), acc.shape))
    return FullyConnectedQuantizedFoldedRoundedRows(*rounded, eff_full)


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedRounded(FullyConnectedQuantizedFolded):
    """FullyConnectedQuantizedFolded when no t = fl(acc * eff) is a half-integer inside [lo, hi) (``_ties_free``,
    checked at prepare, as FullyConnectedChainRounded; an integer output of the GEMM's size, |lo|, |hi| < 2^16):
    ``rint(t) + zo`` clamped to [act_min, act_max] (``lo + zo``, ``hi + zo``), stored with the clip's casting
    output into the output tensor. rint gives round half away on every t the clamp keeps (no tie there), and
    rounding and the integer-bound clamp commute (both monotone, the bounds fixed points of rounding); the
    integers (below 2^17, + zo exact in float64) are in the output type's range, so the cast is exact. Five
    numpy calls instead of eight (no HALF_DOWN sign term, trunc, zero-point add and reshaped assignment)."""

    t_out: np.ndarray = None  # t viewed with the output tensor's shape
    zo_f: np.ndarray | None = None  # 0-d float64 zo; None when 0
    act_lo: np.ndarray = None  # 0-d float64 act_min = lo + zo
    act_hi: np.ndarray = None  # 0-d float64 act_max = hi + zo

    def feeding(self, consumer):
        """As FullyConnectedQuantizedFolded.feeding; a RESHAPE / SQUEEZE / EXPAND_DIMS copy (shape.CopyReshaped)
        that alone reads the output is absorbed: the layer stores into the copy's output through ``t`` viewed with
        its shape (a C-order reshape: the same values in the same order; an attention's projections)."""
        if is_reshape_copy(consumer) and math.prod(consumer.shape) == self.t.size:
            return dataclasses.replace(self, t_out=self.t.reshape(consumer.shape))
        return super().feeding(consumer)

    def run_loaded(self, outputs) -> None:
        t, acc = self.t, self.acc
        self.product(self.xbuf, self.weights_t, acc)  # exact sums in any order; positional out (~0.1 us less)
        np.multiply(acc, self.eff, t, dtype=_F64)  # C++: double(acc) * the double eff (_F64)
        np.rint(t, t)  # no tie inside [lo, hi): round half away there
        if self.zo_f is not None:
            np.add(t, self.zo_f, t)  # integers: exact
        clip_ufunc(self.t_out, self.act_lo, self.act_hi, outputs[0], casting="unsafe")


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedRoundedRows(FullyConnectedQuantizedFoldedRounded):
    """FullyConnectedQuantizedFoldedRounded for two or more rows (``_rounded``): the float32 accumulators copied into
    the float64 ``t`` (exact: integers below 2^24), multiplied there by ``eff_full``, the per-unit eff laid out at
    prepare with the accumulators' shape (a 0-d eff stays 0-d), rint, + zo, the clip in place and one truncating
    copy into the output: the same IEEE products fl(f64(acc) * eff) as the mixed float32 x float64 multiply and the
    same integers, where numpy's mixed-type and broadcasting loops cost most (32 rows x 64 / 128 units, GEMM and
    epilogue alone, medians of 15 alternated rounds: 8.4 -> 7.2 us, 14.8 -> 12.3 us; one row: even)."""

    eff_full: np.ndarray = None  # (rows, units) float64, or the 0-d eff

    def run_loaded(self, outputs) -> None:
        t, acc = self.t, self.acc
        self.product(self.xbuf, self.weights_t, acc)  # exact sums in any order
        if acc is not t:
            np.copyto(t, acc)  # float32 integers to float64: exact
        np.multiply(t, self.eff_full, t)  # C++: double(acc) * the double eff
        np.rint(t, t)  # no tie inside [lo, hi): round half away there
        if self.zo_f is not None:
            np.add(t, self.zo_f, t)  # integers: exact
        clip_ufunc(t, self.act_lo, self.act_hi, t)
        np.copyto(outputs[0], self.t_out, casting="unsafe")  # integers in the output type's range: exact


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedScalar:
    """FullyConnectedQuantizedFolded for one output value (one row, one unit: the head of a streaming
    classifier), where each numpy call costs about a microsecond whatever its size: the folded dot product
    [x, 1] . w (exact as in FullyConnectedQuantizedFolded, whatever the summation order) in numpy, then the
    requantization on the one Python float: float(acc) * eff is the same IEEE double product as numpy's,
    then clamp(., lo, hi), trunc(t +- HALF_DOWN_F64) (round half away, see quant.hybrid.HALF_DOWN) and + zo,
    stored with ndarray.fill. Three numpy calls instead of nine."""

    w: np.ndarray  # (depth + 1,) float32 or float64: (w - zw) then the folded row
    xvec: np.ndarray  # (depth + 1,) of w's type, last value one
    xview: np.ndarray  # xvec[:-1]
    eff: float
    zo: int
    lo: int  # act_min - zo
    hi: int  # act_max - zo

    def __call__(self, inputs, outputs):
        np.copyto(self.xview, inputs[INPUT].reshape(-1), casting="unsafe")
        self.run_loaded(outputs)

    def rows(self) -> np.ndarray:
        return self.xview.reshape(1, -1)  # a view: xview is contiguous

    def folded_input_offset(self, zero_point: int, max_abs_v: int):
        """As FullyConnectedQuantizedFolded.folded_input_offset."""
        wz = self.w[:-1].astype(np.int64)
        row = int(self.w[-1]) + zero_point * int(wz.sum())
        if not _exact_sums(wz[:, None], np.array([row]), max_abs_v, self.w.dtype):
            return None
        w = self.w.copy()
        w[-1] = row
        return dataclasses.replace(self, w=w)

    def run_loaded(self, outputs) -> None:
        t = float(np.dot(self.xvec, self.w)) * self.eff
        t = min(max(t, self.lo), self.hi)
        outputs[0].fill(math.trunc(t + math.copysign(HALF_DOWN_F64, t)) + self.zo)

    def feeding(self, consumer) -> FullyConnectedScalarLookup | None:
        """This op and ``consumer``, a one-value table lookup (quantize.TableLookupScalar: LOGISTIC, QUANTIZE, ...)
        that alone reads its output, as one step (ops/slice_views.py's fuse_feeding, also through
        whole_window.DepthwiseWholeIntoRowsFeeding), or None: FullyConnectedScalarLookup."""
        if type(consumer) is not TableLookupScalar:
            return None
        if consumer.table.size != consumer.mask + 1:
            return None
        return FullyConnectedScalarLookup(
            *(getattr(self, f.name) for f in dataclasses.fields(self)), consumer.table, consumer.mask
        )


@dataclass(frozen=True, eq=False)
class FullyConnectedScalarLookup(FullyConnectedQuantizedFoldedScalar):
    """FullyConnectedQuantizedFoldedScalar whose one value only a one-value table lookup reads (a streaming
    classifier's score, then LOGISTIC; ``FullyConnectedQuantizedFoldedScalar.feeding``): the value v picks
    ``table[v & mask]``, which is stored instead of v. Exact: v is an integer in the output type's range, which
    the tensor would hold, and ``v & mask`` its bit pattern at the lookup's input width, which the lookup would
    read (``item() & mask``); further lookups compose into the table (``feeding``)."""

    table: np.ndarray = None  # the lookup's table, indexed by its input's unsigned bit pattern
    mask: int = 0

    def run_loaded(self, outputs) -> None:
        t = float(np.dot(self.xvec, self.w)) * self.eff
        t = min(max(t, self.lo), self.hi)
        outputs[0].fill(self.table[(math.trunc(t + math.copysign(HALF_DOWN_F64, t)) + self.zo) & self.mask])

    def feeding(self, consumer) -> FullyConnectedScalarLookup | None:
        """This op with another one-value lookup composed into its table (quantize.composed_table)."""
        table = composed_table(self.table, consumer)
        return None if table is None else dataclasses.replace(self, table=table)


def _exact_sums(wz: np.ndarray, row: np.ndarray, max_abs_v: int, dtype) -> bool:
    """Whether every partial sum of [v, 1] @ [wz; row] (wz (depth, units) int64, row (units,) int64) is an
    integer exact in ``dtype`` (float32: 2^24, float64: 2^53) for |v| <= max_abs_v, in any summation order."""
    limit = 1 << (24 if np.dtype(dtype) == np.float32 else 53)
    bound = max_abs_v * np.abs(wz).sum(axis=0) + np.abs(row)
    return bool((bound <= limit).all())


@dataclass(frozen=True, eq=False)
class FullyConnectedChain:
    """Folded quantized FULLY_CONNECTED layers each of whose outputs only the next one reads (a dense model's
    stack, fused at prepare by ops/slice_views.py's fuse_feeding), as one step: each layer but the last rounds
    its clamped values straight into the next layer's GEMM rows instead of into its int8 tensor, which the
    next layer would copy from (3 numpy calls and a step become 1).

    What the producer stores: ``v = round_half_away(clamp(t, lo, hi))`` with lo = act_min - zo, the integer
    FullyConnectedQuantizedFolded computes before adding zo (ReLU-like, lo >= 0: ``floor(t + HALF_DOWN_F64)``,
    as FullyConnectedQuantizedFoldedRelu; else ``trunc(t + copysign(HALF_DOWN_F64, t))``), written with
    np.floor / np.trunc into the next layer's buffer (an integer of magnitude below 2^16: exact in float32 and
    float64). The tensor would hold x = v + zo; the next layer's folded row gets ``zo * sum(w - zw)`` added
    (``folded_input_offset``), so [v, 1] @ [W; row'] = [x, 1] @ [W; row]: the same integer sums. Bound, checked
    at prepare per layer: max(|lo|, |hi|) * sum|w - zw| + |row'| within the GEMM type's exact range (2^24 for
    float32, 2^53 for float64), so every partial sum is exact in any order; otherwise no fusion. Conditions:
    the producer is a FullyConnectedQuantizedFolded (or its integer-store subclasses) with an integer output,
    the consumer one of those or FullyConnectedQuantizedFoldedScalar, with the producer's (rows, units) as its
    (rows, depth)."""

    layers: tuple  # the folded FULLY_CONNECTED ops, the consumers with their rows offset
    targets: tuple  # layers[i + 1].rows(): where layers[i] stores its values
    relu: tuple  # per producer: lo >= 0 (floor, no sign term)

    @staticmethod
    def link(layers: tuple, consumer) -> FullyConnectedChain | None:
        """``layers`` (a chain's, or one producer) followed by ``consumer``, or None when the conditions fail."""
        producer = layers[-1]
        if not isinstance(producer, FullyConnectedQuantizedFolded) or not isinstance(
            consumer, (FullyConnectedQuantizedFolded, FullyConnectedQuantizedFoldedScalar)
        ):
            return None
        lo, hi, zo = (int(v) for v in producer.lo_hi_zo)
        if producer.acc.shape != consumer.rows().shape or max(abs(lo), abs(hi)) >= 1 << 16:
            return None
        fed = consumer.folded_input_offset(zo, max(abs(lo), abs(hi)))
        if fed is None:
            return None
        layers = layers + (fed,)
        return FullyConnectedChainRounded.make(layers) or FullyConnectedChain(
            layers, tuple(c.rows() for c in layers[1:]), tuple(int(p.lo_hi_zo[0]) >= 0 for p in layers[:-1])
        )

    def feeding(self, consumer) -> FullyConnectedChain | None:
        """This chain extended by ``consumer`` (fuse_feeding on an already fused step), or ending in its last
        layer fused with a short SOFTMAX (``_with_softmax``)."""
        return _with_softmax(self, consumer) or FullyConnectedChain.link(self.layers, consumer)

    def __call__(self, inputs, outputs):
        self.layers[0].load(inputs[INPUT])
        self.run_loaded(outputs)

    def rows(self) -> np.ndarray:
        """The first layer's GEMM rows (what a feeding producer writes: fully_connected_tail.PooledIntoRows)."""
        return self.layers[0].rows()

    def run_loaded(self, outputs) -> None:
        layers = self.layers
        for layer, target, relu in zip(layers, self.targets, self.relu):
            t = layer.clipped()
            if relu:  # t >= 0 (or -0.0): round half away is floor(t + h)
                t += layer.half
                np.floor(t, out=target, casting="same_kind")
            else:
                np.copysign(layer.half, t, out=layer.sign)
                t += layer.sign
                np.trunc(t, out=target, casting="same_kind")
        layers[-1].run_loaded(outputs)


def _with_softmax(chain, consumer):
    """``chain`` with its last layer replaced by that layer fused with ``consumer``, the short SOFTMAX that alone
    reads its output (fully_connected_tail.FullyConnectedSoftmaxTiny, which wraps the same layer object: the
    chain's producers still store into its GEMM rows, and it runs that layer's GEMM), or None."""
    from .fully_connected_tail import fc_feeding  # it imports this module

    tail = fc_feeding(chain.layers[-1], consumer)
    return None if tail is None else dataclasses.replace(chain, layers=chain.layers[:-1] + (tail,))


#: Folded layers of at most this many GEMM weights run in float64 inside a FullyConnectedChainRounded: numpy's
#: float64 dot costs about float32's at this size, and a float32 layer pays a mixed-type product and a float32 store.
SMALL_FLOAT64_WEIGHTS = 1 << 13
#: The smallest effective scale the tie check of :func:`_ties_free` covers (its window argument).
MIN_TIE_CHECKED_EFF = 2.0**-30
#: Most (clamp values) x (units) the tie check evaluates (5 products each), else no rounded chain.
MAX_TIE_CHECKS = 1 << 18


def _ties_free(eff, lo: int, hi: int) -> bool:
    """Whether ``fl(a * eff[u])`` (numpy's float64 product, as the invoke computes it) is never a half-integer
    k + 1/2 with lo <= k < hi, for any integer a and unit u. Within [lo, hi] away from those ties, np.rint (ties to
    even) and round half away agree, and outside it both round to a value the clamp maps to its bound (rounding
    and the integer-bound clamp are monotone), so then clamp(rint(t), lo, hi) == round_half_away(clamp(t, lo, hi)).

    Only a's near (k + 1/2) / eff can give the tie: fl(a * eff) == k + 1/2 needs |a * eff - (k + 1/2)| below
    ulp(k + 1/2) <= 2^-36 (|k| < 2^16, checked by FullyConnectedChain.link), so |a - (k + 1/2) / eff| < 2^-36 / eff
    <= 2^-6 for eff >= 2^-30 (MIN_TIE_CHECKED_EFF, else False); the float64 quotient, rounded, is within one of
    every such a, so the window of 5 integers around it holds them all. Not a tabulation of the layer: at most
    (hi - lo) * units * 5 products (MAX_TIE_CHECKS, else False)."""
    eff = np.asarray(eff, np.float64).reshape(-1)
    if not (eff >= MIN_TIE_CHECKED_EFF).all() or (hi - lo) * eff.size > MAX_TIE_CHECKS:
        return False
    k = np.arange(lo, hi, dtype=np.float64)[:, None, None] + 0.5
    a = np.round(k / eff[None, :, None]) + np.arange(-2.0, 3.0)
    return not bool((a * eff[None, :, None] == k).any())


def _epilogue(p, target: np.ndarray) -> tuple:
    """A rounded chain's step for producer ``p`` storing into ``target``: (gemm, weights_t, acc, eff, t, lo, hi,
    target), ``gemm(weights_t, acc)`` the product (ndarray.dot: np.dot without its dispatch), eff at least 1-D so
    that a float32 acc times it is a float64 product under numpy 1.x's value-based casting too (what _F64 gives
    elsewhere), without a dtype= keyword per call. A float32 epilogue is not exact in general: float32's 2^-24
    relative error puts some fl32(acc * eff) of int8 layers on the other side of a half-integer."""
    gemm = p.xbuf.dot if p.product is np.dot else functools.partial(p.product, p.xbuf)
    return (gemm, p.weights_t, p.acc, np.atleast_1d(p.eff), p.t, *p.lo_hi_zo[:2], target)


def no_tie_inside_clamp(eff, lo: int, hi: int) -> bool:
    """``_ties_free`` for other modules (fully_connected_tail.FullyConnectedSoftmaxTiny's rounding)."""
    return _ties_free(eff, lo, hi)


def _float64(layer):
    """``layer`` (a folded FULLY_CONNECTED, its row possibly offset) with a float64 GEMM when it is float32 with at
    most SMALL_FLOAT64_WEIGHTS weights (the same integer sums: its float32 bound 2^24 implies float64's 2^53),
    else ``layer`` itself."""
    if isinstance(layer, FullyConnectedQuantizedFoldedScalar):
        if layer.w.dtype != np.float32 or layer.w.size > SMALL_FLOAT64_WEIGHTS:
            return layer
        xvec = np.empty(layer.xvec.shape)
        xvec[-1] = 1
        return dataclasses.replace(layer, w=layer.w.astype(np.float64), xvec=xvec, xview=xvec[:-1])
    wt = layer.weights_t
    if wt.dtype != np.float32 or wt.size > SMALL_FLOAT64_WEIGHTS:
        return layer
    x_shape = out = None
    if isinstance(layer, FullyConnectedQuantizedFoldedRelu):
        x_shape, out = layer.xview.shape, _Info(layer.iout.dtype, layer.iout.shape)
    elif isinstance(layer, FullyConnectedQuantizedFoldedRounded):
        out = _Info(np.dtype(np.int32), layer.t_out.shape)  # _rounded reads the output's kind and size only
    rebuilt = FullyConnectedQuantizedFolded.build(
        layer.acc.shape[0], wt[:-1].T, wt[-1], np.float64, layer.eff, layer.zo, layer.lo, layer.hi, x_shape, out
    )
    return rebuilt if type(rebuilt) is type(layer) else layer


@dataclass(frozen=True)
class _Info:
    """The dtype and shape of an output tensor (what FullyConnectedQuantizedFolded.build reads of a TensorInfo)."""

    dtype: np.dtype
    shape: tuple


@dataclass(frozen=True, eq=False)
class FullyConnectedChainRounded:
    """FullyConnectedChain with each producer's rounding by np.rint: per producer layer the GEMM, the product by
    eff, rint in place and the clamp stored into the next layer's GEMM rows (four numpy calls instead of five or
    six: no HALF_DOWN add, no sign term), small layers in float64 (``_float64``: no mixed-type product or
    store). The same integers as FullyConnectedChain's ``round_half_away(clamp(t, lo, hi))``: ``rint`` then the
    clamp give them when no t = fl(acc * eff) is a half-integer inside [lo, hi) (``_ties_free``, checked at
    prepare per producer; else FullyConnectedChain). A rint result of -0.0 (t in (-1/2, 0)) that the clamp keeps
    enters the next GEMM as -0.0, an exact zero term of the integer sums. The last layer runs as it would alone."""

    layers: tuple
    steps: tuple  # per producer: (gemm, weights_t, acc, eff, t, lo, hi, target) (_epilogue)

    @staticmethod
    def make(layers: tuple) -> FullyConnectedChainRounded | None:
        """The rounded chain of FullyConnectedChain's ``layers``, or None when a producer's tie check fails."""
        if not all(_ties_free(p.eff, p.lo, p.hi) for p in layers[:-1]):
            return None
        layers = tuple(_float64(layer) for layer in layers)
        steps = tuple(_epilogue(p, c.rows()) for p, c in zip(layers, layers[1:]))
        return FullyConnectedChainRounded(layers, steps)

    def feeding(self, consumer) -> FullyConnectedChainRounded | FullyConnectedChain | None:
        """This chain extended by ``consumer`` (fuse_feeding on an already fused step), or ending in its last
        layer fused with a short SOFTMAX (``_with_softmax``)."""
        return _with_softmax(self, consumer) or FullyConnectedChain.link(self.layers, consumer)

    def __call__(self, inputs, outputs):
        self.layers[0].load(inputs[INPUT])
        self.run_loaded(outputs)

    def rows(self) -> np.ndarray:
        """The first layer's GEMM rows (what a feeding producer writes: fully_connected_tail.PooledIntoRows)."""
        return self.layers[0].rows()

    def run_loaded(self, outputs) -> None:
        # positional out: ~0.1 us less per call than out= (a dense stack makes ~40 small calls per invoke)
        for gemm, wt, acc, eff, t, lo, hi, target in self.steps:
            gemm(wt, acc)  # exact integer sums in any order
            np.multiply(acc, eff, t)  # C++: double(acc) * the double eff (float64 t; _epilogue)
            np.rint(t, t)  # no ties inside [lo, hi): round half away there (_ties_free)
            clip_ufunc(t, lo, hi, target)  # integers below 2^16: exact in float32 (same_kind casting)
        self.layers[-1].run_loaded(outputs)
