"""Float32 FULLY_CONNECTED over one input row and chains of them (ops/fully_connected_row.py) against the oracle.

The bias is added inside the BLAS sum there (as LiteRT's default kernels do), so outputs are compared within the
float FC tolerance against both BUILTIN_REF and AUTO; inf/NaN positions must match exactly (NONE clamps an
overflow to FLT_MAX, as LiteRT does). Each test also asserts which prepared step ran, so a broken selection fails.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import litert_py
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import T, oracle, run_litert, single_op_model

RTOL_PER_DEPTH = 1e-5  # as tests/ops/test_fully_connected.py's float32 tolerance
F32 = np.float32


def _steps(it) -> list[str]:
    return [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]


def _run(model: bytes, x: np.ndarray, **kw) -> tuple[list[str], list[np.ndarray], litert_py.Interpreter]:
    it = litert_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return _steps(it), [it.get_tensor(d["index"]) for d in it.get_output_details()], it


def _assert_like_litert(model: bytes, x: np.ndarray, rtol: float, **kw) -> list[str]:
    names, ours, _ = _run(model, x, **kw)
    for resolver in ("BUILTIN_REF", "AUTO"):
        assert_close(ours, run_litert(model, [x], resolver), rtol=rtol, err_msg=resolver)
    return names


@given(
    depth=st.integers(1, 40),
    units=st.integers(1, 20),
    act=st.sampled_from([0, 1, 2, 3]),
    with_bias=st.booleans(),
    in_shape=st.sampled_from(["row", "flat", "keep"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_one_row(depth, units, act, with_bias, in_shape, seed):
    rng = np.random.default_rng(seed)
    x_shape, out_shape = {"row": ((1, depth), (1, units)), "flat": ((depth,), (1, units))}.get(
        in_shape, ((1, 1, depth), (1, 1, units))
    )
    w = rng.standard_normal((units, depth)).astype(F32)
    b = rng.standard_normal(units).astype(F32)
    model = single_op_model(
        "FULLY_CONNECTED",
        [T(x_shape), T.const(w), T.const(b) if with_bias else None],
        [T(out_shape)],
        {"fused_activation_function": act, "keep_num_dims": in_shape == "keep"},
    )
    names = _assert_like_litert(model, rng.standard_normal(x_shape).astype(F32), RTOL_PER_DEPTH * depth)
    assert names == ["FullyConnectedFloatRow"]


def test_more_rows_keep_the_general_path():
    w = np.ones((3, 4), F32)
    model = single_op_model("FULLY_CONNECTED", [T((2, 4)), T.const(w), None], [T((2, 3))])
    assert _assert_like_litert(model, np.arange(8, dtype=F32).reshape(2, 4), 1e-6) == ["FullyConnectedFloat"]


def test_overflow_clamps_to_flt_max():
    """NONE clamps to +-FLT_MAX (an overflow to inf becomes FLT_MAX), RELU6 to 6: as LiteRT."""
    for act in (0, 3):
        w = np.array([[3e38, 3e38], [-3e38, -3e38], [1.0, -1.0]], F32)
        model = single_op_model(
            "FULLY_CONNECTED",
            [T((1, 2)), T.const(w), T.const(np.zeros(3, F32))],
            [T((1, 3))],
            {"fused_activation_function": act},
        )
        x = np.array([[1.0, 1.0]], F32)
        names, ours, _ = _run(model, x)
        assert names == ["FullyConnectedFloatRow"]
        assert_close(ours, run_litert(model, [x]))
        assert np.isfinite(ours[0]).all()


def _chain_model(sizes, acts, *, middle_out: bool = False, shared_middle: bool = False, seed: int = 0) -> bytes:
    """FULLY_CONNECTED layers of ``sizes`` (input first), one row; ``middle_out``: the first layer's output is also a
    model output; ``shared_middle``: it is read by a second FC too (its output another model output)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    h = first = b.input("x", (1, sizes[0]), F32)
    middle = None
    outs = []
    for k, (d, u, act) in enumerate(zip(sizes, sizes[1:], acts)):
        w = b.tensor(f"w{k}", (u, d), F32, data=rng.standard_normal((u, d)).astype(F32))
        bias = b.tensor(f"b{k}", (u,), F32, data=rng.standard_normal(u).astype(F32))
        y = b.tensor(f"y{k}", (1, u), F32)
        b.op("FULLY_CONNECTED", [h, w, bias], [y], {"fused_activation_function": act})
        h = y
        middle = y if k == 0 else middle
    if shared_middle:
        w = b.tensor("ws", (2, sizes[1]), F32, data=np.ones((2, sizes[1]), F32))
        ys = b.tensor("ys", (1, 2), F32)
        b.op("FULLY_CONNECTED", [middle, w, -1], [ys])
        outs.append(ys)
    b.output(*([middle] if middle_out else []), *outs, h)
    assert first == 0
    return b.build()


