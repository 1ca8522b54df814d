"""The differential check of tests/fuzz/strategies.py's random graphs: a graph runs in litert_py and in
ai-edge-litert BUILTIN_REF, two invokes with the same inputs (``strategies.input_values``), and the outcomes are
classified:

- ``ok``: both ran; every output of both invokes equal: integers, bools and strings exactly, floats within
  tests/compare.py's rule at ``FLOAT_RTOL`` (NaN where LiteRT has NaN, the same infinities);
- ``float``: both ran and only a float output is outside that tolerance (a random graph chains transcendental ops
  on extreme values: reported apart, for triage);
- ``mismatch``: an integer, bool or string output differs, or the shapes / dtypes do;
- ``rejected``: both refused the graph (litert_py with one of its documented errors);
- ``refused``: litert_py refused on purpose what LiteRT runs into undefined behaviour (``DELIBERATE``);
- ``ref-wrong``: an integer output differs from BUILTIN_REF where the reference kernel is known to be wrong
  (``REFERENCE_WRONG``, docs/litert-differences.md) and equals LiteRT's default kernels, as litert_py intends;
- ``litert-wrong``: an output differs where LiteRT is known to compute garbage (``litert_wrong``: a TRANSPOSE of a
  rank-0 tensor leaves its output uninitialized), or ``zero-scale``: where an 8/16-bit tensor has no quantization
  (scale 0: LiteRT's multipliers are NaN / inf, undefined behaviour; litert_py refuses most such kernels);
- ``ours-only`` / ``litert-only``: one runtime refused (or failed to invoke) what the other ran;
- ``exception``: litert_py raised an undocumented exception; ``oracle-crash``: LiteRT ended the process;
- ``too-large``: both ran and an output is above ``MAX_COMPARED_BYTES`` (a RANGE to a drawn int32 limit): not kept
  nor compared.

Graphs with random ops (RANDOM_*, MULTINOMIAL) are compared by shape and dtype only.
"""

from __future__ import annotations

import numpy as np

from tests.compare import mismatch
from tests.fuzz import fused_check
from tests.fuzz.fused_check import Result, _in_child

#: relative tolerance of float outputs, to the output's largest finite magnitude and to each element
FLOAT_RTOL = 1e-4
RANDOM_OPS = ("RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MULTINOMIAL")
#: ops whose reference kernel litert_py does not follow (docs/litert-differences.md: SUM int8 / int16 reads the
#: input as unsigned; LRN's window)
REFERENCE_WRONG = ("SUM", "LOCAL_RESPONSE_NORMALIZATION")
#: litert_py's refusals of what LiteRT runs into undefined behaviour (message fragments): fused_check's, and a
#: quantized kernel's tensor without quantization (scale 0: LiteRT divides by it)
DELIBERATE = (
    *fused_check.DELIBERATE,
    "is not finite (a zero or missing scale)",
    "needs a quantized output with a positive scale",
    "of a rank 0 tensor is not supported",  # LOG_SOFTMAX: LiteRT reads garbage (docs/litert-differences.md)
    "(LiteRT aborts or is undefined)",  # a scale outside what LiteRT's TFLITE_CHECKs (off in the wheel) allow
    "multiplier out of range",  # a rescale shift C++ leaves undefined
    "positive scale",  # no quantization: as the zero-scale refusal above
    "scales must be positive",
    "is too large (shift",  # a shift past 31 bits, as fused_check.DELIBERATE
    "CONCATENATION: output type",  # LiteRT copies the inputs' bytes into an output of another type
)


#: Outputs above this many bytes are neither kept nor compared (``too-large``): a RANGE to a drawn limit of 5.9e8
#: values kept for two invokes of both runtimes and compared took ~24 GB and more than the child's minute.
MAX_COMPARED_BYTES = 1 << 26
TOO_LARGE = "too large"  # _outputs' placeholder for such an output


def _outputs(it) -> list:
    out = []
    for d in it.get_output_details():
        if np.prod(d["shape"], dtype=np.float64) * np.dtype(d["dtype"]).itemsize > MAX_COMPARED_BYTES:
            out.append(TOO_LARGE)  # from the details: get_tensor would copy it
            continue
        try:
            out.append(np.array(it.get_tensor(d["index"]), copy=True))
        except Exception:  # noqa: BLE001 (a resource or unallocated tensor: compared as unreadable)
            out.append(None)
    return out


def _run(it, seed: int) -> list[list]:
    from tests.fuzz.strategies import input_values

    it.allocate_tensors()
    details = it.get_input_details()
    values = input_values(details, seed)
    results = []
    for _ in range(2):
        for d, v in zip(details, values):
            it.set_tensor(d["index"], v)
        it.invoke()
        results.append(_outputs(it))
    return results


def _litert(model: bytes, seed: int, resolver: str = "BUILTIN_REF") -> list[list]:
    from tests.oracle import oracle

    LiteRT, types = oracle()
    it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=getattr(types, resolver))
    return _run(it, seed)


def _differs(g: np.ndarray, w: np.ndarray) -> bool:
    return g.tobytes() != w.tobytes() if g.dtype != object else g.tolist() != w.tolist()


