"""Error metrics of a quantized tensor against its float reference, accumulated over samples.

The first five are tf.lite.experimental.QuantizationDebugger's layer metrics, with its names and definitions
(tensorflow/lite/tools/optimize/debugging/python/debugger.py, ``_DEFAULT_LAYER_DEBUG_METRICS``): each is
computed on one sample's differences ``diffs = dequantize(quantized) - float`` and the report gives the mean
over samples (``np.nanmean``, as ``_collect_layer_statistics`` does):

- ``num_elements``: ``diffs.size``
- ``stddev``: ``np.std(diffs)`` (population standard deviation)
- ``mean_error``: ``np.average(diffs)``
- ``max_abs_error``: ``np.max(np.abs(diffs))``
- ``mean_squared_error``: ``np.average(diffs ** 2)``

The others are computed over every element of every sample:

- ``scale``, ``zero_point``: the quantized tensor's (first) quantization parameters (NaN / 0 for a float one)
- ``rmse/scale``: ``sqrt(mean_squared_error) / scale``; a perfect rounding of a uniformly spread value gives
  ``1/sqrt(12) ~ 0.289``, well above it means the layer loses more than its quantization step
- ``cosine_similarity``: ``sum(q * f) / sqrt(sum(q**2) * sum(f**2))`` (1 when both are all zero)
- ``snr_db``: ``10 log10(sum(f**2) / sum(diffs**2))`` (inf when there is no error)
"""

from __future__ import annotations

import math

import numpy as np

DEBUGGER_METRICS = ("num_elements", "stddev", "mean_error", "max_abs_error", "mean_squared_error")
METRICS = DEBUGGER_METRICS + ("scale", "zero_point", "rmse/scale", "cosine_similarity", "snr_db")
PERFECT_RMSE_OVER_SCALE = 1 / math.sqrt(12)
HISTOGRAM_VALUES = 4096  # differences kept per tensor for the HTML histograms


def sample_metrics(diffs: np.ndarray) -> tuple[float, ...]:
    """QuantizationDebugger's five layer metrics of one sample's differences."""
    d = np.asarray(diffs, np.float64).reshape(-1)
    if d.size == 0:
        return (0.0, math.nan, math.nan, math.nan, math.nan)
    return (float(d.size), float(np.std(d)), float(np.average(d)), float(np.max(np.abs(d))), float(np.average(d * d)))


