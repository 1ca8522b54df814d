"""``ModelBuilder`` and ``quant``: build small models in code (tests and tools make single-op models with them);
``ModelBuilder.build`` serializes through ``writer.write_model``.

Sources matched: tflite/schema/schema.fbs (the tables and fields the builder fills; version 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import dtypes
from .dtypes import string_buffer
from .model import (
    OP_OPTIONS,
    Buffer,
    BuiltinOperator,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    Options,
    QuantizationParameters,
    SignatureDef,
    Subgraph,
    Tensor,
    TensorMap,
    VariantSubType,
)
from .writer import write_model


def quant(scale, zero_point=0, quantized_dimension: int = 0) -> QuantizationParameters:
    """Quantization parameters from a scale (or per-channel scales) and zero point(s)."""
    scales = tuple(float(np.float32(s)) for s in np.atleast_1d(scale))
    zps = np.broadcast_to(np.atleast_1d(zero_point), (len(scales),))
    return QuantizationParameters(
        scale=scales, zero_point=tuple(int(z) for z in zps), quantized_dimension=quantized_dimension
    )


class ModelBuilder:
    """Build small models in code: tests use it to make single-op models for both interpreters.

    >>> b = ModelBuilder()
    >>> x = b.input("x", [1, 4], np.float32)
    >>> y = b.tensor("y", [1, 4], np.float32)
    >>> b.op("RELU", [x], [y]); b.output(y)
    >>> model_bytes = b.build()

    Every schema feature can be reached: several subgraphs (``subgraph``/``select``), signatures,
    metadata (``add_metadata``), custom ops and options, BuiltinOptions2 ops, variable, sparse, variant
    and quantized tensors (any ``QuantizationParameters``), and the external-buffer layout
    (``build(external_buffers=True)``).
    """

    def __init__(self, description: str = "litert_py.ModelBuilder"):
        self.buffers: list[Buffer] = [Buffer()]
        self.codes: list[OperatorCode] = []
        self.subgraphs: list[dict] = []
        self.signatures: list[SignatureDef] = []
        self.metadata: list[Metadata] = []
        self.description = description
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

    def buffer(self, data) -> int:
        """Add a buffer holding ``data`` (bytes or an array, stored as its raw bytes); returns its index."""
        raw = (
            np.frombuffer(data, np.uint8)
            if isinstance(data, (bytes, bytearray))
            else np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        )
        self.buffers.append(Buffer(raw.copy()))
        return len(self.buffers) - 1

    def add_metadata(self, name: str, data: bytes) -> int:
        """Add a Model.metadata entry (e.g. 'min_runtime_version'); returns its buffer index."""
        k = self.buffer(data)
        self.metadata.append(Metadata(name, k))
        return k

    def tensor(
        self,
        name: str,
        shape,
        dtype,
        data=None,
        quantization: QuantizationParameters | None = None,
        is_variable: bool = False,
        shape_signature=None,
        sparsity=None,
        tensor_type: int | None = None,
        has_rank: bool = False,
        variant_tensors: Sequence[VariantSubType] = (),
        external_buffer: int = 0,
    ) -> int:
        """Add a tensor to the current subgraph; ``data`` makes it constant (raw bytes for INT4, sparse and
        string tensors: INT4 packed two per byte, STRING in TFLite's string-buffer layout or as a
        sequence of bytes/str)."""
        buf = 0
        ttype = tensor_type if tensor_type is not None else dtypes.from_numpy(dtype)
        if data is not None:
            if isinstance(data, (bytes, bytearray)):
                buf = self.buffer(data)
            elif ttype == dtypes.TensorType.STRING:
                arr = np.asarray(data)
                buf = self.buffer(arr if arr.dtype == np.uint8 else string_buffer(arr))
            else:
                try:
                    storage = np.uint8 if ttype == dtypes.TensorType.INT4 else dtypes.to_numpy(ttype)
                except ValueError:  # BFLOAT16, INT2, ...: no numpy type, the caller gives the raw bytes
                    storage = None
                buf = self.buffer(np.ascontiguousarray(data, dtype=storage))
        t = Tensor(
            name=name,
            shape=tuple(int(d) for d in shape),
            type=ttype,
            buffer=buf,
            quantization=quantization,
            is_variable=is_variable,
            sparsity=sparsity,
            shape_signature=tuple(shape_signature) if shape_signature is not None else None,
            has_rank=has_rank,
            variant_tensors=tuple(variant_tensors),
            external_buffer=external_buffer,
        )
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

    def op(
        self,
        op: str | int,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: dict | None = None,
        version: int = 1,
        custom_code: str | None = None,
        custom_options: bytes = b"",
        intermediates: Sequence[int] = (),
        mutating_variable_inputs: Sequence[bool] = (),
    ) -> int:
        """Append an operator to the current subgraph; returns its index there. ``options`` fill the op's
        BuiltinOptions (or BuiltinOptions2) table; a CUSTOM op is named by ``custom_code``."""
        code = BuiltinOperator[op] if isinstance(op, str) and custom_code is None else op
        if custom_code is not None:
            code = BuiltinOperator.CUSTOM
        key = OperatorCode(
            builtin_code=int(code),
            custom_code=custom_code,
            version=version,
            deprecated_builtin_code=min(int(code), BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES),
        )
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
        self._sg["ops"].append(
            Operator(
                opcode_index=self.codes.index(key),
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                builtin_options=opt1,
                builtin_options2=opt2,
                custom_options=bytes(custom_options),
                intermediates=tuple(intermediates),
                mutating_variable_inputs=tuple(mutating_variable_inputs),
            )
        )
        return len(self._sg["ops"]) - 1

    def signature(self, key: str, inputs: dict[str, int], outputs: dict[str, int], subgraph: int = 0) -> None:
        self.signatures.append(
            SignatureDef(
                inputs=tuple(TensorMap(n, i) for n, i in inputs.items()),
                outputs=tuple(TensorMap(n, i) for n, i in outputs.items()),
                signature_key=key,
                subgraph_index=subgraph,
            )
        )

    def model(self) -> Model:
        subgraphs = tuple(
            Subgraph(
                tensors=tuple(s["tensors"]),
                inputs=tuple(s["inputs"]),
                outputs=tuple(s["outputs"]),
                operators=tuple(s["ops"]),
                name=s["name"],
            )
            for s in self.subgraphs
        )
        return Model(
            version=3,
            operator_codes=tuple(self.codes),
            subgraphs=subgraphs,
            buffers=tuple(self.buffers),
            description=self.description,
            metadata=tuple(self.metadata),
            signature_defs=tuple(self.signatures),
        )

    def build(self, external_buffers: bool | None = None) -> bytes:
        """The model's bytes; ``external_buffers=True`` stores constants after the flatbuffer (see
        ``write_model``; by default only when they would not fit in a 2 GB flatbuffer)."""
        return write_model(self.model(), external_buffers=external_buffers)
