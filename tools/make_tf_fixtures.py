#!/usr/bin/env python3
"""Write the TensorFlow-converted fixtures of tests/fixtures/ (state, control flow, lookup tables, sequence ops).

    python tools/make_tf_fixtures.py [--out tests/fixtures]

Needs TensorFlow (any 2.x with the TFLite converter; made with 2.21), which neither the package nor its tests
need: run it in a separate environment, e.g. ``python -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu``.
Every model is made by TF's own converter, so the tests see the graphs real users get (CALL_ONCE
initializers, resource variables, hashtables, WHILE/IF bodies, the converter's LSTM intermediates), not the
ones litert_py's writer makes. Each file stays a few kilobytes; the random weights are seeded.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def _convert_saved_model(module, signatures: dict, **converter_options) -> bytes:
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as d:
        tf.saved_model.save(module, d, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(d, signature_keys=list(signatures))
        for k, v in converter_options.items():
            setattr(converter, k, v)
        return converter.convert()


def variables_model() -> bytes:
    """Two signatures sharing resource variables: ``accumulate`` (v += 2x, n += 1) and ``read``."""
    import tensorflow as tf

    class Accumulator(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = tf.Variable(tf.constant([1.0, -1.0, 0.5]), name="total")
            self.count = tf.Variable(tf.constant(0, tf.int32), name="count")

        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32, name="x")])
        def accumulate(self, x):
            self.total.assign_add(x * 2.0)
            self.count.assign_add(1)
            return {"total": self.total.read_value(), "count": self.count.read_value()}

        @tf.function(input_signature=[])
        def read(self):
            return {"total": self.total.read_value(), "count": self.count.read_value()}

    m = Accumulator()
    return _convert_saved_model(m, {"accumulate": m.accumulate, "read": m.read})


def variables_int8_model() -> bytes:
    """Full-integer int8 with float input and output: a rank-0 input through QUANTIZE, a resource variable set up
    by CALL_ONCE, ``state = 0.5 state + x``, ``y = 2 state + 0.25`` (issue 11: the rank-0 QUANTIZE)."""
    import tensorflow as tf

    class Smoother(tf.Module):
        def __init__(self):
            super().__init__()
            self.state = tf.Variable(tf.constant([0.5, -0.25, 1.0, 0.0]), name="state")

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32, name="x")])
        def step(self, x):
            self.state.assign(self.state * 0.5 + x)
            return {"y": self.state.read_value() * 2.0 + 0.25}

    rng = np.random.default_rng(0)

    def representative():
        for _ in range(50):
            yield {"x": np.float32(rng.uniform(-2, 2))}

    m = Smoother()
    return _convert_saved_model(
        m, {"step": m.step}, optimizations=[tf.lite.Optimize.DEFAULT], representative_dataset=representative
    )


def hashtable_model() -> bytes:
    """string -> int64 and int64 -> string StaticHashTables with default values, and their sizes."""
    import tensorflow as tf

    class Tables(tf.Module):
        def __init__(self):
            super().__init__()
            self.ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(["cat", "dog", "bird", ""]), tf.constant([3, 7, -2, 11], tf.int64)
                ),
                default_value=-1,
            )
            self.names = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant([3, 7, 42], tf.int64), tf.constant(["three", "seven", "forty-two"])
                ),
                default_value="?",
            )

        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.string, name="words"),
                tf.TensorSpec([None], tf.int64, name="numbers"),
            ]
        )
        def lookup(self, words, numbers):
            return {
                "ids": self.ids.lookup(words),
                "names": self.names.lookup(numbers),
                "sizes": tf.stack([self.ids.size(), self.names.size()]),
            }

    m = Tables()
    import tensorflow as tf  # noqa: F811

    return _convert_saved_model(m, {"lookup": m.lookup}, target_spec=_builtin_spec(tf))


def _builtin_spec(tf):
    spec = tf.lite.TargetSpec()
    spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    return spec


def while_if_model() -> bytes:
    """A data-dependent WHILE whose body holds an IF."""
    import tensorflow as tf

    class Loop(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="n"), tf.TensorSpec([4], tf.float32, name="x")])
        def run(self, n, x):
            def body(i, v):
                v = tf.cond(tf.reduce_sum(v) > 0.0, lambda: v * 0.5 - 1.0, lambda: v * 1.5 + 2.0)
                return i + 1, v

            _, y = tf.while_loop(lambda i, v: i < n, body, [tf.constant(0), x])
            return {"y": y}

    m = Loop()
    return _convert_saved_model(m, {"run": m.run})


def while_grow_model() -> bytes:
    """A WHILE that appends one value per iteration to a tensor (its shape changes every iteration)."""
    import tensorflow as tf

    class Grow(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="n"), tf.TensorSpec([4], tf.float32, name="x")])
        def run(self, n, x):
            def body(i, v, grown):
                v = v * 0.5 - 1.0
                grown = tf.concat([grown, tf.reshape(tf.reduce_max(v), [1])], axis=0)
                return i + 1, v, grown

            _, y, grown = tf.while_loop(
                lambda i, v, g: i < n,
                body,
                [tf.constant(0), x, tf.zeros([0], tf.float32)],
                shape_invariants=[tf.TensorShape([]), tf.TensorShape([4]), tf.TensorShape([None])],
            )
            return {"y": y, "trace": grown}

    m = Grow()
    return _convert_saved_model(m, {"run": m.run})


def random_model() -> bytes:
    """Seeded tf.random.normal / uniform / categorical: TFLite's RANDOM_STANDARD_NORMAL, RANDOM_UNIFORM and
    MULTINOMIAL with the seeds in their options (deterministic streams, the same in every runtime)."""
    import tensorflow as tf

    class Random(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2, 5], tf.float32, name="logits")])
        def sample(self, logits):
            return {
                "normal": tf.random.normal([3, 7], seed=7) * 1.0,
                "uniform": tf.random.uniform([4, 5], seed=11) * 1.0,
                "categorical": tf.random.categorical(logits, 6, seed=3),
            }

    m = Random()
    return _convert_saved_model(m, {"sample": m.sample})


def _keras(legacy: bool):
    """Keras 2 (tf_keras: its LSTM converts to the fused sequence ops) or Keras 3 (converted op by op: WHILE)."""
    if legacy:
        import tf_keras

        return tf_keras
    import tensorflow as tf

    return tf.keras


def _keras_sequence_model(kind: str, seed: int, legacy: bool, units: int, features: int):
    keras = _keras(legacy)
    keras.utils.set_random_seed(seed)
    inp = keras.Input((5, features), batch_size=1, name="x")
    if kind == "lstm":
        out = keras.layers.LSTM(units, return_sequences=True)(inp)
    elif kind == "bidirectional":
        out = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))(inp)
    elif kind == "rnn":
        out = keras.layers.SimpleRNN(units, return_sequences=True)(inp)
    elif kind == "gru":
        out = keras.layers.GRU(5)(inp)
    else:
        raise ValueError(kind)
    return keras.Model(inp, out)


def sequence_model(
    kind: str, quantization: str, seed: int = 0, legacy: bool = True, units: int = 6, features: int = 8
) -> bytes:
    """A Keras sequence layer; ``quantization``: float, dynamic (hybrid int8 weights: the converter quantizes
    weights of 1024 elements or more, hence the bigger sizes there), int8 (full integer)."""
    import tensorflow as tf

    model = _keras_sequence_model(kind, seed, legacy, units, features)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if quantization in ("dynamic", "int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "int8":
        rng = np.random.default_rng(seed)

        def representative():
            for _ in range(50):
                yield [rng.uniform(-1, 1, (1, 5, features)).astype(np.float32)]

        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def _verify_keras_model(seed: int = 0):
    """A small image classifier (conv, depthwise conv, pooling, dense, softmax) for tflite-verify's tests."""
    import tensorflow as tf

    keras = tf.keras
    keras.utils.set_random_seed(seed)
    inp = keras.Input((8, 8, 3), batch_size=1, name="image")
    x = keras.layers.Conv2D(6, 3, padding="same", activation="relu")(inp)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = keras.layers.AveragePooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(5)(x)
    out = keras.layers.Softmax()(x)
    return keras.Model(inp, out)


