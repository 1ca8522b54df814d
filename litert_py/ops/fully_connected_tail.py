"""The tail of an int8 / uint8 classifier as fused steps (ops/slice_views.py's fuse_feeding): a global pool or MEAN
whose pooled values only a folded FULLY_CONNECTED reads (``PooledIntoRows``), and a one-row folded
FULLY_CONNECTED whose values only a short SOFTMAX reads (``FullyConnectedSoftmaxTiny``).

Inside a real invoke these steps run after the convolutions evicted the caches, where every numpy call, Python
object and byte they touch costs 2-4x its hot time (a classifier's pool + FC + softmax: ~12 us hot, 40-55 us in
sequence). The fused steps make fewer numpy calls, touch no intermediate int8 tensor and no step of their own:

- ``PooledIntoRows``: the pool's table gather writes its values, as the GEMM's float type, straight into the
  FULLY_CONNECTED's prepared GEMM rows (the copy from the int8 tensor into those rows is dropped);
- ``PooledReshaped``: the same pool when a RESHAPE (Keras' Flatten) sits between it and the FULLY_CONNECTED:
  the pool stores into the reshaped tensor and feeds the FULLY_CONNECTED's rows in turn;
- ``FullyConnectedSoftmaxTiny``: after the GEMM the requantization in three numpy calls (six when a rounding tie
  can fall inside the clamp) into an int32 view of its row, then the softmax on those Python ints
  (softmax.softmax_row_into, or for two units one prepared row) stored with one assignment, instead of the FC's
  4-6 numpy calls and the softmax's ``tolist``, indexing and store.

Also the FULLY_CONNECTED over one 8-bit input value (``FullyConnectedOneValueTable``: a table of its 256
possible outputs) and the stack of folded layers after it (``OneValueChainTable``: tflite-micro's int8 sine
model as one row copy).

The gathers call ``ndarray.take`` with positional arguments: the C function np.take ends in (the same
result), without np.take's Python wrapper (fromnumeric.take -> _wrapfunc -> getattr), which costs about 4 us
per call inside an invoke (cold caches; a classifier tail's step 42-43 -> 38-39 us).

Sources: reference_ops::FullyConnected (integer_ops/fully_connected.h), reference_ops::Softmax (softmax.h),
reference_ops::AveragePool / QuantizedMeanOrSum; the arithmetic each step repeats is its own kernel's
(fully_connected_folded.py, softmax.py, pooling.py, reduce.py), whose docstrings cite the matched source.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

import numpy as np

from ..quant.hybrid import HALF_DOWN_F64
from .bound_plan import BoundCalls, bound_plan, contiguous_source
from .common import clip_ufunc, reshape_view
from .fully_connected_folded import (
    FullyConnectedChain,
    FullyConnectedChainRounded,
    FullyConnectedQuantizedFolded,
    FullyConnectedQuantizedFoldedRelu,
    FullyConnectedQuantizedFoldedRounded,
    FullyConnectedQuantizedFoldedScalar,
    no_tie_inside_clamp,
)
from .shape import CopyReshaped
from .softmax import TINY_MAX, SoftmaxQuantizedTiny

INPUT, OUTPUT = 0, 0


#: 1.5 * 2^52: ``fl(t + ROUND_BIAS)`` for a double |t| < 2^51 is ROUND_BIAS + rint(t) (IEEE addition where the
#: doubles are one apart rounds t to an integer, ties to even, as np.rint), a double whose low 32 bits (its
#: mantissa 2^51 + rint(t)) are rint(t) as an int32 two's-complement integer when |rint(t)| < 2^31.
ROUND_BIAS = 1.5 * 2.0**52


@dataclass(frozen=True, eq=False)
class FullyConnectedSoftmaxTiny(BoundCalls):
    """A one-row FullyConnectedQuantizedFolded (any of its integer-store / rounded forms) of ``units`` values
    followed by the SoftmaxQuantizedTiny that alone reads them, as one step: the FC's folded GEMM (``fc.product``
    into ``fc.acc``, as the FC itself), the requantization in three or six numpy calls into a float64 row ``t``
    whose int32 view ``values`` holds the clamped integers v, then the softmax on ``values.tolist()``
    (SoftmaxQuantizedTiny.row_call: softmax_row_into, or for two values one row of its ``pairs``) stored into the
    output's row:

    - ``t = f64(acc) * eff`` (np.multiply, the product numpy's float64 multiply makes in the FC), clamped to
      [lo, hi] = [act_min - zo, act_max - zo] (clip_ufunc);
    - rounded: without ties (``ties_free``: no t is a half-integer inside [lo, hi), fully_connected_folded.
      no_tie_inside_clamp, checked at prepare) np.add(t, ROUND_BIAS) rounds to nearest (ties to even) and
      leaves v in the low 32 bits; with ties, round half away first (``t + copysign(HALF_DOWN_F64, t)``, then
      np.trunc: quant.hybrid.HALF_DOWN), then the same add of an integer (exact). The FC rounds half away,
      then clamps: the same v (both roundings give it on every t the clamp keeps, and rounding and the integer-
      bound clamp commute, both monotone with the bounds fixed points of rounding);
    - the softmax on ``v``: the FC's output would be ``v + zo``, and the softmax reads only the differences to
      the row's maximum, so zo is never added; the values are SoftmaxQuantizedTiny's on the same integers.

    Inside an invoke (cold caches) a numpy call costs about a microsecond and each Python bytecode run for the
    first time since the previous invoke ~50 ns: the clamp and rounding of up to TINY_MAX values in numpy cost
    less than the Python loop that did them, and every table and array is an argument of the plan's partials
    (no attribute reads). The step inside invokes: ds_cnn 29 -> 25 us, vww's two classes 28 -> 17 us.

    Exactness bound, checked at prepare (``make``): the FC's own (its GEMM sums exact, checked at its prepare), a
    one-row FC whose output is the softmax's whole input (units <= TINY_MAX: no int32 wrap of the total),
    ``hi - lo <= 255`` (every difference a table index), |lo|, |hi| < 2^16 (rint's integers in the int32 view
    and no_tie_inside_clamp's range), every eff > 0 and finite."""

    fc: FullyConnectedQuantizedFolded
    softmax: SoftmaxQuantizedTiny
    values: np.ndarray  # (units,) int32: the low words of the float64 row t (ROUND_BIAS + v)
    front: tuple  # (function, args, kwargs): the GEMM, the requantization into t
    front_plan: tuple  # the same as partial objects (bound_plan), for run_loaded
    ties_free: bool = False  # no t = acc * eff is a half-integer inside [lo, hi); kept for tests to inspect

    @staticmethod
    def make(fc, softmax) -> FullyConnectedSoftmaxTiny | None:
        """The fused step, or None when a condition of the class docstring fails."""
        if not isinstance(fc, FullyConnectedQuantizedFolded) or type(softmax) is not SoftmaxQuantizedTiny:
            return None
        rows, units = fc.acc.shape
        if rows != 1 or units != softmax.shape[-1] or units > TINY_MAX or fc.hi - fc.lo > 255:
            return None
        if max(abs(int(fc.lo)), abs(int(fc.hi))) >= 2**16:  # no_tie_inside_clamp's bound (8 / 16-bit outputs)
            return None
        # a row, also for one eff: numpy 1.x's value-based casting would multiply by a 0-d array in float32
        eff = np.ascontiguousarray(np.broadcast_to(np.asarray(fc.eff, np.float64).reshape(-1), (units,)))
        if not (np.isfinite(eff).all() and (eff > 0).all()):
            return None
        lo, hi = int(fc.lo), int(fc.hi)
        ties_free = no_tie_inside_clamp(eff, lo, hi)
        t = np.empty(units)
        low = 0 if sys.byteorder == "little" else 1  # the int32 word holding the low 32 bits of each double
        values = t.view(np.int32)[low::2]
        acc = fc.acc[0]
        front = [
            (fc.product, (fc.xbuf, fc.weights_t), {"out": fc.acc}),  # exact integer sums in any order
            (np.multiply, (acc, eff), {"out": t}),  # the float64 product of f64(acc) and eff
            (clip_ufunc, (t, np.array(float(lo)), np.array(float(hi))), {"out": t}),
        ]
        if not ties_free:  # round half away: trunc(t + copysign(HALF_DOWN_F64, t))
            sign = np.empty(units)
            front += [
                (np.copysign, (np.array(HALF_DOWN_F64), t), {"out": sign}),
                (np.add, (t, sign), {"out": t}),
                (np.trunc, (t,), {"out": t}),
            ]
        front.append((np.add, (t, np.array(ROUND_BIAS)), {"out": t}))
        return FullyConnectedSoftmaxTiny(fc, softmax, values, tuple(front), bound_plan(front), ties_free)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The FC's load of ``x`` into its GEMM buffer (FullyConnectedQuantizedFolded.load and its subclasses':
        the same copy, the input viewed with the buffer's shape), then ``loaded_calls``."""
        xview = self.fc.xview
        calls = []
        x = contiguous_source(x, calls)  # a reshape of a non-contiguous x would be a copy made once
        return (*calls, (np.copyto, (xview, x.reshape(xview.shape)), {"casting": "unsafe"}), *self.loaded_calls(out))

    def loaded_calls(self, out: np.ndarray) -> tuple:
        """run_loaded's calls writing into ``out`` (a bound plan's: PooledIntoRows.bound_calls)."""
        f, args = self.softmax.row_call(self.values.tolist, out[self.softmax.lead])
        return (*self.front, (f, args, {}))

    def rows(self) -> np.ndarray:
        """The FC's GEMM rows (what a feeding producer writes: PooledIntoRows)."""
        return self.fc.rows()

    def run_loaded(self, outputs) -> None:
        """``loaded_calls`` on ``outputs`` (a chain's last layer, a depthwise step's consumer: not a bound plan)."""
        for call in self.front_plan:
            call()
        f, args = self.softmax.row_call(self.values.tolist, outputs[0][self.softmax.lead])
        f(*args)

    def feeding(self, consumer) -> FullyConnectedSoftmaxTiny | None:
        """This step with its softmax fused with the table lookup that alone reads its output (a DEQUANTIZE:
        SoftmaxQuantizedTiny.feeding), or None."""
        softmax = self.softmax.feeding(consumer)
        return None if softmax is None else dataclasses.replace(self, softmax=softmax)


def fc_feeding(fc, consumer):
    """``FullyConnectedQuantizedFolded.feeding``'s softmax case (FullyConnectedSoftmaxTiny, or None); for a
    chain's last layer already so fused, that step's own ``feeding``."""
    if isinstance(fc, FullyConnectedSoftmaxTiny):
        return fc.feeding(consumer)
    return FullyConnectedSoftmaxTiny.make(fc, consumer)


@dataclass(frozen=True, eq=False)
class PooledIntoRows(BoundCalls):
    """A global pool or MEAN with a table of its results (pooling.AveragePoolQuantizedTiledTable,
    reduce.MeanQuantizedTable; also FullyConnectedOneValueTable, whose rows are its results) whose output only a
    folded FULLY_CONNECTED reads (or such an FC fused with its own reader: FullyConnectedSoftmaxTiny, a
    FullyConnectedChain), as one step: the pool's sums, then its table gather from ``table`` (the pool's table
    in the GEMM's float type) straight into the FC's GEMM rows, then the FC's run on the loaded rows. Exact: the
    FC would copy the pool's 8-bit (or 16-bit) integer values into those rows as floats (``load``,
    casting="unsafe"); the float table holds the same values (exact in float32 and float64), read with the same
    indices, into rows of the same size in the same (C) order (the rows viewed as the pool's output: checked at
    prepare that this is a view). A bound plan (bound_plan.BoundCalls): the pool's reduction on the bound input's
    window view, the gather and the FC's calls made once per bind (inside an invoke 40-47 -> 38-42 us: no views,
    method calls or attribute reads per invoke). The gather is ``ndarray.take`` (module docstring)."""

    pool: object  # its sums(x) gives the table indices (along the table's first axis)
    table: np.ndarray  # the pool's table in the GEMM's dtype
    mode: str  # np.take's mode for the pool's indices
    target: np.ndarray  # the consumer's rows viewed with the sums' shape
    consumer: object  # has rows() and run_loaded(outputs)

    @staticmethod
    def make(pool, table: np.ndarray, mode: str, out_shape: tuple, consumer) -> PooledIntoRows | None:
        """``out_shape``: the shape of ``np.take(table, pool.sums(x), axis=0)`` (the pool's output values)."""
        if not hasattr(consumer, "run_loaded") or not hasattr(consumer, "rows"):
            return None
        rows = consumer.rows()
        if rows.size != int(np.prod(out_shape)) or rows.dtype not in (np.float32, np.float64):
            return None
        try:
            target = reshape_view(rows, out_shape)
        except ValueError:
            return None
        return PooledIntoRows(pool, table.astype(rows.dtype), mode, target, consumer)

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The pool's sums of ``x`` (its ``sum_calls``), the gather into the FC's rows, the FC's calls on the
        loaded rows (``loaded_calls``)."""
        sums, indices = self.pool.sum_calls(x)
        take = (self.table.take, (indices, 0, self.target, self.mode), {})  # ndarray.take: see the module docstring
        return (*sums, take, *loaded_calls(self.consumer, out))

    def feeding(self, consumer) -> PooledIntoRows | None:
        """This step with its FC fused with the FC's own reader (fuse_feeding on an already fused step)."""
        fused = getattr(self.consumer, "feeding", lambda c: None)(consumer)
        if fused is None:
            return None
        return PooledIntoRows.make(self.pool, self.table, self.mode, self.target.shape, fused)


def pool_feeding(pool, table: np.ndarray, mode: str, out_shape: tuple, consumer):
    """``feeding`` of a pool with a table of its results (its ``sums(x)`` indexing ``table`` with ``mode``, its
    output values shaped ``out_shape``): PooledReshaped when ``consumer`` is a RESHAPE / SQUEEZE / EXPAND_DIMS
    copy, else PooledIntoRows, or None."""
    if type(consumer) is CopyReshaped:
        return PooledReshaped(pool, table, mode, out_shape)
    return PooledIntoRows.make(pool, table, mode, out_shape, consumer)


def loaded_calls(consumer, out: np.ndarray) -> tuple:
    """``consumer.run_loaded([out])`` as bound-plan calls: its own ``loaded_calls`` when it has them, else the one
    call of its run_loaded."""
    calls = getattr(consumer, "loaded_calls", None)
    return calls(out) if calls is not None else ((consumer.run_loaded, ([out],), {}),)


@dataclass(frozen=True, eq=False)
class PooledReshaped(BoundCalls):
    """A pool with a table of its results (as PooledIntoRows) whose output only a RESHAPE / SQUEEZE /
    EXPAND_DIMS copy (shape.CopyReshaped) reads, the copy dropped: the gather stores the pool's values straight
    into the copy's output viewed with the pool's output shape (a C-order reshape of a contiguous tensor: the
    same values in the same order). Its reader, usually the FULLY_CONNECTED after a Flatten (MLPerf Tiny's
    DS-CNN, ResNet-8, MobileNet: AVERAGE_POOL_2D -> RESHAPE -> FULLY_CONNECTED), is then fed in turn
    (``feeding``: PooledIntoRows, the same values written as floats into its GEMM rows)."""

    pool: object
    table: np.ndarray  # the pool's own table, in its output type
    mode: str
    out_shape: tuple  # the pool's output values' shape

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The pool's sums of ``x``, then the gather into ``out`` viewed with the pool's output shape (a view:
        tensors are C-contiguous)."""
        sums, indices = self.pool.sum_calls(x)
        return (*sums, (self.table.take, (indices, 0, out.reshape(self.out_shape), self.mode), {}))

    def feeding(self, consumer) -> PooledIntoRows | None:
        """The pool gathering into the reader's GEMM rows: the reshaped tensor holds the same values in order."""
        return PooledIntoRows.make(self.pool, self.table, self.mode, self.out_shape, consumer)


#: Largest FullyConnectedOneValueTable, in output values (256 rows).
ONE_VALUE_TABLE_MAX_UNITS = 1024


@dataclass(frozen=True, eq=False)
class FullyConnectedOneValueTable:
    """A quantized FULLY_CONNECTED whose input is one 8-bit value (the first layer of a tiny regressor such as
    tflite-micro's int8 sine model, 1 -> 16): its whole output for every one of the 256 input values, made at
    prepare by running the layer's own prepared op (``layer``) on each, so an invoke is one np.take of the row
    (``mode="wrap"``: the row of input value v sits at v mod 256, so an int8 index needs no offset) into the
    output, or straight into the next folded FULLY_CONNECTED's GEMM rows (``feeding``: PooledIntoRows, whose
    rows then take the table as floats: 8 / 16-bit integers, exact in float32). Exact by construction: the same
    integers the layer computes (its own exactness bound, checked at its prepare, covers every 8-bit input).
    Conditions, checked at prepare (``build``): one 8-bit input value, at least two and at most
    ONE_VALUE_TABLE_MAX_UNITS output values of an integer type."""

    table: np.ndarray  # (256, *out_shape) in the output type: row v mod 256 holds input value v's output
    layer: object  # the layer's own prepared op (the dynamic path, for an input of another shape)
    x_shape: tuple
    x_dtype: np.dtype

    @staticmethod
    def build(layer, x, out) -> FullyConnectedOneValueTable | None:
        """``layer`` (a prepared FC op) tabulated for input ``x`` and output ``out`` (TensorInfo), or None."""
        x_dtype, out_dtype = np.dtype(x.dtype), np.dtype(out.dtype)
        size = int(np.prod(out.shape))
        if x_dtype not in (np.int8, np.uint8) or int(np.prod(x.shape)) != 1 or out_dtype.kind not in "iu":
            return None
        if not 2 <= size <= ONE_VALUE_TABLE_MAX_UNITS:
            return None
        out_shape = tuple(out.shape)
        table = np.empty((256, *out_shape), out_dtype)
        for v in range(256):  # value v mod 256 in the input type: row v
            layer([np.array(v, np.uint8).view(x_dtype).reshape(x.shape)], [table[v]])
        return FullyConnectedOneValueTable(table, layer, tuple(x.shape), x_dtype)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape != self.x_shape:
            return self.layer(inputs, outputs)
        out = outputs[OUTPUT]
        self.table.take(x.reshape(()), 0, out, "wrap")  # ndarray.take: see the module docstring

    def sum_calls(self, x: np.ndarray) -> tuple:
        """(no calls, the table index): PooledIntoRows reads the input's one value, as a 0-d view."""
        return (), x.reshape(())

    def feeding(self, consumer) -> PooledIntoRows | OneValueChainTable | None:
        """This layer and the folded FULLY_CONNECTED (or chain) that alone reads its output as one step: the
        table of that step's outputs (OneValueChainTable) when the consumer's output is an integer row of at
        most ONE_VALUE_TABLE_MAX_UNITS values, else PooledIntoRows."""
        fused = PooledIntoRows.make(self, self.table, "wrap", self.table.shape[1:], consumer)
        return None if fused is None else OneValueChainTable.build(fused, self) or fused

    def _tabulate(self, op, shape: tuple) -> np.ndarray | None:
        """(256, prod(shape)): ``op``'s output (written as a float64 array of ``shape``: every 8/16/32-bit
        integer exactly) per input value, kept in the smallest integer type that holds every value (the same
        integers); None when some value is not an integer (a lookup composed into the last layer gives floats:
        a DEQUANTIZE)."""
        table = np.empty((256, int(np.prod(shape))), np.float64)
        scratch = np.empty(shape, np.float64)
        for v in range(256):  # value v mod 256 in the input type: row v
            op([np.array(v, np.uint8).view(self.x_dtype).reshape(self.x_shape)], [scratch])
            table[v] = scratch.reshape(-1)
        if not np.array_equal(table, np.trunc(table)):
            return None
        lo, hi = int(table.min()), int(table.max())
        types = (np.int8, np.uint8, np.int16, np.uint16, np.int32)
        small = next((t for t in types if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max), np.int64)
        return table.astype(small)


def _result_shape(op) -> tuple | None:
    """The shape a folded FULLY_CONNECTED (or chain of them) writes its integer result as (any integer output
    array of that shape takes the same values), or None for another op."""
    if isinstance(op, (FullyConnectedChain, FullyConnectedChainRounded)):
        return _result_shape(op.layers[-1])
    if isinstance(op, FullyConnectedQuantizedFoldedScalar):
        return (1,)  # ndarray.fill
    if isinstance(op, FullyConnectedQuantizedFoldedRelu):  # and FullyConnectedQuantizedFoldedSigned
        return op.iout.shape
    if isinstance(op, FullyConnectedQuantizedFoldedRounded):
        return op.t_out.shape
    if isinstance(op, FullyConnectedQuantizedFolded):
        return op.acc.shape
    return None


@dataclass(frozen=True, eq=False)
class OneValueChainTable(FullyConnectedOneValueTable):
    """FullyConnectedOneValueTable fused with the folded FULLY_CONNECTED layers after it (a tiny regressor's
    whole stack over its one 8-bit input: tflite-micro's int8 sine model is one step): the table holds the last
    layer's output for every input value, made at prepare by running the fused step (PooledIntoRows) itself on
    each, so an invoke is one row copy into the output (the values are integers of the output type, held in
    the smallest integer type that holds them all: the cast stores them exactly). Exact by construction, as
    FullyConnectedOneValueTable. Conditions, checked at prepare (``build``): the consumer's result is an integer
    row (``_result_shape``) of at most ONE_VALUE_TABLE_MAX_UNITS values."""

    @staticmethod
    def build(fused: PooledIntoRows, first: FullyConnectedOneValueTable) -> OneValueChainTable | None:
        shape = _result_shape(fused.consumer)
        if shape is None or int(np.prod(shape)) > ONE_VALUE_TABLE_MAX_UNITS:
            return None
        table = first._tabulate(fused, shape)
        return None if table is None else OneValueChainTable(table, fused, first.x_shape, first.x_dtype)

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        if x.shape != self.x_shape:
            return self.layer(inputs, outputs)
        outputs[OUTPUT].reshape(-1)[...] = self.table[x.item()]  # int v indexes row v mod 256

    def feeding(self, consumer) -> OneValueChainTable | None:
        """This chain extended by ``consumer`` (fuse_feeding on an already fused step), tabulated again."""
        fused = self.layer.feeding(consumer)
        if fused is None:
            return None
        return OneValueChainTable.build(fused, self)
