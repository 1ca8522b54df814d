"""The custom op NumericVerify against the oracle (LiteRT tflite/kernels/numeric_verify.cc, BUILTIN_REF).

Outputs are compared bit for bit (one float32 rounding of the dequantized value, one float32 subtraction);
when the tolerance check fails, both interpreters must fail the invoke with the same message.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, InvokeError, PrepareError
from litert_py.schema.model import QuantizationParameters
from tests.oracle import T, oracle, quant, run_litert, run_ours, single_op_model

OP = "NumericVerify"
RESOLVER = "BUILTIN_REF"
TOLERANCE = {OP: 0}  # exact: the output bits equal LiteRT's

_INT_TYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16}


def _options(**kw) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


def _model(q_t: T, ref_shape, options: bytes, out: T | None = None, extra: list | None = None) -> bytes:
    return single_op_model(
        "CUSTOM", [q_t, T(ref_shape), *(extra or [])], [out or T(q_t.shape)], custom_code=OP, custom_options=options
    )


def _outcome(run, model, inputs):
    """('ok', output bits) or ('error', LiteRT's message without the node line)."""
    try:
        (out,) = run(model, inputs)
    except RuntimeError as e:
        msg = str(e)
        return "error", msg.split("\nNode number")[0]
    return "ok", out


def _assert_same(model, inputs, case_id=""):
    ours = _outcome(run_ours, model, inputs)
    theirs = _outcome(lambda m, x: run_litert(m, x, RESOLVER), model, inputs)
    assert ours[0] == theirs[0], f"{case_id}: ours {ours}, LiteRT {theirs}"
    if ours[0] == "error":
        assert ours[1] == theirs[1], case_id
    else:
        assert ours[1].dtype == theirs[1].dtype == np.float32 and ours[1].shape == theirs[1].shape, case_id
        np.testing.assert_array_equal(ours[1].view(np.uint32), theirs[1].view(np.uint32), err_msg=case_id)


@st.composite
def case(draw):
    dtype_name = draw(st.sampled_from(["int8", "uint8", "int16", "float16"]))
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    quantization = draw(st.sampled_from(["per-tensor", "per-tensor", "per-channel", "none"]))
    if dtype_name == "float16":
        quantization = "none"
        x = (rng.standard_normal(shape) * 4).astype(np.float16)
        if draw(st.booleans()):  # any bit pattern: NaN payloads, infinities, subnormals, -0
            x = rng.integers(0, 1 << 16, shape).astype(np.uint16).view(np.float16)
        deq = x.astype(np.float32)
        q = None
    else:
        dtype = _INT_TYPES[dtype_name]
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        if quantization == "per-channel" and (dtype_name == "int16" or rank == 0):
            quantization = "per-tensor"
        if quantization == "per-channel":
            axis = draw(st.integers(0, rank - 1))
            n = shape[axis]
            if n == 1:
                quantization = "per-tensor"
            else:
                scales = tuple(float(np.float32(s)) for s in rng.uniform(1e-3, 0.5, n))
                zps = tuple(int(z) for z in rng.integers(-5, 6, n))
                q = QuantizationParameters(scale=scales, zero_point=zps, quantized_dimension=axis)
                cs = [n if k == axis else 1 for k in range(rank)]
                deq = (
                    np.float32(np.array(scales, np.float32).reshape(cs))
                    * (x.astype(np.float64) - np.array(zps).reshape(cs))
                ).astype(np.float32)
        if quantization == "per-tensor":
            scale = float(np.float32(draw(st.sampled_from([1e-4, 0.003, 0.1, 1 / 3, 2.5]))))
            zp = draw(st.integers(-10, 10)) if dtype_name != "uint8" else draw(st.integers(0, 255))
            q = quant(scale, zp)
            deq = (np.float64(scale) * (x.astype(np.float64) - zp)).astype(np.float32)
        elif quantization == "none":
            q = None
            deq = np.zeros(shape, np.float32)
    # References close to the dequantized values (within a few scales): some checks pass, some fail.
    noise = draw(st.sampled_from([0.0, 1e-4, 0.01, 0.5]))
    with np.errstate(all="ignore"):  # float16 infinities and NaNs
        ref = (deq + rng.standard_normal(shape) * noise).astype(np.float32)
    if draw(st.booleans()) and ref.size:  # a NaN difference never fails the check; an infinite one does
        ref.reshape(-1)[rng.integers(0, ref.size)] = rng.choice(np.array([np.nan, np.inf, -np.inf], np.float32))
    tolerance = draw(st.sampled_from([0.0, 0.05, 0.0999, 0.1, 0.5, 2.0, 100.0, 1e6]))
    log_if_failed = draw(st.booleans())
    q_t = T(shape, np.float16 if q is None and dtype_name == "float16" else x.dtype, q=q)
    model = _model(q_t, shape, _options(tolerance=tolerance, log_if_failed=log_if_failed))
    case_id = f"numeric-verify-{dtype_name}-{quantization}-tol{tolerance}-{'log' if log_if_failed else 'stats'}"
    return case_id, model, [x, ref]


@given(c=case())
def test_numeric_verify(c):
    case_id, model, inputs = c
    _assert_same(model, inputs, case_id)


def test_numeric_verify_reference_longer_than_input():
    # LiteRT reads the reference's first n values, whatever its shape.
    q = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    ref = np.linspace(-1, 1, 10).astype(np.float32)
    _assert_same(_model(T(q.shape, np.int8, q=quant(0.25, 1)), (10,), _options(tolerance=0.0)), [q, ref])


@pytest.mark.parametrize(
    "options",
    [
        {"tolerance": 1, "log_if_failed": 1},  # ints for AsFloat / AsBool
        {"tolerance": 0.1, "log_if_failed": 1.0},  # f64(f32(0.1)) >= 0.1
        {"tolerance": 0.5, "log_if_failed": 0.5},  # AsBool of 0.5: AsUInt64() == 0, false
        {"tolerance": True, "log_if_failed": True},
        {},
        {"tolerance": float("inf"), "log_if_failed": True},  # max_diff inf: nothing fails
        {"tolerance": float("nan"), "log_if_failed": True},  # NaN >= 0.1 is false: statistics only
    ],
    ids=["ints", "tolerance-0.1", "log-0.5", "bools", "empty-map", "tolerance-inf", "tolerance-nan"],
)
def test_numeric_verify_option_encodings(options):
    q = np.array([0, 2, 3], np.int8)
    ref = np.array([0.4, 1, 1.5], np.float32)
    _assert_same(_model(T((3,), np.int8, q=quant(0.5, 0)), (3,), _options(**options)), [q, ref])


def test_numeric_verify_options_not_a_map():
    # AsMap() of a non-map root is the empty map: tolerance 0, no check.
    q = np.array([0, 2, 3], np.int8)
    _assert_same(
        _model(T((3,), np.int8, q=quant(0.5, 0)), (3,), bytes(flexbuffers.Dumps(5))),
        [q, np.array([0.4, 1, 1.5], np.float32)],
    )


@pytest.mark.parametrize("log_if_failed", [False, True])
def test_numeric_verify_constant_input_evaluated_once(log_if_failed):
    """A constant quantized input is dequantized and compared once: later invokes keep the first output, and
    after a failed first invoke the next ones succeed (LiteRT sets float_input_initialized first)."""
    q = np.array([1, 2, 3], np.int8)
    model = _model(T.const(q, q=quant(0.5, 0)), (3,), _options(tolerance=0.5, log_if_failed=log_if_failed))
    LiteRT, OpResolverType = oracle()
    refs = [np.zeros(3, np.float32), np.ones(3, np.float32), np.full(3, 7, np.float32)]
    results = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
    ):
        it.allocate_tensors()
        ref_index = it.get_input_details()[0]["index"]
        out_index = it.get_output_details()[0]["index"]
        seen = []
        for r in refs:
            it.set_tensor(ref_index, r)
            try:
                it.invoke()
            except RuntimeError as e:
                seen.append(str(e).split("\n")[0])
                continue
            # LiteRT's output after a failed invoke is partly uninitialised: compare only that it succeeded.
            seen.append("ok" if log_if_failed else it.get_tensor(out_index).tolist())
        results.append(seen)
    assert results[0] == results[1]
    if log_if_failed:
        assert results[0][0].startswith("Mismatch: 0.000000 is quantized to 1") and results[0][1:] == ["ok", "ok"]
    else:
        assert results[0] == [[0.5, 1.0, 1.5]] * 3


