"""The differential check of tests/fuzz/fused_models.py's models: a model runs in litert_py and in ai-edge-litert
BUILTIN_REF over several invokes with the same inputs (``feeds``), and every output of every invoke must be equal
(integers exactly, floats byte for byte; with ``experimental_preserve_all_tensors`` every intermediate tensor too),
or both runtimes must refuse the model (litert_py with one of its errors). ``compare_isolated`` runs the check in a
forked child, because ai-edge-litert aborts the process on a few models.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from dataclasses import dataclass, field

import numpy as np

from tests.fuzz.fused_models import RESOURCE, Case


def feeds(details: list[dict], seed: int, count: int) -> list[list[np.ndarray]]:
    """``count`` input sets: random over the type's range, one constant at an extreme; float inputs around the
    quantized range, with values on the rounding's halves."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        feed = []
        for d in details:
            dtype, shape = np.dtype(d["dtype"]), tuple(int(s) for s in d["shape"])
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                v = (
                    rng.integers(info.min, info.max + 1, shape)
                    if k != 1
                    else np.full(shape, rng.choice([info.min, info.max]))
                )
                feed.append(np.asarray(v).astype(dtype))
            else:
                v = rng.standard_normal(shape) * rng.choice([0.5, 3.0, 30.0])
                if k == 2:  # halves of the steps of common scales
                    v = (rng.integers(-300, 300, shape) + 0.5) * rng.choice([0.05, 2.0**-4, 0.1])
                feed.append(v.astype(np.float32))
        out.append(feed)
    return out


def stream(
    it, feed, invokes: int, tensors=None, reallocate: bool = False, resize: int = 0
) -> list[list[tuple[int, np.ndarray | None]]]:
    """``invokes`` invokes of ``it``, the inputs of invoke k being ``feed(details, k)`` (``details``: the current
    input details); after each, every tensor of ``tensors`` (indices; default the outputs) as (index, a copy, or
    None when unreadable). Before the third invoke, the batch resized to ``resize`` (allocated again), or with
    ``reallocate`` the tensors allocated again (the variables keep their values). Used by both fuzz checks."""
    it.allocate_tensors()
    if tensors is None:
        tensors = [d["index"] for d in it.get_output_details()]
    results = []
    for k in range(invokes):
        if k == 2 and resize:
            for d in it.get_input_details():
                it.resize_tensor_input(d["index"], [resize, *d["shape"][1:]])
            it.allocate_tensors()
        elif k == 2 and reallocate:
            it.allocate_tensors()
        details = it.get_input_details()
        for d, v in zip(details, feed(details, k)):
            it.set_tensor(d["index"], v)
        it.invoke()
        row = []
        for i in tensors:
            try:
                row.append((i, it.get_tensor(i).copy()))
            except Exception:  # noqa: BLE001 (a resource tensor, or one without data: compared as unreadable)
                row.append((i, None))
        results.append(row)
    return results


#: litert_py's deliberate refusals of models LiteRT runs into undefined behaviour (message fragments): a multiplier
#: whose shift passes 31 (ops/common.py quantized_multiplier; LiteRT shifts an int32 by 32 or more)
DELIBERATE = ("too large for LiteRT's 32-bit fixed point",)


@dataclass
class Result:
    """The outcome of a case: "ok", "rejected" (both runtimes refused it), "refused" (litert_py refused it on
    purpose: ``DELIBERATE``), "mismatch" or "exception"."""

    kind: str
    message: str = ""
    steps: list[str] = field(default_factory=list)


def step_names(it) -> list[str]:
    names = []
    for _, op in getattr(it._subgraphs[0], "steps_nodes", ()):  # none when allocate failed
        inner = getattr(op, "consumer", None)
        names.append(type(op).__name__ + ("" if inner is None else "/" + type(inner).__name__))
    return names


def _intermediates(model: bytes) -> list[int]:
    """The non-constant, non-resource tensors of subgraph 0 that are not its inputs (ai-edge-litert's get_tensor
    crashes on a resource tensor)."""
    from litert_py.schema import read_model

    m = read_model(model)
    sg = m.subgraphs[0]
    return [
        i
        for i, t in enumerate(sg.tensors)
        if i not in sg.inputs and t.type != RESOURCE and not (t.buffer and m.buffers[t.buffer].data.size)
    ]


def _tensor_name(model: bytes, index: int) -> str:
    from litert_py.schema import read_model

    with contextlib.suppress(Exception):
        return read_model(model).subgraphs[0].tensors[index].name
    return str(index)


