"""MediaPipe's custom ops ``Landmarks2TransformMatrix``, ``TransformLandmarks`` and ``TransformTensorBilinear``,
options versions 1 and 2 (the operator code's version), float32 only as MediaPipe defines them; registered by
default. No Python runtime runs them (ai-edge-litert has no kernel, XNNPACK does not claim them).

Sources matched: google-ai-edge/mediapipe mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc,
transform_landmarks.cc, transform_tensor_bilinear.cc (the CPU kernels; cpu_op_resolver.cc registers version 2
of each) and their option parsers in LiteRT/TensorFlow tflite/delegates/gpu/common/mediapipe/*.cc
(``Parse*Attributes``). Options are FlexBuffer maps (read with ops/common.py's flex_* helpers, flexbuffers'
``AsInt32`` / ``AsFloat``). MediaPipe reads a missing key as 0 and only then rejects some values at eval;
litert_py refuses at prepare, with a PrepareError naming the op and the field, options that are malformed
(truncated), a missing key, a value of the wrong type (a string or vector for a number, a number for a
vector) and every value MediaPipe rejects at eval or that would make it read out of bounds (a landmark index
past the input).

Landmark arrays are read flat with a stride of 3 floats (x, y, z), as MediaPipe does, whatever the shape.
"Matrix" below is the 4x4 row-major float32 matrix ``M`` (16 values) the ops exchange; only its first two
rows are read by the transform ops, applied to ``(x, y, 0, 1)``.

``Landmarks2TransformMatrix(landmarks) -> M (1, 4, 4)``
  v2 (options ``subset_idxs``, ``left_rotation_idx``, ``right_rotation_idx``, ``target_rotation_radians``,
  ``output_height``, ``output_width``, ``scale_x``, ``scale_y``; input rank 3):
  ``r = target - atan2(yR - yL, xR - xL)`` from the two rotation landmarks; the subset landmarks (pairs of
  indices; an odd count repeats the last) are rotated by ``r``, their bounding box gives the crop size
  ``(w, h)`` and its centre, rotated back by ``-r``, the crop centre ``(cx, cy)``. Then
  ``M = T(cx, cy) @ R(-r) @ S(scale_x * w / output_width, scale_y * h / output_height)
  @ T(-output_width / 2, -output_height / 2)``: output-crop pixel -> input coordinates.
  v1 (options ``input_hw``, ``output_hw``, ``dimensions`` (must be 3), ``landmarks_range``,
  ``bbox_size_multiplier``, ``left_rotation_idx``, ``right_rotation_idx``, ``subset``; input (1, 1, 1, n)):
  ``alpha = -atan((yR - yL) / (xR - xL))``; the subset's bounding box after rotating by ``alpha`` (from a
  start of +-100000), scaled by ``bbox_size_multiplier``; ``itm = A @ R @ S @ Rel`` with ``S = diag(bw / range,
  bh / range, 1)``, ``R`` the rotation by ``-alpha`` translated to ``2 * rotated_middle / range - 1``,
  ``Rel`` pixel -> [-1, 1] over ``output_hw`` (``2 / (w - 1)``, ``-1``) and ``A`` [-1, 1] -> pixel over
  ``input_hw`` (``(w - 1) / 2``); ``M = [[i00, i01, 0, i02], [i10, i11, 0, i12], [i20, i21, i22, 0],
  [0, 0, 0, 1]]``.
  Arithmetic as MediaPipe's: float32 matrices multiplied with float sums from 0 in k order, cos / sin as
  glibc's ``cosf`` / ``sinf`` (glibc_math.sincosf), atan / atan2 correctly rounded to float32 (glibc's are
  within an ulp); v1's ``cos(alpha)`` and the expressions around it in double, as its C++ promotes them.

``TransformLandmarks(landmarks, M) -> landmarks'`` (output shape = input shape)
  Each landmark ``(x, y[, z])`` becomes ``(M00 x + M01 y + M03 s, M10 x + M11 y + M13 s[, z])``, in float32
  left to right (``M02 * 0`` included). v1: input (1, H, W, C), options ``dimensions`` (2 or 3, dividing C)
  and ``scale`` ``s`` (nonzero). v2: input (1, N, D), no options, ``dimensions = D`` (2 or 3), ``s = 1``.

``TransformTensorBilinear(input (1, H, W, C), M) -> output (1, OH, OW, C)``
  For each output pixel ``(x, y)`` the sampling point is ``(tx, ty) = (M00 x + M01 y + M03, M10 x + M11 y +
  M13)``; v2 first moves ``M03 += M00 / 2 + M01 / 2 - 1 / 2`` (same for row 1: pixel centres, in double as
  the C++). Outside ``[0, W - 1] x [0, H - 1]`` the output is 0 (a NaN point is inside: NaN out); inside it is
  the bilinear mix of the four neighbours ``floor(t)`` and ``floor(t) + 1`` (a neighbour past the edge reads
  0, with weight 0 at the edge): ``upper = (1 - fx) q11 + fx q21``, ``lower = (1 - fx) q12 + fx q22``,
  ``out = fy lower + (1 - fy) upper`` with MediaPipe's mix of float and double (``1.0 - f`` is double).
  Output size: v2 options ``output_height`` / ``output_width``; v1 ``output_size`` ``[h, w]`` (and ``mode``,
  when present, must be ``"bilinear"``). MediaPipe's CPU kernel takes the size from the model's output tensor;
  litert_py refuses a model whose declared output disagrees with the options.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..common import flex_float, flex_int32, flex_options
from ..glibc_math import sincosf
from ..registry import OpContext, PreparedOp, register

F32 = np.float32
F64 = np.float64
INPUT, MATRIX, OUTPUT = 0, 1, 0
_NUMBER = (bool, int, float)


# ----------------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------------


def _has(ctx: OpContext, m: dict, key: str):
    ctx.check(key in m, f"{ctx.op_name} v{ctx.version}: custom option {key!r} is missing")
    return m[key]


def _int(ctx: OpContext, m: dict, key: str) -> int:
    _has(ctx, m, key)
    return flex_int32(ctx, m, key)


def _float(ctx: OpContext, m: dict, key: str) -> F32:
    _has(ctx, m, key)
    return F32(flex_float(ctx, m, key))


def _int_vector(ctx: OpContext, m: dict, key: str) -> list[int]:
    v = _has(ctx, m, key)
    ctx.check(
        isinstance(v, list) and all(isinstance(e, _NUMBER) for e in v),
        f"{ctx.op_name} v{ctx.version}: custom option {key!r} must be a vector of integers, got {type(v).__name__}",
    )
    return [flex_int32(ctx, {key: e}, key) for e in v]


def _pairs(ctx: OpContext, m: dict, key: str) -> list[int]:
    """A subset vector read as index pairs (an odd last index pairs with itself), flattened; non-empty and
    non-negative (MediaPipe rejects negatives and reads before its vector when it is empty)."""
    v = _int_vector(ctx, m, key)
    ctx.check(len(v) > 0, f"{ctx.op_name} v{ctx.version}: custom option {key!r} is empty")
    ctx.check(min(v) >= 0, f"{ctx.op_name} v{ctx.version}: custom option {key!r} has a negative index")
    return v + v[-1:] if len(v) % 2 else v


def _check(ctx: OpContext, ok: bool, key: str, value, what: str) -> None:
    ctx.check(ok, f"{ctx.op_name} v{ctx.version}: custom option {key!r} must be {what}, got {value}")


def _version(ctx: OpContext) -> int:
    ctx.check(ctx.version in (1, 2), f"{ctx.op_name}: version {ctx.version} is not 1 or 2")
    return ctx.version


def _float_io(ctx: OpContext, n_inputs: int) -> None:
    ctx.check_num(n_inputs, 1)
    for t in [*ctx.inputs, *ctx.outputs]:
        ctx.check(t is not None, f"{ctx.op_name}: every input is required")
        ctx.check(
            t.dtype == F32,
            f"{ctx.op_name} supports only float32 tensors (as MediaPipe), got {t.type_name} for tensor {t.name!r}",
        )
    if n_inputs == 2:
        ctx.check(
            ctx.inputs[MATRIX].size == 16,
            f"{ctx.op_name}: the matrix input must hold a 4x4 matrix, got shape {list(ctx.inputs[MATRIX].shape)}",
        )


def _landmark_indices(ctx: OpContext, indices, n_values: int, needed: int) -> None:
    """Every landmark index reads ``needed`` floats from ``3 * index``: refuse one past the input."""
    top = max(indices)
    ctx.check(
        3 * top + needed <= n_values,
        f"{ctx.op_name} v{ctx.version}: landmark index {top} is past the input's {n_values // 3} landmarks",
    )


# ----------------------------------------------------------------------------------------------
# float32 arithmetic as MediaPipe's C++ does it
# ----------------------------------------------------------------------------------------------


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mat3 / Mat4 ``operator*``: ``float sum = 0; sum += a[r][k] * b[k][c]`` for k in order (every product
    at once, then the sums over k in order from +0)."""
    p = a[:, :, None] * b[None, :, :]  # (r, k, c) float32 products
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        acc += p[:, k]
    return acc


