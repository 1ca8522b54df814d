"""A one-op model in both runtimes, for tests that assert which prepared class an op takes: the oracle
(ai-edge-litert BUILTIN_REF, one thread), litert_py's interpreter and its single prepared step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import litert_py
from tests.oracle import oracle


def both_with_step(model: bytes) -> tuple:
    """(theirs, ours, step): both interpreters allocated, and litert_py's one prepared step."""
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ours = litert_py.Interpreter(model_content=model)
    theirs.allocate_tensors()
    ours.allocate_tensors()
    (step,) = [op for _, op in ours._subgraphs[0].steps_nodes]
    return theirs, ours, step


def invoke_both(theirs, ours, feeds: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(ours, theirs) first outputs after one invoke of each with ``feeds``, same dtype and shape checked."""
    for it in (theirs, ours):
        for d, v in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], v)
        it.invoke()
    want = theirs.get_tensor(theirs.get_output_details()[0]["index"])
    got = ours.get_tensor(ours.get_output_details()[0]["index"])
    assert got.dtype == want.dtype and got.shape == want.shape
    return got, want
