"""Models that exercise every part of the schema, built with ModelBuilder and the dataclasses.

``feature_models()`` gives (name, Model) pairs for round-trip tests and as fuzz seeds; ``runnable_models()``
gives (name, model bytes, inputs) for models both the oracle and the writer's external-buffer layout must
agree on.
"""

from __future__ import annotations

import dataclasses
import glob
import os

import numpy as np
from flatbuffers import flexbuffers

from litert_py.schema import dtypes
from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.model import (
    BlockwiseQuantization,
    BuiltinOperator,
    DimensionMetadata,
    ExternalBuffer,
    ExternalBufferGroup,
    Model,
    MultiAxisQuantization,
    OperatorCode,
    QuantizationParameters,
    SparsityParameters,
    VariantSubType,
)

CORPUS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "corpus", "*.tflite")))
TT = dtypes.TensorType


def corpus_paths(with_refs: bool = False) -> list[str]:
    """The vendored real models; ``with_refs``: only those with LiteRT reference outputs in tests/corpus/refs
    (the MediaPipe models use custom ops LiteRT's reference resolver lacks: tests/test_mediapipe_models.py)."""
    if not with_refs:
        return CORPUS
    refs = os.path.join(os.path.dirname(__file__), "..", "corpus", "refs")
    return [p for p in CORPUS if os.path.exists(os.path.join(refs, os.path.basename(p)[: -len(".tflite")] + ".npz"))]


