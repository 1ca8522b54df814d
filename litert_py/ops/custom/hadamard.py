"""The custom op ``aeq.hadamard_rotation`` (registered by default in ai-edge-litert 2.3.0).

Matched against google-ai-edge/LiteRT tflite/kernels/hadamard_rotation.cc (Register_HADAMARD_ROTATION,
added to the default resolver by tflite/core/kernels/register.cc ``AddCustom("aeq.hadamard_rotation")``).

Options (a FlexBuffer map in the operator's custom_options): ``hadamard_size`` (read with ``AsInt32``) and
``random_binary_vector`` (read with ``AsInt8`` per entry, then never used by the kernel: no sign flips).

Semantics, one path: the input (float32, or int32 whose bits LiteRT reinterprets as float32) is copied
byte for byte into the output (a 4-byte tensor; LiteRT's prepare neither checks its type nor resizes it, so
the model's shape stays), then ``total = batch * features * (feature_size / hadamard_size)`` contiguous
blocks of ``hadamard_size`` values, starting at the front of the flat buffer, are transformed in place,
where ``(features, feature_size) = dims[0:2]`` and ``batch = 1``, or ``(batch, features, feature_size) =
dims[0:3]`` for rank 3 (dims past the first two of a rank-4+ input are ignored, as in LiteRT; blocks may
straddle rows when ``hadamard_size`` does not divide ``feature_size``). Each block gets the unnormalised fast
Walsh-Hadamard transform, butterfly stages ``h = 1, 2, 4, ...`` each computing ``(x + y, x - y)`` in float32
(FWHTFast's 64-wide unrolled variant runs the same stages in the same order, so it gives the same bits), then
every value is multiplied by ``norm = f32(1.0 / sqrt(f64(hadamard_size)))`` (``1.0f / std::sqrt(int)`` is
evaluated in double, then stored as float). A ``hadamard_size`` that is not a power of two (negative ones
included) leaves the copy untouched, as does one larger than ``feature_size``.

Refused at prepare (LiteRT crashes or reads/writes memory it does not own): empty or malformed custom
options, ``hadamard_size == 0`` (integer division by zero at eval), an input of rank < 2 (LiteRT reads
``dims->data[1]`` past the end), and an output that is not a 4-byte numeric tensor with as many elements as
the input (LiteRT's ``memcpy`` would overrun it or leave its tail uninitialised).

Options are read with ops/common.py's ``flex_options`` / ``flex_int32`` (schema/flexbuffers.py).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from ..common import flex_int32, flex_options
from ..registry import OpContext, PreparedOp, register

F32 = np.float32
INPUT, OUTPUT = 0, 0
logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# aeq.hadamard_rotation
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HadamardRotationCopy:
    """No block is transformed (hadamard_size not a power of two, or larger than the feature size): the
    output is the input's bytes."""

    def __call__(self, inputs, outputs):
        np.copyto(outputs[OUTPUT].reshape(-1).view(F32), inputs[INPUT].reshape(-1).view(F32))


#: Below this many transformed values every stage runs in the natural layout (fewest numpy calls).
_SMALL = 2048
_LOW = 16


def _butterflies(a: np.ndarray, b: np.ndarray, hs: list[int], run: int) -> tuple[list[tuple], np.ndarray]:
    """Views for the stages ``hs`` over the flat buffers ``a`` -> ``b`` -> ``a`` ..., in a layout where the
    paired elements of stage h are ``h * run`` apart: each stage is ``(x, y) -> (x + y, x - y)`` from one buffer
    into the other at the same positions. Returns the views and the buffer holding the result."""
    stages = []
    for h in hs:
        src, dst = a.reshape(-1, 2, h * run), b.reshape(-1, 2, h * run)
        stages.append((src[:, 0], src[:, 1], dst[:, 0], dst[:, 1]))
        a, b = b, a
    return stages, a


