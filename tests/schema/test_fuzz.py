"""Fuzz the reader (and the Interpreter's load + allocate) with mutated real models.

Seeds are the vendored corpus (tests/corpus) and the schema fixtures (inline and external-buffer layouts).
Mutations: bit flips, byte overwrites, truncation, random int32s written at random positions, and length fields
(vector and string lengths, found by watching the reader decode the seed) enlarged. ``read_model`` must return a
Model or raise InvalidModelError, within 2 s; ``Interpreter(model_content=...)`` + ``allocate_tensors``
must succeed or raise a LiteRTError subclass.

A failure prints the seed name and the mutation list; ``mutate(seed_bytes(name), ops)`` rebuilds the bytes.
"""

from __future__ import annotations

import contextlib
import functools
import time

import numpy as np
import pytest
from flatbuffers import number_types as N
from hypothesis import assume, given
from hypothesis import strategies as st

import litert_py
from litert_py.errors import InvalidModelError, LiteRTError
from litert_py.schema import ModelBuilder, read_model, reader, write_model
from tests.schema import fixtures

DECODE_SECONDS = 2.0  # process CPU time: a hang guard (a seed decodes in <= 0.06 s), not a speed test
MEMORY_HEADROOM = 3 << 30  # bytes the Interpreter may allocate for one mutated model
INT32_SPECIALS = [0, 1, -1, 2, 4, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000, 0x3FFFFFFF]


@functools.cache
def seeds() -> dict[str, bytes]:
    out = {f"corpus:{p.rsplit('/', 1)[-1]}": open(p, "rb").read() for p in fixtures.corpus_paths()}
    for name, model in fixtures.feature_models():
        out[f"{name}"] = write_model(model)
        out[f"{name}:external"] = write_model(model, external_buffers=True)
    for name, model, _ in fixtures.runnable_models():  # conv_net*: every op has a kernel, so allocate runs
        out[f"{name}"] = write_model(model)
        out[f"{name}:external"] = write_model(model, external_buffers=True)
    return out


def seed_bytes(name: str) -> bytes:
    return seeds()[name]


@functools.cache
def length_fields(name: str) -> tuple[int, ...]:
    """Positions of every vector and string length the reader reads while decoding the seed."""
    positions: set[int] = set()
    table = reader._CheckedTable
    vector_len, string = table.VectorLen, table.String

    def watched_vector_len(self, off):
        p = off + self.Pos
        positions.add(p + self.Get(N.UOffsetTFlags, p))
        return vector_len(self, off)

    def watched_string(self, off):
        positions.add(off + self.Get(N.UOffsetTFlags, off))
        return string(self, off)

    table.VectorLen, table.String = watched_vector_len, watched_string
    try:
        read_model(seed_bytes(name))
    finally:
        table.VectorLen, table.String = vector_len, string
    return tuple(sorted(positions))


