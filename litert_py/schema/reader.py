"""Decode .tflite bytes into the dataclasses of ``schema.model``, validating every index and size.

The `tflite` package's generated accessors are used once, here, and never leak past this module.
They trust the bytes: a corrupt offset makes them raise struct.error/IndexError or return garbage, and a
corrupt vector length could make a loop run for billions of iterations. So every vector length is bounded
by the file size before it is iterated, every exception inside decoding becomes ``InvalidModelError``,
and every cross-reference (tensor, buffer, opcode, subgraph indices; buffer sizes against tensor shapes)
is checked afterwards. Constant data is a read-only numpy view of the model bytes (an mmap for paths).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import tflite

from ..errors import InvalidModelError
from . import dtypes
from .model import (
    OPTIONS2_NAMES,
    OPTIONS_NAMES,
    Buffer,
    BuiltinOperator,
    DimensionMetadata,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    QuantizationParameters,
    SignatureDef,
    SparsityParameters,
    Subgraph,
    Tensor,
    TensorMap,
)
from .tables import decode_options

FILE_IDENTIFIER = b"TFL3"
#: Largest number of elements a tensor may declare. Keeps a hostile shape from asking for exabytes.
MAX_TENSOR_ELEMENTS = 1 << 40


def load_bytes(source) -> tuple[Any, str]:
    """The model bytes of a path (mmap, read-only) or a bytes-like object, and a name for messages."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source, "<model_content>"
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b"", path
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), path
    except OSError as e:
        raise InvalidModelError(f"Could not open '{path}'. ({e.strerror})") from None


def read_model(source) -> Model:
    """Decode a model from a path, bytes, bytearray or memoryview. Raises ``InvalidModelError``."""
    buf, where = load_bytes(source)
    return decode_model(buf, where)


def decode_model(buf, where: str = "<model_content>") -> Model:
    n = len(buf)
    if n < 8:
        raise InvalidModelError(f"The model is not a valid Flatbuffer buffer: {where} has only {n} bytes")
    if bytes(buf[4:8]) != FILE_IDENTIFIER:
        raise InvalidModelError(
            f"The model is not a valid Flatbuffer buffer: {where} lacks the 'TFL3' file identifier"
        )
    try:
        model = _Decoder(buf).model()
    except InvalidModelError:
        raise
    except Exception as e:  # struct.error, IndexError, UnicodeError, ValueError ... from corrupt offsets
        raise InvalidModelError(
            f"The model is not a valid Flatbuffer buffer: {where} is corrupt ({type(e).__name__}: {e})"
        ) from None
    validate(model)
    return model


    return snake_case(camel_name)


