"""Dashboard recipes: control flow, resources, hashtables; recurrent ops."""

from __future__ import annotations

import numpy as np

from litert_py.schema.builder import quant

from .cases import ALL, QIN, RELU, TANH, TYPE, WORDS, Case, Const, Graph, In, Out, P, Var, case, i32, randv, recipe

# ----------------------------------------------------------------------------------------------
# Control flow, resources, hashtables
# ----------------------------------------------------------------------------------------------


def _identity_branch(p: P, shape):
    def build(g: Graph, idx):
        return g.op("RESHAPE", [idx[0], i32(shape)], [p.out(shape, same=True)])

    return build


def _reverse_branch(p: P, shape):
    def build(g: Graph, idx):
        n = len(shape)
        begin, end, strides = i32([shape[0] - 1] + [0] * (n - 1)), i32([0] * n), i32([-1] + [1] * (n - 1))
        return g.op(
            "STRIDED_SLICE",
            [idx[0], begin, end, strides],
            [p.out(shape, same=True)],
            dict(begin_mask=0, end_mask=(1 << n) - 1),
        )

    return build


@recipe("IF")
def if_op(p: P):
    shape = (2, 3)
    g = Graph()
    then = g.subgraph([p.out(shape, same=True)], _identity_branch(p, shape))
    other = g.subgraph([p.out(shape, same=True)], _reverse_branch(p, shape))
    o = g.op(
        "IF",
        [In((), np.bool_), p.x(shape)],
        [p.out(shape, same=True)],
        dict(then_subgraph_index=then, else_subgraph_index=other),
    )
    return g.case(o)


@recipe("WHILE")
def while_op(p: P):
    shape = (2, 3)
    g = Graph()
    loop = [Out((), np.int32), p.out(shape, same=True)]

    def cond(g: Graph, idx):
        return g.op("LESS", [idx[0], i32(3)], [Out((), np.bool_)])

    def body(g: Graph, idx):
        (i,) = g.op("ADD", [idx[0], i32(1)], [Out((), np.int32)])
        (x,) = _reverse_branch(p, shape)(g, [idx[1]])
        return [i, x]

    c, b = g.subgraph(loop, cond), g.subgraph(loop, body)
    o = g.op(
        "WHILE",
        [In((), np.int32, gen=lambda rng: rng.integers(0, 4, ())), p.x(shape)],
        [Out((), np.int32), p.out(shape, same=True)],
        dict(cond_subgraph_index=c, body_subgraph_index=b),
    )
    return g.case(o)


@recipe("CALL")
def call(p: P):  # deprecated: no kernel in LiteRT, expected n/a
    g = Graph()
    k = g.subgraph([p.out((2, 3), same=True)], _identity_branch(p, (2, 3)))
    return g.case(g.op("CALL", [p.x((2, 3))], [p.out((2, 3), same=True)], dict(subgraph=k)))


def _variable_model(p: P, with_call_once: bool) -> Case:
    """VAR_HANDLE + READ_VARIABLE + ASSIGN_VARIABLE; with CALL_ONCE the variable is set by an init subgraph and
    each invoke returns the previous input, else each invoke assigns the input and reads it back."""
    shape = (2, 3)
    g = Graph()
    if with_call_once:

        def init(g: Graph, idx):
            h = g.resource()
            g.op("VAR_HANDLE", [], [h], dict(shared_name="v"))
            g.op("ASSIGN_VARIABLE", [h, p.const(p.rand(shape, -1, 1))], [])
            return []

        k = g.subgraph([], init)
        g.op("CALL_ONCE", [], [], dict(init_subgraph_index=k))
    x = g.add(p.x(shape))
    h = g.resource()
    g.op("VAR_HANDLE", [], [h], dict(shared_name="v"))
    if with_call_once:
        (y,) = g.op("READ_VARIABLE", [h], [p.out(shape, same=True)])
        g.op("ASSIGN_VARIABLE", [h, x], [])
    else:
        g.op("ASSIGN_VARIABLE", [h, x], [])
        (y,) = g.op("READ_VARIABLE", [h], [p.out(shape, same=True)])
    return g.case([y], label="call-once-init" if with_call_once else "assign-read")


