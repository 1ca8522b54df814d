"""litert_py: a pure-Python (numpy) interpreter for TensorFlow Lite / LiteRT .tflite models.

from litert_py import Interpreter      # drop-in for tf.lite.Interpreter / ai_edge_litert's
"""

from __future__ import annotations

from . import ops as _ops  # noqa: F401  (registers the kernels)
from .delegates import Delegate, load_delegate
from .errors import InvalidModelError, InvokeError, LiteRTError, PrepareError, UnsupportedOpError
from .ops.registry import register, register_custom_op
from .runtime.interpreter import Interpreter, InterpreterWithCustomOps, OpResolverType
from .runtime.signature import SignatureRunner

__version__ = "0.1.0"

__all__ = [
    "Delegate",
    "Interpreter",
    "InterpreterWithCustomOps",
    "InvalidModelError",
    "InvokeError",
    "LiteRTError",
    "OpResolverType",
    "PrepareError",
    "SignatureRunner",
    "UnsupportedOpError",
    "load_delegate",
    "register",
    "register_custom_op",
]