def mutate(data: bytes, ops) -> bytes:
    """Apply a list of mutations: ('flip', pos, bit) ('set', pos, bytes) ('truncate', n) ('int32', pos, v)."""
    buf = bytearray(data)
    for op in ops:
        kind = op[0]
        if kind == "truncate":
            del buf[op[1] :]
            continue
        if not buf:
            continue
        pos = op[1] % len(buf)
        if kind == "flip":
            buf[pos] ^= 1 << op[2]
        elif kind == "set":
            buf[pos : pos + len(op[2])] = op[2]
        elif kind == "int32" and pos + 4 <= len(buf):
            buf[pos : pos + 4] = (op[2] & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(buf)


@st.composite
def mutations(draw):
    name = draw(st.sampled_from(sorted(seeds())))
    data = seed_bytes(name)
    n = len(data)
    lengths = length_fields(name)
    position = st.one_of(
        st.integers(0, min(n, 4096) - 1),  # the tables usually sit at the front
        st.integers(0, n - 1),
        st.sampled_from(lengths).map(lambda p: p) if lengths else st.integers(0, n - 1),
    )
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "truncate", "int32", "length"]))
        if kind == "flip":
            ops.append(("flip", draw(position), draw(st.integers(0, 7))))
        elif kind == "set":
            ops.append(("set", draw(position), draw(st.binary(min_size=1, max_size=8))))
        elif kind == "truncate":
            ops.append(("truncate", draw(st.integers(0, n - 1))))
        elif kind == "int32":
            value = draw(
                st.one_of(st.sampled_from(INT32_SPECIALS + [n, n - 4, n + 4]), st.integers(-(2**31), 2**31 - 1))
            )
            ops.append(("int32", draw(position) & ~3, value))
        elif lengths:
            pos = draw(st.sampled_from(lengths))
            old = int.from_bytes(data[pos : pos + 4], "little")
            grow = draw(st.one_of(st.integers(1, 16), st.sampled_from([old, 1 << 16, n // 4, n, 0x7FFFFFFF])))
            ops.append(("int32", pos, old + grow))
    return name, ops


def _decode(data: bytes):
    start = time.process_time()  # not wall time: a loaded machine must not fail it
    try:
        result = read_model(data)
    except InvalidModelError as e:
        # The reader's last-resort handlers: reaching them means a check is missing (or the validator has a bug).
        assert "is corrupt (" not in str(e) and "could not be validated (" not in str(e), str(e)
        result = e
    elapsed = time.process_time() - start
    assert elapsed < DECODE_SECONDS, f"decoding took {elapsed:.2f} s"
    return result


@given(mutations())
def test_read_model_accepts_or_rejects_cleanly(case):
    name, ops = case
    _decode(mutate(seed_bytes(name), ops))  # anything but a Model or InvalidModelError fails the test


def test_length_fields_are_found():
    for name in seeds():
        assert length_fields(name), name


@pytest.mark.parametrize("name", sorted(seeds()))
def test_systematic_truncation_and_length_overflow(name):
    """Every seed truncated at 24 points, and (up to 24 of) its length fields set to huge values.
    A truncated file that still decodes (only padding was cut) decodes to the same model."""
    data = seed_bytes(name)
    whole = read_model(data)
    for cut in np.linspace(0, len(data) - 1, 24).astype(int):
        got = _decode(data[:cut])
        assert isinstance(got, InvalidModelError) or got == whole, cut
    fields = length_fields(name)
    for pos in fields[:: max(1, len(fields) // 24)][:24]:
        for value in (0x7FFFFFFF, len(data) // 4 + 1):
            _decode(mutate(data, [("int32", pos, value)]))


@contextlib.contextmanager
def memory_headroom(extra: int = MEMORY_HEADROOM):
    """Cap the address space at its current size + ``extra`` (Linux), so that a hostile shape that makes
    the runtime allocate without bound raises MemoryError here instead of waking the OOM killer."""
    try:
        import resource

        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (ImportError, OSError, StopIteration):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm + extra if hard == resource.RLIM_INFINITY else min(vm + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _memory_error(e: BaseException) -> bool:
    while e is not None:
        if isinstance(e, MemoryError) or "MemoryError" in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def test_hostile_conv_shape_fails_cleanly():
    """Found by the fuzzer: a conv input declared with 2**31 rows once made prepare ask for 216 GiB of scratch."""
    data = mutate(seed_bytes("conv_net"), [("int32", 1676, 2147483647), ("int32", 1160, 101)])
    with memory_headroom(), pytest.raises(LiteRTError) as err:
        litert_py.Interpreter(model_content=data).allocate_tensors()
    assert not _memory_error(err.value), err.value


@given(mutations())
def test_interpreter_load_and_allocate_raise_only_litert_errors(case):
    name, ops = case
    data = mutate(seed_bytes(name), ops)
    assume(data)  # empty content is tf.lite's "`model_path` or `model_content` must be specified." ValueError
    reproduce = f"reproduce: mutate(seed_bytes({name!r}), {ops!r})"
    try:
        with memory_headroom():
            litert_py.Interpreter(model_content=data).allocate_tensors()
    except LiteRTError as e:
        if _memory_error(e):
            pytest.fail(f"a hostile shape made the runtime try to allocate without bound: {e}\n{reproduce}")
    except Exception as e:  # noqa: BLE001 (anything else is the finding)
        pytest.fail(f"{type(e).__name__}: {e}\n{reproduce}")


@pytest.mark.parametrize("tensor_type", [18, 19, 20, 21, 22], ids=["BFLOAT16", "INT2", "UINT4", "E4M3FN", "E5M2"])
def test_interpreter_rejects_types_without_numpy_equivalent_cleanly(tensor_type):
    """Found by the fuzzer: a non-constant tensor of a type numpy lacks used to escape as a bare ValueError."""
    b = ModelBuilder()
    x = b.input("x", [2], None, tensor_type=tensor_type)
    b.output(x)
    with pytest.raises(LiteRTError, match="no numpy equivalent"):
        litert_py.Interpreter(model_content=b.build()).allocate_tensors()
