"""An int8 / uint8 DEPTHWISE_CONV_2D feeding a pointwise CONV_2D, fused into one step (litert_py/ops/conv/
depthwise_into_rows.py: the depthwise's epilogue floors straight into the conv's float64 GEMM rows), against the
oracle (ai-edge-litert BUILTIN_REF) over several invokes: the conv's outputs exactly, and the rows the fused step
handed the conv against LiteRT's depthwise tensor (kept with experimental_preserve_all_tensors). Each case asserts
the step classes, so a test also fails when the fusion is no longer made: the rows path (unshifted epilogue, the
+128-shifted one of near-dead channels, a late zero point, the sign path, uint8, two batches with a depth
multiplier), its small stride-1 form with scaled float64 sums, the folded path of small strided layers (small and
larger epilogues, a late zero point), each into the conv's [A, 1] rows or (split form) in place; and the cases
left alone: a MixedEpilogue, the depthwise output
a model output or read twice, a 3x3 consumer, all tensors preserved."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py.ops.conv import depthwise_into_rows, depthwise_rows
from litert_py.schema.builder import ModelBuilder, quant
from tests.compare import assert_close
from tests.oracle import oracle

I8, U8, I32 = np.int8, np.uint8, np.int32
RELU6, NONE = 3, 0
SAME, VALID = 0, 1


def _model(h, w, c, stride=1, *, act=RELU6, zp=-128, dtype=I8, dead=0, mixed=False, units=12, kernel=1,
           dw_out=False, twice=False, seed=0, batch=1, mult=1):  # fmt: skip
    """x (batch, h, w, c) -> 3x3 DEPTHWISE_CONV_2D d (SAME, depth multiplier ``mult``: c output channels, so
    c / mult input channels; activation ``act``, output zero point ``zp``; ``dead``
    channels with right shifts of about 18 and biases of 2^19-2^20: outputs a few units around the zero point;
    ``mixed``: four channels whose fold is not exact at all) -> CONV_2D ``kernel`` x ``kernel`` y (no activation).
    ``dw_out``: d is an output too; ``twice``: a second pointwise conv z reads d."""
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if dtype == I8 else (0, 255)
    b = ModelBuilder()
    x = b.input("x", (batch, h, w, c // mult), dtype, quantization=quant(0.05, -3 if dtype == I8 else 120))
    f = rng.integers(lo + (dtype == I8), hi + 1, (1, 3, 3, c)).astype(dtype)
    s_w = rng.uniform(0.002, 0.01, c)
    bias = rng.integers(-3000, 3000, c).astype(I32)
    s_w[:dead] = 2.0**-16
    bias[:dead] = rng.integers(2**19, 2**20, dead) * rng.choice([-1, 1], dead)
    if mixed:
        s_w[:4] = 2.0**-23
        bias[:4] = [2**30 - 7, -(2**30) + 3, 2**30 - 1000, -(2**30) + 99]
    if dtype == U8:
        s_w[:] = 0.005
    f_q = quant(s_w, 0, 3) if dtype == I8 else quant(0.005, 131, 3)
    fi = b.const("f", f, quantization=f_q)
    bi = b.const("b", bias, quantization=quant(0.05 * s_w if dtype == I8 else 0.05 * 0.005))
    shape = (batch, -(-h // stride), -(-w // stride), c)
    d = b.tensor("d", shape, dtype, quantization=quant(0.2, zp))
    opts = {"padding": SAME, "stride_h": stride, "stride_w": stride, "depth_multiplier": mult}
    b.op("DEPTHWISE_CONV_2D", [x, fi, bi], [d], {**opts, "fused_activation_function": act})
    outs = [_conv(b, rng, d, shape, "y", units, kernel, dtype)]
    if twice:
        outs.append(_conv(b, rng, d, shape, "z", units, 1, dtype))
    b.output(*(outs + ([d] if dw_out else [])))
    return b.build()


def _conv(b, rng, d: int, shape, name: str, units: int, kernel: int, dtype) -> int:
    """A CONV_2D of d (``shape``), no activation, its output scale about 1/40 of the sums' spread (few clamped)."""
    c = shape[3]
    if dtype == I8:
        s_w = 0.005
        w, w_q = rng.integers(-127, 128, (units, kernel, kernel, c)).astype(I8), quant(np.full(units, s_w), 0, 0)
    else:
        s_w = 0.005
        w, w_q = rng.integers(0, 256, (units, kernel, kernel, c)).astype(U8), quant(s_w, 128)
    spread = np.sqrt(kernel * kernel * c) * 74 * 73 * s_w * 0.2
    wi = b.const(name + "_w", w, quantization=w_q)
    bi = b.const(name + "_b", rng.integers(-500, 500, units).astype(I32), quantization=quant(0.2 * s_w))
    y = b.tensor(name, shape[:3] + (units,), dtype, quantization=quant(spread / 40, 3 if dtype == I8 else 128))
    b.op("CONV_2D", [d, wi, bi], [y], {"padding": SAME, "stride_h": 1, "stride_w": 1, "fused_activation_function": 0})
    return y


