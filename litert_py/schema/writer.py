"""Dataclasses of ``schema.model`` back to .tflite bytes, and ``ModelBuilder`` to make small models.

``write_model(read_model(b))`` decodes to an equal ``Model``. Constant buffers are 16-byte aligned, as
TFLite's own writer does, so the oracle can map them directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import flatbuffers
import numpy as np
import tflite

from . import dtypes
from .model import (
    OP_OPTIONS,
    OPTIONS2_NAMES,
    OPTIONS_NAMES,
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
from .reader import FILE_IDENTIFIER
from .tables import encode_options

_OPTIONS_NUMBER = {name: num for num, name in OPTIONS_NAMES.items()}
_OPTIONS2_NUMBER = {name: num for num, name in OPTIONS2_NAMES.items()}
_SPARSE_VECTORS = {1: ("Int32Vector", np.int32), 2: ("Uint16Vector", np.uint16), 3: ("Uint8Vector", np.uint8)}


class _Writer:
    def __init__(self):
        self.b = flatbuffers.Builder(1024)

    def vec(self, values, dtype) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=dtype).reshape(-1))

    def str(self, s: str) -> int:
        return self.b.CreateString(s.encode("utf-8", "surrogateescape"))

    def tables(self, start_fn, offsets: Sequence[int]) -> int:
        start_fn(self.b, len(offsets))
        for off in reversed(offsets):
            self.b.PrependUOffsetTRelative(off)
        return self.b.EndVector()

    def aligned_bytes(self, data: np.ndarray, alignment: int = 16) -> int:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
        b = self.b
        b.assertNotNested()
        b.nested = True
        b.Prep(alignment, len(raw))
        b.head -= len(raw)
        b.Bytes[b.head : b.head + len(raw)] = raw
        b.vectorNumElems = len(raw)
        return b.EndVector()

    # -- tables ----------------------------------------------------------------------------------
    def model(self, m: Model) -> bytes:
        T = tflite
        buffers = [self.buffer(x) for x in m.buffers]
        subgraphs = [self.subgraph(s) for s in m.subgraphs]
        codes = [self.opcode(c) for c in m.operator_codes]
        metadata = [self.metadata(x) for x in m.metadata]
        sigs = [self.signature(s) for s in m.signature_defs]
        desc = self.str(m.description) if m.description else None
        vb = self.tables(T.ModelStartBuffersVector, buffers)
        vs = self.tables(T.ModelStartSubgraphsVector, subgraphs)
        vc = self.tables(T.ModelStartOperatorCodesVector, codes)
        vm = self.tables(T.ModelStartMetadataVector, metadata) if metadata else None
        vsig = self.tables(T.ModelStartSignatureDefsVector, sigs) if sigs else None
        vmb = self.vec(m.metadata_buffer, np.int32) if m.metadata_buffer else None
        T.ModelStart(self.b)
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
        self.b.Finish(T.ModelEnd(self.b), file_identifier=FILE_IDENTIFIER)
        return bytes(self.b.Output())

    def buffer(self, x: Buffer) -> int:
        data = self.aligned_bytes(x.data) if x.data.size and x.offset <= 1 else None
        tflite.BufferStart(self.b)
        if data is not None:
            tflite.BufferAddData(self.b, data)
        if x.offset:
            tflite.BufferAddOffset(self.b, x.offset)
            tflite.BufferAddSize(self.b, x.size)
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

    def subgraph(self, s: Subgraph) -> int:
        T = tflite
        tensors = [self.tensor(t) for t in s.tensors]
        ops = [self.operator(o) for o in s.operators]
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

    def tensor(self, t: Tensor) -> int:
        T = tflite
        shape = self.vec(t.shape, np.int32)
        name = self.str(t.name)
        q = self.quantization(t.quantization) if t.quantization is not None else None
        sp = self.sparsity(t.sparsity) if t.sparsity is not None else None
        sig = self.vec(t.shape_signature, np.int32) if t.shape_signature is not None else None
        variants = None
        if t.variant_tensors:
            offs = []
            for vshape, vtype in t.variant_tensors:
                vs = self.vec(vshape, np.int32) if vshape is not None else None
                T.VariantSubTypeStart(self.b)
                if vs is not None:
                    T.VariantSubTypeAddShape(self.b, vs)
                T.VariantSubTypeAddType(self.b, vtype)
                offs.append(T.VariantSubTypeEnd(self.b))
            variants = self.tables(T.TensorStartVariantTensorsVector, offs)
        T.TensorStart(self.b)
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
        return T.TensorEnd(self.b)

    def quantization(self, q: QuantizationParameters) -> int:
        T = tflite
        vmin = self.vec(q.min, np.float32) if q.min else None
        vmax = self.vec(q.max, np.float32) if q.max else None
        vs = self.vec(q.scale, np.float32) if q.scale else None
        vz = self.vec(q.zero_point, np.int64) if q.zero_point else None
        details = None
        if q.details_type == 1:
            custom = self.vec(np.frombuffer(q.custom_details, np.uint8), np.uint8)
            T.CustomQuantizationStart(self.b)
            T.CustomQuantizationAddCustom(self.b, custom)
            details = T.CustomQuantizationEnd(self.b)
        T.QuantizationParametersStart(self.b)
        for fn, v in ((T.QuantizationParametersAddMin, vmin), (T.QuantizationParametersAddMax, vmax),
                      (T.QuantizationParametersAddScale, vs), (T.QuantizationParametersAddZeroPoint, vz)):
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
        trav = self.vec(sp.traversal_order, np.int32) if sp.traversal_order else None
        bmap = self.vec(sp.block_map, np.int32) if sp.block_map else None
        vdims = self.tables(T.SparsityParametersStartDimMetadataVector, dims)
        T.SparsityParametersStart(self.b)
        if trav is not None:
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

    def operator(self, o: Operator) -> int:
        T = tflite
        vi, vo = self.vec(o.inputs, np.int32), self.vec(o.outputs, np.int32)
        opt1 = encode_options(self.b, o.builtin_options.table, o.builtin_options) if o.builtin_options is not None else None
        opt2 = encode_options(self.b, o.builtin_options2.table, o.builtin_options2) if o.builtin_options2 is not None else None
        inline_custom = o.custom_options and o.large_custom_options_offset <= 1
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
        if o.large_custom_options_offset:
            T.OperatorAddLargeCustomOptionsOffset(self.b, o.large_custom_options_offset)
            T.OperatorAddLargeCustomOptionsSize(self.b, o.large_custom_options_size)
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


def write_model(model: Model) -> bytes:
    """Serialize a ``Model`` to .tflite bytes."""
    return _Writer().model(model)


def quant(scale, zero_point=0, quantized_dimension: int = 0) -> QuantizationParameters:
    """Quantization parameters from a scale (or per-channel scales) and zero point(s)."""
    scales = tuple(float(np.float32(s)) for s in np.atleast_1d(scale))
    zps = np.broadcast_to(np.atleast_1d(zero_point), (len(scales),))
    return QuantizationParameters(scale=scales, zero_point=tuple(int(z) for z in zps),
                                  quantized_dimension=quantized_dimension)


class ModelBuilder:
    """Build small models in code: tests use it to make single-op models for both interpreters.

    >>> b = ModelBuilder()
    >>> x = b.input("x", [1, 4], np.float32)
    >>> y = b.tensor("y", [1, 4], np.float32)
    >>> b.op("RELU", [x], [y]); b.output(y)
    >>> model_bytes = b.build()
    """

    def __init__(self):
        self.buffers: list[Buffer] = [Buffer()]
        self.codes: list[OperatorCode] = []
        self.subgraphs: list[dict] = []
        self.signatures: list[SignatureDef] = []
        self.metadata: list[Metadata] = []
        self.subgraph()

    def subgraph(self, name: str = "") -> int:
        """Start a new subgraph; later calls add to it. Returns its index."""
        self.subgraphs.append({"tensors": [], "inputs": [], "outputs": [], "ops": [], "name": name})
        self.current = len(self.subgraphs) - 1
        return self.current

    def select(self, index: int) -> None:
        self.current = index

    @property
    def _sg(self) -> dict:
        return self.subgraphs[self.current]

    def tensor(self, name: str, shape, dtype, data=None, quantization: QuantizationParameters | None = None,
               is_variable: bool = False, shape_signature=None, sparsity=None, tensor_type: int | None = None) -> int:
        buf = 0
        ttype = tensor_type if tensor_type is not None else dtypes.from_numpy(dtype)
        if data is not None:
            arr = np.asarray(data)
            if ttype != dtypes.TensorType.STRING:
                arr = np.ascontiguousarray(arr, dtype=dtypes.to_numpy(ttype) if ttype != 17 else np.uint8)
            raw = arr.view(np.uint8).reshape(-1) if arr.dtype.kind != "S" else np.frombuffer(arr.tobytes(), np.uint8)
            self.buffers.append(Buffer(raw.copy()))
            buf = len(self.buffers) - 1
        t = Tensor(name=name, shape=tuple(int(d) for d in shape), type=ttype, buffer=buf,
                   quantization=quantization, is_variable=is_variable, sparsity=sparsity,
                   shape_signature=tuple(shape_signature) if shape_signature is not None else None)
        self._sg["tensors"].append(t)
        return len(self._sg["tensors"]) - 1

    def const(self, name: str, data, dtype=None, quantization=None) -> int:
        arr = np.asarray(data, dtype=dtype)
        return self.tensor(name, arr.shape, arr.dtype, data=arr, quantization=quantization)

    def input(self, name: str, shape, dtype, **kw) -> int:
        i = self.tensor(name, shape, dtype, **kw)
        self._sg["inputs"].append(i)
        return i

    def output(self, *indices: int) -> None:
        self._sg["outputs"].extend(indices)

    def op(self, op: str | int, inputs: Sequence[int], outputs: Sequence[int], options: dict | None = None,
           version: int = 1, custom_code: str | None = None, custom_options: bytes = b"",
           intermediates: Sequence[int] = ()) -> None:
        code = BuiltinOperator[op] if isinstance(op, str) and custom_code is None else op
        if custom_code is not None:
            code = BuiltinOperator.CUSTOM
        key = OperatorCode(builtin_code=int(code), custom_code=custom_code, version=version)
        if key not in self.codes:
            self.codes.append(key)
        opt1 = opt2 = None
        if int(code) in OP_OPTIONS:
            which, table = OP_OPTIONS[int(code)]
            if options is not None or which == 1:
                opts = Options(table, dict(options or {}))
                opt1, opt2 = (opts, None) if which == 1 else (None, opts)
        elif options:
            raise ValueError(f"{BuiltinOperator(code).name} has no options table")
        self._sg["ops"].append(Operator(
            opcode_index=self.codes.index(key), inputs=tuple(inputs), outputs=tuple(outputs),
            builtin_options=opt1, builtin_options2=opt2, custom_options=custom_options,
            intermediates=tuple(intermediates)))

    def signature(self, key: str, inputs: dict[str, int], outputs: dict[str, int], subgraph: int = 0) -> None:
        self.signatures.append(SignatureDef(
            inputs=tuple(TensorMap(n, i) for n, i in inputs.items()),
            outputs=tuple(TensorMap(n, i) for n, i in outputs.items()),
            signature_key=key, subgraph_index=subgraph))

    def model(self) -> Model:
        subgraphs = tuple(
            Subgraph(tensors=tuple(s["tensors"]), inputs=tuple(s["inputs"]), outputs=tuple(s["outputs"]),
                     operators=tuple(s["ops"]), name=s["name"])
            for s in self.subgraphs)
        return Model(version=3, operator_codes=tuple(self.codes), subgraphs=subgraphs,
                     buffers=tuple(self.buffers), description="litert_py.ModelBuilder",
                     metadata=tuple(self.metadata), signature_defs=tuple(self.signatures))

    def build(self) -> bytes:
        return write_model(self.model())