def test_numeric_verify_failure_is_invoke_error():
    q = np.array([1, 2, 3], np.int8)
    model = _model(T((3,), np.int8, q=quant(0.1, 0)), (3,), _options(tolerance=0.2, log_if_failed=True))
    with pytest.raises(
        InvokeError,
        match=r"Mismatch: 0\.330000 is quantized to 3 with \(0\.100000, 0\)\. "
        r"abs\(0\.330000 - 0\.300000\) = 0\.030000 > 0\.020000 \(tolerance\)",
    ):
        run_ours(model, [q, np.array([0.1, 0.2, 0.33], np.float32)])


@pytest.mark.parametrize("out_dtype", [np.int8, np.int16, np.float32])
def test_numeric_verify_output_retyped_to_float32(out_dtype):
    """TF's debug models declare the output with the quantized type: LiteRT retypes it to float32 at prepare.
    Details before allocate_tensors show the declared type, after it float32 (tensor, output and op details), and
    the values are LiteRT's."""
    q = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    ref = np.array([[0.1, -0.2, 0.3], [0.4, 0.6, -0.6]], np.float32)
    model = _model(T((2, 3), np.int8, q=quant(0.1, 0)), (2, 3), _OPTS, out=T((2, 3), out_dtype, q=quant(0.1, 0)))
    LiteRT, OpResolverType = oracle()
    seen = []
    for it in (
        Interpreter(model_content=model),
        LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
    ):
        out = it.get_output_details()[0]["index"]
        before = it.get_tensor_details()[out]["dtype"]
        it.allocate_tensors()
        details = (it.get_output_details()[0]["dtype"], it.get_tensor_details()[out]["dtype"])
        op_types = it._get_ops_details()[0]["result_types"]
        for d, v in zip(it.get_input_details(), (q, ref)):
            it.set_tensor(d["index"], v)
        it.invoke()
        got = it.get_tensor(out)
        seen.append((before, details, op_types, got.dtype, got.tolist()))
    assert seen[0] == seen[1]
    assert seen[0][0] == out_dtype and seen[0][1] == (np.float32, np.float32) and seen[0][3] == np.float32


