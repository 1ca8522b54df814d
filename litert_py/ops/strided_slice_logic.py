"""STRIDED_SLICE's index logic (tensorflow/lite/kernels/internal/strided_slice_logic.h and strided_slice.cc
BuildStridedSliceParams / ResizeOutputTensor): the masks, the ellipsis and new axes expanded into an effective
input shape, per-axis start and stop clamped as the reference kernel does (StartForAxis / EndForAxis), the output
shape (``output_shape``) and the slice the reference loop walks (``strided_slice_spec``). The op itself (checks,
prepared ops) is in slicing.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputValueError

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


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
        return tuple(
            slice(a, None if b < 0 else b, s) if n else slice(0, 0)
            for a, b, s, n in zip(self.starts, self.stops, self.strides, self.counts)
        )


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


def output_shape(in_shape, begin, end, strides, o, fail) -> tuple[int, ...]:
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


def strided_slice_spec(in_shape, begin, end, strides, o, out_size: int, fail=InputValueError) -> StridedSliceSpec:
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
        raise fail(
            f"STRIDED_SLICE selects {n} elements for an output of {out_size} (a shrink axis or an offset "
            "slice out of range)"
        )
    return spec