def _feeds(model: bytes, count: int = 4) -> list:
    rng = np.random.default_rng(5)
    (d,) = litert_py.Interpreter(model_content=model).get_input_details()
    info = np.iinfo(d["dtype"])
    return [rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]) for _ in range(count)]


def _check(model: bytes, spread: bool = True, **options) -> tuple[list, list]:
    """Every output of every invoke exactly as LiteRT's BUILTIN_REF; the fused step's rows as LiteRT's depthwise
    tensor d; ``spread``: the conv's outputs take more than 20 values. Returns (the step class names, the
    prepared steps)."""
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(
        model_content=model,
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    ours = litert_py.Interpreter(model_content=model, **options)
    theirs.allocate_tensors()
    ours.allocate_tensors()
    steps = [op for _, op in ours._subgraphs[0].steps_nodes]
    fused = [op for op in steps if isinstance(op, depthwise_into_rows.DepthwiseIntoRows)]
    d = next(t["index"] for t in theirs.get_tensor_details() if t["name"] == "d")
    for x in _feeds(model):
        for it in (theirs, ours):
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
        outs = [(ours.get_tensor(o["index"]), theirs.get_tensor(o["index"])) for o in ours.get_output_details()]
        assert_close([a for a, _ in outs], [b for _, b in outs])
        for op in fused:  # the rows the conv read hold the depthwise's int8 / uint8 values
            rows = op.epilogue.rows + op.epilogue.folded  # (the addend the conv's constant row holds)
            assert_close([rows], [theirs.get_tensor(d).astype(op.epilogue.rows.dtype)])
        y = outs[0][1]
        assert len(np.unique(y)) > 20 or not spread  # the conv's outputs spread: a wrong row value shows
    return [FUSED_NAME.get(type(op).__name__, type(op).__name__) for op in steps], steps


#: the inlined form of the fused step (DepthwiseRowsIntoRows) counts as fused; test_depthwise_fused_into_pointwise_rows
#: checks which of the two each case takes
FUSED_NAME = {"DepthwiseRowsIntoRows": "DepthwiseIntoRows"}


#: id -> (model arguments, the depthwise's class, RowsEpilogue.add: "none" (floored straight into the rows),
#: "shift" (the -128 of the shifted int8 epilogue, folded into the conv's constant row: add None, folded -128;
#: added after the floor without FOLD_ADDEND) or "late" (a per-channel late zero point))
FUSED = {
    "rows-relu6": (dict(h=12, w=12, c=16), "DepthwiseConvQuantizedRows", "none"),
    "rows-stride2": (dict(h=24, w=20, c=16, stride=2), "DepthwiseConvQuantizedRows", "none"),
    "rows-near-dead-shifted": (dict(h=12, w=12, c=32, dead=8), "DepthwiseConvQuantizedRows", "shift"),
    # the near-dead channels fail the truncating bound: requant_trunc.fold_truncating_proven, base -128
    "rows-late-zp": (dict(h=12, w=12, c=32, dead=8, zp=100, act=NONE), "DepthwiseConvQuantizedRows", "shift"),
    "rows-sign": (dict(h=12, w=12, c=16, zp=5, act=NONE), "DepthwiseConvQuantizedRows", "none"),
    "rows-uint8": (dict(h=10, w=9, c=24, zp=7, dtype=U8), "DepthwiseConvQuantizedRows", "none"),
    "rows-batch2-multiplier2": (dict(h=8, w=8, c=24, batch=2, mult=2), "DepthwiseConvQuantizedRows", "none"),
    "scaled-batch2-multiplier2": (dict(h=4, w=4, c=16, batch=2, mult=2), "DepthwiseConvQuantizedRows", "none"),
    "folded-batch2": (dict(h=6, w=6, c=16, stride=2, batch=2), "DepthwiseConvQuantizedFolded", "none"),
    "scaled-relu6": (dict(h=4, w=4, c=16), "DepthwiseConvQuantizedRows", "none"),
    "scaled-1024": (dict(h=8, w=8, c=16), "DepthwiseConvQuantizedRows", "none"),
    "scaled-sign": (dict(h=5, w=5, c=32, zp=5, act=NONE), "DepthwiseConvQuantizedRows", "none"),
    "scaled-near-dead-shifted": (dict(h=4, w=4, c=32, dead=8), "DepthwiseConvQuantizedRows", "shift"),
    "scaled-late-zp": (dict(h=4, w=4, c=32, dead=8, zp=100, act=NONE), "DepthwiseConvQuantizedRows", "late"),
    "scaled-uint8": (dict(h=6, w=6, c=16, zp=7, dtype=U8, units=40), "DepthwiseConvQuantizedRows", "none"),
    "folded-small": (dict(h=8, w=8, c=16, stride=2), "DepthwiseConvQuantizedFolded", "none"),
    "folded-1024": (dict(h=16, w=16, c=16, stride=2), "DepthwiseConvQuantizedFolded", "none"),
    "folded-sign": (dict(h=10, w=10, c=32, stride=2, zp=5, act=NONE), "DepthwiseConvQuantizedFolded", "none"),
    # EINSUM_MIN_CHANNELS channels: EinsumTaps (the bound plan's einsum call: accumulate_calls)
    "folded-einsum": (dict(h=8, w=8, c=48, stride=2), "DepthwiseConvQuantizedFolded", "none"),
    "folded-einsum-multiplier2": (dict(h=8, w=8, c=48, stride=2, mult=2), "DepthwiseConvQuantizedFolded", "none"),
    "folded-late-zp": (
        dict(h=8, w=8, c=32, stride=2, dead=8, zp=100, act=NONE),
        "DepthwiseConvQuantizedFolded",
        "late",
    ),
    "folded-uint8": (
        dict(h=12, w=12, c=16, stride=2, zp=7, dtype=U8, units=40),
        "DepthwiseConvQuantizedFolded",
        "none",
    ),
}


@pytest.mark.parametrize("kind", list(FUSED))
def test_depthwise_fused_into_pointwise_rows(kind):
    _check_fused(kind, fold=True)


@pytest.mark.parametrize("kind", [k for k, (_, _, add) in FUSED.items() if add == "shift"])
def test_depthwise_fused_base_added_after_floor(kind, monkeypatch):
    """Without FOLD_ADDEND the base b = -128 is added to the floored values (into the rows), as before."""
    monkeypatch.setattr(depthwise_into_rows, "FOLD_ADDEND", False)
    _check_fused(kind, fold=False)


def _check_fused(kind: str, fold: bool) -> None:
    kwargs, depthwise, add = FUSED[kind]
    c = kwargs["c"]
    names, steps = _check(_model(**kwargs))
    assert names == ["DepthwiseIntoRows"]
    (op,) = steps
    assert type(op.depthwise).__name__ == depthwise
    plain = add == "none" or (add == "shift" and fold)  # floored straight into the rows
    relu_like = "sign" not in kind and kwargs.get("act") != NONE  # no sign term
    inlined = depthwise.endswith("Rows") and kwargs.get("stride", 1) == 1 and plain and relu_like
    assert type(op).__name__ == ("DepthwiseRowsIntoRows" if inlined else "DepthwiseIntoRows")
    values = np.prod(op.epilogue.rows.shape)
    units = kwargs.get("units", 12)
    split = values > depthwise_into_rows.SPLIT_MIN_VALUES and units <= depthwise_into_rows.SPLIT_MAX_OUT_PER_IN * c
    assert (op.const_row is not None) == split  # the split form: the accumulators floored in place are the A
    assert np.shares_memory(op.epilogue.rows, op.a) and (op.a.shape[1] == c) == split
    if depthwise.endswith("Rows"):  # small outputs: float64 sums of the scaled weights (no multiply)
        assert (op.depthwise.scale is None) == kind.startswith("scaled") == (values <= depthwise_rows.ROWS_MIN_VALUES)
    ce = op.conv_epilogue  # the conv (no activation, zero point 3: the sign path) from 512 values on
    if values > 512 and type(ce).__name__ == "FoldedEpilogue":  # one half per value (no broadcast row)
        assert ce.half.shape == ce.sign.shape
    if add == "none":
        assert op.epilogue.add is None
    elif add == "shift" and fold:
        assert op.epilogue.add is None and op.epilogue.folded == -128.0
    elif add == "shift":
        assert op.epilogue.add.ndim == 0 and float(op.epilogue.add) == -128.0 and op.epilogue.folded == 0.0
    else:
        assert op.epilogue.add.shape[-1] == kwargs["c"] and len(np.unique(op.epilogue.add)) == 2


#: id -> model arguments: 1x1 convs of K = 128 input channels (>= POINTWISE_SCALED_MIN_K: ConvQuantizedScaled, the
#: float32 GEMM) fed by the depthwise: its floored values go into the conv's float32 [A, 1] rows
SCALED_FUSED = {
    "relu6": dict(h=6, w=6, c=128, units=64),
    "wide": dict(h=12, w=12, c=128, units=32),
    "near-dead-shifted": dict(h=5, w=7, c=128, units=32, dead=8),
    "sign": dict(h=6, w=6, c=128, units=64, zp=5, act=NONE),
    "late-zp": dict(h=6, w=6, c=128, units=64, dead=8, zp=100, act=NONE),
    "uint8": dict(h=6, w=6, c=128, units=64, zp=7, dtype=U8),
    "batch2-multiplier2": dict(h=4, w=4, c=128, units=64, batch=2, mult=2),
    "stride2": dict(h=12, w=12, c=128, units=64, stride=2),
}


@pytest.mark.parametrize("kind", list(SCALED_FUSED))
def test_depthwise_fused_into_scaled_pointwise(kind):
    kwargs = SCALED_FUSED[kind]
    names, steps = _check(_model(**kwargs))  # exact, and the rows hold LiteRT's depthwise tensor
    assert names == ["DepthwiseIntoRows"]
    (op,) = steps
    assert type(op.conv_epilogue).__name__ == "ScaledEpilogue" and op.const_row is None
    rows = op.epilogue.rows
    assert rows.dtype == np.float32 and np.shares_memory(rows, op.a) and op.a.shape[1] == kwargs["c"] + 1


@given(
    h=st.integers(2, 14),
    w=st.integers(2, 14),
    c=st.sampled_from([4, 8, 16, 48]),
    stride=st.sampled_from([1, 2]),
    act=st.sampled_from([NONE, 1, RELU6]),
    zp=st.integers(-128, 127),
    dtype=st.sampled_from([I8, U8]),
    dead=st.sampled_from([0, 2]),
    units=st.sampled_from([4, 12, 40]),
    batch=st.sampled_from([1, 2]),
    seed=st.integers(0, 3),
)
def test_drawn_depthwise_into_rows(h, w, c, stride, act, zp, dtype, dead, units, batch, seed):
    """Drawn geometries, activations, zero points (near-dead channels or not), conv widths and batches: every
    path and form the sizes select (rows / scaled / folded depthwise, [A, 1] rows or in place), exact, fused."""
    if dtype == U8:
        zp = abs(zp)
    model = _model(h=h, w=w, c=c, stride=stride, act=act, zp=zp, dtype=dtype, dead=dead, units=units, batch=batch,
                   seed=seed)  # fmt: skip
    names, _ = _check(model, spread=False)
    assert names == ["DepthwiseIntoRows"]


def test_mixed_epilogue_is_not_fused():
    """Channels exact only through a Requantizer (a MixedEpilogue) write an integer tensor: no fusion."""
    names, steps = _check(_model(h=12, w=12, c=16, zp=0, act=NONE, mixed=True))
    assert names == ["DepthwiseConvQuantizedFolded", "ConvQuantizedFoldedRows"]
    assert type(steps[0].epilogue).__name__ == "MixedEpilogue"


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        (dict(dw_out=True), ["DepthwiseConvQuantizedRows", "ConvQuantizedFoldedRows"]),
        (dict(twice=True), ["DepthwiseConvQuantizedRows", "ConvQuantizedFoldedRows", "ConvQuantizedFoldedRows"]),
        (dict(kernel=3), ["DepthwiseConvQuantizedRows", "(a 3x3 conv)"]),
    ],
    ids=["depthwise-output-is-a-model-output", "two-readers", "3x3-consumer"],
)
def test_not_fused(kwargs, names):
    got = _check(_model(h=12, w=12, c=16, **kwargs))[0]
    other = got[1].startswith("ConvQuantized") and got[1] != "ConvQuantizedFoldedRows"
    if kwargs.get("kernel") == 3 and other:  # whichever conv path it takes, not the rows the fusion needs
        got[1] = "(a 3x3 conv)"
    assert got == names


