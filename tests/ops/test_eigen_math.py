"""eigen_tanh / eigen_logistic against ai-edge-litert's Eigen-based float TANH / LOGISTIC, bit for bit.

The optimized float kernels (optimized_ops::Tanh / Logistic: ``Eigen::Map(...).array().tanh()`` and
``scalar_logistic_op<float>``) run under the BUILTIN_WITHOUT_DEFAULT_DELEGATES resolver (BUILTIN_REF runs the
reference kernels, AUTO delegates to XNNPACK). Equality is on the bit patterns, NaN payloads included.
The LSTM test observes tensor_utils::ApplySigmoidToVector on the output gate, whose scratch buffer starts
k * n_cell * n_batch floats into the (64-byte aligned) scratch tensor: eigen_logistic's ``offset``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from litert_py.ops.bound_plan import bound_plan, run_calls
from litert_py.ops.eigen_math import (
    LogisticTanhWork,
    _logistic_packet,
    _logistic_scalar,
    _LogisticPacket,
    _Tanh,
    eigen_logistic,
    eigen_tanh,
    logistic_work,
    tanh_work,
)
from litert_py.schema.builder import ModelBuilder
from tests.oracle import T, oracle, run_litert, single_op_model

RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"

#: op name -> our emulation (one table drives the tests)
CASES = {"TANH": eigen_tanh, "LOGISTIC": eigen_logistic}


def _theirs(op: str, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, np.float32)
    model = single_op_model(op, [T(x.shape, np.float32)], [T(x.shape, np.float32)])
    return run_litert(model, [x], RESOLVER)[0]


def _assert_bits(x: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    bad = ours.view(np.int32) != theirs.view(np.int32)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} differ; x={x[bad][:5]!r} ours={ours[bad][:5]!r} theirs={theirs[bad][:5]!r}"
    )


def _grid() -> np.ndarray:
    """A fine grid, every 4099th bit pattern of the whole float32 range, and the special values."""
    rng = np.random.default_rng(20261122)
    specials = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
            1e-45,
            -1e-45,
            1e-38,
            3e-4,
            4e-4,
            -4e-4,
            7.9073896,
            -7.9073896,
            7.907389,
            16.6355324,
            16.64,
            -103.99,
            -104.0,
            -104.01,
            -87.0,
            -89.0,
            -150.0,
            88.0,
            1e30,
            -1e30,
        ],
        np.float32,
    )
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate(
        [
            np.linspace(-20, 20, 400_000, dtype=np.float32),
            (rng.standard_normal(100_000) * 5).astype(np.float32),
            np.linspace(-1e-3, 1e-3, 20_000, dtype=np.float32),
            bits,
            specials,
        ]
    )


@pytest.fixture(scope="module")
def grid() -> np.ndarray:
    return _grid()


@pytest.mark.parametrize("op", CASES, ids=[f"{k.lower()}-float32-grid" for k in CASES])
def test_grid_bit_exact(op, grid):
    oracle()
    _assert_bits(grid, CASES[op](grid), _theirs(op, grid))


def _tail_sensitive(n: int, rng) -> np.ndarray:
    """n values whose logistic differs between Eigen's packet path and its scalar (expf) path."""
    cand = (rng.standard_normal(4000) * 8).astype(np.float32)
    differ = cand[_logistic_packet(cand).view(np.int32) != _logistic_scalar(cand).view(np.int32)]
    assert differ.size >= n
    return differ[:n].copy()


@pytest.mark.parametrize("op", CASES, ids=[f"{k.lower()}-float32-lengths" for k in CASES])
def test_every_length_packets_and_tail(op):
    """Lengths 1..40: whole 4-float packets take the packet path, the last n % 4 elements the scalar one."""
    oracle()
    rng = np.random.default_rng(7)
    for n in range(1, 41):
        x = _tail_sensitive(n, rng)
        _assert_bits(x, CASES[op](x), _theirs(op, x))


def test_logistic_paths_really_differ():
    """The length test can fail: a packet-only (or scalar-only) logistic disagrees with the wheel on a tail."""
    oracle()
    x = _tail_sensitive(7, np.random.default_rng(3))
    theirs = _theirs("LOGISTIC", x)
    assert (_logistic_packet(x).view(np.int32) != theirs.view(np.int32)).any()
    assert (_logistic_scalar(x).view(np.int32) != theirs.view(np.int32)).any()


@pytest.mark.parametrize("op", CASES, ids=[f"{k.lower()}-float32-hypothesis" for k in CASES])
@settings(deadline=None)
@given(data=st.data())
def test_hypothesis_bit_exact(op, data):
    oracle()
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    elements = data.draw(
        st.sampled_from(
            [
                st.floats(-12, 12, width=32),
                st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True),
                st.floats(-120, 20, width=32),
            ]
        )
    )
    x = data.draw(hnp.arrays(np.float32, shape, elements=elements))
    _assert_bits(x, CASES[op](x), _theirs(op, x))


