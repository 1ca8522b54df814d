"""Table lookups and hashing: EMBEDDING_LOOKUP, EMBEDDING_LOOKUP_SPARSE, HASHTABLE_LOOKUP, SKIP_GRAM,
LSH_PROJECTION.

Paths:
- EMBEDDING_LOOKUP: int32 ids (a vector) into a table of rank >= 2. Same-type output: rows are copied for
  float32, float16, int8, uint8, int16, int32, int64 and bool tables. Hybrid: an int8 or uint8 (or INT4)
  table with a float32 output gives ``f32(value) * scale``, with the row's own scale when the table has one
  scale per row; zero points must be 0 (LiteRT's check) and, like LiteRT, a uint8 table is *read as int8*
  (``GetTensorData<int8_t>``). An id outside [0, rows) is an InvokeError ("Embedding Lookup: index out
  of bounds"). LiteRT crashes on string tables; we reject them.
- EMBEDDING_LOOKUP_SPARSE: float32 table, int32 ids / indices / dense_shape, float32 weights; combiners SUM
  (0), MEAN (1), SQRTN (2). Exactly LiteRT's loop: rows are accumulated in order into the output row named
  by the leading indices; a run of equal buckets is finalized (divided by its total weight or by
  ``sqrtf`` of its summed squared weights, both float32) when the bucket changes, so a bucket met again
  later is divided again, as in LiteRT. Output shape ``dense_shape[:-1] + table.shape[1:]``. An index
  outside dense_shape is an InvokeError here (ai-edge-litert 2.3.0 writes outside its output; newer
  LiteRT fails the same way we do). LiteRT accepts a non-float32 table and reads it as float32 out of
  bounds; we refuse it at prepare.
- HASHTABLE_LOOKUP: int32 lookups and keys, values of any type (strings too); outputs the rows found and a
  uint8 ``hits`` vector; a miss gives a zero row (empty strings). The search is glibc's ``bsearch``
  reproduced step by step (vectorized over lookups), so unsorted or repeated keys find what LiteRT finds.
- SKIP_GRAM: the first string of the input, split at C-locale white space exactly as skip_gram.cc does
  (byte 0 is never a separator), n-grams of ``ngram_size`` words (or every size up to it with
  ``include_all_ngrams``) skipping at most ``max_skip_size`` words between neighbours, in the kernel's
  stack-enumeration order, joined by one space; a dynamic 1-D string output.
- LSH_PROJECTION: any input dtype (strings too: their TFLite string-buffer bytes, header included, as the
  kernel walks ``input->bytes / dim0``-byte rows), optional float32 weight, float32 seeds (rows of at most
  32 bits). Each bit is the sign of ``sum_rows f64(w) * f64(Fingerprint64(seed bytes + row bytes))``
  summed in double in row order; ``fingerprint64`` is farmhash's Fingerprint64 (farmhashna::Hash64) in
  Python integers, checked against LiteRT for keys of 4..303 bytes (every branch of the hash). SPARSE (1)
  packs each row's bits into ``signature + i * (1 << num_bits)`` with int32 wrap (and x86's 5-bit shift
  count for 32 bits); DENSE (2) outputs the bits.

Sources matched: tensorflow/lite/kernels/{embedding_lookup,embedding_lookup_sparse,hashtable_lookup,
skip_gram,lsh_projection}.cc; farmhash.cc (farmhashna::Hash64, HashLen0to16/17to32/33to64).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InputValueError
from ..schema import dtypes
from ..schema.dtypes import string_buffer
from ..schema.model import BuiltinOperator
from .registry import OpContext, PreparedOp, register

_STRING = dtypes.TensorType.STRING
_INT4 = getattr(dtypes.TensorType, "INT4", 17)


def _check_ids(ids: np.ndarray, rows: int, what: str) -> None:
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise IndexError(f"{what}: index out of bounds. Got {bad}, and bounds are [0, {rows - 1}]")


# =================================================================================================
# EMBEDDING_LOOKUP
# =================================================================================================


@dataclass(frozen=True, eq=False)
class EmbeddingLookup:
    rows: int

    def __call__(self, inputs, outputs):
        ids, table = inputs
        _check_ids(ids, self.rows, "Embedding Lookup")
        np.take(table, ids, axis=0, out=outputs[0], mode="clip")


@dataclass(frozen=True, eq=False)
class EmbeddingLookupHybrid:
    rows: int
    scale: np.ndarray  # float32, one per row (or a single one)
    per_row: bool

    def __call__(self, inputs, outputs):
        ids, table = inputs
        _check_ids(ids, self.rows, "Embedding Lookup")
        out = outputs[0]
        picked = np.take(table.view(np.int8) if table.dtype == np.uint8 else table, ids, axis=0)
        np.copyto(out, picked, casting="unsafe")
        scale = self.scale[ids].reshape((-1,) + (1,) * (out.ndim - 1)) if self.per_row else self.scale[0]
        np.multiply(out, scale, out=out)


@register(BuiltinOperator.EMBEDDING_LOOKUP)
def prepare_embedding_lookup(ctx: OpContext) -> PreparedOp:
    ctx.check_num(2)
    ids, table = ctx.input(0), ctx.input(1)
    ctx.check(ids.dtype == np.int32 and len(ids.shape) == 1, "EMBEDDING_LOOKUP: lookup must be an int32 vector")
    ctx.check(len(table.shape) >= 2, "EMBEDDING_LOOKUP: the table must have rank >= 2")
    if table.type in dtypes.OBJECT_TYPES:
        raise ctx.fail(f"Type {table.type_name} is unsupported by op {ctx.op_name}.")
    out = ctx.outputs[0]
    ctx.set_output_shape(0, (ids.shape[0],) + tuple(table.shape[1:]))
    rows = table.shape[0]
    if out.type == table.type:
        return EmbeddingLookup(rows)
    hybrid = out.dtype == np.float32 and (table.dtype in (np.int8, np.uint8) or table.type == _INT4)
    ctx.check(hybrid, f"EMBEDDING_LOOKUP: output type {out.type_name} does not match the table's {table.type_name}")
    ctx.check(
        all(z == 0 for z in table.quantization.zero_point),
        "EMBEDDING_LOOKUP: a hybrid table's zero points must be 0 (qparams->zero_point->data[0] == 0)",
    )
    scales = np.asarray(table.quantization.scale or (1.0,), np.float32)
    per_row = scales.size > 1
    ctx.check(not per_row or scales.size == rows, "EMBEDDING_LOOKUP: per-channel scales must be one per row")
    return EmbeddingLookupHybrid(rows, scales, per_row)


# =================================================================================================
# EMBEDDING_LOOKUP_SPARSE
# =================================================================================================

_SUM, _MEAN, _SQRTN = 0, 1, 2


@dataclass(frozen=True, eq=False)
class EmbeddingLookupSparse:
    combiner: int
    rows: int
    emb_shape: tuple[int, ...]

    def __call__(self, inputs, outputs):
        ids, indices, dense_shape, weights, table = inputs
        lookup_rank = indices.shape[1]
        dims = [int(d) for d in dense_shape.reshape(-1)[: lookup_rank - 1]]
        if dense_shape.size != lookup_rank:
            raise InputValueError("EMBEDDING_LOOKUP_SPARSE: dense_shape must have one entry per indices column")
        if any(d < 0 for d in dims):
            raise InputValueError(f"EMBEDDING_LOOKUP_SPARSE: negative dense_shape {dims}")
        out = limits.new_array(tuple(dims) + self.emb_shape, np.float32, "EMBEDDING_LOOKUP_SPARSE's output")
        out[...] = 0
        outputs[0] = out
        _check_ids(ids, self.rows, "Embedding Lookup Sparse")
        lead = indices[:, : lookup_rank - 1].astype(np.int64)
        if lead.size and ((lead < 0).any() or (lead >= np.array(dims, np.int64)).any()):
            raise IndexError("Embedding Lookup Sparse: index out of bounds of dense_shape")
        n = ids.shape[0]
        if n == 0:
            return
        bucket = np.ravel_multi_index(tuple(lead.T), dims) if dims else np.zeros(n, np.int64)
        out2 = out.reshape(-1, int(np.prod(self.emb_shape, dtype=np.int64)))
        w = weights.astype(np.float32, copy=False)
        contrib = table.reshape(self.rows, -1)[ids] * w[:, None]  # float32 products, as LiteRT
        if self.combiner == _SUM:
            np.add.at(out2, bucket, contrib)
            return
        # Runs of equal consecutive buckets (the first run starts at LiteRT's initial offset 0 or at i=0).
        starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        run_of = np.cumsum(np.r_[False, bucket[1:] != bucket[:-1]])
        total = np.zeros(starts.size, np.float32)
        np.add.at(total, run_of, w)
        squares = np.zeros(starts.size, np.float32)
        np.add.at(squares, run_of, w * w)
        mult = total if self.combiner == _MEAN else np.sqrt(squares)
        run_bucket = bucket[starts]
        if np.unique(run_bucket).size == run_bucket.size:
            np.add.at(out2, bucket, contrib)
            out2[run_bucket] /= mult[:, None]
            return
        ends = np.r_[starts[1:], n]
        for r, (s, e) in enumerate(zip(starts, ends)):  # a bucket met again: finalize run by run
            np.add.at(out2, bucket[s:e], contrib[s:e])
            out2[run_bucket[r]] /= mult[r]


@register(BuiltinOperator.EMBEDDING_LOOKUP_SPARSE)
def prepare_embedding_lookup_sparse(ctx: OpContext) -> PreparedOp:
    ctx.check_num(5)
    ids, indices, shape, weights, table = (ctx.input(k) for k in range(5))
    ctx.check(len(ids.shape) == 1 and ids.dtype == np.int32, "EMBEDDING_LOOKUP_SPARSE: ids must be an int32 vector")
    ctx.check(
        len(indices.shape) == 2 and indices.dtype == np.int32,
        "EMBEDDING_LOOKUP_SPARSE: indices must be an int32 matrix",
    )
    ctx.check(
        len(shape.shape) == 1 and shape.dtype == np.int32,
        "EMBEDDING_LOOKUP_SPARSE: dense_shape must be an int32 vector",
    )
    ctx.check(
        len(weights.shape) == 1 and weights.dtype == np.float32,
        "EMBEDDING_LOOKUP_SPARSE: weights must be a float32 vector",
    )
    ctx.check(
        indices.shape[0] == ids.shape[0] == weights.shape[0],
        "EMBEDDING_LOOKUP_SPARSE: ids, indices and weights must have the same length",
    )
    ctx.check(len(table.shape) >= 2, "EMBEDDING_LOOKUP_SPARSE: the table must have rank >= 2")
    ctx.check(
        table.dtype == np.float32 and table.type not in dtypes.OBJECT_TYPES,
        f"Type {table.type_name} is unsupported by op {ctx.op_name}.",
    )
    ctx.check(ctx.outputs[0].dtype == np.float32, "EMBEDDING_LOOKUP_SPARSE: output must be float32")
    ctx.check(indices.shape[1] >= 1, "EMBEDDING_LOOKUP_SPARSE: indices need at least one column")
    combiner = int(ctx.options.combiner)
    ctx.check(combiner in (_SUM, _MEAN, _SQRTN), f"EMBEDDING_LOOKUP_SPARSE: unknown combiner {combiner}")
    ctx.set_output_dynamic(0)  # as LiteRT: the shape comes from dense_shape's values at eval
    return EmbeddingLookupSparse(combiner, table.shape[0], tuple(table.shape[1:]))


# =================================================================================================
# HASHTABLE_LOOKUP
# =================================================================================================


def bsearch(keys: np.ndarray, x: np.ndarray) -> np.ndarray:
    """glibc's ``bsearch`` for every element of ``x`` at once: the index it returns, or -1."""
    lo = np.zeros(x.shape, np.int64)
    hi = np.full(x.shape, keys.size, np.int64)
    found = np.full(x.shape, -1, np.int64)
    active = lo < hi
    while active.any():
        mid = (lo + hi) >> 1
        k = keys[np.minimum(mid, keys.size - 1)]
        less, more = x < k, x > k
        hit = active & ~less & ~more
        found[hit] = mid[hit]
        hi = np.where(active & less, mid, hi)
        lo = np.where(active & more, mid + 1, lo)
        active &= ~hit & (lo < hi)
    return found


