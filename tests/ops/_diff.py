"""Helpers shared by the data-movement, resize and quantize op tests: the dtypes they cover, a
differential check that also accepts "both runtimes reject the model", and a two-op model that exercises
an op's dynamic (value-dependent) output shape."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import assume

from litert_py import PrepareError
from litert_py.errors import LiteRTError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import T, add_inputs, run_litert, run_ours

#: Every dtype a data-movement op may see; strings are numpy object arrays of bytes.
ALL_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
    "string": np.bytes_,
}


def check_both(
    model: bytes,
    inputs: Sequence[np.ndarray],
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
    resolver: str = "BUILTIN_REF",
    skip_ours: Sequence[str] = (),
) -> list[np.ndarray] | None:
    """Run the model in both runtimes: equal outputs, or both reject it (ours with a litert_py error).

    ``skip_ours``: message fragments of prepare errors by which litert_py deliberately refuses a model that
    LiteRT runs into uninitialized memory; such a draw is discarded (there is nothing to compare).
    """
    # ai-edge-litert's set_tensor garbles a rank-0 string (it reads back a pointer): nothing to compare.
    # (assume only where a draw is discarded: hypothesis deprecates calling it from a plain test at all)
    if any(np.ndim(x) == 0 and np.asarray(x).dtype == object for x in inputs):
        assume(False)
    try:
        ours = run_ours(model, inputs)
        ours_err = None
    except LiteRTError as e:
        ours, ours_err = None, e
    if ours_err is not None and isinstance(ours_err, PrepareError) and any(s in str(ours_err) for s in skip_ours):
        assume(False)
    try:
        theirs = run_litert(model, inputs, resolver)
        theirs_err = None
    except (RuntimeError, ValueError) as e:
        theirs, theirs_err = None, e
    if (
        theirs_err is not None
        and "Invalid tensor size" in str(theirs_err)
        and ours is not None
        and any(o.size == 0 for o in ours)
    ):
        assume(False)  # ai-edge-litert's get_tensor cannot read an empty dynamic tensor: nothing to compare
    if theirs_err is not None or ours_err is not None:
        assert theirs_err is not None and ours_err is not None, (
            f"only one runtime failed: litert_py: {ours_err!r}; LiteRT: {theirs_err!r}"
        )
        assert isinstance(ours_err, RuntimeError | ValueError)
        RUNS.rejected += 1
        return None
    assert_close(ours, theirs, rtol=rtol, atol=atol)
    RUNS.compared += 1
    return ours


class _Runs:
    """check_both's tally for the current test (reset and checked by tests/ops/conftest.py): a test whose every
    case was rejected by both runtimes compared nothing, and fails."""

    compared = 0
    rejected = 0

    def reset(self) -> None:
        self.compared = self.rejected = 0

    def check(self) -> None:
        """Fail when check_both ran in this test but compared nothing (both runtimes rejected every case)."""
        assert self.rejected == 0 or self.compared > 0, (
            f"check_both: both runtimes rejected all {self.rejected} case(s) of this test; it compared nothing"
        )


RUNS = _Runs()


def chain_model(
    op: str, inputs: Sequence[T | None], n_outputs: int, options: dict | None = None, out_dtype=None, out_q=None
) -> bytes:
    """``op`` (whose outputs may be dynamic) followed by a RESHAPE to 1-D of its first output, so that the
    runtime takes its deferred-shape path. Outputs: the op's outputs, then the flattened first one."""
    b = ModelBuilder()
    idx = add_inputs(b, inputs)
    dtype = out_dtype if out_dtype is not None else inputs[0].dtype
    q = out_q if out_q is not None else inputs[0].q
    outs = [b.tensor(f"out{k}", [1], dtype, quantization=q) for k in range(n_outputs)]
    b.op(op, idx, outs, options)
    flat = b.tensor("flat", [1], dtype, quantization=q)
    b.op("RESHAPE", [outs[0]], [flat], {"new_shape": [-1]})
    b.output(*outs, flat)
    return b.build()
