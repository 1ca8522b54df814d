"""``tflite-run``: summarize a .tflite model, run it once (or N times) with litert_py, show or save the outputs.

    tflite-run                                   # the tiny CNN bundled in litert_py/models/
    tflite-run model.tflite                      # random inputs (seed 0)
    tflite-run model.tflite --input x=x.npy --input batch.npz --output-dir out/ --runs 10
    tflite-run model.tflite --json               # machine-readable summary + timings

Exit status: 0 on success; 1 when the model fails to load, prepare or run (missing or invalid file,
unsupported ops, PrepareError, InvokeError); 2 for bad arguments (options, --input files, names, shapes or
dtypes, --signature keys). Every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

BUNDLED_MODEL = "tiny_cnn.tflite"
PROG = "tflite-run"
_TRACEBACK_ENV = "TFLITE_RUN_TRACEBACK"  # set to 1 to let unexpected exceptions show their traceback


class UsageError(Exception):
    """A bad argument: exit status 2."""


class ModelError(Exception):
    """The model failed to load, prepare or run: exit status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line instead of argparse's usage block
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    from litert_py import __version__

    p = _Parser(
        prog=PROG,
        description="Summarize a .tflite model and run it with litert_py (pure-Python TFLite interpreter).",
        epilog="Without MODEL, runs the small image classifier bundled with litert_py. Exit status: 0 ok, 1 the "
               "model failed to load/prepare/run, 2 bad arguments.",
    )
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help="path of a .tflite model (default: the bundled tiny CNN)")
    p.add_argument("-i", "--input", action="append", default=[], metavar="NAME=FILE",
                   help="take input NAME (its name, signature name or 0-based position) from FILE (.npy, or .npz "
                        "holding NAME or a single array); a bare FILE.npz sets every input it names (keys: input "
                        "names or arr_K for position K); a bare FILE.npy is allowed for one-input models. "
                        "Repeatable; inputs not given are random")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0): floats uniform in "
                   "[-1, 1), integer types over their full range")
    p.add_argument("-n", "--runs", type=_positive_int, default=1, metavar="N",
                   help="invoke N times and report the median time (default 1)")
    p.add_argument("-o", "--output-dir", metavar="DIR",
                   help="save each output as DIR/<name>.npy (name made file-safe) instead of printing it")
    p.add_argument("--num-threads", type=_positive_int, default=None, metavar="N",
                   help="Interpreter(num_threads=N): BLAS threads")
    p.add_argument("--signature", metavar="KEY", help="run through the SignatureDef KEY (its input/output names)")
    p.add_argument("--preserve-all-tensors", action="store_true",
                   help="Interpreter(experimental_preserve_all_tensors=True): no arena reuse")
    p.add_argument("--delegate", action="append", default=[], metavar="NAME",
                   help="Interpreter(experimental_delegates=[load_delegate(NAME)]), e.g. onnxruntime (repeatable)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the timing line")
    p.add_argument("--json", action="store_true", help="print one JSON object (summary, outputs, timings)")
    p.add_argument("--version", action="version", version=f"{PROG} (litert_py {__version__})")
    return p


# -- helpers ----------------------------------------------------------------------------------------------
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


def _quant(details: dict) -> dict | None:
    qp = details.get("quantization_parameters") or {}
    scales = np.asarray(qp.get("scales", ()), dtype=np.float64)
    if scales.size == 0:
        return None
    return {"scales": [float(s) for s in scales], "zero_points": [int(z) for z in qp.get("zero_points", ())],
            "quantized_dimension": int(qp.get("quantized_dimension", 0))}


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
    if want.kind not in "SO" and (arr.dtype.kind in "OUSV" or arr.dtype != want):
        raise ValueError(f"Cannot set tensor: Got value of type {_dtype_name(arr.dtype)} but expected type "
                         f"{_dtype_name(want)} for input {port.name}, name: {d['name']} ")
    if _resizable(d, arr):
        return
    shape = _shape(d["shape"])
    if arr.ndim != len(shape):
        raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {arr.ndim} but expected {len(shape)} for "
                         f"input {pos}.")
    for k, (got, exp) in enumerate(zip(arr.shape, shape)):
        if got != exp:
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {got} but expected {exp} for dimension "
                             f"{k} of input {pos}.")


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
        it = Interpreter(model_path=model_path, num_threads=args.num_threads,
                         experimental_preserve_all_tensors=args.preserve_all_tensors,
                         experimental_delegates=delegates or None)
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
    splits = [(spec[:k], spec[k + 1:]) for k, ch in enumerate(spec) if ch == "="]
    for name, path in splits:  # prefer a split whose left side names an input
        if session.find_input(name) is not None:
            return name, path
    name, path = splits[0]
    if not name or not path:
        raise UsageError(f"--input {spec!r}: expected NAME=FILE or FILE")
    return name, path


