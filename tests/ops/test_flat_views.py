"""common.flat_views (the streaming plans' elementwise calls over 1-d views) and the plans' fallback to the views as
given: a depthwise whose window is a channel slice of its ring (not contiguous) runs run_rows with its tap multiply
over the 4-d views, against the oracle (ai-edge-litert BUILTIN_REF), exactly, over several invokes."""

from __future__ import annotations

import numpy as np
import pytest

import litert_py
from litert_py.ops.common import flat_views
from litert_py.ops.conv.whole_window import DepthwiseWholeIntoRows
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops.test_streaming_fast import _assert_equal
from tests.ops.test_streaming_plans import _conv, _depthwise, _q

RESOURCE = dtypes.TensorType.RESOURCE


def test_flat_views_of_contiguous_operands():
    ring = np.arange(40, dtype=np.int8).reshape(1, 5, 1, 8)
    window, weights, out = ring[:, 1:], np.ones((4, 1, 8)), np.empty((1, 4, 1, 8))
    flat = flat_views(window, weights, out)
    assert [f.shape for f in flat] == [(32,)] * 3
    assert all(np.shares_memory(f, a) for f, a in zip(flat, (window, weights, out)))
    np.testing.assert_array_equal(flat[0], window.ravel())  # C order: the elements the broadcast pairs


def test_flat_views_keep_other_operands():
    ring = np.zeros((1, 5, 1, 16), np.int8)
    channels = ring[:, 1:, :, :8]  # not contiguous
    weights = np.ones((4, 1, 8))
    assert all(a is b for a, b in zip(flat_views(channels, weights), (channels, weights)))
    row, bound = np.zeros((1, 1, 1, 8)), np.array(1.0)  # a 0-d bound: other sizes stay as given
    assert all(a is b for a, b in zip(flat_views(row, bound), (row, bound)))


def _channel_window_model(block: str) -> bytes:
    """A (1, 1, 1, 16) int8 frame into a ring of 6 rows and 16 channels; two whole-window depthwise kernels read
    channels [0, 8) and [8, 16) of the ring's 7 rows (STRIDED_SLICE: read as views of the concatenation), each
    followed by a pointwise conv; both outputs are model outputs."""
    rng = np.random.default_rng(17)
    b = ModelBuilder()
    s_in, zp_in = 0.05, 3
    x = b.input("x", (1, 1, 1, 16), np.int8, quantization=quant(s_in, zp_in))
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    h, rows = "r", 6
    c = _ring16(b, x, rows, s_in, zp_in)
    outs = []
    for k in range(2):
        part = _q(b, f"part{k}", (1, rows + 1, 1, 8), s_in, zp_in)
        ends = [
            b.const(f"p{k}_{n}", np.array(v, np.int32))
            for n, v in (("b", [0, 0, 0, 8 * k]), ("e", [1, rows + 1, 1, 8 * k + 8]))
        ]
        b.op("STRIDED_SLICE", [c, *ends, b.const(f"p{k}_s", np.ones(4, np.int32))], [part], {})
        d, t = _depthwise(b, rng, part, rows + 1, s_in, f"d{k}", block)
        y, _ = _conv(b, rng, d, 1, t, f"y{k}", 6.0, 3000)
        outs.append(y)
    b.output(*outs)
    b.subgraph("init")
    hh = b.tensor(f"{h}_h", (), None, tensor_type=RESOURCE)
    init = b.const(
        f"{h}_init", rng.integers(-128, 128, (1, rows, 1, 16)).astype(np.int8), quantization=quant(s_in, zp_in)
    )
    b.op("VAR_HANDLE", [], [hh], {"container": "", "shared_name": h})
    b.op("ASSIGN_VARIABLE", [hh, init], [])
    return b.build()


def _ring16(b, frame: int, rows: int, scale: float, zp: int) -> int:
    """test_streaming_plans._ring over 16 channels (READ_VARIABLE -> CONCATENATION -> STRIDED_SLICE ->
    ASSIGN_VARIABLE): the concatenation."""
    h = b.tensor("r_h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "r"})
    state = _q(b, "r_state", (1, rows, 1, 16), scale, zp)
    b.op("READ_VARIABLE", [h], [state])
    c = _q(b, "r_c", (1, rows + 1, 1, 16), scale, zp)
    b.op("CONCATENATION", [state, frame], [c], {"axis": 1})
    kept = _q(b, "r_kept", (1, rows, 1, 16), scale, zp)
    ends = [b.const(f"r_{n}", np.array(v, np.int32)) for n, v in (("b", [0, 1, 0, 0]), ("e", [1, rows + 1, 1, 16]))]
    b.op("STRIDED_SLICE", [c, *ends, b.const("r_s", np.ones(4, np.int32))], [kept], {})
    b.op("ASSIGN_VARIABLE", [h, kept], [])
    return c


@pytest.mark.parametrize("block", ["signed", "relu"])
def test_channel_window_takes_the_4d_multiply(block):
    model = _channel_window_model(block)
    rng = np.random.default_rng(2)
    feeds = [[rng.integers(-128, 128, (1, 1, 1, 16)).astype(np.int8)] for _ in range(12)]
    _assert_equal(model, feeds)  # every output of every invoke equals BUILTIN_REF's
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    blocks = [op for _, op in it._subgraphs[0].steps_nodes if isinstance(op, DepthwiseWholeIntoRows)]
    assert len(blocks) == 2
    for op in blocks:  # run_rows, its multiply over the 4-d window view, its conv's epilogue over 1-d views
        assert op._plan is not None and op._plan[0].ndim == 4 and not op._plan[0].flags.c_contiguous
        assert op._plan[-5].ndim == 1  # conv_acc
