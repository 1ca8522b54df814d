"""Data movement: CONCATENATION, PAD, PADV2, TRANSPOSE, STRIDED_SLICE, SPLIT, SPLIT_V, GATHER, TILE, PACK,
UNPACK, SLICE, REVERSE_V2, REVERSE_SEQUENCE, MIRROR_PAD.

Paths (bytes are moved, never reinterpreted; quantized tensors pass through with their raw integers):
- CONCATENATION: float32, float16, uint8, int8, int16, int32, int64, bool, uint32, int4. int8 inputs must
  share the output's scale and zero point and int16 zero points must be 0 (LiteRT's Prepare checks); uint8
  inputs whose (scale, zero point) differ from the output's are requantized in float32 exactly as the
  reference ConcatenationWithScaling does. LiteRT rejects any fused activation, and so do we. Rank-0 inputs
  are allowed only when all are constant (they are stacked into a vector).
- PAD / PADV2: float32, float16, uint8, int8, int16, int32, int64, bool, rank <= 5; paddings int32, int64,
  int8, int16 or bool. Quantized uint8/int8/int16 pad with the output zero point (PAD) or with the raw
  constant value, which must share the output's scale and zero point (PADV2).
- TRANSPOSE: every 8/16/32/64-bit dtype, rank <= 8, perm int32 (negative entries count from the end).
- STRIDED_SLICE: every 8/16/32/64-bit dtype and strings; begin/end/strides int32; all five masks and the
  ``offset`` option, negative strides, clamping exactly as the reference kernel.
- SPLIT, SPLIT_V: float32, uint8, int8, int16, int32, int64 (axis tensor; size_splits int32/int64 with at
  most one -1).
- GATHER: float32, float16, uint8, int8, int16, int32, int64, bool, int4, strings (1-D); indices int16,
  int32, int64; ``axis`` and ``batch_dims``. An index outside [0, axis size) raises at eval (LiteRT's
  "gather index out of bounds").
- TILE: every dtype, strings included; multiples int32/int64 (non-negative).
- PACK: float32, uint8, int8, int16, int32, int64, uint32; UNPACK: float32, float16, uint8, int8, int16, int32,
  bool. Every input and output share scale and zero point (LiteRT's Prepare checks, for every type).
- SLICE: every dtype, strings included, any rank; begin/size int32 or int64 (one type), size -1 = the rest.
  LiteRT keeps an output shape the model declares (ranked, no -1 in shape_signature) and fails when the
  slice differs; litert_py does the same, and makes the output dynamic when begin/size are not constant and
  no such shape is declared.
- REVERSE_V2: float32, float16, uint8, int8, int16, int32, int64, bool; axis int32 (negative counts from the
  end), several axes only when they form one contiguous run (LiteRT's rule). REVERSE_SEQUENCE: float32,
  uint8, int16, int32, int64; seq_lengths int32/int64.
- MIRROR_PAD: every 8/16/32/64-bit dtype; paddings int32/int64 in [0, size - offset] (REFLECT offset 1,
  SYMMETRIC 0); int8/uint8/int16 input and output share scale and zero point (int16: zero point 0).

Shapes come from constant index tensors at prepare; a non-constant one makes the output dynamic.

Where LiteRT writes uninitialized memory instead of failing, we fail at prepare: a STRIDED_SLICE
shrink axis with a negative stride or an out-of-range begin, an ``offset`` slice reaching past the
input, a TRANSPOSE perm with repeated entries, a negative SLICE begin, and a REVERSE_SEQUENCE length beyond
the sequence axis (LiteRT checks only the first length).

Sources matched: tensorflow/lite/kernels/{concatenation,pad,transpose,strided_slice,split,split_v,gather}.cc,
tensorflow/lite/kernels/{tile,pack,unpack,slice,reverse,reverse_sequence,mirror_pad}.cc,
tensorflow/lite/kernels/internal/reference/{concatenation,pad,strided_slice,gather}.h,
tensorflow/lite/kernels/internal/strided_slice_logic.h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant.fixedpoint import round_away, trunc_to_int32
from ..schema import dtypes
from ..schema.model import ActivationFunctionType, BuiltinOperator
from .registry import OpContext, TensorInfo, register

_STRING = dtypes.TensorType.STRING
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _check_output_type(ctx: OpContext, x: TensorInfo, k: int = 0) -> None:
    y = ctx.outputs[k]
    ctx.check(y.type == x.type, f"{ctx.op_name}: output type {y.type_name} differs from input type {x.type_name}")


def _is_quantized(t: TensorInfo) -> bool:
    return bool(t.quantization.scale)


def _movable(t: TensorInfo) -> bool:
    """A type TFLite moves by its bit width (8/16/32/64 bits), as TfLiteTypeGetSizeBits dispatches."""
    return t.type not in dtypes.OBJECT_TYPES and t.dtype.itemsize in (1, 2, 4, 8)


def _slices(axis: int, start: int, stop: int) -> tuple:
    return (slice(None),) * axis + (slice(start, stop),)


# =================================================================================================
# CONCATENATION
# =================================================================================================

_CONCAT_TYPES = {np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                         np.bool_, np.uint32)}


@dataclass(frozen=True, eq=False)
class Concatenation:
    axis: int

    def __call__(self, inputs, outputs):
        np.concatenate(inputs, axis=self.axis, out=outputs[0])


@dataclass(frozen=True, eq=False)
class ConcatenationScalars:
    """Constant rank-0 inputs stacked into a vector (folded at prepare)."""

    def __call__(self, inputs, outputs):
        np.stack(inputs, axis=0, out=outputs[0])


def rescale_uint8(x: np.ndarray, scale: np.float32, bias: np.float32, zero_point: int) -> np.ndarray:
    """ConcatenationWithScaling's per-element step: ``TfLiteRound(x * scale + bias) + zp`` in float32
    (two separate roundings, no FMA), cast to int32 as x86 does, clamped to [0, 255]."""
    f = np.multiply(x, scale, dtype=np.float32)
    f += bias
    q = trunc_to_int32(round_away(f, out=f))
    q += zero_point
    return np.clip(q, 0, 255).astype(np.uint8)


@dataclass(frozen=True, eq=False)
class ConcatenationUInt8Rescaled:
    """uint8 inputs, some with another (scale, zero point) than the output: those are requantized."""

    axis: int
    rescale: tuple  # per input: None (copied) or (scale f32, bias f32)
    output_zero_point: int

    def __call__(self, inputs, outputs):
        parts = [x if r is None else rescale_uint8(x, r[0], r[1], self.output_zero_point)
                 for x, r in zip(inputs, self.rescale)]
        np.concatenate(parts, axis=self.axis, out=outputs[0])


@register(BuiltinOperator.CONCATENATION)
def prepare_concatenation(ctx: OpContext):
    ctx.check(len(ctx.inputs) >= 1 and len(ctx.outputs) == 1, "CONCATENATION needs inputs and one output")
    ins = [ctx.input(i) for i in range(len(ctx.inputs))]
    t0, out = ins[0], ctx.outputs[0]
    rank = len(t0.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(axis >= 0 and (axis < rank or (rank == 0 and axis == 0)),
              f"CONCATENATION axis {ctx.options.axis} is out of range for inputs of rank {rank}")
    act = ctx.options.fused_activation_function
    ctx.check(act == ActivationFunctionType.NONE, f"params->activation != kTfLiteActNone ({act} != 0)")
    ctx.check(t0.type == dtypes.TensorType.INT4 or t0.dtype in _CONCAT_TYPES,
              f"Type {t0.type_name} is unsupported by op CONCATENATION.")
    for t in ins[1:]:
        ctx.check(len(t.shape) == rank, f"t->dims->size != t0->dims->size ({len(t.shape)} != {rank})")
        ctx.check(t.type == t0.type, f"CONCATENATION inputs have different types: {t0.type_name}, {t.type_name}")
    _check_output_type(ctx, t0)
    if rank == 0:
        ctx.check(all(t.is_constant for t in ins), "t0->dims->size > 0 was not true: only constant scalars "
                  "can be concatenated")
        ctx.set_output_shape(0, (len(ins),))
        return ConcatenationScalars()
    shape = list(t0.shape)
    for t in ins[1:]:
        for d in range(rank):
            if d == axis:
                shape[d] += t.shape[d]
            else:
                ctx.check(t.shape[d] == t0.shape[d],
                          f"t->dims->data[d] != t0->dims->data[d] ({t.shape[d]} != {t0.shape[d]}) at dimension {d}")
    if t0.type == dtypes.TensorType.INT8:  # no rescaling in the int8 kernel
        for t in ins:
            ctx.check(t.scale == out.scale, f"t->params.scale != output->params.scale ({t.scale} != {out.scale})")
            ctx.check(t.zero_point == out.zero_point,
                      f"t->params.zero_point != output->params.zero_point ({t.zero_point} != {out.zero_point})")
    if t0.dtype == np.int16:
        for t in ins + [out]:
            ctx.check(t.zero_point == 0, f"params.zero_point != 0 ({t.zero_point} != 0)")
    ctx.set_output_shape(0, shape)
    if t0.dtype == np.uint8:
        rescale = []
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # an output scale of 0: as in C
            inv = np.float32(1.0) / np.float32(out.scale)
            for t in ins:
                if t.zero_point == out.zero_point and t.scale == out.scale:
                    rescale.append(None)
                else:
                    s = np.float32(t.scale) * inv
                    rescale.append((s, np.float32(-t.zero_point) * s))
        if any(r is not None for r in rescale):
            return ConcatenationUInt8Rescaled(axis, tuple(rescale), out.zero_point)
    return Concatenation(axis)


# =================================================================================================
# PAD, PADV2
# =================================================================================================

INPUT, PADDINGS, CONSTANT_VALUES = 0, 1, 2
_PAD_TYPES = {np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                      np.bool_)}
_PADDING_TYPES = {np.dtype(t) for t in (np.int32, np.int64, np.int8, np.int16, np.bool_)}
_PAD_MAX_RANK = 5


def pad_params(paddings: np.ndarray, in_shape: tuple[int, ...], fail=ValueError):
    """(left, right) per dimension from the (rank, 2) paddings, checked as pad.cc GetPadParams does."""
    p = np.asarray(paddings).astype(np.int64).reshape(-1, 2)
    if p.size and (p.min() < _INT32_MIN or p.max() > _INT32_MAX):
        raise fail("INT64 padding overflow. Only support value between INT32_MIN and INT32_MAX.")
    if p.size and p.min() < 0:
        raise fail("Pad value has to be greater than equal to 0.")
    pads = [(int(a), int(b)) for a, b in p.tolist()]
    return pads, tuple(d + a + b for d, (a, b) in zip(in_shape, pads))


def _pad_regions(pads, in_shape) -> tuple[tuple, tuple]:
    """Index tuples of the interior and of the border slabs to fill (zero-width slabs left out)."""
    interior = tuple(slice(a, a + d) for d, (a, _) in zip(in_shape, pads))
    borders = []
    for k, ((a, b), d) in enumerate(zip(pads, in_shape)):
        if a:
            borders.append(_slices(k, 0, a))
        if b:
            borders.append(_slices(k, a + d, None))
    return interior, tuple(borders)


@dataclass(frozen=True, eq=False)
class Pad:
    interior: tuple
    borders: tuple
    value: object  # the pad value, or None: read the constant_values input at eval

    def __call__(self, inputs, outputs):
        out = outputs[0]
        v = self.value if self.value is not None else inputs[CONSTANT_VALUES].reshape(-1)[0]
        for b in self.borders:
            out[b] = v
        out[self.interior] = inputs[INPUT]


@dataclass(frozen=True, eq=False)
class PadDynamic:
    """Paddings that are not constant: the output shape is known only at eval."""

    value: object

    def __call__(self, inputs, outputs):
        x = inputs[INPUT]
        pads, shape = pad_params(inputs[PADDINGS], x.shape)
        out = np.empty(shape, dtype=x.dtype)
        interior, borders = _pad_regions(pads, x.shape)
        Pad(interior, borders, self.value)(inputs, [out])
        outputs[0] = out


def _pad_value(ctx: OpContext, x: TensorInfo, cv: TensorInfo | None):
    """The static pad value (None when it comes from a non-constant constant_values input)."""
    out = ctx.outputs[0]
    if x.dtype == np.uint8 or (x.dtype in (np.int8, np.int16) and _is_quantized(x)):
        info = np.iinfo(x.dtype)
        if cv is None:  # quantized PAD: 0.0 in the output's quantization, i.e. its zero point
            zp = out.zero_point
            ctx.check(info.min <= zp <= info.max, f"output zero point {zp} is outside the {x.type_name} range")
            return x.dtype.type(zp)
        ctx.check(cv.zero_point == out.zero_point, "output->params.zero_point != constant_values->params.zero_point "
                  f"({out.zero_point} != {cv.zero_point})")
        ctx.check(cv.scale == out.scale,
                  f"output->params.scale != constant_values->params.scale ({out.scale} != {cv.scale})")
    if cv is None:
        return x.dtype.type(0)
    return cv.data.reshape(-1)[0] if cv.is_constant else None


def _prepare_pad(ctx: OpContext):
    ctx.check(len(ctx.inputs) in (2, 3) and len(ctx.outputs) == 1,
              f"{ctx.op_name} takes 2 or 3 inputs and 1 output, got {len(ctx.inputs)} and {len(ctx.outputs)}")
    x, paddings = ctx.input(INPUT), ctx.input(PADDINGS)
    cv = ctx.optional_input(CONSTANT_VALUES)
    ctx.check(paddings.dtype in _PADDING_TYPES and paddings.type not in dtypes.OBJECT_TYPES,
              f"Padding type {paddings.type_name} is currently not supported by Pad.")
    rank = len(x.shape)
    ctx.check(len(paddings.shape) == 2 and paddings.shape[1] == 2,
              f"paddings must have shape [rank, 2], got {list(paddings.shape)}")
    ctx.check(paddings.shape[0] == rank, f"SizeOfDimension(paddings, 0) != dims ({paddings.shape[0]} != {rank})")
    _check_output_type(ctx, x)
    ctx.check(x.dtype in _PAD_TYPES and x.type not in dtypes.OBJECT_TYPES,
              f"Type {x.type_name} is currently not supported by Pad.")
    if cv is not None:
        ctx.check(cv.type == x.type, f"constant_values type {cv.type_name} differs from input type {x.type_name}")
        ctx.check(cv.size == 1, f"constant_values_count != 1 ({cv.size} != 1)")
    ctx.check(rank <= _PAD_MAX_RANK, f"dims <= 5 was not true: {ctx.op_name} input has rank {rank}")
    value = _pad_value(ctx, x, cv)
    if not paddings.is_constant:
        ctx.set_output_dynamic(0)
        return PadDynamic(value)
    pads, shape = pad_params(paddings.data, x.shape, ctx.fail)
    ctx.set_output_shape(0, shape)
    return Pad(*_pad_regions(pads, x.shape), value)


register(BuiltinOperator.PAD)(_prepare_pad)
register(BuiltinOperator.PADV2)(_prepare_pad)


# =================================================================================================
# TRANSPOSE
# =================================================================================================

_TRANSPOSE_MAX_RANK = 8


def transpose_perm(perm, rank: int, fail=ValueError) -> tuple[int, ...]:
    p = [int(v) for v in np.asarray(perm).reshape(-1)]
    if len(p) != rank:
        raise fail(f"op_context->perm->dims->data[0] != dims ({len(p)} != {rank})")
    if any(not -rank <= v < rank for v in p):
        raise fail("Transpose op permutations array is out of bounds.")
    p = [v + rank if v < 0 else v for v in p]
    if len(set(p)) != rank:
        raise fail(f"Transpose op permutation {p} repeats an axis")
    return tuple(p)


@dataclass(frozen=True, eq=False)
class Transpose:
    perm: tuple[int, ...]

    def __call__(self, inputs, outputs):
        np.copyto(outputs[0], inputs[0].transpose(self.perm))


@dataclass(frozen=True, eq=False)
class TransposeDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        outputs[0] = np.ascontiguousarray(x.transpose(transpose_perm(inputs[1], x.ndim)))


@register(BuiltinOperator.TRANSPOSE)
def prepare_transpose(ctx: OpContext):
    ctx.check_num(2)
    x, perm = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    ctx.check(rank <= _TRANSPOSE_MAX_RANK, "Transpose op only supports 1D-8D input arrays.")
    _check_output_type(ctx, x)
    ctx.check(_movable(x), f"Type {x.type_name} is currently not supported by Transpose.")
    ctx.check(perm.dtype == np.int32, f"TRANSPOSE perm must be int32, got {perm.type_name}")
    ctx.check(len(perm.shape) == 1, f"NumDimensions(op_context->perm) != 1 ({len(perm.shape)} != 1)")
    if not perm.is_constant:
        ctx.set_output_dynamic(0)
        return TransposeDynamic()
    p = transpose_perm(perm.data, rank, ctx.fail)
    ctx.set_output_shape(0, tuple(x.shape[k] for k in p))
    return Transpose(p)


# =================================================================================================
# STRIDED_SLICE
# =================================================================================================

BEGIN, END, STRIDES = 1, 2, 3


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1) if i >= 0 else False


@dataclass(frozen=True)
class StridedSliceSpec:
    """The effective slice (strided_slice.cc BuildStridedSliceParams + reference StartForAxis/EndForAxis)."""

    effective_shape: tuple[int, ...]
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    strides: tuple[int, ...]
    shrink: tuple[bool, ...]

    @property
    def counts(self) -> tuple[int, ...]:
        """Elements the reference loop visits along each effective axis."""
        return tuple(len(range(a, b, s)) for a, b, s in zip(self.starts, self.stops, self.strides))

    @property
    def index(self) -> tuple:
        # numpy reads -1 as "the last element": an empty range must stay empty, and a negative-stride stop
        # of -1 ("through element 0") becomes None.
        return tuple(slice(a, None if b < 0 else b, s) if n else slice(0, 0)
                     for a, b, s, n in zip(self.starts, self.stops, self.strides, self.counts))


def _effective_params(in_shape, begin, end, strides, o, fill_indices: bool, fail):
    """BuildStridedSliceParams: expand the ellipsis and new axes into an effective input shape and
    per-axis (start, stop, stride, begin/end/shrink bits)."""
    begin_count = len(strides)  # == len(begin), checked at prepare
    input_dims = len(in_shape)
    num_add_axis = sum(1 for i in range(begin_count) if not _bit(o.ellipsis_mask, i) and _bit(o.new_axis_mask, i))
    ed = input_dims + num_add_axis
    starts, stops, strd = [0] * ed, [0] * ed, [1] * ed
    eff_ellipsis, eff_new_axis = set(), set()
    ellipsis_start, expanded = ed, 0
    i = 0
    while i < ed:
        if _bit(o.ellipsis_mask, i):
            ellipsis_start = i
            ellipsis_end = max(i + 1, min(i + 1 + num_add_axis + input_dims - begin_count, ed))
            expanded = ellipsis_end - ellipsis_start - 1
            eff_ellipsis.update(range(i, ellipsis_end))
            i = ellipsis_end
            continue
        if _bit(o.new_axis_mask, i - expanded):
            eff_new_axis.add(i)
        i += 1
    begin_mask = end_mask = shrink_mask = 0
    eff_shape = [1] * ed
    added_ellipsis = added_axes = 0

    def dim(k):
        if not 0 <= k < input_dims:
            raise fail(f"STRIDED_SLICE masks address input dimension {k} of a rank-{input_dims} input")
        return in_shape[k]

    for i in range(ed):
        if i in eff_ellipsis:
            added_ellipsis = max(0, i - ellipsis_start)
            begin_mask |= 1 << i
            end_mask |= 1 << i
            eff_shape[i] = dim(i - added_axes)
        elif i in eff_new_axis:
            stops[i] = 1
            added_axes += 1
        elif i >= begin_count + expanded:
            begin_mask |= 1 << i
            end_mask |= 1 << i
            eff_shape[i] = dim(i - added_axes)
        else:
            orig = i - added_ellipsis
            if fill_indices:
                starts[i], stops[i] = int(begin[orig]), int(end[orig])
            strd[i] = int(strides[orig])
            begin_mask |= _bit(o.begin_mask, orig) << i
            end_mask |= _bit(o.end_mask, orig) << i
            shrink_mask |= _bit(o.shrink_axis_mask, orig) << i
            eff_shape[i] = dim(i - added_axes)
    return tuple(eff_shape), starts, stops, strd, begin_mask, end_mask, shrink_mask


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def _start_for_axis(start, size, stride, masked) -> int:
    if start < 0:
        start += size
    start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
    if masked:
        start = 0 if stride > 0 else size - 1
    return start


def _end_for_axis(end, start, size, stride, masked, shrink, offset) -> int:
    if shrink:
        return start if start >= size else start + 1
    if offset:
        end += start
    if end < 0:
        end += size
    end = _clamp(end, 0, size) if stride > 0 else _clamp(end, -1, size - 1)
    if masked:
        end = size if stride > 0 else -1
    return end


def _output_shape(in_shape, begin, end, strides, o, fail) -> tuple[int, ...]:
    """The output shape as strided_slice.cc ResizeOutputTensor computes it (from the strides, and the end
    values when ``offset`` is set, else from begin and end)."""
    eff, starts, stops, strd, bm, em, sm = _effective_params(in_shape, begin, end, strides, o, not o.offset, fail)
    out = []
    for idx in range(len(eff) - 1, -1, -1):
        stride = strd[idx]
        if stride == 0:
            raise fail("stride value has to be non-zero")
        if _bit(sm, idx):
            continue
        if o.offset:
            if idx >= len(end):
                raise fail("STRIDED_SLICE with offset needs one end value per effective dimension")
            n = int(end[idx])
        else:
            a = _start_for_axis(starts[idx], eff[idx], stride, _bit(bm, idx))
            b = _end_for_axis(stops[idx], a, eff[idx], stride, _bit(em, idx), False, False)
            n = b - a
        if stride == _INT32_MIN:
            raise fail("stride value INT32_MIN is not supported")
        if (n < 0) != (stride < 0):
            n = 0
        elif stride < 0:
            n = (n + 1) // stride + 1
        else:
            n = 0 if n == 0 else (n - 1) // stride + 1
        if n < 0 or n > _INT32_MAX:
            raise fail(f"StridedSlice: integer overflow computing output dim at axis {idx}")
        out.append(n)
    return tuple(reversed(out))


def strided_slice_spec(in_shape, begin, end, strides, o, out_size: int, fail=ValueError) -> StridedSliceSpec:
    """The slice the reference kernel walks (EvalImpl), checked to fill exactly ``out_size`` elements."""
    eff, starts, stops, strd, bm, em, sm = _effective_params(in_shape, begin, end, strides, o, True, fail)
    a_list, b_list, shrink = [], [], []
    for i in range(len(eff)):
        s = _bit(sm, i)
        if s and strd[i] < 0:
            raise fail("STRIDED_SLICE shrink_axis_mask with a negative stride selects nothing in LiteRT")
        a = _start_for_axis(starts[i], eff[i], strd[i], _bit(bm, i))
        b = _end_for_axis(stops[i], a, eff[i], strd[i], _bit(em, i), s, o.offset)
        a_list.append(a)
        b_list.append(b)
        shrink.append(s)
    spec = StridedSliceSpec(eff, tuple(a_list), tuple(b_list), tuple(strd), tuple(shrink))
    n = int(np.prod(spec.counts, dtype=np.int64))
    if n != out_size:
        raise fail(f"STRIDED_SLICE selects {n} elements for an output of {out_size} (a shrink axis or an offset "
                   "slice out of range)")
    return spec


@dataclass(frozen=True, eq=False)
class StridedSlice:
    """Static slice: begin, end and strides were constant."""

    effective_shape: tuple[int, ...]
    index: tuple
    counts: tuple[int, ...]

    def __call__(self, inputs, outputs):
        outputs[0].reshape(self.counts)[...] = inputs[0].reshape(self.effective_shape)[self.index]


@dataclass(frozen=True, eq=False)
class StridedSliceDynamic:
    """Some index tensor is not constant. ``shape`` is the output shape when prepare could compute it
    (``offset`` with constant end and strides), else None (dynamic output)."""

    options: object
    shape: tuple[int, ...] | None

    def __call__(self, inputs, outputs):
        x, begin, end, strides = inputs[0], inputs[BEGIN], inputs[END], inputs[STRIDES]
        shape = self.shape
        if shape is None:
            shape = _output_shape(x.shape, begin, end, strides, self.options, ValueError)
            out = np.empty(shape, dtype=x.dtype)
        else:
            out = outputs[0]
        spec = strided_slice_spec(x.shape, begin, end, strides, self.options, out.size)
        out.reshape(spec.counts)[...] = x.reshape(spec.effective_shape)[spec.index]
        outputs[0] = out


@register(BuiltinOperator.STRIDED_SLICE)
def prepare_strided_slice(ctx: OpContext):
    ctx.check_num(4)
    x = ctx.input(0)
    begin, end, strides = ctx.input(BEGIN), ctx.input(END), ctx.input(STRIDES)
    for t in (begin, end, strides):
        ctx.check(len(t.shape) == 1, f"NumDimensions(begin/end/strides) != 1 ({len(t.shape)} != 1)")
    ctx.check(begin.size == end.size, f"NumElements(op_context.begin) != NumElements(op_context.end) "
              f"({begin.size} != {end.size})")
    ctx.check(strides.size == begin.size, f"STRIDED_SLICE has {begin.size} begin values but {strides.size} strides")
    _check_output_type(ctx, x)
    for t in (begin, end, strides):
        ctx.check(t.dtype == np.int32, f"begin/end/strides must be INT32, got {t.type_name}")
    ctx.check(begin.size <= 31, "StridedSlice op only supports up to 31 indices.")
    ctx.check(_movable(x) or x.type == _STRING, f"Type {x.type_name} is currently not supported by StridedSlice.")
    o = ctx.options
    if strides.is_constant and begin.is_constant and end.is_constant:
        shape = _output_shape(x.shape, begin.data, end.data, strides.data, o, ctx.fail)
        size = int(np.prod(shape, dtype=np.int64))
        spec = strided_slice_spec(x.shape, begin.data, end.data, strides.data, o, size, ctx.fail)
        ctx.set_output_shape(0, shape)
        return StridedSlice(spec.effective_shape, spec.index, spec.counts)
    if o.offset and strides.is_constant and end.is_constant:
        shape = _output_shape(x.shape, None, end.data, strides.data, o, ctx.fail)
        ctx.set_output_shape(0, shape)
        return StridedSliceDynamic(o, shape)
    ctx.set_output_dynamic(0)
    return StridedSliceDynamic(o, None)


# =================================================================================================
# SPLIT, SPLIT_V
# =================================================================================================

_SPLIT_TYPES = {np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16, np.int32, np.int64)}


def _split_axis(axis_value, rank: int, fail) -> int:
    a = int(np.asarray(axis_value).reshape(-1)[0])
    if a < 0:
        a += rank
    if not 0 <= a < rank:
        raise fail(f"axis_value < NumDimensions(input) was not true: axis {a - rank if a < 0 else a} "
                   f"for an input of rank {rank}")
    return a


def _even_sizes(size: int, n: int, fail) -> list[int]:
    if n == 0:
        raise fail("num_splits != 0 was not true")
    if size % n:
        raise fail("Not an even split")
    return [size // n] * n


def _v_sizes(size_splits, size: int, fail) -> list[int]:
    sizes = [int(v) for v in np.asarray(size_splits).reshape(-1)]
    if sizes.count(-1) > 1:
        raise fail("The size_splits contains more than one -1.")
    if any(v < -1 for v in sizes):
        raise fail(f"size_splits {sizes} has a negative size")
    total = sum(v for v in sizes if v != -1)
    if -1 in sizes:
        if total > size:
            raise fail("The sum of size_splits must be less than the dimension of value.")
        sizes[sizes.index(-1)] = size - total
    elif total != size:
        raise fail("The size_splits must sum to the dimension of value along axis.")
    return sizes


def _split_index(axis: int, sizes: list[int]) -> tuple:
    bounds = np.cumsum([0] + sizes).tolist()
    return tuple(_slices(axis, a, b) for a, b in zip(bounds[:-1], bounds[1:]))


@dataclass(frozen=True, eq=False)
class Split:
    """SPLIT and SPLIT_V with a constant axis (and size_splits): one slice copy per output."""

    data: int  # which input holds the data (SPLIT: 1, SPLIT_V: 0)
    index: tuple

    def __call__(self, inputs, outputs):
        x = inputs[self.data]
        for out, sl in zip(outputs, self.index):
            np.copyto(out, x[sl])


@dataclass(frozen=True, eq=False)
class SplitDynamic:
    """The axis (or size_splits) is not constant: every output shape is found at eval."""

    data: int
    axis_input: int
    sizes_input: int | None  # SPLIT_V's size_splits, None for SPLIT (even split)
    num_splits: int

    def __call__(self, inputs, outputs):
        x = inputs[self.data]
        axis = _split_axis(inputs[self.axis_input], x.ndim, ValueError)
        if self.sizes_input is None:
            sizes = _even_sizes(x.shape[axis], self.num_splits, ValueError)
        else:
            sizes = _v_sizes(inputs[self.sizes_input], x.shape[axis], ValueError)
        for k, sl in enumerate(_split_index(axis, sizes)):
            outputs[k] = x[sl].copy()


def _prepare_split_common(ctx: OpContext, data: int, axis_t: TensorInfo, num_splits: int) -> TensorInfo:
    x = ctx.input(data)
    ctx.check(len(ctx.outputs) == num_splits,
              f"NumOutputs(node) != num_splits ({len(ctx.outputs)} != {num_splits})")
    ctx.check(x.dtype in _SPLIT_TYPES and x.type not in dtypes.OBJECT_TYPES,
              f"Type {x.type_name} is unsupported by op {ctx.op_name}.")
    for k in range(len(ctx.outputs)):
        _check_output_type(ctx, x, k)
    ctx.check(axis_t.dtype == np.int32 and axis_t.size >= 1, f"{ctx.op_name} axis must be an int32 scalar")
    return x


@register(BuiltinOperator.SPLIT)
def prepare_split(ctx: OpContext):
    ctx.check(len(ctx.inputs) == 2, f"SPLIT takes 2 inputs, got {len(ctx.inputs)}")
    axis_t = ctx.input(0)
    n = ctx.options.num_splits
    x = _prepare_split_common(ctx, 1, axis_t, n)
    if not axis_t.is_constant:
        for k in range(n):
            ctx.set_output_dynamic(k)
        return SplitDynamic(1, 0, None, n)
    axis = _split_axis(axis_t.data, len(x.shape), ctx.fail)
    sizes = _even_sizes(x.shape[axis], n, ctx.fail)
    for k, s in enumerate(sizes):
        ctx.set_output_shape(k, x.shape[:axis] + (s,) + x.shape[axis + 1:])
    return Split(1, _split_index(axis, sizes))


@register(BuiltinOperator.SPLIT_V)
def prepare_split_v(ctx: OpContext):
    ctx.check(len(ctx.inputs) == 3, f"SPLIT_V takes 3 inputs, got {len(ctx.inputs)}")
    size_splits, axis_t = ctx.input(1), ctx.input(2)
    n = ctx.options.num_splits
    x = _prepare_split_common(ctx, 0, axis_t, n)
    ctx.check(len(size_splits.shape) == 1, f"NumDimensions(size_splits) != 1 ({len(size_splits.shape)} != 1)")
    ctx.check(size_splits.size == n, f"NumOutputs(node) != NumElements(size_splits) ({n} != {size_splits.size})")
    ctx.check(size_splits.dtype in (np.int32, np.int64), "size_splits only support type int32|int64.")
    if not (axis_t.is_constant and size_splits.is_constant):
        for k in range(n):
            ctx.set_output_dynamic(k)
        return SplitDynamic(0, 2, 1, n)
    axis = _split_axis(axis_t.data, len(x.shape), ctx.fail)
    sizes = _v_sizes(size_splits.data, x.shape[axis], ctx.fail)
    for k, s in enumerate(sizes):
        ctx.set_output_shape(k, x.shape[:axis] + (s,) + x.shape[axis + 1:])
    return Split(0, _split_index(axis, sizes))


# =================================================================================================
# GATHER
# =================================================================================================

_GATHER_TYPES = {np.dtype(t) for t in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                         np.bool_)}


class GatherIndexError(IndexError):
    """An index outside [0, axis size): LiteRT fails the invoke with "gather index out of bounds"."""


def _check_indices(idx: np.ndarray, axis_size: int, axis: int) -> None:
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= axis_size:
            bad = lo if lo < 0 else hi
            raise GatherIndexError(f"gather index out of bounds: index {bad} is outside [0, {axis_size}) on axis "
                                   f"{axis}")


@dataclass(frozen=True, eq=False)
class Gather:
    axis: int
    axis_size: int
    check: bool = True  # False: constant indices already found in range at prepare

    def __call__(self, inputs, outputs):
        idx = inputs[1]
        if self.check:
            _check_indices(idx, self.axis_size, self.axis)
        # mode="clip" only avoids numpy's buffered bounds check: the indices were just checked.
        np.take(inputs[0], idx, axis=self.axis, out=outputs[0], mode="clip")


@dataclass(frozen=True, eq=False)
class GatherBatched:
    """batch_dims > 0: input viewed as (batch, outer, axis, inner), indices as (batch, coords)."""

    axis: int
    x_shape: tuple[int, int, int, int]
    idx_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]

    def __call__(self, inputs, outputs):
        idx = inputs[1]
        _check_indices(idx, self.x_shape[2], self.axis)
        x4 = inputs[0].reshape(self.x_shape)
        outputs[0].reshape(self.out_shape)[...] = np.take_along_axis(x4, idx.reshape(self.idx_shape), axis=2)


@register(BuiltinOperator.GATHER)
def prepare_gather(ctx: OpContext):
    ctx.check_num(2)
    x, positions = ctx.input(0), ctx.input(1)
    ctx.check(positions.dtype in (np.int16, np.int32, np.int64) and positions.type not in dtypes.OBJECT_TYPES,
              f"Positions of type '{positions.type_name}' are not supported by gather.")
    _check_output_type(ctx, x)
    if x.type == _STRING:
        ctx.check(len(x.shape) == 1, f"NumDimensions(input) != 1 ({len(x.shape)} != 1): gather of strings is 1-D only")
    else:
        ctx.check(x.dtype in _GATHER_TYPES and x.type not in dtypes.OBJECT_TYPES,
                  f"Type '{x.type_name}' is not supported by gather.")
    rank, prank = len(x.shape), len(positions.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(0 <= axis < rank, f"0 <= axis && axis < NumDimensions(input) was not true: axis {ctx.options.axis} "
              f"for an input of rank {rank}")
    bd = ctx.options.batch_dims
    if bd < 0:
        bd += prank
    ctx.check(bd <= axis, f"batch_dims <= axis was not true ({bd} > {axis})")
    ctx.check(0 <= bd < rank, f"0 <= batch_dims && batch_dims < NumDimensions(input) was not true (batch_dims {bd})")
    ctx.check(bd <= prank, f"batch_dims <= NumDimensions(positions) was not true ({bd} > {prank})")
    for i in range(bd):
        ctx.check(x.shape[i] == positions.shape[i],
                  f"input->dims->data[{i}] != positions->dims->data[{i}] ({x.shape[i]} != {positions.shape[i]})")
    shape = x.shape[:axis] + positions.shape[bd:] + x.shape[axis + 1:]
    ctx.set_output_shape(0, shape)
    if bd == 0:
        # Constant indices in range need no check at eval; out-of-range ones still fail at invoke, as in LiteRT.
        known_good = positions.is_constant and (
            positions.size == 0 or (positions.data.min() >= 0 and positions.data.max() < x.shape[axis]))
        return Gather(axis, x.shape[axis], check=not known_good)

    def prod(s):
        return int(np.prod(s, dtype=np.int64))

    b, o, a, i = prod(x.shape[:bd]), prod(x.shape[bd:axis]), x.shape[axis], prod(x.shape[axis + 1:])
    c = prod(positions.shape[bd:])
    return GatherBatched(axis, (b, o, a, i), (b, 1, c, 1), (b, o, c, i))


# =================================================================================================
# TILE, PACK, UNPACK
# =================================================================================================


def _index_values(t: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(t).reshape(-1)]


def tile_shape(in_shape, multiples, fail=ValueError) -> tuple[int, ...]:
    m = _index_values(multiples)
    if len(m) != len(in_shape):
        raise fail(f"NumElements(multipliers) != NumDimensions(input) ({len(m)} != {len(in_shape)})")
    if any(v < 0 for v in m):
        raise fail(f"TILE multipliers must be non-negative, got {m}")
    return tuple(d * v for d, v in zip(in_shape, m))


@dataclass(frozen=True, eq=False)
class Tile:
    """Static multiples: the input is broadcast into a (m0, d0, m1, d1, ...) view of the output."""

    view: tuple[int, ...]  # output viewed as interleaved (multiple, size) pairs
    src: tuple[int, ...]  # input viewed as (1, d0, 1, d1, ...)

    def __call__(self, inputs, outputs):
        outputs[0].reshape(self.view)[...] = inputs[0].reshape(self.src)


def _tile_views(in_shape, multiples) -> tuple[tuple[int, ...], tuple[int, ...]]:
    view, src = [], []
    for d, m in zip(in_shape, multiples):
        view += [m, d]
        src += [1, d]
    return tuple(view), tuple(src)


@dataclass(frozen=True, eq=False)
class TileDynamic:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        shape = tile_shape(x.shape, inputs[1])
        out = np.empty(shape, dtype=x.dtype)
        Tile(*_tile_views(x.shape, _index_values(inputs[1])))([x], [out])
        outputs[0] = out


@register(BuiltinOperator.TILE)
def prepare_tile(ctx: OpContext):
    ctx.check_num(2)
    x, mult = ctx.input(0), ctx.input(1)
    _check_output_type(ctx, x)
    ctx.check(x.type not in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT),
              f"Type '{x.type_name}' is not supported by tile.")
    ctx.check(len(mult.shape) == 1, f"NumDimensions(multipliers) != 1 ({len(mult.shape)} != 1)")
    ctx.check(mult.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
              f"Multipliers of type '{mult.type_name}' are not supported by tile.")
    ctx.check(mult.size == len(x.shape),
              f"NumElements(multipliers) != NumDimensions(input) ({mult.size} != {len(x.shape)})")
    if not mult.is_constant:
        ctx.set_output_dynamic(0)
        return TileDynamic()
    shape = tile_shape(x.shape, mult.data, ctx.fail)
    ctx.set_output_shape(0, shape)
    return Tile(*_tile_views(x.shape, _index_values(mult.data)))


_PACK_TYPES = {dtypes.TensorType.FLOAT32, dtypes.TensorType.UINT8, dtypes.TensorType.INT8, dtypes.TensorType.INT16,
               dtypes.TensorType.INT32, dtypes.TensorType.INT64, dtypes.TensorType.UINT32}
_UNPACK_TYPES = {dtypes.TensorType.FLOAT32, dtypes.TensorType.FLOAT16, dtypes.TensorType.UINT8,
                 dtypes.TensorType.INT8, dtypes.TensorType.INT16, dtypes.TensorType.INT32, dtypes.TensorType.BOOL}


def _check_same_quantization(ctx: OpContext, a: TensorInfo, b: TensorInfo) -> None:
    """pack.cc / unpack.cc: quantized tensors are moved, not requantized, so the parameters must agree."""
    ctx.check(a.zero_point == b.zero_point, f"input->params.zero_point != output->params.zero_point "
              f"({a.zero_point} != {b.zero_point})")
    ctx.check(a.scale == b.scale, f"input->params.scale != output->params.scale ({a.scale} != {b.scale})")


@dataclass(frozen=True, eq=False)
class Pack:
    index: tuple  # per input, its place in the output: (:, ..., k)

    def __call__(self, inputs, outputs):
        out = outputs[0]
        for x, ix in zip(inputs, self.index):
            out[ix] = x


@register(BuiltinOperator.PACK)
def prepare_pack(ctx: OpContext):
    n = ctx.options.values_count
    ctx.check(len(ctx.inputs) == n, f"NumInputs(node) != values_count ({len(ctx.inputs)} != {n})")
    ctx.check(n >= 1 and len(ctx.outputs) == 1, "PACK takes values_count >= 1 inputs and one output")
    ins = [ctx.input(i) for i in range(n)]
    x, y = ins[0], ctx.outputs[0]
    rank = len(x.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank + 1
    ctx.check(0 <= axis <= rank, f"axis >= 0 && axis <= NumDimensions(input0) was not true (axis "
              f"{ctx.options.axis}, rank {rank})")
    ctx.check(x.type in _PACK_TYPES, f"Type '{x.type_name}' is not supported by pack.")
    _check_output_type(ctx, x)
    for t in ins:
        ctx.check(t.shape == x.shape, f"PACK inputs differ in shape: {list(x.shape)} and {list(t.shape)}")
        ctx.check(t.type == x.type, f"PACK inputs differ in type: {x.type_name} and {t.type_name}")
        _check_same_quantization(ctx, t, y)
    ctx.set_output_shape(0, x.shape[:axis] + (n,) + x.shape[axis:])
    return Pack(tuple((slice(None),) * axis + (k,) for k in range(n)))


@dataclass(frozen=True, eq=False)
class Unpack:
    index: tuple  # per output, its place in the input: (:, ..., k)

    def __call__(self, inputs, outputs):
        x = inputs[0]
        for out, ix in zip(outputs, self.index):
            out[...] = x[ix]


@register(BuiltinOperator.UNPACK)
def prepare_unpack(ctx: OpContext):
    ctx.check(len(ctx.inputs) == 1, f"UNPACK takes 1 input, got {len(ctx.inputs)}")
    x = ctx.input(0)
    n = ctx.options.num
    ctx.check(len(ctx.outputs) == n, f"NumOutputs(node) != data->num ({len(ctx.outputs)} != {n})")
    rank = len(x.shape)
    axis = ctx.options.axis
    if axis < 0:
        axis += rank
    ctx.check(0 <= axis < rank, f"0 <= axis && axis < NumDimensions(input) was not true (axis {ctx.options.axis})")
    ctx.check(x.type in _UNPACK_TYPES, f"Type '{x.type_name}' is not supported by unpack.")
    ctx.check(x.shape[axis] == n, f"UNPACK: num {n} differs from the size {x.shape[axis]} of axis {axis}")
    shape = x.shape[:axis] + x.shape[axis + 1:]
    for k in range(n):
        _check_output_type(ctx, x, k)
        _check_same_quantization(ctx, x, ctx.outputs[k])
        ctx.set_output_shape(k, shape)
    return Unpack(tuple((slice(None),) * axis + (k,) for k in range(n)))


# =================================================================================================
# SLICE
# =================================================================================================

def slice_bounds(in_shape, begin, size, fail=ValueError) -> tuple[tuple[int, int], ...]:
    """(start, stop) per dimension as slice.cc CalculateOutputShapeVector checks them; a size of -1 takes the
    rest of the dimension. A negative begin (LiteRT reads before the array) is refused."""
    b, s = _index_values(begin), _index_values(size)
    if len(b) != len(in_shape) or len(s) != len(in_shape):
        raise fail(f"begin and size must have {len(in_shape)} elements, got {len(b)} and {len(s)}")
    out = []
    for d, a, n in zip(in_shape, b, s):
        if a < 0:
            raise fail(f"SLICE begin {a} is negative: LiteRT would read before the input")
        if n < 0:
            if n != -1:
                raise fail("Invalid size.")
            n = d - a
            if n < 0:
                raise fail("Invalid begin and size.")
        elif d < a + n:
            raise fail("Invalid begin and size.")
        out.append((a, a + n))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Slice:
    index: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.index]


@dataclass(frozen=True, eq=False)
class SliceDynamic:
    """begin/size not constant. ``shape``: the output shape the model declares (LiteRT keeps a declared,
    fully known ranked shape and checks the slice against it at eval), or None: dynamic output."""

    shape: tuple[int, ...] | None

    def __call__(self, inputs, outputs):
        x = inputs[0]
        bounds = slice_bounds(x.shape, inputs[1], inputs[2])
        sizes = tuple(b - a for a, b in bounds)
        if self.shape is not None and sizes != self.shape:
            raise ValueError(f"output_shape_vector[idx] != SizeOfDimension(output, idx): slice {list(sizes)} "
                             f"differs from the declared output shape {list(self.shape)}")
        result = x[tuple(slice(a, b) for a, b in bounds)]
        if self.shape is None:
            outputs[0] = result.copy()
        else:
            outputs[0][...] = result


def declared_static_shape(ctx: OpContext, k: int = 0) -> tuple[int, ...] | None:
    """The model's own shape of output ``k`` when it is ranked and fully known (no -1 in its
    shape_signature), else None. LiteRT's SLICE keeps such a shape instead of computing one."""
    if ctx.runtime is None:
        return None
    t = ctx.runtime.model.subgraphs[ctx.subgraph_index].tensors[ctx.outputs[k].index]
    sig = t.shape_signature if t.shape_signature is not None else t.shape
    if len(t.shape) == 0 or any(d < 0 for d in sig):
        return None
    return tuple(int(d) for d in t.shape)


