"""Hostile models: zero points outside int32, nodes writing their own input, other byte orders, and the memory
budget (LITERT_PY_MAX_ARENA_BYTES) before every allocation sized by the model or by input values.

Each case is checked against the oracle where LiteRT defines the behaviour, and the interpreter must stay
usable after the documented error.
"""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py import limits
from litert_py.errors import InvokeError, PrepareError, ResourceLimitError
from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.model import DimensionMetadata, SparsityParameters
from tests.oracle import oracle


def _litert(model: bytes):
    LiteRT, OpResolverType = oracle()
    return LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)


@pytest.fixture
def budget(monkeypatch):
    """A 1 MiB budget for the test."""
    monkeypatch.setattr(limits, "MAX_ARENA_BYTES", 1 << 20)
    return 1 << 20


# -- item 1: zero points outside int32 ------------------------------------------------------------
@pytest.mark.parametrize("zp", [2**31, 2**31 + 5, 2**62, -(2**31) - 1, -(2**40) + 3])
def test_out_of_int32_zero_point_wraps_like_litert(zp):
    """LiteRT keeps zero points in C int: the details and the kernels see the value modulo 2**32."""
    b = ModelBuilder()
    x = b.input("x", [6], np.int8, quantization=quant(0.5, zp))
    y = b.tensor("y", [6], np.float32)
    b.op("DEQUANTIZE", [x], [y])
    b.output(y)
    model = b.build()
    ours, theirs = litert_py.Interpreter(model_content=model), _litert(model)
    for it in (ours, theirs):
        it.allocate_tensors()
    for key in ("get_input_details", "get_tensor_details"):
        a, e = getattr(ours, key)()[0], getattr(theirs, key)()[0]
        assert a["quantization"] == e["quantization"]
        np.testing.assert_array_equal(
            a["quantization_parameters"]["zero_points"], e["quantization_parameters"]["zero_points"]
        )
        assert a["quantization_parameters"]["zero_points"].dtype == e["quantization_parameters"]["zero_points"].dtype
    x_val = np.array([-128, -1, 0, 1, 5, 127], np.int8)
    for it in (ours, theirs):
        it.set_tensor(it.get_input_details()[0]["index"], x_val)
        it.invoke()
    np.testing.assert_array_equal(ours.get_tensor(1), theirs.get_tensor(1))


# -- item 4: a node whose output is one of its inputs -----------------------------------------------
def _self_io_model() -> bytes:
    b = ModelBuilder()
    x = b.input("x", [4], np.float32)
    t = b.tensor("t", [4], np.float32)
    c = b.const("c", np.ones(4, np.float32))
    b.op("ADD", [t, c], [t])
    b.op("ADD", [x, t], [t])
    b.output(t)
    return b.build()


def test_output_that_is_its_own_input_is_refused_like_litert():
    model = _self_io_model()
    with pytest.raises(RuntimeError) as theirs:
        _litert(model).allocate_tensors()
    it = litert_py.Interpreter(model_content=model)  # construction succeeds, as in LiteRT
    assert [d["index"] for d in it.get_input_details()] == [0]
    with pytest.raises(PrepareError) as ours:
        it.allocate_tensors()
    assert str(ours.value) == str(theirs.value).strip()
    assert str(ours.value).splitlines() == [
        "Tensor 1 is both input 0 and output 0",
        "Tensor 1 is both input 1 and output 0",
        "AllocateTensors() called on inconsistent model.",
    ]


def test_graph_input_written_by_its_reader_is_refused():
    b = ModelBuilder()
    x = b.input("x", [4], np.float32)
    b.op("ADD", [x, b.const("c", np.ones(4, np.float32))], [x])
    b.output(x)
    it = litert_py.Interpreter(model_content=b.build())
    with pytest.raises(PrepareError, match="Tensor 0 is both input 0 and output 0"):
        it.allocate_tensors()


