"""Lower a partition of float32 TFLite nodes to one ONNX graph (opset 17), for the ONNX Runtime delegate.

Layout: tensors stay NHWC, as in the .tflite graph; only the ops ONNX defines on NCHW (Conv, ConvTranspose,
pooling, Resize) are wrapped in a Transpose pair. ONNX Runtime's transpose optimizer (graph optimization level
>= basic) cancels the back-to-back pairs between consecutive such ops and pushes the rest through elementwise
ops, so a conv chain runs NCHW inside and transposes once at its edges, while RESHAPE, CONCATENATION, MEAN,
SOFTMAX, ... keep their TFLite axes unchanged. Constants become initializers (float16 weights arrive already
dequantized: the runtime folds their DEQUANTIZE before delegation); fused activations become ops.

Semantics matched (one function per op family): TFLite's reference kernels in tensorflow/lite/kernels
(conv.cc, depthwise_conv.cc, transpose_conv.cc, fully_connected.cc, pooling.cc, resize_*.cc, strided_slice.cc)
and the ONNX operator specs (onnx/docs/Operators.md) for the ONNX side.
"""

from __future__ import annotations

import numpy as np

from ..ops.common import conv_out_and_pad
from ..schema.model import BuiltinOperator as B

OPSET = 17
NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]
_INT_MAX = np.iinfo(np.int64).max
_INT_MIN = np.iinfo(np.int64).min


class GraphBuilder:
    """Collects ONNX nodes and initializers; TFLite tensor ``i`` is the ONNX value ``t{i}``."""

    def __init__(self, tensors: dict):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.tensors = tensors
        self.alias: dict[int, str] = {}  # a quantized node's output: its float value before QuantizeLinear
        self.nodes: list = []
        self.initializers: list = []
        self._inits: set[str] = set()
        self._n = 0

    def fresh(self, hint: str = "v") -> str:
        self._n += 1
        return f"_{hint}{self._n}"

    def const(self, array, hint: str = "c") -> str:
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(np.array(array, order="C"), name))  # keeps 0-d
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(values, np.int64), "i")

    def t(self, i: int) -> str:
        """The value of TFLite tensor ``i`` (an initializer when it is constant)."""
        if i in self.alias:
            return self.alias[i]
        name = f"t{i}"
        info = self.tensors[i]
        if info.data is not None and name not in self._inits:
            data = np.asarray(info.data)
            if data.dtype == np.float16 or data.dtype == np.float64:
                data = data.astype(np.float32)
            self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(data), name))
            self._inits.add(name)
        return name

    def node(self, op_type: str, inputs, output: str | None = None, **attrs) -> str:
        output = output or self.fresh(op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [output], **attrs))
        return output

    def act(self, value: str, fused: int, output: str) -> str:
        """A fused activation (ActivationFunctionType) applied to ``value`` into ``output``."""
        if fused == 0:
            return self.node("Identity", [value], output)
        if fused == 1:
            return self.node("Relu", [value], output)
        if fused in (2, 3):
            lo, hi = (-1.0, 1.0) if fused == 2 else (0.0, 6.0)
            return self.node("Clip", [value, self.const(np.float32(lo)), self.const(np.float32(hi))], output)
        if fused == 4:
            return self.node("Tanh", [value], output)
        raise ValueError(f"fused activation {fused} is not lowered")

    def nchw(self, value: str) -> str:
        return self.node("Transpose", [value], perm=NHWC_TO_NCHW)

    def nhwc(self, value: str, output: str | None = None) -> str:
        return self.node("Transpose", [value], output, perm=NCHW_TO_NHWC)


def _pads(ctx, padding: int, in_hw, k_hw, strides, dilations) -> list[int]:
    """ONNX pads [top, left, bottom, right] of a TFLite SAME/VALID window (padding after = total - before)."""
    begin, end = [], []
    for n, k, s, d in zip(in_hw, k_hw, strides, dilations):
        out, before = conv_out_and_pad(ctx, padding, n, k, s, d)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0) if padding == 0 else 0
        begin.append(before)
        end.append(total - before)
    return begin + end


