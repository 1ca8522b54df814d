#!/usr/bin/env python3
"""Write a zoo of real architectures made by TensorFlow's own converter (issue 16's proxy for unseen models).

    /tmp/tf/bin/python tools/make_zoo.py [--out /tmp/litert-py-zoo] [--only NAME ...] [--list]

Needs TensorFlow (made with tensorflow-cpu 2.x and tf_keras for the fused LSTM), which neither the package nor its
tests need: run it in a separate environment, e.g.
``python -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu tf_keras``. Then time the zoo against LiteRT
with ``python tools/bench_zoo.py /tmp/litert-py-zoo``.

Every model is a Keras model with seeded random weights (``weights=None``; BatchNormalization left at its
initial statistics, folded by the converter) at a small input, converted by ``tf.lite.TFLiteConverter`` as users
convert theirs, so the graphs are the converter's (its folded batch norms, its fused activations, its
QUANTIZE / DEQUANTIZE placement, its dynamic batch dimension), not ones litert_py's ModelBuilder writes. Each
architecture is written as ``NAME_float.tflite`` and ``NAME_int8.tflite`` (full integer:
``optimizations=[DEFAULT]``, a representative dataset of 20 seeded random samples,
``supported_ops=[TFLITE_BUILTINS_INT8]``, int8 input and output); a few also as ``NAME_dynamic.tflite``
(weights-only int8, the hybrid kernels). An int8 variant the converter cannot fully quantize is skipped with the
converter's reason printed. The models are not committed: this script regenerates them.
"""

from __future__ import annotations

import argparse
import pathlib
import traceback

import numpy as np

OUT = pathlib.Path("/tmp/litert-py-zoo")
CALIBRATION = 20  # representative samples per int8 model


def _keras(legacy: bool = False):
    """Keras 3 (tf.keras), or Keras 2 (tf_keras: its LSTM converts to UNIDIRECTIONAL_SEQUENCE_LSTM)."""
    if legacy:
        import tf_keras

        return tf_keras
    import tensorflow as tf

    return tf.keras


# Each builder returns (keras model, input sampler): sampler(rng, shape) -> float32 calibration sample.
def _normal(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def _signed_image(rng, shape):  # MobileNet v1 / v2 expect inputs preprocessed to [-1, 1]
    return rng.uniform(-1, 1, shape).astype(np.float32)


def _pixels(rng, shape):  # MobileNetV3 / EfficientNet rescale [0, 255] themselves
    return rng.uniform(0, 255, shape).astype(np.float32)


LOGITS = {"classifier_activation": None}


def calibrate_batch_norms(model, sampler, seed: int = 98) -> None:
    """Set every BatchNormalization's moving mean and variance to its input's statistics on 16 random samples, in
    graph order, and its scale and offset to N(1, 0.2) and N(0, 0.2): what training leaves (normalized
    activations of every channel, half of them past a ReLU). With their initial statistics (0, 1) the activations
    of these deep random nets shrink layer by layer until the int8 models' last features all quantize to their
    zero point (constant logits: and BUILTIN_REF's int8 SOFTMAX aborts on a constant row of 1000)."""
    keras = _keras()
    rng = np.random.default_rng(seed)
    x = sampler(rng, (16,) + tuple(model.inputs[0].shape[1:]))
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        h = np.asarray(keras.Model(model.inputs, layer.input)(x), np.float64)
        axes = tuple(range(h.ndim - 1))
        layer.moving_mean.assign(h.mean(axis=axes).astype(np.float32))
        layer.moving_variance.assign(h.var(axis=axes).astype(np.float32))
        c = h.shape[-1]
        if layer.gamma is not None:
            layer.gamma.assign(rng.normal(1, 0.2, c).astype(np.float32))
        if layer.beta is not None:
            layer.beta.assign(rng.normal(0, 0.2, c).astype(np.float32))


def _softmax_head(model, sampler, spread: float = 3.0):
    """``model`` (a keras.applications classifier built with LOGITS) with its last kernel layer (the classifier,
    linear up to the logits) scaled so that its logits' standard deviation on random inputs is ``spread``, then a
    softmax, as a trained classifier has (its batch norms calibrated first)."""
    keras = _keras()
    calibrate_batch_norms(model, sampler)
    shape = (4,) + tuple(model.inputs[0].shape[1:])
    logits = np.asarray(model(sampler(np.random.default_rng(99), shape)))
    head = [layer for layer in model.layers if getattr(layer, "kernel", None) is not None][-1]
    k = spread / max(float(logits.std()), 1e-30)
    head.set_weights([w * k for w in head.get_weights()])
    return keras.Model(model.inputs, keras.layers.Softmax()(model.outputs[0]))


def mobilenet_v1():
    """keras.applications.MobileNet, alpha 0.25 at 128x128 (1000 classes: CONV_2D classifier, RESHAPE, SOFTMAX)."""
    keras = _keras()
    model = keras.applications.MobileNet(input_shape=(128, 128, 3), alpha=0.25, weights=None, **LOGITS)
    return _softmax_head(model, _signed_image), _signed_image


def mobilenet_v2():
    """keras.applications.MobileNetV2, alpha 0.35 at 96x96 (inverted residuals, ReLU6, residual ADDs)."""
    keras = _keras()
    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, **LOGITS)
    return _softmax_head(model, _signed_image), _signed_image


