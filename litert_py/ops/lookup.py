"""Table lookups: EMBEDDING_LOOKUP, EMBEDDING_LOOKUP_SPARSE, HASHTABLE_LOOKUP.

Paths:
- EMBEDDING_LOOKUP: int32 ids (a vector) into a table of rank >= 2. Same-type output: rows are copied for
  float32, float16, int8, uint8, int16, int32, int64 and bool tables. Hybrid: an int8 or uint8 (or INT4)
  table with a float32 output gives ``f32(value) * scale``, with the row's own scale when the table has one
  scale per row; like LiteRT, the zero point is ignored and a uint8 table is *read as int8*
  (``GetTensorData<int8_t>``). An id outside [0, rows) is an InvokeError ("Embedding Lookup: index out of
  bounds"). LiteRT crashes on string tables; we reject them.
- EMBEDDING_LOOKUP_SPARSE: float32 table, int32 ids / indices / dense_shape, float32 weights; combiners SUM
  (0), MEAN (1), SQRTN (2). Exactly LiteRT's loop: rows are accumulated in order into the output row named
  by the leading indices; a run of equal buckets is finalized (divided by its total weight or by
  ``sqrtf`` of its summed squared weights, both float32) when the bucket changes, so a bucket met again
  later is divided again, as in LiteRT. Output shape ``dense_shape[:-1] + table.shape[1:]``.
- HASHTABLE_LOOKUP: int32 lookups and keys, values of any type (strings too); outputs the rows found and a
  uint8 ``hits`` vector; a miss gives a zero row (empty strings). The search is glibc's ``bsearch``
  reproduced step by step (vectorized over lookups), so unsorted or repeated keys find what LiteRT finds.

Sources matched: tensorflow/lite/kernels/{embedding_lookup,embedding_lookup_sparse,hashtable_lookup}.cc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema import dtypes
from ..schema.model import BuiltinOperator
from .registry import OpContext, register

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
def prepare_embedding_lookup(ctx: OpContext):
    ctx.check_num(2)
    ids, table = ctx.input(0), ctx.input(1)
    ctx.check(ids.dtype == np.int32 and len(ids.shape) == 1,
              "EMBEDDING_LOOKUP: lookup must be an int32 vector")
    ctx.check(len(table.shape) >= 2, "EMBEDDING_LOOKUP: the table must have rank >= 2")
    if table.type in dtypes.OBJECT_TYPES:
        raise ctx.fail(f"Type {table.type_name} is unsupported by op {ctx.op_name}.")
    out = ctx.outputs[0]
    ctx.set_output_shape(0, (ids.shape[0],) + tuple(table.shape[1:]))
    rows = table.shape[0]
    if out.type == table.type:
        return EmbeddingLookup(rows)
    hybrid = out.dtype == np.float32 and (table.dtype in (np.int8, np.uint8) or table.type == _INT4)
    ctx.check(hybrid, f"EMBEDDING_LOOKUP: output type {out.type_name} does not match the table's "
                      f"{table.type_name}")
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
            raise ValueError("EMBEDDING_LOOKUP_SPARSE: dense_shape must have one entry per indices column")
        if any(d < 0 for d in dims):
            raise ValueError(f"EMBEDDING_LOOKUP_SPARSE: negative dense_shape {dims}")
        out = np.zeros(tuple(dims) + self.emb_shape, np.float32)
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
def prepare_embedding_lookup_sparse(ctx: OpContext):
    ctx.check_num(5)
    ids, indices, shape, weights, table = (ctx.input(k) for k in range(5))
    ctx.check(len(ids.shape) == 1 and ids.dtype == np.int32, "EMBEDDING_LOOKUP_SPARSE: ids must be an int32 vector")
    ctx.check(len(indices.shape) == 2 and indices.dtype == np.int32,
              "EMBEDDING_LOOKUP_SPARSE: indices must be an int32 matrix")
    ctx.check(len(shape.shape) == 1 and shape.dtype == np.int32,
              "EMBEDDING_LOOKUP_SPARSE: dense_shape must be an int32 vector")
    ctx.check(len(weights.shape) == 1 and weights.dtype == np.float32,
              "EMBEDDING_LOOKUP_SPARSE: weights must be a float32 vector")
    ctx.check(indices.shape[0] == ids.shape[0] == weights.shape[0],
              "EMBEDDING_LOOKUP_SPARSE: ids, indices and weights must have the same length")
    ctx.check(len(table.shape) >= 2, "EMBEDDING_LOOKUP_SPARSE: the table must have rank >= 2")
    ctx.check(table.dtype == np.float32 and table.type not in dtypes.OBJECT_TYPES,
              f"Type {table.type_name} is unsupported by op {ctx.op_name}.")
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
def prepare_hashtable_lookup(ctx: OpContext):
    ctx.check_num(3, 2)
    lookup, keys, values = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(len(lookup.shape) == 1 and lookup.dtype == np.int32,
              "HASHTABLE_LOOKUP: lookup must be an int32 vector")
    ctx.check(len(keys.shape) == 1 and keys.dtype == np.int32, "HASHTABLE_LOOKUP: keys must be an int32 vector")
    ctx.check(len(values.shape) >= 1 and values.shape[0] == keys.shape[0],
              "HASHTABLE_LOOKUP: values must have one row per key")
    ctx.check(ctx.outputs[0].type == values.type, "HASHTABLE_LOOKUP: output type differs from the values' type")
    ctx.check(ctx.outputs[1].dtype == np.uint8, "HASHTABLE_LOOKUP: hits must be uint8")
    ctx.set_output_shape(0, (lookup.shape[0],) + tuple(values.shape[1:]))
    ctx.set_output_shape(1, (lookup.shape[0],))
    return HashtableLookup()