_PER_CHANNEL = QuantizationParameters(scale=(0.1, 0.2), zero_point=(0, 0), quantized_dimension=0)
_OPTS = _options(tolerance=0.0, log_if_failed=False)

ERRORS = {
    # LiteRT crashes on empty custom options (flexbuffers::GetRoot of nothing): refused at prepare.
    "numeric-verify-empty-options": lambda: _model(T((2, 3), np.int8, q=quant(0.1, 0)), (2, 3), b""),
    "numeric-verify-malformed-options": lambda: _model(T((2, 3), np.int8, q=quant(0.1, 0)), (2, 3), b"\x07"),
    "numeric-verify-float32-input": lambda: _model(T((2, 3), np.float32), (2, 3), _OPTS),
    "numeric-verify-int32-input": lambda: _model(T((2, 3), np.int32, q=quant(0.1, 0)), (2, 3), _OPTS),
    "numeric-verify-int8-reference": lambda: single_op_model(
        "CUSTOM",
        [T((2, 3), np.int8, q=quant(0.1, 0)), T((2, 3), np.int8, q=quant(0.1, 0))],
        [T((2, 3))],
        custom_code=OP,
        custom_options=_OPTS,
    ),
    "numeric-verify-reference-too-short": lambda: _model(T((2, 3), np.int8, q=quant(0.1, 0)), (5,), _OPTS),
    "numeric-verify-int16-per-channel": lambda: _model(T((2, 3), np.int16, q=_PER_CHANNEL), (2, 3), _OPTS),
    "numeric-verify-float16-per-channel": lambda: _model(T((2, 3), np.float16, q=_PER_CHANNEL), (2, 3), _OPTS),
    "numeric-verify-three-inputs": lambda: _model(
        T((2, 3), np.int8, q=quant(0.1, 0)), (2, 3), _OPTS, extra=[T((2, 3))]
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_numeric_verify_errors(name):
    with pytest.raises(PrepareError):
        Interpreter(model_content=ERRORS[name]()).allocate_tensors()