@register(BuiltinOperator.SLICE)
def prepare_slice(ctx: OpContext):
    ctx.check_num(3)
    x, begin, size = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = len(x.shape)
    ctx.check(begin.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
              f"Type {begin.type_name} is not supported by Slice: begin must be INT32 or INT64.")
    ctx.check(size.type == begin.type, f"TF_LITE_ENSURE_TYPES_EQ(begin, size): {begin.type_name} != {size.type_name}")
    ctx.check(len(begin.shape) == 1 and len(size.shape) == 1, "Begin and size tensors must be 1-D.")
    ctx.check(begin.size == rank and size.size == rank,
              f"NumElements(begin) and NumElements(size) must equal the input rank {rank}")
    _check_output_type(ctx, x)
    ctx.check(x.type not in (dtypes.TensorType.RESOURCE, dtypes.TensorType.VARIANT),
              f"Type {x.type_name} is currently not supported by Slice.")
    declared = declared_static_shape(ctx)
    if not (begin.is_constant and size.is_constant):
        if declared is None:
            ctx.set_output_dynamic(0)
        else:
            ctx.set_output_shape(0, declared)
        return SliceDynamic(declared)
    bounds = slice_bounds(x.shape, begin.data, size.data, ctx.fail)
    shape = tuple(b - a for a, b in bounds)
    ctx.check(declared is None or declared == shape, f"output_shape_vector[idx] != SizeOfDimension(output, idx): "
              f"the slice {list(shape)} differs from the declared output shape {list(declared or ())}")
    ctx.set_output_shape(0, shape)
    return Slice(tuple(slice(a, b) for a, b in bounds))


