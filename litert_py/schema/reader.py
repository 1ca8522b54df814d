"""Decode .tflite bytes into the dataclasses of ``schema.model``, validating every index and size.

The `tflite` package's generated accessors are used once, here, and never leak past this module. They
trust the bytes, so every object they hand out is re-seated on ``_CheckedTable``, whose reads are
bounds-checked: an offset that points outside the file (or before its start, which ``struct`` would
silently read from the end) raises ``InvalidModelError`` instead of returning garbage. Decoding is
linear in the file size: flatbuffers may alias (many vector entries pointing at one big table or
string), so every decoded element is charged to a budget proportional to the file size and a file that
exceeds it is rejected rather than expanded (no hang, no unbounded memory). Offsets in flatbuffers only
point forward and the schema is a fixed-depth tree, so decoding cannot cycle; cycles between
*subgraphs* (a WHILE body calling itself) are found by ``validate`` (validate.py).

After decoding, ``validate`` (validate.py) checks every cross-reference the way LiteRT's InterpreterBuilder
does, so that nothing past the reader sees an index or size it must check again.

Constant data is a read-only numpy view of the model bytes (an mmap for paths), never a copy, whether it
is stored inline or after the flatbuffer (the ``offset``/``size`` form of models over 2 GB).
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from collections.abc import Callable
from typing import Any

import flatbuffers
import numpy as np
import tflite
from flatbuffers import number_types as N

from ..errors import InvalidModelError
from .model import (
    BLOCKWISE_QUANTIZATION,
    CUSTOM_QUANTIZATION,
    MULTI_AXIS_QUANTIZATION,
    OPTIONS2_NAMES,
    OPTIONS_NAMES,
    BlockwiseQuantization,
    Buffer,
    DimensionMetadata,
    ExternalBuffer,
    ExternalBufferGroup,
    Metadata,
    Model,
    MultiAxisQuantization,
    Operator,
    OperatorCode,
    QuantizationParameters,
    SignatureDef,
    SparsityParameters,
    Subgraph,
    Tensor,
    TensorMap,
    VariantSubType,
)
from .tables import decode_options, table_class
from .validate import validate

FILE_IDENTIFIER = b"TFL3"
#: Decoding may produce this many items (vector elements, tables, string bytes) per byte of file, plus
#: ``_WORK_SLACK``. A file without aliased offsets produces at most one item per byte.
_WORK_PER_BYTE = 2
_WORK_SLACK = 1 << 16
_TABLE_WORK = 4  # a table takes at least 8 bytes: its soffset and the offset that leads to it

# vtable slots of fields the `tflite` package (2.18) does not know yet (LiteRT's current schema.fbs).
_TENSOR_EXTERNAL_BUFFER = 24  # Tensor.external_buffer: uint
_MODEL_EXTERNAL_BUFFER_GROUPS = 20  # Model.external_buffer_groups: [ExternalBufferGroup]
_MODEL_EXTERNAL_BUFFERS = 22  # Model.external_buffers: [ExternalBuffer]


def load_bytes(source) -> tuple[Any, str]:
    """The model bytes of a path (mmap, read-only) or a bytes-like object, and a name for messages."""
    if isinstance(source, memoryview):
        if not source.c_contiguous:
            source = memoryview(source.tobytes())
        return (source if source.format == "B" and source.ndim == 1 else source.cast("B")), "<model_content>"
    if isinstance(source, (bytes, bytearray)):
        return source, "<model_content>"
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b"", os.fsdecode(path)
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), os.fsdecode(path)
    except OSError as e:
        raise InvalidModelError(f"Could not open '{os.fsdecode(path)}'. ({e.strerror})") from None


def read_model(source) -> Model:
    """Decode a model from a path, bytes, bytearray or memoryview. Raises ``InvalidModelError``."""
    buf, where = load_bytes(source)
    return decode_model(buf, where)


def decode_model(buf, where: str = "<model_content>") -> Model:
    n = len(buf)
    if n < 8:
        raise InvalidModelError(f"The model is not a valid Flatbuffer buffer: {where} has only {n} bytes")
    if bytes(buf[4:8]) != FILE_IDENTIFIER:
        raise InvalidModelError(f"The model is not a valid Flatbuffer buffer: {where} lacks the 'TFL3' file identifier")
    try:
        model = _Decoder(buf).model()
    except _Corrupt as e:
        raise InvalidModelError(f"The model is not a valid Flatbuffer buffer: {where}: {e}") from None
    except InvalidModelError:
        raise
    except Exception as e:  # a case the checks above missed: still never a bare IndexError/struct.error
        raise InvalidModelError(
            f"The model is not a valid Flatbuffer buffer: {where} is corrupt ({type(e).__name__}: {e})"
        ) from None
    try:
        validate(model)
    except InvalidModelError:
        raise
    except Exception as e:  # a validator bug must not leak a bare exception either (the fuzz test flags it)
        raise InvalidModelError(f"{where} could not be validated ({type(e).__name__}: {e})") from e
    return model


class _Corrupt(Exception):
    """A structural defect found while decoding (becomes InvalidModelError naming the file)."""


class _CheckedTable(flatbuffers.table.Table):
    """A flatbuffers Table that reads like flatbuffers' C++ Verifier checks (the stock one trusts the bytes):
    every read inside the file and aligned to its size, offsets non-zero and below 2 GB, vtables of even
    size >= 4 inside the file, every field inside its table."""

    __slots__ = ()

    def Get(self, flags, off):  # noqa: N802 (flatbuffers' spelling)
        width = flags.bytewidth
        if off < 0 or off + width > len(self.Bytes):
            raise _Corrupt(f"a {width}-byte read at offset {off} is outside the {len(self.Bytes)}-byte file")
        if off % width:
            raise _Corrupt(f"a {width}-byte value at offset {off} is misaligned")
        return flags.py_type(flags.packer_type.unpack_from(self.Bytes, off)[0])

    def _uoffset(self, off: int) -> int:
        o = self.Get(N.UOffsetTFlags, off)
        if o == 0 or o >= 1 << 31:
            raise _Corrupt(f"the offset at {off} is {o}")
        return o

    def Offset(self, vtableOffset):  # noqa: N802, N803
        vtable = self.Pos - self.Get(N.SOffsetTFlags, self.Pos)
        vtable_size = self.Get(N.VOffsetTFlags, vtable)
        if vtable_size < 4 or vtable_size & 1 or vtable + vtable_size > len(self.Bytes):
            raise _Corrupt(f"the table at offset {self.Pos} has a bad vtable (size {vtable_size} at {vtable})")
        if vtableOffset >= vtable_size:
            return 0
        field = self.Get(N.VOffsetTFlags, vtable + vtableOffset)
        if field:
            table_size = self.Get(N.VOffsetTFlags, vtable + 2)
            if field >= table_size or self.Pos + table_size > len(self.Bytes):
                raise _Corrupt(f"a field of the table at offset {self.Pos} lies outside it")
        return field

    def Indirect(self, off):  # noqa: N802
        return off + self._uoffset(off)

    def String(self, off):  # noqa: N802
        off += self._uoffset(off)
        length = self.Get(N.UOffsetTFlags, off)
        start = off + 4
        if start + length >= len(self.Bytes) or self.Bytes[start + length] != 0:
            raise _Corrupt(f"the string at offset {off} ({length} bytes) overruns the file or lacks its NUL")
        return bytes(self.Bytes[start : start + length])

    def VectorLen(self, off):  # noqa: N802
        off += self.Pos
        return self.Get(N.UOffsetTFlags, off + self._uoffset(off))

    def Vector(self, off):  # noqa: N802
        off += self.Pos
        return off + self._uoffset(off) + 4

    def Union(self, t2, off):  # noqa: N802
        off += self.Pos
        t2.Pos = off + self._uoffset(off)
        t2.Bytes = self.Bytes

    def GetVectorAsNumpy(self, flags, off):  # noqa: N802
        start, n = self.Vector(off), self.VectorLen(off)
        if start + n * flags.bytewidth > len(self.Bytes):
            raise _Corrupt(f"a vector of {n} {flags.bytewidth}-byte elements at offset {start} overruns the file")
        return np.frombuffer(self.Bytes, N.to_numpy_type(flags), n, start)


class _SlotFound(Exception):
    pass


class _SlotProbe:
    """Stands in for a Table: reports the vtable slot a generated accessor asks for."""

    Pos = 0

    def Offset(self, slot):  # noqa: N802
        raise _SlotFound(slot)


@functools.cache
def _slot(cls, accessor: str) -> int:
    """The vtable slot behind a generated accessor (e.g. SubGraph.TensorsLength -> 4)."""
    obj = cls.__new__(cls)
    obj._tab = _SlotProbe()
    try:
        getattr(obj, accessor)()
    except _SlotFound as found:
        return found.args[0]
    raise RuntimeError(f"{cls.__name__}.{accessor} reads no field")  # a `tflite` package we do not know


class _Decoder:
    def __init__(self, buf):
        self.buf = buf
        self.size = len(buf)
        self.view = np.frombuffer(buf, np.uint8)
        if self.view.flags.writeable:  # bytearray input: keep the model's constants immutable
            self.view = self.view.view()
            self.view.flags.writeable = False
        self.budget = _WORK_PER_BYTE * self.size + _WORK_SLACK
        self.memo: dict[tuple[str, int], Any] = {}

    # -- primitives ------------------------------------------------------------------------------
    def charge(self, n: int, what: str) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _Corrupt(
                f"decoding {what} exceeds what a {self.size}-byte file can hold: offsets alias "
                "one another (a decompression bomb)"
            )

    def seat(self, obj):
        """Move a generated object (or a union's bare Table) onto a bounds-checked table."""
        if obj is None:
            return None
        if type(obj) is flatbuffers.table.Table:
            return _CheckedTable(obj.Bytes, obj.Pos)
        obj._tab = _CheckedTable(obj._tab.Bytes, obj._tab.Pos)
        return obj

    def table(self, cls, tab):
        obj = cls()
        obj._tab = _CheckedTable(tab.Bytes, tab.Pos)
        return obj

    def length(self, obj, name: str, elem_size: int) -> int:
        n = getattr(obj, name + "Length")()
        if n * elem_size > self.size:
            raise _Corrupt(f"vector {type(obj).__name__}.{name} claims {n} elements in a {self.size}-byte file")
        return n

    def table_positions(self, tab: _CheckedTable, slot: int, what: str) -> list[int]:
        """Where the tables of a vector-of-tables field start (vectorized: a vector may be long)."""
        o = tab.Offset(slot)
        if not o:
            return []
        n, start = tab.VectorLen(o), tab.Vector(o)
        if start + 4 * n > self.size:
            raise _Corrupt(f"vector {what} claims {n} elements in a {self.size}-byte file")
        self.charge(n, what)
        entries = np.frombuffer(self.buf, "<u4", n, start).astype(np.int64)
        if n and (entries.min() == 0 or entries.max() >= 1 << 31):
            raise _Corrupt(f"vector {what} holds an offset of 0 or over 2 GB")
        return (entries + (start + 4 * np.arange(n, dtype=np.int64))).tolist()

    def items(self, obj, name: str, cls, fn: Callable[[Any], Any]) -> tuple:
        """Decode the vector of ``cls`` tables ``obj.name``. A table that several entries point at is decoded
        once: results are immutable, so aliased offsets cost a reference each, not a decode each."""
        what = f"{type(obj).__name__}.{name}"
        out = []
        for pos in self.table_positions(obj._tab, _slot(type(obj), name + "Length"), what):
            key = (name, pos)
            value = self.memo.get(key, self)
            if value is self:
                self.charge(_TABLE_WORK, what)
                child = cls()
                child._tab = _CheckedTable(self.buf, pos)
                value = self.memo[key] = fn(child)
            out.append(value)
        return tuple(out)

    def ints(self, obj, name: str) -> tuple:
        arr = getattr(obj, name + "AsNumpy")()
        if not isinstance(arr, np.ndarray):
            return ()
        self.charge(arr.size, f"{type(obj).__name__}.{name}")
        return tuple(arr.tolist())

    def floats(self, obj, name: str) -> tuple[float, ...]:
        return tuple(float(v) for v in self.ints(obj, name))

    def string(self, raw) -> str:
        if raw is None:
            return ""
        self.charge(len(raw), "a string")
        return raw.decode("utf-8", "surrogateescape")

    # raw slots, for fields the generated accessors do not know
    def slot_scalar(self, tab: _CheckedTable, slot: int, flags, default):
        o = tab.Offset(slot)
        return tab.Get(flags, tab.Pos + o) if o else default

    def slot_string(self, tab: _CheckedTable, slot: int) -> str:
        o = tab.Offset(slot)
        return self.string(tab.String(tab.Pos + o)) if o else ""

    def slot_ints(self, tab: _CheckedTable, slot: int) -> tuple[int, ...]:
        o = tab.Offset(slot)
        if not o:
            return ()
        arr = tab.GetVectorAsNumpy(N.Int32Flags, o)
        self.charge(arr.size, "a vector")
        return tuple(arr.tolist())

    def slot_tables(self, tab: _CheckedTable, slot: int, what: str) -> list[_CheckedTable]:
        return [_CheckedTable(self.buf, pos) for pos in self.table_positions(tab, slot, what)]

    # -- tables ----------------------------------------------------------------------------------
    def model(self) -> Model:
        root = struct.unpack_from("<I", self.buf, 0)[0]
        m = tflite.Model()
        m._tab = _CheckedTable(self.buf, root)
        groups = [
            ExternalBufferGroup(self.slot_string(t, 4))
            for t in self.slot_tables(m._tab, _MODEL_EXTERNAL_BUFFER_GROUPS, "Model.external_buffer_groups")
        ]
        externals = [
            ExternalBuffer(
                id=self.slot_scalar(t, 4, N.Uint32Flags, 0),
                group=self.slot_scalar(t, 6, N.Uint32Flags, 0),
                offset=self.slot_scalar(t, 8, N.Uint64Flags, 0),
                length=self.slot_scalar(t, 10, N.Uint64Flags, 0),
                packing=self.slot_string(t, 12),
            )
            for t in self.slot_tables(m._tab, _MODEL_EXTERNAL_BUFFERS, "Model.external_buffers")
        ]
        return Model(
            version=m.Version(),
            operator_codes=self.items(m, "OperatorCodes", tflite.OperatorCode, self.opcode),
            subgraphs=self.items(m, "Subgraphs", tflite.SubGraph, self.subgraph),
            buffers=self.items(m, "Buffers", tflite.Buffer, self.buffer),
            description=self.string(m.Description()),
            metadata_buffer=self.ints(m, "MetadataBuffer"),
            metadata=self.items(m, "Metadata", tflite.Metadata, lambda t: Metadata(self.string(t.Name()), t.Buffer())),
            signature_defs=self.items(m, "SignatureDefs", tflite.SignatureDef, self.signature),
            external_buffer_groups=tuple(groups),
            external_buffers=tuple(externals),
        )

    def opcode(self, c) -> OperatorCode:
        dep, new = c.DeprecatedBuiltinCode(), c.BuiltinCode()
        custom = c.CustomCode()
        # TFLite's GetBuiltinCode: codes above 127 live only in `builtin_code`; old files only set the
        # deprecated int8 field, so the larger of the two is the real one.
        return OperatorCode(
            builtin_code=max(dep, new),
            custom_code=self.string(custom) if custom is not None else None,
            version=c.Version(),
            deprecated_builtin_code=dep,
        )

    def subgraph(self, s) -> Subgraph:
        return Subgraph(
            tensors=self.items(s, "Tensors", tflite.Tensor, self.tensor),
            inputs=self.ints(s, "Inputs"),
            outputs=self.ints(s, "Outputs"),
            operators=self.items(s, "Operators", tflite.Operator, self.operator),
            name=self.string(s.Name()),
            debug_metadata_index=s.DebugMetadataIndex(),
        )

    def tensor(self, t) -> Tensor:
        q = self.seat(t.Quantization())
        sp = self.seat(t.Sparsity())
        sig = self.ints(t, "ShapeSignature") if not t.ShapeSignatureIsNone() else None
        variants = self.items(
            t,
            "VariantTensors",
            tflite.VariantSubType,
            lambda v: VariantSubType(
                self.ints(v, "Shape") if not v.ShapeIsNone() else None, v.Type(), bool(v.HasRank())
            ),
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
            external_buffer=self.slot_scalar(t._tab, _TENSOR_EXTERNAL_BUFFER, N.Uint32Flags, 0),
        )

    def quantization(self, q) -> QuantizationParameters:
        details_type, custom, details = q.DetailsType(), b"", None
        table = self.seat(q.Details()) if details_type else None
        if table is not None:
            if details_type == CUSTOM_QUANTIZATION:
                cq = self.table(tflite.CustomQuantization, table)
                raw = cq.CustomAsNumpy()
                if isinstance(raw, np.ndarray):
                    self.charge(raw.size, "CustomQuantization.custom")
                    custom = raw.tobytes()
            elif details_type in (BLOCKWISE_QUANTIZATION, MULTI_AXIS_QUANTIZATION):
                scales = self.slot_scalar(table, 4, N.Int32Flags, 0)
                zero_points = self.slot_scalar(table, 6, N.Int32Flags, 0)
                block_size = self.slot_scalar(table, 8, N.Int32Flags, 0)
                if details_type == BLOCKWISE_QUANTIZATION:
                    details = BlockwiseQuantization(scales, zero_points, block_size)
                else:
                    details = MultiAxisQuantization(scales, zero_points, block_size, self.slot_ints(table, 10))
            else:
                raise _Corrupt(f"unknown QuantizationDetails type {details_type}")
        return QuantizationParameters(
            scale=self.floats(q, "Scale"),
            zero_point=self.ints(q, "ZeroPoint"),
            quantized_dimension=q.QuantizedDimension(),
            min=self.floats(q, "Min"),
            max=self.floats(q, "Max"),
            details_type=details_type,
            custom_details=custom,
            details=details,
        )

    def sparsity(self, sp) -> SparsityParameters:
        if sp.TraversalOrderIsNone() or sp.DimMetadataIsNone():
            raise _Corrupt("a tensor's sparsity parameters lack traversal_order or dim_metadata")
        return SparsityParameters(
            traversal_order=self.ints(sp, "TraversalOrder"),
            block_map=self.ints(sp, "BlockMap"),
            dim_metadata=self.items(sp, "DimMetadata", tflite.DimensionMetadata, self.dim_metadata),
        )

    _INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}

    def dim_metadata(self, d) -> DimensionMetadata:
        def index_vector(kind: int, table) -> tuple[int, ...]:
            if kind == 0 or table is None:
                return ()
            if kind not in self._INDEX_VECTORS:
                raise _Corrupt(f"unknown SparseIndexVector type {kind}")
            return self.ints(self.table(self._INDEX_VECTORS[kind], table), "Values")

        seg_type, idx_type = d.ArraySegmentsType(), d.ArrayIndicesType()
        return DimensionMetadata(
            format=d.Format(),
            dense_size=d.DenseSize(),
            array_segments=index_vector(seg_type, self.seat(d.ArraySegments())),
            array_indices=index_vector(idx_type, self.seat(d.ArrayIndices())),
            array_segments_type=seg_type,
            array_indices_type=idx_type,
        )

    def operator(self, o) -> Operator:
        big_off, big_size = o.LargeCustomOptionsOffset(), o.LargeCustomOptionsSize()
        custom = b""
        # As LiteRT's InterpreterBuilder::ParseNodes: inline custom options win; else the large form.
        if not o.CustomOptionsIsNone():
            raw = o.CustomOptionsAsNumpy()
            self.charge(raw.size, "Operator.custom_options")
            custom = raw.tobytes()
        elif big_off > 1:
            if big_off + big_size > self.size:
                raise _Corrupt(
                    f"large custom options at [{big_off}, {big_off + big_size}) lie outside the {self.size}-byte file"
                )
            self.charge(big_size, "Operator.large_custom_options")
            custom = self.view[big_off : big_off + big_size].tobytes()
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
            raise _Corrupt(f"unknown builtin options type {kind}")
        opts = decode_options(name, self.table(table_class(name), table))
        self.charge(sum(len(v) if isinstance(v, (tuple, str)) else 1 for v in opts.values()), name)
        return opts

    def buffer(self, b) -> Buffer:
        offset, size = b.Offset(), b.Size()
        # As LiteRT's InterpreterBuilder::ParseTensors: a `data` vector wins; else data after the
        # flatbuffer at `offset` (offset 0 or 1 mean none: 1 is the converter's placeholder).
        if not b.DataIsNone():
            n = self.length(b, "Data", 1)
            start = b._tab.Vector(b._tab.Offset(4))
            if start + n > self.size:
                raise _Corrupt(f"buffer data at [{start}, {start + n}) lies outside the {self.size}-byte file")
            return Buffer(self.view[start : start + n], offset, size)
        if offset > 1:
            if offset + size > self.size:
                raise _Corrupt(f"buffer data at [{offset}, {offset + size}) lies outside the {self.size}-byte file")
            return Buffer(self.view[offset : offset + size], offset, size)
        return Buffer(self.view[:0], offset, size)

    def signature(self, s) -> SignatureDef:
        if s.SignatureKey() is None:
            raise _Corrupt("a SignatureDef has no signature_key")
        if s.InputsIsNone() or s.OutputsIsNone():
            raise _Corrupt(f"SignatureDef {self.string(s.SignatureKey())!r} lacks its inputs or outputs")

        def tmap(t):
            return TensorMap(self.string(t.Name()), t.TensorIndex())

        return SignatureDef(
            inputs=self.items(s, "Inputs", tflite.TensorMap, tmap),
            outputs=self.items(s, "Outputs", tflite.TensorMap, tmap),
            signature_key=self.string(s.SignatureKey()),
            subgraph_index=s.SubgraphIndex(),
        )


def metadata_bytes(model: Model, name: str) -> bytes | None:
    """The bytes of the metadata entry ``name`` (e.g. 'min_runtime_version'), or None."""
    for m in model.metadata:
        if m.name == name:
            return model.buffers[m.buffer].data.tobytes()
    return None
