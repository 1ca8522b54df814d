"""Random float32 models of the shapes litert_py's float prepare-time fusions target (litert_py/ops/fusion.py), as a
hypothesis strategy; tests/fuzz/float_check.py runs each fused (the default) and unfused
(``experimental_preserve_all_tensors=True``) in litert_py and in LiteRT (tests/fuzz/test_fuzz_float_fused.py,
``tools/fuzz_fused.py --float``).

The float fusions and what each promises (their docstrings):

- ops/activation_fusion.py ``fuse_activations``: a standalone RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 folded into
  the clamp of its producer (a ``ClampLast`` float CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED kernel, the row FC,
  float ADD / SUB / MUL / DIV, ArithmeticChannelRow); two activations in a row fold into the same producer.
  Promise: bit-identical to the two steps (NaN and -0.0 pass through both clamps).
- ops/fully_connected_row.py ``feeding`` (run by ops/slice_views.fuse_feeding): 1-row float FULLY_CONNECTED (or a
  CONV_2D whose one window is its whole input, conv2d.one_window_row) -> FULLY_CONNECTED ... as one step, each
  link's clamped values written into the next link's row. Promise: the same BLAS calls on the same rows, the copy
  dropped: the same values (bit-identical).
- ops/slice_views.py ``fuse_reshape_stores``: a float RESHAPE copy (CopyReshaped), or a QUANTIZE from float,
  storing straight into the next RESHAPE's output. Promise: the view receives the values the tensor would have.

Not generated: the other passes apply to 8-bit models only (fuse_slice_views / fuse_concat_writes /
fuse_sibling_windows: their consumers are quantized kernels; fuse_table_chains: 8-bit tables), or, for
fuse_ring_buffers (any type: "the same kernels on the same values"), no float ring buffer is drawn here.

Patterns (``float_models(pattern)``):

- ``conv``: 1-4 CONV_2D / DEPTHWISE_CONV_2D / ADD / SUB / MUL / DIV layers (fused activations on the producer,
  residual ADDs, constants with NaN / inf / -0.0 / FLT_MAX / denormals), each followed by 0-2 standalone
  activations (the four clamps, or HARD_SWISH / LOGISTIC / TANH / LEAKY_RELU, which are not fused), sometimes a
  pooled FC tail; sometimes one large layer that selects the blocked kernels (ConvFloatPointwise / PerTap / Planes,
  DepthwiseConvFloatBlocked, ArithmeticChannelRow);
- ``fc``: a one-window CONV_2D or a (1, D) input into 1-4 FULLY_CONNECTED layers with standalone activations
  between (the row chain), sometimes a batch of rows (FullyConnectedFloat);
- ``reshape``: RESHAPE -> RESHAPE copies and QUANTIZE -> RESHAPE -> DEQUANTIZE between float layers.

Any intermediate may also be a subgraph output or have a second reader (the fusions must then not apply). A case
runs 3-5 invokes; with ``resize`` the batch of the input changes (resize_tensor_input + allocate_tensors) before
the third invoke, else with ``reallocate`` allocate_tensors runs again there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.fused_models import QT, SAME, VALID, Case, Net, conv_options

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)
#: the values that break clamps: NaN (two payloads and signs), +-inf, -0.0, +-FLT_MAX, denormals, FLT_MIN
SPECIALS = np.array(
    [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, FLT_MAX, -FLT_MAX, 1e-40, -1e-45, 1.1754944e-38, 1.0, 6.0, -1.0],
    F32,
)
SPECIALS[1] = np.array(0x7FC00001, np.uint32).view(F32)  # a quiet NaN with a payload
FUSING = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
OTHERS = ("HARD_SWISH", "LOGISTIC", "TANH", "LEAKY_RELU")
FLOAT_PATTERNS = ("conv", "fc", "reshape")
#: relative error per accumulated term against LiteRT (tests/ops/conv/test_conv.py, test_fully_connected.py)
RTOL_PER_TERM = 1e-5


@dataclass(repr=False)
class FloatCase(Case):
    """A float model: ``resize`` the batch to set before the third invoke (0: none); ``terms`` the dot-product
    terms (and transcendental ops) summed over its layers, which scales the tolerance against LiteRT."""

    resize: int = 0
    terms: int = 1

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", resize={self.resize}, terms={self.terms})"


def with_specials(rng, x: np.ndarray, share: float) -> np.ndarray:
    """``x`` (float32) with about ``share`` of its values replaced by SPECIALS."""
    flat = x.reshape(-1)
    pick = rng.random(flat.size) < share
    flat[pick] = rng.choice(SPECIALS, int(pick.sum()))
    return x


class FloatNet(Net):
    """Net's model building for float32 tensors: float layers, standalone activations, resizable batches."""

    def __init__(self, draw):
        super().__init__(draw, np.float32)
        self.terms = 1
        self.batch_flexible = True  # no layer fixes the batch size (no RESHAPE / FC keeping a fixed shape)
        self.special_share = float(draw(st.sampled_from([0.0, 0.0, 0.01, 0.05])))  # of the constants

    def tensor(self, shape, scale: float = 0.0, zp: int = 0, dtype=None, stem: str = "t") -> QT:
        if dtype is not None and np.dtype(dtype) != F32:
            return super().tensor(shape, scale, zp, dtype, stem)
        return QT(self.b.tensor(self.name(stem), shape, F32), tuple(shape), np.dtype(F32))

    def values(self, shape, scale: float) -> np.ndarray:
        v = (self.rng.standard_normal(shape) * scale).astype(F32)
        return with_specials(self.rng, v, self.special_share)

    def const(self, stem: str, data: np.ndarray) -> int:
        return self.b.const(self.name(stem), data.astype(F32))

    def filter(self, stem: str, shape, scale: float, padding: int) -> int:
        """A conv filter constant; with SAME padding without NaN or +-inf (they become -0.0): a non-finite tap
        over the padding is a known difference of BUILTIN_REF from XNNPACK and litert_py, pinned by
        tests/fuzz/test_fuzz_float_fused_found.py, which would hide everything else in the case."""
        data = self.values(shape, scale)
        if padding == SAME:
            data[~np.isfinite(data)] = -0.0
        return self.const(stem, data)

    def bias(self, n: int, optional: bool = False) -> int:
        """A bias constant; sometimes none when ``optional`` (FULLY_CONNECTED: LiteRT's conv kernels need one)."""
        return self.const("bias", self.values((n,), 0.5)) if not optional or self.draw(st.integers(0, 4)) else -1

    def branch(self, x: QT) -> None:
        """Sometimes make ``x`` a subgraph output, or give it a second reader (NEG) whose output is one."""
        k = self.draw(st.integers(0, 9))
        if k == 0:
            self.outputs.append(x.index)
        elif k == 1:
            y = self.tensor(x.shape, stem="neg")
            self.op("NEG", [x.index], [y.index])
            self.outputs.append(y.index)

    def activations(self, x: QT) -> QT:
        """0-2 standalone activations (mostly the clamps the fusion folds into the producer)."""
        for _ in range(self.draw(st.sampled_from([0, 1, 1, 1, 2]))):
            self.branch(x)  # the producer's output (or the previous activation's) read elsewhere: no fusion there
            op = self.draw(st.sampled_from(FUSING * 3 + OTHERS))
            y = self.tensor(x.shape, stem=op.lower())
            opts = {"alpha": float(self.draw(st.sampled_from([0.2, -1.5])))} if op == "LEAKY_RELU" else None
            self.op(op, [x.index], [y.index], opts)
            self.terms += 2 if op in ("LOGISTIC", "TANH") else 0
            x = y
        self.branch(x)
        return x

    # -- layers -------------------------------------------------------------------------------------------------
    def conv(self, x: QT, units: int, kh: int, kw: int, stride: int = 1, padding: int = SAME, act=None, dilation=1):
        _, h, w, c = x.shape
        act = self.activation() if act is None else act
        oh, ow = self.conv_out(h, kh, stride, padding, dilation), self.conv_out(w, kw, stride, padding, dilation)
        y = self.tensor((x.shape[0], oh, ow, units), stem="conv")
        filt = self.filter("conv_w", (units, kh, kw, c), 1 / np.sqrt(kh * kw * c), padding)
        self.op("CONV_2D", [x.index, filt, self.bias(units)], [y.index], conv_options(padding, stride, dilation, act))
        self.terms += kh * kw * c + 1
        return y

    def depthwise(self, x: QT, kh: int, kw: int, stride: int = 1, padding: int = SAME, mult: int = 1, dilation=1):
        _, h, w, c = x.shape
        oh, ow = self.conv_out(h, kh, stride, padding, dilation), self.conv_out(w, kw, stride, padding, dilation)
        y = self.tensor((x.shape[0], oh, ow, c * mult), stem="dw")
        filt = self.filter("dw_w", (1, kh, kw, c * mult), 1 / np.sqrt(kh * kw), padding)
        opts = conv_options(padding, stride, dilation, self.activation(), depth_multiplier=mult)
        self.op("DEPTHWISE_CONV_2D", [x.index, filt, self.bias(c * mult)], [y.index], opts)
        self.terms += kh * kw + 1
        return y

    def arith(self, x: QT, other: QT | None = None) -> QT:
        """ADD / SUB / MUL of ``other`` (or of a constant broadcast per channel, or of ``x``'s shape), or DIV by
        a constant (with zeros: +-inf and NaN for the clamp)."""
        op = self.draw(st.sampled_from(["ADD", "ADD", "SUB", "MUL", "DIV"]))
        if other is not None and op != "DIV":
            operand = other.index
        else:
            full = not self.batch_flexible or self.draw(st.booleans())
            shape = (
                x.shape
                if full
                else self.draw(st.sampled_from([x.shape[-1:], (1,) * (len(x.shape) - 1) + x.shape[-1:]]))
            )
            if full:
                shape = (1, *x.shape[1:])  # broadcast over the batch
            data = self.values(shape, 2.0)
            if op == "DIV":
                data[np.abs(data) < 0.3] = 0.0
            operand = self.const("k", data)
        y = self.tensor(x.shape, stem=op.lower())
        self.op(op, [x.index, operand], [y.index], {"fused_activation_function": self.activation()})
        self.terms += 1
        return y

    def fully_connected(self, x: QT, units: int, act=None) -> QT:
        depth = x.shape[-1]
        keep = len(x.shape) > 2 and self.draw(st.integers(0, 3)) == 0
        rows = int(np.prod(x.shape[:-1]))
        shape = (*x.shape[:-1], units) if keep else (rows, units)
        if not keep and len(x.shape) > 2 and x.shape[0] != rows:
            self.batch_flexible = False
        y = self.tensor(shape, stem="fc")
        w = self.const("fc_w", self.values((units, depth), 1 / np.sqrt(depth)))
        act = self.activation() if act is None else act
        self.op(
            "FULLY_CONNECTED",
            [x.index, w, self.bias(units, optional=True)],
            [y.index],
            {"fused_activation_function": act, "keep_num_dims": keep},
        )
        self.terms += depth + 1
        return y

    def reshape(self, x: QT, shape) -> QT:
        """RESHAPE to ``shape`` (a -1 in the first place when the batch may change)."""
        shape = tuple(int(np.prod(x.shape) // -np.prod(shape)) if d == -1 else d for d in shape)
        y = self.tensor(shape, stem="reshape")
        new = list(shape)
        if self.batch_flexible and shape[0] == x.shape[0] and x.shape[0] >= 1:
            new[0] = -1
        else:
            self.batch_flexible = False
        self.op("RESHAPE", [x.index, self.b.const(self.name("shape"), np.array(new, np.int32))], [y.index])
        return y

    def quantize_round_trip(self, x: QT) -> QT:
        """QUANTIZE (int8, a scale about the values' spread) -> RESHAPE -> DEQUANTIZE: QuantizeFloat stores into
        the RESHAPE's output (fuse_reshape_stores)."""
        q = self.tensor(x.shape, float(self.draw(st.sampled_from([0.05, 0.02, 2.0**-4]))), 0, np.int8, "q")
        self.op("QUANTIZE", [x.index], [q.index])
        flat = (-1, int(np.prod(x.shape[1:])))  # any batch (``resize``)
        r = self.tensor((x.shape[0], int(np.prod(x.shape[1:]))), q.scale, 0, np.int8, "q_flat")
        self.op("RESHAPE", [q.index, self.b.const(self.name("shape"), np.array(flat, np.int32))], [r.index])
        for t in (q, r):  # sometimes a subgraph output: the store must then not be fused
            if self.draw(st.integers(0, 9)) == 0:
                self.outputs.append(t.index)
        y = self.tensor(r.shape, stem="deq")
        self.op("DEQUANTIZE", [r.index], [y.index])
        return y

    def pool(self, x: QT) -> QT:
        """A global AVERAGE_POOL_2D or MEAN over H, W (keeping the dims)."""
        _, h, w, c = x.shape
        y = self.tensor((x.shape[0], 1, 1, c), stem="pool")
        if self.draw(st.booleans()):
            opts = {"padding": VALID, "stride_h": 1, "stride_w": 1, "filter_height": h, "filter_width": w}
            self.op("AVERAGE_POOL_2D", [x.index], [y.index], opts)
        else:
            axes = self.b.const(self.name("axes"), np.array([1, 2], np.int32))
            self.op("MEAN", [x.index, axes], [y.index], {"keep_dims": True})
        self.terms += h * w
        return y


# -- the patterns -------------------------------------------------------------------------------------------------
def conv_layers(net: FloatNet, x: QT) -> QT:
    draw = net.draw
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["conv", "conv", "depthwise", "depthwise", "arith", "residual"]))
        k, s, p = (
            draw(st.sampled_from([1, 2, 3])),
            draw(st.sampled_from([1, 1, 2])),
            draw(st.sampled_from([SAME, VALID])),
        )
        d = draw(st.sampled_from([1, 1, 1, 2])) if s == 1 else 1
        fits = net.conv_out(x.shape[1], k, s, p, d) >= 1 and net.conv_out(x.shape[2], k, s, p, d) >= 1
        inp = x
        if kind == "conv" and fits:
            x = net.conv(x, draw(st.integers(1, 8)), k, k, s, p, dilation=d)
        elif kind == "depthwise" and fits:
            x = net.depthwise(x, k, k, s, p, mult=draw(st.sampled_from([1, 1, 2])), dilation=d)
        elif kind == "residual":
            x = net.arith(net.activations(net.conv(x, x.shape[-1], 1, 1)), inp)
        else:
            x = net.arith(x)
        x = net.activations(x)
    return x


