"""Slices read as views, fused at prepare: a consumer that reads a strided view as cheaply as a copy takes its input
straight from the slice's source, and the slicing steps go when nobody else reads their outputs.

Streaming models (e.g. microWakeWord's MixConv blocks) split their ring buffer's channels (SPLIT_V) and slice the
last frames of each part (STRIDED_SLICE) for a depthwise conv over the whole window:

    c = CONCATENATION(ring, new);  a, b = SPLIT_V(c);  a5 = STRIDED_SLICE(a);  y = DEPTHWISE_CONV_2D(a5, ...)

Each slicing step copies a few hundred bytes for about a microsecond. :func:`fuse_slice_views` composes the
chain's basic slices into one index on ``c`` (checked at prepare against the chain on an index array) and gives
the consumer a prepared op that reads ``c[index]`` (``DepthwiseConvWholeFolded.reading``,
``ConvQuantizedFoldedRows.reading``: their first numpy call reads the view as it read the copy, so the values are
identical). A slicing step none of whose outputs is read
any more is dropped.

A consumer offering ``reading_operands(indices)`` (float32 ADD / SUB / MUL / DIV: elementwise.Arithmetic, becoming
ArithmeticViews, which fuse_feeding turns into activations.ArithmeticThenActivation with the same views) reads
either or both of its two inputs so, each view made once at bind (a GRU's gates in a WHILE body: two
FULLY_CONNECTED -> SPLIT groups per iteration, both splits dropped). Each view is checked to have the copy's
shape, so a broadcasting consumer keeps its semantics, and the elementwise ufunc gives the same bits on it.

Conditions: the consumer's prepared op offers ``reading`` (the kernels known to read input 0 only through numpy
calls that accept any strides) or ``reading_operands`` (float32 Arithmetic only); the sliced tensors are read by no
other step and are not subgraph outputs; the slicing steps are StridedSliceDirect or Split (basic slices with
positive steps, no shape change beyond the slice). The fused step names the source as its input, so the arena
planner keeps the source alive until the consumer has run (tensors are written once, by their producer: nothing else
writes the source in between). The interpreter does not fuse when it must keep every tensor
(experimental_preserve_all_tensors) or runs its dynamic path.

The other direction, :func:`fuse_concat_writes`: a CONCATENATION all of whose inputs come from producers that
can store their result into a view (``DepthwiseConvWholeFolded.writing``: its small epilogue assigns
``out[...] = v``, which stores the same values into a view of the concatenation's output as into its own
tensor) is dropped, each producer storing into its slice (microWakeWord's MixConv blocks concatenate two
depthwise outputs). Conditions: each input is read by the concatenation only, is not a subgraph output and has
one producer with one output; the producers then name the concatenation's output as theirs, so the arena
planner keeps it alive from the first of them on.

:func:`fuse_feeding`: a step offering ``feeding`` (``DepthwiseConvWholeFolded``; the folded quantized
FULLY_CONNECTED ops and ``FullyConnectedChain``; float ``Arithmetic`` into a LOGISTIC / TANH, see
activations.ArithmeticThenActivation) whose one output only the next layer's step reads (a
ConvQuantizedFoldedRows, a folded FULLY_CONNECTED; its other inputs constants) becomes one step with it at the
producer's place, the producer's values stored straight into the consumer's GEMM rows (the bound is stated and
checked by ``feeding``); the intermediate tensor is no longer written. A fused step is offered its own reader in
turn, so a stack of dense layers becomes one step. Conditions: the tensor is read by that step
only, as its input 0, and is not a subgraph output.

:func:`fuse_sibling_windows`: two adjacent steps offering ``merging`` (MixConv's two depthwise kernels, reading
windows of one tensor and storing into adjacent channels of one output once the fusions above ran) become one
(the bound and conditions: ``DepthwiseConvWholeFolded.merging``), which fuse_feeding can then feed into the next
pointwise conv's rows.

:func:`fuse_reshape_stores`: a RESHAPE / SQUEEZE / EXPAND_DIMS copy whose input comes from an op of STORE_INTO
(QUANTIZE from float, a RESHAPE copy, the folded CONV_2D over GEMM rows: ops that write their output only
through assignments, ``out=`` arguments and reshapes, all views on a C-contiguous view) is dropped, the producer
storing into the copy's output viewed with its own shape (StoreInto). Conditions: the input is read by the
copy only, is not a subgraph output and has one producer with one output.

This module registers no op; ops/fusion.py runs ``fuse_slice_views``, ``fuse_concat_writes``,
``fuse_sibling_windows``, ``fuse_feeding`` then ``fuse_reshape_stores`` on the prepared steps (and
ring_buffer.py's ``fuse_ring_writes``, which uses StoreInto too).
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass

import numpy as np

from .common import clip_ufunc, dot_impl, flat_views, reshape_view
from .conv.conv2d_quantized import ConvQuantizedFoldedRows, ConvQuantizedFoldedRowsRing, ConvQuantizedFoldedRowsView
from .conv.requant import SmallFoldedEpilogue, SmallLateZeroPointEpilogue
from .movement import Concatenation
from .quantize import QuantizeFloat, QuantizeFloatStore
from .shape import CopyReshaped
from .slicing import Split, StridedSliceDirect


def _slicing_index(op, node, t: int) -> tuple | None:
    """The basic index by which the slicing step (node, op) makes its output ``t`` from its source, or None."""
    if type(op) is StridedSliceDirect:
        return op.index if node.operator.outputs[0] == t else None
    if type(op) is Split:
        return op.index[list(node.operator.outputs).index(t)]
    return None


def compose(shape: tuple, first: tuple, second: tuple) -> tuple | None:
    """One tuple of slices equal to ``x[first][second]`` for ``x`` of ``shape`` (both basic slices, positive
    steps), or None when the two cannot be composed so (the result is checked on an index array)."""
    rank = len(shape)

    def full(index):
        if any(not isinstance(s, slice) for s in index) or len(index) > rank:
            return None
        return tuple(index) + (slice(None),) * (rank - len(index))

    a, b = full(first), full(second)
    if a is None or b is None:
        return None
    out = []
    for n, s1, s2 in zip(shape, a, b):
        r = range(n)[s1][s2]
        if r.step <= 0:
            return None
        out.append(slice(r.start, r.stop, r.step) if len(r) else slice(0, 0))
    index = tuple(out)
    probe = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    chained = probe[a][b]
    composed = probe[index]
    if chained.shape != composed.shape or not np.array_equal(chained, composed):
        return None
    return index


def producers_readers(steps: list) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Per tensor: the step that writes it, and the steps that read it (in order)."""
    producer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for k, (node, _) in enumerate(steps):
        for o in node.operator.outputs:
            if o >= 0:
                producer[o] = k
        for i in node.operator.inputs:
            if i >= 0:
                readers.setdefault(i, []).append(k)
    return producer, readers


