"""``tflite-verify --workers N`` / ``--ray ADDRESS``: the samples of a comparison run in worker processes or Ray
actors, with the same report, bit for bit, as in one process.

The pieces are litert_py.batch's (one set of interpreters per worker, created once; chunks of samples; results
merged in input order; the progress bar advanced per chunk) and its Ray path's (``"local"`` starts a local Ray,
any other address goes to ``ray.init``, a Ray already initialized in this process is used as it is). What a
worker sends back is not outputs but, per sample, what it adds to each metric accumulator
(``Accumulator.contribution``): the parent adds them in sample order, so every sum is done in the same order as
in a plain loop.

A worker sets itself up by running the same comparison (``verify_pair`` / ``verify_single`` / ``verify_debug``
on the models' bytes) up to ``_run``, which hands over its interpreters, its step function and its
accumulators (``Captured``) instead of running samples.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing

from .metrics import Accumulator

_REQUEST = None  # (workers, ray_address, spec) while verify() runs with workers / ray_address
_CAPTURING = False  # a worker running the comparison up to _run
_STATE = None  # this worker's Captured comparison
_SPEC = None  # this worker's spec (set by the pool initializer)


class Captured(Exception):
    """Raised by ``_run`` in a worker setting up: the comparison's models, step function and accumulators."""

    def __init__(self, models, step_fn, sinks):
        super().__init__("captured")
        self.models, self.step_fn, self.sinks = models, step_fn, sinks


def capturing() -> bool:
    return _CAPTURING


def requested() -> bool:
    return _REQUEST is not None


@contextlib.contextmanager
def requesting(workers: int | None, ray_address: str | None, spec: tuple):
    """Within: ``_run`` sends the samples to ``workers`` processes or to Ray (``spec``: mode and models)."""
    global _REQUEST
    if workers is not None and workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    if ray_address is None and (workers or 0) <= 1:
        yield
        return
    _REQUEST = (workers, ray_address, spec)
    try:
        yield
    finally:
        _REQUEST = None


def _as_bytes(model) -> bytes:
    from ..schema.model import Model
    from ..schema.writer import write_model

    if isinstance(model, Model):
        return write_model(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    with open(model, "rb") as f:
        return f.read()


def _setup(spec: tuple) -> Captured:
    global _CAPTURING
    from .debug import verify_debug
    from .pair import verify_pair
    from .single import verify_single

    mode, *models = spec
    fn = {"pair": verify_pair, "single": verify_single, "debug": verify_debug}[mode]
    _CAPTURING = True
    try:
        fn(*models, None, 1, 0, False)
    except Captured as c:
        return c
    finally:
        _CAPTURING = False
    raise RuntimeError(f"tflite-verify worker: the {mode} comparison did not reach its samples")


def run_chunk(state: Captured, samples: list) -> list:
    """Per sample: per sink, what it added (Accumulator contributions, or top-1 values)."""
    from .run import _run_sample

    for s in state.sinks:
        if isinstance(s, Accumulator):  # histogram values: each chunk keeps its own first ones
            s.kept, s.n_kept, s.record = [], 0, []
    out = []
    for sample in samples:
        marks = [len(s.record) if isinstance(s, Accumulator) else len(s) for s in state.sinks]
        _run_sample(sample, state.models, state.step_fn)
        out.append([(s.record if isinstance(s, Accumulator) else s)[m:] for s, m in zip(state.sinks, marks)])
    return out


def _merge(sinks: list, per_sample: list) -> None:
    for added in per_sample:
        for sink, entries in zip(sinks, added):
            if isinstance(sink, Accumulator):
                for c in entries:
                    sink.add(c)
            else:
                sink.extend(entries)


# -- process pool ------------------------------------------------------------------------------------------
def _init_worker(spec: tuple) -> None:
    global _SPEC
    _SPEC = spec


def _pool_chunk(samples: list) -> list:
    global _STATE
    if _STATE is None:  # set up on the first chunk, not in the initializer (a failing initializer hangs a Pool)
        _STATE = _setup(_SPEC)
    return run_chunk(_STATE, samples)


class _RayWorker:
    def __init__(self, spec: tuple):
        self.state = _setup(spec)

    def run(self, samples: list) -> list:
        return run_chunk(self.state, samples)


def _chunks(samples: list, parts: int) -> list[list]:
    size = max(1, math.ceil(len(samples) / parts))
    return [samples[k : k + size] for k in range(0, len(samples), size)]


def run(samples: list, sinks: list, bar) -> None:
    """Run ``samples`` as ``_REQUEST`` asks, adding to ``sinks`` in sample order."""
    workers, address, spec = _REQUEST
    spec = (spec[0],) + tuple(_as_bytes(m) for m in spec[1:])
    done = 0
    if address is None:
        with multiprocessing.get_context().Pool(workers, initializer=_init_worker, initargs=(spec,)) as pool:
            for out in pool.imap(_pool_chunk, _chunks(samples, 4 * workers)):
                _merge(sinks, out)
                done += len(out)
                bar(done)
        return
    try:
        import ray
    except ImportError as e:
        from .run import VerifyError

        raise VerifyError(f"--ray needs Ray: pip install 'litert-py[ray]' ({e})") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=None if address == "local" else address, num_cpus=workers if address == "local" else None)
    try:
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(num_cpus=1)(_RayWorker)
        spec_ref = ray.put(spec)
        actors = [actor.remote(spec_ref) for _ in range(min(n, len(samples)))]
        futures = [actors[k % len(actors)].run.remote(c) for k, c in enumerate(_chunks(samples, 4 * len(actors)))]
        for f in futures:
            out = ray.get(f)
            _merge(sinks, out)
            done += len(out)
            bar(done)
        for a in actors:
            ray.kill(a)
    finally:
        if started:
            ray.shutdown()
