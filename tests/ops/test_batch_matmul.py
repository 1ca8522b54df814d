"""BATCH_MATMUL against the oracle (ai-edge-litert BUILTIN_REF).

Integer outputs are compared for equality, the hybrid float32 output exactly as well (same quantized rows,
same int32 sums, same float operations), float32 within a tolerance. One table (PATHS) drives the
differential test over shapes (ranks 2 to 5, broadcast batch dims), adj_x / adj_y, scales and zero points;
further tests pin LiteRT's hybrid row-indexing quirk, the int32 wrap, the int8 requantization table's bound and
the error paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.ops.batch_matmul import TABLE_MAX, RequantizeTable
from litert_py.quant import quantize_multiplier, requantize
from tests.ops._diff import check_both
from tests.oracle import T, quant, run_litert, run_ours, single_op_model
from tests.values import int_range

#: Float tolerance relative to the largest reference magnitude, per unit of contraction depth for float32.
TOLERANCE = {"float32": 1e-6, "hybrid": 0.0}

I8, I16, I32, F32 = np.int8, np.int16, np.int32, np.float32

#: id -> (lhs, rhs, output) dtypes; hybrid ids give (asymmetric inputs, per-channel rhs scales) in options.
PATHS = {
    "bmm-float32": (F32, F32, F32),
    "bmm-int8": (I8, I8, I8),
    "bmm-int8-to-int32": (I8, I8, I32),
    "bmm-int16": (I16, I16, I16),
    "bmm-int16x8": (I16, I8, I16),
    "bmm-hybrid-symmetric": (F32, I8, F32),
    "bmm-hybrid-asymmetric": (F32, I8, F32),
    "bmm-hybrid-per-channel": (F32, I8, F32),
}

seeds = st.integers(0, 2**32 - 1)


@st.composite
def bmm_shapes(draw):
    """(lhs shape, rhs shape, output shape, adj_x, adj_y): batch dims broadcast, total rank 2 to 5."""
    out_batch = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))

    def operand():
        rank = draw(st.integers(0, len(out_batch)))
        dims = out_batch[len(out_batch) - rank :]
        return tuple(1 if draw(st.integers(0, 2)) == 0 else d for d in dims)

    lb, rb = operand(), operand()
    a, c = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    k = draw(st.one_of(st.integers(1, 12), st.integers(100, 500)))
    adj_x, adj_y = draw(st.booleans()), draw(st.booleans())
    lhs = lb + ((k, a) if adj_x else (a, k))
    rhs = rb + ((c, k) if adj_y else (k, c))
    return lhs, rhs, np.broadcast_shapes(lb, rb) + (a, c), adj_x, adj_y


@st.composite
def bmm_case(draw, path):
    lt, rt, ot = PATHS[path]
    lhs_shape, rhs_shape, out_shape, adj_x, adj_y = draw(bmm_shapes())
    k = lhs_shape[-2] if adj_x else lhs_shape[-1]
    rng = np.random.default_rng(draw(seeds))
    const_rhs = draw(st.booleans())
    opts = {"adj_x": adj_x, "adj_y": adj_y}
    if lt == F32 and rt == F32:
        lhs = rng.standard_normal(lhs_shape).astype(F32)
        rhs = rng.standard_normal(rhs_shape).astype(F32)
        ins, out_q = [T(lhs_shape), T.const(rhs) if const_rhs else T(rhs_shape)], None
    elif lt == F32:  # hybrid
        asym = path == "bmm-hybrid-asymmetric" or (path == "bmm-hybrid-per-channel" and draw(st.booleans()))
        opts["asymmetric_quantize_inputs"] = asym
        lhs = (rng.standard_normal(lhs_shape) * 10.0 ** draw(st.floats(-3, 3))).astype(F32)
        if draw(st.booleans()):
            lhs = np.abs(lhs)
        rhs = rng.integers(-128, 128, rhs_shape).astype(I8)
        if path == "bmm-hybrid-per-channel":
            c = out_shape[-1]
            if c == 1:
                assume(False)  # one scale is per-tensor
            scales = (10.0 ** draw(st.floats(-4, 0)) * 10.0 ** rng.uniform(-2, 2, c)).astype(F32)
            q = quant(scales, np.zeros(c, int), quantized_dimension=len(rhs_shape) - (2 if adj_y else 1))
        else:
            q = quant(float(np.float32(10.0 ** draw(st.floats(-4, 0)))), 0)
        if asym:
            # LiteRT computes the row sums of extended rhs dims 1 and 2 only: a 5-D rhs whose first dim is
            # not 1 reads uninitialized sums (documented in batch_matmul.py)
            assume(len(rhs_shape) < 5 or rhs_shape[0] == 1)
        ins, out_q = [T(lhs_shape), T.const(rhs, q=q) if const_rhs else T(rhs_shape, I8, q=q)], None
    else:
        (llo, lhi), (rlo, rhi) = int_range(lt), int_range(rt)
        zl = 0 if I16 in (lt, rt) or ot == I32 else draw(st.integers(llo, lhi))
        zr = 0 if I16 in (lt, rt) or ot == I32 else draw(st.integers(rlo, rhi))
        zo = draw(st.integers(-128, 127)) if ot == I8 else 0
        regime = draw(st.sampled_from(["typical", "typical", "ties", "wide"]))
        lhs = rng.integers(llo, lhi + 1, lhs_shape)
        rhs = rng.integers(rlo, rhi + 1, rhs_shape)
        if regime == "ties":  # power-of-two scales and small values: exact .5 products
            s_l, s_r = 2.0 ** draw(st.integers(-20, 2)), 2.0 ** draw(st.integers(-12, 2))
            s_o = s_l * s_r * 2.0 ** draw(st.integers(1, 3))
            lhs = np.clip(zl + rng.integers(-3, 4, lhs_shape), llo, lhi)
            rhs = np.clip(zr + rng.integers(-3, 4, rhs_shape), rlo, rhi)
        else:
            s_l = float(np.float32(10.0 ** draw(st.floats(-8, 2))))
            s_r = float(np.float32(10.0 ** draw(st.floats(-8, 2))))
            typical = np.sqrt(k) * max(abs(llo), lhi) * max(abs(rlo), rhi) / 2
            spread = draw(st.floats(-1.5, 1.0)) if regime == "typical" else draw(st.floats(-6, 6))
            s_o = s_l * s_r * typical / int_range(ot)[1] * 10.0**spread
            if ot == I16:  # a multiplier >= 2^14 is undefined behaviour in LiteRT's int64 requantization
                assume(float(np.float32(s_l) * np.float32(s_r)) / float(np.float32(s_o)) < 2.0**13)
        lhs, rhs = lhs.astype(lt), rhs.astype(rt)
        out_q = None if ot == I32 else quant(float(np.float32(s_o)), zo)
        ins = [
            T(lhs_shape, lt, q=quant(s_l, zl) if ot != I32 else quant(0.5, 0)),
            (
                T.const(rhs, q=quant(s_r, zr) if ot != I32 else quant(0.25, 0))
                if const_rhs
                else T(rhs_shape, rt, q=quant(s_r, zr) if ot != I32 else quant(0.25, 0))
            ),
        ]
    model = single_op_model("BATCH_MATMUL", ins, [T(out_shape, ot, q=out_q)], opts)
    return model, ([lhs] if const_rhs else [lhs, rhs]), k


@pytest.mark.parametrize("path", list(PATHS))
@given(data=st.data())
def test_batch_matmul(path, data):
    model, inputs, k = data.draw(bmm_case(path))
    if path == "bmm-float32":
        check_both(model, inputs, rtol=TOLERANCE["float32"] * k)
    elif PATHS[path][0] == F32:
        check_both(model, inputs, rtol=TOLERANCE["hybrid"])
    else:
        check_both(model, inputs)


def test_batch_matmul_hybrid_row_scale_indexing():
    """LiteRT's hybrid kernel looks up a row's scaling factor at sum_i b_i * rows + a over the batch dims the
    lhs does not broadcast: right for one batch dim, wrong for lhs [2, 3, A, K] with a rank-2 rhs. We match the
    oracle, which here differs from the same rows computed as one [6, A, K] batch."""
    rng = np.random.default_rng(3)
    lhs = rng.standard_normal((2, 3, 4, 5)).astype(F32)
    lhs *= np.arange(1, 25, dtype=F32).reshape(2, 3, 4, 1)  # every row its own scale
    rhs = rng.integers(-127, 128, (5, 6)).astype(I8)
    for asym in (False, True):
        opts = {"asymmetric_quantize_inputs": asym}
        model = single_op_model("BATCH_MATMUL", [T(lhs.shape), T.const(rhs, q=quant(0.02, 0))], [T((2, 3, 4, 6))], opts)
        ours, ref = run_ours(model, [lhs])[0], run_litert(model, [lhs])[0]
        np.testing.assert_array_equal(ours, ref)
        flat = single_op_model("BATCH_MATMUL", [T((6, 4, 5)), T.const(rhs, q=quant(0.02, 0))], [T((6, 4, 6))], opts)
        ref_flat = run_litert(flat, [lhs.reshape(6, 4, 5)])[0].reshape(2, 3, 4, 6)
        np.testing.assert_array_equal(ours[0, 0], ref_flat[0, 0])  # batch (0, 0): indices agree
        assert not np.array_equal(ours[1], ref_flat[1])  # batch (1, *): other rows' scales


def test_batch_matmul_sse_row_sums():
    """Asymmetric hybrid with deep rows of large weights: LiteRT's x86 row sums wrap in int16 lanes."""
    rng = np.random.default_rng(4)
    k = 4100
    rhs = np.full((k, 3), 127, I8)
    rhs[:, 1] = -128
    rhs[:, 2] = rng.integers(-128, 128, k)
    lhs = np.abs(rng.standard_normal((2, k))).astype(F32)
    model = single_op_model(
        "BATCH_MATMUL",
        [T(lhs.shape), T.const(rhs, q=quant(0.001, 0))],
        [T((2, 3))],
        {"asymmetric_quantize_inputs": True},
    )
    check_both(model, [lhs])


