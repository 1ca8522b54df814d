"""The op dashboard's case and model infrastructure: the columns and rows, the input / constant / output specs
(``In``, ``Const``, ``Out``, ``Var``), ``Case`` and ``Graph`` (models), ``P`` (what a recipe knows of its path),
the ``@recipe`` registry, value drawing and quantization, and the helpers recipes share.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.model import BuiltinOperator, QuantizationParameters
from tests.values import WORDS, bools, ints, quantize, quantized, uniform, words  # the tests' value generator

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


def draw(rng: np.random.Generator, spec: In) -> np.ndarray:
    shape, dt = tuple(spec.shape), np.dtype(spec.dtype)
    if spec.gen is not None:
        return np.asarray(spec.gen(rng), dtype=object if dt.kind == "S" else dt).reshape(shape)
    if dt.kind == "S":
        return words(rng, shape)
    if dt == np.bool_:
        return bools(rng, shape)
    if spec.q is not None and spec.q.scale and dt.kind in "iu":
        return quantized(rng, shape, dt, spec.q, spec.lo, spec.hi)
    if dt.kind in "iu":
        lo = int(spec.lo) if spec.lo is not None else (0 if dt.kind == "u" else -10)
        return ints(rng, shape, dt, lo, int(spec.hi) if spec.hi is not None else 10)
    return uniform(rng, shape, dt, spec.lo if spec.lo is not None else -3.0, spec.hi if spec.hi is not None else 3.0)


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
        return ints(self.rng, shape, dt, lo, hi) if dt.kind in "iu" else uniform(self.rng, shape, dt, lo, hi)


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
        return words(p.rng, shape)
    if dt == np.bool_:
        return bools(p.rng, shape)
    if dt.kind in "iu":
        return ints(p.rng, shape, dt, 0 if dt.kind == "u" else -3, 3)
    return uniform(p.rng, shape, dt, lo, hi)


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
