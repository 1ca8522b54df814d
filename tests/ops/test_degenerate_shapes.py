"""Rank-0 and zero-size inputs for every op's case table, against ai-edge-litert.

The case table is the one the op dashboard runs (``tools/op_coverage.py``: every builtin op and default custom
op, every dtype path). Hypothesis draws, for every case of an op, a degenerate version of each graph input's
shape: rank 0, or the same rank with one drawn dimension 0. The rewritten models run in litert_py and in LiteRT
(in a forked child, so that a LiteRT crash costs nothing but that model). Then:

- LiteRT runs the model: litert_py must run it and give the same outputs (integers exactly), or, when every
  output is empty, may refuse it at prepare (its own shape checks; LiteRT checks less);
- LiteRT rejects it (an error): litert_py may reject it or run it;
- LiteRT crashes or hangs: litert_py must refuse it with its own error (PrepareError / InvokeError), never crash.

``KNOWN`` lists the exceptions, each with its reason (docs/litert-differences.md). Cases whose inputs come from
a generator of fixed size are left out, and so are rank-0 string inputs (ai-edge-litert's set_tensor garbles them:
it reads a pointer back, see tests/ops/_diff.py).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from litert_py.schema.reader import read_model
from litert_py.schema.writer import write_model
from tests.compare import mismatch
from tests.coverage_tool import coverage_tool
from tests.oracle import oracle

ROOT = Path(__file__).resolve().parents[2]


oc = coverage_tool()

#: examples per op: the CI profile stays within ~1 minute for the ~200 ops (LITERT_PY_DEGENERATE_EXAMPLES: more)
EXAMPLES = int(os.environ.get("LITERT_PY_DEGENERATE_EXAMPLES", 2 if os.environ.get("CI") else 4))

#: (ops, case label or None for any, what litert_py says or "differs"): LiteRT runs the degenerate model and
#: litert_py deliberately does not, or answers otherwise; the reason is the dict's value
_VARIABLE_OPS = ("VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE")
KNOWN: dict[tuple[tuple[str, ...], str | None, str], str] = {
    (
        ("FULLY_CONNECTED",),
        None,
        "not a multiple of the weights' input depth",
    ): "refused: LiteRT drops the input elements past the last whole row",
    (
        _VARIABLE_OPS,
        "assign-read",
        "holds shape",
    ): "refused: the variable's shape changed and the model reads the declared one; LiteRT copies stale bytes",
    (
        _VARIABLE_OPS,
        "call-once-init",
        "ok",
    ): "LiteRT segfaults on this string-variable model at every shape (the dashboard's crash list); litert_py runs it",
    (("LOG_SOFTMAX",), None, "rank 0"): "refused: LiteRT reads a dimension a rank-0 tensor lacks (garbage out)",
    (
        ("SUM", "REDUCE_PROD"),
        None,
        "LiteRT returns uninitialized values",
    ): "refused: LiteRT's quantized kernels return uninitialized values for an empty reduction",
    (
        ("STABLEHLO_GATHER",),
        None,
        "slice_sizes out of the operand's bounds",
    ): "refused: LiteRT reads outside the operand (garbage out)",
    (
        ("STABLEHLO_PAD",),
        None,
        "output dimension must be non-negative",
    ): "refused: a negative output dimension (StableHLO spec); LiteRT returns a [0, 0] tensor",
    (
        ("STABLEHLO_PAD",),
        None,
        "differs",
    ): "LiteRT's answer is wrong: any empty operand gives it a [0, 0] result, the spec's shape is e.g. [2, 0]",
    (
        ("STABLEHLO_SCATTER",),
        None,
        "updates' scatter dims must match the indices",
    ): "refused: updates that do not match the indices are invalid (StableHLO spec); LiteRT returns the operand",
    (("STRIDED_SLICE",), None, "selects 0 elements"): "refused: LiteRT reads outside the input (documented)",
    (
        ("STRIDED_SLICE",),
        None,
        "masks address input dimension 0 of a rank-0 input",
    ): "refused: LiteRT reads a dimension a rank-0 input lacks (garbage out)",
    (("NumericVerify",), None, "has fewer values than the input"): "refused: LiteRT reads past the reference",
    (("aeq.hadamard_rotation",), None, "LiteRT"): "refused: documented in the kernel (LiteRT reads dims it lacks)",
    (
        ("TFLite_Detection_PostProcess",),
        None,
        "differs",
    ): "no box: both give num_detections 0; LiteRT leaves the other outputs uninitialized, litert_py zeroes them",
}


def _known(op: str, label: str, what: str) -> str | None:
    return next(
        (why for (ops, lab, frag), why in KNOWN.items() if op in ops and lab in (None, label) and frag in what), None
    )


@st.composite
def degenerate_shapes(draw, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """One degenerate version of a case's input shapes: every input rank 0, or every input with the same
    dimension (counted from the end, so that broadcasting stays aligned) set to 0. Inputs of lower rank keep
    their shape."""
    rank = max((len(s) for s in shapes), default=0)
    if rank == 0 or draw(st.booleans(), label="rank 0"):
        return [() for _ in shapes]
    k = draw(st.integers(1, rank), label="empty dimension, from the end")
    return [s[: len(s) - k] + (0,) + s[len(s) - k + 1 :] if len(s) >= k else s for s in shapes]


def with_input_shapes(model: bytes, shapes: list[tuple[int, ...]]) -> bytes:
    """The model with its subgraph-0 inputs declared with ``shapes`` (and no shape signature)."""
    m = read_model(model)
    sg = m.subgraphs[0]
    tensors = list(sg.tensors)
    for i, shape in zip(sg.inputs, shapes):
        tensors[i] = dataclasses.replace(tensors[i], shape=tuple(shape), shape_signature=None)
    sg = dataclasses.replace(sg, tensors=tuple(tensors))
    return write_model(dataclasses.replace(m, subgraphs=(sg,) + tuple(m.subgraphs[1:])))


def _cases(op: str) -> list[tuple[str, object]]:
    out = []
    for path in oc.PATHS:
        try:
            cases = oc.build_cases(op, path)
        except Exception:  # noqa: BLE001 - a broken recipe is the dashboard's business (it reports it)
            continue
        if isinstance(cases, oc.Cell):
            continue
        out += [(path, c) for c in cases if c.inputs and all(i.gen is None for i in c.inputs)]
    return out


OPS = [op for op in oc.all_ops() if op in oc.RECIPES]


@pytest.fixture(scope="module", autouse=True)
def _oracle_loaded():
    oracle()  # fail (not skip) without ai-edge-litert; imported once, before the forks


@pytest.mark.parametrize("op", OPS)
@settings(
    max_examples=EXAMPLES,
    phases=[Phase.explicit, Phase.generate],  # a failure lists every case; no shrink
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_degenerate_inputs(op, data):
    cases = _cases(op)
    if not cases:
        return
    jobs, runs = [], []
    for k, (path, case) in enumerate(cases):
        shapes = data.draw(degenerate_shapes([tuple(i.shape) for i in case.inputs]), label=f"{path}/{case.label}")
        if any(s == () and np.dtype(i.dtype).kind == "S" for s, i in zip(shapes, case.inputs)):
            continue
        model = with_input_shapes(case.model, shapes)
        rng = np.random.default_rng(k)
        feeds = [[oc.draw(rng, dataclasses.replace(i, shape=s)) for i, s in zip(case.inputs, shapes)]]
        resolvers = (oc.OPT,) if (op, path) in oc.REF_BROKEN else (case.resolvers or (oc.REF, oc.OPT))
        jobs.append((model, feeds, resolvers))
        runs.append((path, case, shapes, model, feeds))
    enabled = faulthandler.is_enabled()
    faulthandler.disable()  # a LiteRT segfault in the fork is an expected result, not a traceback for the log
    try:
        results = oc.run_forked(jobs, timeout=20.0)
    finally:
        if enabled:
            faulthandler.enable()
    failures = []
    for (path, case, shapes, model, feeds), (kind, _, payload, _) in zip(runs, results):
        what = f"{op} {path} [{case.label}] inputs {shapes}"
        ours = oc.ours_run(model, feeds)
        if kind == "ok":
            if ours[0] != "ok":
                # a model litert_py finds invalid (its own shape checks) whose outputs are empty: nothing is lost
                nothing = "PrepareError" in ours[1] and all(np.size(t) == 0 for t in payload[0])
                if not nothing and not _known(op, case.label, ours[1]):
                    failures.append(f"{what}: LiteRT runs it, litert_py fails: {ours[1][:300]}")
                continue
            tol = {"rtol": case.rtol, "atol": case.atol}
            why = next((w for w in (mismatch(o, t, **tol) for o, t in zip(ours[1], payload)) if w), None)
            if why and not _known(op, case.label, "differs"):
                failures.append(f"{what}: {why}")
        elif kind == "crashed":
            refused = ours[0] != "ok" and any(t in ours[1] for t in ("PrepareError", "InvokeError"))
            if not refused and not _known(op, case.label, ours[0]):
                failures.append(f"{what}: LiteRT {payload}; litert_py must refuse it, got {ours[0]}")
    assert not failures, "\n".join(failures)
