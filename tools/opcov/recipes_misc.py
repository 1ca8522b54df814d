"""Dashboard recipes: complex numbers, FFT, random numbers; detection and non-max suppression; smaller legacy
ops; MediaPipe's custom ops.
"""

from __future__ import annotations

import struct

import numpy as np

from litert_py.schema.builder import quant
from litert_py.schema.model import QuantizationParameters

from .cases import Const, Graph, In, Out, P, case, f32, i32, i64, randv, recipe
from .litert_side import AUTO

# ----------------------------------------------------------------------------------------------
# Complex numbers, FFT, random numbers
# ----------------------------------------------------------------------------------------------


@recipe("COMPLEX_ABS", "REAL", "IMAG")
def complex_parts(p: P):
    if p.path == "float32":
        return [
            case(p.op, [In((2, 3), np.complex64)], [Out((2, 3), np.float32)], label="complex64"),
            case(p.op, [In((2, 3), np.complex128)], [Out((2, 3), np.float64)], label="complex128"),
        ]
    return case(p.op, [p.x((2, 3))], [p.out((2, 3))])


@recipe("RFFT2D")
def rfft2d(p: P):
    return [
        case(p.op, [p.x((2, 4, 8)), i32([4, 8])], [Out((2, 4, 5), np.complex64)], label="same-size"),
        case(p.op, [p.x((3, 5)), i32([4, 4])], [Out((4, 3), np.complex64)], label="crop-and-pad"),
    ]


@recipe("RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL")
def random_op(p: P):
    return [
        case(p.op, [i32([2, 3])], [Out((2, 3), p.dtype)], dict(seed=1, seed2=2), label="int32-shape"),
        case(p.op, [i64([4])], [Out((4,), p.dtype)], dict(seed=7, seed2=0), label="int64-shape"),
    ]


@recipe("MULTINOMIAL")
def multinomial(p: P):
    return [
        case(p.op, [p.x((2, 4)), i32(5)], [Out((2, 5), np.int64)], dict(seed=3, seed2=4), label="int64-out"),
        case(p.op, [p.x((1, 3)), i32(4)], [Out((1, 4), np.int32)], dict(seed=5, seed2=6), label="int32-out"),
    ]


# ----------------------------------------------------------------------------------------------
# Detection, non-max suppression
# ----------------------------------------------------------------------------------------------


def boxes_gen(n: int):
    def gen(rng):
        y, x = rng.uniform(0, 0.6, n), rng.uniform(0, 0.6, n)
        h, w = rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n)
        return np.stack([y, x, y + h, x + w], axis=1)

    return gen


@recipe("NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5")
def non_max_suppression(p: P):
    boxes = In((6, 4), p.dtype, gen=boxes_gen(6))
    scores = In((6,), p.dtype, lo=0.0, hi=1.0)
    ins = [boxes, scores, i32(4), Const(np.float32(0.4)), Const(np.float32(0.2))]
    if p.op == "NON_MAX_SUPPRESSION_V4":
        return case(p.op, ins, [Out((4,), np.int32), Out((), np.int32)])
    return [
        case(
            p.op,
            ins + [Const(np.float32(0.0))],
            [Out((4,), np.int32), Out((4,), np.float32), Out((), np.int32)],
            label="hard-nms",
        ),
        case(
            p.op,
            ins + [Const(np.float32(0.5))],
            [Out((4,), np.int32), Out((4,), np.float32), Out((), np.int32)],
            label="soft-nms",
        ),
    ]


