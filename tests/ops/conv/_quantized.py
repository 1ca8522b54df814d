"""Shared by the quantized / hybrid conv tests (test_conv_quantized, test_conv_hybrid, test_conv_requant): the
one-op conv model of a case dict, the oracle check, the prepared op, the drawn geometry."""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import run_both_unless_rejected
from tests.values import INT4, pack_int4

I8, U8, I16, I32, I64, F32 = np.int8, np.uint8, np.int16, np.int32, np.int64, np.float32
TYPE_INT32, TYPE_INT64 = 2, 4

ACTIVATIONS = [0, 1, 2, 3, 4, 5]  # NONE RELU RELU_N1_TO_1 RELU6 TANH SIGN_BIT


def conv_model(op: str, x, x_q, f, f_type, f_q, bias, b_q, out_dtype, out_q, options, const=(True, True)) -> bytes:
    """A one-op conv model; ``f_type`` INT4 packs the filter; ``bias`` None omits it; ``const``: whether the
    filter and the bias are constants (else graph inputs, fed in that order after x)."""
    b = ModelBuilder()
    ins = [b.input("x", x.shape, x.dtype, quantization=x_q)]
    if f_type == INT4:
        ins.append(b.tensor("f", f.shape, None, data=pack_int4(f), tensor_type=INT4, quantization=f_q))
    elif const[0]:
        ins.append(b.tensor("f", f.shape, f.dtype, data=f, quantization=f_q))
    else:
        ins.append(b.input("f", f.shape, f.dtype, quantization=f_q))
    if bias is not None:
        if const[1]:
            ins.append(b.tensor("b", bias.shape, bias.dtype, data=bias, quantization=b_q))
        else:
            ins.append(b.input("b", bias.shape, bias.dtype, quantization=b_q))
    out_c = f.shape[0] if op == "CONV_2D" else f.shape[3]
    y = b.tensor("y", (1, 1, 1, out_c), out_dtype, quantization=out_q)
    b.op(op, ins, [y], options)
    b.output(y)
    return b.build()


def _feeds(case) -> list:
    feeds = [case["x"]]
    if case["f_type"] != INT4 and not case["const"][0]:
        feeds.append(case["f"])
    if case["bias"] is not None and not case["const"][1]:
        feeds.append(case["bias"])
    return feeds


#: Prepare errors by which litert_py deliberately refuses a model LiteRT runs into undefined behaviour: the
#: int64 MultiplyByQuantizedMultiplier with a shift above 7 (asserted against in common.cc; from 15 on the
#: C++ shifts by a negative count); a hybrid depthwise conv with a single filter scale and several channels
#: (the kernel reads a scale per channel, past the end of the array).
DELIBERATE_REFUSALS = (
    "too large for the int64 MultiplyByQuantizedMultiplier",
    # hybrid depthwise with one filter scale and several channels: LiteRT reads past the scales
    "LiteRT reads past the end of the scales",
)


def case_model(case: dict) -> bytes:
    """The model of a case dict (the keys are conv_model's arguments; the output has the input's dtype)."""
    keys = ("op", "x", "x_q", "f", "f_type", "f_q", "bias", "b_q")
    return conv_model(*(case[k] for k in keys), case["x"].dtype, case["out_q"], case["options"], case["const"])


def _prepared(case: dict):
    """litert_py's prepared op of a case's model."""
    it = Interpreter(model_content=case_model(case))
    it.allocate_tensors()
    (op,) = it._subgraphs[0].prepared_ops.values()
    return op


def check_against_oracle(case, resolver: str = "BUILTIN_REF", rtol: float = 0.0):
    model = case_model(case)
    feeds = _feeds(case)
    try:
        Interpreter(model_content=model).allocate_tensors()
    except PrepareError as e:
        assume(not any(s in str(e) for s in DELIBERATE_REFUSALS))
    both = run_both_unless_rejected(model, feeds, resolver)
    if both is None:
        return None
    ours, theirs = both
    # float: relative to the terms before the bias cancels them, max|out| + max|bias|
    bias = case["bias"]
    bias_scale = float(np.max(np.abs(bias))) if bias is not None and bias.dtype == np.float32 and bias.size else 0.0
    assert_close(ours[:1], theirs[:1], rtol=rtol, atol=rtol * bias_scale + (1e-30 if rtol else 0.0))
    return ours[0]


def _prepared_op(case):
    """The prepared op litert_py chose for a constant-filter case of check_against_oracle."""
    keys = ("op", "x", "x_q", "f", "f_type", "f_q", "bias", "b_q")
    model = conv_model(*(case[k] for k in keys), case["x"].dtype, case["out_q"], case["options"])
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (prepared,) = it._subgraphs[0].prepared_ops.values()
    return prepared


@st.composite
def geometry(draw, op: str):
    d = {
        "batch": draw(st.integers(1, 2)),
        "h": draw(st.integers(1, 9)),
        "w": draw(st.integers(1, 9)),
        "kh": draw(st.integers(1, 4)),
        "kw": draw(st.integers(1, 4)),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dilation": (draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([1, 1, 2, 3]))),
        "padding": draw(st.sampled_from([0, 1])),
        "act": draw(st.sampled_from(ACTIVATIONS)),
    }
    if op == "CONV_2D":
        groups = draw(st.sampled_from([1, 1, 2]))
        cg = draw(st.integers(1, 8 // groups))
        d.update(c=cg * groups, out_c=groups * draw(st.integers(1, 8 // groups)), filter_c=cg)
    else:
        c, m = draw(st.integers(1, 8)), draw(st.integers(1, 3))
        d.update(c=c, out_c=c * m, mult=m)
    return d
