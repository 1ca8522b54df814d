"""Real MediaPipe models that use MediaPipe's custom ops (tests/corpus/MEDIAPIPE.md: from the mediapipe 0.10.21
wheel, Apache-2.0).

- selfie_segmentation and selfie_segmentation_landscape (Convolution2DTransposeBias, the last op before the final
  LOGISTIC): compared with LiteRT's default resolver (AUTO, where XNNPACK runs the whole model). Its logits equal
  AUTO's to 1e-5 of their largest magnitude (XNNPACK's float sums and activations drift from litert_py's by a
  few 1e-6 relative over the network, measured 3e-6); the logits reach +-600, so the probabilities after the
  LOGISTIC agree to 1e-3 (measured 2e-4 at a probability of 0.2, where the slope is 0.17).
- face_landmark_with_attention (Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks, all v2):
  no Python runtime runs it. On a drawn face, tilted or not, the refined iris points (computed in 16x16 crops
  that those ops cut around each eye and mapped back by them) must land on the irises drawn, with the drawn
  radius, and inside the refined eye contour: a wrong matrix, crop or back-mapping moves them off. Since the
  network finds the iris in any crop that holds it, every custom-op node is also checked on the tensors it saw
  against test_mediapipe_transform.py's independent formulation, and each eye crop must be upright along the
  eye line of the mesh.

Inputs are drawn deterministically (seeded noise), no image files.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.reader import read_model
from tests.compare import assert_close
from tests.oracle import oracle

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
SKIN, IRIS_RADIUS, EYE_DX, EYE_DY = (0.87, 0.68, 0.55), 6.5, 26, -14  # the drawn face, in face coordinates


def _grid(h: int, w: int):
    return np.mgrid[0:h, 0:w].astype(np.float32)


def draw_person(h: int, w: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A head and shoulders on a striped background; returns (image (1, h, w, 3) in [0, 1], person mask)."""
    yy, xx = _grid(h, w)
    img = np.zeros((h, w, 3), np.float32) + np.float32([0.3, 0.5, 0.35]) + 0.1 * np.sin(xx / 7)[..., None]
    s, cx = h / 256, w / 2
    head = ((xx - cx) / (45 * s)) ** 2 + ((yy - 95 * s) / (58 * s)) ** 2 < 1
    body = ((xx - cx) / (110 * s)) ** 2 + ((yy - 260 * s) / (90 * s)) ** 2 < 1
    img[body] = [0.15, 0.2, 0.6]
    img[head] = SKIN
    img[head & (yy < 70 * s)] = [0.2, 0.12, 0.08]  # hair
    for ex in (-17, 17):
        img[(xx - cx - ex * s) ** 2 + (yy - 92 * s) ** 2 < (5 * s) ** 2] = 0.1
    img += np.random.default_rng(seed).normal(0, 0.02, img.shape).astype(np.float32)
    return np.clip(img, 0, 1)[None], head | body


