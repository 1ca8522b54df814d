"""Plain, immutable Python objects for everything a .tflite model carries.

Field names are those of schema.fbs (snake_case). Small metadata (shapes, indices, scales) is held in
tuples so objects compare with ``==``; constant data is a read-only numpy uint8 view of the model bytes.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

# Members of LiteRT's current schema.fbs that the `tflite` package (2.18) does not know yet.
_NEWER_OPS = {"STABLEHLO_CBRT": 208, "STABLEHLO_CASE": 209}
_NEWER_OPTIONS2 = {23: "StablehloCaseOptions"}

BuiltinOperator = enum.IntEnum(
    "BuiltinOperator",
    {k: v for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}
    | {k: v for k, v in _NEWER_OPS.items() if not hasattr(tflite.BuiltinOperator, k)},
)
BuiltinOperator.__doc__ = "Builtin operator codes, numbered and spelled as in schema.fbs."

ActivationFunctionType = enum.IntEnum(
    "ActivationFunctionType",
    {k: v for k, v in vars(tflite.ActivationFunctionType).items() if not k.startswith("_")},
)
Padding = enum.IntEnum("Padding", {k: v for k, v in vars(tflite.Padding).items() if not k.startswith("_")})

#: BuiltinOptions union member number -> table name, and the same for BuiltinOptions2.
OPTIONS_NAMES: dict[int, str] = {
    v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_") and k != "NONE"
}
OPTIONS2_NAMES: dict[int, str] = {
    v: k for k, v in vars(tflite.BuiltinOptions2).items() if not k.startswith("_") and k != "NONE"
}
for _num, _name in _NEWER_OPTIONS2.items():
    OPTIONS2_NAMES.setdefault(_num, _name)

# Ops whose options table is not named after the op.
_OPTIONS_EXCEPTIONS = {
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions",
    "RANDOM_UNIFORM": "RandomOptions",
    "MULTINOMIAL": "RandomOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
}


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _options_table_for_ops() -> dict[int, tuple[int, str]]:
    """BuiltinOperator -> (1 or 2 for BuiltinOptions / BuiltinOptions2, table name)."""
    tables = {_norm(n[: -len("Options")]): (1, n) for n in OPTIONS_NAMES.values()}
    tables.update({_norm(n[: -len("Options")]): (2, n) for n in OPTIONS2_NAMES.values()})
    by_name = {n: (1, n) for n in OPTIONS_NAMES.values()} | {n: (2, n) for n in OPTIONS2_NAMES.values()}
    out = {}
    for op in BuiltinOperator:
        if op.name in _OPTIONS_EXCEPTIONS:
            out[op] = by_name[_OPTIONS_EXCEPTIONS[op.name]]
        elif _norm(op.name) in tables:
            out[op] = tables[_norm(op.name)]
    return out


#: BuiltinOperator -> (union 1 or 2, options table name) for ops that have an options table.
OP_OPTIONS: dict[int, tuple[int, str]] = _options_table_for_ops()


def snake_case(camel: str) -> str:
    """'DilationWFactor' -> 'dilation_w_factor' (the generated accessors' names back to schema.fbs names)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", camel).lower()


class Options(dict):
    """A decoded options table: a dict of schema field name -> value, also readable as attributes.

    ``table`` is the schema table name (``'Conv2DOptions'``). Vectors are tuples; enums are ints.
    """

    def __init__(self, table: str, fields: dict[str, Any] | None = None):
        super().__init__(fields or {})
        self.table = table

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{self.table} has no field {name!r}") from None

    def __repr__(self) -> str:
        return f"{self.table}({', '.join(f'{k}={v!r}' for k, v in self.items())})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and self.table == other.table and dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class BlockwiseQuantization:
    """QuantizationDetails member 2: scales and zero points live in other tensors of the subgraph."""

    scales: int = 0  # tensor index of the scales
    zero_points: int = -1  # tensor index of the zero points; -1: all zero
    block_size: int = 0


@dataclass(frozen=True)
class MultiAxisQuantization:
    """QuantizationDetails member 3: like BlockwiseQuantization, over several quantized dimensions."""

    scales: int = 0
    zero_points: int = -1
    block_size: int = 0  # 0 for per-channel
    quantized_dimensions: tuple[int, ...] = ()


#: QuantizationDetails union member numbers (schema.fbs).
CUSTOM_QUANTIZATION, BLOCKWISE_QUANTIZATION, MULTI_AXIS_QUANTIZATION = 1, 2, 3


@dataclass(frozen=True)
class QuantizationParameters:
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()
    details_type: int = 0  # QuantizationDetails member: 1 custom, 2 blockwise, 3 multi-axis
    custom_details: bytes = b""  # CustomQuantization.custom when details_type == 1
    details: BlockwiseQuantization | MultiAxisQuantization | None = None  # details_type 2 or 3

    @property
    def is_quantized(self) -> bool:
        return len(self.scale) > 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


@dataclass(frozen=True)
class DimensionMetadata:
    format: int = 0  # 0 DENSE, 1 SPARSE_CSR
    dense_size: int = 0
    array_segments: tuple[int, ...] = ()
    array_indices: tuple[int, ...] = ()
    array_segments_type: int = 0  # SparseIndexVector union member (1 int32, 2 uint16, 3 uint8)
    array_indices_type: int = 0


@dataclass(frozen=True)
class SparsityParameters:
    traversal_order: tuple[int, ...] = ()
    block_map: tuple[int, ...] = ()
    dim_metadata: tuple[DimensionMetadata, ...] = ()


@dataclass(frozen=True)
class VariantSubType:
    """The element type of a VARIANT tensor (e.g. a TensorList)."""

    shape: tuple[int, ...] | None = None
    type: int = 0
    has_rank: bool = False


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    type: int
    buffer: int = 0
    quantization: QuantizationParameters | None = None
    is_variable: bool = False
    sparsity: SparsityParameters | None = None
    shape_signature: tuple[int, ...] | None = None
    has_rank: bool = False
    variant_tensors: tuple[VariantSubType, ...] = ()
    external_buffer: int = 0  # id of an ExternalBuffer holding the data in another file; 0: none


@dataclass(frozen=True)
class OperatorCode:
    builtin_code: int
    custom_code: str | None = None
    version: int = 1
    deprecated_builtin_code: int | None = None

    @property
    def name(self) -> str:
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return self.custom_code or "UnknownCustomOp"
        try:
            return BuiltinOperator(self.builtin_code).name
        except ValueError:
            return f"BUILTIN_{self.builtin_code}"


@dataclass(frozen=True)
class Operator:
    opcode_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    builtin_options: Options | None = None
    builtin_options2: Options | None = None
    custom_options: bytes = b""
    custom_options_format: int = 0
    mutating_variable_inputs: tuple[bool, ...] = ()
    intermediates: tuple[int, ...] = ()
    # Where `custom_options` were stored after the flatbuffer (models over 2 GB), as read; the reader resolves
    # them into `custom_options`, and the writer chooses its own layout, so they take no part in equality.
    large_custom_options_offset: int = field(default=0, compare=False)
    large_custom_options_size: int = field(default=0, compare=False)
    debug_metadata_index: int = -1


@dataclass(frozen=True)
class Subgraph:
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[Operator, ...]
    name: str = ""
    debug_metadata_index: int = -1


@dataclass(frozen=True, eq=False)
class Buffer:
    """Constant bytes. ``data`` is a read-only uint8 view (empty when the buffer holds nothing).

    ``offset``/``size`` are the schema's fields for data stored after the flatbuffer (models over 2 GB), as
    read; the reader resolves them into ``data`` too. Equality compares ``data`` only: where the bytes sit
    in the file is the writer's choice.
    """

    data: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    offset: int = 0
    size: int = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and np.array_equal(self.data, other.data)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class ExternalBufferGroup:
    """A file (or URI) that holds external buffers."""

    name: str = ""


@dataclass(frozen=True)
class ExternalBuffer:
    """Immutable tensor data in another file: ``length`` bytes at ``offset`` of group ``group``'s file."""

    id: int = 0
    group: int = 0
    offset: int = 0
    length: int = 0
    packing: str = ""


@dataclass(frozen=True)
class Metadata:
    name: str
    buffer: int


@dataclass(frozen=True)
class TensorMap:
    name: str
    tensor_index: int


@dataclass(frozen=True)
class SignatureDef:
    inputs: tuple[TensorMap, ...]
    outputs: tuple[TensorMap, ...]
    signature_key: str
    subgraph_index: int = 0


@dataclass(frozen=True)
class Model:
    version: int
    operator_codes: tuple[OperatorCode, ...]
    subgraphs: tuple[Subgraph, ...]
    buffers: tuple[Buffer, ...]
    description: str = ""
    metadata_buffer: tuple[int, ...] = ()
    metadata: tuple[Metadata, ...] = ()
    signature_defs: tuple[SignatureDef, ...] = ()
    external_buffer_groups: tuple[ExternalBufferGroup, ...] = ()
    external_buffers: tuple[ExternalBuffer, ...] = ()
