#!/usr/bin/env python3
"""Benchmark litert_py on representative int8 model families against ai-edge-litert, in the same run.

The real models of issue 16's unseen set (int8 keyword-spotting CNNs, tiny int8 streaming models, small int8
dense models, int8 MobileNets) are not in the repository, so this script builds models of those families with
litert_py.schema.builder.ModelBuilder (random int8 weights, per-channel conv / depthwise scales chosen so that
every layer's outputs spread over the int8 range, the usual zero points: -128 after ReLU/ReLU6):

- ``vww_mobilenet``: a visual-wake-words MobileNet v1 0.25 (96x96x3 -> 2): CONV_2D 3x3 s2, 13 depthwise-separable
  blocks (DEPTHWISE_CONV_2D 3x3 s1/s2 + CONV_2D 1x1, ReLU6), AVERAGE_POOL_2D 3x3, FULLY_CONNECTED, SOFTMAX.
- ``ds_cnn_kws``: the MLPerf Tiny DS-CNN keyword spotter (49x10x1 -> 12): CONV_2D 10x4 s2, 4 depthwise-separable
  blocks at 25x5x64 (ReLU), AVERAGE_POOL_2D 25x5, FULLY_CONNECTED, SOFTMAX.
- ``resnet8``: the MLPerf Tiny CIFAR ResNet-8 (32x32x3 -> 10): 3x3 CONV_2D stacks with quantized ADD (+ReLU)
  residuals and a strided 1x1 shortcut, AVERAGE_POOL_2D 8x8, FULLY_CONNECTED, SOFTMAX.
- ``streaming_kws``: a tiny streaming wake-word model (pymicro-wakeword-like, one 30 ms frame per invoke):
  QUANTIZE, RESHAPE, five ring buffers (READ_VARIABLE -> CONCATENATION -> STRIDED_SLICE -> ASSIGN_VARIABLE),
  CONV_2D 5x1, DEPTHWISE_CONV_2D kx1 over the whole buffer + CONV_2D 1x1 (ReLU), FULLY_CONNECTED, LOGISTIC.
- ``dense_ae``: the MLPerf Tiny anomaly-detection autoencoder (640 -> 128 x4 -> 8 -> 128 x4 -> 640),
  FULLY_CONNECTED + ReLU.
- ``micro_speech``: tflite-micro's keyword model (49x40x1 -> 4): CONV_2D 10x8 s2 (ReLU), FULLY_CONNECTED,
  SOFTMAX.
- ``sine_int8``: tflite-micro's hello_world, int8 (1 -> 16 -> 16 -> 1 FULLY_CONNECTED).
- ``se_mobilenet``: a MobileNet-v3-small-like CNN (64x64x3 -> 10): HARD_SWISH, inverted residual blocks with
  squeeze-excite gates (MEAN, 1x1 CONV_2D, hard sigmoid as ADD / MUL by one-value constants, MUL by a
  (1, 1, 1, C) gate), residual ADDs, MEAN, FULLY_CONNECTED, SOFTMAX.
- ``inception``: two Inception-v1-like modules (1x1, 3x3, double 3x3 and 3x3 SAME AVERAGE_POOL_2D branches,
  CONCATENATION), a global AVERAGE_POOL_2D, FULLY_CONNECTED, SOFTMAX.

Every model is run by litert_py, by ai-edge-litert's default resolver (AUTO: optimized kernels and XNNPACK) and
by its reference kernels (BUILTIN_REF), num_threads=1; the script asserts first that litert_py's int8 outputs
equal BUILTIN_REF's over several invokes (the streaming model's state included), then prints the median process
CPU time per invoke of each (as ../shared/tools/corpus_check.py --bench: at least 5 invokes and about 0.3 s),
the ratios and their geomeans.

    python tools/bench_families.py [--only NAME ...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from litert_py import Interpreter  # noqa: E402
from litert_py.schema import dtypes  # noqa: E402
from litert_py.schema.builder import ModelBuilder, quant  # noqa: E402
from litert_py.schema.reader import read_model  # noqa: E402

SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3
RESOURCE = dtypes.TensorType.RESOURCE
CALIBRATION = 8  # random inputs whose approximate forward pass sets each layer's scales
#: The share of output channels whose weight scale is 1000x smaller (near-dead channels, as trained models have):
#: their requantization multipliers need right shifts of 15 or more, which with zero point -128 (ReLU outputs)
#: fail the folded epilogue's bound in ops/conv/requant.py (issue 16: 12 of 27 layers of one VWW model).
DEAD_CHANNELS = 0.03


class Net:
    """A ModelBuilder for a chain of int8 layers: ``x`` is the current int8 tensor, with its quantization
    (scale, zero point), shape and ``val``, its approximate values on CALIBRATION random inputs (a float64 numpy
    forward pass, only used to choose each layer's scales). Each layer method appends one op and moves ``x`` to
    its output. Scales: per-channel weight scales spread over a factor of 16 (DEAD_CHANNELS of them 1000x
    smaller), all rescaled so that a ReLU6 layer's
    99th percentile is 6.0 (output scale 6/255, zero point -128, as real ReLU6 models have), another layer's
    99.5th percentile magnitude 4.0, mapped to 255 units (ReLU, zero point -128) or 110 units."""

    def __init__(self, seed: int, shape, scale: float = 0.02, zero_point: int = 0, float_input: bool = False):
        self.rng = np.random.default_rng(seed)
        self.b = ModelBuilder()
        self.n = 0
        self.scale, self.zp, self.shape = scale, zero_point, tuple(shape)
        if float_input:
            self.inp = self.b.input("input", shape, np.float32)
            real = 2 * self.rng.standard_normal((CALIBRATION,) + tuple(shape[1:]))
            self.val = np.clip(np.round(real / scale) + zero_point, -128, 127)
            x = self.inp
            self.b.op("QUANTIZE", [x], [self._new(shape, scale, zero_point)])
        else:
            self.inp = self.x = self.b.input("input", shape, np.int8, quantization=quant(scale, zero_point))
            self.val = self.rng.integers(-128, 128, (CALIBRATION,) + tuple(shape[1:])).astype(np.float64)

    def _new(self, shape, scale, zero_point) -> int:
        self.n += 1
        self.x = self.b.tensor(f"t{self.n}", shape, np.int8, quantization=quant(scale, zero_point))
        self.scale, self.zp, self.shape = scale, zero_point, tuple(shape)
        return self.x

    def _windows(self, kh: int, kw: int, stride: int, padding: int):
        """(N, OH, OW, C, KH, KW) windows of x - zp (padding 0) and the output height and width."""
        x = self.val - self.zp
        _, h, w, _ = x.shape
        if padding == SAME:
            oh, ow = -(-h // stride), -(-w // stride)
            ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
            x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
        else:
            oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
        win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
        return win[:, :oh, :ow], oh, ow

    def _layer(self, acc: np.ndarray, channels: int, act: int):
        """Weight scales, output scale and zero point for integer accumulators ``acc`` (last axis: channels);
        moves ``val`` to the layer's output."""
        s_w = 10 ** self.rng.uniform(-0.6, 0.6, channels)
        s_w[self.rng.random(channels) < DEAD_CHANNELS] *= 1e-3  # multipliers ~2^-17..-19: right shifts >= 15
        real = acc * (self.scale * s_w)
        if act == RELU6:  # the 99th percentile of the positive values at 6.0: output scale 6/255
            pos = real[real > 0]
            k, s_out, zp_out = 6.0 / (float(np.percentile(pos, 99)) if pos.size else 1.0), 6.0 / 255, -128
        else:  # the 99.5th percentile magnitude at 4.0: 255 (ReLU) or 110 units
            k = 4.0 / (float(np.percentile(np.abs(real), 99.5)) or 1.0)
            s_out, zp_out = (4.0 / 255, -128) if act == RELU else (4.0 / 110, int(self.rng.integers(-10, 11)))
        s_w, real = s_w * k, real * k
        lo = zp_out if act in (RELU, RELU6) else -128
        hi = min(127, zp_out + round(6 / s_out)) if act == RELU6 else 127
        self.val = np.clip(np.round(real / s_out) + zp_out, lo, hi)
        return s_w, s_out, zp_out

    def _bias(self, terms: int, channels: int):
        spread = int(73 * 50 * math.sqrt(terms) / 4)
        return self.rng.integers(-spread, spread + 1, channels).astype(np.int32)

    def conv(self, out_c: int, kh: int, kw: int | None = None, stride: int = 1, act: int = RELU6, padding=SAME):
        kw = kh if kw is None else kw
        c = self.shape[3]
        w = self.rng.integers(-127, 128, (out_c, kh, kw, c)).astype(np.int8)
        bias = self._bias(kh * kw * c, out_c)
        win, oh, ow = self._windows(kh, kw, stride, padding)
        s_in, x = self.scale, self.x
        s_w, s_out, zp_out = self._layer(np.einsum("nhwcij,oijc->nhwo", win, w.astype(np.float64)) + bias, out_c, act)
        f = self.b.const("w", w, quantization=quant(s_w))
        b = self.b.const("b", bias, quantization=quant(s_in * s_w))
        y = self._new((self.shape[0], oh, ow, out_c), s_out, zp_out)
        opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "fused_activation_function": act}
        self.b.op("CONV_2D", [x, f, b], [y], opts)

    def depthwise(self, kh: int, kw: int | None = None, stride: int = 1, act: int = RELU6, padding=SAME):
        kw = kh if kw is None else kw
        c = self.shape[3]
        w = self.rng.integers(-127, 128, (1, kh, kw, c)).astype(np.int8)
        bias = self._bias(kh * kw, c)
        win, oh, ow = self._windows(kh, kw, stride, padding)
        s_in, x = self.scale, self.x
        s_w, s_out, zp_out = self._layer(np.einsum("nhwcij,ijc->nhwc", win, w[0].astype(np.float64)) + bias, c, act)
        f = self.b.const("dw", w, quantization=quant(s_w, 0, 3))
        b = self.b.const("b", bias, quantization=quant(s_in * s_w))
        y = self._new((self.shape[0], oh, ow, c), s_out, zp_out)
        opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1}
        self.b.op("DEPTHWISE_CONV_2D", [x, f, b], [y], {**opts, "fused_activation_function": act})

    def avg_pool(self, kh: int, kw: int, stride: int = 1):
        win, oh, ow = self._windows(kh, kw, stride, VALID)
        x = self.x
        self.val = np.round(win.mean(axis=(4, 5))) + self.zp
        y = self._new((self.shape[0], oh, ow, self.shape[3]), self.scale, self.zp)
        opts = {"padding": VALID, "stride_h": stride, "stride_w": stride, "filter_height": kh, "filter_width": kw}
        self.b.op("AVERAGE_POOL_2D", [x], [y], opts)

    def avg_pool_same(self, k: int):
        """AVERAGE_POOL_2D k x k, stride 1, SAME (windows clipped at the borders), quantized as its input."""
        win, oh, ow = self._windows(k, k, 1, SAME)
        x = self.x
        self.val = np.round(win.mean(axis=(4, 5))) + self.zp  # zero padding: near enough to choose scales
        y = self._new((self.shape[0], oh, ow, self.shape[3]), self.scale, self.zp)
        opts = {"padding": SAME, "stride_h": 1, "stride_w": 1, "filter_height": k, "filter_width": k}
        self.b.op("AVERAGE_POOL_2D", [x], [y], opts)

    def concat(self, branches: list):
        """CONCATENATION of ``state()``s along channels, requantized to one scale (the largest) and zero point."""
        scale = max(st[1] for st in branches)
        zp = -128
        real = np.concatenate([(st[4] - st[2]) * st[1] for st in branches], axis=-1)
        shape = branches[0][3][:-1] + (sum(st[3][-1] for st in branches),)
        self._requant(real, scale, zp)
        y = self._new(shape, scale, zp)
        self.b.op("CONCATENATION", [st[0] for st in branches], [y], {"axis": 3, "fused_activation_function": NONE})

    def fc(self, units: int, act: int = NONE):
        k = int(np.prod(self.shape[1:]))
        w = self.rng.integers(-127, 128, (units, k)).astype(np.int8)
        bias = self._bias(k, units)
        s_in, x = self.scale, self.x
        acc = (self.val - self.zp).reshape(-1, k) @ w.T.astype(np.float64) + bias
        s_w, s_out, zp_out = self._layer(acc, 1, act)
        wt = self.b.const("fw", w, quantization=quant(s_w))
        b = self.b.const("fb", bias, quantization=quant(s_in * s_w))
        y = self._new((self.shape[0], units), s_out, zp_out)
        self.b.op("FULLY_CONNECTED", [x, wt, b], [y], {"fused_activation_function": act})

    def add(self, other: tuple, act: int = RELU):
        """x + other, ``other`` = (tensor, scale, zero point, val) of the same shape."""
        t, s, z, v = other
        real = (self.val - self.zp) * self.scale + (v - z) * s
        x = self.x
        top = float(np.percentile(np.abs(real), 99.5)) or 1.0
        s_out, zp_out = (top / 255, -128) if act == RELU else (top / 110, int(self.rng.integers(-10, 11)))
        self.val = np.clip(np.round(real / s_out) + zp_out, zp_out if act == RELU else -128, 127)
        y = self._new(self.shape, s_out, zp_out)
        self.b.op("ADD", [x, t], [y], {"fused_activation_function": act})

    def _spread(self, real: np.ndarray, lo: float | None = None):
        """Output scale and zero point mapping ``real``'s 0.5th..99.5th percentiles (or [lo, 99.5th]) to int8."""
        a = float(np.percentile(real, 0.5)) if lo is None else lo
        b = max(float(np.percentile(real, 99.5)), a + 1e-3)
        s_out = (b - a) / 255
        return s_out, int(np.clip(round(-128 - a / s_out), -128, 127))

    def _requant(self, real: np.ndarray, s_out: float, zp_out: int, lo: int = -128, hi: int = 127) -> None:
        self.val = np.clip(np.round(real / s_out) + zp_out, lo, hi)

    def hard_swish(self):
        real = (self.val - self.zp) * self.scale
        real = real * np.clip(real + 3, 0, 6) / 6
        x = self.x
        s_out, zp_out = self._spread(real, -0.375)
        self._requant(real, s_out, zp_out)
        self.b.op("HARD_SWISH", [x], [self._new(self.shape, s_out, zp_out)])

    def mean(self):
        """MEAN over H and W, keep_dims (a squeeze-excite block's squeeze), output quantized as the input."""
        x = self.x
        self.val = np.round((self.val - self.zp).mean(axis=(1, 2), keepdims=True)) + self.zp
        y = self._new((self.shape[0], 1, 1, self.shape[3]), self.scale, self.zp)
        self.b.op("MEAN", [x, self.b.const("axes", np.array([1, 2], np.int32))], [y], {"keep_dims": True})

    def hard_sigmoid(self):
        """Keras' relu6(x + 3) / 6 as int8 TFLite has it: ADD of a constant 3 with RELU6, MUL by a constant 1/6."""
        real = (self.val - self.zp) * self.scale + 3
        x = self.x
        three = self.b.const("three", np.array([127], np.int8), quantization=quant(3 / 127, 0))
        self._requant(real, 6 / 255, -128, -128, 127)
        self.b.op("ADD", [x, three], [self._new(self.shape, 6 / 255, -128)], {"fused_activation_function": RELU6})
        real = (self.val + 128) * (6 / 255) / 6
        x = self.x
        sixth = self.b.const("sixth", np.array([127], np.int8), quantization=quant(1 / 6 / 127, 0))
        self._requant(real, 1 / 255, -128)
        self.b.op("MUL", [x, sixth], [self._new(self.shape, 1 / 255, -128)])

    def mul(self, other: tuple):
        """x * other (broadcasting), ``other`` a ``state()``."""
        t, s, z, shape, v = other
        real = (self.val - self.zp) * self.scale * ((v - z) * s)
        x = self.x
        s_out, zp_out = self._spread(real)
        self._requant(real, s_out, zp_out)
        self.b.op("MUL", [x, t], [self._new(np.broadcast_shapes(self.shape, shape), s_out, zp_out)])

    def unary(self, op: str):
        """SOFTMAX / LOGISTIC: int8 output scale 1/256, zero point -128 (LiteRT requires it); ends the chain."""
        x = self.x
        self._new(self.shape, 1 / 256, -128)
        self.b.op(op, [x], [self.x], {"beta": 1.0} if op == "SOFTMAX" else None)

    def reshape(self, shape):
        x = self.x
        self.val = self.val.reshape((-1,) + tuple(shape[1:]))
        y = self._new(shape, self.scale, self.zp)
        self.b.op("RESHAPE", [x, self.b.const("shape", np.array(shape, np.int32))], [y], {"new_shape": list(shape)})

    def state(self) -> tuple:
        return self.x, self.scale, self.zp, self.shape, self.val

    def restore(self, state: tuple) -> None:
        self.x, self.scale, self.zp, self.shape, self.val = state

    def build(self) -> bytes:
        self.b.output(self.x)
        return self.b.build()


