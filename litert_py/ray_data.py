"""Ray Data adapter (extra ``[ray]``): run a .tflite model over a ``ray.data.Dataset``, one Interpreter per actor.

    import ray
    from litert_py.ray_data import LiteRTPredictor

    ds = ray.data.from_items([{"id": i, "image": x} for i, x in enumerate(images)])
    out = ds.map_batches(LiteRTPredictor, fn_constructor_kwargs={"model": model_bytes, "input_columns": ["image"]},
                         batch_size=32, concurrency=4)          # columns: id, plus one per model output

``LiteRTPredictor`` is a callable class for ``Dataset.map_batches`` (numpy batches): each actor creates its
Interpreter once, in ``__init__``; each call maps named columns to the model's inputs and returns the outputs as
columns (named as the outputs, or as ``output_columns`` says), keeping the other columns. A row's value is what
``set_tensor`` takes for that input, or the same without the leading batch dimension of 1 (then the outputs
lose theirs too). Stacking and stateless/stateful handling are those of ``litert_py.batch`` (``ModelRunner``).

Stateful models (streaming keyword spotters, LSTMs with state tensors), per row-group: with ``sequence=True``
each call is one sequence: the actor resets the model's variables, then runs the batch's rows in order (sorted by
``order_column`` when given). Use it with ``ds.groupby(KEY).map_groups(LiteRTPredictor, ...)``, which hands each
group (e.g. one audio stream) to one call.

``run_on_ray`` is the function behind ``litert_py.batch.run_batch(..., ray_address=...)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .batch import ModelRunner, Sample
from .errors import BatchError
from .runtime.values import check_value_type

__all__ = ["LiteRTPredictor", "run_on_ray"]

INDEX = "__index__"


class LiteRTPredictor:
    """A callable class for ``Dataset.map_batches`` / ``GroupedData.map_groups`` (``batch_format="numpy"``).

    ``model``: a path readable on every node, or the model's bytes (the safe choice on a cluster).
    ``input_columns``: column names in ``get_input_details()`` order, or ``{column: input name}``; default: columns
    named as the inputs. ``output_columns``: ``{output name: column}``; default: the output names.
    ``stack``, ``reset_variables``, ``interpreter_kwargs``: as in ``litert_py.batch.run_batch``.
    ``sequence``: each call is one sequence of a stateful model (reset, then rows in order).
    ``order_column``: with ``sequence``, the column that orders the rows. ``index_column``: a column whose value
    errors name (default: the row's position in the batch). ``keep_columns``: keep the non-input columns.
    """

    def __init__(
        self,
        model: str | os.PathLike | bytes,
        *,
        input_columns: Sequence[str] | Mapping[str, str] | None = None,
        output_columns: Mapping[str, str] | None = None,
        stack: bool | str = "auto",
        reset_variables: bool = False,
        sequence: bool = False,
        order_column: str | None = None,
        index_column: str | None = None,
        keep_columns: bool = True,
        interpreter_kwargs: Mapping[str, Any] | None = None,
    ):
        self.runner = ModelRunner(model, False if sequence else stack, reset_variables, interpreter_kwargs)
        names = self.runner.input_names
        if input_columns is None:
            self.columns = list(names)
        elif isinstance(input_columns, Mapping):
            unknown = [n for n in input_columns.values() if n not in names]
            if unknown or len(input_columns) != len(names):
                raise ValueError(f"input_columns {dict(input_columns)} must map a column to each input {names}")
            by_input = {n: c for c, n in input_columns.items()}
            self.columns = [by_input[n] for n in names]
        else:
            if len(input_columns) != len(names):
                raise ValueError(f"{len(input_columns)} input_columns for {len(names)} inputs {names}")
            self.columns = list(input_columns)
        self.output_columns = {n: (output_columns or {}).get(n, n) for n in self.runner.output_names}
        self.sequence, self.order_column = sequence, order_column
        self.index_column, self.keep_columns = index_column, keep_columns

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [c for c in self.columns if c not in batch]
        if missing:
            raise ValueError(f"batch has no column {missing}; it has {sorted(batch)}")
        n = len(batch[self.columns[0]])
        order = np.arange(n)
        if self.sequence and self.order_column is not None:
            order = np.argsort(batch[self.order_column], kind="stable")
        shapes = [tuple(d["shape"].tolist()) for d in self.runner.inputs]
        ranks = [len(s) for s in shapes]
        # rows given without the batch dimension of 1: add it for set_tensor, drop it from the outputs
        squeeze = all(np.ndim(batch[c][0]) == r - 1 for c, r in zip(self.columns, ranks)) and n > 0
        samples = []
        for r in order:
            arrays = [np.asarray(batch[c][r]) for c in self.columns]
            samples.append([a[None] for a in arrays] if squeeze else arrays)
        if self.sequence:
            self.runner.interpreter.reset_all_variables()
        try:
            results = self.runner.run(samples)
        except BatchError as e:
            row = int(order[e.index]) if e.index is not None else None
            label = batch[self.index_column][row] if self.index_column and row is not None else row
            raise BatchError(str(e).replace(f"sample {e.index}:", f"row {label}:", 1), label) from e
        out = {}
        if self.keep_columns:
            out = {k: v[order] if self.sequence else v for k, v in batch.items() if k not in self.columns}
        for name, col in self.output_columns.items():
            rows = [res[name][0] if squeeze else res[name] for res in results]
            out[col] = _column(rows)
        return out


def _column(rows: list[np.ndarray]) -> np.ndarray:
    """One column from per-row arrays: a tensor column when the shapes agree, else an object column."""
    if rows and all(r.shape == rows[0].shape for r in rows):
        return np.stack(rows)
    col = np.empty(len(rows), object)
    col[:] = rows
    return col


def run_on_ray(
    model: bytes,
    samples: Iterable[Sample],
    *,
    address: str,
    workers: int | None = None,
    batch_size: int = 16,
    stack: bool | str = "auto",
    reset_variables: bool = False,
    interpreter_kwargs: Mapping[str, Any] | None = None,
    progress=None,
) -> list[dict[str, np.ndarray]]:
    """``run_batch`` on Ray Data: ``address`` is ``"local"`` (start a local Ray for this call) or what
    ``ray.init(address=...)`` takes (``"auto"``, ``"ray://head:10001"``); a Ray already initialized in this process
    is used as it is. ``workers`` actors (default: 1 per CPU of the cluster)."""
    import ray

    runner = ModelRunner(model, stack, reset_variables, interpreter_kwargs)
    rows = []
    for i, s in enumerate(samples):
        try:
            arrays = runner.arrays(s)
            for a, d in zip(arrays, runner.inputs):  # checked here: Arrow cannot even hold mixed dtypes in a column
                if a.dtype != d["dtype"]:
                    check_value_type(a.dtype, d["dtype"], d["index"], d["name"])
        except Exception as e:
            raise BatchError(f"sample {i}: {type(e).__name__}: {e}", i) from e
        rows.append({INDEX: i, **dict(zip(runner.input_names, arrays))})
    del runner
    started = not ray.is_initialized()
    if started:
        ray.init(address=None if address == "local" else address, num_cpus=workers if address == "local" else None)
    try:
        concurrency = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        ds = ray.data.from_items(rows).map_batches(
            LiteRTPredictor,
            fn_constructor_kwargs=dict(
                model=model,
                stack=stack,
                reset_variables=reset_variables,
                index_column=INDEX,
                interpreter_kwargs=interpreter_kwargs,
            ),
            batch_size=batch_size,
            batch_format="numpy",
            concurrency=concurrency,
        )
        out = sorted(ds.take_all(), key=lambda row: int(row[INDEX]))
    except ray.exceptions.RayTaskError as e:
        cause = e.as_instanceof_cause()
        if isinstance(cause, BatchError):
            raise BatchError(str(cause).split("\n")[0].replace("row ", "sample ", 1), cause.index) from e
        raise
    finally:
        if started:
            ray.shutdown()
    if progress is not None:
        progress.update(len(out))
    names = [n for n in out[0] if n != INDEX] if out else []
    return [{n: np.asarray(row[n]) for n in names} for row in out]
