"""What the three comparisons of tflite-verify share (loading, feeding, running samples), and ``verify``, which
picks one: pair (pair.py), single (single.py, op by op in float) or debug (debug.py, NumericVerify ops)."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from ..errors import LiteRTError
from ..runtime.interpreter import Interpreter
from ..schema import dtypes
from ..schema.model import BuiltinOperator, Model
from ..schema.reader import read_model
from ..schema.writer import write_model
from .floatify import is_quantized, op_name
from .matching import Graph
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


def _run_sample(s: dict, models, step_fn) -> None:
    for m in models:
        m.interp.reset_all_variables()
    for step in range(next(iter(s.values())).shape[0] if s else 1):
        step_fn(s, step)


def _run(samples, progress, models, step_fn, sinks=()) -> None:
    """Every sample through ``step_fn``, which adds to ``sinks`` (the comparison's Accumulators and top-1 lists,
    in a fixed order): here, or in worker processes / Ray actors when ``verify(workers=..., ray_address=...)``
    asked for it (parallel.py), with the same results."""
    from . import parallel

    if parallel.capturing():  # a worker setting up: hand the comparison over instead of running it
        raise parallel.Captured(models, step_fn, list(sinks))
    bar = _Progress(len(samples), progress)
    if parallel.requested() and len(samples) > 1:
        parallel.run(samples, list(sinks), bar)
        return
    for n, s in enumerate(samples):
        _run_sample(s, models, step_fn)
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


def verify(
    quant_model,
    float_model_=None,
    data=None,
    samples: int = 10,
    seed: int = 0,
    progress=None,
    workers: int | None = None,
    ray_address: str | None = None,
) -> Report:
    """Pair mode with a float model; else debug mode for a model with NumericVerify ops, else single mode.

    ``workers``: run the samples in that many processes (0, 1 or None: here); ``ray_address``: on Ray actors
    instead (``"local"`` starts a local Ray, else what ``ray.init(address=...)`` takes; ``workers`` actors,
    default one per CPU of the cluster). The report is the same, bit for bit, as without them."""
    from . import parallel
    from .debug import numeric_verify_ops, verify_debug
    from .pair import verify_pair
    from .single import verify_single

    if float_model_ is not None:
        with parallel.requesting(workers, ray_address, ("pair", float_model_, quant_model)):
            return verify_pair(float_model_, quant_model, data, samples, seed, progress)
    try:
        m = quant_model if isinstance(quant_model, Model) else read_model(quant_model)
    except (OSError, LiteRTError) as e:
        raise VerifyError(f"quantized model: {e}") from None
    mode = "debug" if numeric_verify_ops(m) else "single"
    with parallel.requesting(workers, ray_address, (mode, m)):
        return (verify_debug if mode == "debug" else verify_single)(m, data, samples, seed, progress)
