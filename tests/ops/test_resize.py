"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR against the oracle.

One table (CASES) drives the differential test. Bilinear float32 follows the reference's float32 order
of operations, so it is compared exactly; every integer path (uint8 float kernel, int8/int16 integer
kernel, nearest for every dtype) is bit-exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.ops.resize import ResizeBilinearInteger, ResizeBilinearIntegerWide
from litert_py.ops.resize_int_phases import ResizeBilinearIntegerPhases
from litert_py.ops.resize_phases import ResizeBilinearPhases, ResizeBilinearPhasesBanded
from tests.ops._diff import ALL_DTYPES, chain_model, check_both
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import values

#: Float tolerance per op: the float32 operations are those of the reference kernel, in its order.
TOLERANCE = {"RESIZE_BILINEAR": 0.0, "RESIZE_NEAREST_NEIGHBOR": 0.0}

seeds = st.integers(0, 2**32 - 1)
NEAREST_DTYPES = ["float32", "int32", "int8", "uint8", "int16", "bool", "float16"]
BILINEAR_DTYPES = ["float32", "uint8", "int8", "int16"]


@st.composite
def resize(draw, op, dtype_names, dynamic=False):
    name = draw(st.sampled_from(dtype_names))
    dt = ALL_DTYPES[name]
    b, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 3))
    oh, ow = draw(st.integers(1, 17)), draw(st.integers(1, 17))
    mode = draw(st.sampled_from(["plain", "align_corners", "half_pixel_centers"]))
    opts = {"align_corners": mode == "align_corners", "half_pixel_centers": mode == "half_pixel_centers"}
    q = quant(0.5, 0 if name == "int16" else 3) if name in ("int8", "uint8", "int16") and draw(st.booleans()) else None
    x = values(np.random.default_rng(draw(seeds)), (b, h, w, c), dt)
    size = np.array([oh, ow], np.int32)
    if dynamic:
        model = chain_model(op, [T(x.shape, dt, q=q), T((2,), np.int32)], 1, opts)
        return model, [x, size]
    model = single_op_model(op, [T(x.shape, dt, q=q), T.const(size)], [T((b, oh, ow, c), dt, q=q)], opts)
    return model, [x]


CASES = {
    "resize_bilinear-any": resize("RESIZE_BILINEAR", BILINEAR_DTYPES),
    "resize_nearest_neighbor-any": resize("RESIZE_NEAREST_NEIGHBOR", NEAREST_DTYPES),
    "resize_bilinear-dynamic-size": resize("RESIZE_BILINEAR", BILINEAR_DTYPES, dynamic=True),
    "resize_nearest_neighbor-dynamic-size": resize("RESIZE_NEAREST_NEIGHBOR", NEAREST_DTYPES, dynamic=True),
}


@pytest.mark.parametrize("case", list(CASES))
@given(data=st.data())
def test_resize(case, data):
    model, inputs = data.draw(CASES[case])
    op = "RESIZE_BILINEAR" if "bilinear" in case else "RESIZE_NEAREST_NEIGHBOR"
    check_both(model, inputs, atol=TOLERANCE[op])