def vww_mobilenet() -> bytes:
    net = Net(1, (1, 96, 96, 3), 0.0078, -1)
    net.conv(8, 3, stride=2)
    for out_c, stride in (
        ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)) + ((128, 1),) * 5 + ((256, 2), (256, 1))
    ):
        net.depthwise(3, stride=stride)
        net.conv(out_c, 1)
    net.avg_pool(3, 3)
    net.fc(2)
    net.unary("SOFTMAX")
    return net.build()


def ds_cnn_kws() -> bytes:
    net = Net(2, (1, 49, 10, 1), 0.25, 0)
    net.conv(64, 10, 4, stride=2, act=RELU)
    for _ in range(4):
        net.depthwise(3, act=RELU)
        net.conv(64, 1, act=RELU)
    net.avg_pool(25, 5)
    net.fc(12)
    net.unary("SOFTMAX")
    return net.build()


def resnet8() -> bytes:
    net = Net(3, (1, 32, 32, 3), 0.0078, 0)
    net.conv(16, 3, act=RELU)
    for out_c, stride in ((16, 1), (32, 2), (64, 2)):
        block_in = net.state()
        net.conv(out_c, 3, stride=stride, act=RELU)
        net.conv(out_c, 3, act=NONE)
        main = net.state()
        net.restore(block_in)
        if stride != 1:  # the 1x1 strided shortcut
            net.conv(out_c, 1, stride=stride, act=NONE)
        net.add((main[0], main[1], main[2], main[4]), act=RELU)
    net.avg_pool(8, 8)
    net.fc(10)
    net.unary("SOFTMAX")
    return net.build()


