"""Fast paths for tiny quantized tensors (issue 16: one-row heads of keyword-spotting and streaming models) against
the oracle (ai-edge-litert BUILTIN_REF), exactly, over many invokes of one interpreter per side; each test asserts
the prepared op's class, so it fails when prepare stops choosing the path:

- SoftmaxQuantizedRow and, up to TINY_MAX values, SoftmaxQuantizedTiny (ops/softmax.py): one row of uint8 /
  int8 input, uint8 / int8 / int16 output: random
  rows, constant rows, a single maximum, rows spanning the whole input range, betas that cut the exp table
  short (diff_min) and large ones; SoftmaxInt16Row (int16 in and out); multi-row 8-bit inputs take
  SoftmaxQuantizedColumns, multi-row int16 ones keep the general op;
- the int16 ADD / SUB / MUL paths with their buffers allocated at prepare (ops/elementwise_quantized.py);
- one-value LOGISTIC / TANH / RELU / LEAKY_RELU / HARD_SWISH (ops/activations_quantized.py's ``_one_value``:
  TableLookupScalar) over every 8-bit input value and int16 extremes;
- QUANTIZE -> RESHAPE: the copy dropped, QUANTIZE storing into the RESHAPE's output (ops/slice_views.py's
  fuse_reshape_stores), unless the QUANTIZE output is read elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.ops.softmax import QUANTIZED_COLUMNS_MAX_ROW, ROW_MAX, TINY_MAX
from tests.oracle import T, oracle, quant, single_op_model

I8, U8, I16 = np.int8, np.uint8, np.int16


def _prepared(it: Interpreter) -> list[str]:
    return [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]


def invokes(model: bytes, feeds) -> tuple[Interpreter, np.ndarray, np.ndarray]:
    """Our interpreter and the first outputs of ours and of BUILTIN_REF over ``feeds`` (per invoke: one array,
    or a tuple of one array per input), one invoke each on one interpreter per side."""
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model)
    outs = []
    for it in (ours, theirs):
        it.allocate_tensors()
        details = it.get_input_details()
        res = []
        for feed in feeds:
            for d, x in zip(details, feed if isinstance(feed, tuple) else (feed,)):
                it.set_tensor(d["index"], x)
            it.invoke()
            res.append(it.get_tensor(it.get_output_details()[0]["index"]).copy())
        outs.append(np.array(res))
    return ours, outs[0], outs[1]


def _softmax_model(tin, tout, shape, s_in: float, zi: int, beta: float) -> bytes:
    if tout == I16:
        q_out = quant(1.0 / 32768, 0) if tin == I16 else quant(1.0 / 65536, -32768)
    else:
        q_out = quant(1.0 / 256, -128 if tout == I8 else 0)
    return single_op_model("SOFTMAX", [T(shape, tin, q=quant(s_in, zi))], [T(shape, tout, q=q_out)], {"beta": beta})


def _rows(rng, dtype, shape, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    xs = rng.integers(info.min, info.max + 1, (n,) + shape).astype(dtype)
    xs[0] = info.min  # a constant row: every term exp(0)
    xs[1] = info.max
    xs[2] = info.min
    xs[2].reshape(-1)[-1] = info.max  # one maximum, the rest at the far end of the table
    xs[3].reshape(-1)[::2] = info.max  # half the row tied at the maximum
    for k in range(4, 12):  # rows spread over a narrow band: many distinct small differences
        xs[k] = rng.integers(max(info.min, 100 - 10 * k), min(info.max, 110 - 5 * k) + 1, shape)
    return xs


@pytest.mark.parametrize(
    ("tin", "tout", "shape", "s_in", "zi", "beta"),
    [
        (I8, I8, (1, 12), 0.1, 3, 1.0),  # a keyword spotter's head
        (I8, I8, (1, 1), 0.05, 0, 1.0),
        (I8, I8, (1, 1, 1, 37), 0.2, -128, 0.5),
        (I8, I16, (1, 10), 0.08, 0, 1.0),
        (U8, U8, (1, 12), 0.1, 128, 1.0),
        (U8, U8, (500,), 0.02, 0, 2.0),  # a long row (LiteRT aborts from 512 maximal values on)
        (U8, I16, (1, 7), 0.3, 10, 1.0),
        (I8, I8, (1, 20), 1.0, 0, 10.0),  # diff_min cuts the table: most terms 0
        (I8, I8, (1, 16), 0.004, 0, 1.0),  # a small multiplier
        (I8, I8, (1, 1, 24), 0.1, -5, 1.0),  # SoftmaxQuantizedTiny's longest row
        (I8, I8, (1, 25), 0.1, -5, 1.0),  # SoftmaxQuantizedRow's shortest
        (U8, U8, (4,), 0.5, 0, 1.0),  # rank 1
        (U8, I16, (1, 1, 1, 2), 0.01, 200, 3.0),
    ],
)
def test_softmax_one_row(tin, tout, shape, s_in, zi, beta):
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    model = _softmax_model(tin, tout, shape, s_in, zi, beta)
    ours, got, want = invokes(model, _rows(rng, tin, shape, 60))
    assert _prepared(ours) == ["SoftmaxQuantizedTiny" if shape[-1] <= TINY_MAX else "SoftmaxQuantizedRow"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("shape", "s_in", "beta"),
    [((1, 10), 0.001, 1.0), ((1, 1, 33), 0.0004, 2.0), ((1, 1), 0.002, 1.0), ((7,), 1e-4, 0.5)],
)
def test_softmax_int16_one_row(shape, s_in, beta):
    rng = np.random.default_rng(shape[-1])
    model = _softmax_model(I16, I16, shape, s_in, 0, beta)
    xs = _rows(rng, I16, shape, 50)
    xs[40:] = rng.integers(-2000, 2000, (10,) + shape)  # differences inside the exp table's busy range
    ours, got, want = invokes(model, xs)
    assert _prepared(ours) == ["SoftmaxInt16Row"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("tin", "tout", "shape", "s_in", "zi", "beta"),
    [
        (I8, I8, (1, 4, 32, 32), 0.06, 9, 1.0),  # an int8 attention's scores
        (I8, I8, (1, 8, 8, 4), 0.1, -3, 1.0),  # a segmentation head's per-pixel classes
        (I8, I8, (2, 1), 0.1, 0, 1.0),  # two rows (the fewest), one value each
        (U8, U8, (3, 25), 0.02, 128, 2.0),
        (I8, I16, (5, 10), 0.08, 0, 1.0),
        (U8, I16, (2, 3, 7), 0.3, 10, 1.0),
        (I8, I8, (4, 20), 1.0, 0, 10.0),  # diff_min cuts the table: most terms 0
    ],
)
def test_softmax_several_rows_columns(tin, tout, shape, s_in, zi, beta):
    """Two or more rows of 8-bit input: SoftmaxQuantizedColumns (ops/softmax.py), exactly BUILTIN_REF's."""
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    model = _softmax_model(tin, tout, shape, s_in, zi, beta)
    ours, got, want = invokes(model, _rows(rng, tin, shape, 16))
    assert _prepared(ours) == ["SoftmaxQuantizedColumns"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("n", "cls"),
    [(QUANTIZED_COLUMNS_MAX_ROW, "SoftmaxQuantizedColumns"), (QUANTIZED_COLUMNS_MAX_ROW + 1, "SoftmaxQuantized")],
)
def test_softmax_columns_longest_rows(n, cls):
    """SoftmaxQuantizedColumns up to QUANTIZED_COLUMNS_MAX_ROW values per row (below ROW_MAX: its int32 totals never
    wrap), the general op beyond."""
    assert QUANTIZED_COLUMNS_MAX_ROW <= ROW_MAX
    rng = np.random.default_rng(n)
    model = _softmax_model(I8, I8, (2, n), 0.1, 0, 1.0)
    ours, got, want = invokes(model, [rng.integers(-128, 128, (2, n)).astype(I8) for _ in range(3)])
    assert _prepared(ours) == [cls]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("tin", "tout", "cls"), [(I8, I8, "SoftmaxQuantizedColumns"), (I16, I16, "SoftmaxInt16")])
