"""Op coverage dashboard: which (builtin op, dtype path) pairs litert_py runs with LiteRT's numbers.

For every builtin op (and the custom ops LiteRT registers by default) a *recipe* builds one or more small
single-op models per dtype path. The oracle, ai-edge-litert, runs each model with its reference kernels
(``BUILTIN_REF``), or with its default kernels without delegates (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) when
the reference resolver does not register the op or its reference kernel is broken there (``REF_BROKEN``).
LiteRT runs in a worker process that forks a child per (op, path): a C++ CHECK abort, a segfault or heap
corruption inside LiteRT costs only the model that caused it. The same model runs in litert_py in this
process, on the same few seeded random inputs, and the outputs are compared: integers (and bools, strings)
exactly, floats within a tolerance relative to the largest reference magnitude. Where LiteRT's reference and
optimized kernels disagree with each other, the dashboard says so.

A cell of the table (docs/op-coverage.md) is

- ``yes``: LiteRT runs every model of the path and litert_py runs each one with equal outputs;
- ``missing``: LiteRT runs it, litert_py fails to load/prepare/run it; ``missing (differs)``: litert_py
  runs it but its outputs differ from LiteRT's (the reason is in the notes under the table);
- ``n/a``: LiteRT rejects every model of the path (or the path does not exist for the op: ``hybrid`` is
  only defined for ops with constant weights);
- ``beyond``: LiteRT rejects it but litert_py runs it (no oracle to compare with);
- ``untested``: no recipe yet.

A path counts as supported by LiteRT when it runs at least one of the path's models; the cell is ``yes``
when litert_py matches LiteRT on every model LiteRT runs. The ``int32/int64`` column is ``yes`` when either
integer width is.

Adding a recipe: a function ``fn(p: P) -> Case | list[Case]`` registered with ``@recipe("OP", ...)``; ``p``
knows the path (``p.path``, ``p.dtype``, ``p.quantized``) and makes inputs (``p.x``), outputs (``p.out``)
and constants (``p.const``) with the path's dtype and quantization; ``case(op, inputs, outputs, options)``
builds a one-op model, ``Graph`` anything bigger (subgraphs, resources). When LiteRT rejects a model, check
with ``--ops OP --verbose`` whether the recipe or LiteRT is at fault before accepting the ``n/a``.

Usage::

    python tools/op_coverage.py                     # run everything, write docs/op-coverage.md
    python tools/op_coverage.py --ops CONV_2D,ADD   # print those rows (add --out FILE to write them)
    python tools/op_coverage.py --check             # exit 1 if docs/op-coverage.md is not current
    python tools/op_coverage.py --ops ADD --verbose # also print LiteRT's rejection of each n/a case
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# ==============================================================================================
# The LiteRT side (runs in a child process started with --worker; it imports nothing of litert_py)
# ==============================================================================================

CASE_TIMEOUT = 20.0  # seconds, per case and per runtime
UNREGISTERED = ("Didn't find op for builtin opcode", "Encountered unresolved custom op", "unresolved custom op")


def _run_interpreter(it, feeds: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Allocate, then for each feed set the inputs, invoke and read every output (as tests/oracle.py does)."""
    it.allocate_tensors()
    results = []
    for feed in feeds:
        details = it.get_input_details()
        if len(details) != len(feed):
            raise ValueError(f"model has {len(details)} inputs, recipe feeds {len(feed)}")
        for d, x in zip(details, feed):
            it.set_tensor(d["index"], x)
        it.invoke()
        results.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return results


REF, OPT, AUTO = "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "AUTO"


def _litert_outputs(model: bytes, feeds, resolver: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_content=model, num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver)
    )
    return _run_interpreter(it, feeds)


def litert_run(model: bytes, feeds, resolvers: tuple[str, ...] = (REF, OPT)) -> tuple:
    """(kind, resolver, outputs or message, optimized outputs or None). Runs in the worker process.

    The first resolver that registers the op decides ("ok" or "rejected"); when that is the reference
    resolver, the optimized kernels run too, so the dashboard can list where the two disagree.
    """
    for k, resolver in enumerate(resolvers):
        try:
            outputs = _litert_outputs(model, feeds, resolver)
        except Exception as e:  # LiteRT reports bad models as ValueError / RuntimeError
            msg = f"{type(e).__name__}: {e}"
            if k + 1 < len(resolvers) and any(s in msg for s in UNREGISTERED):
                continue
            return "rejected", resolver, msg, None
        alt = None
        if resolver == REF:
            try:
                alt = _litert_outputs(model, feeds, OPT)
            except Exception:  # the optimized kernels may reject what the reference ones run
                alt = None
        return "ok", resolver, outputs, alt
    raise AssertionError("unreachable")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _stderr_tail(start: int) -> str:
    """The last meaningful line LiteRT wrote to stderr (our stderr is a file) since offset ``start``."""
    try:
        text = os.pread(2, 1 << 16, start).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "XNNPACK" not in ln]
    return lines[-1][:160] if lines else ""


def run_forked(jobs: list, timeout: float) -> list[tuple]:
    """litert_run of each job, in a forked child: a segfault, CHECK abort or heap corruption dies with it.

    The jobs of one (op, path) share a fork; when that child dies, each job is rerun in its own fork, so a
    crash is charged to the model that caused it.
    """
    r, w = os.pipe()
    start = os.fstat(2).st_size
    timeout *= len(jobs)
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        results = []
        for model, feeds, resolvers in jobs:
            try:
                results.append(litert_run(model, feeds, resolvers))
            except BaseException as e:  # noqa: BLE001 - report, never die on a Python-level error
                results.append(("rejected", "?", f"{type(e).__name__}: {e}", None))
        with os.fdopen(w, "wb") as f:
            f.write(pickle.dumps(results))
        os._exit(0)
    os.close(w)
    chunks, deadline, timed_out = [], time.monotonic() + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    failed = timed_out or os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0
    if failed and len(jobs) > 1:
        return [run_forked([job], timeout / len(jobs))[0] for job in jobs]
    if timed_out:
        return [("crashed", "?", f"LiteRT timeout after {timeout:.0f}s", None)]
    if failed:
        what = (
            f"crashed ({_signal_name(os.WTERMSIG(status))})"
            if os.WIFSIGNALED(status)
            else f"exited with status {os.WEXITSTATUS(status)}"
        )
        tail = _stderr_tail(start)
        return [("crashed", "?", f"LiteRT {what}" + (f": {tail}" if tail else ""), None)]
    return pickle.loads(b"".join(chunks))


def worker_main() -> None:
    """Serve run_forked over stdin/stdout: 8-byte length + pickle each way. LiteRT's own prints go to stderr."""
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import ai_edge_litert.interpreter  # noqa: F401  (once, before forking: each fork then starts warm)

    inp = sys.stdin.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        jobs = pickle.loads(inp.read(struct.unpack("<Q", head)[0]))
        data = pickle.dumps(run_forked(jobs, CASE_TIMEOUT) if jobs else [])
        proto.write(struct.pack("<Q", len(data)) + data)
        proto.flush()


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    worker_main()
    sys.exit(0)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere in the tree
    sys.path.insert(0, str(ROOT))

from litert_py.schema.builder import ModelBuilder, quant  # noqa: E402
from litert_py.schema.model import BuiltinOperator, QuantizationParameters  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "op-coverage.md"
COLUMNS = ("float32", "int8", "uint8", "int16", "hybrid", "int32/int64", "bool", "string")
PATHS = ("float32", "int8", "uint8", "int16", "hybrid", "int32", "int64", "bool", "string")
#: The custom ops LiteRT's BuiltinOpResolver registers (tflite/core/kernels/register.cc AddCustom)
CUSTOM_OPS = (
    "TFLite_Detection_PostProcess",
    "AudioSpectrogram",
    "Mfcc",
    "NumericVerify",
    "aeq.hadamard_rotation",
    # MediaPipe's (litert_py registers them by default; LiteRT runs the first three through XNNPACK)
    "Convolution2DTransposeBias",
    "MaxPoolingWithArgmax2D",
    "MaxUnpooling2D",
    "Landmarks2TransformMatrix",
    "TransformLandmarks",
    "TransformTensorBilinear",
)
EXCLUDED = {"CUSTOM", "DELEGATE", "PLACEHOLDER_FOR_GREATER_OP_CODES"}
CELL_VALUES = ("yes", "missing", "missing (differs)", "n/a", "beyond", "untested")
N_FEEDS = 3  # random input sets per model


def all_ops() -> list[str]:
    """Every row of the dashboard: builtin ops (minus the non-ops) and the custom ops with a recipe slot."""
    return sorted(m.name for m in BuiltinOperator if m.name not in EXCLUDED) + list(CUSTOM_OPS)


# ==============================================================================================
# Model recipes
# ==============================================================================================

NP = {
    "float32": np.float32,
    "hybrid": np.float32,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
    "string": np.bytes_,
}
QUANTIZED = ("int8", "uint8", "int16")
# Activation quantization per path, for the k-th input (different scales exercise the rescaling); QOUT is
# a different output quantization for ops that requantize.
QIN = {
    "int8": (quant(0.05, 2), quant(0.04, -4), quant(0.06, 0)),
    "uint8": (quant(0.05, 128), quant(0.04, 125), quant(0.06, 131)),
    "int16": (quant(0.001, 0), quant(0.0008, 0), quant(0.0012, 0)),
}
QOUT = {"int8": quant(0.08, -5), "uint8": quant(0.08, 120), "int16": quant(0.0015, 0)}
WORDS = [b"", b"a", b"bc", b"lite", b"rt", b"numpy", b"tflite", b"\xc3\xa9t\xc3\xa9"]


@dataclass
class In:
    """A graph input. Values are drawn uniformly in the real range [lo, hi] (quantized with ``q``), or by
    ``gen(rng) -> array`` when given."""

    shape: Sequence[int]
    dtype: object = np.float32
    q: QuantizationParameters | None = None
    lo: float | None = None
    hi: float | None = None
    gen: Callable | None = None


@dataclass
class Const:
    data: object
    dtype: object = None
    q: QuantizationParameters | None = None


@dataclass
class Out:
    shape: Sequence[int]
    dtype: object = np.float32
    q: QuantizationParameters | None = None


@dataclass
class Var:
    """A variable tensor (RNN/LSTM/SVDF state): no buffer, kept across invokes."""

    shape: Sequence[int]
    dtype: object = np.float32
    q: QuantizationParameters | None = None


@dataclass
class Case:
    """One model and what its inputs look like; ``label`` tells variants of a path apart in notes."""

    model: bytes
    inputs: list[In]
    label: str = ""
    rtol: float = 1e-5
    atol: float = 1e-6
    resolvers: tuple[str, ...] = ()  # default: BUILTIN_REF, then the optimized kernels if REF lacks the op

    def feeds(self, seed: int, n: int = N_FEEDS) -> list[list[np.ndarray]]:
        rng = np.random.default_rng(seed)
        return [[draw(rng, spec) for spec in self.inputs] for _ in range(n)]


def quantize(real: np.ndarray, q: QuantizationParameters, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    v = np.round(np.asarray(real, np.float64) / q.scale[0]) + q.zero_point[0]
    return np.clip(v, info.min, info.max).astype(dtype)


def draw(rng: np.random.Generator, spec: In) -> np.ndarray:
    shape, dt = tuple(spec.shape), np.dtype(spec.dtype)
    if spec.gen is not None:
        return np.asarray(spec.gen(rng), dtype=object if dt.kind == "S" else dt).reshape(shape)
    if dt.kind == "S":
        return np.array([WORDS[i] for i in rng.integers(0, len(WORDS), int(np.prod(shape)))], dtype=object).reshape(
            shape
        )
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if spec.q is not None and spec.q.scale and dt.kind in "iu":
        if spec.lo is None and spec.hi is None:
            info = np.iinfo(dt)
            return rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dt)
        lo = spec.lo if spec.lo is not None else -3.0
        hi = spec.hi if spec.hi is not None else 3.0
        return quantize(rng.uniform(lo, hi, shape), spec.q, dt)
    if dt.kind in "iu":
        lo = int(spec.lo) if spec.lo is not None else (0 if dt.kind == "u" else -10)
        hi = int(spec.hi) if spec.hi is not None else 10
        return rng.integers(lo, hi + 1, shape, dtype=np.int64).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(-3, 3, shape) + 1j * rng.uniform(-3, 3, shape)).astype(dt)
    lo = spec.lo if spec.lo is not None else -3.0
    hi = spec.hi if spec.hi is not None else 3.0
    return rng.uniform(lo, hi, shape).astype(dt)


