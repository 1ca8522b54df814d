"""Exceptions raised by litert_py.

Each subclasses the builtin type tf.lite raises in the same situation, so code written against
``tf.lite.Interpreter`` that catches ``ValueError`` or ``RuntimeError`` keeps working.
"""

from __future__ import annotations


class LiteRTError(Exception):
    """Base class of every litert_py error."""


class InvalidModelError(LiteRTError, ValueError):
    """The model bytes are not a valid .tflite flatbuffer, or an index/size inside it is out of range."""


class UnsupportedOpError(LiteRTError, ValueError, NotImplementedError):
    """One or more operators of the model have no kernel. The message lists all of them."""

    def __init__(self, message: str, ops: list[str] | None = None):
        super().__init__(message)
        self.ops = list(ops or [])


class PrepareError(LiteRTError, RuntimeError):
    """A kernel rejected its node at prepare time (types, shapes or options LiteRT also rejects)."""


class InvokeError(LiteRTError, RuntimeError):
    """A kernel failed while running (e.g. an index out of range in the data)."""


#: The attribute a step standing for several nodes (a fused step) sets on an exception to name the node that
#: failed; the runtime's "Node number N (...) failed to invoke." then names that node.
FAILED_NODE = "litert_py_failed_node"


class InputValueError(InvokeError, ValueError):
    """A kernel refused the values of its inputs at invoke: a runtime shape asking for a negative dimension, a
    TILE multiplier below 0, an integer raised to a negative power, ... (LiteRT's kernels fail the invoke the
    same way, with the message given where LiteRT has one). Still a ValueError for code that catches that."""


class BatchError(LiteRTError, RuntimeError):
    """A sample of a batch run (litert_py.batch, litert_py.ray_data) failed. ``index`` is its position in the
    input; the message names it and the original error's type and message."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index

    def __reduce__(self):  # crosses process boundaries with its index
        return (type(self), (str(self), self.index))


class ResourceLimitError(PrepareError, InvokeError):
    """An allocation the model or its input values ask for exceeds the memory budget
    (``LITERT_PY_MAX_ARENA_BYTES``). Raised before the memory is taken; at ``allocate_tensors`` (or
    ``Interpreter()`` for constants) as well as during ``invoke`` for shapes that come from runtime values, so
    it subclasses both PrepareError and InvokeError. The interpreter stays usable."""


class CancelledError(InvokeError):
    """``Interpreter.cancel()`` stopped the running invoke (TFLite's kTfLiteCancelled). The interpreter stays
    usable; outputs of the cancelled invoke are undefined."""


class DeadlineExceededError(CancelledError, TimeoutError):
    """``invoke(timeout=...)`` ran past its deadline and was cancelled."""


class ConcurrentUseError(LiteRTError, RuntimeError):
    """A second thread called into an Interpreter (invoke, set_tensor, get_tensor, allocate_tensors, ...)
    while another thread was inside it. One Interpreter per thread is fine."""
