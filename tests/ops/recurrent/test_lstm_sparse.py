"""LSTM's hybrid kernel with 1x16-block-sparse weights (lstm.cc + lstm_eval.cc with ledgers) against the oracle.

LiteRT's sparse hybrid product skips the zero point of asymmetric inputs and scales the recurrent product with
the input's scaling factors: these tests fail if either quirk is modelled the dense way. The weights are
encoded by test_sparse.encode (its own encoder), so both runtimes decode the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litert_py import PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.ops.recurrent.test_rnn import run_stream
from tests.ops.test_sparse import encode
from tests.oracle import quant, run_ours

TOLERANCE = 1e-6  # relative, per accumulated term (float activations as in test_lstm.TOLERANCE["hybrid"])


def _block_sparse(b, rng, name, shape, density, sparse=True):
    """An int8 weight of ``shape`` whose 16-wide column blocks are kept with probability ``density``."""
    d = rng.integers(-128, 128, shape).astype(np.int8)
    keep = rng.random((shape[0], shape[1] // 16)) < density
    keep[rng.integers(shape[0]), rng.integers(shape[1] // 16)] = True  # LiteRT: no values = no buffer = no data
    d = (d.reshape(shape[0], -1, 16) * keep[..., None]).reshape(shape).astype(np.int8)
    q = quant(float(rng.uniform(0.002, 0.01)))
    if not sparse:
        return b.tensor(name, shape, np.int8, data=d, quantization=q)
    values, sp = encode(d, [0, 1, 2], [1], [16], [0, 1, 0], 1)
    return b.tensor(name, shape, np.int8, data=values.tobytes(), quantization=q, sparsity=sp)


def sparse_lstm_model(
    rng,
    batch,
    n_in,
    n_cell,
    n_out,
    asym,
    cifg=False,
    peephole=False,
    projection=True,
    density=0.5,
    op="LSTM",
    sparse_rec=True,
):
    b = ModelBuilder()
    xshape = (batch, n_in) if op == "LSTM" else (batch, 1, n_in)
    x = b.input("x", xshape, np.float32)
    gates = "fco" if cifg else "ifco"
    ins = [x] + [_block_sparse(b, rng, f"w_{g}", (n_cell, n_in), density) if g in gates else -1 for g in "ifco"]
    ins += [_block_sparse(b, rng, f"r_{g}", (n_cell, n_out), density, sparse_rec) if g in gates else -1 for g in "ifco"]
    ins += [
        b.tensor(
            f"p_{g}", (n_cell,), np.int8, data=rng.integers(-127, 128, n_cell).astype(np.int8), quantization=quant(0.01)
        )
        if peephole and g in gates
        else -1
        for g in "ifo"
    ]
    ins += [b.const(f"b_{g}", rng.standard_normal(n_cell).astype(np.float32)) if g in gates else -1 for g in "ifco"]
    ins += [_block_sparse(b, rng, "proj", (n_out, n_cell), density) if projection else -1, -1]
    ins += [
        b.tensor("h", (batch, n_out), np.float32, is_variable=True),
        b.tensor("c", (batch, n_cell), np.float32, is_variable=True),
    ]
    out = b.tensor("out", xshape[:-1] + (n_out,), np.float32)
    opts = {"fused_activation_function": 4, "asymmetric_quantize_inputs": asym}
    if op != "LSTM":
        opts["time_major"] = False
    b.op(op, ins, [out], opts)
    b.output(out)
    return b.build(), xshape


@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 6),
    n_in=st.sampled_from([16, 32, 48]),
    n_cell=st.sampled_from([16, 32]),
    n_out=st.sampled_from([16, 32]),
    asym=st.booleans(),
    cifg=st.booleans(),
    peephole=st.booleans(),
    density=st.sampled_from([0.1, 0.3, 0.7, 1.0]),
    invokes=st.integers(2, 4),
)
def test_sparse_hybrid_lstm_matches_oracle(seed, batch, n_in, n_cell, n_out, asym, cifg, peephole, density, invokes):
    rng = np.random.default_rng(seed)
    model, xshape = sparse_lstm_model(rng, batch, n_in, n_cell, n_out, asym, cifg, peephole, density=density)
    feeds = [[rng.standard_normal(xshape).astype(np.float32) * 2] for _ in range(invokes)]
    feeds[1][0][...] = 0  # an all-zero input: the recurrent product keeps the previous step's input factors
    ours, theirs = run_stream(model, feeds, sync_states=True)
    rtol = TOLERANCE * (n_in + n_out + n_cell)
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=rtol, atol=1e-6)


def test_sparse_recurrent_product_uses_the_input_scaling_factors():
    """A large input and a small state: scaling the recurrent product with the state's own factors (the dense
    kernel's way) would differ from LiteRT by far more than the tolerance."""
    rng = np.random.default_rng(7)
    model, xshape = sparse_lstm_model(rng, 2, 32, 16, 16, False, density=1.0)
    feeds = [[rng.standard_normal(xshape).astype(np.float32) * 50] for _ in range(3)]
    ours, theirs = run_stream(model, feeds, sync_states=True)
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=1e-4, atol=1e-6)


@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 5), invokes=st.integers(1, 3))
def test_sparse_lstm_with_dense_recurrent_weights(seed, batch, invokes):
    """Dense matrices in a sparse op take the dense product (LiteRT: no ledger, a null pointer)."""
    rng = np.random.default_rng(seed)
    model, xshape = sparse_lstm_model(rng, batch, 32, 16, 16, False, sparse_rec=False)
    feeds = [[rng.standard_normal(xshape).astype(np.float32)] for _ in range(invokes)]
    ours, theirs = run_stream(model, feeds, sync_states=True)
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=TOLERANCE * 64, atol=1e-6)


@pytest.mark.parametrize(
    "case,message",
    [
        ("no-projection", "without projection weights"),
        ("sequence-op", "only read by LSTM's hybrid kernel"),
        ("dense-recurrent-asymmetric", "row sums it never computed"),
    ],
)
def test_sparse_lstm_refusals(case, message):
    rng = np.random.default_rng(1)
    model, xshape = sparse_lstm_model(
        rng,
        1,
        16,
        16,
        16,
        case.endswith("asymmetric"),
        projection=case != "no-projection",
        op="UNIDIRECTIONAL_SEQUENCE_LSTM" if case == "sequence-op" else "LSTM",
        sparse_rec=not case.startswith("dense-recurrent"),
    )
    with pytest.raises(PrepareError, match=message):
        run_ours(model, [np.ones(xshape, np.float32)])