class Accumulator:
    """Running sums for one tensor: ``update(quantized_dequantized, reference)`` once per sample."""

    def __init__(self, scale: float = math.nan, zero_point: int = 0):
        self.scale = scale
        self.zero_point = zero_point
        self.per_sample: list[tuple[float, ...]] = []
        self.qf = self.qq = self.ff = self.dd = 0.0
        self.kept: list[np.ndarray] = []
        self.n_kept = 0
        self.record: list | None = None  # a --workers process: the contributions added, in order

    def contribution(self, q: np.ndarray, f: np.ndarray, diffs: np.ndarray | None = None) -> tuple:
        """What one sample adds (``add`` adds it): computed where the sample ran (a ``--workers`` process) and
        added in sample order here, which gives the same sums, bit for bit, as ``update`` in a plain loop."""
        q = np.asarray(q, np.float64).reshape(-1)
        f = np.asarray(f, np.float64).reshape(-1)
        d = q - f if diffs is None else np.asarray(diffs, np.float64).reshape(-1)
        take = None
        if self.n_kept < HISTOGRAM_VALUES and d.size:
            take = d[:: max(1, d.size // HISTOGRAM_VALUES)][:HISTOGRAM_VALUES].astype(np.float32)
        return (sample_metrics(d), float(q @ f), float(q @ q), float(f @ f), float(d @ d), take)

    def add(self, c: tuple) -> None:
        metrics, qf, qq, ff, dd, take = c
        self.per_sample.append(metrics)
        self.qf += qf
        self.qq += qq
        self.ff += ff
        self.dd += dd
        if take is not None and self.n_kept < HISTOGRAM_VALUES:
            take = take[: HISTOGRAM_VALUES - self.n_kept]
            self.kept.append(take)
            self.n_kept += take.size
        if self.record is not None:
            self.record.append(c)

    def update(self, q: np.ndarray, f: np.ndarray, diffs: np.ndarray | None = None) -> None:
        self.add(self.contribution(q, f, diffs))

    def histogram_values(self) -> np.ndarray:
        return np.concatenate(self.kept) if self.kept else np.zeros(0, np.float32)

    def result(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.per_sample:
            with np.errstate(all="ignore"), _no_empty_warning():
                means = np.nanmean(np.array(self.per_sample, np.float64), axis=0)
        else:
            means = [math.nan] * len(DEBUGGER_METRICS)
        out.update({k: float(v) for k, v in zip(DEBUGGER_METRICS, means)})
        out["num_elements"] = int(round(out["num_elements"])) if math.isfinite(out["num_elements"]) else 0
        out["scale"] = float(self.scale)
        out["zero_point"] = int(self.zero_point)
        mse = out["mean_squared_error"]
        out["rmse/scale"] = math.sqrt(mse) / self.scale if self.scale and self.scale > 0 and mse >= 0 else math.nan
        seen = bool(self.per_sample)
        out["cosine_similarity"] = cosine(self.qf, self.qq, self.ff) if seen else math.nan
        out["snr_db"] = snr_db(self.ff, self.dd) if seen else math.nan
        return out


def cosine(qf: float, qq: float, ff: float) -> float:
    if qq == 0.0 and ff == 0.0:
        return 1.0
    if qq == 0.0 or ff == 0.0:
        return 0.0
    return qf / math.sqrt(qq * ff)


def snr_db(signal_energy: float, error_energy: float) -> float:
    if error_energy == 0.0:
        return math.inf
    if signal_energy == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal_energy / error_energy)


class _no_empty_warning:
    """np.nanmean warns on an all-NaN column (a tensor with no elements); the NaN is the answer."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def top1_agreement(q: np.ndarray, f: np.ndarray) -> float:
    """Fraction of rows (the last axis holds class scores) whose argmax agrees."""
    q = np.asarray(q).reshape(-1, np.shape(q)[-1])
    f = np.asarray(f).reshape(-1, np.shape(f)[-1])
    return float(np.mean(np.argmax(q, axis=-1) == np.argmax(f, axis=-1))) if q.size else math.nan


def looks_like_class_scores(shape) -> bool:
    """A [C] or [batch, C] output with at least 2 classes."""
    shape = tuple(int(d) for d in shape)
    return 1 <= len(shape) <= 2 and shape[-1] >= 2


def dequantize(values: np.ndarray, scales, zero_points, quantized_dimension: int = 0) -> np.ndarray:
    """``(q - zero_point) * scale`` in float64 (per channel along ``quantized_dimension``)."""
    v = np.asarray(values)
    if not len(scales) or v.dtype.kind not in "iu":
        return v.astype(np.float64)
    s = np.asarray(scales, np.float64)
    z = np.asarray(zero_points if len(zero_points) else [0], np.float64)
    if s.size > 1:
        shape = [1] * v.ndim
        shape[quantized_dimension] = -1
        s = s.reshape(shape)
        z = np.broadcast_to(z, (s.size,)).reshape(shape) if z.size > 1 else z[0]
    else:
        s, z = s[0], z[0]
    return (v.astype(np.float64) - z) * s


def quantize(values: np.ndarray, scale: float, zero_point: int, dtype) -> np.ndarray:
    """Round to nearest (half away from zero, as TFLite's QUANTIZE), saturating to ``dtype``."""
    info = np.iinfo(dtype)
    x = np.asarray(values, np.float64) / scale
    q = np.sign(x) * np.floor(np.abs(x) + 0.5) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)
