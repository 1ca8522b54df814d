"""read_model: every part of the schema decodes, constants are zero-copy, and every malformed file raises
InvalidModelError (a ValueError) saying what is wrong."""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct

import flatbuffers
import numpy as np
import pytest
import tflite

from litert_py.errors import InvalidModelError
from litert_py.schema import ModelBuilder, read_model, write_model
from litert_py.schema.model import (
    BlockwiseQuantization,
    Buffer,
    BuiltinOperator,
    DimensionMetadata,
    MultiAxisQuantization,
    Options,
    QuantizationParameters,
    SignatureDef,
    TensorMap,
    VariantSubType,
)
from litert_py.schema.reader import metadata_bytes
from tests.schema import fixtures

CORPUS = fixtures.corpus_paths()
CORPUS_IDS = [os.path.basename(p)[: -len(".tflite")] for p in CORPUS]


def _mmap_of(arr: np.ndarray):
    """The object a numpy view finally looks into (the mmap, or the caller's bytes)."""
    while isinstance(arr, (np.ndarray, memoryview)):
        arr = arr.base if isinstance(arr, np.ndarray) else arr.obj
    return arr


@pytest.mark.parametrize("path", CORPUS, ids=CORPUS_IDS)
def test_corpus_models_load_zero_copy(path):
    by_path = read_model(path)
    data = open(path, "rb").read()
    by_bytes = read_model(data)
    assert by_path == by_bytes
    assert by_path.subgraphs and by_path.buffers[0].data.size == 0
    whole = np.frombuffer(data, np.uint8)
    for a, b in zip(by_path.buffers, by_bytes.buffers):
        if a.data.size:
            assert not a.data.flags.writeable and not b.data.flags.writeable
            assert isinstance(_mmap_of(a.data), mmap.mmap)  # a view of the mapped file, not a copy
            assert np.shares_memory(b.data, whole) or _mmap_of(b.data) is data


def test_bytes_input_is_viewed_not_copied():
    data = write_model(fixtures.add_const_model()[0])
    m = read_model(data)
    c = m.buffers[m.subgraphs[0].tensors[1].buffer].data
    assert _mmap_of(c) is data
    np.testing.assert_array_equal(c.view(np.float32), [1, 2, 3, 4, 5, 6])


def test_bytearray_and_memoryview_inputs():
    data = write_model(fixtures.add_const_model()[0])
    for src in (bytearray(data), memoryview(data), memoryview(bytearray(data)), memoryview(data).cast("I")):
        m = read_model(src)
        assert m == read_model(data)
        assert all(not b.data.flags.writeable for b in m.buffers)


def test_external_buffers_are_views_of_the_file(tmp_path):
    path = tmp_path / "external.tflite"
    path.write_bytes(write_model(fixtures.add_const_model()[0], external_buffers=True))
    m = read_model(path)
    (b,) = [b for b in m.buffers if b.data.size]
    assert b.offset > 1 and b.offset % 16 == 0 and b.size == 24
    assert isinstance(_mmap_of(b.data), mmap.mmap)
    np.testing.assert_array_equal(b.data.view(np.float32), [1, 2, 3, 4, 5, 6])


# -- every schema feature decodes ---------------------------------------------------------------------
def _feature(name):
    return read_model(write_model(dict(fixtures.feature_models())[name]))


