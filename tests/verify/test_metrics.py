"""Every metric of litert_py.verify against a direct numpy computation on known arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

from litert_py.verify.metrics import (
    METRICS,
    Accumulator,
    dequantize,
    looks_like_class_scores,
    quantize,
    sample_metrics,
    top1_agreement,
)

F = np.array([[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.75, 3.0]])
Q = np.array([[0.75, -1.0, 1.5, 0.25], [1.5, 0.0, -0.5, 3.5]])
F2 = np.array([[1.0, 1.0, -2.0, 0.5], [0.0, 0.0, 0.0, 1.0]])
Q2 = np.array([[1.0, 0.5, -2.5, 0.5], [0.25, 0.0, 0.0, 1.0]])


def test_sample_metrics_are_quantization_debuggers():
    d = Q - F
    got = sample_metrics(d)
    # tensorflow/lite/tools/optimize/debugging/python/debugger.py _DEFAULT_LAYER_DEBUG_METRICS, by hand
    n = d.size
    mean = d.sum() / n
    assert got == pytest.approx((8, math.sqrt(((d - mean) ** 2).sum() / n), mean, 0.5, (d**2).sum() / n))


def test_accumulated_metrics_over_two_samples():
    acc = Accumulator(scale=0.25, zero_point=-3)
    acc.update(Q, F)
    acc.update(Q2, F2)
    r = acc.result()
    assert set(r) == set(METRICS)
    d1, d2 = (Q - F).ravel(), (Q2 - F2).ravel()
    # the debugger's five: mean over samples of each sample's value (np.nanmean in _collect_layer_statistics)
    assert r["num_elements"] == 8
    assert r["stddev"] == pytest.approx((d1.std() + d2.std()) / 2)
    assert r["mean_error"] == pytest.approx((d1.mean() + d2.mean()) / 2)
    assert r["max_abs_error"] == pytest.approx((0.5 + 0.5) / 2)
    mse = ((d1**2).mean() + (d2**2).mean()) / 2
    assert r["mean_squared_error"] == pytest.approx(mse)
    assert (r["scale"], r["zero_point"]) == (0.25, -3)
    assert r["rmse/scale"] == pytest.approx(math.sqrt(mse) / 0.25)
    q, f = np.concatenate([Q.ravel(), Q2.ravel()]), np.concatenate([F.ravel(), F2.ravel()])
    assert r["cosine_similarity"] == pytest.approx(q @ f / np.linalg.norm(q) / np.linalg.norm(f))
    assert r["snr_db"] == pytest.approx(10 * np.log10((f**2).sum() / ((q - f) ** 2).sum()))


def test_exact_values_and_empty_tensor():
    acc = Accumulator(scale=0.5)
    acc.update(F, F)
    r = acc.result()
    assert (r["max_abs_error"], r["mean_squared_error"], r["rmse/scale"]) == (0.0, 0.0, 0.0)
    assert r["cosine_similarity"] == pytest.approx(1.0) and r["snr_db"] == math.inf
    float_tensor = Accumulator()  # no scale: rmse/scale is undefined
    float_tensor.update(Q, F)
    assert math.isnan(float_tensor.result()["rmse/scale"])
    empty = Accumulator(scale=1.0)
    empty.update(np.zeros(0), np.zeros(0))
    assert empty.result()["num_elements"] == 0 and math.isnan(empty.result()["max_abs_error"])


def test_perfect_rounding_gives_one_over_sqrt12():
    rng = np.random.default_rng(0)
    f = rng.uniform(-10, 10, 200_000)
    scale = 0.1
    q = dequantize(quantize(f, scale, 0, np.int8), [scale], [0])
    acc = Accumulator(scale)
    acc.update(q, f)
    assert acc.result()["rmse/scale"] == pytest.approx(1 / math.sqrt(12), rel=0.01)


def test_quantize_dequantize_per_channel_and_rounding():
    assert quantize(np.array([0.25, -0.25, 0.75, 100.0, -100.0]), 0.5, 1, np.int8).tolist() == [2, 0, 3, 127, -128]
    q = np.array([[1, 2], [3, 4]], np.int8)
    got = dequantize(q, [0.5, 2.0], [1, 0], quantized_dimension=1)
    np.testing.assert_array_equal(got, [[0.0, 4.0], [1.0, 8.0]])
    np.testing.assert_array_equal(dequantize(q, [0.5], [1]), (q - 1) * 0.5)


def test_top1_agreement_and_class_scores():
    q = np.array([[0.1, 0.9, 0.0], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]])
    f = np.array([[0.2, 0.7, 0.1], [0.1, 0.8, 0.1], [0.1, 0.2, 0.7]])
    assert top1_agreement(q, f) == pytest.approx(2 / 3)
    assert looks_like_class_scores((1, 10)) and looks_like_class_scores((5,))
    assert not looks_like_class_scores((1, 8, 8, 3)) and not looks_like_class_scores((1, 1))
