"""The differential check of tests/fuzz/float_models.py's float models: each runs three times over the same
invokes with the same inputs: litert_py fused (the default), litert_py unfused
(``experimental_preserve_all_tensors=True``: no fusion, no arena reuse) and LiteRT BUILTIN_REF.

- fused vs unfused: every output of every invoke byte for byte the same, NaN payloads and signs included (every
  float fusion promises the values of its steps, and both runs make the same numpy / BLAS calls on the same
  values, so a NaN keeps its payload). A difference only in NaN payloads is reported apart ("nan-payload", a
  failure as well: a dropped clamp can change only a NaN's sign), any other difference is a "fusion-mismatch";
- fused vs LiteRT: tests/compare.py's rule (NaN where LiteRT has NaN, the same infinities, else within
  ``rtol * max|ref| + atol``), rtol = float_models.RTOL_PER_TERM (the float conv / FC tests' 1e-5 per term) times
  the terms summed over the model's layers, atol 1e-6 ("tolerance" when not); but on an invoke where a float
  tensor of the unfused run (input or intermediate) holds an infinity or a magnitude of 1e30 or more, a difference
  is "overflow" (passing, counted): a sum of such products overflows float32 or not depending on the summation
  order and on FMA (fma(x, FLT_MAX, -inf) is -inf, x * FLT_MAX + -inf NaN), which no float kernel promises; and
  a difference from BUILTIN_REF within the same tolerance of LiteRT's AUTO (XNNPACK) is "auto-only" (passing,
  counted: e.g. a NaN filter tap over the padding, which the reference skips and XNNPACK multiplies by the zero
  padding: tests/fuzz/test_fuzz_float_fused_found.py);
- a model LiteRT refuses must be refused by litert_py (with one of its errors) in both modes ("rejected"); one that
  makes LiteRT end the process ("oracle-crash") is still compared fused against unfused.

Inputs (``float_feeds``): normal values at a drawn scale with a drawn share (none, a few, a fifth, all) of
float_models.SPECIALS (NaN with and without a payload, +-inf, -0.0, +-FLT_MAX, denormals), per invoke from
``default_rng([seed, invoke])``, so a batch resized before the third invoke gets inputs of its new shape.
"""

from __future__ import annotations

import numpy as np

from litert_py.schema.dtypes import TensorType
from tests.compare import mismatch
from tests.fuzz.float_models import RTOL_PER_TERM, FloatCase, with_specials
from tests.fuzz.fused_check import Result, _diff, _intermediates, compare_isolated, step_names, stream

F32 = TensorType.FLOAT32

#: the outcomes a passing case may have
PASSING = ("ok", "rejected", "oracle-crash", "overflow", "auto-only")


def float_feeds(details: list[dict], seed: int, invoke: int) -> list[np.ndarray]:
    """One input set for ``details`` (module docstring)."""
    rng = np.random.default_rng([seed, invoke])
    out = []
    for d in details:
        shape = tuple(int(s) for s in d["shape"])
        v = (rng.standard_normal(shape) * rng.choice([0.5, 3.0, 1e3])).astype(np.float32)
        share = float(rng.choice([0.0, 0.02, 0.2, 1.0] if invoke else [0.0, 0.02, 0.2]))
        out.append(with_specials(rng, v, share))
    return out


def run_invokes(it, case: FloatCase, scan=()) -> tuple[list[list[np.ndarray]], list[bool]]:
    """Every output after each invoke (fused_check.stream with ``float_feeds``); before the third, the batch
    resized (``case.resize``) or the tensors allocated again (``case.reallocate``). Also per invoke whether a float
    tensor of ``scan`` (indices) held an infinity or a magnitude of at least HUGE (``wild``: LiteRT's sums may
    overflow where ours do not)."""
    outputs = [d["index"] for d in it.get_output_details()]
    rows = stream(
        it,
        lambda details, k: float_feeds(details, case.seed, k),
        case.invokes,
        [*outputs, *scan],
        case.reallocate,
        case.resize,
    )
    n = len(outputs)
    return [[x for _, x in row[:n]] for row in rows], [any(_wild(x) for _, x in row[n:]) for row in rows]


#: a float magnitude from which sums of a few products may overflow float32 in one summation order (or without
#: FMA) and not in another
HUGE = 1e30


def _wild(x: np.ndarray | None) -> bool:
    if x is None or x.dtype != np.float32 or not x.size:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.isinf(x).any() or (np.abs(x) >= HUGE).any())


def _litert(case: FloatCase, resolver: str = "BUILTIN_REF"):
    from tests.oracle import oracle

    LiteRT, types = oracle()
    it = LiteRT(model_content=case.model, num_threads=1, experimental_op_resolver_type=getattr(types, resolver))
    return run_invokes(it, case)[0]