def face_point(u: float, v: float, angle: float) -> np.ndarray:
    """Face coordinates (u right, v down, from the face centre (96, 100)) -> image pixel."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([96 + c * u - s * v, 100 + s * u + c * v])


def draw_face(angle: float, seed: int = 0) -> np.ndarray:
    """A 192x192 cartoon face turned by ``angle`` radians: skin oval, eyes with dark irises and pupils,
    brows, nose, mouth."""
    yy, xx = _grid(192, 192)
    c, s = np.cos(angle), np.sin(angle)
    u, v = c * (xx - 96) + s * (yy - 100), -s * (xx - 96) + c * (yy - 100)
    img = np.zeros((192, 192, 3), np.float32) + np.float32([0.35, 0.45, 0.55])
    img[(u / 62) ** 2 + (v / 80) ** 2 < 1] = SKIN
    for ex in (-EYE_DX, EYE_DX):
        img[((u - ex) / 16) ** 2 + ((v - EYE_DY) / 8) ** 2 < 1] = 0.95
        img[(u - ex) ** 2 + (v - EYE_DY) ** 2 < IRIS_RADIUS**2] = [0.25, 0.15, 0.1]
        img[(u - ex) ** 2 + (v - EYE_DY) ** 2 < 2.5**2] = 0.02
        img[(np.abs(v + 32) < 3) & (np.abs(u - ex) < 18)] = [0.25, 0.15, 0.1]
    img[(np.abs(u) < 4 + (v + 5) * 0.15) & (v > -10) & (v < 18)] = np.float32(SKIN) * 0.85
    img[(u / 22) ** 2 + ((v - 40) / 5) ** 2 < 1] = [0.7, 0.25, 0.25]
    img += np.random.default_rng(seed).normal(0, 0.02, img.shape).astype(np.float32)
    return np.clip(img, 0, 1)[None]


def _run(interpreter, x: np.ndarray, extra: tuple[int, ...] = ()) -> dict:
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    out = {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}
    return out | {i: interpreter.get_tensor(i) for i in extra}


def _custom_op_outputs(path: pathlib.Path, name: str) -> tuple[int, ...]:
    model = read_model(path.read_bytes())
    sg = model.subgraphs[0]
    return tuple(op.outputs[0] for op in sg.operators if model.operator_codes[op.opcode_index].custom_code == name)


@pytest.mark.filterwarnings("ignore:Warning. Enabling .experimental_preserve_all_tensors.:UserWarning")
@pytest.mark.parametrize(
    "name, hw", [("selfie_segmentation", (256, 256)), ("selfie_segmentation_landscape", (144, 256))]
)
def test_selfie_segmentation_matches_litert_auto(name, hw):
    LiteRT, OpResolverType = oracle()
    path = CORPUS / f"mediapipe__{name}.tflite"
    (logits,) = _custom_op_outputs(path, "Convolution2DTransposeBias")
    x, person = draw_person(*hw)
    ours = _run(Interpreter(model_path=str(path), experimental_preserve_all_tensors=True), x, (logits,))
    theirs = _run(
        LiteRT(
            model_path=str(path),
            num_threads=1,
            experimental_op_resolver_type=OpResolverType.AUTO,
            experimental_preserve_all_tensors=True,
        ),
        x,
        (logits,),
    )
    assert list(ours) == list(theirs)
    assert_close([ours.pop(logits)], [theirs.pop(logits)], rtol=1e-5, atol=1e-6)
    assert_close(list(ours.values()), list(theirs.values()), rtol=1e-3, atol=1e-6)
    mask = next(iter(ours.values()))[0, ..., 0]
    assert mask[person].mean() > 0.25 and mask[~person].mean() < 0.05  # the person is segmented


# The refined eye contours (output_*_eye: the 71 mesh points of the Landmarks2TransformMatrix subset, refined in
# the eye crop): points 0..8 are the lower lid corner to corner, 9..15 the upper lid back.
EYE_RING = [*range(9), *range(15, 8, -1)]


def _inside(point: np.ndarray, polygon: np.ndarray) -> bool:
    """Even-odd rule."""
    x, y = point
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, np.roll(polygon, -1, axis=0)):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


@pytest.mark.parametrize("angle", [0.0, 0.4, -0.3])
def test_face_landmark_with_attention_finds_the_irises(angle):
    path = CORPUS / "mediapipe__face_landmark_with_attention.tflite"
    out = _run(Interpreter(model_path=str(path)), draw_face(angle))
    assert all(np.isfinite(v).all() for v in out.values())
    assert out["conv_faceflag"].item() > 5  # a face (logit)
    for side, u in (("left", -EYE_DX), ("right", EYE_DX)):
        iris = out[f"output_{side}_iris"].reshape(5, 2)
        centre, drawn = iris[0], face_point(u, EYE_DY, angle)
        assert np.linalg.norm(centre - drawn) < 2.5, (side, centre, drawn)
        radii = np.linalg.norm(iris[1:] - centre, axis=1)
        assert np.all((radii > 0.6 * IRIS_RADIUS) & (radii < 1.4 * IRIS_RADIUS)), (side, radii)
        assert _inside(centre, out[f"output_{side}_eye"].reshape(71, 2)[EYE_RING]), (side, centre)


@pytest.mark.parametrize("angle", [0.0, 0.4])
def test_face_landmark_with_attention_custom_ops_on_its_own_data(angle):
    """Every custom-op node of the model, on the tensors it saw, against test_mediapipe_transform.py's independent
    formulation; and each eye crop is upright along its eye line (the crop's x axis follows the mesh's eye
    corners), which the iris check above cannot see: a crop turned the wrong way still finds the iris."""
    from flatbuffers import flexbuffers

    from tests.ops.custom.test_mediapipe_transform import l2tm_v2, sample_bilinear, transform_points

    path = CORPUS / "mediapipe__face_landmark_with_attention.tflite"
    model = read_model(path.read_bytes())
    sg = model.subgraphs[0]
    it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    out = _run(it, draw_face(angle))
    mesh = out["output_mesh_identity"].reshape(468, 3)[:, :2]
    seen = {}
    for op in sg.operators:
        code = model.operator_codes[op.opcode_index]
        if not code.custom_code:
            continue
        assert code.version == 2
        ins, result = [it.get_tensor(i) for i in op.inputs], it.get_tensor(op.outputs[0])
        seen[code.custom_code] = seen.get(code.custom_code, 0) + 1
        if code.custom_code == "Landmarks2TransformMatrix":
            o = flexbuffers.Loads(op.custom_options)
            np.testing.assert_allclose(result[0], l2tm_v2(ins[0], o), rtol=1e-4, atol=1e-3)
            if o["left_rotation_idx"] != 61:  # the eyes (61/291 are the mouth corners)
                axis, line = result[0, :2, 0], mesh[o["right_rotation_idx"]] - mesh[o["left_rotation_idx"]]
                cos = axis @ line / np.linalg.norm(axis) / np.linalg.norm(line)
                assert cos > 0.9999, (o["left_rotation_idx"], axis, line)
        elif code.custom_code == "TransformTensorBilinear":
            expected = sample_bilinear(ins[0][0], ins[1], result.shape[1:3], align_corners=True)
            np.testing.assert_allclose(result[0], expected, rtol=0, atol=1e-5 * max(1.0, np.abs(ins[0]).max()))
        else:
            np.testing.assert_allclose(result, transform_points(ins[0], ins[1]), rtol=1e-5, atol=1e-4)
    assert seen == {"Landmarks2TransformMatrix": 3, "TransformTensorBilinear": 3, "TransformLandmarks": 5}
