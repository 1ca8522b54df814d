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


def _raise(error: type[CancelledError]) -> None:
    if error is DeadlineExceededError:
        raise DeadlineExceededError("Invoke cancelled: the deadline (invoke(timeout=...)) passed.")
    raise CancelledError("Invoke cancelled (Interpreter.cancel()).")


class _Stop:
    """A step standing in for a node of a cancelled invoke. Should a later invoke meet it before the swap is
    undone (a cancel racing with the end of its invoke), it runs the node's own op instead."""

    __slots__ = ("guard", "invoke", "error", "op")

    def __init__(self, guard: Guard, invoke: int, error: type[CancelledError], op):
        self.guard, self.invoke, self.error, self.op = guard, invoke, error, op

    def __call__(self, inputs, outputs):
        if self.guard._invoke != self.invoke:
            if self.op is None:  # a deferred node of the dynamic loop: nothing to run in its place
                raise CancelledError("Invoke cancelled while the previous invoke ended; invoke again.")
            return self.op(inputs, outputs)
        _raise(self.error)


class Guard:
    """Per-interpreter state: who is inside it, and whether its running invoke was cancelled.

    ``begin``/``end`` run on the invoking thread (which holds the interpreter) without a lock; ``cancel`` takes
    ``_state`` and, after swapping the steps, checks the invoke it swapped for is still the running one (else
    it restores them itself), so a swap never outlives its invoke."""

    def __init__(self, interpreter):
        self._interpreter = interpreter
        # held by the one thread inside a guarded method; re-entrant, so that a callback on that thread (a
        # custom op, a delegate) may call back into the interpreter
        self._busy = threading.RLock()
        self._state = threading.Lock()  # orders cancel() calls and the restoring of swapped steps
        self._invoke = 0  # number of the running invoke, 0 when none
        self._count = 0
        self._saved: list[tuple[list, list]] | None = None
        #: read by WHILE once per iteration: None, or (invoke number, error class)
        self.requested: tuple[int, type[CancelledError]] | None = None

    def begin(self, timeout: float | None = None):
        """Mark an invoke running (cancellable), with an optional deadline in seconds; returns the token
        ``end`` takes. Interpreter.invoke without a deadline does the same inline (numbers the invoke, and at its
        end clears ``_invoke`` and ``requested``, calling ``end`` only to undo a swap): keep the two in step. The
        inline form skips the reset of ``requested`` here: a request left by a cancel racing the previous
        invoke's end names that invoke's number, and check_cancelled acts only on the running one's."""
        self.requested = None
        self._count += 1
        number = self._invoke = self._count
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
        self._invoke = 0
        self.requested = None
        if self._saved is not None:
            with self._state:
                self._restore()

    def _restore(self) -> None:
        if self._saved is not None:
            for steps, original in self._saved:
                steps[:] = original
            self._saved = None

    def check_cancelled(self) -> None:
        """For loops (WHILE, once per iteration): raise the requested error if it is for the running invoke."""
        check_cancelled(self)

    def cancel(self, invoke: int | None = None, error: type[CancelledError] = CancelledError) -> bool:
        """Stop the running invoke (``invoke``: only if it is that one). True if one was running."""
        with self._state:
            number = self._invoke
            if not number or (invoke is not None and invoke != number):
                return False
            if self._saved is not None:  # already cancelled
                return True
            self.requested = (number, error)
            saved = []
            for sub in self._interpreter._subgraphs:
                if sub is None:
                    continue
                steps = getattr(sub, "steps", None)
                if steps:
                    saved.append((steps, list(steps)))
                    steps[:] = [(_Stop(self, number, error, op), ins, outs) for op, ins, outs in list(steps)]
                nodes = getattr(sub, "steps_nodes", None)
                if nodes:
                    saved.append((nodes, list(nodes)))
                    nodes[:] = [(node, _Stop(self, number, error, op)) for node, op in list(nodes)]
            self._saved = saved
            if self._invoke != number:  # the invoke ended meanwhile (its end() saw no swap): undo it here
                self._restore()
                return False
            return True


def check_cancelled(guard: Guard | None) -> None:
    """For loops (WHILE): raise the requested error if it is for the running invoke."""
    req = guard.requested if guard is not None else None
    if req is not None and req[0] == guard._invoke:
        _raise(req[1])


def concurrent_use_error(name: str) -> ConcurrentUseError:
    """The error for a second thread entering Interpreter method ``name`` while another thread is inside."""
    return ConcurrentUseError(
        f"{name}() called while another thread is inside this Interpreter (invoke, set_tensor, get_tensor, "
        "...). An Interpreter is not thread-safe: use one Interpreter per thread, or a lock."
    )


def exclusive(method):
    """Decorate an Interpreter method: a second thread entering the same interpreter meanwhile gets a
    ConcurrentUseError (a non-blocking re-entrant lock)."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        busy = self._guard._busy
        if not busy.acquire(False):
            raise concurrent_use_error(name)
        try:
            return method(self, *args, **kwargs)
        finally:
            busy.release()

    return wrapper
