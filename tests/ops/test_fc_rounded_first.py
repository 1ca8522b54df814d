"""FullyConnectedQuantizedFoldedRounded before the integer stores (ops/fully_connected_folded.py,
ROUNDED_FIRST_MIN_VALUES): multi-row folded int8 / uint8 FULLY_CONNECTED layers of at least that many output values
whose requantization has no tie inside the clamp round by rint, + zo and one casting clamp instead of
FullyConnectedQuantizedFoldedRelu / Signed's truncating stores. Compared exactly with BUILTIN_REF over many
inputs (both clamps reached), with the prepared class asserted on both sides of the size bound and with a tie
(power-of-two scales: the integer store stays); forced past the tie check, the rounded layer differs from
BUILTIN_REF (the check is what makes it exact)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops import fully_connected_folded
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import compare_steps

NONE, RELU = 0, 1


def _fc(
    rows: int, units: int, dtype, act: int, zo: int, tied: bool = False, depth: int = 48, per_channel: bool = False
) -> bytes:
    """One FULLY_CONNECTED (rows, depth) -> (rows, units); ``tied``: eff = 2^-6 exactly (ties of the float
    requantization at acc = 32 mod 64), else scales whose eff = 0.0023 has none; ``per_channel``: int8 weight
    scales per unit around 0.01 (a per-unit eff)."""
    rng = np.random.default_rng(rows * units + act)
    signed = dtype == np.int8
    s, s_w, s_out = (2.0**-4, 2.0**-7, 2.0**-5) if tied else (0.05, 0.01, 0.05 * 0.01 / 0.0023)
    wz = rng.integers(-20 if tied else -127, 21 if tied else 128, (units, depth))
    b = ModelBuilder()
    zx = -3 if signed else 120
    x = b.input("x", (rows, depth), dtype, quantization=quant(s, zx))
    s_w = s_w * rng.uniform(0.8, 1.25, units) if per_channel else s_w
    w = b.const("w", (wz if signed else wz + 128).astype(dtype), quantization=quant(s_w, 0 if signed else 128))
    bias = b.const("b", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quant(s * s_w))
    y = b.tensor("y", (rows, units), dtype, quantization=quant(s_out, zo))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": act})
    b.output(y)
    return b.build()


def _compare(model: bytes, n: int = 12) -> list[str]:
    def inputs(d):
        info = np.iinfo(d["dtype"])
        rng = np.random.default_rng(3)
        xs = [rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]) for _ in range(n)]
        return xs + [np.full(d["shape"], info.min, d["dtype"]), np.full(d["shape"], info.max, d["dtype"])]

    return compare_steps(model, inputs)


@pytest.mark.parametrize(
    ("rows", "units", "dtype", "act", "zo", "expected"),
    [
        (32, 32, np.int8, NONE, 0, "FullyConnectedQuantizedFoldedRoundedRows"),  # 1024 values: at the bound
        (31, 33, np.int8, NONE, 0, "FullyConnectedQuantizedFoldedSigned"),  # 1023: the integer store
        (32, 64, np.int8, RELU, -128, "FullyConnectedQuantizedFoldedRoundedRows"),
        (31, 33, np.int8, RELU, -128, "FullyConnectedQuantizedFoldedRelu"),
        (16, 80, np.uint8, NONE, 128, "FullyConnectedQuantizedFoldedRoundedRows"),
        (16, 80, np.int8, NONE, 7, "FullyConnectedQuantizedFoldedRoundedRows"),
    ],
)
def test_rounded_first_from_the_size_bound(rows, units, dtype, act, zo, expected):
    assert _compare(_fc(rows, units, dtype, act, zo)) == [expected]


def test_rounded_rows_per_channel():
    """Per-unit effective scales (a (rows, units) eff laid out at prepare), with and without a ReLU clamp."""
    for act, zo in ((NONE, -4), (RELU, -128)):
        model = _fc(24, 64, np.int8, act, zo, per_channel=True)
        assert _compare(model) == ["FullyConnectedQuantizedFoldedRoundedRows"]


def test_ties_keep_the_integer_store(monkeypatch):
    """A tie inside the clamp (eff = 2^-6): the integer store's round half away stays (exact); forced past the
    tie check, the rounded layer (rint: ties to even) differs from BUILTIN_REF."""
    model = _fc(32, 32, np.int8, NONE, 0, tied=True)
    assert _compare(model) == ["FullyConnectedQuantizedFoldedSigned"]
    monkeypatch.setattr(fully_connected_folded, "_ties_free", lambda *a: True)
    with pytest.raises(AssertionError):
        _compare(model)


def test_one_row_keeps_the_integer_store():
    """One row of 1100 units (more values than the bound): the integer store stays (one-row layers)."""
    assert _compare(_fc(1, 1100, np.int8, RELU, -128)) == ["FullyConnectedQuantizedFoldedRelu"]


def _fc_reshape(rows: int, units: int, reshaped, then_fc: bool = False, zo: int = 5) -> bytes:
    """FULLY_CONNECTED (rows, 48) -> (rows, units), no activation, zero point ``zo``, then RESHAPE to ``reshaped``
    (the model output), or then a second FULLY_CONNECTED reading the reshaped tensor (``then_fc``)."""
    rng = np.random.default_rng(units)
    b = ModelBuilder()
    x = b.input("x", (rows, 48), np.int8, quantization=quant(0.05, -3))
    w = b.const("w", rng.integers(-127, 128, (units, 48)).astype(np.int8), quantization=quant(0.01, 0))
    bias = b.const("b", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quant(0.05 * 0.01))
    s_y = 0.05 * 0.01 / 0.0023
    y = b.tensor("y", (rows, units), np.int8, quantization=quant(s_y, zo))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": NONE})
    r = b.tensor("r", reshaped, np.int8, quantization=quant(s_y, zo))
    b.op("RESHAPE", [y, b.const("shape", np.array(reshaped, np.int32))], [r])
    if not then_fc:
        b.output(r)
        return b.build()
    w2 = b.const("w2", rng.integers(-60, 61, (16, reshaped[-1])).astype(np.int8), quantization=quant(0.01, 0))
    b2 = b.const("b2", rng.integers(-3000, 3000, 16).astype(np.int32), quantization=quant(s_y * 0.01))
    z = b.tensor("z", (int(np.prod(reshaped)) // reshaped[-1], 16), np.int8, quantization=quant(s_y * 0.01 / 0.003, 1))
    b.op("FULLY_CONNECTED", [r, w2, b2], [z], {"fused_activation_function": NONE})
    b.output(z)
    return b.build()


@pytest.mark.parametrize(
    ("rows", "units", "reshaped", "expected"),
    [
        (32, 64, (1, 32, 4, 16), "FullyConnectedQuantizedFoldedRoundedRows"),  # an attention's head split
        (32, 40, (4, 8, 40), "FullyConnectedQuantizedFoldedRoundedRows"),
        (1, 24, (2, 12), "FullyConnectedQuantizedFoldedRounded"),  # one row: no integer store for zo = 5
    ],
)
def test_rounded_absorbs_a_reshape(rows, units, reshaped, expected):
    """The RESHAPE's copy is dropped: the rounded layer stores into its output (C order, the same values)."""
    assert _compare(_fc_reshape(rows, units, reshaped)) == [expected]


def test_rounded_through_a_reshape_into_a_layer():
    """FULLY_CONNECTED -> RESHAPE (1, 32, 32) -> FULLY_CONNECTED: the reshape absorbed, then the two layers one
    step (the second reads the first's rows as its own: the same (32, 32) values)."""
    names = _compare(_fc_reshape(32, 32, (1, 32, 32), then_fc=True))
    assert len(names) == 1 and names[0].startswith("FullyConnectedChain")