def test_softmax_rows_keep_general_path(tin, tout, cls):
    rng = np.random.default_rng(5)
    model = _softmax_model(tin, tout, (3, 12), 0.1 if tin == I8 else 0.001, 0, 1.0)
    ours, got, want = invokes(model, _rows(rng, tin, (3, 12), 20))
    assert _prepared(ours) == [cls]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("op", "s1", "s2", "so", "shapes", "pot", "out_type", "cls"),
    [
        ("ADD", 0.002, 0.0007, 0.003, ((2, 5, 7), (2, 5, 7)), False, I16, "AddSubQuantized16"),
        ("SUB", 0.001, 0.0031, 0.002, ((3, 4), (4,)), False, I16, "AddSubQuantized16"),
        ("ADD", 2.0**-10, 2.0**-12, 2.0**-10, ((4, 6), (4, 6)), True, I16, "AddSubPot16"),
        ("SUB", 2.0**-12, 2.0**-10, 2.0**-10, ((2, 3, 4), (3, 4)), True, I16, "AddSubPot16"),
        ("MUL", 0.01, 0.02, 0.05, ((3, 5), (5,)), False, I16, "MulQuantized16"),
        ("MUL", 2.0**-15, 2.0**-15, 2.0**-7, ((2, 9), (2, 9)), False, I8, "MulInt16ToInt8"),
    ],
)
def test_int16_elementwise_prepared_buffers(op, s1, s2, so, shapes, pot, out_type, cls):
    """The int16 ADD / SUB / MUL paths write into buffers allocated at prepare (an int64 or int32 accumulator,
    the per-input LUT results), over many invokes and broadcasting: still exact."""
    rng = np.random.default_rng(len(op) * 10 + len(shapes[1]))
    out_shape = np.broadcast_shapes(*shapes)
    zo = 3 if out_type == I8 else 0
    options = {"pot_scale_int16": pot} if op in ("ADD", "SUB") else {}
    model = single_op_model(
        op,
        [T(shapes[0], I16, q=quant(s1, 0)), T(shapes[1], I16, q=quant(s2, 0))],
        [T(out_shape, out_type, q=quant(so, zo))],
        options,
    )
    pairs = [tuple(rng.integers(-32768, 32768, s).astype(I16) for s in shapes) for _ in range(25)]
    pairs.append(tuple(np.full(s, v, I16) for s, v in zip(shapes, (-32768, 32767))))
    pairs.append(tuple(np.full(s, -32768, I16) for s in shapes))
    ours, got, want = invokes(model, pairs)
    ((_, prepared),) = ours._subgraphs[0].steps_nodes
    assert type(prepared).__name__ == cls
    assert prepared.scratch.acc is not None and prepared.scratch.acc.shape == out_shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("op", "dtype", "shape", "q_in", "q_out", "options"),
    [
        ("LOGISTIC", I8, (1, 1), (0.1, 3), (1.0 / 256, -128), {}),
        ("TANH", I8, (1,), (0.05, -7), (1.0 / 128, 0), {}),
        ("LOGISTIC", U8, (1, 1, 1), (0.08, 128), (1.0 / 256, 0), {}),
        ("RELU", U8, (1, 1, 1, 1), (0.1, 128), (0.05, 10), {}),
        ("LEAKY_RELU", I8, (1, 1), (0.1, 5), (0.07, -3), {"alpha": 0.2}),
        ("HARD_SWISH", I8, (1,), (0.05, 0), (0.03, -20), {}),
        ("LOGISTIC", I16, (1, 1), (2.0**-12, 0), (2.0**-15, 0), {}),
        ("TANH", I16, (1,), (0.0007, 0), (2.0**-15, 0), {}),
    ],
)
def test_one_value_activation(op, dtype, shape, q_in, q_out, options):
    info = np.iinfo(dtype)
    if info.bits == 8:
        values = np.arange(info.min, info.max + 1)
    else:
        rng = np.random.default_rng(7)
        values = np.concatenate([[info.min, info.min + 1, -1, 0, 1, info.max], rng.integers(info.min, info.max, 200)])
    model = single_op_model(op, [T(shape, dtype, q=quant(*q_in))], [T(shape, dtype, q=quant(*q_out))], options)
    ours, got, want = invokes(model, [np.full(shape, v, dtype) for v in values])
    assert _prepared(ours) == ["TableLookupScalar"]
    np.testing.assert_array_equal(got, want)