@recipe("TFLite_Detection_PostProcess")
def detection_postprocess(p: P):
    from flatbuffers import flexbuffers

    n, classes, max_det = 6, 3, 3
    anchors = np.stack([np.linspace(0.2, 0.8, n), np.linspace(0.3, 0.7, n), np.full(n, 0.3), np.full(n, 0.4)], 1)
    qa = {"int8": quant(0.01, 0), "uint8": quant(0.01, 0)}.get(p.path)
    cq = {"int8": quant(1 / 256, -128), "uint8": quant(1 / 256, 0)}.get(p.path)
    cases = []
    for regular in (False, True):
        opts = dict(
            max_detections=max_det,
            max_classes_per_detection=1,
            detections_per_class=2,
            use_regular_nms=regular,
            nms_score_threshold=0.2,
            nms_iou_threshold=0.5,
            num_classes=classes,
            y_scale=10.0,
            x_scale=10.0,
            h_scale=5.0,
            w_scale=5.0,
        )
        box = p.x((1, n, 4), q=quant(0.05, 0) if p.quantized else None, lo=-2, hi=2)
        cls = p.x((1, n, classes + 1), q=cq, lo=0, hi=1)
        anc = p.const(anchors, q=qa) if p.quantized else Const(anchors.astype(p.dtype))
        outs = [Out((1, max_det, 4)), Out((1, max_det)), Out((1, max_det)), Out((1,))]
        cases.append(
            case(
                p.op,
                [box, cls, anc],
                outs,
                custom_options=bytes(flexbuffers.Dumps(opts)),
                label=f"regular-nms={regular}",
            )
        )
    return cases