# =================================================================================================
# REVERSE_V2, REVERSE_SEQUENCE
# =================================================================================================

_REVERSE_TYPES = {dtypes.TensorType.FLOAT32, dtypes.TensorType.FLOAT16, dtypes.TensorType.UINT8,
                  dtypes.TensorType.INT8, dtypes.TensorType.INT16, dtypes.TensorType.INT32, dtypes.TensorType.INT64,
                  dtypes.TensorType.BOOL}


def reverse_axes(axis, rank: int, fail=ValueError) -> tuple[int, ...]:
    axes = []
    for a in _index_values(axis):
        if a < 0:
            a += rank
        if not 0 <= a < rank:
            raise fail(f"axis >= 0 && axis < NumDimensions(input) was not true (axis {a})")
        axes.append(a)
    ordered = sorted(axes)
    if any(b != a + 1 for a, b in zip(ordered, ordered[1:])):
        raise fail(f"Non-contiguous `axes` not supported: {axes}")
    return tuple(axes)


@dataclass(frozen=True, eq=False)
class Reverse:
    index: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.index]


@dataclass(frozen=True, eq=False)
class ReverseDynamicAxis:
    def __call__(self, inputs, outputs):
        x = inputs[0]
        outputs[0][...] = np.flip(x, reverse_axes(inputs[1], x.ndim))


