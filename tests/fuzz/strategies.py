"""Random small graphs over ``litert_py.schema.builder``: a structure-aware hypothesis strategy.

A graph has one or two inputs (float32, int32, int64, bool or quantized int8/uint8/int16; ranks 0-4, small
dims, sometimes a zero dim) and one to four ops. Most ops come from families whose operands are built to fit
(unary and binary elementwise with broadcasting, comparisons, reductions, shape ops with constant operands,
FULLY_CONNECTED, CONV_2D, pooling, quantized arithmetic, outputs sized by runtime values), so that most graphs
reach invoke; the operands' quantization, axes and options are sometimes made inconsistent on purpose. One op
in six is "wild": any op of the registry with random operands, output types and options, which mostly tests
the refusals. Values come from a seed drawn with the graph (``input_values``), mostly small, sometimes
extreme, so shape tensors fed at runtime can ask for huge outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from litert_py.ops.registry import registered_builtins
from litert_py.schema.builder import ModelBuilder
from litert_py.schema.model import OP_OPTIONS, BuiltinOperator, QuantizationParameters
from litert_py.schema.tables import default_options, table_fields

F32 = np.dtype(np.float32)
QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))

FLOAT_UNARY = [
    "ABS",
    "NEG",
    "EXP",
    "LOG",
    "SQRT",
    "RSQRT",
    "SIN",
    "COS",
    "TANH",
    "LOGISTIC",
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "FLOOR",
    "CEIL",
    "ROUND",
    "SQUARE",
    "ELU",
    "HARD_SWISH",
    "GELU",
    "SIGN",
    "ZEROS_LIKE",
    "LEAKY_RELU",
    "SOFTMAX",
    "LOG_SOFTMAX",
    "L2_NORMALIZATION",
]
INT_UNARY = ["ABS", "NEG", "SQUARE", "SIGN", "ZEROS_LIKE", "RELU", "CAST"]
QUANT_UNARY = [
    "RELU",
    "RELU6",
    "LOGISTIC",
    "TANH",
    "ABS",
    "NEG",
    "SOFTMAX",
    "LOG_SOFTMAX",
    "LEAKY_RELU",
    "HARD_SWISH",
    "DEQUANTIZE",
    "QUANTIZE",
    "ELU",
    "RSQRT",
    "SQUARE",
]
BINARY = ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD"]
QUANT_BINARY = ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "DIV"]
COMPARE = ["LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL", "GREATER_EQUAL"]
REDUCE = ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"]
ACTIVATIONS = [0, 0, 1, 2, 3, 4]  # NONE, RELU, RELU_N1_TO_1, RELU6, TANH
WILD_SKIP = {
    "WHILE",
    "IF",
    "CALL_ONCE",
    "STABLEHLO_WHILE",
    "STABLEHLO_CASE",
    "STABLEHLO_COMPOSITE",
    "STABLEHLO_REDUCE",
    "STABLEHLO_SORT",
    "STABLEHLO_SCATTER",
    "STABLEHLO_REDUCE_WINDOW",
}  # need subgraphs
ALL_OPS = [BuiltinOperator(c).name for c in registered_builtins()]
WILD_OPS = [n for n in ALL_OPS if n not in WILD_SKIP]
INPUT_TYPES = (
    [F32] * 5 + [np.dtype(np.int32)] * 2 + list(QUANTIZED) + [np.dtype(np.int8), np.dtype(np.int64), np.dtype(np.bool_)]
)


@dataclass
class Tensor:
    index: int
    dtype: np.dtype
    shape: tuple[int, ...]
    q: QuantizationParameters | None = None


@dataclass
class Graph:
    """A drawn case: the model bytes, a seed for the input values and what was drawn (for the report)."""

    model: bytes
    seed: int
    ops: list[str] = field(default_factory=list)

    def __repr__(self) -> str:  # hypothesis prints this on failure; the bytes rebuild the case
        return f"Graph(ops={self.ops}, seed={self.seed}, model={self.model!r})"


class _Draw:
    """The graph under construction."""

    def __init__(self, draw):
        self.draw = draw
        self.b = ModelBuilder()
        self.pool: list[Tensor] = []
        self.n = 0
        self.ops: list[str] = []

    # -- helpers --------------------------------------------------------------------------------------
    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def quant(self, dtype: np.dtype) -> QuantizationParameters | None:
        if dtype not in QUANTIZED:
            return None
        d = self.draw
        if d(st.integers(0, 9)) == 0:  # inconsistent on purpose
            scale = d(st.sampled_from([0.0, -0.5, 1e-40, 1e30, float("inf"), float("nan")]))
            zp = d(st.sampled_from([0, 2**31, -(2**40), 300, -129]))
        else:
            scale = float(np.float32(2.0 ** d(st.integers(-10, 2)) * d(st.sampled_from([1.0, 0.75, 0.3]))))
            info = np.iinfo(dtype)
            zp = 0 if dtype == np.int16 else d(st.integers(int(info.min), int(info.max)))
        return QuantizationParameters(scale=(scale,), zero_point=(int(zp),))

    def shape(self, max_rank: int = 4) -> tuple[int, ...]:
        rank = self.draw(st.integers(0, max_rank))
        dims = st.one_of(st.integers(1, 4), st.just(0)) if self.draw(st.integers(0, 14)) == 0 else st.integers(1, 4)
        return tuple(self.draw(dims) for _ in range(rank))

    def tensor(self, dtype, shape=(), q=None) -> Tensor:
        dtype = np.dtype(dtype)
        i = self.b.tensor(self.name("t"), shape, dtype, quantization=q)
        t = Tensor(i, dtype, tuple(shape), q)
        self.pool.append(t)
        return t

    def const(self, data, dtype=None, q=None) -> Tensor:
        arr = np.asarray(data, dtype=dtype)
        i = self.b.const(self.name("c"), arr, quantization=q)
        return Tensor(i, arr.dtype, arr.shape, q)

    def const_like(self, dtype: np.dtype, shape, q=None) -> Tensor:
        rng = np.random.default_rng(self.draw(st.integers(0, 2**16)))
        if dtype == np.bool_:
            return self.const(rng.integers(0, 2, shape).astype(bool), q=q)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = (int(info.min), int(info.max)) if dtype in QUANTIZED else (-4, 8)
            return self.const(rng.integers(lo, hi, shape, endpoint=True).astype(dtype), q=q)
        return self.const((rng.standard_normal(shape) * 2).astype(dtype), q=q)

    def pick(self) -> Tensor:
        if self.draw(st.integers(0, 9)) < 6:
            return self.pool[-1]
        return self.draw(st.sampled_from(self.pool))

    def emit(self, op: str, inputs, outputs, options=None, version: int = 1) -> None:
        self.b.op(
            op,
            [t.index if isinstance(t, Tensor) else t for t in inputs],
            [t.index for t in outputs],
            options,
            version=version,
        )
        self.ops.append(op)

    def broadcast_shape(self, shape) -> tuple[int, ...]:
        """A shape that broadcasts against ``shape`` (same, scalar, a suffix, or with ones)."""
        kind = self.draw(st.integers(0, 3))
        if kind == 0 or not shape:
            return tuple(shape)
        if kind == 1:
            return ()
        if kind == 2:
            return tuple(shape[self.draw(st.integers(0, len(shape))) :])
        return tuple(1 if self.draw(st.booleans()) else d for d in shape)

    def axes(self, rank: int) -> list[int]:
        if rank == 0 or self.draw(st.integers(0, 9)) == 0:
            return self.draw(st.lists(st.integers(-5, 5), max_size=3))  # inconsistent on purpose, sometimes
        return sorted(self.draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))

    # -- op families ----------------------------------------------------------------------------------
    def unary(self, x: Tensor) -> None:
        d = self.draw
        if x.dtype in QUANTIZED and x.q is not None:
            op = d(st.sampled_from(QUANT_UNARY))
            if op == "DEQUANTIZE":
                return self.emit(op, [x], [self.tensor(F32, x.shape)])
            out_q = self.quant(x.dtype) if op not in ("RELU", "RELU6", "ABS", "NEG") or d(st.booleans()) else x.q
            y = self.tensor(x.dtype, x.shape, out_q)
            opts = {"LEAKY_RELU": dict(alpha=0.2), "SOFTMAX": dict(beta=1.0)}.get(op)
            return self.emit(op, [x], [y], opts)
        if x.dtype == F32:
            op = d(st.sampled_from(FLOAT_UNARY + ["QUANTIZE"]))
            if op == "QUANTIZE":
                qt = d(st.sampled_from(QUANTIZED))
                return self.emit(op, [x], [self.tensor(qt, x.shape, self.quant(qt))])
            opts = {"LEAKY_RELU": dict(alpha=0.2), "SOFTMAX": dict(beta=d(st.sampled_from([1.0, 0.5])))}.get(op)
            return self.emit(op, [x], [self.tensor(F32, x.shape)], opts)
        op = d(st.sampled_from(INT_UNARY))
        if op == "CAST" or x.dtype == np.bool_:
            to = d(st.sampled_from([F32, np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)]))
            return self.emit("CAST", [x], [self.tensor(to, x.shape)])
        return self.emit(op, [x], [self.tensor(x.dtype, x.shape)])

    def binary(self, x: Tensor) -> None:
        d = self.draw
        if x.dtype == np.bool_:
            y = self.const_like(x.dtype, self.broadcast_shape(x.shape))
            return self.emit(d(st.sampled_from(["LOGICAL_AND", "LOGICAL_OR"])), [x, y], [self.tensor(x.dtype)])
        same = [t for t in self.pool if t.dtype == x.dtype and t is not x]
        compare = d(st.integers(0, 4)) == 0
        if x.dtype in QUANTIZED:
            op = d(st.sampled_from(COMPARE if compare else QUANT_BINARY))
        else:
            op = d(st.sampled_from(COMPARE if compare else BINARY))
        if same and d(st.booleans()):
            y = d(st.sampled_from(same))
        else:
            q = self.quant(x.dtype) if x.dtype in QUANTIZED else None
            y = self.const_like(x.dtype, self.broadcast_shape(x.shape), q)
        if compare:
            return self.emit(op, [x, y], [self.tensor(np.bool_)])
        opts = (
            dict(fused_activation_function=d(st.sampled_from(ACTIVATIONS)))
            if op in ("ADD", "SUB", "MUL", "DIV")
            else None
        )
        return self.emit(op, [x, y], [self.tensor(x.dtype, (), self.quant(x.dtype))], opts)

    def reduce(self, x: Tensor) -> None:
        d = self.draw
        op = d(st.sampled_from(REDUCE + (["REDUCE_ANY", "REDUCE_ALL"] if x.dtype == np.bool_ else [])))
        axis = self.const(np.array(self.axes(len(x.shape)), np.int32))
        q = x.q if x.dtype in QUANTIZED and d(st.booleans()) else self.quant(x.dtype)
        self.emit(op, [x, axis], [self.tensor(x.dtype, (), q)], dict(keep_dims=d(st.booleans())))

    def movement(self, x: Tensor) -> None:
        d = self.draw
        rank = len(x.shape)
        op = d(
            st.sampled_from(
                [
                    "RESHAPE",
                    "TRANSPOSE",
                    "CONCATENATION",
                    "PACK",
                    "EXPAND_DIMS",
                    "SQUEEZE",
                    "REVERSE_V2",
                    "TILE",
                    "PAD",
                    "SLICE",
                    "STRIDED_SLICE",
                    "GATHER",
                    "ARG_MAX",
                    "CUMSUM",
                    "SPLIT",
                    "MIRROR_PAD",
                    "GATHER_ND",
                ]
            )
        )
        y = self.tensor(x.dtype, (), x.q)
        n = int(np.prod(x.shape)) if x.shape else 1
        if op == "RESHAPE":
            shape = d(st.sampled_from([[n], [-1], [1, n], [n, 1], [-1, 1]]))
            if d(st.integers(0, 9)) == 0:
                shape = [n + 1]
            self.emit(op, [x, self.const(np.array(shape, np.int32))], [y])
        elif op == "TRANSPOSE":
            perm = d(st.permutations(range(rank))) if rank else []
            self.emit(op, [x, self.const(np.array(perm, np.int32))], [y])
        elif op in ("CONCATENATION", "PACK"):
            axis = d(st.integers(-rank - 1, rank)) if rank else 0
            opts = dict(axis=axis) if op == "CONCATENATION" else dict(axis=axis, values_count=2)
            self.emit(op, [x, x], [y], opts)
        elif op == "EXPAND_DIMS":
            self.emit(op, [x, self.const(np.int32(d(st.integers(-rank - 1, rank))))], [y])
        elif op == "SQUEEZE":
            self.emit(op, [x], [y], dict(squeeze_dims=tuple(a for a in range(rank) if x.shape[a] == 1)))
        elif op == "REVERSE_V2":
            self.emit(op, [x, self.const(np.array(self.axes(rank)[:1], np.int32))], [y])
        elif op == "TILE":
            self.emit(op, [x, self.const(np.array([d(st.integers(1, 3)) for _ in range(rank)], np.int32))], [y])
        elif op in ("PAD", "MIRROR_PAD"):
            pads = np.array([[d(st.integers(0, 2)), d(st.integers(0, 2))] for _ in range(rank)], np.int32)
            opts = dict(mode=d(st.integers(0, 1))) if op == "MIRROR_PAD" else None
            self.emit(op, [x, self.const(pads.reshape(rank, 2))], [y], opts)
        elif op in ("SLICE", "STRIDED_SLICE"):
            begin = [d(st.integers(0, max(s - 1, 0))) for s in x.shape]
            size = [d(st.integers(-1, max(s - b, 0))) for s, b in zip(x.shape, begin)]
            if op == "SLICE":
                self.emit(op, [x, self.const(np.array(begin, np.int32)), self.const(np.array(size, np.int32))], [y])
            else:
                end = [b + max(s, 1) for b, s in zip(begin, size)]
                strides = [d(st.sampled_from([1, 1, 2, -1])) for _ in x.shape]
                self.emit(
                    op,
                    [
                        x,
                        self.const(np.array(begin, np.int32)),
                        self.const(np.array(end, np.int32)),
                        self.const(np.array(strides, np.int32)),
                    ],
                    [y],
                    dict(begin_mask=d(st.integers(0, 3)), end_mask=d(st.integers(0, 3))),
                )
        elif op in ("GATHER", "GATHER_ND"):
            hi = x.shape[0] if x.shape else 1
            idx = np.array(
                d(
                    st.lists(
                        st.integers(-1 if d(st.integers(0, 9)) == 0 else 0, max(hi - 1, 0)), min_size=1, max_size=4
                    )
                ),
                np.int32,
            )
            if op == "GATHER_ND":
                idx = idx.reshape(-1, 1)
            self.emit(op, [x, self.const(idx)], [y], dict(axis=0) if op == "GATHER" else None)
        elif op == "ARG_MAX":
            axis = self.const(np.int32(d(st.integers(-1, max(rank - 1, 0)))))
            self.pool.pop()
            self.emit(op, [x, axis], [self.tensor(np.int32)], dict(output_type=2))
        elif op == "CUMSUM":
            self.emit(
                op,
                [x, self.const(np.int32(d(st.integers(0, max(rank - 1, 0)))))],
                [y],
                dict(exclusive=d(st.booleans()), reverse=d(st.booleans())),
            )
        elif op == "SPLIT":
            self.emit(op, [self.const(np.int32(0)), x], [y], dict(num_splits=1))

    def runtime_shaped(self) -> None:
        """An output sized by a runtime value: a new graph input feeds the shape."""
        d = self.draw
        op = d(st.sampled_from(["FILL", "BROADCAST_TO", "RANGE", "ONE_HOT", "TILE", "RESHAPE", "PAD"]))
        y = self.tensor(F32)
        if op == "FILL":
            dims = self.input(np.int32, (d(st.integers(0, 3)),))
            self.emit(op, [dims, self.const(np.float32(1.5))], [y])
        elif op == "BROADCAST_TO":
            shape = self.input(np.int32, (d(st.integers(1, 3)),))
            self.emit(op, [self.const(np.ones((1,), np.float32)), shape], [y], version=2)
        elif op == "RANGE":
            limit = self.input(np.int32, ())
            self.pool.pop()
            self.emit(op, [self.const(np.int32(0)), limit, self.const(np.int32(1))], [self.tensor(np.int32)])
        elif op == "ONE_HOT":
            depth = self.input(np.int32, ())
            self.emit(
                op,
                [self.const(np.arange(3, dtype=np.int32)), depth, self.const(np.float32(1)), self.const(np.float32(0))],
                [y],
                dict(axis=-1),
            )
        elif op == "TILE":
            mult = self.input(np.int32, (2,))
            self.emit(op, [self.const(np.ones((2, 2), np.float32)), mult], [y])
        elif op == "RESHAPE":
            shape = self.input(np.int32, (2,))
            self.emit(op, [self.const(np.ones((2, 3), np.float32)), shape], [y])
        else:
            pads = self.input(np.int32, (2, 2))
            self.emit(op, [self.const(np.ones((2, 2), np.float32)), pads], [y])

    def nn(self, x: Tensor) -> None:
        d = self.draw
        if x.dtype not in (F32, np.dtype(np.int8)) or not x.shape:
            return self.unary(x)
        q = x.dtype != F32
        wq = self.quant(np.dtype(np.int8)) if q else None
        bq = (
            QuantizationParameters(scale=(float(np.float32(x.q.scale[0] * wq.scale[0])),), zero_point=(0,))
            if (q and x.q is not None and d(st.booleans()))
            else (self.quant(np.dtype(np.int8)) if q else None)
        )
        bias_dtype = np.int32 if q else np.float32
        if len(x.shape) == 4 and d(st.booleans()):
            op = d(st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"]))
            k = d(st.integers(1, 3))
            geo = dict(
                padding=d(st.integers(0, 1)),
                stride_w=d(st.integers(1, 2)),
                stride_h=d(st.integers(1, 2)),
                fused_activation_function=d(st.sampled_from(ACTIVATIONS)),
            )
            y = self.tensor(x.dtype, (), self.quant(x.dtype))
            if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
                return self.emit(op, [x], [y], dict(geo, filter_width=k, filter_height=k))
            cin, cout = x.shape[3], d(st.integers(1, 3))
            wshape = (cout, k, k, cin) if op == "CONV_2D" else (1, k, k, cin)
            n_out = cout if op == "CONV_2D" else cin
            w = self.const_like(np.dtype(np.int8) if q else F32, wshape, wq)
            b = self.const_like(np.dtype(bias_dtype), (n_out,), bq)
            opts = dict(geo) if op == "CONV_2D" else dict(geo, depth_multiplier=1)
            return self.emit(op, [x, w, b], [y], opts)
        units, depth = d(st.integers(1, 4)), x.shape[-1]
        w = self.const_like(np.dtype(np.int8) if q else F32, (units, depth), wq)
        ins = [x, w, self.const_like(np.dtype(bias_dtype), (units,), bq) if d(st.booleans()) else -1]
        self.emit(
            "FULLY_CONNECTED",
            ins,
            [self.tensor(x.dtype, (), self.quant(x.dtype))],
            dict(fused_activation_function=d(st.sampled_from(ACTIVATIONS)), keep_num_dims=d(st.booleans())),
        )

    def wild(self) -> None:
        d = self.draw
        op = d(st.sampled_from(WILD_OPS))
        ins = []
        for _ in range(d(st.integers(0, 3))):
            if self.pool and d(st.booleans()):
                ins.append(d(st.sampled_from(self.pool)))
            else:
                dt = d(st.sampled_from(INPUT_TYPES))
                ins.append(self.const_like(dt, self.shape(3), self.quant(dt)))
        outs = [
            self.tensor(dt, (), self.quant(dt))
            for dt in (d(st.sampled_from(INPUT_TYPES)) for _ in range(d(st.integers(1, 2))))
        ]
        code = BuiltinOperator[op]
        options = None
        if code in OP_OPTIONS and d(st.booleans()):
            table = OP_OPTIONS[code][1]
            options = dict(default_options(table))
            unsigned = {f.name for f in table_fields(table) if f.dtype is not None and f.dtype.kind == "u"}
            for k, v in options.items():
                if isinstance(v, bool):
                    options[k] = d(st.booleans())
                elif isinstance(v, int):  # -1 only where the field is signed (a uint32 enum cannot hold it)
                    options[k] = d(st.sampled_from([0, 1, 2, 3, 7] if k in unsigned else [0, 1, 2, 3, -1, 7]))
                elif isinstance(v, float):
                    options[k] = d(st.sampled_from([0.0, 0.5, 1.0, -1.0]))
        self.emit(op, ins, outs, options, version=d(st.integers(1, 3)))

    def input(self, dtype, shape) -> Tensor:
        dtype = np.dtype(dtype)
        q = self.quant(dtype)
        i = self.b.input(self.name("in"), shape, dtype, quantization=q)
        t = Tensor(i, dtype, tuple(shape), q)
        self.pool.append(t)
        return t


@st.composite
def graphs(draw) -> Graph:
    g = _Draw(draw)
    for _ in range(draw(st.integers(1, 2))):
        g.input(draw(st.sampled_from(INPUT_TYPES)), g.shape())
    n_ops = draw(st.integers(1, 4))
    for _ in range(n_ops):
        kind = draw(
            st.sampled_from(
                ["unary"] * 3
                + ["binary"] * 3
                + ["reduce", "movement", "movement", "runtime", "nn", "nn", "wild", "wild"]
            )
        )
        if kind == "wild":
            g.wild()
        elif kind == "runtime":
            g.runtime_shaped()
        else:
            getattr(g, kind)(g.pick())
    produced = [t for t in g.pool if t.index not in g.b._sg["inputs"]]
    outs = {produced[-1].index} if produced else set()
    outs |= {t.index for t in produced if draw(st.integers(0, 3)) == 0}
    g.b.output(*sorted(outs))
    return Graph(g.b.build(), draw(st.integers(0, 2**32 - 1)), g.ops)


def input_values(details: list[dict], seed: int) -> list[np.ndarray]:
    """Values for each input: mostly small, sometimes extreme (a shape input then asks for a huge output)."""
    rng = np.random.default_rng(seed)
    out = []
    for det in details:
        dtype, shape = np.dtype(det["dtype"]), tuple(int(s) for s in det["shape"])
        if dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            if rng.integers(0, 8) == 0:
                v = rng.choice(np.array([info.min, info.max, 0, 1 << min(30, info.bits - 2)], dtype), shape)
            else:
                v = rng.integers(max(int(info.min), -2), min(int(info.max), 6), shape, endpoint=True)
            out.append(np.asarray(v).astype(dtype))
        else:
            special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30], dtype)
            v = (rng.standard_normal(shape) * 3).astype(dtype)
            if rng.integers(0, 6) == 0 and v.size:
                v.reshape(-1)[rng.integers(0, v.size)] = rng.choice(special)
            out.append(v)
    return out