class Graph:
    """ModelBuilder plus the input specs, for recipes that need more than one op or subgraph."""

    def __init__(self):
        self.b = ModelBuilder()
        self.specs: list[In] = []
        self._n = 0

    def _name(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def add(self, t: In | Const | Out | Var | None) -> int:
        if t is None:
            return -1
        if isinstance(t, In):
            if self.b.current == 0:
                self.specs.append(t)
            return self.b.input(self._name("in"), t.shape, t.dtype, quantization=t.q)
        if isinstance(t, Var):
            return self.b.tensor(self._name("var"), t.shape, t.dtype, quantization=t.q, is_variable=True)
        if isinstance(t, Const):
            arr = np.asarray(t.data, dtype=t.dtype)
            if arr.dtype.kind in "SUO":
                return self.b.tensor(self._name("c"), arr.shape, np.bytes_, data=_string_buffer(arr), quantization=t.q)
            return self.b.tensor(self._name("c"), arr.shape, arr.dtype, data=arr, quantization=t.q)
        return self.b.tensor(self._name("t"), t.shape, t.dtype, quantization=t.q)

    def op(self, op: str, ins: Sequence, outs: Sequence, options: dict | None = None, **kw) -> list[int]:
        i = [x if isinstance(x, int) else self.add(x) for x in ins]
        o = [x if isinstance(x, int) else self.add(x) for x in outs]
        if op in CUSTOM_OPS:
            self.b.op(op, i, o, None, custom_code=op, **kw)
        else:
            self.b.op(op, i, o, options, **kw)
        return o

    def resource(self) -> int:
        return self.b.tensor(self._name("res"), (), np.float32, tensor_type=TYPE["resource"])

    def subgraph(self, inputs: Sequence[Out], build: Callable[[Graph, list[int]], Sequence[int]]) -> int:
        """A new subgraph with ``inputs`` (specs); ``build(g, input_indices)`` adds ops and returns outputs."""
        current = self.b.current
        k = self.b.subgraph(f"sub{len(self.b.subgraphs)}")
        idx = [self.b.input(self._name("s"), t.shape, t.dtype, quantization=t.q) for t in inputs]
        self.b.output(*build(self, idx))
        self.b.select(current)
        return k

    def case(self, outputs: Sequence[int], **kw) -> Case:
        self.b.select(0)
        self.b.output(*outputs)
        return Case(self.b.build(), list(self.specs), **kw)


def _string_buffer(arr: np.ndarray) -> np.ndarray:
    """TFLite's string tensor layout: count, offsets (count + 1), then the bytes."""
    items = [bytes(s) for s in arr.reshape(-1)]
    offs = [4 * (len(items) + 2)]
    for s in items:
        offs.append(offs[-1] + len(s))
    head = np.array([len(items), *offs], dtype="<i4").tobytes()
    return np.frombuffer(head + b"".join(items), np.uint8)


def case(
    op: str,
    ins: Sequence,
    outs: Sequence,
    options: dict | None = None,
    *,
    label: str = "",
    rtol: float = 1e-5,
    atol: float = 1e-6,
    **kw,
) -> Case:
    """A one-operator model: inputs (In / Const / None for an omitted optional input) -> outputs (Out)."""
    g = Graph()
    o = g.op(op, ins, outs, options, **kw)
    return g.case(o, label=label, rtol=rtol, atol=atol)


class P:
    """What a recipe knows of the dtype path it builds for, with helpers that pick dtypes and quantization."""

    def __init__(self, op: str, path: str):
        self.op, self.path = op, path
        self.rng = np.random.default_rng(zlib.crc32(f"{op}/{path}/recipe".encode()))
        self.dtype = NP[path]
        self.quantized = path in QUANTIZED

    def qin(self, k: int = 0) -> QuantizationParameters | None:
        return QIN[self.path][k] if self.quantized else None

    def x(self, shape, k: int = 0, lo=None, hi=None, q=None, dtype=None, gen=None) -> In:
        """A graph input of the path's dtype (quantized with the k-th input parameters on quantized paths)."""
        return In(shape, dtype or self.dtype, q if q is not None else self.qin(k), lo, hi, gen)

    def out(self, shape, same: bool = False, q=None, dtype=None) -> Out:
        """An output of the path's dtype: its own quantization, or the first input's when ``same``. An output
        of another ``dtype`` (bool, int32 indices, float) is not quantized unless ``q`` says so."""
        if q is None and self.quantized and (dtype is None or np.dtype(dtype) == np.dtype(self.dtype)):
            q = QIN[self.path][0] if same else QOUT[self.path]
        return Out(shape, dtype or self.dtype, q)

    def const(self, real, k: int = 0, q=None) -> Const:
        """A constant of the path's dtype holding ``real`` values (quantized on quantized paths)."""
        q = q if q is not None else self.qin(k)
        if self.quantized:
            return Const(quantize(np.asarray(real), q, self.dtype), self.dtype, q)
        if self.path == "string":
            return Const(
                np.array([WORDS[int(i) % len(WORDS)] for i in np.ravel(real)], dtype=object).reshape(np.shape(real))
            )
        return Const(np.asarray(real).astype(self.dtype), self.dtype)

    def rand(self, shape, lo=-1.0, hi=1.0, dtype=np.float32) -> np.ndarray:
        dt = np.dtype(dtype)
        if dt.kind in "iu":
            return self.rng.integers(int(lo), int(hi) + 1, shape).astype(dt)
        return self.rng.uniform(lo, hi, shape).astype(dt)


@dataclass
class Recipe:
    fn: Callable[[P], Case | list[Case]]
    paths: tuple[str, ...]  # attempted paths; the others are n/a ("hybrid" without weights) or untested
    not_applicable: tuple[str, ...] = ("hybrid",)


RECIPES: dict[str, Recipe] = {}
NON_HYBRID = tuple(p for p in PATHS if p != "hybrid")


def recipe(*ops: str, paths: Sequence[str] = NON_HYBRID, not_applicable: Sequence[str] = ("hybrid",)):
    """Register ``fn(p: P) -> Case | [Case]`` as the recipe of ``ops`` for ``paths``."""

    def deco(fn):
        for op in ops:
            if op in RECIPES:
                raise ValueError(f"two recipes for {op}")
            RECIPES[op] = Recipe(fn, tuple(paths), tuple(not_applicable))
        return fn

    return deco


ALL = PATHS
NONE, RELU, RELU_N1_TO_1, RELU6, TANH = 0, 1, 2, 3, 4
SAME, VALID = 0, 1
TYPE = {
    "float32": 0,
    "float16": 1,
    "int32": 2,
    "uint8": 3,
    "int64": 4,
    "string": 5,
    "bool": 6,
    "int16": 7,
    "complex64": 8,
    "int8": 9,
    "float64": 10,
    "complex128": 11,
    "uint64": 12,
    "resource": 13,
    "variant": 14,
    "uint32": 15,
    "uint16": 16,
}

# ----------------------------------------------------------------------------------------------
# Helpers shared by recipes
# ----------------------------------------------------------------------------------------------

X4 = (1, 4, 4, 3)
# Ops whose quantized output parameters LiteRT fixes (it checks them at prepare).
FIXED_OUT = {
    "LOGISTIC": {"int8": quant(1 / 256, -128), "uint8": quant(1 / 256, 0), "int16": quant(1 / 32768, 0)},
    "SOFTMAX": {"int8": quant(1 / 256, -128), "uint8": quant(1 / 256, 0), "int16": quant(1 / 32768, 0)},
    "TANH": {"int8": quant(1 / 128, 0), "uint8": quant(1 / 128, 128), "int16": quant(1 / 32768, 0)},
    "LOG_SOFTMAX": {"int8": quant(16 / 256, 127), "uint8": quant(16 / 256, 255)},
    "L2_NORMALIZATION": {"int8": quant(1 / 128, 0), "uint8": quant(1 / 128, 128)},
}
FIXED_OUT["STABLEHLO_LOGISTIC"] = FIXED_OUT["LOGISTIC"]
FIXED_OUT["STABLEHLO_TANH"] = FIXED_OUT["TANH"]


def randv(p: P, shape, lo=-1.0, hi=1.0) -> np.ndarray:
    """Random constant data of the path's (unquantized) dtype."""
    dt = np.dtype(p.dtype)
    if dt.kind == "S":
        return np.array([WORDS[i] for i in p.rng.integers(0, len(WORDS), int(np.prod(shape)))], dtype=object).reshape(
            shape
        )
    if dt == np.bool_:
        return p.rng.random(shape) < 0.5
    if dt.kind in "iu":
        return p.rng.integers(0 if dt.kind == "u" else -3, 4, shape).astype(dt)
    return p.rng.uniform(lo, hi, shape).astype(dt)


def positive(p: P) -> tuple[float, float]:
    """A strictly positive input range for the path (log, sqrt, divisors)."""
    return (1, 5) if np.dtype(p.dtype).kind in "iu" and not p.quantized else (0.25, 3.0)


def nonzero_gen(p: P, shape):
    """Values of either sign, never zero (nor near it)."""
    dt = np.dtype(p.dtype)

    def gen(rng):
        sign = np.where(rng.random(shape) < 0.5, -1, 1)
        if dt.kind in "iu" and not p.quantized:
            return (sign * rng.integers(1, 6, shape)).astype(dt)
        real = sign * rng.uniform(0.5, 3.0, shape)
        return quantize(real, p.qin(1), dt) if p.quantized else real.astype(dt)

    return gen


def coarse_gen(p: P, shape, k: int = 0):
    """Few distinct values, so comparisons and uniques see ties."""
    dt = np.dtype(p.dtype)

    def gen(rng):
        v = rng.integers(-3, 4, shape)
        if dt.kind == "S":
            return np.array([WORDS[i % 3] for i in v.reshape(-1)], dtype=object).reshape(shape)
        if dt == np.bool_:
            return v > 0
        if p.quantized:
            return quantize(v * 0.5, p.qin(k), dt)
        if dt.kind == "u":
            return np.abs(v).astype(dt)
        return (v * 0.5).astype(dt) if dt.kind == "f" else v.astype(dt)

    return gen


def _out_q(p: P, op: str, same: bool = False):
    if not p.quantized:
        return None
    fixed = FIXED_OUT.get(op, {})
    if p.path in fixed:
        return fixed[p.path]
    return QIN[p.path][0] if same else QOUT[p.path]


def unary(p: P, op: str, shape=X4, lo=None, hi=None, options=None, same=False, out_dtype=None, label="", **kw) -> Case:
    q = None if out_dtype is not None else _out_q(p, op, same)
    return case(op, [p.x(shape, 0, lo, hi)], [p.out(shape, q=q, dtype=out_dtype)], options, label=label, **kw)


BROADCAST_SHAPES = (
    ("same-shape", X4, X4),
    ("broadcast", X4, (1, 1, 1, 3)),
    ("broadcast-5d", (2, 1, 2, 1, 3), (1, 3, 1, 2, 1)),
)


def binary(
    p: P,
    op: str,
    options=None,
    same_q=False,
    out_dtype=None,
    y=None,
    x=None,
    shapes=BROADCAST_SHAPES,
    act_variant=True,
    out_q=None,
    **kw,
) -> list[Case]:
    """Same-shape and broadcasting variants; ``x``/``y``: functions (p, shape) -> In overriding the inputs."""
    cases = []
    for label, sa, sb in shapes:
        xs = x(p, sa) if x else p.x(sa, 0)
        ys = y(p, sb) if y else p.x(sb, 0 if same_q else 1)
        shape = np.broadcast_shapes(sa, sb)
        q = None if out_dtype is not None else (out_q or _out_q(p, op, same_q))
        opts = options
        if act_variant and options is not None and "fused_activation_function" in options and label == "broadcast":
            opts = dict(options, fused_activation_function=RELU6)
            label += "-relu6"
        cases.append(case(op, [xs, ys], [p.out(shape, q=q, dtype=out_dtype)], opts, label=label, **kw))
    return cases


def i32(v) -> Const:
    return Const(np.asarray(v, np.int32), np.int32)


def i64(v) -> Const:
    return Const(np.asarray(v, np.int64), np.int64)


def f32(v) -> Const:
    return Const(np.asarray(v, np.float32), np.float32)


# ----------------------------------------------------------------------------------------------
# Elementwise arithmetic and comparisons
# ----------------------------------------------------------------------------------------------

ACT = {"fused_activation_function": NONE}


# Output scales for products: the default output scale would saturate most of MUL's outputs.
PRODUCT_OUT = {"int8": quant(0.3, 0), "uint8": quant(0.3, 128), "int16": quant(0.04, 0)}
SQUARE_OUT = {"int8": quant(0.6, -128), "uint8": quant(0.6, 0), "int16": quant(0.05, 0)}


@recipe("ADD", "SUB")
def add_sub(p: P):
    return binary(p, p.op, dict(ACT))


@recipe("MUL")
def mul(p: P):
    return binary(p, p.op, dict(ACT), out_q=PRODUCT_OUT.get(p.path))


@recipe("DIV")
def div(p: P):
    return binary(p, "DIV", dict(ACT), y=lambda p, s: p.x(s, 1, gen=nonzero_gen(p, s)))


@recipe("MAXIMUM", "MINIMUM")
def maximum_minimum(p: P):
    return binary(
        p,
        p.op,
        same_q=True,
        y=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
        x=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
    )


@recipe("SQUARED_DIFFERENCE")
def squared_difference(p: P):
    return binary(p, p.op, out_q=SQUARE_OUT.get(p.path))


@recipe("ATAN2")
def atan2(p: P):
    # LiteRT's ATAN2 does not broadcast (nor check shapes): a broadcasting model reads past the smaller
    # input and returns heap garbage, so only equal shapes are attempted.
    return binary(p, p.op, shapes=BROADCAST_SHAPES[:1])


@recipe(
    "STABLEHLO_ADD",
    "STABLEHLO_SUBTRACT",
    "STABLEHLO_MULTIPLY",
    "STABLEHLO_MAXIMUM",
    "STABLEHLO_MINIMUM",
    "STABLEHLO_AND",
    "STABLEHLO_OR",
    "BITWISE_XOR",
    "LOGICAL_AND",
    "LOGICAL_OR",
)
def plain_binary(p: P):
    same = p.op in ("STABLEHLO_MAXIMUM", "STABLEHLO_MINIMUM")
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES  # no implicit broadcast
    return binary(p, p.op, same_q=same, shapes=shapes, out_q=PRODUCT_OUT.get(p.path) if "MULT" in p.op else None)


@recipe("FLOOR_DIV", "FLOOR_MOD", "STABLEHLO_DIVIDE", "STABLEHLO_REMAINDER")
def division_like(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    return binary(p, p.op, y=lambda p, s: p.x(s, 1, gen=nonzero_gen(p, s)), shapes=shapes)


@recipe("POW", "STABLEHLO_POWER")
def power(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    if np.dtype(p.dtype).kind in "iu" and not p.quantized:
        return binary(p, p.op, x=lambda p, s: p.x(s, 0, -3, 3), y=lambda p, s: p.x(s, 1, 0, 3), shapes=shapes)
    return binary(p, p.op, x=lambda p, s: p.x(s, 0, 0.25, 3.0), y=lambda p, s: p.x(s, 1, -2, 2), shapes=shapes)


@recipe("RIGHT_SHIFT", "STABLEHLO_SHIFT_LEFT")
def shift(p: P):
    shapes = BROADCAST_SHAPES[:1] if p.op.startswith("STABLEHLO_") else BROADCAST_SHAPES
    return binary(p, p.op, y=lambda p, s: p.x(s, 1, 0, 7), shapes=shapes)


@recipe("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
def comparison(p: P):
    return binary(
        p,
        p.op,
        same_q=True,
        out_dtype=np.bool_,
        x=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
        y=lambda p, s: p.x(s, 0, gen=coarse_gen(p, s)),
    )


@recipe("STABLEHLO_COMPARE")
def stablehlo_compare(p: P):
    kind = {"f": 1, "i": 3, "u": 4, "b": 4}.get(np.dtype(p.dtype).kind, 0)
    cases = []
    for direction in range(6):
        x, y = p.x(X4, 0, gen=coarse_gen(p, X4)), p.x(X4, 0, gen=coarse_gen(p, X4))
        cases.append(
            case(
                p.op,
                [x, y],
                [Out(X4, np.bool_)],
                dict(comparison_direction=direction, compare_type=kind),
                label=f"direction{direction}",
            )
        )
    return cases


# ----------------------------------------------------------------------------------------------
# Unary elementwise and activations
# ----------------------------------------------------------------------------------------------


# Input ranges that keep outputs away from saturation (quantized paths draw the full range otherwise).
UNARY_RANGE = {
    "TANH": (-3, 3),
    "STABLEHLO_TANH": (-3, 3),
    "LOGISTIC": (-6, 6),
    "STABLEHLO_LOGISTIC": (-6, 6),
    "EXP": (-3, 2),
    "STABLEHLO_EXPONENTIAL": (-3, 2),
}


@recipe(
    "ABS",
    "NEG",
    "EXP",
    "SIN",
    "COS",
    "SQUARE",
    "FLOOR",
    "CEIL",
    "ROUND",
    "SIGN",
    "ELU",
    "HARD_SWISH",
    "LOGISTIC",
    "TANH",
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "ZEROS_LIKE",
    "STABLEHLO_ABS",
    "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL",
    "STABLEHLO_FLOOR",
    "STABLEHLO_NEGATE",
    "STABLEHLO_TANH",
    "STABLEHLO_LOGISTIC",
    "STABLEHLO_CBRT",
    "LOGICAL_NOT",
)
def plain_unary(p: P):
    lo, hi = UNARY_RANGE.get(p.op, (None, None))
    return unary(p, p.op, lo=lo, hi=hi)


@recipe("LOG", "SQRT", "RSQRT", "STABLEHLO_LOG", "STABLEHLO_RSQRT")
def positive_unary(p: P):
    return unary(p, p.op, lo=positive(p)[0], hi=positive(p)[1])


@recipe("LEAKY_RELU")
def leaky_relu(p: P):
    return [
        unary(p, p.op, options={"alpha": 0.2}, label="alpha0.2"),
        unary(p, p.op, options={"alpha": 1.5}, label="alpha1.5"),
    ]


@recipe("GELU")
def gelu(p: P):
    return [unary(p, p.op, options={"approximate": a}, label=f"approximate={a}") for a in (False, True)]


@recipe("PRELU")
def prelu(p: P):
    aq = {"int8": quant(0.01, 0), "uint8": quant(0.01, 128), "int16": quant(0.01, 0)}.get(p.path)
    cases = []
    for label, ashape in (("alpha-per-channel", (1, 1, 3)), ("alpha-full", (4, 4, 3))):
        if p.path == "int16":  # LiteRT's int16 PRELU takes an int8 alpha (as its own tests build it)
            alpha = p.rand(ashape, 0.05, 0.5)
            a = Const(np.clip(np.round(alpha / 0.01), -128, 127).astype(np.int8), np.int8, aq)
        else:
            a = p.const(p.rand(ashape, 0.05, 0.5), q=aq)
        cases.append(case(p.op, [p.x(X4), a], [p.out(X4)], label=label))
    return cases


@recipe("SOFTMAX")
def softmax(p: P):
    return [
        unary(p, p.op, (2, 5), options={"beta": 1.0}, label="2d"),
        unary(p, p.op, (1, 2, 2, 8), options={"beta": 0.5}, label="4d-beta0.5"),
    ]


@recipe("LOG_SOFTMAX")
def log_softmax(p: P):
    return [unary(p, p.op, (2, 5), label="2d"), unary(p, p.op, (1, 2, 2, 8), label="4d")]


@recipe("L2_NORMALIZATION")
def l2_normalization(p: P):
    return [unary(p, p.op, (1, 2, 2, 6), label="4d"), unary(p, p.op, (3, 5), label="2d")]


@recipe("LOCAL_RESPONSE_NORMALIZATION")
def lrn(p: P):
    return unary(p, p.op, (1, 2, 2, 6), options=dict(radius=2, bias=1.0, alpha=0.5, beta=0.75))


@recipe("CAST", "STABLEHLO_CONVERT")
def cast(p: P):
    cases = []
    for name in (
        "float32",
        "int32",
        "int64",
        "int16",
        "int8",
        "uint8",
        "bool",
        "float16",
        "float64",
        "uint16",
        "uint32",
    ):
        dt = np.dtype(name if name != "bool" else np.bool_)
        lo = 0 if dt.kind in "ub" or np.dtype(p.dtype).kind == "u" else -3
        x = In((2, 6), p.dtype, None, lo, 5)
        opts = dict(in_data_type=TYPE.get(p.path, 0), out_data_type=TYPE[name]) if p.op == "CAST" else None
        cases.append(case(p.op, [x], [Out((2, 6), dt)], opts, label=f"to-{name}"))
    return cases


@recipe("DEQUANTIZE", paths=("float32", "int8", "uint8", "int16"), not_applicable=ALL)
def dequantize(p: P):
    if p.path == "float32":
        return case(p.op, [In((2, 3, 4), np.float16)], [Out((2, 3, 4), np.float32)], label="float16")
    cases = [case(p.op, [p.x((2, 3, 4))], [Out((2, 3, 4), np.float32)], label="per-tensor")]
    if p.path == "int8":
        w = Const(p.rand((3, 4), -127, 127, np.int8), np.int8, quant([0.1, 0.2, 0.3], 0, 0))
        cases.append(case(p.op, [w], [Out((3, 4), np.float32)], label="per-channel-constant"))
    return cases


@recipe("QUANTIZE", paths=("int8", "uint8", "int16"), not_applicable=ALL)
def quantize_op(p: P):
    other = {"int8": "uint8", "uint8": "int8", "int16": "int8"}[p.path]
    return [
        case(p.op, [In((2, 3, 4), np.float32, None, -5, 5)], [p.out((2, 3, 4), same=True)], label="from-float32"),
        case(p.op, [p.x((2, 3, 4))], [p.out((2, 3, 4))], label="requantize"),
        case(p.op, [p.x((2, 3, 4), lo=-8, hi=8)], [Out((2, 3, 4), NP[other], QOUT[other])], label=f"to-{other}"),
        case(p.op, [In((2, 3, 4), NP[other], QIN[other][0], -8, 8)], [p.out((2, 3, 4))], label=f"from-{other}"),
    ]


@recipe("FAKE_QUANT", paths=("float32",), not_applicable=ALL)
def fake_quant(p: P):
    # FakeQuant is a float op: LiteRT does not check the input type and reads any buffer as float (heap
    # corruption and aborts for narrower types), so only float32 is attempted.
    return [
        unary(p, p.op, options=dict(min=-2.0, max=2.0, num_bits=8, narrow_range=n), label=f"narrow={n}")
        for n in (False, True)
    ]


@recipe("STABLEHLO_CLAMP")
def stablehlo_clamp(p: P):
    return [
        case(p.op, [p.x(X4, 0, -1, 0), p.x(X4), p.x(X4, 0, 0, 1)], [p.out(X4, same=True)], label="elementwise"),
        case(p.op, [p.const(-0.5), p.x(X4), p.const(0.7)], [p.out(X4, same=True)], label="scalar-bounds"),
    ]


@recipe("SELECT", "SELECT_V2", "STABLEHLO_SELECT")
def select_op(p: P):
    cases = [case(p.op, [In(X4, np.bool_), p.x(X4), p.x(X4)], [p.out(X4, same=True)], label="same-shape")]
    if p.op == "SELECT_V2":
        cases.append(
            case(
                p.op,
                [In((1, 1, 4, 1), np.bool_), p.x((1, 4, 1, 3)), p.x((4, 1, 1))],
                [p.out(X4, same=True)],
                label="broadcast",
            )
        )
    if p.op == "SELECT":
        cases.append(case(p.op, [In((1,), np.bool_), p.x(X4), p.x(X4)], [p.out(X4, same=True)], label="rank1-cond"))
    return cases


@recipe("ADD_N")
def add_n(p: P):
    return case(p.op, [p.x((2, 3, 4)), p.x((2, 3, 4)), p.x((2, 3, 4))], [p.out((2, 3, 4), same=True)])


# ----------------------------------------------------------------------------------------------
# Convolutions and matrix products
# ----------------------------------------------------------------------------------------------

CONV_OUT = {"int8": quant(0.2, -3), "uint8": quant(0.2, 130), "int16": quant(0.01, 0)}
FC_OUT = {"int8": quant(0.1, -3), "uint8": quant(0.1, 130), "int16": quant(0.005, 0)}


def weights(p: P, shape, qdim: int, bias_len: int | None, per_channel: bool = True):
    """(filter, bias) constants for the path: int8 per-channel (zero point 0) with int32 bias for int8, int64
    bias for int16; uint8 per-tensor (zero point 120); float filter for float; int8 filter + float bias for
    hybrid; the path's own dtype otherwise."""
    n = shape[qdim]
    if p.path in ("int8", "int16", "hybrid"):
        ws = p.rand(n if per_channel else 1, 0.005, 0.02).astype(np.float64)
        w = Const(p.rng.integers(-127, 128, shape).astype(np.int8), np.int8, quant(ws, 0, qdim))
        if bias_len is None:
            return w, None
        if p.path == "hybrid":
            return w, f32(p.rand(bias_len, -1, 1))
        bscale = np.broadcast_to(ws * np.float64(np.float32(QIN[p.path][0].scale[0])), (bias_len,))
        bdt = np.int32 if p.path == "int8" else np.int64
        return w, Const(p.rng.integers(-300, 300, bias_len).astype(bdt), bdt, quant(bscale, 0))
    if p.path == "uint8":
        w = Const(p.rng.integers(0, 256, shape).astype(np.uint8), np.uint8, quant(0.01, 120))
        if bias_len is None:
            return w, None
        bscale = np.float64(np.float32(0.05)) * np.float64(np.float32(0.01))
        return w, Const(p.rng.integers(-300, 300, bias_len).astype(np.int32), np.int32, quant(bscale, 0))
    w = Const(randv(p, shape, -0.5, 0.5))
    return w, (Const(randv(p, (bias_len,))) if bias_len is not None else None)


@recipe("CONV_2D", paths=ALL)
def conv_2d(p: P):
    cases = []
    for label, xs, opts, oshape in (
        (
            "same-relu",
            (1, 5, 5, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, fused_activation_function=RELU),
            (1, 5, 5, 4),
        ),
        ("valid-stride2", (1, 5, 5, 3), dict(padding=VALID, stride_w=2, stride_h=2), (1, 2, 2, 4)),
        (
            "dilation2-relu6",
            (2, 6, 6, 3),
            dict(
                padding=SAME,
                stride_w=1,
                stride_h=1,
                dilation_w_factor=2,
                dilation_h_factor=2,
                fused_activation_function=RELU6,
            ),
            (2, 6, 6, 4),
        ),
    ):
        w, b = weights(p, (4, 3, 3, 3), 0, 4)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    w, _ = weights(p, (4, 1, 1, 3), 0, None)
    cases.append(
        case(
            p.op,
            [p.x((1, 3, 3, 3)), w, None],
            [p.out((1, 3, 3, 4), q=CONV_OUT.get(p.path))],
            dict(padding=VALID, stride_w=1, stride_h=1),
            label="1x1-no-bias",
        )
    )
    return cases


@recipe("DEPTHWISE_CONV_2D", paths=ALL)
def depthwise_conv_2d(p: P):
    cases = []
    for label, xs, opts, oshape in (
        (
            "same-mult2-relu",
            (1, 5, 5, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, depth_multiplier=2, fused_activation_function=RELU),
            (1, 5, 5, 6),
        ),
        ("valid-stride2", (1, 5, 5, 3), dict(padding=VALID, stride_w=2, stride_h=2, depth_multiplier=2), (1, 2, 2, 6)),
        (
            "dilation2",
            (2, 6, 6, 3),
            dict(padding=SAME, stride_w=1, stride_h=1, depth_multiplier=2, dilation_w_factor=2, dilation_h_factor=2),
            (2, 6, 6, 6),
        ),
    ):
        w, b = weights(p, (1, 3, 3, 6), 3, 6)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    return cases


@recipe("FULLY_CONNECTED", paths=ALL)
def fully_connected(p: P):
    cases = []
    for label, xs, opts, oshape, bias in (
        ("2d", (2, 8), dict(fused_activation_function=NONE), (2, 4), True),
        ("keep-num-dims-relu", (1, 2, 8), dict(keep_num_dims=True, fused_activation_function=RELU), (1, 2, 4), True),
        ("flatten-no-bias", (3, 2, 4), dict(), (3, 4), False),
    ):
        w, b = weights(p, (4, 8), 0, 4 if bias else None, per_channel=False)
        cases.append(case(p.op, [p.x(xs), w, b], [p.out(oshape, q=FC_OUT.get(p.path))], opts, label=label))
    if p.path in ("int8", "int16", "hybrid"):
        w, b = weights(p, (4, 8), 0, 4, per_channel=True)
        cases.append(case(p.op, [p.x((2, 8)), w, b], [p.out((2, 4), q=FC_OUT.get(p.path))], {}, label="per-channel"))
    if p.path == "hybrid":
        w, b = weights(p, (4, 8), 0, 4, per_channel=False)
        cases.append(
            case(
                p.op,
                [p.x((2, 8)), w, b],
                [p.out((2, 4))],
                dict(asymmetric_quantize_inputs=True),
                label="asymmetric-inputs",
            )
        )
    return cases


@recipe("BATCH_MATMUL", paths=ALL)
def batch_matmul(p: P):
    q = {"int8": quant(0.5, 0), "uint8": quant(0.5, 128), "int16": quant(0.1, 0)}.get(p.path)
    if p.path == "hybrid":
        w = Const(p.rng.integers(-127, 128, (4, 5)).astype(np.int8), np.int8, quant(0.02, 0))
        return [
            case(p.op, [p.x((2, 3, 4)), w], [p.out((2, 3, 5))], label="const-int8-rhs"),
            case(
                p.op,
                [p.x((2, 3, 4)), w],
                [p.out((2, 3, 5))],
                dict(asymmetric_quantize_inputs=True),
                label="asymmetric-inputs",
            ),
        ]
    rq = {"int8": quant(0.04, 0), "uint8": quant(0.04, 128), "int16": quant(0.0008, 0)}.get(p.path)
    return [
        case(p.op, [p.x((2, 3, 4)), p.x((2, 4, 5), q=rq)], [p.out((2, 3, 5), q=q)], label="batched"),
        case(p.op, [p.x((2, 3, 4)), p.x((2, 5, 4), q=rq)], [p.out((2, 3, 5), q=q)], dict(adj_y=True), label="adj-y"),
        case(
            p.op,
            [p.x((2, 4, 3)), p.x((4, 5), q=rq)],
            [p.out((2, 3, 5), q=q)],
            dict(adj_x=True),
            label="adj-x-broadcast",
        ),
    ]


@recipe("TRANSPOSE_CONV", paths=ALL)
def transpose_conv(p: P):
    cases = []
    for label, opts, oshape, bias in (
        ("same-stride2", dict(padding=SAME, stride_w=2, stride_h=2), (1, 8, 8, 4), True),
        ("valid-stride1-no-bias", dict(padding=VALID, stride_w=1, stride_h=1), (1, 6, 6, 4), False),
    ):
        w, b = weights(p, (4, 3, 3, 3), 0, 4 if bias else None)
        ins = [i32(oshape), w, p.x((1, 4, 4, 3))] + ([b] if bias else [])
        cases.append(case(p.op, ins, [p.out(oshape, q=CONV_OUT.get(p.path))], opts, label=label))
    return cases


@recipe("CONV_3D", paths=ALL)
def conv_3d(p: P):
    w, b = weights(p, (2, 2, 2, 2, 3), 4, 3)
    return [
        case(
            p.op,
            [p.x((1, 3, 4, 4, 2)), w, b],
            [p.out((1, 3, 4, 4, 3), q=CONV_OUT.get(p.path))],
            dict(padding=SAME, stride_d=1, stride_w=1, stride_h=1),
            label="same",
        ),
        case(
            p.op,
            [p.x((1, 3, 4, 4, 2)), w, b],
            [p.out((1, 1, 2, 2, 3), q=CONV_OUT.get(p.path))],
            dict(padding=VALID, stride_d=2, stride_w=2, stride_h=2),
            label="valid-stride2",
        ),
    ]


@recipe("CONV_3D_TRANSPOSE", paths=ALL)
def conv_3d_transpose(p: P):
    w, b = weights(p, (2, 2, 2, 2, 3), 3, 2)
    return case(
        p.op,
        [i32((1, 6, 8, 8, 2)), w, p.x((1, 3, 4, 4, 3)), b],
        [p.out((1, 6, 8, 8, 2), q=CONV_OUT.get(p.path))],
        dict(padding=SAME, stride_d=2, stride_w=2, stride_h=2),
    )


# ----------------------------------------------------------------------------------------------
# Pooling, reductions, normalization
# ----------------------------------------------------------------------------------------------


@recipe("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
def pool(p: P):
    same = p.op != "L2_POOL_2D"
    return [
        case(
            p.op,
            [p.x(X4)],
            [p.out((1, 2, 2, 3), same=same)],
            dict(padding=VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2),
            label="valid-2x2-s2",
        ),
        case(
            p.op,
            [p.x(X4, lo=-8, hi=8)],
            [p.out(X4, same=same)],
            dict(
                padding=SAME, stride_w=1, stride_h=1, filter_width=3, filter_height=3, fused_activation_function=RELU6
            ),
            label="same-3x3-s1-relu6",
        ),
        case(
            p.op,
            [p.x((2, 5, 5, 2))],
            [p.out((2, 2, 3, 2), same=same)],
            dict(padding=SAME, stride_w=2, stride_h=3, filter_width=2, filter_height=3),
            label="same-uneven",
        ),
    ]


REDUCE_SAME_Q = ("REDUCE_MAX", "REDUCE_MIN")


@recipe("MEAN", "SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ANY", "REDUCE_ALL")
def reduce(p: P):
    lo, hi = None, None
    if p.op == "REDUCE_PROD":  # products of 16 values stay in range
        lo, hi = (-2, 2) if np.dtype(p.dtype).kind in "iu" and not p.quantized else (0.85, 1.15)
    elif p.op == "SUM" and p.quantized:
        # Sums that stay inside the output range: LiteRT's reference int8 SUM wraps where its optimized
        # kernel saturates (a full-range sum of 16 int8 values gives -1 in BUILTIN_REF).
        lo, hi = -0.4, 0.4
    same = p.op in REDUCE_SAME_Q
    return [
        case(
            p.op,
            [p.x(X4, 0, lo, hi), i32([1, 2])],
            [p.out((1, 1, 1, 3), same=same)],
            dict(keep_dims=True),
            label="axes12-keepdims",
        ),
        case(
            p.op,
            [p.x(X4, 0, lo, hi), i32([-1])],
            [p.out((1, 4, 4), same=same)],
            dict(keep_dims=False),
            label="last-axis",
        ),
        case(
            p.op,
            [p.x((2, 3, 4), 0, lo, hi), i32([0, 2])],
            [p.out((3,), same=same)],
            dict(keep_dims=False),
            label="axes02",
        ),
    ]


@recipe("ARG_MAX", "ARG_MIN")
def arg_max_min(p: P):
    return [
        case(
            p.op,
            [p.x(X4, gen=coarse_gen(p, X4)), i32([3])],
            [Out((1, 4, 4), np.int32)],
            dict(output_type=TYPE["int32"]),
            label="last-axis-int32",
        ),
        case(
            p.op, [p.x(X4), i64([1])], [Out((1, 4, 3), np.int64)], dict(output_type=TYPE["int64"]), label="axis1-int64"
        ),
    ]


@recipe("CUMSUM")
def cumsum(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3, 4)), i32(1)],
            [p.out((2, 3, 4), same=True)],
            dict(exclusive=e, reverse=r),
            label=f"exclusive={e}-reverse={r}",
        )
        for e in (False, True)
        for r in (False, True)
    ]


# ----------------------------------------------------------------------------------------------
# Shapes and data movement
# ----------------------------------------------------------------------------------------------


@recipe("RESHAPE")
def reshape(p: P):
    return [
        case(p.op, [p.x(X4), i32([4, 12])], [p.out((4, 12), same=True)], dict(new_shape=[4, 12]), label="shape-tensor"),
        case(p.op, [p.x(X4)], [p.out((2, 24), same=True)], dict(new_shape=[2, 24]), label="options-only"),
        case(p.op, [p.x(X4), i32([-1, 3])], [p.out((16, 3), same=True)], label="minus-one"),
    ]


@recipe("SQUEEZE")
def squeeze(p: P):
    return [
        case(p.op, [p.x((1, 4, 1, 3))], [p.out((1, 4, 3), same=True)], dict(squeeze_dims=[2]), label="dim2"),
        case(p.op, [p.x((1, 4, 1, 3))], [p.out((4, 3), same=True)], dict(squeeze_dims=[]), label="all"),
    ]


@recipe("EXPAND_DIMS")
def expand_dims(p: P):
    return [
        case(p.op, [p.x((4, 3)), i32([1])], [p.out((4, 1, 3), same=True)], label="axis1"),
        case(p.op, [p.x((4, 3)), i64(-1)], [p.out((4, 3, 1), same=True)], label="axis-1-int64"),
    ]


@recipe("CONCATENATION", "STABLEHLO_CONCATENATE")
def concatenation(p: P):
    shlo = p.op == "STABLEHLO_CONCATENATE"

    def opts(axis):
        return dict(dimension=axis) if shlo else dict(axis=axis, fused_activation_function=NONE)

    cases = [
        case(
            p.op,
            [p.x((1, 4, 4, 3)), p.x((1, 4, 4, 2))],
            [p.out((1, 4, 4, 5), same=True)],
            opts(3),
            label="last-axis-same-q",
        ),
        case(
            p.op,
            [p.x((1, 2, 4, 3)), p.x((1, 1, 4, 3)), p.x((1, 3, 4, 3))],
            [p.out((1, 6, 4, 3), same=True)],
            opts(1),
            label="axis1-3-inputs",
        ),
    ]
    if p.quantized and not shlo:
        cases.append(
            case(
                p.op, [p.x((1, 4, 4, 3), 0), p.x((1, 4, 4, 2), 1)], [p.out((1, 4, 4, 5))], opts(-1), label="requantize"
            )
        )
    return cases


@recipe("PACK")
def pack(p: P):
    return [
        case(p.op, [p.x((4, 3))] * 3, [p.out((3, 4, 3), same=True)], dict(values_count=3, axis=0), label="axis0"),
        case(p.op, [p.x((4, 3))] * 2, [p.out((4, 3, 2), same=True)], dict(values_count=2, axis=-1), label="axis-1"),
    ]


@recipe("UNPACK")
def unpack(p: P):
    return [
        case(p.op, [p.x((3, 4, 2))], [p.out((4, 2), same=True) for _ in range(3)], dict(num=3, axis=0), label="axis0"),
        case(
            p.op, [p.x((3, 4, 2))], [p.out((3, 4), same=True) for _ in range(2)], dict(num=2, axis=-1), label="axis-1"
        ),
    ]


@recipe("SPLIT")
def split(p: P):
    return [
        case(
            p.op,
            [i32(3), p.x((1, 4, 4, 6))],
            [p.out((1, 4, 4, 2), same=True) for _ in range(3)],
            dict(num_splits=3),
            label="last-axis",
        ),
        case(
            p.op,
            [i32(-3), p.x((1, 4, 4, 6))],
            [p.out((1, 2, 4, 6), same=True) for _ in range(2)],
            dict(num_splits=2),
            label="negative-axis",
        ),
    ]


@recipe("SPLIT_V")
def split_v(p: P):
    return [
        case(
            p.op,
            [p.x((1, 4, 4, 6)), i32([1, 2, 3]), i32(3)],
            [p.out((1, 4, 4, k), same=True) for k in (1, 2, 3)],
            dict(num_splits=3),
            label="sizes",
        ),
        case(
            p.op,
            [p.x((2, 5, 3)), i32([2, -1]), i32(1)],
            [p.out((2, 2, 3), same=True), p.out((2, 3, 3), same=True)],
            dict(num_splits=2),
            label="minus-one",
        ),
    ]


@recipe("TRANSPOSE")
def transpose(p: P):
    return [
        case(p.op, [p.x(X4), i32([0, 3, 1, 2])], [p.out((1, 3, 4, 4), same=True)], label="4d"),
        case(p.op, [p.x((2, 3, 4)), i32([2, 0, 1])], [p.out((4, 2, 3), same=True)], label="3d"),
        case(p.op, [p.x((2, 3, 1, 2, 2)), i32([4, 2, 0, 3, 1])], [p.out((2, 1, 2, 2, 3), same=True)], label="5d"),
    ]


@recipe("SLICE")
def slice_op(p: P):
    return [
        case(p.op, [p.x(X4), i32([0, 1, 1, 0]), i32([1, 2, -1, 2])], [p.out((1, 2, 3, 2), same=True)], label="int32"),
        case(p.op, [p.x((3, 4)), i64([1, 0]), i64([2, 3])], [p.out((2, 3), same=True)], label="int64"),
    ]


@recipe("STRIDED_SLICE")
def strided_slice(p: P):
    return [
        case(
            p.op,
            [p.x(X4), i32([0, 1, 0, 0]), i32([1, 4, 4, 2]), i32([1, 2, 1, 1])],
            [p.out((1, 2, 4, 2), same=True)],
            label="strides",
        ),
        case(
            p.op,
            [p.x(X4), i32([0, 0, 0, 1]), i32([1, 0, 0, 3]), i32([1, 1, 1, 1])],
            [p.out((4, 4, 2), same=True)],
            dict(begin_mask=0b0110, end_mask=0b0110, shrink_axis_mask=0b0001),
            label="masks-shrink",
        ),
        case(
            p.op,
            [p.x(X4), i32([0, 3, 0, -1]), i32([1, 0, 4, -4]), i32([1, -1, 1, -1])],
            [p.out((1, 4, 4, 3), same=True)],
            dict(end_mask=0b0010),
            label="negative-strides",
        ),
        case(
            p.op,
            [p.x((3, 4)), i32([1, 0]), i32([3, 4]), i32([1, 2])],
            [p.out((2, 1, 2), same=True)],
            dict(new_axis_mask=0b10, begin_mask=0b10, end_mask=0b10),
            label="new-axis",
        ),
    ]


@recipe("PAD", "PADV2", "MIRROR_PAD")
def pad(p: P):
    pads = [[0, 0], [1, 1], [2, 0], [0, 1]]
    extra = [p.const(0.5)] if p.op == "PADV2" else []
    opts = [dict(mode=0), dict(mode=1)] if p.op == "MIRROR_PAD" else [None]
    cases = []
    for k, o in enumerate(opts):
        mode = f"-mode{k}" if o else ""
        cases.append(
            case(p.op, [p.x(X4), i32(pads)] + extra, [p.out((1, 6, 6, 4), same=True)], o, label="int32-paddings" + mode)
        )
        cases.append(
            case(
                p.op,
                [p.x((3, 4)), i64([[1, 0], [1, 2]])] + extra,
                [p.out((4, 7), same=True)],
                o,
                label="int64-paddings" + mode,
            )
        )
    return cases


@recipe("TILE")
def tile(p: P):
    return [
        case(p.op, [p.x((2, 3)), i32([2, 3])], [p.out((4, 9), same=True)], label="int32-multiples"),
        case(p.op, [p.x((1, 2, 3)), i64([2, 1, 2])], [p.out((2, 2, 6), same=True)], label="int64-multiples"),
    ]


@recipe("BROADCAST_TO")
def broadcast_to(p: P):
    # LiteRT registers BROADCAST_TO from version 2 on.
    return [
        case(p.op, [p.x((1, 3)), i32([4, 3])], [p.out((4, 3), same=True)], label="2d", version=2),
        case(
            p.op,
            [p.x((2, 1, 3)), i64([2, 2, 4, 3])],
            [p.out((2, 2, 4, 3), same=True)],
            label="rank-up-int64",
            version=2,
        ),
    ]


@recipe("REVERSE_V2")
def reverse_v2(p: P):
    return [
        case(p.op, [p.x(X4), i32([2])], [p.out(X4, same=True)], label="one-axis"),
        case(p.op, [p.x((2, 3, 4)), i32([0, 2])], [p.out((2, 3, 4), same=True)], label="two-axes"),
    ]


@recipe("GATHER")
def gather(p: P):
    return [
        case(p.op, [p.x((5, 3)), i32([0, 4, 2, 2])], [p.out((4, 3), same=True)], dict(axis=0), label="axis0"),
        case(
            p.op, [p.x((5, 3)), i64([[0, 2], [1, 1]])], [p.out((5, 2, 2), same=True)], dict(axis=1), label="axis1-int64"
        ),
        case(
            p.op,
            [p.x((2, 5, 3)), i32([[0, 4, 1, 1], [3, 2, 0, 4]])],
            [p.out((2, 4, 3), same=True)],
            dict(axis=1, batch_dims=1),
            label="batch-dims",
        ),
        case(p.op, [p.x((6,)), i32([5, 0, 3])], [p.out((3,), same=True)], dict(axis=0), label="1d"),
    ]


@recipe("GATHER_ND")
def gather_nd(p: P):
    return [
        case(p.op, [p.x((4, 3, 2)), i32([[0, 1], [3, 2]])], [p.out((2, 2), same=True)], label="int32"),
        case(p.op, [p.x((4, 3, 2)), i64([[1], [3]])], [p.out((2, 3, 2), same=True)], label="int64-slices"),
    ]


@recipe("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(p: P):
    cases = []
    for label, opts in (
        ("default", {}),
        ("align-corners", dict(align_corners=True)),
        ("half-pixel-centers", dict(half_pixel_centers=True)),
    ):
        cases.append(case(p.op, [p.x(X4), i32([8, 6])], [p.out((1, 8, 6, 3), same=True)], opts, label=label))
    cases.append(
        case(
            p.op,
            [p.x((2, 5, 5, 2)), i32([3, 2])],
            [p.out((2, 3, 2, 2), same=True)],
            dict(half_pixel_centers=True),
            label="downscale",
        )
    )
    return cases


@recipe("DEPTH_TO_SPACE")
def depth_to_space(p: P):
    return case(p.op, [p.x((1, 2, 3, 8))], [p.out((1, 4, 6, 2), same=True)], dict(block_size=2))


@recipe("SPACE_TO_DEPTH")
def space_to_depth(p: P):
    return case(p.op, [p.x((1, 4, 6, 2))], [p.out((1, 2, 3, 8), same=True)], dict(block_size=2))


@recipe("BATCH_TO_SPACE_ND")
def batch_to_space_nd(p: P):
    return [
        case(
            p.op,
            [p.x((4, 2, 2, 3)), i32([2, 2]), i32([[0, 0], [0, 0]])],
            [p.out((1, 4, 4, 3), same=True)],
            label="no-crop",
        ),
        case(
            p.op,
            [p.x((4, 3, 3, 2)), i32([2, 2]), i32([[1, 0], [0, 2]])],
            [p.out((1, 5, 4, 2), same=True)],
            label="crops",
        ),
    ]


@recipe("SPACE_TO_BATCH_ND")
def space_to_batch_nd(p: P):
    return [
        case(p.op, [p.x(X4), i32([2, 2]), i32([[0, 0], [0, 0]])], [p.out((4, 2, 2, 3), same=True)], label="no-pad"),
        case(
            p.op,
            [p.x((1, 5, 4, 2)), i32([2, 2]), i32([[1, 0], [0, 2]])],
            [p.out((4, 3, 3, 2), same=True)],
            label="paddings",
        ),
    ]


@recipe("SHAPE")
def shape(p: P):
    return [
        case(p.op, [p.x(X4)], [Out((4,), np.int32)], dict(out_type=TYPE["int32"]), label="int32"),
        case(p.op, [p.x((2, 3))], [Out((2,), np.int64)], dict(out_type=TYPE["int64"]), label="int64"),
    ]


@recipe("RANK")
def rank(p: P):
    return case(p.op, [p.x(X4)], [Out((), np.int32)])


@recipe("FILL")
def fill(p: P):
    # ai-edge-litert's set_tensor garbles a rank-0 string input, so the string value is a constant
    value = p.const(np.array(3)) if p.path == "string" else p.x(())
    return [
        case(p.op, [i32([2, 3]), value], [p.out((2, 3), same=True)], label="int32-dims"),
        case(p.op, [i64([3, 1, 2]), value], [p.out((3, 1, 2), same=True)], label="int64-dims"),
    ]


@recipe("RANGE")
def range_op(p: P):
    if np.dtype(p.dtype).kind == "f":
        vals = [(0.5, 4.0, 0.75), (3.0, -1.0, -0.5)]
    else:
        vals = [(1, 10, 2), (5, -3, -3)]
    cases = []
    for k, (a, b, d) in enumerate(vals):
        ins = [Const(np.asarray(v).astype(p.dtype), p.dtype) for v in (a, b, d)]
        n = int(np.ceil((b - a) / d))
        cases.append(case(p.op, ins, [Out((n,), p.dtype)], label=f"const-{k}"))
    ins = [In((), p.dtype, gen=lambda rng, v=v: np.asarray(v)) for v in vals[0]]
    cases.append(case(p.op, ins, [Out((1,), p.dtype)], label="inputs"))
    return cases


@recipe("WHERE")
def where(p: P):
    return [
        case(p.op, [p.x((3, 4), gen=coarse_gen(p, (3, 4)))], [Out((1, 2), np.int64)], label="2d"),
        case(p.op, [p.x((6,), gen=coarse_gen(p, (6,)))], [Out((1, 1), np.int64)], label="1d"),
    ]


@recipe("ONE_HOT")
def one_hot(p: P):
    on, off = (np.asarray(v).astype(p.dtype) for v in ((1, 0) if p.path != "string" else (b"on", b"off")))
    idx = In((4,), np.int32, gen=lambda rng: rng.integers(-1, 5, 4))
    return [
        case(p.op, [idx, i32(5), Const(on), Const(off)], [Out((4, 5), p.dtype)], dict(axis=-1), label="last-axis"),
        case(
            p.op,
            [In((2, 3), np.int64, gen=lambda rng: rng.integers(0, 4, (2, 3))), i32(4), Const(on), Const(off)],
            [Out((4, 2, 3), p.dtype)],
            dict(axis=0),
            label="axis0-int64",
        ),
    ]


@recipe("MATRIX_DIAG")
def matrix_diag(p: P):
    return case(p.op, [p.x((2, 3))], [p.out((2, 3, 3), same=True)])


@recipe("MATRIX_SET_DIAG")
def matrix_set_diag(p: P):
    return [
        case(p.op, [p.x((2, 3, 3)), p.x((2, 3))], [p.out((2, 3, 3), same=True)], label="square"),
        case(p.op, [p.x((2, 3, 4)), p.x((2, 3))], [p.out((2, 3, 4), same=True)], label="wide"),
    ]


@recipe("REVERSE_SEQUENCE")
def reverse_sequence(p: P):
    return [
        case(
            p.op,
            [p.x((3, 4, 2)), i32([4, 2, 1])],
            [p.out((3, 4, 2), same=True)],
            dict(seq_dim=1, batch_dim=0),
            label="seq1-batch0",
        ),
        case(
            p.op,
            [p.x((4, 3, 2)), i64([1, 3, 4])],
            [p.out((4, 3, 2), same=True)],
            dict(seq_dim=0, batch_dim=1),
            label="seq0-batch1-int64",
        ),
    ]


@recipe("SCATTER_ND")
def scatter_nd(p: P):
    return [
        case(p.op, [i32([[1], [3]]), p.x((2, 3)), i32([5, 3])], [p.out((5, 3), same=True)], label="rows"),
        case(
            p.op,
            [i32([[0, 1], [2, 2], [0, 1]]), p.x((3,)), i32([3, 3])],
            [p.out((3, 3), same=True)],
            label="elements-duplicate",
        ),
    ]


@recipe("SEGMENT_SUM")
def segment_sum(p: P):
    return case(p.op, [p.x((4, 3)), i32([0, 0, 1, 2])], [p.out((3, 3), same=True)])


@recipe("UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN")
def unsorted_segment(p: P):
    return case(p.op, [p.x((5, 3)), i32([0, 2, 0, 1, 2]), i32(4)], [p.out((4, 3), same=True)])


@recipe("TOPK_V2")
def topk(p: P):
    return [
        case(p.op, [p.x((2, 6)), i32(3)], [p.out((2, 3), same=True), Out((2, 3), np.int32)], label="k3"),
        case(
            p.op,
            [p.x((2, 3, 5), gen=coarse_gen(p, (2, 3, 5))), i32(2)],
            [p.out((2, 3, 2), same=True), Out((2, 3, 2), np.int32)],
            label="ties",
        ),
    ]


@recipe("UNIQUE")
def unique(p: P):
    return [
        case(
            p.op,
            [p.x((8,), gen=coarse_gen(p, (8,)))],
            [p.out((1,), same=True), Out((8,), np.int32)],
            dict(idx_out_type=TYPE["int32"]),
            label="int32-idx",
        ),
        case(
            p.op,
            [p.x((8,), gen=coarse_gen(p, (8,)))],
            [p.out((1,), same=True), Out((8,), np.int64)],
            dict(idx_out_type=TYPE["int64"]),
            label="int64-idx",
        ),
    ]


@recipe("SPARSE_TO_DENSE")
def sparse_to_dense(p: P):
    return [
        case(
            p.op, [i32([[0, 1], [2, 3]]), i32([3, 4]), p.x((2,)), p.const(0.25)], [p.out((3, 4), same=True)], label="2d"
        ),
        case(p.op, [i64([1, 4]), i64([6]), p.x((2,)), p.const(0.0)], [p.out((6,), same=True)], label="1d-int64"),
    ]


@recipe("DYNAMIC_UPDATE_SLICE")
def dynamic_update_slice(p: P):
    return [
        case(p.op, [p.x((4, 4)), p.x((2, 2)), i32([1, 2])], [p.out((4, 4), same=True)], label="int32"),
        case(p.op, [p.x((4, 4)), p.x((2, 3)), i64([3, 3])], [p.out((4, 4), same=True)], label="clamped-int64"),
    ]


@recipe("EMBEDDING_LOOKUP", paths=ALL)
def embedding_lookup(p: P):
    ids = In((3,), np.int32, gen=lambda rng: rng.integers(0, 5, 3))
    if p.path == "hybrid":
        table = Const(p.rng.integers(-127, 128, (5, 4)).astype(np.int8), np.int8, quant(0.02, 0))
        per_channel = Const(
            p.rng.integers(-127, 128, (5, 4)).astype(np.int8),
            np.int8,
            quant(p.rand(5, 0.01, 0.03).astype(np.float64), 0, 0),
        )
        return [
            case(p.op, [ids, table], [Out((3, 4), np.float32)], label="int8-table"),
            case(p.op, [ids, per_channel], [Out((3, 4), np.float32)], label="per-channel"),
        ]
    return case(p.op, [ids, p.x((5, 4))], [p.out((3, 4), same=True)])


@recipe("BUCKETIZE")
def bucketize(p: P):
    return case(p.op, [p.x((2, 5))], [Out((2, 5), np.int32)], dict(boundaries=[-1.0, 0.0, 1.5]))


@recipe("BITCAST")
def bitcast(p: P):
    partner = {
        "float32": np.int32,
        "int32": np.float32,
        "int64": np.float64,
        "int8": np.uint8,
        "uint8": np.int8,
        "int16": np.uint16,
        "bool": np.uint8,
        "string": np.bytes_,
    }[p.path]
    return [
        case(p.op, [In((2, 4), p.dtype)], [Out((2, 4), partner)], label="same-size"),
        case(p.op, [In((2, 4), p.dtype)], [Out((2, 4, np.dtype(p.dtype).itemsize), np.uint8)], label="to-bytes"),
    ]


@recipe("BROADCAST_ARGS")
def broadcast_args(p: P):
    a = In((3,), p.dtype, gen=lambda rng: np.array([1, 4, 1]))
    b = In((3,), p.dtype, gen=lambda rng: np.array([3, 1, 5]))
    return case(p.op, [a, b], [Out((3,), p.dtype)])


# ----------------------------------------------------------------------------------------------
# Complex numbers, FFT, random numbers
# ----------------------------------------------------------------------------------------------


@recipe("COMPLEX_ABS", "REAL", "IMAG")
def complex_parts(p: P):
    if p.path == "float32":
        return [
            case(p.op, [In((2, 3), np.complex64)], [Out((2, 3), np.float32)], label="complex64"),
            case(p.op, [In((2, 3), np.complex128)], [Out((2, 3), np.float64)], label="complex128"),
        ]
    return case(p.op, [p.x((2, 3))], [p.out((2, 3))])


@recipe("RFFT2D")
def rfft2d(p: P):
    return [
        case(p.op, [p.x((2, 4, 8)), i32([4, 8])], [Out((2, 4, 5), np.complex64)], label="same-size"),
        case(p.op, [p.x((3, 5)), i32([4, 4])], [Out((4, 3), np.complex64)], label="crop-and-pad"),
    ]


@recipe("RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL")
def random_op(p: P):
    return [
        case(p.op, [i32([2, 3])], [Out((2, 3), p.dtype)], dict(seed=1, seed2=2), label="int32-shape"),
        case(p.op, [i64([4])], [Out((4,), p.dtype)], dict(seed=7, seed2=0), label="int64-shape"),
    ]


@recipe("MULTINOMIAL")
def multinomial(p: P):
    return [
        case(p.op, [p.x((2, 4)), i32(5)], [Out((2, 5), np.int64)], dict(seed=3, seed2=4), label="int64-out"),
        case(p.op, [p.x((1, 3)), i32(4)], [Out((1, 4), np.int32)], dict(seed=5, seed2=6), label="int32-out"),
    ]


# ----------------------------------------------------------------------------------------------
# Detection, non-max suppression
# ----------------------------------------------------------------------------------------------


def boxes_gen(n: int):
    def gen(rng):
        y, x = rng.uniform(0, 0.6, n), rng.uniform(0, 0.6, n)
        h, w = rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n)
        return np.stack([y, x, y + h, x + w], axis=1)

    return gen


@recipe("NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5")
def non_max_suppression(p: P):
    boxes = In((6, 4), p.dtype, gen=boxes_gen(6))
    scores = In((6,), p.dtype, lo=0.0, hi=1.0)
    ins = [boxes, scores, i32(4), Const(np.float32(0.4)), Const(np.float32(0.2))]
    if p.op == "NON_MAX_SUPPRESSION_V4":
        return case(p.op, ins, [Out((4,), np.int32), Out((), np.int32)])
    return [
        case(
            p.op,
            ins + [Const(np.float32(0.0))],
            [Out((4,), np.int32), Out((4,), np.float32), Out((), np.int32)],
            label="hard-nms",
        ),
        case(
            p.op,
            ins + [Const(np.float32(0.5))],
            [Out((4,), np.int32), Out((4,), np.float32), Out((), np.int32)],
            label="soft-nms",
        ),
    ]


@recipe("TFLite_Detection_PostProcess")
def detection_postprocess(p: P):
    from flatbuffers import flexbuffers

    n, classes, max_det = 6, 3, 3
    anchors = np.stack([np.linspace(0.2, 0.8, n), np.linspace(0.3, 0.7, n), np.full(n, 0.3), np.full(n, 0.4)], 1)
    qa = {"int8": quant(0.01, 0), "uint8": quant(0.01, 0)}.get(p.path)
    cq = {"int8": quant(1 / 256, -128), "uint8": quant(1 / 256, 0)}.get(p.path)
    cases = []
    for regular in (False, True):
        opts = dict(
            max_detections=max_det,
            max_classes_per_detection=1,
            detections_per_class=2,
            use_regular_nms=regular,
            nms_score_threshold=0.2,
            nms_iou_threshold=0.5,
            num_classes=classes,
            y_scale=10.0,
            x_scale=10.0,
            h_scale=5.0,
            w_scale=5.0,
        )
        box = p.x((1, n, 4), q=quant(0.05, 0) if p.quantized else None, lo=-2, hi=2)
        cls = p.x((1, n, classes + 1), q=cq, lo=0, hi=1)
        anc = p.const(anchors, q=qa) if p.quantized else Const(anchors.astype(p.dtype))
        outs = [Out((1, max_det, 4)), Out((1, max_det)), Out((1, max_det)), Out((1,))]
        cases.append(
            case(
                p.op,
                [box, cls, anc],
                outs,
                custom_options=bytes(flexbuffers.Dumps(opts)),
                label=f"regular-nms={regular}",
            )
        )
    return cases


@recipe("AudioSpectrogram")
def audio_spectrogram(p: P):  # LiteRT: float32 only (other paths are attempted and refused)
    from flatbuffers import flexbuffers

    cases = []
    for window, stride, squared in ((64, 32, True), (100, 40, False)):
        bins = (1 << (window - 1).bit_length()) // 2 + 1
        opts = bytes(flexbuffers.Dumps(dict(window_size=window, stride=stride, magnitude_squared=squared)))
        cases.append(
            case(
                p.op,
                [p.x((300, 2))],
                [p.out((2, 1 + (300 - window) // stride, bins), same=True)],
                custom_options=opts,
                label=f"window{window}-stride{stride}-squared={squared}",
            )
        )
    return cases


@recipe("Mfcc")
def mfcc(p: P):  # LiteRT: float32 spectrogram, int32 rate only (other paths are attempted and refused)
    from flatbuffers import flexbuffers

    opts = bytes(
        flexbuffers.Dumps(
            dict(
                upper_frequency_limit=4000,
                lower_frequency_limit=20,
                filterbank_channel_count=20,
                dct_coefficient_count=13,
            )
        )
    )
    spec = p.x((2, 3, 129), lo=0, hi=10)
    rate = In((1,), np.int32, gen=lambda rng: np.array([16000]))
    return [
        case(p.op, [spec, i32([16000])], [p.out((2, 3, 13), same=True)], custom_options=opts, label="constant-rate"),
        case(p.op, [spec, rate], [p.out((2, 3, 13), same=True)], custom_options=opts, label="rate-input"),
    ]


# ----------------------------------------------------------------------------------------------
# Smaller legacy ops
# ----------------------------------------------------------------------------------------------


@recipe("NumericVerify")
def numeric_verify(p: P):  # LiteRT: int8 / uint8 / int16 / float16 input (float16 shown as float32), f32 ref
    from flatbuffers import flexbuffers

    def opts(tolerance: float, log_if_failed: bool) -> bytes:
        return bytes(flexbuffers.Dumps(dict(tolerance=tolerance, log_if_failed=log_if_failed)))

    shape = (2, 3, 4)
    if p.path == "float32":  # the op's float variant: a float16 tensor verified against its float32 reference
        q_in, const = In(shape, np.float16), Const(p.rand(shape).astype(np.float16), np.float16)
    else:
        q_in, const = p.x(shape), p.const(p.rand(shape))
    ref, out = In(shape, np.float32), Out(shape, np.float32)
    exact = dict(rtol=0.0, atol=0.0)
    cases = [
        case(p.op, [q_in, ref], [out], custom_options=opts(0.0, False), label="statistics", **exact),
        case(p.op, [const, ref], [out], custom_options=opts(0.0, False), label="constant-input", **exact),
    ]
    if p.path != "float32":  # a float16 input has scale 0: every nonzero difference fails the check
        cases.append(case(p.op, [q_in, ref], [out], custom_options=opts(1e6, True), label="checked", **exact))
    if p.path in ("int8", "uint8"):
        zp = p.qin().zero_point[0]
        pc = QuantizationParameters(scale=(0.05, 0.1, 0.02), zero_point=(zp, zp, zp), quantized_dimension=1)
        cases.append(
            case(p.op, [p.x(shape, q=pc), ref], [out], custom_options=opts(0.0, False), label="per-channel", **exact)
        )
    return cases


@recipe("aeq.hadamard_rotation")
def hadamard_rotation(p: P):  # LiteRT: float32 and int32 (its bits transformed as float32) only
    from flatbuffers import flexbuffers

    cases = []
    for shape, size in (((2, 16), 8), ((2, 3, 128), 64), ((3, 10), 4)):  # small loop, unrolled (>= 64), ragged
        x = p.x(shape, lo=0, hi=10**6) if p.path == "int32" else p.x(shape)  # int32: no NaN bit patterns
        cases.append(
            case(
                p.op,
                [x],
                [p.out(shape, same=True)],
                rtol=0.0,
                atol=0.0,
                custom_options=bytes(flexbuffers.Dumps(dict(hadamard_size=size))),
                label=f"size{size}-{'x'.join(map(str, shape))}",
            )
        )
    return cases


# ----------------------------------------------------------------------------------------------
# MediaPipe's custom ops (float32 only). LiteRT runs the first three only with XNNPACK (its default resolver,
# AUTO), which claims the pools only when the filter equals the stride; the transform ops it cannot run.
# ----------------------------------------------------------------------------------------------


def _pool_params(padding: int, stride: int, size: int) -> bytes:  # TfLitePoolParams: padding 1 SAME, 2 VALID
    return struct.pack("<6i", padding, stride, stride, size, size, 0)


@recipe("Convolution2DTransposeBias")
def convolution_2d_transpose_bias(p: P):  # custom options: TfLiteTransposeConvParams {padding, stride_w, stride_h}
    cases = []
    for padding, stride, k in ((1, 2, 2), (1, 2, 3), (2, 1, 3)):
        x, (o, c) = p.x((1, 4, 5, 3)), (4, 3)
        p_h = max(0, k - 3 % stride - 1) if padding == 1 else 0
        p_w = max(0, k - 4 % stride - 1) if padding == 1 else 0
        out = p.out((1, stride * 3 + k - p_h, stride * 4 + k - p_w, o))
        cases.append(
            case(
                p.op,
                [x, p.const(p.rand((o, k, k, c))), p.const(p.rand((o,)))],
                [out],
                custom_options=struct.pack("<3i", padding, stride, stride),
                label=f"{'same' if padding == 1 else 'valid'}-k{k}-s{stride}",
            )
        )
    for c in cases:
        c.resolvers = (AUTO,)
    return cases


@recipe("MaxPoolingWithArgmax2D")
def max_pooling_with_argmax_2d(p: P):
    """The values, and the indices seen through MaxUnpooling2D: XNNPACK stores its indices as uint32 bits,
    column-major (MediaPipe: float ``fy * fw + fx + 0.1``), so they are compared by the positions they name
    (tests/ops/custom/test_mediapipe_pooling.py compares them directly). LiteRT crashes when the indices are not
    used."""
    cases = []
    for padding, shape in ((1, (1, 5, 6, 3)), (2, (2, 6, 4, 2))):
        g = Graph()
        oh, ow = (-(-shape[1] // 2), -(-shape[2] // 2)) if padding == 1 else (shape[1] // 2, shape[2] // 2)
        out = (shape[0], oh, ow, shape[3])
        values, idx = g.op(p.op, [p.x(shape)], [p.out(out), Out(out)], custom_options=_pool_params(padding, 2, 2))
        (y,) = g.op(
            "MaxUnpooling2D",
            [values, idx],
            [p.out((shape[0], 2 * oh, 2 * ow, shape[3]))],
            custom_options=_pool_params(2, 2, 2),
        )
        cases.append(g.case([values, y], label="same" if padding == 1 else "valid", resolvers=(AUTO,)))
    return cases


@recipe("MaxUnpooling2D")
def max_unpooling_2d(p: P):
    """Unpooling what MaxPoolingWithArgmax2D pooled (each runtime reads the index encoding its pool wrote)."""
    g = Graph()
    shape, out = (1, 6, 4, 3), (1, 3, 2, 3)
    values, idx = g.op(
        "MaxPoolingWithArgmax2D", [p.x(shape)], [p.out(out), Out(out)], custom_options=_pool_params(2, 2, 2)
    )
    (y,) = g.op(p.op, [values, idx], [p.out(shape)], custom_options=_pool_params(2, 2, 2))
    return g.case([y], label="after-MaxPoolingWithArgmax2D", resolvers=(AUTO,))


def _matrix(gen_rng, scale: float = 1.0) -> np.ndarray:
    a = gen_rng.uniform(-np.pi, np.pi)
    m = np.eye(4, dtype=np.float32)
    m[:2, :2] = scale * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    m[:2, 3] = gen_rng.uniform(0, 8, 2)
    return m.reshape(1, 4, 4)


@recipe("Landmarks2TransformMatrix")
def landmarks2_transform_matrix(p: P):  # FlexBuffer options; v2 (MediaPipe's CPU resolver) and v1
    from flatbuffers import flexbuffers

    v2 = dict(
        left_rotation_idx=0,
        right_rotation_idx=1,
        target_rotation_radians=0.0,
        output_height=16,
        output_width=16,
        scale_x=1.5,
        scale_y=1.5,
        subset_idxs=[0, 1, 2, 3, 4, 5],
    )
    v1 = dict(
        input_hw=[64, 64],
        output_hw=[16, 16],
        dimensions=3,
        landmarks_range=64,
        bbox_size_multiplier=1.5,
        left_rotation_idx=0,
        right_rotation_idx=1,
        subset=[0, 1, 2, 3, 4, 5],
    )
    return [
        case(
            p.op,
            [p.x((1, 6, 3), lo=0, hi=64)],
            [p.out((1, 4, 4))],
            version=2,
            label="v2",
            custom_options=bytes(flexbuffers.Dumps(v2)),
        ),
        case(
            p.op,
            [p.x((1, 1, 1, 18), lo=0, hi=64)],
            [p.out((1, 4, 4))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(v1)),
        ),
    ]


@recipe("TransformLandmarks")
def transform_landmarks(p: P):  # v2: no options; v1: FlexBuffer {dimensions, scale}
    from flatbuffers import flexbuffers

    m = In((1, 4, 4), p.dtype, gen=_matrix) if p.path == "float32" else p.x((1, 4, 4))
    return [
        case(p.op, [p.x((1, 5, 3), lo=0, hi=16), m], [p.out((1, 5, 3))], version=2, label="v2"),
        case(
            p.op,
            [p.x((1, 2, 2, 4), lo=0, hi=16), m],
            [p.out((1, 2, 2, 4))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(dict(dimensions=2, scale=2.0))),
        ),
    ]


@recipe("TransformTensorBilinear")
def transform_tensor_bilinear(p: P):  # v2 {output_height, output_width}; v1 {mode, output_size}
    from flatbuffers import flexbuffers

    m = In((1, 4, 4), p.dtype, gen=_matrix) if p.path == "float32" else p.x((1, 4, 4))
    x = p.x((1, 8, 8, 3))
    return [
        case(
            p.op,
            [x, m],
            [p.out((1, 4, 5, 3))],
            version=2,
            label="v2",
            custom_options=bytes(flexbuffers.Dumps(dict(output_height=4, output_width=5))),
        ),
        case(
            p.op,
            [x, m],
            [p.out((1, 4, 5, 3))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(dict(mode="bilinear", output_size=[4, 5]))),
        ),
    ]


@recipe("HASHTABLE_LOOKUP")
def hashtable_lookup(p: P):
    lookup = In((4,), np.int32, gen=lambda rng: rng.integers(0, 8, 4))
    keys = i32([1, 3, 4, 6])
    values = Const(randv(p, (4,))) if p.path == "string" else p.const(p.rand((4, 2), -2, 2))
    vshape = (4,) if p.path == "string" else (4, 2)
    return case(p.op, [lookup, keys, values], [p.out(vshape, same=True), Out((4,), np.uint8)])


@recipe("LSH_PROJECTION")
def lsh_projection(p: P):
    hashes = f32(p.rand((4, 2), -1, 1))
    return [
        case(
            p.op,
            [hashes, p.x((3, 2)), f32([0.5, 1.0, 2.0])],
            [Out((4,), np.int32)],
            dict(type=1),
            label="sparse-weighted",
        ),
        case(p.op, [hashes, p.x((3, 2)), None], [Out((8,), np.int32)], dict(type=2), label="dense"),
    ]


@recipe("SKIP_GRAM")
def skip_gram(p: P):
    gen = (lambda rng: np.array([b"the quick brown fox jumps"], dtype=object)) if p.path == "string" else None
    sentence = In((1,), p.dtype, gen=gen)
    return [
        case(
            p.op,
            [sentence],
            [Out((1,), p.dtype)],
            dict(ngram_size=2, max_skip_size=1, include_all_ngrams=b),
            label=f"all-ngrams={b}",
        )
        for b in (False, True)
    ]


@recipe("EMBEDDING_LOOKUP_SPARSE")
def embedding_lookup_sparse(p: P):
    ids = i32([1, 3, 0])
    indices = i32([[0, 0], [2, 0], [2, 1]])
    return [
        case(
            p.op,
            [ids, indices, i32([3, 2]), f32([1.0, 2.0, 0.5]), p.x((4, 2))],
            [p.out((3, 2))],
            dict(combiner=c),
            label=f"combiner{c}",
        )
        for c in (0, 1, 2)
    ]


@recipe("CONCAT_EMBEDDINGS")
def concat_embeddings(p: P):  # a schema op without a kernel in LiteRT: expected n/a
    return case(
        p.op,
        [In((2,), np.int32, gen=lambda rng: np.array([0, 1])), p.x((3, 2))],
        [p.out((2, 2))],
        dict(num_channels=1, num_columns_per_channel=[1], embedding_dim_per_channel=[2]),
    )


@recipe("DENSIFY")
def densify(p: P):
    from litert_py.schema.model import DimensionMetadata, SparsityParameters

    dense = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 4, 0]], np.float32)
    rows, cols = np.nonzero(dense)
    values = np.asarray(dense[rows, cols])
    sp = SparsityParameters(
        traversal_order=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=3),
            DimensionMetadata(
                format=1,
                array_segments=(0, 2, 2, 4),
                array_indices=tuple(int(c) for c in cols),
                array_segments_type=1,
                array_indices_type=1,
            ),
        ),
    )
    g = Graph()
    c = p.const(values)
    data = np.asarray(c.data)
    t = g.b.tensor("sparse", dense.shape, data.dtype, data=data, quantization=c.q, sparsity=sp)
    o = g.op(p.op, [t], [p.out(dense.shape, same=True)])
    return g.case(o)


@recipe("DILATE")
def dilate(p: P):
    return [
        case(p.op, [p.x((2, 3)), i32([2, 3]), p.const(0.5)], [p.out((3, 7), same=True)], label="2d"),
        case(p.op, [p.x((2, 2, 2)), i32([1, 2, 1]), p.const(0.0)], [p.out((2, 3, 2), same=True)], label="3d"),
    ]


@recipe("REDUCE_WINDOW")
def reduce_window(p: P):
    cases = []
    fns = {"ADD": 1, "MUL": 2, "MINIMUM": 3, "MAXIMUM": 4} if p.path != "bool" else {"ALL": 5, "ANY": 6}
    for name, fn in fns.items():
        init = {"ADD": 0, "MUL": 1, "MINIMUM": 3, "MAXIMUM": -3, "ALL": True, "ANY": False}[name]
        cases.append(
            case(
                p.op,
                [
                    p.x((4, 5), lo=0.5 if name == "MUL" else None, hi=1.5 if name == "MUL" else None),
                    Const(np.asarray(init).astype(p.dtype)),
                    i64([2, 2]),
                    i64([1, 2]),
                    i64([1, 1]),
                ],
                [p.out((3, 2), same=True)],
                dict(reduce_function=fn),
                label=name.lower(),
            )
        )
    return cases


# ----------------------------------------------------------------------------------------------
# Control flow, resources, hashtables
# ----------------------------------------------------------------------------------------------


def _identity_branch(p: P, shape):
    def build(g: Graph, idx):
        return g.op("RESHAPE", [idx[0], i32(shape)], [p.out(shape, same=True)])

    return build


def _reverse_branch(p: P, shape):
    def build(g: Graph, idx):
        n = len(shape)
        begin, end, strides = i32([shape[0] - 1] + [0] * (n - 1)), i32([0] * n), i32([-1] + [1] * (n - 1))
        return g.op(
            "STRIDED_SLICE",
            [idx[0], begin, end, strides],
            [p.out(shape, same=True)],
            dict(begin_mask=0, end_mask=(1 << n) - 1),
        )

    return build


@recipe("IF")
def if_op(p: P):
    shape = (2, 3)
    g = Graph()
    then = g.subgraph([p.out(shape, same=True)], _identity_branch(p, shape))
    other = g.subgraph([p.out(shape, same=True)], _reverse_branch(p, shape))
    o = g.op(
        "IF",
        [In((), np.bool_), p.x(shape)],
        [p.out(shape, same=True)],
        dict(then_subgraph_index=then, else_subgraph_index=other),
    )
    return g.case(o)


@recipe("WHILE")
def while_op(p: P):
    shape = (2, 3)
    g = Graph()
    loop = [Out((), np.int32), p.out(shape, same=True)]

    def cond(g: Graph, idx):
        return g.op("LESS", [idx[0], i32(3)], [Out((), np.bool_)])

    def body(g: Graph, idx):
        (i,) = g.op("ADD", [idx[0], i32(1)], [Out((), np.int32)])
        (x,) = _reverse_branch(p, shape)(g, [idx[1]])
        return [i, x]

    c, b = g.subgraph(loop, cond), g.subgraph(loop, body)
    o = g.op(
        "WHILE",
        [In((), np.int32, gen=lambda rng: rng.integers(0, 4, ())), p.x(shape)],
        [Out((), np.int32), p.out(shape, same=True)],
        dict(cond_subgraph_index=c, body_subgraph_index=b),
    )
    return g.case(o)


@recipe("CALL")
def call(p: P):  # deprecated: no kernel in LiteRT, expected n/a
    g = Graph()
    k = g.subgraph([p.out((2, 3), same=True)], _identity_branch(p, (2, 3)))
    return g.case(g.op("CALL", [p.x((2, 3))], [p.out((2, 3), same=True)], dict(subgraph=k)))


def _variable_model(p: P, with_call_once: bool) -> Case:
    """VAR_HANDLE + READ_VARIABLE + ASSIGN_VARIABLE; with CALL_ONCE the variable is set by an init subgraph and
    each invoke returns the previous input, else each invoke assigns the input and reads it back."""
    shape = (2, 3)
    g = Graph()
    if with_call_once:

        def init(g: Graph, idx):
            h = g.resource()
            g.op("VAR_HANDLE", [], [h], dict(shared_name="v"))
            g.op("ASSIGN_VARIABLE", [h, p.const(p.rand(shape, -1, 1))], [])
            return []

        k = g.subgraph([], init)
        g.op("CALL_ONCE", [], [], dict(init_subgraph_index=k))
    x = g.add(p.x(shape))
    h = g.resource()
    g.op("VAR_HANDLE", [], [h], dict(shared_name="v"))
    if with_call_once:
        (y,) = g.op("READ_VARIABLE", [h], [p.out(shape, same=True)])
        g.op("ASSIGN_VARIABLE", [h, x], [])
    else:
        g.op("ASSIGN_VARIABLE", [h, x], [])
        (y,) = g.op("READ_VARIABLE", [h], [p.out(shape, same=True)])
    return g.case([y], label="call-once-init" if with_call_once else "assign-read")


@recipe("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
def variables(p: P):
    return [_variable_model(p, False), _variable_model(p, True)]


@recipe("CALL_ONCE")
def call_once(p: P):
    return _variable_model(p, True)


@recipe("HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE")
def hashtable(p: P):
    """A table filled by a CALL_ONCE init subgraph, then looked up: int64 -> string, string -> int64."""
    if p.path in ("int64", "string"):
        keys = np.array([3, 7, 11, 20]) if p.path == "int64" else np.array(WORDS[1:5], dtype=object)
    else:
        keys = randv(p, (4,))
    values = (
        np.array([b"three", b"seven", b"eleven", b"twenty"], dtype=object)
        if p.path != "string"
        else np.array([3, 7, 11, 20], np.int64)
    )
    vtype = np.bytes_ if p.path != "string" else np.int64
    default = np.array(b"?", dtype=object) if p.path != "string" else np.int64(-1)
    opts = dict(
        table_id=1, key_dtype=TYPE.get(p.path, 0), value_dtype=TYPE["string" if p.path != "string" else "int64"]
    )
    g = Graph()

    def init(g: Graph, idx):
        h = g.resource()
        g.op("HASHTABLE", [], [h], opts)
        g.op("HASHTABLE_IMPORT", [h, Const(keys), Const(values)], [])
        return []

    k = g.subgraph([], init)
    g.op("CALL_ONCE", [], [], dict(init_subgraph_index=k))
    h = g.resource()
    g.op("HASHTABLE", [], [h], opts)
    query = In(
        (5,),
        p.dtype,
        gen=lambda rng: np.concatenate(
            [keys[rng.integers(0, 4, 4)], keys[:0], randv(p, (1,)) if p.path != "int64" else [99]]
        ),
    )
    (found,) = g.op("HASHTABLE_FIND", [h, query, Const(default)], [Out((5,), vtype)])
    (size,) = g.op("HASHTABLE_SIZE", [h], [Out((1,), np.int64)])
    return g.case([found, size])


# ----------------------------------------------------------------------------------------------
# Recurrent ops (float and hybrid; the fully quantized LSTM needs intermediates and is not covered yet)
# ----------------------------------------------------------------------------------------------


def rnn_weight(p: P, shape):
    if p.path == "hybrid":
        return Const(p.rng.integers(-127, 128, shape).astype(np.int8), np.int8, quant(0.01, 0))
    return Const(randv(p, shape, -0.5, 0.5))


def rnn_inputs(p: P, n_in: int, units: int, batch: int):
    return [
        rnn_weight(p, (units, n_in)),
        rnn_weight(p, (units, units)),
        Const(randv(p, (units,), -0.2, 0.2)),
        Var((batch, units), p.dtype),
    ]


@recipe("RNN", paths=ALL)
def rnn(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((2, 4))],
            dict(fused_activation_function=act),
            label=f"act{act}",
        )
        for act in (RELU, TANH)
    ]