@pytest.mark.parametrize(("h", "stride"), [(12, 1), (4, 1), (8, 2)], ids=["rows", "scaled", "folded"])
def test_not_fused_when_preserving_tensors(h, stride):
    names, _ = _check(_model(h=h, w=h, c=16, stride=stride), experimental_preserve_all_tensors=True)
    assert names[1] == "ConvQuantizedFoldedRows" and names[0].startswith("DepthwiseConvQuantized")


#: id -> model arguments whose depthwise's truncating base (-128) is folded into the conv's constant row: extreme
#: output zero points, every fused activation, near-dead per-channel scales, float64 [A, 1] rows and the split form,
#: the scaled conv's float32 rows
FOLDED_BASE = {
    "relu-dead-split": dict(h=12, w=12, c=32, dead=8, act=1),
    "relu-n1-to-1-zp127": dict(h=12, w=12, c=32, dead=8, act=2, zp=127),
    "none-zp127-sign": dict(h=12, w=12, c=32, dead=8, act=NONE, zp=127),
    "none-zp-128": dict(h=12, w=12, c=32, dead=8, act=NONE, zp=-128),
    "relu6-rows-small": dict(h=4, w=4, c=32, dead=8, units=40),
    "relu6-rows-wide-conv": dict(h=12, w=12, c=16, dead=4, units=40),
    "scaled-conv-float32": dict(h=5, w=7, c=128, units=32, dead=8),
    "scaled-conv-float32-relu": dict(h=6, w=6, c=128, units=64, dead=8, act=1, zp=-128),
}