#: the large layers (module docstring): the input shape each needs to select its kernel
BIG = {
    "pointwise": (1, 128, 64, 8),  # ConvFloatPointwise: 1x1, 8-16 output channels, two blocks or more
    "per_tap": (1, 64, 64, 8),  # ConvFloatPerTap: 3x3, at most 4 output channels, an im2col over 1 MB
    "planes": (1, 64, 64, 3),  # ConvFloatPlanes
    "depthwise_blocked": (1, 256, 256, 8),  # DepthwiseConvFloatBlocked: stride 2, multiplier 2
    "channel_row": (1, 128, 64, 8),  # ArithmeticChannelRow: a (1, 1, 1, C) operand, 16384 values or more
}


def big_layer(net: FloatNet, x: QT, kind: str) -> QT:
    """One layer over a large input that selects a blocked float kernel (``BIG``)."""
    if kind == "pointwise":
        return net.conv(x, net.draw(st.sampled_from([8, 16])), 1, 1, padding=VALID)
    if kind == "per_tap":
        return net.conv(x, net.draw(st.integers(1, 4)), 3, 3)
    if kind == "planes":
        return net.conv(x, 8, 3, 3)
    if kind == "depthwise_blocked":
        return net.depthwise(x, 3, 3, 2, mult=2)
    return _channel_add(net, x)