@recipe("UNIDIRECTIONAL_SEQUENCE_RNN", paths=ALL)
def sequence_rnn(p: P):
    return [
        case(
            p.op,
            [p.x((2, 5, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((2, 5, 4))],
            dict(time_major=False, fused_activation_function=TANH),
            label="batch-major",
        ),
        case(
            p.op,
            [p.x((5, 2, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((5, 2, 4))],
            dict(time_major=True, fused_activation_function=RELU),
            label="time-major",
        ),
    ]


@recipe("BIDIRECTIONAL_SEQUENCE_RNN", paths=ALL)
def bidirectional_rnn(p: P):
    ins = [p.x((2, 5, 3))] + rnn_inputs(p, 3, 4, 2) + rnn_inputs(p, 3, 4, 2) + [None, None, None]
    return [
        case(
            p.op,
            ins,
            [p.out((2, 5, 4)), p.out((2, 5, 4))],
            dict(time_major=False, fused_activation_function=TANH, merge_outputs=False),
            label="separate",
        ),
        case(
            p.op,
            ins,
            [p.out((2, 5, 8))],
            dict(time_major=False, fused_activation_function=TANH, merge_outputs=True),
            label="merged",
        ),
    ]


@recipe("SVDF", paths=ALL)
def svdf(p: P):
    batch, n_in, units, rank, memory = 2, 3, 4, 2, 5
    filters = units * rank
    if p.path == "int8":  # int8 activations and feature weights, int16 time weights and state, int32 bias; RELU
        wf, wt, state = quant(0.01, 0), quant(0.0005, 0), quant(0.005, 0)
        bias_q = quant(float(np.float32(0.005)) * float(np.float32(0.0005)), 0)
        return [
            case(
                p.op,
                [
                    p.x((batch, n_in)),
                    Const(p.rand((filters, n_in), -127, 127, np.int8), np.int8, wf),
                    Const(p.rand((filters, memory), -3000, 3000, np.int16), np.int16, wt),
                    Const(p.rand((units,), -2000, 2000, np.int32), np.int32, bias_q),
                    Var((batch, memory * filters), np.int16, state),
                ],
                [p.out((batch, units), q=quant(0.02, -3))],
                dict(rank=rank, fused_activation_function=RELU),
            )
        ]
    return case(
        p.op,
        [
            p.x((batch, n_in)),
            rnn_weight(p, (filters, n_in)),
            rnn_weight(p, (filters, memory)),
            Const(randv(p, (units,), -0.2, 0.2)),
            Var((batch, memory * filters), p.dtype),
        ],
        [p.out((batch, units))],
        dict(rank=rank, fused_activation_function=RELU),
    )


def lstm_weights(
    p: P, n_in: int, n_cell: int, n_out: int, batch: int, peephole=False, projection=False, layer_norm=False, cifg=False
) -> list:
    """The 20 weight/bias/state inputs (1..19 and the four layer-norm ones) of an LSTM, in schema order."""

    def w(shape):
        return rnn_weight(p, shape)

    def b(n, lo=-0.2, hi=0.2):
        return Const(randv(p, (n,), lo, hi))

    ins = [
        None if cifg else w((n_cell, n_in)),
        w((n_cell, n_in)),
        w((n_cell, n_in)),
        w((n_cell, n_in)),
        None if cifg else w((n_cell, n_out)),
        w((n_cell, n_out)),
        w((n_cell, n_out)),
        w((n_cell, n_out)),
    ]
    ins += [
        w((n_cell,)) if peephole and not cifg else None,
        w((n_cell,)) if peephole else None,
        w((n_cell,)) if peephole else None,
    ]  # peephole weights: int8 on the hybrid path too
    ins += [None if cifg else b(n_cell), b(n_cell, 0.5, 1.0), b(n_cell), b(n_cell)]
    ins += [w((n_out, n_cell)) if projection else None, b(n_out) if projection else None]
    ins += [Var((batch, n_out), p.dtype), Var((batch, n_cell), p.dtype)]
    ins += [b(n_cell, 0.5, 1.5) if layer_norm and not cifg else None] + [
        b(n_cell, 0.5, 1.5) if layer_norm else None for _ in range(3)
    ]
    return ins


LSTM_VARIANTS = (
    ("plain", {}),
    ("peephole-projection", dict(peephole=True, projection=True)),
    ("cifg-layer-norm", dict(cifg=True, layer_norm=True)),
)
# uint8: LSTM's BASIC kernel type (kernel_type 1: 5 inputs, 4 outputs, uint8 activations, int16 state), and
# full-kernel attempts with uint8 activations (LiteRT's full kernels take float32, int8 and int16 only). Not
# attempted: a uint8 input with float32 weights, biases and states, which LiteRT's full kernels accept and
# EvalFloat then reads as float32, past the end of the input buffer (litert_py refuses it).
# Layer-normalized integer LSTMs have no recipe yet.
INTEGER_LSTM_PATHS = ALL


def basic_lstm_case(p: P, batch: int = 2, n_in: int = 3, n_out: int = 4) -> Case:
    """LSTM with kernel_type BASIC: input, prev_activ, weights (4N, I+N), biases (4N,), prev_state (ordinary
    inputs, not variables) -> activ, state, concat_temp, activ_temp. uint8: activations Q0.7 (zero point 128),
    uint8 weights with a zero point, int32 bias of scale s_in * s_w, int16 state of scale 2^-11, activ_temp
    int16 Q3.12; float32: every tensor float32."""
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, kernel_type=1)
    k = n_in + n_out
    if p.path == "uint8":
        qa, qs, s_w = quant(1 / 128, 128), quant(2.0**-11, 0), 0.02
        ins = [
            In((batch, n_in), np.uint8, qa),
            In((batch, n_out), np.uint8, qa),
            Const(p.rand((4 * n_out, k), 0, 255, np.uint8), np.uint8, quant(s_w, 120)),
            Const(p.rand((4 * n_out,), -3000, 3000, np.int32), np.int32, quant(s_w / 128, 0)),
            In((batch, n_out), np.int16, qs),
        ]
        outs = [
            Out((batch, n_out), np.uint8, qa),
            Out((batch, n_out), np.int16, qs),
            Out((batch, k), np.uint8, qa),
            Out((batch, 4 * n_out), np.int16, quant(2.0**-12, 0)),
        ]
    else:
        ins = [
            p.x((batch, n_in)),
            p.x((batch, n_out)),
            Const(randv(p, (4 * n_out, k), -0.5, 0.5)),
            Const(randv(p, (4 * n_out,), -0.5, 0.5)),
            p.x((batch, n_out)),
        ]
        outs = [p.out((batch, n_out)), p.out((batch, n_out)), p.out((batch, k)), p.out((batch, 4 * n_out))]
    return case("LSTM", ins, outs, opts, label="basic")


def integer_lstm_case(p: P, op: str, xshape, oshape, options: dict, projection: bool) -> Case:
    """The 8x8_16 integer LSTM (int8 activations; int16 for the int16 path): int8 weights, int32 (int64)
    biases, an int16 cell state with a power-of-two scale, and the five intermediates LiteRT reads (four gate
    scales of 2^-12, unused without layer norm, and the hidden state's scale)."""
    n_in, n_cell, n_out, batch = xshape[-1], 4, oshape[-1], xshape[0]
    in_scale = QIN[p.path][0].scale[0]
    bdt = np.int64 if p.path == "int16" else np.int32
    out_q = {"int8": quant(1 / 128, 0), "uint8": quant(1 / 128, 128)}.get(p.path, quant(1 / 32768, 0))

    def w(shape):
        return Const(p.rand(shape, -127, 127, np.int8), np.int8, quant(0.02, 0))

    def b(scale):
        return Const(p.rand((n_cell,), -500, 500, bdt), bdt, quant(scale * 0.02, 0))

    ins = [p.x(xshape)] + [w((n_cell, n_in)) for _ in range(4)] + [w((n_cell, n_out)) for _ in range(4)]
    ins += [None] * 3 + [b(in_scale) for _ in range(4)]
    ins += [w((n_out, n_cell)), None] if projection else [None, None]
    ins += [Var((batch, n_out), p.dtype, out_q), Var((batch, n_cell), np.int16, quant(2.0**-11, 0))]
    ins += [None] * 4
    g = Graph()
    inter = [g.add(Out((), np.int16, quant(2.0**-12, 0))) for _ in range(4)]
    inter.append(g.add(Out((), p.dtype, out_q)))
    o = g.op(op, ins, [Out(oshape, p.dtype, out_q)], options, intermediates=inter)
    return g.case(o, label="integer-projection" if projection else "integer")


@recipe("LSTM", paths=INTEGER_LSTM_PATHS, not_applicable=())
def lstm(p: P):
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, kernel_type=0)
    if p.path in ("int8", "int16"):
        return [
            integer_lstm_case(p, p.op, (2, 3), (2, 4), opts, False),
            integer_lstm_case(p, p.op, (2, 3), (2, 3), opts, True),
        ]
    n_out = {"plain": 4, "peephole-projection": 3, "cifg-layer-norm": 4}
    full = [
        case(
            p.op,
            [p.x((2, 3))] + lstm_weights(p, 3, 4, n_out[label], 2, **kw),
            [p.out((2, n_out[label]))],
            opts,
            label=label,
        )
        for label, kw in LSTM_VARIANTS
    ]
    if p.path == "uint8":  # the BASIC kernel; the full kernel attempted with uint8 activations too
        return [basic_lstm_case(p), integer_lstm_case(p, p.op, (2, 3), (2, 4), opts, False)] + full
    return full + ([basic_lstm_case(p)] if p.path == "float32" else [])


@recipe("UNIDIRECTIONAL_SEQUENCE_LSTM", paths=INTEGER_LSTM_PATHS, not_applicable=())
def sequence_lstm(p: P):
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, time_major=False)
    if p.path in ("int8", "int16", "uint8"):  # uint8: attempted (LiteRT's integer kernels take int8/int16 only)
        integer = [
            integer_lstm_case(p, p.op, (2, 5, 3), (2, 5, 4), opts, False),
            integer_lstm_case(p, p.op, (2, 5, 3), (2, 5, 3), opts, True),
        ]
        if p.path != "uint8":
            return integer
        return integer + [
            case(p.op, [p.x((2, 5, 3))] + lstm_weights(p, 3, 4, 4, 2), [p.out((2, 5, 4))], opts, label="uint8-weights")
        ]
    n_out = {"plain": 4, "peephole-projection": 3, "cifg-layer-norm": 4}
    return [
        case(
            p.op,
            [p.x((2, 5, 3))] + lstm_weights(p, 3, 4, n_out[label], 2, **kw),
            [p.out((2, 5, n_out[label]))],
            opts,
            label=label,
        )
        for label, kw in LSTM_VARIANTS
    ]


@recipe("BIDIRECTIONAL_SEQUENCE_LSTM", paths=ALL)  # LiteRT: float input only (float or hybrid weights)
def bidirectional_lstm(p: P):
    def half():
        ws = lstm_weights(p, 3, 4, 4, 2)
        return ws[:17], ws[17:19]  # 17 weights/biases/projection (inputs 1..17 in order), then the 2 states

    fw, fw_state = half()
    bw, bw_state = half()
    ins = [p.x((2, 5, 3))] + fw + bw + fw_state + bw_state + [None] * 9
    return case(
        p.op,
        ins,
        [p.out((2, 5, 4)), p.out((2, 5, 4))],
        dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, merge_outputs=False, time_major=False),
    )


