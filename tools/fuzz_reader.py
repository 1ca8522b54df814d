#!/usr/bin/env python3
"""Coverage-guided fuzzing of the .tflite reader (and optionally Interpreter + allocate_tensors) with atheris.

    pip install atheris          # optional: the core never imports it
    python tools/fuzz_reader.py [--seconds 120] [--interpreter] [--corpus DIR] [libFuzzer flags...]

Seeds are litert_py's bundled model and small models built with the writer (several subgraphs, quantized,
sparse, string and variable tensors). Every input must give a Model or InvalidModelError from ``read_model``
(with ``--interpreter``: an Interpreter, allocate_tensors, or a LiteRTError); anything else is reported by
libFuzzer as a crash with the input saved as ``crash-<sha1>``, which then becomes a regression test
(next to tests/schema/test_fuzz.py). Memory and time per input are bounded by libFuzzer's
``-rss_limit_mb`` and ``-timeout`` (set here), the run by ``--seconds``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

_extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path.insert(1 + len(_extra), str(pathlib.Path(__file__).resolve().parents[1]))


def seed_models() -> dict[str, bytes]:
    import numpy as np

    from litert_py.schema.builder import ModelBuilder, quant
    from litert_py.schema.model import DimensionMetadata, SparsityParameters

    out = {
        "tiny_cnn": (
            pathlib.Path(__file__).resolve().parents[1] / "litert_py" / "models" / "tiny_cnn.tflite"
        ).read_bytes()
    }
    b = ModelBuilder()
    x = b.input("x", [1, 4], np.int8, quantization=quant(0.5, 3))
    w = b.const("w", np.ones((2, 4), np.int8), quantization=quant(0.25, 0))
    y = b.tensor("y", [1, 2], np.int8, quantization=quant(1.0, -1))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    b.signature("serving_default", {"x": x}, {"y": y})
    out["fc_int8"] = b.build()
    b = ModelBuilder()
    sp = SparsityParameters(
        traversal_order=(0, 1),
        dim_metadata=(
            DimensionMetadata(format=0, dense_size=4),
            DimensionMetadata(
                format=1,
                array_segments=(0, 1, 1, 2, 2),
                array_indices=(0, 3),
                array_segments_type=1,
                array_indices_type=1,
            ),
        ),
    )
    x = b.input("x", [1, 4], np.float32)
    w = b.tensor("w", [4, 4], np.float32, data=np.ones(2, np.float32).tobytes(), sparsity=sp)
    y = b.tensor("y", [1, 4], np.float32)
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    out["sparse_fc"] = b.build()
    b = ModelBuilder()
    i = b.input("i", (), np.int32)
    o = b.tensor("o", (), np.int32)
    b.op("WHILE", [i], [o], dict(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(o)
    b.subgraph("cond")
    ci = b.input("i", (), np.int32)
    c = b.tensor("c", (), np.bool_)
    b.op("LESS", [ci, b.const("n", np.int32(3))], [c])
    b.output(c)
    b.subgraph("body")
    bi = b.input("i", (), np.int32)
    i2 = b.tensor("i2", (), np.int32)
    b.op("ADD", [bi, b.const("one", np.int32(1))], [i2])
    b.output(i2)
    out["while"] = b.build()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--interpreter", action="store_true", help="also construct and allocate an Interpreter")
    ap.add_argument("--corpus", type=pathlib.Path, default=None, help="corpus directory (kept between runs)")
    a, rest = ap.parse_known_args()
    try:
        import atheris
    except ImportError:
        print("atheris is not installed (pip install atheris); it is an optional tool", file=sys.stderr)
        return 2
    with atheris.instrument_imports():
        import litert_py
        from litert_py import limits
        from litert_py.errors import InvalidModelError, LiteRTError
        from litert_py.schema.reader import read_model
    limits.MAX_ARENA_BYTES = 64 << 20

    def one_input(data: bytes) -> None:
        try:
            read_model(data)
        except InvalidModelError:
            return
        if a.interpreter:
            try:
                litert_py.Interpreter(model_content=data).allocate_tensors()
            except LiteRTError:
                pass

    corpus = a.corpus or pathlib.Path(tempfile.mkdtemp(prefix="litert_py_fuzz_reader_"))
    corpus.mkdir(parents=True, exist_ok=True)
    for name, data in seed_models().items():
        (corpus / f"seed_{name}.tflite").write_bytes(data)
    argv = [
        sys.argv[0],
        str(corpus),
        f"-max_total_time={a.seconds}",
        "-rss_limit_mb=3072",
        "-timeout=10",
        "-max_len=65536",
        *rest,
    ]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