@dataclass(frozen=True, eq=False)
class HashtableLookup:
    def __call__(self, inputs, outputs):
        lookup, keys, values = inputs
        out, hits = outputs
        found = bsearch(keys, lookup) if keys.size else np.full(lookup.shape, -1, np.int64)
        hit = found >= 0
        rows = np.take(values, np.maximum(found, 0), axis=0) if values.shape[0] else out
        out[...] = b"" if out.dtype == object else 0
        out[hit] = rows[hit]
        np.copyto(hits, hit, casting="unsafe")


@register(BuiltinOperator.HASHTABLE_LOOKUP)
def prepare_hashtable_lookup(ctx: OpContext) -> PreparedOp:
    ctx.check_num(3, 2)
    lookup, keys, values = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(len(lookup.shape) == 1 and lookup.dtype == np.int32, "HASHTABLE_LOOKUP: lookup must be an int32 vector")
    ctx.check(len(keys.shape) == 1 and keys.dtype == np.int32, "HASHTABLE_LOOKUP: keys must be an int32 vector")
    ctx.check(
        len(values.shape) >= 1 and values.shape[0] == keys.shape[0],
        "HASHTABLE_LOOKUP: values must have one row per key",
    )
    ctx.check(ctx.outputs[0].type == values.type, "HASHTABLE_LOOKUP: output type differs from the values' type")
    ctx.check(ctx.outputs[1].dtype == np.uint8, "HASHTABLE_LOOKUP: hits must be uint8")
    ctx.set_output_shape(0, (lookup.shape[0],) + tuple(values.shape[1:]))
    ctx.set_output_shape(1, (lookup.shape[0],))
    return HashtableLookup()


