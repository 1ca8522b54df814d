"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL (float32 output / int32|int64 samples).

Sources matched (ai-edge-litert 2.3.0): tflite/kernels/random_ops.cc and tsl/lib/random/philox_random.h,
random_distributions_utils.h. The generator is Philox4x32-10 keyed by the op's RandomOptions: key =
seed (low, high words), counter = [0, 0, seed2 low, seed2 high]. It is (re)seeded at prepare
(allocate_tensors) and its state advances across invokes; seed == seed2 == 0 draws random seeds
(non-deterministic, as in LiteRT). The int64 options act as their low 32 bits sign-extended (measured
in ai-edge-litert 2.3.0: seeds 2**31 and -2**31 give the same numbers). Each generator call yields 4
uint32 and steps the 128-bit counter by 1.

- RANDOM_UNIFORM: ceil(n / 4) calls; float = bits(0x3f800000 | x & 0x7fffff) - 1.
- RANDOM_STANDARD_NORMAL: ceil(n / 4) calls; Box-Muller on pairs (u1 clamped to 1e-7f, v1 = float(2*pi*u),
  u2 = sqrt(-2 log u1), out = sinf(v1) * u2, cosf(v1) * u2 in float32). LiteRT's libm is not correctly
  rounded: about 1.4% of the outputs differ by 1-2 ulps (measured over 40000 draws), so not bit-exact.
- MULTINOMIAL: the draws come from a copy of the generator, whose own counter is then skipped by
  batch * round_up(num_samples, 4) * 2 * 256; per sample two uint32 make a double in [0, 1), scaled by
  the row's total of exp(logit - max finite logit) (double, non-finite logits count 0), and the class is
  upper_bound in the double cumulative sums.

Vectorized: all Philox blocks of one invoke are computed at once in uint64-held uint32 arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..schema.model import BuiltinOperator
from .registry import OpContext, register

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def key_schedule(key: tuple[int, int]) -> tuple:
    """The 10 round keys (raised by the Weyl constants), as uint64 scalars."""
    k0, k1 = key
    return tuple((np.uint64((k0 + r * _W0) & 0xFFFFFFFF), np.uint64((k1 + r * _W1) & 0xFFFFFFFF))
                 for r in range(10))


def philox_blocks(key: tuple, counter: int, n: int) -> np.ndarray:
    """Philox4x32-10 outputs for the 128-bit counters counter, counter+1, ..., counter+n-1: uint32 (n, 4)."""
    base_lo = np.uint64(counter & 0xFFFFFFFFFFFFFFFF)
    lo = base_lo + np.arange(n, dtype=np.uint64)
    hi = np.full(n, (counter >> 64) & 0xFFFFFFFFFFFFFFFF, np.uint64)
    hi += (lo < base_lo).astype(np.uint64)  # carry into the high 64 bits (wraps like the C++ counter)
    c0, c1 = lo & _MASK, lo >> _S32
    c2, c3 = hi & _MASK, hi >> _S32
    for kk0, kk1 in key:  # key_schedule(...)
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ kk0, p1 & _MASK, (p0 >> _S32) ^ c3 ^ kk1, p0 & _MASK
    return np.stack([c0, c1, c2, c3], axis=1).astype(np.uint32)


