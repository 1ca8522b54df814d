"""MixConv's two whole-window depthwise kernels merged into one op (ops/slice_views.py's fuse_sibling_windows,
DepthwiseConvWholeFolded.merging), and fed on into the pointwise conv's GEMM rows (DepthwiseWholeIntoRows), against
the oracle (ai-edge-litert BUILTIN_REF), exactly, over several invokes (the ring buffer's state included), with
the prepared steps asserted: windows of different lengths and channel splits, ReLU-like and signed epilogues;
kernels whose epilogues differ stay apart; a block feeding a FULLY_CONNECTED head (DepthwiseWholeIntoRowsFeeding);
and the real microWakeWord model (tests/corpus), whose three MixConv blocks each become one step."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import litert_py
from litert_py.ops.conv.whole_window import lowest_bit
from litert_py.ops.ring_buffer import in_place_rings
from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder, quant
from tests.ops.test_ring_buffer import assert_refused
from tests.ops.test_small_rows import invokes
from tests.ops.test_streaming_fast import NONE, RELU, S_IN, _assert_equal, _depthwise, _frames, _int8, _pointwise
from tests.oracle import oracle

RESOURCE = dtypes.TensorType.RESOURCE
RELU_N1_TO_1 = 2
CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"


def _mixconv_pointwise(split: int, frames: tuple[int, int], acts: tuple[int, int], pointwise: bool = True) -> bytes:
    """A ring buffer c (1, 9, 1, 8) (READ_VARIABLE -> CONCATENATION -> STRIDED_SLICE -> ASSIGN_VARIABLE, fed one
    frame per invoke); a, b = SPLIT_V(c, [split, 8 - split]); whole-window depthwise kernels over the last
    ``frames`` rows of each, their outputs concatenated into y (1, 1, 1, 8) with ``acts``; then a pointwise
    CONV_2D of y (``pointwise``)."""
    rng = np.random.default_rng(split * 100 + frames[0] * 10 + frames[1])
    b = ModelBuilder()
    x = b.input("x", (1, 1, 1, 8), np.int8, quantization=quant(S_IN, 3))
    handle = b.tensor("h", (), None, tensor_type=RESOURCE)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    b.op("VAR_HANDLE", [], [handle], {"container": "", "shared_name": "ring"})
    state = _int8(b, "state", (1, 8, 1, 8))
    b.op("READ_VARIABLE", [handle], [state])
    c = _int8(b, "c", (1, 9, 1, 8))
    b.op("CONCATENATION", [state, x], [c], {"axis": 1})
    kept = _int8(b, "kept", (1, 8, 1, 8))
    ins = [c] + [b.const(n, np.array(v, np.int32)) for n, v in (("rb", [0, 1, 0, 0]), ("re", [1, 9, 1, 8]))]
    b.op("STRIDED_SLICE", ins + [b.const("rs", np.ones(4, np.int32))], [kept], {})
    b.op("ASSIGN_VARIABLE", [handle, kept], [])
    parts = [_int8(b, "a", (1, 9, 1, split)), _int8(b, "b", (1, 9, 1, 8 - split))]
    sizes = b.const("sizes", np.array([split, 8 - split], np.int32))
    b.op("SPLIT_V", [c, sizes, b.const("axis", np.array(3, np.int32))], parts, {"num_splits": 2})
    ys = []
    for k, (part, n, act) in enumerate(zip(parts, frames, acts)):
        width = split if k == 0 else 8 - split
        window = _int8(b, f"w{k}", (1, n, 1, width))
        ins = [part] + [
            b.const(f"{nm}{k}", np.array(v, np.int32)) for nm, v in (("b", [0, 9 - n, 0, 0]), ("e", [1, 9, 1, 8]))
        ]
        b.op("STRIDED_SLICE", ins + [b.const(f"s{k}", np.ones(4, np.int32))], [window], {})
        ys.append(_depthwise(b, rng, window, (1, n, 1, width), f"y{k}", act))
    y = _int8(b, "y", (1, 1, 1, 8), 0.1, -128 if acts[0] == RELU else 5)
    b.op("CONCATENATION", ys, [y], {"axis": 3})
    b.output(_pointwise(b, rng, y, "z", RELU) if pointwise else y)
    b.subgraph("init")  # the ring starts with random frames
    h1 = b.tensor("h", (), None, tensor_type=RESOURCE)
    init = b.const("init", rng.integers(-128, 128, (1, 8, 1, 8)).astype(np.int8), quantization=quant(S_IN, 3))
    b.op("VAR_HANDLE", [], [h1], {"container": "", "shared_name": "ring"})
    b.op("ASSIGN_VARIABLE", [h1, init], [])
    return b.build()


def _stream(model: bytes, invokes: int = 12):
    rng = np.random.default_rng(3)
    return [[rng.integers(-128, 128, (1, 1, 1, 8)).astype(np.int8)] for _ in range(invokes)]


@pytest.mark.parametrize(
    ("split", "frames", "act"),
    [(3, (5, 9), NONE), (3, (5, 9), RELU), (4, (9, 3), NONE), (5, (7, 7), RELU), (2, (1, 9), NONE)],
)
def test_mixconv_merged_and_fed(split, frames, act):
    model = _mixconv_pointwise(split, frames, (act, act))
    names = _assert_equal(model, _stream(model))
    assert names == ["CallOnce", "RingBufferShift", "DepthwiseWholeIntoRows"]


@pytest.mark.parametrize("act", [NONE, RELU])
def test_fused_block_sign_path_from_three_dot_rows(act):
    """A linear depthwise (sign-path epilogue) fused into the pointwise conv's rows takes SignedTaps (A = u + c + e,
    B = u + c - e and G = K * u from one np.dot, clip(G, B, A) for the sign term, the floor stored into the rows);
    a ReLU one (no sign term) keeps tap_dot and its epilogue. Every output of 12 invokes equals BUILTIN_REF."""
    model = _mixconv_pointwise(3, (5, 9), (act, act))
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    (_, op) = it._subgraphs[0].steps_nodes[-1]
    assert type(op).__name__ == "DepthwiseWholeIntoRows"
    assert (op.signed is not None) == (act == NONE)
    if act == NONE:
        assert op.products.shape[1] == op.signed.ones.shape[1]  # the extra zp + 1/2 and 2^-(rs+1) rows
        assert op.signed.ones.shape[0] == 3
    _assert_equal(model, _stream(model))


def test_lowest_bit():
    v = np.array([0.0, 3 * 2.0**-20, -5 * 2.0**-7, 12.0, 2.0**40])
    assert lowest_bit(v) == 2.0**-20
    assert lowest_bit(np.array([-6.0, 0.0, 40.0])) == 2.0
    assert lowest_bit(np.zeros(3)) == 1.0


def test_mixconv_merged_without_pointwise():
    model = _mixconv_pointwise(3, (5, 9), (NONE, NONE), pointwise=False)
    names = _assert_equal(model, _stream(model))
    assert names == ["CallOnce", "RingBufferShift", "DepthwiseConvWholeFoldedView"]


def test_mixconv_different_epilogues_stay_apart():
    """A linear kernel next to a RELU_N1_TO_1 one (same zero point): different clamps, so the two are not
    merged."""
    model = _mixconv_pointwise(3, (5, 9), (NONE, RELU_N1_TO_1))
    names = _assert_equal(model, _stream(model))
    assert names.count("DepthwiseConvWholeFoldedView") == 2


def test_okay_nabu_blocks_fused():
    """The vendored microWakeWord model over 25 frames against BUILTIN_REF: its three MixConv blocks and two
    plain blocks each one DepthwiseWholeIntoRows step, storing into the next ring buffer or the head's rows."""
    model = (CORPUS / "pymicro_wakeword__okay_nabu.tflite").read_bytes()
    d = litert_py.Interpreter(model_content=model).get_input_details()[0]
    rng = np.random.default_rng(0)
    ours, got, want = invokes(model, [rng.integers(-128, 128, d["shape"]).astype(d["dtype"]) for _ in range(25)])
    names = [type(op).__name__ for _, op in ours._subgraphs[0].steps_nodes]
    # each block's frame goes straight into the next ring buffer's tail (fuse_ring_writes)
    assert names.count("DepthwiseWholeIntoRowsWriting") == 4 and "DepthwiseConvWholeFoldedView" not in names
    # the first two rings' frames: StoreInto (RESHAPE, CONV_2D); every ring lives in an array of its own, read
    # by the first conv (ConvQuantizedFoldedRowsRing) or a block (DepthwiseWholeIntoRows.reading_ring)
    assert "RingBufferShiftTail" not in names and len(in_place_rings(ours._subgraphs[0].steps_nodes)) == 6
    assert names.count("RingBufferChecks") == 1 and "RingBufferInPlace" not in names  # one step checks the six
    stores = {type(op.op).__name__ for _, op in ours._subgraphs[0].steps_nodes if type(op).__name__ == "StoreInto"}
    assert stores == {"CopyReshaped", "ConvQuantizedFoldedRowsRing"}
    assert names.count("StoreInto") == 2
    assert names.count("DepthwiseWholeIntoRowsFeeding") == 1  # the last block feeds the classifier's head
    assert not any(n.startswith("FullyConnected") for n in names)
    assert all(op.tap_dot is not None for _, op in ours._subgraphs[0].steps_nodes if hasattr(op, "tap_dot"))
    fused = [op for _, op in ours._subgraphs[0].steps_nodes if type(op).__name__.startswith("DepthwiseWholeIntoRows")]
    assert sum(op.signed is not None for op in fused) >= 1  # whole_window.signed_taps on the linear depthwise
    np.testing.assert_array_equal(got, want)