# -- conv family ------------------------------------------------------------------------------------------------
def lower_conv(g: GraphBuilder, node, ctx) -> None:
    """CONV_2D and DEPTHWISE_CONV_2D: Conv on NCHW, weights to OIHW."""
    o = ctx.options
    x, w = ctx.inputs[0], ctx.inputs[1]
    kh, kw = w.shape[1], w.shape[2]
    if node.code.builtin_code == B.DEPTHWISE_CONV_2D:
        wt = np.asarray(w.data, np.float32).transpose(3, 0, 1, 2)  # (1, kh, kw, C*M) -> (C*M, 1, kh, kw)
        group = x.shape[3]
    else:
        wt = np.asarray(w.data, np.float32).transpose(0, 3, 1, 2)  # OHWI -> OIHW
        group = x.shape[3] // w.shape[3]
    strides = [o.stride_h, o.stride_w]
    dil = [o.dilation_h_factor, o.dilation_w_factor]
    ins = [g.nchw(g.t(node.operator.inputs[0])), g.const(wt, "w")]
    if len(ctx.inputs) > 2 and ctx.inputs[2] is not None:
        ins.append(g.const(np.asarray(ctx.inputs[2].data, np.float32).reshape(-1), "b"))
    y = g.node(
        "Conv",
        ins,
        kernel_shape=[kh, kw],
        strides=strides,
        dilations=dil,
        group=group,
        pads=_pads(ctx, o.padding, x.shape[1:3], (kh, kw), strides, dil),
    )
    g.act(g.nhwc(y), o.fused_activation_function, g.t(node.operator.outputs[0]))


def lower_transpose_conv(g: GraphBuilder, node, ctx) -> None:
    """TRANSPOSE_CONV: ConvTranspose on NCHW; the full result is cropped at TFLite's leading padding."""
    from ..ops.conv.col2im import transpose_geometry

    o = ctx.options
    w, x = ctx.inputs[1], ctx.inputs[2]
    out_shape = ctx.outputs[0].shape
    geo = transpose_geometry(o.padding, x.shape, w.shape, out_shape, o.stride_h, o.stride_w)
    wt = np.asarray(w.data, np.float32).transpose(3, 0, 1, 2)  # (O, kh, kw, I) -> (I, O, kh, kw)
    ins = [g.nchw(g.t(node.operator.inputs[2])), g.const(wt, "w")]
    if len(ctx.inputs) > 3 and ctx.inputs[3] is not None:
        ins.append(g.const(np.asarray(ctx.inputs[3].data, np.float32).reshape(-1), "b"))
    full_h = (geo.in_h - 1) * geo.stride_h + geo.filter_h
    full_w = (geo.in_w - 1) * geo.stride_w + geo.filter_w
    extra_h = max(geo.pad_top + geo.out_h - full_h, 0)
    extra_w = max(geo.pad_left + geo.out_w - full_w, 0)
    y = g.node(
        "ConvTranspose",
        ins,
        kernel_shape=[geo.filter_h, geo.filter_w],
        strides=[geo.stride_h, geo.stride_w],
        output_padding=[extra_h, extra_w],
    )
    y = g.node(
        "Slice",
        [
            y,
            g.ints([geo.pad_top, geo.pad_left]),
            g.ints([geo.pad_top + geo.out_h, geo.pad_left + geo.out_w]),
            g.ints([2, 3]),
        ],
    )
    g.act(g.nhwc(y), getattr(o, "fused_activation_function", 0), g.t(node.operator.outputs[0]))


def lower_pool(g: GraphBuilder, node, ctx) -> None:
    """AVERAGE_POOL_2D (padding not counted, as TFLite) and MAX_POOL_2D."""
    o = ctx.options
    x = ctx.inputs[0]
    k, s = [o.filter_height, o.filter_width], [o.stride_h, o.stride_w]
    pads = _pads(ctx, o.padding, x.shape[1:3], k, s, (1, 1))
    op = "AveragePool" if node.code.builtin_code == B.AVERAGE_POOL_2D else "MaxPool"
    extra = {"count_include_pad": 0} if op == "AveragePool" else {}
    y = g.node(op, [g.nchw(g.t(node.operator.inputs[0]))], kernel_shape=k, strides=s, pads=pads, **extra)
    g.act(g.nhwc(y), o.fused_activation_function, g.t(node.operator.outputs[0]))