# ----------------------------------------------------------------------------------------------
# StableHLO ops with structure (LiteRT registers only a few of them: the rest can only be `beyond`)
# ----------------------------------------------------------------------------------------------


@recipe("STABLEHLO_RESHAPE")
def stablehlo_reshape(p: P):
    return case(p.op, [p.x((2, 6))], [p.out((3, 4), same=True)])


@recipe("STABLEHLO_BROADCAST_IN_DIM")
def stablehlo_broadcast_in_dim(p: P):
    return [
        case(p.op, [p.x((3,))], [p.out((2, 3), same=True)], dict(broadcast_dimensions=[1]), label="rank-up"),
        case(
            p.op, [p.x((1, 3))], [p.out((3, 2, 4), same=True)], dict(broadcast_dimensions=[1, 0]), label="transposing"
        ),
    ]


@recipe("STABLEHLO_SLICE")
def stablehlo_slice(p: P):
    return case(
        p.op,
        [p.x((4, 6))],
        [p.out((2, 2), same=True)],
        dict(start_indices=[1, 0], limit_indices=[4, 6], strides=[2, 3]),
    )


@recipe("STABLEHLO_PAD")
def stablehlo_pad(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3)), p.const(0.5)],
            [p.out((4, 7), same=True)],
            dict(edge_padding_low=[1, 0], edge_padding_high=[0, 2], interior_padding=[1, 1]),
            label="interior",
        ),
        case(
            p.op,
            [p.x((3, 4)), p.const(0.0)],
            [p.out((2, 4), same=True)],
            dict(edge_padding_low=[-1, 1], edge_padding_high=[0, -1], interior_padding=[0, 0]),
            label="negative",
        ),
    ]