def _flip_index(axes, rank: int) -> tuple:
    return tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(rank))


@register(BuiltinOperator.REVERSE_V2)
def prepare_reverse_v2(ctx: OpContext):
    ctx.check_num(2)
    x, axis = ctx.input(0), ctx.input(1)
    ctx.check(len(axis.shape) == 1, f"NumDimensions(axis) != 1 ({len(axis.shape)} != 1)")
    ctx.check(len(x.shape) >= axis.size, "NumDimensions(input) >= NumElements(axis) was not true.")
    ctx.check(x.type in _REVERSE_TYPES, f"Type '{x.type_name}' is not supported by reverse.")
    ctx.check(axis.type == dtypes.TensorType.INT32, f"Axis Type '{axis.type_name}' is not supported by reverse.")
    _check_output_type(ctx, x)
    ctx.set_output_shape(0, x.shape)
    if not axis.is_constant:
        return ReverseDynamicAxis()
    return Reverse(_flip_index(reverse_axes(axis.data, len(x.shape), ctx.fail), len(x.shape)))


_REVERSE_SEQUENCE_TYPES = {dtypes.TensorType.FLOAT32, dtypes.TensorType.UINT8, dtypes.TensorType.INT16,
                           dtypes.TensorType.INT32, dtypes.TensorType.INT64}