@recipe("AudioSpectrogram")
def audio_spectrogram(p: P):  # LiteRT: float32 only (other paths are attempted and refused)
    from flatbuffers import flexbuffers

    cases = []
    for window, stride, squared in ((64, 32, True), (100, 40, False)):
        bins = (1 << (window - 1).bit_length()) // 2 + 1
        opts = bytes(flexbuffers.Dumps(dict(window_size=window, stride=stride, magnitude_squared=squared)))
        cases.append(
            case(
                p.op,
                [p.x((300, 2))],
                [p.out((2, 1 + (300 - window) // stride, bins), same=True)],
                custom_options=opts,
                label=f"window{window}-stride{stride}-squared={squared}",
            )
        )
    return cases


@recipe("Mfcc")
def mfcc(p: P):  # LiteRT: float32 spectrogram, int32 rate only (other paths are attempted and refused)
    from flatbuffers import flexbuffers

    opts = bytes(
        flexbuffers.Dumps(
            dict(
                upper_frequency_limit=4000,
                lower_frequency_limit=20,
                filterbank_channel_count=20,
                dct_coefficient_count=13,
            )
        )
    )
    spec = p.x((2, 3, 129), lo=0, hi=10)
    rate = In((1,), np.int32, gen=lambda rng: np.array([16000]))
    return [
        case(p.op, [spec, i32([16000])], [p.out((2, 3, 13), same=True)], custom_options=opts, label="constant-rate"),
        case(p.op, [spec, rate], [p.out((2, 3, 13), same=True)], custom_options=opts, label="rate-input"),
    ]


# ----------------------------------------------------------------------------------------------
# Smaller legacy ops
# ----------------------------------------------------------------------------------------------


@recipe("NumericVerify")
def numeric_verify(p: P):  # LiteRT: int8 / uint8 / int16 / float16 input (float16 shown as float32), f32 ref
    from flatbuffers import flexbuffers

    def opts(tolerance: float, log_if_failed: bool) -> bytes:
        return bytes(flexbuffers.Dumps(dict(tolerance=tolerance, log_if_failed=log_if_failed)))

    shape = (2, 3, 4)
    if p.path == "float32":  # the op's float variant: a float16 tensor verified against its float32 reference
        q_in, const = In(shape, np.float16), Const(p.rand(shape).astype(np.float16), np.float16)
    else:
        q_in, const = p.x(shape), p.const(p.rand(shape))
    ref, out = In(shape, np.float32), Out(shape, np.float32)
    exact = dict(rtol=0.0, atol=0.0)
    cases = [
        case(p.op, [q_in, ref], [out], custom_options=opts(0.0, False), label="statistics", **exact),
        case(p.op, [const, ref], [out], custom_options=opts(0.0, False), label="constant-input", **exact),
    ]
    if p.path != "float32":  # a float16 input has scale 0: every nonzero difference fails the check
        cases.append(case(p.op, [q_in, ref], [out], custom_options=opts(1e6, True), label="checked", **exact))
    if p.path in ("int8", "uint8"):
        zp = p.qin().zero_point[0]
        pc = QuantizationParameters(scale=(0.05, 0.1, 0.02), zero_point=(zp, zp, zp), quantized_dimension=1)
        cases.append(
            case(p.op, [p.x(shape, q=pc), ref], [out], custom_options=opts(0.0, False), label="per-channel", **exact)
        )
    return cases


@recipe("aeq.hadamard_rotation")
def hadamard_rotation(p: P):  # LiteRT: float32 and int32 (its bits transformed as float32) only
    from flatbuffers import flexbuffers

    cases = []
    for shape, size in (((2, 16), 8), ((2, 3, 128), 64), ((3, 10), 4)):  # small loop, unrolled (>= 64), ragged
        x = p.x(shape, lo=0, hi=10**6) if p.path == "int32" else p.x(shape)  # int32: no NaN bit patterns
        cases.append(
            case(
                p.op,
                [x],
                [p.out(shape, same=True)],
                rtol=0.0,
                atol=0.0,
                custom_options=bytes(flexbuffers.Dumps(dict(hadamard_size=size))),
                label=f"size{size}-{'x'.join(map(str, shape))}",
            )
        )
    return cases


# ----------------------------------------------------------------------------------------------
# MediaPipe's custom ops (float32 only). LiteRT runs the first three only with XNNPACK (its default resolver,
# AUTO), which claims the pools only when the filter equals the stride; the transform ops it cannot run.
# ----------------------------------------------------------------------------------------------


def _pool_params(padding: int, stride: int, size: int) -> bytes:  # TfLitePoolParams: padding 1 SAME, 2 VALID
    return struct.pack("<6i", padding, stride, stride, size, size, 0)


@recipe("Convolution2DTransposeBias")
def convolution_2d_transpose_bias(p: P):  # custom options: TfLiteTransposeConvParams {padding, stride_w, stride_h}
    cases = []
    for padding, stride, k in ((1, 2, 2), (1, 2, 3), (2, 1, 3)):
        x, (o, c) = p.x((1, 4, 5, 3)), (4, 3)
        p_h = max(0, k - 3 % stride - 1) if padding == 1 else 0
        p_w = max(0, k - 4 % stride - 1) if padding == 1 else 0
        out = p.out((1, stride * 3 + k - p_h, stride * 4 + k - p_w, o))
        cases.append(
            case(
                p.op,
                [x, p.const(p.rand((o, k, k, c))), p.const(p.rand((o,)))],
                [out],
                custom_options=struct.pack("<3i", padding, stride, stride),
                label=f"{'same' if padding == 1 else 'valid'}-k{k}-s{stride}",
            )
        )
    for c in cases:
        c.resolvers = (AUTO,)
    return cases


@recipe("MaxPoolingWithArgmax2D")
def max_pooling_with_argmax_2d(p: P):
    """The values, and the indices seen through MaxUnpooling2D: XNNPACK stores its indices as uint32 bits,
    column-major (MediaPipe: float ``fy * fw + fx + 0.1``), so they are compared by the positions they name
    (tests/ops/custom/test_mediapipe_pooling.py compares them directly). LiteRT crashes when the indices are not
    used."""
    cases = []
    for padding, shape in ((1, (1, 5, 6, 3)), (2, (2, 6, 4, 2))):
        g = Graph()
        oh, ow = (-(-shape[1] // 2), -(-shape[2] // 2)) if padding == 1 else (shape[1] // 2, shape[2] // 2)
        out = (shape[0], oh, ow, shape[3])
        values, idx = g.op(p.op, [p.x(shape)], [p.out(out), Out(out)], custom_options=_pool_params(padding, 2, 2))
        (y,) = g.op(
            "MaxUnpooling2D",
            [values, idx],
            [p.out((shape[0], 2 * oh, 2 * ow, shape[3]))],
            custom_options=_pool_params(2, 2, 2),
        )
        cases.append(g.case([values, y], label="same" if padding == 1 else "valid", resolvers=(AUTO,)))
    return cases


@recipe("MaxUnpooling2D")
def max_unpooling_2d(p: P):
    """Unpooling what MaxPoolingWithArgmax2D pooled (each runtime reads the index encoding its pool wrote)."""
    g = Graph()
    shape, out = (1, 6, 4, 3), (1, 3, 2, 3)
    values, idx = g.op(
        "MaxPoolingWithArgmax2D", [p.x(shape)], [p.out(out), Out(out)], custom_options=_pool_params(2, 2, 2)
    )
    (y,) = g.op(p.op, [values, idx], [p.out(shape)], custom_options=_pool_params(2, 2, 2))
    return g.case([y], label="after-MaxPoolingWithArgmax2D", resolvers=(AUTO,))


def _matrix(gen_rng, scale: float = 1.0) -> np.ndarray:
    a = gen_rng.uniform(-np.pi, np.pi)
    m = np.eye(4, dtype=np.float32)
    m[:2, :2] = scale * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    m[:2, 3] = gen_rng.uniform(0, 8, 2)
    return m.reshape(1, 4, 4)


@recipe("Landmarks2TransformMatrix")
def landmarks2_transform_matrix(p: P):  # FlexBuffer options; v2 (MediaPipe's CPU resolver) and v1
    from flatbuffers import flexbuffers

    v2 = dict(
        left_rotation_idx=0,
        right_rotation_idx=1,
        target_rotation_radians=0.0,
        output_height=16,
        output_width=16,
        scale_x=1.5,
        scale_y=1.5,
        subset_idxs=[0, 1, 2, 3, 4, 5],
    )
    v1 = dict(
        input_hw=[64, 64],
        output_hw=[16, 16],
        dimensions=3,
        landmarks_range=64,
        bbox_size_multiplier=1.5,
        left_rotation_idx=0,
        right_rotation_idx=1,
        subset=[0, 1, 2, 3, 4, 5],
    )
    return [
        case(
            p.op,
            [p.x((1, 6, 3), lo=0, hi=64)],
            [p.out((1, 4, 4))],
            version=2,
            label="v2",
            custom_options=bytes(flexbuffers.Dumps(v2)),
        ),
        case(
            p.op,
            [p.x((1, 1, 1, 18), lo=0, hi=64)],
            [p.out((1, 4, 4))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(v1)),
        ),
    ]


@recipe("TransformLandmarks")
def transform_landmarks(p: P):  # v2: no options; v1: FlexBuffer {dimensions, scale}
    from flatbuffers import flexbuffers

    m = In((1, 4, 4), p.dtype, gen=_matrix) if p.path == "float32" else p.x((1, 4, 4))
    return [
        case(p.op, [p.x((1, 5, 3), lo=0, hi=16), m], [p.out((1, 5, 3))], version=2, label="v2"),
        case(
            p.op,
            [p.x((1, 2, 2, 4), lo=0, hi=16), m],
            [p.out((1, 2, 2, 4))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(dict(dimensions=2, scale=2.0))),
        ),
    ]


@recipe("TransformTensorBilinear")
def transform_tensor_bilinear(p: P):  # v2 {output_height, output_width}; v1 {mode, output_size}
    from flatbuffers import flexbuffers

    m = In((1, 4, 4), p.dtype, gen=_matrix) if p.path == "float32" else p.x((1, 4, 4))
    x = p.x((1, 8, 8, 3))
    return [
        case(
            p.op,
            [x, m],
            [p.out((1, 4, 5, 3))],
            version=2,
            label="v2",
            custom_options=bytes(flexbuffers.Dumps(dict(output_height=4, output_width=5))),
        ),
        case(
            p.op,
            [x, m],
            [p.out((1, 4, 5, 3))],
            version=1,
            label="v1",
            custom_options=bytes(flexbuffers.Dumps(dict(mode="bilinear", output_size=[4, 5]))),
        ),
    ]


@recipe("HASHTABLE_LOOKUP")
def hashtable_lookup(p: P):
    lookup = In((4,), np.int32, gen=lambda rng: rng.integers(0, 8, 4))
    keys = i32([1, 3, 4, 6])
    values = Const(randv(p, (4,))) if p.path == "string" else p.const(p.rand((4, 2), -2, 2))
    vshape = (4,) if p.path == "string" else (4, 2)
    return case(p.op, [lookup, keys, values], [p.out(vshape, same=True), Out((4,), np.uint8)])


@recipe("LSH_PROJECTION")
def lsh_projection(p: P):
    hashes = f32(p.rand((4, 2), -1, 1))
    return [
        case(
            p.op,
            [hashes, p.x((3, 2)), f32([0.5, 1.0, 2.0])],
            [Out((4,), np.int32)],
            dict(type=1),
            label="sparse-weighted",
        ),
        case(p.op, [hashes, p.x((3, 2)), None], [Out((8,), np.int32)], dict(type=2), label="dense"),
    ]


@recipe("SKIP_GRAM")
def skip_gram(p: P):
    gen = (lambda rng: np.array([b"the quick brown fox jumps"], dtype=object)) if p.path == "string" else None
    sentence = In((1,), p.dtype, gen=gen)
    return [
        case(
            p.op,
            [sentence],
            [Out((1,), p.dtype)],
            dict(ngram_size=2, max_skip_size=1, include_all_ngrams=b),
            label=f"all-ngrams={b}",
        )
        for b in (False, True)
    ]


@recipe("EMBEDDING_LOOKUP_SPARSE")
def embedding_lookup_sparse(p: P):
    ids = i32([1, 3, 0])
    indices = i32([[0, 0], [2, 0], [2, 1]])
    return [
        case(
            p.op,
            [ids, indices, i32([3, 2]), f32([1.0, 2.0, 0.5]), p.x((4, 2))],
            [p.out((3, 2))],
            dict(combiner=c),
            label=f"combiner{c}",
        )
        for c in (0, 1, 2)
    ]


@recipe("CONCAT_EMBEDDINGS")
def concat_embeddings(p: P):  # a schema op without a kernel in LiteRT: expected n/a
    return case(
        p.op,
        [In((2,), np.int32, gen=lambda rng: np.array([0, 1])), p.x((3, 2))],
        [p.out((2, 2))],
        dict(num_channels=1, num_columns_per_channel=[1], embedding_dim_per_channel=[2]),
    )


@recipe("DENSIFY")
def densify(p: P):
    from litert_py.schema.model import DimensionMetadata, SparsityParameters

    dense = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 4, 0]], np.float32)
    rows, cols = np.nonzero(dense)
    values = np.asarray(dense[rows, cols])
    sp = SparsityParameters(
        traversal_order=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=3),
            DimensionMetadata(
                format=1,
                array_segments=(0, 2, 2, 4),
                array_indices=tuple(int(c) for c in cols),
                array_segments_type=1,
                array_indices_type=1,
            ),
        ),
    )
    g = Graph()
    c = p.const(values)
    data = np.asarray(c.data)
    t = g.b.tensor("sparse", dense.shape, data.dtype, data=data, quantization=c.q, sparsity=sp)
    o = g.op(p.op, [t], [p.out(dense.shape, same=True)])
    return g.case(o)


