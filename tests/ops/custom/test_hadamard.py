"""The custom op aeq.hadamard_rotation against the oracle (LiteRT tflite/kernels/hadamard_rotation.cc).

The oracle's BUILTIN_REF resolver lacks this custom op; BUILTIN_WITHOUT_DEFAULT_DELEGATES has it (LiteRT's
default registrations, no XNNPACK). Outputs are compared bit for bit: the transform is a fixed sequence of
float32 additions, subtractions and one multiplication per value.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from tests.oracle import T, run_both, single_op_model

OP = "aeq.hadamard_rotation"
RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
TOLERANCE = {OP: 0}  # exact: the output bits equal LiteRT's


def _model(shape, options, dtype=np.float32, out_dtype=None, out_shape=None, raw: bytes | None = None) -> bytes:
    return single_op_model(
        "CUSTOM",
        [T(shape, dtype)],
        [T(shape if out_shape is None else out_shape, out_dtype or dtype)],
        custom_code=OP,
        custom_options=bytes(flexbuffers.Dumps(options)) if raw is None else raw,
    )


def _values(rng, shape, dtype, specials: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3])).astype(np.float32)
    if specials and x.size:
        # Subnormals, signed zeros and infinities (inf - inf gives the default NaN on both sides).
        k = rng.integers(0, x.size, max(1, x.size // 8))
        x.reshape(-1)[k] = rng.choice(np.array([1e-40, -3e-42, 0.0, -0.0, np.inf, -np.inf, 3e38], np.float32), k.size)
    # int32 inputs are reinterpreted as float32 by LiteRT: their bits are float bit patterns (no NaN payloads).
    return x.view(np.int32) if dtype == np.int32 else x


@st.composite
def case(draw):
    rank = draw(st.sampled_from([2, 2, 3, 3, 4]))
    path = draw(
        st.sampled_from(["pow2", "pow2", "unrolled", "large", "large", "ragged", "not-pow2", "too-big", "negative"])
    )
    if path == "large":  # >= 2048 transformed values: litert_py's two-phase layout (any split of the stages)
        size = 1 << draw(st.integers(0, 12))
        rank = 2
        rows = max(1, (1 << draw(st.integers(11, 14))) // size)
        shape = (rows, size * draw(st.integers(1, 2)))
        x = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, np.float32, draw(st.booleans()))
        options = {"hadamard_size": size}
        return f"hadamard-float32-large-{size}-{rows}x{shape[1]}", _model(shape, options), x
    if path == "unrolled":  # FWHTFast's 64-wide unrolled variant (size >= 64)
        size = draw(st.sampled_from([64, 128, 256, 512]))
    elif path == "not-pow2":
        size = draw(st.sampled_from([3, 5, 6, 12]))
    elif path == "negative":
        size = draw(st.sampled_from([-1, -2, -4, -8]))
    else:
        size = 1 << draw(st.integers(0, 5))
    abs_size = abs(size)
    if path == "ragged":  # feature size not a multiple: blocks straddle rows
        feature = abs_size * draw(st.integers(1, 3)) + draw(st.integers(1, max(1, abs_size - 1)))
    elif path == "too-big":
        size = max(size, 2)
        feature = draw(st.integers(1, size - 1))
    else:
        feature = abs_size * draw(st.integers(1, 3))
    lead = [draw(st.integers(1, 3)) for _ in range(rank - 1)]
    if rank == 2:
        shape = (lead[0], feature)
    elif rank == 3:
        shape = (lead[0], lead[1], feature)
    else:  # rank 4+: LiteRT reads only dims[0] and dims[1] as (features, feature_size)
        shape = (lead[0], feature, lead[1], lead[2])
    dtype = draw(st.sampled_from([np.float32, np.float32, np.int32]))
    out_dtype = draw(st.sampled_from([np.float32, np.int32]))
    specials = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    x = _values(np.random.default_rng(seed), shape, dtype, specials)
    options = {"hadamard_size": size, "random_binary_vector": draw(st.lists(st.sampled_from([-1, 1]), max_size=8))}
    case_id = f"hadamard-{np.dtype(dtype).name}-{np.dtype(out_dtype).name}-{path}-{size}-{'x'.join(map(str, shape))}"
    return case_id, _model(shape, options, dtype, out_dtype), x


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


@given(c=case())
def test_hadamard_rotation(c):
    case_id, model, x = c
    (ours,), (theirs,) = run_both(model, [x], RESOLVER)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, case_id
    np.testing.assert_array_equal(_bits(ours), _bits(theirs), err_msg=case_id)


CASES = {
    # the largest unrolled path: 4096 = 64 chunks of 64, then 6 wide stages
    "hadamard-float32-4096": ((2, 4096), {"hadamard_size": 4096}, np.float32, None, None),
    "hadamard-float32-size-as-float": ((2, 16), {"hadamard_size": 8.75}, np.float32, None, None),  # AsInt32: 8
    "hadamard-float32-size-wraps-int32": ((2, 16), {"hadamard_size": 2**32 + 8}, np.float32, None, None),  # 8
    "hadamard-float32-size-1": ((3, 5), {"hadamard_size": 1}, np.float32, None, None),  # only the * 1.0
    "hadamard-float32-output-reshaped": ((2, 8), {"hadamard_size": 4}, np.float32, None, (16,)),
    "hadamard-float32-binary-vector-not-a-vector": (
        (2, 8),
        {"hadamard_size": 8, "random_binary_vector": 3},
        np.float32,
        None,
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hadamard_cases(name):
    shape, options, dtype, out_dtype, out_shape = CASES[name]
    x = _values(np.random.default_rng(len(name)), shape, dtype, specials=False)
    (ours,), (theirs,) = run_both(_model(shape, options, dtype, out_dtype, out_shape), [x], RESOLVER)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(_bits(ours), _bits(theirs))


@pytest.mark.parametrize("size,rows", [(8, 4), (64, 4), (16, 512)], ids=["small", "unrolled", "two-phase"])
def test_hadamard_nan_payloads(size, rows):
    """One NaN per block: every butterfly meeting it returns that NaN (quieted), whatever the operand order, so
    the payloads must come out as LiteRT's. (Two different NaNs meeting would depend on the compiler's operand
    order; they are not tested.)"""
    rng = np.random.default_rng(size + rows)
    x = rng.standard_normal((rows, size)).astype(np.float32)
    x.view(np.uint32)[:, rng.integers(0, size)] = 0x7F800000 | rng.integers(1, 1 << 23, rows).astype(np.uint32)
    (ours,), (theirs,) = run_both(_model(x.shape, {"hadamard_size": size}), [x], RESOLVER)
    np.testing.assert_array_equal(_bits(ours), _bits(theirs))


ERRORS = {
    # LiteRT crashes on these (empty options, division by zero) or reads past dims (rank 1): refused.
    "hadamard-empty-options": lambda: _model((2, 8), {}, raw=b""),
    "hadamard-malformed-options": lambda: _model((2, 8), {}, raw=b"\x01\x02"),
    "hadamard-size-missing": lambda: _model((2, 8), {"random_binary_vector": [1, -1]}),
    "hadamard-size-0": lambda: _model((2, 8), {"hadamard_size": 0}),
    "hadamard-size-string": lambda: _model((2, 8), {"hadamard_size": "x"}),
    "hadamard-rank-1": lambda: _model((8,), {"hadamard_size": 4}),
    "hadamard-int8-input": lambda: _model((2, 8), {"hadamard_size": 4}, np.int8),
    "hadamard-float16-input": lambda: _model((2, 8), {"hadamard_size": 4}, np.float16, np.float32),
    "hadamard-int8-output": lambda: _model((2, 8), {"hadamard_size": 4}, np.float32, np.int8),
    "hadamard-output-too-small": lambda: _model((2, 8), {"hadamard_size": 4}, out_shape=(2, 4)),
    "hadamard-output-too-big": lambda: _model((2, 8), {"hadamard_size": 4}, out_shape=(2, 16)),
    "hadamard-two-inputs": lambda: single_op_model(
        "CUSTOM",
        [T((2, 8)), T((2, 8))],
        [T((2, 8))],
        custom_code=OP,
        custom_options=bytes(flexbuffers.Dumps({"hadamard_size": 4})),
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_hadamard_errors(name):
    with pytest.raises(PrepareError):
        Interpreter(model_content=ERRORS[name]()).allocate_tensors()
