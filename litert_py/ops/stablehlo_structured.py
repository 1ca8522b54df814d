"""StableHLO data-movement and contraction ops that ai-edge-litert 2.3.0 does not register (no oracle:
semantics from the StableHLO specification, https://github.com/openxla/stablehlo/blob/main/docs/spec.md).
Every dtype (data movement copies raw values, so quantized tensors pass through unchanged).

- STABLEHLO_RESHAPE: to the output tensor's declared shape (same element count).
- STABLEHLO_TRANSPOSE (permutation), STABLEHLO_SLICE (start_indices, limit_indices, strides),
  STABLEHLO_CONCATENATE (dimension), STABLEHLO_BROADCAST_IN_DIM (broadcast_dimensions: operand dim i goes to
  result dim broadcast_dimensions[i], size 1 or equal), STABLEHLO_IOTA (iota_dimension; shape from the output).
- STABLEHLO_DYNAMIC_SLICE (operand, one scalar start index per dim; slice_sizes) and
  STABLEHLO_DYNAMIC_UPDATE_SLICE (operand, update, scalar start indices): start indices are clamped so the
  slice lies inside the operand.
- STABLEHLO_DOT_GENERAL (float and int; no quantized): result dims are batch, lhs free, rhs free dims.
  Floats accumulate in the input type through NumPy matmul, ints wrap in the result type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, register

B = BuiltinOperator


def _ints(v) -> list[int]:
    return [int(x) for x in (v if v is not None else [])]


@dataclass(frozen=True, eq=False)
class StablehloReshape:
    shape: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0].reshape(self.shape)


@register(B.STABLEHLO_RESHAPE)
def prepare_stablehlo_reshape(ctx: OpContext):
    ctx.check_num(1)
    x, o = ctx.input(0), ctx.outputs[0]
    ctx.check(x.type == o.type, "output type must be the operand type")
    shape = tuple(o.shape)
    ctx.check(all(n >= 0 for n in shape) and int(np.prod(shape)) == int(np.prod(x.shape)),
              f"cannot reshape {x.shape} to {shape}")
    ctx.set_output_shape(0, shape)
    return StablehloReshape(shape)


@dataclass(frozen=True, eq=False)
class StablehloTranspose:
    permutation: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = np.transpose(inputs[0], self.permutation)


@register(B.STABLEHLO_TRANSPOSE)
def prepare_stablehlo_transpose(ctx: OpContext):
    ctx.check_num(1)
    x = ctx.input(0)
    perm = tuple(_ints(ctx.options.permutation))
    ctx.check(sorted(perm) == list(range(len(x.shape))), f"permutation {perm} is not one of rank {len(x.shape)}")
    ctx.set_output_shape(0, [x.shape[p] for p in perm])
    return StablehloTranspose(perm)


@dataclass(frozen=True, eq=False)
class StablehloSlice:
    slices: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][self.slices]


@register(B.STABLEHLO_SLICE)
def prepare_stablehlo_slice(ctx: OpContext):
    ctx.check_num(1)
    x = ctx.input(0)
    o = ctx.options
    start, limit, strides = _ints(o.start_indices), _ints(o.limit_indices), _ints(o.strides)
    rank = len(x.shape)
    ctx.check(len(start) == len(limit) == len(strides) == rank, "slice vectors must have the operand's rank")
    ctx.check(all(0 <= s <= lim <= n and st >= 1 for s, lim, n, st in zip(start, limit, x.shape, strides)),
              "need 0 <= start <= limit <= dim and stride >= 1")
    slices = tuple(slice(s, lim, st) for s, lim, st in zip(start, limit, strides))
    ctx.set_output_shape(0, [-(-(lim - s) // st) for s, lim, st in zip(start, limit, strides)])
    return StablehloSlice(slices)


@dataclass(frozen=True, eq=False)
class StablehloConcatenate:
    dimension: int

    def __call__(self, inputs, outputs):
        np.concatenate(inputs, axis=self.dimension, out=outputs[0])


@register(B.STABLEHLO_CONCATENATE)
def prepare_stablehlo_concatenate(ctx: OpContext):
    ctx.check(len(ctx.inputs) >= 1 and len(ctx.outputs) == 1, "needs inputs and one output")
    ins = [ctx.input(i) for i in range(len(ctx.inputs))]
    d = int(ctx.options.dimension)
    rank = len(ins[0].shape)
    ctx.check(0 <= d < rank, f"dimension {d} out of range for rank {rank}")
    for t in ins:
        ctx.check(t.type == ins[0].type and len(t.shape) == rank, "inputs must share type and rank")
        ctx.check(t.quantization == ctx.outputs[0].quantization, "quantized inputs must share the result's "
                                                                 "quantization")
        ctx.check(all(a == b for k, (a, b) in enumerate(zip(t.shape, ins[0].shape)) if k != d),
                  "inputs must agree outside the concatenation dimension")
    shape = list(ins[0].shape)
    shape[d] = sum(t.shape[d] for t in ins)
    ctx.set_output_shape(0, shape)
    return StablehloConcatenate(d)


@dataclass(frozen=True, eq=False)
class StablehloBroadcastInDim:
    expanded: tuple  # operand reshaped to the result's rank (after transposing to increasing result dims)
    order: tuple

    def __call__(self, inputs, outputs):
        x = np.transpose(inputs[0], self.order).reshape(self.expanded)
        outputs[0][...] = x


@register(B.STABLEHLO_BROADCAST_IN_DIM)
def prepare_stablehlo_broadcast_in_dim(ctx: OpContext):
    ctx.check_num(1)
    x, o = ctx.input(0), ctx.outputs[0]
    dims = _ints(ctx.options.broadcast_dimensions)
    shape = tuple(o.shape)
    ctx.check(len(dims) == len(x.shape), "broadcast_dimensions must have the operand's rank")
    ctx.check(len(set(dims)) == len(dims) and all(0 <= d < len(shape) for d in dims), "bad broadcast_dimensions")
    ctx.check(all(x.shape[i] in (1, shape[d]) for i, d in enumerate(dims)), "operand dims must be 1 or the result's")
    order = tuple(int(i) for i in np.argsort(dims))
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
    ctx.set_output_shape(0, shape)
    return StablehloBroadcastInDim(tuple(expanded), order)


@dataclass(frozen=True, eq=False)
class StablehloIota:
    values: np.ndarray

    def __call__(self, inputs, outputs):
        outputs[0][...] = self.values


@register(B.STABLEHLO_IOTA)
def prepare_stablehlo_iota(ctx: OpContext):
    ctx.check_num(0)
    o = ctx.outputs[0]
    shape = tuple(o.shape)
    d = int(ctx.options.iota_dimension)
    ctx.check(0 <= d < len(shape), f"iota_dimension {d} out of range for rank {len(shape)}")
    ctx.check(o.dtype.kind in "iuf", f"Type {o.dtype} is unsupported by op STABLEHLO_IOTA.")
    idx = np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(len(shape))])
    ctx.set_output_shape(0, shape)
    return StablehloIota(np.broadcast_to(idx, shape).astype(o.dtype))


def _clamped_slices(starts, sizes, dims) -> tuple:
    out = []
    for s, size, n in zip(starts, sizes, dims):
        b = min(max(int(np.asarray(s).reshape(())), 0), n - size)
        out.append(slice(b, b + size))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class StablehloDynamicSlice:
    sizes: tuple
    dims: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0][_clamped_slices(inputs[1:], self.sizes, self.dims)]


def _check_starts(ctx: OpContext, first: int, rank: int) -> None:
    ctx.check(len(ctx.inputs) == first + rank, f"needs {rank} start indices")
    for i in range(first, first + rank):
        t = ctx.input(i)
        ctx.check(t.dtype.kind == "i" and t.size == 1, f"start index {i - first} must be an integer scalar")


@register(B.STABLEHLO_DYNAMIC_SLICE)
def prepare_stablehlo_dynamic_slice(ctx: OpContext):
    x = ctx.input(0)
    rank = len(x.shape)
    _check_starts(ctx, 1, rank)
    sizes = tuple(_ints(ctx.options.slice_sizes))
    ctx.check(len(sizes) == rank and all(0 <= s <= n for s, n in zip(sizes, x.shape)),
              "slice_sizes must have the operand's rank and fit in it")
    ctx.set_output_shape(0, sizes)
    return StablehloDynamicSlice(sizes, tuple(x.shape))


@dataclass(frozen=True, eq=False)
class StablehloDynamicUpdateSlice:
    sizes: tuple
    dims: tuple

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out[...] = inputs[0]
        out[_clamped_slices(inputs[2:], self.sizes, self.dims)] = inputs[1]


@register(B.STABLEHLO_DYNAMIC_UPDATE_SLICE)
def prepare_stablehlo_dynamic_update_slice(ctx: OpContext):
    x, u = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    ctx.check(x.type == u.type and len(u.shape) == rank, "update must have the operand's type and rank")
    ctx.check(all(s <= n for s, n in zip(u.shape, x.shape)), "update must fit in the operand")
    _check_starts(ctx, 2, rank)
    ctx.set_output_shape(0, x.shape)
    return StablehloDynamicUpdateSlice(tuple(u.shape), tuple(x.shape))


@dataclass(frozen=True, eq=False)
class StablehloDotGeneral:
    lhs_perm: tuple  # batch, free, contracting
    rhs_perm: tuple  # batch, contracting, free
    lhs_2d: tuple  # (batch..., free, contracting) shapes for matmul
    rhs_2d: tuple
    dtype: np.dtype

    def __call__(self, inputs, outputs):
        a = np.transpose(inputs[0], self.lhs_perm).reshape(self.lhs_2d).astype(self.dtype, copy=False)
        b = np.transpose(inputs[1], self.rhs_perm).reshape(self.rhs_2d).astype(self.dtype, copy=False)
        with np.errstate(all="ignore"):
            outputs[0][...] = np.matmul(a, b).reshape(outputs[0].shape)


@register(B.STABLEHLO_DOT_GENERAL)
def prepare_stablehlo_dot_general(ctx: OpContext):
    ctx.check_num(2)
    a, b, o = ctx.input(0), ctx.input(1), ctx.outputs[0]
    for t in (a, b, o):
        ctx.check(not t.quantization.scale, "quantized dot_general is not supported")
        ctx.check(t.dtype.kind in "iuf", f"Type {t.dtype} is unsupported by op STABLEHLO_DOT_GENERAL.")
    opts = ctx.options
    lb, rb = _ints(opts.lhs_batching_dimensions), _ints(opts.rhs_batching_dimensions)
    lc, rc = _ints(opts.lhs_contracting_dimensions), _ints(opts.rhs_contracting_dimensions)
    ctx.check(len(lb) == len(rb) and len(lc) == len(rc), "batching/contracting dims must pair up")
    ctx.check(all(a.shape[i] == b.shape[j] for i, j in zip(lb + lc, rb + rc)), "paired dims must have one size")
    used_l, used_r = lb + lc, rb + rc
    ctx.check(len(set(used_l)) == len(used_l) and all(0 <= d < len(a.shape) for d in used_l), "bad lhs dims")
    ctx.check(len(set(used_r)) == len(used_r) and all(0 <= d < len(b.shape) for d in used_r), "bad rhs dims")
    lf = [d for d in range(len(a.shape)) if d not in used_l]
    rf = [d for d in range(len(b.shape)) if d not in used_r]
    batch = [a.shape[d] for d in lb]
    nlf, nrf = int(np.prod([a.shape[d] for d in lf])), int(np.prod([b.shape[d] for d in rf]))
    nc = int(np.prod([a.shape[d] for d in lc]))
    out = batch + [a.shape[d] for d in lf] + [b.shape[d] for d in rf]
    ctx.set_output_shape(0, out)
    return StablehloDotGeneral(tuple(lb + lf + lc), tuple(rb + rc + rf), tuple(batch + [nlf, nc]),
                               tuple(batch + [nc, nrf]), o.dtype)