def _verify_converter(quantized: bool, seed: int = 0):
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(_verify_keras_model(seed))
    if quantized:
        rng = np.random.default_rng(seed)
        calibration = [rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32) for _ in range(32)]
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([c] for c in calibration)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter


def verify_pair_model(quantized: bool) -> bytes:
    """The float model, or its full-integer version (int8 inside, float input and output) from one Keras model."""
    return _verify_converter(quantized).convert()


def verify_debug_model() -> bytes:
    """The same int8 model instrumented by tf.lite.experimental.QuantizationDebugger: a NumericVerify op
    compares each quantized tensor with its float twin."""
    import tensorflow as tf

    converter = _verify_converter(True)
    rng = np.random.default_rng(1)
    samples = [rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32) for _ in range(4)]
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=lambda: ([s] for s in samples)
    )
    return debugger.get_debug_quantized_model()


FIXTURES = {
    "tf_variables.tflite": variables_model,
    "tf_variables_int8.tflite": variables_int8_model,
    "tf_hashtables.tflite": hashtable_model,
    "tf_while_if.tflite": while_if_model,
    "tf_while_grow.tflite": while_grow_model,
    "tf_random.tflite": random_model,
    "tf_keras3_lstm_while.tflite": lambda: sequence_model("lstm", "float", legacy=False),
    "tf_lstm_float.tflite": lambda: sequence_model("lstm", "float"),
    "tf_lstm_dynamic_range.tflite": lambda: sequence_model("lstm", "dynamic", units=32, features=32),
    "tf_lstm_int8.tflite": lambda: sequence_model("lstm", "int8"),
    "tf_bidirectional_lstm_float.tflite": lambda: sequence_model("bidirectional", "float"),
    "tf_simple_rnn_float.tflite": lambda: sequence_model("rnn", "float"),
    "tf_gru_float.tflite": lambda: sequence_model("gru", "float"),
    "tf_verify_float.tflite": lambda: verify_pair_model(False),
    "tf_verify_int8.tflite": lambda: verify_pair_model(True),
    "tf_verify_debug.tflite": verify_debug_model,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    only = {s for s in a.only.split(",") if s}
    for name, make in FIXTURES.items():
        if only and name not in only:
            continue
        data = make()
        (a.out / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
