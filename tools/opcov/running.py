"""Running the op dashboard's cases: LiteRT in a child process (``LiteRTWorker``), litert_py here; comparing and
classifying each case and combining a path's cases into a cell."""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.compare import mismatch

from .cases import COLUMNS, PATHS, RECIPES, Case, P
from .litert_side import CASE_TIMEOUT, OPT, REF, _run_interpreter

#: The entry point: started with ``--worker``, it serves LiteRT runs (see litert_side.worker_main)
ENTRY_POINT = Path(__file__).resolve().parents[1] / "op_coverage.py"


class LiteRTWorker:
    """The child process serving LiteRT runs (each case in a fork of it); restarted if it dies itself."""

    def __init__(self, timeout: float = CASE_TIMEOUT):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.crashes: list[str] = []

    def _start(self) -> None:
        self.err = tempfile.TemporaryFile()
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, str(ENTRY_POINT), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            env=env,
        )

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.err.close()
            self.proc = None

    def _read(self, n: int, deadline: float) -> bytes:
        buf = b""
        fd = self.proc.stdout.fileno()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def run_batch(self, jobs: Sequence[tuple], whats: Sequence[str]) -> list[tuple]:
        """LiteRT's results for (model, feeds, resolvers) jobs: see ``litert_run``; a crash gives
        ("crashed", _, message, None) for the job that caused it."""
        if self.proc is None:
            self._start()
        data = pickle.dumps([(m, f, tuple(r)) for m, f, r in jobs])
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
            deadline = time.monotonic() + 2 * self.timeout * len(jobs) + 10  # the worker enforces the real limit
            n = struct.unpack("<Q", self._read(8, deadline))[0]
            results = pickle.loads(self._read(n, deadline))
        except (TimeoutError, EOFError, BrokenPipeError):  # the worker itself died: start a new one
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.err.close()
            self.proc = None
            results = [("crashed", "?", "LiteRT worker died", None)] * len(jobs)
        for result, what in zip(results, whats):
            if result[0] == "crashed":  # the stderr detail varies between runs: not in the doc
                self.crashes.append(f"{what}: {result[2].split(':')[0]}")
        return results

    def run(self, model: bytes, feeds, what: str = "", resolvers: tuple[str, ...] = (REF, OPT)) -> tuple:
        return self.run_batch([(model, feeds, resolvers)], [what])[0]


class _Timeout(BaseException):  # not an Exception: a kernel's ``except Exception`` must not swallow it
    pass


def _alarm(signum, frame):
    raise _Timeout