def reverse_sequence_index(seq_lengths, seq_size: int, fail=ValueError) -> np.ndarray:
    """(batch, seq) source positions along the sequence axis: the first L entries reversed, the rest in place
    (reference_ops::ReverseSequence; L <= 0 leaves the row unchanged). reverse_sequence.cc only checks the
    first length against the sequence size; a longer later one (LiteRT reads outside the input) is refused."""
    lengths = np.asarray(seq_lengths).reshape(-1).astype(np.int64)
    if lengths.size and lengths.max() > seq_size:
        raise fail(f"seq_lengths[i] <= SizeOfDimension(input, seq_dim) was not true: {lengths.max()} > {seq_size}")
    j = np.arange(seq_size, dtype=np.int64)
    last = lengths[:, None] - 1
    return np.where(j[None, :] <= last, last - j[None, :], j[None, :])


@dataclass(frozen=True, eq=False)
class ReverseSequence:
    """Constant lengths: one gather through a flat index computed at prepare."""

    flat_index: np.ndarray

    def __call__(self, inputs, outputs):
        np.take(inputs[0].reshape(-1), self.flat_index, out=outputs[0].reshape(-1))


def _reverse_sequence_flat(shape, seq_dim: int, batch_dim: int, index: np.ndarray) -> np.ndarray:
    """Flat source offset of every output element: positions along seq_dim come from ``index[batch, seq]``."""
    pos = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    pos[seq_dim] = index[pos[batch_dim], pos[seq_dim]]
    return np.ravel_multi_index(tuple(pos), shape).reshape(-1) if int(np.prod(shape)) else np.zeros(0, np.int64)