def only_nan_payloads(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether float32 ``a`` and ``b`` differ only in the bits of NaNs at the same positions."""
    if a.dtype != np.float32 or a.shape != b.shape:
        return False
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and a.view(np.uint32)[~nan].tobytes() == b.view(np.uint32)[~nan].tobytes()


def compare_float(case: FloatCase, litert: bool = True) -> Result:
    """The three runs of ``case`` compared (module docstring); without ``litert``, fused against unfused only."""
    import litert_py
    from litert_py.errors import LiteRTError

    theirs, theirs_err = None, None
    if litert:
        try:
            theirs = _litert(case)
        except (RuntimeError, ValueError) as e:
            theirs_err = e
    runs, errors, steps, wild = {}, {}, {}, []
    for name, preserve in (("fused", False), ("unfused", True)):
        it = None
        try:
            it = litert_py.Interpreter(model_content=case.model, experimental_preserve_all_tensors=preserve)
            scan = _scanned(case.model) if preserve else ()
            (runs[name], w), errors[name] = run_invokes(it, case, scan), None
            if preserve:
                wild = [x or _huge_constants(case.model) for x in w]
        except LiteRTError as e:
            errors[name] = e
        except Exception as e:  # noqa: BLE001 (an undocumented exception is a finding)
            return Result("exception", f"litert_py ({name}) raised {type(e).__name__}: {e}")
        steps[name] = step_names(it) if it is not None and it._subgraphs else []
    if not litert and any(errors.values()):
        if all(errors.values()):
            return Result("rejected", "litert_py refused it fused and unfused (LiteRT not run)")
        return Result("exception", f"only one litert_py run failed: {errors!r}", steps["fused"])
    if theirs_err is not None or any(errors.values()):
        if theirs_err is not None and all(errors.values()):
            return Result("rejected", f"LiteRT: {str(theirs_err).splitlines()[0][:100]}")
        return Result(
            "exception", f"not all runs failed: litert_py: {errors!r}; LiteRT: {theirs_err!r}", steps["fused"]
        )
    fused, unfused = runs["fused"], runs["unfused"]
    payloads = False
    for k, (got, want) in enumerate(zip(fused, unfused)):
        for j, (g, w) in enumerate(zip(got, want)):
            if g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes():
                continue
            if only_nan_payloads(g, w):
                payloads = True
                continue
            where = f"output {j}, invoke {k}: fused vs unfused: {_diff(g, w, ('fused', 'unfused'))}"
            return Result("fusion-mismatch", where, steps["fused"])
    rtol = RTOL_PER_TERM * case.terms
    overflow = ""
    for k, (got, want) in enumerate(zip(fused, theirs or [])):  # (none without ``litert``)
        why = mismatch(got, want, rtol=rtol, atol=1e-6)
        if why and not wild[k]:
            auto = _like_auto(case, fused, wild, rtol)
            if auto:
                return Result("tolerance", f"invoke {k}: fused vs BUILTIN_REF: {why}; vs AUTO: {auto}", steps["fused"])
            return Result("auto-only", f"invoke {k}: fused vs BUILTIN_REF (AUTO agrees): {why}", steps["fused"])
        overflow = overflow or (why and f"invoke {k}: fused vs BUILTIN_REF: {why}")
    fusions = len(steps["unfused"]) - len(steps["fused"])
    if overflow:
        return Result("overflow", f"{fusions} steps fused; {overflow}", steps["fused"])
    if payloads:
        return Result("nan-payload", f"{fusions} steps fused; NaN payloads differ fused vs unfused", steps["fused"])
    return Result("ok", f"{fusions} steps fused", steps["fused"])


def _like_auto(case: FloatCase, fused: list, wild: list[bool], rtol: float) -> str:
    """ "" when ``fused`` is within tolerance of LiteRT's AUTO resolver on every invoke that is not ``wild``, else
    the first difference."""
    try:
        auto = _litert(case, "AUTO")
    except (RuntimeError, ValueError) as e:
        return f"AUTO failed: {e}"
    for k, (got, want) in enumerate(zip(fused, auto)):
        why = mismatch(got, want, rtol=rtol, atol=1e-6)
        if why and not wild[k]:
            return f"invoke {k}: {why}"
    return ""


def _huge_constants(model: bytes) -> bool:
    """Whether a float32 constant of subgraph 0 holds an infinity or a magnitude of at least HUGE."""
    from litert_py.schema import read_model

    m = read_model(model)
    consts = [t for t in m.subgraphs[0].tensors if t.buffer and m.buffers[t.buffer].data.size]
    return any(_wild(np.frombuffer(m.buffers[t.buffer].data.tobytes(), np.float32)) for t in consts if t.type == F32)


def _scanned(model: bytes) -> list[int]:
    """The inputs and non-constant tensors of subgraph 0 (resources excepted)."""
    from litert_py.schema import read_model

    return list(read_model(model).subgraphs[0].inputs) + _intermediates(model)


def _litert_alone(case: FloatCase) -> None:
    _litert(case)


def compare_float_isolated(case: FloatCase) -> Result:
    """``compare_float`` in a forked child (fused_check.compare_isolated); when LiteRT crashes ("oracle-crash"),
    fused against unfused still, in another child without LiteRT: its failure is the result."""
    r = compare_isolated(case, check=compare_float, litert_alone=_litert_alone)
    if r.kind != "oracle-crash":
        return r
    alone = compare_isolated(case, check=lambda c: compare_float(c, litert=False), litert_alone=lambda c: None)
    return r if alone.kind in ("ok", "rejected") else alone