def _block_head(units: int, act: int, lookups: tuple = ()) -> bytes:
    """Frames x0 (1, 8, 1, 8), x1 (1, 1, 1, 8): c = concat; a whole-window depthwise, a pointwise CONV_2D
    (1, 1, 1, 6), then a FULLY_CONNECTED (``units`` outputs) reading the conv's output as (1, 6), then the
    one-value ``lookups`` ("LOGISTIC", "QUANTIZE" to uint8) in turn."""
    rng = np.random.default_rng(units)
    b, c = _frames()
    z = _pointwise(b, rng, _depthwise(b, rng, c, (1, 9, 1, 8), "d", act), "z", act)
    w = b.const("w", rng.integers(-127, 128, (units, 6)).astype(np.int8), quantization=quant(0.01))
    bias = b.const("bias", rng.integers(-500, 500, units).astype(np.int32), quantization=quant(0.2 * 0.01))
    y = _int8(b, "y", (1, units), 0.05, -10)
    b.op("FULLY_CONNECTED", [z, w, bias], [y], {})
    for k, op in enumerate(lookups):
        if op == "LOGISTIC":
            t = _int8(b, f"l{k}", (1, units), 1.0 / 256, -128)
        else:
            t = b.tensor(f"l{k}", (1, units), np.uint8, quantization=quant(1.0 / 200, 7))
        b.op(op, [y], [t])
        y = t
    b.output(y)
    return b.build()