@dataclass(frozen=True, eq=False)
class ReverseSequenceDynamic:
    seq_dim: int
    batch_dim: int

    def __call__(self, inputs, outputs):
        x = inputs[0]
        index = reverse_sequence_index(inputs[1], x.shape[self.seq_dim])
        flat = _reverse_sequence_flat(x.shape, self.seq_dim, self.batch_dim, index)
        np.take(x.reshape(-1), flat, out=outputs[0].reshape(-1))


@register(BuiltinOperator.REVERSE_SEQUENCE)
def prepare_reverse_sequence(ctx: OpContext):
    ctx.check_num(2)
    x, lengths = ctx.input(0), ctx.input(1)
    ctx.check(len(lengths.shape) == 1, f"NumDimensions(seq_lengths) != 1 ({len(lengths.shape)} != 1)")
    ctx.check(x.type in _REVERSE_SEQUENCE_TYPES, f"Type '{x.type_name}' is not supported by reverse_sequence.")
    ctx.check(lengths.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
              f"Seq_lengths type '{lengths.type_name}' is not supported by reverse_sequence.")
    _check_output_type(ctx, x)
    # LiteRT checks these at eval; they depend on nothing but the shapes, so prepare can.
    rank = len(x.shape)
    seq_dim, batch_dim = ctx.options.seq_dim, ctx.options.batch_dim
    ctx.check(seq_dim >= 0 and batch_dim >= 0, "seq_dim >= 0 && batch_dim >= 0 was not true.")
    ctx.check(seq_dim != batch_dim, "seq_dim != batch_dim was not true.")
    ctx.check(seq_dim < rank and batch_dim < rank, "seq_dim and batch_dim must be < NumDimensions(input).")
    ctx.check(lengths.shape[0] == x.shape[batch_dim], f"SizeOfDimension(seq_lengths_tensor, 0) != "
              f"SizeOfDimension(input, batch_dim) ({lengths.shape[0]} != {x.shape[batch_dim]})")
    ctx.set_output_shape(0, x.shape)
    if not lengths.is_constant:
        return ReverseSequenceDynamic(seq_dim, batch_dim)
    index = reverse_sequence_index(lengths.data, x.shape[seq_dim], ctx.fail)
    return ReverseSequence(_reverse_sequence_flat(x.shape, seq_dim, batch_dim, index))


