"""Kernels, one module per op family. Importing this package registers them all (explicitly, no scanning)."""

from . import registry  # noqa: F401
from . import fully_connected  # noqa: F401