@pytest.mark.parametrize(("units", "act"), [(1, RELU), (1, NONE), (3, RELU), (4, NONE)])
def test_block_feeds_fully_connected_head(units, act):
    names = _assert_equal(_block_head(units, act))
    assert names == ["Concatenation", "DepthwiseWholeIntoRowsFeeding"]


@pytest.mark.parametrize("lookups", [("LOGISTIC",), ("LOGISTIC", "QUANTIZE")])
@pytest.mark.parametrize("act", [RELU, NONE])
def test_block_head_score_lookups_fused(act, lookups):
    """A one-unit head's score through LOGISTIC (then QUANTIZE): the lookups join the fed step
    (FullyConnectedScalarLookup, tables composed), against BUILTIN_REF over many frames."""
    model = _block_head(1, act, lookups)
    rng = np.random.default_rng(4)
    feeds = [
        [rng.integers(-128, 128, (1, 8, 1, 8)).astype(np.int8), rng.integers(-128, 128, (1, 1, 1, 8)).astype(np.int8)]
        for _ in range(40)
    ]
    names = _assert_equal(model, feeds)
    assert names == ["Concatenation", "DepthwiseWholeIntoRowsFeeding"]
    it = litert_py.Interpreter(model_content=model)
    it.allocate_tensors()
    assert type(it._subgraphs[0].steps_nodes[-1][1].then).__name__ == "FullyConnectedScalarLookup"


