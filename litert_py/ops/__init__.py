"""Kernels, one module per op family. Importing this package registers them all (explicitly, no scanning)."""

from . import (  # noqa: F401
    activations,
    batch_matmul,
    cast,
    comparison,
    control_flow,
    conv,
    elementwise,
    fully_connected,
    hashtable,
    movement,
    pooling,
    quantize,
    reduce,
    registry,
    resize,
    resource,
    rnn,
    shape,
    svdf,
    unary,
)