class _Decoder:
    def __init__(self, buf):
        self.buf = buf
        self.size = len(buf)
        self.view = np.frombuffer(buf, np.uint8)
        if self.view.flags.writeable:  # bytearray input: keep the model's constants immutable
            self.view = self.view.view()
            self.view.flags.writeable = False

    # -- bounded vectors -------------------------------------------------------------------------
    def length(self, obj, name: str, elem_size: int = 1) -> int:
        n = getattr(obj, name + "Length")()
        if n < 0 or n * elem_size > self.size:
            raise InvalidModelError(f"vector {type(obj).__name__}.{name} claims {n} elements in {self.size} bytes")
        return n

    def items(self, obj, name: str, fn: Callable[[Any], Any]) -> tuple:
        get = getattr(obj, name)
        return tuple(fn(get(j)) for j in range(self.length(obj, name, 4)))

    def ints(self, obj, name: str) -> tuple[int, ...]:
        self.length(obj, name)
        arr = getattr(obj, name + "AsNumpy")()
        return tuple(arr.tolist()) if isinstance(arr, np.ndarray) else ()

    @staticmethod
    def string(raw) -> str:
        return raw.decode("utf-8", "surrogateescape") if raw is not None else ""

    # -- tables ----------------------------------------------------------------------------------
    def model(self) -> Model:
        m = tflite.Model.GetRootAs(self.buf, 0)
        return Model(
            version=m.Version(),
            operator_codes=self.items(m, "OperatorCodes", self.opcode),
            subgraphs=self.items(m, "Subgraphs", self.subgraph),
            buffers=self.items(m, "Buffers", self.buffer),
            description=self.string(m.Description()),
            metadata_buffer=self.ints(m, "MetadataBuffer"),
            metadata=self.items(m, "Metadata", lambda t: Metadata(self.string(t.Name()), t.Buffer())),
            signature_defs=self.items(m, "SignatureDefs", self.signature),
        )

    def opcode(self, c) -> OperatorCode:
        dep, new = c.DeprecatedBuiltinCode(), c.BuiltinCode()
        # TFLite's GetBuiltinCode: codes above 127 live only in `builtin_code`; old files only set the
        # deprecated int8 field, so the larger of the two is the real one.
        return OperatorCode(
            builtin_code=max(dep, new),
            custom_code=self.string(c.CustomCode()) if c.CustomCode() is not None else None,
            version=c.Version(),
            deprecated_builtin_code=dep,
        )

    def subgraph(self, s) -> Subgraph:
        return Subgraph(
            tensors=self.items(s, "Tensors", self.tensor),
            inputs=self.ints(s, "Inputs"),
            outputs=self.ints(s, "Outputs"),
            operators=self.items(s, "Operators", self.operator),
            name=self.string(s.Name()),
            debug_metadata_index=s.DebugMetadataIndex(),
        )

    def tensor(self, t) -> Tensor:
        q = t.Quantization()
        sp = t.Sparsity()
        sig = self.ints(t, "ShapeSignature") if not t.ShapeSignatureIsNone() else None
        variants = self.items(
            t, "VariantTensors", lambda v: (self.ints(v, "Shape") if not v.ShapeIsNone() else None, v.Type())
        )
        return Tensor(
            name=self.string(t.Name()),
            shape=self.ints(t, "Shape"),
            type=t.Type(),
            buffer=t.Buffer(),
            quantization=self.quantization(q) if q is not None else None,
            is_variable=bool(t.IsVariable()),
            sparsity=self.sparsity(sp) if sp is not None else None,
            shape_signature=sig,
            has_rank=bool(t.HasRank()),
            variant_tensors=variants,
        )

    def quantization(self, q) -> QuantizationParameters:
        self.length(q, "Scale", 4)
        scale = q.ScaleAsNumpy()
        details_type, custom = q.DetailsType(), b""
        if details_type == 1 and q.Details() is not None:
            cq = tflite.CustomQuantization()
            cq.Init(q.Details().Bytes, q.Details().Pos)
            self.length(cq, "Custom")
            raw = cq.CustomAsNumpy()
            custom = raw.tobytes() if isinstance(raw, np.ndarray) else b""
        return QuantizationParameters(
            scale=tuple(float(s) for s in scale) if isinstance(scale, np.ndarray) else (),
            zero_point=self.ints(q, "ZeroPoint"),
            quantized_dimension=q.QuantizedDimension(),
            min=tuple(float(v) for v in self.ints(q, "Min")),
            max=tuple(float(v) for v in self.ints(q, "Max")),
            details_type=details_type,
            custom_details=custom,
        )

    def sparsity(self, sp) -> SparsityParameters:
        return SparsityParameters(
            traversal_order=self.ints(sp, "TraversalOrder"),
            block_map=self.ints(sp, "BlockMap"),
            dim_metadata=self.items(sp, "DimMetadata", self.dim_metadata),
        )

    _INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}

    def dim_metadata(self, d) -> DimensionMetadata:
        def index_vector(kind: int, table) -> tuple[int, ...]:
            if kind not in self._INDEX_VECTORS or table is None:
                return ()
            vec = self._INDEX_VECTORS[kind]()
            vec.Init(table.Bytes, table.Pos)
            return self.ints(vec, "Values")

        return DimensionMetadata(
            format=d.Format(),
            dense_size=d.DenseSize(),
            array_segments=index_vector(d.ArraySegmentsType(), d.ArraySegments()),
            array_indices=index_vector(d.ArrayIndicesType(), d.ArrayIndices()),
            array_segments_type=d.ArraySegmentsType(),
            array_indices_type=d.ArrayIndicesType(),
        )

    def operator(self, o) -> Operator:
        custom = b""
        if not o.CustomOptionsIsNone():
            self.length(o, "CustomOptions")
            custom = o.CustomOptionsAsNumpy().tobytes()
        big_off, big_size = o.LargeCustomOptionsOffset(), o.LargeCustomOptionsSize()
        if big_off > 1:
            if big_off + big_size > self.size:
                raise InvalidModelError(
                    f"large custom options at [{big_off}, {big_off + big_size}) exceed the file ({self.size} bytes)"
                )
            custom = bytes(self.view[big_off : big_off + big_size])
        return Operator(
            opcode_index=o.OpcodeIndex(),
            inputs=self.ints(o, "Inputs"),
            outputs=self.ints(o, "Outputs"),
            builtin_options=self.options(o.BuiltinOptionsType(), o.BuiltinOptions(), OPTIONS_NAMES),
            builtin_options2=self.options(o.BuiltinOptions2Type(), o.BuiltinOptions2(), OPTIONS2_NAMES),
            custom_options=custom,
            custom_options_format=o.CustomOptionsFormat(),
            mutating_variable_inputs=tuple(bool(v) for v in self.ints(o, "MutatingVariableInputs")),
            intermediates=self.ints(o, "Intermediates"),
            large_custom_options_offset=big_off,
            large_custom_options_size=big_size,
            debug_metadata_index=o.DebugMetadataIndex(),
        )

    def options(self, kind: int, table, names: dict[int, str]):
        if kind == 0 or table is None:
            return None
        name = names.get(kind)
        if name is None:
            raise InvalidModelError(f"unknown builtin options type {kind}")
        from .tables import table_class

        obj = table_class(name)()
        obj.Init(table.Bytes, table.Pos)
        return decode_options(name, obj)

    def buffer(self, b) -> Buffer:
        offset, size = b.Offset(), b.Size()
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB); offset 1 is a placeholder
            if offset + size > self.size:
                raise InvalidModelError(
                    f"buffer data at [{offset}, {offset + size}) lies outside the file ({self.size} bytes)"
                )
            return Buffer(self.view[offset : offset + size], offset, size)
        n = self.length(b, "Data")
        if n == 0:
            return Buffer(self.view[:0], offset, size)
        start = b._tab.Vector(b._tab.Offset(4))
        if start + n > self.size:
            raise InvalidModelError(f"buffer data at [{start}, {start + n}) lies outside the file ({self.size} bytes)")
        return Buffer(self.view[start : start + n], offset, size)

    def signature(self, s) -> SignatureDef:
        def tmap(t):
            return TensorMap(self.string(t.Name()), t.TensorIndex())

        return SignatureDef(
            inputs=self.items(s, "Inputs", tmap),
            outputs=self.items(s, "Outputs", tmap),
            signature_key=self.string(s.SignatureKey()),
            subgraph_index=s.SubgraphIndex(),
        )


