"""Sparse tensors (schema SparsityParameters) expanded to their dense form: FormatConverter::SparseToDense +
Populate of tensorflow/lite/kernels/internal/utils/sparsity_format_converter.cc, level by level for all paths at
once (see ops/sparse.py, the DENSIFY kernel, for the semantics). Here, below ops and runtime, because both use
it: the runtime expands a sparse constant once for every kernel but DENSIFY."""

from __future__ import annotations

import numpy as np

from .. import limits
from .model import SparsityParameters

DENSE, SPARSE_CSR = 0, 1


def densify(values: np.ndarray, shape: tuple[int, ...], sp: SparsityParameters) -> np.ndarray:
    """The dense array of ``shape`` that ``values`` (stored in traversal order) and ``sp`` describe.

    Raises ValueError on metadata that would make LiteRT read or write out of bounds."""
    rank = len(shape)
    order = [int(t) for t in sp.traversal_order]
    block_map = [int(b) for b in sp.block_map]
    meta = sp.dim_metadata
    levels = len(order)
    if levels != rank + len(block_map) or len(meta) != levels or sorted(order) != list(range(levels)):
        raise ValueError(
            f"sparsity: traversal_order {order} / {len(meta)} dim_metadata do not match rank {rank} "
            f"with {len(block_map)} block dimensions"
        )
    if any(o >= rank for o in order[:rank]) or any(not 0 <= b < rank for b in block_map):
        raise ValueError("sparsity: block dimensions must come after the original ones in traversal_order")
    if any(meta[level].format != DENSE for level in range(rank, levels)):
        # ai-edge-litert 2.3.0 dies with SIGFPE on such a tensor: refused rather than guessed.
        raise ValueError("sparsity: block dimensions must be DENSE (LiteRT does not support SPARSE_CSR ones)")
    if any(b <= a for a, b in zip(block_map, block_map[1:])):
        raise ValueError(f"sparsity: block_map {block_map} must be increasing (LiteRT matches it in dim order)")
    # InitSparseToDenseConverter: block_size[b] = dense_size[traversal_order[rank + b]] -- the metadata is
    # indexed by the traversal_order *value*, not by the level; reproduced as is.
    block_size = [int(meta[order[rank + i]].dense_size) for i in range(len(block_map))]
    if any(b <= 0 for b in block_size):
        raise ValueError(f"sparsity: block sizes {block_size} must be positive")
    limits.check_allocation(limits.nbytes(shape, values.dtype), f"densifying a sparse tensor of shape {list(shape)}")
    prev = np.zeros(1, np.int64)
    cols: list[np.ndarray] = []
    for level in range(levels):
        m = meta[level]
        if m.format == DENSE:
            s = int(m.dense_size)
            # the index arrays grow by the level's dense size: refuse before numpy allocates them
            limits.check_allocation(prev.size * max(s, 0) * 8 * (len(cols) + 2), "densifying a sparse tensor")
            prev = (prev[:, None] * s + np.arange(s)).reshape(-1)
            cols = [np.repeat(c, s) for c in cols] + [np.tile(np.arange(s, dtype=np.int64), prev.size // s if s else 0)]
        elif m.format == SPARSE_CSR:
            seg = np.asarray(m.array_segments, np.int64)
            ind = np.asarray(m.array_indices, np.int64)
            alive = prev + 1 < seg.size
            lo = np.where(alive, seg[np.minimum(prev, seg.size - 1)] if seg.size else 0, 0)
            hi = np.where(alive, seg[np.minimum(prev + 1, seg.size - 1)] if seg.size else 0, 0)
            hi = np.minimum(np.maximum(hi, lo), max(ind.size, 0))  # positions past the indices are skipped
            counts = np.maximum(hi - lo, 0)
            total = int(counts.sum())
            start = np.repeat(lo - np.cumsum(counts) + counts, counts)
            pos = start + np.arange(total, dtype=np.int64)
            if pos.size and pos.min() < 0:
                raise ValueError("sparsity: negative array segment")
            cols = [np.repeat(c, counts) for c in cols] + [ind[pos]]
            prev = pos
        else:
            raise ValueError(f"sparsity: unknown dimension format {m.format}")
    n = prev.size
    if n > values.size:
        raise ValueError(f"sparsity: the metadata addresses {n} values, the buffer holds {values.size}")
    orig = [None] * rank
    for level in range(rank):
        orig[order[level]] = cols[level]
    for level in range(rank, levels):
        b = order[level] - rank
        d = block_map[b]
        orig[d] = orig[d] * block_size[b] + cols[level]
    dense = np.zeros(shape, values.dtype)
    if n:
        coords = np.stack(orig)
        if (coords < 0).any() or (coords >= np.array(shape, np.int64)[:, None]).any():
            raise ValueError("sparsity: an index lies outside the dense shape")
        dense[tuple(coords)] = values[:n]
    return dense