@pytest.mark.parametrize("acts", [(1, 1, 0), (3, 0, 2), (0, 0, 0)])
def test_chain_fuses_into_one_step(acts):
    """The sine predictor's shape (1 -> 16 -> 16 -> 1) and a wider one: one step, close to LiteRT."""
    for sizes in ((1, 16, 16, 1), (10, 40, 7, 3)):
        x = np.linspace(-3, 3, sizes[0], dtype=F32).reshape(1, -1)
        names = _assert_like_litert(_chain_model(sizes, acts), x, RTOL_PER_DEPTH * max(sizes) * 3)
        assert names == ["FullyConnectedFloatRowChain"]


def test_chain_not_fused_with_preserved_tensors():
    """With experimental_preserve_all_tensors every link writes its tensor: the intermediates are LiteRT's."""
    model = _chain_model((4, 8, 8, 2), (1, 1, 0))
    x = np.arange(4, dtype=F32).reshape(1, 4)
    names, ours, it = _run(model, x, experimental_preserve_all_tensors=True)
    assert names == ["FullyConnectedFloatRow"] * 3
    LiteRT, _ = oracle()
    lit = LiteRT(model_content=model, num_threads=1, experimental_preserve_all_tensors=True)
    lit.allocate_tensors()
    lit.set_tensor(lit.get_input_details()[0]["index"], x)
    lit.invoke()
    index = {d["name"]: d["index"] for d in it.get_tensor_details()}
    for name in ("y0", "y1", "y2"):
        assert_close([it.get_tensor(index[name])], [lit.get_tensor(index[name])], rtol=1e-4, err_msg=name)


def test_resize_to_more_rows_leaves_the_row_path():
    model = _chain_model((4, 8, 8, 2), (1, 1, 0))
    x = np.arange(12, dtype=F32).reshape(3, 4)
    it = litert_py.Interpreter(model_content=model)
    it.resize_tensor_input(0, [3, 4])
    it.allocate_tensors()
    assert "FullyConnectedFloatRowChain" not in _steps(it)
    it.set_tensor(0, x)
    it.invoke()
    LiteRT, _ = oracle()
    lit = LiteRT(model_content=model, num_threads=1)
    lit.resize_tensor_input(0, [3, 4])
    lit.allocate_tensors()
    lit.set_tensor(0, x)
    lit.invoke()
    out = it.get_output_details()[0]["index"]
    assert_close([it.get_tensor(out)], [lit.get_tensor(lit.get_output_details()[0]["index"])], rtol=1e-4)


@pytest.mark.parametrize("middle_out, shared_middle", [(True, False), (False, True)])
def test_chain_keeps_tensors_read_elsewhere(middle_out, shared_middle):
    """A link's output that is a model output, or is read by two FCs, is written: that link is not fused."""
    model = _chain_model((4, 8, 8, 2), (1, 1, 0), middle_out=middle_out, shared_middle=shared_middle)
    x = np.arange(4, dtype=F32).reshape(1, 4)
    names = _assert_like_litert(model, x, 1e-4)
    assert names.count("FullyConnectedFloatRowChain") == 1 and "FullyConnectedFloatRow" in names