@recipe("STABLEHLO_IOTA")
def stablehlo_iota(p: P):
    return [case(p.op, [], [p.out((3, 4), same=True)], dict(iota_dimension=d), label=f"dim{d}") for d in (0, 1)]


@recipe("STABLEHLO_TRANSPOSE")
def stablehlo_transpose(p: P):
    return case(p.op, [p.x((2, 3, 4))], [p.out((3, 2, 4), same=True)], dict(permutation=[1, 0, 2]))


@recipe("STABLEHLO_DOT_GENERAL")
def stablehlo_dot_general(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3, 4)), p.x((2, 4, 5))],
            [p.out((2, 3, 5))],
            dict(
                lhs_batching_dimensions=[0],
                rhs_batching_dimensions=[0],
                lhs_contracting_dimensions=[2],
                rhs_contracting_dimensions=[1],
            ),
            label="batched",
        ),
        case(
            p.op,
            [p.x((3, 4)), p.x((5, 4))],
            [p.out((3, 5))],
            dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1]),
            label="matmul-transposed",
        ),
    ]


@recipe("STABLEHLO_GATHER")
def stablehlo_gather(p: P):
    return case(
        p.op,
        [p.x((3, 4)), i32([[0], [2]])],
        [p.out((2, 4), same=True)],
        dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]),
    )


