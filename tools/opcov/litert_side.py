"""The LiteRT side of the op dashboard: runs in a child process (``tools/op_coverage.py --worker``) that forks
a grandchild per (op, path), so a crash inside LiteRT costs only the model that caused it.

It imports nothing of litert_py (only numpy and, in the worker, ai-edge-litert).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time

import numpy as np

CASE_TIMEOUT = 20.0  # seconds, per case and per runtime
UNREGISTERED = ("Didn't find op for builtin opcode", "Encountered unresolved custom op", "unresolved custom op")


def _run_interpreter(it, feeds: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Allocate, then for each feed set the inputs, invoke and read every output (as tests/oracle.py does)."""
    it.allocate_tensors()
    results = []
    for feed in feeds:
        details = it.get_input_details()
        if len(details) != len(feed):
            raise ValueError(f"model has {len(details)} inputs, recipe feeds {len(feed)}")
        for d, x in zip(details, feed):
            it.set_tensor(d["index"], x)
        it.invoke()
        results.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return results


REF, OPT, AUTO = "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "AUTO"


def _litert_outputs(model: bytes, feeds, resolver: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_content=model, num_threads=1, experimental_op_resolver_type=getattr(OpResolverType, resolver)
    )
    return _run_interpreter(it, feeds)


def litert_run(model: bytes, feeds, resolvers: tuple[str, ...] = (REF, OPT)) -> tuple:
    """(kind, resolver, outputs or message, optimized outputs or None). Runs in the worker process.

    The first resolver that registers the op decides ("ok" or "rejected"); when that is the reference
    resolver, the optimized kernels run too, so the dashboard can list where the two disagree.
    """
    for k, resolver in enumerate(resolvers):
        try:
            outputs = _litert_outputs(model, feeds, resolver)
        except Exception as e:  # LiteRT reports bad models as ValueError / RuntimeError
            msg = f"{type(e).__name__}: {e}"
            if k + 1 < len(resolvers) and any(s in msg for s in UNREGISTERED):
                continue
            return "rejected", resolver, msg, None
        alt = None
        if resolver == REF:
            try:
                alt = _litert_outputs(model, feeds, OPT)
            except Exception:  # the optimized kernels may reject what the reference ones run
                alt = None
        return "ok", resolver, outputs, alt
    raise AssertionError("unreachable")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _stderr_tail(start: int) -> str:
    """The last meaningful line LiteRT wrote to stderr (our stderr is a file) since offset ``start``."""
    try:
        text = os.pread(2, 1 << 16, start).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "XNNPACK" not in ln]
    return lines[-1][:160] if lines else ""


def run_forked(jobs: list, timeout: float) -> list[tuple]:
    """litert_run of each job, in a forked child: a segfault, CHECK abort or heap corruption dies with it.

    The jobs of one (op, path) share a fork; when that child dies, each job is rerun in its own fork, so a
    crash is charged to the model that caused it.
    """
    r, w = os.pipe()
    start = os.fstat(2).st_size
    timeout *= len(jobs)
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        results = []
        for model, feeds, resolvers in jobs:
            try:
                results.append(litert_run(model, feeds, resolvers))
            except BaseException as e:  # noqa: BLE001 - report, never die on a Python-level error
                results.append(("rejected", "?", f"{type(e).__name__}: {e}", None))
        with os.fdopen(w, "wb") as f:
            f.write(pickle.dumps(results))
        os._exit(0)
    os.close(w)
    chunks, deadline, timed_out = [], time.monotonic() + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    failed = timed_out or os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0
    if failed and len(jobs) > 1:
        return [run_forked([job], timeout / len(jobs))[0] for job in jobs]
    if timed_out:
        return [("crashed", "?", f"LiteRT timeout after {timeout:.0f}s", None)]
    if failed:
        what = (
            f"crashed ({_signal_name(os.WTERMSIG(status))})"
            if os.WIFSIGNALED(status)
            else f"exited with status {os.WEXITSTATUS(status)}"
        )
        tail = _stderr_tail(start)
        return [("crashed", "?", f"LiteRT {what}" + (f": {tail}" if tail else ""), None)]
    return pickle.loads(b"".join(chunks))


def worker_main() -> None:
    """Serve run_forked over stdin/stdout: 8-byte length + pickle each way. LiteRT's own prints go to stderr."""
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import ai_edge_litert.interpreter  # noqa: F401  (once, before forking: each fork then starts warm)

    inp = sys.stdin.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        jobs = pickle.loads(inp.read(struct.unpack("<Q", head)[0]))
        data = pickle.dumps(run_forked(jobs, CASE_TIMEOUT) if jobs else [])
        proto.write(struct.pack("<Q", len(data)) + data)
        proto.flush()