def mobilenet_v3_small():
    """keras.applications.MobileNetV3Small at 96x96 (hard-swish, squeeze-excite blocks, built-in rescaling)."""
    keras = _keras()
    model = keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), weights=None, **LOGITS)
    return _softmax_head(model, _pixels), _pixels


def efficientnet_b0():
    """keras.applications.EfficientNetB0 at 64x64 (swish as LOGISTIC + MUL, squeeze-excite, normalization)."""
    keras = _keras()
    model = keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, **LOGITS)
    return _softmax_head(model, _pixels), _pixels


def ds_cnn():
    """The DS-CNN keyword spotter (ARM / MLPerf Tiny) on 49x10 MFCCs: Conv2D 10x4 s2, four depthwise-separable
    blocks with batch norms and ReLU, global average pooling, Dense 12, softmax."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((49, 10))
    x = layers.Reshape((49, 10, 1))(inp)
    x = layers.Conv2D(64, (10, 4), strides=2, padding="same", use_bias=False)(x)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for _ in range(4):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.Conv2D(64, 1, use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.GlobalAveragePooling2D()(x)
    out = layers.Dense(12, activation="softmax")(x)
    return keras.Model(inp, out), _normal


def tc_resnet():
    """A TC-ResNet-like temporal Conv1D keyword spotter on 49x10 MFCCs (Conv1D converts to CONV_2D between
    EXPAND_DIMS / RESHAPEs): residual blocks of two Conv1D 9 + batch norm, strided 1x1 shortcuts, ADD, ReLU."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((49, 10))
    x = layers.Conv1D(16, 3, padding="same", use_bias=False)(inp)
    for width, stride in ((24, 2), (32, 2), (48, 2)):
        y = layers.Conv1D(width, 9, strides=stride, padding="same", use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.BatchNormalization()(layers.Conv1D(width, 9, padding="same", use_bias=False)(y))
        s = layers.BatchNormalization()(layers.Conv1D(width, 1, strides=stride, use_bias=False)(x))
        x = layers.ReLU()(layers.Add()([y, s]))
    x = layers.GlobalAveragePooling1D()(x)
    out = layers.Dense(12, activation="softmax")(x)
    return keras.Model(inp, out), _normal


def lstm():
    """A keyword LSTM (tf_keras: fused UNIDIRECTIONAL_SEQUENCE_LSTM): 49x10 MFCCs, LSTM 64, Dense 12, softmax."""
    keras = _keras(legacy=True)
    inp = keras.Input((49, 10), batch_size=1)
    x = keras.layers.LSTM(64)(inp)
    out = keras.layers.Dense(12, activation="softmax")(x)
    return keras.Model(inp, out), _normal


def gru():
    """A small GRU classifier (tf_keras; the converter unrolls it into a WHILE loop): 20x16 -> GRU 32 -> Dense 8."""
    keras = _keras(legacy=True)
    inp = keras.Input((20, 16), batch_size=1)
    x = keras.layers.GRU(32)(inp)
    out = keras.layers.Dense(8)(x)
    return keras.Model(inp, out), _normal


def transformer():
    """A tiny transformer encoder block on 32 tokens x 64: MultiHeadAttention (4 heads of 16), residual,
    LayerNormalization, Dense 128 GELU, Dense 64, residual, LayerNormalization, mean over tokens, Dense 10."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((32, 64))
    a = layers.MultiHeadAttention(num_heads=4, key_dim=16)(inp, inp)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([inp, a]))
    f = layers.Dense(64)(layers.Dense(128, activation="gelu")(x))
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, f]))
    x = layers.GlobalAveragePooling1D()(x)
    out = layers.Dense(10)(x)
    return keras.Model(inp, out), _normal


def unet():
    """A small U-Net-like segmenter on 64x64x3: Conv2D / MaxPool encoder, Conv2DTranspose and bilinear
    UpSampling2D (RESIZE_BILINEAR) decoder with skip concatenations, 1x1 Conv2D to 4 classes, softmax."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((64, 64, 3))
    e1 = layers.Conv2D(16, 3, padding="same", activation="relu")(inp)
    e2 = layers.Conv2D(32, 3, padding="same", activation="relu")(layers.MaxPooling2D()(e1))
    b = layers.Conv2D(64, 3, padding="same", activation="relu")(layers.MaxPooling2D()(e2))
    d2 = layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu")(b)
    d2 = layers.Conv2D(32, 3, padding="same", activation="relu")(layers.Concatenate()([d2, e2]))
    d1 = layers.UpSampling2D(interpolation="bilinear")(d2)
    d1 = layers.Conv2D(16, 3, padding="same", activation="relu")(layers.Concatenate()([d1, e1]))
    out = layers.Conv2D(4, 1, activation="softmax")(d1)
    return keras.Model(inp, out), _normal


def dense_ae():
    """The MLPerf Tiny anomaly-detection autoencoder as Keras builds it: 640 -> Dense 128 (batch norm, ReLU) x4
    -> 8 -> 128 x4 -> 640."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((640,))
    x = inp
    for units in (128,) * 4 + (8,) + (128,) * 4:
        x = layers.ReLU()(layers.BatchNormalization()(layers.Dense(units)(x)))
    out = layers.Dense(640)(x)
    return keras.Model(inp, out), _normal


def prelu_cnn():
    """A small CNN with learned and leaky activations on 48x48x3: Conv2D + PReLU (per-channel slopes), Conv2D +
    LeakyReLU, MaxPool, a depthwise-separable block + PReLU, global average pooling, Dense 10."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((48, 48, 3))
    x = layers.Conv2D(16, 3, strides=2, padding="same")(inp)
    x = layers.PReLU(alpha_initializer=keras.initializers.RandomUniform(0.05, 0.3), shared_axes=[1, 2])(x)
    x = layers.LeakyReLU(negative_slope=0.1)(layers.Conv2D(32, 3, padding="same")(x))
    x = layers.MaxPooling2D()(x)
    x = layers.SeparableConv2D(64, 3, padding="same")(x)
    x = layers.PReLU(alpha_initializer=keras.initializers.RandomUniform(0.05, 0.3), shared_axes=[1, 2])(x)
    x = layers.GlobalAveragePooling2D()(x)
    out = layers.Dense(10)(x)
    return keras.Model(inp, out), _normal


def resnet8():
    """The MLPerf Tiny CIFAR ResNet-8 as Keras builds it: 32x32x3, Conv2D 3x3 + batch norm + ReLU stacks, ADD
    residuals with a strided 1x1 shortcut, AveragePooling2D 8x8, Dense 10, softmax."""
    keras = _keras()
    layers = keras.layers
    inp = keras.Input((32, 32, 3))
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same")(inp)))
    for width, stride in ((16, 1), (32, 2), (64, 2)):
        y = layers.Conv2D(width, 3, strides=stride, padding="same")(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.BatchNormalization()(layers.Conv2D(width, 3, padding="same")(y))
        if stride != 1:
            x = layers.Conv2D(width, 1, strides=stride)(x)
        x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.Flatten()(layers.AveragePooling2D(8)(x))
    out = layers.Dense(10, activation="softmax")(x)
    return keras.Model(inp, out), _normal


#: name -> (builder, variants)
ZOO = {
    "mobilenet_v1": (mobilenet_v1, ("float", "int8")),
    "mobilenet_v2": (mobilenet_v2, ("float", "int8", "dynamic")),
    "mobilenet_v3_small": (mobilenet_v3_small, ("float", "int8")),
    "efficientnet_b0": (efficientnet_b0, ("float", "int8")),
    "ds_cnn": (ds_cnn, ("float", "int8")),
    "tc_resnet": (tc_resnet, ("float", "int8")),
    "lstm": (lstm, ("float", "int8")),  # dynamic range leaves the fused LSTM float
    "gru": (gru, ("float",)),  # its int8 conversion crashes the converter (segfault, TF 2.21)
    "transformer": (transformer, ("float", "int8", "dynamic")),
    "unet": (unet, ("float", "int8")),
    "dense_ae": (dense_ae, ("float", "int8", "dynamic")),
    "prelu_cnn": (prelu_cnn, ("float", "int8")),
    "resnet8": (resnet8, ("float", "int8")),
}


def convert(model, sampler, variant: str, seed: int) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant in ("int8", "dynamic"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "int8":
        shape = (1,) + tuple(model.inputs[0].shape[1:])
        rng = np.random.default_rng(seed)
        samples = [sampler(rng, shape) for _ in range(CALIBRATION)]
        converter.representative_dataset = lambda: ([s] for s in samples)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--only", nargs="*", choices=sorted(ZOO), help="architectures to write (default: all)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    skipped = []
    for seed, (name, (build, variants)) in enumerate(ZOO.items()):
        if a.only and name not in a.only:
            continue
        legacy = build in (lstm, gru)
        _keras(legacy).backend.clear_session()  # the layer names' counters: the same names with or without --only
        _keras(legacy).utils.set_random_seed(seed)
        model, sampler = build()
        if build in (ds_cnn, tc_resnet, dense_ae, resnet8):
            calibrate_batch_norms(model, sampler)
        for variant in variants:
            path = a.out / f"{name}_{variant}.tflite"
            try:
                data = convert(model, sampler, variant, seed)
            except Exception as e:  # noqa: BLE001 - the converter's refusal is reported, the zoo goes on
                reason = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
                skipped.append(f"{path.name}: {reason}")
                traceback.print_exc(limit=1)
                continue
            path.write_bytes(data)
            print(f"{path.name}: {len(data)} bytes", flush=True)
    for line in skipped:
        print(f"skipped {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