def fuse_slice_views(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with slice chains read as views: input 0 of
    a consumer offering ``reading(index)``, either input of one offering ``reading_operands(indices)``."""
    producer, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps = list(steps)
    changed = False
    for k, (node, op) in enumerate(steps):
        ins = tuple(node.operator.inputs)
        if hasattr(op, "reading") and ins and ins[0] >= 0:
            src, index = _view_source(ins[0], steps, producer, readers, keep, infos)
            fused = None if index is None else op.reading(index)
            sources = (src, *ins[1:])
        elif hasattr(op, "reading_operands") and len(ins) == 2:
            found = [_view_source(i, steps, producer, readers, keep, infos) for i in ins]
            indices = tuple(index for _, index in found)
            fused = None if indices == (None, None) else op.reading_operands(indices)
            sources = tuple(src for src, _ in found)
        else:
            continue
        if fused is None:
            continue
        operator = dataclasses.replace(node.operator, inputs=sources)
        new_steps[k] = (dataclasses.replace(node, operator=operator), fused)
        changed = True
    if not changed:
        return steps
    return _drop_unread(new_steps, keep, set(readers))


def _view_source(t: int, steps: list, producer: dict, readers: dict, keep: set, infos: list) -> tuple:
    """``(source, index)``: tensor ``t`` is ``source[index]``, walking back through single-reader slicing steps
    (the index checked to give ``t``'s shape), or ``(t, None)``."""
    src, index = t, None
    while src >= 0:
        j = producer.get(src)
        if j is None or src in keep or len(readers.get(src, [])) != 1:
            break
        pnode, pop = steps[j]
        step_index = _slicing_index(pop, pnode, src)
        base = pnode.operator.inputs[pop.data if type(pop) is Split else 0] if step_index is not None else -1
        if base < 0 or infos[base].dynamic or infos[base].is_variable:
            break
        shape = tuple(infos[base].shape)
        composed = step_index if index is None else compose(shape, step_index, index)
        if composed is None:
            break
        src, index = base, composed
    if index is None or np.broadcast_to(np.uint8(0), infos[src].shape)[index].shape != tuple(infos[t].shape):
        return t, None
    return src, index


def _drop_unread(steps: list, keep: set, read_before: set) -> list:
    """Drop the slicing steps that the fusion left without a reader: every output was read before, none is read
    now or is a subgraph output (slicing steps whose outputs nobody read in the first place stay)."""
    while True:
        read = {i for node, _ in steps for i in node.operator.inputs if i >= 0}
        dead = {
            k
            for k, (node, op) in enumerate(steps)
            if type(op) in (Split, StridedSliceDirect)
            and all(o in read_before for o in node.operator.outputs if o >= 0)
            and not any(o in read or o in keep for o in node.operator.outputs if o >= 0)
        }
        if not dead:
            return steps
        steps = [s for k, s in enumerate(steps) if k not in dead]


def fuse_concat_writes(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each CONCATENATION whose inputs all come
    from producers that can store into a view (``writing``) dropped, the producers storing into its slices."""
    producer, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps: list = list(steps)
    for j, (node, op) in enumerate(steps):
        ins = list(node.operator.inputs)
        if type(op) is not Concatenation or len(set(ins)) != len(ins) or any(i < 0 for i in ins):
            continue
        c = node.operator.outputs[0]
        if infos[c].dynamic:
            continue
        rank = len(infos[c].shape)
        bounds = np.cumsum([0] + [infos[i].shape[op.axis] for i in ins]).tolist()
        fused = {}
        for i, a, b in zip(ins, bounds, bounds[1:]):
            k = producer.get(i)
            if k is None or new_steps[k] is None or i in keep or readers.get(i) != [j] or infos[i].dynamic:
                break
            pnode, pop = new_steps[k]
            if len(pnode.operator.outputs) != 1 or not hasattr(pop, "writing"):
                break
            written = pop.writing((slice(None),) * op.axis + (slice(a, b),) + (slice(None),) * (rank - 1 - op.axis))
            if written is None:
                break
            operator = dataclasses.replace(pnode.operator, outputs=(c,))
            fused[k] = (dataclasses.replace(pnode, operator=operator), written)
        else:  # every input's producer stores into its slice: the concatenation step goes
            for k, step in fused.items():
                new_steps[k] = step
            new_steps[j] = None
    if all(s is not None for s in new_steps):
        return steps
    return [s for s in new_steps if s is not None]


def fuse_feeding(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each producer that can feed its only
    reader's rows (``feeding``) fused with that reader into one step (module docstring)."""
    _, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps: list = list(steps)
    for k in range(len(steps)):
        while new_steps[k] is not None and _feed_next(k, new_steps, readers, keep, infos):
            pass  # the fused step may feed its own reader in turn (a chain of layers)
    if all(s is not None for s in new_steps):
        return steps
    return [s for s in new_steps if s is not None]


def _feed_next(k: int, new_steps: list, readers: dict, keep: set, infos: list) -> bool:
    """Fuse step ``k`` with the only reader of its output when it offers ``feeding`` and the conditions of the
    module docstring hold; whether it did."""
    node, op = new_steps[k]
    outs = [o for o in node.operator.outputs if o >= 0]
    if not hasattr(op, "feeding") or len(outs) != 1:
        return False
    t = outs[0]
    ks = readers.get(t, [])
    if t in keep or len(ks) != 1 or ks[0] <= k or new_steps[ks[0]] is None or infos[t].dynamic:
        return False
    cnode, cop = new_steps[ks[0]]
    ins = list(cnode.operator.inputs)
    if ins[0] != t or t in ins[1:] or not all(i < 0 or infos[i].is_constant for i in ins[1:]):
        return False
    fused = op.feeding(cop)
    if fused is None:
        return False
    operator = dataclasses.replace(node.operator, outputs=tuple(cnode.operator.outputs))
    new_steps[k] = (dataclasses.replace(node, operator=operator), fused)
    new_steps[ks[0]] = None
    return True


def fuse_sibling_windows(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each pair of adjacent steps offering
    ``merging`` (``DepthwiseConvWholeFolded``: a MixConv block's two depthwise kernels, which after
    fuse_slice_views and fuse_concat_writes read windows of one tensor and store into one output) as one step
    at the first one's place (the merged op's exactness and conditions: ``merging``). Nothing runs between the
    two, both read the same tensor and write the same one, so the merged step sees the same values."""
    new_steps: list = list(steps)
    for k in range(len(steps) - 1):
        if new_steps[k] is None:
            continue
        (a_node, a_op), (b_node, b_op) = new_steps[k], steps[k + 1]
        a_ins, b_ins = a_node.operator.inputs, b_node.operator.inputs
        outs = list(a_node.operator.outputs)
        if not (hasattr(a_op, "merging") and hasattr(b_op, "merging")) or not a_ins or not b_ins:
            continue
        if a_ins[0] != b_ins[0] or a_ins[0] < 0 or len(outs) != 1 or outs != list(b_node.operator.outputs):
            continue
        channels = infos[outs[0]].shape[-1]
        merged = a_op.merging(b_op, channels) or b_op.merging(a_op, channels)
        if merged is not None:
            new_steps[k], new_steps[k + 1] = (a_node, merged), None
    if all(s is not None for s in new_steps):
        return steps
    return [s for s in new_steps if s is not None]


@dataclass(frozen=True, eq=False)
class StoreInto:
    """A prepared op of STORE_INTO storing its one output into the C-contiguous view ``target[index]`` (reshaped
    to ``shape``, the op's own output shape, when set; the view made when the arrays are bound): those ops write their
    output only through ``out[...] = v``, ``np.copyto`` / ufunc ``out=`` arguments and reshapes of it, which on a
    C-contiguous view are views themselves, so the view receives the values the tensor would have."""

    op: object
    index: tuple
    shape: tuple | None = None
    into: np.ndarray | None = None  # a persistent ring buffer's array, stored into instead of the output tensor

    def bind(self, inputs, outputs) -> None:
        """The view ``target[index]`` of the bound output array (ops/fusion.bind_steps), or of ``into``, and the
        straight-line plan of the wrapped op when it has one (``store_plan``)."""
        view = (outputs[0] if self.into is None else self.into)[self.index]
        target = view if self.shape is None else view.reshape(self.shape)
        object.__setattr__(self, "_target", (target,))
        bind = getattr(self.op, "bind", None)  # the wrapped op's own views, of the view it writes
        if bind is not None:
            bind(inputs, (target,))
        object.__setattr__(self, "_plan", store_plan(self.op, inputs, target))

    def __call__(self, inputs, outputs):
        plan = self._plan
        if plan is None:
            self.op(inputs, self._target)
        else:
            plan[0](*plan[1])

    @property
    def copies_input_unchanged(self) -> bool:
        """A reshape copy stored whole into a second reshape's output (``fuse_reshape_stores`` on a chain of RESHAPE /
        SQUEEZE / EXPAND_DIMS) still copies its input's bytes unchanged, so the arena may share them
        (ops/common.shares_input_bytes): a chain of reshapes then copies nothing, as LiteRT's planner shares both."""
        return type(self.op) is CopyReshaped and self.index == (Ellipsis,) and self.into is None

    def writing(self, index: tuple) -> StoreInto | None:
        """This op storing into ``target[index]`` instead of into its whole target (C-contiguous views only)."""
        return dataclasses.replace(self, index=index) if self.index == (Ellipsis,) else None

    def reading_ring(self, ring: np.ndarray, head: np.ndarray, kept: np.ndarray) -> StoreInto | None:
        """This op with its wrapped op reading a persistent ring buffer's array (its ``reading_ring``), or None."""
        reading = getattr(self.op, "reading_ring", None)
        op = reading(ring, head, kept) if reading is not None else None
        return None if op is None else dataclasses.replace(self, op=op)

    def writing_into(self, array: np.ndarray) -> StoreInto:
        """This op storing into ``array[index]`` (an array of the target's shape: a persistent ring buffer's,
        ops/ring_buffer.py's RingBufferInPlace) instead of into the output tensor."""
        return dataclasses.replace(self, into=array)


_add, _floor, _setitem = np.add, np.floor, operator.setitem


def store_plan(op, inputs, target: np.ndarray) -> tuple | None:
    """``(function, arguments)`` StoreInto calls instead of ``op`` on ``inputs`` into ``target``, made at bind:
    ``target[...] = source`` for a RESHAPE's copy whose bound input reshapes to the target's shape as a view
    (CopyReshaped's one np.copyto, the same copy by numpy's PyArray_AssignArray without np.copyto's dispatch:
    about 0.15 us less; the view sees the input's new values on every invoke);
    QuantizeFloatStore's ``quantize_store`` on the bound input of its prepared shape (``store_call``);
    ``run_rows_ring`` for a ConvQuantizedFoldedRows (its View or its Ring: a streaming model's first conv) with a
    ReLU-like small epilogue (SmallFoldedEpilogue or SmallLateZeroPointEpilogue without sign term), reading the
    bound input (or its view ``x[index]``, or the ring's window); else None (``op`` is called)."""
    if type(op) is CopyReshaped:  # the copy as ``target[...] = source`` (np.copyto's, without its dispatch)
        try:
            source = reshape_view(inputs[0], target.shape)
        except ValueError:
            return None
        target, source = flat_views(target, source)  # 1-d views when they can be
        return _setitem, (target, Ellipsis, source)
    if type(op) is QuantizeFloatStore:  # its own straight-line code, on the bound input of the prepared shape
        return op.store_call(inputs[0], target) if inputs[0].shape == op.shape else None
    e = getattr(op, "epilogue", None)
    if type(e) not in (SmallFoldedEpilogue, SmallLateZeroPointEpilogue) or e.half is not None:
        return None
    if type(op) is ConvQuantizedFoldedRowsRing:
        window, head, kept = op.window, op.head, op.kept
    elif type(op) in (ConvQuantizedFoldedRows, ConvQuantizedFoldedRowsView):  # the bound input (or its view)
        window, head, kept = inputs[0][getattr(op, "index", (Ellipsis,))], None, None
    else:
        return None
    product = dot_impl if op.product is np.dot else op.product  # the same product, without the dispatch
    a_input, window = flat_views(op.a_input, window)  # 1-d views when they can be (common.flat_views)
    lo, hi, late = e.lo, e.hi, getattr(e, "late_zp", None)
    if late is None and np.ndim(lo) == np.ndim(hi) == 0:  # SmallFoldedEpilogue: 0-d bounds
        acc, target = flat_views(op.acc, target)
    elif late is None:  # output-shaped bounds (no constructor makes them today): flattened with the rest, or not
        acc, lo, hi, target = flat_views(op.acc, lo, hi, target)
    else:  # SmallLateZeroPointEpilogue: every operand has the output's shape
        acc, lo, hi, late, target = flat_views(op.acc, lo, hi, late, target)
    return run_rows_ring, ((a_input, window, head, kept, product, op.a, op.weights, op.acc_rows,
                            acc, lo, hi, late, target),)  # fmt: skip


def run_rows_ring(plan: tuple) -> None:
    """ConvQuantizedFoldedRows's numpy calls (ConvQuantizedFoldedRowsView's, ConvQuantizedFoldedRowsRing's with
    its ring's shift) then its small epilogue's (without sign term), the same calls in the same order on the same
    arrays (so the same values), without their attribute lookups and nested calls (``store_plan``); its two
    np.copyto calls as assignments ``x[...] = y``, the same copies (numpy's PyArray_AssignArray for both; the
    int8 -> float64 conversion of exact integers, and the ring's 1-d overlapping shift in place, as a memmove)
    without np.copyto's dispatch and keyword parsing; np.dot as its C implementation without the array-function
    dispatch (common.dot_impl, the same function)."""
    a_input, window, head, kept, product, a, weights, acc_rows, acc, lo, hi, late_zp, out = plan
    a_input[...] = window  # np.copyto's conversion (unsafe casting: exact integers) without its dispatch
    if head is not None:  # the window is read: shift the ring (the variable's value)
        head[...] = kept  # a 1-d overlapping copy: a memmove, as np.copyto's
    product(a, weights, out=acc_rows)
    clip_ufunc(acc, lo, hi, out=acc)
    _floor(acc, out=acc)
    if late_zp is not None:  # SmallLateZeroPointEpilogue
        _add(acc, late_zp, out=acc)
    out[...] = acc


#: The prepared ops StoreInto may wrap (their outputs written as its docstring says): a RESHAPE's copy, the folded
#: int8 CONV_2D over GEMM rows (a streaming model's first layer), QUANTIZE from float.
STORE_INTO = (
    CopyReshaped,
    ConvQuantizedFoldedRows,
    ConvQuantizedFoldedRowsView,
    ConvQuantizedFoldedRowsRing,
    QuantizeFloat,
    QuantizeFloatStore,
)


def fuse_reshape_stores(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each RESHAPE / SQUEEZE / EXPAND_DIMS
    copy (CopyReshaped) whose input comes from an op of STORE_INTO dropped, that op storing its values straight
    into the copy's output viewed with its own shape (StoreInto: the same values in the same order, a C-order
    reshape). Conditions: the input is read by the copy only, is not a subgraph output and has one producer with
    one output; the producer then names the copy's output as its own."""
    producer, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps: list = list(steps)
    for j, (node, op) in enumerate(steps):
        if type(op) is not CopyReshaped or len(node.operator.inputs) < 1:
            continue
        t, o = node.operator.inputs[0], node.operator.outputs[0]
        k = producer.get(t)
        if k is None or k >= j or new_steps[k] is None or t in keep or readers.get(t) != [j]:
            continue
        pnode, pop = new_steps[k]
        if type(pop) not in STORE_INTO or len(pnode.operator.outputs) != 1 or infos[t].dynamic or infos[o].dynamic:
            continue
        operator = dataclasses.replace(pnode.operator, outputs=(o,))
        new_steps[k] = (
            dataclasses.replace(pnode, operator=operator),
            StoreInto(pop, (Ellipsis,), tuple(infos[t].shape)),
        )
        new_steps[j] = None
    if all(s is not None for s in new_steps):
        return steps
    return [s for s in new_steps if s is not None]