def test_two_value_activation_keeps_table_gather():
    model = single_op_model("LOGISTIC", [T((1, 2), I8, q=quant(0.1, 3))], [T((1, 2), I8, q=quant(1.0 / 256, -128))])
    xs = [np.array([[v, -v - 1]], I8) for v in range(-128, 128, 5)]
    ours, got, want = invokes(model, xs)
    assert _prepared(ours) == ["ActivationLut"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("also_output", [False, True])
def test_quantize_stores_into_reshape(also_output):
    from litert_py.schema.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("x", (1, 3, 40), np.float32)
    q = b.tensor("q", (1, 3, 40), I8, quantization=quant(0.1, -20))
    b.op("QUANTIZE", [x], [q])
    y = b.tensor("y", (1, 3, 1, 40), I8, quantization=quant(0.1, -20))
    b.op("RESHAPE", [q, b.const("shape", np.array([1, 3, 1, 40], np.int32))], [y], {})
    b.output(y, *([q] if also_output else []))
    rng = np.random.default_rng(2)
    xs = [(rng.standard_normal((1, 3, 40)) * 8).astype(np.float32) for _ in range(20)]
    xs[0][0, 0, :6] = [0.05, -0.05, 0.15, -0.25, 1e12, np.nan]  # ties, an overflowing quotient, NaN
    ours, got, want = invokes(b.build(), xs)
    assert _prepared(ours) == (["QuantizeFloatStore", "CopyReshaped"] if also_output else ["StoreInto"])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("out_dtype", "q_out", "also_output"),
    [(U8, (1.0 / 200, 7), False), (I8, (0.003, -100), False), (I16, (1.0 / 4096, -5), False), (U8, (0.01, 0), True)],
)
def test_one_value_lookups_composed(out_dtype, q_out, also_output):
    """LOGISTIC then QUANTIZE (a streaming classifier's score) on one value: the two TableLookupScalar steps become
    one lookup in the composed table (quantize.TableLookupScalar.feeding), unless the LOGISTIC output is also a
    model output; every int8 input against BUILTIN_REF."""
    from litert_py.schema.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("x", (1, 1), I8, quantization=quant(0.1, 3))
    p = b.tensor("p", (1, 1), I8, quantization=quant(1.0 / 256, -128))
    b.op("LOGISTIC", [x], [p])
    y = b.tensor("y", (1, 1), out_dtype, quantization=quant(*q_out))
    b.op("QUANTIZE", [p], [y])
    b.output(y, *([p] if also_output else []))
    ours, got, want = invokes(b.build(), [np.full((1, 1), v, I8) for v in range(-128, 128)])
    assert _prepared(ours) == ["TableLookupScalar"] * (2 if also_output else 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lookups", [("LOGISTIC",), ("LOGISTIC", "QUANTIZE"), ("TANH",)])
def test_one_unit_fully_connected_then_lookups(lookups):
    """A one-unit FULLY_CONNECTED (FullyConnectedQuantizedFoldedScalar) whose score only one-value lookups read:
    one step, FullyConnectedScalarLookup storing the composed table's entry; against BUILTIN_REF."""
    from litert_py.schema.builder import ModelBuilder

    rng = np.random.default_rng(9)
    b = ModelBuilder()
    x = b.input("x", (1, 20), I8, quantization=quant(0.05, -3))
    w = b.const("w", rng.integers(-127, 128, (1, 20)).astype(I8), quantization=quant(0.01))
    bias = b.const("bias", np.array([-300], np.int32), quantization=quant(0.05 * 0.01))
    y = b.tensor("y", (1, 1), I8, quantization=quant(0.04, 5))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], {})
    for k, op in enumerate(lookups):
        if op == "QUANTIZE":
            t = b.tensor(f"l{k}", (1, 1), U8, quantization=quant(1.0 / 200, 7))
        else:
            t = b.tensor(
                f"l{k}", (1, 1), I8, quantization=quant(1.0 / 256, -128) if op == "LOGISTIC" else quant(1.0 / 128, 0)
            )
        b.op(op, [y], [t])
        y = t
    b.output(y)
    xs = [rng.integers(-128, 128, (1, 20)).astype(I8) for _ in range(100)]
    ours, got, want = invokes(b.build(), xs)
    assert _prepared(ours) == ["FullyConnectedScalarLookup"]
    np.testing.assert_array_equal(got, want)