def _channel_add(net: FloatNet, x: QT) -> QT:
    y = net.tensor(x.shape, stem="add")
    data = net.values((1, 1, 1, x.shape[-1]), 2.0)
    net.op("ADD", [x.index, net.const("k", data)], [y.index], {"fused_activation_function": net.activation()})
    net.terms += 1
    return y


def fc_layers(net: FloatNet, x: QT) -> QT:
    """1-4 FULLY_CONNECTED layers, standalone activations between."""
    draw = net.draw
    for _ in range(draw(st.integers(1, 4))):
        x = net.activations(net.fully_connected(x, draw(st.one_of(st.integers(1, 16), st.just(40)))))
    return x


@st.composite
def float_models(draw, pattern: str | None = None, big: str | None = None) -> FloatCase:
    """A random float model of ``pattern`` (one of FLOAT_PATTERNS, drawn when None); ``big`` (a key of BIG, conv
    pattern): that large layer first, always followed by a clamp the fusion folds into its blocked kernel."""
    pattern = "conv" if big else pattern or draw(st.sampled_from(FLOAT_PATTERNS))
    net = FloatNet(draw)
    batch = draw(st.sampled_from([1, 1, 1, 2]))
    if pattern == "fc":
        if draw(st.booleans()):  # a one-window CONV_2D (a row FC) first
            h, w, c = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 8))
            x = QT(net.b.input(net.name("x"), (batch, h, w, c), F32), (batch, h, w, c), np.dtype(F32))
            x = net.activations(net.conv(x, draw(st.integers(1, 16)), h, w, padding=VALID))
        else:
            x = QT(net.b.input(net.name("x"), (batch, d := draw(st.integers(1, 40))), F32), (batch, d), np.dtype(F32))
        y = fc_layers(net, x)
    else:
        forced = big is not None
        if not forced:
            big = draw(st.sampled_from(sorted(BIG))) if pattern == "conv" and draw(st.integers(0, 7)) == 0 else None
        if big:
            shape = BIG[big]
        else:
            shape = (batch, draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 8)))
        x = QT(net.b.input(net.name("x"), shape, F32), shape, np.dtype(F32))
        net.branch(x)
        if big:
            x = big_layer(net, x, big)
            if forced:
                op = draw(st.sampled_from(FUSING))
                y = net.tensor(x.shape, stem=op.lower())
                net.op(op, [x.index], [y.index])
                x = y
            x = net.activations(x)
        x = conv_layers(net, x)
        if pattern == "reshape":
            for _ in range(draw(st.integers(1, 2))):
                if draw(st.booleans()):
                    inner = net.reshape(x, (x.shape[0], -1))
                    net.branch(inner)  # read elsewhere: the RESHAPE store must not be fused
                    x = net.reshape(inner, (x.shape[0], 1, 1, -1))
                else:
                    x = net.quantize_round_trip(x)
                    x = net.reshape(x, (x.shape[0], 1, 1, -1))
                x = net.activations(net.arith(x) if draw(st.booleans()) else x)
        if draw(st.integers(0, 2)) == 0:  # a classifier tail: pool -> [reshape] -> FC row chain
            x = net.activations(net.pool(x))
            if draw(st.booleans()):
                x = net.reshape(x, (x.shape[0], -1))
            x = fc_layers(net, x)
    net.outputs.append(y.index if pattern == "fc" else x.index)
    seed = draw(st.integers(0, 2**31 - 1))
    invokes = draw(st.integers(3, 5))
    resize = draw(st.sampled_from([0, 0, 0, 1, 2])) if net.batch_flexible else 0
    reallocate = not resize and draw(st.integers(0, 4)) == 0
    shape = net.b.subgraphs[0]["tensors"][net.b.subgraphs[0]["inputs"][0]].shape
    if resize == shape[0]:
        resize = 3 - resize if resize in (1, 2) else 0
    model = net.build()
    return FloatCase(model, pattern, net.ops, seed, False, invokes, reallocate, net.notes, resize, net.terms)
