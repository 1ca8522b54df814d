"""Quantized FULLY_CONNECTED (int8 / uint8 -> int8 / uint8 / int16x8 with int64 bias) with constant weights and
bias: the exact-GEMM path of fully_connected_quantized.FullyConnectedQuantized with the bias and input zero point folded
into the GEMM (sources and the float requantization: fully_connected.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..quant.hybrid import HALF_DOWN_F64
from .common import clip_ufunc, small_gemm

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

    xview: np.ndarray  # xbuf[:, :-1], made at prepare
    half: np.ndarray  # (rows, units) float64 HALF_DOWN_F64
    lo_hi_zo: tuple  # lo, hi, zo as 0-d float64 arrays (a Python number operand is converted on every call)
    product: object  # np.dot or np.matmul (common.small_gemm); acc is C-contiguous of weights_t's type

    @staticmethod
    def build(rows: int, wz: np.ndarray, row: np.ndarray, dtype, eff, zo: int, lo: int, hi: int):
        """``wz``: (units, depth) w - zw; ``row``: (units,) bias - zx * sum(w - zw); ``dtype``: the GEMM's
        exact float type (the caller checked the bound). One output value (a streaming classifier's head):
        FullyConnectedQuantizedFoldedScalar."""
        units, depth = wz.shape
        wt = np.empty((depth + 1, units), dtype)
        wt[:-1] = wz.T
        wt[-1] = row
        xbuf = np.empty((rows, depth + 1), dtype)
        xbuf[:, -1] = 1
        if rows * units == 1:
            return FullyConnectedQuantizedFoldedScalar(
                np.ascontiguousarray(wt[:, 0]), xbuf[0], xbuf[0, :-1], float(np.asarray(eff).reshape(-1)[0]), zo, lo, hi
            )
        acc = np.empty((rows, units), dtype)
        t = acc if acc.dtype == np.float64 else np.empty((rows, units))
        eff = np.asarray(eff, np.float64)
        bounds = tuple(np.array(float(v)) for v in (lo, hi, zo))
        half = np.full((rows, units), HALF_DOWN_F64)
        sign = np.empty((rows, units))
        cls = FullyConnectedQuantizedFoldedRelu if lo >= 0 else FullyConnectedQuantizedFolded
        return cls(wt, xbuf, acc, t, sign, eff, zo, lo, hi, xbuf[:, :-1], half, bounds, small_gemm(rows))

    def __call__(self, inputs, outputs):
        t = self.t
        lo, hi, zo = self.lo_hi_zo
        np.copyto(self.xview, inputs[INPUT].reshape(self.xview.shape), casting="unsafe")
        self.product(self.xbuf, self.weights_t, out=self.acc)  # exact sums in any order
        np.multiply(self.acc, self.eff, out=t)  # C++ multiplies double(acc) by the double eff
        clip_ufunc(t, lo, hi, out=t)
        np.copysign(self.half, t, out=self.sign)
        t += self.sign  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        np.trunc(t, out=t)
        t += zo
        outputs[0].reshape(t.shape)[...] = t  # integers within the output type's range: exact


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedRelu(FullyConnectedQuantizedFolded):
    """FullyConnectedQuantizedFolded when the clamp's lower bound is at or above the output zero point
    (``lo = act_min - zo >= 0``: ReLU-like layers): after the clip every value is >= 0 (or -0.0), where
    round half away is floor(t + HALF_DOWN_F64) (quant.hybrid.HALF_DOWN; -0.0 gives 0 either way), so the sign
    term is not needed: one numpy call less (8 instead of 9), the same values."""

    def __call__(self, inputs, outputs):
        t = self.t
        lo, hi, zo = self.lo_hi_zo
        np.copyto(self.xview, inputs[INPUT].reshape(self.xview.shape), casting="unsafe")
        self.product(self.xbuf, self.weights_t, out=self.acc)
        np.multiply(self.acc, self.eff, out=t)  # C++ multiplies double(acc) by the double eff
        clip_ufunc(t, lo, hi, out=t)
        t += self.half
        np.floor(t, out=t)
        t += zo
        outputs[0].reshape(t.shape)[...] = t  # integers within the output type's range: exact


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantizedFoldedScalar:
    """FullyConnectedQuantizedFolded for one output value (one row, one unit: the head of a streaming
    classifier), where each numpy call costs about a microsecond whatever its size: the folded dot product
    [x, 1] . w (exact as in FullyConnectedQuantizedFolded, whatever the summation order) in numpy, then the
    requantization on the one Python float: float(acc) * eff is the same IEEE double product as numpy's,
    then clamp(., lo, hi), trunc(t +- HALF_DOWN_F64) (round half away, see quant.hybrid.HALF_DOWN) and + zo,
    stored with ndarray.fill. Three numpy calls instead of nine."""

    w: np.ndarray  # (depth + 1,) float32 or float64: (w - zw) then the folded row
    xvec: np.ndarray  # (depth + 1,) of w's type, last value one
    xview: np.ndarray  # xvec[:-1]
    eff: float
    zo: int
    lo: int  # act_min - zo
    hi: int  # act_max - zo

    def __call__(self, inputs, outputs):
        np.copyto(self.xview, inputs[INPUT].reshape(-1), casting="unsafe")
        t = float(np.dot(self.xvec, self.w)) * self.eff
        t = min(max(t, self.lo), self.hi)
        outputs[0].fill(math.trunc(t + math.copysign(HALF_DOWN_F64, t)) + self.zo)
