"""Helpers shared by kernels: fused activations, broadcasting shapes, padding arithmetic.

Sources: tensorflow/lite/kernels/kernel_util.{h,cc} (CalculateActivationRange, HaveSameShapes,
CalculateShapeForBroadcast), tensorflow/lite/kernels/padding.h (ComputePaddingHeightWidth).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import PrepareError
from ..quant import calculate_activation_range_float as float_activation_range
from ..quant import calculate_activation_range_quantized, dtype_range, quantize_multiplier
from ..quant.requantizer import clip_ufunc  # noqa: F401  (re-exported for the kernels)
from ..schema import dtypes, flexbuffers
from ..schema.model import ActivationFunctionType as Act
from .eigen_math import tanh_inplace

try:  # np.einsum(..., optimize=False) is this call behind numpy's array-function dispatch: ~0.8 us a call less
    from numpy._core.multiarray import c_einsum  # noqa: F401  (for the kernels)
except ImportError:  # numpy < 2
    from numpy.core.multiarray import c_einsum  # noqa: F401

#: np.dot's C implementation without numpy's array-function dispatch (a Python dispatcher call: about 0.13-0.3 us
#: of a 0.4-1 us small product), for the prepared plans' own ndarrays; np.dot itself on a numpy without it
dot_impl = getattr(np.dot, "_implementation", np.dot)

FLT_MAX = np.float32(np.finfo(np.float32).max)
#: below this many rows the per-row fixed point runs on Python ints (numpy's per-call overhead dominates)
FEW_ROWS = 16


def float_activation(ctx, code: int):
    """An in-place clamp to the fused activation's range (ActivationFunctionWithMinMax in the reference
    kernels): applied for every code, NONE included, because the range is finite."""
    lo, hi = float_activation_range(code)
    return lambda x: clip_ufunc(x, lo, hi, out=x)


def broadcast_shape(ctx, *shapes) -> tuple[int, ...]:
    """NumPy broadcast of the input shapes, failing with TFLite's message when they are incompatible."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ctx.fail(
            "Given shapes, " + " and ".join(str(list(s)) for s in shapes) + ", are not broadcastable."
        ) from None


#: LiteRT's broadcast loop handles at most this rank (kMaxRank in reference/broadcast_loop.h).
MAX_BROADCAST_RANK = 8


def prepare_binary(ctx, other_out_types=()):
    """Checks shared by the binary elementwise ops (elementwise.py, elementwise_misc.py); sets the (broadcast)
    output shape. Returns the two inputs.

    The output has the inputs' type, or one of ``other_out_types``."""
    ctx.check_num(2, 1)
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.outputs[0]
    ctx.check(a.type == b.type, f"input1->type != input2->type ({a.type_name} != {b.type_name})")
    ctx.check(
        out.type == a.type or out.type in other_out_types,
        f"output type {out.type_name} differs from the inputs' type {a.type_name}",
    )
    if a.shape == b.shape:
        shape = a.shape
    else:
        shape = broadcast_shape(ctx, a.shape, b.shape)
        ctx.check(
            len(shape) <= MAX_BROADCAST_RANK,
            f"broadcasting is supported up to rank {MAX_BROADCAST_RANK}; shapes {list(a.shape)} and "
            f"{list(b.shape)} broadcast to rank {len(shape)}",
        )
    ctx.set_output_shape(0, shape)
    return a, b


def same_padding(in_size: int, filter_size: int, stride: int, dilation: int) -> tuple[int, int]:
    """(output size, padding before) for SAME padding (TFLite ComputePaddingHeightWidth)."""
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + eff - in_size, 0)
    return out, total // 2


def valid_out(in_size: int, filter_size: int, stride: int, dilation: int) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride) // stride


def conv_out_and_pad(ctx, padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1):
    """Output size and leading padding for Padding.SAME (0) or VALID (1)."""
    ctx.check(stride > 0 and dilation > 0, f"stride ({stride}) and dilation ({dilation}) must be positive")
    if padding == 0:
        return same_padding(in_size, filter_size, stride, dilation)
    out = valid_out(in_size, filter_size, stride, dilation)
    return max(out, 0), 0


