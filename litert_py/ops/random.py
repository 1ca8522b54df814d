"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL (float32 output / int32|int64 samples).

Sources matched (ai-edge-litert 2.3.0): tflite/kernels/random_ops.cc and tsl/lib/random/philox_random.h,
random_distributions_utils.h. The generator is Philox4x32-10 keyed by the op's RandomOptions: key =
seed (low, high words), counter = [0, 0, seed2 low, seed2 high]. It is (re)seeded at prepare
(allocate_tensors) and its state advances across invokes; seed == seed2 == 0 draws random seeds
(non-deterministic, as in LiteRT). The int64 options act as their low 32 bits sign-extended (measured
in ai-edge-litert 2.3.0: seeds 2**31 and -2**31 give the same numbers). Each generator call yields 4
uint32 and steps the 128-bit counter by 1.

- RANDOM_UNIFORM: ceil(n / 4) calls; float = bits(0x3f800000 | x & 0x7fffff) - 1.
- RANDOM_STANDARD_NORMAL: ceil(n / 4) calls; BoxMullerFloat on pairs (u1 clamped to 1e-7f,
  v1 = float(2*pi*u) in double, u2 = sqrtf(-2 * logf(u1)), sincosf(v1) * u2, all float32). logf and sincosf
  are glibc's (not correctly rounded), emulated bit for bit by glibc_math: we match the glibc-based LiteRT
  of the Linux wheels (checked exhaustively over every u1 and v1 the generator can produce, and on 12M
  outputs of ai-edge-litert 2.3.0); LiteRT built on other platforms calls another libm (sinf/cosf on
  non-Linux) and may differ in the last bits.
- MULTINOMIAL: the draws come from a copy of the generator, whose own counter is then skipped by
  batch * round_up(num_samples, 4) * 2 * 256; per sample two uint32 make a double in [0, 1), scaled by
  the row's total of exp(logit - max finite logit) (double, non-finite logits count 0), and the class is
  upper_bound in the double cumulative sums.

The generator itself is ops/philox.py (shared with STABLEHLO_RNG_BIT_GENERATOR).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import limits
from ..schema.model import BuiltinOperator
from .glibc_math import logf, sincosf
from .philox import Philox
from .registry import OpContext, PreparedOp, register

_S32 = np.uint64(32)
_M128 = (1 << 128) - 1
_BOX_MULLER_CHUNK = 16384  # uint32 words (8192 pairs) per vectorized Box-Muller step


