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
- STABLEHLO_REDUCE (one operand; a body of one add/multiply/maximum/minimum/and/or, builtin or StableHLO:
  reduced with the NumPy ufunc, so float sums are pairwise, an order the spec leaves open). STABLEHLO_SORT (any
  number of operands sorted by the first; a comparator of one STABLEHLO_COMPARE LT (ascending) or GT
  (descending) on the first pair, FLOAT or FLOAT_TOTAL_ORDER; stable always, which is_stable=false allows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..registry import OpContext, PreparedOp, register

B = BuiltinOperator


def _ints(v) -> list[int]:
    return [int(x) for x in (v if v is not None else [])]


@dataclass(frozen=True, eq=False)
class StablehloReshape:
    shape: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = inputs[0].reshape(self.shape)


@register(B.STABLEHLO_RESHAPE)
def prepare_stablehlo_reshape(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, o = ctx.input(0), ctx.outputs[0]
    ctx.check(x.type == o.type, "output type must be the operand type")
    shape = tuple(o.shape)
    ctx.check(
        all(n >= 0 for n in shape) and int(np.prod(shape)) == int(np.prod(x.shape)),
        f"cannot reshape {x.shape} to {shape}",
    )
    ctx.set_output_shape(0, shape)
    return StablehloReshape(shape)


@dataclass(frozen=True, eq=False)
class StablehloTranspose:
    permutation: tuple

    def __call__(self, inputs, outputs):
        outputs[0][...] = np.transpose(inputs[0], self.permutation)


@register(B.STABLEHLO_TRANSPOSE)
def prepare_stablehlo_transpose(ctx: OpContext) -> PreparedOp:
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
def prepare_stablehlo_slice(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    o = ctx.options
    start, limit, strides = _ints(o.start_indices), _ints(o.limit_indices), _ints(o.strides)
    rank = len(x.shape)
    ctx.check(len(start) == len(limit) == len(strides) == rank, "slice vectors must have the operand's rank")
    ctx.check(
        all(0 <= s <= lim <= n and st >= 1 for s, lim, n, st in zip(start, limit, x.shape, strides)),
        "need 0 <= start <= limit <= dim and stride >= 1",
    )
    slices = tuple(slice(s, lim, st) for s, lim, st in zip(start, limit, strides))
    ctx.set_output_shape(0, [-(-(lim - s) // st) for s, lim, st in zip(start, limit, strides)])
    return StablehloSlice(slices)


@dataclass(frozen=True, eq=False)
class StablehloConcatenate:
    dimension: int

    def __call__(self, inputs, outputs):
        np.concatenate(inputs, axis=self.dimension, out=outputs[0])


@register(B.STABLEHLO_CONCATENATE)
def prepare_stablehlo_concatenate(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) >= 1 and len(ctx.outputs) == 1, "needs inputs and one output")
    ins = [ctx.input(i) for i in range(len(ctx.inputs))]
    d = int(ctx.options.dimension)
    rank = len(ins[0].shape)
    ctx.check(0 <= d < rank, f"dimension {d} out of range for rank {rank}")
    for t in ins:
        ctx.check(t.type == ins[0].type and len(t.shape) == rank, "inputs must share type and rank")
        ctx.check(
            t.quantization == ctx.outputs[0].quantization, "quantized inputs must share the result's quantization"
        )
        ctx.check(
            all(a == b for k, (a, b) in enumerate(zip(t.shape, ins[0].shape)) if k != d),
            "inputs must agree outside the concatenation dimension",
        )
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
def prepare_stablehlo_broadcast_in_dim(ctx: OpContext) -> PreparedOp:
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
def prepare_stablehlo_iota(ctx: OpContext) -> PreparedOp:
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
def prepare_stablehlo_dynamic_slice(ctx: OpContext) -> PreparedOp:
    x = ctx.input(0)
    rank = len(x.shape)
    _check_starts(ctx, 1, rank)
    sizes = tuple(_ints(ctx.options.slice_sizes))
    ctx.check(
        len(sizes) == rank and all(0 <= s <= n for s, n in zip(sizes, x.shape)),
        "slice_sizes must have the operand's rank and fit in it",
    )
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
def prepare_stablehlo_dynamic_update_slice(ctx: OpContext) -> PreparedOp:
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
def prepare_stablehlo_dot_general(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    a, b, o = ctx.input(0), ctx.input(1), ctx.outputs[0]
    _check_plain_numbers(ctx, (a, b, o), "dot_general")
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
    return StablehloDotGeneral(
        tuple(lb + lf + lc), tuple(rb + rc + rf), tuple(batch + [nlf, nc]), tuple(batch + [nc, nrf]), o.dtype
    )


# ----------------------------------------------------------------------------------------------------------
# Ops with a region: REDUCE and SORT (a one-node body, recognized and run vectorized; WHILE: control_flow.py)
# ----------------------------------------------------------------------------------------------------------


def _check_plain_numbers(ctx: OpContext, tensors, what: str) -> None:
    """Integer or float tensors without quantization (the dot_general and convolution kernels' types)."""
    for t in tensors:
        ctx.check(not t.quantization.scale, f"quantized {what} is not supported")
        ctx.check(t.dtype.kind in "iuf", f"Type {t.dtype} is unsupported by op {ctx.op_name}.")


def _body_op(ctx: OpContext, k: int, what: str):
    """The single operator of region subgraph ``k`` (its builtin code and operator), or a PrepareError."""
    model = ctx.model
    ctx.check(0 <= k < len(model.subgraphs), f"{what} subgraph {k} not found")
    sg = model.subgraphs[k]
    ctx.check(len(sg.operators) == 1, f"only a {what} of one operator is supported, found {len(sg.operators)}")
    op = sg.operators[0]
    ctx.check(
        list(op.inputs) == list(sg.inputs[:2]) and list(op.outputs) == list(sg.outputs),
        f"the {what} operator must map the region's first two arguments to its result",
    )
    return model.operator_codes[op.opcode_index].builtin_code, op


_REDUCERS = {
    B.STABLEHLO_ADD: np.add,
    B.ADD: np.add,
    B.STABLEHLO_MULTIPLY: np.multiply,
    B.MUL: np.multiply,
    B.STABLEHLO_MAXIMUM: np.maximum,
    B.MAXIMUM: np.maximum,
    B.STABLEHLO_MINIMUM: np.minimum,
    B.MINIMUM: np.minimum,
    B.STABLEHLO_AND: np.bitwise_and,
    B.LOGICAL_AND: np.logical_and,
    B.STABLEHLO_OR: np.bitwise_or,
    B.LOGICAL_OR: np.logical_or,
}


@dataclass(frozen=True, eq=False)
class StablehloReduce:
    ufunc: object
    axes: tuple

    def __call__(self, inputs, outputs):
        out = outputs[0]
        init = inputs[1].reshape(()).item()
        with np.errstate(all="ignore"):
            res = self.ufunc.reduce(inputs[0], axis=self.axes, initial=init)
        np.copyto(out, res, casting="unsafe")


@register(B.STABLEHLO_REDUCE)
def prepare_stablehlo_reduce(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) == 2 and len(ctx.outputs) == 1, "only a reduction of one operand is supported")
    x, init = ctx.input(0), ctx.input(1)
    ctx.check(x.type == init.type and init.size == 1, "init value must be a scalar of the operand's type")
    ctx.check(not x.quantization.scale, "quantized reduce is not supported")
    ctx.check(x.dtype.kind in "biuf", f"Type {x.dtype} is unsupported by op STABLEHLO_REDUCE.")
    code, _ = _body_op(ctx, int(ctx.options.body_subgraph_index), "reduce body")
    ufunc = _REDUCERS.get(code)
    ctx.check(ufunc is not None, "the reduce body must be one add, multiply, maximum, minimum, and or or")
    dims = _ints(ctx.options.dimensions)
    ctx.check(len(set(dims)) == len(dims) and all(0 <= d < len(x.shape) for d in dims), f"bad dimensions {dims}")
    ctx.set_output_shape(0, [n for d, n in enumerate(x.shape) if d not in dims])
    return StablehloReduce(ufunc, tuple(dims))


@dataclass(frozen=True, eq=False)
class StablehloSort:
    dimension: int
    descending: bool
    total_order: bool

    def __call__(self, inputs, outputs):
        key = np.moveaxis(inputs[0], self.dimension, -1)
        if self.total_order:
            i = key.view({2: np.int16, 4: np.int32, 8: np.int64}[key.dtype.itemsize])
            key = np.where(i < 0, np.bitwise_xor(i, np.iinfo(i.dtype).max), i)
        if self.descending:  # dense ranks (NaN ranks above everything), negated: a stable descending order
            _, rank = np.unique(key, return_inverse=True)
            key = -rank.reshape(key.shape)
        order = np.argsort(key, axis=-1, kind="stable")
        for x, out in zip(inputs, outputs):
            moved = np.moveaxis(x, self.dimension, -1)
            np.copyto(np.moveaxis(out, self.dimension, -1), np.take_along_axis(moved, order, axis=-1))


@register(B.STABLEHLO_SORT)
def prepare_stablehlo_sort(ctx: OpContext) -> PreparedOp:
    n = len(ctx.inputs)
    ctx.check(n >= 1 and len(ctx.outputs) == n, "sort needs as many outputs as operands")
    ins = [ctx.input(i) for i in range(n)]
    ctx.check(all(t.shape == ins[0].shape for t in ins), "operands must have one shape")
    ctx.check(ins[0].dtype.kind in "biuf", f"cannot compare {ins[0].dtype} keys")
    code, op = _body_op(ctx, int(ctx.options.comparator_subgraph_index), "comparator")
    ctx.check(code == B.STABLEHLO_COMPARE, "the comparator must be one STABLEHLO_COMPARE")
    sg = ctx.model.subgraphs[int(ctx.options.comparator_subgraph_index)]
    ctx.check(list(op.inputs) == list(sg.inputs[:2]), "the comparator must compare the first operand's pair")
    opts = op.builtin_options2 or op.builtin_options or {}
    direction = int(opts.get("comparison_direction", 0))
    ctx.check(direction in (3, 5), "the comparator must be LT (ascending) or GT (descending)")
    total = int(opts.get("compare_type", 0)) == 2
    ctx.check(not total or ins[0].dtype.kind == "f", "FLOAT_TOTAL_ORDER needs a float first operand")
    d = int(ctx.options.dimension)
    rank = len(ins[0].shape)
    d = d + rank if d < 0 else d
    ctx.check(0 <= d < max(rank, 1), f"dimension {ctx.options.dimension} out of range")
    for i, t in enumerate(ins):
        ctx.set_output_shape(i, t.shape)
    return StablehloSort(d, direction == 3, total)


# ----------------------------------------------------------------------------------------------------------
# CONVOLUTION
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloConvolution:
    in_perm: tuple  # operand -> (N, C, spatial...)
    k_perm: tuple  # kernel -> (O, I, spatial...)
    lhs_dilation: tuple
    pad: tuple  # (lo, hi) per spatial dim, may be negative
    taps: tuple  # per kernel tap: (tap index, slices of the padded input)
    groups: int
    out_perm: tuple  # (N, O, spatial...) -> output layout
    acc_dtype: np.dtype

    def __call__(self, inputs, outputs):
        x = np.transpose(inputs[0], self.in_perm).astype(self.acc_dtype, copy=False)
        k = np.transpose(inputs[1], self.k_perm).astype(self.acc_dtype, copy=False)
        n, c = x.shape[:2]
        if any(d > 1 for d in self.lhs_dilation):
            sp = [(s - 1) * d + 1 if s else 0 for s, d in zip(x.shape[2:], self.lhs_dilation)]
            xd = np.zeros((n, c, *sp), x.dtype)
            xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in self.lhs_dilation)] = x
            x = xd
        widths = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in self.pad]
        x = np.pad(x, widths)
        x = x[
            (slice(None), slice(None))
            + tuple(
                slice(-lo if lo < 0 else 0, x.shape[2 + i] + hi if hi < 0 else None)
                for i, (lo, hi) in enumerate(self.pad)
            )
        ]
        g = self.groups
        o = k.shape[0]
        kg = k.reshape((g, o // g) + k.shape[1:])  # (G, O/G, I, taps...)
        acc = None
        with np.errstate(all="ignore"):
            for tap, sl in self.taps:
                patch = x[(slice(None), slice(None)) + sl]
                patch = patch.reshape((n, g, c // g) + patch.shape[2:])
                term = np.einsum("ngi...,goi->ngo...", patch, kg[(slice(None), slice(None), slice(None)) + tap])
                acc = term if acc is None else acc + term
            acc = acc.reshape((n, o) + acc.shape[3:])
            np.copyto(outputs[0], np.transpose(acc, self.out_perm), casting="unsafe")


@register(B.STABLEHLO_CONVOLUTION)
def prepare_stablehlo_convolution(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, k, out = ctx.input(0), ctx.input(1), ctx.outputs[0]
    _check_plain_numbers(ctx, (x, k, out), "convolution")
    o = ctx.options
    isd, ksd, osd = (
        _ints(o.input_spatial_dimensions),
        _ints(o.kernel_spatial_dimensions),
        _ints(o.output_spatial_dimensions),
    )
    ns = len(isd)
    rank = len(x.shape)
    ctx.check(rank == len(k.shape) == ns + 2 and len(ksd) == len(osd) == ns, "ranks and spatial dims disagree")
    in_perm = (int(o.input_batch_dimension), int(o.input_feature_dimension), *isd)
    k_perm = (int(o.kernel_output_feature_dimension), int(o.kernel_input_feature_dimension), *ksd)
    o_axes = (int(o.output_batch_dimension), int(o.output_feature_dimension), *osd)
    for perm in (in_perm, k_perm, o_axes):
        ctx.check(sorted(perm) == list(range(rank)), "dimension numbers must be a permutation")

    def vec(v, default):
        v = _ints(v)
        return v if v else default

    strides = vec(o.window_strides, [1] * ns)
    pad = vec(o.padding, [0] * (2 * ns))
    lhs_dil, rhs_dil = vec(o.lhs_dilation, [1] * ns), vec(o.rhs_dilation, [1] * ns)
    ctx.check(
        not any(bool(v) for v in (o.window_reversal if o.window_reversal is not None else [])),
        "window_reversal is not supported",
    )
    ctx.check(int(o.batch_group_count or 1) == 1, "batch_group_count other than 1 is not supported")
    groups = int(o.feature_group_count or 1)
    ctx.check(len(strides) == len(lhs_dil) == len(rhs_dil) == ns and len(pad) == 2 * ns, "bad window options")
    ctx.check(all(v >= 1 for v in strides + lhs_dil + rhs_dil), "strides and dilations must be positive")
    n, c = x.shape[in_perm[0]], x.shape[in_perm[1]]
    oc, ic = k.shape[k_perm[0]], k.shape[k_perm[1]]
    ctx.check(
        groups >= 1 and c == ic * groups and oc % groups == 0,
        f"input features {c} must be {groups} groups of the kernel's {ic}, output features divisible",
    )
    sp = [x.shape[d] for d in isd]
    ks = [k.shape[d] for d in ksd]
    pairs = tuple((pad[2 * i], pad[2 * i + 1]) for i in range(ns))
    padded = [((s - 1) * d + 1 if s else 0) + lo + hi for s, d, (lo, hi) in zip(sp, lhs_dil, pairs)]
    ctx.check(all(p >= 0 for p in padded), "padding crops more than the input")
    osz = []
    for p, kk, rd, st_ in zip(padded, ks, rhs_dil, strides):
        span = (kk - 1) * rd + 1
        osz.append(0 if p < span else (p - span) // st_ + 1)
    taps = tuple(
        (
            tap,
            tuple(
                slice(t * rd, t * rd + (m - 1) * st_ + 1 if m else t * rd, st_)
                for t, rd, m, st_ in zip(tap, rhs_dil, osz, strides)
            ),
        )
        for tap in np.ndindex(*ks)
    )
    res = (n, oc, *osz)
    out_shape = [0] * rank
    for axis, size in zip(o_axes, res):
        out_shape[axis] = size
    out_perm = tuple(o_axes.index(a) for a in range(rank))
    acc = np.dtype(np.int64) if out.dtype.kind in "iu" else out.dtype
    ctx.set_output_shape(0, out_shape)
    return StablehloConvolution(in_perm, k_perm, tuple(lhs_dil), pairs, taps, groups, out_perm, acc)