def lower_resize(g: GraphBuilder, node, ctx) -> None:
    """RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: Resize on NCHW to the output's size."""
    o = ctx.options
    n, h, w, c = ctx.outputs[0].shape
    bilinear = node.code.builtin_code == B.RESIZE_BILINEAR
    if o.align_corners:
        mode = "align_corners"
    elif o.half_pixel_centers:
        mode = "half_pixel" if bilinear else "tf_half_pixel_for_nn"
    else:
        mode = "asymmetric"
    nearest = "round_prefer_ceil" if o.align_corners else "floor"
    attrs = {"mode": "linear"} if bilinear else {"mode": "nearest", "nearest_mode": nearest}
    y = g.node(
        "Resize",
        [g.nchw(g.t(node.operator.inputs[0])), "", "", g.ints([n, c, h, w])],
        coordinate_transformation_mode=mode,
        **attrs,
    )
    g.nhwc(y, g.t(node.operator.outputs[0]))


# -- matmul family ----------------------------------------------------------------------------------------------
def lower_fully_connected(g: GraphBuilder, node, ctx) -> None:
    """FULLY_CONNECTED: (rows, K) @ W^T (+ bias), reshaped to the output shape."""
    x, w = ctx.inputs[0], ctx.inputs[1]
    k = w.shape[1]
    flat = (
        g.node("Reshape", [g.t(node.operator.inputs[0]), g.ints([-1, k])])
        if len(x.shape) != 2
        else g.t(node.operator.inputs[0])
    )
    wt = g.const(np.ascontiguousarray(np.asarray(w.data, np.float32).T), "w")
    y = g.node("MatMul", [flat, wt])
    if len(ctx.inputs) > 2 and ctx.inputs[2] is not None:
        y = g.node("Add", [y, g.const(np.asarray(ctx.inputs[2].data, np.float32), "b")])
    y = g.node("Reshape", [y, g.ints(ctx.outputs[0].shape)])
    g.act(y, ctx.options.fused_activation_function, g.t(node.operator.outputs[0]))


def lower_batch_matmul(g: GraphBuilder, node, ctx) -> None:
    o = ctx.options
    vals = []
    for k, adj in enumerate((o.adj_x, o.adj_y)):
        v = g.t(node.operator.inputs[k])
        if adj:
            r = len(ctx.inputs[k].shape)
            v = g.node("Transpose", [v], perm=list(range(r - 2)) + [r - 1, r - 2])
        vals.append(v)
    g.node("MatMul", vals, g.t(node.operator.outputs[0]))


# -- elementwise ------------------------------------------------------------------------------------------------
_BINARY = {B.ADD: "Add", B.SUB: "Sub", B.MUL: "Mul", B.DIV: "Div", B.MAXIMUM: "Max", B.MINIMUM: "Min", B.POW: "Pow"}
_UNARY = {
    B.RELU: "Relu",
    B.LOGISTIC: "Sigmoid",
    B.TANH: "Tanh",
    B.HARD_SWISH: "HardSwish",
    B.EXP: "Exp",
    B.LOG: "Log",
    B.SQRT: "Sqrt",
    B.ABS: "Abs",
    B.NEG: "Neg",
    B.FLOOR: "Floor",
    B.CEIL: "Ceil",
    B.SIN: "Sin",
    B.COS: "Cos",
    B.ELU: "Elu",
}


def lower_binary(g: GraphBuilder, node, ctx) -> None:
    a, b = (g.t(i) for i in node.operator.inputs[:2])
    out = g.t(node.operator.outputs[0])
    code = node.code.builtin_code
    if code == B.SQUARED_DIFFERENCE:
        d = g.node("Sub", [a, b])
        g.node("Mul", [d, d], out)
        return
    y = g.node(_BINARY[code], [a, b])
    g.act(y, getattr(ctx.options, "fused_activation_function", 0) if ctx.options is not None else 0, out)