def _cos_sin(*r: F32) -> tuple[F32, ...]:
    """glibc's cosf / sinf of each r where glibc_math reproduces them (finite |r| < 120), correctly rounded
    elsewhere (a NaN landmark or a huge target rotation): (cos r0, sin r0, cos r1, sin r1, ...), one sincosf
    call for all."""
    s, c = sincosf(np.array(r, F32))
    out = []
    for k, rk in enumerate(r):
        v = float(rk)
        if not math.isfinite(v):
            out += [F32(np.nan), F32(np.nan)]
        elif abs(v) >= 120:
            out += [F32(math.cos(v)), F32(math.sin(v))]
        else:
            out += [F32(c[k]), F32(s[k])]
    return tuple(out)


def _atan2f(y: F32, x: F32) -> F32:
    return F32(math.atan2(float(y), float(x)))


def _bbox(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v2's running ``if (max < v) max = v`` from the first point: NaN after the first is skipped, a NaN first
    stays."""
    with np.errstate(invalid="ignore"):
        hi, lo = np.fmax.reduce(p, axis=0), np.fmin.reduce(p, axis=0)
    first_nan = np.isnan(p[0])
    return np.where(first_nan, p[0], hi), np.where(first_nan, p[0], lo)


# ----------------------------------------------------------------------------------------------
# Landmarks2TransformMatrix
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Landmarks2TransformMatrixV2:
    subset: np.ndarray  # flat landmark indices (pairs)
    left: int
    right: int
    target: F32
    out_w: int
    out_h: int
    scale_x: F32
    scale_y: F32

    def __call__(self, inputs, outputs):
        xyz = inputs[INPUT].reshape(-1)
        with np.errstate(all="ignore"):
            lx, ly = xyz[3 * self.left], xyz[3 * self.left + 1]
            rx, ry = xyz[3 * self.right], xyz[3 * self.right + 1]
            r = F32(self.target - _atan2f(F32(ry - ly), F32(rx - lx)))
            c, s, ci, si = _cos_sin(r, F32(-r))
            x, y = xyz[3 * self.subset], xyz[3 * self.subset + 1]
            rot = np.stack([c * x + (-s) * y, s * x + c * y], axis=1)  # + 0 * 1: no change
            hi, lo = _bbox(rot)
            crop_w, crop_h = F32(hi[0] - lo[0]), F32(hi[1] - lo[1])
            mx, my = F32(lo[0] + hi[0]) / F32(2), F32(lo[1] + hi[1]) / F32(2)
            cx, cy = F32(ci * mx + (-si) * my), F32(si * mx + ci * my)
            t = np.eye(4, dtype=F32)
            for m in (
                _translation(cx, cy),
                _rotation4(ci, si),
                np.diag(
                    [
                        F32(self.scale_x * crop_w) / F32(self.out_w),
                        F32(self.scale_y * crop_h) / F32(self.out_h),
                        F32(1),
                        F32(1),
                    ]
                ).astype(F32),
                _translation(F32(-(self.out_w / 2.0)), F32(-(self.out_h / 2.0))),
            ):
                t = _matmul(t, m)
        outputs[OUTPUT].reshape(-1)[:] = t.reshape(-1)


def _translation(x, y) -> np.ndarray:
    t = np.eye(4, dtype=F32)
    t[0, 3], t[1, 3] = x, y
    return t


def _rotation4(c: F32, s: F32) -> np.ndarray:
    t = np.eye(4, dtype=F32)
    t[:2, :2] = [[c, -s], [s, c]]
    return t


@dataclass(frozen=True, eq=False)
class Landmarks2TransformMatrixV1:
    subset: np.ndarray
    left: int
    right: int
    to_absolute: np.ndarray  # 3x3 float32
    to_relative: np.ndarray  # 3x3 float32
    landmarks_range: int
    multiplier: F32

    def __call__(self, inputs, outputs):
        xyz = inputs[INPUT].reshape(-1)
        with np.errstate(all="ignore"):
            lx, ly = xyz[3 * self.left], xyz[3 * self.left + 1]
            rx, ry = xyz[3 * self.right], xyz[3 * self.right + 1]
            alpha = F32(-F32(np.arctan(F64(F32(F32(ry - ly) / F32(rx - lx))))))
            ca, sa = math.cos(float(alpha)), math.sin(float(alpha))  # ::cos(double)
            x, y = xyz[3 * self.subset].astype(F64), xyz[3 * self.subset + 1].astype(F64)
            rx_, ry_ = (x * ca - y * sa).astype(F32), (x * sa + y * ca).astype(F32)
            hi = np.array([np.fmax.reduce(rx_, initial=F32(-100000)), np.fmax.reduce(ry_, initial=F32(-100000))], F32)
            lo = np.array([np.fmin.reduce(rx_, initial=F32(100000)), np.fmin.reduce(ry_, initial=F32(100000))], F32)
            bw, bh = F32(hi[0] - lo[0]) * self.multiplier, F32(hi[1] - lo[1]) * self.multiplier
            rng = self.landmarks_range
            scale = np.diag([F32(bw / F32(rng)), F32(bh / F32(rng)), F32(1)]).astype(F32)
            mid_x, mid_y = float(F32(hi[0] + lo[0]) / F32(2)), float(F32(hi[1] + lo[1]) / F32(2))
            cn, sn = math.cos(-float(alpha)), math.sin(-float(alpha))
            rot_mx, rot_my = F32(mid_x * cn - mid_y * sn), F32(mid_x * sn + mid_y * cn)
            # (float / int) is float, then * 2.0 - 1.0 in double
            shift_x, shift_y = float(rot_mx / F32(rng)) * 2.0 - 1.0, float(rot_my / F32(rng)) * 2.0 - 1.0
            rotation = np.array([[cn, -sn, shift_x], [sn, cn, shift_y], [0, 0, 1]]).astype(F32)
            itm = _matmul(_matmul(_matmul(self.to_absolute, rotation), scale), self.to_relative)
        out = outputs[OUTPUT].reshape(-1)
        out[:] = [
            itm[0, 0],
            itm[0, 1],
            0,
            itm[0, 2],
            itm[1, 0],
            itm[1, 1],
            0,
            itm[1, 2],
            itm[2, 0],
            itm[2, 1],
            itm[2, 2],
            0,
            0,
            0,
            0,
            1,
        ]


@register("Landmarks2TransformMatrix")
def prepare_landmarks2_transform_matrix(ctx: OpContext) -> PreparedOp:
    version = _version(ctx)
    m = flex_options(ctx)
    _float_io(ctx, 1)
    x = ctx.input(INPUT)
    left, right = _int(ctx, m, "left_rotation_idx"), _int(ctx, m, "right_rotation_idx")
    _check(ctx, left >= 0, "left_rotation_idx", left, "non-negative")
    _check(ctx, right >= 0, "right_rotation_idx", right, "non-negative")
    ctx.set_output_shape(OUTPUT, (1, 4, 4))
    if version == 2:
        ctx.check(len(x.shape) == 3, f"{ctx.op_name} v2: the landmarks must be 3-D, got {list(x.shape)}")
        subset = _pairs(ctx, m, "subset_idxs")
        target = _float(ctx, m, "target_rotation_radians")
        out_h, out_w = _int(ctx, m, "output_height"), _int(ctx, m, "output_width")
        _check(ctx, out_h > 0, "output_height", out_h, "positive")
        _check(ctx, out_w > 0, "output_width", out_w, "positive")
        sx, sy = _float(ctx, m, "scale_x"), _float(ctx, m, "scale_y")
        _check(ctx, sx > 0, "scale_x", sx, "positive")
        _check(ctx, sy > 0, "scale_y", sy, "positive")
        _landmark_indices(ctx, [left, right, *subset], x.size, 3)
        return Landmarks2TransformMatrixV2(np.array(subset, np.int64), left, right, target, out_w, out_h, sx, sy)
    ctx.check(
        len(x.shape) == 4 and tuple(x.shape[:3]) == (1, 1, 1),
        f"{ctx.op_name} v1: the landmarks must have shape (1, 1, 1, n), got {list(x.shape)}",
    )
    hw = {}
    for key in ("input_hw", "output_hw"):
        v = _int_vector(ctx, m, key)
        _check(ctx, len(v) >= 2 and v[0] > 0 and v[1] > 0, key, v, "[height, width], both positive")
        hw[key] = v
    dims = _int(ctx, m, "dimensions")
    _check(ctx, dims == 3, "dimensions", dims, "3")
    rng = _int(ctx, m, "landmarks_range")
    _check(ctx, rng > 0, "landmarks_range", rng, "positive")
    mult = _float(ctx, m, "bbox_size_multiplier")
    _check(ctx, mult != 0, "bbox_size_multiplier", mult, "nonzero")
    subset = _pairs(ctx, m, "subset")
    _landmark_indices(ctx, [left, right, *subset], x.size, 2)
    (ih, iw), (oh, ow) = hw["input_hw"][:2], hw["output_hw"][:2]
    to_relative = np.array([[2.0 / (ow - 1.0), 0, -1], [0, 2.0 / (oh - 1.0), -1], [0, 0, 1]]).astype(F32)
    to_absolute = np.array(
        [[(iw - 1.0) / 2.0, 0, (iw - 1.0) / 2.0], [0, (ih - 1.0) / 2.0, (ih - 1.0) / 2.0], [0, 0, 1]]
    ).astype(F32)
    return Landmarks2TransformMatrixV1(np.array(subset, np.int64), left, right, to_absolute, to_relative, rng, mult)


# ----------------------------------------------------------------------------------------------
# TransformLandmarks
# ----------------------------------------------------------------------------------------------


def _rows(m: np.ndarray, scale: F32) -> tuple:
    """The first two matrix rows as MediaPipe's float4s, the translation multiplied by ``scale``."""
    m = m.reshape(-1)
    return m[0], m[1], m[2], F32(m[3] * scale), m[4], m[5], m[6], F32(m[7] * scale)


@dataclass(frozen=True, eq=False)
class TransformLandmarks:
    dims: int  # 2 or 3
    scale: F32  # v1's ``scale``; 1 for v2

    def __call__(self, inputs, outputs):
        m00, m01, m02, m03, m10, m11, m12, m13 = _rows(inputs[MATRIX], self.scale)
        p = inputs[INPUT].reshape(-1, self.dims)
        out = outputs[OUTPUT].reshape(-1, self.dims)
        x, y = p[:, 0], p[:, 1]
        zero = F32(0)
        with np.errstate(all="ignore"):
            tx = ((m00 * x + m01 * y) + m02 * zero) + m03  # DotProduct(row, (x, y, 0, 1)) left to right
            ty = ((m10 * x + m11 * y) + m12 * zero) + m13
        out[:, 0], out[:, 1] = tx, ty
        if self.dims == 3:
            out[:, 2] = p[:, 2]


@register("TransformLandmarks")
def prepare_transform_landmarks(ctx: OpContext) -> PreparedOp:
    version = _version(ctx)
    if version == 1:
        m = flex_options(ctx)
    _float_io(ctx, 2)
    x = ctx.input(INPUT)
    ctx.set_output_shape(OUTPUT, x.shape)
    if version == 2:  # no options: dimensions = the last dim, scale 1
        ctx.check(
            len(x.shape) == 3 and x.shape[0] == 1,
            f"{ctx.op_name} v2: the landmarks must have shape (1, n, 2 or 3), got {list(x.shape)}",
        )
        dims = x.shape[2]
        ctx.check(dims in (2, 3), f"{ctx.op_name} v2: landmarks of {dims} dimensions (MediaPipe: 2 or 3)")
        return TransformLandmarks(dims, F32(1))
    ctx.check(
        len(x.shape) == 4 and x.shape[0] == 1,
        f"{ctx.op_name} v1: the landmarks must have shape (1, H, W, C), got {list(x.shape)}",
    )
    dims = _int(ctx, m, "dimensions")
    _check(ctx, dims in (2, 3), "dimensions", dims, "2 or 3")
    _check(ctx, x.shape[3] % dims == 0, "dimensions", dims, f"a divisor of the channel count {x.shape[3]}")
    scale = _float(ctx, m, "scale")
    _check(ctx, scale != 0, "scale", scale, "nonzero")
    return TransformLandmarks(dims, scale)


# ----------------------------------------------------------------------------------------------
# TransformTensorBilinear
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TransformTensorBilinear:
    align_corners: bool  # v2: the pixel-centre correction of the translation
    xs: np.ndarray  # (1, OW) float32 output columns
    ys: np.ndarray  # (OH, 1) float32 output rows
    padded: np.ndarray  # (H + 2, W + 2, C) scratch: the input with a border of zeros
    height: int
    width: int

    def __call__(self, inputs, outputs):
        m = inputs[MATRIX].reshape(-1)
        x_row, y_row = m[0:4].copy(), m[4:8].copy()
        with np.errstate(all="ignore"):
            if self.align_corners:  # float += double, the double part summed first
                for row in (x_row, y_row):
                    row[3] = F32(float(row[3]) + ((float(row[0]) * 0.5 + float(row[1]) * 0.5) - 0.5))
            zero = F32(0)
            tx = ((x_row[0] * self.xs + x_row[1] * self.ys) + x_row[2] * zero) + x_row[3]
            ty = ((y_row[0] * self.xs + y_row[1] * self.ys) + y_row[2] * zero) + y_row[3]
            h, w = self.height, self.width
            outside = (tx < 0) | (tx > w - 1) | (ty < 0) | (ty > h - 1)
            fx, fy = np.floor(tx), np.floor(ty)
            # a NaN point reads zeros (C's int(NaN) is INT_MIN, below the input), clamps keep indices inside
            ix0 = np.clip(np.where(np.isnan(fx), -1, fx), -1, w).astype(np.intp) + 1
            iy0 = np.clip(np.where(np.isnan(fy), -1, fy), -1, h).astype(np.intp) + 1
            ix1, iy1 = np.minimum(ix0 + 1, w + 1), np.minimum(iy0 + 1, h + 1)
            np.copyto(self.padded[1 : h + 1, 1 : w + 1], inputs[INPUT][0])
            p = self.padded
            q11, q21, q12, q22 = p[iy0, ix0], p[iy0, ix1], p[iy1, ix0], p[iy1, ix1]
            rc, lc = (tx - fx)[..., None], (ty - fy)[..., None]  # float32, exact
            one_rc, one_lc = 1.0 - rc.astype(F64), 1.0 - lc.astype(F64)  # 1.0 - float: double
            upper = (one_rc * q11 + (rc * q21)).astype(F32)
            lower = (one_rc * q12 + (rc * q22)).astype(F32)
            result = ((lc * lower).astype(F64) + one_lc * upper).astype(F32)
        result[outside] = 0
        outputs[OUTPUT][0] = result


@register("TransformTensorBilinear")
def prepare_transform_tensor_bilinear(ctx: OpContext) -> PreparedOp:
    version = _version(ctx)
    m = flex_options(ctx)
    _float_io(ctx, 2)
    x = ctx.input(INPUT)
    ctx.check(
        len(x.shape) == 4 and x.shape[0] == 1,
        f"{ctx.op_name}: the input must have shape (1, H, W, C), got {list(x.shape)}",
    )
    if version == 2:
        oh, ow = _int(ctx, m, "output_height"), _int(ctx, m, "output_width")
        _check(ctx, oh > 0, "output_height", oh, "positive")
        _check(ctx, ow > 0, "output_width", ow, "positive")
    else:
        if "mode" in m:
            _check(ctx, m["mode"] == "bilinear", "mode", repr(m["mode"]), "'bilinear'")
        size = _int_vector(ctx, m, "output_size")
        _check(
            ctx, len(size) >= 2 and size[0] > 0 and size[1] > 0, "output_size", size, "[height, width], both positive"
        )
        oh, ow = size[0], size[1]
    _, h, w, c = x.shape
    shape = (1, oh, ow, c)
    declared = ctx.outputs[OUTPUT].shape
    ctx.check(
        not declared or tuple(declared) == shape,
        f"{ctx.op_name}: the model declares the output {list(declared)}, the options give {list(shape)}",
    )
    ctx.set_output_shape(OUTPUT, shape)
    xs = np.arange(ow, dtype=F32).reshape(1, ow)
    ys = np.arange(oh, dtype=F32).reshape(oh, 1)
    return TransformTensorBilinear(version == 2, xs, ys, ctx.scratch((h + 2, w + 2, c), F32), h, w)
