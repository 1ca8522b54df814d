"""The three comparisons of tflite-verify: pair, single (op by op in float) and debug (NumericVerify ops)."""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import LiteRTError, PrepareError
from ..runtime.interpreter import Interpreter
from ..schema import dtypes
from ..schema.model import BuiltinOperator, Model
from ..schema.reader import read_model
from ..schema.writer import write_model
from .floatify import float_model, is_quantized, op_by_op_model, op_name
from .matching import _Q_DQ, Graph, compared_tensors, match_tensors
from .metrics import Accumulator, dequantize, looks_like_class_scores, quantize, top1_agreement
from .report import Report
from .samples import SampleError, check_sample, load_samples, random_samples


class VerifyError(ValueError):
    """Bad input for a comparison: models that do not pair, a float model given as the quantized one, bad
    samples. tflite-verify exits with status 2."""


@dataclass
class _Model:
    model: Model
    interp: Interpreter
    details: list = field(default_factory=list)

    @classmethod
    def load(cls, model: Model | bytes | str | os.PathLike, what: str) -> _Model:
        try:
            m = model if isinstance(model, Model) else read_model(model)
            it = Interpreter(model_content=write_model(m), experimental_preserve_all_tensors=True)
            it.allocate_tensors()
        except (OSError, LiteRTError) as e:
            raise VerifyError(f"{what}: {e}") from None
        return cls(m, it, it.get_input_details())

    def feed(self, values: dict, step: int) -> None:
        for k, d in enumerate(self.details):
            v = values[k][step]
            dt = np.dtype(d["dtype"])
            qp = d["quantization_parameters"]
            if dt.kind in "iu" and len(qp["scales"]) and np.asarray(v).dtype.kind == "f":
                v = quantize(v, float(qp["scales"][0]), int(qp["zero_points"][0]), dt)
            self.interp.set_tensor(d["index"], np.asarray(v).astype(dt, copy=False).reshape(d["shape"]))

    def value(self, i: int) -> np.ndarray:
        """Tensor i as real numbers (dequantized when quantized)."""
        t = self.model.subgraphs[0].tensors[i]
        v = self.interp.get_tensor(i)
        if is_quantized(t):
            q = t.quantization
            return dequantize(v, q.scale, q.zero_point, q.quantized_dimension).astype(np.float32)
        return v


def _ranges(m: _Model) -> list:
    """Float range each input can represent: its own quantization or the QUANTIZE reading it."""
    g = Graph(m.model)
    sg = m.model.subgraphs[0]
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if not is_quantized(t):
            readers = [
                op.outputs[0]
                for k, op in enumerate(sg.operators)
                if i in op.inputs and g.code(k) == BuiltinOperator.QUANTIZE
            ]
            t = sg.tensors[readers[0]] if readers else t
        if is_quantized(t):
            info = np.iinfo(dtypes.to_numpy(t.type))
            s, z = t.quantization.scale[0], t.quantization.zero_point[0] if t.quantization.zero_point else 0
            out.append(((info.min - z) * s, (info.max - z) * s))
        else:
            out.append(None)
    return out


def _samples(m: _Model, data, n: int, seed: int) -> list[dict]:
    try:
        raw = load_samples(data, m.details) if data is not None else random_samples(m.details, _ranges(m), n, seed)
        return [check_sample(s, m.details) for s in raw]
    except SampleError as e:
        raise VerifyError(str(e)) from None


class _Progress:
    def __init__(self, total: int, enabled: bool | None):
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        w = 30
        fill = w * done // max(self.total, 1)
        end = "\n" if done >= self.total else ""
        sys.stderr.write(f"\rtflite-verify [{'#' * fill}{'.' * (w - fill)}] {done}/{self.total} samples{end}")
        sys.stderr.flush()


def _acc(t) -> Accumulator:
    q = t.quantization
    if is_quantized(t):
        return Accumulator(float(q.scale[0]), int(q.zero_point[0]) if q.zero_point else 0)
    return Accumulator()


def _layer(model: Model, node: int, tensor: int, float_name, acc: Accumulator, extra=None) -> dict:
    sg = model.subgraphs[0]
    row = {
        "tensor_name": sg.tensors[tensor].name,
        "op_name": op_name(model, sg.operators[node]),
        "node": node,
        "tensor_idx": tensor,
        "float_tensor_name": float_name,
    }
    row.update(acc.result())
    row.update(extra or {})
    return row


def _output_row(model: Model, k: int, acc: Accumulator, top1: list | None) -> dict:
    t = model.subgraphs[0].tensors[model.subgraphs[0].outputs[k]]
    row = {"output": k, "tensor_name": t.name}
    row.update(acc.result())
    if top1 is not None:
        row["top1_agreement"] = float(np.mean(top1)) if top1 else math.nan
    return row


def _run(samples, progress, models, step_fn) -> None:
    bar = _Progress(len(samples), progress)
    for n, s in enumerate(samples):
        for m in models:
            m.interp.reset_all_variables()
        for step in range(next(iter(s.values())).shape[0] if s else 1):
            step_fn(s, step)
        bar(n + 1)


def _compare_outputs(qm: _Model, ref_value, accs, top1s) -> None:
    for k, o in enumerate(qm.model.subgraphs[0].outputs):
        q, f = qm.value(o), ref_value(k)
        accs[k].update(q, f)
        if top1s[k] is not None:
            top1s[k].append(top1_agreement(q, f))


def _output_accs(qm: _Model):
    outs = qm.model.subgraphs[0].outputs
    tensors = qm.model.subgraphs[0].tensors
    g = Graph(qm.model)
    accs = [_acc(tensors[o] if is_quantized(tensors[o]) else tensors[g.src(o)]) for o in outs]
    top1s = [[] if looks_like_class_scores(tensors[o].shape) else None for o in outs]
    return accs, top1s


