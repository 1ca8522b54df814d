"""Debug mode: the report from a model with NumericVerify ops (tf.lite.experimental.QuantizationDebugger's)."""

from __future__ import annotations

from ..errors import LiteRTError
from ..schema.model import Model
from ..schema.reader import read_model
from .floatify import op_name
from .matching import Graph
from .metrics import looks_like_class_scores, top1_agreement
from .report import Report
from .run import (
    VerifyError,
    _acc,
    _layer,
    _Model,
    _output_row,
    _run,
    _samples,
)


def numeric_verify_ops(m: Model) -> list[tuple[int, int, int]]:
    """(quantized tensor, float reference tensor, output) of each NumericVerify node of subgraph 0."""
    return [
        (op.inputs[0], op.inputs[1], op.outputs[0])
        for op in m.subgraphs[0].operators
        if op_name(m, op) == "NumericVerify"
    ]


def verify_debug(debug_model, data=None, samples: int = 10, seed: int = 0, progress=None) -> Report:
    """The report from a model with NumericVerify ops (tf.lite.experimental.QuantizationDebugger's debug model)."""
    try:
        raw = debug_model if isinstance(debug_model, Model) else read_model(debug_model)
    except (OSError, LiteRTError) as e:
        raise VerifyError(f"debug model: {e}") from None
    dm = _Model.load(raw, "debug model")  # NumericVerify retypes its outputs to float32, as in LiteRT
    sg = dm.model.subgraphs[0]
    nv = numeric_verify_ops(dm.model)
    if not nv:
        raise VerifyError("the model has no NumericVerify op: not a debug model")
    producer = Graph(dm.model).producer
    accs = {out: _acc(sg.tensors[q]) for q, _, out in nv}
    checked = {q: (ref, out) for q, ref, out in nv}
    outs = []  # (output position, quantized tensor) of outputs that are DEQUANTIZE(checked tensor)
    for k, o in enumerate(sg.outputs):
        node = producer.get(o, (None,))[0]
        src = sg.operators[node].inputs[0] if node is not None else o
        if src in checked:
            outs.append((k, src))
    out_top1 = {k: [] if looks_like_class_scores(sg.tensors[q].shape) else None for k, q in outs}

    def step(s, k):
        dm.feed(s, k)
        dm.interp.invoke()
        for q, ref, out in nv:
            accs[out].update(dm.value(q), dm.value(ref), diffs=dm.interp.get_tensor(out))
        for j, q in outs:
            if out_top1[j] is not None:
                out_top1[j].append(top1_agreement(dm.value(q), dm.value(checked[q][0])))

    sinks = [*accs.values(), *(t for t in out_top1.values() if t is not None)]
    _run(ss := _samples(dm, data, samples, seed), progress, [dm], step, sinks)
    layers = [
        _layer(dm.model, producer[q][0], q, sg.tensors[ref].name, accs[out]) for q, ref, out in nv if q in producer
    ]
    outputs = [_output_row(dm.model, k, accs[checked[q][1]], out_top1[k]) for k, q in outs]
    return Report(
        "debug",
        len(ss),
        len(layers),
        [],
        layers,
        outputs,
        {sg.tensors[q].name: accs[out].histogram_values() for q, _, out in nv},
    )
