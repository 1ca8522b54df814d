"""Quantized FULLY_CONNECTED (int8 / uint8 -> int8 / uint8 / int16x8 with int64 bias) with constant weights and
bias: the exact-GEMM path of fully_connected.FullyConnectedQuantized with the bias and input zero point folded
into the GEMM (sources and the float requantization: fully_connected.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant.hybrid import HALF_DOWN_F64
from .common import clip_ufunc

INPUT = 0


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFolded:
    """FullyConnectedQuantized's exact path with the bias and the input zero point folded into the GEMM: a
    ones column after the raw input values (a buffer made at prepare) meets the row bias - zx * sum(w - zw),
    so acc = [x, 1] @ [(W - zw)^T; row] with every partial sum an exact integer (|x| * sum|w - zw| + |row|
    below 2^24 for float32, 2^53 for float64, checked at prepare), then LiteRT's float requantization
    clamp(round_half_away(f64(acc) * eff) + zo) into scratch buffers: no allocation per invoke."""

    weights_t: np.ndarray  # (depth + 1, units) float32 or float64
    xbuf: np.ndarray  # (rows, depth + 1) of weights_t's type, last column ones
    acc: np.ndarray  # (rows, units) of weights_t's type
    t: np.ndarray  # (rows, units) float64 (acc itself when float64)
    sign: np.ndarray  # (rows, units) float64
    eff: np.ndarray
    zo: int
    lo: int  # act_min - zo
    hi: int  # act_max - zo

    @staticmethod
    def build(rows: int, wz: np.ndarray, row: np.ndarray, dtype, eff, zo: int, lo: int, hi: int):
        """``wz``: (units, depth) w - zw; ``row``: (units,) bias - zx * sum(w - zw); ``dtype``: the GEMM's
        exact float type (the caller checked the bound)."""
        units, depth = wz.shape
        wt = np.empty((depth + 1, units), dtype)
        wt[:-1] = wz.T
        wt[-1] = row
        xbuf = np.empty((rows, depth + 1), dtype)
        xbuf[:, -1] = 1
        acc = np.empty((rows, units), dtype)
        t = acc if acc.dtype == np.float64 else np.empty((rows, units))
        return FullyConnectedQuantizedFolded(wt, xbuf, acc, t, np.empty((rows, units)), eff, zo, lo, hi)

    def __call__(self, inputs, outputs):
        xbuf, t = self.xbuf, self.t
        np.copyto(xbuf[:, :-1], inputs[INPUT].reshape(xbuf.shape[0], -1), casting="unsafe")
        np.matmul(xbuf, self.weights_t, out=self.acc)
        np.multiply(self.acc, self.eff, out=t)  # C++ multiplies double(acc) by the double eff
        clip_ufunc(t, self.lo, self.hi, out=t)
        np.copysign(HALF_DOWN_F64, t, out=self.sign)
        t += self.sign  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        out2d = outputs[0].reshape(t.shape)
        if self.zo:
            np.trunc(t, out=t)
            np.add(t, self.zo, out=out2d, casting="unsafe")
        else:
            np.copyto(out2d, t, casting="unsafe")  # the float -> int cast truncates