@recipe("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
def variables(p: P):
    return [_variable_model(p, False), _variable_model(p, True)]


@recipe("CALL_ONCE")
def call_once(p: P):
    return _variable_model(p, True)


@recipe("HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE")
def hashtable(p: P):
    """A table filled by a CALL_ONCE init subgraph, then looked up: int64 -> string, string -> int64."""
    if p.path in ("int64", "string"):
        keys = np.array([3, 7, 11, 20]) if p.path == "int64" else np.array(WORDS[1:5], dtype=object)
    else:
        keys = randv(p, (4,))
    values = (
        np.array([b"three", b"seven", b"eleven", b"twenty"], dtype=object)
        if p.path != "string"
        else np.array([3, 7, 11, 20], np.int64)
    )
    vtype = np.bytes_ if p.path != "string" else np.int64
    default = np.array(b"?", dtype=object) if p.path != "string" else np.int64(-1)
    opts = dict(
        table_id=1, key_dtype=TYPE.get(p.path, 0), value_dtype=TYPE["string" if p.path != "string" else "int64"]
    )
    g = Graph()

    def init(g: Graph, idx):
        h = g.resource()
        g.op("HASHTABLE", [], [h], opts)
        g.op("HASHTABLE_IMPORT", [h, Const(keys), Const(values)], [])
        return []

    k = g.subgraph([], init)
    g.op("CALL_ONCE", [], [], dict(init_subgraph_index=k))
    h = g.resource()
    g.op("HASHTABLE", [], [h], opts)
    query = In(
        (5,),
        p.dtype,
        gen=lambda rng: np.concatenate(
            [keys[rng.integers(0, 4, 4)], keys[:0], randv(p, (1,)) if p.path != "int64" else [99]]
        ),
    )
    (found,) = g.op("HASHTABLE_FIND", [h, query, Const(default)], [Out((5,), vtype)])
    (size,) = g.op("HASHTABLE_SIZE", [h], [Out((1,), np.int64)])
    return g.case([found, size])


# ----------------------------------------------------------------------------------------------
# Recurrent ops (float and hybrid; the fully quantized LSTM needs intermediates and is not covered yet)
# ----------------------------------------------------------------------------------------------


def rnn_weight(p: P, shape):
    if p.path == "hybrid":
        return Const(p.rng.integers(-127, 128, shape).astype(np.int8), np.int8, quant(0.01, 0))
    return Const(randv(p, shape, -0.5, 0.5))


def rnn_inputs(p: P, n_in: int, units: int, batch: int):
    return [
        rnn_weight(p, (units, n_in)),
        rnn_weight(p, (units, units)),
        Const(randv(p, (units,), -0.2, 0.2)),
        Var((batch, units), p.dtype),
    ]


@recipe("RNN", paths=ALL)
def rnn(p: P):
    return [
        case(
            p.op,
            [p.x((2, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((2, 4))],
            dict(fused_activation_function=act),
            label=f"act{act}",
        )
        for act in (RELU, TANH)
    ]


@recipe("UNIDIRECTIONAL_SEQUENCE_RNN", paths=ALL)
def sequence_rnn(p: P):
    return [
        case(
            p.op,
            [p.x((2, 5, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((2, 5, 4))],
            dict(time_major=False, fused_activation_function=TANH),
            label="batch-major",
        ),
        case(
            p.op,
            [p.x((5, 2, 3))] + rnn_inputs(p, 3, 4, 2),
            [p.out((5, 2, 4))],
            dict(time_major=True, fused_activation_function=RELU),
            label="time-major",
        ),
    ]


@recipe("BIDIRECTIONAL_SEQUENCE_RNN", paths=ALL)
def bidirectional_rnn(p: P):
    ins = [p.x((2, 5, 3))] + rnn_inputs(p, 3, 4, 2) + rnn_inputs(p, 3, 4, 2) + [None, None, None]
    return [
        case(
            p.op,
            ins,
            [p.out((2, 5, 4)), p.out((2, 5, 4))],
            dict(time_major=False, fused_activation_function=TANH, merge_outputs=False),
            label="separate",
        ),
        case(
            p.op,
            ins,
            [p.out((2, 5, 8))],
            dict(time_major=False, fused_activation_function=TANH, merge_outputs=True),
            label="merged",
        ),
    ]


@recipe("SVDF", paths=ALL)
def svdf(p: P):
    batch, n_in, units, rank, memory = 2, 3, 4, 2, 5
    filters = units * rank
    if p.path == "int8":  # int8 activations and feature weights, int16 time weights and state, int32 bias; RELU
        wf, wt, state = quant(0.01, 0), quant(0.0005, 0), quant(0.005, 0)
        bias_q = quant(float(np.float32(0.005)) * float(np.float32(0.0005)), 0)
        return [
            case(
                p.op,
                [
                    p.x((batch, n_in)),
                    Const(p.rand((filters, n_in), -127, 127, np.int8), np.int8, wf),
                    Const(p.rand((filters, memory), -3000, 3000, np.int16), np.int16, wt),
                    Const(p.rand((units,), -2000, 2000, np.int32), np.int32, bias_q),
                    Var((batch, memory * filters), np.int16, state),
                ],
                [p.out((batch, units), q=quant(0.02, -3))],
                dict(rank=rank, fused_activation_function=RELU),
            )
        ]
    return case(
        p.op,
        [
            p.x((batch, n_in)),
            rnn_weight(p, (filters, n_in)),
            rnn_weight(p, (filters, memory)),
            Const(randv(p, (units,), -0.2, 0.2)),
            Var((batch, memory * filters), p.dtype),
        ],
        [p.out((batch, units))],
        dict(rank=rank, fused_activation_function=RELU),
    )


def lstm_weights(
    p: P, n_in: int, n_cell: int, n_out: int, batch: int, peephole=False, projection=False, layer_norm=False, cifg=False
) -> list:
    """The 20 weight/bias/state inputs (1..19 and the four layer-norm ones) of an LSTM, in schema order."""

    def w(shape):
        return rnn_weight(p, shape)

    def b(n, lo=-0.2, hi=0.2):
        return Const(randv(p, (n,), lo, hi))

    ins = [
        None if cifg else w((n_cell, n_in)),
        w((n_cell, n_in)),
        w((n_cell, n_in)),
        w((n_cell, n_in)),
        None if cifg else w((n_cell, n_out)),
        w((n_cell, n_out)),
        w((n_cell, n_out)),
        w((n_cell, n_out)),
    ]
    ins += [
        w((n_cell,)) if peephole and not cifg else None,
        w((n_cell,)) if peephole else None,
        w((n_cell,)) if peephole else None,
    ]  # peephole weights: int8 on the hybrid path too
    ins += [None if cifg else b(n_cell), b(n_cell, 0.5, 1.0), b(n_cell), b(n_cell)]
    ins += [w((n_out, n_cell)) if projection else None, b(n_out) if projection else None]
    ins += [Var((batch, n_out), p.dtype), Var((batch, n_cell), p.dtype)]
    ins += [b(n_cell, 0.5, 1.5) if layer_norm and not cifg else None] + [
        b(n_cell, 0.5, 1.5) if layer_norm else None for _ in range(3)
    ]
    return ins


LSTM_VARIANTS = (
    ("plain", {}),
    ("peephole-projection", dict(peephole=True, projection=True)),
    ("cifg-layer-norm", dict(cifg=True, layer_norm=True)),
)
# uint8: LSTM's BASIC kernel type (kernel_type 1: 5 inputs, 4 outputs, uint8 activations, int16 state), and
# full-kernel attempts with uint8 activations (LiteRT's full kernels take float32, int8 and int16 only). Not
# attempted: a uint8 input with float32 weights, biases and states, which LiteRT's full kernels accept and
# EvalFloat then reads as float32, past the end of the input buffer (litert_py refuses it).
# Layer-normalized integer LSTMs have no recipe yet.
INTEGER_LSTM_PATHS = ALL


def basic_lstm_case(p: P, batch: int = 2, n_in: int = 3, n_out: int = 4) -> Case:
    """LSTM with kernel_type BASIC: input, prev_activ, weights (4N, I+N), biases (4N,), prev_state (ordinary
    inputs, not variables) -> activ, state, concat_temp, activ_temp. uint8: activations Q0.7 (zero point 128),
    uint8 weights with a zero point, int32 bias of scale s_in * s_w, int16 state of scale 2^-11, activ_temp
    int16 Q3.12; float32: every tensor float32."""
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, kernel_type=1)
    k = n_in + n_out
    if p.path == "uint8":
        qa, qs, s_w = quant(1 / 128, 128), quant(2.0**-11, 0), 0.02
        ins = [
            In((batch, n_in), np.uint8, qa),
            In((batch, n_out), np.uint8, qa),
            Const(p.rand((4 * n_out, k), 0, 255, np.uint8), np.uint8, quant(s_w, 120)),
            Const(p.rand((4 * n_out,), -3000, 3000, np.int32), np.int32, quant(s_w / 128, 0)),
            In((batch, n_out), np.int16, qs),
        ]
        outs = [
            Out((batch, n_out), np.uint8, qa),
            Out((batch, n_out), np.int16, qs),
            Out((batch, k), np.uint8, qa),
            Out((batch, 4 * n_out), np.int16, quant(2.0**-12, 0)),
        ]
    else:
        ins = [
            p.x((batch, n_in)),
            p.x((batch, n_out)),
            Const(randv(p, (4 * n_out, k), -0.5, 0.5)),
            Const(randv(p, (4 * n_out,), -0.5, 0.5)),
            p.x((batch, n_out)),
        ]
        outs = [p.out((batch, n_out)), p.out((batch, n_out)), p.out((batch, k)), p.out((batch, 4 * n_out))]
    return case("LSTM", ins, outs, opts, label="basic")


def integer_lstm_case(p: P, op: str, xshape, oshape, options: dict, projection: bool) -> Case:
    """The 8x8_16 integer LSTM (int8 activations; int16 for the int16 path): int8 weights, int32 (int64)
    biases, an int16 cell state with a power-of-two scale, and the five intermediates LiteRT reads (four gate
    scales of 2^-12, unused without layer norm, and the hidden state's scale)."""
    n_in, n_cell, n_out, batch = xshape[-1], 4, oshape[-1], xshape[0]
    in_scale = QIN[p.path][0].scale[0]
    bdt = np.int64 if p.path == "int16" else np.int32
    out_q = {"int8": quant(1 / 128, 0), "uint8": quant(1 / 128, 128)}.get(p.path, quant(1 / 32768, 0))

    def w(shape):
        return Const(p.rand(shape, -127, 127, np.int8), np.int8, quant(0.02, 0))

    def b(scale):
        return Const(p.rand((n_cell,), -500, 500, bdt), bdt, quant(scale * 0.02, 0))

    ins = [p.x(xshape)] + [w((n_cell, n_in)) for _ in range(4)] + [w((n_cell, n_out)) for _ in range(4)]
    ins += [None] * 3 + [b(in_scale) for _ in range(4)]
    ins += [w((n_out, n_cell)), None] if projection else [None, None]
    ins += [Var((batch, n_out), p.dtype, out_q), Var((batch, n_cell), np.int16, quant(2.0**-11, 0))]
    ins += [None] * 4
    g = Graph()
    inter = [g.add(Out((), np.int16, quant(2.0**-12, 0))) for _ in range(4)]
    inter.append(g.add(Out((), p.dtype, out_q)))
    o = g.op(op, ins, [Out(oshape, p.dtype, out_q)], options, intermediates=inter)
    return g.case(o, label="integer-projection" if projection else "integer")


@recipe("LSTM", paths=INTEGER_LSTM_PATHS, not_applicable=())
def lstm(p: P):
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, kernel_type=0)
    if p.path in ("int8", "int16"):
        return [
            integer_lstm_case(p, p.op, (2, 3), (2, 4), opts, False),
            integer_lstm_case(p, p.op, (2, 3), (2, 3), opts, True),
        ]
    n_out = {"plain": 4, "peephole-projection": 3, "cifg-layer-norm": 4}
    full = [
        case(
            p.op,
            [p.x((2, 3))] + lstm_weights(p, 3, 4, n_out[label], 2, **kw),
            [p.out((2, n_out[label]))],
            opts,
            label=label,
        )
        for label, kw in LSTM_VARIANTS
    ]
    if p.path == "uint8":  # the BASIC kernel; the full kernel attempted with uint8 activations too
        return [basic_lstm_case(p), integer_lstm_case(p, p.op, (2, 3), (2, 4), opts, False)] + full
    return full + ([basic_lstm_case(p)] if p.path == "float32" else [])


@recipe("UNIDIRECTIONAL_SEQUENCE_LSTM", paths=INTEGER_LSTM_PATHS, not_applicable=())
def sequence_lstm(p: P):
    opts = dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, time_major=False)
    if p.path in ("int8", "int16", "uint8"):  # uint8: attempted (LiteRT's integer kernels take int8/int16 only)
        integer = [
            integer_lstm_case(p, p.op, (2, 5, 3), (2, 5, 4), opts, False),
            integer_lstm_case(p, p.op, (2, 5, 3), (2, 5, 3), opts, True),
        ]
        if p.path != "uint8":
            return integer
        return integer + [
            case(p.op, [p.x((2, 5, 3))] + lstm_weights(p, 3, 4, 4, 2), [p.out((2, 5, 4))], opts, label="uint8-weights")
        ]
    n_out = {"plain": 4, "peephole-projection": 3, "cifg-layer-norm": 4}
    return [
        case(
            p.op,
            [p.x((2, 5, 3))] + lstm_weights(p, 3, 4, n_out[label], 2, **kw),
            [p.out((2, 5, n_out[label]))],
            opts,
            label=label,
        )
        for label, kw in LSTM_VARIANTS
    ]


@recipe("BIDIRECTIONAL_SEQUENCE_LSTM", paths=ALL)  # LiteRT: float input only (float or hybrid weights)
def bidirectional_lstm(p: P):
    def half():
        ws = lstm_weights(p, 3, 4, 4, 2)
        return ws[:17], ws[17:19]  # 17 weights/biases/projection (inputs 1..17 in order), then the 2 states

    fw, fw_state = half()
    bw, bw_state = half()
    ins = [p.x((2, 5, 3))] + fw + bw + fw_state + bw_state + [None] * 9
    return case(
        p.op,
        ins,
        [p.out((2, 5, 4)), p.out((2, 5, 4))],
        dict(fused_activation_function=TANH, cell_clip=0.0, proj_clip=0.0, merge_outputs=False, time_major=False),
    )
