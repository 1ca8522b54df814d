"""tflite-run --compare litert: the same inputs through ai-edge-litert (an optional extra, imported only here),
with its reference kernels (OpResolverType.BUILTIN_REF, litert_py's bit-exactness oracle) and its default
optimized ones (OpResolverType.AUTO); per output: exact, max abs and max rel difference; and the time ratio
(medians of invokes measured in this process)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from .io import ModelError, _one_line

RESOLVERS = (("reference", "BUILTIN_REF"), ("default", "AUTO"))
MAX_RUNS = 20  # LiteRT invokes timed per resolver (at most; as many as litert_py's runs otherwise)


def _agreement(ours: np.ndarray, theirs: np.ndarray) -> dict:
    doc = {"shape_equal": list(ours.shape) == list(theirs.shape), "dtype_equal": ours.dtype == theirs.dtype}
    if not doc["shape_equal"] or ours.dtype.kind in "OSU" or theirs.dtype.kind in "OSU":
        doc.update(exact=bool(doc["shape_equal"] and np.array_equal(ours, theirs)), max_abs=None, max_rel=None)
        return doc
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0.0, diff)
        rel = np.where(same, 0.0, diff / np.maximum(np.abs(b), np.finfo(np.float64).tiny))
    doc.update(
        exact=bool(same.all()),
        max_abs=float(diff.max()) if diff.size else 0.0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        mismatches=int((~same).sum()),
    )
    return doc


def compare_litert(
    model_path: str, session, outputs: list[np.ndarray] | None, our_times_ms: list[float], sequence: bool
) -> dict:
    """Run LiteRT on ``session``'s inputs; ``outputs`` are litert_py's (None after a --sequence: not compared)."""
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
        from ai_edge_litert.interpreter import OpResolverType
    except ImportError as e:
        raise ModelError(
            f"--compare litert needs ai-edge-litert (pip install ai-edge-litert): {_one_line(e)}"
        ) from None
    if sequence or outputs is None:
        raise ModelError("--compare litert compares one set of inputs; it cannot follow a --sequence run")
    runs = max(1, min(len(our_times_ms), MAX_RUNS))
    ours_ms = statistics.median(our_times_ms) if our_times_ms else None
    doc = {"runs": runs, "litert_py_ms": ours_ms, "resolvers": []}
    for label, resolver in RESOLVERS:
        entry = {"name": label, "op_resolver_type": resolver}
        try:
            it = LiteRT(
                model_path=model_path, num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver)
            )
            call = _litert_call(it, session)
            call()  # one untimed invoke (allocation, first-run effects), as litert_py had its own
            times, result = [], None
            for _ in range(runs):
                t0 = time.perf_counter()
                result = call()
                times.append((time.perf_counter() - t0) * 1e3)
        except Exception as e:  # LiteRT refuses the model (an op it lacks, a bad input): report, don't fail
            entry["error"] = f"{type(e).__name__}: {_one_line(e)}"
            doc["resolvers"].append(entry)
            continue
        entry["litert_ms"] = statistics.median(times)
        entry["time_ratio"] = ours_ms / entry["litert_ms"] if ours_ms and entry["litert_ms"] > 0 else None
        entry["outputs"] = [
            {"name": p.name, **_agreement(np.asarray(o), np.asarray(t))}
            for p, o, t in zip(session.outputs, outputs, result)
        ]
        doc["resolvers"].append(entry)
    return doc


def _litert_call(it, session):
    """A function that sets the session's inputs on LiteRT, invokes and returns the outputs in order."""
    feeds = session.feeds
    if session.signature is not None:
        runner = it.get_signature_runner(session.signature)
        kwargs = {session.inputs[pos].name: arr for pos, arr in feeds.items()}
        names = [p.name for p in session.outputs]

        def call():
            res = runner(**kwargs)
            return [res[n] for n in names]

        return call
    ins = it.get_input_details()
    for pos, arr in feeds.items():
        if list(ins[pos]["shape"]) != list(arr.shape):
            it.resize_tensor_input(ins[pos]["index"], list(arr.shape), strict=True)
    it.allocate_tensors()
    ins = it.get_input_details()
    outs = [d["index"] for d in it.get_output_details()]

    def call():
        for pos, arr in feeds.items():
            it.set_tensor(ins[pos]["index"], arr)
        it.invoke()
        return [it.get_tensor(i) for i in outs]

    return call


def compare_text(doc: dict) -> str:
    lines = [
        f"Compare with ai-edge-litert (medians of {doc['runs']} invokes; litert_py {doc['litert_py_ms']:.3f} ms):"
        if doc["litert_py_ms"] is not None
        else "Compare with ai-edge-litert:"
    ]
    for r in doc["resolvers"]:
        if "error" in r:
            lines.append(f"  {r['name']} ({r['op_resolver_type']}): LiteRT failed: {r['error']}")
            continue
        ratio = f", litert_py/LiteRT time ratio {r['time_ratio']:.2f}" if r["time_ratio"] else ""
        lines.append(f"  {r['name']} ({r['op_resolver_type']}): {r['litert_ms']:.3f} ms{ratio}")
        for o in r["outputs"]:
            if o["exact"]:
                lines.append(f"    {o['name']}: exact")
            elif o["max_abs"] is None:
                lines.append(f"    {o['name']}: differs (shape or dtype)")
            else:
                lines.append(
                    f"    {o['name']}: {o['mismatches']} differ, max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g}"
                )
    return "\n".join(lines)
