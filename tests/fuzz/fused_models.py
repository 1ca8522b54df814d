"""Random int8 / uint8 models of the shapes litert_py's prepare-time fusions target (litert_py/ops/fusion.py), as a
hypothesis strategy; tests/fuzz/fused_check.py compares each with LiteRT's reference kernels (BUILTIN_REF) over
several invokes (tests/fuzz/test_fuzz_fused.py, tools/fuzz_fused.py).

Patterns (``fused_models(pattern)``), composed at random with random sizes, channels, strides, paddings, fused
activations, quantization (per-tensor and per-channel, powers of two that make rounding ties, zero points at the
extremes), int8 or uint8:

- ``mobilenet``: CONV_2D -> DEPTHWISE_CONV_2D -> [8-bit table ops, swish, hard swish, squeeze-excite] -> CONV_2D
  1x1 (-> ADD residual) blocks, 1-3 deep, dilations, batches of 1-3, then sometimes a classifier tail;
- ``tail``: AVERAGE_POOL_2D / MEAN -> [RESHAPE] -> FULLY_CONNECTED (1-3 layers, LOGISTIC / TANH between) ->
  [SOFTMAX] -> [QUANTIZE] -> [DEQUANTIZE];
- ``streaming``: ring buffers (VAR_HANDLE / READ_VARIABLE / CONCATENATION / STRIDED_SLICE / ASSIGN_VARIABLE, CALL_ONCE
  init) each read by a whole-window DEPTHWISE_CONV_2D (or CONV_2D, or a depthwise over a STRIDED_SLICE of the
  window, or MixConv) -> CONV_2D 1x1, stacked, then an FC head.

Any of them may take a float input through QUANTIZE and end in DEQUANTIZE, have intermediate tensors that are also
subgraph outputs or read by a second consumer (the fusions must then not apply), and be run with
``experimental_preserve_all_tensors=True`` (every intermediate compared then), or call allocate_tensors again
between invokes. Scales follow each tensor's estimated spread so that most outputs take many values; sometimes an
output scale is 2^6-2^16 larger (right shifts of 15 or more) or 2^2-2^8 smaller (multipliers above 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder, quant

RESOURCE = dtypes.TensorType.RESOURCE
SAME, VALID = 0, 1
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
ACTIVATIONS = (NONE, NONE, NONE, RELU, RELU, RELU, RELU_N1_TO_1, RELU6)  # the clamping ones saturate more
PATTERNS = ("mobilenet", "tail", "streaming")


def conv_options(padding: int, stride: int, dilation: int, act: int, **more) -> dict:
    """CONV_2D's (DEPTHWISE_CONV_2D's, with ``depth_multiplier``) options, the same stride and dilation on both
    axes."""
    return dict(
        padding=padding,
        stride_h=stride,
        stride_w=stride,
        dilation_h_factor=dilation,
        dilation_w_factor=dilation,
        fused_activation_function=act,
        **more,
    )


@dataclass
class QT:
    """A quantized (or float) tensor of the model being built: index, shape, dtype, scale and zero point."""

    index: int
    shape: tuple
    dtype: object
    scale: float = 0.0
    zp: int = 0
    spread: float = 74.0  # about the rms of (value - zp): how many levels the values use (uniform int8: 74)
    center: float = 0.0  # about the mean real value


@dataclass
class Case:
    """A drawn model, with what the check needs: the pattern, the op sequence (for reports), the seed of the input
    values, whether the run preserves all tensors."""

    model: bytes
    pattern: str
    ops: list[str]
    seed: int
    preserve: bool
    invokes: int = 4
    reallocate: bool = False
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"Case({self.pattern}, preserve={self.preserve}, seed={self.seed}, invokes={self.invokes}, "
            f"reallocate={self.reallocate}, "
            f"ops={' '.join(self.ops)}, notes={self.notes})"
        )

    def _repr_pretty_(self, p, cycle) -> None:  # hypothesis' report: not the model's bytes
        p.text(repr(self))


class Net:
    """A ModelBuilder with the layers the patterns are made of; structure from hypothesis' ``draw``, weights from a
    numpy generator seeded by a drawn integer (so examples shrink over structure, not over weight values)."""

    def __init__(self, draw, dtype):
        self.draw = draw
        self.dtype = np.dtype(dtype)
        self.signed = self.dtype == np.int8
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.pow2 = draw(st.booleans())  # scales that are powers of two: many products exactly on a half
        self.b = ModelBuilder()
        self.outputs: list[int] = []
        self.ops: list[str] = []
        self.inits: list[tuple[str, np.ndarray, float, int]] = []
        self.n = 0
        self.wmax = 127
        self.shift = 0.0
        self.notes: list[str] = []

    # -- helpers ------------------------------------------------------------------------------------------------
    def name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def op(self, op: str, ins, outs, options=None) -> None:
        self.b.op(op, ins, outs, options)
        self.ops.append(op)

    def tensor(self, shape, scale: float, zp: int, dtype=None, stem: str = "t") -> QT:
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        i = self.b.tensor(self.name(stem), shape, dtype, quantization=quant(scale, zp))
        return QT(i, tuple(shape), dtype, float(np.float32(scale)), zp)

    def zero_point(self, dtype=None) -> int:
        """A zero point: the type's minimum, maximum or middle one time in eight each, else any."""
        info = np.iinfo(self.dtype if dtype is None else dtype)
        kind = self.draw(st.sampled_from(["min", "max", "mid", "any", "any", "any", "any", "any"]))
        if kind == "min":
            return int(info.min)
        if kind == "max":
            return int(info.max)
        if kind == "mid":
            return 0 if info.min < 0 else 128
        return int(self.rng.integers(info.min, info.max + 1))

    def scaled(self, value: float) -> float:
        """``value`` times a random factor in [1/4, 4]; a power of two when ``pow2``."""
        f = 2.0 ** self.rng.uniform(-2, 2)
        s = value * f
        return float(2.0 ** np.round(np.log2(s))) if self.pow2 else s

    def out_params(self, x: QT, fan_in: int, act: int, w_scale) -> tuple[float, int]:
        """An output scale (the accumulator's spread over the 8-bit range, times a random factor) and zero point
        (ReLU-like layers mostly at the bottom of the range)."""
        spread = 6 * self.acc_std(x, fan_in) * x.scale * float(np.max(w_scale)) / 256
        zp = self.zero_point()
        if act in (RELU, RELU6) and self.draw(st.booleans()):
            zp = int(np.iinfo(self.dtype).min)
        # sometimes an output scale 2^6-2^16 times larger (right shifts of 15 or more: the late zero points; the
        # bias then spreads the outputs) or 2^2-2^8 times smaller (multipliers above 1)
        self.shift = float(self.draw(st.sampled_from([0.0] * 8 + [6.0, 12.0, 16.0, -2.0, -8.0])))
        if self.shift:
            self.notes.append(f"output scale 2^{self.shift:g}")
        return self.scaled(spread * 2.0**self.shift), zp

    def real_std(self, x: QT, fan_in: int, w_scale) -> float:
        return self.acc_std(x, fan_in) * x.scale * float(np.max(w_scale))

    def weights(self, shape, axis: int | None):
        """Weight values and their quantization: per-channel along ``axis`` (int8 only) or per-tensor; uint8
        weights have a nonzero zero point. Real weights about +-1 whatever the integer range, so that the scales
        stay in range along a deep model."""
        wmax = self.wmax = int(self.draw(st.sampled_from([127, 127, 60, 7, 1, 128])))
        w = np.clip(self.rng.integers(-wmax, wmax + 1, shape), -128, 127)  # 128: -128 included
        n = shape[axis] if axis is not None else 1
        if self.signed:
            per_channel = axis is not None and self.draw(st.booleans())
            s = np.array([self.scaled(1 / wmax) for _ in range(n)]) if per_channel else self.scaled(1 / wmax)
            q = quant(s, 0, axis if per_channel else 0)
            return w.astype(np.int8), q, s
        zp = int(self.draw(st.sampled_from([128, 0, 255, 100])))
        s = self.scaled(1 / wmax)
        return np.clip(w + zp, 0, 255).astype(np.uint8), quant(s, zp), s

    def acc_std(self, x: QT, fan_in: int) -> float:
        """About the spread of an accumulator over ``fan_in`` products of ``x`` (its values' spread) and the last
        weights drawn."""
        return float(np.sqrt(max(fan_in, 1)) * x.spread * max(self.wmax, 1) * 0.58)

    @staticmethod
    def spread_of(y: QT, real_std: float, act: int = NONE) -> QT:
        """``y`` with its spread: values of about ``real_std`` (real units), halved by a ReLU-like clamp."""
        y.spread = float(np.clip(real_std / y.scale, 0.5, 74.0)) * (0.6 if act in (RELU, RELU6) else 1.0)
        return y

    def bias(self, n: int, x: QT, s_w, fan_in: int) -> int:
        big = float(self.draw(st.sampled_from([0, 0.3, 0.3, 1])))
        if self.shift > 0:
            big = 2.0**self.shift
        spread = max(1, int(min(self.acc_std(x, fan_in) * big, 2.0**30)))
        data = self.rng.integers(-spread, spread + 1, n).astype(np.int32)
        return self.b.const(self.name("bias"), data, quantization=quant(x.scale * np.asarray(s_w)))

    def activation(self) -> int:
        return int(self.draw(st.sampled_from(ACTIVATIONS)))

    # -- layers -------------------------------------------------------------------------------------------------
    @staticmethod
    def conv_out(size: int, k: int, s: int, padding: int, dilation: int = 1) -> int:
        eff = (k - 1) * dilation + 1
        return -(-size // s) if padding == SAME else -(-(size - eff + 1) // s)

    def conv(
        self, x: QT, units: int, kh: int, kw: int, stride: int = 1, padding: int = SAME, act=None, dilation: int = 1
    ) -> QT:
        _, h, w, c = x.shape
        act = self.activation() if act is None else act
        wq, qw, s_w = self.weights((units, kh, kw, c), 0)
        fan_in = kh * kw * c
        oh, ow = self.conv_out(h, kh, stride, padding, dilation), self.conv_out(w, kw, stride, padding, dilation)
        scale, zp = self.out_params(x, fan_in, act, s_w)
        y = self.spread_of(
            self.tensor((x.shape[0], oh, ow, units), scale, zp, stem="conv"), self.real_std(x, fan_in, s_w), act
        )
        filt = self.b.const(self.name("conv_w"), wq, quantization=qw)
        opts = conv_options(padding, stride, dilation, act)
        self.op("CONV_2D", [x.index, filt, self.bias(units, x, s_w, fan_in)], [y.index], opts)
        return y

    def depthwise(
        self,
        x: QT,
        kh: int,
        kw: int,
        stride: int = 1,
        padding: int = SAME,
        mult: int = 1,
        act=None,
        out=None,
        dilation: int = 1,
    ) -> QT:
        """DEPTHWISE_CONV_2D; ``out``: the output's (scale, zero point) (drawn when None)."""
        _, h, w, c = x.shape
        act = self.activation() if act is None else act
        wq, qw, s_w = self.weights((1, kh, kw, c * mult), 3)
        fan_in = kh * kw
        oh, ow = self.conv_out(h, kh, stride, padding, dilation), self.conv_out(w, kw, stride, padding, dilation)
        scale, zp = self.out_params(x, fan_in, act, s_w) if out is None else out
        y = self.spread_of(
            self.tensor((x.shape[0], oh, ow, c * mult), scale, zp, stem="dw"), self.real_std(x, fan_in, s_w), act
        )
        filt = self.b.const(self.name("dw_w"), wq, quantization=qw)
        opts = conv_options(padding, stride, dilation, act, depth_multiplier=mult)
        self.op("DEPTHWISE_CONV_2D", [x.index, filt, self.bias(c * mult, x, s_w, fan_in)], [y.index], opts)
        return y

    def add(self, a: QT, b: QT, op: str = "ADD", act=None) -> QT:
        """ADD (or MUL) of two tensors (broadcasting ``b``), output scale drawn."""
        act = self.activation() if act is None else act
        sa, sb = a.spread * a.scale, b.spread * b.scale
        real = np.hypot(sa, sb) if op == "ADD" else np.hypot(sa, a.center) * np.hypot(sb, b.center)
        scale = self.scaled(real * 6 / 256)
        if op == "ADD":  # LiteRT aborts (a CHECK) when its output multiplier reaches 1
            scale = max(scale, 2 * max(a.scale, b.scale) / 2**19)
        y = self.tensor(a.shape, scale, self.zero_point(), stem=op.lower())
        self.spread_of(y, real, act)
        self.op(op, [a.index, b.index], [y.index], {"fused_activation_function": act})
        return y

    def scalar(self, value: float) -> QT:
        """A one-value constant (shape (1,)) close to ``value`` in the model's type."""
        info = np.iinfo(self.dtype)
        zp = int(self.rng.integers(info.min // 2, info.max // 2 + 1))
        q = int(self.draw(st.sampled_from([1, 20, 100, info.max - zp])))
        scale = abs(value) / q if value else 0.01
        data = np.array([np.clip(zp + (q if value >= 0 else -q), info.min, info.max)], self.dtype)
        i = self.b.const(self.name("scalar"), data, quantization=quant(scale, zp))
        return QT(i, (1,), self.dtype, float(np.float32(scale)), zp, 0.0, value)

    def table_op(self, x: QT) -> QT:
        """One 8-bit op whose output depends on one input value (a table lookup in litert_py): LOGISTIC, TANH,
        HARD_SWISH, LEAKY_RELU, RELU / RELU6 / RELU_N1_TO_1 as ops, QUANTIZE (requantize), ADD / MUL of a
        one-value constant."""
        op = self.draw(
            st.sampled_from(
                ["LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU", "RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE"]
                + ["ADD", "MUL"]
            )
        )
        if op in ("LOGISTIC", "TANH"):
            return self.squash(x, op)
        if op == "QUANTIZE":
            return self.requantize(x)
        if op in ("ADD", "MUL"):
            return self.add(x, self.scalar(float(self.rng.uniform(-4, 4))), op)
        y = self.spread_of(
            self.tensor(x.shape, self.scaled(x.scale), self.zero_point(), stem=op.lower()), x.spread * x.scale
        )
        opts = {"alpha": float(self.draw(st.sampled_from([0.2, 0.01, 1.5])))} if op == "LEAKY_RELU" else None
        self.op(op, [x.index], [y.index], opts)
        return y

    def table_chain(self, x: QT) -> QT:
        """1-3 table ops, or swish (x * LOGISTIC(x)), or Keras' hard swish (x * RELU6(x + 3) / 6), or a
        squeeze-excite gate (MEAN -> CONV_2D 1x1 -> hard sigmoid -> MUL of the feature map by the gate)."""
        kind = self.draw(st.sampled_from(["chain", "chain", "swish", "hard_swish", "squeeze_excite"]))
        if kind == "chain":
            for _ in range(self.draw(st.integers(1, 3))):
                x = self.table_op(x)
                if x.dtype != self.dtype:  # a QUANTIZE to the other type: back
                    y = self.tensor(x.shape, x.scale, self.zero_point(), stem="back")
                    self.op("QUANTIZE", [x.index], [y.index])
                    x = y
            return x
        if kind == "swish":
            return self.add(x, self.squash(x, "LOGISTIC"), "MUL", act=NONE)
        if kind == "hard_swish":
            gate = self.add(x, self.scalar(3.0), "ADD", act=RELU6)
            return self.add(x, self.add(gate, self.scalar(1 / 6), "MUL", act=NONE), "MUL", act=NONE)
        c = x.shape[-1]
        m = self.tensor((x.shape[0], 1, 1, c), x.scale, x.zp, stem="se_mean")
        self.op(
            "MEAN",
            [x.index, self.b.const(self.name("axes"), np.array([1, 2], np.int32))],
            [m.index],
            {"keep_dims": True},
        )
        g = self.conv(m, c, 1, 1, act=RELU)
        gate = self.add(g, self.scalar(3.0), "ADD", act=RELU6)
        return self.add(x, self.add(gate, self.scalar(1 / 6), "MUL", act=NONE), "MUL", act=NONE)

    def fully_connected(self, x: QT, units: int, act=None) -> QT:
        depth = x.shape[-1]  # the inputs here: (B, C) or (B, 1, 1, C)
        act = self.activation() if act is None else act
        wq, qw, s_w = self.weights((units, depth), 0)
        scale, zp = self.out_params(x, depth, act, s_w)
        keep = len(x.shape) > 2 and self.draw(st.integers(0, 3)) == 0  # keep_num_dims: (B, 1, 1, units)
        shape = (*x.shape[:-1], units) if keep else (x.shape[0], units)
        y = self.spread_of(self.tensor(shape, scale, zp, stem="fc"), self.real_std(x, depth, s_w), act)
        w = self.b.const(self.name("fc_w"), wq, quantization=qw)
        ins = [x.index, w, self.bias(units, x, s_w, depth) if self.draw(st.integers(0, 5)) else -1]
        self.op("FULLY_CONNECTED", ins, [y.index], {"fused_activation_function": act, "keep_num_dims": keep})
        return y

    def same_params(self, x: QT, shape, stem: str) -> QT:
        return self.spread_of(self.tensor(shape, x.scale, x.zp, x.dtype, stem=stem), x.spread * x.scale)

    def reshape(self, x: QT, shape) -> QT:
        shape = tuple(int(np.prod(x.shape) // -np.prod(shape)) if d == -1 else d for d in shape)
        y = self.same_params(x, shape, "reshape")
        self.op("RESHAPE", [x.index, self.b.const(self.name("shape"), np.array(shape, np.int32))], [y.index])
        return y

    def pool(self, x: QT) -> QT:
        """A global AVERAGE_POOL_2D (or MEAN over H, W: keep_dims or not, output requantized or not)."""
        _, h, w, c = x.shape
        if self.draw(st.booleans()):
            y = self.same_params(x, (x.shape[0], 1, 1, c), "avg")
            opts = {"padding": VALID, "stride_h": 1, "stride_w": 1, "filter_height": h, "filter_width": w}
            self.op("AVERAGE_POOL_2D", [x.index], [y.index], opts)
            return y
        keep = self.draw(st.booleans())
        shape = (x.shape[0], 1, 1, c) if keep else (x.shape[0], c)
        y = (
            self.same_params(x, shape, "mean")
            if self.draw(st.booleans())
            else self.tensor(shape, self.scaled(x.scale), self.zero_point(), stem="mean")
        )
        axes = self.b.const(self.name("axes"), np.array([1, 2], np.int32))
        self.op("MEAN", [x.index, axes], [y.index], {"keep_dims": keep})
        return self.spread_of(y, x.spread * x.scale)

    def squash(self, x: QT, op: str) -> QT:
        """LOGISTIC / TANH with the output quantization LiteRT requires."""
        if op == "LOGISTIC":
            scale, zp = 1 / 256, (-128 if self.signed else 0)
        else:
            scale, zp = 1 / 128, (0 if self.signed else 128)
        y = self.tensor(x.shape, scale, zp, stem=op.lower())
        self.op(op, [x.index], [y.index])
        y.center = 0.5 if op == "LOGISTIC" else 0.0
        return self.spread_of(y, 0.3)

    def softmax(self, x: QT) -> QT:
        y = self.spread_of(self.tensor(x.shape, 1 / 256, -128 if self.signed else 0, stem="softmax"), 0.2)
        beta = float(self.draw(st.sampled_from([1.0, 0.5, 2.0])))
        if self.draw(st.integers(0, 3)):  # logits spread over a few units (else the probabilities are all equal)
            beta = float(np.float32(beta * 2 / max(x.spread * x.scale, 1e-6)))
        self.op("SOFTMAX", [x.index], [y.index], {"beta": beta})
        return y

    def requantize(self, x: QT) -> QT:
        """QUANTIZE from 8 bits to 8 bits (the other type or the same), new scale and zero point."""
        dtype = np.dtype(self.draw(st.sampled_from([np.int8, np.uint8])))
        y = self.tensor(x.shape, self.scaled(x.scale), self.zero_point(dtype), dtype=dtype, stem="requant")
        self.spread_of(y, x.spread * x.scale)
        self.op("QUANTIZE", [x.index], [y.index])
        return y

    def dequantize(self, x: QT) -> QT:
        i = self.b.tensor(self.name("deq"), x.shape, np.float32)
        self.op("DEQUANTIZE", [x.index], [i])
        return QT(i, x.shape, np.dtype(np.float32))

    def model_input(self, shape, scale: float, zp: int) -> QT:
        """The model's input of ``shape``: 8-bit, or float32 through QUANTIZE (one time in four)."""
        if self.draw(st.integers(0, 3)) == 0:
            f = self.b.input(self.name("x_float"), shape, np.float32)
            y = self.tensor(shape, scale, zp, stem="x_q")
            self.op("QUANTIZE", [f], [y.index])
            self.notes.append("float input")
            return y
        i = self.b.input(self.name("x"), shape, self.dtype, quantization=quant(scale, zp))
        x = QT(i, tuple(shape), self.dtype, float(np.float32(scale)), zp)
        self.branch(x)  # an input that is an output too, or read twice
        return x

    def branch(self, x: QT) -> None:
        """Sometimes make ``x`` a subgraph output, or give it a second reader whose output is one."""
        k = self.draw(st.integers(0, 9))
        if k == 0:
            self.outputs.append(x.index)
            self.notes.append(f"output {self.b.subgraphs[0]['tensors'][x.index].name}")
        elif k == 1 and x.dtype != np.float32:
            y = self.requantize(x) if self.draw(st.booleans()) else self.reshape(x, (x.shape[0], -1))
            self.outputs.append(y.index)
            self.notes.append(f"second reader of {self.b.subgraphs[0]['tensors'][x.index].name}")

    def strided_rows(self, x: QT, begin: int, step: int) -> QT:
        """STRIDED_SLICE of rows ``begin::step`` (axis 1) of a (1, T, 1, C) tensor."""
        _, t, _, c = x.shape
        y = self.same_params(x, (1, len(range(begin, t, step)), 1, c), "rows")
        consts = [np.array(v, np.int32) for v in ([0, begin, 0, 0], [1, t, 1, c], [1, step, 1, 1])]
        self.op("STRIDED_SLICE", [x.index] + [self.b.const(self.name("ss"), v) for v in consts], [y.index], {})
        return y

    def mixconv(self, x: QT) -> QT:
        """MixConv: SPLIT_V of the channels into two groups, each group's whole window (or its last rows, a
        STRIDED_SLICE) through a DEPTHWISE_CONV_2D, the two outputs concatenated on the channels (of one
        quantization, which the depthwise outputs share or not)."""
        _, t, _, c = x.shape
        c1 = self.draw(st.integers(1, c - 1))
        parts = [self.same_params(x, (1, t, 1, n), "split") for n in (c1, c - c1)]
        sizes = self.b.const(self.name("sizes"), np.array([c1, c - c1], np.int32))
        axis = self.b.const(self.name("axis"), np.array(3, np.int32))
        self.op("SPLIT_V", [x.index, sizes, axis], [p.index for p in parts], {"num_splits": 2})
        act = self.activation()
        shared = (self.scaled(x.scale * 4), self.zero_point())
        if not self.signed and self.draw(st.integers(0, 2)) == 0:  # int8 CONCATENATION requires one quantization
            shared = None
        outs = []
        for part in parts:
            if self.draw(st.booleans()):
                part = self.strided_rows(part, self.draw(st.integers(0, t - 1)), self.draw(st.sampled_from([1, 1, 2])))
            outs.append(self.depthwise(part, part.shape[1], 1, padding=VALID, act=act, out=shared))
        scale, zp = shared if shared is not None else (outs[0].scale, outs[0].zp)
        y = self.tensor((1, 1, 1, c), scale, zp, stem="mix")
        self.op("CONCATENATION", [o.index for o in outs], [y.index], {"axis": 3})
        if shared is None:
            self.notes.append("mixconv of two quantizations")
        return y

    # -- rings --------------------------------------------------------------------------------------------------
    def ring(self, frame: QT, rows: int) -> QT:
        """READ_VARIABLE -> CONCATENATION(state, frame) -> STRIDED_SLICE (the last ``rows``) -> ASSIGN_VARIABLE over a
        (1, rows, 1, C) state of the frame's quantization (uint8: sometimes another one, the concatenation then
        requantizes); returns the concatenation (1, rows + F, 1, C) for a frame of F rows."""
        _, f, _, c = frame.shape
        name = self.name("ring")
        h = self.b.tensor(name + "_h", (), None, tensor_type=RESOURCE)
        self.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
        requant = not self.signed and self.draw(st.integers(0, 3)) == 0
        if requant:  # the state (and maybe the concatenation) of other quantizations than the frame's
            state = self.tensor((1, rows, 1, c), self.scaled(frame.scale), self.zero_point(), stem="state")
            state.spread = frame.spread
            self.notes.append(f"{name}: requantizing concatenation")
        else:
            state = self.same_params(frame, (1, rows, 1, c), "state")
        self.op("READ_VARIABLE", [h], [state.index])
        if self.draw(st.integers(0, 5)) == 0:  # the state read twice (or an output): no ring fusion
            self.branch(state)
        like = state if requant and self.draw(st.booleans()) else frame
        cat = self.same_params(like, (1, rows + f, 1, c), "cat")
        self.op("CONCATENATION", [state.index, frame.index], [cat.index], {"axis": 1})
        kept = self.same_params(cat, (1, rows, 1, c), "kept")
        consts = [np.array(v, np.int32) for v in ([0, f, 0, 0], [1, rows + f, 1, c], [1, 1, 1, 1])]
        ins = [cat.index] + [self.b.const(self.name("ss"), v) for v in consts]
        self.op("STRIDED_SLICE", ins, [kept.index], {})
        self.op("ASSIGN_VARIABLE", [h, kept.index], [])
        info = np.iinfo(frame.dtype)
        init = self.rng.integers(info.min, info.max + 1, (1, rows, 1, c)).astype(frame.dtype)
        self.inits.append((name, init, state.scale, state.zp))
        return cat

    def build(self) -> bytes:
        if self.inits:
            self.b.subgraph("init")
            for name, init, scale, zp in self.inits:
                h = self.b.tensor(name + "_h", (), None, tensor_type=RESOURCE)
                data = self.b.const(name + "_init", init, quantization=quant(scale, zp))
                self.b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
                self.b.op("ASSIGN_VARIABLE", [h, data], [])
            self.b.select(0)
        self.b.output(*dict.fromkeys(self.outputs))
        return self.b.build()


# -- the patterns -------------------------------------------------------------------------------------------------
def _input_params(net: Net) -> tuple[float, int]:
    return net.scaled(0.05), net.zero_point()


def mobilenet_blocks(net: Net, x: QT) -> QT:
    """1-3 blocks CONV_2D (kxk, stride 1-2) -> DEPTHWISE_CONV_2D (kxk, stride 1-2, multiplier 1-2) -> [8-bit table
    ops, swish, squeeze-excite] -> CONV_2D 1x1 (-> ADD of the block's input when the shapes agree)."""
    draw = net.draw
    for _ in range(draw(st.integers(1, 3))):
        inp = x
        if draw(st.booleans()):
            k, s, p = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([0, 1]))
            d = draw(st.sampled_from([1, 1, 1, 2])) if s == 1 else 1
            if net.conv_out(x.shape[1], k, s, p, d) >= 1 and net.conv_out(x.shape[2], k, s, p, d) >= 1:
                x = net.conv(x, draw(st.one_of(st.integers(1, 8), st.just(16))), k, k, s, p, dilation=d)
                net.branch(x)
        k, s, p = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([0, 1]))
        d = draw(st.sampled_from([1, 1, 1, 2])) if s == 1 else 1
        if net.conv_out(x.shape[1], k, s, p, d) >= 1 and net.conv_out(x.shape[2], k, s, p, d) >= 1:
            x = net.depthwise(x, k, k, s, p, mult=draw(st.sampled_from([1, 1, 1, 2])), dilation=d)
            net.branch(x)
        if draw(st.integers(0, 2)) == 0:
            x = net.table_chain(x)
            net.branch(x)
        units = inp.shape[-1] if draw(st.booleans()) else draw(st.one_of(st.integers(1, 8), st.sampled_from([64, 128])))
        x = net.conv(x, units, 1, 1)
        if x.shape == inp.shape and draw(st.booleans()):
            x = net.add(x, inp)
        net.branch(x)
    return x


def classifier_tail(net: Net, x: QT, pool: bool = True) -> QT:
    """[pool] -> [RESHAPE (1, C)] -> 1-3 FULLY_CONNECTED (LOGISTIC / TANH between) -> [SOFTMAX] -> [QUANTIZE] ->
    [DEQUANTIZE]."""
    draw = net.draw
    if pool and len(x.shape) == 4 and (x.shape[1:3] != (1, 1) or draw(st.integers(0, 4))):
        x = net.pool(x)
        net.branch(x)
    if len(x.shape) == 4 and draw(st.booleans()):
        x = net.reshape(x, (x.shape[0], -1))
    layers = draw(st.integers(1, 3))
    for k in range(layers):
        last = k == layers - 1
        hidden = draw(st.one_of(st.integers(1, 16), st.sampled_from([64, 300])))  # wide: long dot products
        x = net.fully_connected(x, draw(st.one_of(st.integers(1, 12), st.just(40))) if last else hidden)
        if not last:
            if draw(st.integers(0, 3)) == 0:
                x = net.squash(x, draw(st.sampled_from(["LOGISTIC", "TANH"])))
            net.branch(x)
    if draw(st.booleans()):
        net.branch(x)
        x = net.softmax(x)
    if draw(st.integers(0, 3)) == 0:
        net.branch(x)
        x = net.requantize(x)
    return x


def streaming_blocks(net: Net) -> QT:
    """A frame (1, 1, 1, C) (or (1, C) RESHAPEd, or float QUANTIZEd and RESHAPEd) into 1-3 stacked blocks: a ring
    buffer of 1-6 rows read by a whole-window DEPTHWISE_CONV_2D (or CONV_2D, or a depthwise over a STRIDED_SLICE of
    the window, or MixConv's SPLIT_V -> two depthwise -> CONCATENATION) -> CONV_2D 1x1; then an FC head."""
    draw = net.draw
    net.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    c, f = draw(st.integers(1, 8)), draw(st.sampled_from([1, 1, 1, 2, 3]))  # f: the input frame's rows
    scale, zp = _input_params(net)
    if draw(st.booleans()):
        x = net.model_input((1, f, 1, c), scale, zp)
    else:
        x = net.reshape(net.model_input((1, f * c), scale, zp), (1, f, 1, c))
    for _ in range(draw(st.integers(1, 3))):
        rows = draw(st.integers(1, 6))
        cat = net.ring(x, rows)
        net.branch(cat)
        kind = draw(st.sampled_from(["depthwise", "depthwise", "conv", "slice", "mixconv"]))
        if kind == "slice":  # the window: the last rows of the concatenation, or every other one
            cat = net.strided_rows(cat, draw(st.integers(0, cat.shape[1] - 1)), draw(st.sampled_from([1, 1, 2])))
        if kind == "conv":
            x = net.conv(cat, draw(st.integers(1, 8)), cat.shape[1], 1, padding=VALID)
        elif kind == "mixconv" and cat.shape[-1] >= 2:
            x = net.mixconv(cat)
        else:
            x = net.depthwise(cat, cat.shape[1], 1, padding=VALID, mult=draw(st.sampled_from([1, 1, 1, 2])))
        net.branch(x)
        if draw(st.integers(0, 4)):
            x = net.conv(x, draw(st.integers(1, 8)), 1, 1)
            net.branch(x)
    return classifier_tail(net, x, pool=False) if draw(st.integers(0, 3)) else x


@st.composite
def fused_models(draw, pattern: str | None = None) -> Case:
    """A random model of ``pattern`` (one of PATTERNS, drawn when None)."""
    pattern = pattern or draw(st.sampled_from(PATTERNS))
    net = Net(draw, draw(st.sampled_from([np.int8, np.int8, np.uint8])))
    if pattern == "streaming":
        y = streaming_blocks(net)
    else:
        h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
        c, batch = draw(st.integers(1, 8)), draw(st.sampled_from([1, 1, 1, 2, 3]))
        x = net.model_input((batch, h, w, c), *_input_params(net))
        if pattern == "mobilenet":
            y = mobilenet_blocks(net, x)
            if draw(st.booleans()):
                y = classifier_tail(net, y)
        else:
            y = classifier_tail(net, x)
    if draw(st.integers(0, 2)) == 0:
        y = net.dequantize(y)
        net.notes.append("float output")
    net.outputs.append(y.index)
    preserve = draw(st.integers(0, 4)) == 0
    seed = draw(st.integers(0, 2**31 - 1))
    invokes, reallocate = draw(st.integers(3, 5)), draw(st.integers(0, 5)) == 0
    return Case(net.build(), pattern, net.ops, seed, preserve, invokes, reallocate, net.notes)