@pytest.mark.parametrize("op", CASES, ids=[f"{k.lower()}-float32-inplace" for k in CASES])
def test_out_in_place(op):
    x = np.linspace(-9, 9, 23, dtype=np.float32).reshape(23, 1)
    expected = CASES[op](x)
    buf = x.copy()
    res = CASES[op](buf, out=buf)
    assert res is buf
    _assert_bits(x, buf, expected)


def _edge_values() -> np.ndarray:
    """Where the prepared-scratch emulations' exactness arguments act: logistic's lower clamp (everything below
    -104 down to -inf must give +0), every integer m of pldexp's 2^m (x from -104 to 17), tanh's clamp, NaN
    payloads of both signs (quiet and signalling), and the extremes."""
    rng = np.random.default_rng(16)
    nan_bits = np.concatenate(
        [rng.integers(0x7F800001, 0x80000000, 2000), rng.integers(0xFF800001, 0x100000000, 2000)]
    ).astype(np.uint32)
    lo = np.nextafter(np.float32(-104), np.float32(-np.inf))
    specials = np.array([-np.inf, np.inf, -3e38, 3e38, -1e30, -104.0, lo, -0.0, 0.0, 1e-45, -1e-45, 16.6355324])
    return np.concatenate(
        [
            np.linspace(-140, -100, 40_000, dtype=np.float32),
            np.linspace(-104, 17, 60_000, dtype=np.float32),
            np.linspace(-9, 9, 40_000, dtype=np.float32),
            nan_bits.view(np.float32),
            specials.astype(np.float32),
        ]
    )


#: op name -> the kernels' per-length function with prepared scratch
WORK = {"TANH": tanh_work, "LOGISTIC": logistic_work}


@pytest.mark.parametrize("op", WORK, ids=[f"{k.lower()}-float32-prepared-edges" for k in WORK])
def test_prepared_work_edges_bit_exact(op):
    """tanh_work / logistic_work (as the LSTM / RNN steps call them, 256 values a call) at the edges above."""
    oracle()
    x = _edge_values()
    x = np.concatenate([x, np.zeros(-x.size % 256, np.float32)])
    theirs = _theirs(op, x)
    work, ours = WORK[op](256), np.empty_like(x)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # as inside an invoke
        for i in range(0, x.size, 256):
            work(x[i : i + 256], ours[i : i + 256])
        buf = x[:256].copy()  # in place, as the kernels call them
        work(buf, buf)
    _assert_bits(x, ours, theirs)
    _assert_bits(x[:256], buf, theirs[:256])


@pytest.mark.parametrize("n", [1, 3, 7, 64, 8192, 8196])
def test_prepared_work_every_length(n):
    """Lengths that are not whole packets (scalar tail) or exceed one chunk fall back to the general functions."""
    x = (np.random.default_rng(n).standard_normal(n) * 8).astype(np.float32)
    for work, general in ((tanh_work, eigen_tanh), (logistic_work, eigen_logistic)):
        out = np.empty_like(x)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            work(n)(x, out)
        _assert_bits(x, out, general(x))


def _lstm_output_gate_model(batch: int, n: int, cifg: bool) -> bytes:
    """UNIDIRECTIONAL_SEQUENCE_LSTM (time-major, one step) whose output is exactly the output gate sigmoid(x).

    Output-gate input weights are the identity and every other weight and the output-gate bias zero, so the gate's
    pre-activation is x; the forget (and input) gate biases 20 give sigmoid = 1 exactly, so with the cell state
    set to 8 the new state stays >= 8, tanh(state) = 1 exactly and the output is o * 1.
    """
    b = ModelBuilder()
    x = b.input("x", (1, batch, n), np.float32)

    def zeros(name, shape):
        return b.const(name, np.zeros(shape, np.float32))

    skip_i = [g for g in "ifco" if not (g == "i" and cifg)]
    ins = [x]
    ins += [
        b.const("w_o", np.eye(n, dtype=np.float32)) if g == "o" else zeros(f"w_{g}", (n, n)) if g in skip_i else -1
        for g in "ifco"
    ]
    ins += [zeros(f"r_{g}", (n, n)) if g in skip_i else -1 for g in "ifco"]
    ins += [-1, -1, -1]  # no peepholes
    ins += [
        zeros("b_o", (n,)) if g == "o" else b.const(f"b_{g}", np.full(n, 20, np.float32)) if g in skip_i else -1
        for g in "ifco"
    ]
    ins += [
        -1,
        -1,
        b.tensor("h", (batch, n), np.float32, is_variable=True),
        b.tensor("c", (batch, n), np.float32, is_variable=True),
        -1,
        -1,
        -1,
        -1,
    ]
    out = b.tensor("out", (1, batch, n), np.float32)
    b.op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        ins,
        [out],
        {"fused_activation_function": 4, "cell_clip": 0.0, "proj_clip": 0.0, "time_major": True},
    )
    b.output(out)
    return b.build()


#: (batch, n_cell, cifg): lstm_eval.cc puts the output gate at scratch + 3 (CIFG: 2) * n_cell * n_batch
LSTM_CASES = [
    (1, 5, False),
    (1, 6, False),
    (1, 7, False),
    (3, 3, False),
    (2, 2, False),
    (1, 9, True),
    (1, 5, True),
    (3, 5, True),
    (2, 7, True),
]


