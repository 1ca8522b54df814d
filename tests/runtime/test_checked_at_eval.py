"""Nodes whose prepared op checks input values at eval (``checks_values_at_eval``: int32 POW's negative
exponents, zero divisors, a quantized DIV's divisor at its zero point) with constants that fail the check: LiteRT
runs its kernels at invoke, so such a node fails the invoke that runs it, never allocate_tensors. An IF branch not
taken and a WHILE body run 0 times hold it harmlessly; a model of constants fails at invoke with LiteRT's node
line. (Empty outputs and fed values: tests/ops/test_elementwise.py::test_checked_at_eval_whatever_the_output.)"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter, InvokeError
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import oracle, run_both

I32 = np.int32

#: (op, dtype, quantization, x, a divisor / exponent LiteRT's Eval refuses, a phrase of both messages)
FAILING = {
    "pow-int32": ("POW", I32, None, [2, 3], [-1, 1], "POW does not support negative value for int32."),
    "div-int32": ("DIV", I32, None, [2, 3], [0, 1], "data[i] != zero_point"),
    "div-int8": ("DIV", np.int8, quant(0.5, 3), [5, 6], [3, 5], "data[i] != zero_point"),
    "div-uint8": ("DIV", np.uint8, quant(0.5, 128), [5, 6], [130, 128], "data[i] != zero_point"),
    "div-int16": ("DIV", np.int16, quant(0.5, 0), [5, 6], [0, 2], "data[i] != zero_point"),
}


def _failing_node(b: ModelBuilder, case: str, out: int) -> None:
    """``out = op(const x, const bad)``: the node of constants whose check fails."""
    op, dtype, q, x, bad, _ = FAILING[case]
    kw = {"quantization": q} if q is not None else {}
    b.op(op, [b.const("a", np.array(x, dtype), dtype, **kw), b.const("e", np.array(bad, dtype), dtype, **kw)], [out])


def _tensor(b: ModelBuilder, name: str, shape, case: str, graph_input: bool = False) -> int:
    _, dtype, q, *_ = FAILING[case]
    kw = {"quantization": q} if q is not None else {}
    return b.input(name, shape, dtype, **kw) if graph_input else b.tensor(name, shape, dtype, **kw)


def _if_model(case: str) -> bytes:
    """IF c: then op(constants failing the check) + x, else x + x."""
    b = ModelBuilder()
    c, x = b.input("c", (), np.bool_), _tensor(b, "x", (2,), case, graph_input=True)
    out = _tensor(b, "out", (2,), case)
    b.op("IF", [c, x], [out], dict(then_subgraph_index=1, else_subgraph_index=2))
    b.output(out)
    b.subgraph("then")
    bx, p, r = _tensor(b, "x", (2,), case, graph_input=True), _tensor(b, "p", (2,), case), _tensor(b, "r", (2,), case)
    _failing_node(b, case, p)
    b.op("ADD", [p, bx], [r])
    b.output(r)
    b.subgraph("else")
    ex, r2 = _tensor(b, "x", (2,), case, graph_input=True), _tensor(b, "r2", (2,), case)
    b.op("ADD", [ex, ex], [r2])
    b.output(r2)
    return b.build()


def _while_model() -> bytes:
    """WHILE i < n: i += POW(2, -1) (a node of constants failing the check)."""
    b = ModelBuilder()
    i, n = b.input("i", (), I32), b.input("n", (), I32)
    outs = [b.tensor("i_out", (), I32), b.tensor("n_out", (), I32)]
    b.op("WHILE", [i, n], outs, dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(*outs)
    b.subgraph("cond")
    ci, cn = b.input("i", (), I32), b.input("n", (), I32)
    c = b.tensor("c", (), np.bool_)
    b.op("LESS", [ci, cn], [c])
    b.output(c)
    b.subgraph("body")
    bi, bn = b.input("i", (), I32), b.input("n", (), I32)
    p, i2 = b.tensor("p", (), I32), b.tensor("i2", (), I32)
    b.op("POW", [b.const("a", I32(2)), b.const("e", I32(-1))], [p])
    b.op("ADD", [bi, p], [i2])
    b.output(i2, bn)
    return b.build()


def _invoke_error(it, feeds) -> Exception:
    """The error of ``it``'s invoke, after allocate_tensors and set_tensor succeed."""
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], v)
    with pytest.raises(RuntimeError) as info:
        it.invoke()
    return info.value


def _both_fail_at_invoke(model: bytes, feeds) -> tuple[str, str]:
    """LiteRT's (BUILTIN_REF) and our messages, each interpreter allocating fine and failing at invoke."""
    LiteRT, resolver = oracle()
    theirs = _invoke_error(LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF), feeds)
    ours = _invoke_error(Interpreter(model_content=model), feeds)
    assert isinstance(ours, InvokeError)
    return str(theirs), str(ours)


@pytest.mark.parametrize("case", list(FAILING))
def test_if_branch_not_taken_holds_a_failing_node(case):
    """The model loads and the branch not taken is never run: the results agree with LiteRT's; taking it fails
    the invoke in both."""
    model, dtype = _if_model(case), FAILING[case][1]
    x = np.array([4, 7], dtype)
    ours, theirs = run_both(model, [np.bool_(False), x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    _both_fail_at_invoke(model, [np.bool_(True), x])


def test_while_body_run_zero_times_holds_a_failing_node():
    model = _while_model()
    ours, theirs = run_both(model, [I32(5), I32(3)])
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o, t)
    _both_fail_at_invoke(model, [I32(0), I32(3)])


@pytest.mark.parametrize("case", list(FAILING))
def test_model_of_constants_fails_at_invoke_like_litert(case):
    """No graph input: ``p = op(constants)``, ``out = p + p``. Both fail the invoke (not allocate_tensors) on
    node 0, with LiteRT's "Node number 0 (OP) failed to invoke." line and its check's phrase."""
    b = ModelBuilder()
    p, out = _tensor(b, "p", (2,), case), _tensor(b, "out", (2,), case)
    _failing_node(b, case, p)
    b.op("ADD", [p, p], [out])
    b.output(out)
    theirs, ours = _both_fail_at_invoke(b.build(), [])
    op, phrase = FAILING[case][0], FAILING[case][5]
    line = f"Node number 0 ({op}) failed to invoke."
    assert phrase in theirs and line in theirs
    assert phrase in ours and ours.endswith(line)