# =================================================================================================
# SKIP_GRAM
# =================================================================================================

_C_SPACE = frozenset(b" \t\n\v\f\r")  # isspace() in the C locale


def _split_words(s: bytes) -> list[bytes]:
    """skip_gram.cc's word split, quirks included: byte 0 is never a separator, and a trailing word may
    keep a leading space."""
    words, prev = [], 0
    for i in range(1, len(s)):
        if s[i] in _C_SPACE:
            if i > prev and s[prev] not in _C_SPACE:
                words.append(s[prev:i])
            prev = i + 1
    if len(s) > prev:
        words.append(s[prev:])
    return words


def skip_grams(sentence: bytes, ngram_size: int, max_skip_size: int, include_all_ngrams: bool) -> list[bytes]:
    """The n-grams of skip_gram.cc's Eval, in its order (its explicit-stack enumeration, step by step)."""
    words = _split_words(sentence)
    n = len(words)
    if n < ngram_size:
        return []
    out: list[bytes] = []
    stack = [0] * ngram_size
    k = 1
    while k >= 0:
        if k < ngram_size and stack[k] + 1 < n and (k == 0 or stack[k] - stack[k - 1] <= max_skip_size):
            stack[k] += 1
            k += 1
            if k < ngram_size:
                stack[k] = stack[k - 1]
        else:
            if k > 0 and (k <= ngram_size if include_all_ngrams else k == ngram_size):
                out.append(b" ".join(words[stack[i]] for i in range(k)))
            k -= 1
    return out


