#!/usr/bin/env python3
"""UNIDIRECTIONAL_SEQUENCE_LSTM / _RNN per invoke in litert_py and ai-edge-litert (reference kernels), same run,
process CPU time.

    python tools/bench_lstm.py [--repeats 9] [--only NAME] [--inputs 16]

Keyword-spotting-sized layers (batch 1, 49 time steps, 40 inputs, 64 cells) in float32, hybrid (int8 weights)
and full integer (8x8_16) form, built with the test suite's model builders, and UNIDIRECTIONAL_SEQUENCE_RNN
(float32, hybrid; 64 units, TANH) of the same sequence. Each timed invoke takes the next of ``--inputs``
pre-drawn inputs (distinct by default for every invoke: no value-keyed cache hits). Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from litert_py import Interpreter  # noqa: E402
from litert_py.schema.builder import ModelBuilder  # noqa: E402
from tests.ops.recurrent._weights import gate_inputs, integer_lstm_model  # noqa: E402
from tests.ops.recurrent._weights import weights as _weights  # noqa: E402
from tests.ops.recurrent.test_lstm import float_lstm_model, int_lstm_model  # noqa: E402

SIZES = dict(batch=1, time=49, n_in=40, n_cell=64, n_out=64)


def models():
    rng = np.random.default_rng(0)
    s = SIZES
    yield (
        "float32",
        float_lstm_model(
            "UNIDIRECTIONAL_SEQUENCE_LSTM",
            rng,
            "plain",
            False,
            False,
            False,
            s["batch"],
            s["time"],
            s["n_in"],
            s["n_cell"],
            s["n_out"],
        ),
    )
    yield (
        "hybrid",
        float_lstm_model(
            "UNIDIRECTIONAL_SEQUENCE_LSTM",
            rng,
            "plain",
            True,
            False,
            False,
            s["batch"],
            s["time"],
            s["n_in"],
            s["n_cell"],
            s["n_out"],
        ),
    )
    yield (
        "int8 (8x8_16)",
        int_lstm_model(
            "UNIDIRECTIONAL_SEQUENCE_LSTM",
            rng,
            "plain",
            False,
            s["batch"],
            s["time"],
            s["n_in"],
            s["n_cell"],
            s["n_out"],
            -11,
        ),
    )
    for hybrid in (False, True):
        yield ("rnn hybrid" if hybrid else "rnn float32"), rnn_model(rng, hybrid)
    for name, flags in INT_VARIANTS.items():
        yield f"int8 {name}", int_variant_model(np.random.default_rng(2), *flags)


#: the 8x8_16 cells with peepholes and / or layer norm: name -> (cifg, peephole, layer norm, projection)
INT_VARIANTS = {
    "peephole": (False, True, False, False),
    "layer-norm": (False, False, True, False),
    "peep+ln": (False, True, True, False),
    "peep+proj": (False, True, False, True),
    "ln+proj": (False, False, True, True),
    "cifg+peep": (True, True, False, False),
    "cifg+peep+ln+proj": (True, True, True, True),
}


def int_variant_model(rng, cifg: bool, peep: bool, ln: bool, proj: bool):
    """A batch-major UNIDIRECTIONAL_SEQUENCE_LSTM 8x8_16 cell of SIZES (the projection to n_out // 2 outputs)."""
    s = SIZES
    n_out = s["n_out"] // 2 if proj else s["n_cell"]
    xshape = (s["batch"], s["time"], s["n_in"])
    b = ModelBuilder()
    ins = gate_inputs(b, rng, xshape, s["n_cell"], n_out, cifg, peep, proj, proj)
    model = integer_lstm_model(
        b, rng, ins, "UNIDIRECTIONAL_SEQUENCE_LSTM", False, xshape, s["n_cell"], n_out, -11, 0, 0, cifg, ln, 0.0, 0.0
    )
    return model, xshape


def rnn_model(rng, hybrid: bool):
    s = SIZES
    b = ModelBuilder()
    xshape = (s["batch"], s["time"], s["n_in"])
    x = b.input("x", xshape, np.float32)
    w = _weights(b, rng, "w", (s["n_cell"], s["n_in"]), hybrid)
    r = _weights(b, rng, "r", (s["n_cell"], s["n_cell"]), hybrid)
    bias = b.const("bias", rng.standard_normal(s["n_cell"]).astype(np.float32))
    h = b.tensor("h", (s["batch"], s["n_cell"]), np.float32, is_variable=True)
    out = b.tensor("out", xshape[:2] + (s["n_cell"],), np.float32)
    b.op(
        "UNIDIRECTIONAL_SEQUENCE_RNN", [x, w, r, bias, h], [out], {"time_major": False, "fused_activation_function": 4}
    )
    b.output(out)
    return b.build(), xshape


def per_invoke(it, xs: list, repeats: int) -> float:
    """The median process time of ``repeats`` invokes, each on the next of the pre-drawn inputs ``xs`` (set
    outside the timing; the first one is the warm-up's): the same input every time would let caches keyed on
    the values (an inverse square root per variance, say) hit where a real stream would miss."""
    it.allocate_tensors()
    index = it.get_input_details()[0]["index"]
    it.set_tensor(index, xs[0])
    it.invoke()
    times = []
    for r in range(repeats):
        it.set_tensor(index, xs[(r + 1) % len(xs)])
        t = time.process_time()
        it.invoke()
        times.append(time.process_time() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--only", default="", help="only the models whose name contains this")
    ap.add_argument("--inputs", type=int, default=16, help="distinct pre-drawn inputs the invokes rotate through")
    a = ap.parse_args()
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    print(f"UNIDIRECTIONAL_SEQUENCE_LSTM / _RNN {SIZES}, median of {a.repeats} invokes over {a.inputs} inputs")
    for name, (model, xshape) in models():
        if a.only not in name:
            continue
        rng = np.random.default_rng(1)
        xs = [
            (rng.integers(-128, 128, xshape) if name.startswith("int8") else rng.standard_normal(xshape)).astype(
                np.int8 if name.startswith("int8") else np.float32
            )
            for _ in range(a.inputs)
        ]
        ours = per_invoke(Interpreter(model_content=model), xs, a.repeats)
        ref = per_invoke(
            LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF),
            xs,
            a.repeats,
        )
        print(
            f"  {name:14s} litert_py {ours * 1e3:7.3f} ms   LiteRT ref {ref * 1e3:7.3f} ms   ratio {ours / ref:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
