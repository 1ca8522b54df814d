"""Batch inference: run a .tflite model over many samples, in a process pool on one machine or on Ray.

    from litert_py.batch import run_batch

    results = run_batch("model.tflite", samples, workers=4)   # [{output name: array}, ...] in input order

A sample is what ``set_tensor`` takes for each input: one array (single-input models), a sequence of arrays in
``get_input_details()`` order, or a dict ``{input name: array}``. Each result is a dict ``{output name: array}``
(names of ``get_output_details()``), as a plain loop of ``set_tensor`` / ``invoke`` / ``get_tensor`` gives them.

- Each worker process creates one Interpreter, once (pool initializer), and runs chunks of ``batch_size`` samples.
- Stacking: when the model allows it (every input's and output's batch dimension is resizable, ``shape_signature``
  -1, and the model has no state: no variable tensors, resource variables or random ops), a chunk's samples are
  concatenated along axis 0 and run in one invoke, then split back. ``stack="auto"`` (the default) does it only
  where the results are bit-identical to a per-sample loop: integer (quantized) models, whose float ops are
  only (de)quantization and data movement (``model_info(...).float_ops`` is empty). ``stack=True`` also stacks
  float models, whose results may then differ from the loop in the last bits (BLAS blocks a batch of rows
  differently). ``stack=False`` turns it off.
- Stateful models (LSTM state tensors, resource variables, random ops) depend on what ran before: by default they
  run in this process, in order, exactly like a plain loop. ``reset_variables=True`` calls
  ``reset_all_variables()`` before each sample instead, which makes samples independent and lets them run in
  parallel.
- A progress bar goes to stderr when it is a terminal (``progress=True``/``False`` forces it).
- A failing sample raises ``litert_py.errors.BatchError`` naming its index and the original error.
- ``ray_address`` runs the same thing on a Ray cluster (extra ``[ray]``) with ``litert_py.ray_data.LiteRTPredictor``:
  ``"local"`` starts a local Ray, ``"auto"`` or ``"ray://host:10001"`` connects to an existing cluster.

``tflite-verify --workers N`` / ``--ray ADDRESS`` run their samples with the same pieces (litert_py/verify/parallel.py).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import BatchError
from .runtime.interpreter import Interpreter

__all__ = ["BatchInfo", "ModelRunner", "model_info", "run_batch", "Sample"]

Sample = np.ndarray | Sequence[np.ndarray] | Mapping[str, np.ndarray]

#: ops whose results depend on earlier invokes (state or a random generator that advances)
STATEFUL_OPS = frozenset(
    {"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "RANDOM_STANDARD_NORMAL", "RANDOM_UNIFORM", "MULTINOMIAL"}
)


#: float ops whose result for one row of a batch is the same whatever the other rows (elementwise, exact, or data
#: movement); any other op with a float output (GEMM, convolutions, reductions, transcendentals) may round a
#: stacked batch differently from one sample in the last bit (BLAS blocks a batch of rows differently).
ROW_EXACT_FLOAT_OPS = frozenset(
    {
        "DEQUANTIZE",
        "QUANTIZE",
        "RESHAPE",
        "SQUEEZE",
        "EXPAND_DIMS",
        "CONCATENATION",
        "ADD",
        "SUB",
        "MUL",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "MAXIMUM",
        "MINIMUM",
        "PAD",
        "TRANSPOSE",
        "GATHER",
        "STRIDED_SLICE",
        "SLICE",
        "CAST",
    }
)
_FLOAT_TYPES = (0, 1, 16)  # TensorType FLOAT32, FLOAT16, FLOAT64


@dataclass(frozen=True)
class BatchInfo:
    """What a model allows: ``stateful`` (with why), ``stackable`` (with why not), and ``float_ops``: the ops
    whose float results may round differently in a stacked batch (``stack="auto"`` stacks only when empty)."""

    stateful: bool
    stackable: bool
    reason: str  # why it is stateful, or why it cannot be stacked ("" when stackable)
    float_ops: tuple[str, ...] = ()


def model_info(interpreter: Interpreter) -> BatchInfo:
    """Whether the model keeps state between invokes and whether samples can be stacked along axis 0."""
    model = interpreter.model
    variables = [t.name for sg in model.subgraphs for t in sg.tensors if t.is_variable]
    ops = sorted(
        {model.operator_codes[op.opcode_index].name for sg in model.subgraphs for op in sg.operators} & STATEFUL_OPS
    )
    if variables or ops:
        why = f"variable tensors {variables[:3]}" if variables else f"stateful ops {ops}"
        return BatchInfo(True, False, f"the model keeps state between invokes ({why})")
    for kind, details in (("input", interpreter.get_input_details()), ("output", interpreter.get_output_details())):
        for d in details:
            sig = d["shape_signature"]
            if len(sig) == 0 or sig[0] != -1:
                return BatchInfo(
                    False,
                    False,
                    f"{kind} {d['name']!r} has no resizable batch dimension (shape_signature {sig.tolist()})",
                )
    float_ops = sorted(
        {
            model.operator_codes[op.opcode_index].name
            for sg in model.subgraphs
            for op in sg.operators
            if any(sg.tensors[t].type in _FLOAT_TYPES for t in op.outputs if t >= 0)
        }
        - ROW_EXACT_FLOAT_OPS
    )
    return BatchInfo(False, True, "", tuple(float_ops))


class ModelRunner:
    """One Interpreter and the loop over samples: the unit a pool worker or a Ray actor holds.

    ``run(samples, first_index)`` returns one ``{output name: array}`` per sample, stacking them into one invoke
    when ``stack`` and the model allows it. Errors become ``BatchError`` naming ``first_index + position``.
    """

    def __init__(
        self,
        model: str | os.PathLike | bytes,
        stack: bool | str = "auto",
        reset_variables: bool = False,
        interpreter_kwargs: Mapping[str, Any] | None = None,
    ):
        content = model if isinstance(model, (bytes, bytearray, memoryview)) else None
        kwargs = dict(interpreter_kwargs or {})
        self.interpreter = (
            Interpreter(model_content=bytes(content), **kwargs)
            if content is not None
            else Interpreter(model_path=model, **kwargs)
        )
        self.interpreter.allocate_tensors()
        self.inputs = self.interpreter.get_input_details()
        self.outputs = self.interpreter.get_output_details()
        self.input_names = [d["name"] for d in self.inputs]
        self.output_names = [d["name"] for d in self.outputs]
        self.info = model_info(self.interpreter)
        if stack is True and not self.info.stackable:
            raise ValueError(f"stack=True but samples cannot be stacked: {self.info.reason}")
        # "auto" stacks only where the results are bit-identical to a per-sample loop; True also stacks float
        # models (their results may then differ from the loop in the last bits)
        self.stack = self.info.stackable and (stack is True or (stack == "auto" and not self.info.float_ops))
        self.reset_variables = reset_variables
        self._shapes = [tuple(d["shape"].tolist()) for d in self.inputs]

    # -- one sample ---------------------------------------------------------------------------------
    def arrays(self, sample: Sample) -> list[np.ndarray]:
        """The sample's arrays in input order."""
        if isinstance(sample, Mapping):
            missing = [n for n in self.input_names if n not in sample]
            extra = [k for k in sample if k not in self.input_names]
            if missing or extra:
                raise ValueError(f"sample keys {sorted(sample)} do not match the model's inputs {self.input_names}")
            return [np.asarray(sample[n]) for n in self.input_names]
        if isinstance(sample, np.ndarray) or not isinstance(sample, Sequence):
            if len(self.inputs) != 1:
                raise ValueError(
                    f"the model has {len(self.inputs)} inputs {self.input_names}: give each sample as "
                    "a sequence of arrays or a dict {input name: array}"
                )
            return [np.asarray(sample)]
        if len(sample) != len(self.inputs):
            raise ValueError(f"sample has {len(sample)} arrays, the model has {len(self.inputs)} inputs")
        return [np.asarray(a) for a in sample]

    def _set_inputs(self, arrays: list[np.ndarray]) -> None:
        it = self.interpreter
        shapes = [a.shape for a in arrays]
        if shapes != self._shapes:  # resize only when the shape changes (SignatureRunner does the same)
            for d, s in zip(self.inputs, shapes):
                it.resize_tensor_input(d["index"], list(s))
            it.allocate_tensors()
            self._shapes = shapes
        for d, a in zip(self.inputs, arrays):
            it.set_tensor(d["index"], a)

    def run_one(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        if self.reset_variables:
            self.interpreter.reset_all_variables()
        self._set_inputs(arrays)
        self.interpreter.invoke()
        return {n: self.interpreter.get_tensor(d["index"]) for n, d in zip(self.output_names, self.outputs)}

    # -- many samples -------------------------------------------------------------------------------
    def run(self, samples: Sequence[Sample], first_index: int = 0) -> list[dict[str, np.ndarray]]:
        arrays = []
        for k, s in enumerate(samples):
            try:
                arrays.append(self.arrays(s))
            except Exception as e:
                raise _sample_error(first_index + k, e) from e
        if self.stack and len(arrays) > 1:
            stacked = self._run_stacked(arrays)
            if stacked is not None:
                return stacked
        out = []
        for k, a in enumerate(arrays):
            try:
                out.append(self.run_one(a))
            except Exception as e:
                raise _sample_error(first_index + k, e) from e
        return out

    def _run_stacked(self, arrays: list[list[np.ndarray]]) -> list[dict[str, np.ndarray]] | None:
        """One invoke on the samples concatenated along axis 0; None when they cannot be (then the caller loops,
        which also names a failing sample)."""
        rows = [a[0].shape[0] if a[0].ndim else 0 for a in arrays]
        for pos in range(len(self.inputs)):
            first = arrays[0][pos]
            if any(
                a[pos].ndim == 0
                or a[pos].shape[1:] != first.shape[1:]
                or a[pos].dtype != first.dtype
                or a[pos].shape[0] != r
                for a, r in zip(arrays, rows)
            ):
                return None
        try:
            self._set_inputs([np.concatenate([a[pos] for a in arrays]) for pos in range(len(self.inputs))])
            self.interpreter.invoke()
            outs = [self.interpreter.get_tensor(d["index"]) for d in self.outputs]
        except Exception:
            return None
        total = sum(rows)
        if any(o.ndim == 0 or o.shape[0] != total for o in outs):  # not batch-elementwise after all: never again
            self.stack = False
            return None
        cuts = np.cumsum(rows)[:-1]
        split = [np.split(o, cuts) for o in outs]
        return [{n: split[j][k].copy() for j, n in enumerate(self.output_names)} for k in range(len(arrays))]


def _sample_error(index: int, e: Exception) -> BatchError:
    if isinstance(e, BatchError):
        return e
    return BatchError(f"sample {index}: {type(e).__name__}: {e}", index)


# -- process pool ---------------------------------------------------------------------------------------------
_WORKER: ModelRunner | None = None


def _init_worker(model: bytes, stack, reset_variables: bool, interpreter_kwargs) -> None:
    global _WORKER
    _WORKER = ModelRunner(model, stack, reset_variables, interpreter_kwargs)


def _run_chunk(chunk: tuple[int, list]) -> list[dict[str, np.ndarray]]:
    first, samples = chunk
    return _WORKER.run(samples, first)


def _chunks(samples: Iterable[Sample], size: int) -> Iterator[tuple[int, list]]:
    it = iter(samples)
    first = 0
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield first, chunk
        first += len(chunk)


class _Progress:
    """A one-line progress bar on stderr (only when it is a terminal, unless forced)."""

    def __init__(self, total: int | None, enabled: bool | None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.total, self.done, self.t0 = total, 0, time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        rate = self.done / max(time.monotonic() - self.t0, 1e-9)
        if self.total:
            filled = int(30 * self.done / self.total)
            bar = f"[{'#' * filled}{' ' * (30 - filled)}] {self.done}/{self.total}"
        else:
            bar = f"{self.done}"
        sys.stderr.write(f"\r{bar} samples, {rate:.1f}/s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def run_batch(
    model: str | os.PathLike | bytes,
    samples: Iterable[Sample],
    *,
    workers: int | None = None,
    batch_size: int = 16,
    stack: bool | str = "auto",
    reset_variables: bool = False,
    progress: bool | None = None,
    ray_address: str | None = None,
    mp_context: str | None = None,
    interpreter_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, np.ndarray]]:
    """Run ``model`` over ``samples``; one ``{output name: array}`` per sample, in input order.

    ``workers``: processes (default ``os.cpu_count()``; 0 or 1 runs in this process; with ``ray_address``, the
    number of Ray actors). ``batch_size``: samples per task (and per stacked invoke). ``stack``: ``"auto"``
    (stack when the model allows it), ``True`` (require it), ``False``. ``reset_variables``: reset a stateful
    model before each sample, which makes samples independent; otherwise a stateful model runs here, in order.
    ``mp_context``: the multiprocessing start method (default: the platform's). ``interpreter_kwargs`` go to
    each ``Interpreter``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    content = bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else open(model, "rb").read()
    total = len(samples) if hasattr(samples, "__len__") else None
    local = ModelRunner(content, stack, reset_variables, interpreter_kwargs)  # checks the model (and stack) here
    sequential = local.info.stateful and not reset_variables
    bar = _Progress(total, progress)
    try:
        if ray_address is not None and not sequential:
            from .ray_data import run_on_ray

            return run_on_ray(
                content,
                samples,
                address=ray_address,
                workers=workers,
                batch_size=batch_size,
                stack=stack,
                reset_variables=reset_variables,
                interpreter_kwargs=interpreter_kwargs,
                progress=bar,
            )
        workers = (os.cpu_count() or 1) if workers is None else workers
        results: list[dict[str, np.ndarray]] = []
        if workers <= 1 or sequential:
            for first, chunk in _chunks(samples, batch_size):
                results.extend(local.run(chunk, first))
                bar.update(len(chunk))
            return results
        del local
        ctx = multiprocessing.get_context(mp_context)
        with ctx.Pool(
            workers, initializer=_init_worker, initargs=(content, stack, reset_variables, interpreter_kwargs)
        ) as pool:
            for out in pool.imap(_run_chunk, _chunks(samples, batch_size)):
                results.extend(out)
                bar.update(len(out))
        return results
    finally:
        bar.close()