def quantized_activation_range(ctx, out) -> tuple[int, int]:
    """CalculateActivationRangeQuantized (kernel_util.cc) of the node's fused activation over the output's
    type, scale and zero point; an unsupported activation fails prepare naming the node."""
    qmin, qmax = dtype_range(out.dtype)
    try:
        return calculate_activation_range_quantized(
            ctx.options.fused_activation_function, out.scale, out.zero_point, qmin, qmax
        )
    except PrepareError as e:
        raise ctx.fail(str(e)) from None


def reshape_view(a: np.ndarray, shape) -> np.ndarray:
    """``a`` reshaped as a view; ValueError if that needs a copy (``np.reshape(a, shape, copy=False)``, which needs
    numpy >= 2.1: this works on every numpy the package supports). For prepare-time buffer layouts."""
    r = a.reshape(shape)
    if r.size and not np.may_share_memory(r, a):
        raise ValueError(f"cannot reshape an array of shape {a.shape} to {tuple(shape)} without copying")
    return r


def reusable(arr, shape: tuple, dtype, *sources: np.ndarray) -> bool:
    """Whether a dynamic op's output values of ``shape`` and ``dtype`` may be written into ``arr``, the output
    tensor's present array, rather than into a new one (so that the ops reading it keep their bound plans,
    ops/bound_plan.py): ``arr`` is a plain ndarray owning its memory (not a view of the arena or of another tensor),
    writeable, of that shape and dtype (not object), sharing no memory with ``sources`` (the values' arrays)."""
    return (
        type(arr) is np.ndarray
        and arr.base is None
        and arr.flags.writeable
        and arr.shape == tuple(shape)
        and arr.dtype == dtype
        and arr.dtype != object
        and not any(np.may_share_memory(arr, s) for s in sources)
    )


def operand_views(inputs, indices) -> tuple:
    """``inputs[k][indices[k]]`` where ``indices[k]`` is not None, else ``inputs[k]``: a fused step's operands read
    as views of a slicing step's source (ops/slice_views.fuse_slice_views' ``reading_operands``)."""
    return tuple(x if index is None else x[index] for x, index in zip(inputs, indices))


def flat_views(*arrays: np.ndarray) -> tuple:
    """The operands of one elementwise call (a ufunc or an assignment, whose operands broadcast to the first's
    shape) as 1-d views when every one is C-contiguous with the same number of values, else as given: then no axis
    is broadcast (a broadcast axis would leave an operand fewer values), so the C orders pair the same elements,
    and numpy sets up one 1-d loop instead of an iteration over 4-d views (0.07-0.5 us a small call: most for a
    casting call, int8 window times float64 weights). For buffers bound at prepare (the views follow their data)."""
    if len({a.size for a in arrays}) != 1 or not all(a.flags.c_contiguous for a in arrays):
        return arrays
    return tuple(a.reshape(-1) for a in arrays)


def scalar_operand(value, dtype=np.float32) -> np.ndarray:
    """``value`` as a read-only 0-d array of ``dtype``, the constant operand of a kernel's ufunc calls: a Python or
    numpy scalar operand is converted to an array on every call (0.15-0.25 us, most of a small tensor's time);
    the same values (a float32 ufunc rounds a Python float to float32 as this does)."""
    a = np.array(value, dtype)
    a.flags.writeable = False
    return a