# -- item 7: a value in the other byte order ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [">f4", ">i4", ">i2", ">f8", ">u2"])
def test_set_tensor_converts_other_byte_order(dtype):
    """LiteRT copies the raw bytes (giving byte-swapped numbers); litert_py converts to the same values."""
    want = np.dtype(dtype).newbyteorder("=")
    b = ModelBuilder()
    x = b.input("x", [5], want)
    y = b.tensor("y", [5], want)
    b.op("RESHAPE", [x, b.const("s", np.array([5], np.int32))], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    value = np.arange(5).astype(dtype)
    it.set_tensor(0, value)
    it.invoke()
    out = it.get_tensor(1)
    assert out.dtype == want
    np.testing.assert_array_equal(out, np.arange(5))


def test_set_tensor_other_type_still_refused():
    b = ModelBuilder()
    x = b.input("x", [2], np.float32)
    y = b.tensor("y", [2], np.float32)
    b.op("RELU", [x], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    with pytest.raises(ValueError, match="Got value of type FLOAT64 but expected type FLOAT32"):
        it.set_tensor(0, np.zeros(2, ">f8"))


# -- item 1 / 2: sparse constants ---------------------------------------------------------------------
def _sparse_fc_model(n: int) -> bytes:
    """FULLY_CONNECTED with an [n, n] CSR weight holding a single value: a few hundred bytes that densify to
    4 n^2 bytes."""
    sp = SparsityParameters(
        traversal_order=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=n),
            DimensionMetadata(
                format=1,
                array_segments=(0,) + (1,) * n,
                array_indices=(0,),
                array_segments_type=1,
                array_indices_type=1,
            ),
        ),
    )
    b = ModelBuilder()
    x = b.input("x", [1, n], np.float32)
    w = b.tensor("w", [n, n], np.float32, data=np.ones(1, np.float32).tobytes(), sparsity=sp)
    y = b.tensor("y", [1, n], np.float32)
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    return b.build()


def test_sparse_constant_over_budget_is_refused_before_densifying(budget):
    model = _sparse_fc_model(40000)  # 6.4 GB dense
    assert len(model) < 400_000
    with pytest.raises(ResourceLimitError, match="densifying a sparse tensor of shape \\[40000, 40000\\]"):
        litert_py.Interpreter(model_content=model)


def test_sparse_constant_within_budget_still_runs(budget):
    it = litert_py.Interpreter(model_content=_sparse_fc_model(64))
    it.allocate_tensors()
    it.set_tensor(0, np.ones((1, 64), np.float32))
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"])[0, 0] == 1.0


def test_resource_limit_error_is_both_prepare_and_invoke_error():
    assert issubclass(ResourceLimitError, PrepareError) and issubclass(ResourceLimitError, InvokeError)
    assert issubclass(ResourceLimitError, RuntimeError)


# -- item 6: degenerate quantization parameters give no numpy warnings --------------------------------
def _degenerate(case: str) -> bytes:
    b = ModelBuilder()
    if case == "fc-zero-output-scale":
        x = b.input("x", [1, 4], np.int8, quantization=quant(1.0, 0))
        w = b.const("w", np.ones((4, 4), np.int8), quantization=quant(1.0, 0))
        bias = b.const("b", np.ones(4, np.int32), quantization=quant(1.0, 0))
        y = b.tensor("y", [1, 4], np.int8, quantization=quant(0.0, 0))
        b.op("FULLY_CONNECTED", [x, w, bias], [y])
    else:
        scale = {"dequantize-huge-scale": 1e38, "dequantize-inf-scale": float("inf")}[case]
        x = b.input("x", [256], np.int8, quantization=quant(scale, 3))
        y = b.tensor("y", [256], np.float32)
        b.op("DEQUANTIZE", [x], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("case", ["fc-zero-output-scale", "dequantize-huge-scale", "dequantize-inf-scale"])
def test_degenerate_quantization_gives_no_warnings_and_litert_outcome(case, recwarn):
    model = _degenerate(case)
    theirs = _litert(model)
    try:
        theirs.allocate_tensors()
    except RuntimeError:
        theirs = None
    ours = litert_py.Interpreter(model_content=model)
    if theirs is None:
        with pytest.raises(PrepareError):
            ours.allocate_tensors()
    else:
        ours.allocate_tensors()
        x = np.arange(-128, 128, dtype=np.int8)
        for it in (ours, theirs):
            it.set_tensor(0, x)
            it.invoke()
        np.testing.assert_array_equal(ours.get_tensor(1), theirs.get_tensor(1))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in recwarn]


