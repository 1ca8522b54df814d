"""``Interpreter``: the tf.lite / ai_edge_litert Interpreter surface over litert_py's runtime.

Method names, arguments, return types, detail-dict keys and exception types follow
google-ai-edge/LiteRT tflite/python/interpreter.py (shipped as ``ai_edge_litert.interpreter``);
messages follow its native wrapper (interpreter_wrapper.cc) so a tf.lite user recognizes them.
"""

from __future__ import annotations

import enum
import os
import weakref

import numpy as np

from ..schema import dtypes
from ..schema.model import Model
from ..schema.reader import read_model
from . import threads
from .cancel import Guard, concurrent_use_error, exclusive
from .subgraph import SubgraphRuntime, resolve, unsupported_op_error
from .tensors import int32_quantization
from .values import check_value_shape, input_value


class OpResolverType(enum.Enum):
    """Kept for API compatibility: litert_py has one set of kernels, bit-exact with BUILTIN_REF."""

    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


def _tensor_details(sub: SubgraphRuntime, i: int) -> dict:
    t = sub.sg.tensors[i]
    q = int32_quantization(t.quantization)
    scales = np.array(q.scale if q else (), dtype=np.float32)
    zps = np.array(q.zero_point if q else (), dtype=np.int32)
    if q is not None and len(q.scale) == 1 and len(q.zero_point) <= 1:
        legacy = (float(np.float32(q.scale[0])), int(q.zero_point[0]) if q.zero_point else 0)
    else:
        legacy = (0.0, 0)
    # before the first invoke, a tensor LiteRT has not prepared yet shows its old shape (SubgraphRuntime.reported)
    shape = sub.reported.get(i, sub.shapes[i])
    # LiteRT reports dims_signature when the model gives a non-empty one, else the current dims
    sig = t.shape_signature if t.shape_signature else shape
    return {
        "name": t.name,
        "index": i,
        "shape": np.array(shape, dtype=np.int32),
        "shape_signature": np.array(sig, dtype=np.int32),
        "dtype": dtypes.to_numpy(sub.types[i]),
        "quantization": legacy,
        "quantization_parameters": {
            "scales": scales,
            "zero_points": zps,
            "quantized_dimension": int(q.quantized_dimension) if q else 0,
            "block_size": 0,
        },
        "sparsity_parameters": _sparsity_details(t.sparsity),
    }


def _sparsity_details(sp) -> dict:
    if sp is None:
        return {}
    out: dict = {"traversal_order": np.array(sp.traversal_order, dtype=np.int32)}
    if sp.block_map:
        out["block_map"] = np.array(sp.block_map, dtype=np.int32)
    dims = []
    for d in sp.dim_metadata:
        if d.format == 0:
            dims.append({"format": 0, "dense_size": d.dense_size})
        else:
            dims.append(
                {
                    "format": 1,
                    "array_segments": np.array(d.array_segments, dtype=np.int32),
                    "array_indices": np.array(d.array_indices, dtype=np.int32),
                }
            )
    out["dim_metadata"] = dims
    return out