def lower_unary(g: GraphBuilder, node, ctx) -> None:
    x = g.t(node.operator.inputs[0])
    out = g.t(node.operator.outputs[0])
    code = node.code.builtin_code
    if code in _UNARY:
        g.node(_UNARY[code], [x], out)
    elif code == B.RELU6:
        g.act(x, 3, out)
    elif code == B.RELU_N1_TO_1:
        g.act(x, 2, out)
    elif code == B.RELU_0_TO_1:
        g.node("Clip", [x, g.const(np.float32(0)), g.const(np.float32(1))], out)
    elif code == B.RSQRT:
        g.node("Reciprocal", [g.node("Sqrt", [x])], out)
    elif code == B.SQUARE:
        g.node("Mul", [x, x], out)
    elif code == B.LEAKY_RELU:
        g.node("LeakyRelu", [x], out, alpha=float(ctx.options.alpha))
    elif code == B.PRELU:
        g.node("PRelu", [x, g.t(node.operator.inputs[1])], out)
    else:
        raise ValueError(f"{node.name} is not lowered")


def lower_softmax(g: GraphBuilder, node, ctx) -> None:
    x = g.t(node.operator.inputs[0])
    beta = float(ctx.options.beta)
    if beta != 1.0:
        x = g.node("Mul", [x, g.const(np.float32(beta))])
    g.node("Softmax", [x], g.t(node.operator.outputs[0]), axis=-1)


# -- shape and data movement -----------------------------------------------------------------------------------
def lower_reshape(g: GraphBuilder, node, ctx) -> None:
    """RESHAPE, SQUEEZE, EXPAND_DIMS: a Reshape to the output shape litert_py's prepare computed."""
    g.node("Reshape", [g.t(node.operator.inputs[0]), g.ints(ctx.outputs[0].shape)], g.t(node.operator.outputs[0]))


def lower_concatenation(g: GraphBuilder, node, ctx) -> None:
    o = ctx.options
    y = g.node("Concat", [g.t(i) for i in node.operator.inputs], axis=int(o.axis))
    g.act(y, o.fused_activation_function, g.t(node.operator.outputs[0]))


def lower_pad(g: GraphBuilder, node, ctx) -> None:
    """PAD, PADV2 (constant value input) and MIRROR_PAD (REFLECT only)."""
    p = np.asarray(ctx.inputs[1].data, np.int64).reshape(-1, 2)
    ins = [g.t(node.operator.inputs[0]), g.ints(np.concatenate([p[:, 0], p[:, 1]]))]
    attrs = {}
    if node.code.builtin_code == B.MIRROR_PAD:
        attrs["mode"] = "reflect"
    elif len(ctx.inputs) > 2 and ctx.inputs[2] is not None:
        ins.append(g.const(np.asarray(ctx.inputs[2].data, np.float32).reshape(())))
    g.node("Pad", ins, g.t(node.operator.outputs[0]), **attrs)


def lower_transpose(g: GraphBuilder, node, ctx) -> None:
    perm = [int(v) for v in np.asarray(ctx.inputs[1].data).reshape(-1)]
    g.node("Transpose", [g.t(node.operator.inputs[0])], g.t(node.operator.outputs[0]), perm=perm)


def lower_reduce(g: GraphBuilder, node, ctx) -> None:
    """MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD over constant axes."""
    rank = len(ctx.inputs[0].shape)
    axes = sorted({int(a) % rank for a in np.asarray(ctx.inputs[1].data).reshape(-1)})
    keep = int(bool(ctx.options.keep_dims))
    x, out = g.t(node.operator.inputs[0]), g.t(node.operator.outputs[0])
    code = node.code.builtin_code
    if code == B.SUM:
        y = g.node("ReduceSum", [x, g.ints(axes)], keepdims=keep)
    else:
        op = {B.MEAN: "ReduceMean", B.REDUCE_MAX: "ReduceMax", B.REDUCE_MIN: "ReduceMin", B.REDUCE_PROD: "ReduceProd"}
        y = g.node(op[code], [x], axes=axes, keepdims=keep)
    g.node("Reshape", [y, g.ints(ctx.outputs[0].shape)], out)