def compare(case: Case, preserve: bool | None = None) -> Result:
    """Run ``case`` in litert_py and BUILTIN_REF: every output of every invoke equal (integers exactly, floats
    byte for byte); with ``preserve`` every tensor of both runs. A model LiteRT refuses must be refused by
    litert_py too (with a litert_py error)."""
    import litert_py
    from litert_py.errors import LiteRTError, PrepareError
    from tests.oracle import oracle

    preserve = case.preserve if preserve is None else preserve
    LiteRT, resolver = oracle()
    read = _intermediates(case.model) if preserve else None  # None: the outputs
    try:
        theirs_it = LiteRT(
            model_content=case.model,
            num_threads=1,
            experimental_op_resolver_type=resolver.BUILTIN_REF,
            experimental_preserve_all_tensors=preserve,
        )
        inputs = feeds(theirs_it.get_input_details(), case.seed, case.invokes)
        theirs = stream(theirs_it, lambda _, k: inputs[k], case.invokes, read, case.reallocate)
        theirs_err = None
    except (RuntimeError, ValueError) as e:
        theirs, theirs_err = None, e
    ours_it = None
    try:
        ours_it = litert_py.Interpreter(model_content=case.model, experimental_preserve_all_tensors=preserve)
        if theirs_err is not None:
            inputs = feeds(ours_it.get_input_details(), case.seed, case.invokes)
        ours = stream(ours_it, lambda _, k: inputs[k], case.invokes, read, case.reallocate)
        ours_err = None
    except LiteRTError as e:
        ours, ours_err = None, e
    except Exception as e:  # noqa: BLE001 (an undocumented exception is a finding)
        return Result("exception", f"litert_py raised {type(e).__name__}: {e}")
    steps = step_names(ours_it) if ours_it is not None and ours_it._subgraphs else []
    if theirs_err is not None or ours_err is not None:
        if theirs_err is not None and ours_err is not None:
            return Result("rejected", f"LiteRT: {str(theirs_err).splitlines()[0][:100]}")
        if theirs_err is None and isinstance(ours_err, PrepareError) and any(m in str(ours_err) for m in DELIBERATE):
            return Result("refused", f"litert_py: {str(ours_err).splitlines()[0][:100]}")
        return Result("exception", f"only one runtime failed: litert_py: {ours_err!r}; LiteRT: {theirs_err!r}", steps)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for (i, g), (_, w) in zip(got, want):
            if w is None or w.dtype == object:  # unreadable in LiteRT, or a resource handle
                continue
            same = g is not None and g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
            if not same:
                where = f"tensor {_tensor_name(case.model, i)!r} (index {i}), invoke {k}"
                detail = "unreadable" if g is None else _diff(g, w)
                return Result("mismatch", f"{where}: {detail}", steps)
    return Result("ok", steps=steps)


def _diff(g: np.ndarray, w: np.ndarray, names: tuple[str, str] = ("ours", "LiteRT")) -> str:
    ours, theirs = names
    if g.shape != w.shape or g.dtype != w.dtype:
        return f"{ours} {g.dtype}{g.shape}, {theirs} {w.dtype}{w.shape}"
    bad = np.flatnonzero(
        g.reshape(-1).view(np.uint8 if g.dtype.itemsize == 1 else f"u{g.dtype.itemsize}")
        != w.reshape(-1).view(np.uint8 if w.dtype.itemsize == 1 else f"u{w.dtype.itemsize}")
    )
    j = bad[:4]
    return (
        f"{bad.size} of {g.size} values differ; at {j.tolist()}: {ours} {g.reshape(-1)[j].tolist()}, "
        f"{theirs} {w.reshape(-1)[j].tolist()}"
    )


def _in_child(fn, seconds: int = 60):
    """``fn()`` in a forked child with a CPU alarm: ("ok", its value), ("error", the exception it raised) or
    ("crash", how the child ended)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (tools/fuzz_fused.py)
            signal.alarm(seconds)
            data = pickle.dumps(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 (reported to the parent)
            data = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
        with contextlib.suppress(BrokenPipeError), os.fdopen(w, "wb") as f:  # the parent may be gone
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if data:
        return pickle.loads(data)
    if os.WIFSIGNALED(status):
        return "crash", f"killed by signal {os.WTERMSIG(status)}"
    return "crash", f"exit status {os.WEXITSTATUS(status)}"


def _litert_alone(case: Case) -> None:
    from tests.oracle import oracle

    LiteRT, resolver = oracle()
    it = LiteRT(model_content=case.model, num_threads=1, experimental_op_resolver_type=resolver.BUILTIN_REF)
    inputs = feeds(it.get_input_details(), case.seed, case.invokes)
    stream(it, lambda _, k: inputs[k], case.invokes)


def compare_isolated(case: Case, preserve: bool | None = None, check=None, litert_alone=None) -> Result:
    """``compare`` (or ``check(case)``) in a forked child (ai-edge-litert aborts the process on some models, e.g. a
    SOFTMAX whose input scale is tiny): a crash of LiteRT alone (``litert_alone(case)``) is "oracle-crash" (nothing
    to compare), one of litert_py "exception"."""
    import litert_py  # noqa: F401  (imported once, in the parent)
    from tests.oracle import oracle

    oracle()
    kind, value = _in_child(lambda: compare(case, preserve) if check is None else check(case))
    if kind == "ok":
        return value
    if kind == "error":
        return Result("exception", f"the comparison raised {value}")
    kind, how = _in_child(lambda: (litert_alone or _litert_alone)(case))
    if kind == "crash":
        return Result("oracle-crash", f"LiteRT: {how}")
    return Result("exception", f"litert_py or the comparison: {value}")