@recipe("STABLEHLO_DYNAMIC_SLICE")
def stablehlo_dynamic_slice(p: P):
    starts = [In((), np.int32, gen=lambda rng: rng.integers(-1, 5, ())) for _ in range(2)]
    return case(p.op, [p.x((4, 5))] + starts, [p.out((2, 3), same=True)], dict(slice_sizes=[2, 3]))


@recipe("STABLEHLO_DYNAMIC_UPDATE_SLICE")
def stablehlo_dynamic_update_slice(p: P):
    starts = [In((), np.int32, gen=lambda rng: rng.integers(-1, 5, ())) for _ in range(2)]
    return case(p.op, [p.x((4, 5)), p.x((2, 3))] + starts, [p.out((4, 5), same=True)])


@recipe("STABLEHLO_CONVOLUTION")
def stablehlo_convolution(p: P):
    return case(
        p.op,
        [p.x((1, 5, 5, 3)), Const(randv(p, (3, 3, 3, 4), -0.5, 0.5))],
        [p.out((1, 5, 5, 4))],
        dict(
            window_strides=[1, 1],
            padding=[1, 1, 1, 1],
            lhs_dilation=[1, 1],
            rhs_dilation=[1, 1],
            input_batch_dimension=0,
            input_feature_dimension=3,
            input_spatial_dimensions=[1, 2],
            kernel_input_feature_dimension=2,
            kernel_output_feature_dimension=3,
            kernel_spatial_dimensions=[0, 1],
            output_batch_dimension=0,
            output_feature_dimension=3,
            output_spatial_dimensions=[1, 2],
            feature_group_count=1,
            batch_group_count=1,
        ),
    )


