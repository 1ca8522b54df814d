"""A one-value lookup (table8.QuantizedTable8Scalar: an 8-bit MUL / ADD by a one-value constant) fused with its only
reader by ops/slice_views.py's fuse_feeding: a RESHAPE's copy absorbed (the lookup stores into the reshaped
tensor), an attention's SOFTMAX over many short rows loading its rows through the lookup
(softmax.SoftmaxQuantizedColumnsLookup), the constant as either input. Compared exactly with BUILTIN_REF over
several invokes, with the prepared steps asserted; a lookup whose output is also a model output is not fused."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import compare_steps

I8 = np.int8


def _model(shape, reshaped, const_first=False, scale=-0.7, reader="SOFTMAX", also_output=False) -> bytes:
    """x (int8) -> MUL by the constant ``scale`` (quantized) -> [RESHAPE to ``reshaped``] -> ``reader``."""
    b = ModelBuilder()
    x = b.input("x", shape, I8, quantization=quant(0.05, -3))
    c = b.const("c", np.array([100 if scale > 0 else -100], I8), quantization=quant(abs(scale) / 100, 0))
    y = b.tensor("y", shape, I8, quantization=quant(0.06, 4))
    b.op("MUL", [c, x] if const_first else [x, c], [y], {"fused_activation_function": 0})
    src = y
    if reshaped is not None:
        r = b.tensor("r", reshaped, I8, quantization=quant(0.06, 4))
        new_shape = b.const("shape", np.array(reshaped, np.int32))
        b.op("RESHAPE", [y, new_shape], [r])
        src = r
    out_shape = reshaped if reshaped is not None else shape
    if reader == "SOFTMAX":
        z = b.tensor("z", out_shape, I8, quantization=quant(1 / 256, -128))
        b.op("SOFTMAX", [src], [z], {"beta": 1.0})
    else:  # a LOGISTIC reader: not fused with the lookup here (a byte table after the reshape)
        z = b.tensor("z", out_shape, I8, quantization=quant(1 / 256, -128))
        b.op("LOGISTIC", [src], [z])
    b.output(*((z, y) if also_output else (z,)))
    return b.build()


def _compare(model: bytes, n: int = 6) -> list[str]:
    def inputs(d):
        rng = np.random.default_rng(8)
        xs = [rng.integers(-128, 128, d["shape"]).astype(I8) for _ in range(n)]
        return xs + [np.full(d["shape"], -128, I8), np.full(d["shape"], 127, I8)]

    return compare_steps(model, inputs)


@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("scale", [-0.7, 0.25])
def test_attention_scale_reshape_softmax(const_first, scale):
    model = _model((1, 4, 32, 32), (1, 4, 32, 32), const_first, scale)
    assert _compare(model) == ["SoftmaxQuantizedColumnsLookup"]


def test_reshape_changing_shape_then_softmax():
    assert _compare(_model((1, 64, 8), (2, 32, 8))) == ["SoftmaxQuantizedColumnsLookup"]


def test_lookup_straight_into_softmax():
    assert _compare(_model((6, 10), None, scale=0.4)) == ["SoftmaxQuantizedColumnsLookup"]


@pytest.mark.parametrize(
    ("shape", "reshaped", "steps"),
    [
        ((1, 4, 16, 16), (4, 256), ["QuantizedTable8Scalar", "ActivationLut"]),
        ((1, 4, 64, 64), (16, 1024), ["QuantizedTable8ScalarPairs", "ActivationLutPairs"]),  # flat pair views
    ],
)
def test_reshape_absorbed_before_another_reader(shape, reshaped, steps):
    """The lookup stores into the reshaped tensor; the LOGISTIC after it stays a step of its own."""
    assert _compare(_model(shape, reshaped, reader="LOGISTIC"), n=3) == steps


def test_lookup_output_kept_is_not_fused():
    names = _compare(_model((1, 4, 32, 32), None, also_output=True))
    assert names == ["QuantizedTable8Scalar", "SoftmaxQuantizedColumns"]


def test_other_input_size_takes_the_general_path():
    """The fused step called on an input of another size (a resized model's arrays) runs the lookup, then the
    general SoftmaxQuantized: the values of BUILTIN_REF's model of that shape with the same quantization."""
    from litert_py import Interpreter
    from tests.oracle import oracle

    ours = Interpreter(model_content=_model((1, 4, 32, 32), (1, 4, 32, 32)))
    ours.allocate_tensors()
    ((node, step),) = ours._subgraphs[0].steps_nodes
    assert type(step).__name__ == "SoftmaxQuantizedColumnsLookup"
    x = np.random.default_rng(2).integers(-128, 128, (3, 10)).astype(I8)
    got = np.empty((3, 10), I8)
    step([x, np.array([-100], I8)], [got])
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=_model((3, 10), None), experimental_op_resolver_type=resolver.BUILTIN_REF)
    theirs.allocate_tensors()
    theirs.set_tensor(theirs.get_input_details()[0]["index"], x)
    theirs.invoke()
    np.testing.assert_array_equal(got, theirs.get_tensor(theirs.get_output_details()[0]["index"]))