def control_flow_model() -> Model:
    """Four subgraphs (WHILE cond/body, CALL_ONCE init), signature defs, metadata, named subgraphs."""
    b = ModelBuilder(description="control flow")
    x = b.input("x", [2], np.float32)
    i = b.input("i", [], np.int32)
    xo = b.tensor("x_out", [2], np.float32)
    io = b.tensor("i_out", [], np.int32)
    b.op("CALL_ONCE", [], [], {"init_subgraph_index": 3})
    b.op("WHILE", [i, x], [io, xo], {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    b.output(io, xo)
    b.signature("serving_default", {"x": x, "i": i}, {"x_out": xo, "i_out": io})
    b.signature("second", {"x": x}, {"x_out": xo})
    b.subgraph("cond")
    ci = b.input("i", [], np.int32)
    b.input("x", [2], np.float32)
    lim, c = b.const("limit", np.int32(3)), b.tensor("c", [], np.bool_)
    b.op("LESS", [ci, lim], [c])
    b.output(c)
    b.subgraph("body")
    bi, bx = b.input("i", [], np.int32), b.input("x", [2], np.float32)
    one, two = b.const("one", np.int32(1)), b.const("two", np.float32([2, 2]))
    bi2, bx2 = b.tensor("i2", [], np.int32), b.tensor("x2", [2], np.float32)
    b.op("ADD", [bi, one], [bi2])
    b.op("MUL", [bx, two], [bx2])
    b.output(bi2, bx2)
    b.subgraph("init")
    b.add_metadata("min_runtime_version", b"1.5.0\0\0\0\0\0\0\0\0\0\0\0")
    b.add_metadata("CONVERSION_METADATA", bytes(range(40)))
    m = b.model()
    return dataclasses.replace(m, metadata_buffer=(m.metadata[0].buffer,))


def tensor_types_model() -> Model:
    """Every tensor flavour: float16/int4/string/bool/bfloat16/int2 constants, resource and variant tensors,
    variable tensors, shape_signature, has_rank, external_buffer references."""
    b = ModelBuilder()
    b.input("dyn", [1, 4], np.float32, shape_signature=[-1, 4], has_rank=True)
    b.tensor("f16", [3], np.float16, data=np.float16([1.5, -2, 65504]))
    b.tensor("i4", [5], None, data=np.uint8([0x21, 0xF3, 0x07]), tensor_type=TT.INT4)
    b.tensor("str", [2], None, data=[b"hello", b""], tensor_type=TT.STRING)
    b.tensor("str_raw", [1], None, data=b"\x01\0\0\0\x0c\0\0\0\x0d\0\0\0x", tensor_type=TT.STRING)
    b.tensor("bool", [2, 2], np.bool_, data=[[True, False], [False, True]])
    b.tensor("bf16", [2], None, data=b"\x80\x3f\x00\x40", tensor_type=TT.BFLOAT16)
    b.tensor("i2", [6], None, data=b"\x1b\x0e", tensor_type=TT.INT2)
    b.tensor("u4", [3], None, data=b"\x21\x03", tensor_type=TT.UINT4)
    b.tensor("f8", [2], None, data=b"\x38\x40", tensor_type=TT.FLOAT8_E4M3FN)
    b.tensor("c64", [1], np.complex64, data=[1 + 2j])
    b.tensor("u64", [2], np.uint64, data=[1, 2**63])
    b.tensor("resource", [], None, tensor_type=TT.RESOURCE)
    b.tensor(
        "variant",
        [],
        None,
        tensor_type=TT.VARIANT,
        variant_tensors=[VariantSubType((2, -1), TT.FLOAT32, True), VariantSubType(None, TT.INT32)],
    )
    b.tensor("state", [1, 8], np.float32, is_variable=True)
    b.tensor("state_init", [2], np.int16, data=np.int16([7, -7]), is_variable=True)
    b.tensor("unranked", [], np.float32, has_rank=False, shape_signature=[])
    b.tensor("scalar", [], np.float32, has_rank=True)
    b.tensor("external", [4], np.float32, external_buffer=7)
    m = b.model()
    return dataclasses.replace(
        m,
        external_buffer_groups=(ExternalBufferGroup("weights.bin"),),
        external_buffers=(ExternalBuffer(7, 0, 4096, 16, "none"),),
    )


def quantization_model() -> Model:
    """Per-tensor, per-channel (quantized_dimension 1), min/max, custom, blockwise and multi-axis details."""
    b = ModelBuilder()
    b.tensor("per_tensor", [2, 3], np.int8, quantization=quant(0.5, -3))
    b.tensor(
        "per_channel",
        [2, 3, 1],
        np.int8,
        data=np.arange(6, dtype=np.int8).reshape(2, 3, 1),
        quantization=quant([0.1, 0.2, 0.3], [0, 0, 0], quantized_dimension=1),
    )
    b.tensor(
        "minmax",
        [4],
        np.uint8,
        quantization=QuantizationParameters(scale=(0.25,), zero_point=(128,), min=(-32.0,), max=(31.75,)),
    )
    b.tensor("minmax_only", [4], np.float32, quantization=QuantizationParameters(min=(-1.0, -2.0), max=(1.0, 2.0)))
    b.tensor(
        "custom",
        [4],
        np.int8,
        quantization=QuantizationParameters(
            scale=(1.0,), zero_point=(0,), details_type=1, custom_details=b"\x00custom\xff"
        ),
    )
    scales = b.const("scales", np.float32([[0.5, 0.25]]))
    zps = b.const("zps", np.int8([[0, 1]]))
    b.tensor(
        "blockwise",
        [1, 64],
        None,
        data=np.zeros(32, np.uint8),
        tensor_type=TT.INT4,
        quantization=QuantizationParameters(details_type=2, details=BlockwiseQuantization(scales, zps, 32)),
    )
    b.tensor(
        "multi_axis",
        [2, 2],
        np.int8,
        data=np.int8([[1, 2], [3, 4]]),
        quantization=QuantizationParameters(details_type=3, details=MultiAxisQuantization(scales, -1, 0, (0, 1))),
    )
    b.tensor("empty_q", [1], np.float32, quantization=QuantizationParameters())
    return b.model()


def sparse_matrix(dense: np.ndarray, index_type: int = 3) -> tuple[SparsityParameters, np.ndarray]:
    """CSR sparsity of a 2-D matrix (row dense, column sparse) and its stored values."""
    segments, indices, values = [0], [], []
    for row in dense:
        nz = np.flatnonzero(row)
        indices.extend(nz.tolist())
        values.extend(row[nz].tolist())
        segments.append(len(indices))
    sp = SparsityParameters(
        traversal_order=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=dense.shape[0]),
            DimensionMetadata(
                format=1,
                array_segments=tuple(segments),
                array_indices=tuple(indices),
                array_segments_type=index_type,
                array_indices_type=index_type,
            ),
        ),
    )
    return sp, np.asarray(values, dense.dtype)


def block_sparse_matrix(dense: np.ndarray, block: tuple[int, int]) -> tuple[SparsityParameters, np.ndarray]:
    """Block-CSR sparsity (blocks of ``block``, stored row-major) of a 2-D matrix and its stored values."""
    r, c = dense.shape[0] // block[0], dense.shape[1] // block[1]
    blocks = dense.reshape(r, block[0], c, block[1]).transpose(0, 2, 1, 3)
    segments, indices, values = [0], [], []
    for i in range(r):
        for j in range(c):
            if np.any(blocks[i, j]):
                indices.append(j)
                values.extend(blocks[i, j].reshape(-1).tolist())
        segments.append(len(indices))
    sp = SparsityParameters(
        traversal_order=(0, 1, 2, 3),
        block_map=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=r),
            DimensionMetadata(
                format=1,
                array_segments=tuple(segments),
                array_indices=tuple(indices),
                array_segments_type=2,
                array_indices_type=1,
            ),
            DimensionMetadata(format=0, dense_size=block[0]),
            DimensionMetadata(format=0, dense_size=block[1]),
        ),
    )
    return sp, np.asarray(values, dense.dtype)


