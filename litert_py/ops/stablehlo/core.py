"""StableHLO ops that ai-edge-litert 2.3.0 registers, and the builtin REDUCE_WINDOW (the elementwise ones,
STABLEHLO_ADD, MULTIPLY, MAXIMUM, MINIMUM, AND and SHIFT_LEFT, are in elementwise.py).

- STABLEHLO_PAD (every numeric dtype, bool): edge padding (negative crops) and interior padding with the
  scalar padding value (stablehlo_pad.cc).
- STABLEHLO_GATHER (every numeric dtype, bool; int32/int64 indices): the StableHLO gather with start indices
  clamped into the operand (stablehlo_gather.cc).
- REDUCE_WINDOW (ReduceWindowOptions.reduce_function ADD/MUL/MINIMUM/MAXIMUM/ALL/ANY; constant int64
  window shape, strides and dilations) and STABLEHLO_REDUCE_WINDOW (base dilation, padding with the init
  value, body subgraph of one ADD/MUL/MAXIMUM/MINIMUM/LOGICAL_AND/LOGICAL_OR node, builtin or StableHLO):
  each output is init reduced with the window taps in row-major order, one tap at a time, like
  stablehlo_reduce_window.cc (the order matters for the last bit of float sums; max is ``a >= b ? a : b``).
- STABLEHLO_SCATTER (every numeric dtype, bool; int32/int64 indices): update region of no kernel (replace)
  or one STABLEHLO_ADD/MULTIPLY/MAXIMUM/MINIMUM, the only ones stablehlo_scatter.cc accepts. Updates apply
  in row-major order of the updates tensor; an update element whose target lies outside the operand is
  skipped on its own (LiteRT checks each element, not its whole window, and does not clamp).
- STABLEHLO_COMPOSITE (every dtype): runs its decomposition subgraph on the inputs, like
  stablehlo_composite.cc; outputs are static when the subgraph's are.
- STABLEHLO_CASE (every dtype; int32 branch index): runs branch ``index`` (out of range: the last) on the
  remaining inputs (stablehlo_case.cc); outputs are dynamic when the branches' shapes differ.
- STABLEHLO_RNG_BIT_GENERATOR (uint64 state of 2 or 3; int32/int64/uint32/uint64 output): Philox-4x32-10
  (DEFAULT, PHILOX) or Threefry-2x32 (THREEFRY) over the counter in the state, the output filled as a stream
  of uint32 words and the advanced state returned, like rng_bit_generator.cc and rng_util.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..philox import philox4x32
from ..registry import OpContext, PreparedOp, register
from ..subgraph_call import callee_runtime, check_subgraph_io_types, store_outputs, subgraph_output_infos
from .common import hlo_add, hlo_maximum, hlo_minimum, hlo_multiply

B = BuiltinOperator
_FLOATS = (np.float16, np.float32, np.float64)
_INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
_NUMERIC = _FLOATS + _INTS + (np.bool_,)


# ----------------------------------------------------------------------------------------------------------
# PAD
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloPad:
    interior_slots: tuple  # where the operand lands in the (uncropped) interior+edge-padded array
    full_shape: tuple
    crop: tuple  # slices of the full array that give the output (negative edge padding)

    def __call__(self, inputs, outputs):
        full = np.full(self.full_shape, inputs[1].reshape(()), dtype=outputs[0].dtype)
        full[self.interior_slots] = inputs[0]
        outputs[0][...] = full[self.crop]


@register(B.STABLEHLO_PAD)
def prepare_stablehlo_pad(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, pv = ctx.input(0), ctx.input(1)
    ctx.check(x.type == pv.type, "operand and padding value types differ")
    ctx.check(pv.size == 1, "padding value must be a scalar")
    ctx.check(x.dtype in [np.dtype(t) for t in _NUMERIC], f"Type {x.dtype} is unsupported.")
    o = ctx.options
    rank = len(x.shape)
    lo, hi, it = (list(o.edge_padding_low), list(o.edge_padding_high), list(o.interior_padding))
    ctx.check(len(lo) == len(hi) == len(it) == rank, "padding vectors must have the operand's rank")
    full, slots, crop, out = [], [], [], []
    for n, l, h, i in zip(x.shape, lo, hi, it):
        ctx.check(i >= 0, "StableHLO Pad interior padding must be non-negative.")
        core = n + max(n - 1, 0) * i
        size = core + max(l, 0) + max(h, 0)
        start = max(l, 0)
        slots.append(slice(start, start + core, i + 1))
        c0 = -l if l < 0 else 0
        c1 = size + h if h < 0 else size
        ctx.check(c1 - c0 >= 0, "StableHLO Pad output dimension must be non-negative.")
        crop.append(slice(c0, c1))
        full.append(size)
        out.append(c1 - c0)
    ctx.set_output_shape(0, out)
    return StablehloPad(tuple(slots), tuple(full), tuple(crop))


# ----------------------------------------------------------------------------------------------------------
# GATHER
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloGather:
    index_vector_dim: int
    implicit: bool  # index_vector_dim == rank(start_indices): one index per batch element
    start_index_map: tuple
    operand_shape: tuple
    slice_sizes: tuple
    collapsed: tuple
    perm: tuple  # batch + offset axes -> output axes

    def __call__(self, inputs, outputs):
        idx = inputs[1].astype(np.int64)
        idx = idx[..., None] if self.implicit else np.moveaxis(idx, self.index_vector_dim, -1)
        batch = idx.shape[:-1]
        nb = len(batch)
        rank = len(self.operand_shape)
        ix = []
        for d in range(rank):
            size = self.slice_sizes[d]
            if d in self.start_index_map:
                start = np.clip(idx[..., self.start_index_map.index(d)], 0, self.operand_shape[d] - size)
            else:
                start = np.zeros(batch, np.int64)
            offs = np.arange(size).reshape((1,) * nb + tuple(size if e == d else 1 for e in range(rank)))
            ix.append(start.reshape(batch + (1,) * rank) + offs)
        g = inputs[0][tuple(ix)]  # batch + slice_sizes
        g = g.reshape(batch + tuple(s for d, s in enumerate(self.slice_sizes) if d not in self.collapsed))
        outputs[0][...] = np.transpose(g, self.perm)


@register(B.STABLEHLO_GATHER)
def prepare_stablehlo_gather(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    x, ind = ctx.input(0), ctx.input(1)
    ctx.check(ind.dtype in (np.dtype(np.int32), np.dtype(np.int64)), "start indices must be int32 or int64")
    ctx.check(x.dtype in [np.dtype(t) for t in _NUMERIC], f"(Data Type: {x.dtype}) currently not supported.")
    o = ctx.options
    offset_dims = tuple(int(v) for v in o.offset_dims)
    collapsed = tuple(int(v) for v in o.collapsed_slice_dims)
    smap = tuple(int(v) for v in o.start_index_map)
    ivd = int(o.index_vector_dim)
    sizes = tuple(int(v) for v in o.slice_sizes)
    rank = len(x.shape)
    ctx.check(len(sizes) == rank, "slice_sizes must have the operand's rank")
    ctx.check(all(0 <= s <= n for s, n in zip(sizes, x.shape)), "slice_sizes out of the operand's bounds")
    ctx.check(all(sizes[d] <= 1 for d in collapsed), "collapsed slice dims must have slice size 1")
    ctx.check(0 <= ivd <= len(ind.shape), "index_vector_dim out of range")
    implicit = ivd == len(ind.shape)
    n_index = 1 if implicit else ind.shape[ivd]
    ctx.check(len(smap) == n_index, "start_index_map must have one entry per index")
    batch = [n for k, n in enumerate(ind.shape) if k != ivd]
    offset_sizes = [s for d, s in enumerate(sizes) if d not in collapsed]
    ctx.check(len(offset_sizes) == len(offset_dims), "offset_dims must name every uncollapsed slice dim")
    out_rank = len(batch) + len(offset_dims)
    batch_pos = [k for k in range(out_rank) if k not in offset_dims]
    out_shape = [0] * out_rank
    src = [0] * out_rank  # output axis k takes axis src[k] of (batch + offset)
    for j, k in enumerate(batch_pos):
        out_shape[k], src[k] = batch[j], j
    for j, k in enumerate(offset_dims):
        out_shape[k], src[k] = offset_sizes[j], len(batch) + j
    ctx.set_output_shape(0, out_shape)
    return StablehloGather(ivd, implicit, smap, tuple(x.shape), sizes, collapsed, tuple(src))


# ----------------------------------------------------------------------------------------------------------
# REDUCE_WINDOW (builtin) and STABLEHLO_REDUCE_WINDOW
# ----------------------------------------------------------------------------------------------------------


def _rw_max(a, b, out):
    np.copyto(out, np.where(a >= b, a, b))


def _rw_min(a, b, out):
    np.copyto(out, np.where(a <= b, a, b))


def _rw_add(a, b, out):
    hlo_add(a, b, out)


def _rw_mul(a, b, out):
    hlo_multiply(a, b, out)


def _rw_all(a, b, out):
    np.logical_and(a, b, out=out, casting="unsafe")


def _rw_any(a, b, out):
    np.logical_or(a, b, out=out, casting="unsafe")


#: ReduceWindowFunction enum -> reducer
_RW_FUNCTIONS = {1: _rw_add, 2: _rw_mul, 3: _rw_min, 4: _rw_max, 5: _rw_all, 6: _rw_any}
_RW_BODIES = {
    B.ADD: _rw_add,
    B.STABLEHLO_ADD: _rw_add,
    B.MUL: _rw_mul,
    B.STABLEHLO_MULTIPLY: _rw_mul,
    B.MAXIMUM: _rw_max,
    B.STABLEHLO_MAXIMUM: _rw_max,
    B.MINIMUM: _rw_min,
    B.STABLEHLO_MINIMUM: _rw_min,
    B.LOGICAL_AND: _rw_all,
    B.STABLEHLO_AND: _rw_all,
    B.LOGICAL_OR: _rw_any,
    B.STABLEHLO_OR: _rw_any,
}
_RW_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32, np.float64)


@dataclass(frozen=True, eq=False)
class ReduceWindow:
    fn: object
    base_slots: tuple | None  # where the operand lands in the base-dilated, padded array (None: no padding)
    padded_shape: tuple
    crop: tuple
    taps: tuple  # one tuple of slices of the padded input per window tap, row-major

    def __call__(self, inputs, outputs):
        x, out = inputs[0], outputs[0]
        if self.base_slots is not None:
            full = np.full(self.padded_shape, inputs[1].reshape(()), dtype=x.dtype)
            full[self.base_slots] = x
            x = full[self.crop]
        out[...] = inputs[1].reshape(())
        with np.errstate(all="ignore"):
            for tap in self.taps:
                self.fn(out, x[tap], out)


def _reduce_window(ctx: OpContext, fn, window, strides, base_dil, win_dil, padding) -> ReduceWindow:
    x, init = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    ctx.check(x.type == init.type, "input and init value types differ")
    ctx.check(init.size == 1, "init value must be a scalar")
    ctx.check(x.dtype in [np.dtype(t) for t in _RW_TYPES], f"unsupported kernel data type ({x.dtype})")
    ctx.check(rank <= 6, "rank must be at most 6")
    for name, v in (
        ("window dimensions", window),
        ("window strides", strides),
        ("base dilations", base_dil),
        ("window dilations", win_dil),
    ):
        ctx.check(len(v) == rank and all(k >= 1 for k in v), f"{name} must be {rank} positive values")
    ctx.check(len(padding) == 2 * rank, "padding must have two values per dimension")
    # base dilation then edge padding / cropping, both filled with the init value
    slots, full, crop, shape = [], [], [], []
    for d, n in enumerate(x.shape):
        core = (n - 1) * base_dil[d] + 1 if n > 0 else 0
        lo, hi = padding[2 * d], padding[2 * d + 1]
        size = core + max(lo, 0) + max(hi, 0)
        slots.append(slice(max(lo, 0), max(lo, 0) + core, base_dil[d]))
        c0, c1 = (-lo if lo < 0 else 0), (size + hi if hi < 0 else size)
        ctx.check(c1 >= c0, "padding crops more than the dimension")
        full.append(size)
        crop.append(slice(c0, c1))
        shape.append(c1 - c0)
    trivial = all(b == 1 for b in base_dil) and all(p == 0 for p in padding)
    out = []
    for d in range(rank):
        span = (window[d] - 1) * win_dil[d] + 1
        out.append(0 if shape[d] < span else (shape[d] - span) // strides[d] + 1)
    taps = []
    for tap in np.ndindex(*window):
        taps.append(
            tuple(
                slice(t * win_dil[d], t * win_dil[d] + (out[d] - 1) * strides[d] + 1, strides[d])
                for d, t in enumerate(tap)
            )
        )
    ctx.set_output_shape(0, out)
    if any(k == 0 for k in out):
        taps = []
    return ReduceWindow(fn, None if trivial else tuple(slots), tuple(full), tuple(crop), tuple(taps))


@register(B.REDUCE_WINDOW)
def prepare_reduce_window(ctx: OpContext) -> PreparedOp:
    ctx.check_num(5)
    vecs = []
    for i in (2, 3, 4):
        t = ctx.input(i)
        ctx.check(t.dtype == np.dtype(np.int64), f"input {i} must be int64")
        ctx.check(t.data is not None, f"input {i} must be constant")
        vecs.append([int(v) for v in np.asarray(t.data).reshape(-1)])
    fn = _RW_FUNCTIONS.get(int(ctx.options.reduce_function))
    ctx.check(fn is not None, "unsupported reduction body.")
    rank = len(ctx.input(0).shape)
    return _reduce_window(ctx, fn, vecs[0], vecs[1], [1] * rank, vecs[2], [0] * (2 * rank))


@register(B.STABLEHLO_REDUCE_WINDOW)
def prepare_stablehlo_reduce_window(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    o = ctx.options
    model = ctx.model
    k = int(o.body_subgraph_index)
    ctx.check(0 <= k < len(model.subgraphs), f"Body subgraph not found for stablehlo.reduce_window: {k}.")
    ops = model.subgraphs[k].operators
    ctx.check(
        len(ops) == 1, f"Only one kernel is allowed within stablehlo.reduce_window body. ({len(ops)}) kernels found."
    )
    fn = _RW_BODIES.get(model.operator_codes[ops[0].opcode_index].builtin_code)
    ctx.check(fn is not None, "unsupported reduction body.")
    rank = len(ctx.input(0).shape)

    def vec(name, default):
        v = [int(t) for t in (getattr(o, name, None) or [])]
        return v if v else default

    return _reduce_window(
        ctx,
        fn,
        vec("window_dimensions", [1] * rank),
        vec("window_strides", [1] * rank),
        vec("base_dilations", [1] * rank),
        vec("window_dilations", [1] * rank),
        vec("padding", [0] * (2 * rank)),
    )


# ----------------------------------------------------------------------------------------------------------
# SCATTER
# ----------------------------------------------------------------------------------------------------------


def _replace(a, b, out):
    np.copyto(out, b)


_SCATTER_BODIES = {
    B.STABLEHLO_ADD: hlo_add,
    B.STABLEHLO_MULTIPLY: hlo_multiply,
    B.STABLEHLO_MAXIMUM: hlo_maximum,
    B.STABLEHLO_MINIMUM: hlo_minimum,
}


@dataclass(frozen=True, eq=False)
class StablehloScatter:
    fn: object
    index_vector_dim: int
    implicit: bool
    batch_coords: tuple  # per update element: its position in the scatter indices' batch dims
    window: tuple  # per operand dim: the window offset of every update element (array of the updates' shape)
    operand_dim_of_index: tuple  # scatter_dims_to_operand_dims
    operand_shape: tuple

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out[...] = inputs[0]
        idx = inputs[1].astype(np.int64)
        idx = idx[..., None] if self.implicit else np.moveaxis(idx, self.index_vector_dim, -1)
        start = idx[self.batch_coords]  # updates shape + (number of indices,)
        coords = list(self.window)
        for k, d in enumerate(self.operand_dim_of_index):
            coords[d] = coords[d] + start[..., k]
        ok = np.ones(inputs[2].shape, bool)
        for d, n in enumerate(self.operand_shape):
            ok &= (coords[d] >= 0) & (coords[d] < n)
        # each out-of-bounds element is skipped alone (LiteRT checks the element, not its whole window)
        target = (
            np.ravel_multi_index(tuple(c[ok] for c in coords), self.operand_shape)
            if coords
            else np.zeros(int(ok.sum()), np.int64)
        )
        upd = inputs[2][ok]
        flat = out.reshape(-1)
        # LiteRT applies the updates one by one in row-major order; duplicates of a target are applied in
        # rounds (k-th occurrence in round k), so every target sees its updates in that same order
        order = np.argsort(target, kind="stable")
        ts = target[order]
        first = np.r_[0, np.flatnonzero(ts[1:] != ts[:-1]) + 1] if ts.size else np.zeros(0, np.int64)
        occ = np.empty(ts.size, np.int64)
        occ[order] = np.arange(ts.size) - np.repeat(first, np.diff(np.r_[first, ts.size]))
        with np.errstate(all="ignore"):
            for r in range(int(occ.max()) + 1 if occ.size else 0):
                sel = occ == r
                t = target[sel]
                cur = flat[t]
                self.fn(cur, upd[sel], cur)
                flat[t] = cur


@register(B.STABLEHLO_SCATTER)
def prepare_stablehlo_scatter(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3)
    x, ind, upd = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(
        ind.dtype in (np.dtype(np.int32), np.dtype(np.int64)), f"(Index Type: {ind.dtype}) currently not supported."
    )
    ctx.check(x.type == upd.type, "operand and updates types differ")
    ctx.check(x.dtype in [np.dtype(t) for t in _NUMERIC], f"(Data Type: {x.dtype}) currently not supported.")
    o = ctx.options
    model = ctx.model
    k = int(o.update_computation_subgraph_index)
    ctx.check(0 <= k < len(model.subgraphs), f"update computation subgraph {k} not found")
    ops = model.subgraphs[k].operators
    ctx.check(len(ops) <= 1, f"Only one kernel allowed within the stablehlo region. ({len(ops)}) kernels found.")
    fn = _replace if not ops else _SCATTER_BODIES.get(model.operator_codes[ops[0].opcode_index].builtin_code)
    ctx.check(
        fn is not None,
        "Only update, Add, Multiply, Maximum and Minimum operations are currently supported for stablehlo.scatter.",
    )
    uwd = [int(v) for v in o.update_window_dims]
    iwd = [int(v) for v in o.inserted_window_dims]
    sdod = tuple(int(v) for v in o.scatter_dims_to_operand_dims)
    ivd = int(o.index_vector_dim)
    rank, urank = len(x.shape), len(upd.shape)
    ctx.check(len(uwd) <= urank and len(iwd) <= rank, "window dims out of range")
    ctx.check(len(uwd) + len(iwd) == rank, "update_window_dims and inserted_window_dims must cover the operand")
    ctx.check(
        all(0 <= d < urank for d in uwd) and all(0 <= d < rank for d in iwd + list(sdod)),
        "dimension numbers out of range",
    )
    ctx.check(0 <= ivd <= len(ind.shape), "index_vector_dim out of range")
    implicit = ivd == len(ind.shape)
    ctx.check(len(sdod) == (1 if implicit else ind.shape[ivd]), "scatter_dims_to_operand_dims size mismatch")
    batch = [n for j, n in enumerate(ind.shape) if j != ivd]
    scatter_dims = [d for d in range(urank) if d not in uwd]
    ctx.check([upd.shape[d] for d in scatter_dims] == batch, "updates' scatter dims must match the indices")
    grid = np.indices(upd.shape, dtype=np.int64) if urank else np.zeros((0,), np.int64)
    batch_coords = tuple(grid[d] for d in scatter_dims)
    window, w = [], iter(uwd)
    for d in range(rank):
        window.append(np.zeros(upd.shape, np.int64) if d in iwd else grid[next(w)])
    ctx.set_output_shape(0, x.shape)
    return StablehloScatter(fn, ivd, implicit, batch_coords, tuple(window), sdod, tuple(x.shape))


# ----------------------------------------------------------------------------------------------------------
# COMPOSITE
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StablehloComposite:
    decomposition: object  # SubgraphRuntime
    dynamic: bool

    def __call__(self, inputs, outputs):
        store_outputs(outputs, self.decomposition.run(inputs), self.dynamic)


@register(B.STABLEHLO_COMPOSITE, stateful=True)
def prepare_stablehlo_composite(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) > 0, "STABLEHLO_COMPOSITE needs at least one input")
    ctx.check(all(t is not None for t in ctx.inputs), "STABLEHLO_COMPOSITE inputs must all be present")
    sub = callee_runtime(ctx, int(ctx.options.decomposition_subgraph_index))
    check_subgraph_io_types(ctx, sub, "decomposition", "inputs", ctx.inputs, [t.type for t in ctx.inputs])
    check_subgraph_io_types(ctx, sub, "decomposition", "outputs", ctx.outputs, [t.type for t in ctx.outputs])
    sub.prepare_for([t.shape for t in ctx.inputs])
    outs = subgraph_output_infos(sub)
    dynamic = any(o.dynamic for o in outs)
    for k, o in enumerate(outs):
        if dynamic:
            ctx.set_output_dynamic(k)
        else:
            ctx.set_output_shape(k, o.shape)
    return StablehloComposite(sub, dynamic)


@dataclass(frozen=True, eq=False)
class StablehloCase:
    branches: tuple  # SubgraphRuntime per branch
    dynamic: bool

    def __call__(self, inputs, outputs):
        k = int(inputs[0].reshape(-1)[0])
        branch = self.branches[k if 0 <= k < len(self.branches) else -1]  # out of range: the last branch
        store_outputs(outputs, branch.run(inputs[1:]), self.dynamic)


@register(B.STABLEHLO_CASE, stateful=True)
def prepare_stablehlo_case(ctx: OpContext) -> PreparedOp:
    index = ctx.input(0)
    ctx.check(index.dtype == np.dtype(np.int32) and index.size == 1, "the branch index must be one int32")
    ks = [int(k) for k in (ctx.options.branch_subgraph_indices or [])]
    ctx.check(len(ks) > 0, "STABLEHLO_CASE needs at least one branch")
    args = ctx.inputs[1:]
    ctx.check(all(t is not None for t in args), "STABLEHLO_CASE inputs must all be present")
    branches, shapes, dynamic = [], [], False
    for k in ks:
        sub = callee_runtime(ctx, k)
        check_subgraph_io_types(ctx, sub, "branch", "inputs", args, [t.type for t in args])
        check_subgraph_io_types(ctx, sub, "branch", "outputs", ctx.outputs, [t.type for t in ctx.outputs])
        sub.prepare_for([t.shape for t in args])
        outs = subgraph_output_infos(sub)
        dynamic = dynamic or any(o.dynamic for o in outs)
        shapes.append([tuple(o.shape) for o in outs])
        branches.append(sub)
    dynamic = dynamic or any(s != shapes[0] for s in shapes)
    for i, s in enumerate(shapes[0]):
        if dynamic:
            ctx.set_output_dynamic(i)
        else:
            ctx.set_output_shape(i, s)
    return StablehloCase(tuple(branches), dynamic)


# ----------------------------------------------------------------------------------------------------------
# RNG_BIT_GENERATOR
# ----------------------------------------------------------------------------------------------------------

_M32 = np.uint64(0xFFFFFFFF)


def _threefry2x32(k0, k1, c0, c1):
    """Threefry-2x32 (5 x 4 rounds) on uint64 arrays holding uint32 values (tflite/kernels/rng_util.cc)."""
    k2 = k0 ^ k1 ^ np.uint64(0x1BD11BDA)
    x0, x1 = (c0 + k0) & _M32, (c1 + k1) & _M32
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    for r, ks0, ks1, b in ((0, k1, k2, 1), (1, k2, k0, 2), (0, k0, k1, 3), (1, k1, k2, 4), (0, k2, k0, 5)):
        for rot in rotations[r]:
            x0 = (x0 + x1) & _M32
            x1 = ((x1 << np.uint64(rot)) & _M32) | (x1 >> np.uint64(32 - rot))
            x1 ^= x0
        x0 = (x0 + ks0) & _M32
        x1 = (x1 + ks1 + np.uint64(b)) & _M32
    return [x0, x1]


@dataclass(frozen=True, eq=False)
class RngBitGenerator:
    threefry: bool
    n_words: int  # uint32 words of output

    def __call__(self, inputs, outputs):
        s = inputs[0].view(np.uint32).astype(np.uint64)
        k0, k1 = s[0], s[1]
        width = 2 if self.threefry else 4
        blocks = -(-self.n_words // width)
        j = np.arange(blocks, dtype=np.uint64)
        # the counter's low word increments per block, carrying into the next word when it wraps to 0
        low = s[2] + j
        c0, c1 = low & _M32, (s[3] + (low >> np.uint64(32))) & _M32
        if self.threefry:
            words = _threefry2x32(k0, k1, c0, c1)
        else:
            c2 = s[4] if s.size == 6 else k0
            c3 = s[5] if s.size == 6 else k1
            words = philox4x32(k0, k1, c0, c1, np.full_like(c0, c2), np.full_like(c0, c3))
        stream = np.stack(words, axis=-1).reshape(-1)[: self.n_words].astype(np.uint32)
        outputs[1].reshape(-1).view(np.uint32)[...] = stream
        end = s[2] + np.uint64(blocks)
        state = inputs[0].copy() if not self.threefry else np.zeros_like(inputs[0])
        st32 = state.view(np.uint32)
        st32[:4] = [k0, k1, end & _M32, (s[3] + (end >> np.uint64(32))) & _M32]
        outputs[0][...] = state


@register(B.STABLEHLO_RNG_BIT_GENERATOR)
def prepare_rng_bit_generator(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 2)
    state, key_out, out = ctx.input(0), ctx.outputs[0], ctx.outputs[1]
    ctx.check(state.dtype == np.dtype(np.uint64) and len(state.shape) == 1, "initial state must be 1-D uint64")
    ctx.check(key_out.dtype == np.dtype(np.uint64), "output state must be uint64")
    ctx.check(
        out.dtype in (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64)),
        f"Unsupported output data type: {out.dtype}",
    )
    algorithm = int(ctx.options.algorithm)
    ctx.check(algorithm in (0, 1, 2), f"Unknown RNG algorithm: {algorithm}")
    if algorithm == 2:
        ctx.check(state.shape[0] == 2, "Threefry needs a state of 2 uint64")
    else:
        ctx.check(state.shape[0] in (2, 3), "Philox needs a state of 2 or 3 uint64")
    shape = tuple(out.shape)
    ctx.check(all(n >= 0 for n in shape), "the output shape must be static")
    ctx.set_output_shape(0, state.shape)
    ctx.set_output_shape(1, shape)
    n = int(np.prod(shape)) * (out.dtype.itemsize // 4)
    return RngBitGenerator(algorithm == 2, n)
