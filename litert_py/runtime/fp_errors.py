"""Numpy's floating-point error reports off for the length of an invoke, at a tenth of ``np.errstate``'s cost.

Kernels compute inf and NaN as C++ does (an overflow, 0/0), and that is the model's business: an invoke runs
with numpy's floating-point errors ignored, as ``with np.errstate(all="ignore")`` would. That context manager
costs ~0.9 us per invoke on numpy 2 (it builds its error-state object anew on each entry), a visible share of a
tiny model's invoke (tflite_micro's sine model: ~7 us in all).

numpy 2 keeps the error state in a ``contextvars.ContextVar`` (``numpy._core._ufunc_config``, what
``np.errstate.__enter__`` sets). ``quiet()`` sets that variable to an all-"ignore" state derived from the
caller's current one (so the caller's ``bufsize`` and ``seterrcall`` callback carry over, as with
``np.errstate``) and caches it while the caller's state stays the same object; ``restore(token)`` resets it.
With a numpy that lacks this (1.x), both fall back to ``np.errstate`` itself. tests/runtime/test_fp_errors.py
checks that no warning escapes and that the caller's state is back afterwards, on whichever numpy is installed.
"""

from __future__ import annotations

import numpy as np

try:  # numpy >= 2.0
    from numpy._core._ufunc_config import _extobj_contextvar as _state
    from numpy._core._ufunc_config import _make_extobj
except ImportError:  # numpy 1.x: the thread-local error mask of np.seterr, through np.errstate
    _state = None

# (the caller's state object, its all-"ignore" derivative), replaced as one tuple so threads never mix the two
_cached: tuple = (None, None)


if _state is not None:

    def quiet(_get=_state.get, _set=_state.set):  # bound once: two attribute reads less per invoke
        """Ignore floating-point errors until ``restore(token)``; returns the token."""
        global _cached
        base = _get()
        cached = _cached
        if cached[0] is not base:
            if base is cached[1]:  # nested in our own quiet state (CALL_ONCE invoking a subgraph): keep the cache
                return _set(base)
            cached = _cached = (base, _make_extobj(all="ignore"))
        return _set(cached[1])

    restore = _state.reset

else:

    def quiet():
        """Ignore floating-point errors until ``restore(token)``; returns the token."""
        token = np.errstate(all="ignore")
        token.__enter__()
        return token

    def restore(token) -> None:
        """Put back the floating-point error handling that ``quiet()`` replaced."""
        token.__exit__(None, None, None)