def _scalar_body(p: P, op: str, n_in: int = 2, out_dtype=None):
    def build(g: Graph, idx):
        return g.op(op, idx[:n_in], [Out((), out_dtype or p.dtype, p.qin() if out_dtype is None else None)])

    return build


@recipe("STABLEHLO_REDUCE")
def stablehlo_reduce(p: P):
    g = Graph()
    k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, "STABLEHLO_ADD"))
    o = g.op(
        p.op, [p.x((2, 3, 4)), p.const(0)], [p.out((2, 4), same=True)], dict(dimensions=[1], body_subgraph_index=k)
    )
    return g.case(o)


@recipe("STABLEHLO_REDUCE_WINDOW")
def stablehlo_reduce_window(p: P):
    cases = []
    for body, init in (("STABLEHLO_ADD", 0), ("STABLEHLO_MAXIMUM", -3)):
        g = Graph()
        k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, body))
        o = g.op(
            p.op,
            [p.x((1, 4, 5, 1)), p.const(init)],
            [p.out((1, 3, 2, 1), same=True)],
            dict(
                window_dimensions=[1, 2, 2, 1],
                window_strides=[1, 1, 2, 1],
                base_dilations=[1, 1, 1, 1],
                window_dilations=[1, 1, 1, 1],
                padding=[0, 0, 0, 0, 0, 0, 0, 0],
                body_subgraph_index=k,
            ),
        )
        cases.append(g.case(o, label=body.lower()))
    return cases


@recipe("STABLEHLO_SORT")
def stablehlo_sort(p: P):
    g = Graph()

    def comparator(g: Graph, idx):
        return g.op("STABLEHLO_COMPARE", idx, [Out((), np.bool_)], dict(comparison_direction=5))

    k = g.subgraph([p.out((), same=True)] * 2, comparator)
    o = g.op(
        p.op,
        [p.x((2, 5), gen=coarse_gen(p, (2, 5)))],
        [p.out((2, 5), same=True)],
        dict(dimension=1, is_stable=True, comparator_subgraph_index=k),
    )
    return g.case(o)


@recipe("STABLEHLO_WHILE")
def stablehlo_while(p: P):
    g = Graph()
    loop = [Out((), np.int32), p.out((2, 3), same=True)]

    def cond(g: Graph, idx):
        return g.op("STABLEHLO_COMPARE", [idx[0], i32(3)], [Out((), np.bool_)], dict(comparison_direction=5))

    def body(g: Graph, idx):
        (i,) = g.op("STABLEHLO_ADD", [idx[0], i32(1)], [Out((), np.int32)])
        (x,) = g.op("STABLEHLO_ADD", [idx[1], idx[1]], [p.out((2, 3), same=True)])
        return [i, x]

    c, b = g.subgraph(loop, cond), g.subgraph(loop, body)
    o = g.op(
        p.op,
        [In((), np.int32, gen=lambda rng: rng.integers(0, 4, ())), p.x((2, 3))],
        loop,
        dict(cond_subgraph_index=c, body_subgraph_index=b),
    )
    return g.case(o)


@recipe("STABLEHLO_SCATTER")
def stablehlo_scatter(p: P):
    g = Graph()
    k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, "STABLEHLO_ADD"))
    o = g.op(
        p.op,
        [p.x((5, 3)), i32([[1], [3]]), p.x((2, 3))],
        [p.out((5, 3), same=True)],
        dict(
            update_window_dims=[1],
            inserted_window_dims=[0],
            scatter_dims_to_operand_dims=[0],
            index_vector_dim=1,
            update_computation_subgraph_index=k,
        ),
    )
    return g.case(o)


@recipe("STABLEHLO_COMPOSITE")
def stablehlo_composite(p: P):
    g = Graph()

    def decomposition(g: Graph, idx):
        return g.op("ADD", [idx[0], idx[0]], [p.out((2, 3))], dict(fused_activation_function=NONE))

    from flatbuffers import flexbuffers

    k = g.subgraph([p.out((2, 3), same=True)], decomposition)
    attrs = bytes(flexbuffers.Dumps({"factor": 2}))
    o = g.op(
        p.op,
        [p.x((2, 3))],
        [p.out((2, 3))],
        dict(
            name="test.double",
            decomposition_subgraph_index=k,
            composite_attributes=attrs,
            composite_attributes_format=0,
            version=1,
        ),
    )
    return g.case(o)


@recipe("STABLEHLO_CASE")
def stablehlo_case(p: P):
    # Operands after the branch index are passed to the branch (the IF convention); index out of range
    # picks the last branch, as in StableHLO.
    g = Graph()
    branches = []
    for op in ("STABLEHLO_ADD", "STABLEHLO_MULTIPLY"):

        def build(g: Graph, idx, op=op):
            return g.op(op, [idx[0], idx[0]], [p.out((2, 3))])

        branches.append(g.subgraph([p.out((2, 3), same=True)], build))
    o = g.op(
        p.op,
        [In((), np.int32, gen=lambda rng: rng.integers(0, 3, ())), p.x((2, 3))],
        [p.out((2, 3))],
        dict(branch_subgraph_indices=branches),
    )
    return g.case(o)


@recipe("STABLEHLO_RNG_BIT_GENERATOR", paths=("int32", "int64"), not_applicable=ALL)
def stablehlo_rng_bit_generator(p: P):
    state = Const(np.array([1, 2], np.uint64))
    return [
        case(p.op, [state], [Out((2,), np.uint64), Out((2, 3), p.dtype)], dict(algorithm=a), label=f"algorithm{a}")
        for a in (1, 2)
    ]


@recipe("STABLEHLO_CUSTOM_CALL", paths=ALL, not_applicable=())
def stablehlo_custom_call(p: P):
    # The callee is whatever the target name means to some backend: neither runtime has one to run.
    return case(p.op, [p.x((2, 3))], [p.out((2, 3))], dict(call_target_name="litert_py.test_target"))


# ==============================================================================================
# Running: LiteRT in a child process, litert_py here
# ==============================================================================================


class LiteRTWorker:
    """The child process serving LiteRT runs (each case in a fork of it); restarted if it dies itself."""

    def __init__(self, timeout: float = CASE_TIMEOUT):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.crashes: list[str] = []

    def _start(self) -> None:
        self.err = tempfile.TemporaryFile()
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            env=env,
        )

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.err.close()
            self.proc = None

    def _read(self, n: int, deadline: float) -> bytes:
        buf = b""
        fd = self.proc.stdout.fileno()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def run_batch(self, jobs: Sequence[tuple], whats: Sequence[str]) -> list[tuple]:
        """LiteRT's results for (model, feeds, resolvers) jobs: see ``litert_run``; a crash gives
        ("crashed", _, message, None) for the job that caused it."""
        if self.proc is None:
            self._start()
        data = pickle.dumps([(m, f, tuple(r)) for m, f, r in jobs])
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
            deadline = time.monotonic() + 2 * self.timeout * len(jobs) + 10  # the worker enforces the real limit
            n = struct.unpack("<Q", self._read(8, deadline))[0]
            results = pickle.loads(self._read(n, deadline))
        except (TimeoutError, EOFError, BrokenPipeError):  # the worker itself died: start a new one
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.err.close()
            self.proc = None
            results = [("crashed", "?", "LiteRT worker died", None)] * len(jobs)
        for result, what in zip(results, whats):
            if result[0] == "crashed":  # the stderr detail varies between runs: not in the doc
                self.crashes.append(f"{what}: {result[2].split(':')[0]}")
        return results

    def run(self, model: bytes, feeds, what: str = "", resolvers: tuple[str, ...] = (REF, OPT)) -> tuple:
        return self.run_batch([(model, feeds, resolvers)], [what])[0]


class _Timeout(BaseException):  # not an Exception: a kernel's ``except Exception`` must not swallow it
    pass


def _alarm(signum, frame):
    raise _Timeout


def ours_run(model: bytes, feeds, timeout: float = CASE_TIMEOUT) -> tuple:
    """("ok", outputs) or ("error", message) from litert_py, in this process, with a time limit."""
    from litert_py import Interpreter

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return "ok", _run_interpreter(Interpreter(model_content=model, num_threads=1), feeds)
    except _Timeout:
        return "error", f"timeout after {timeout:.0f}s"
    except Exception as e:  # any failure of ours is a coverage finding, not a tool failure
        return "error", f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _as_bytes_list(a: np.ndarray) -> list:
    return [x if isinstance(x, bytes) else bytes(x) if not isinstance(x, str) else x.encode() for x in a.reshape(-1)]


