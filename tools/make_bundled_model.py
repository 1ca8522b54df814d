"""Write the small model that ``tflite-run`` runs when it is given no model: litert_py/models/tiny_cnn.tflite.

A float32 image classifier, 1x16x16x3 -> 10 class probabilities, built with litert_py's own writer
(``litert_py.schema.builder.ModelBuilder``) from deterministic random weights (a fixed seed), with one
SignatureDef ``serving_default`` (input ``image``, output ``probabilities``). It uses only ops litert_py
implements: CONV_2D, MAX_POOL_2D, DEPTHWISE_CONV_2D, RELU, AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED,
SOFTMAX.

    python tools/make_bundled_model.py            # (re)write litert_py/models/tiny_cnn.tflite
    python tools/make_bundled_model.py --check    # also run it in ai-edge-litert (and litert_py) and compare

Needs only numpy and litert_py (``--check`` also needs ai-edge-litert). The output is a pure function of
this script, so running it again gives the same model.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "litert_py" / "models" / "tiny_cnn.tflite"
SEED = 20240611
INPUT_SHAPE = (1, 16, 16, 3)
NUM_CLASSES = 10

# Schema enum values (schema.fbs): Padding SAME=0 VALID=1; ActivationFunctionType NONE=0 RELU=1 RELU6=3.
SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3


def _he(rng: np.random.Generator, shape, fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def build() -> bytes:
    """The bundled model's .tflite bytes."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from litert_py.schema.builder import ModelBuilder

    rng = np.random.default_rng(SEED)
    f32 = np.float32
    b = ModelBuilder()
    x = b.input("image", INPUT_SHAPE, f32)

    # 3x3 conv, 8 filters, fused RELU: 1x16x16x3 -> 1x16x16x8
    w1 = b.const("conv1/weights", _he(rng, (8, 3, 3, 3), 27))
    b1 = b.const("conv1/bias", (rng.standard_normal(8) * 0.1).astype(f32))
    h1 = b.tensor("conv1/relu", (1, 16, 16, 8), f32)
    b.op(
        "CONV_2D", [x, w1, b1], [h1], {"padding": SAME, "stride_w": 1, "stride_h": 1, "fused_activation_function": RELU}
    )

    # 2x2 max pool, stride 2: -> 1x8x8x8
    p1 = b.tensor("pool1", (1, 8, 8, 8), f32)
    b.op(
        "MAX_POOL_2D",
        [h1],
        [p1],
        {"padding": VALID, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2},
    )

    # 3x3 depthwise conv, depth multiplier 2: -> 1x8x8x16, then a separate RELU
    w2 = b.const("dwconv/weights", _he(rng, (1, 3, 3, 16), 9))
    b2 = b.const("dwconv/bias", (rng.standard_normal(16) * 0.1).astype(f32))
    h2 = b.tensor("dwconv", (1, 8, 8, 16), f32)
    b.op(
        "DEPTHWISE_CONV_2D", [p1, w2, b2], [h2], {"padding": SAME, "stride_w": 1, "stride_h": 1, "depth_multiplier": 2}
    )
    r2 = b.tensor("dwconv/relu", (1, 8, 8, 16), f32)
    b.op("RELU", [h2], [r2])

    # 1x1 conv, 16 filters, fused RELU6: -> 1x8x8x16
    w3 = b.const("conv2/weights", _he(rng, (16, 1, 1, 16), 16))
    b3 = b.const("conv2/bias", (rng.standard_normal(16) * 0.1).astype(f32))
    h3 = b.tensor("conv2/relu6", (1, 8, 8, 16), f32)
    b.op(
        "CONV_2D",
        [r2, w3, b3],
        [h3],
        {"padding": VALID, "stride_w": 1, "stride_h": 1, "fused_activation_function": RELU6},
    )

    # 4x4 average pool, stride 4: -> 1x2x2x16
    p2 = b.tensor("pool2", (1, 2, 2, 16), f32)
    b.op(
        "AVERAGE_POOL_2D",
        [h3],
        [p2],
        {"padding": VALID, "stride_w": 4, "stride_h": 4, "filter_width": 4, "filter_height": 4},
    )

    # flatten: -> 1x64
    new_shape = b.const("flatten/shape", np.array([1, 64], np.int32))
    flat = b.tensor("flatten", (1, 64), f32)
    b.op("RESHAPE", [p2, new_shape], [flat], {"new_shape": [1, 64]})

    # dense: -> 1x10 logits
    w4 = b.const("dense/weights", _he(rng, (NUM_CLASSES, 64), 64))
    b4 = b.const("dense/bias", (rng.standard_normal(NUM_CLASSES) * 0.1).astype(f32))
    logits = b.tensor("logits", (1, NUM_CLASSES), f32)
    b.op("FULLY_CONNECTED", [flat, w4, b4], [logits], {"fused_activation_function": NONE})

    probs = b.tensor("probabilities", (1, NUM_CLASSES), f32)
    b.op("SOFTMAX", [logits], [probs], {"beta": 1.0})
    b.output(probs)
    b.signature("serving_default", {"image": x}, {"probabilities": probs})
    return b.build()


def check(model: bytes) -> float:
    """Run the model in ai-edge-litert and litert_py on a few random images; the largest difference."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from litert_py import Interpreter

    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(4):
        image = rng.uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
        outs = []
        for cls in (LiteRT, Interpreter):
            it = cls(model_content=model)
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], image)
            it.invoke()
            outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
        worst = max(worst, float(np.max(np.abs(outs[0] - outs[1]))))
    print(f"probabilities (ai-edge-litert): {np.array2string(outs[0][0], precision=4)}")
    return worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    ap.add_argument("--check", action="store_true", help="compare ai-edge-litert and litert_py on it")
    args = ap.parse_args(argv)
    model = build()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(model)
    print(f"wrote {args.out} ({len(model)} bytes)")
    if args.check:
        print(f"max |ai-edge-litert - litert_py| = {check(model):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