# -- item 2: outputs sized by runtime values are checked against the budget ---------------------------
_BIG = 1 << 16  # a dimension: _BIG * _BIG elements are far over the 1 MiB test budget
# op -> (inputs: (name, dtype, small value, huge value) or a constant array, output dtype, options)
_RUNTIME_SHAPED = {
    "FILL": ([("dims", np.int32, [2, 3], [_BIG, _BIG]), np.float32(1.5)], np.float32, None),
    "BROADCAST_TO": ([np.ones((1, 1), np.float32), ("shape", np.int32, [2, 3], [_BIG, _BIG])], np.float32, None),
    "TILE": ([np.ones((1, 2), np.float32), ("multiples", np.int32, [2, 3], [_BIG, _BIG])], np.float32, None),
    "PAD": (
        [np.ones((1, 2), np.float32), ("paddings", np.int32, [[0, 1], [1, 0]], [[0, _BIG], [_BIG, 0]])],
        np.float32,
        None,
    ),
    "ONE_HOT": (
        [np.arange(256, dtype=np.int32) % 3, ("depth", np.int32, 3, 1 << 24), np.float32(1), np.float32(0)],
        np.float32,
        dict(axis=-1),
    ),
    "RANGE": ([np.int32(0), ("limit", np.int32, 5, 2**31 - 1), np.int32(1)], np.int32, None),
    "SCATTER_ND": (
        [np.zeros((1, 2), np.int32), np.ones(1, np.float32), ("shape", np.int32, [2, 3], [_BIG, _BIG])],
        np.float32,
        None,
    ),
    "RESIZE_NEAREST_NEIGHBOR": (
        [np.ones((1, 2, 2, 1), np.float32), ("size", np.int32, [3, 3], [_BIG, _BIG])],
        np.float32,
        None,
    ),
    "RANDOM_UNIFORM": ([("shape", np.int32, [2, 3], [_BIG, _BIG])], np.float32, None),
    "UNSORTED_SEGMENT_SUM": (
        [np.ones((2, 3), np.float32), np.zeros(2, np.int32), ("num_segments", np.int32, 2, _BIG * 256)],
        np.float32,
        None,
    ),
    "SPARSE_TO_DENSE": (
        [np.zeros((1, 2), np.int32), ("shape", np.int32, [2, 3], [_BIG, _BIG]), np.ones(1, np.float32), np.float32(0)],
        np.float32,
        None,
    ),
}


def _runtime_shaped_model(op: str) -> tuple[bytes, list]:
    specs, out_dtype, options = _RUNTIME_SHAPED[op]
    b = ModelBuilder()
    ins, runtime = [], []
    for k, s in enumerate(specs):
        if isinstance(s, tuple):
            name, dtype, small, big = s
            small, big = np.array(small, dtype), np.array(big, dtype)
            ins.append(b.input(name, small.shape, dtype))
            runtime.append((small, big))
        else:
            ins.append(b.const(f"c{k}", s))
    y = b.tensor("y", [], out_dtype)
    b.op(op, ins, [y], options, version=2 if op == "BROADCAST_TO" else 1)
    b.output(y)
    return b.build(), runtime


@pytest.mark.parametrize("op", sorted(_RUNTIME_SHAPED))
def test_runtime_shaped_output_over_budget_is_refused_and_interpreter_stays_usable(op, budget):
    model, runtime = _runtime_shaped_model(op)
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    details = it.get_input_details()
    for d, (_, big) in zip(details, runtime):
        it.set_tensor(d["index"], big)
    with pytest.raises(ResourceLimitError, match="over the limit of 1048576"):
        it.invoke()
    for d, (small, _) in zip(details, runtime):
        it.set_tensor(d["index"], small)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert 0 < out.size <= 768


