"""litert_py.ray_data on a local Ray started by the test (ray.init(num_cpus=2)): outputs equal to a plain loop.

Ray is a test dependency (extra ``test``): under CI=true these tests fail when it is missing; elsewhere they skip.
Named input/output columns and rows without the batch dimension on Ray are exercised by the batch guide
(docs/guide/batch-inference-ray.md, run by tests/test_guides.py), and by test_predictor_without_ray_names_rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py import Interpreter
from litert_py.batch import run_batch
from litert_py.errors import BatchError
from litert_py.ray_data import LiteRTPredictor

from .test_batch import KWS, WAKE, _assert_identical, _loop, _samples


def test_run_batch_on_ray_equals_loop(ray):
    xs = _samples(KWS, 12)
    _assert_identical(run_batch(KWS, xs, workers=2, batch_size=5, ray_address="local"), _loop(KWS, xs))


def test_run_batch_on_ray_names_the_failing_sample(ray):
    xs = _samples(KWS, 6)
    xs[4] = xs[4].astype(np.float32)
    with pytest.raises(BatchError, match="sample 4: ValueError") as e:
        run_batch(KWS, xs, workers=2, ray_address="local")
    assert e.value.index == 4


def test_stateful_model_per_row_group(ray):
    """Two interleaved streams of a streaming model, grouped by stream and ordered by time: each group equals a
    plain loop over that stream on a fresh interpreter."""
    xs = _samples(WAKE, 16)
    streams = {s: xs[s::2] for s in (0, 1)}
    rows = [{"stream": k % 2, "t": k // 2, "x": x} for k, x in enumerate(xs)]
    rows.reverse()  # the order column, not the input order, decides
    out_name = Interpreter(model_path=WAKE).get_output_details()[0]["name"]
    ds = (
        ray.data.from_items(rows)
        .groupby("stream")
        .map_groups(
            LiteRTPredictor,
            fn_constructor_kwargs={
                "model": WAKE.read_bytes(),
                "input_columns": ["x"],
                "sequence": True,
                "order_column": "t",
            },
            batch_format="numpy",
            concurrency=1,
        )
    )
    out = ds.take_all()
    for s, stream in streams.items():
        got = sorted((r for r in out if r["stream"] == s), key=lambda r: r["t"])
        _assert_identical([{out_name: r[out_name]} for r in got], _loop(WAKE, stream))


def test_predictor_without_ray_names_rows():
    """The adapter is a plain callable: its outputs and row errors are checked without starting Ray."""
    pred = LiteRTPredictor(str(KWS), input_columns=["x"], index_column="id")
    xs = _samples(KWS, 3)
    want = _loop(KWS, xs)
    got = pred({"id": np.array([10, 11, 12]), "x": np.stack(xs)})
    name = next(iter(want[0]))
    assert set(got) == {"id", name}
    np.testing.assert_array_equal(got[name], np.stack([w[name] for w in want]))
    bad = np.empty(3, object)  # a ragged column: the third row has the wrong dtype
    bad[:] = [xs[0], xs[1], xs[2].astype(np.float32)]
    with pytest.raises(BatchError, match="row 12: ValueError: Cannot set tensor") as e:
        pred({"id": np.array([10, 11, 12]), "x": bad})
    assert e.value.index == 12
