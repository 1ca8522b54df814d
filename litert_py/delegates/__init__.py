"""Delegate interface: a backend claims node subsets of a graph and runs them itself.

A delegate is any object with ``apply(interpreter)``. It is called once by the Interpreter constructor
with ``experimental_delegates=[...]``; a real backend replaces the nodes it claims with prepared ops of its
own (the invoke loop does not special-case them).
"""

from __future__ import annotations

import importlib


class Delegate:
    """Base class for Python delegates. Subclasses override ``apply``."""

    def __init__(self, options: dict | None = None):
        self.options = dict(options or {})

    def apply(self, interpreter) -> None:  # pragma: no cover - the base claims nothing
        return None


def load_delegate(library, options=None) -> Delegate:
    """Load a delegate. tf.lite loads a shared library; litert_py loads a Python module that defines
    ``create_delegate(options) -> Delegate``. Failure raises ValueError as tf.lite does."""
    try:
        module = importlib.import_module(str(library))
        return module.create_delegate(dict(options or {}))
    except Exception as e:
        raise ValueError(f"Failed to load delegate from {library}\n{e}") from None