SPARSE_DENSE = np.float32([[0, 1, 0, 0], [2, 0, 0, 3], [0, 0, 0, 0]])
BLOCK_DENSE = np.float32([[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 5, 6], [0, 0, 7, 8]])


def operators_model() -> Model:
    """Opcodes above 127, an old-style opcode (deprecated_builtin_code only), custom ops with options,
    BuiltinOptions2 ops (StableHLO composite/case), intermediates, mutating_variable_inputs, optional
    inputs (-1), sparse constants with each index vector type."""
    b = ModelBuilder()
    x = b.input("x", [3, 4], np.float32)
    y = b.tensor("y", [3, 4], np.float32)
    b.op("CUMSUM", [x, b.const("axis", np.int32(0))], [y], {"exclusive": True, "reverse": False})
    for t in (1, 2, 3):
        sp, values = sparse_matrix(SPARSE_DENSE, t)
        w = b.tensor(f"sparse{t}", SPARSE_DENSE.shape, np.float32, data=values, sparsity=sp)
        b.op("DENSIFY", [w], [b.tensor(f"dense{t}", SPARSE_DENSE.shape, np.float32)])
    sp, values = block_sparse_matrix(BLOCK_DENSE, (2, 2))
    b.op(
        "DENSIFY",
        [b.tensor("block_sparse", BLOCK_DENSE.shape, np.float32, data=values, sparsity=sp)],
        [b.tensor("block_dense", BLOCK_DENSE.shape, np.float32)],
    )
    z = b.tensor("z", [3, 4], np.float32)
    b.op("MyCustomOp", [y, -1], [z], custom_code="MyCustomOp", custom_options=flexbuffers.Dumps({"k": 1.5}))
    b.op(
        "Flex",
        [z],
        [b.tensor("w", [3, 4], np.float32)],
        custom_code="FlexSomething",
        custom_options=bytes(range(256)) * 3,
    )
    st = b.tensor("lstm_state", [1, 4], np.float32, is_variable=True)
    inter = b.tensor("intermediate", [1, 4], np.int16, quantization=quant(0.001, 0))
    b.op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        [x, -1, st],
        [b.tensor("lstm_out", [3, 4], np.float32)],
        {"cell_clip": 1.0, "time_major": True},
        intermediates=[inter],
        mutating_variable_inputs=[False, False, True],
    )
    b.op(
        "STABLEHLO_COMPOSITE",
        [x],
        [b.tensor("c_out", [3, 4], np.float32)],
        {"name": "odml.npu_call", "decomposition_subgraph_index": 1, "composite_attributes": b"\x01\x02", "version": 2},
    )
    b.op("STABLEHLO_CASE", [b.const("branch", np.int32(0))], [], {"branch_subgraph_indices": [1, 1]})
    b.op(
        "DILATE",
        [x, b.const("dil", np.int32([1, 1])), b.const("pad", np.float32(0))],
        [b.tensor("dilated", [3, 4], np.float32)],
    )
    b.op("RELU", [x], [b.tensor("relu_v2", [3, 4], np.float32)], version=2)
    b.output(z)
    b.subgraph("decomposition")
    a = b.input("a", [3, 4], np.float32)
    b.output(a)
    m = b.model()
    # An old-style opcode: only deprecated_builtin_code is set (builtin_code absent, i.e. 0).
    codes = m.operator_codes + (OperatorCode(builtin_code=0, deprecated_builtin_code=int(BuiltinOperator.RELU)),)
    sg = m.subgraphs[0]
    relu = sg.operators[-1]
    sg = dataclasses.replace(sg, operators=sg.operators + (dataclasses.replace(relu, opcode_index=len(codes) - 1),))
    return dataclasses.replace(m, operator_codes=codes, subgraphs=(sg,) + m.subgraphs[1:])


def feature_models() -> list[tuple[str, Model]]:
    return [
        ("control_flow", control_flow_model()),
        ("tensor_types", tensor_types_model()),
        ("quantization", quantization_model()),
        ("operators", operators_model()),
    ]