def _ring(b: ModelBuilder, name: str, frame: int, rows: int) -> int:
    """READ_VARIABLE -> CONCATENATION(state, frame) -> STRIDED_SLICE -> ASSIGN_VARIABLE over a (1, rows, 1, 8)
    int8 state (initialized with random frames by the init subgraph, see _init); returns the concatenation."""
    h = b.tensor(f"{name}_h", (), None, tensor_type=RESOURCE)
    b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
    state = _int8(b, f"{name}_state", (1, rows, 1, 8))
    b.op("READ_VARIABLE", [h], [state])
    c = _int8(b, f"{name}_c", (1, rows + 1, 1, 8))
    b.op("CONCATENATION", [state, frame], [c], {"axis": 1})
    kept = _int8(b, f"{name}_kept", (1, rows, 1, 8))
    ends = [b.const(f"{name}_{n}", np.array(v, np.int32)) for n, v in (("b", [0, 1, 0, 0]), ("e", [1, rows + 1, 1, 8]))]
    b.op("STRIDED_SLICE", [c, *ends, b.const(f"{name}_s", np.ones(4, np.int32))], [kept], {})
    b.op("ASSIGN_VARIABLE", [h, kept], [])
    return c


def _stacked_blocks(
    frame_out: bool = False,
    reshape_in: bool = False,
    quantize_in: bool = False,
    r1_init_rows: int = 6,
    between: str | None = None,
    poke_rows: int | None = None,
) -> bytes:
    """Two streaming blocks: ring r0 over the input frames, a whole-window depthwise and a pointwise CONV_2D
    (8 units, same quantization as the frames) whose output frame feeds ring r1, another block, the output.
    ``frame_out``: the first block's frame is an output too (its ring keeps the concatenation); ``reshape_in``:
    the input is a (1, 8) frame RESHAPEd for the first ring (the copy then stores into the ring's tail);
    ``quantize_in``: a float (1, 8) frame QUANTIZEd, then RESHAPEd (QUANTIZE stores into the ring's tail);
    ``r1_init_rows``: the rows the init subgraph assigns to ring r1 (6: the model's); ``between``: after ring r1's
    ASSIGN_VARIABLE and before the depthwise that reads its concatenation, "read" reads r1 (a second output) or
    "assign" assigns it a constant; ``poke_rows``: a signature "poke" (subgraph 2) assigns its input, a
    (1, poke_rows, 1, 8) state, to ring r1 and returns the variable (the main subgraph: signature "main")."""
    rng = np.random.default_rng(21)
    b = ModelBuilder()
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 1})
    if quantize_in:
        xf = b.input("x", (1, 8), np.float32)
        x0 = _int8(b, "xq", (1, 8))
        b.op("QUANTIZE", [xf], [x0])
    elif reshape_in:
        x0 = b.input("x", (1, 8), np.int8, quantization=quant(S_IN, 3))
    if quantize_in or reshape_in:
        x = _int8(b, "x4", (1, 1, 1, 8))
        b.op("RESHAPE", [x0, b.const("shape", np.array([1, 1, 1, 8], np.int32))], [x], {})
    else:
        x = b.input("x", (1, 1, 1, 8), np.int8, quantization=quant(S_IN, 3))
    c0 = _ring(b, "r0", x, 4)
    f = b.tensor("f", (1, 1, 1, 8), np.int8, quantization=quant(S_IN, 3))
    w = rng.integers(-127, 128, (8, 1, 1, 8)).astype(np.int8)
    s_w = rng.uniform(0.002, 0.01, 8)
    d0 = _depthwise(b, rng, c0, (1, 5, 1, 8), "d0", RELU)
    bias = b.const("f_b", rng.integers(-3000, 3000, 8).astype(np.int32), quantization=quant(0.1 * s_w))
    opts = {"padding": 1, "stride_h": 1, "stride_w": 1, "fused_activation_function": NONE}
    b.op("CONV_2D", [d0, b.const("f_w", w, quantization=quant(s_w, 0, 0)), bias], [f], opts)
    c1 = _ring(b, "r1", f, 6)
    extra = []
    if between is not None:
        h = b.tensor("r1_h2", (), None, tensor_type=RESOURCE)
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "r1"})
        if between == "read":
            extra.append(_int8(b, "r1_read", (1, 6, 1, 8)))
            b.op("READ_VARIABLE", [h], extra)
        else:
            sevens = b.const("sevens", np.full((1, 6, 1, 8), 7, np.int8), quantization=quant(S_IN, 3))
            b.op("ASSIGN_VARIABLE", [h, sevens], [])
    y = _pointwise(b, rng, _depthwise(b, rng, c1, (1, 7, 1, 8), "d1", NONE), "y", RELU)
    b.output(*([y, f] if frame_out else [y]), *extra)
    b.subgraph("init")
    for name, rows in (("r0", 4), ("r1", r1_init_rows)):
        h = b.tensor(f"{name}_h", (), None, tensor_type=RESOURCE)
        init = b.const(
            f"{name}_init", rng.integers(-128, 128, (1, rows, 1, 8)).astype(np.int8), quantization=quant(S_IN, 3)
        )
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": name})
        b.op("ASSIGN_VARIABLE", [h, init], [])
    if poke_rows is not None:
        b.signature("main", {"x": b.subgraphs[0]["inputs"][0]}, {"y": y}, subgraph=0)
        b.subgraph("poke")
        h = b.tensor("r1_h", (), None, tensor_type=RESOURCE)
        v, r = (b.input("v", (1, poke_rows, 1, 8), np.int8), _int8(b, "r", (1, poke_rows, 1, 8)))
        b.op("VAR_HANDLE", [], [h], {"container": "", "shared_name": "r1"})
        b.op("ASSIGN_VARIABLE", [h, v], [])
        b.op("READ_VARIABLE", [h], [r])
        b.output(r)
        b.signature("poke", {"v": v}, {"r": r}, subgraph=2)
    return b.build()