@pytest.mark.parametrize("kind", list(FOLDED_BASE))
def test_folded_base_exact(kind):
    """The base folded into the conv's constant row (fold_addend): outputs equal to BUILTIN_REF's and the rows plus
    the folded base equal LiteRT's depthwise tensor (_check), on four inputs with both extremes."""
    names, steps = _check(_model(**FOLDED_BASE[kind]), spread=False)
    assert names == ["DepthwiseIntoRows"]
    assert steps[0].epilogue.add is None and steps[0].epilogue.folded != 0.0  # b = min(zp, lo): -128, or lo


def test_fold_addend_bound_edge():
    """fold_addend accepts exactly up to its bound (max_abs + |add|) * sum|W| + |const| <= 2^mantissa * unit per
    column (unit: the largest power of two dividing the column: 2^-40 here, odd weights), and its constant row is
    the exact const + add * column sum."""
    from fractions import Fraction

    fold = depthwise_into_rows.fold_addend
    for mantissa, dtype, unit in ((24, np.float32, 1.0), (53, np.float64, 2.0**-40), (53, np.float64, 2.0**-7)):
        w = np.array([[1001.0, -7.0], [-3001.0, 5.0]])
        room = 2**mantissa - 4002 * (255 + 128)  # column 0's constant at the edge (units)
        for const0, ok in ((room, True), (-room, True), (room + 2, False)):
            weights = (np.vstack([w, [const0, 9.0]]) * unit).astype(dtype)
            got = fold(weights, -128.0, 255.0, mantissa)
            assert (got is not None) == ok, (mantissa, unit, const0)
            if got is not None:
                exact = [Fraction(float(weights[2, c])) - 128 * sum(Fraction(float(v)) for v in weights[:2, c])
                         for c in range(2)]  # fmt: skip
                assert [Fraction(float(v)) for v in got[2]] == exact and got.dtype == dtype
                assert np.array_equal(got[:2], weights[:2])
    assert fold(np.array([[2.0], [4.0]]), -128.0, 255.0, 10) is not None  # unit 2: 383 * 2 + 4 <= 2^10 * 2
    assert fold(np.array([[1.0], [np.inf]]), -128.0, 255.0, 53) is None


