"""Read and write .tflite flatbuffers as plain Python dataclasses."""

from .model import (
    Buffer,
    BuiltinOperator,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    Options,
    QuantizationParameters,
    SignatureDef,
    SparsityParameters,
    Subgraph,
    Tensor,
    TensorMap,
)
from .reader import read_model
from .writer import ModelBuilder, write_model

__all__ = [
    "Buffer", "BuiltinOperator", "Metadata", "Model", "ModelBuilder", "Operator", "OperatorCode", "Options",
    "QuantizationParameters", "SignatureDef", "SparsityParameters", "Subgraph", "Tensor", "TensorMap",
    "read_model", "write_model",
]