def _input_names(session: Session) -> str:
    return ", ".join(repr(p.name) for p in session.inputs) or "none"


def collect_inputs(specs: list[str], session: Session) -> dict[int, str]:
    """Read every --input into ``session.feeds``; returns input position -> where its value came from."""
    sources: dict[int, str] = {}

    def assign(port: Port | None, name: str, arr, where: str) -> None:
        if port is None:
            raise UsageError(f"unknown input name {name!r} (from {where}); the model's inputs: "
                             f"{_input_names(session)}")
        if port.position in sources:
            raise UsageError(f"input {port.name!r} is given twice ({sources[port.position]} and {where})")
        session.feeds[port.position] = np.asarray(arr)
        sources[port.position] = where

    for spec in specs:
        name, path = _split_spec(spec, session)
        data = _load_array_file(path)
        if name is not None:
            port = session.find_input(name)
            if isinstance(data, dict):
                if name in data:
                    arr = data[name]
                elif port is not None and port.name in data:
                    arr = data[port.name]
                elif len(data) == 1:
                    arr = next(iter(data.values()))
                else:
                    raise UsageError(f"input file '{path}' holds {len(data)} arrays ({', '.join(data)}) and none "
                                     f"is named {name!r}")
                assign(port, name, arr, path)
            else:
                assign(port, name, data, path)
        elif isinstance(data, dict):
            for key, arr in data.items():
                port = session.find_input(key)
                m = re.fullmatch(r"arr_(\d+)", key)
                if port is None and m and int(m.group(1)) < len(session.inputs):
                    port = session.inputs[int(m.group(1))]
                assign(port, key, arr, f"{path}[{key}]")
        else:
            if len(session.inputs) != 1:
                raise UsageError(f"--input {spec!r}: the model has {len(session.inputs)} inputs, so name the one "
                                 f"this file is for: NAME=FILE (inputs: {_input_names(session)})")
            assign(session.inputs[0], "0", data, path)
    return sources


# -- summary --------------------------------------------------------------------------------------------
def summarize(session: Session, model_path: str, bundled: bool) -> dict:
    it = session.interpreter
    model = it.model
    groups: dict[tuple, int] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            code = model.operator_codes[op.opcode_index]
            ins = tuple(_type_name(sg.tensors[i].type) for i in op.inputs if i >= 0)
            outs = tuple(_type_name(sg.tensors[i].type) for i in op.outputs if i >= 0)
            key = (code.name, code.version, ins, outs)
            groups[key] = groups.get(key, 0) + 1
    ops = [{"op": n, "version": v, "input_types": list(i), "output_types": list(o), "count": c}
           for (n, v, i, o), c in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))]
    try:
        arena = dict(it.arena_report(session.subgraph_index))
    except (ValueError, RuntimeError):
        arena = None

    def port(p: Port, source: str | None = None) -> dict:
        d = p.details
        out = {"name": p.name, "tensor": d["name"], "index": int(d["index"]), "shape": _shape(d["shape"]),
               "shape_signature": _shape(d.get("shape_signature", d["shape"])),
               "dtype": _dtype_name(d["dtype"]), "quantization": _quant(d)}
        if source is not None:
            out["source"] = source
        return out

    sources = session.sources
    return {
        "model": {"path": model_path, "bundled": bundled, "bytes": os.path.getsize(model_path),
                  "description": model.description, "schema_version": model.version},
        "signature": session.signature,
        "subgraph_index": session.subgraph_index,
        "inputs": [port(p, sources.get(p.position, "random")) for p in session.inputs],
        "outputs": [port(p) for p in session.outputs],
        "ops": ops,
        "num_operators": sum(len(sg.operators) for sg in model.subgraphs),
        "num_tensors": sum(len(sg.tensors) for sg in model.subgraphs),
        "subgraphs": [{"index": k, "name": sg.name, "tensors": len(sg.tensors), "operators": len(sg.operators)}
                      for k, sg in enumerate(model.subgraphs)],
        "signatures": it.get_signature_list(),
        "arena": arena,
    }


