"""tflite-run's inputs and outputs: the Session (subgraph 0 or one SignatureDef), --input files, random values,
--sequence files, and outputs printed (quantized ones dequantized too) or saved raw."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from ..runtime.values import check_value_shape, check_value_type

BUNDLED_MODEL = "tiny_cnn.tflite"


class UsageError(Exception):
    """A bad argument: exit status 2."""


class ModelError(Exception):
    """The model failed to load, prepare or run: exit status 1."""


def _one_line(e: BaseException | str) -> str:
    text = str(e) if not isinstance(e, str) else e
    return " ".join(part.strip() for part in text.splitlines() if part.strip()) or type(e).__name__


def bundled_model_path() -> str:
    return str(resources.files("litert_py") / "models" / BUNDLED_MODEL)


def _type_name(tensor_type: int) -> str:
    from litert_py.schema import dtypes

    return dtypes.type_name(tensor_type)


def _dtype_name(dtype) -> str:
    from litert_py.schema import dtypes

    return dtypes.upper_name(dtype)


def safe_filename(name: str, taken: set[str], fallback: str) -> str:
    """A file name (no directories, no leading dot) from a tensor name, unique within ``taken``."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or fallback
    candidate, k = base, 1
    while candidate.lower() in taken:
        candidate = f"{base}_{k}"
        k += 1
    taken.add(candidate.lower())
    return candidate


