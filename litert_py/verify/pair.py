"""Pair mode: a float model and its quantized version on the same samples, every matched tensor compared."""

from __future__ import annotations

from ..schema.model import Model
from .floatify import is_quantized
from .matching import _Q_DQ, Graph, compared_tensors, match_tensors
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

    tops = [t for t in top1s if t is not None]
    _run(ss, progress, [fm, qm], step, [*accs.values(), *aux.values(), *out_accs, *tops])
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