@pytest.mark.parametrize("frame_out", [False, True])
def test_block_frame_written_into_next_ring(frame_out):
    model = _stacked_blocks(frame_out)
    names = _assert_equal(model, _stream(model, 15))  # ring r0's frame is the model input: no producer
    if frame_out:  # the frame is an output: it stays a tensor, the ring concatenates it
        assert names == [
            "CallOnce",
            "RingBufferShift",
            "DepthwiseWholeIntoRows",
            "RingBufferShift",
            "DepthwiseWholeIntoRows",
        ]
    else:
        written = ["DepthwiseWholeIntoRowsWriting", "RingBufferInPlace"]  # the block reads the ring's own array
        assert names == ["CallOnce", "RingBufferShift", *written, "DepthwiseWholeIntoRows"]


def test_reshaped_input_frame_stored_into_ring():
    model = _stacked_blocks(reshape_in=True)
    rng = np.random.default_rng(4)
    names = _assert_equal(model, [[rng.integers(-128, 128, (1, 8)).astype(np.int8)] for _ in range(15)])
    tails = ["RingBufferChecks", "DepthwiseWholeIntoRowsWriting"]  # the two in-place rings' checks as one step
    assert names == ["CallOnce", "StoreInto", *tails, "DepthwiseWholeIntoRows"]


def test_quantized_reshaped_input_frame_stored_into_ring():
    """QUANTIZE -> RESHAPE -> ring buffer: the RESHAPE's copy is dropped (fuse_reshape_stores) and QUANTIZE stores
    straight into the ring's tail (fuse_ring_writes)."""
    model = _stacked_blocks(quantize_in=True)
    rng = np.random.default_rng(6)
    frames = [[(rng.standard_normal((1, 8)) * 4).astype(np.float32)] for _ in range(15)]
    frames[3][0][0, :4] = [0.025, -0.025, 0.075, -1e12]  # ties of the rounding and an overflowing quotient
    names = _assert_equal(model, frames)
    tails = ["RingBufferChecks", "DepthwiseWholeIntoRowsWriting"]  # the two in-place rings' checks as one step
    assert names == ["CallOnce", "StoreInto", *tails, "DepthwiseWholeIntoRows"]


def _outputs_over(it, feeds, before=None) -> list:
    """Every output of ``it`` (ours or LiteRT's) after each invoke over ``feeds``; ``before(it, k)`` runs before
    invoke k."""
    it.allocate_tensors()
    res = []
    for k, (x,) in enumerate(feeds):
        if before is not None:
            before(it, k)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        res.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
    return res