def random_array(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Floats uniform in [-1, 1); integers over their full range; bools fair; strings short and lowercase."""
    dt = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(-1.0, 1.0, shape) + 1j * rng.uniform(-1.0, 1.0, shape)).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "SO":
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)
        flat = [rng.choice(letters, int(rng.integers(1, 9))).tobytes() for _ in range(int(np.prod(shape)))]
        return np.array(flat, dtype=object).reshape(shape)
    raise UsageError(f"cannot make a random value of type {dt}; give this input with --input")


def quant(details: dict) -> dict | None:
    qp = details.get("quantization_parameters") or {}
    scales = np.asarray(qp.get("scales", ()), dtype=np.float64)
    if scales.size == 0:
        return None
    return {
        "scales": [float(s) for s in scales],
        "zero_points": [int(z) for z in qp.get("zero_points", ())],
        "quantized_dimension": int(qp.get("quantized_dimension", 0)),
    }


def _quant_text(q: dict | None) -> str:
    if q is None:
        return "not quantized"
    if len(q["scales"]) == 1:
        zp = q["zero_points"][0] if q["zero_points"] else 0
        return f"scale {q['scales'][0]:.6g}, zero_point {zp}"
    return f"per-channel: {len(q['scales'])} scales on dim {q['quantized_dimension']}"


def _shape(arr_or_list) -> list[int]:
    return [int(d) for d in arr_or_list]


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def _stats(arr: np.ndarray) -> dict | None:
    if arr.size == 0 or arr.dtype.kind not in "biuf":
        return None
    a = arr.astype(np.float64)
    return {"min": _finite(float(a.min())), "max": _finite(float(a.max())), "mean": _finite(float(a.mean()))}


# -- the model being run: subgraph 0 of the Interpreter, or one SignatureDef ------------------------------
@dataclass
class Port:
    """One input or output as the user names it, with its tensor details."""

    name: str  # the name used for --input and output files: tensor name, or signature name
    position: int
    details: dict
    aliases: tuple[str, ...] = ()  # other accepted names (tensor name <-> signature name)


@dataclass
class Session:
    interpreter: object
    inputs: list[Port]
    outputs: list[Port]
    signature: str | None = None
    subgraph_index: int = 0
    runner: object = None
    feeds: dict[int, np.ndarray] = field(default_factory=dict)  # input position -> value
    sources: dict[int, str] = field(default_factory=dict)  # input position -> file it came from

    def find_input(self, name: str) -> Port | None:
        """The input called ``name``: exact name, then alias, then 0-based position."""
        for port in self.inputs:
            if name == port.name:
                return port
        for port in self.inputs:
            if name in port.aliases:
                return port
        if re.fullmatch(r"\d+", name) and int(name) < len(self.inputs):
            return self.inputs[int(name)]
        return None

    def allocate(self) -> bool:
        """Resize inputs to the fed shapes where the model allows it (-1 dims), then allocate tensors.

        False when allocation is left to the first invoke (a SignatureRunner of another subgraph)."""
        it = self.interpreter
        if self.runner is None:
            for pos, arr in self.feeds.items():
                d = self.inputs[pos].details
                if _resizable(d, arr):
                    it.resize_tensor_input(d["index"], list(arr.shape), strict=True)
            it.allocate_tensors()
            return True
        sub = getattr(self.runner, "_sub", None)
        for pos, arr in self.feeds.items():
            try:
                _check_signature_feed(self.inputs[pos], pos, arr)
            except ValueError as e:
                raise self.input_error(pos, e) from None
            if sub is not None and _resizable(self.inputs[pos].details, arr):
                sub.shapes[self.inputs[pos].details["index"]] = tuple(arr.shape)
                sub.allocated = False
        if sub is not None:
            if not sub.allocated:
                sub.prepare()
            return True
        if self.subgraph_index == 0:
            it.allocate_tensors()
            return True
        return False

    def refresh_details(self) -> None:
        """Details (shapes) after allocation."""
        if self.runner is None:
            ins, outs = self.interpreter.get_input_details(), self.interpreter.get_output_details()
        else:
            ind, outd = self.runner.get_input_details(), self.runner.get_output_details()
            ins, outs = [ind[p.name] for p in self.inputs], [outd[p.name] for p in self.outputs]
        for port, d in zip(self.inputs, ins):
            port.details = d
        for port, d in zip(self.outputs, outs):
            port.details = d

    def set_inputs(self) -> None:
        if self.runner is not None:
            return  # the runner sets them on every call
        for pos, arr in self.feeds.items():
            try:
                self.interpreter.set_tensor(self.inputs[pos].details["index"], arr)
            except ValueError as e:
                raise self.input_error(pos, e) from None

    def input_error(self, pos: int, e: Exception) -> UsageError:
        return UsageError(f"input {self.inputs[pos].name!r} ({self.sources.get(pos, 'random')}): {_one_line(e)}")

    def invoke(self) -> list[np.ndarray] | None:
        if self.runner is None:
            self.interpreter.invoke()
            return None
        result = self.runner(**{self.inputs[pos].name: arr for pos, arr in self.feeds.items()})
        return [result[p.name] for p in self.outputs]

    def results(self, from_runner: list[np.ndarray] | None) -> list[np.ndarray]:
        if from_runner is not None:
            return from_runner
        return [self.interpreter.get_tensor(p.details["index"]) for p in self.outputs]


def _resizable(details: dict, arr: np.ndarray) -> bool:
    """The array's shape differs from the input's only in dims its shape_signature marks -1."""
    shape, sig = _shape(details["shape"]), _shape(details.get("shape_signature", details["shape"]))
    if list(arr.shape) == shape or arr.ndim != len(sig):
        return False
    return all(s == -1 or s == a for s, a in zip(sig, arr.shape))


def _check_signature_feed(port: Port, pos: int, arr: np.ndarray) -> None:
    """set_tensor's checks for a signature input (SignatureRunner itself would resize to any shape)."""
    d = port.details
    want = np.dtype(d["dtype"])
    if want.kind not in "SO":
        check_value_type(arr.dtype, want, port.name, d["name"])
    if _resizable(d, arr):
        return
    check_value_shape(arr, _shape(d["shape"]), pos)


def open_session(model_path: str, args) -> Session:
    from litert_py import Interpreter, LiteRTError

    if not os.path.exists(model_path):
        raise ModelError(f"cannot open model '{model_path}': no such file")
    if os.path.isdir(model_path):
        raise ModelError(f"cannot open model '{model_path}': it is a directory")
    delegates = []
    for name in getattr(args, "delegate", None) or []:
        from litert_py import load_delegate

        try:
            delegates.append(load_delegate(name))
        except ImportError as e:
            raise ModelError(f"cannot load delegate {name!r}: {_one_line(e)}") from None
        except ValueError as e:
            raise UsageError(f"cannot load delegate {name!r}: {_one_line(e)}") from None
    try:
        it = Interpreter(
            model_path=model_path,
            num_threads=args.num_threads,
            experimental_preserve_all_tensors=args.preserve_all_tensors,
            experimental_delegates=delegates or None,
        )
    except (LiteRTError, ValueError, RuntimeError, OSError) as e:
        raise ModelError(f"cannot load model '{model_path}': {_one_line(e)}") from None
    full = it._get_full_signature_list()
    if args.signature is not None:
        if args.signature not in full:
            have = ", ".join(repr(k) for k in full) or "none"
            raise UsageError(f"unknown signature {args.signature!r}; the model's signatures: {have}")
        try:
            runner = it.get_signature_runner(args.signature)
        except (LiteRTError, ValueError, RuntimeError) as e:
            raise ModelError(f"cannot load signature {args.signature!r}: {_one_line(e)}") from None
        ind, outd = runner.get_input_details(), runner.get_output_details()
        ins = [Port(n, k, d, (d["name"],)) for k, (n, d) in enumerate(ind.items())]
        outs = [Port(n, k, d, (d["name"],)) for k, (n, d) in enumerate(outd.items())]
        sg = next(s.subgraph_index for s in it.model.signature_defs if s.signature_key == args.signature)
        return Session(it, ins, outs, args.signature, sg, runner)
    aliases: dict[int, list[str]] = {}
    for s in it.model.signature_defs:  # signature names of subgraph 0's tensors are accepted too
        if s.subgraph_index == 0:
            for m in s.inputs:
                aliases.setdefault(m.tensor_index, []).append(m.name)
    ins = [Port(d["name"], k, d, tuple(aliases.get(d["index"], ()))) for k, d in enumerate(it.get_input_details())]
    outs = [Port(d["name"], k, d) for k, d in enumerate(it.get_output_details())]
    return Session(it, ins, outs)


# -- --input --------------------------------------------------------------------------------------------
def _load_array_file(path: str):
    if not os.path.isfile(path):
        raise UsageError(f"input file not found: '{path}'")
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                return {k: data[k] for k in data.files}
        if not isinstance(data, np.ndarray):
            raise ValueError(f"unexpected content {type(data).__name__}")
        return data
    except Exception as e:
        raise UsageError(f"cannot read input file '{path}' (need .npy or .npz): {_one_line(e)}") from None


def _split_spec(spec: str, session: Session) -> tuple[str | None, str]:
    """'NAME=FILE' -> (NAME, FILE); a bare existing FILE -> (None, FILE)."""
    if os.path.isfile(spec) or "=" not in spec:
        return None, spec
    splits = [(spec[:k], spec[k + 1 :]) for k, ch in enumerate(spec) if ch == "="]
    for name, path in splits:  # prefer a split whose left side names an input
        if session.find_input(name) is not None:
            return name, path
    name, path = splits[0]
    if not name or not path:
        raise UsageError(f"--input {spec!r}: expected NAME=FILE or FILE")
    return name, path


def _split_key(path: str) -> tuple[str, str | None]:
    """'FILE.npz:KEY' -> (FILE.npz, KEY) unless a file is called that."""
    if os.path.isfile(path) or ":" not in path:
        return path, None
    head, key = path.rsplit(":", 1)
    if head.lower().endswith(".npz") and key:
        return head, key
    return path, None


def _input_names(session: Session) -> str:
    return ", ".join(repr(p.name) for p in session.inputs) or "none"


def collect_inputs(specs: list[str], session: Session) -> dict[int, str]:
    """Read every --input into ``session.feeds``; returns input position -> where its value came from."""
    sources: dict[int, str] = {}

    def assign(port: Port | None, name: str, arr, where: str) -> None:
        if port is None:
            raise UsageError(f"unknown input name {name!r} (from {where}); the model's inputs: {_input_names(session)}")
        if port.position in sources:
            raise UsageError(f"input {port.name!r} is given twice ({sources[port.position]} and {where})")
        session.feeds[port.position] = np.asarray(arr)
        sources[port.position] = where

    for spec in specs:
        name, path = _split_spec(spec, session)
        path, key = _split_key(path)
        data = _load_array_file(path)
        if key is not None:
            if not isinstance(data, dict):
                raise UsageError(f"--input {spec!r}: '{path}' is not an .npz archive, so it has no key {key!r}")
            if key not in data:
                raise UsageError(f"input file '{path}' has no key {key!r} (keys: {', '.join(data) or 'none'})")
            if name is None:
                if len(session.inputs) != 1:
                    raise UsageError(
                        f"--input {spec!r}: the model has {len(session.inputs)} inputs, so name the "
                        f"one this array is for: NAME=FILE.npz:KEY (inputs: {_input_names(session)})"
                    )
                name = "0"
            assign(session.find_input(name), name, data[key], f"{path}[{key}]")
        elif name is not None:
            port = session.find_input(name)
            if isinstance(data, dict):
                if name in data:
                    arr = data[name]
                elif port is not None and port.name in data:
                    arr = data[port.name]
                elif len(data) == 1:
                    arr = next(iter(data.values()))
                else:
                    raise UsageError(
                        f"input file '{path}' holds {len(data)} arrays ({', '.join(data)}) and none is named {name!r}"
                    )
                assign(port, name, arr, path)
            else:
                assign(port, name, data, path)
        elif isinstance(data, dict):
            for key, arr in data.items():
                port = session.find_input(key)
                m = re.fullmatch(r"(?:arr|in)_(\d+)", key)
                if port is None and m and int(m.group(1)) < len(session.inputs):
                    port = session.inputs[int(m.group(1))]
                assign(port, key, arr, f"{path}[{key}]")
        else:
            if len(session.inputs) != 1:
                raise UsageError(
                    f"--input {spec!r}: the model has {len(session.inputs)} inputs, so name the one "
                    f"this file is for: NAME=FILE (inputs: {_input_names(session)})"
                )
            assign(session.inputs[0], "0", data, path)
    return sources


# -- --sequence -----------------------------------------------------------------------------------------
def load_sequence(path: str, session: Session) -> list[dict[int, np.ndarray]]:
    """The steps of a --sequence file: input position -> value, one dict per step.

    Either every key names an input (its name, signature name, 0-based position, ``in_K`` or ``arr_K``) and
    holds all steps along a leading axis, or (one-input models) every key is one step, in the file's order."""
    data = _load_array_file(path)
    if not isinstance(data, dict):
        data = {"0": data}
    if not data:
        raise UsageError(f"--sequence file '{path}' holds no arrays")
    ports = {}
    for key in data:
        port = session.find_input(key)
        m = re.fullmatch(r"(?:arr|in)_(\d+)", key)
        if port is None and m and int(m.group(1)) < len(session.inputs):
            port = session.inputs[int(m.group(1))]
        ports[key] = port
    if all(p is not None for p in ports.values()):
        lengths = {k: (np.asarray(a).shape[:1] or (None,))[0] for k, a in data.items()}
        if len(set(lengths.values())) != 1 or None in lengths.values():
            raise UsageError(
                f"--sequence file '{path}': every array needs the same leading step axis, got "
                + ", ".join(f"{k} {list(np.asarray(a).shape)}" for k, a in data.items())
            )
        n = next(iter(lengths.values()))
        return [{ports[k].position: np.asarray(a)[t] for k, a in data.items()} for t in range(n)]
    if len(session.inputs) == 1:
        return [{0: np.asarray(a)} for a in data.values()]
    unknown = [k for k, p in ports.items() if p is None]
    raise UsageError(
        f"--sequence file '{path}': keys {', '.join(map(repr, unknown))} name no input (inputs: "
        f"{_input_names(session)}); give each input its steps along a leading axis"
    )


# -- outputs --------------------------------------------------------------------------------------------
def dequantize(arr: np.ndarray, details: dict) -> np.ndarray | None:
    """Real values of a quantized integer output (per-axis scales broadcast on their dimension); else None."""
    q = quant(details)
    if q is None or arr.dtype.kind not in "iu":
        return None
    scales = np.asarray(q["scales"], np.float64)
    zps = np.asarray(q["zero_points"] or [0], np.float64)
    if scales.size > 1 and arr.ndim:
        shape = [1] * arr.ndim
        shape[q["quantized_dimension"]] = -1
        scales = scales.reshape(shape)
        zps = zps.reshape(shape) if zps.size > 1 else zps
    return ((arr.astype(np.float64) - zps) * scales).astype(np.float32)


def array_text(arr: np.ndarray, details: dict) -> str:
    """The array as numpy prints it; a quantized one as ``value (q=raw)`` per element."""
    with np.printoptions(threshold=40, edgeitems=3, precision=6, suppress=False, linewidth=110):
        real = dequantize(arr, details)
        if real is None:
            return np.array2string(arr, prefix="    ")
        flat_real, flat_q = real.reshape(-1), arr.reshape(-1)
        index = np.arange(arr.size).reshape(arr.shape)
        return np.array2string(
            index, prefix="    ", separator=", ", formatter={"int": lambda k: f"{flat_real[k]:.6g} (q={flat_q[k]})"}
        )


def save_outputs(directory: str, ports: list[Port], arrays: list[np.ndarray], prefix: str = "") -> list[str]:
    """Save each output raw as DIR/<prefix><name>.npy (names made file-safe); returns the paths."""
    try:
        os.makedirs(directory, exist_ok=True)
        taken: set[str] = set()
        files = []
        for k, (p, arr) in enumerate(zip(ports, arrays)):
            path = os.path.join(directory, prefix + safe_filename(p.name, taken, f"output_{k}") + ".npy")
            np.save(path, arr, allow_pickle=arr.dtype == object)
            files.append(path)
        return files
    except OSError as e:
        raise ModelError(f"cannot write outputs to '{directory}': {_one_line(e)}") from None


def result_doc(port: Port, arr: np.ndarray, file: str | None) -> dict:
    doc = {
        "name": port.name,
        "shape": list(arr.shape),
        "dtype": _dtype_name(arr.dtype),
        "stats": _stats(arr),
        "file": file,
    }
    real = dequantize(arr, port.details)
    if real is not None:
        doc["dequantized_stats"] = _stats(real)
    return doc
