"""write_model / ModelBuilder: read -> write -> read is the identity, and what the writer makes runs in LiteRT.

Both layouts are covered: constants inside the flatbuffer (16-byte aligned) and after it, in the
``offset``/``size`` form of models over 2 GB (tflite/converter/flatbuffer_export.cc's AppendBufferData).
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct

import numpy as np
import pytest

from litert_py.schema import ModelBuilder, read_model, write_model
from litert_py.schema.model import BuiltinOperator, OperatorCode, Options
from litert_py.schema.tables import default_options
from tests.oracle import oracle
from tests.schema import fixtures

CORPUS = fixtures.corpus_paths()
CORPUS_IDS = [os.path.basename(p)[: -len(".tflite")] for p in CORPUS]
WITH_REFS = fixtures.corpus_paths(with_refs=True)
LAYOUTS = [False, True]
LAYOUT_IDS = ["inline", "external"]


def test_corpus_is_present():
    assert len(CORPUS) >= 7, "the vendored corpus (tests/corpus/*.tflite) is missing"


@pytest.mark.parametrize("external", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("path", CORPUS, ids=CORPUS_IDS)
def test_corpus_round_trip(path, external):
    model = read_model(path)
    out = write_model(model, external_buffers=external)
    again = read_model(out)
    assert again == model
    assert write_model(again) == out  # the layout is kept, and writing is deterministic
    assert any(b.offset > 1 for b in again.buffers) == external


@pytest.mark.parametrize("external", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("name, model", fixtures.feature_models(), ids=[n for n, _ in fixtures.feature_models()])
def test_feature_round_trip(name, model, external):
    first = read_model(write_model(model, external_buffers=external))
    out = write_model(first)
    assert read_model(out) == first
    assert write_model(read_model(out)) == out


def _filled(model):
    """The model with every options table completed by its schema defaults (as the reader returns them)."""

    def fill(opts):
        if opts is None:
            return None
        full = Options(opts.table, dict(default_options(opts.table)))
        full.update({k: tuple(v) if isinstance(v, (list, bytes)) else v for k, v in opts.items()})
        return full

    subgraphs = tuple(
        dataclasses.replace(
            s,
            operators=tuple(
                dataclasses.replace(
                    o, builtin_options=fill(o.builtin_options), builtin_options2=fill(o.builtin_options2)
                )
                for o in s.operators
            ),
        )
        for s in model.subgraphs
    )
    return dataclasses.replace(model, subgraphs=subgraphs)


def test_feature_models_keep_what_was_written():
    """Beyond read(write(read(x))) == read(x): the first write loses nothing of a hand-built Model."""
    for name, model in fixtures.feature_models():
        if name == "operators":  # its old-style opcode reads back with builtin_code filled in (checked below)
            continue
        got = read_model(write_model(model))
        model = _filled(model)
        assert got.subgraphs == model.subgraphs, name
        assert got.operator_codes == model.operator_codes, name
        assert got.signature_defs == model.signature_defs and got.metadata == model.metadata, name
        assert got.external_buffers == model.external_buffers, name
        assert got.external_buffer_groups == model.external_buffer_groups, name
        assert [b.data.tobytes() for b in got.buffers] == [b.data.tobytes() for b in model.buffers], name
    model = _filled(fixtures.operators_model())
    got = read_model(write_model(model))
    assert got.subgraphs == model.subgraphs
    assert got.operator_codes[:-1] == model.operator_codes[:-1]
    assert got.operator_codes[-1] == OperatorCode(BuiltinOperator.RELU, None, 1, BuiltinOperator.RELU)


def test_external_layout_matches_litert_converter():
    model = fixtures.operators_model()
    data = write_model(model, external_buffers=True)
    got = read_model(data)
    external = [b for b in got.buffers if b.offset > 1]
    assert len(external) == sum(1 for b in model.buffers if b.data.size)
    ends = []
    for b in external:
        assert b.offset % 16 == 0 and b.size == b.data.size
        assert bytes(data[b.offset : b.offset + b.size]) == b.data.tobytes()
        ends.append(b.offset + b.size)
    first = min(b.offset for b in external)
    # Every offset lies after the flatbuffer: nothing of the tables is at or past the first buffer.
    assert struct.unpack_from("<I", data, 0)[0] < first
    custom = [o for o in got.subgraphs[0].operators if o.large_custom_options_offset > 1]
    assert len(custom) == 2  # the two CUSTOM ops; builtin ops never carry large custom options
    for o in custom:
        assert o.large_custom_options_offset % 16 == 0 and o.large_custom_options_offset >= max(ends) + 16
        assert o.large_custom_options_size == len(o.custom_options)
    assert len(data) % 16 == 0
    # Data is zero-copy: views of the file's bytes.
    assert all(np.shares_memory(b.data, np.frombuffer(data, np.uint8)) for b in external)


def test_inline_constants_are_16_byte_aligned():
    for path in CORPUS[:3]:
        data = write_model(read_model(path))
        base = np.frombuffer(data, np.uint8).ctypes.data
        for b in read_model(data).buffers:
            if b.data.size:
                assert (b.data.ctypes.data - base) % 16 == 0


def test_metadata_buffers_stay_inline():
    model = fixtures.control_flow_model()
    got = read_model(write_model(model, external_buffers=True))
    meta = {m.buffer for m in got.metadata} | set(got.metadata_buffer)
    assert meta and all(got.buffers[k].offset == 0 and got.buffers[k].data.size for k in meta)
    assert any(b.offset > 1 for k, b in enumerate(got.buffers) if k not in meta)


def test_default_layout_follows_the_source():
    m = read_model(write_model(fixtures.add_const_model()[0], external_buffers=True))
    assert any(b.offset > 1 for b in read_model(write_model(m)).buffers)
    assert not any(b.offset > 1 for b in read_model(write_model(m, external_buffers=False)).buffers)


def test_data_too_big_for_a_flatbuffer_goes_after_it(monkeypatch):
    from litert_py.schema import writer

    model = fixtures.add_const_model()[0]
    inline = read_model(write_model(model))
    assert not any(b.offset > 1 for b in inline.buffers)
    monkeypatch.setattr(writer, "FLATBUFFER_DATA_LIMIT", 16)  # stands for 2 GB
    got = read_model(write_model(model))
    assert any(b.offset > 1 for b in got.buffers) and got == inline


def test_model_builder_features():
    b = ModelBuilder(description="builder")
    x = b.input("x", [2], np.float32)
    s = b.tensor("s", [3], None, data=["a", b"bc", ""], tensor_type=5)
    k = b.add_metadata("note", b"hello")
    y = b.tensor("y", [2], np.float32)
    assert b.op("RELU", [x], [y]) == 0
    b.output(y)
    m = read_model(b.build())
    assert m.description == "builder" and m.metadata[0].name == "note"
    assert m.buffers[k].data.tobytes() == b"hello"
    raw = m.buffers[m.subgraphs[0].tensors[s].buffer].data.tobytes()
    assert struct.unpack_from("<i", raw)[0] == 3 and raw.endswith(b"abc")
    ext = read_model(b.build(external_buffers=True))
    assert ext == m and ext.buffers[k].offset == 0


@pytest.mark.parametrize(
    "op, table, field, value, kind",
    [
        ("STABLEHLO_COMPARE", "StablehloCompareOptions", "comparison_direction", -1, "uint32"),
        ("ADD", "AddOptions", "fused_activation_function", 128, "int8"),
        ("CONV_2D", "Conv2DOptions", "stride_w", 2**31, "int32"),
    ],
)
def test_option_values_outside_their_field_type_are_refused_by_name(op, table, field, value, kind):
    b = ModelBuilder()
    x = b.input("x", [2], np.float32)
    y = b.tensor("y", [2], np.float32)
    b.op(op, [x, x], [y], {field: value})
    b.output(y)
    with pytest.raises(ValueError, match=rf"{table}\.{field} takes {kind} values .*got {value}"):
        b.build()


# -- the oracle runs what the writer makes -----------------------------------------------------------
def _run_litert(content: bytes, inputs, resolver=None, steps=None):
    LiteRT, OpResolverType = oracle()
    kw = {"experimental_op_resolver_type": getattr(OpResolverType, resolver)} if resolver else {}
    it = LiteRT(model_content=content, num_threads=1, **kw)
    details = it.get_input_details()
    for d, x in zip(details, inputs):
        if list(d["shape"]) != list(np.shape(x)):
            it.resize_tensor_input(d["index"], list(np.shape(x)))
    it.allocate_tensors()
    outs = []
    for xs in steps or [inputs]:
        for d, x in zip(it.get_input_details(), xs):
            it.set_tensor(d["index"], x)
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return outs


RUNNABLE = fixtures.runnable_models()


@pytest.mark.parametrize("external", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("name, model, inputs", RUNNABLE, ids=[r[0] for r in RUNNABLE])
def test_written_single_op_models_run_in_litert(name, model, inputs, external):
    original = write_model(model, external_buffers=False)
    rewritten = write_model(read_model(original), external_buffers=external)
    want = _run_litert(original, inputs)[0]
    got = _run_litert(rewritten, inputs)[0]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    if name == "add_const":
        np.testing.assert_array_equal(got[0], inputs[0] + np.float32([[1, 2, 3], [4, 5, 6]]))
    elif name.startswith("densify"):
        np.testing.assert_array_equal(got[0], fixtures.BLOCK_DENSE if "block" in name else fixtures.SPARSE_DENSE)
    elif name == "float16_dequantize":
        np.testing.assert_array_equal(got[0], inputs[0] * np.float16([0.5, -1.25, 3, 1e-3]).astype(np.float32))
    elif name == "detection_postprocess":
        assert got[3][0] > 0  # the flexbuffer options were found: detections were made


@pytest.mark.parametrize("external", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("path", WITH_REFS, ids=[os.path.basename(p)[: -len(".tflite")] for p in WITH_REFS])
def test_written_corpus_models_match_references(path, external):
    """The corpus written back runs in LiteRT's reference kernels with the recorded outputs, bit for bit."""
    name = os.path.basename(path)[: -len(".tflite")]
    ref = np.load(os.path.join(os.path.dirname(path), "refs", name + ".npz"))
    meta = json.loads(str(ref["meta"]))
    assert not meta.get("input_shape_overrides"), "resize handling is by input shape below"
    count = sum(1 for k in ref.files if k.startswith("in_"))
    steps = [[ref[f"in_{i}"] for i in range(count)]]
    want = [[ref[f"out_{i}"] for i in range(sum(1 for k in ref.files if k.startswith("out_")))]]
    s = 1
    while f"s{s}_in_0" in ref.files:
        steps.append([ref[f"s{s}_in_{i}"] for i in range(count)])
        want.append([ref[k] for k in sorted(k for k in ref.files if k.startswith(f"s{s}_out_"))])
        s += 1
    data = write_model(read_model(path), external_buffers=external)
    got = _run_litert(data, steps[0], resolver="BUILTIN_REF", steps=steps)
    for k, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} invoke {k}")
