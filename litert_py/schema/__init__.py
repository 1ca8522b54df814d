"""Read and write .tflite flatbuffers as plain Python dataclasses."""

from .builder import ModelBuilder
from .model import (
    BlockwiseQuantization,
    Buffer,
    BuiltinOperator,
    DimensionMetadata,
    ExternalBuffer,
    ExternalBufferGroup,
    Metadata,
    Model,
    MultiAxisQuantization,
    Operator,
    OperatorCode,
    Options,
    QuantizationParameters,
    SignatureDef,
    SparsityParameters,
    Subgraph,
    Tensor,
    TensorMap,
    VariantSubType,
)
from .reader import read_model
from .writer import write_model

__all__ = [
    "BlockwiseQuantization",
    "Buffer",
    "BuiltinOperator",
    "DimensionMetadata",
    "ExternalBuffer",
    "ExternalBufferGroup",
    "Metadata",
    "Model",
    "ModelBuilder",
    "MultiAxisQuantization",
    "Operator",
    "OperatorCode",
    "Options",
    "QuantizationParameters",
    "SignatureDef",
    "SparsityParameters",
    "Subgraph",
    "Tensor",
    "TensorMap",
    "VariantSubType",
    "read_model",
    "write_model",
]
