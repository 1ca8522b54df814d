"""Dashboard recipes: StableHLO ops with structure (LiteRT registers only a few of them: the rest can only be
``beyond``)."""

from __future__ import annotations

import numpy as np

from .cases import ALL, NONE, Const, Graph, In, Out, P, case, coarse_gen, i32, randv, recipe

# ----------------------------------------------------------------------------------------------
# StableHLO ops with structure (LiteRT registers only a few of them: the rest can only be `beyond`)
# ----------------------------------------------------------------------------------------------


@recipe("STABLEHLO_RESHAPE")
def stablehlo_reshape(p: P):
    return case(p.op, [p.x((2, 6))], [p.out((3, 4), same=True)])


@recipe("STABLEHLO_BROADCAST_IN_DIM")
def stablehlo_broadcast_in_dim(p: P):
    return [
        case(p.op, [p.x((3,))], [p.out((2, 3), same=True)], dict(broadcast_dimensions=[1]), label="rank-up"),
        case(
            p.op, [p.x((1, 3))], [p.out((3, 2, 4), same=True)], dict(broadcast_dimensions=[1, 0]), label="transposing"
        ),
    ]


@recipe("STABLEHLO_SLICE")
def stablehlo_slice(p: P):
    return case(
        p.op,
        [p.x((4, 6))],
        [p.out((2, 2), same=True)],
        dict(start_indices=[1, 0], limit_indices=[4, 6], strides=[2, 3]),
    )


@recipe("STABLEHLO_PAD")
def stablehlo_pad(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3)), p.const(0.5)],
            [p.out((4, 7), same=True)],
            dict(edge_padding_low=[1, 0], edge_padding_high=[0, 2], interior_padding=[1, 1]),
            label="interior",
        ),
        case(
            p.op,
            [p.x((3, 4)), p.const(0.0)],
            [p.out((2, 4), same=True)],
            dict(edge_padding_low=[-1, 1], edge_padding_high=[0, -1], interior_padding=[0, 0]),
            label="negative",
        ),
    ]


@recipe("STABLEHLO_IOTA")
def stablehlo_iota(p: P):
    return [case(p.op, [], [p.out((3, 4), same=True)], dict(iota_dimension=d), label=f"dim{d}") for d in (0, 1)]


@recipe("STABLEHLO_TRANSPOSE")
def stablehlo_transpose(p: P):
    return case(p.op, [p.x((2, 3, 4))], [p.out((3, 2, 4), same=True)], dict(permutation=[1, 0, 2]))


@recipe("STABLEHLO_DOT_GENERAL")
def stablehlo_dot_general(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3, 4)), p.x((2, 4, 5))],
            [p.out((2, 3, 5))],
            dict(
                lhs_batching_dimensions=[0],
                rhs_batching_dimensions=[0],
                lhs_contracting_dimensions=[2],
                rhs_contracting_dimensions=[1],
            ),
            label="batched",
        ),
        case(
            p.op,
            [p.x((3, 4)), p.x((5, 4))],
            [p.out((3, 5))],
            dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1]),
            label="matmul-transposed",
        ),
    ]


@recipe("STABLEHLO_GATHER")
def stablehlo_gather(p: P):
    return case(
        p.op,
        [p.x((3, 4)), i32([[0], [2]])],
        [p.out((2, 4), same=True)],
        dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]),
    )


@recipe("STABLEHLO_DYNAMIC_SLICE")
def stablehlo_dynamic_slice(p: P):
    starts = [In((), np.int32, gen=lambda rng: rng.integers(-1, 5, ())) for _ in range(2)]
    return case(p.op, [p.x((4, 5))] + starts, [p.out((2, 3), same=True)], dict(slice_sizes=[2, 3]))


@recipe("STABLEHLO_DYNAMIC_UPDATE_SLICE")
def stablehlo_dynamic_update_slice(p: P):
    starts = [In((), np.int32, gen=lambda rng: rng.integers(-1, 5, ())) for _ in range(2)]
    return case(p.op, [p.x((4, 5)), p.x((2, 3))] + starts, [p.out((4, 5), same=True)])


@recipe("STABLEHLO_CONVOLUTION")
def stablehlo_convolution(p: P):
    return case(
        p.op,
        [p.x((1, 5, 5, 3)), Const(randv(p, (3, 3, 3, 4), -0.5, 0.5))],
        [p.out((1, 5, 5, 4))],
        dict(
            window_strides=[1, 1],
            padding=[1, 1, 1, 1],
            lhs_dilation=[1, 1],
            rhs_dilation=[1, 1],
            input_batch_dimension=0,
            input_feature_dimension=3,
            input_spatial_dimensions=[1, 2],
            kernel_input_feature_dimension=2,
            kernel_output_feature_dimension=3,
            kernel_spatial_dimensions=[0, 1],
            output_batch_dimension=0,
            output_feature_dimension=3,
            output_spatial_dimensions=[1, 2],
            feature_group_count=1,
            batch_group_count=1,
        ),
    )


def _scalar_body(p: P, op: str, n_in: int = 2, out_dtype=None):
    def build(g: Graph, idx):
        return g.op(op, idx[:n_in], [Out((), out_dtype or p.dtype, p.qin() if out_dtype is None else None)])

    return build


@recipe("STABLEHLO_REDUCE")
def stablehlo_reduce(p: P):
    g = Graph()
    k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, "STABLEHLO_ADD"))
    o = g.op(
        p.op, [p.x((2, 3, 4)), p.const(0)], [p.out((2, 4), same=True)], dict(dimensions=[1], body_subgraph_index=k)
    )
    return g.case(o)


