"""AVERAGE_POOL_2D over windows that tile the input (litert_py.ops.pooling.PoolTiles: no padding, one window or
filter == stride per axis, at least POOL_TILED_MIN_TAPS taps): one reduction per invoke instead of one add
per tap. Checked against the oracle (ai-edge-litert BUILTIN_REF) bit for bit, float included (numpy's
outer-axis reduction adds the taps in the reference's order; one-channel float layers keep the per-tap path),
and the boundaries of the path's choice (overlapping windows, padding, a window past the input, too few taps
keep the per-tap path).
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.pooling import DIVIDE_TABLE_MAX_COUNT, POOL_TILED_MIN_TAPS
from tests.ops.test_pooling import pool_model
from tests.oracle import quant, run_both

SAME, VALID = 0, 1


def _model(shape, out_shape, fh, fw, sh, sw, padding=VALID, act=0, dtype=np.float32, q=None):
    return pool_model("AVERAGE_POOL_2D", shape, fh, fw, sh, sw, padding, act, dtype, q, out_shape)


def _prepared(model: bytes):
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = it._subgraphs[0].prepared_ops.values()
    return type(op).__name__


# (input shape, filter h, w, stride h, w, padding, tiled?)
GEOMETRIES = [
    ((1, 64, 64, 16), 64, 64, 64, 64, VALID, True),  # global pool (MediaPipe's squeeze-excite blocks)
    ((1, 128, 128, 16), 128, 128, 1, 1, VALID, True),  # selfie segmentation's largest: 16384 taps
    ((1, 130, 70, 8), 32, 32, 32, 32, VALID, True),  # 4x2 windows of 1024 taps, rows and columns left over
    ((2, 16, 16, 96), 16, 16, 1, 1, VALID, True),  # global pool, any stride, two batches
    ((1, 9, 9, 1), 9, 9, 2, 2, VALID, True),  # one channel: float keeps the per-tap path (numpy's pairwise sum)
    ((1, 4, 12, 1), 2, 12, 2, 12, VALID, True),  # one channel, 24 taps: ditto
    ((1, 12, 13, 3), 4, 4, 4, 4, VALID, True),  # 3x3 windows, a column left over
    ((1, 12, 12, 5), 3, 4, 3, 4, SAME, True),  # SAME where the windows divide the input: no padding
    ((2, 10, 7, 4), 5, 7, 5, 1, VALID, True),  # window rows spanning whole input rows: (N, OH, KH*W, C)
    ((1, 12, 12, 3), 4, 4, 3, 3, VALID, False),  # overlapping windows
    ((1, 14, 14, 3), 4, 4, 4, 4, SAME, False),  # SAME padding: the last window is clipped
    ((1, 12, 12, 3), 2, 2, 2, 2, VALID, False),  # too few taps
    ((1, 8, 8, 2), 8, 8, 1, 1, SAME, False),  # global-sized window with padding: 64 outputs
]


def _out_shape(shape, fh, fw, sh, sw, padding):
    n, h, w, c = shape
    if padding == SAME:
        return (n, -(-h // sh), -(-w // sw), c)
    return (n, (h - fh) // sh + 1, (w - fw) // sw + 1, c)


@pytest.mark.parametrize(
    "geometry", GEOMETRIES, ids=[f"{g[0]}-{g[1]}x{g[2]}/{g[3]}x{g[4]}-{'SV'[g[5]]}" for g in GEOMETRIES]
)
@pytest.mark.parametrize("act", [0, 3])  # NONE, RELU6
def test_average_pool_tiled_float(geometry, act):
    shape, fh, fw, sh, sw, padding, tiled = geometry
    assert fh * fw >= POOL_TILED_MIN_TAPS or not tiled
    rng = np.random.default_rng(sum(shape) + fh + act)
    x = (rng.standard_normal(shape) * 4 + 1).astype(np.float32)
    model = _model(shape, _out_shape(shape, fh, fw, sh, sw, padding), fh, fw, sh, sw, padding, act)
    tiled = tiled and shape[3] > 1
    assert _prepared(model) == ("AveragePoolFloatTiled" if tiled else "AveragePoolFloat")
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])  # the reference's order of the taps


def test_average_pool_tiled_float_nan_inf():
    """A NaN or an infinity in one window reaches only that window's output (as in the reference)."""
    x = np.ones((1, 12, 12, 2), np.float32)
    x[0, 1, 2, 0] = np.nan
    x[0, 5, 9, 1] = np.inf
    x[0, 9, 0, 1] = -np.inf
    model = _model(x.shape, (1, 3, 3, 2), 4, 4, 4, 4)
    assert _prepared(model) == "AveragePoolFloatTiled"
    with np.errstate(invalid="ignore"):
        ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert np.isnan(ours[0][0, 0, 0, 0]) and ours[0][0, 1, 2, 1] == np.finfo(np.float32).max