def tensor_num_elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def expected_buffer_bytes(t: Tensor) -> int | None:
    """Bytes a constant buffer of this tensor must hold, or None when it cannot be told from the shape."""
    if t.type in dtypes.OBJECT_TYPES or t.sparsity is not None:
        return None
    n = tensor_num_elements(t.shape)
    if t.type == dtypes.TensorType.INT4:
        return (n + 1) // 2
    try:
        return n * dtypes.itemsize(t.type)
    except ValueError:
        return None


def validate(model: Model) -> None:
    """Check every cross-reference of a decoded model; raise ``InvalidModelError`` naming the first bad one."""
    nbuf, nsub, nops = len(model.buffers), len(model.subgraphs), len(model.operator_codes)
    if nsub == 0:
        raise InvalidModelError("The model has no subgraphs")
    for k, code in enumerate(model.operator_codes):
        if code.builtin_code < 0 or (code.builtin_code not in BuiltinOperator._value2member_map_):
            raise InvalidModelError(f"operator code {k} has unknown builtin code {code.builtin_code}")
        if code.version < 1:
            raise InvalidModelError(f"operator code {k} has version {code.version}")
    for m in model.metadata:
        if not 0 <= m.buffer < nbuf:
            raise InvalidModelError(f"metadata {m.name!r} refers to buffer {m.buffer} of {nbuf}")
    for b in model.metadata_buffer:
        if not 0 <= b < nbuf:
            raise InvalidModelError(f"metadata_buffer refers to buffer {b} of {nbuf}")
    for si, sg in enumerate(model.subgraphs):
        nt = len(sg.tensors)
        where = f"subgraph {si}"
        for ti, t in enumerate(sg.tensors):
            if t.type not in dtypes.TENSOR_TYPE_NAMES:
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) has unknown type {t.type}")
            if any(d < 0 for d in t.shape):
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) has negative dimension in {list(t.shape)}")
            if tensor_num_elements(t.shape) > MAX_TENSOR_ELEMENTS:
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) shape {list(t.shape)} is too large")
            if t.shape_signature is not None and any(d < -1 for d in t.shape_signature):
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) has invalid shape_signature")
            if not 0 <= t.buffer < nbuf:
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) refers to buffer {t.buffer} of {nbuf}")
            q = t.quantization
            if q is not None and q.scale:
                if len(q.zero_point) not in (0, len(q.scale)):
                    raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}): {len(q.scale)} scales but "
                                            f"{len(q.zero_point)} zero points")
                if len(q.scale) > 1 and not 0 <= q.quantized_dimension < max(len(t.shape), 1):
                    raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}): quantized_dimension "
                                            f"{q.quantized_dimension} out of range for rank {len(t.shape)}")
            data = model.buffers[t.buffer].data
            want = expected_buffer_bytes(t)
            if data.size and want is not None and data.size != want:
                raise InvalidModelError(f"{where} tensor {ti} ({t.name!r}) of shape {list(t.shape)} "
                                        f"{dtypes.type_name(t.type)} needs {want} bytes but its buffer has {data.size}")
        for name, idx in (("input", sg.inputs), ("output", sg.outputs)):
            for i in idx:
                if not 0 <= i < nt:
                    raise InvalidModelError(f"{where} {name} tensor index {i} out of range [0, {nt})")
        for oi, op in enumerate(sg.operators):
            if not 0 <= op.opcode_index < nops:
                raise InvalidModelError(f"{where} operator {oi} has opcode index {op.opcode_index} of {nops}")
            for i in op.inputs + op.intermediates:
                if not -1 <= i < nt:
                    raise InvalidModelError(f"{where} operator {oi} refers to tensor {i} of {nt}")
            for i in op.outputs:
                if not -1 <= i < nt:
                    raise InvalidModelError(f"{where} operator {oi} writes tensor {i} of {nt}")
            for opts in (op.builtin_options, op.builtin_options2):
                for key, val in (opts or {}).items():
                    if key.endswith("subgraph_index") and not 0 <= val < nsub:
                        raise InvalidModelError(f"{where} operator {oi}: {key} {val} of {nsub} subgraphs")
    for s in model.signature_defs:
        if not 0 <= s.subgraph_index < nsub:
            raise InvalidModelError(f"signature {s.signature_key!r} refers to subgraph {s.subgraph_index}")
        nt = len(model.subgraphs[s.subgraph_index].tensors)
        for m in s.inputs + s.outputs:
            if not 0 <= m.tensor_index < nt:
                raise InvalidModelError(f"signature {s.signature_key!r} refers to tensor {m.tensor_index} of {nt}")


def metadata_bytes(model: Model, name: str) -> bytes | None:
    """The bytes of the metadata entry ``name`` (e.g. 'min_runtime_version'), or None."""
    for m in model.metadata:
        if m.name == name:
            return model.buffers[m.buffer].data.tobytes()
    return None