def _port_line(p: dict, with_source: bool) -> str:
    label = p["name"] if p["name"] == p["tensor"] else f"{p['name']} (tensor {p['tensor']!r})"
    shape = "x".join(map(str, p["shape"])) or "scalar"
    sig = ""
    if p["shape_signature"] != p["shape"]:
        sig = " (shape_signature " + "x".join(map(str, p["shape_signature"])) + ")"
    line = f"  [{p['index']}] {label}: {p['dtype']} {shape}{sig}, {_quant_text(p['quantization'])}"
    if with_source:
        line += f"  <- {p['source']}"
    return line


def summary_text(s: dict, seed: int) -> str:
    m = s["model"]
    lines = [f"Model: {m['path']}{' (bundled)' if m['bundled'] else ''}, {m['bytes']:,} bytes, schema v"
             f"{m['schema_version']}" + (f", {m['description']!r}" if m["description"] else "")]
    sgs = s["subgraphs"]
    per = "" if len(sgs) == 1 else " (" + " | ".join(
        f"#{g['index']}{' ' + repr(g['name']) if g['name'] else ''}: {g['tensors']} tensors, {g['operators']} ops"
        for g in sgs) + ")"
    lines.append(f"Subgraphs: {len(sgs)}{per}; tensors: {s['num_tensors']}; operators: {s['num_operators']}")
    if s["signatures"]:
        sigs = "; ".join(f"{k} ({', '.join(v['inputs'])} -> {', '.join(v['outputs'])})"
                         for k, v in s["signatures"].items())
        lines.append(f"Signatures: {sigs}")
    else:
        lines.append("Signatures: none")
    if s["signature"] is not None:
        lines.append(f"Running signature {s['signature']!r} (subgraph {s['subgraph_index']})")
    lines.append(f"Inputs ({len(s['inputs'])}; random ones use seed {seed}):")
    lines += [_port_line(p, True) for p in s["inputs"]]
    lines.append(f"Outputs ({len(s['outputs'])}):")
    lines += [_port_line(p, False) for p in s["outputs"]]
    lines.append(f"Ops ({s['num_operators']} nodes, {len(s['ops'])} kinds):" if s["ops"] else "Ops: none")
    for op in s["ops"]:
        types = ", ".join(op["input_types"]) + " -> " + ", ".join(op["output_types"])
        lines.append(f"  {op['count']:4d} x {op['op']} v{op['version']} ({types})")
    a = s["arena"]
    if a is not None:
        lines.append(f"Arena: {a['arena_bytes']:,} bytes for {a['planned_tensors']} tensors (lower bound "
                     f"{a['lower_bound']:,} bytes, {100 * a['efficiency']:.0f}% efficient)")
    return "\n".join(lines)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 4)


def timing_text(t: dict) -> str:
    def f(v):
        return "n/a" if v is None else f"{v:.3f} ms"

    inv = f"invoke {f(t['invoke_median'])}"
    if t["runs"] > 1:
        inv += f" (median of {t['runs']} runs; min {f(t['invoke_min'])}, max {f(t['invoke_max'])})"
    return f"Timing: load {f(t['load'])}, allocate {f(t['allocate'])}, {inv}"