@recipe("STABLEHLO_REDUCE_WINDOW")
def stablehlo_reduce_window(p: P):
    cases = []
    for body, init in (("STABLEHLO_ADD", 0), ("STABLEHLO_MAXIMUM", -3)):
        g = Graph()
        k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, body))
        o = g.op(
            p.op,
            [p.x((1, 4, 5, 1)), p.const(init)],
            [p.out((1, 3, 2, 1), same=True)],
            dict(
                window_dimensions=[1, 2, 2, 1],
                window_strides=[1, 1, 2, 1],
                base_dilations=[1, 1, 1, 1],
                window_dilations=[1, 1, 1, 1],
                padding=[0, 0, 0, 0, 0, 0, 0, 0],
                body_subgraph_index=k,
            ),
        )
        cases.append(g.case(o, label=body.lower()))
    return cases


@recipe("STABLEHLO_SORT")
def stablehlo_sort(p: P):
    g = Graph()

    def comparator(g: Graph, idx):
        return g.op("STABLEHLO_COMPARE", idx, [Out((), np.bool_)], dict(comparison_direction=5))

    k = g.subgraph([p.out((), same=True)] * 2, comparator)
    o = g.op(
        p.op,
        [p.x((2, 5), gen=coarse_gen(p, (2, 5)))],
        [p.out((2, 5), same=True)],
        dict(dimension=1, is_stable=True, comparator_subgraph_index=k),
    )
    return g.case(o)


@recipe("STABLEHLO_WHILE")
def stablehlo_while(p: P):
    g = Graph()
    loop = [Out((), np.int32), p.out((2, 3), same=True)]

    def cond(g: Graph, idx):
        return g.op("STABLEHLO_COMPARE", [idx[0], i32(3)], [Out((), np.bool_)], dict(comparison_direction=5))

    def body(g: Graph, idx):
        (i,) = g.op("STABLEHLO_ADD", [idx[0], i32(1)], [Out((), np.int32)])
        (x,) = g.op("STABLEHLO_ADD", [idx[1], idx[1]], [p.out((2, 3), same=True)])
        return [i, x]

    c, b = g.subgraph(loop, cond), g.subgraph(loop, body)
    o = g.op(
        p.op,
        [In((), np.int32, gen=lambda rng: rng.integers(0, 4, ())), p.x((2, 3))],
        loop,
        dict(cond_subgraph_index=c, body_subgraph_index=b),
    )
    return g.case(o)


@recipe("STABLEHLO_SCATTER")
def stablehlo_scatter(p: P):
    g = Graph()
    k = g.subgraph([p.out((), same=True)] * 2, _scalar_body(p, "STABLEHLO_ADD"))
    o = g.op(
        p.op,
        [p.x((5, 3)), i32([[1], [3]]), p.x((2, 3))],
        [p.out((5, 3), same=True)],
        dict(
            update_window_dims=[1],
            inserted_window_dims=[0],
            scatter_dims_to_operand_dims=[0],
            index_vector_dim=1,
            update_computation_subgraph_index=k,
        ),
    )
    return g.case(o)


@recipe("STABLEHLO_COMPOSITE")
def stablehlo_composite(p: P):
    g = Graph()

    def decomposition(g: Graph, idx):
        return g.op("ADD", [idx[0], idx[0]], [p.out((2, 3))], dict(fused_activation_function=NONE))

    from flatbuffers import flexbuffers

    k = g.subgraph([p.out((2, 3), same=True)], decomposition)
    attrs = bytes(flexbuffers.Dumps({"factor": 2}))
    o = g.op(
        p.op,
        [p.x((2, 3))],
        [p.out((2, 3))],
        dict(
            name="test.double",
            decomposition_subgraph_index=k,
            composite_attributes=attrs,
            composite_attributes_format=0,
            version=1,
        ),
    )
    return g.case(o)


@recipe("STABLEHLO_CASE")
def stablehlo_case(p: P):
    # Operands after the branch index are passed to the branch (the IF convention); index out of range
    # picks the last branch, as in StableHLO.
    g = Graph()
    branches = []
    for op in ("STABLEHLO_ADD", "STABLEHLO_MULTIPLY"):

        def build(g: Graph, idx, op=op):
            return g.op(op, [idx[0], idx[0]], [p.out((2, 3))])

        branches.append(g.subgraph([p.out((2, 3), same=True)], build))
    o = g.op(
        p.op,
        [In((), np.int32, gen=lambda rng: rng.integers(0, 3, ())), p.x((2, 3))],
        [p.out((2, 3))],
        dict(branch_subgraph_indices=branches),
    )
    return g.case(o)


@recipe("STABLEHLO_RNG_BIT_GENERATOR", paths=("int32", "int64"), not_applicable=ALL)
def stablehlo_rng_bit_generator(p: P):
    state = Const(np.array([1, 2], np.uint64))
    return [
        case(p.op, [state], [Out((2,), np.uint64), Out((2, 3), p.dtype)], dict(algorithm=a), label=f"algorithm{a}")
        for a in (1, 2)
    ]


@recipe("STABLEHLO_CUSTOM_CALL", paths=ALL, not_applicable=())
def stablehlo_custom_call(p: P):
    # The callee is whatever the target name means to some backend: neither runtime has one to run.
    return case(p.op, [p.x((2, 3))], [p.out((2, 3))], dict(call_target_name="litert_py.test_target"))