def compare_graph(model: bytes, seed: int, ops: list[str]) -> Result:
    """Both runtimes on ``model`` (module docstring)."""
    import litert_py
    from litert_py.errors import LiteRTError, ResourceLimitError

    try:
        theirs, theirs_err = _litert(model, seed), None
    except (RuntimeError, ValueError) as e:
        theirs, theirs_err = None, e
    try:
        ours, ours_err = _run(litert_py.Interpreter(model_content=model), seed), None
    except LiteRTError as e:
        ours, ours_err = None, e
    except Exception as e:  # noqa: BLE001 (an undocumented exception is a finding)
        return Result("exception", f"litert_py raised {type(e).__name__}: {e}")
    if theirs_err is not None and ours_err is not None:
        return Result("rejected", f"LiteRT: {str(theirs_err).splitlines()[0][:100]}")
    if ours_err is not None:
        # the memory budget (litert_py.limits) refuses on purpose too
        deliberate = isinstance(ours_err, ResourceLimitError) or any(m in str(ours_err) for m in DELIBERATE)
        kind = "refused" if deliberate else "ours-only"
        return Result(kind, f"litert_py: {type(ours_err).__name__}: {' / '.join(str(ours_err).splitlines()[:2])}")
    if theirs_err is not None:
        return Result("litert-only", f"LiteRT: {' / '.join(str(theirs_err).splitlines()[:2])[:300]}")
    if any(v is TOO_LARGE for run in (*ours, *theirs) for v in run):
        return Result("too-large", f"an output above {MAX_COMPARED_BYTES} bytes (not compared)")
    random = any(op in RANDOM_OPS for op in ops)
    worst = None
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for j, (g, w) in enumerate(zip(got, want)):
            if w is None or g is None or w.dtype == object and w.size and not isinstance(w.flat[0], bytes):
                continue
            where = f"output {j}, invoke {k}"
            if g.shape != w.shape or g.dtype != w.dtype:
                return Result("mismatch", f"{where}: ours {g.dtype}{g.shape}, LiteRT {w.dtype}{w.shape}")
            if random:
                continue
            if g.dtype.kind in "fc":
                why = mismatch([g], [w], rtol=FLOAT_RTOL, atol=1e-6, rtol_each=FLOAT_RTOL)
                worst = worst or (why and f"{where}: {why}")
            elif _differs(g, w):
                bad = np.flatnonzero(g.reshape(-1) != w.reshape(-1))[:4]
                detail = f"ours {g.reshape(-1)[bad].tolist()}, LiteRT {w.reshape(-1)[bad].tolist()} at {bad.tolist()}"
                if any(op in REFERENCE_WRONG for op in ops):
                    default = _litert(model, seed, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")[k][j]
                    if default is not None and not _differs(g, default):
                        return Result("ref-wrong", f"{where}: {detail} (the default kernels agree with litert_py)")
                why = litert_wrong(model)
                if why:
                    return Result(why[0], f"{where}: {detail} ({why[1]})")
                return Result("mismatch", f"{where}: {detail}")
    if not worst:
        return Result("ok")
    why = litert_wrong(model)
    return Result(why[0], f"{worst} ({why[1]})") if why else Result("float", worst)


def litert_wrong(model: bytes) -> tuple[str, str] | None:
    """(kind, reason) when ``model`` has something LiteRT computes garbage for (module docstring), else None."""
    from litert_py.schema import read_model
    from litert_py.schema.dtypes import TensorType
    from litert_py.schema.model import BuiltinOperator

    m = read_model(model)
    sg = m.subgraphs[0]
    for op in sg.operators:
        code = m.operator_codes[op.opcode_index]
        name = BuiltinOperator(max(code.builtin_code, code.deprecated_builtin_code)).name
        if name == "TRANSPOSE" and op.inputs and op.inputs[0] >= 0 and not len(sg.tensors[op.inputs[0]].shape):
            return "litert-wrong", "TRANSPOSE of a rank-0 tensor: LiteRT leaves its output uninitialized"
    for t in sg.tensors:
        scales = np.asarray(t.quantization.scale if t.quantization is not None else ())
        if t.type in (TensorType.INT8, TensorType.UINT8, TensorType.INT16) and not (scales.size and (scales > 0).all()):
            return "zero-scale", f"tensor {t.name!r} ({t.type}) has no positive scale"
    return None


def _litert_alone(model: bytes, seed: int) -> None:
    _litert(model, seed)


def compare_graph_isolated(model: bytes, seed: int, ops: list[str]) -> Result:
    """``compare_graph`` in a forked child (LiteRT aborts the process on some graphs): a crash of LiteRT alone is
    "oracle-crash", one of litert_py "exception"."""
    import litert_py  # noqa: F401  (imported once, in the parent)
    from tests.oracle import oracle

    oracle()
    kind, value = _in_child(lambda: compare_graph(model, seed, ops))
    if kind == "ok":
        return value
    if kind == "error":
        return Result("exception", f"the comparison raised {value}")
    kind, how = _in_child(lambda: _litert_alone(model, seed))
    if kind == "crash":
        return Result("oracle-crash", f"LiteRT: {how}")
    return Result("exception", f"litert_py or the comparison: {value}")