@recipe("DILATE")
def dilate(p: P):
    return [
        case(p.op, [p.x((2, 3)), i32([2, 3]), p.const(0.5)], [p.out((3, 7), same=True)], label="2d"),
        case(p.op, [p.x((2, 2, 2)), i32([1, 2, 1]), p.const(0.0)], [p.out((2, 3, 2), same=True)], label="3d"),
    ]


@recipe("REDUCE_WINDOW")
def reduce_window(p: P):
    cases = []
    fns = {"ADD": 1, "MUL": 2, "MINIMUM": 3, "MAXIMUM": 4} if p.path != "bool" else {"ALL": 5, "ANY": 6}
    for name, fn in fns.items():
        init = {"ADD": 0, "MUL": 1, "MINIMUM": 3, "MAXIMUM": -3, "ALL": True, "ANY": False}[name]
        cases.append(
            case(
                p.op,
                [
                    p.x((4, 5), lo=0.5 if name == "MUL" else None, hi=1.5 if name == "MUL" else None),
                    Const(np.asarray(init).astype(p.dtype)),
                    i64([2, 2]),
                    i64([1, 2]),
                    i64([1, 1]),
                ],
                [p.out((3, 2), same=True)],
                dict(reduce_function=fn),
                label=name.lower(),
            )
        )
    return cases
