"""StableHLO data movement and contraction ops (litert_py/ops/stablehlo/structured.py), which ai-edge-litert 2.3.0
does not register: checked against formulations written here, element by element."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from litert_py.schema.builder import ModelBuilder
from tests.oracle import T, run_ours, single_op_model

from ._models import _beyond_values, _shape, _wrap

# --------------------------------------------------------------------------------------------------------
# Beyond LiteRT: StableHLO data movement and dot_general against formulations written here
# --------------------------------------------------------------------------------------------------------

STRUCT_DTYPES = st.sampled_from([np.float32, np.int8, np.int64, np.bool_])


def _loop_ref(out_shape, fn, dtype):
    """An array built element by element from ``fn(index tuple)``: the plainest formulation there is."""
    out = np.empty(out_shape, dtype)
    for ix in np.ndindex(*out_shape):
        out[ix] = fn(ix)
    return out


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_transpose_reshape(data, dtype):
    shape = _shape(data, 1, 4, 3, 1)
    x = _beyond_values(data, shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))), label="perm")
    out_shape = [shape[p] for p in perm]
    (out,) = run_ours(
        single_op_model("STABLEHLO_TRANSPOSE", [T(shape, dtype)], [T(out_shape, dtype)], dict(permutation=perm)), [x]
    )
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(ix[perm.index(d)] for d in range(len(shape)))], dtype)
    )
    flat = [int(np.prod(shape))]
    (r,) = run_ours(single_op_model("STABLEHLO_RESHAPE", [T(shape, dtype)], [T(flat, dtype)]), [x])
    np.testing.assert_array_equal(r, [x[ix] for ix in np.ndindex(*shape)])  # row-major order


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_slice(data, dtype):
    shape = _shape(data, 1, 3, 5, 1)
    x = _beyond_values(data, shape, dtype)
    start = [data.draw(st.integers(0, n), label="start") for n in shape]
    limit = [data.draw(st.integers(s, n), label="limit") for s, n in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3), label="stride") for _ in shape]
    out_shape = [len(range(s, lim, k)) for s, lim, k in zip(start, limit, strides)]
    model = single_op_model(
        "STABLEHLO_SLICE",
        [T(shape, dtype)],
        [T(out_shape, dtype)],
        dict(start_indices=start, limit_indices=limit, strides=strides),
    )
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(s + i * k for i, s, k in zip(ix, start, strides))], dtype)
    )


@given(data=st.data(), dtype=STRUCT_DTYPES, n=st.integers(1, 3))
def test_beyond_concatenate(data, dtype, n):
    shape = _shape(data, 1, 3, 3, 0)
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    parts = []
    for _ in range(n):
        s = list(shape)
        s[d] = data.draw(st.integers(0, 3), label="len")
        parts.append(_beyond_values(data, s, dtype))
    out_shape = list(shape)
    out_shape[d] = sum(p.shape[d] for p in parts)
    model = single_op_model(
        "STABLEHLO_CONCATENATE", [T(p.shape, dtype) for p in parts], [T(out_shape, dtype)], dict(dimension=d)
    )
    (out,) = run_ours(model, parts)
    offsets = np.cumsum([0] + [p.shape[d] for p in parts])

    def elem(ix):
        k = int(np.searchsorted(offsets, ix[d], side="right")) - 1
        return parts[k][ix[:d] + (ix[d] - offsets[k],) + ix[d + 1 :]]

    np.testing.assert_array_equal(out, _loop_ref(out_shape, elem, dtype))


@given(data=st.data(), dtype=STRUCT_DTYPES)
def test_beyond_broadcast_in_dim(data, dtype):
    out_shape = _shape(data, 1, 4, 3, 1)
    k = data.draw(st.integers(0, len(out_shape)), label="operand rank")
    dims = data.draw(st.permutations(range(len(out_shape))), label="dims")[:k]
    shape = [out_shape[d] if data.draw(st.booleans(), label="keep") else 1 for d in dims]
    x = _beyond_values(data, shape, dtype)
    model = single_op_model(
        "STABLEHLO_BROADCAST_IN_DIM", [T(shape, dtype)], [T(out_shape, dtype)], dict(broadcast_dimensions=dims)
    )
    (out,) = run_ours(model, [x])
    np.testing.assert_array_equal(
        out, _loop_ref(out_shape, lambda ix: x[tuple(0 if shape[i] == 1 else ix[d] for i, d in enumerate(dims))], dtype)
    )


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32, np.int64]))
def test_beyond_iota(data, dtype):
    out_shape = _shape(data, 1, 3, 4, 1)
    d = data.draw(st.integers(0, len(out_shape) - 1), label="dim")
    (out,) = run_ours(single_op_model("STABLEHLO_IOTA", [], [T(out_shape, dtype)], dict(iota_dimension=d)), [])
    np.testing.assert_array_equal(out, _loop_ref(out_shape, lambda ix: ix[d], dtype))


@given(data=st.data(), dtype=STRUCT_DTYPES, update=st.booleans())
def test_beyond_dynamic_slice(data, dtype, update):
    shape = _shape(data, 1, 3, 4, 1)
    x = _beyond_values(data, shape, dtype)
    sizes = [data.draw(st.integers(0, n), label="size") for n in shape]
    starts = [np.int32(data.draw(st.integers(-2, n + 2), label="start")) for n in shape]
    clamped = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes)]
    scalars = [T((), np.int32) for _ in shape]
    if update:
        u = _beyond_values(data, sizes, dtype)
        model = single_op_model(
            "STABLEHLO_DYNAMIC_UPDATE_SLICE", [T(shape, dtype), T(sizes, dtype)] + scalars, [T(shape, dtype)]
        )
        (out,) = run_ours(model, [x, u] + starts)

        def elem(ix):
            rel = [i - c for i, c in zip(ix, clamped)]
            inside = all(0 <= r < k for r, k in zip(rel, sizes))
            return u[tuple(rel)] if inside else x[ix]

        np.testing.assert_array_equal(out, _loop_ref(shape, elem, dtype))
    else:
        model = single_op_model(
            "STABLEHLO_DYNAMIC_SLICE", [T(shape, dtype)] + scalars, [T(sizes, dtype)], dict(slice_sizes=sizes)
        )
        (out,) = run_ours(model, [x] + starts)
        np.testing.assert_array_equal(
            out, _loop_ref(sizes, lambda ix: x[tuple(i + c for i, c in zip(ix, clamped))], dtype)
        )


def _free_in_order(perm, free) -> list:
    perm, free = list(perm), set(free)
    slots = [k for k, v in enumerate(perm) if v in free]
    for k, v in zip(slots, sorted(perm[k] for k in slots)):
        perm[k] = v
    return perm


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_dot_general(data, dtype):
    nb, nc = data.draw(st.integers(0, 2), label="batch dims"), data.draw(st.integers(0, 2), label="contracting")
    nlf, nrf = data.draw(st.integers(0, 2), label="lhs free"), data.draw(st.integers(0, 2), label="rhs free")
    size = st.integers(1, 3)
    b = [data.draw(size) for _ in range(nb)]
    c = [data.draw(size) for _ in range(nc)]
    lf, rf = [data.draw(size) for _ in range(nlf)], [data.draw(size) for _ in range(nrf)]
    # lay the dims out in a drawn order in each operand
    lperm = data.draw(st.permutations(range(nb + nlf + nc)), label="lhs order")
    rperm = data.draw(st.permutations(range(nb + nc + nrf)), label="rhs order")
    # free dims appear in the result in their operand order (spec): keep them in order within each layout
    lperm, rperm = _free_in_order(lperm, range(nb, nb + nlf)), _free_in_order(rperm, range(nb + nc, nb + nc + nrf))
    lsizes, rsizes = b + lf + c, b + c + rf
    lshape, rshape = [lsizes[i] for i in lperm], [rsizes[i] for i in rperm]
    pos_l, pos_r = {r: k for k, r in enumerate(lperm)}, {r: k for k, r in enumerate(rperm)}
    lb, lc = [pos_l[i] for i in range(nb)], [pos_l[nb + nlf + i] for i in range(nc)]
    rb, rc = [pos_r[i] for i in range(nb)], [pos_r[nb + i] for i in range(nc)]
    x = (_beyond_values(data, lshape, dtype) % 7).astype(dtype)
    y = (_beyond_values(data, rshape, dtype) % 7).astype(dtype)
    out_shape = b + lf + rf
    model = single_op_model(
        "STABLEHLO_DOT_GENERAL",
        [T(lshape, dtype), T(rshape, dtype)],
        [T(out_shape, dtype)],
        dict(
            lhs_batching_dimensions=lb,
            rhs_batching_dimensions=rb,
            lhs_contracting_dimensions=lc,
            rhs_contracting_dimensions=rc,
        ),
    )
    (out,) = run_ours(model, [x, y])

    def elem(ix):
        bi, li, ri = ix[:nb], ix[nb : nb + nlf], ix[nb + nlf :]
        total = 0.0
        for ci in np.ndindex(*c):
            lr, rr = bi + li + ci, bi + ci + ri  # logical index -> physical through the permutations
            total += float(x[tuple(lr[i] for i in lperm)]) * float(y[tuple(rr[i] for i in rperm)])
        return total

    np.testing.assert_allclose(out, _loop_ref(out_shape, elem, np.float64), rtol=1e-6)


def _region_model(op, inputs, outputs, options, regions):
    """``op`` over graph inputs ``inputs`` [(shape, dtype)], then one subgraph per region: (arg types, body op,
    body options, result dtype) with scalar arguments."""
    b = ModelBuilder()
    ins = [b.input(f"x{k}", s, d) for k, (s, d) in enumerate(inputs)]
    outs = [b.tensor(f"o{k}", s, d) for k, (s, d) in enumerate(outputs)]
    b.op(op, ins, outs, options)
    b.output(*outs)
    for args, body, opts, res in regions:
        b.subgraph("region")
        a = [b.input(f"a{k}", (), d) for k, d in enumerate(args)]
        r = b.tensor("r", (), res)
        b.op(body, a[:2], [r], opts)
        b.output(r)
    return b.build()


REDUCE_BODIES = {
    "STABLEHLO_ADD": lambda v: sum(v),
    "STABLEHLO_MAXIMUM": max,
    "STABLEHLO_MINIMUM": min,
    "STABLEHLO_MULTIPLY": lambda v: int(np.prod(np.array(v, dtype=object))),
}


@given(data=st.data(), body=st.sampled_from(sorted(REDUCE_BODIES)), dtype=st.sampled_from([np.int32, np.int8]))
def test_beyond_reduce(data, body, dtype):
    shape = _shape(data, 1, 3, 3, 0)
    x = _beyond_values(data, shape, dtype)
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)), label="dims"))
    init = _beyond_values(data, (), dtype)
    out_shape = [n for d, n in enumerate(shape) if d not in dims]
    b = ModelBuilder()
    xi = b.input("x", shape, dtype)
    o = b.tensor("o", out_shape, dtype)
    b.op(
        "STABLEHLO_REDUCE",
        [xi, b.const("init", np.asarray(init, dtype))],
        [o],
        dict(dimensions=dims, body_subgraph_index=1),
    )
    b.output(o)
    b.subgraph("body")
    a, c = b.input("a", (), dtype), b.input("b", (), dtype)
    r = b.tensor("r", (), dtype)
    b.op(body, [a, c], [r])
    b.output(r)
    (out,) = run_ours(b.build(), [x])

    def elem(ix):
        vals = [int(init)]
        for full in np.ndindex(*shape):
            if tuple(full[d] for d in range(len(shape)) if d not in dims) == ix:
                vals.append(int(x[full]))
        return _wrap(REDUCE_BODIES[body](vals), dtype)

    np.testing.assert_array_equal(out, _loop_ref(out_shape, elem, dtype))


@given(data=st.data(), descending=st.booleans(), dtype=st.sampled_from([np.float32, np.int8]))
def test_beyond_sort(data, descending, dtype):
    shape = _shape(data, 1, 3, 4, 1)
    d = data.draw(st.integers(0, len(shape) - 1), label="dim")
    keys = (_beyond_values(data, shape, dtype) % 4).astype(dtype)  # many ties: stability matters
    payload = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    model = _region_model(
        "STABLEHLO_SORT",
        [(shape, dtype), (shape, np.int32)],
        [(shape, dtype), (shape, np.int32)],
        dict(dimension=d, is_stable=True, comparator_subgraph_index=1),
        [
            (
                (dtype, dtype, np.int32, np.int32),
                "STABLEHLO_COMPARE",
                dict(comparison_direction=3 if descending else 5),
                np.bool_,
            )
        ],
    )
    k_out, p_out = run_ours(model, [keys, payload])
    for line in np.ndindex(*[n for k, n in enumerate(shape) if k != d]):
        sel = line[:d] + (slice(None),) + line[d:]
        pairs = sorted(zip(keys[sel].tolist(), payload[sel].tolist()), key=lambda kv: -kv[0] if descending else kv[0])
        np.testing.assert_array_equal(k_out[sel], [k for k, _ in pairs])  # sorted() is stable
        np.testing.assert_array_equal(p_out[sel], [p for _, p in pairs])


def test_beyond_while_counts_and_doubles():
    b = ModelBuilder()
    i, x = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    oi, ox = b.tensor("oi", (), np.int32), b.tensor("ox", (2, 3), np.float32)
    b.op("STABLEHLO_WHILE", [i, x], [oi, ox], dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(oi, ox)
    b.subgraph("cond")
    ci, _ = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    c = b.tensor("c", (), np.bool_)
    b.op("STABLEHLO_COMPARE", [ci, b.const("three", np.int32(3))], [c], dict(comparison_direction=5))
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", (), np.int32), b.input("x", (2, 3), np.float32)
    i2, x2 = b.tensor("i2", (), np.int32), b.tensor("x2", (2, 3), np.float32)
    b.op("STABLEHLO_ADD", [bi, b.const("one", np.int32(1))], [i2])
    b.op("STABLEHLO_ADD", [bx, bx], [x2])
    b.output(i2, x2)
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    for start, expected_doublings in ((0, 3), (2, 1), (5, 0)):
        oi_, ox_ = run_ours(b.build(), [np.int32(start), x0])
        assert int(oi_) == max(start, 3)
        np.testing.assert_array_equal(ox_, x0 * 2.0**expected_doublings)


@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32]))
def test_beyond_convolution(data, dtype):
    ns = data.draw(st.integers(1, 2), label="spatial dims")
    small = st.integers(1, 3)
    groups = data.draw(st.integers(1, 2), label="groups")
    n, ic, ocg = data.draw(small), data.draw(small), data.draw(small)
    sp = [data.draw(st.integers(1, 4)) for _ in range(ns)]
    ks = [data.draw(small) for _ in range(ns)]
    strides, ldil, rdil = ([data.draw(st.integers(1, 2)) for _ in range(ns)] for _ in range(3))
    pad = [data.draw(st.integers(-1, 2)) for _ in range(2 * ns)]
    padded = [(s - 1) * d + 1 + pad[2 * i] + pad[2 * i + 1] for i, (s, d) in enumerate(zip(sp, ldil))]
    osz = [(p - ((k - 1) * r + 1)) // s + 1 for p, k, r, s in zip(padded, ks, rdil, strides)]
    assume(all(m >= 1 for m in osz))
    c, oc = ic * groups, ocg * groups
    # logical layouts (N, C, S...), (O, I, K...), (N, O, S...) stored in drawn physical orders
    rank = ns + 2
    ip, kp, op = (data.draw(st.permutations(range(rank)), label=f"{w} layout") for w in ("in", "kernel", "out"))
    lx = (_beyond_values(data, [n, c, *sp], dtype) % 5).astype(dtype)
    lk = (_beyond_values(data, [oc, ic, *ks], dtype) % 3).astype(dtype)
    x, k = np.transpose(lx, np.argsort(ip)), np.transpose(lk, np.argsort(kp))  # logical axis j lives at ip[j]
    out_log = [n, oc, *osz]
    out_shape = [0] * rank
    for j, ax in enumerate(op):
        out_shape[ax] = out_log[j]
    opts = dict(
        window_strides=strides,
        padding=pad,
        lhs_dilation=ldil,
        rhs_dilation=rdil,
        input_batch_dimension=ip[0],
        input_feature_dimension=ip[1],
        input_spatial_dimensions=list(ip[2:]),
        kernel_output_feature_dimension=kp[0],
        kernel_input_feature_dimension=kp[1],
        kernel_spatial_dimensions=list(kp[2:]),
        output_batch_dimension=op[0],
        output_feature_dimension=op[1],
        output_spatial_dimensions=list(op[2:]),
        feature_group_count=groups,
        batch_group_count=1,
    )
    model = single_op_model(
        "STABLEHLO_CONVOLUTION", [T(x.shape, dtype), T(k.shape, dtype)], [T(out_shape, dtype)], opts
    )
    (out,) = run_ours(model, [x, k])

    def xval(b, ch, pos):  # the dilated, padded input by its definition
        idx = []
        for i, p in enumerate(pos):
            q = p - pad[2 * i]
            if q < 0 or q % ldil[i] or q // ldil[i] >= sp[i]:
                return 0
            idx.append(q // ldil[i])
        return int(lx[(b, ch, *idx)]) if dtype is np.int32 else float(lx[(b, ch, *idx)])

    def elem(ix):
        b, o_, ys = ix[0], ix[1], ix[2:]
        g = o_ // ocg
        total = 0
        for i in range(ic):
            for t in np.ndindex(*ks):
                pos = [y * s + tt * r for y, s, tt, r in zip(ys, strides, t, rdil)]
                total += xval(b, g * ic + i, pos) * lk[(o_, i, *t)].item()
        return total

    expected = np.transpose(_loop_ref(out_log, elem, np.float64), np.argsort(op))
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=1e-5)