@dataclass(frozen=True, eq=False)
class HadamardRotation:
    """Copy the input's bytes, then transform ``transforms`` contiguous blocks of ``size`` float32 values:
    butterfly stages h = 1, 2, 4, ... ``(x, y) -> (x + y, x - y)``, then ``* norm``.

    Every stage computes exactly LiteRT's values (same pairs, same operand order); only where they are stored
    differs, so that each numpy call runs over long contiguous rows. The blocks, seen as (transforms, high,
    low) with ``low * high = size``, are loaded transposed to (low, transforms, high): the stages h < low then
    pair rows ``h * transforms * high`` apart. They are shuffled back to the natural layout for the stages
    h >= low (pairs h apart), and the result is scaled into the output. The two ping-pong buffers are scratch
    owned by the op, so every stage view is built once, at prepare."""

    size: int  # hadamard_size, a power of two
    transforms: int  # number of blocks, > 0
    low: int  # the stages h < low run in the transposed layout (1: none, every stage in the natural layout)
    norm: np.float32  # f32(1 / sqrt(f64(size)))
    load: np.ndarray  # (low, transforms, high) view of scratch: receives the transposed blocks
    first: tuple  # stages h < low: (x, y, destination of x + y, destination of x - y) views
    shuffle: tuple | None  # (source view, destination): transposed layout -> natural, before ``second``
    second: tuple  # stages h >= low, natural layout
    result: np.ndarray  # (transforms, size) view (maybe transposed) of the scratch holding the result

    def __call__(self, inputs, outputs):
        src = inputs[INPUT].reshape(-1).view(F32)
        out = outputs[OUTPUT].reshape(-1).view(F32)
        n = self.transforms * self.size
        if n < src.size:
            np.copyto(out[n:], src[n:])
        np.copyto(self.load, src[:n].reshape(self.transforms, -1, self.low).transpose(2, 0, 1))
        add, subtract = np.add, np.subtract
        for x, y, s, d in self.first:
            add(x, y, out=s)
            subtract(x, y, out=d)  # both from the stage's inputs, as the C++ reads x and y before writing
        if self.shuffle is not None:
            np.copyto(self.shuffle[1], self.shuffle[0])
        for x, y, s, d in self.second:
            add(x, y, out=s)
            subtract(x, y, out=d)
        np.multiply(self.result, self.norm, out=out[:n].reshape(self.transforms, self.size))

    @classmethod
    def build(cls, ctx: OpContext, size: int, transforms: int) -> HadamardRotation:
        n = transforms * size
        log_size = size.bit_length() - 1
        # The stages h < 16 would run over rows of 1..8 values in the natural layout (slow in numpy): they run
        # transposed, over rows of n / 16 values. Measured flat for low = 16..64 (n = 2**18, any size).
        low = 1 if n < _SMALL else min(size, _LOW)
        high = size // low
        a, b = ctx.scratch((n,), F32), ctx.scratch((n,), F32)
        hs = [1 << t for t in range(log_size)]
        first, cur = _butterflies(a, b, [h for h in hs if h < low], transforms * high)
        other = b if cur is a else a
        shuffle = None
        if low > 1 and high > 1:  # (low, transforms, high) -> natural (transforms, high, low)
            shuffle = (cur.reshape(low, transforms, high).transpose(1, 2, 0), other.reshape(transforms, high, low))
            cur, other = other, cur
        second, cur = _butterflies(cur, other, [h for h in hs if h >= low], 1)
        # high == 1 with low > 1: every stage ran transposed, (size, transforms); scale straight from there.
        result = cur.reshape(size, transforms).T if low > 1 and high == 1 else cur.reshape(transforms, size)
        norm = F32(1.0 / math.sqrt(float(size)))
        return cls(
            size, transforms, low, norm, a.reshape(low, transforms, high), tuple(first), shuffle, tuple(second), result
        )


@register("aeq.hadamard_rotation")
def prepare_hadamard_rotation(ctx: OpContext) -> PreparedOp:
    m = flex_options(ctx)
    size = flex_int32(ctx, m, "hadamard_size")
    # random_binary_vector is parsed by LiteRT (AsVector of anything else is empty) and never used.
    ctx.check(len(ctx.inputs) == 1, f"NumInputs(node) != 1 ({len(ctx.inputs)} != 1)")
    ctx.check(len(ctx.outputs) == 1, f"NumOutputs(node) != 1 ({len(ctx.outputs)} != 1)")
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(
        x.dtype in (np.float32, np.int32),
        "input_tensor->type == kTfLiteFloat32 || input_tensor->type == kTfLiteInt32 was not true.",
    )
    ctx.check(size != 0, "aeq.hadamard_rotation: hadamard_size is 0 or missing (LiteRT divides by it at eval)")
    ctx.check(
        len(x.shape) >= 2,
        f"aeq.hadamard_rotation: the input must have rank 2 or more (LiteRT reads dims[0] and dims[1]), "
        f"got shape {list(x.shape)}",
    )
    ctx.check(
        y.dtype in (np.float32, np.int32, np.uint32),
        f"aeq.hadamard_rotation: the output must be a 4-byte tensor (float32 or int32) that receives the "
        f"input's bytes, got {y.type_name}",
    )
    ctx.check(
        y.size == x.size,
        f"aeq.hadamard_rotation: the output shape {list(y.shape)} must hold the input's {x.size} values "
        f"(LiteRT does not resize its output and copies the input's bytes into it)",
    )
    if len(x.shape) == 3:
        rows, feature_size = x.shape[0] * x.shape[1], x.shape[2]
    else:
        rows, feature_size = x.shape[0], x.shape[1]
    # C++ int division truncates toward zero: a negative size gives no (or a negative number of) transforms.
    per_row = abs(feature_size) // abs(size) * (1 if size > 0 else -1)
    transforms = rows * per_row
    if transforms <= 0:
        return HadamardRotationCopy()
    if size & (size - 1):
        logger.warning("hadamard_size needs to be a power of 2")  # LiteRT's std::cerr line, once per node here
        return HadamardRotationCopy()
    return HadamardRotation.build(ctx, size, transforms)