#: Scratch buffers made at prepare start on a cache line: numpy's ufunc loops writing to an output that starts
#: off a 64-byte boundary (np.empty gives 16) run up to 2x slower (98K float32 products: 20 -> 10 us).
CACHE_LINE = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    """np.empty(shape, dtype) whose first element is on a CACHE_LINE-byte boundary (C-contiguous)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(n + CACHE_LINE, np.uint8)
    start = (-buf.ctypes.data) % CACHE_LINE
    return buf[start : start + n].view(dtype).reshape(shape)


def aligned_full(shape, fill_value, dtype) -> np.ndarray:
    """np.full(shape, fill_value, dtype) on a CACHE_LINE-byte boundary."""
    a = aligned_empty(shape, dtype)
    a[...] = fill_value
    return a


@dataclass(frozen=True, eq=False)
class Noop:
    """An op over an empty tensor: nothing to compute."""

    def __call__(self, inputs, outputs):
        pass


def quantized_multiplier(ctx, real, what: str) -> tuple[int, int]:
    """QuantizeMultiplier(real) -> (M, shift); non-finite multipliers and shifts past 31 (undefined behaviour in
    LiteRT) are refused."""
    r = float(real)
    if not math.isfinite(r):
        raise ctx.fail(f"the {what} multiplier {r} is not finite (a zero or missing scale)")
    m, shift = quantize_multiplier(r)
    if shift > 31:
        raise ctx.fail(f"the {what} multiplier {r} is too large for LiteRT's 32-bit fixed point (shift {shift})")
    return m, shift


def qparams(ctx, t) -> tuple[np.float32, int]:
    ctx.check(len(t.quantization.scale) >= 1, f"tensor '{t.name}' ({t.type_name}) has no quantization scale")
    return np.float32(t.scale), int(t.zero_point)


def check_same_type(ctx, x, y) -> None:
    ctx.check(y.type == x.type, f"{y.type_name} != {x.type_name}: the output type must match the input type")


def check_equal(ctx, a, b, what: str) -> None:
    ctx.check(a == b, f"{what} != {b} ({a} != {b})")


# -- custom options (FlexBuffer maps; schema/flexbuffers.py decodes and converts) ------------------------------


def flex_options(ctx, *, allow_empty: bool = False, require_map: bool = False) -> dict:
    """The node's custom options as a dict. LiteRT's ``flexbuffers::GetRoot(buffer, length).AsMap()`` reads before
    an empty buffer (a crash): refused unless ``allow_empty`` (then ``{}``). A root that is not a map reads as the
    empty map, as in C++, unless ``require_map``."""
    raw = bytes(ctx.custom_options or b"")
    if not raw:
        ctx.check(
            allow_empty,
            f"{ctx.op_name} needs its options as a FlexBuffer map in custom_options (LiteRT "
            "crashes on empty custom options)",
        )
        return {}
    try:
        m = flexbuffers.loads(raw)
    except flexbuffers.FlexBufferError as e:
        raise ctx.fail(
            f"{ctx.op_name}: custom options ({len(raw)} bytes) are not a valid FlexBuffer map (truncated "
            f"or corrupt: {e})"
        ) from None
    if not isinstance(m, dict):
        ctx.check(not require_map, "custom options must be a FlexBuffer map")
        return {}
    return m


def _flex_number(ctx, m: dict, key: str):
    """``m[key]``, refused unless a number (or missing: 0); floats must convert to int64 where ``integral``."""
    v = m.get(key)
    if v is None:  # FBT_NULL / missing key: 0
        return 0
    ctx.check(
        isinstance(v, flexbuffers.NUMBER), f"{ctx.op_name} option {key!r} must be a number, got {type(v).__name__}"
    )
    return v


def _flex_integral(ctx, m: dict, key: str):
    v = _flex_number(ctx, m, key)
    if isinstance(v, float):  # C++'s float -> int64 conversion is undefined for NaN, infinities, out of range
        ctx.check(math.isfinite(v) and abs(v) < 2.0**63, f"{ctx.op_name} option {key!r} is not a usable integer: {v}")
    return v


def flex_int32(ctx, m: dict, key: str) -> int:
    """``m[key].AsInt32()`` of a number option (anything else, or a float with no int64 value, refused)."""
    return flexbuffers.as_int32(_flex_integral(ctx, m, key))


def flex_float(ctx, m: dict, key: str) -> float:
    """``m[key].AsFloat()`` of a number option (anything else refused)."""
    return flexbuffers.as_float(_flex_number(ctx, m, key))


def flex_bool(ctx, m: dict, key: str) -> bool:
    """``m[key].AsBool()`` of a number option (anything else, or a float with no int64 value, refused)."""
    return flexbuffers.as_bool(_flex_integral(ctx, m, key))


# -- small helpers shared by several kernel families ----------------------------------------------------


#: integers up to these magnitudes are exact in float32 / float64 accumulations
F32_EXACT = float(2**24)
F64_EXACT = float(2**53)


def exact_gemm_dtype(bound):
    """float32 when every partial sum of an integer GEMM is at most ``bound`` (a number, or one per output
    channel) <= 2**24, float64 when <= 2**53 (both exact then), else None."""
    top = float(np.max(bound, initial=0.0))
    if top <= F32_EXACT:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if top <= F64_EXACT else None


_F32_M1, _F32_0, _F32_1, _F32_6 = (scalar_operand(v) for v in (-1, 0, 1, 6))


def _fmax_gives_plus_zero() -> bool:
    """Whether ``np.fmax(v, +0.0)`` turns -0.0 (and NaN) into +0.0 on this numpy (it does on 1.23 and 2.4, but the
    sign of an equal pair is unspecified): checked once over contiguous, strided and SIMD-sized arrays."""
    for n in (1, 7, 16, 67):
        for step in (1, 2):
            v = np.full(n * step, -0.0, np.float32)[::step]
            v[::3] = np.nan
            np.fmax(v, _F32_0, out=v)
            if np.signbit(v).any() or np.isnan(v).any():
                return False
    return True


_FMAX_PLUS_ZERO = _fmax_gives_plus_zero()


def apply_activation_to_vector(code: int):
    """``tensor_utils::ApplyActivationToVector`` (hybrid FC, RNN, SVDF, LSTM): an in-place function or None.
    Unlike the float kernels' clamp, NONE leaves inf alone, TANH (Eigen's, litert_py.ops.eigen_math) and
    SIGN_BIT apply."""
    # ApplyRelu*ToVector are std::max(lo, std::min(v, hi)): NaN gives lo (fmax), std::max(0.0f, -0.0f) is +0.0
    # (fmax alone where _FMAX_PLUS_ZERO, else + 0.0 after it), std::max(-1.0f, -0.0f) is -0.0
    if code == Act.RELU:
        if _FMAX_PLUS_ZERO:
            return lambda v: np.fmax(v, _F32_0, out=v)
        return lambda v: np.add(np.fmax(v, _F32_0, out=v), _F32_0, out=v)
    if code == Act.RELU_N1_TO_1:
        return lambda v: np.fmax(np.minimum(v, _F32_1, out=v), _F32_M1, out=v)
    if code == Act.RELU6:
        if _FMAX_PLUS_ZERO:
            return lambda v: np.fmax(np.minimum(v, _F32_6, out=v), _F32_0, out=v)
        return lambda v: np.add(np.fmax(np.minimum(v, _F32_6, out=v), _F32_0, out=v), _F32_0, out=v)
    if code == Act.TANH:  # Eigen's tanh, as tensor_utils.h ApplyTanhToVector runs it
        return tanh_inplace
    if code == Act.SIGN_BIT:
        return lambda v: np.copyto(v, np.signbit(v))
    return None


def table_index(x: np.ndarray) -> np.ndarray:
    """The input's bytes as table indices (int8 -> uint8, int16 -> uint16 views; no copy)."""
    return x.view(np.uint8) if x.dtype.itemsize == 1 else x.view(np.uint16)