def uint32_to_float(x: np.ndarray) -> np.ndarray:
    return ((x & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)


def uniform(gen: Philox, n: int) -> np.ndarray:
    return uint32_to_float(gen.words(n))


def standard_normal(gen: Philox, n: int) -> np.ndarray:
    w = gen.words(n + (n & 1))
    res = np.empty(w.size, np.float32)
    for i in range(0, w.size, _BOX_MULLER_CHUNK):  # chunks: the float64 temporaries stay in cache
        box_muller(w[i : i + _BOX_MULLER_CHUNK], res[i : i + _BOX_MULLER_CHUNK])
    return res[:n]


def box_muller(w: np.ndarray, out: np.ndarray) -> None:
    """BoxMullerFloat on the pairs of uint32 w (even size) into float32 out (same size)."""
    f = uint32_to_float(w)
    u1 = np.maximum(f[0::2], np.float32(1e-7))
    v1 = (2.0 * np.pi * f[1::2].astype(np.float64)).astype(np.float32)
    # check=False: the plain double evaluation equals glibc's fused one on every u1 and v1 Box-Muller can
    # produce (all 2^23 of each, tools/check_glibc_math.py), so no lane needs the FMA emulation
    u2 = np.sqrt(np.float32(-2.0) * logf(u1, check=False))  # float32 throughout, as in BoxMullerFloat
    sin, cos = sincosf(v1, check=False)
    pairs = out.reshape(-1, 2)
    np.multiply(sin, u2, out=pairs[:, 0])
    np.multiply(cos, u2, out=pairs[:, 1])


_F32_LOWEST = float(np.finfo(np.float32).min)
#: Up to this many (sample, class) comparisons the upper_bound of all rows is one broadcast comparison
_COMPARE_ALL = 1 << 16


def multinomial(gen: Philox, logits: np.ndarray, num_samples: int) -> np.ndarray:
    batch, classes = logits.shape
    counter = gen.counter
    gen.counter = (counter + batch * (-(-num_samples // 4) * 4) * 2 * 256) & _M128
    count = batch * num_samples * 2
    w = gen.blocks(counter, -(-count // 4)).reshape(-1)[:count].astype(np.uint64)
    bits = ((w[0::2] & np.uint64(0xFFFFF)) << _S32) | w[1::2] | np.uint64(1023 << 52)
    u = (bits.view(np.float64) - 1.0).reshape(batch, num_samples)
    x = logits.astype(np.float64)
    finite = np.isfinite(x)
    mx = np.max(x, axis=1, where=finite, initial=_F32_LOWEST, keepdims=True)  # max finite logit
    x -= mx
    e = np.exp(x, out=np.zeros_like(x), where=finite)  # non-finite logits: probability 0
    cdf = np.cumsum(e, axis=1, out=e)
    target = u * cdf[:, -1:]
    if batch * num_samples * classes <= _COMPARE_ALL:  # upper_bound = how many cdf entries are <= target
        return np.count_nonzero(cdf[:, None, :] <= target[:, :, None], axis=2)
    res = np.empty((batch, num_samples), np.int64)
    for b in range(batch):
        res[b] = np.searchsorted(cdf[b], target[b], side="right")
    return res


@dataclass(frozen=True, eq=False)
class RandomFloat:
    gen: Philox
    sample: object  # uniform | standard_normal
    dynamic: bool

    def __call__(self, inputs, outputs):
        if self.dynamic:
            shape = tuple(inputs[0].reshape(-1).tolist())
            limits.check_allocation(limits.nbytes(shape, np.float64), f"a random output of shape {list(shape)}")
            outputs[0] = self.sample(self.gen, math.prod(shape)).reshape(shape)
        else:
            out = outputs[0]
            out.reshape(-1)[...] = self.sample(self.gen, out.size)


@dataclass(frozen=True, eq=False)
class Multinomial:
    gen: Philox
    out_dtype: np.dtype
    dynamic: bool
    n_static: int = field(default=0)

    def __call__(self, inputs, outputs):
        logits = inputs[0]
        n = int(inputs[1].reshape(-1)[0]) if self.dynamic else self.n_static
        limits.check_allocation(limits.nbytes((logits.shape[0], n), np.float64), f"MULTINOMIAL's {n} samples")
        res = multinomial(self.gen, logits, n)
        if self.dynamic:
            outputs[0] = res.astype(self.out_dtype)
        else:
            outputs[0][...] = res


def _prepare_random(ctx: OpContext, sample):
    ctx.check_num(1)
    shape = ctx.input(0)
    ctx.check_types((np.int32,), 0)
    ctx.check(len(shape.shape) == 1, f"shape must be 1-D, got shape {list(shape.shape)}")
    out = ctx.outputs[0]
    ctx.check(out.dtype == np.float32, f"Unsupported output datatype for {ctx.op_name}: {out.type_name}")
    gen = Philox(int(ctx.options.seed), int(ctx.options.seed2))
    if shape.is_constant:
        ctx.set_output_shape(0, tuple(int(v) for v in shape.data.reshape(-1)))
        return RandomFloat(gen, sample, False)
    ctx.set_output_dynamic(0)
    return RandomFloat(gen, sample, True)


@register(BuiltinOperator.RANDOM_UNIFORM, stateful=True)
def prepare_random_uniform(ctx: OpContext) -> PreparedOp:
    return _prepare_random(ctx, uniform)


@register(BuiltinOperator.RANDOM_STANDARD_NORMAL, stateful=True)
def prepare_random_standard_normal(ctx: OpContext) -> PreparedOp:
    return _prepare_random(ctx, standard_normal)


@register(BuiltinOperator.MULTINOMIAL, stateful=True)
def prepare_multinomial(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    logits, ns = ctx.input(0), ctx.input(1)
    ctx.check_types((np.float32,), 0)
    ctx.check_types((np.int32,), 1)
    ctx.check(len(logits.shape) == 2, f"logits must be 2-D, got shape {list(logits.shape)}")
    ctx.check(logits.shape[1] > 0, "num_classes > 0 was not true.")
    ctx.check(len(ns.shape) == 0, f"num_samples must be a scalar, got shape {list(ns.shape)}")
    out = ctx.outputs[0]
    ctx.check(out.dtype in (np.int32, np.int64), f"Unsupported output datatype for Multinomial op: {out.type_name}")
    gen = Philox(int(ctx.options.seed), int(ctx.options.seed2))
    if ns.is_constant:
        n = int(ns.data.reshape(-1)[0])
        ctx.check(n >= 0, "num_samples >= 0 was not true.")
        ctx.set_output_shape(0, (logits.shape[0], n))
        return Multinomial(gen, out.dtype, False, n)
    ctx.set_output_dynamic(0)
    return Multinomial(gen, out.dtype, True)