def lower_slice(g: GraphBuilder, node, ctx) -> None:
    """SLICE (begin, size; size -1 = to the end)."""
    shape = ctx.inputs[0].shape
    begin = [int(v) for v in np.asarray(ctx.inputs[1].data).reshape(-1)]
    size = [int(v) for v in np.asarray(ctx.inputs[2].data).reshape(-1)]
    end = [n if s < 0 else b + s for b, s, n in zip(begin, size, shape)]
    g.node(
        "Slice",
        [g.t(node.operator.inputs[0]), g.ints(begin), g.ints(end), g.ints(range(len(shape)))],
        g.t(node.operator.outputs[0]),
    )


def lower_strided_slice(g: GraphBuilder, node, ctx) -> None:
    """STRIDED_SLICE without ellipsis/new-axis masks or offset: Slice, then a Reshape for shrunk axes."""
    o = ctx.options
    begin, end, strides = (np.asarray(t.data, np.int64).reshape(-1) for t in ctx.inputs[1:4])
    starts, ends, steps = [], [], []
    for a in range(len(begin)):
        s = int(strides[a])
        b, e = int(begin[a]), int(end[a])
        if o.shrink_axis_mask >> a & 1:
            e, s = (b + 1 if b != -1 else _INT_MAX), 1
        else:
            if o.begin_mask >> a & 1:
                b = 0 if s > 0 else _INT_MAX
            if o.end_mask >> a & 1:
                e = _INT_MAX if s > 0 else _INT_MIN
        starts.append(b)
        ends.append(e)
        steps.append(s)
    y = g.node(
        "Slice", [g.t(node.operator.inputs[0]), g.ints(starts), g.ints(ends), g.ints(range(len(begin))), g.ints(steps)]
    )
    g.node("Reshape", [y, g.ints(ctx.outputs[0].shape)], g.t(node.operator.outputs[0]))


def lower_gather(g: GraphBuilder, node, ctx) -> None:
    g.node(
        "Gather", [g.t(i) for i in node.operator.inputs[:2]], g.t(node.operator.outputs[0]), axis=int(ctx.options.axis)
    )


def lower_split(g: GraphBuilder, node, ctx) -> None:
    """SPLIT (axis, x) and SPLIT_V (x, size_splits, axis): ONNX Split with the output sizes."""
    if node.code.builtin_code == B.SPLIT:
        x_pos, axis_info = 1, ctx.inputs[0]
    else:
        x_pos, axis_info = 0, ctx.inputs[2]
    rank = len(ctx.inputs[x_pos].shape)
    axis = int(np.asarray(axis_info.data).reshape(-1)[0]) % rank
    sizes = [t.shape[axis] for t in ctx.outputs]
    g.nodes.append(
        g.helper.make_node(
            "Split",
            [g.t(node.operator.inputs[x_pos]), g.ints(sizes)],
            [g.t(o) for o in node.operator.outputs],
            axis=axis,
        )
    )


def lower_identity(g: GraphBuilder, node, ctx) -> None:
    """QUANTIZE and DEQUANTIZE in a quantized partition: identities on the float values (the QuantizeLinear /
    DequantizeLinear pair around the node does the work)."""
    g.node("Identity", [g.t(node.operator.inputs[0])], g.t(node.operator.outputs[0]))