# =================================================================================================
# MIRROR_PAD
# =================================================================================================

REFLECT, SYMMETRIC = 0, 1


def mirror_pad_index(in_shape, paddings, mode: int, fail=ValueError) -> tuple[np.ndarray, ...]:
    """Per dimension, the input position of every output position (mirror_pad.cc GetInputDimension).
    REFLECT skips the edge element (offset 1), SYMMETRIC repeats it. Each pad must lie in [0, size - offset]
    (LiteRT's check, made at prepare for constant paddings and at eval otherwise)."""
    offset = 1 if mode == REFLECT else 0
    p = np.asarray(paddings).astype(np.int64).reshape(-1, 2)
    out = []
    for k, (d, (left, right)) in enumerate(zip(in_shape, p.tolist())):
        if min(left, right) < 0:
            raise fail("MirrorPad paddings must be non-negative.")
        if max(left, right) > d - offset:
            raise fail("MirrorPad paddings must be no greater than the input dimension size minus the mode offset. "
                       f"Dimension {k} has input size {d}, mode offset {offset}, max padding {d - offset}, left "
                       f"padding {left}, and right padding {right}.")
        lo = left + offset - 1 - np.arange(left, dtype=np.int64)
        hi = d - 1 - offset - np.arange(right, dtype=np.int64)
        out.append(np.concatenate([lo, np.arange(d, dtype=np.int64), hi]))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class MirrorPad:
    flat_index: np.ndarray  # flat input offset of every output element

    def __call__(self, inputs, outputs):
        np.take(inputs[0].reshape(-1), self.flat_index, out=outputs[0].reshape(-1))


