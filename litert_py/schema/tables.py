"""Generic access to the `tflite` package's generated flatbuffer tables.

The options tables (Conv2DOptions, ReducerOptions, ... about 150 of them) are decoded and written from a
field list derived once per table class, instead of one hand-written function per table. Each field's kind
(scalar, string or numeric vector with its numpy dtype) is found by calling the generated accessor on a
probe that records which flatbuffers primitive it reaches for.
"""

from __future__ import annotations

import functools
import importlib
import types
from dataclasses import dataclass

import flatbuffers
import numpy as np

from .model import Options, snake_case

_SKIP = {"Init"}


class _Found(Exception):
    def __init__(self, kind: str, flags=None):
        self.kind, self.flags = kind, flags


class _Probe:
    """Stands in for a flatbuffers Table: reports the first primitive an accessor uses."""

    Pos = 0
    Bytes = b""

    def Offset(self, vtable_offset):  # noqa: N802 (flatbuffers' spelling)
        return 4

    def Get(self, flags, off):  # noqa: N802
        raise _Found("scalar", flags)

    def String(self, off):  # noqa: N802
        raise _Found("string")

    def GetVectorAsNumpy(self, flags, off):  # noqa: N802
        raise _Found("vector", flags)


@dataclass(frozen=True)
class FieldSpec:
    name: str  # schema.fbs name, snake_case
    accessor: str  # generated accessor, CamelCase
    kind: str  # 'scalar' | 'string' | 'vector'
    dtype: np.dtype | None  # element dtype of vectors, value dtype of scalars


class StablehloCaseOptions:
    """schema.fbs ``table StablehloCaseOptions { branch_subgraph_indices:[int]; }``, written like flatc's output:
    the `tflite` package (2.18) predates it."""

    def Init(self, buf, pos):  # noqa: N802 (flatc's spelling, as every table here)
        self._tab = flatbuffers.table.Table(buf, pos)

    def BranchSubgraphIndices(self, j):  # noqa: N802
        o = self._tab.Offset(4)
        if not o:
            return 0
        return self._tab.Get(flatbuffers.number_types.Int32Flags, self._tab.Vector(o) + 4 * j)

    def BranchSubgraphIndicesAsNumpy(self):  # noqa: N802
        o = self._tab.Offset(4)
        return self._tab.GetVectorAsNumpy(flatbuffers.number_types.Int32Flags, o) if o else 0

    def BranchSubgraphIndicesLength(self):  # noqa: N802
        o = self._tab.Offset(4)
        return self._tab.VectorLen(o) if o else 0

    def BranchSubgraphIndicesIsNone(self):  # noqa: N802
        return self._tab.Offset(4) == 0


_EXTRA_TABLES = {
    "StablehloCaseOptions": types.SimpleNamespace(
        StablehloCaseOptions=StablehloCaseOptions,
        StablehloCaseOptionsStart=lambda b: b.StartObject(1),
        StablehloCaseOptionsAddBranchSubgraphIndices=lambda b, off: b.PrependUOffsetTRelativeSlot(0, off, 0),
        StablehloCaseOptionsEnd=lambda b: b.EndObject(),
    ),
}


@functools.cache
def _module(name: str):
    """The generated module of table ``name``: the `tflite` package's, or one of ``_EXTRA_TABLES``."""
    if name in _EXTRA_TABLES:
        try:
            return importlib.import_module(f"tflite.{name}")
        except ImportError:
            return _EXTRA_TABLES[name]
    return importlib.import_module(f"tflite.{name}")


@functools.cache
def table_class(name: str):
    """The generated class for table ``name`` (e.g. 'Conv2DOptions')."""
    return getattr(_module(name), name)


@functools.cache
def table_fields(name: str) -> tuple[FieldSpec, ...]:
    """Fields of an options table in schema order."""
    cls = table_class(name)
    members = [
        m
        for m in cls.__dict__
        if not m.startswith("_")
        and m not in _SKIP
        and not m.startswith("GetRootAs")
        and not m.endswith(("BufferHasIdentifier", "IsNone", "Length", "AsNumpy"))
    ]
    specs = []
    for m in members:
        obj = cls.__new__(cls)
        obj._tab = _Probe()
        probe_name = m + "AsNumpy" if hasattr(cls, m + "Length") else m
        try:
            getattr(obj, probe_name)()
        except _Found as f:
            dtype = np.dtype(f.flags.name) if f.flags is not None else None
            specs.append(FieldSpec(snake_case(m), m, f.kind, dtype))
            continue
        except TypeError:
            pass
        raise RuntimeError(f"cannot classify field {name}.{m}")  # a schema the package changed under us
    return tuple(specs)


def decode_options(name: str, table) -> Options:
    """Read every field of a generated options table object into an ``Options`` dict."""
    fields = {}
    for f in table_fields(name):
        if f.kind == "vector":
            arr = getattr(table, f.accessor + "AsNumpy")()
            fields[f.name] = tuple(arr.tolist()) if isinstance(arr, np.ndarray) else ()
        elif f.kind == "string":
            raw = getattr(table, f.accessor)()
            fields[f.name] = raw.decode("utf-8", "surrogateescape") if raw is not None else ""
        else:
            fields[f.name] = getattr(table, f.accessor)()
    return Options(name, fields)


@functools.cache
def default_options(name: str) -> Options:
    """The options a kernel sees when the model leaves the table out: every field at its schema default."""
    b = flatbuffers.Builder(16)
    mod = _module(name)
    getattr(mod, f"{name}Start")(b)
    b.Finish(getattr(mod, f"{name}End")(b))
    buf = bytes(b.Output())
    cls = table_class(name)
    obj = cls.__new__(cls)
    obj.Init(buf, int.from_bytes(buf[:4], "little"))
    return decode_options(name, obj)


def encode_options(builder, name: str, values: dict) -> int:
    """Write an options table; ``values`` may omit fields (schema defaults) but not name unknown ones."""
    specs = {f.name: f for f in table_fields(name)}
    unknown = set(values) - set(specs)
    if unknown:
        raise ValueError(f"{name} has no field(s) {sorted(unknown)}; fields: {sorted(specs)}")
    mod = _module(name)
    offsets = {}
    for key, val in values.items():  # vectors and strings must be built before the table starts
        f = specs[key]
        if f.kind == "vector":
            arr = np.frombuffer(val, f.dtype) if isinstance(val, (bytes, bytearray)) else np.asarray(val, f.dtype)
            offsets[key] = builder.CreateNumpyVector(arr.reshape(-1))
        elif f.kind == "string":
            offsets[key] = builder.CreateString(str(val).encode("utf-8", "surrogateescape"))
    getattr(mod, f"{name}Start")(builder)
    for key, val in values.items():
        f = specs[key]
        if key in offsets:
            arg = offsets[key]
        else:
            arg = bool(val) if f.dtype == np.bool_ else _scalar(val, f.dtype, f"{name}.{key}")
        getattr(mod, f"{name}Add{f.accessor}")(builder, arg)
    return getattr(mod, f"{name}End")(builder)


def _scalar(val, dtype: np.dtype, where: str = "value"):
    """``val`` as the Python number flatbuffers writes for a field of ``dtype``; an integer outside the field's range
    is a ValueError naming the field (flatbuffers' own check raises a bare TypeError deep in its builder)."""
    if dtype.kind == "f":
        return float(val)
    v = int(val)
    info = np.iinfo(dtype)
    if not info.min <= v <= info.max:
        raise ValueError(f"{where} takes {dtype.name} values ({info.min}..{info.max}), got {v}")
    return v