@pytest.mark.parametrize("kind", ["relu-dead-split", "relu6-rows-small", "scaled-conv-float32"])
def test_fold_addend_is_asked_for_the_rows_float_type_and_value_range(kind, monkeypatch):
    """The bound is checked with the significand of the conv's rows (24 bits for the scaled conv's float32 rows, 53
    for float64) and a max|a| covering every value the rows hold: the depthwise's values, as LiteRT computes them,
    less the folded base (the models' values sit far from the bound, so a wrong argument would not show in the
    outputs)."""
    seen = []
    fold = depthwise_into_rows.fold_addend

    def spy(weights, add, max_abs, mantissa):
        seen.append((np.asarray(weights).dtype, add, max_abs, mantissa))
        return fold(weights, add, max_abs, mantissa)

    monkeypatch.setattr(depthwise_into_rows, "fold_addend", spy)
    model = _model(**FOLDED_BASE[kind])
    litert_py.Interpreter(model_content=model).allocate_tensors()
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(
        model_content=model,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    theirs.allocate_tensors()
    d = next(t["index"] for t in theirs.get_tensor_details() if t["name"] == "d")
    values = []
    for x in _feeds(model):
        theirs.set_tensor(theirs.get_input_details()[0]["index"], x)
        theirs.invoke()
        values.append(theirs.get_tensor(d).astype(np.float64))
    assert seen, "fold_addend was not asked"
    for dtype, add, max_abs, mantissa in seen:
        assert mantissa == {np.dtype(np.float32): 24, np.dtype(np.float64): 53}[dtype]
        assert max_abs >= max(np.abs(v - add).max() for v in values) > 1