# -- main -----------------------------------------------------------------------------------------------
def run(args, out) -> int:
    import litert_py
    from litert_py import LiteRTError

    bundled = args.model is None
    model_path = bundled_model_path() if bundled else args.model
    if args.output_dir is not None and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise UsageError(f"--output-dir '{args.output_dir}' exists and is not a directory")

    t0 = time.perf_counter()
    session = open_session(model_path, args)
    t_load = time.perf_counter() - t0

    session.sources = collect_inputs(args.input, session)
    rng = np.random.default_rng(args.seed)
    # Random values are drawn for every input in order (so a given input's values do not depend on which
    # other inputs came from files), from the shapes the inputs will have once allocated.
    random_feeds = {}
    for p in session.inputs:
        value = random_array(p.details["shape"], p.details["dtype"], rng)
        if p.position not in session.feeds:
            random_feeds[p.position] = value
    session.feeds.update(random_feeds)

    t0 = time.perf_counter()
    try:
        timed = session.allocate()
    except (LiteRTError, RuntimeError, ValueError) as e:
        raise ModelError(f"cannot prepare model: {_one_line(e)}") from None
    t_alloc = time.perf_counter() - t0 if timed else None
    session.refresh_details()
    session.set_inputs()

    summary = summarize(session, model_path, bundled)
    if not args.json and not args.quiet:
        print(summary_text(summary, args.seed), file=out, flush=True)

    times = []
    results = None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        try:
            from_runner = session.invoke()
        except (LiteRTError, RuntimeError, ValueError) as e:
            raise ModelError(f"model failed to run: {_one_line(e)}") from None
        times.append(time.perf_counter() - t0)
        results = from_runner
    outputs = session.results(results)
    session.refresh_details()

    timing = {"load": _ms(t_load), "allocate": _ms(t_alloc), "invoke_median": _ms(statistics.median(times)),
              "invoke_min": _ms(min(times)), "invoke_max": _ms(max(times)), "runs": args.runs,
              "invoke_all": [_ms(t) for t in times]}

    files: list[str | None] = [None] * len(outputs)
    if args.output_dir is not None:
        try:
            os.makedirs(args.output_dir, exist_ok=True)
            taken: set[str] = set()
            for k, (p, arr) in enumerate(zip(session.outputs, outputs)):
                path = os.path.join(args.output_dir, safe_filename(p.name, taken, f"output_{k}") + ".npy")
                np.save(path, arr, allow_pickle=arr.dtype == object)
                files[k] = path
        except OSError as e:
            raise ModelError(f"cannot write outputs to '{args.output_dir}': {_one_line(e)}") from None

    if args.json:
        doc = {"tool": PROG, "litert_py_version": litert_py.__version__, "seed": args.seed, **summary,
               "results": [{"name": p.name, "shape": list(a.shape), "dtype": _dtype_name(a.dtype),
                            "stats": _stats(a), "file": f} for p, a, f in zip(session.outputs, outputs, files)],
               "timing_ms": timing}
        doc["arena"] = summary["arena"]
        print(json.dumps(doc, default=str), file=out)
        return 0
    if not args.quiet:
        print(f"Results (after {args.runs} run{'s' if args.runs > 1 else ''}):", file=out)
        with np.printoptions(threshold=40, edgeitems=3, precision=6, suppress=False, linewidth=110):
            for p, arr, f in zip(session.outputs, outputs, files):
                head = f"  {p.name}: {_dtype_name(arr.dtype)} {list(arr.shape)}"
                if f is not None:
                    print(f"{head} -> {f}", file=out)
                else:
                    body = np.array2string(arr, prefix="    ")
                    print(f"{head}\n    {body}", file=out)
    print(timing_text(timing), file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tflite-run`` console script; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version (0) and usage errors (2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return run(args, sys.stdout)
    except UsageError as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except ModelError as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `tflite-run ... | head`: stop quietly, as other command-line tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no complaint at exit
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except Exception as e:  # a bug, in the tool or a kernel: still one line
        if os.environ.get(_TRACEBACK_ENV):
            raise
        print(f"{PROG}: internal error: {type(e).__name__}: {_one_line(e)} (set {_TRACEBACK_ENV}=1 to see the "
              "traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