def test_chain_bounds_are_prepared_arrays_and_values_unchanged():
    """The clamp bounds are 0-d float32 arrays made at prepare (no scalar conversion per call), the products
    ndarray.dot: bit for bit the per-link ``clip(np.dot(row, W), lo, hi)`` with float32 scalar bounds, the form
    they replace, replayed on the step's own buffers (BLAS's order depends on them), including an overflow clamped
    to FLT_MAX and a NaN passed through."""
    sizes, acts = (3, 16, 16, 2), (0, 3, 1)
    _, _, it = _run(_chain_model(sizes, acts, seed=5), np.zeros((1, 3), F32))
    ((chain, ins, outs),) = it._subgraphs[0].steps
    assert type(chain).__name__ == "FullyConnectedFloatRowChain"
    ranges = {0: (-np.finfo(F32).max, np.finfo(F32).max), 1: (0, np.finfo(F32).max), 3: (0, 6)}
    links = (*chain.links, chain.last)
    for link, act in zip(links, acts):
        for bound, want in zip((link.lo, link.hi), ranges[act]):
            assert type(bound) is np.ndarray and bound.shape == () and bound.dtype == F32 and bound == F32(want)
    for x in (np.array([[0.5, -2.0, 3.0]], F32), np.array([[1e38, 3e38, -3e38]], F32), np.array([[np.nan, 1, 2]], F32)):
        with np.errstate(all="ignore"):
            ins[0][...] = x
            chain(ins, outs)
            ours = outs[0].copy()
            overflowed = (np.abs(chain.links[0].out) == np.finfo(F32).max).any()
            outs[0].fill(0)
            np.copyto(chain.head, x)
            for link, act in zip(links, acts):
                dest = outs[0] if link is chain.last else link.out
                np.dot(link.row, link.weights, out=dest)
                np.clip(dest, F32(ranges[act][0]), F32(ranges[act][1]), out=dest)
        assert overflowed == (x[0, 1] == F32(3e38))  # float32 on both numpy 1.x and 2.x (NEP 50)
        np.testing.assert_array_equal(ours.view(np.int32), outs[0].view(np.int32))


@pytest.mark.parametrize("first_act", [0, 1], ids=["NONE", "RELU"])
def test_chain_link_clamps_an_overflow_to_flt_max(first_act):
    """A chain's first link overflows to +inf: its clamp (NONE: +-FLT_MAX too) makes it FLT_MAX, which the next
    link multiplies by 0: 0, where an unclamped inf would give NaN. Fused equal to unfused byte for byte, and to
    LiteRT (a dropped NONE clamp passed the float fusion fuzzer's sequence)."""
    b = ModelBuilder()
    x = b.input("x", (1, 2), F32)
    w0 = b.tensor("w0", (2, 2), F32, data=np.array([[3e38, 3e38], [1.0, 1.0]], F32))
    y0 = b.tensor("y0", (1, 2), F32)
    b.op("FULLY_CONNECTED", [x, w0, -1], [y0], {"fused_activation_function": first_act})
    w1 = b.tensor("w1", (1, 2), F32, data=np.array([[0.0, 1.0]], F32))
    y1 = b.tensor("y1", (1, 1), F32)
    b.op("FULLY_CONNECTED", [y0, w1, -1], [y1])
    b.output(y1)
    model = b.build()
    feed = np.array([[1.0, 1.0]], F32)
    got = []
    for preserve in (False, True):
        it = litert_py.Interpreter(model_content=model, experimental_preserve_all_tensors=preserve)
        it.allocate_tensors()
        names = [type(op).__name__ for _, op in it._subgraphs[0].steps_nodes]
        assert (names == ["FullyConnectedFloatRowChain"]) != preserve
        it.set_tensor(it.get_input_details()[0]["index"], feed)
        it.invoke()
        got.append(it.get_tensor(it.get_output_details()[0]["index"]))
    assert got[0].tobytes() == got[1].tobytes() and got[0][0, 0] == 2.0
    assert_close(got, [run_litert(model, [feed])[0]] * 2)


def test_direct_call_on_a_strided_output():
    """A direct call on a strided output view (not C-contiguous: ndarray.dot refuses it as ``out``): the values go
    through a buffer, the row FC's and a chain's; the step between columns keeps its bytes."""
    from litert_py.ops.fully_connected_row import prepare_float_row

    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)).astype(np.float32), np.ones(4, np.float32)
    x = rng.standard_normal((1, 3)).astype(np.float32)
    op = prepare_float_row((1, 3), w, b, 0, (1, 4))
    big = np.full((1, 8), 7, np.float32)
    op([x, None, None], [big[:, ::2]])
    want = np.empty((1, 4), np.float32)
    op([x, None, None], [want])
    np.testing.assert_array_equal(big[:, ::2], want)
    assert (big[:, 1::2] == 7).all()
    chain = op.feeding(prepare_float_row((1, 4), w[:, :4].T.copy(), None, 0, (1, 3)))
    big = np.full((1, 6), 7, np.float32)
    chain([x, None, None], [big[:, ::2]])
    want = np.empty((1, 3), np.float32)
    chain([x, None, None], [want])
    np.testing.assert_array_equal(big[:, ::2], want)
