"""Run one fuzz case (construct -> allocate -> invoke -> invoke) and classify its outcome, in a forked child
with a CPU-time alarm and an address-space limit, so that a hang or a runaway allocation fails the case
instead of the machine.

An outcome is ``ok`` (both invokes returned), or the exception type name. ``documented`` says whether it is
one of litert_py.errors' types. ``cause`` is the type of the internal exception a PrepareError/InvokeError
wraps (a kernel raising TypeError, IndexError, ... that the runtime turned into a PrepareError/InvokeError
naming the node), or None.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import warnings
from dataclasses import dataclass

CASE_SECONDS = 20  # CPU seconds a case may take in its child
CASE_ADDRESS_SPACE = 3 << 30  # bytes of address space a case may add to the parent's
CASE_BUDGET = 64 << 20  # LITERT_PY_MAX_ARENA_BYTES inside the child: the budget must refuse first


@dataclass(frozen=True)
class Outcome:
    stage: str  # construct | allocate | set_tensor | invoke | invoke2 | done
    outcome: str  # ok, or the exception's type name, or "timeout" / "killed by signal N"
    documented: bool
    cause: str | None = None
    message: str = ""
    runtime_warnings: tuple[str, ...] = ()

    @property
    def reached_invoke(self) -> bool:
        return self.stage in ("invoke", "invoke2", "done")


def _internal_cause(e: BaseException) -> str | None:
    from litert_py.errors import LiteRTError

    c = e.__cause__
    while isinstance(c, LiteRTError) and c.__cause__ is not None:
        c = c.__cause__
    return type(c).__name__ if c is not None and not isinstance(c, LiteRTError) else None


def run_case(model: bytes, seed: int) -> Outcome:
    """The case, in this process."""
    import litert_py
    from litert_py.errors import LiteRTError
    from tests.fuzz.strategies import input_values

    stage = "construct"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            it = litert_py.Interpreter(model_content=model)
            stage = "allocate"
            it.allocate_tensors()
            stage = "set_tensor"
            details = it.get_input_details()
            for det, value in zip(details, input_values(details, seed)):
                it.set_tensor(det["index"], value)
            stage = "invoke"
            it.invoke()
            outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
            stage = "invoke2"
            it.invoke()
            again = [it.get_tensor(d["index"]) for d in it.get_output_details()]
            for a, b in zip(outs, again):  # the same inputs give the same outputs (random ops excepted)
                if a.shape != b.shape:
                    raise AssertionError(f"second invoke gave shape {b.shape}, first {a.shape}")
            stage, result = "done", None
        except Exception as e:  # noqa: BLE001 (classified below)
            result = e
    rw = tuple(
        sorted({f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)})
    )
    if result is None:
        return Outcome(stage, "ok", True, runtime_warnings=rw)
    return Outcome(
        stage,
        type(result).__name__,
        isinstance(result, LiteRTError),
        _internal_cause(result),
        str(result).splitlines()[0][:200] if str(result) else "",
        rw,
    )


def _address_space_limit() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024 + CASE_ADDRESS_SPACE
    return resource.RLIM_INFINITY


def run_isolated(model: bytes, seed: int, wall_seconds: float = 3 * CASE_SECONDS) -> Outcome:
    """The case in a forked child with RLIMIT_AS and RLIMIT_CPU/alarm; a hang or crash is an Outcome too."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r)
            limit = _address_space_limit()
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(CASE_SECONDS)
            try:
                from litert_py import limits
            except ImportError:  # litert_py before litert_py/limits.py (for "before" counts)
                from litert_py.runtime import subgraph as limits
            limits.MAX_ARENA_BYTES = CASE_BUDGET
            data = pickle.dumps(run_case(model, seed))
        except BaseException as e:  # noqa: BLE001 (reported to the parent)
            data = pickle.dumps(Outcome("child", type(e).__name__, False, None, str(e)[:200]))
            code = 1
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + wall_seconds
    with os.fdopen(r, "rb") as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Outcome("child", "timeout", False, message=f"no result within {wall_seconds} s")
            chunk = os.read(f.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if chunks:
        return pickle.loads(b"".join(chunks))
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = "timeout" if sig in (signal.SIGALRM, signal.SIGXCPU) else f"killed by signal {sig}"
        return Outcome("child", name, False)
    return Outcome("child", f"exit status {os.WEXITSTATUS(status)}", False)


def summary(outcomes: list[Outcome]) -> str:
    """Counts by outcome (and wrapped cause) and the share of cases that reached invoke."""
    from collections import Counter

    n = len(outcomes)
    by = Counter(o.outcome + (f" <- {o.cause}" if o.cause else "") for o in outcomes)
    reached = sum(o.reached_invoke for o in outcomes)
    warned = sum(bool(o.runtime_warnings) for o in outcomes)
    lines = [
        f"{n} graphs, {reached} reached invoke ({100 * reached / max(n, 1):.1f} %), "
        f"{sum(o.outcome == 'ok' for o in outcomes)} ran both invokes, {warned} with RuntimeWarnings"
    ]
    lines += [f"  {c:6d}  {k}" for k, c in by.most_common()]
    return "\n".join(lines)