@dataclass(frozen=True, eq=False)
class SkipGram:
    ngram_size: int
    max_skip_size: int
    include_all_ngrams: bool

    def __call__(self, inputs, outputs):
        x = inputs[0]
        if x.size == 0:
            raise InputValueError("SKIP_GRAM: the input holds no string")
        grams = skip_grams(bytes(x.reshape(-1)[0]), self.ngram_size, self.max_skip_size, self.include_all_ngrams)
        out = np.empty(len(grams), dtype=object)
        out[:] = grams
        outputs[0] = out


@register(BuiltinOperator.SKIP_GRAM)
def prepare_skip_gram(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x = ctx.input(0)
    ctx.check(x.type == _STRING and ctx.outputs[0].type == _STRING, "SKIP_GRAM: input and output must be strings")
    o = ctx.options
    ctx.check(
        int(o.ngram_size) >= 0 and int(o.max_skip_size) >= 0,
        "SKIP_GRAM: ngram_size and max_skip_size must be non-negative",
    )
    ctx.set_output_dynamic(0)
    return SkipGram(int(o.ngram_size), int(o.max_skip_size), bool(o.include_all_ngrams))


# =================================================================================================
# LSH_PROJECTION
# =================================================================================================

_M64 = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _f64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 8], "little")


def _f32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 4], "little")


