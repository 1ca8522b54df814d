"""Samples for tflite-verify: float inputs, one dict {input position: array} per sample.

- ``.npz``: one sample; keys are input names (as ``get_input_details()`` spells them, or signature input
  names) or positions ``"0"``, ``"1"``, ...
- ``.npy``: a leading sample axis, for a single-input model: ``x[k]`` is sample k.
- a folder: every ``.npz`` / ``.npy`` in it, in sorted name order.
- without data: ``samples`` random samples (``seed``): uniform over the range the quantized model's input (or
  the QUANTIZE right after it) can represent, else uniform in [-1, 1]; integer inputs uniform in [0, 10).

Stateful models (LSTM / RNN state, resource variables): a sample may hold a *sequence*: an array with one
more leading axis than the input (``[steps, *input_shape]``). The models' variables are reset at the start of
each sample, the steps run in order, and every step's tensors count in the metrics.
"""

from __future__ import annotations

import pathlib

import numpy as np


class SampleError(ValueError):
    """Bad --data / samples for the model (names, shapes, files)."""


def _load_npz(path: pathlib.Path, details: list[dict], names: dict[str, int]) -> dict[int, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            items = {k: z[k] for k in z.files}
    except Exception as e:
        raise SampleError(f"{path}: cannot read as .npz ({type(e).__name__}: {e})") from None
    out = {}
    for k, v in items.items():
        if k in names:
            pos = names[k]
        elif k.isdigit() and int(k) < len(details):
            pos = int(k)
        else:
            known = ", ".join(repr(d["name"]) for d in details)
            raise SampleError(
                f"{path}: key {k!r} is neither an input name ({known}) nor a position 0..{len(details) - 1}"
            )
        out[pos] = v
    missing = [d["name"] for p, d in enumerate(details) if p not in out]
    if missing:
        raise SampleError(f"{path}: no value for input(s) {missing}")
    return out


def load_samples(path, details: list[dict], signature_names: dict[str, int] | None = None) -> list[dict]:
    """Samples from a .npz, a .npy or a folder of them (see the module docstring)."""
    p = pathlib.Path(path)
    names = {d["name"]: k for k, d in enumerate(details)} | dict(signature_names or {})
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix in (".npz", ".npy"))
        if not files:
            raise SampleError(f"{p}: no .npz or .npy files in this folder")
        return [s for f in files for s in load_samples(f, details, signature_names)]
    if not p.exists():
        raise SampleError(f"{p}: no such file or folder")
    if p.suffix == ".npz":
        return [_load_npz(p, details, names)]
    if p.suffix == ".npy":
        if len(details) != 1:
            raise SampleError(
                f"{p}: a .npy holds samples of a single-input model; this model has "
                f"{len(details)} inputs (use .npz files with one key per input)"
            )
        try:
            x = np.load(p, allow_pickle=False)
        except Exception as e:
            raise SampleError(f"{p}: cannot read as .npy ({type(e).__name__}: {e})") from None
        if x.ndim == 0:
            raise SampleError(f"{p}: a .npy needs a leading sample axis, got a scalar")
        return [{0: x[k]} for k in range(x.shape[0])]
    raise SampleError(f"{p}: expected a .npz, a .npy or a folder of them")


def _fits(s, shape, sig) -> bool:
    return len(s) == len(shape) and all(a == b or g == -1 for a, b, g in zip(s, shape, sig))


def check_sample(sample: dict, details: list[dict]) -> dict:
    """Each value has the input's shape (or a sequence of them); returns {position: (steps, ...) array}."""
    out = {}
    for k, d in enumerate(details):
        v = np.asarray(sample[k])
        shape = tuple(int(s) for s in d["shape"])
        sig = tuple(int(s) for s in d.get("shape_signature", d["shape"]))
        if v.dtype.kind not in "biuf":
            raise SampleError(f"input {d['name']!r}: expected numbers, got {v.dtype}")
        if _fits(v.shape, shape, sig):
            out[k] = v[None]
        elif v.ndim == len(shape) + 1 and _fits(v.shape[1:], shape, sig):
            out[k] = v
        elif v.size == int(np.prod(shape)) and v.ndim < len(shape):
            out[k] = v.reshape((1,) + shape)
        else:
            raise SampleError(
                f"input {d['name']!r}: expected shape {list(shape)} (or [steps, *shape] for a "
                f"sequence), got {list(v.shape)}"
            )
    steps = {v.shape[0] for v in out.values()}
    if len(steps) > 1:
        raise SampleError(f"every input of a sample must have the same number of steps, got {sorted(steps)}")
    return out


def random_samples(details: list[dict], ranges: list[tuple[float, float] | None], n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        s = {}
        for k, d in enumerate(details):
            shape = tuple(max(int(x), 1) for x in d["shape"])
            if np.dtype(d["dtype"]).kind in "iub" and ranges[k] is None:
                s[k] = rng.integers(0, 10, shape).astype(d["dtype"])
            else:
                lo, hi = ranges[k] or (-1.0, 1.0)
                s[k] = rng.uniform(lo, hi, shape).astype(np.float32)
        out.append(s)
    return out
