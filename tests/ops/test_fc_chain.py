"""FullyConnectedChain (ops/fully_connected_folded.py, fused by ops/slice_views.py's fuse_feeding): stacks of folded
quantized FULLY_CONNECTED layers each of whose outputs only the next one reads, run as one step that rounds each
layer's values straight into the next one's GEMM rows. Compared exactly with BUILTIN_REF over many invokes of one
interpreter per side (ReLU-like and signed clamps, int8 and uint8, float32 and float64 GEMMs, a one-unit head),
with the prepared steps asserted: the chains that must form, and the ones that must not (an intermediate tensor
that is also an output, a consumer whose GEMM would no longer be exact, all tensors preserved)."""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.schema.builder import ModelBuilder, quant
from tests.oracle import compare_steps

NONE, RELU, RELU6 = 0, 1, 3
S_W = 0.01


def _dense(
    widths, acts, dtype=np.int8, eff=0.002, outputs=None, w_max=127, seed=0, s=0.05, s_w=S_W, out_zp=None
) -> bytes:
    """A stack of FULLY_CONNECTED layers ``widths[0] -> widths[1] -> ...`` with activations ``acts``: input scale
    ``s``, per-tensor weight scale ``s_w``, each output scale s_in * s_w / eff (the accumulators spread over the
    output range), zero points -128 / 0 (int8 ReLU-like / not) or 0 / 128 (uint8). ``outputs``: the layer
    outputs that are model outputs (default: the last); ``out_zp``: the last layer's zero point instead."""
    rng = np.random.default_rng(seed)
    signed = dtype == np.int8
    b = ModelBuilder()
    zp = -3 if signed else 120
    x = b.input("x", (1, widths[0]), dtype, quantization=quant(s, zp))
    ys = []
    for k, (depth, units, act) in enumerate(zip(widths, widths[1:], acts)):
        wz = rng.integers(-w_max, w_max + 1, (units, depth))
        w = b.const(f"w{k}", (wz if signed else wz + 128).astype(dtype), quantization=quant(s_w, 0 if signed else 128))
        bias = b.const(f"b{k}", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quant(s * s_w))
        s = s * s_w / eff
        zp = (-128 if signed else 0) if act in (RELU, RELU6) else (0 if signed else 128)
        if out_zp is not None and k == len(acts) - 1:
            zp = out_zp
        y = b.tensor(f"y{k}", (1, units), dtype, quantization=quant(s, zp))
        b.op("FULLY_CONNECTED", [x, w, bias], [y], {"fused_activation_function": act})
        ys.append(y)
        x = y
    b.output(*(ys[k] for k in (outputs if outputs is not None else [len(ys) - 1])))
    return b.build()


def _compare(model: bytes, n: int = 40, **kwargs) -> list[str]:
    """Runs ours and BUILTIN_REF over ``n`` random inputs (plus the extremes), asserts every output equal; returns
    our prepared steps' class names (tests.oracle.compare_steps)."""

    def inputs(d):
        info = np.iinfo(d["dtype"])
        rng = np.random.default_rng(1)
        xs = [rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]) for _ in range(n)]
        return xs + [np.full(d["shape"], info.min, d["dtype"]), np.full(d["shape"], info.max, d["dtype"])]

    return [name.split("/")[0] for name in compare_steps(model, inputs, **kwargs)]


@pytest.mark.parametrize(
    ("widths", "acts", "dtype"),
    [
        ((64, 32, 32, 16, 32, 64), (RELU,) * 5, np.int8),  # the autoencoder's ReLU stack
        ((40, 24, 24, 10), (NONE, RELU, NONE), np.int8),  # signed clamps (the sign term) and a ReLU in between
        ((40, 24, 24, 10), (RELU6, NONE, RELU), np.uint8),
        ((48, 20, 1), (RELU, NONE), np.int8),  # a one-unit head (FullyConnectedQuantizedFoldedScalar)
        ((2200, 40, 12), (RELU, RELU), np.int8),  # float64 GEMM first (|x| * sum|w| above 2^24), then float32
    ],
)
def test_chain_equals_reference(widths, acts, dtype):
    assert _compare(_dense(widths, acts, dtype)) == ["FullyConnectedChainRounded"]


def _tied() -> bytes:
    """Power-of-two scales: eff = 2^-6 exactly, so acc = 64k + 32 gives t = k + 1/2, a tie (about one
    accumulator in 64: many per run)."""
    return _dense((40, 24, 24, 10), (NONE, RELU, NONE), eff=2.0**-6, s=2.0**-4, s_w=2.0**-7, w_max=20)


def test_ties_keep_the_half_away_chain():
    """Ties inside the clamp fail the rounded chain's check at prepare: FullyConnectedChain (round half away)."""
    assert _compare(_tied()) == ["FullyConnectedChain"]


def test_rint_on_ties_differs(monkeypatch):
    """The tie check is needed: forced past it, np.rint (ties to even) gives other integers than BUILTIN_REF."""
    from litert_py.ops import fully_connected_folded

    monkeypatch.setattr(fully_connected_folded, "_ties_free", lambda *a: True)
    with pytest.raises(AssertionError):
        _compare(_tied())


def test_rounded_chain_float64_layers():
    """Small layers run in float64 inside the rounded chain; compared with BUILTIN_REF."""
    from litert_py.ops.fully_connected_folded import FullyConnectedChainRounded

    model = _dense((48, 20, 20, 1), (RELU, NONE, NONE))
    assert _compare(model) == ["FullyConnectedChainRounded"]
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    assert isinstance(op, FullyConnectedChainRounded)
    assert all(t.dtype == np.float64 for t in (op.layers[0].xbuf, op.layers[1].xbuf, op.layers[2].xvec))