def _rot(v: int, r: int) -> int:
    return v if r == 0 else ((v >> r) | (v << (64 - r))) & _M64


def _smix(v: int) -> int:
    return v ^ (v >> 47)


def _h16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def fingerprint64(s: bytes) -> int:
    """farmhash ``Fingerprint64`` (farmhashna::Hash64) of ``s`` as an unsigned 64-bit int."""
    n = len(s)
    if n <= 16:
        if n >= 8:
            mul = (_K2 + n * 2) & _M64
            a = (_f64(s, 0) + _K2) & _M64
            b = _f64(s, n - 8)
            c = (_rot(b, 37) * mul + a) & _M64
            d = ((_rot(a, 25) + b) * mul) & _M64
            return _h16(c, d, mul)
        if n >= 4:
            mul = (_K2 + n * 2) & _M64
            return _h16((n + (_f32(s, 0) << 3)) & _M64, _f32(s, n - 4), mul)
        if n > 0:
            y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
            z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
            return (_smix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
        return _K2
    mul = (_K2 + n * 2) & _M64
    if n <= 32:
        a = (_f64(s, 0) * _K1) & _M64
        b = _f64(s, 8)
        c = (_f64(s, n - 8) * mul) & _M64
        d = (_f64(s, n - 16) * _K2) & _M64
        return _h16(
            (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul
        )
    if n <= 64:
        a = (_f64(s, 0) * _K2) & _M64
        b = _f64(s, 8)
        c = (_f64(s, n - 8) * mul) & _M64
        d = (_f64(s, n - 16) * _K2) & _M64
        y = (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64
        z = _h16(y, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul)
        e = (_f64(s, 16) * mul) & _M64
        f = _f64(s, 24)
        g = ((y + _f64(s, n - 32)) * mul) & _M64
        h = ((z + _f64(s, n - 24)) * mul) & _M64
        return _h16((_rot((e + f) & _M64, 43) + _rot(g, 30) + h) & _M64, (e + _rot((f + a) & _M64, 18) + g) & _M64, mul)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M64
    z = (_smix((y * _K2 + 113) & _M64) * _K2) & _M64
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _f64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v1 + _f64(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w1
        y = (y + v0 + _f64(s, i + 40)) & _M64
        z = (_rot((z + w0) & _M64, 33) * _K1) & _M64
        v0, v1 = _weak32(s, i, (v1 * _K1) & _M64, (x + w0) & _M64)
        w0, w1 = _weak32(s, i + 32, (z + w1) & _M64, (y + _f64(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = (_K1 + ((z & 0xFF) << 1)) & _M64
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _M64
    v0 = (v0 + w0) & _M64
    w0 = (w0 + v0) & _M64
    x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v1 + _f64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w1 * 9) & _M64
    y = (y + v0 * 9 + _f64(s, i + 40)) & _M64
    z = (_rot((z + w0) & _M64, 33) * mul) & _M64
    v0, v1 = _weak32(s, i, (v1 * mul) & _M64, (x + w0) & _M64)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _M64, (y + _f64(s, i + 16)) & _M64)
    z, x = x, z
    return _h16((_h16(v0, w0, mul) + _smix(y) * _K0 + z) & _M64, (_h16(v1, w1, mul) + x) & _M64, mul)


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def _raw_rows(x: np.ndarray, rows: int) -> list[bytes]:
    """``input->bytes / dim0`` byte chunks of the tensor's memory, as RunningSignBit walks them (strings:
    TFLite's string-buffer layout, header included)."""
    if x.dtype == object:
        raw = string_buffer(x)
    else:
        raw = np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False).tobytes()
    item = len(raw) // rows if rows else 0
    return [raw[k * item : (k + 1) * item] for k in range(rows)]


@dataclass(frozen=True, eq=False)
class LshProjection:
    sparse: bool

    def __call__(self, inputs, outputs):
        hashes, x = inputs[0], inputs[1]
        weight = inputs[2] if len(inputs) > 2 else None
        num_hash, num_bits = hashes.shape
        rows = x.shape[0]
        chunks = _raw_rows(x, rows)
        seeds = hashes.astype(np.float32).reshape(-1)
        # One signed 64-bit fingerprint per (seed, row); float seed bytes then the row's bytes.
        sig = np.array(
            [[_signed64(fingerprint64(sd.tobytes() + c)) for c in chunks] for sd in seeds], np.int64
        ).reshape(seeds.size, rows)
        terms = sig.astype(np.float64)
        if weight is not None:
            terms *= weight.astype(np.float64)  # float weight promoted to double, as in C++
        # score is a running double sum in row order: cumsum is sequential, its last column that sum.
        score = np.cumsum(terms, axis=1)[:, -1] if rows else np.zeros(seeds.size)
        bits = (score > 0).astype(np.int64).reshape(num_hash, num_bits)
        out = outputs[0]
        if not self.sparse:
            np.copyto(out, bits.reshape(-1), casting="unsafe")
            return
        sig32 = np.zeros(num_hash, np.int64)
        for j in range(num_bits):  # (signature << 1) | bit in int32, wrapping
            sig32 = ((sig32 << 1) | bits[:, j]) & 0xFFFFFFFF
        # i * (1 << num_bits): x86 masks the shift count to 5 bits; everything wraps in int32.
        total = (sig32 + np.arange(num_hash, dtype=np.int64) * (1 << (num_bits & 31))) & 0xFFFFFFFF
        np.copyto(out, total.astype(np.uint32).view(np.int32))


@register(BuiltinOperator.LSH_PROJECTION)
def prepare_lsh_projection(ctx: OpContext) -> PreparedOp:
    ctx.check_num((2, 3))
    hashes, x = ctx.input(0), ctx.input(1)
    weight = ctx.optional_input(2)
    ctx.check(len(hashes.shape) == 2, "LSH_PROJECTION: the hash tensor must be a matrix")
    ctx.check(hashes.shape[1] <= 32, "LSH_PROJECTION: at most 32 bits per hash")
    ctx.check(hashes.dtype == np.float32, "LSH_PROJECTION: hash seeds must be float32")
    ctx.check(len(x.shape) >= 1, "LSH_PROJECTION: the input must have rank >= 1")
    if weight is not None:
        ctx.check(
            len(weight.shape) == 1 and weight.shape[0] == x.shape[0],
            "LSH_PROJECTION: weight must be a vector with one entry per input row",
        )
        ctx.check(weight.dtype == np.float32, "LSH_PROJECTION: weight must be float32")
    ctx.check(ctx.outputs[0].dtype == np.int32, "LSH_PROJECTION: output must be int32")
    kind = int(ctx.options.type)
    if kind == 1:  # SPARSE
        ctx.set_output_shape(0, (hashes.shape[0],))
    elif kind == 2:  # DENSE
        ctx.set_output_shape(0, (hashes.shape[0] * hashes.shape[1],))
    else:
        raise ctx.fail(f"LSH_PROJECTION: unknown projection type {kind}")
    return LshProjection(kind == 1)