def se_mobilenet() -> bytes:
    """A MobileNet-v3-small-like int8 CNN (64x64x3 -> 10): CONV_2D 3x3 s2 + HARD_SWISH, four inverted residual
    blocks (1x1 expand, DEPTHWISE_CONV_2D 3x3 / 5x5, ReLU or HARD_SWISH, the last two with a squeeze-excite gate:
    MEAN, two 1x1 CONV_2D, hard sigmoid as ADD 3 (RELU6) and MUL 1/6, MUL by the (1, 1, 1, C) gate; 1x1 project,
    residual ADD), CONV_2D 1x1 + HARD_SWISH, MEAN, FULLY_CONNECTED, SOFTMAX."""
    net = Net(8, (1, 64, 64, 3), 0.0078, -1)
    net.conv(16, 3, stride=2, act=NONE)
    net.hard_swish()
    for expand, out_c, k, stride, se in ((64, 24, 3, 2, False), (72, 24, 3, 1, False), (96, 40, 5, 2, True)) + (
        (120, 40, 5, 1, True),
    ):
        block_in = net.state()
        net.conv(expand, 1, act=NONE if se else RELU)
        if se:
            net.hard_swish()
        net.depthwise(k, stride=stride, act=NONE if se else RELU)
        if se:
            net.hard_swish()
            features = net.state()
            net.mean()
            net.conv(expand // 4, 1, act=RELU)
            net.conv(expand, 1, act=NONE)
            net.hard_sigmoid()
            gate = net.state()
            net.restore(features)
            net.mul(gate)
        net.conv(out_c, 1, act=NONE)
        if stride == 1 and block_in[3] == net.shape:
            net.add((block_in[0], block_in[1], block_in[2], block_in[4]), act=NONE)
    net.conv(240, 1, act=NONE)
    net.hard_swish()
    net.mean()
    net.reshape((1, 240))
    net.fc(10)
    net.unary("SOFTMAX")
    return net.build()


def inception() -> bytes:
    """Two Inception-v1-like int8 modules at 16x16 (32x32x3 -> 10): CONV_2D 3x3 s2 stem, per module four branches
    (1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; AVERAGE_POOL_2D 3x3 stride 1 SAME -> 1x1, all ReLU) concatenated, then
    AVERAGE_POOL_2D 16x16, FULLY_CONNECTED, SOFTMAX."""
    net = Net(9, (1, 32, 32, 3), 0.0078, -1)
    net.conv(32, 3, stride=2, act=RELU)
    for width in (16, 24):
        module_in = net.state()
        branches = []
        for chain in ((1,), (1, 3), (1, 3, 3), ("pool", 1)):
            net.restore(module_in)
            for k in chain:
                if k == "pool":
                    net.avg_pool_same(3)
                else:
                    net.conv(width, k, act=RELU)
            branches.append(net.state())
        net.concat(branches)
    net.avg_pool(16, 16)
    net.fc(10)
    net.unary("SOFTMAX")
    return net.build()


def dense_ae() -> bytes:
    net = Net(4, (1, 640), 0.05, 10)
    for units in (128,) * 4 + (8,) + (128,) * 4:
        net.fc(units, act=RELU)
    net.fc(640)
    return net.build()


def streaming_kws() -> bytes:
    """One frame (1, 3, 40) per invoke; every ring buffer keeps the last k-1 rows of its layer's input."""
    net = Net(5, (1, 3, 40), 0.1, -20, float_input=True)
    b = net.b
    net.reshape((1, 3, 1, 40))
    rings = []  # (handle name, shape, zero point)

    def ring(keep: int):
        """Prepend the variable's ``keep`` rows to the current (1, t, 1, C) tensor; keep its last ``keep`` rows."""
        name = f"ring{len(rings)}"
        _, t, _, c = net.shape
        h = b.tensor(name, (), None, tensor_type=RESOURCE)
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
        r = b.tensor(f"{name}_r", (1, keep, 1, c), np.int8, quantization=quant(net.scale, net.zp))
        b.op("READ_VARIABLE", [h], [r])
        x = net.x
        net.val = np.concatenate([np.full((len(net.val), keep, 1, c), float(net.zp)), net.val], axis=1)
        cat = net._new((1, keep + t, 1, c), net.scale, net.zp)
        b.op("CONCATENATION", [r, x], [cat], {"axis": 1})
        s = b.tensor(f"{name}_s", (1, keep, 1, c), np.int8, quantization=quant(net.scale, net.zp))
        begin = b.const("begin", np.array([0, t, 0, 0], np.int32))
        end = b.const("end", np.array([1, keep + t, 1, c], np.int32))
        b.op("STRIDED_SLICE", [cat, begin, end, b.const("strides", np.ones(4, np.int32))], [s], {})
        b.op("ASSIGN_VARIABLE", [h, s], [])
        rings.append((name, (1, keep, 1, c), net.zp))

    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    ring(2)
    net.conv(64, 5, 1, act=RELU, padding=VALID)
    for k in (3, 5, 7, 9):
        ring(k - 1)
        net.depthwise(k, 1, act=NONE, padding=VALID)
        net.conv(64, 1, act=RELU)
    net.fc(1)
    net.unary("LOGISTIC")
    net.b.output(net.x)
    b.subgraph("init")
    for name, shape, zp in rings:
        h = b.tensor(name, (), None, tensor_type=RESOURCE)
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
        b.op("ASSIGN_VARIABLE", [h, b.const(f"{name}_init", np.full(shape, zp, np.int8))], [])
    return b.build()


def micro_speech() -> bytes:
    """tflite-micro's micro_speech: one 10x8 stride-2 CONV_2D (ReLU) over a 49x40 spectrogram, a 4000 -> 4
    FULLY_CONNECTED, SOFTMAX."""
    net = Net(6, (1, 49, 40, 1), 0.1, -20)
    net.conv(8, 10, 8, stride=2, act=RELU)
    net.reshape((1, 25 * 20 * 8))
    net.fc(4)
    net.unary("SOFTMAX")
    return net.build()


def sine_int8() -> bytes:
    """tflite-micro's hello_world, int8: 1 -> 16 -> 16 -> 1 FULLY_CONNECTED (ReLU, ReLU, none)."""
    net = Net(7, (1, 1), 0.025, -128)
    net.fc(16, act=RELU)
    net.fc(16, act=RELU)
    net.fc(1)
    return net.build()


FAMILIES = {
    "vww_mobilenet": vww_mobilenet,
    "ds_cnn_kws": ds_cnn_kws,
    "resnet8": resnet8,
    "streaming_kws": streaming_kws,
    "dense_ae": dense_ae,
    "micro_speech": micro_speech,
    "sine_int8": sine_int8,
    "se_mobilenet": se_mobilenet,
    "inception": inception,
}


def inputs_for(interp, seed: int, count: int) -> list[np.ndarray]:
    """``count`` random inputs for the model's single input (int8 over its range, float32 ~ N(0, 2))."""
    d = interp.get_input_details()[0]
    rng = np.random.default_rng(seed)
    if d["dtype"] == np.float32:
        return [(2 * rng.standard_normal(d["shape"])).astype(np.float32) for _ in range(count)]
    return [rng.integers(-128, 128, d["shape"]).astype(d["dtype"]) for _ in range(count)]


def outputs_over(interp, xs) -> list[np.ndarray]:
    interp.allocate_tensors()
    i, o = interp.get_input_details()[0]["index"], interp.get_output_details()[0]["index"]
    outs = []
    for x in xs:
        interp.set_tensor(i, x)
        interp.invoke()
        outs.append(interp.get_tensor(o).copy())
    return outs


def check_exact(model: bytes, invokes: int = 4) -> None:
    """Assert that litert_py's outputs equal BUILTIN_REF's over ``invokes`` invokes (random inputs, one
    interpreter each, so streaming state carries over) and that they are not constant."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    ours = Interpreter(model_content=model)
    ref = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ours.allocate_tensors()
    xs = inputs_for(ours, 0, invokes)
    got, want = outputs_over(ours, xs), outputs_over(ref, xs)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype == np.int8, (a.dtype, b.dtype)
        assert np.array_equal(a, b), f"invoke {k}: litert_py differs from BUILTIN_REF in {int((a != b).sum())} values"
    spread = np.concatenate([a.reshape(-1) for a in got])
    assert spread.min() < spread.max(), "the model's outputs are constant: its quantization is degenerate"


def median_invoke_ms(interp, x) -> float:
    """Median process CPU time per invoke (ms): at least 5 invokes and about 0.3 s, after a warm-up."""
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    ts = []
    while len(ts) < 5 or (sum(ts) < 0.3 and len(ts) < 2000):
        t = time.process_time()
        interp.invoke()
        ts.append(time.process_time() - t)
    return 1e3 * statistics.median(ts)


def bench(model: bytes) -> tuple[float, float, float]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    ours = Interpreter(model_content=model, num_threads=1)
    ours.allocate_tensors()
    x = inputs_for(ours, 1, 1)[0]
    times = [median_invoke_ms(ours, x)]
    for res in (OpResolverType.AUTO, OpResolverType.BUILTIN_REF):
        times.append(median_invoke_ms(LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=res), x))
    return tuple(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=sorted(FAMILIES), help="families to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="benchmark rounds; each time is the median over them")
    ap.add_argument("--save", type=pathlib.Path, help="also write the models into this folder")
    a = ap.parse_args()
    names = a.only or list(FAMILIES)
    models = {name: FAMILIES[name]() for name in names}
    for name, model in models.items():
        check_exact(model)
        if a.save:
            a.save.mkdir(parents=True, exist_ok=True)
            (a.save / f"{name}.tflite").write_bytes(model)
    rounds = {name: [] for name in names}
    for _ in range(a.repeat):
        for name, model in models.items():
            rounds[name].append(bench(model))
    print(f"{'family':16} {'ops':>4} {'ours ms':>9} {'AUTO ms':>9} {'REF ms':>9} {'ours/AUTO':>10} {'ours/REF':>9}")
    to_auto, to_ref = [], []
    for name, model in models.items():
        ours, auto, ref = (statistics.median(r[k] for r in rounds[name]) for k in range(3))
        to_auto.append(ours / auto)
        to_ref.append(ours / ref)
        ops = len(read_model(model).subgraphs[0].operators)
        print(f"{name:16} {ops:4d} {ours:9.3f} {auto:9.3f} {ref:9.3f} {ours / auto:10.2f} {ours / ref:9.3f}")
    geo = [math.exp(statistics.fmean(math.log(r) for r in rs)) for rs in (to_auto, to_ref)]
    print(f"{'geomean':16} {'':4} {'':9} {'':9} {'':9} {geo[0]:10.2f} {geo[1]:9.3f}")
    print(f"all {len(models)} family models equal to BUILTIN_REF (int8 outputs, 4 invokes each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