def test_intermediate_output_splits_the_chain():
    names = _compare(_dense((40, 24, 24, 24, 10), (RELU,) * 4, outputs=[1, 3]))
    assert names == ["FullyConnectedChainRounded", "FullyConnectedChainRounded"]


def test_consumer_bound_stops_fusion():
    """The consumer's float32 GEMM is exact for raw inputs (|x| <= 128) but not for the producer's values
    v = x - zo in [0, 255] (ReLU, zero point -128): 255 * sum|w| exceeds 2^24, so the layers stay apart."""
    names = _compare(_dense((16, 1100, 8), (RELU, RELU), w_max=127, seed=4), n=10)
    assert names == ["FullyConnectedQuantizedFoldedRelu", "FullyConnectedQuantizedFoldedRelu"]


def test_preserved_tensors_are_not_fused():
    model = _dense((40, 24, 10), (RELU, NONE))
    names = _compare(model, n=10, experimental_preserve_all_tensors=True)
    assert not any(n.startswith("FullyConnectedChain") for n in names)


def test_last_layer_rounded():
    """A chain's last layer whose clamp is below its zero point and whose integers do not fit the store types
    (int8, zero point 5, no activation): FullyConnectedQuantizedFoldedRounded (rint, + zo, the clamp's casting
    store), inside the chain and alone."""
    from litert_py.ops.fully_connected_folded import FullyConnectedQuantizedFoldedRounded

    assert _compare(_single(5)) == ["FullyConnectedQuantizedFoldedRounded"]
    it = Interpreter(model_content=_dense((40, 24, 10), (RELU, NONE), out_zp=5))
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    assert isinstance(op.layers[-1], FullyConnectedQuantizedFoldedRounded)
    assert _compare(_dense((40, 24, 10), (RELU, NONE), out_zp=5)) == ["FullyConnectedChainRounded"]


def _single(zp: int, tied: bool = False) -> bytes:
    """One FULLY_CONNECTED 40 -> 24 without activation into int8 with zero point ``zp``; ``tied``: _tied's
    power-of-two scales (eff = 2^-6)."""
    if tied:
        return _dense((40, 24), (NONE,), eff=2.0**-6, s=2.0**-4, s_w=2.0**-7, w_max=20, out_zp=zp)
    return _dense((40, 24), (NONE,), out_zp=zp)


def test_single_layer_ties_keep_the_half_away_path(monkeypatch):
    """Ties inside the clamp: FullyConnectedQuantizedFolded (round half away); forced past the tie check, the
    rounded layer differs from BUILTIN_REF."""
    from litert_py.ops import fully_connected_folded

    assert _compare(_single(5, tied=True)) == ["FullyConnectedQuantizedFolded"]
    monkeypatch.setattr(fully_connected_folded, "_ties_free", lambda *a: True)
    assert _compare(_single(5)) == ["FullyConnectedQuantizedFoldedRounded"]
    with pytest.raises(AssertionError):
        _compare(_single(5, tied=True))


@pytest.mark.parametrize(
    ("widths", "acts", "dtype"),
    [
        ((2000, 4), (NONE,), np.int8),  # a deep narrow head alone
        ((300, 40, 10), (RELU, NONE), np.int8),  # a narrow last layer inside a chain (its row offset)
        ((500, 12), (RELU6,), np.uint8),
    ],
)
def test_narrow_layers_keep_fortran_weights(widths, acts, dtype):
    """One-row folded GEMMs of at most NARROW_UNITS units hold Fortran-ordered weights (the faster gemv for a
    classifier head), wider ones C-ordered; the integers equal BUILTIN_REF's either way."""
    from litert_py.ops.fully_connected_folded import NARROW_UNITS

    model = _dense(widths, acts, dtype)
    _compare(model, n=20)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (op,) = [op for _, op in it._subgraphs[0].steps_nodes]
    layers = getattr(op, "layers", (op,))
    assert len(layers) == len(acts)
    for layer in layers:
        wt = layer.weights_t
        narrow = wt.shape[1] <= NARROW_UNITS
        assert (wt.flags.f_contiguous and not wt.flags.c_contiguous) if narrow else wt.flags.c_contiguous
    assert layers[-1].weights_t.shape[1] <= NARROW_UNITS


@pytest.mark.parametrize(
    "widths, acts",
    [([1, 16, 16, 1], [RELU, RELU, NONE]), ([8, 16, 4], [RELU, NONE]), ([6, 3], [NONE])],
    ids=["one-value", "chain", "single"],
)
def test_resize_up_and_back_equals_reference(widths, acts):
    """Batch 1 -> 2 -> 1 with allocate_tensors between: the quantized FC kernels read the output shape of this
    allocation (once the previous one's: back at batch 1 a one-value table was built for two rows and prepare
    failed with a reshape error)."""
    from tests.oracle import oracle

    model = _dense(widths, acts)
    LiteRT, resolver = oracle()
    theirs = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=resolver.BUILTIN_REF)
    ours = Interpreter(model_content=model)
    rng = np.random.default_rng(3)
    for rows in (1, 2, 1, 3, 1):
        outs = []
        for it in (theirs, ours):
            it.resize_tensor_input(it.get_input_details()[0]["index"], [rows, widths[0]])
            it.allocate_tensors()
        for _ in range(3):
            x = rng.integers(-128, 128, (rows, widths[0])).astype(np.int8)
            outs = []
            for it in (theirs, ours):
                it.set_tensor(it.get_input_details()[0]["index"], x)
                it.invoke()
                outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
            assert outs[1].shape == (rows, widths[-1])
            np.testing.assert_array_equal(outs[1], outs[0])