class Philox:
    """The mutable generator of one node: key and 128-bit counter (as in tsl::random::PhiloxRandom)."""

    __slots__ = ("key", "counter")

    def __init__(self, seed: int, seed2: int):
        # ai-edge-litert 2.3.0 keeps only the low 32 bits of each int64 option, sign-extended (measured)
        seed, seed2 = (((v + 2**31) & 0xFFFFFFFF) - 2**31 for v in (seed, seed2))
        if seed == 0 and seed2 == 0:  # both unspecified: non-deterministic seeds, like LiteRT
            seed, seed2 = (int(v) for v in np.random.default_rng().integers(0, 2**64, 2, dtype=np.uint64))
        s = seed & 0xFFFFFFFFFFFFFFFF
        self.key = key_schedule((s & 0xFFFFFFFF, s >> 32))
        self.counter = (seed2 & 0xFFFFFFFFFFFFFFFF) << 64

    def words(self, count: int, advance: bool = True) -> np.ndarray:
        """The next ``count`` uint32 (whole generator calls of 4 are consumed)."""
        nb = -(-count // 4)
        out = philox_blocks(self.key, self.counter, nb).reshape(-1)[:count]
        if advance:
            self.counter = (self.counter + nb) & ((1 << 128) - 1)
        return out


def uint32_to_float(x: np.ndarray) -> np.ndarray:
    return ((x & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)


def uniform(gen: Philox, n: int) -> np.ndarray:
    return uint32_to_float(gen.words(n))


def standard_normal(gen: Philox, n: int) -> np.ndarray:
    w = gen.words(n + (n & 1))
    u1 = np.maximum(uint32_to_float(w[0::2]), np.float32(1e-7))
    v1 = (2.0 * np.pi * uint32_to_float(w[1::2]).astype(np.float64)).astype(np.float32)
    # logf / sinf / cosf taken correctly rounded (double, then rounded): closest to LiteRT's libm (see tests)
    u2 = np.sqrt(np.float32(-2.0) * np.log(u1.astype(np.float64)).astype(np.float32))
    v = v1.astype(np.float64)
    res = np.empty((w.size // 2, 2), np.float32)
    np.multiply(np.sin(v).astype(np.float32), u2, out=res[:, 0])
    np.multiply(np.cos(v).astype(np.float32), u2, out=res[:, 1])
    return res.reshape(-1)[:n]


def multinomial(gen: Philox, logits: np.ndarray, num_samples: int) -> np.ndarray:
    batch, classes = logits.shape
    counter = gen.counter
    gen.counter = (counter + batch * (-(-num_samples // 4) * 4) * 2 * 256) & ((1 << 128) - 1)
    nb = -(-(batch * num_samples * 2) // 4)
    w = philox_blocks(gen.key, counter, nb).reshape(-1)[: batch * num_samples * 2].astype(np.uint64)
    bits = ((w[0::2] & np.uint64(0xFFFFF)) << _S32) | w[1::2] | np.uint64(1023 << 52)
    u = (bits.view(np.float64) - 1.0).reshape(batch, num_samples)
    finite = np.isfinite(logits)
    mx = np.max(np.where(finite, logits, np.finfo(np.float32).min), axis=1, initial=np.finfo(np.float32).min)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.where(finite, np.exp(logits.astype(np.float64) - mx.astype(np.float64)[:, None]), 0.0)
    cdf = np.cumsum(e, axis=1)
    res = np.empty((batch, num_samples), np.int64)
    for b in range(batch):
        res[b] = np.searchsorted(cdf[b], u[b] * cdf[b, -1], side="right")
    return res


@dataclass(frozen=True, eq=False)
class RandomFloat:
    gen: Philox
    sample: object  # uniform | standard_normal
    dynamic: bool

    def __call__(self, inputs, outputs):
        if self.dynamic:
            shape = tuple(int(v) for v in inputs[0].reshape(-1))
            outputs[0] = self.sample(self.gen, int(np.prod(shape, dtype=np.int64))).reshape(shape)
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
def prepare_random_uniform(ctx: OpContext):
    return _prepare_random(ctx, uniform)


@register(BuiltinOperator.RANDOM_STANDARD_NORMAL, stateful=True)
def prepare_random_standard_normal(ctx: OpContext):
    return _prepare_random(ctx, standard_normal)


@register(BuiltinOperator.MULTINOMIAL, stateful=True)
def prepare_multinomial(ctx: OpContext):
    ctx.check_num(2)
    logits, ns = ctx.input(0), ctx.input(1)
    ctx.check_types((np.float32,), 0)
    ctx.check_types((np.int32,), 1)
    ctx.check(len(logits.shape) == 2, f"logits must be 2-D, got shape {list(logits.shape)}")
    ctx.check(logits.shape[1] > 0, "num_classes > 0 was not true.")
    ctx.check(len(ns.shape) == 0, f"num_samples must be a scalar, got shape {list(ns.shape)}")
    out = ctx.outputs[0]
    ctx.check(out.dtype in (np.int32, np.int64),
              f"Unsupported output datatype for Multinomial op: {out.type_name}")
    gen = Philox(int(ctx.options.seed), int(ctx.options.seed2))
    if ns.is_constant:
        n = int(ns.data.reshape(-1)[0])
        ctx.check(n >= 0, "num_samples >= 0 was not true.")
        ctx.set_output_shape(0, (logits.shape[0], n))
        return Multinomial(gen, out.dtype, False, n)
    ctx.set_output_dynamic(0)
    return Multinomial(gen, out.dtype, True)
