"""The oracle (ai-edge-litert) and helpers to build single-op models and run them in both interpreters.

The oracle is a test dependency: when it is missing every test that needs it fails (never skips).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import event
from hypothesis.errors import InvalidArgument

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.model import QuantizationParameters
from tests.compare import assert_close  # noqa: F401  (the comparator; tests import it from either module)

__all__ = [
    "T",
    "single_op_model",
    "run_ours",
    "run_litert",
    "run_both",
    "oracle",
    "quant",
    "assert_close",
    "litert_fails",
    "ours_fails",
]


def oracle():
    """ai_edge_litert's (Interpreter, OpResolverType); fails the calling test when it is not installed."""
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
        from ai_edge_litert.interpreter import OpResolverType
    except ImportError as e:  # a missing oracle is a failure, never a skip
        pytest.fail(f"the oracle ai-edge-litert is required for this test: {e}")
    return LiteRT, OpResolverType


def require(*modules: str):
    """Import test dependencies (extra ``[test]``: onnxruntime, ray, ...). Missing ones fail the test under CI
    (CI must install them) and skip it elsewhere, so a partial local install still runs the rest."""
    import importlib
    import os

    try:
        return [importlib.import_module(m) for m in modules]
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(modules)}: a test dependency (pip install -e '.[test]'): {e}")
        pytest.skip(f"{', '.join(modules)} not installed: {e}")


@dataclass
class T:
    """A tensor of a test model: shape, dtype, optional constant data and quantization."""

    shape: Sequence[int]
    dtype: object = np.float32
    data: object = None
    q: QuantizationParameters | None = None
    name: str | None = None

    @staticmethod
    def const(data, dtype=None, q=None) -> T:
        arr = np.asarray(data, dtype=dtype)
        return T(arr.shape, arr.dtype, arr, q)


def add_inputs(b: ModelBuilder, inputs: Sequence[T | None]) -> list[int]:
    """The tensors of an operator's inputs: constants for the ones with data, graph inputs (in order) for the
    others, -1 for None (an omitted optional input)."""
    idx = []
    for k, t in enumerate(inputs):
        if t is None:
            idx.append(-1)
        elif t.data is not None:
            idx.append(b.tensor(t.name or f"c{k}", t.shape, t.dtype, data=t.data, quantization=t.q))
        else:
            idx.append(b.input(t.name or f"in{k}", t.shape, t.dtype, quantization=t.q))
    return idx


def single_op_model(
    op: str,
    inputs: Sequence[T | None],
    outputs: Sequence[T],
    options: dict | None = None,
    version: int = 1,
    custom_code: str | None = None,
    custom_options: bytes = b"",
) -> bytes:
    """A model with one operator. Inputs without data become graph inputs (in order); None is an omitted
    optional input (-1)."""
    b = ModelBuilder()
    idx = add_inputs(b, inputs)
    outs = [b.tensor(t.name or f"out{k}", t.shape, t.dtype, quantization=t.q) for k, t in enumerate(outputs)]
    b.op(op, idx, outs, options, version=version, custom_code=custom_code, custom_options=custom_options)
    b.output(*outs)
    return b.build()


def _run(it, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    details = it.get_input_details()
    for d, x in zip(details, inputs):
        if list(d["shape"]) != list(np.shape(x)):
            it.resize_tensor_input(d["index"], list(np.shape(x)))
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], np.asarray(x))
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def run_ours(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return _run(Interpreter(model_content=model), inputs)


def run_litert(model: bytes, inputs: Sequence[np.ndarray], resolver: str = "BUILTIN_REF") -> list[np.ndarray]:
    LiteRT, OpResolverType = oracle()
    it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver))
    return _run(it, inputs)


def run_both_unless_rejected(model: bytes, inputs: Sequence[np.ndarray], resolver: str = "BUILTIN_REF"):
    """(ours, LiteRT's) outputs; or None when LiteRT rejects the model (RuntimeError at prepare or invoke),
    after checking that litert_py refuses it too, with a PrepareError at allocate_tensors (a hypothesis event
    records the rejection)."""
    try:
        theirs = run_litert(model, inputs, resolver)
    except RuntimeError as e:
        with contextlib.suppress(InvalidArgument):  # outside a hypothesis test
            event(f"rejected by LiteRT: {str(e).splitlines()[0][:60] if str(e) else ''}")
        ours_fails(model, errors=PrepareError, at="allocate")
        return None
    return run_ours(model, inputs), theirs


def run_both(model: bytes, inputs: Sequence[np.ndarray], resolver: str = "BUILTIN_REF"):
    """(ours, LiteRT's) outputs of the same model on the same inputs."""
    return run_ours(model, inputs), run_litert(model, inputs, resolver)


def _fails(it, inputs, errors, at: str, match: str | None) -> None:
    def feed():
        it.allocate_tensors()
        details = it.get_input_details()
        xs = inputs if inputs is not None else [np.zeros(d["shape"], d["dtype"]) for d in details]
        for d, x in zip(details, xs):
            it.set_tensor(d["index"], x)

    if at == "allocate":
        with pytest.raises(errors, match=match):
            it.allocate_tensors()
        return
    if at == "invoke":
        feed()
    with pytest.raises(errors, match=match):
        if at == "any":
            feed()
        it.invoke()


def litert_fails(model: bytes, inputs: Sequence[np.ndarray] | None = None, errors=RuntimeError, at: str = "any"):
    """Assert that LiteRT (BUILTIN_REF) fails on ``model`` with one of ``errors``: at allocate_tensors (``at``
    "allocate"), at invoke after a successful allocate and set_tensor ("invoke"), or at any of the three ("any").
    ``inputs`` (zipped with the input details) default to zeros of each input's shape and dtype."""
    LiteRT, OpResolverType = oracle()
    _fails(
        LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF), inputs, errors, at, None
    )


def ours_fails(model: bytes, inputs=None, errors=RuntimeError, at: str = "any", match: str | None = None):
    """Assert that litert_py fails on ``model`` as ``litert_fails`` does for LiteRT, the message matching ``match``."""
    _fails(Interpreter(model_content=model), inputs, errors, at, match)


def compare_steps(model: bytes, inputs, **kwargs) -> list[str]:
    """Runs ours and BUILTIN_REF on ``inputs(detail)`` (the input arrays for the input's details), asserts every
    output equal; returns our prepared steps' class names (a fused step as ``Outer/Consumer``)."""
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model, **kwargs)
    results = []
    for it in (ours, theirs):
        it.allocate_tensors()
        d = it.get_input_details()[0]
        res = []
        for x in inputs(d):
            it.set_tensor(d["index"], x)
            it.invoke()
            res.append([it.get_tensor(o["index"]).copy() for o in it.get_output_details()])
        results.append(res)
    for got, want in zip(*results):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    names = []
    for _, op in ours._subgraphs[0].steps_nodes:
        inner = getattr(op, "consumer", None)
        names.append(type(op).__name__ + ("" if inner is None else "/" + type(inner).__name__))
    return names
