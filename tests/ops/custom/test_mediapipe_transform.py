"""MediaPipe's Landmarks2TransformMatrix, TransformLandmarks and TransformTensorBilinear (v1 and v2; litert_py/
ops/custom/mediapipe_transform.py).

No Python runtime runs these ops, so they are checked against an independent float64 formulation written here
from MediaPipe's C++ (mediapipe/util/tflite/operations/*.cc), as matrices and geometry rather than its loops,
and against hand-computed cases: identity, translation, 90-degree rotation, scaling, bilinear samples at
integer and half-pixel positions, samples outside the input.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.oracle import T, run_ours, single_op_model

L2TM, TL, TTB = "Landmarks2TransformMatrix", "TransformLandmarks", "TransformTensorBilinear"


def flex(options: dict) -> bytes:
    return bytes(flexbuffers.Dumps(options))


def matrix(rows) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)
    m[:2] = np.asarray(rows, np.float32)
    return m.reshape(1, 4, 4)


# -- the independent formulation ------------------------------------------------------------------------------


def sample_bilinear(img: np.ndarray, m: np.ndarray, out_hw, align_corners: bool) -> np.ndarray:
    """Output pixel (x, y) -> point M @ (x, y, 0, 1) (v2: of the pixel centre (x + .5, y + .5), minus .5); zero
    outside [0, W-1] x [0, H-1], else the bilinear mix of its four neighbours (zeros past the edge)."""
    h, w, _ = img.shape
    m = m.reshape(4, 4).astype(np.float64)
    ys, xs = np.mgrid[0 : out_hw[0], 0 : out_hw[1]].astype(np.float64)
    off = 0.5 if align_corners else 0.0
    px = m[0, 0] * (xs + off) + m[0, 1] * (ys + off) + m[0, 3] - off
    py = m[1, 0] * (xs + off) + m[1, 1] * (ys + off) + m[1, 3] - off
    padded = np.zeros((h + 2, w + 2, img.shape[2]))
    padded[1:-1, 1:-1] = img
    x0, y0 = np.floor(px), np.floor(py)
    inside = (px >= 0) & (px <= w - 1) & (py >= 0) & (py <= h - 1)
    ix, iy = (np.clip(x0, -1, w).astype(int) + 1), (np.clip(y0, -1, h).astype(int) + 1)
    ix1, iy1 = np.minimum(ix + 1, w + 1), np.minimum(iy + 1, h + 1)
    fx, fy = (px - x0)[..., None], (py - y0)[..., None]
    top = (1 - fx) * padded[iy, ix] + fx * padded[iy, ix1]
    bottom = (1 - fx) * padded[iy1, ix] + fx * padded[iy1, ix1]
    return np.where(inside[..., None], (1 - fy) * top + fy * bottom, 0.0)


def transform_points(p: np.ndarray, m: np.ndarray, scale: float = 1.0) -> np.ndarray:
    m = m.reshape(4, 4).astype(np.float64)
    out = p.astype(np.float64).copy()
    out[..., 0] = m[0, 0] * p[..., 0] + m[0, 1] * p[..., 1] + m[0, 3] * scale
    out[..., 1] = m[1, 0] * p[..., 0] + m[1, 1] * p[..., 1] + m[1, 3] * scale
    return out


def rot(a: float) -> np.ndarray:
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


def l2tm_v2(xyz: np.ndarray, o: dict) -> np.ndarray:
    """Rotate the subset so that the left -> right line points at target_rotation_radians, take its bounding
    box: M maps the output crop (centred, scaled by scale_* x box / output size) onto that rotated box."""
    p = xyz.reshape(-1, 3)[:, :2].astype(np.float64)
    left, right = p[o["left_rotation_idx"]], p[o["right_rotation_idx"]]
    r = o["target_rotation_radians"] - np.arctan2(*(right - left)[::-1])
    q = p[o["subset_idxs"]] @ rot(r).T
    lo, hi = q.min(axis=0), q.max(axis=0)
    centre = rot(-r) @ ((lo + hi) / 2)
    size = hi - lo
    a = np.eye(3)
    a[:2, :2] = rot(-r) @ np.diag(
        [o["scale_x"] * size[0] / o["output_width"], o["scale_y"] * size[1] / o["output_height"]]
    )
    a[:2, 2] = centre - a[:2, :2] @ [o["output_width"] / 2, o["output_height"] / 2]
    m = np.eye(4)
    m[:2, :2], m[:2, 3] = a[:2, :2], a[:2, 2]
    return m


def l2tm_v1(xyz: np.ndarray, o: dict) -> np.ndarray:
    p = xyz.reshape(-1, 3)[:, :2].astype(np.float64)
    left, right = p[o["left_rotation_idx"]], p[o["right_rotation_idx"]]
    alpha = -np.arctan((right[1] - left[1]) / (right[0] - left[0]))
    q = p[o["subset"]] @ rot(alpha).T
    lo, hi = q.min(axis=0), q.max(axis=0)
    box = (hi - lo) * o["bbox_size_multiplier"]
    rng = o["landmarks_range"]
    middle = rot(-alpha) @ ((lo + hi) / 2)
    (ih, iw), (oh, ow) = o["input_hw"], o["output_hw"]
    to_abs = np.array([[(iw - 1) / 2, 0, (iw - 1) / 2], [0, (ih - 1) / 2, (ih - 1) / 2], [0, 0, 1]])
    rotation = np.eye(3)
    rotation[:2, :2], rotation[:2, 2] = rot(-alpha), middle / rng * 2 - 1
    scale = np.diag([box[0] / rng, box[1] / rng, 1])
    to_rel = np.array([[2 / (ow - 1), 0, -1], [0, 2 / (oh - 1), -1], [0, 0, 1]])
    itm = to_abs @ rotation @ scale @ to_rel
    m = np.zeros((4, 4))
    m[0, [0, 1, 3]], m[1, [0, 1, 3]], m[2, :3], m[3, 3] = itm[0], itm[1], itm[2], 1
    return m


# -- TransformTensorBilinear ----------------------------------------------------------------------------------


def ttb_model(in_shape, out_hw, version, options=None) -> bytes:
    if options is None:
        options = (
            {"output_height": out_hw[0], "output_width": out_hw[1]}
            if version == 2
            else {"mode": "bilinear", "output_size": list(out_hw)}
        )
    return single_op_model(
        "CUSTOM",
        [T(in_shape), T((1, 4, 4))],
        [T((1, *out_hw, in_shape[3]))],
        version=version,
        custom_code=TTB,
        custom_options=flex(options),
    )


def run_ttb(img: np.ndarray, m: np.ndarray, out_hw, version: int) -> np.ndarray:
    (out,) = run_ours(ttb_model(img.shape, out_hw, version), [img, m])
    return out[0]


IMG = np.arange(1, 1 + 4 * 5 * 2, dtype=np.float32).reshape(1, 4, 5, 2)  # value = 10 y + 2 x + c + 1


def test_bilinear_identity():
    np.testing.assert_array_equal(run_ttb(IMG, matrix([[1, 0, 0, 0], [0, 1, 0, 0]]), (4, 5), 1), IMG[0])
    np.testing.assert_array_equal(run_ttb(IMG, matrix([[1, 0, 0, 0], [0, 1, 0, 0]]), (4, 5), 2), IMG[0])


def test_bilinear_integer_translation_and_outside():
    out = run_ttb(IMG, matrix([[1, 0, 0, 2], [0, 1, 0, 1]]), (4, 5), 1)  # samples (x + 2, y + 1)
    np.testing.assert_array_equal(out[:3, :3], IMG[0, 1:, 2:])
    np.testing.assert_array_equal(out[3:], 0)  # y + 1 > H - 1: outside
    np.testing.assert_array_equal(out[:, 3:], 0)
    out = run_ttb(IMG, matrix([[1, 0, 0, -1], [0, 1, 0, 0]]), (4, 5), 1)  # x - 1 < 0 for x = 0
    np.testing.assert_array_equal(out[:, 0], 0)
    np.testing.assert_array_equal(out[:, 1:], IMG[0, :, :4])


def test_bilinear_half_pixel():
    out = run_ttb(IMG, matrix([[1, 0, 0, 0.5], [0, 1, 0, 0.5]]), (3, 4), 1)  # the mean of each 2x2 block
    expected = (IMG[0, :-1, :-1] + IMG[0, 1:, :-1] + IMG[0, :-1, 1:] + IMG[0, 1:, 1:]) / 4
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    out = run_ttb(IMG, matrix([[1, 0, 0, 0.5], [0, 1, 0, 0]]), (4, 4), 1)
    np.testing.assert_allclose(out, (IMG[0, :, :-1] + IMG[0, :, 1:]) / 2, rtol=1e-6)


def test_bilinear_rotation_90():
    # (x, y) -> (y, W - 1 - x) over a 5x5 output of a 4x5 input: the input rotated by 90 degrees
    out = run_ttb(IMG, matrix([[0, 1, 0, 0], [-1, 0, 0, 4]]), (4, 5), 1)
    for y, x in np.ndindex(4, 5):
        sx, sy = y, 4 - x
        expected = IMG[0, sy, sx] if sy <= 3 else 0
        np.testing.assert_array_equal(out[y, x], expected)


def test_bilinear_scaling_v1_and_v2():
    img = np.random.default_rng(1).standard_normal((1, 6, 8, 3)).astype(np.float32)
    m = matrix([[2, 0, 0, 0], [0, 2, 0, 0]])
    np.testing.assert_array_equal(run_ttb(img, m, (3, 4), 1), img[0, ::2, ::2])  # v1: every second pixel
    # v2 maps pixel centres: (x + .5) * 2 - .5 = 2x + .5: the mean of each 2x2 block
    blocks = img[0].reshape(3, 2, 4, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(run_ttb(img, m, (3, 4), 2), blocks, rtol=1e-5, atol=1e-6)


def test_bilinear_edge_and_nan():
    # x = W - 1 exactly is inside (its right neighbour reads 0 with weight 0); a NaN point gives NaN
    out = run_ttb(IMG, matrix([[0, 0, 0, 4], [0, 0, 0, 3]]), (1, 1), 1)
    np.testing.assert_array_equal(out[0, 0], IMG[0, 3, 4])
    out = run_ttb(IMG, matrix([[0, 0, 0, np.nan], [0, 0, 0, 1]]), (1, 2), 1)
    assert np.isnan(out).all()


@st.composite
def bilinear_case(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    h, w, c = draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 4))
    out_hw = (draw(st.integers(1, 8)), draw(st.integers(1, 8)))
    a = draw(st.floats(-np.pi, np.pi))
    s = draw(st.floats(0.2, 2.5))
    lin = rot(a) * s * rng.uniform(0.7, 1.3, (2, 2))
    t = rng.uniform(-2, max(h, w) + 1, 2)
    m = matrix(np.c_[lin, [0, 0], t])
    img = rng.standard_normal((1, h, w, c)).astype(np.float32)
    return img, m, out_hw, draw(st.sampled_from([1, 2]))


@given(c=bilinear_case())
def test_bilinear_matches_formulation(c):
    img, m, out_hw, version = c
    expected = sample_bilinear(img[0], m, out_hw, align_corners=version == 2)
    np.testing.assert_allclose(run_ttb(img, m, out_hw, version), expected, rtol=0, atol=1e-5)


# -- TransformLandmarks -----------------------------------------------------------------------------------------


def run_tl(points: np.ndarray, m: np.ndarray, version: int, options: dict | None = None) -> np.ndarray:
    raw = b"" if version == 2 else flex(options)
    model = single_op_model(
        "CUSTOM",
        [T(points.shape), T((1, 4, 4))],
        [T(points.shape)],
        version=version,
        custom_code=TL,
        custom_options=raw,
    )
    return run_ours(model, [points, m])[0]


PTS = np.array([[[1, 2, 7], [3, -1, 8], [0, 0, 9]]], np.float32)


def test_landmarks_identity_translation_rotation_scale():
    np.testing.assert_array_equal(run_tl(PTS, matrix([[1, 0, 0, 0], [0, 1, 0, 0]]), 2), PTS)
    out = run_tl(PTS, matrix([[1, 0, 0, 10], [0, 1, 0, -5]]), 2)
    np.testing.assert_array_equal(out, PTS + np.float32([10, -5, 0]))  # z is copied
    out = run_tl(PTS, matrix([[0, -1, 0, 0], [1, 0, 0, 0]]), 2)  # 90 degrees counter-clockwise
    np.testing.assert_array_equal(out[0, :, :2], np.c_[-PTS[0, :, 1], PTS[0, :, 0]])
    out = run_tl(PTS[..., :2].copy(), matrix([[2, 0, 0, 1], [0, 3, 0, 0]]), 2)
    np.testing.assert_array_equal(out[0], np.c_[2 * PTS[0, :, 0] + 1, 3 * PTS[0, :, 1]])


def test_landmarks_v1_scale_and_dimensions():
    grid = np.random.default_rng(2).standard_normal((1, 2, 3, 6)).astype(np.float32)
    m = matrix([[0.5, 0.25, 9, 4], [-1, 2, 9, -2]])  # M02 and M12 multiply z = 0: never used
    for dims in (2, 3):
        out = run_tl(grid, m, 1, {"dimensions": dims, "scale": 2.5})
        p = grid.reshape(-1, dims)
        expected = transform_points(p, m, scale=2.5)
        np.testing.assert_allclose(out.reshape(-1, dims), expected, rtol=1e-6, atol=1e-6)
        if dims == 3:
            np.testing.assert_array_equal(out.reshape(-1, 3)[:, 2], p[:, 2])


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), dims=st.sampled_from([2, 3]))
def test_landmarks_match_formulation(seed, n, dims):
    rng = np.random.default_rng(seed)
    p = (rng.standard_normal((1, n, dims)) * 50).astype(np.float32)
    m = matrix(rng.standard_normal((2, 4)) * 3)
    np.testing.assert_allclose(run_tl(p, m, 2), transform_points(p, m), rtol=1e-5, atol=1e-3)


# -- Landmarks2TransformMatrix ---------------------------------------------------------------------------------


V2 = {
    "left_rotation_idx": 0,
    "right_rotation_idx": 1,
    "target_rotation_radians": 0.0,
    "output_height": 16,
    "output_width": 16,
    "scale_x": 1.5,
    "scale_y": 1.5,
    "subset_idxs": [0, 1, 2, 3],
}


def run_l2tm(xyz: np.ndarray, options: dict, version: int = 2) -> np.ndarray:
    model = single_op_model(
        "CUSTOM", [T(xyz.shape)], [T((1, 4, 4))], version=version, custom_code=L2TM, custom_options=flex(options)
    )
    return run_ours(model, [xyz])[0].reshape(4, 4)


def test_l2tm_v2_axis_aligned_box():
    # eye corners (10, 20) and (30, 20), lids (20, 15) and (20, 27): box 20 x 12 centred at (20, 21)
    xyz = np.array([[[10, 20, 0], [30, 20, 0], [20, 15, 0], [20, 27, 0]]], np.float32)
    m = run_l2tm(xyz, V2)
    expected = [
        [1.5 * 20 / 16, 0, 0, 20 - 1.5 * 20 / 2],
        [0, 1.5 * 12 / 16, 0, 21 - 1.5 * 12 / 2],
        [0, 0, 1, 0],
        [0, 0, 0, 1],
    ]
    np.testing.assert_allclose(m, expected, rtol=1e-6, atol=1e-6)
    # the output crop's centre lands on the box centre
    np.testing.assert_allclose(m @ [8, 8, 0, 1], [20, 21, 0, 1], atol=1e-5)


def test_l2tm_v2_rotated_90():
    # the same eye turned by 90 degrees (left below right): the crop's x axis follows the eye line upwards
    xyz = np.array([[[20, 30, 0], [20, 10, 0], [15, 20, 0], [27, 20, 0]]], np.float32)
    m = run_l2tm(xyz, V2)
    np.testing.assert_allclose(m[:2, :2], [[0, 1.5 * 12 / 16], [-1.5 * 20 / 16, 0]], atol=1e-6)
    np.testing.assert_allclose(m @ [8, 8, 0, 1], [21, 20, 0, 1], atol=1e-5)
    np.testing.assert_allclose(m, l2tm_v2(xyz, V2), atol=1e-5)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 30), target=st.floats(-3, 3), odd=st.booleans())
def test_l2tm_v2_matches_formulation(seed, n, target, odd):
    rng = np.random.default_rng(seed)
    xyz = (rng.uniform(0, 192, (1, n, 3))).astype(np.float32)
    subset = [int(i) for i in rng.integers(0, n, 2 * rng.integers(1, 6) + odd)]
    o = {
        **V2,
        "left_rotation_idx": 0,
        "right_rotation_idx": n - 1,
        "target_rotation_radians": target,
        "subset_idxs": subset,
        "scale_x": float(rng.uniform(0.5, 2)),
        "output_width": int(rng.integers(1, 40)),
    }
    expected = l2tm_v2(xyz, {**o, "subset_idxs": subset + subset[-1:] if odd else subset})
    np.testing.assert_allclose(run_l2tm(xyz, o), expected, rtol=1e-4, atol=1e-3)


V1 = {
    "input_hw": [64, 48],
    "output_hw": [16, 24],
    "dimensions": 3,
    "landmarks_range": 64,
    "bbox_size_multiplier": 1.25,
    "left_rotation_idx": 0,
    "right_rotation_idx": 1,
    "subset": [0, 1, 2, 3, 4],
}


@given(seed=st.integers(0, 2**32 - 1))
def test_l2tm_v1_matches_formulation(seed):
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(0, 64, (1, 1, 1, 18)).astype(np.float32)
    o = {**V1, "subset": [int(i) for i in rng.integers(0, 6, 5)]}
    expected = l2tm_v1(xyz, {**o, "subset": o["subset"] + o["subset"][-1:]})
    np.testing.assert_allclose(run_l2tm(xyz, o, version=1), expected, rtol=1e-4, atol=1e-3)


def test_l2tm_then_crop_then_landmarks_round_trip():
    """The three ops as face_landmark_with_attention chains them: a crop of a bright square around a rotated eye
    box, a landmark found in the crop mapped back, lands on that square."""
    xyz = np.array([[[20, 30, 0], [20, 10, 0], [15, 20, 0], [27, 20, 0]]], np.float32)
    m = run_l2tm(xyz, V2)
    img = np.zeros((1, 48, 48, 1), np.float32)
    img[0, 24:27, 14:17] = 1  # a spot inside the crop (x 12..30, y 5..35), off its centre
    crop = run_ttb(img, m, (16, 16), 2)
    y, x = np.unravel_index(np.argmax(crop[..., 0]), (16, 16))
    back = run_tl(np.array([[[x, y]]], np.float32), m, 2)[0, 0]  # TL maps pixel corners: half a pixel off
    assert 13 <= back[0] <= 17.5 and 23 <= back[1] <= 27.5, back


# -- bad options ---------------------------------------------------------------------------------------------------


def _refused(model: bytes, *fragments: str) -> None:
    with pytest.raises(PrepareError) as e:
        Interpreter(model_content=model).allocate_tensors()
    for frag in fragments:
        assert frag in str(e.value), str(e.value)


def _l2tm_model(options: dict | bytes, version: int = 2) -> bytes:
    shape = (1, 4, 3) if version == 2 else (1, 1, 1, 18)
    raw = options if isinstance(options, bytes) else flex(options)
    return single_op_model("CUSTOM", [T(shape)], [T((1, 4, 4))], version=version, custom_code=L2TM, custom_options=raw)


BAD_L2TM = {
    "missing-output_width": ({k: v for k, v in V2.items() if k != "output_width"}, "output_width"),
    "missing-subset_idxs": ({k: v for k, v in V2.items() if k != "subset_idxs"}, "subset_idxs"),
    "string-scale_x": ({**V2, "scale_x": "big"}, "scale_x"),
    "number-subset_idxs": ({**V2, "subset_idxs": 3}, "subset_idxs"),
    "empty-subset_idxs": ({**V2, "subset_idxs": []}, "subset_idxs"),
    "negative-left_rotation_idx": ({**V2, "left_rotation_idx": -1}, "left_rotation_idx"),
    "index-past-input": ({**V2, "subset_idxs": [0, 9]}, "landmark index 9"),
    "zero-output_height": ({**V2, "output_height": 0}, "output_height"),
    "negative-scale_y": ({**V2, "scale_y": -1.0}, "scale_y"),
    "truncated": (flex(V2)[:40], "not a valid FlexBuffer map"),
    "empty": (b"", "FlexBuffer map"),
}


@pytest.mark.parametrize("case", sorted(BAD_L2TM))
def test_l2tm_bad_options(case):
    options, fragment = BAD_L2TM[case]
    _refused(_l2tm_model(options), L2TM, fragment)


@pytest.mark.parametrize(
    "key, value",
    [
        ("dimensions", 2),
        ("landmarks_range", 0),
        ("bbox_size_multiplier", 0.0),
        ("input_hw", [64]),
        ("output_hw", "16x24"),
        ("subset", None),
    ],
)
def test_l2tm_v1_bad_options(key, value):
    options = {k: v for k, v in V1.items() if k != key}
    if value is not None:
        options[key] = value
    _refused(_l2tm_model(options, version=1), L2TM, key)


@pytest.mark.parametrize(
    "version, options, fragment",
    [
        (2, {"output_height": 16}, "output_width"),
        (2, {"output_height": "16", "output_width": 16}, "output_height"),
        (2, {"output_height": 16, "output_width": 16, "extra": 1}, None),  # unknown keys are ignored
        (1, {"mode": "nearest", "output_size": [16, 16]}, "mode"),
        (1, {"mode": "bilinear"}, "output_size"),
        (1, {"output_size": 16}, "output_size"),
    ],
)
def test_bilinear_bad_options(version, options, fragment):
    model = ttb_model((1, 8, 8, 2), (16, 16), version, options)
    if fragment is None:
        Interpreter(model_content=model).allocate_tensors()
    else:
        _refused(model, TTB, fragment)


def test_bilinear_declared_output_must_match_options():
    model = single_op_model(
        "CUSTOM",
        [T((1, 8, 8, 2)), T((1, 4, 4))],
        [T((1, 4, 4, 2))],
        version=2,
        custom_code=TTB,
        custom_options=flex({"output_height": 16, "output_width": 16}),
    )
    _refused(model, TTB, "declares the output")


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"scale": 1.0}, "dimensions"),
        ({"dimensions": 3}, "scale"),
        ({"dimensions": 4, "scale": 1.0}, "dimensions"),
        ({"dimensions": 3, "scale": 0.0}, "scale"),
    ],
)
def test_landmarks_v1_bad_options(options, fragment):
    model = single_op_model(
        "CUSTOM",
        [T((1, 2, 2, 6)), T((1, 4, 4))],
        [T((1, 2, 2, 6))],
        version=1,
        custom_code=TL,
        custom_options=flex(options),
    )
    _refused(model, TL, fragment)


def test_non_float_and_bad_version_refused():
    model = single_op_model(
        "CUSTOM", [T((1, 3, 2), np.int32), T((1, 4, 4))], [T((1, 3, 2), np.int32)], version=2, custom_code=TL
    )
    _refused(model, TL, "only float32")
    model = single_op_model("CUSTOM", [T((1, 3, 2)), T((1, 4, 4))], [T((1, 3, 2))], version=3, custom_code=TL)
    _refused(model, TL, "version 3")


@pytest.mark.parametrize("target", [0.0, 500.0, float("inf")])
def test_l2tm_v2_any_target_rotation(target):
    xyz = np.array([[[10, 20, 0], [30, 20, 0], [20, 15, 0], [20, 27, 0]]], np.float32)
    m = run_l2tm(xyz, {**V2, "target_rotation_radians": target})
    if np.isfinite(target):
        np.testing.assert_allclose(m, l2tm_v2(xyz, {**V2, "target_rotation_radians": target}), rtol=1e-4, atol=1e-3)
    else:
        assert np.isnan(m[:2, :2]).all()


def test_l2tm_v2_nan_landmark_gives_nan_not_an_error():
    xyz = np.array([[[np.nan, 20, 0], [30, 20, 0], [20, 15, 0], [20, 27, 0]]], np.float32)
    assert np.isnan(run_l2tm(xyz, V2)[:2]).any()
