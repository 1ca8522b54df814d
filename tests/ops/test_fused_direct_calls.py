"""Fused steps called directly (as a delegate or a test does) with arrays other than the ones they were prepared
for: the fused BATCH_MATMUL -> RESHAPE step into an output no view of which has the product's shape, and the
attention-scale lookup -> SOFTMAX step on arrays of the prepared size but another shape (BUILTIN_REF on a model of
that shape is the oracle)."""

from __future__ import annotations

import numpy as np

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import run_litert

I8 = np.int8


def test_batch_matmul_into_a_reshape_with_a_strided_output():
    b = ModelBuilder()
    x = b.input("x", (1, 4, 32, 16), I8, quantization=quant(0.05, 3))
    y = b.input("y", (1, 4, 16, 8), I8, quantization=quant(0.04, -2))
    q = quant(0.05 * 0.04 * 40, 5)
    z = b.tensor("z", (1, 4, 32, 8), I8, quantization=q)
    b.op("BATCH_MATMUL", [x, y], [z], {"adj_x": False, "adj_y": False})
    r = b.tensor("r", (4, 32, 2, 4), I8, quantization=q)
    b.op("RESHAPE", [z, b.const("shape", np.array([4, 32, 2, 4], np.int32))], [r])
    b.output(r)
    model = b.build()
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    ((_, step),) = it._subgraphs[0].steps_nodes  # the reshape absorbed
    rng = np.random.default_rng(0)
    xs = [rng.integers(-128, 128, (1, 4, 32, 16)).astype(I8), rng.integers(-128, 128, (1, 4, 16, 8)).astype(I8)]
    (want,) = run_litert(model, xs)
    out = np.full((4, 32, 4, 4), 99, I8)[:, :, ::2, :]
    step(xs, [out])
    np.testing.assert_array_equal(out, want)


def _scaled_softmax(shape) -> bytes:
    b = ModelBuilder()
    x = b.input("x", shape, I8, quantization=quant(0.05, -3))
    c = b.const("c", np.array([-100], I8), quantization=quant(0.7 / 100, 0))
    y = b.tensor("y", shape, I8, quantization=quant(0.06, 4))
    b.op("MUL", [x, c], [y], {"fused_activation_function": 0})
    z = b.tensor("z", shape, I8, quantization=quant(1 / 256, -128))
    b.op("SOFTMAX", [y], [z], {"beta": 1.0})
    b.output(z)
    return b.build()


def test_softmax_lookup_on_arrays_of_another_shape():
    it = Interpreter(model_content=_scaled_softmax((1, 4, 32, 32)))
    it.allocate_tensors()
    ((_, step),) = it._subgraphs[0].steps_nodes
    assert type(step).__name__ == "SoftmaxQuantizedColumnsLookup"
    x = np.random.default_rng(2).integers(-128, 128, (64, 64)).astype(I8)
    got = np.empty((64, 64), I8)
    step([x, np.array([-100], I8)], [got])
    (want,) = run_litert(_scaled_softmax((64, 64)), [x])
    np.testing.assert_array_equal(got, want)