def _names(it) -> list[str]:
    return [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]


def _assert_same_outputs(ours: list, theirs: list) -> None:
    for k, (a, b) in enumerate(zip(ours, theirs)):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v, err_msg=f"invoke {k}")


def test_ring_in_place_state_over_reallocation():
    """RingBufferInPlace keeps the state in the variable (its array's head): a new prepare in the middle of the
    stream (a new ring array) continues from it, and every output equals BUILTIN_REF's."""
    model = _stacked_blocks()
    feeds = _stream(model, 16)
    LiteRT, resolver = oracle()

    def prepare_anew(it, k):  # allocate_tensors alone would not: nothing changed
        if k == 7:
            ring = next(op for _, op in it._subgraphs[0].steps_nodes if type(op).__name__ == "RingBufferInPlace")
            it._subgraphs[0].prepare()
            assert ring not in [op for _, op in it._subgraphs[0].steps_nodes]

    def allocate_again(it, k):
        if k == 7:
            it.allocate_tensors()

    ours = litert_py.Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    _assert_same_outputs(_outputs_over(ours, feeds, prepare_anew), _outputs_over(theirs, feeds, allocate_again))
    assert _names(ours).count("RingBufferInPlace") == 1


@pytest.mark.parametrize("between", ["read", "assign"])
def test_ring_not_in_place_when_the_variable_is_used_before_its_reader(between):
    """In place, ring r1's variable gets its new value at the reader's shift; a READ_VARIABLE or ASSIGN_VARIABLE of
    r1 between its ASSIGN_VARIABLE and that reader must see (or overwrite) the value ASSIGN_VARIABLE gave: r1 stays
    a RingBufferShiftTail (in place without them: test_ring_in_place_state_over_reallocation), and every output
    equals BUILTIN_REF's."""
    model = _stacked_blocks(between=between)
    feeds = _stream(model, 8)
    LiteRT, resolver = oracle()
    ours = litert_py.Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=resolver.BUILTIN_REF)
    _assert_same_outputs(_outputs_over(ours, feeds), _outputs_over(theirs, feeds))
    names = _names(ours)
    assert "RingBufferInPlace" not in names and "RingBufferShiftTail" in names, names


@pytest.mark.parametrize("preserve", [False, True])
def test_ring_in_place_refuses_a_variable_of_another_shape(preserve):
    """The init subgraph assigns 5 rows to ring r1, which the model reads as 6: the invoke fails with READ_VARIABLE's
    error, fused (RingBufferInPlace) or not."""
    message = r"holds shape \[1, 5, 1, 8\], the model reads \[1, 6, 1, 8\]"
    assert_refused(_stacked_blocks(r1_init_rows=5), preserve, "RingBufferInPlace", message)


def test_okay_nabu_ring_states_match_reference():
    """The microWakeWord model's score saturates on random frames, so its output alone says little about the
    fused streaming path: after every invoke, each of its six ring buffers' state (our variable's value, which
    RingBufferInPlace keeps in its own array) must equal the STRIDED_SLICE output BUILTIN_REF assigns (its
    tensors preserved), over 20 frames."""
    model = (CORPUS / "pymicro_wakeword__okay_nabu.tflite").read_bytes()
    LiteRT, resolver = oracle()
    theirs = LiteRT(
        model_content=model,
        experimental_op_resolver_type=resolver.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    ours = litert_py.Interpreter(model_content=model)
    for it in (ours, theirs):
        it.allocate_tensors()
    rings = in_place_rings(ours._subgraphs[0].steps_nodes)
    assert len(rings) == 6
    rng = np.random.default_rng(5)
    d = ours.get_input_details()[0]
    for k in range(20):
        x = rng.integers(-128, 128, d["shape"]).astype(d["dtype"])
        for it in (ours, theirs):
            it.set_tensor(d["index"], x)
            it.invoke()
        for node, op in rings:
            state = op.read.resources[op.key].value
            np.testing.assert_array_equal(state, theirs.get_tensor(node.operator.outputs[1]), err_msg=f"invoke {k}")