def test_average_pool_tiled_float_negative_zeros():
    """A window of -0.0 averages to +0.0 on the tiled path: the reference's sum starts from 0.f."""
    x = np.full((1, 12, 12, 2), -0.0, np.float32)
    x[0, 4:, :, 1] = 1.0
    model = _model(x.shape, (1, 3, 3, 2), 4, 4, 4, 4)
    assert _prepared(model) == "AveragePoolFloatTiled"
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))
    assert not np.signbit(theirs[0]).any()


QUANTIZED = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}


@pytest.mark.parametrize(
    "geometry", GEOMETRIES, ids=[f"{g[0]}-{g[1]}x{g[2]}/{g[3]}x{g[4]}-{'SV'[g[5]]}" for g in GEOMETRIES]
)
@pytest.mark.parametrize("dtype", list(QUANTIZED))
def test_average_pool_tiled_quantized(geometry, dtype):
    """Exact: the int32 window sums and the reference's rounding division (halves away from zero for
    int8/int16, up for uint8), extremes of the type included, RELU clamping at the zero point."""
    shape, fh, fw, sh, sw, padding, tiled = geometry
    dt = np.dtype(QUANTIZED[dtype])
    info = np.iinfo(dt)
    rng = np.random.default_rng(sum(shape) + fh)
    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
    x.reshape(-1)[: x.size // 4] = info.max  # large sums, and at the other end
    x.reshape(-1)[-(x.size // 4) :] = info.min
    zp = 0 if dt == np.int16 else int(info.min) + 7
    model = _model(shape, _out_shape(shape, fh, fw, sh, sw, padding), fh, fw, sh, sw, padding, 1, dt, quant(0.5, zp))
    name = "AveragePoolQuantizedTiled" if tiled else "AveragePoolQuantized"
    if dt.itemsize == 1 and not tiled:  # 8-bit: separable sums, division tables
        assert _prepared(model) == "AveragePoolQuantizedSeparable"
    elif dt.itemsize == 1 and fh * fw <= DIVIDE_TABLE_MAX_COUNT:  # 8-bit: the division table
        assert _prepared(model) == name + "Table"
    else:
        assert _prepared(model) == name
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_average_pool_tiled_rounding_halves(dtype):
    """Window sums at exact halves of the count (8 taps): int8 rounds -4/8 and 4/8 away from zero, uint8 up."""
    x = np.zeros((1, 2, 8, 4), dtype)
    x[0, 0, :4, 0] = 1  # sum 4 -> 0.5
    x[0, 1, :4, 1] = 1 if dtype == np.uint8 else -1  # sum -4 (int8) -> -0.5
    x[0, 0, :3, 2] = 1  # 3/8 rounds to 0
    x[0, 1, :5, 3] = 1  # 5/8 rounds to 1
    model = _model(x.shape, (1, 2, 1, 4), 1, 8, 1, 8, dtype=dtype, q=quant(1.0, 0))
    assert _prepared(model) == "AveragePoolQuantizedTiledTable"
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert theirs[0][0, 0, 0, 0] == 1 and theirs[0][0, 0, 0, 2] == 0 and theirs[0][0, 1, 0, 3] == 1


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("activation", [0, 1, 3])
def test_average_pool_table_paths(dtype, activation):
    """The 8-bit division tables (AveragePoolQuantizedTiledTable, AveragePoolQuantizedSeparable) and the tiled
    path they leave windows of more than DIVIDE_TABLE_MAX_COUNT elements to (a 33x32 global pool), with the
    fused RELU / RELU6 clamps, the type's extremes included: exact."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    zp = int(info.min) + 100
    q = quant(0.05, zp)
    cases = [
        ((1, 33, 32, 3), (1, 1, 1, 3), 33, 32, 33, 32, "AveragePoolQuantizedTiled"),
        ((1, 10, 10, 5), (1, 1, 1, 5), 10, 10, 10, 10, "AveragePoolQuantizedTiledTable"),
        ((2, 9, 9, 4), (2, 9, 7, 4), 1, 3, 1, 1, "AveragePoolQuantizedSeparable"),  # VALID, overlapping 1x3 windows
        ((2, 9, 9, 4), (2, 4, 4, 4), 3, 3, 2, 2, "AveragePoolQuantizedSeparable"),  # strided 3x3
    ]
    for shape, out_shape, fh, fw, sh, sw, name in cases:
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        x.reshape(-1)[:7] = info.max
        x.reshape(-1)[-7:] = info.min
        model = _model(shape, out_shape, fh, fw, sh, sw, 1, activation, dtype, q)
        assert _prepared(model) == name
        ours, theirs = run_both(model, [x])
        np.testing.assert_array_equal(ours[0], theirs[0])


# (input shape, filter h, w, stride h, w, padding): 8-bit pools whose windows do not tile
SEPARABLE = [
    ((1, 12, 12, 8), 3, 3, 1, 1, SAME),  # clipped windows of 4, 6 and 9 taps: three division tables
    ((2, 11, 9, 3), 3, 3, 2, 2, SAME),  # strided, odd sizes: the last row and column windows clipped
    ((1, 10, 7, 5), 4, 3, 1, 2, SAME),  # even filter height: padding on both sides, unequal
    ((1, 9, 9, 4), 3, 3, 1, 1, VALID),  # one count (no clipping): a 0-d offset
    ((1, 6, 20, 2), 1, 3, 1, 1, SAME),  # one filter row: the input is its own row sum
    ((1, 6, 20, 2), 3, 1, 1, 1, VALID),  # one filter column: the offset plus the row sums
    ((1, 7, 9, 2), 1, 1, 2, 2, VALID),  # one tap
    ((1, 9, 8, 6), 2, 2, 2, 2, SAME),  # 2x2, the last row window clipped
    ((1, 8, 8, 6), 2, 2, 1, 1, VALID),
    ((1, 5, 5, 3), 5, 5, 1, 1, SAME),  # global-sized windows with padding: counts 9 .. 25
    ((1, 140, 3, 2), 130, 2, 1, 1, VALID),  # 130 filter rows: the row sums need int32 (130 * 255 > 32767)
]


@pytest.mark.parametrize(
    "geometry", SEPARABLE, ids=[f"{g[0]}-{g[1]}x{g[2]}/{g[3]}x{g[4]}-{'SV'[g[5]]}" for g in SEPARABLE]
)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("activation", [0, 1, 3])
def test_average_pool_separable(geometry, dtype, activation):
    """AveragePoolQuantizedSeparable (row sums, then column sums, then per-position division tables): exact
    against the oracle with the type's extremes (whole windows of -128 / 127, 0 / 255), the fused RELU / RELU6
    clamps and zero points at both ends; the row sums' and the window sums' int16 / int32 choices."""
    shape, fh, fw, sh, sw, padding = geometry
    info = np.iinfo(dtype)
    rng = np.random.default_rng(sum(shape) + fh + fw)
    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x[..., 0] = info.max  # whole windows at the ends of the range
    x[:, : shape[1] // 2, :, -1] = info.min
    for zp in (int(info.min), int(info.max) - 3):
        model = _model(
            shape,
            _out_shape(shape, fh, fw, sh, sw, padding),
            fh,
            fw,
            sh,
            sw,
            padding,
            activation,
            dtype,
            quant(0.02, zp),
        )
        it = Interpreter(model_content=model)
        it.allocate_tensors()
        (op,) = it._subgraphs[0].prepared_ops.values()
        assert type(op).__name__ == "AveragePoolQuantizedSeparable"
        assert op.row_sum is None or op.row_sum.dtype == (np.int16 if fh * 255 <= 32767 else np.int32)
        assert op.total.dtype == (np.int16 if op.table.size <= 2**15 else np.int32)
        ours, theirs = run_both(model, [x])
        np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_average_pool_separable_limits(dtype):
    """8-bit pools past AveragePoolQuantizedSeparable's bounds keep the per-tap AveragePoolQuantized, exact:
    windows of more than DIVIDE_TABLE_MAX_COUNT elements, and clipped windows of so many counts that their
    tables would pass SEPARABLE_TABLE_MAX entries."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    for shape, fh, fw, padding in (((1, 36, 36, 2), 33, 32, VALID), ((1, 24, 24, 1), 24, 24, SAME)):
        model = _model(
            shape,
            _out_shape(shape, fh, fw, 1, 1, padding),
            fh,
            fw,
            1,
            1,
            padding,
            0,
            dtype,
            quant(0.1, int(info.min) + 9),
        )
        assert _prepared(model) == "AveragePoolQuantized"
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        x[:, :12] = info.max
        ours, theirs = run_both(model, [x])
        np.testing.assert_array_equal(ours[0], theirs[0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize(("hw", "sum_dtype"), [((16, 16), np.uint16), ((1, 257), np.uint16), ((2, 129), np.int32)])
def test_average_pool_table_sum_width(dtype, hw, sum_dtype):
    """AveragePoolQuantizedTiledTable accumulates in uint16 up to 257 taps (255 * n < 2^16; int8 values added mod
    2^16) and in int32 from 258 on: whole windows at the type's extremes (the smallest and largest sums) and
    random ones, exact."""
    info = np.iinfo(dtype)
    shape = (1, *hw, 4)
    x = np.random.default_rng(3).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x[..., 0], x[..., 1] = info.max, info.min
    model = _model(shape, (1, 1, 1, 4), *hw, *hw, VALID, 0, dtype, quant(0.05, int(info.min) + 100))
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    op = interp._subgraphs[0].steps_nodes[0][1]
    assert type(op).__name__ == "AveragePoolQuantizedTiledTable" and op.total.dtype == sum_dtype
    ours, theirs = run_both(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
