"""The kernel registry and the context a kernel's ``prepare`` sees.

A kernel is a function ``prepare(ctx: OpContext) -> PreparedOp``. It checks dtypes and shapes, sets the
output shapes, precomputes everything that does not depend on input values, and returns a prepared op: a
small callable object (usually a frozen dataclass) with ``__call__(inputs, outputs)`` over numpy arrays
only. ``inputs`` holds one array per operator input (None for an omitted optional input); ``outputs``
holds the preallocated output arrays, which the op fills in place. An op whose output shape depends on
input values marks the output dynamic at prepare (``ctx.set_output_dynamic``) and, at eval, stores a new
array in ``outputs[i]``.

Builtin kernels register with ``@register(BuiltinOperator.X)``; custom ops under their string name with
``@register("MyOp")`` or ``register_custom_op("MyOp", prepare)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import PrepareError
from ..schema import dtypes
from ..schema.model import OP_OPTIONS, BuiltinOperator, Options, QuantizationParameters, SparsityParameters
from ..schema.tables import default_options

_EMPTY_Q = QuantizationParameters()


class PreparedOp(Protocol):
    """What ``prepare_<op>(ctx)`` returns: called once per invoke with the input arrays (None for an omitted
    optional input) and the preallocated output arrays, which it fills in place (or replaces, for a dynamic
    output). Usually a frozen dataclass holding everything prepare computed."""

    def __call__(self, inputs: list, outputs: list) -> None: ...


class KernelHost(Protocol):
    """What a kernel may use of the interpreter that prepares it (``OpContext.runtime``), through the OpContext
    accessors ``model``, ``subgraph(k)``, ``resources`` (the runtime implements it: runtime/interpreter.py)."""

    @property
    def model(self) -> Any: ...  # litert_py.schema.Model

    resources: dict  # resource variables and hashtables shared by all subgraphs

    def subgraph(self, index: int) -> Any: ...  # the prepared runtime of subgraph ``index`` (control flow)

    # optional: ``_guard`` (runtime/cancel.Guard), whose check_cancelled() a loop calls once per iteration


Prepare = Callable[["OpContext"], PreparedOp]


@dataclass(frozen=True)
class KernelEntry:
    prepare: Prepare
    stateful: bool = False  # never folded at prepare, even when every input is constant


_BUILTIN: dict[int, KernelEntry] = {}
_CUSTOM: dict[str, KernelEntry] = {}


def register(op: int | str, *, stateful: bool = False) -> Callable[[Prepare], Prepare]:
    """Decorator: make ``prepare`` the kernel of a builtin op (BuiltinOperator) or a custom op (str)."""

    def deco(fn: Prepare) -> Prepare:
        entry = KernelEntry(fn, stateful)
        if isinstance(op, str):
            _CUSTOM[op] = entry
        else:
            _BUILTIN[int(op)] = entry
        return fn

    return deco


def register_custom_op(name: str, prepare: Prepare, *, stateful: bool = False) -> None:
    """Register a Python kernel for the custom op ``name`` (replaces any earlier one)."""
    _CUSTOM[name] = KernelEntry(prepare, stateful)


def lookup(builtin_code: int, custom_code: str | None) -> KernelEntry | None:
    if builtin_code == BuiltinOperator.CUSTOM:
        return _CUSTOM.get(custom_code or "")
    return _BUILTIN.get(builtin_code)


def registered_builtins() -> list[int]:
    return sorted(_BUILTIN)


@dataclass
class TensorInfo:
    """What prepare knows of one tensor: its current shape, type, quantization and, if constant, its data."""

    index: int
    name: str
    shape: tuple[int, ...]
    type: int  # TensorType number
    quantization: QuantizationParameters = _EMPTY_Q
    data: np.ndarray | None = None  # constant tensors (and tensors folded at prepare)
    is_variable: bool = False
    dynamic: bool = False  # the shape is only known at eval time
    # LiteRT's kernel marks this output dynamic (kTfLiteDynamic) although litert_py knows its shape at prepare:
    # the detail dicts report the model's shape until the first invoke, as LiteRT does
    reported_dynamic: bool = False
    sparsity: SparsityParameters | None = None  # a sparse constant as stored (``data`` is already dense)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(dtypes.to_numpy(self.type))

    @property
    def type_name(self) -> str:
        return dtypes.type_name(self.type)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def scale(self) -> float:
        return self.quantization.scale[0] if self.quantization.scale else 0.0

    @property
    def zero_point(self) -> int:
        return self.quantization.zero_point[0] if self.quantization.zero_point else 0

    @property
    def legacy_scale(self) -> float:
        """LiteRT's legacy ``params.scale``: the scale of a tensor quantized with one scale (and at most one zero
        point), else 0.0 (InterpreterBuilder sets it only then; get_tensor_details' ``quantization`` likewise)."""
        q = self.quantization
        return q.scale[0] if len(q.scale) == 1 and len(q.zero_point) <= 1 else 0.0


@dataclass
class OpContext:
    """Everything a kernel's prepare may read, and the means to set output shapes and fail cleanly."""

    node_index: int
    builtin_code: int
    op_name: str
    version: int
    options: Options | None
    inputs: list[TensorInfo | None]
    outputs: list[TensorInfo]
    custom_options: bytes = b""
    intermediates: list[TensorInfo] = field(default_factory=list)
    subgraph_index: int = 0
    runtime: KernelHost | None = None  # the owning interpreter: use the accessors model/subgraph/resources
    num_threads: int = 1

    def __post_init__(self):
        if self.options is None and self.builtin_code in OP_OPTIONS:
            self.options = default_options(OP_OPTIONS[self.builtin_code][1])

    # -- the owning interpreter (KernelHost) and limits ----------------------------------------------
    @property
    def model(self):
        """The decoded model (litert_py.schema.Model), or None when the kernel runs without an interpreter."""
        return None if self.runtime is None else self.runtime.model

    def subgraph(self, index: int):
        """The prepared runtime of subgraph ``index`` (control flow calls it)."""
        return self.runtime.subgraph(index)

    @property
    def cancel_guard(self):
        """The interpreter's cancellation guard (``check_cancelled()`` raises when ``Interpreter.cancel()`` or a
        deadline stopped the running invoke), or None: loops test it once per iteration."""
        return getattr(self.runtime, "_guard", None)

    @property
    def resources(self) -> dict:
        """The interpreter's resource store (variables, hashtables), shared by all subgraphs."""
        return self.runtime.resources

    @property
    def max_arena_bytes(self) -> int:
        """The memory limit (litert_py.limits): bytes one scratch buffer or one subgraph's arena may take."""
        from .. import limits

        return limits.MAX_ARENA_BYTES

    # -- failing ----------------------------------------------------------------------------------
    def fail(self, message: str) -> PrepareError:
        """An error to raise: ``raise ctx.fail("...")``. Names the node like TFLite's error reporter does."""
        types = ", ".join(t.type_name if t is not None else "-" for t in self.inputs)
        return PrepareError(
            f"{message}\nNode number {self.node_index} ({self.op_name}) v{self.version} ({types}) failed to prepare."
        )

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            raise self.fail(message)

    def check_num(self, n_inputs: int | Sequence[int], n_outputs: int = 1) -> None:
        allowed = (n_inputs,) if isinstance(n_inputs, int) else tuple(n_inputs)
        self.check(
            len(self.inputs) in allowed,
            f"{self.op_name} takes {' or '.join(map(str, allowed))} inputs, got {len(self.inputs)}",
        )
        self.check(
            len(self.outputs) == n_outputs,
            f"{self.op_name} produces {n_outputs} outputs, the model gives {len(self.outputs)}",
        )

    def check_types(self, allowed: Sequence, *which: int) -> None:
        """Every listed input (default: all present inputs) has one of the ``allowed`` numpy dtypes."""
        names = {np.dtype(a) for a in allowed}
        for i in which or range(len(self.inputs)):
            t = self.inputs[i]
            if t is not None and t.dtype not in names:
                raise self.fail(f"Type {t.type_name} is unsupported by op {self.op_name}.")

    # -- outputs ----------------------------------------------------------------------------------
    def set_output_shape(self, i: int, shape: Sequence[int]) -> None:
        self.outputs[i].shape = tuple(int(d) for d in shape)
        self.outputs[i].dynamic = False

    def set_output_type(self, i: int, type_: int) -> None:
        """The kernel sets output ``i``'s type (a TensorType number) at prepare, as LiteRT kernels that assign
        ``output->type`` do (NumericVerify): the arena, get_tensor and the detail dicts follow it."""
        self.outputs[i].type = int(type_)

    def set_output_dynamic(self, i: int) -> None:
        """The output's shape depends on input values: the op stores a new array in outputs[i] at eval."""
        self.outputs[i].dynamic = True

    def report_dynamic(self, i: int) -> None:
        """LiteRT's kernel makes output ``i`` dynamic at prepare (its shape is set during invoke), though
        litert_py computes it now: ``get_output_details()`` reports the model's shape until the first invoke,
        and LiteRT leaves every later node unprepared until then (see ``SubgraphRuntime.prepare``)."""
        self.outputs[i].reported_dynamic = True

    def scratch(self, shape: Sequence[int], dtype, fill=None) -> np.ndarray:
        """A buffer for the prepared op (im2col matrices, padded inputs), refused with a ResourceLimitError when it
        exceeds the interpreter's memory limit (LITERT_PY_MAX_ARENA_BYTES) instead of exhausting memory."""
        from .. import limits
        from ..errors import ResourceLimitError

        try:
            limits.check_allocation(limits.nbytes(shape, dtype), "a scratch buffer")
        except ResourceLimitError as e:
            raise ResourceLimitError(str(self.fail(str(e)))) from None
        return np.zeros(shape, dtype) if fill is None else np.full(shape, fill, dtype)

    def input(self, i: int) -> TensorInfo:
        t = self.inputs[i] if i < len(self.inputs) else None
        if t is None:
            raise self.fail(f"input {i} is required")
        return t

    def optional_input(self, i: int) -> TensorInfo | None:
        return self.inputs[i] if i < len(self.inputs) else None