def test_budget_refusal_inside_a_while_body_keeps_its_type(budget):
    """A runtime-shaped allocation in a called subgraph: the same documented error reaches the caller."""
    b = ModelBuilder()
    n = b.input("n", [], np.int32)
    out = b.tensor("n_out", [], np.int32)
    b.op("WHILE", [n], [out], dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(out)
    b.subgraph("cond")
    cn = b.input("n", [], np.int32)
    c = b.tensor("c", [], np.bool_)
    b.op("LESS", [cn, b.const("lim", np.int32(_BIG * 2))], [c])
    b.output(c)
    b.subgraph("body")
    bn = b.input("n", [], np.int32)
    dims, filled, total, n2 = (
        b.tensor("dims", [2], np.int32),
        b.tensor("f", [], np.float32),
        b.tensor("s", [], np.float32),
        b.tensor("n2", [], np.int32),
    )
    b.op("PACK", [bn, bn], [dims], dict(values_count=2, axis=0))
    b.op("FILL", [dims, b.const("v", np.float32(1))], [filled])
    b.op("SUM", [filled, b.const("ax", np.array([0, 1], np.int32))], [total])
    b.op("MUL", [bn, b.const("two", np.int32(2))], [n2])
    b.output(n2)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    it.set_tensor(0, np.int32(1))
    with pytest.raises(ResourceLimitError, match="FILL's output of shape"):
        it.invoke()
    it.set_tensor(0, np.int32(_BIG * 2))  # the body never runs
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"]) == _BIG * 2


# -- found by tests/fuzz: a dimension over int32 in a zero-element output -----------------------------
@pytest.mark.parametrize("multiples", [[1 << 30, 1], [(1 << 31) - 1, 5]])
def test_dimension_over_int32_is_refused_not_overflowed(multiples):
    """TILE of a [2, 0] input by runtime multiples: zero elements, yet a dimension LiteRT's int32 dims cannot
    hold; get_output_details() used to raise a raw OverflowError."""
    b = ModelBuilder()
    x = b.input("x", [2, 0], np.float32)
    m = b.input("m", [2], np.int32)
    y = b.tensor("y", [], np.float32)
    b.op("TILE", [x, m], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    it.allocate_tensors()
    it.set_tensor(1, np.array(multiples, np.int32))
    with pytest.raises(InvokeError, match="over the int32 limit"):
        it.invoke()
    it.get_output_details()
    it.set_tensor(1, np.array([2, 3], np.int32))
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"]).shape == (4, 0)


def test_static_dimension_over_int32_is_refused_at_prepare():
    b = ModelBuilder()
    x = b.input("x", [2, 0], np.float32)
    y = b.tensor("y", [], np.float32)
    b.op("TILE", [x, b.const("m", np.array([1 << 30, 1], np.int32))], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    with pytest.raises(PrepareError, match="over the int32 limit"):
        it.allocate_tensors()
    it.get_output_details()


# -- found by tests/fuzz: internal exceptions that were bugs or unnamed refusals -----------------------
@pytest.mark.parametrize("qtype", [np.int8, np.uint8, np.int16])
def test_quantize_of_a_scalar_matches_litert(qtype):
    """QUANTIZE of a 0-d float input raised TypeError ('return arrays must be of ArrayType')."""
    zp = 0 if qtype == np.int16 else 3
    b = ModelBuilder()
    x = b.input("x", [], np.float32)
    y = b.tensor("y", [], qtype, quantization=quant(0.015625, zp))
    b.op("QUANTIZE", [x], [y])
    b.output(y)
    model = b.build()
    ours, theirs = litert_py.Interpreter(model_content=model), _litert(model)
    for v in (-2.4317012, 0.5, 1e9, float("nan")):
        for it in (ours, theirs):
            it.allocate_tensors()
            it.set_tensor(0, np.array(v, np.float32))
            it.invoke()
        np.testing.assert_array_equal(ours.get_tensor(1), theirs.get_tensor(1))


# the divisions LiteRT refuses at a zero divisor (float DIV and FLOOR_MOD give inf/NaN instead)
@pytest.mark.parametrize(
    ("op", "dtype"), [("DIV", np.int32), ("FLOOR_DIV", np.int32), ("FLOOR_DIV", np.float32), ("FLOOR_MOD", np.int32)]
)
def test_division_by_zero_is_an_invoke_error_like_litert(op, dtype):
    """Refused as LiteRT refuses it (at invoke, a RuntimeError), with our InvokeError and no ZeroDivisionError."""
    b = ModelBuilder()
    x, d = b.input("x", [3], dtype), b.input("d", [3], dtype)
    y = b.tensor("y", [3], dtype)
    b.op(op, [x, d], [y])
    b.output(y)
    model = b.build()
    theirs = _litert(model)
    theirs.allocate_tensors()
    theirs.set_tensor(0, np.ones(3, dtype))
    theirs.set_tensor(1, np.array([1, 0, 2], dtype))
    with pytest.raises(RuntimeError):
        theirs.invoke()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    it.set_tensor(0, np.ones(3, dtype))
    it.set_tensor(1, np.array([1, 0, 2], dtype))
    with pytest.raises(InvokeError) as e:
        it.invoke()
    assert "ZeroDivisionError" not in str(e.value) and not isinstance(e.value.__cause__, ZeroDivisionError)
    it.set_tensor(1, np.array([1, 3, 2], dtype))
    it.invoke()


@pytest.mark.parametrize("op", ["GATHER_ND", "GATHER"])
def test_index_out_of_range_is_an_invoke_error_like_litert(op):
    b = ModelBuilder()
    x = b.input("x", [3, 2], np.float32)
    idx = b.input("i", [2, 1] if op == "GATHER_ND" else [2], np.int32)
    y = b.tensor("y", [2, 2], np.float32)
    b.op(op, [x, idx], [y], dict(axis=0) if op == "GATHER" else None)
    b.output(y)
    model = b.build()
    bad = np.array([1, 7], np.int32).reshape(-1, 1) if op == "GATHER_ND" else np.array([1, 7], np.int32)
    theirs = _litert(model)
    theirs.allocate_tensors()
    theirs.set_tensor(0, np.ones((3, 2), np.float32))
    theirs.set_tensor(1, bad)
    with pytest.raises(RuntimeError):
        theirs.invoke()
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    it.set_tensor(0, np.ones((3, 2), np.float32))
    it.set_tensor(1, bad)
    with pytest.raises(InvokeError) as e:
        it.invoke()
    assert "IndexOutOfBounds:" not in str(e.value) and "IndexError:" not in str(e.value)
    it.set_tensor(1, bad % 3)
    it.invoke()


@pytest.mark.parametrize(("scales", "why"), [((float("inf"), 1.0), "not finite"), ((1e30, 1e-40), "outside the")])
def test_requantize_with_an_unrepresentable_multiplier_is_refused_with_its_own_message(scales, why):
    """int8 -> int8 QUANTIZE whose scale ratio is inf or needs a shift over 31 bits: was a PrepareError
    wrapping an internal ValueError. (LiteRT runs into undefined behaviour there: not run here.)"""
    b = ModelBuilder()
    x = b.input("x", [2], np.int8, quantization=quant(scales[0], 0))
    y = b.tensor("y", [2], np.int8, quantization=quant(scales[1], 0))
    b.op("QUANTIZE", [x], [y])
    b.output(y)
    it = litert_py.Interpreter(model_content=b.build())
    with pytest.raises(PrepareError, match=f"requantization multiplier .* {why}") as e:
        it.allocate_tensors()
    assert e.value.__cause__ is None