LOWERINGS = {
    B.QUANTIZE: lower_identity,
    B.DEQUANTIZE: lower_identity,
    B.CONV_2D: lower_conv,
    B.DEPTHWISE_CONV_2D: lower_conv,
    B.TRANSPOSE_CONV: lower_transpose_conv,
    B.AVERAGE_POOL_2D: lower_pool,
    B.MAX_POOL_2D: lower_pool,
    B.RESIZE_BILINEAR: lower_resize,
    B.RESIZE_NEAREST_NEIGHBOR: lower_resize,
    B.FULLY_CONNECTED: lower_fully_connected,
    B.BATCH_MATMUL: lower_batch_matmul,
    **{c: lower_binary for c in (*_BINARY, B.SQUARED_DIFFERENCE)},
    **{
        c: lower_unary
        for c in (*_UNARY, B.RELU6, B.RELU_N1_TO_1, B.RELU_0_TO_1, B.RSQRT, B.SQUARE, B.LEAKY_RELU, B.PRELU)
    },
    B.SOFTMAX: lower_softmax,
    B.RESHAPE: lower_reshape,
    B.SQUEEZE: lower_reshape,
    B.EXPAND_DIMS: lower_reshape,
    B.CONCATENATION: lower_concatenation,
    B.PAD: lower_pad,
    B.PADV2: lower_pad,
    B.MIRROR_PAD: lower_pad,
    B.TRANSPOSE: lower_transpose,
    B.MEAN: lower_reduce,
    B.SUM: lower_reduce,
    B.REDUCE_MAX: lower_reduce,
    B.REDUCE_MIN: lower_reduce,
    B.REDUCE_PROD: lower_reduce,
    B.SLICE: lower_slice,
    B.STRIDED_SLICE: lower_strided_slice,
    B.GATHER: lower_gather,
    B.SPLIT: lower_split,
    B.SPLIT_V: lower_split,
}

#: Input positions that must be constant (weights, shapes, axes, paddings, ...) for the lowering above.
CONSTANT_INPUTS = {
    B.CONV_2D: (1, 2),
    B.DEPTHWISE_CONV_2D: (1, 2),
    B.TRANSPOSE_CONV: (0, 1, 3),
    B.FULLY_CONNECTED: (1, 2),
    B.RESHAPE: (1,),
    B.EXPAND_DIMS: (1,),
    B.PAD: (1, 2),
    B.PADV2: (1, 2),
    B.MIRROR_PAD: (1,),
    B.TRANSPOSE: (1,),
    B.MEAN: (1,),
    B.SUM: (1,),
    B.REDUCE_MAX: (1,),
    B.REDUCE_MIN: (1,),
    B.REDUCE_PROD: (1,),
    B.SLICE: (1, 2),
    B.STRIDED_SLICE: (1, 2, 3),
    B.SPLIT: (0,),
    B.SPLIT_V: (1, 2),
    B.RESIZE_BILINEAR: (1,),
    B.RESIZE_NEAREST_NEIGHBOR: (1,),
}


def lowerable(node, ctx) -> bool:
    """Whether ``node`` (float32) can be lowered: its op, constant parameters, and the option cases handled."""
    code = node.code.builtin_code
    if code not in LOWERINGS:
        return False
    consts = CONSTANT_INPUTS.get(code, ())
    for k, t in enumerate(ctx.inputs):
        if t is None:
            continue
        if k in consts:
            if t.data is None:
                return False
        elif t.dtype != np.float32 and not (code == B.GATHER and k == 1 and t.dtype in (np.int32, np.int64)):
            return False
    if any(t.dtype != np.float32 or 0 in t.shape for t in ctx.outputs):
        return False
    o = ctx.options
    if getattr(o, "fused_activation_function", 0) not in (0, 1, 2, 3, 4):
        return False
    if code == B.STRIDED_SLICE and (o.ellipsis_mask or o.new_axis_mask or o.offset):
        return False
    if code == B.MIRROR_PAD and o.mode != 0:
        return False
    if code == B.GATHER and o.batch_dims != 0:
        return False
    if (
        code
        in (
            B.CONV_2D,
            B.DEPTHWISE_CONV_2D,
            B.AVERAGE_POOL_2D,
            B.MAX_POOL_2D,
            B.RESIZE_BILINEAR,
            B.RESIZE_NEAREST_NEIGHBOR,
            B.TRANSPOSE_CONV,
        )
        and len(ctx.outputs[0].shape) != 4
    ):
        return False
    if code == B.FULLY_CONNECTED and len(ctx.inputs[1].shape) != 2:
        return False
    return True