# -- models the oracle runs --------------------------------------------------------------------------
def add_const_model() -> tuple[Model, list[np.ndarray]]:
    b = ModelBuilder()
    x = b.input("x", [2, 3], np.float32)
    c = b.const("c", np.float32([[1, 2, 3], [4, 5, 6]]))
    y = b.tensor("y", [2, 3], np.float32)
    b.op("ADD", [x, c], [y])
    b.output(y)
    return b.model(), [np.float32([[0.5, -1, 2], [3, 4, -5]])]


def fully_connected_int8_model() -> tuple[Model, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.input("x", [2, 8], np.int8, quantization=quant(0.05, 3))
    w = b.const(
        "w",
        rng.integers(-127, 128, (4, 8)).astype(np.int8),
        quantization=quant([0.01, 0.02, 0.015, 0.03], [0, 0, 0, 0]),
    )
    bias = b.const(
        "bias",
        rng.integers(-500, 500, 4).astype(np.int32),
        quantization=quant([0.0005, 0.001, 0.00075, 0.0015], [0, 0, 0, 0]),
    )
    y = b.tensor("y", [2, 4], np.int8, quantization=quant(1.0, -2))
    b.op("FULLY_CONNECTED", [x, w, bias], [y], version=5)
    b.output(y)
    return b.model(), [rng.integers(-128, 128, (2, 8)).astype(np.int8)]


def float16_dequantize_model() -> tuple[Model, list[np.ndarray]]:
    b = ModelBuilder()
    x = b.input("x", [4], np.float32)
    w16 = b.const("w16", np.float16([0.5, -1.25, 3, 1e-3]))
    w = b.tensor("w", [4], np.float32)
    y = b.tensor("y", [4], np.float32)
    b.op("DEQUANTIZE", [w16], [w], version=3)
    b.op("MUL", [x, w], [y])
    b.output(y)
    return b.model(), [np.float32([1, 2, 3, 4])]


def densify_model(block: bool = False) -> tuple[Model, list[np.ndarray]]:
    dense = BLOCK_DENSE if block else SPARSE_DENSE
    sp, values = block_sparse_matrix(dense, (2, 2)) if block else sparse_matrix(dense, 2)
    b = ModelBuilder()
    x = b.input("x", dense.shape, np.float32)
    w = b.tensor("w", dense.shape, np.float32, data=values, sparsity=sp)
    wd = b.tensor("wd", dense.shape, np.float32)
    y = b.tensor("y", dense.shape, np.float32)
    b.op("DENSIFY", [w], [wd])
    b.op("ADD", [x, wd], [y])
    b.output(y)
    return b.model(), [np.zeros(dense.shape, np.float32)]


def detection_postprocess_model() -> tuple[Model, list[np.ndarray]]:
    """TFLite_Detection_PostProcess: a custom op LiteRT's builtin resolver runs; its flexbuffer options
    travel inline or, with external buffers, after the flatbuffer (large_custom_options_offset)."""
    n, classes = 6, 2
    rng = np.random.default_rng(1)
    anchors = np.float32([[0.1 + 0.15 * k, 0.2 + 0.1 * k, 0.2, 0.2] for k in range(n)])
    b = ModelBuilder()
    boxes = b.input("boxes", [1, n, 4], np.float32)
    scores = b.input("scores", [1, n, classes + 1], np.float32)
    anc = b.const("anchors", anchors)
    outs = [
        b.tensor("det_boxes", [1, 3, 4], np.float32),
        b.tensor("det_classes", [1, 3], np.float32),
        b.tensor("det_scores", [1, 3], np.float32),
        b.tensor("num", [1], np.float32),
    ]
    options = flexbuffers.Dumps(
        {
            "max_detections": 3,
            "max_classes_per_detection": 1,
            "detections_per_class": 100,
            "use_regular_nms": False,
            "nms_score_threshold": 0.3,
            "nms_iou_threshold": 0.5,
            "num_classes": classes,
            "y_scale": 10.0,
            "x_scale": 10.0,
            "h_scale": 5.0,
            "w_scale": 5.0,
        }
    )
    b.op(
        "TFLite_Detection_PostProcess",
        [boxes, scores, anc],
        outs,
        custom_code="TFLite_Detection_PostProcess",
        custom_options=bytes(options),
    )
    b.output(*outs)
    return b.model(), [
        rng.normal(0, 0.5, (1, n, 4)).astype(np.float32),
        rng.uniform(0, 1, (1, n, classes + 1)).astype(np.float32),
    ]


def runnable_models() -> list[tuple[str, Model, list[np.ndarray]]]:
    return [
        ("add_const", *add_const_model()),
        ("fully_connected_int8", *fully_connected_int8_model()),
        ("float16_dequantize", *float16_dequantize_model()),
        ("densify_csr", *densify_model()),
        ("densify_block", *densify_model(block=True)),
        ("detection_postprocess", *detection_postprocess_model()),
        ("conv_net", conv_net_model(), [np.random.default_rng(3).random((1, 8, 8, 3), np.float32)]),
        (
            "conv_net_int8",
            conv_net_model(int8=True),
            [np.random.default_rng(3).integers(-128, 128, (1, 8, 8, 3)).astype(np.int8)],
        ),
    ]


def conv_net_model(int8: bool = False) -> Model:
    """CONV_2D -> DEPTHWISE_CONV_2D -> MAX_POOL_2D -> PAD -> RESHAPE -> FULLY_CONNECTED -> SPLIT -> CONCATENATION:
    ops the runtime has kernels for, so mutations of it reach prepare and the planner."""
    rng = np.random.default_rng(2)
    dt = np.int8 if int8 else np.float32

    def q(scale, zp=0):
        return quant(scale, zp) if int8 else None

    def weights(shape, scale):
        w = rng.integers(-127, 128, shape).astype(np.int8) if int8 else rng.normal(0, 0.3, shape).astype(np.float32)
        return w, (quant([scale] * shape[0] if len(shape) == 4 and shape[0] > 1 else scale, 0) if int8 else None)

    b = ModelBuilder()
    x = b.input("x", [1, 8, 8, 3], dt, quantization=q(0.02, -1))
    w1, q1 = weights((4, 3, 3, 3), 0.01)
    c1 = b.tensor("c1", [1, 8, 8, 4], dt, quantization=q(0.05, 2))
    bias1 = b.const(
        "b1", np.zeros(4, np.int32 if int8 else np.float32), quantization=quant([0.0002] * 4, [0] * 4) if int8 else None
    )
    b.op(
        "CONV_2D",
        [x, b.const("w1", w1, quantization=q1), bias1],
        [c1],
        {"padding": 0, "stride_w": 1, "stride_h": 1, "fused_activation_function": 1},
        version=3 if int8 else 1,
    )
    w2, q2 = weights((1, 3, 3, 4), 0.02)
    c2 = b.tensor("c2", [1, 8, 8, 4], dt, quantization=q(0.05, 2))
    b.op(
        "DEPTHWISE_CONV_2D",
        [
            c1,
            b.const("w2", w2, quantization=q2),
            b.const("b2", np.zeros(4, np.int32 if int8 else np.float32), quantization=q(0.001)),
        ],
        [c2],
        {"padding": 0, "stride_w": 1, "stride_h": 1, "depth_multiplier": 1},
        version=3 if int8 else 1,
    )
    p = b.tensor("p", [1, 4, 4, 4], dt, quantization=q(0.05, 2))
    b.op(
        "MAX_POOL_2D",
        [c2],
        [p],
        {"padding": 1, "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2},
        version=2 if int8 else 1,
    )
    pd = b.tensor("pd", [1, 4, 6, 4], dt, quantization=q(0.05, 2))
    b.op("PAD", [p, b.const("pads", np.int32([[0, 0], [0, 0], [1, 1], [0, 0]]))], [pd])
    r = b.tensor("r", [1, 96], dt, quantization=q(0.05, 2))
    b.op("RESHAPE", [pd, b.const("shape", np.int32([1, 96]))], [r], {"new_shape": [1, 96]})
    w3, q3 = weights((6, 96), 0.01)
    f = b.tensor("f", [1, 6], dt, quantization=q(0.1, 0))
    b.op("FULLY_CONNECTED", [r, b.const("w3", w3, quantization=q3), -1], [f], version=4 if int8 else 1)
    s1, s2 = b.tensor("s1", [1, 3], dt, quantization=q(0.1, 0)), b.tensor("s2", [1, 3], dt, quantization=q(0.1, 0))
    b.op("SPLIT", [b.const("axis", np.int32(1)), f], [s1, s2], {"num_splits": 2})
    out = b.tensor("out", [1, 6], dt, quantization=q(0.1, 0))
    b.op("CONCATENATION", [s2, s1], [out], {"axis": 1})
    b.output(out)
    return b.model()


def runtime_models() -> list[tuple[str, Model]]:
    """Models whose every op has a kernel today, so the Interpreter gets past resolve."""
    return [("conv_net", conv_net_model()), ("conv_net_int8", conv_net_model(int8=True))]