@pytest.mark.parametrize("dtype", BILINEAR_DTYPES)
@pytest.mark.parametrize("mode", ["plain", "align_corners", "half_pixel_centers"])
def test_resize_bilinear_extreme_values(dtype, mode):
    """Full-range integers and large floats through every up/down-scaling factor up to 4x."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    if dt.kind == "f":
        x = (rng.standard_normal((1, 5, 7, 2)) * 1e4).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.choice(np.array([info.min, info.max, info.min + 1, info.max - 1, 0], dt), (1, 5, 7, 2))
    opts = {"align_corners": mode == "align_corners", "half_pixel_centers": mode == "half_pixel_centers"}
    for oh, ow in [(1, 1), (2, 3), (9, 13), (20, 28), (4, 5), (5, 7)]:
        model = single_op_model(
            "RESIZE_BILINEAR", [T(x.shape, dt), T.const(np.array([oh, ow], np.int32))], [T((1, oh, ow, 2), dt)], opts
        )
        assert check_both(model, [x]) is not None


#: integer-factor upsamplings (resize_phases.ResizeBilinearPhases) and near misses (the gather kernel)
PHASE_CASES = [((1, 5, 7, 2), (10, 14)), ((2, 3, 4, 3), (9, 8)), ((1, 1, 6, 1), (4, 6)), ((1, 4, 3, 16), (8, 12))]


def _upsampling_input(seed: int, shape, dt: np.dtype) -> np.ndarray:
    """Values for the upsampling tests: float32 over many magnitudes with inf, -0.0, NaN and -inf first; uint8
    over the whole type."""
    rng = np.random.default_rng(seed)
    if dt.kind != "f":
        return rng.integers(0, 256, shape).astype(dt)
    x = (rng.standard_normal(shape) * 1e4).astype(dt)
    x.flat[:4] = [np.inf, -0.0, np.nan, -np.inf]
    return x


def _bilinear_model(shape, out_hw, dt: np.dtype, mode: str):
    """A one-op RESIZE_BILINEAR model (mode: plain, align_corners or half_pixel_centers) and the op prepare
    chose for it."""
    opts = {"align_corners": mode == "align_corners", "half_pixel_centers": mode == "half_pixel_centers"}
    size = T.const(np.array(out_hw, np.int32))
    out = T((shape[0], *out_hw, shape[3]), dt)
    model = single_op_model("RESIZE_BILINEAR", [T(shape, dt), size], [out], opts)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    return model, prepared


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("mode", ["plain", "align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("case", range(len(PHASE_CASES)))
def test_resize_bilinear_phases(case, mode, dtype):
    """Integer upsampling factors take the phase kernel (except align_corners,
    whose tables are not periodic unless an input axis has size 1)
    and stay equal to the reference kernel, inf and NaN included (compared as values: the gather kernel too gives
    -0 where LiteRT gives +0 and a positive NaN where it gives a negative one, at inputs -0 and inf)."""
    shape, (oh, ow) = PHASE_CASES[case]
    dt = np.dtype(dtype)
    x = _upsampling_input(case, shape, dt)
    model, prepared = _bilinear_model(shape, (oh, ow), dt, mode)
    if mode != "align_corners" or shape[1:3] != (1, 6):  # a 1-row input is periodic in every mode
        assert isinstance(prepared, ResizeBilinearPhases) == (mode != "align_corners")
    (theirs,) = run_litert(model, [x])
    (ours,) = run_ours(model, [x])
    np.testing.assert_array_equal(ours, theirs)


#: upsamplings whose buffers pass resize_phases.BANDED_MIN_BYTES (ResizeBilinearPhasesBanded), with
#: heights that the bands split unevenly
BANDED_CASES = [((1, 32, 32, 64), (64, 64)), ((1, 45, 40, 64), (90, 80)), ((1, 70, 20, 96), (140, 40))]


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("mode", ["plain", "half_pixel_centers"])
@pytest.mark.parametrize("case", range(len(BANDED_CASES)))
def test_resize_bilinear_phases_banded(case, mode, dtype):
    """Large integer upsamplings run the phase kernel in bands of input rows (several bands, the last one
    shorter): equal to the reference kernel, inf and NaN included, and to the unbanded phase kernel bit for bit."""
    shape, (oh, ow) = BANDED_CASES[case]
    dt = np.dtype(dtype)
    x = _upsampling_input(case, shape, dt)
    if dt.kind == "f":
        x[0, -1, -1, :4] = [np.inf, -0.0, np.nan, -np.inf]  # the last band's last pixel
    model, prepared = _bilinear_model(shape, (oh, ow), dt, mode)
    assert isinstance(prepared, ResizeBilinearPhasesBanded) and len(prepared.bands) >= 2
    (theirs,) = run_litert(model, [x])
    (ours,) = run_ours(model, [x])
    np.testing.assert_array_equal(ours, theirs)
    unbanded = np.empty_like(ours)
    with np.errstate(all="ignore"):  # inf * 0 as in an invoke, which ignores floating-point errors
        ResizeBilinearPhases.__call__(prepared, [x], [unbanded])
    np.testing.assert_array_equal(ours.view(np.uint8), unbanded.view(np.uint8))


#: int8 / int16 resizes: (input shape, output size, periodic in plain and half_pixel_centers mode); the periodic
#: ones take resize_int_phases.ResizeBilinearIntegerPhases, the others the separable gather kernel
INTEGER_CASES = [
    ((1, 5, 7, 2), (10, 14), True),
    ((2, 4, 5, 3), (8, 10), True),  # two batches: the flat adds run over the padding between them
    ((1, 4, 3, 16), (8, 12), True),
    ((1, 3, 4, 5), (12, 8), True),  # 4x and 2x
    ((1, 4, 3, 2), (32, 24), True),  # 8x: int8 |S'| reaches 32896, just past int16 (int32 accumulators)
    ((1, 6, 5, 3), (6, 15), False),  # 3x half_pixel_centers: the 10-bit scale 341 is not periodic
    ((2, 3, 4, 3), (9, 8), False),
    ((1, 9, 7, 4), (4, 5), False),  # downscaling
    ((1, 5, 6, 3), (7, 13), False),
    ((1, 5, 4, 3), (17, 13), False),  # align_corners: weights multiples of 256
    ((1, 5, 6, 3), (9, 6), False),  # the width kept: column weights 1024 and 0
]

#: the gather kernel's accumulators: (case, dtype, mode) -> (class, dtype)
INTEGER_ACCUMULATORS = {
    (9, "int8", "align_corners"): (ResizeBilinearInteger, np.int16),  # weights / 2^8 per axis: |S'| < 2^15
    (9, "int16", "align_corners"): (ResizeBilinearInteger, np.int32),
    (8, "int8", "plain"): (ResizeBilinearInteger, np.int32),
    (8, "int16", "plain"): (ResizeBilinearIntegerWide, np.float64),  # no shared power of two: past 2^31
}


def _integer_input(seed: int, shape, dt: np.dtype) -> np.ndarray:
    """The type's extremes and their neighbours (the largest accumulators, rounding ties of both signs) mixed
    with uniform values."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dt)
    edge = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1, -1], dt)
    x = rng.integers(info.min, info.max + 1, shape).astype(dt)
    mask = rng.random(shape) < 0.6
    x[mask] = rng.choice(edge, int(mask.sum()))
    x[..., 0] = info.min if seed % 2 else info.max  # whole regions at one extreme: the largest accumulators
    return x


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("mode", ["plain", "align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("case", range(len(INTEGER_CASES)))
def test_resize_bilinear_integer(case, mode, dtype):
    """int8 / int16: integer upsampling factors take the separable phase kernel (not align_corners, whose
    tables are not periodic), everything else the separable gather kernel (int16, int32 or float64 accumulators,
    INTEGER_ACCUMULATORS); all equal BUILTIN_REF bit for bit at the type's extremes, edge rows and columns
    included."""
    shape, (oh, ow), periodic = INTEGER_CASES[case]
    dt = np.dtype(dtype)
    model, prepared = _bilinear_model(shape, (oh, ow), dt, mode)
    phases = periodic and mode != "align_corners"
    assert isinstance(prepared, ResizeBilinearIntegerPhases if phases else ResizeBilinearInteger)
    if (case, dtype, mode) in INTEGER_ACCUMULATORS:
        kind, acc = INTEGER_ACCUMULATORS[case, dtype, mode]
        assert type(prepared) is kind and prepared.buffers[0].dtype == acc
    for seed in range(3):
        x = _integer_input(seed, shape, dt)
        (theirs,) = run_litert(model, [x])
        (ours,) = run_ours(model, [x])
        np.testing.assert_array_equal(ours, theirs)


REJECTED = {
    "bilinear-int32": ("RESIZE_BILINEAR", np.int32, [2, 2], {}),
    "bilinear-align-and-half-pixel": (
        "RESIZE_BILINEAR",
        np.float32,
        [2, 2],
        {"align_corners": True, "half_pixel_centers": True},
    ),
    "bilinear-zero-size": ("RESIZE_BILINEAR", np.float32, [0, 2], {}),
    "bilinear-rank3": ("RESIZE_BILINEAR", np.float32, [2, 2], {"rank": 3}),
    "bilinear-size3": ("RESIZE_BILINEAR", np.float32, [2, 2, 2], {}),
    "nearest-int64": ("RESIZE_NEAREST_NEIGHBOR", np.int64, [2, 2], {}),
    "nearest-int64-size": ("RESIZE_NEAREST_NEIGHBOR", np.float32, np.array([2, 2], np.int64), {}),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_resize_rejected(case):
    op, dt, size, opts = REJECTED[case]
    opts = dict(opts)
    shape = (1, 3, 3, 1)[: opts.pop("rank", 4)]
    size = np.asarray(size, np.int32) if not isinstance(size, np.ndarray) else size
    model = single_op_model(op, [T(shape, dt), T.const(size)], [T((1, 2, 2, 1), dt)], opts)
    feeds = [np.zeros(shape, dt)]
    with pytest.raises(RuntimeError):
        run_litert(model, feeds)
    with pytest.raises(PrepareError):
        run_ours(model, feeds)