def test_batch_matmul_int32_wrap():
    """int8 x int8 -> int32 sums raw products in an int32 that wraps: 140000 * 16384 > 2^31."""
    k = 140000
    lhs = np.full((1, k), -128, I8)
    rhs = np.full((k, 2), -128, I8)
    rhs[: k // 3, 1] = 127
    model = single_op_model(
        "BATCH_MATMUL", [T((1, k), I8, q=quant(0.5, 0)), T.const(rhs, q=quant(0.25, 0))], [T((1, 2), I32)], {}
    )
    ours = check_both(model, [lhs])
    assert ours[0][0, 0] == np.int32(np.int64(k * 16384) - 2**32)


def test_batch_matmul_int8_wrap_requantized():
    """The same wrap ahead of the int8 requantization."""
    k = 70000
    lhs = np.full((1, k), 127, I8)
    rhs = np.full((k, 2), 127, I8)
    model = single_op_model(
        "BATCH_MATMUL",
        [T((1, k), I8, q=quant(0.5, -128)), T.const(rhs, q=quant(0.25, -128))],
        [T((1, 2), I8, q=quant(2.0**20, 3))],
        {},
    )
    check_both(model, [lhs])


@pytest.mark.parametrize(("s_out", "table"), [(31.0, True), (33.0, False)])
def test_batch_matmul_int8_requantize_table(s_out, table):
    """int8 output through RequantizeTable (the table of every unsaturated accumulator) when it has at most
    TABLE_MAX entries, and through the Requantizer just beyond (a larger output scale: a longer table): both
    equal BUILTIN_REF on accumulators spanning the clamp on both sides."""
    rng = np.random.default_rng(5)
    shape_l, shape_r = (2, 8, 16), (2, 16, 8)
    lhs = rng.integers(-128, 128, shape_l).astype(I8)
    rhs = rng.integers(-128, 128, shape_r).astype(I8)
    lhs[0] = 127  # saturates high and low (rhs of both signs)
    ins = [T(shape_l, I8, q=quant(0.5, 3)), T(shape_r, I8, q=quant(0.25, -2))]
    model = single_op_model("BATCH_MATMUL", ins, [T((2, 8, 8), I8, q=quant(s_out, 5))], {})
    check_both(model, [lhs, rhs])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    op = it._subgraphs[0].steps_nodes[0][1]
    assert (op.table is not None) == table
    # the accumulator range where the output is not clamped: 255 * s_out / (0.5 * 0.25) values
    assert (255 * s_out / 0.125 < TABLE_MAX) == table


def test_batch_matmul_int8_left_shift_wraps_past_the_table():
    """A real output multiplier of 100 (a left shift of 7) over accumulators up to 300 * 255^2: LiteRT's MBQM shifts
    them left in int32 and wraps (-128 where the unwrapped product would give 127). No RequantizeTable there (its
    monotonicity fails); equal to BUILTIN_REF."""
    k = 300
    ins = [T((1, 2, k), I8, q=quant(1.0, -128)), T((1, k, 3), I8, q=quant(1.0, -128))]
    model = single_op_model("BATCH_MATMUL", ins, [T((1, 2, 3), I8, q=quant(0.01, 0))], {})
    lhs = np.full((1, 2, k), 127, I8)
    lhs[0, 1, :] = -100
    rhs = np.full((1, k, 3), 127, I8)
    rhs[0, :, 1] = 100
    rhs[0, :, 2] = -128
    np.testing.assert_array_equal(run_ours(model, [lhs, rhs])[0], run_litert(model, [lhs, rhs])[0])


@pytest.mark.parametrize("zo", [-1000, 1000])
def test_batch_matmul_int8_zero_point_beyond_the_accumulators(zo):
    """A constant rhs of column sums up to 1 (accumulators within 128) and an output zero point far outside int8:
    every output saturates; prepare builds a table of the bound's end (it failed on an empty range), equal to
    BUILTIN_REF."""
    rhs = np.zeros((4, 5), I8)
    rhs[0, 0] = 1
    lhs = np.random.default_rng(1).integers(-128, 128, (2, 3, 4)).astype(I8)
    ins = [T((2, 3, 4), I8, q=quant(0.5, 0)), T.const(rhs, I8, q=quant(0.5, 0))]
    model = single_op_model("BATCH_MATMUL", ins, [T((2, 3, 5), I8, q=quant(0.25, zo))], {})
    np.testing.assert_array_equal(run_ours(model, [lhs])[0], run_litert(model, [lhs])[0])


def test_requantize_table_is_requantize():
    """RequantizeTable gives litert_py.quant.requantize on every accumulator up to the bound (exhaustively, with
    tables cut at -bound / bound, zero points at both ends, right and left shifts)."""
    built = 0
    for real, zo, bound in [(0.0069, 10, 40000), (0.3, -128, 3000), (0.3, 127, 3000), (1.7, 0, 500), (1e-4, 0, 9000)]:
        m, shift = quantize_multiplier(real)
        acc = np.arange(-bound, bound + 1)
        table = RequantizeTable.build(m, shift, zo, -128, 127, bound, acc.shape)
        if table is None:
            continue
        built += 1
        out = np.empty(acc.shape, I8)
        table(acc.astype(np.float32), out)
        np.testing.assert_array_equal(out, requantize(acc.astype(np.int64), m, shift, zo, -128, 127))
    assert built == 5
    assert RequantizeTable.build(*quantize_multiplier(1e-6), 0, -128, 127, 2.0**24, (3,)) is None  # too long


def test_requantize_table_float32_extremes():
    """float32 accumulators at the float32 GEMM's bound 2^24 (the table's float32 subtraction: differences beyond
    2^24 round, and must still clip to the table's ends), against litert_py.quant.requantize."""
    bound = 1 << 24
    edge = np.array([bound, bound - 1, bound - 3, bound - 2**20 - 1, 2**23 + 1])
    acc = np.concatenate([edge, -edge, np.arange(-300, 301)])
    for real, zo in [(1.7, 0), (0.3, -128), (0.3, 127), (0.0069, 10)]:
        m, shift = quantize_multiplier(real)
        table = RequantizeTable.build(m, shift, zo, -128, 127, bound, acc.shape)
        assert table is not None and table.first32.dtype == np.float32
        out = np.empty(acc.shape, I8)
        table(acc.astype(np.float32), out)
        np.testing.assert_array_equal(out, requantize(acc.astype(np.int64), m, shift, zo, -128, 127))


# -- error paths ----------------------------------------------------------------------------------------------


def _model(lhs_shape, rhs_shape, lt=F32, rt=F32, ot=F32, lq=None, rq=None, oq=None, out_shape=(1, 1), **opts):
    return single_op_model(
        "BATCH_MATMUL", [T(lhs_shape, lt, q=lq), T(rhs_shape, rt, q=rq)], [T(out_shape, ot, q=oq)], opts
    ), [np.zeros(lhs_shape, lt), np.zeros(rhs_shape, rt)]


Q = quant(0.1, 0)
#: models LiteRT rejects at prepare too
REJECTED_BY_BOTH = {
    "bmm-mismatched-depths": lambda: _model((2, 3), (4, 5)),
    "bmm-mismatched-depths-adj": lambda: _model((2, 3), (2, 5), adj_x=True, adj_y=True),
    "bmm-batch-not-broadcastable": lambda: _model((2, 3, 4), (3, 4, 5)),
    "bmm-rank-6": lambda: _model((1, 1, 1, 1, 2, 3), (3, 4)),
    "bmm-rank-1": lambda: _model((3,), (3, 4)),
    "bmm-int16-zero-point": lambda: _model((2, 3), (3, 4), I16, I16, I16, quant(0.1, 2), Q, Q),
    "bmm-uint8": lambda: _model((2, 3), (3, 4), np.uint8, np.uint8, np.uint8, Q, Q, Q),
    "bmm-float-int16": lambda: _model((2, 3), (3, 4), F32, I16, F32, None, Q),
    "bmm-int8-int16": lambda: _model((2, 3), (3, 4), I8, I16, I8, Q, Q, Q),
}

#: models LiteRT accepts and then writes the wrong element type into the output: refused at prepare.
REJECTED_BY_US = {
    "bmm-int8-to-int16": lambda: _model((2, 3), (3, 4), I8, I8, I16, Q, Q, Q),
    "bmm-int16-to-int32": lambda: _model((2, 3), (3, 4), I16, I16, I32, Q, Q, Q),
    "bmm-float-to-int8": lambda: _model((2, 3), (3, 4), F32, F32, I8, oq=Q),
    "bmm-hybrid-scales-on-wrong-dim": lambda: _model(
        (2, 3), (3, 4), F32, I8, F32, None, quant([0.1, 0.2, 0.3], [0] * 3, quantized_dimension=0)
    ),
}


@pytest.mark.parametrize("case", list(REJECTED_BY_BOTH))
def test_batch_matmul_rejected(case):
    model, inputs = REJECTED_BY_BOTH[case]()
    with pytest.raises(PrepareError):
        run_ours(model, inputs)
    with pytest.raises((RuntimeError, ValueError)):
        run_litert(model, inputs)


@pytest.mark.parametrize("case", list(REJECTED_BY_US))
def test_batch_matmul_rejected_where_litert_misreads(case):
    model, inputs = REJECTED_BY_US[case]()
    with pytest.raises(PrepareError):
        run_ours(model, inputs)


@pytest.mark.parametrize("real", [200.0, 3000.0, 16000.0], ids=["shift-8", "shift-12", "shift-14"])
def test_batch_matmul_int16_large_multiplier(real):
    """Output multipliers >= 2^7 (shift 8..14) in the int64 MultiplyByQuantizedMultiplier (well defined in the
    release build; litert_py.quant's helper stops at shift 7)."""
    rng = np.random.default_rng(int(real))
    lhs = rng.integers(-3, 4, (2, 3, 5)).astype(I16)
    rhs = rng.integers(-3, 4, (5, 4)).astype(I8)
    model = single_op_model(
        "BATCH_MATMUL",
        [T(lhs.shape, I16, q=quant(0.5, 0)), T.const(rhs, q=quant(0.25, 0))],
        [T((2, 3, 4), I16, q=quant(0.125 / real, 0))],
        {},
    )
    check_both(model, [lhs])


@pytest.mark.parametrize(
    ("kind", "out_dtype", "reshaped"),
    [
        ("int8", I8, (1, 32, 4, 8)),  # the table path (an attention's context, heads merged back)
        ("int8", I8, (2, 64, 8)),
        ("int32", I32, (4, 256)),
    ],
)
def test_reshape_after_batch_matmul_is_absorbed(kind, out_dtype, reshaped):
    """BATCH_MATMUL -> RESHAPE: the product stores into the reshape's output (fuse_feeding drops the copy), against
    BUILTIN_REF over several invokes."""
    from litert_py.schema.builder import ModelBuilder
    from litert_py.schema.builder import quant as bquant
    from tests.oracle import oracle

    b = ModelBuilder()
    x = b.input("x", (1, 4, 32, 16), I8, quantization=bquant(0.05, 3))
    y = b.input("y", (1, 4, 16, 8), I8, quantization=bquant(0.04, -2))
    q = bquant(0.05 * 0.04 * 40, 5) if kind == "int8" else bquant(0.05 * 0.04, 0)
    z = b.tensor("z", (1, 4, 32, 8), out_dtype, quantization=q)
    b.op("BATCH_MATMUL", [x, y], [z], {"adj_x": False, "adj_y": False})
    r = b.tensor("r", reshaped, out_dtype, quantization=q)
    b.op("RESHAPE", [z, b.const("shape", np.array(reshaped, np.int32))], [r])
    b.output(r)
    model = b.build()
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model)
    rng = np.random.default_rng(4)
    for it in (theirs, ours):
        it.allocate_tensors()
    assert [type(op).__name__ for _, op in ours._subgraphs[0].steps_nodes] == ["BatchMatMulQuantized"]
    for _ in range(4):
        feeds = [rng.integers(-128, 128, s).astype(I8) for s in ((1, 4, 32, 16), (1, 4, 16, 8))]
        results = []
        for it in (ours, theirs):
            for d, v in zip(it.get_input_details(), feeds):
                it.set_tensor(d["index"], v)
            it.invoke()
            results.append(it.get_tensor(it.get_output_details()[0]["index"]))
        assert results[0].shape == tuple(reshaped)
        np.testing.assert_array_equal(*results)
        assert len(np.unique(results[1])) > 10
