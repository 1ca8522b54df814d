"""Single mode: each quantized op re-run in float on its dequantized actual inputs (its own error), and every
tensor against the whole model run in float (the accumulated error).

QUANTIZE / DEQUANTIZE are not layers here (their float version is the identity; a requantizing QUANTIZE's
rounding shows in the next layer's accumulated error). Control-flow ops and ops on resource, string or variant
tensors are not run op by op (listed in ``unmatched`` with the reason); their outputs still get the accumulated
error. Ops whose float version does not prepare are listed the same way."""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import PrepareError
from ..runtime.interpreter import Interpreter
from ..schema import dtypes
from ..schema.model import Model
from ..schema.writer import write_model
from .floatify import float_model, is_quantized, op_by_op_model, op_name
from .matching import compared_tensors
from .metrics import Accumulator, dequantize
from .report import Report
from .run import (
    VerifyError,
    _acc,
    _compare_outputs,
    _layer,
    _Model,
    _output_accs,
    _output_row,
    _require_quantized,
    _run,
    _samples,
)

_CONTROL_FLOW = {"WHILE", "IF", "CALL_ONCE", "STABLEHLO_COMPOSITE", "STABLEHLO_WHILE", "STABLEHLO_CASE"}


def _no_op_by_op(model: Model, n: int) -> str:
    """Why node n cannot run alone in float ("" when it can): control flow, resource / string / variant tensors."""
    op = model.subgraphs[0].operators[n]
    name = op_name(model, op)
    if name in _CONTROL_FLOW:
        return "control flow: not run op by op"
    tensors = model.subgraphs[0].tensors
    if any(i >= 0 and tensors[i].type in dtypes.OBJECT_TYPES for i in op.inputs + op.outputs):
        return "resource, string or variant tensors: not run op by op"
    return ""


def _op_by_op(qm: _Model, nodes: list[int]):
    """The op-by-op float model; nodes whose float version does not prepare are dropped (and reported)."""
    shapes = qm.interp._subgraph(0).shapes
    dropped: dict[int, str] = {}
    while nodes:
        obo = op_by_op_model(qm.model, shapes, nodes)
        try:
            it = Interpreter(model_content=write_model(obo.model), experimental_preserve_all_tensors=True)
            it.allocate_tensors()
            return obo, it, dropped
        except PrepareError as e:
            m = re.search(r"Node number (\d+)", str(e))
            if not m or int(m.group(1)) >= len(nodes):
                raise
            k = nodes[int(m.group(1))]
            dropped[k] = str(e).splitlines()[0]
            nodes = [n for n in nodes if n != k]
    return None, None, dropped


def verify_single(quant_model, data=None, samples: int = 10, seed: int = 0, progress=None) -> Report:
    """Each quantized op against its float version on its dequantized actual inputs (own error), and every
    tensor against the whole model run in float (accumulated error)."""
    qm = _Model.load(quant_model, "quantized model")
    _require_quantized(qm.model, "the model")
    fl = float_model(qm.model)
    try:
        wf = _Model.load(fl.model, "the float version of the quantized model")
    except VerifyError:
        wf = None
    qsg = qm.model.subgraphs[0]
    compared = compared_tensors(qm.model)
    quantized_nodes = sorted(
        {
            n
            for n, _ in compared
            if any(i >= 0 and is_quantized(qsg.tensors[i]) for i in qsg.operators[n].inputs + qsg.operators[n].outputs)
        }
    )
    skipped = {n: _no_op_by_op(qm.model, n) for n in quantized_nodes}
    nodes = [n for n in quantized_nodes if not skipped[n]]
    obo, obo_it, dropped = _op_by_op(qm, nodes)
    dropped.update({n: why for n, why in skipped.items() if why})
    own = {o: _acc(qsg.tensors[o]) for n, o in compared if obo is not None and n in obo.outputs}
    acc_total = {o: _acc(qsg.tensors[o]) for _, o in compared} if wf is not None else {}
    out_accs, top1s = _output_accs(qm)
    sub = qm.interp._subgraph(0)
    obo_outputs = {o: j for n in (obo.outputs if obo else {}) for o, j in obo.outputs[n]}

    def step(s, k):
        state = {i: np.array(v) for i, v in sub.variables.items()}
        qm.feed(s, k)
        qm.interp.invoke()
        if wf is not None:
            wf.feed(s, k)
            wf.interp.invoke()
        if obo is not None:
            for feeds in obo.feeds.values():
                for i, j in feeds:
                    t = qsg.tensors[i]
                    v = state[i] if i in state else qm.interp.get_tensor(i)
                    if is_quantized(t):
                        q = t.quantization
                        v = dequantize(v, q.scale, q.zero_point, q.quantized_dimension).astype(np.float32)
                    obo_it.set_tensor(j, np.asarray(v).astype(obo_it.get_tensor(j).dtype, copy=False))
            obo_it.invoke()
        for o in own.keys() | acc_total.keys():
            q = qm.value(o)
            if o in own:
                own[o].update(q, obo_it.get_tensor(obo_outputs[o]))
            if o in acc_total:
                acc_total[o].update(q, wf.value(fl.tensor(o)))
        if wf is not None:
            _compare_outputs(qm, lambda j: wf.value(fl.tensor(qsg.outputs[j])), out_accs, top1s)

    sinks = [*own.values(), *acc_total.values(), *out_accs, *(t for t in top1s if t is not None)]
    _run(ss := _samples(qm, data, samples, seed), progress, [m for m in (qm, wf) if m is not None], step, sinks)
    layers = []
    for n, o in compared:
        if o not in own and o not in acc_total:
            continue
        extra = {f"accumulated_{k}": v for k, v in acc_total[o].result().items()} if o in acc_total else {}
        base = own.get(o) or Accumulator(math.nan)
        layers.append(_layer(qm.model, n, o, qsg.tensors[o].name, base, extra))
    unmatched = [
        f"{qsg.tensors[o].name} ({op_name(qm.model, qsg.operators[n])}: {dropped.get(n, 'no float op')})"
        for n, o in compared
        if o not in own and n in quantized_nodes
    ]
    outputs = [_output_row(qm.model, k, a, top1s[k]) for k, a in enumerate(out_accs)] if wf is not None else []
    return Report(
        "single",
        len(ss),
        len(own),
        unmatched,
        layers,
        outputs,
        {qsg.tensors[o].name: a.histogram_values() for o, a in own.items()},
    )
