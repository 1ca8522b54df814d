"""Stopping a running invoke (``Interpreter.cancel()``, ``invoke(timeout=...)``) and refusing concurrent use.

TFLite's C++ ``Interpreter::Cancel()`` clears a flag that ``Subgraph::Invoke`` tests before every node and
that a WHILE kernel's loop reaches through its subgraphs; the invoke then returns ``kTfLiteCancelled``. Here
the same effect costs nothing in the unprofiled node loop: ``cancel()`` swaps, in place, every prepared step
of every subgraph for a step that raises ``CancelledError`` (a list item assignment is atomic under the GIL,
and the running ``for`` loop reads its list at each next node). WHILE additionally tests the flag once per
iteration, so a loop whose subgraphs have no nodes stops too. When the invoke ends, the steps are restored and
the interpreter is usable as before. A cancel with no invoke running does nothing (as in TFLite: it never
affects a later invoke). There is no iteration cap by default, as in TFLite: a loop whose condition never
becomes false runs until cancelled or its deadline passes.

``Guard`` also refuses a second thread entering ``invoke``/``set_tensor``/``get_tensor``/... of the same
interpreter while one is inside (a non-blocking lock: ~0.1 us per call); several interpreters in several
threads are independent.
"""

from __future__ import annotations

import functools
import threading

from ..errors import CancelledError, ConcurrentUseError, DeadlineExceededError


class _Raise:
    """A step standing in for a node of a cancelled invoke."""

    def __init__(self, error: type[CancelledError]):
        self.error = error

    def __call__(self, inputs, outputs):
        if self.error is DeadlineExceededError:
            raise DeadlineExceededError("Invoke cancelled: the deadline (invoke(timeout=...)) passed.")
        raise CancelledError("Invoke cancelled (Interpreter.cancel()).")


class Guard:
    """Per-interpreter state: who is inside it, and whether its running invoke was cancelled."""

    def __init__(self, interpreter):
        self._interpreter = interpreter
        self._busy = threading.Lock()  # held by the one thread inside a guarded method
        self.owner: int | None = None  # that thread's id
        self._state = threading.Lock()  # orders cancel() against the start and end of an invoke
        self._invoke = 0  # number of the running invoke, 0 when none
        self._count = 0
        self._saved: list[tuple[list, list]] | None = None
        #: read by WHILE once per iteration: None, or the error class to raise
        self.requested: type[CancelledError] | None = None

    def begin(self, timeout: float | None = None):
        """Mark an invoke running (cancellable), with an optional deadline in seconds; returns the token
        ``end`` takes."""
        with self._state:
            self._count += 1
            number = self._invoke = self._count
            self.requested = None
        if timeout is None:
            return None
        timer = threading.Timer(timeout, self.cancel, kwargs={"invoke": number, "error": DeadlineExceededError})
        timer.daemon = True
        timer.start()
        return timer

    def end(self, timer) -> None:
        """The invoke is over: restore any swapped steps."""
        if timer is not None:
            timer.cancel()
        with self._state:
            self._invoke = 0
            self.requested = None
            if self._saved is not None:
                for steps, original in self._saved:
                    steps[:] = original
                self._saved = None

    def cancel(self, invoke: int | None = None, error: type[CancelledError] = CancelledError) -> bool:
        """Stop the running invoke (``invoke``: only if it is that one). True if one was running."""
        with self._state:
            if not self._invoke or (invoke is not None and invoke != self._invoke) or self._saved is not None:
                return bool(self._invoke) and self._saved is not None
            self.requested = error
            stop = _Raise(error)
            saved = []
            for sub in self._interpreter._subgraphs:
                if sub is None:
                    continue
                for steps, make in ((getattr(sub, "steps", None), lambda s: (stop, s[1], s[2])),
                                    (getattr(sub, "steps_nodes", None), lambda s: (s[0], stop))):
                    if steps:
                        saved.append((steps, list(steps)))
                        steps[:] = [make(s) for s in steps]
            self._saved = saved
            return True


def check_cancelled(guard: Guard | None) -> None:
    """For loops (WHILE): raise the requested error, if any. One attribute read when nothing is requested."""
    if guard is not None and guard.requested is not None:
        _Raise(guard.requested)(None, None)


def exclusive(method):
    """Decorate an Interpreter method: a second thread entering the same interpreter meanwhile gets a
    ConcurrentUseError (a non-blocking lock, ~0.1 us)."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        guard = self._guard
        busy = guard._busy
        if not busy.acquire(False):
            if guard.owner == threading.get_ident():  # re-entered from the same thread (a callback, a delegate)
                return method(self, *args, **kwargs)
            raise ConcurrentUseError(
                f"{name}() called while another thread is inside this Interpreter (invoke, set_tensor, get_tensor, "
                "...). An Interpreter is not thread-safe: use one Interpreter per thread, or a lock.")
        guard.owner = threading.get_ident()
        try:
            return method(self, *args, **kwargs)
        finally:
            guard.owner = None
            busy.release()

    return wrapper
