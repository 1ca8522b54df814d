"""The ring buffer of streaming models, fused at prepare into one step.

Streaming models (e.g. microWakeWord) keep the last frames of each layer's input in a resource variable:

    r = READ_VARIABLE(h);  c = CONCATENATION(r, new, ...);  s = STRIDED_SLICE(c, ...);  ASSIGN_VARIABLE(h, s)

with ``c`` feeding the layer. :func:`fuse_ring_buffers` replaces such a group by one step at the
CONCATENATION's place that concatenates the variable's value itself (no copy into ``r``) and slices ``c``
straight into the variable when it already has the slice's shape and type (no copy through ``s``): the same
kernels (the prepared CONCATENATION and STRIDED_SLICE ops) on the same values, so the results are identical.

Conditions (checked on the prepared steps): ``r`` and ``s`` are read by no other node and are not subgraph
outputs; the handles are constants with the same key (VAR_HANDLE is folded at prepare); no other node between
the READ_VARIABLE and the ASSIGN_VARIABLE reads or assigns that variable (moving the assignment to the
CONCATENATION's place changes nothing then); static shapes. The interpreter does not fuse when it must keep
every tensor (experimental_preserve_all_tensors) or runs its dynamic path.

:func:`fuse_ring_writes` (run after the other fusions): the producer of the one new frame stores it straight into
the concatenation's tail when it can (``writing``), and the step only copies the variable into the head
(RingBufferShiftTail). Then :func:`fuse_ring_in_place`: when the concatenation's one reader is a streaming block's
depthwise (``reading_ring``) and the producer can store into another array (``writing_into``), the concatenation
lives in an array of the step's own, kept across invokes, whose head is the variable's value; the reader shifts
it after reading its window, and the step copies nothing (RingBufferInPlace). The in-place rings' steps, which
then only check that each variable's value is still its ring's head, are merged into one RingBufferChecks step
(``group_ring_checks``) where no step between may touch their variables.

This module lives with the kernels it fuses (it recognizes their prepared ops by type and builds a prepared op
of its own) and registers no op; ops/fusion.py runs ``fuse_ring_buffers`` and ``fuse_ring_writes`` on the
prepared steps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import FAILED_NODE
from .movement import Concatenation
from .resource import AssignVariable, ReadVariable, assign_variable
from .slice_views import STORE_INTO, StoreInto, producers_readers
from .slicing import StridedSlice


@dataclass(frozen=True, eq=False)
class RingBufferStep:
    """READ_VARIABLE -> CONCATENATION -> STRIDED_SLICE -> ASSIGN_VARIABLE as one step. Inputs: the handle, the
    concatenation's other inputs, the slice's index tensors; outputs: the concatenation, the slice."""

    read: ReadVariable
    concat: object  # the CONCATENATION's prepared op
    slice: StridedSlice
    n_concat: int  # the concatenation's inputs after the variable
    read_shape: tuple  # the READ_VARIABLE output's declared shape

    def __call__(self, inputs, outputs):
        handle = inputs[0][()]
        resources = self.read.resources
        value = self.read.value(handle)
        if value.shape != self.read_shape:
            raise RuntimeError(
                f"variable {handle} holds shape {list(value.shape)}, the model reads {list(self.read_shape)}"
            )
        c, s = outputs
        self.concat([value, *inputs[1 : 1 + self.n_concat]], [c])
        if value.shape == s.shape and value.dtype == s.dtype:
            self.slice([c, *inputs[1 + self.n_concat :]], [value])  # c is its own buffer: no aliasing
        else:
            self.slice([c, *inputs[1 + self.n_concat :]], [s])
            assign_variable(resources, handle, s)


@dataclass(frozen=True, eq=False)
class RingBufferShift(RingBufferStep):
    """RingBufferStep when the concatenation is a plain np.concatenate and the slice, taken on the
    concatenation's own shape, has the variable's shape and type (the usual shift of a streaming layer's
    window): two numpy calls, ``concatenate(value, new..., out=c)`` then ``copyto(value, c[index])``, with the
    handle's key and the index made at prepare (the view ``c[index]`` when the arrays are bound: ``bind``). The
    values are those of RingBufferStep (the same concatenation, the same slice, the same copy into the variable).
    A variable whose value has another shape or type than the model reads takes RingBufferStep's path, which
    raises its error."""

    key: object  # the constant handle's key
    axis: int
    index: tuple  # the slice on the concatenation's shape

    def bind(self, inputs, outputs) -> None:
        """The view ``c[index]`` of the bound concatenation array (ops/fusion.bind_steps)."""
        object.__setattr__(self, "_kept", outputs[0][self.index])

    def __call__(self, inputs, outputs):
        var = self.read.resources.get(self.key)
        value = None if var is None else var.value
        if value is None or value.shape != self.read_shape or value.dtype != self.read.dtype:
            return RingBufferStep.__call__(self, inputs, outputs)
        np.concatenate((value, *inputs[1 : 1 + self.n_concat]), axis=self.axis, out=outputs[0])
        np.copyto(value, self._kept)  # c is its own buffer: no aliasing


@dataclass(frozen=True, eq=False)
class RingBufferShiftTail(RingBufferShift):
    """RingBufferShift whose one new frame its producer already stored into the concatenation's tail ``c[tail]``
    (``fuse_ring_writes``): the step copies the variable into the head ``c[head]`` and shifts it, one plain copy
    instead of the concatenation. ``c`` holds the same values as the concatenation makes (the tail written
    earlier in the invoke by the producer, which nothing else reads or writes in between), so the state and
    the readers of ``c`` see the same values. A variable of another shape or type than the model reads takes
    RingBufferStep's path with the tail's frame as its input (which raises its error or converts as it does)."""

    head: tuple = ()  # c[head]: the variable's rows
    tail: tuple = ()  # c[tail]: the new frame, stored by its producer

    def bind(self, inputs, outputs) -> None:
        super().bind(inputs, outputs)
        object.__setattr__(self, "_head", outputs[0][self.head])

    def __call__(self, inputs, outputs):
        var = self.read.resources.get(self.key)
        value = None if var is None else var.value
        if value is None or value.shape != self.read_shape or value.dtype != self.read.dtype:
            new = outputs[0][self.tail].copy()
            return RingBufferStep.__call__(self, [inputs[0], new, *inputs[1:]], outputs)
        np.copyto(self._head, value)
        np.copyto(value, self._kept)  # c is its own buffer: no aliasing


@dataclass(frozen=True, eq=False)
class RingBufferInPlace(RingBufferShiftTail):
    """RingBufferShiftTail whose concatenation lives in ``ring``, an array of the concatenation's shape owned by
    this step and kept across invokes, instead of the arena tensor (``fuse_ring_in_place``): the producer stores
    its frame into ``ring[tail]``, the one reader (a DepthwiseWholeIntoRows step, ``reading_ring``) reads its
    window of ``ring`` and then shifts it, ``ring[head] = ring[index]`` (the slice the ASSIGN_VARIABLE stores),
    and the variable's value *is* the view ``ring[head]``. In the steady state this step does nothing: no copy
    instead of two (the reader's shift is the one copy left). The variable thus gets its new value at the
    reader's shift, later than ASSIGN_VARIABLE gave it: ``fuse_ring_in_place`` refuses a ring when a step between
    may read or assign the variable (``_may_touch``).

    Invariant: at this step's place ``ring[head]`` holds the variable's value and ``ring[tail]`` the new frame,
    so ``ring`` holds the concatenation's values; after the reader's shift ``ring[head]`` holds the slice, which
    is what ASSIGN_VARIABLE would give the variable. When the variable's value is another array (the first
    invoke, after the init subgraph's ASSIGN_VARIABLE, or a new prepare), it is checked as RingBufferShift
    checks it (else READ_VARIABLE's errors), copied into ``ring[head]``, and the view becomes the value
    (ResourceVariable.assign writes a value of the same shape and type into it in place: later assignments
    keep the invariant). Conditions (``fuse_ring_in_place``): the concatenation is read only by that reader, is
    not a subgraph output, and only the producer and this step write it."""

    ring: np.ndarray | None = None

    def bind(self, inputs, outputs) -> None:
        object.__setattr__(self, "_ring_head", self.ring[self.head])

    def __call__(self, inputs, outputs):
        self.check()

    def check(self) -> None:
        """Make the variable's value the view ``ring[head]`` (see the class docstring); the handle is the constant
        ``key``."""
        var = self.read.resources.get(self.key)
        value = None if var is None else var.value
        head = self._ring_head
        if value is head:
            return
        if value is None or value.shape != self.read_shape or value.dtype != self.read.dtype:
            value = self.read.value(self.key)  # READ_VARIABLE's errors: never assigned, another type
            raise RuntimeError(
                f"variable {self.key} holds shape {list(value.shape)}, the model reads {list(self.read_shape)}"
            )
        np.copyto(head, value)
        var.value = head


@dataclass(frozen=True, eq=False)
class RingBufferChecks:
    """The checks of several RingBufferInPlace steps as one step at the first one's place (``group_ring_checks``):
    in the steady state each ring's step only tests that its variable's value is still its ``ring[head]``, and a
    step of its own costs more inside an invoke than the test. Here one loop tests every ring (an identity test
    each, on the variables the last full check found); when one fails, or before any full check (the first invoke,
    after the init subgraph's ASSIGN_VARIABLE, a new prepare, an assignment of another shape or type), every ring
    runs its own ``check`` in order, as their steps would. An assignment of the value's shape and type writes into
    the ring's head in place (ResourceVariable.assign) and keeps the invariant.

    Moving a ring's check earlier changes nothing when no step between its new and its old place may read or
    assign its variable (``_may_touch``; the check writes only ``ring[head]``, which nothing but the ring's reader,
    after the ring's place, reads or writes). ``members``: the rings' original (node, op) steps, for the tests and
    tools (each node's outputs name the slice ASSIGN_VARIABLE stored). An error names the failing ring's node."""

    members: tuple  # ((node, RingBufferInPlace), ...) in step order

    def bind(self, inputs, outputs) -> None:
        rings = tuple(op for _, op in self.members)
        for op in rings:
            op.bind(None, None)
        object.__setattr__(self, "_rings", rings)
        object.__setattr__(self, "_checked", ())  # ((variable, its ring's head), ...) after a full check

    def __call__(self, inputs, outputs):
        for var, head in self._checked:
            if var.value is not head:
                break
        else:
            if self._checked:
                return
        for node, op in self.members:
            try:
                op.check()
            except Exception as e:
                setattr(e, FAILED_NODE, node)  # the error names this ring's node, as its own step would
                raise
        # every variable now exists and its value is its ring's head; the resources dict never replaces an entry
        # (ops/resource.py), so the steady state tests the variables themselves, without the dict lookups
        resources = self._rings[0].read.resources
        object.__setattr__(self, "_checked", tuple((resources[op.key], op._ring_head) for op in self._rings))


def group_ring_checks(steps: list, infos: list) -> list:
    """``steps`` with the RingBufferInPlace steps after the first one whose variable no step in between may touch
    merged into one RingBufferChecks step at the first one's place (see there); a ring that may not join starts
    the next group. Groups of one stay RingBufferInPlace steps."""
    groups: list[list[int]] = []
    for j, (_, op) in enumerate(steps):
        if type(op) is not RingBufferInPlace:
            continue
        if groups and not any(_may_touch(infos, *steps[t], op.key) for t in range(groups[-1][0] + 1, j)):
            groups[-1].append(j)
        else:
            groups.append([j])
    merged: dict[int, tuple | None] = {}
    for group in groups:
        if len(group) < 2:
            continue
        members = tuple(steps[j] for j in group)
        # the first ring's node: the others' tensors keep the lifetimes their producers and readers give them (a
        # ring step writes neither its concatenation nor its slice: the planner need not keep them from here on)
        merged[group[0]] = (members[0][0], RingBufferChecks(members))
        merged.update((j, None) for j in group[1:])
    if not merged:
        return steps
    return [merged.get(k, s) for k, s in enumerate(steps) if merged.get(k, s) is not None]


def fuse_ring_in_place(steps: list, infos: list, outputs) -> list:
    """``steps`` with each RingBufferShiftTail whose frame's producer offers ``writing_into`` and whose
    concatenation's one reader offers ``reading_ring`` (a streaming block's depthwise) turned into a
    RingBufferInPlace (see there), the producer storing into the ring's array and the reader reading it."""
    _, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps = list(steps)
    for j, (node, op) in enumerate(steps):
        if type(op) is not RingBufferShiftTail:
            continue
        c = node.operator.outputs[0]
        writers = [k for k, (n, _) in enumerate(steps) if c in n.operator.outputs and k != j]
        rs = readers.get(c, [])
        if c in keep or infos[c].dynamic or len(writers) != 1 or writers[0] >= j or len(rs) != 1 or rs[0] <= j:
            continue
        (k,), (r,) = writers, rs
        pop, rop = new_steps[k][1], new_steps[r][1]
        if not hasattr(pop, "writing_into") or not hasattr(rop, "reading_ring"):
            continue
        if any(_may_touch(infos, *new_steps[t], op.key) for t in range(j + 1, r)):
            continue  # the variable gets its new value at the reader's shift: nothing between may see it
        if np.dtype(infos[c].dtype) != op.read.dtype:
            continue
        ring = np.zeros(tuple(infos[c].shape), op.read.dtype)
        head, kept = ring[op.head], ring[op.index]
        if head.flags.c_contiguous and kept.flags.c_contiguous:  # one block each: a 1-d overlapping copy is a
            head, kept = head.reshape(-1), kept.reshape(-1)  # memmove (a 4-d one goes through a temporary)
        reader = rop.reading_ring(ring, head, kept)
        if reader is None:
            continue
        new_steps[k] = (new_steps[k][0], pop.writing_into(ring))
        new_steps[r] = (new_steps[r][0], reader)
        fields = (getattr(op, f.name) for f in dataclasses.fields(RingBufferShiftTail))
        new_steps[j] = (node, RingBufferInPlace(*fields, ring))
    return group_ring_checks(new_steps, infos)


def _may_touch(infos, node, op, key) -> bool:
    """Whether step (node, op) may read or assign the variable ``key``: its own variable ops and ring steps, and
    any stateful kernel (control flow runs subgraphs that may; custom stateful ops)."""
    if isinstance(op, RingBufferShift):
        return op.key == key
    if isinstance(op, (ReadVariable, AssignVariable)):
        other = _handle_key(infos, node.operator.inputs[0])
        return other is None or other == key
    return node.kernel.stateful


def _writer(op, index: tuple, shape: tuple):
    """``op`` storing into ``target[index]`` for a target of ``shape``: its own ``writing``, a StoreInto for the
    ops of STORE_INTO, else None; StoreInto (whose ops may reshape their output) only when the view is
    C-contiguous."""
    contiguous = np.empty(shape, np.int8)[index].flags.c_contiguous
    if isinstance(op, StoreInto):
        return op.writing(index) if contiguous else None
    if hasattr(op, "writing"):
        return op.writing(index)
    return StoreInto(op, index) if type(op) in STORE_INTO and contiguous else None


def fuse_ring_writes(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each RingBufferShift whose one new
    frame comes from a step offering ``writing`` (``DepthwiseWholeIntoRows``: a streaming block's pointwise conv)
    or wrapped by StoreInto (a RESHAPE's copy, a streaming model's first conv, QUANTIZE) turned into a
    RingBufferShiftTail, the producer storing its frame into the concatenation's tail. Conditions:
    the frame is read by the ring step only, is not a subgraph output and has one producer with one output,
    earlier in the steps; the producer then names the concatenation as its output, so the arena planner keeps it
    alive from the producer on (as fuse_concat_writes does)."""
    producer, readers = producers_readers(steps)
    keep = set(outputs)
    new_steps = list(steps)
    for j, (node, op) in enumerate(steps):
        if type(op) is not RingBufferShift or op.n_concat != 1:
            continue
        t, c = node.operator.inputs[1], node.operator.outputs[0]
        k = producer.get(t)
        if k is None or k >= j or t in keep or readers.get(t) != [j] or infos[t].dynamic or infos[c].dynamic:
            continue
        pnode, pop = new_steps[k]
        rows = op.read_shape[op.axis]
        frame = tuple(infos[t].shape)
        shape = list(infos[c].shape)
        if len(pnode.operator.outputs) != 1 or len(frame) != len(shape):
            continue
        if frame[: op.axis] + frame[op.axis + 1 :] != tuple(shape[: op.axis] + shape[op.axis + 1 :]):
            continue
        before = (slice(None),) * op.axis
        after = (slice(None),) * (len(shape) - 1 - op.axis)
        tail = before + (slice(rows, rows + frame[op.axis]),) + after
        written = _writer(pop, tail, tuple(shape))
        if written is None:
            continue
        head = before + (slice(0, rows),) + after
        fields = (getattr(op, f.name) for f in dataclasses.fields(RingBufferShift))
        ring = RingBufferShiftTail(*fields, head, tail)
        inputs = [node.operator.inputs[0]] + list(node.operator.inputs[2:])
        new_steps[j] = (dataclasses.replace(node, operator=dataclasses.replace(node.operator, inputs=inputs)), ring)
        new_steps[k] = (dataclasses.replace(pnode, operator=dataclasses.replace(pnode.operator, outputs=(c,))), written)
    return fuse_ring_in_place(new_steps, infos, outputs)


def _shift(read, concat, slice_, n_concat: int, read_shape: tuple, key, c_shape: tuple, s_info) -> RingBufferStep:
    """RingBufferShift when its conditions hold (see there), else RingBufferStep."""
    if (
        type(concat) is Concatenation
        and isinstance(slice_, StridedSlice)  # StridedSlice or StridedSliceDirect: index on the input's shape
        and tuple(slice_.effective_shape) == c_shape
        and tuple(slice_.counts) == read_shape
        and tuple(s_info.shape) == read_shape
        and np.dtype(s_info.dtype) == read.dtype
    ):
        return RingBufferShift(read, concat, slice_, n_concat, read_shape, key, concat.axis, slice_.index)
    return RingBufferStep(read, concat, slice_, n_concat, read_shape)


def _handle_key(infos, i: int):
    data = infos[i].data
    if data is None or data.dtype != object or data.shape != ():
        return None
    return data[()]


def fuse_ring_buffers(steps: list, infos: list, outputs) -> list:
    """``steps``: the subgraph's (node, prepared op) list; returns it with each ring-buffer group fused."""
    readers: dict[int, list[int]] = {}
    for k, (node, _) in enumerate(steps):
        for i in node.operator.inputs:
            if i >= 0:
                readers.setdefault(i, []).append(k)
    keep = set(outputs)

    def only_reader(t: int, after: int):
        ks = readers.get(t, [])
        return ks[0] if len(ks) == 1 and ks[0] > after and t not in keep else None

    touches: dict[object, list[int]] = {}  # handle key -> steps reading or assigning it
    for k, (node, op) in enumerate(steps):
        if isinstance(op, (ReadVariable, AssignVariable)):
            key = _handle_key(infos, node.operator.inputs[0])
            touches.setdefault(key, []).append(k)
    fused: dict[int, tuple] = {}  # concat step -> fused (node, op); removed steps map to None
    for i, (node, op) in enumerate(steps):
        if not isinstance(op, ReadVariable) or i in fused:
            continue
        key = _handle_key(infos, node.operator.inputs[0])
        r = node.operator.outputs[0]
        j = only_reader(r, i) if key is not None else None
        if j is None or j in fused or steps[j][0].name != "CONCATENATION" or steps[j][0].operator.inputs[0] != r:
            continue
        c = steps[j][0].operator.outputs[0]
        slices = [
            k
            for k in readers.get(c, [])
            if steps[k][0].name == "STRIDED_SLICE"
            and k > j
            and isinstance(steps[k][1], StridedSlice)
            and steps[k][0].operator.inputs[0] == c
        ]
        for k in slices:
            s = steps[k][0].operator.outputs[0]
            m = only_reader(s, k)
            if m is None or not isinstance(steps[m][1], AssignVariable):
                continue
            assign = steps[m][0].operator
            if assign.inputs[1] != s or _handle_key(infos, assign.inputs[0]) != key:
                continue
            if any(t not in (i, m) for t in touches.get(key, []) if i <= t <= m) or infos[c].dynamic:
                continue
            concat_node, slice_node = steps[j][0], steps[k][0]
            ins = (
                [node.operator.inputs[0]] + list(concat_node.operator.inputs[1:]) + list(slice_node.operator.inputs[1:])
            )
            operator = dataclasses.replace(concat_node.operator, inputs=ins, outputs=[c, s])
            step = _shift(
                op,
                steps[j][1],
                steps[k][1],
                len(concat_node.operator.inputs) - 1,
                tuple(infos[r].shape),
                key,
                tuple(infos[c].shape),
                infos[s],
            )
            fused[j] = (dataclasses.replace(concat_node, operator=operator), step)
            fused[i] = fused[k] = fused[m] = None
            break
    if not fused:
        return steps
    return [fused.get(k, s) for k, s in enumerate(steps) if fused.get(k, s) is not None]


def in_place_rings(steps: list) -> list:
    """The (node, RingBufferInPlace) steps of a subgraph's (node, prepared op) list, those merged into a
    RingBufferChecks included (their original nodes), in step order."""
    rings = []
    for node, op in steps:
        if type(op) is RingBufferInPlace:
            rings.append((node, op))
        elif type(op) is RingBufferChecks:
            rings.extend(op.members)
    return rings