def test_subgraphs_signatures_metadata():
    m = _feature("control_flow")
    assert [s.name for s in m.subgraphs] == ["", "cond", "body", "init"]
    assert m.description == "control flow" and m.version == 3
    while_op = m.subgraphs[0].operators[1]
    assert while_op.builtin_options == Options("WhileOptions", {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    assert m.signature_defs[0] == SignatureDef(
        (TensorMap("x", 0), TensorMap("i", 1)), (TensorMap("x_out", 2), TensorMap("i_out", 3)), "serving_default", 0
    )
    assert metadata_bytes(m, "CONVERSION_METADATA") == bytes(range(40))
    assert metadata_bytes(m, "absent") is None
    assert m.metadata_buffer == (m.metadata[0].buffer,)


def test_operator_codes_custom_options_and_options2():
    m = _feature("operators")
    codes = m.operator_codes
    cumsum = codes[m.subgraphs[0].operators[0].opcode_index]
    assert (cumsum.builtin_code, cumsum.deprecated_builtin_code) == (BuiltinOperator.CUMSUM, 127)
    assert codes[-1].builtin_code == BuiltinOperator.RELU  # only deprecated_builtin_code was written
    ops = {codes[o.opcode_index].name: o for o in m.subgraphs[0].operators}
    assert ops["MyCustomOp"].custom_options[:1] == b"k" and ops["MyCustomOp"].inputs == (1, -1)
    assert ops["FlexSomething"].custom_options == bytes(range(256)) * 3
    composite = ops["STABLEHLO_COMPOSITE"].builtin_options2
    assert composite.table == "StableHLOCompositeOptions" and composite.name == "odml.npu_call"
    assert composite.composite_attributes == (1, 2) and composite.decomposition_subgraph_index == 1
    assert ops["STABLEHLO_CASE"].builtin_options2.branch_subgraph_indices == (1, 1)
    lstm = ops["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert lstm.mutating_variable_inputs == (False, False, True) and len(lstm.intermediates) == 1
    assert lstm.builtin_options.cell_clip == 1.0 and lstm.builtin_options.time_major is True


def test_large_custom_options_are_read_from_after_the_flatbuffer():
    data = write_model(fixtures.operators_model(), external_buffers=True)
    m = read_model(data)
    big = [o for o in m.subgraphs[0].operators if o.large_custom_options_offset > 1]
    assert {o.custom_options[:1] for o in big} == {b"k", b"\x00"}
    for o in big:
        start = o.large_custom_options_offset
        assert data[start : start + o.large_custom_options_size] == o.custom_options


def test_tensor_types_and_fields():
    m = _feature("tensor_types")
    t = {x.name: x for x in m.subgraphs[0].tensors}
    assert t["dyn"].shape_signature == (-1, 4) and t["dyn"].has_rank
    assert m.buffers[t["f16"].buffer].data.view(np.float16).tolist() == [1.5, -2, 65504]
    assert m.buffers[t["i4"].buffer].data.tobytes() == b"\x21\xf3\x07"
    assert t["variant"].variant_tensors == (VariantSubType((2, -1), 0, True), VariantSubType(None, 2, False))
    assert t["state"].is_variable and t["state_init"].is_variable and t["state_init"].buffer
    assert t["resource"].type == 13 and t["bf16"].type == 18 and t["i2"].type == 19 and t["f8"].type == 21
    assert t["unranked"].shape_signature == () and not t["unranked"].has_rank and t["scalar"].has_rank
    assert t["external"].external_buffer == 7
    assert m.external_buffers[0].packing == "none" and m.external_buffer_groups[0].name == "weights.bin"


def test_quantization_parameters():
    m = _feature("quantization")
    q = {x.name: x.quantization for x in m.subgraphs[0].tensors}
    index = {x.name: i for i, x in enumerate(m.subgraphs[0].tensors)}
    assert q["per_tensor"].scale == (0.5,) and q["per_tensor"].zero_point == (-3,)
    pc = q["per_channel"]
    assert pc.per_channel and pc.quantized_dimension == 1 and pc.scale == pytest.approx((0.1, 0.2, 0.3))
    assert (q["minmax"].min, q["minmax"].max) == ((-32.0,), (31.75,))
    assert not q["minmax_only"].is_quantized and q["minmax_only"].max == (1.0, 2.0)
    assert q["custom"].details_type == 1 and q["custom"].custom_details == b"\x00custom\xff"
    assert q["blockwise"].details == BlockwiseQuantization(index["scales"], index["zps"], 32)
    assert q["multi_axis"].details == MultiAxisQuantization(index["scales"], -1, 0, (0, 1))
    assert q["empty_q"] == QuantizationParameters()


def test_sparsity_parameters():
    m = _feature("operators")
    t = {x.name: x for x in m.subgraphs[0].tensors}
    for k in (1, 2, 3):
        sp = t[f"sparse{k}"].sparsity
        assert sp.traversal_order == (0, 1)
        assert sp.dim_metadata[1].array_segments == (0, 1, 3, 3) and sp.dim_metadata[1].array_indices == (1, 0, 3)
        assert sp.dim_metadata[1].array_segments_type == k
        assert m.buffers[t[f"sparse{k}"].buffer].data.view(np.float32).tolist() == [1, 2, 3]
    block = t["block_sparse"].sparsity
    assert block.block_map == (0, 1) and [d.dense_size for d in block.dim_metadata] == [2, 0, 2, 2]


# -- malformed models -------------------------------------------------------------------------------
def _add_model():
    return fixtures.add_const_model()[0]


def _with_tensor(model, index=0, **changes):
    sg = model.subgraphs[0]
    tensors = list(sg.tensors)
    tensors[index] = dataclasses.replace(tensors[index], **changes)
    sg = dataclasses.replace(sg, tensors=tuple(tensors))
    return dataclasses.replace(model, subgraphs=(sg,) + model.subgraphs[1:])


def _with_op(model, index=0, **changes):
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    ops[index] = dataclasses.replace(ops[index], **changes)
    return dataclasses.replace(model, subgraphs=(dataclasses.replace(sg, operators=tuple(ops)),) + model.subgraphs[1:])


def _sparse_model(**dim_changes):
    b = ModelBuilder()
    sp, values = fixtures.sparse_matrix(fixtures.SPARSE_DENSE)
    dims = list(sp.dim_metadata)
    dims[1] = dataclasses.replace(dims[1], **dim_changes)
    b.tensor(
        "w",
        fixtures.SPARSE_DENSE.shape,
        np.float32,
        data=values,
        sparsity=dataclasses.replace(sp, dim_metadata=tuple(dims)),
    )
    return b.model()


def _string_model(raw: bytes, shape=(2,)):
    b = ModelBuilder()
    b.tensor("s", shape, None, data=raw, tensor_type=5)
    return b.model()


def _while_model(cond, body):
    m = fixtures.control_flow_model()
    return _with_op(
        m, 1, builtin_options=Options("WhileOptions", {"cond_subgraph_index": cond, "body_subgraph_index": body})
    )


INVALID_MODELS = {
    "tensor-buffer-out-of-range": (lambda: _with_tensor(_add_model(), buffer=99), "refers to buffer 99"),
    "opcode-index-out-of-range": (lambda: _with_op(_add_model(), opcode_index=5), "opcode index 5"),
    "op-input-out-of-range": (lambda: _with_op(_add_model(), inputs=(0, 3)), "reads tensor 3 of 3"),
    "op-output-below-minus-one": (lambda: _with_op(_add_model(), outputs=(-2,)), "writes tensor -2"),
    "intermediate-out-of-range": (lambda: _with_op(_add_model(), intermediates=(7,)), "intermediate tensor 7"),
    "graph-input-out-of-range": (
        lambda: dataclasses.replace(
            _add_model(), subgraphs=(dataclasses.replace(_add_model().subgraphs[0], inputs=(4,)),)
        ),
        "input tensor index 4",
    ),
    "graph-output-minus-one": (
        lambda: dataclasses.replace(
            _add_model(), subgraphs=(dataclasses.replace(_add_model().subgraphs[0], outputs=(-1,)),)
        ),
        "output tensor index -1",
    ),
    "negative-dimension": (lambda: _with_tensor(_add_model(), shape=(2, -3)), "negative dimension"),
    "huge-shape": (lambda: _with_tensor(_add_model(), shape=(2**31 - 1,) * 3), "elements"),
    "unknown-type": (lambda: _with_tensor(_add_model(), type=99), "unknown type 99"),
    "constant-size-mismatch": (lambda: _with_tensor(_add_model(), 1, shape=(2, 4)), "needs 32 bytes"),
    "bad-shape-signature": (lambda: _with_tensor(_add_model(), shape_signature=(-2, 3)), "shape_signature"),
    "zero-points-mismatch": (
        lambda: _with_tensor(_add_model(), quantization=QuantizationParameters(scale=(1.0, 2.0), zero_point=(0,))),
        "Must have same number",
    ),
    "scale-without-zero-point": (
        lambda: _with_tensor(_add_model(), quantization=QuantizationParameters(scale=(1.0,))),
        "zero_point",
    ),
    "quantized-dimension-out-of-range": (
        lambda: _with_tensor(_add_model(), quantization=QuantizationParameters((1.0,), (0,), 2)),
        "quantized_dimension must be in range [0, 2)",
    ),
    "per-channel-count": (
        lambda: _with_tensor(_add_model(), quantization=QuantizationParameters((1.0,) * 4, (0,) * 4, 1)),
        "num_scales",
    ),
    "details-tensor-out-of-range": (
        lambda: _with_tensor(
            _add_model(), quantization=QuantizationParameters(details_type=2, details=BlockwiseQuantization(10, -1, 4))
        ),
        "quantization details",
    ),
    "variant-subtype": (
        lambda: _with_tensor(_add_model(), variant_tensors=(VariantSubType((1,), 77),)),
        "variant subtype",
    ),
    "external-buffer-id": (lambda: _with_tensor(_add_model(), external_buffer=3), "external buffer id 3"),
    "sparse-segments": (lambda: _sparse_model(array_segments=(0, 1, 4, 3)), "array_segments"),
    "sparse-index-range": (lambda: _sparse_model(array_indices=(1, 0, 4)), "array_indices"),
    "sparse-format": (lambda: _sparse_model(format=2), "unknown format 2"),
    "sparse-missing-indices": (lambda: _sparse_model(array_indices_type=0, array_indices=()), "lacks"),
    "sparse-traversal": (
        lambda: _with_tensor(
            _sparse_model(),
            sparsity=dataclasses.replace(_sparse_model().subgraphs[0].tensors[0].sparsity, traversal_order=(0, 0)),
        ),
        "permutation",
    ),
    "sparse-values-count": (
        lambda: _with_tensor(
            _sparse_model(),
            sparsity=dataclasses.replace(
                _sparse_model().subgraphs[0].tensors[0].sparsity,
                dim_metadata=(
                    DimensionMetadata(format=0, dense_size=3),
                    DimensionMetadata(
                        format=1,
                        array_segments=(0, 1, 2, 2),
                        array_indices=(1, 0),
                        array_segments_type=1,
                        array_indices_type=1,
                    ),
                ),
            ),
        ),
        "needs 8 bytes",
    ),
    "string-count": (lambda: _string_model(b"\x03\0\0\0" + b"\x14\0\0\0" * 4), "3 strings for 2"),
    "string-offsets": (lambda: _string_model(b"\x02\0\0\0\x10\0\0\0\x11\0\0\0\x40\0\0\0ab"), "offsets"),
    "string-short": (lambda: _string_model(b"\x02\0"), "at least 4 bytes"),
    "custom-without-code": (
        lambda: dataclasses.replace(
            _add_model(),
            operator_codes=(
                dataclasses.replace(_add_model().operator_codes[0], builtin_code=32, deprecated_builtin_code=32),
            ),
        ),
        "no custom_code",
    ),
    "opcode-version": (
        lambda: dataclasses.replace(
            _add_model(), operator_codes=(dataclasses.replace(_add_model().operator_codes[0], version=0),)
        ),
        "version 0",
    ),
    "subgraph-index-out-of-range": (lambda: _while_model(1, 9), "body_subgraph_index 9 of 4"),
    "subgraph-cycle": (lambda: _while_model(1, 0), "cycle: 0 -> 0"),
    "signature-subgraph": (
        lambda: dataclasses.replace(_add_model(), signature_defs=(SignatureDef((), (), "k", 3),)),
        "subgraph 3",
    ),
    "signature-tensor": (
        lambda: dataclasses.replace(_add_model(), signature_defs=(SignatureDef((TensorMap("x", 9),), (), "k"),)),
        "tensor 9 of 3",
    ),
    "metadata-buffer": (
        lambda: dataclasses.replace(_add_model(), metadata_buffer=(5,)),
        "metadata_buffer refers to buffer 5",
    ),
    "schema-version": (lambda: dataclasses.replace(_add_model(), version=2), "schema version 2 not equal"),
    "no-subgraphs": (lambda: dataclasses.replace(_add_model(), subgraphs=()), "no subgraphs"),
    "no-buffers": (lambda: dataclasses.replace(_add_model(), buffers=()), "no buffers"),
    "buffer-zero-not-empty": (
        lambda: dataclasses.replace(_add_model(), buffers=(Buffer(np.ones(4, np.uint8)),) + _add_model().buffers[1:]),
        "buffer 0 must be the empty sentinel",
    ),
}


@pytest.mark.parametrize("name", list(INVALID_MODELS))
def test_invalid_models_are_rejected(name):
    make, message = INVALID_MODELS[name]
    with pytest.raises(InvalidModelError, match=None) as info:
        read_model(write_model(make()))
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def _root_table(data: bytes) -> int:
    return struct.unpack_from("<I", data, 0)[0]


def _vector_length_position(data: bytes, accessor: str) -> int:
    """Where the length of the Model's vector ``accessor`` (e.g. 'Buffers') sits in the file."""
    model = tflite.Model.GetRootAs(data, 0)
    tab = model._tab
    slot = {"OperatorCodes": 6, "Subgraphs": 8, "Buffers": 12}[accessor]
    o = tab.Offset(slot)
    pos = tab.Pos + o
    return pos + struct.unpack_from("<I", data, pos)[0]


def _patched(data: bytes, pos: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def _bytes_cases():
    data = write_model(_add_model())
    ext = write_model(_add_model(), external_buffers=True)
    ops_ext = write_model(fixtures.operators_model(), external_buffers=True)
    root = _root_table(data)
    first_external = min(b.offset for b in read_model(ext).buffers if b.offset > 1)
    first_custom = min(
        o.large_custom_options_offset
        for o in read_model(ops_ext).subgraphs[0].operators
        if o.large_custom_options_offset > 1
    )
    return {
        "empty": (b"", "only 0 bytes"),
        "too-short": (data[:7], "only 7 bytes"),
        "no-identifier": (data[:4] + b"XXXX" + data[8:], "'TFL3' file identifier"),
        "truncated-half": (data[: len(data) // 2], "outside the"),
        "truncated-one-byte": (data[:-1], "not a valid Flatbuffer"),
        "root-offset-out-of-file": (_patched(data, 0, "<I", 0xFFFFFFF0), "outside the"),
        # The root table's soffset sends its vtable before the file start: struct would read from the end.
        "vtable-before-start": (_patched(data, root, "<i", root + 64), "offset -64 is outside"),
        "vtable-odd-size": (None, "bad vtable (size"),
        "vector-length-enlarged": (
            _patched(data, _vector_length_position(data, "Buffers"), "<I", 0x3FFFFFFF),
            "claims 1073741823 elements",
        ),
        "vector-length-past-end": (
            _patched(data, _vector_length_position(data, "Subgraphs"), "<I", len(data) // 4 - 2),
            "claims",
        ),
        "misaligned-root": (_patched(data, 0, "<I", root + 2), "misaligned"),
        "zero-offset": (_patched(data, root + 4, "<I", 0), "not a valid Flatbuffer"),
        "external-buffer-truncated": (ext[: first_external + 8], "outside the"),
        "large-custom-options-truncated": (ops_ext[: first_custom + 4], "large custom options"),
    }


BYTES_CASES = _bytes_cases()


@pytest.mark.parametrize("name", list(BYTES_CASES))
def test_corrupt_bytes_are_rejected(name):
    data, message = BYTES_CASES[name]
    if name == "vtable-odd-size":
        data = write_model(_add_model())
        root = _root_table(data)
        vtable = root - struct.unpack_from("<i", data, root)[0]
        data = _patched(data, vtable, "<H", struct.unpack_from("<H", data, vtable)[0] | 1)
    with pytest.raises(InvalidModelError) as info:
        read_model(data)
    assert message in str(info.value)


def _aliasing_model(n_entries: int, n_tables: int, name_bytes: int) -> bytes:
    """A subgraph whose ``n_entries`` tensor entries point at ``n_tables`` distinct tensor tables, all of which
    share one ``name_bytes``-long name: offsets alias, as a decompression bomb would have them."""
    b = flatbuffers.Builder(0)
    name = b.CreateString("n" * name_bytes)
    tensors = []
    for _ in range(n_tables):
        tflite.TensorStart(b)
        tflite.TensorAddName(b, name)
        tensors.append(tflite.TensorEnd(b))
    b.StartVector(4, n_entries, 4)
    for k in range(n_entries):
        b.PrependUOffsetTRelative(tensors[k % n_tables])
    vector = b.EndVector()
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, vector)
    sg = tflite.SubGraphEnd(b)
    tflite.BufferStart(b)
    buf = tflite.BufferEnd(b)
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(sg)
    subgraphs = b.EndVector()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(buf)
    buffers = b.EndVector()
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, buffers)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_aliased_tables_are_decoded_once():
    """5000 entries pointing at one tensor with a 20 kB name (100 MB if each were decoded): one decode, shared
    (the dataclasses are frozen)."""
    data = _aliasing_model(5000, 1, 20000)
    assert len(data) < 60_000
    tensors = read_model(data).subgraphs[0].tensors
    assert len(tensors) == 5000 and all(t is tensors[0] for t in tensors) and len(tensors[0].name) == 20000


def test_aliased_strings_cannot_explode():
    """3000 distinct tensors sharing one 30 kB name would decode to 90 MB of names from a 70 kB file."""
    data = _aliasing_model(3000, 3000, 30000)
    assert len(data) < 120_000
    with pytest.raises(InvalidModelError, match="offsets alias"):
        read_model(data)


def test_missing_file():
    with pytest.raises(InvalidModelError, match="Could not open"):
        read_model("/nonexistent/model.tflite")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tflite"
    path.write_bytes(b"")
    with pytest.raises(InvalidModelError, match="only 0 bytes"):
        read_model(path)