def all_values(dtype) -> np.ndarray:
    """Every value of an 8- or 16-bit integer dtype as int64, ordered by its bit pattern read as unsigned, so that
    ``table[x.view(uintN)]`` looks ``x`` up (``table_domain`` as int64)."""
    return table_domain(dtype).astype(np.int64)


def table_domain(dtype) -> np.ndarray:
    """Every value of an 8/16-bit integer dtype, ordered by its unsigned bit pattern (see table_index)."""
    dt = np.dtype(dtype)
    unsigned = np.uint8 if dt.itemsize == 1 else np.uint16
    return np.arange(np.iinfo(unsigned).max + 1, dtype=unsigned).view(dt)


def _channel_shape(rank: int, axis: int, n: int) -> tuple[int, ...]:
    return tuple(n if k == axis else 1 for k in range(rank))


def per_channel_params(ctx, t) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero point) arrays shaped to broadcast along the quantized dimension."""
    q = t.quantization
    n = len(q.scale)
    axis = q.quantized_dimension
    ctx.check(
        0 <= axis < len(t.shape) and t.shape[axis] == n,
        f"{n} per-channel scales do not match dimension {axis} of shape {list(t.shape)}",
    )
    zp = q.zero_point if len(q.zero_point) == n else (q.zero_point[0] if q.zero_point else 0,) * n
    shape = _channel_shape(len(t.shape), axis, n)
    return np.asarray(q.scale, np.float32).reshape(shape), np.asarray(zp, np.int64).reshape(shape)


@dataclass(frozen=True)
class Reduction:
    """How one reduction walks its input: reduced axes moved first, then the input viewed as (n, m).

    ``perm`` puts the reduced axes (ascending) before the kept ones, so row i of the (n, m) view holds the
    i-th reduced element (row-major) of every output, and summing the rows in order repeats the reference
    kernel's order of accumulation.
    """

    perm: tuple[int, ...]
    n: int  # reduced elements per output
    m: int  # outputs

    @staticmethod
    def of(shape: Sequence[int], axes: Sequence[int]) -> Reduction:
        reduced = sorted(axes)
        kept = [i for i in range(len(shape)) if i not in reduced]
        n = int(np.prod([shape[i] for i in reduced], dtype=np.int64))
        m = int(np.prod([shape[i] for i in kept], dtype=np.int64))
        return Reduction(tuple(reduced + kept), n, m)

    def rows(self, x: np.ndarray) -> np.ndarray:
        """The input as an (n, m) array (a view when the reduced axes already lead)."""
        return x.transpose(self.perm).reshape(self.n, self.m)

    def sum_in_order(self, x: np.ndarray, out: np.ndarray) -> None:
        """out (m elements) = the sum of the n rows, added one after the other in out's dtype."""
        y = self.rows(x)
        flat = out.reshape(self.m)
        if self.m == 1:  # a full reduction: NumPy would sum pairwise, the reference sums in order
            flat[0] = np.add.accumulate(y[:, 0], dtype=out.dtype)[-1] if self.n else 0
        else:  # along axis 0 of a C-contiguous (n, m) array NumPy adds row after row (a strided view may
            # be reordered into a pairwise inner loop, hence the copy when the reduced axes do not lead)
            np.add.reduce(np.ascontiguousarray(y), axis=0, out=flat, dtype=out.dtype)