def compare(ours: list[np.ndarray], theirs: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """None when equal; else what differs. Integers exactly; floats within atol + rtol * max|reference|."""
    if len(ours) != len(theirs):
        return f"{len(ours)} outputs, LiteRT gives {len(theirs)}"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"output {k}: shape {list(a.shape)}, LiteRT {list(b.shape)}"
        if b.dtype.kind in "OSU" or a.dtype.kind in "OSU":
            if _as_bytes_list(a) != _as_bytes_list(b):
                return f"output {k}: strings differ"
            continue
        if a.dtype != b.dtype:
            return f"output {k}: dtype {a.dtype}, LiteRT {b.dtype}"
        if b.dtype.kind in "fc":
            fin = np.isfinite(b)
            if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(
                a[~fin & ~np.isnan(b)], b[~fin & ~np.isnan(b)]
            ):
                return f"output {k}: non-finite values differ"
            if not fin.any():
                continue
            scale = float(np.max(np.abs(b[fin])))
            diff = np.abs(a[fin].astype(np.complex128 if b.dtype.kind == "c" else np.float64) - b[fin])
            if diff.max() > atol + rtol * scale:
                return f"output {k}: max |diff| {diff.max():.3g} (tolerance {atol + rtol * scale:.3g})"
        elif not np.array_equal(a, b):
            bad = int(np.sum(a != b))
            d = np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))) if b.dtype != np.bool_ else 1
            return f"output {k}: {bad}/{b.size} elements differ (max |diff| {d})"
    return None


@dataclass
class CaseResult:
    status: str  # yes | missing | differs | n/a | beyond
    note: str = ""
    resolver: str = ""
    label: str = ""
    ref_vs_opt: str = ""  # how LiteRT's optimized kernels differ from its reference ones, if they do


@dataclass
class Cell:
    status: str  # yes | missing | differs | n/a | beyond | untested
    notes: list[tuple[str, str]] = field(default_factory=list)  # (reason, variant label)
    resolvers: set[str] = field(default_factory=set)
    ref_vs_opt: list[tuple[str, str]] = field(default_factory=list)  # (difference, variant label)

    @property
    def text(self) -> str:
        return "missing (differs)" if self.status == "differs" else self.status


def _first_line(msg: str, n: int = 160) -> str:
    """A short, stable reason: the first line, without LiteRT's "Node number ..." tail (unless that is all)."""
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    short = re.sub(r"\s*Node number \d+ \(.*$", "", text)
    text = short if short.rstrip(": ") not in ("RuntimeError", "ValueError", "LiteRT") else text
    return text if len(text) <= n else text[: n - 3] + "..."


def classify(c: Case, feeds, litert: tuple) -> CaseResult:
    """One case's status from LiteRT's result and litert_py's run on the same feeds."""
    kind, resolver, payload, alt = litert
    mine = ours_run(c.model, feeds)
    if kind != "ok":
        if mine[0] == "ok":
            return CaseResult("beyond", f"LiteRT: {_first_line(payload)}")
        return CaseResult("n/a", f"LiteRT: {_first_line(payload)}")
    ref_vs_opt = ""
    if alt is not None:
        ref_vs_opt = next((w for w in (compare(a, r, c.rtol, c.atol) for r, a in zip(payload, alt)) if w), "")
    if mine[0] != "ok":
        return CaseResult("missing", _first_line(mine[1]), resolver, ref_vs_opt=ref_vs_opt)
    for theirs, ours in zip(payload, mine[1]):
        why = compare(ours, theirs, c.rtol, c.atol)
        if why:
            return CaseResult("differs", why, resolver, ref_vs_opt=ref_vs_opt)
    return CaseResult("yes", "", resolver, ref_vs_opt=ref_vs_opt)


def combine(results: list[CaseResult]) -> Cell:
    """All models of a path: yes when every one LiteRT runs is yes; n/a / beyond when LiteRT runs none."""
    supported = [r for r in results if r.status in ("yes", "missing", "differs")]
    cell = Cell("n/a")
    if supported:
        bad = [r for r in supported if r.status != "yes"]
        cell.status = "yes" if not bad else ("missing" if any(r.status == "missing" for r in bad) else "differs")
        cell.notes = [(r.note, r.label) for r in bad]
        cell.resolvers = {r.resolver for r in supported}
        cell.ref_vs_opt = [(r.ref_vs_opt, r.label) for r in supported if r.ref_vs_opt]
    else:
        cell.status = "beyond" if any(r.status == "beyond" for r in results) else "n/a"
        cell.notes = [(r.note, r.label) for r in results]
    return cell


_RANK = {"yes": 0, "differs": 1, "missing": 2, "beyond": 3, "n/a": 4, "untested": 5}


# (op, path) pairs whose BUILTIN_REF kernel in ai-edge-litert 2.3.0 gives garbage: compared with the optimized
# kernels instead (litert_py should compute the right numbers, not reproduce these).
REF_BROKEN = {
    ("SUM", "int8"): "BUILTIN_REF returns -1 in every element (e.g. [-1 -1 -1] where the sum is [-13 -3 36])",
    ("SUM", "int16"): "BUILTIN_REF returns values like [-1 255 0] where the sum is [-545 -280 1640]",
    ("LOCAL_RESPONSE_NORMALIZATION", "float32"): "BUILTIN_REF sums the window [c - r, c + r), not TensorFlow's "
    "[c - r, c + r] (0.5625 where TensorFlow and the default kernels give 0.442)",
}


#: Paths LiteRT "runs" only by reading or writing outside its buffers (garbage or a crash): not a supported
#: path, so n/a; litert_py refuses them at prepare. Each is pinned by a test in tests/ops.
UNSAFE_IN_LITERT = {
    ("MATRIX_DIAG", "bool"): "LiteRT sends bool through its float32 branch and reads/writes out of bounds",
    ("MATRIX_SET_DIAG", "bool"): "LiteRT sends bool through its float32 branch and reads/writes out of bounds",
}


def build_cases(op: str, path: str) -> list[Case] | Cell:
    """The models of one (op, path), or the cell itself when there is nothing to run."""
    if (op, path) in UNSAFE_IN_LITERT:
        return Cell("n/a", [("unsafe in LiteRT", UNSAFE_IN_LITERT[op, path])])
    r = RECIPES.get(op)
    if r is None:
        return Cell("untested")
    if path not in r.paths:
        return Cell("n/a", [("no such path", "")]) if path in r.not_applicable else Cell("untested")
    cases = r.fn(P(op, path))
    return [cases] if isinstance(cases, Case) else list(cases)


def evaluate_path(op: str, path: str, worker: LiteRTWorker, log=None) -> Cell:
    """Run every model of one (op, path) in both runtimes and classify the cell."""
    try:  # a broken recipe must not stop the run; it is reported and the cell stays untested
        cases = build_cases(op, path)
        if isinstance(cases, Cell):
            return cases
        if (op, path) in REF_BROKEN:
            for c in cases:
                c.resolvers = (OPT,)
        feeds = [c.feeds(zlib.crc32(f"{op}/{path}/{k}".encode())) for k, c in enumerate(cases)]
        whats = [f"{op} {path}" + (f" [{c.label}]" if c.label else "") for c in cases]
        theirs = worker.run_batch([(c.model, f, c.resolvers or (REF, OPT)) for c, f in zip(cases, feeds)], whats)
        results = []
        for c, f, t in zip(cases, feeds, theirs):
            res = classify(c, f, t)
            res.label = c.label
            results.append(res)
    except Exception as e:
        if log:
            log(f"{op} {path}: recipe error: {type(e).__name__}: {e}")
        return Cell("untested", [(f"recipe error: {type(e).__name__}: {e}", "")])
    return combine(results) if results else Cell("n/a", [("no such path", "")])


def evaluate_op(op: str, worker: LiteRTWorker, log=None) -> dict[str, Cell]:
    """The cells of one row, by column (``int32/int64``: the better of the two)."""
    cells = {path: evaluate_path(op, path, worker, log) for path in PATHS}
    i32, i64 = cells.pop("int32"), cells.pop("int64")
    cells["int32/int64"] = i32 if _RANK[i32.status] <= _RANK[i64.status] else i64
    return {col: cells[col] for col in COLUMNS}


# ==============================================================================================
# The dashboard
# ==============================================================================================


def render(rows: dict[str, dict[str, Cell]], crashes: Sequence[str] = ()) -> str:
    counts = {k: 0 for k in ("yes", "missing", "n/a", "untested", "beyond")}
    for cells in rows.values():
        for col in COLUMNS:
            s = cells[col].status
            counts["missing" if s == "differs" else s] += 1
    differs = sum(c.status == "differs" for cells in rows.values() for c in cells.values())
    with_recipe = sum(op in RECIPES for op in rows)
    lines = [
        "# Op coverage",
        "",
        "Generated by `python tools/op_coverage.py` (do not edit by hand; `--check` tells whether it is current).",
        "Each cell runs small single-op models in ai-edge-litert (reference kernels, `BUILTIN_REF`; ops that",
        "resolver lacks use the default kernels without delegates) and in litert_py on seeded random inputs,",
        "comparing integers exactly and floats within a tolerance.",
        "",
        "- `yes`: litert_py runs it and equals LiteRT; `missing`: LiteRT runs it, litert_py does not;",
        "  `missing (differs)`: litert_py runs it with different outputs (see the notes below the table);",
        "- `n/a`: LiteRT rejects it too (or the op has no such path: `hybrid` = float input with int8",
        "  constant weights, only for ops with weights); `beyond`: LiteRT rejects it, litert_py runs it;",
        "  `untested`: no recipe for it yet. `int32/int64` is `yes` when either width is.",
        "",
        "## Summary",
        "",
        f"{len(rows)} ops, {with_recipe} with a recipe; {len(rows) * len(COLUMNS)} cells:",
        "",
        "| yes | missing | n/a | untested | beyond |",
        "|---|---|---|---|---|",
        f"| {counts['yes']} | {counts['missing']} | {counts['n/a']} | {counts['untested']} | {counts['beyond']} |",
        "",
        f"({differs} of the missing cells run in litert_py with outputs that differ.)",
        "",
        "## Table",
        "",
        "`module`: the litert_py module whose kernel the op is registered by (litert_py/ops/...).",
        "",
        "| op | module | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for op, cells in rows.items():
        lines.append(f"| {op} | {kernel_module(op)} | " + " | ".join(cells[c].text for c in COLUMNS) + " |")
    no_kernel = [
        op
        for op, cells in rows.items()
        if any(c.status == "missing" for c in cells.values())
        and all(n.startswith("UnsupportedOpError") for c in cells.values() if c.status == "missing" for n, _ in c.notes)
    ]
    lines += ["", "## Notes", ""]
    if no_kernel:
        lines += [
            "LiteRT runs these, litert_py has no kernel for them:",
            "",
            *textwrap.wrap(", ".join(no_kernel), 110, break_on_hyphens=False),
            "",
        ]
    notes = []
    for op, cells in rows.items():
        for col in COLUMNS:
            c = cells[col]
            if c.status in ("missing", "differs") and op not in no_kernel:
                notes += [f"- {op} {col}: {line}" for line in grouped_notes(c.notes)]
    if notes:
        lines += ["Missing cells where litert_py has a kernel (reason, then the failing variants):", "", *notes, ""]
    opt = [
        f"{op} ({', '.join(c for c in COLUMNS if OPT in cells[c].resolvers)})"
        for op, cells in rows.items()
        if any(OPT in cells[c].resolvers for c in COLUMNS) and not any((op, p) in REF_BROKEN for p in PATHS)
    ]
    if opt:
        lines += [
            "Compared with LiteRT's default (optimized) kernels, since `BUILTIN_REF` does not register them:",
            "",
            *textwrap.wrap(", ".join(opt), 110, break_on_hyphens=False),
            "",
        ]
    auto = [
        f"{op} ({', '.join(c for c in COLUMNS if AUTO in cells[c].resolvers)})"
        for op, cells in rows.items()
        if any(AUTO in cells[c].resolvers for c in COLUMNS)
    ]
    if auto:
        lines += [
            "Compared with LiteRT's default resolver (`AUTO`: XNNPACK), the only one that runs them:",
            "",
            *textwrap.wrap(", ".join(auto), 110, break_on_hyphens=False),
            "",
        ]
    unsafe = [f"- {op} {path}: {why}" for (op, path), why in UNSAFE_IN_LITERT.items() if op in rows]
    if unsafe:
        lines += [
            "n/a because LiteRT runs them only out of bounds (litert_py refuses them at prepare):",
            "",
            *unsafe,
            "",
        ]
    broken = [f"- {op} {path}: {why}" for (op, path), why in REF_BROKEN.items() if op in rows]
    if broken:
        lines += [
            "Compared with LiteRT's optimized kernels because its reference kernel is broken there:",
            "",
            *broken,
            "",
        ]
    disagree = [
        f"- {op} {col}: {line}"
        for op, cells in rows.items()
        for col in COLUMNS
        for line in grouped_notes(cells[col].ref_vs_opt)
    ]
    if disagree:
        lines += [
            "LiteRT's reference (`BUILTIN_REF`, the oracle here) and optimized kernels disagree on these",
            "(optimized vs reference):",
            "",
            *disagree,
            "",
        ]
    if crashes:
        lines += [
            "LiteRT crashed or hung on these models (counted as rejections; each LiteRT case runs in a",
            "forked child process, so a crash costs that case only):",
            "",
            *[f"- {c}" for c in crashes],
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def grouped_notes(notes: Sequence[tuple[str, str]]) -> list[str]:
    """One line per distinct reason, naming the variants that gave it."""
    by_reason: dict[str, list[str]] = {}
    for reason, label in notes:
        by_reason.setdefault(reason, []).append(label)
    return [
        reason + (f" ({', '.join(lb for lb in labels if lb)})" if any(labels) else "")
        for reason, labels in by_reason.items()
    ]


def kernel_module(op: str) -> str:
    """The module that registers ``op``'s kernel, as ``ops/<name>.py`` (``-`` when litert_py has none)."""
    from litert_py.ops import registry

    if op in CUSTOM_OPS:
        entry = registry.lookup(int(BuiltinOperator.CUSTOM), op)
    else:
        entry = registry.lookup(int(BuiltinOperator[op]), None)
    if entry is None:
        return "-"
    return entry.prepare.__module__.removeprefix("litert_py.").replace(".", "/") + ".py"


def parse_modules(text: str) -> dict[str, str]:
    """The dashboard's op -> module column (used by tests)."""
    return {op: cells["module"] for op, cells in parse_table(text, keep_module=True).items()}


def parse_table(text: str, keep_module: bool = False) -> dict[str, dict[str, str]]:
    """The dashboard's table back to {op: {column: cell}} (used by tests); the module column only with
    ``keep_module``."""
    rows, header = {}, None
    for line in text.splitlines():
        if not line.startswith("| "):
            continue
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts[0] == "op":
            header = parts[1:]
            continue
        if header is not None and len(parts) == len(header) + 1:
            row = dict(zip(header, parts[1:]))
            if not keep_module:
                row.pop("module", None)
            rows[parts[0]] = row
    return rows


def evaluate(ops: Sequence[str], verbose: bool = False) -> tuple[dict[str, dict[str, Cell]], list[str]]:
    def log(msg):
        print(msg, file=sys.stderr)

    worker = LiteRTWorker()
    rows = {}
    try:
        for op in ops:
            rows[op] = evaluate_op(op, worker, log)
            if verbose:
                for col in COLUMNS:
                    c = rows[op][col]
                    for n in grouped_notes(c.notes):
                        log(f"{op:28s} {col:12s} {c.text:18s} {n}")
    finally:
        worker.close()
    return rows, worker.crashes


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", help=f"file to write (default {DEFAULT_OUT.relative_to(ROOT)}; stdout with --ops)")
    ap.add_argument("--ops", help="comma-separated op names (default: every op)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file would change")
    ap.add_argument("--verbose", action="store_true", help="print every non-yes case's reason to stderr")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    ops = all_ops()
    if args.ops:
        wanted = [o.strip() for o in args.ops.split(",") if o.strip()]
        unknown = sorted(set(wanted) - set(ops))
        if unknown:
            ap.error(f"unknown op(s): {', '.join(unknown)}")
        ops = [o for o in ops if o in wanted]
    if args.check and args.ops and not args.out:
        ap.error("--check with --ops needs --out (the dashboard holds every op)")
    out = args.out or (None if args.ops else str(DEFAULT_OUT))
    t0 = time.monotonic()
    rows, crashes = evaluate(ops, args.verbose)
    text = render(rows, crashes)
    print(f"{len(ops)} ops in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    if args.check:
        path = Path(out or DEFAULT_OUT)
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{path} is not current: run python tools/op_coverage.py", file=sys.stderr)
            return 1
        return 0
    if out is None or out == "-":
        sys.stdout.write(text)
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
