"""PAD / PADV2 with constant paddings: small outputs (at most padding.FILL_MAX_BYTES bytes, two or more border
slabs) take PadFilled (the whole output filled with the pad value, then the interior copied), the others Pad (one
assignment per border slab); each case asserts the prepared class and compares against the oracle (ai-edge-litert
BUILTIN_REF) exactly over several invokes with different inputs, the pad value never equal to an input value."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.ops import padding
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops._single_step import both_with_step, invoke_both

I8, F32 = np.int8, np.float32

CASES = {  # id -> (input shape, paddings, dtype, PADV2 constant or None, the expected class)
    "int8-hw": ((1, 15, 13, 48), [[0, 0], [1, 1], [1, 1], [0, 0]], I8, None, "PadFilled"),
    "int8-asymmetric": ((1, 30, 25, 48), [[0, 0], [0, 1], [0, 2], [0, 0]], I8, None, "PadFilled"),
    "int8-all-axes": ((2, 3, 4, 5), [[1, 0], [2, 1], [0, 3], [1, 1]], I8, None, "PadFilled"),
    "float32-v2": ((1, 8, 7, 16), [[0, 0], [1, 2], [2, 1], [0, 0]], F32, 3.5, "PadFilled"),
    "int8-one-slab": ((1, 8, 7, 16), [[0, 0], [0, 0], [0, 1], [0, 0]], I8, None, "Pad"),
    "int8-large": ((1, 96, 96, 16), [[0, 0], [1, 1], [1, 1], [0, 0]], I8, None, "Pad"),
    "float32-large": ((1, 30, 25, 48), [[0, 0], [1, 1], [1, 1], [0, 0]], F32, -2.0, "Pad"),
}


def _model(shape, pads, dtype, constant) -> bytes:
    b = ModelBuilder()
    q = quant(0.1, -37) if dtype == I8 else None
    x = b.input("x", shape, dtype, quantization=q)
    p = b.const("p", np.array(pads, np.int32))
    out_shape = tuple(d + lo + hi for d, (lo, hi) in zip(shape, pads))
    y = b.tensor("y", out_shape, dtype, quantization=q)
    if constant is None:
        b.op("PAD", [x, p], [y])
    else:
        c = b.const("c", np.array(constant, dtype))
        b.op("PADV2", [x, p, c], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("case", list(CASES))
def test_pad_forms_against_reference(case):
    shape, pads, dtype, constant, cls = CASES[case]
    model = _model(shape, pads, dtype, constant)
    theirs, ours, step = both_with_step(model)
    assert type(step).__name__ == cls
    out_bytes = int(np.prod([d + lo + hi for d, (lo, hi) in zip(shape, pads)])) * np.dtype(dtype).itemsize
    assert (out_bytes <= padding.FILL_MAX_BYTES) == (cls == "PadFilled" or case == "int8-one-slab")
    rng = np.random.default_rng(1)
    for _ in range(3):
        if dtype == I8:  # never the pad value (the zero point -37): a missing border shows
            x = rng.integers(-20, 128, shape).astype(I8)
        else:
            x = rng.uniform(10.0, 20.0, shape).astype(F32)
        got, want = invoke_both(theirs, ours, [x])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, constant", [(F32, None), (I8, None), (F32, 2.5)], ids=["float32", "int8", "v2"])
def test_pad_of_a_scalar_copies_it(dtype, constant):
    """A 0-d input (paddings of shape (0, 2)) has no border: the output is the input. Its interior index must give
    a 0-d view, not a numpy scalar (found by tools/fuzz_graphs.py: copyto() into a numpy.float32)."""
    b = ModelBuilder()
    q = quant(0.1, -37) if dtype == I8 else None
    x = b.input("x", (), dtype, quantization=q)
    p = b.const("p", np.zeros((0, 2), np.int32))
    y = b.tensor("y", (), dtype, quantization=q)
    if constant is None:
        b.op("PAD", [x, p], [y])
    else:
        b.op("PADV2", [x, p, b.const("c", np.array(constant, dtype))], [y])
    b.output(y)
    theirs, ours, _ = both_with_step(b.build())
    for v in (3, -5, 100):
        got, want = invoke_both(theirs, ours, [np.array(v, dtype)])
        assert got.shape == () and np.array_equal(got, want) and want == v