def _require_quantized(m: Model, what: str) -> None:
    if not any(is_quantized(t) for sg in m.subgraphs for t in sg.tensors):
        raise VerifyError(f"{what} has no quantized tensor: is it the float model? (give FLOAT.tflite QUANT.tflite)")


def verify_pair(float_model_, quant_model, data=None, samples: int = 10, seed: int = 0, progress=None) -> Report:
    """Run both models on the same float samples; compare every matched tensor."""
    fm, qm = _Model.load(float_model_, "float model"), _Model.load(quant_model, "quantized model")
    _require_quantized(qm.model, "the quantized model")
    if len(fm.details) != len(qm.details):
        raise VerifyError(
            f"the models do not pair: the float model has {len(fm.details)} inputs, the quantized one {len(qm.details)}"
        )
    for a, b in zip(fm.details, qm.details):
        if list(a["shape"]) != list(b["shape"]):
            raise VerifyError(
                f"the models do not pair: input {a['name']!r} has shape {list(a['shape'])}, the "
                f"quantized model's {b['name']!r} {list(b['shape'])}"
            )
    fsg, qsg = fm.model.subgraphs[0], qm.model.subgraphs[0]
    if len(fsg.outputs) != len(qsg.outputs):
        raise VerifyError(f"the models do not pair: {len(fsg.outputs)} outputs against {len(qsg.outputs)}")
    ss = _samples(qm, data, samples, seed)
    matches = match_tensors(qm.model, fm.model)
    compared = compared_tensors(qm.model)
    accs = {o: _acc(qsg.tensors[o]) for _, o in compared if o in matches}
    g = Graph(qm.model)
    converted = set(qsg.inputs) | {o for k, op in enumerate(qsg.operators) if g.code(k) in _Q_DQ for o in op.outputs}
    aux = {
        i: _acc(qsg.tensors[i])
        for i in converted
        if is_quantized(qsg.tensors[i]) and i not in g.const and g.src(i) in (set(qsg.inputs) | set(matches))
    }
    out_accs, top1s = _output_accs(qm)

    def step(s, k):
        fm.feed(s, k)
        qm.feed(s, k)
        fm.interp.invoke()
        qm.interp.invoke()
        for o, acc in accs.items():
            acc.update(qm.value(o), fm.value(matches[o]))
        for i, acc in aux.items():
            src = g.src(i)
            ref = fm.value(matches[src]) if src in matches else fm.value(fsg.inputs[list(qsg.inputs).index(src)])
            acc.update(qm.value(i), ref)
        _compare_outputs(qm, lambda j: fm.value(fsg.outputs[j]), out_accs, top1s)

    _run(ss, progress, [fm, qm], step)
    layers = [_layer(qm.model, n, o, fsg.tensors[matches[o]].name, accs[o]) for n, o in compared if o in accs]
    _snr_drop(qm.model, layers, aux)
    unmatched = [qsg.tensors[o].name for _, o in compared if o not in accs]
    outputs = [_output_row(qm.model, k, a, top1s[k]) for k, a in enumerate(out_accs)]
    return Report(
        "pair",
        len(ss),
        len(layers),
        unmatched,
        layers,
        outputs,
        {r["tensor_name"]: accs[r["tensor_idx"]].histogram_values() for r in layers},
    )


def _snr_drop(model: Model, layers: list[dict], aux: dict, cap: float = 100.0) -> None:
    """``snr_drop_db``: the worst input's snr_db minus the layer's (both capped at ``cap``; inputs that are
    not layers (a quantized graph input, a QUANTIZE) from ``aux``, else ``cap``): how much the layer adds to
    the accumulated error."""
    snr = {r["tensor_idx"]: min(r["snr_db"], cap) for r in layers}
    snr.update({i: min(a.result()["snr_db"], cap) for i, a in aux.items()})
    sg = model.subgraphs[0]
    g = Graph(model)
    for r in layers:
        ins = [
            snr.get(i, snr.get(g.src(i), cap)) for i in sg.operators[r["node"]].inputs if i >= 0 and i not in g.const
        ]
        r["snr_drop_db"] = min(ins, default=cap) - snr[r["tensor_idx"]]


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

    _run(ss := _samples(qm, data, samples, seed), progress, [m for m in (qm, wf) if m is not None], step)
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


def _debug_model(m: Model) -> Model:
    """TF's debug models declare NumericVerify outputs with the quantized input's type (LiteRT retypes them to
    float32 at prepare): make them float32 here."""
    sg = m.subgraphs[0]
    tensors = list(sg.tensors)
    for op in sg.operators:
        if op_name(m, op) == "NumericVerify":
            for o in op.outputs:
                tensors[o] = replace(tensors[o], type=dtypes.TensorType.FLOAT32, quantization=None)
    return replace(m, subgraphs=(replace(sg, tensors=tuple(tensors)),) + m.subgraphs[1:])


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
    dm = _Model.load(_debug_model(raw), "debug model")
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

    _run(ss := _samples(dm, data, samples, seed), progress, [dm], step)
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


def verify(quant_model, float_model_=None, data=None, samples: int = 10, seed: int = 0, progress=None) -> Report:
    """Pair mode with a float model; else debug mode for a model with NumericVerify ops, else single mode."""
    if float_model_ is not None:
        return verify_pair(float_model_, quant_model, data, samples, seed, progress)
    try:
        m = quant_model if isinstance(quant_model, Model) else read_model(quant_model)
    except (OSError, LiteRTError) as e:
        raise VerifyError(f"quantized model: {e}") from None
    if numeric_verify_ops(m):
        return verify_debug(m, data, samples, seed, progress)
    return verify_single(m, data, samples, seed, progress)
