"""``litert_py.verify``: find, layer by layer, where a quantized model loses accuracy (``tflite-verify``).

>>> from litert_py.verify import verify
>>> report = verify("model_int8.tflite", "model_float.tflite", samples=20)   # pair mode
>>> report = verify("model_int8.tflite")                                      # single: op by op in float
>>> print(report.table()); report.suggest_float(3); report.to_json()
>>> report = verify("model_int8.tflite", samples=1000, workers=4)             # or ray_address="auto"

See ``run`` for the three modes, ``parallel`` for ``workers`` / ``ray_address``, ``metrics`` for the metrics,
``samples`` for the sample formats.
"""

from __future__ import annotations

from .debug import verify_debug
from .metrics import METRICS, Accumulator
from .pair import verify_pair
from .report import Report
from .run import VerifyError, verify
from .single import verify_single

__all__ = ["METRICS", "Accumulator", "Report", "VerifyError", "verify", "verify_debug", "verify_pair", "verify_single"]
