"""Dataclasses of ``schema.model`` back to .tflite bytes (``ModelBuilder``, to make small models, is in builder.py).

``read_model(write_model(m)) == m`` for every model ``read_model`` returns. Constant buffers are 16-byte
aligned, as TFLite's own writer does, so the oracle can map them directly. With ``external_buffers``
the constant data goes after the flatbuffer instead, in the ``offset``/``size`` form LiteRT's converter
writes for models over 2 GB (tflite/converter/flatbuffer_export.cc, ``AppendBufferData``): the
flatbuffer, zero padding to 16 bytes, each buffer followed by padding to 16 bytes, 16 zero bytes (XNNPack
reads up to 16 bytes past a buffer), then the custom options of CUSTOM ops, each 16-byte aligned.
Offsets are absolute from the start of the file.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import flatbuffers
import numpy as np
import tflite

from .model import (
    OPTIONS2_NAMES,
    OPTIONS_NAMES,
    BlockwiseQuantization,
    Buffer,
    BuiltinOperator,
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
from .reader import FILE_IDENTIFIER
from .tables import encode_options

_OPTIONS_NUMBER = {name: num for num, name in OPTIONS_NAMES.items()}
_OPTIONS2_NUMBER = {name: num for num, name in OPTIONS2_NAMES.items()}
_SPARSE_VECTORS = {1: ("Int32Vector", np.int32), 2: ("Uint16Vector", np.uint16), 3: ("Uint8Vector", np.uint8)}
#: Constant data above this many bytes cannot live inside a flatbuffer (2 GB, less room for the tables).
FLATBUFFER_DATA_LIMIT = (1 << 31) - (1 << 26)
ALIGNMENT = 16
_PLACEHOLDER = 1  # the converter's placeholder offset/size, overwritten once the layout is known

# vtable slots (field numbers) of fields the `tflite` package (2.18) does not know yet.
_TENSOR_FIELDS, _TENSOR_EXTERNAL_BUFFER = 11, 10
_MODEL_FIELDS, _MODEL_EXTERNAL_BUFFER_GROUPS, _MODEL_EXTERNAL_BUFFERS = 10, 8, 9


def _pad16(out: bytearray) -> None:
    """Zero bytes up to the next multiple of 16, always at least one (flatbuffer_export.cc's padding)."""
    out += bytes(ALIGNMENT - len(out) % ALIGNMENT)


class _Writer:
    def __init__(self, model: Model, external_buffers: bool | None):
        self.b = flatbuffers.Builder(1024)
        self.m = model
        if external_buffers is None:
            external_buffers = (
                any(x.offset > 1 for x in model.buffers)
                or any(o.large_custom_options_offset > 1 for s in model.subgraphs for o in s.operators)
                or sum(x.data.nbytes for x in model.buffers) > FLATBUFFER_DATA_LIMIT
            )
        self.external = external_buffers
        # Metadata buffers stay inline: LiteRT reads them through Buffer.data only.
        meta = {m.buffer for m in model.metadata} | set(model.metadata_buffer)
        self.external_buffers = [
            k for k, x in enumerate(model.buffers) if external_buffers and x.data.size and k not in meta
        ]
        custom = {k for k, c in enumerate(model.operator_codes) if c.builtin_code == BuiltinOperator.CUSTOM}
        self.external_options = [
            (si, oi)
            for si, s in enumerate(model.subgraphs)
            for oi, o in enumerate(s.operators)
            if external_buffers and o.custom_options and o.opcode_index in custom
        ]
        self._external_buffer_set = set(self.external_buffers)
        self._external_option_set = set(self.external_options)

    def vec(self, values, dtype) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=dtype).reshape(-1))

    def str(self, s: str) -> int:
        return self.b.CreateString(s.encode("utf-8", "surrogateescape"))

    def tables(self, start_fn, offsets: Sequence[int]) -> int:
        start_fn(self.b, len(offsets))
        for off in reversed(offsets):
            self.b.PrependUOffsetTRelative(off)
        return self.b.EndVector()

    def table_vector(self, offsets: Sequence[int]) -> int:
        return self.tables(lambda b, n: b.StartVector(4, n, 4), offsets)

    def aligned_bytes(self, data: np.ndarray, alignment: int = ALIGNMENT) -> int:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
        b = self.b
        b.assertNotNested()
        b.nested = True
        b.Prep(alignment, len(raw))
        b.head -= len(raw)
        b.Bytes[b.head : b.head + len(raw)] = raw
        b.vectorNumElems = len(raw)
        return b.EndVector()

    # -- the file --------------------------------------------------------------------------------
    def write(self) -> bytes:
        fb = self.flatbuffer()
        if not self.external:
            return fb
        out = bytearray(fb)
        _pad16(out)
        places: dict[int, tuple[int, int]] = {}
        for k in self.external_buffers:
            data = np.ascontiguousarray(self.m.buffers[k].data).view(np.uint8).reshape(-1)
            places[k] = (len(out), data.size)
            out += data.tobytes()
            _pad16(out)
        out += bytes(ALIGNMENT)
        _pad16(out)
        option_places: dict[tuple[int, int], tuple[int, int]] = {}
        for si, oi in self.external_options:
            raw = self.m.subgraphs[si].operators[oi].custom_options
            if len(out) % ALIGNMENT:
                _pad16(out)
            option_places[(si, oi)] = (len(out), len(raw))
            out += raw
        _pad16(out)
        self.patch(out, places, option_places)
        return bytes(out)

    @staticmethod
    def patch(out: bytearray, places, option_places) -> None:
        """Write the final offsets/sizes over the placeholders (TFLite's UpdateBufferOffsets)."""
        root = tflite.Model.GetRootAs(out, 0)

        def put(tab, vtable_offset: int, value: int) -> None:
            o = tab.Offset(vtable_offset)
            assert o, "placeholder field missing"
            struct.pack_into("<Q", out, tab.Pos + o, value)

        for k, (offset, size) in places.items():
            tab = root.Buffers(k)._tab
            put(tab, 6, offset)
            put(tab, 8, size)
        for (si, oi), (offset, size) in option_places.items():
            tab = root.Subgraphs(si).Operators(oi)._tab
            put(tab, 22, offset)
            put(tab, 24, size)

    # -- tables ----------------------------------------------------------------------------------
    def flatbuffer(self) -> bytes:
        T, m = tflite, self.m
        buffers = [self.buffer(k, x) for k, x in enumerate(m.buffers)]
        subgraphs = [self.subgraph(si, s) for si, s in enumerate(m.subgraphs)]
        codes = [self.opcode(c) for c in m.operator_codes]
        metadata = [self.metadata(x) for x in m.metadata]
        sigs = [self.signature(s) for s in m.signature_defs]
        groups = [self.external_buffer_group(g) for g in m.external_buffer_groups]
        externals = [self.external_buffer(e) for e in m.external_buffers]
        desc = self.str(m.description) if m.description else None
        vb = self.tables(T.ModelStartBuffersVector, buffers)
        vs = self.tables(T.ModelStartSubgraphsVector, subgraphs)
        vc = self.tables(T.ModelStartOperatorCodesVector, codes)
        vm = self.tables(T.ModelStartMetadataVector, metadata) if metadata else None
        vsig = self.tables(T.ModelStartSignatureDefsVector, sigs) if sigs else None
        vmb = self.vec(m.metadata_buffer, np.int32) if m.metadata_buffer else None
        vg = self.table_vector(groups) if groups else None
        ve = self.table_vector(externals) if externals else None
        self.b.StartObject(_MODEL_FIELDS)
        T.ModelAddVersion(self.b, m.version)
        T.ModelAddOperatorCodes(self.b, vc)
        T.ModelAddSubgraphs(self.b, vs)
        if desc is not None:
            T.ModelAddDescription(self.b, desc)
        T.ModelAddBuffers(self.b, vb)
        if vmb is not None:
            T.ModelAddMetadataBuffer(self.b, vmb)
        if vm is not None:
            T.ModelAddMetadata(self.b, vm)
        if vsig is not None:
            T.ModelAddSignatureDefs(self.b, vsig)
        if vg is not None:
            self.b.PrependUOffsetTRelativeSlot(_MODEL_EXTERNAL_BUFFER_GROUPS, vg, 0)
        if ve is not None:
            self.b.PrependUOffsetTRelativeSlot(_MODEL_EXTERNAL_BUFFERS, ve, 0)
        self.b.Finish(self.b.EndObject(), file_identifier=FILE_IDENTIFIER)
        return bytes(self.b.Output())

    def external_buffer_group(self, g: ExternalBufferGroup) -> int:
        name = self.str(g.name)
        self.b.StartObject(1)
        self.b.PrependUOffsetTRelativeSlot(0, name, 0)
        return self.b.EndObject()

    def external_buffer(self, e: ExternalBuffer) -> int:
        packing = self.str(e.packing) if e.packing else None
        b = self.b
        b.StartObject(5)
        b.PrependUint32Slot(0, e.id, 0)
        b.PrependUint32Slot(1, e.group, 0)
        b.PrependUint64Slot(2, e.offset, 0)
        b.PrependUint64Slot(3, e.length, 0)
        if packing is not None:
            b.PrependUOffsetTRelativeSlot(4, packing, 0)
        return b.EndObject()

    def buffer(self, k: int, x: Buffer) -> int:
        if k in self._external_buffer_set:
            tflite.BufferStart(self.b)
            tflite.BufferAddOffset(self.b, _PLACEHOLDER)
            tflite.BufferAddSize(self.b, _PLACEHOLDER)
            return tflite.BufferEnd(self.b)
        data = self.aligned_bytes(x.data) if x.data.size else None
        tflite.BufferStart(self.b)
        if data is not None:
            tflite.BufferAddData(self.b, data)
        return tflite.BufferEnd(self.b)

    def opcode(self, c: OperatorCode) -> int:
        custom = self.str(c.custom_code) if c.custom_code is not None else None
        dep = c.deprecated_builtin_code
        if dep is None:
            dep = min(c.builtin_code, BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
        tflite.OperatorCodeStart(self.b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(self.b, dep)
        if custom is not None:
            tflite.OperatorCodeAddCustomCode(self.b, custom)
        tflite.OperatorCodeAddVersion(self.b, c.version)
        tflite.OperatorCodeAddBuiltinCode(self.b, c.builtin_code)
        return tflite.OperatorCodeEnd(self.b)

    def subgraph(self, si: int, s: Subgraph) -> int:
        T = tflite
        tensors = [self.tensor(t) for t in s.tensors]
        ops = [self.operator(o, (si, oi) in self._external_option_set) for oi, o in enumerate(s.operators)]
        vt = self.tables(T.SubGraphStartTensorsVector, tensors)
        vo = self.tables(T.SubGraphStartOperatorsVector, ops)
        vi, vout = self.vec(s.inputs, np.int32), self.vec(s.outputs, np.int32)
        name = self.str(s.name) if s.name else None
        T.SubGraphStart(self.b)
        T.SubGraphAddTensors(self.b, vt)
        T.SubGraphAddInputs(self.b, vi)
        T.SubGraphAddOutputs(self.b, vout)
        T.SubGraphAddOperators(self.b, vo)
        if name is not None:
            T.SubGraphAddName(self.b, name)
        if s.debug_metadata_index != -1:
            T.SubGraphAddDebugMetadataIndex(self.b, s.debug_metadata_index)
        return T.SubGraphEnd(self.b)

    def variant(self, v: VariantSubType) -> int:
        T = tflite
        vs = self.vec(v.shape, np.int32) if v.shape is not None else None
        T.VariantSubTypeStart(self.b)
        if vs is not None:
            T.VariantSubTypeAddShape(self.b, vs)
        T.VariantSubTypeAddType(self.b, v.type)
        T.VariantSubTypeAddHasRank(self.b, v.has_rank)
        return T.VariantSubTypeEnd(self.b)

    def tensor(self, t: Tensor) -> int:
        T = tflite
        shape = self.vec(t.shape, np.int32)
        name = self.str(t.name)
        q = self.quantization(t.quantization) if t.quantization is not None else None
        sp = self.sparsity(t.sparsity) if t.sparsity is not None else None
        sig = self.vec(t.shape_signature, np.int32) if t.shape_signature is not None else None
        variants = None
        if t.variant_tensors:
            variants = self.tables(T.TensorStartVariantTensorsVector, [self.variant(v) for v in t.variant_tensors])
        self.b.StartObject(_TENSOR_FIELDS)
        T.TensorAddShape(self.b, shape)
        T.TensorAddType(self.b, t.type)
        T.TensorAddBuffer(self.b, t.buffer)
        T.TensorAddName(self.b, name)
        if q is not None:
            T.TensorAddQuantization(self.b, q)
        T.TensorAddIsVariable(self.b, t.is_variable)
        if sp is not None:
            T.TensorAddSparsity(self.b, sp)
        if sig is not None:
            T.TensorAddShapeSignature(self.b, sig)
        T.TensorAddHasRank(self.b, t.has_rank)
        if variants is not None:
            T.TensorAddVariantTensors(self.b, variants)
        if t.external_buffer:
            self.b.PrependUint32Slot(_TENSOR_EXTERNAL_BUFFER, t.external_buffer, 0)
        return T.TensorEnd(self.b)

    def quantization_details(self, d: BlockwiseQuantization | MultiAxisQuantization) -> int:
        multi = isinstance(d, MultiAxisQuantization)
        dims = self.vec(d.quantized_dimensions, np.int32) if multi else None
        b = self.b
        b.StartObject(4 if multi else 3)
        b.PrependInt32Slot(0, d.scales, 0)
        b.PrependInt32Slot(1, d.zero_points, 0)
        b.PrependInt32Slot(2, d.block_size, 0)
        if dims is not None:
            b.PrependUOffsetTRelativeSlot(3, dims, 0)
        return b.EndObject()

    def quantization(self, q: QuantizationParameters) -> int:
        T = tflite
        vmin = self.vec(q.min, np.float32) if q.min else None
        vmax = self.vec(q.max, np.float32) if q.max else None
        vs = self.vec(q.scale, np.float32) if q.scale else None
        vz = self.vec(q.zero_point, np.int64) if q.zero_point else None
        details = None
        if q.details is not None:
            details = self.quantization_details(q.details)
        elif q.details_type == 1:
            custom = self.aligned_bytes(np.frombuffer(q.custom_details, np.uint8))  # force_align: 16
            T.CustomQuantizationStart(self.b)
            T.CustomQuantizationAddCustom(self.b, custom)
            details = T.CustomQuantizationEnd(self.b)
        T.QuantizationParametersStart(self.b)
        for fn, v in (
            (T.QuantizationParametersAddMin, vmin),
            (T.QuantizationParametersAddMax, vmax),
            (T.QuantizationParametersAddScale, vs),
            (T.QuantizationParametersAddZeroPoint, vz),
        ):
            if v is not None:
                fn(self.b, v)
        if details is not None:
            T.QuantizationParametersAddDetailsType(self.b, q.details_type)
            T.QuantizationParametersAddDetails(self.b, details)
        T.QuantizationParametersAddQuantizedDimension(self.b, q.quantized_dimension)
        return T.QuantizationParametersEnd(self.b)

    def sparsity(self, sp: SparsityParameters) -> int:
        T = tflite
        dims = []
        for d in sp.dim_metadata:
            segs = self.index_vector(d.array_segments_type, d.array_segments)
            idxs = self.index_vector(d.array_indices_type, d.array_indices)
            T.DimensionMetadataStart(self.b)
            T.DimensionMetadataAddFormat(self.b, d.format)
            T.DimensionMetadataAddDenseSize(self.b, d.dense_size)
            if segs is not None:
                T.DimensionMetadataAddArraySegmentsType(self.b, d.array_segments_type)
                T.DimensionMetadataAddArraySegments(self.b, segs)
            if idxs is not None:
                T.DimensionMetadataAddArrayIndicesType(self.b, d.array_indices_type)
                T.DimensionMetadataAddArrayIndices(self.b, idxs)
            dims.append(T.DimensionMetadataEnd(self.b))
        trav = self.vec(sp.traversal_order, np.int32)  # always present: LiteRT rejects a null one
        bmap = self.vec(sp.block_map, np.int32) if sp.block_map else None
        vdims = self.tables(T.SparsityParametersStartDimMetadataVector, dims)
        T.SparsityParametersStart(self.b)
        T.SparsityParametersAddTraversalOrder(self.b, trav)
        if bmap is not None:
            T.SparsityParametersAddBlockMap(self.b, bmap)
        T.SparsityParametersAddDimMetadata(self.b, vdims)
        return T.SparsityParametersEnd(self.b)

    def index_vector(self, kind: int, values) -> int | None:
        if kind not in _SPARSE_VECTORS:
            return None
        name, dtype = _SPARSE_VECTORS[kind]
        vals = self.vec(values, dtype)
        mod = getattr(tflite, name)
        mod.Start(self.b) if hasattr(mod, "Start") else getattr(tflite, f"{name}Start")(self.b)
        getattr(tflite, f"{name}AddValues")(self.b, vals)
        return getattr(tflite, f"{name}End")(self.b)

    def operator(self, o: Operator, external_options: bool) -> int:
        T = tflite
        vi, vo = self.vec(o.inputs, np.int32), self.vec(o.outputs, np.int32)
        opt1 = opt2 = None
        if o.builtin_options is not None:
            opt1 = encode_options(self.b, o.builtin_options.table, o.builtin_options)
        if o.builtin_options2 is not None:
            opt2 = encode_options(self.b, o.builtin_options2.table, o.builtin_options2)
        inline_custom = o.custom_options and not external_options
        custom = self.vec(np.frombuffer(o.custom_options, np.uint8), np.uint8) if inline_custom else None
        mut = self.vec(o.mutating_variable_inputs, np.bool_) if o.mutating_variable_inputs else None
        inter = self.vec(o.intermediates, np.int32) if o.intermediates else None
        T.OperatorStart(self.b)
        T.OperatorAddOpcodeIndex(self.b, o.opcode_index)
        T.OperatorAddInputs(self.b, vi)
        T.OperatorAddOutputs(self.b, vo)
        if opt1 is not None:
            T.OperatorAddBuiltinOptionsType(self.b, _OPTIONS_NUMBER[o.builtin_options.table])
            T.OperatorAddBuiltinOptions(self.b, opt1)
        if custom is not None:
            T.OperatorAddCustomOptions(self.b, custom)
        T.OperatorAddCustomOptionsFormat(self.b, o.custom_options_format)
        if mut is not None:
            T.OperatorAddMutatingVariableInputs(self.b, mut)
        if inter is not None:
            T.OperatorAddIntermediates(self.b, inter)
        if external_options:
            T.OperatorAddLargeCustomOptionsOffset(self.b, _PLACEHOLDER)
            T.OperatorAddLargeCustomOptionsSize(self.b, _PLACEHOLDER)
        if opt2 is not None:
            T.OperatorAddBuiltinOptions2Type(self.b, _OPTIONS2_NUMBER[o.builtin_options2.table])
            T.OperatorAddBuiltinOptions2(self.b, opt2)
        if o.debug_metadata_index != -1:
            T.OperatorAddDebugMetadataIndex(self.b, o.debug_metadata_index)
        return T.OperatorEnd(self.b)

    def metadata(self, x: Metadata) -> int:
        name = self.str(x.name)
        tflite.MetadataStart(self.b)
        tflite.MetadataAddName(self.b, name)
        tflite.MetadataAddBuffer(self.b, x.buffer)
        return tflite.MetadataEnd(self.b)

    def tensor_map(self, t: TensorMap) -> int:
        name = self.str(t.name)
        tflite.TensorMapStart(self.b)
        tflite.TensorMapAddName(self.b, name)
        tflite.TensorMapAddTensorIndex(self.b, t.tensor_index)
        return tflite.TensorMapEnd(self.b)

    def signature(self, s: SignatureDef) -> int:
        T = tflite
        vi = self.tables(T.SignatureDefStartInputsVector, [self.tensor_map(t) for t in s.inputs])
        vo = self.tables(T.SignatureDefStartOutputsVector, [self.tensor_map(t) for t in s.outputs])
        key = self.str(s.signature_key)
        T.SignatureDefStart(self.b)
        T.SignatureDefAddInputs(self.b, vi)
        T.SignatureDefAddOutputs(self.b, vo)
        T.SignatureDefAddSignatureKey(self.b, key)
        T.SignatureDefAddSubgraphIndex(self.b, s.subgraph_index)
        return T.SignatureDefEnd(self.b)


def write_model(model: Model, *, external_buffers: bool | None = None) -> bytes:
    """Serialize a ``Model`` to .tflite bytes.

    ``external_buffers``: True stores the constant data (and the custom options of CUSTOM ops) after the
    flatbuffer, in the ``offset``/``size`` form of models over 2 GB; False stores it inside; None (the
    default) keeps the form the model was read in, and switches to the external form when the data would
    not fit in a 2 GB flatbuffer. Buffers named by metadata always stay inside.
    """
    return _Writer(model, external_buffers).write()