def check_output_type(ctx, x, k: int = 0) -> None:
    y = ctx.outputs[k]
    ctx.check(y.type == x.type, f"{ctx.op_name}: output type {y.type_name} differs from input type {x.type_name}")


def movable(t) -> bool:
    """A type TFLite moves by its bit width (8/16/32/64 bits), as TfLiteTypeGetSizeBits dispatches."""
    return t.type not in dtypes.OBJECT_TYPES and t.dtype.itemsize in (1, 2, 4, 8)


def axis_slices(axis: int, start: int, stop: int) -> tuple:
    return (slice(None),) * axis + (slice(start, stop),)


def index_values(t: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(t).reshape(-1)]


#: GEMMs of at most this many rows take np.dot, larger ones np.matmul (see small_gemm).
SMALL_GEMM_ROWS = 16


def small_gemm(rows: int):
    """The product function for a prepared 2-D float64/float32 GEMM ``f(a, b, out=c)`` of ``rows`` rows: np.dot
    for few rows, np.matmul for more. OpenBLAS 0.3.31, process CPU time: (1, 201) x (201, 64) 1.9 us instead of
    matmul's 2.2-2.6 us, (16, 65) x (65, 64) 2.2 instead of 4.7 us; about equal at 36 rows; np.dot slower from
    about 48 rows on ((64, 129) x (129, 128): 67 instead of 56 us). Both are BLAS sums: callers rely on sums
    exact in any order. ``out`` must be C-contiguous of the product's type (np.dot's rule)."""
    return np.dot if rows <= SMALL_GEMM_ROWS else np.matmul


def shares_input_bytes(node, op, inputs, outputs) -> bool:
    """Whether the arena may give the node's output its input's bytes (runtime/subgraph's _unmodified_aliases,
    LiteRT's InputTensorCanBeShared): its prepared op copies its one input unchanged (``copies_input_unchanged``:
    RESHAPE, SQUEEZE, EXPAND_DIMS of static shapes), the input is no subgraph input and the output no subgraph
    output (``inputs`` / ``outputs``: sets of the subgraph's tensor indices). ops/bound_chain.fuse_bound_chains leaves
    such steps out of its chains: shared, they copy nothing."""
    ins, outs = node.operator.inputs, node.operator.outputs
    return (
        getattr(op, "copies_input_unchanged", False)
        and len(outs) == 1
        and bool(ins)
        and ins[0] >= 0
        and outs[0] >= 0
        and ins[0] not in inputs
        and outs[0] not in outputs
    )