def _mirror_flat(in_shape, idx: tuple[np.ndarray, ...]) -> np.ndarray:
    flat = np.zeros([len(i) for i in idx], dtype=np.int64)
    stride = 1
    for k in range(len(idx) - 1, -1, -1):
        shape = [1] * len(idx)
        shape[k] = len(idx[k])
        flat += (idx[k] * stride).reshape(shape)
        stride *= in_shape[k]
    return flat.reshape(-1)


@dataclass(frozen=True, eq=False)
class MirrorPadDynamic:
    mode: int

    def __call__(self, inputs, outputs):
        x = inputs[0]
        idx = mirror_pad_index(x.shape, inputs[1], self.mode)
        outputs[0] = x[np.ix_(*idx)] if idx else x.copy()


@register(BuiltinOperator.MIRROR_PAD)
def prepare_mirror_pad(ctx: OpContext):
    ctx.check_num(2)
    x, pads = ctx.input(0), ctx.input(1)
    ctx.check(len(pads.shape) == 2, f"NumDimensions(padding_matrix) != 2 ({len(pads.shape)} != 2)")
    ctx.check(pads.shape[0] == len(x.shape), f"SizeOfDimension(padding_matrix, 0) != NumDimensions(input_tensor) "
              f"({pads.shape[0]} != {len(x.shape)})")
    ctx.check(pads.shape[1] == 2, f"MIRROR_PAD paddings must have shape [rank, 2], got {list(pads.shape)}")
    ctx.check(pads.type in (dtypes.TensorType.INT32, dtypes.TensorType.INT64),
              f"MIRROR_PAD paddings must be INT32 or INT64, got {pads.type_name}")
    ctx.check(_movable(x), f"Type {x.type_name} is not supported by MIRROR_PAD.")
    _check_output_type(ctx, x)
    if x.dtype in (np.int8, np.uint8, np.int16) and x.type != dtypes.TensorType.BOOL:
        y = ctx.outputs[0]
        ctx.check(x.scale == y.scale,
                  f"input_tensor->params.scale != output_tensor->params.scale ({x.scale} != {y.scale})")
        ctx.check(x.zero_point == y.zero_point, "input_tensor->params.zero_point != output_tensor->params.zero_point "
                  f"({x.zero_point} != {y.zero_point})")
        if x.dtype == np.int16:
            ctx.check(x.zero_point == 0, f"input_tensor->params.zero_point != 0 ({x.zero_point} != 0)")
    mode = ctx.options.mode
    ctx.check(mode in (REFLECT, SYMMETRIC), f"MIRROR_PAD mode {mode} is neither REFLECT (0) nor SYMMETRIC (1)")
    if not pads.is_constant:
        ctx.set_output_dynamic(0)
        return MirrorPadDynamic(mode)
    idx = mirror_pad_index(x.shape, pads.data, mode, ctx.fail)
    ctx.set_output_shape(0, tuple(len(i) for i in idx))
    return MirrorPad(_mirror_flat(x.shape, idx))
