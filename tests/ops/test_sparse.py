"""DENSIFY of sparse constants (CSR and block-sparse, int32/uint16/uint8 index vectors) against the oracle.

The test encodes a random dense array into SparsityParameters (its own encoder, below); both runtimes then
decode the same bytes, so a wrong encoder cannot hide a decoder bug. DENSIFY copies values: exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from litert_py.errors import LiteRTError
from litert_py.ops.sparse import densify
from litert_py.schema.builder import ModelBuilder
from litert_py.schema.model import DimensionMetadata, SparsityParameters
from tests.ops._diff import check_both
from tests.oracle import run_litert, run_ours

TOLERANCE = {"DENSIFY": 0.0}
INDEX_TYPES = {1: np.int32, 2: np.uint16, 3: np.uint8}  # SparseIndexVector union members

seeds = st.integers(0, 2**32 - 1)


def encode(dense: np.ndarray, order, block_map, block_size, formats, index_type: int):
    """(values, SparsityParameters) of ``dense``: blocked dims split, levels in ``order``, CSR levels keep
    the children whose subtree holds a non-zero."""
    rank = dense.ndim
    outer = [s // block_size[block_map.index(d)] if d in block_map else s for d, s in enumerate(dense.shape)]
    # expanded[outer..., block...]
    split = []
    for d, s in enumerate(dense.shape):
        split += [outer[d], block_size[block_map.index(d)]] if d in block_map else [s]
    e = dense.reshape(split)
    pos, k = [], 0
    for d in range(rank):
        pos.append(k)
        k += 2 if d in block_map else 1
    axes = [pos[d] for d in range(rank)] + [pos[d] + 1 for d in block_map]
    expanded = e.transpose(axes)
    p = expanded.transpose(order)
    nz = p != 0
    paths = [()]
    meta = []
    for level, fmt in enumerate(formats):
        size = p.shape[level]
        if fmt == 0:
            paths = [q + (i,) for q in paths for i in range(size)]
            meta.append(DimensionMetadata(format=0, dense_size=size))
        else:
            segs, idx, new = [0], [], []
            for q in paths:
                for i in range(size):
                    if nz[q + (i,)].any():
                        idx.append(i)
                        new.append(q + (i,))
                segs.append(len(idx))
            paths = new
            meta.append(
                DimensionMetadata(
                    format=1,
                    dense_size=size,
                    array_segments=tuple(segs),
                    array_indices=tuple(idx),
                    array_segments_type=index_type,
                    array_indices_type=index_type,
                )
            )
    values = np.array([p[q] for q in paths], dense.dtype).reshape(-1)
    return values, SparsityParameters(tuple(order), tuple(block_map), tuple(meta))


def sparse_model(dense, order, block_map, block_size, formats, index_type, consumer="DENSIFY"):
    values, sp = encode(dense, order, block_map, block_size, formats, index_type)
    b = ModelBuilder()
    w = b.tensor("w_sparse", dense.shape, dense.dtype, data=values.tobytes(), sparsity=sp)
    if consumer == "DENSIFY":
        out = b.tensor("w", dense.shape, dense.dtype)
        b.op("DENSIFY", [w], [out])
        b.output(out)
        return b.build()
    x = b.input("x", (1, dense.shape[1]), np.float32)
    out = b.tensor("y", (1, dense.shape[0]), np.float32)
    b.op("FULLY_CONNECTED", [x, w, -1], [out], {})
    b.output(out)
    return b.build()


@st.composite
def densify_case(draw):
    dt = draw(st.sampled_from([np.float32, np.int8, np.float16]))
    rank = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds))
    block_map, block_size = [], []
    if draw(st.booleans()):
        block_map = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=min(2, rank))))
        block_size = [draw(st.sampled_from([1, 2, 4])) for _ in block_map]
    shape = []
    for d in range(rank):
        n = draw(st.integers(1, 4))
        shape.append(n * block_size[block_map.index(d)] if d in block_map else n)
    perm = list(rng.permutation(rank)) if draw(st.booleans()) else list(range(rank))
    blocks = [rank + i for i in range(len(block_map))]
    order = perm + (blocks[::-1] if draw(st.booleans()) else blocks)
    formats = [draw(st.sampled_from([0, 1])) for _ in range(rank)] + [0] * len(block_map)  # blocks DENSE
    index_type = draw(st.sampled_from(list(INDEX_TYPES)))
    dense = (rng.standard_normal(shape) * 10).astype(dt) * (rng.random(shape) < 0.4)
    dense.reshape(-1)[rng.integers(0, dense.size)] = 1  # a non-empty buffer (an empty one is not constant)
    if index_type != 1 and max(dense.shape) > 255:
        index_type = 1
    return sparse_model(dense.astype(dt), order, block_map, block_size, formats, index_type), dense


@given(case=densify_case())
def test_densify(case):
    model, dense = case
    ours = check_both(model, [], resolver="BUILTIN_REF")
    assert ours is not None
    np.testing.assert_array_equal(ours[0], dense)


def test_densify_block_sparse_4x4_with_2x2_blocks():
    """The layout of the TFLite converter's block-sparse weights: [0, 1, 2, 3], block_map [0, 1], DENSE,
    SPARSE_CSR, DENSE, DENSE."""
    dense = np.zeros((4, 4), np.float32)
    dense[0:2, 2:4] = [[1, 2], [3, 4]]
    dense[2:4, 0:2] = [[5, 6], [7, 8]]
    model = sparse_model(dense, [0, 1, 2, 3], [0, 1], [2, 2], [0, 1, 0, 0], 3)
    ours = check_both(model, [])
    np.testing.assert_array_equal(ours[0], dense)


def test_densify_malformed_sparsity_fails_cleanly():
    """Metadata addressing more values than the buffer holds (LiteRT would read past it): refused when the
    model is read (or, for a model built in memory, by DENSIFY's prepare)."""
    dense = np.arange(1, 5, dtype=np.float32).reshape(2, 2)
    values, sp = encode(dense, [0, 1], [], [], [0, 1], 1)
    b = ModelBuilder()
    w = b.tensor("w_sparse", (2, 2), np.float32, data=values[:2].tobytes(), sparsity=sp)
    out = b.tensor("w", (2, 2), np.float32)
    b.op("DENSIFY", [w], [out])
    b.output(out)
    with pytest.raises(LiteRTError):
        run_ours(b.build(), [])
    with pytest.raises(ValueError, match="addresses 4 values"):
        densify(values[:2], (2, 2), sp)


def test_densify_sparse_block_level_refused():
    """A SPARSE_CSR block level: ai-edge-litert 2.3.0 dies with SIGFPE; litert_py refuses it at prepare."""
    dense = np.zeros((4, 4), np.float32)
    dense[0, 1] = 1.0
    model = sparse_model(dense, [0, 1, 2], [1], [2], [0, 0, 1], 1)
    with pytest.raises(PrepareError, match="block dimensions must be DENSE"):
        run_ours(model, [])


def test_sparse_fully_connected_weights_without_densify():
    """A sparse constant used directly as FULLY_CONNECTED weights (LiteRT's sparse FC path): the runtime
    expands it once at load, so the result equals LiteRT's."""
    dense = np.zeros((4, 4), np.float32)
    dense[0, 1], dense[2, 3], dense[3, 0] = 1.5, -2.0, 3.0
    model = sparse_model(dense, [0, 1], [], [], [0, 1], 1, consumer="FULLY_CONNECTED")
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    theirs = run_litert(model, [x])
    np.testing.assert_array_equal(theirs[0], x @ dense.T)
    ours = run_ours(model, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