def ours_run(model: bytes, feeds, timeout: float = CASE_TIMEOUT) -> tuple:
    """("ok", outputs) or ("error", message) from litert_py, in this process, with a time limit."""
    from litert_py import Interpreter

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return "ok", _run_interpreter(Interpreter(model_content=model, num_threads=1), feeds)
    except _Timeout:
        return "error", f"timeout after {timeout:.0f}s"
    except Exception as e:  # any failure of ours is a coverage finding, not a tool failure
        return "error", f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def compare(ours: list[np.ndarray], theirs: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """None when equal; else a one-line difference for the notes: tests/compare.py's rule (the tests' comparator;
    integers exactly, floats within atol + rtol * max|reference|, NaN and infinities where the reference has them)."""
    return mismatch(ours, theirs, rtol=rtol, atol=atol, where=False)


@dataclass
class CaseResult:
    status: str  # yes | missing | differs | n/a | beyond
    note: str = ""
    resolver: str = ""
    label: str = ""
    ref_vs_opt: str = ""  # how LiteRT's optimized kernels differ from its reference ones, if they do


@dataclass
class Cell:
    status: str  # yes | missing | differs | n/a | beyond | untested
    notes: list[tuple[str, str]] = field(default_factory=list)  # (reason, variant label)
    resolvers: set[str] = field(default_factory=set)
    ref_vs_opt: list[tuple[str, str]] = field(default_factory=list)  # (difference, variant label)

    @property
    def text(self) -> str:
        return "missing (differs)" if self.status == "differs" else self.status


def _first_line(msg: str, n: int = 160) -> str:
    """A short, stable reason: the first line, without LiteRT's "Node number ..." tail (unless that is all)."""
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    short = re.sub(r"\s*Node number \d+ \(.*$", "", text)
    text = short if short.rstrip(": ") not in ("RuntimeError", "ValueError", "LiteRT") else text
    return text if len(text) <= n else text[: n - 3] + "..."


def classify(c: Case, feeds, litert: tuple) -> CaseResult:
    """One case's status from LiteRT's result and litert_py's run on the same feeds."""
    kind, resolver, payload, alt = litert
    mine = ours_run(c.model, feeds)
    if kind != "ok":
        if mine[0] == "ok":
            return CaseResult("beyond", f"LiteRT: {_first_line(payload)}")
        return CaseResult("n/a", f"LiteRT: {_first_line(payload)}")
    ref_vs_opt = ""
    if alt is not None:
        ref_vs_opt = next((w for w in (compare(a, r, c.rtol, c.atol) for r, a in zip(payload, alt)) if w), "")
    if mine[0] != "ok":
        return CaseResult("missing", _first_line(mine[1]), resolver, ref_vs_opt=ref_vs_opt)
    for theirs, ours in zip(payload, mine[1]):
        why = compare(ours, theirs, c.rtol, c.atol)
        if why:
            return CaseResult("differs", why, resolver, ref_vs_opt=ref_vs_opt)
    return CaseResult("yes", "", resolver, ref_vs_opt=ref_vs_opt)


def combine(results: list[CaseResult]) -> Cell:
    """All models of a path: yes when every one LiteRT runs is yes; n/a / beyond when LiteRT runs none."""
    supported = [r for r in results if r.status in ("yes", "missing", "differs")]
    cell = Cell("n/a")
    if supported:
        bad = [r for r in supported if r.status != "yes"]
        cell.status = "yes" if not bad else ("missing" if any(r.status == "missing" for r in bad) else "differs")
        cell.notes = [(r.note, r.label) for r in bad]
        cell.resolvers = {r.resolver for r in supported}
        cell.ref_vs_opt = [(r.ref_vs_opt, r.label) for r in supported if r.ref_vs_opt]
    else:
        cell.status = "beyond" if any(r.status == "beyond" for r in results) else "n/a"
        cell.notes = [(r.note, r.label) for r in results]
    return cell


_RANK = {"yes": 0, "differs": 1, "missing": 2, "beyond": 3, "n/a": 4, "untested": 5}


# (op, path) pairs whose BUILTIN_REF kernel in ai-edge-litert 2.3.0 gives garbage: compared with the optimized
# kernels instead (litert_py should compute the right numbers, not reproduce these).
REF_BROKEN = {
    ("SUM", "int8"): "BUILTIN_REF returns -1 in every element (e.g. [-1 -1 -1] where the sum is [-13 -3 36])",
    ("SUM", "int16"): "BUILTIN_REF returns values like [-1 255 0] where the sum is [-545 -280 1640]",
    ("LOCAL_RESPONSE_NORMALIZATION", "float32"): "BUILTIN_REF sums the window [c - r, c + r), not TensorFlow's "
    "[c - r, c + r] (0.5625 where TensorFlow and the default kernels give 0.442)",
}


#: Paths LiteRT "runs" only by reading or writing outside its buffers (garbage or a crash): not a supported
#: path, so n/a; litert_py refuses them at prepare. Each is pinned by a test in tests/ops.
UNSAFE_IN_LITERT = {
    ("MATRIX_DIAG", "bool"): "LiteRT sends bool through its float32 branch and reads/writes out of bounds",
    ("MATRIX_SET_DIAG", "bool"): "LiteRT sends bool through its float32 branch and reads/writes out of bounds",
}


def build_cases(op: str, path: str) -> list[Case] | Cell:
    """The models of one (op, path), or the cell itself when there is nothing to run."""
    if (op, path) in UNSAFE_IN_LITERT:
        return Cell("n/a", [("unsafe in LiteRT", UNSAFE_IN_LITERT[op, path])])
    r = RECIPES.get(op)
    if r is None:
        return Cell("untested")
    if path not in r.paths:
        return Cell("n/a", [("no such path", "")]) if path in r.not_applicable else Cell("untested")
    cases = r.fn(P(op, path))
    return [cases] if isinstance(cases, Case) else list(cases)


def evaluate_path(op: str, path: str, worker: LiteRTWorker, log=None) -> Cell:
    """Run every model of one (op, path) in both runtimes and classify the cell."""
    try:  # a broken recipe must not stop the run; it is reported and the cell stays untested
        cases = build_cases(op, path)
        if isinstance(cases, Cell):
            return cases
        if (op, path) in REF_BROKEN:
            for c in cases:
                c.resolvers = (OPT,)
        feeds = [c.feeds(zlib.crc32(f"{op}/{path}/{k}".encode())) for k, c in enumerate(cases)]
        whats = [f"{op} {path}" + (f" [{c.label}]" if c.label else "") for c in cases]
        theirs = worker.run_batch([(c.model, f, c.resolvers or (REF, OPT)) for c, f in zip(cases, feeds)], whats)
        results = []
        for c, f, t in zip(cases, feeds, theirs):
            res = classify(c, f, t)
            res.label = c.label
            results.append(res)
    except Exception as e:
        if log:
            log(f"{op} {path}: recipe error: {type(e).__name__}: {e}")
        return Cell("untested", [(f"recipe error: {type(e).__name__}: {e}", "")])
    return combine(results) if results else Cell("n/a", [("no such path", "")])


def evaluate_op(op: str, worker: LiteRTWorker, log=None) -> dict[str, Cell]:
    """The cells of one row, by column (``int32/int64``: the better of the two)."""
    cells = {path: evaluate_path(op, path, worker, log) for path in PATHS}
    i32, i64 = cells.pop("int32"), cells.pop("int64")
    cells["int32/int64"] = i32 if _RANK[i32.status] <= _RANK[i64.status] else i64
    return {col: cells[col] for col in COLUMNS}