@pytest.mark.parametrize(
    "batch,n,cifg", LSTM_CASES, ids=[f"lstm-sigmoid-b{b}-n{n}{'-cifg' if c else ''}" for b, n, c in LSTM_CASES]
)
def test_lstm_output_gate_offset(batch, n, cifg):
    LiteRT, R = oracle()
    x = _tail_sensitive(batch * n, np.random.default_rng(batch * 100 + n)).reshape(1, batch, n)
    it = LiteRT(model_content=_lstm_output_gate_model(batch, n, cifg), experimental_op_resolver_type=R.BUILTIN_REF)
    it.allocate_tensors()
    cell = next(d["index"] for d in it.get_tensor_details() if d["name"] == "c")
    it.set_tensor(cell, np.full((batch, n), 8, np.float32))
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    theirs = it.get_tensor(it.get_output_details()[0]["index"])
    offset = (2 if cifg else 3) * n * batch
    _assert_bits(x, eigen_logistic(x, offset=offset), theirs)
    if offset % 4:  # the test can fail: ignoring the buffer's misalignment gives other bits
        assert (eigen_logistic(x).view(np.int32) != theirs.view(np.int32)).any()


def _joint_input(grid) -> np.ndarray:
    """The edge values and the grid's bit patterns, padded to whole 1024-value chunks."""
    x = np.concatenate([_edge_values(), grid[-(2**32 // 4099 + 40) :]])
    return np.concatenate([x, np.zeros(-x.size % 1024, np.float32)])


def test_joint_logistic_tanh_bit_exact(grid):
    """LogisticTanhWork (an LSTM step's gate sigmoids and cell-gate tanh in one listing) on 1024 lanes, tanh on
    lanes [512, 768): every value goes through the tanh lanes once and the logistic lanes three times (four
    rotations), against LiteRT's Eigen LOGISTIC and TANH, bit for bit."""
    oracle()
    x = _joint_input(grid)
    log_theirs, tanh_theirs = _theirs("LOGISTIC", x), _theirs("TANH", x)
    work, out = LogisticTanhWork(1024, 512, 768), np.empty(1024 + 256, np.float32)
    keep = np.ones(1024, bool)
    keep[512:768] = False
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for shift in range(0, 1024, 256):
            xs, ls, ts = (np.roll(v, shift) for v in (x, log_theirs, tanh_theirs))
            for i in range(0, x.size, 1024):
                chunk = xs[i : i + 1024].copy()
                run_calls(work.calls(chunk, out))
                _assert_bits(chunk[keep], out[:1024][keep], ls[i : i + 1024][keep])
                _assert_bits(chunk[512:768], out[1024:], ts[i + 512 : i + 768])


@pytest.mark.parametrize(
    "n,lo,hi,rows",
    [(4, 2, 3, 1), (8, 4, 6, 1), (12, 0, 3, 1), (20, 10, 15, 1), (256, 128, 192, 1), (7, 6, 7, 1)]
    + [(8, 2, 3, 2), (24, 4, 6, 3), (40, 10, 15, 2), (512, 128, 192, 2)],
)
def test_joint_logistic_tanh_small(n, lo, hi, rows):
    """LogisticTanhWork at LSTM-like sizes, segment places and rows (bound as a plan, as lstm_plan runs it) against
    _LogisticPacket and _Tanh on the same values, special values included."""
    rng = np.random.default_rng(n + lo + rows)
    specials = _edge_values()[-12:]
    m = (hi - lo) * rows
    work, out = LogisticTanhWork(n, lo, hi, rows), np.empty(n + m, np.float32)
    x = np.empty(n, np.float32)
    plan = bound_plan(work.calls(x, out))
    keep = np.ones((rows, n // rows), bool)
    keep[:, lo:hi] = False
    keep = keep.reshape(-1)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for _ in range(200):
            x[...] = rng.standard_normal(n) * rng.choice([0.01, 1.0, 10.0, 100.0])
            x[rng.integers(0, n, n // 3 + 1)] = rng.choice(specials, n // 3 + 1)
            for call in plan:
                call()
            log, tanh = np.empty(n, np.float32), np.empty(m, np.float32)
            _LogisticPacket(n)(x, log)
            seg = x.reshape(rows, -1)[:, lo:hi].reshape(-1)
            _Tanh(m)(seg.copy(), tanh)
            _assert_bits(x[keep], out[:n][keep], log[keep])
            _assert_bits(seg, out[n:], tanh)


def test_listed_calls_equal_call():
    """_Tanh.calls (the calls lstm_plan binds: tanh_listing) give __call__'s bits, on the edge values."""
    x = _edge_values()
    x = x[: x.size // 64 * 64]
    work, ours, theirs = _Tanh(64), np.empty_like(x), np.empty_like(x)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for i in range(0, x.size, 64):
            work(x[i : i + 64], theirs[i : i + 64])
            run_calls(work.calls(x[i : i + 64], ours[i : i + 64]))
    _assert_bits(x, ours, theirs)