class Interpreter:
    """Interpreter interface for running .tflite models, compatible with ``tf.lite.Interpreter``."""

    _custom_ops: dict = {}  # this interpreter's own custom op kernels (InterpreterWithCustomOps); never mutated

    def __init__(
        self,
        model_path=None,
        model_content=None,
        experimental_delegates=None,
        num_threads=None,
        experimental_op_resolver_type=OpResolverType.AUTO,
        experimental_preserve_all_tensors=False,
        experimental_disable_delegate_clustering=False,
        experimental_default_delegate_latest_features=False,
    ):
        if not isinstance(experimental_op_resolver_type, OpResolverType):
            name = getattr(experimental_op_resolver_type, "name", experimental_op_resolver_type)
            if name not in OpResolverType.__members__:
                raise ValueError(f"Unrecognized passed in op resolver type: {experimental_op_resolver_type}")
        if model_path is not None and model_content is not None:
            raise ValueError("Can't both provide `model_path` and `model_content`")
        if not model_path and not model_content:  # tf.lite treats b"" and "" as not given
            raise ValueError("`model_path` or `model_content` must be specified.")
        if num_threads is not None:
            if not isinstance(num_threads, int):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        self.num_threads = num_threads or 1
        threads.set_blas_threads(self.num_threads)
        if model_path is not None:
            if not isinstance(model_path, (str, bytes, os.PathLike)):
                raise TypeError(f"expected str, bytes or os.PathLike object, not {type(model_path).__name__}")
            self._model: Model = read_model(model_path)
        else:
            if not isinstance(model_content, (bytes, bytearray, memoryview)):
                raise TypeError(f"model_content must be bytes, not {type(model_content).__name__}")
            self._model = read_model(bytes(model_content))
        self._preserve_all_tensors = bool(experimental_preserve_all_tensors)
        self._guard = Guard(self)  # concurrent-use refusal and cancel() (runtime/cancel.py)
        self.resources: dict = {}  # resource variables and hashtables shared by all subgraphs
        n = len(self._model.subgraphs)
        self._delegates = list(experimental_delegates or [])
        self._subgraphs: list[SubgraphRuntime | None] = [None] * n
        if any(hasattr(d, "supports") for d in self._delegates):
            # delegates claim nodes first (they may supply ops litert_py lacks), in every subgraph
            for k in range(n):
                self._subgraphs[k] = SubgraphRuntime(
                    self, self._model, k, self._preserve_all_tensors, self._delegates, raise_missing=False
                )
            missing = [m for sub in self._subgraphs for m in sub.missing]
        else:
            missing = [m for k in range(n) for m in resolve(self._model, k, self._custom_ops)[1]]
        if missing:  # every unsupported op of every subgraph, in one error
            raise unsupported_op_error(missing)
        self._subgraph(0)
        self._views: list[weakref.ref] = []
        for d in self._delegates:  # an object with apply(interpreter) (the earlier interface) is still called
            apply = getattr(d, "apply", None)
            if apply is not None:
                apply(self)

    # -- subgraphs --------------------------------------------------------------------------------
    def _subgraph(self, k: int) -> SubgraphRuntime:
        sub = self._subgraphs[k]
        if sub is None:
            sub = self._subgraphs[k] = SubgraphRuntime(self, self._model, k, self._preserve_all_tensors)
        return sub

    def subgraph(self, k: int) -> SubgraphRuntime:
        """The prepared runtime of subgraph ``k`` (what kernels reach through OpContext.subgraph; ops/registry.py
        KernelHost)."""
        return self._subgraph(k)

    def _checked_subgraph(self, subgraph_index: int) -> SubgraphRuntime:
        n = len(self._subgraphs)
        if not isinstance(subgraph_index, (int, np.integer)) or not 0 <= subgraph_index < n:
            raise ValueError(f"Invalid subgraph index {subgraph_index} exceeds max subgraph index {n}")
        return self._subgraph(int(subgraph_index))

    def num_subgraphs(self) -> int:
        return len(self._model.subgraphs)

    # -- lifecycle --------------------------------------------------------------------------------
    def _ensure_safe(self) -> None:
        if not self._views:  # the common case, checked first: invoke pays for this on every call
            return
        self._views = [r for r in self._views if r() is not None]
        if self._views:
            raise RuntimeError(
                "There is at least 1 reference to internal data\n      in the interpreter in the form of a numpy "
                "array or slice. Be sure to\n      only hold the function returned from tensor() if you are using "
                "raw\n      data access."
            )

    @exclusive
    def allocate_tensors(self) -> None:
        """Prepare and plan subgraph 0. Like LiteRT, a second call with nothing changed (no resize to a new
        shape since) does nothing: kernels keep their state (e.g. a random generator's position)."""
        self._ensure_safe()
        sub = self._subgraph(0)
        if not sub.allocated:
            sub.prepare()

    def invoke(self, timeout: float | None = None) -> None:
        """Run the model. ``timeout`` (seconds, beyond tf.lite): past it the invoke stops at the next node or
        loop iteration with DeadlineExceededError. There is no iteration cap otherwise, as in TFLite.

        Exclusive like the ``@exclusive`` methods, with the lock taken here rather than through the decorator's
        generic wrapper: the fixed cost of an invoke is most of a tiny model's time."""
        guard = self._guard
        busy = guard._busy
        if not busy.acquire(False):
            raise concurrent_use_error("invoke")
        try:
            if self._views:  # _ensure_safe's common case without its call
                self._ensure_safe()
            sub = self._subgraphs[0]  # made in __init__
            if not sub.allocated:
                raise RuntimeError("Invoke called on model that is not ready.")
            if timeout is not None:
                token = guard.begin(timeout)
                try:
                    sub.invoke()
                finally:
                    guard.end(token)
                return
            # guard.begin/end without a deadline, inlined (two calls less per invoke): number the running
            # invoke (cancel() stops it from now on), then mark none running and undo a cancel's swap
            guard._invoke = guard._count = guard._count + 1
            try:
                sub.invoke()
            finally:
                guard._invoke = 0
                guard.requested = None
                if guard._saved is not None:
                    guard.end(None)
        finally:
            busy.release()

    def cancel(self) -> bool:
        """Thread-safe (TFLite's Interpreter::Cancel): the running invoke stops at its next node or loop
        iteration and raises CancelledError; the interpreter stays usable. Returns whether an invoke was
        running; with none running it does nothing (a later invoke is not affected)."""
        return self._guard.cancel()

    @exclusive
    def reset_all_variables(self) -> None:
        for sub in self._subgraphs:
            if sub is not None:
                sub.reset_variables()
        for res in self.resources.values():
            reset = getattr(res, "reset", None)
            if reset is not None:
                reset()

    # -- tensors ----------------------------------------------------------------------------------
    def _check_tensor_index(self, sub: SubgraphRuntime, tensor_index) -> int:
        n = len(sub.sg.tensors)
        if not isinstance(tensor_index, (int, np.integer)):
            raise TypeError(f"tensor index must be an int, not {type(tensor_index).__name__}")
        if not 0 <= tensor_index < n:
            raise ValueError(f"Invalid tensor index {tensor_index} exceeds max tensor index {n}")
        return int(tensor_index)

    def _tensor_array(self, sub: SubgraphRuntime, i: int) -> np.ndarray:
        arr = sub.tensors[i] if sub.allocated or i in sub.constants else None
        if arr is None:
            arr = sub.constants.get(i)
        if arr is None:
            if not sub.allocated:
                raise ValueError("Tensor data is null. Run allocate_tensors() first")
            info = sub.infos[i]
            if info.dynamic:
                raise ValueError("Tensor data is null. Run invoke() first: its shape depends on input values")
            arr = sub._new_array(info)  # a tensor no node reads or writes
            sub.tensors[i] = arr
        return arr

    @exclusive
    def set_tensor(self, tensor_index, value) -> None:
        sub = self._subgraphs[0]  # made in __init__
        if type(value) is np.ndarray and type(tensor_index) is int and sub.allocated:
            # the common case first (every check below passes): an array of the tensor's dtype (not strings)
            # and shape into an allocated tensor that is not a constant
            dst = sub.tensors[tensor_index] if 0 <= tensor_index < len(sub.tensors) else None
            if (
                dst is not None
                and value.dtype == dst.dtype
                and dst.dtype.kind != "O"
                and value.shape == sub.shapes[tensor_index]
                and tensor_index not in sub.constants
            ):
                dst[...] = value
                return
        i = self._check_tensor_index(sub, tensor_index)
        t = sub.sg.tensors[i]
        pos = list(sub.sg.inputs).index(i) if i in sub.sg.inputs else i
        if not sub.allocated:
            raise ValueError("Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first")
        arr = input_value(t.name, sub.types[i], value, pos)
        check_value_shape(arr, sub.shapes[i], pos)
        dst = sub.tensors[i]
        if dst is None or i in sub.constants:
            raise ValueError(f"Cannot set tensor: tensor {i} ({t.name}) is a constant of the model")
        dst[...] = arr

    @exclusive
    def get_tensor(self, tensor_index, subgraph_index=0) -> np.ndarray:
        if subgraph_index == 0 and type(tensor_index) is int:  # the common case first: an allocated tensor
            sub = self._subgraphs[0]
            if sub.allocated and 0 <= tensor_index < len(sub.tensors):
                arr = sub.tensors[tensor_index]
                if arr is not None:
                    return arr.copy()
        sub = self._checked_subgraph(subgraph_index)
        i = self._check_tensor_index(sub, tensor_index)
        return np.array(self._tensor_array(sub, i), copy=True)

    def tensor(self, tensor_index):
        """A function returning a live numpy view of the tensor's buffer (see tf.lite's warnings)."""
        sub = self._subgraph(0)
        i = self._check_tensor_index(sub, tensor_index)

        def view():
            arr = self._tensor_array(sub, i)
            v = arr.view()
            self._views.append(weakref.ref(v))
            return v

        return view

    @exclusive
    def resize_tensor_input(self, input_index, tensor_size, strict=False) -> None:
        self._ensure_safe()
        sub = self._subgraph(0)
        i = self._check_tensor_index(sub, input_index)
        size = np.array(tensor_size, dtype=np.int32)  # tf.lite converts the same way
        if size.ndim != 1:
            raise ValueError(f"Shape should be 1D instead of {size.ndim}.")
        new = tuple(int(d) for d in size)
        if any(d < 0 for d in new):
            raise ValueError(f"Cannot resize input {i} to {list(new)}: dimensions must be >= 0")
        t = sub.sg.tensors[i]
        if strict:
            sig = t.shape_signature if t.shape_signature is not None else t.shape
            if len(sig) != len(new):
                raise RuntimeError(
                    f"Attempting to resize tensor {i} of rank {len(sig)} to rank {len(new)}. "
                    "ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1."
                )
            for d, (s_d, cur, n_d) in enumerate(zip(sig, sub.shapes[i], new)):
                if s_d != -1 and cur != n_d:
                    raise RuntimeError(
                        f"Attempting to resize dimension {d} of tensor {i} with value {cur} to {n_d}. "
                        "ResizeInputTensorStrict only allows mutating unknown dimensions identified "
                        "by -1."
                    )
        if tuple(sub.shapes[i]) != new:
            sub.shapes[i] = new
            sub.allocated = False

    # -- details ----------------------------------------------------------------------------------
    def _get_tensor_details(self, tensor_index, subgraph_index=0) -> dict:
        sub = self._checked_subgraph(subgraph_index)
        return _tensor_details(sub, self._check_tensor_index(sub, tensor_index))

    def get_tensor_details(self, subgraph_index=0) -> list[dict]:
        n = len(self._subgraphs)
        if not isinstance(subgraph_index, (int, np.integer)) or not 0 <= subgraph_index < n:
            raise ValueError(
                f"subgraph_index is out of range: {subgraph_index} for the model, which has {n} subgraphs."
            )
        sub = self._subgraph(int(subgraph_index))
        return [_tensor_details(sub, i) for i in range(len(sub.sg.tensors))]

    def get_input_details(self) -> list[dict]:
        sub = self._subgraph(0)
        return [_tensor_details(sub, i) for i in sub.sg.inputs]

    def get_output_details(self) -> list[dict]:
        sub = self._subgraph(0)
        return [_tensor_details(sub, i) for i in sub.sg.outputs]

    def _get_op_details(self, op_index) -> dict:
        sub = self._subgraph(0)
        ops = sub.sg.operators
        if isinstance(op_index, (int, np.integer)) and op_index >= len(ops):
            for d in self._delegate_op_details():
                if d["index"] == op_index:
                    return d
        if not isinstance(op_index, (int, np.integer)) or not 0 <= op_index < len(ops):
            raise ValueError("Invalid node index")
        op = ops[op_index]
        code = self._model.operator_codes[op.opcode_index]
        types = [dtypes.to_numpy(sub.types[i]) for i in op.inputs if i >= 0]
        return {
            "index": int(op_index),
            "op_name": code.name,
            "inputs": np.array(op.inputs, dtype=np.int32),
            "outputs": np.array(op.outputs, dtype=np.int32),
            "operand_types": types,
            "result_types": [dtypes.to_numpy(sub.types[i]) for i in op.outputs if i >= 0],
        }

    def _get_ops_details(self) -> list[dict]:
        """Every node of the model, then one ``DELEGATE`` entry per delegated partition (as LiteRT lists them)."""
        sub = self._subgraph(0)
        return [self._get_op_details(k) for k in range(len(sub.sg.operators))] + self._delegate_op_details()

    def _delegate_op_details(self) -> list[dict]:
        sub = self._subgraph(0)
        out = []
        for node in sub.nodes:
            if hasattr(node, "members"):  # a delegate's partition (runtime.partition.DelegateNode)
                ins, outs = node.operator.inputs, node.operator.outputs
                out.append(
                    {
                        "index": node.index,
                        "op_name": "DELEGATE",
                        "inputs": np.array(ins, dtype=np.int32),
                        "outputs": np.array(outs, dtype=np.int32),
                        "operand_types": [dtypes.to_numpy(sub.types[i]) for i in ins],
                        "result_types": [dtypes.to_numpy(sub.types[i]) for i in outs],
                    }
                )
        return out

    # -- signatures -------------------------------------------------------------------------------
    def _get_full_signature_list(self) -> dict:
        return {
            s.signature_key: {
                "inputs": {m.name: m.tensor_index for m in s.inputs},
                "outputs": {m.name: m.tensor_index for m in s.outputs},
            }
            for s in self._model.signature_defs
        }

    def get_signature_list(self) -> dict:
        return {
            s.signature_key: {"inputs": [m.name for m in s.inputs], "outputs": [m.name for m in s.outputs]}
            for s in self._model.signature_defs
        }

    def get_signature_runner(self, signature_key=None):
        from .signature import SignatureRunner

        if signature_key is None:
            sigs = self._model.signature_defs
            if len(sigs) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(sigs)} Signatures. None is "
                    "only allowed when the model has 1 SignatureDef"
                )
            signature_key = sigs[0].signature_key
        return SignatureRunner(interpreter=self, signature_key=signature_key)

    # -- introspection beyond tf.lite -------------------------------------------------------------
    @property
    def model(self) -> Model:
        """The decoded model (litert_py.schema dataclasses)."""
        return self._model

    def arena_report(self, subgraph_index: int = 0) -> dict:
        """Arena bytes of the current plan and the lower bound (largest sum of live bytes at any step); the tensors
        it places, and those sharing another's bytes (a RESHAPE's output: its input's)."""
        sub = self._checked_subgraph(subgraph_index)
        if sub.plan is None:
            raise ValueError("Tensor data is null. Run allocate_tensors() first")
        return {
            "arena_bytes": sub.plan.arena_bytes,
            "lower_bound": sub.plan.lower_bound,
            "aligned_lower_bound": sub.plan.aligned_lower_bound,
            "planned_tensors": len(sub.plan.offsets),
            "shared_tensors": len(sub.aliases),  # reshapes sharing their input's bytes (not planned apart)
            "efficiency": sub.plan.efficiency,
        }

    def profile(self, runs: int = 10, warmup: int = 1):
        """Time every node over ``runs`` invokes after ``warmup`` untimed ones (inputs as currently set);
        returns a :class:`litert_py.runtime.profiler.Profile` (per-node records and a by-op summary). The
        timers are removed afterwards: plain ``invoke()`` is not slowed."""
        from .profiler import profile

        self._ensure_safe()
        if not self._subgraph(0).allocated:
            raise RuntimeError("Invoke called on model that is not ready.")
        return profile(self, runs=runs, warmup=warmup)


class InterpreterWithCustomOps(Interpreter):
    """``tf.lite.experimental``'s ``InterpreterWithCustomOps``: an Interpreter with custom ops of its own.

    Each of ``custom_op_registerers`` is a Python callable that receives ``add(name, prepare, stateful=False)``
    and calls it for the custom ops it provides; they are seen by this interpreter only (before the global ones
    of ``litert_py.register_custom_op``). tf.lite's registerers are C symbol names; a string raises ValueError as
    tf.lite does when it cannot look the symbol up.
    """

    def __init__(self, custom_op_registerers=None, **kwargs):
        from ..ops.registry import KernelEntry

        ops: dict = {}

        def add(name: str, prepare, stateful: bool = False) -> None:
            ops[name] = KernelEntry(prepare, stateful)

        for registerer in custom_op_registerers or []:
            if isinstance(registerer, str) or not callable(registerer):
                raise ValueError(
                    f"Looking up symbol '{registerer}' failed with error 'litert_py registerers are "
                    "Python callables taking add(name, prepare)'"
                )
            registerer(add)
        self._custom_ops = ops
        super().__init__(**kwargs)
