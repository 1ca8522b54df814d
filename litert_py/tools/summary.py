"""tflite-run's model view: the summary (model, subgraphs, inputs/outputs, op kinds, arena), the missing kernels,
and --nodes (every node with its op name, tensors, quantization and options)."""

from __future__ import annotations

import math
import os

import numpy as np

from .io import Port, Session, _dtype_name, _quant_text, _shape, _type_name, quant

# Enum-valued option fields shown by name (schema.fbs spellings).
_OPTION_ENUMS = {
    "padding": {0: "SAME", 1: "VALID"},
    "fused_activation_function": {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"},
}
_TYPE_FIELDS = ("out_data_type", "in_data_type", "output_type", "idx_out_type", "out_type", "quantized_bias_type")


def summarize(session: Session, model, model_path: str, bundled: bool) -> dict:
    """Everything --json and the text summary show; ``session.interpreter`` is None when the model has ops
    litert_py cannot run (--summary-only still works then)."""
    it = session.interpreter
    groups: dict[tuple, int] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            code = model.operator_codes[op.opcode_index]
            ins = tuple(_type_name(sg.tensors[i].type) for i in op.inputs if i >= 0)
            outs = tuple(_type_name(sg.tensors[i].type) for i in op.outputs if i >= 0)
            key = (code.name, code.version, ins, outs)
            groups[key] = groups.get(key, 0) + 1
    ops = [
        {"op": n, "version": v, "input_types": list(i), "output_types": list(o), "count": c}
        for (n, v, i, o), c in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
    ]
    arena = None
    if it is not None:
        try:
            arena = dict(it.arena_report(session.subgraph_index))
        except (ValueError, RuntimeError):
            pass

    def port(p: Port, source: str | None = None) -> dict:
        d = p.details
        out = {
            "name": p.name,
            "tensor": d["name"],
            "index": int(d["index"]),
            "shape": _shape(d["shape"]),
            "shape_signature": _shape(d.get("shape_signature", d["shape"])),
            "dtype": _dtype_name(d["dtype"]),
            "quantization": quant(d),
        }
        if source is not None:
            out["source"] = source
        return out

    sources = session.sources
    return {
        "model": {
            "path": model_path,
            "bundled": bundled,
            "bytes": os.path.getsize(model_path),
            "description": model.description,
            "schema_version": model.version,
        },
        "signature": session.signature,
        "subgraph_index": session.subgraph_index,
        "inputs": [port(p, sources.get(p.position, "random")) for p in session.inputs],
        "outputs": [port(p) for p in session.outputs],
        "ops": ops,
        "num_operators": sum(len(sg.operators) for sg in model.subgraphs),
        "num_tensors": sum(len(sg.tensors) for sg in model.subgraphs),
        "subgraphs": [
            {"index": k, "name": sg.name, "tensors": len(sg.tensors), "operators": len(sg.operators)}
            for k, sg in enumerate(model.subgraphs)
        ],
        "signatures": {
            s.signature_key: {"inputs": [m.name for m in s.inputs], "outputs": [m.name for m in s.outputs]}
            for s in model.signature_defs
        },
        "missing_ops": missing_ops(model),
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
    lines = [
        f"Model: {m['path']}{' (bundled)' if m['bundled'] else ''}, {m['bytes']:,} bytes, schema v"
        f"{m['schema_version']}" + (f", {m['description']!r}" if m["description"] else "")
    ]
    sgs = s["subgraphs"]
    per = (
        ""
        if len(sgs) == 1
        else " ("
        + " | ".join(
            f"#{g['index']}{' ' + repr(g['name']) if g['name'] else ''}: {g['tensors']} tensors, {g['operators']} ops"
            for g in sgs
        )
        + ")"
    )
    lines.append(f"Subgraphs: {len(sgs)}{per}; tensors: {s['num_tensors']}; operators: {s['num_operators']}")
    if s["signatures"]:
        sigs = "; ".join(
            f"{k} ({', '.join(v['inputs'])} -> {', '.join(v['outputs'])})" for k, v in s["signatures"].items()
        )
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
    if s["missing_ops"]:
        lines.append(f"Missing kernels ({len(s['missing_ops'])}; the model cannot run until they are registered):")
        lines += [
            f"  {m['op']} v{m['version']} ({', '.join(m['input_types'])}) at node " + ", ".join(m["nodes"])
            for m in s["missing_ops"]
        ]
    a = s["arena"]
    if a is not None:
        lines.append(
            f"Arena: {a['arena_bytes']:,} bytes for {a['planned_tensors']} tensors (lower bound "
            f"{a['lower_bound']:,} bytes, {100 * a['efficiency']:.0f}% efficient)"
        )
    return "\n".join(lines)


def missing_ops(model) -> list[dict]:
    """Every distinct (op, version, input types) without a kernel, with its nodes ("sg:node" beyond subgraph 0)."""
    from litert_py.ops.registry import lookup

    found: dict[tuple, list[str]] = {}
    for k, sg in enumerate(model.subgraphs):
        for n, op in enumerate(sg.operators):
            code = model.operator_codes[op.opcode_index]
            if lookup(code.builtin_code, code.custom_code) is None:
                types = tuple(_type_name(sg.tensors[i].type) for i in op.inputs if i >= 0)
                found.setdefault((code.name, code.version, types), []).append(str(n) if k == 0 else f"{k}:{n}")
    return [{"op": op, "version": v, "input_types": list(t), "nodes": nodes} for (op, v, t), nodes in found.items()]


def static_details(sg, i: int) -> dict:
    """tf.lite-style tensor details read from the model alone (no Interpreter)."""
    from litert_py.schema import dtypes

    t = sg.tensors[i]
    q = t.quantization
    return {
        "name": t.name,
        "index": i,
        "shape": np.array(t.shape, np.int32),
        "shape_signature": np.array(t.shape_signature if t.shape_signature is not None else t.shape, np.int32),
        "dtype": dtypes.to_numpy(t.type),
        "quantization_parameters": {
            "scales": np.array(q.scale if q else (), np.float32),
            "zero_points": np.array(q.zero_point if q else (), np.int32),
            "quantized_dimension": q.quantized_dimension if q else 0,
        },
    }


def static_session(model, signature: str | None) -> Session:
    """The inputs/outputs of subgraph 0 (or of ``signature``) from the model alone, for --summary-only."""
    if signature is not None:
        sig = next((s for s in model.signature_defs if s.signature_key == signature), None)
        if sig is not None:
            sg = model.subgraphs[sig.subgraph_index]
            ins = [Port(m.name, k, static_details(sg, m.tensor_index)) for k, m in enumerate(sig.inputs)]
            outs = [Port(m.name, k, static_details(sg, m.tensor_index)) for k, m in enumerate(sig.outputs)]
            return Session(None, ins, outs, signature, sig.subgraph_index)
    sg = model.subgraphs[0]
    ins = [Port(sg.tensors[i].name, k, static_details(sg, i)) for k, i in enumerate(sg.inputs)]
    outs = [Port(sg.tensors[i].name, k, static_details(sg, i)) for k, i in enumerate(sg.outputs)]
    return Session(None, ins, outs)


# -- --nodes --------------------------------------------------------------------------------------------
def option_value(name: str, value):
    """An option as the schema spells it: enum fields by name, TensorType fields by type name."""
    if name in _OPTION_ENUMS and isinstance(value, int):
        return _OPTION_ENUMS[name].get(value, value)
    if name in _TYPE_FIELDS and isinstance(value, int):
        try:
            return _type_name(value)
        except (ValueError, KeyError):
            return value
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [option_value("", v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no inf/nan
    return value


def _has_data(model, t) -> bool:
    return (not t.is_variable and 0 < t.buffer < len(model.buffers) and model.buffers[t.buffer].data.size > 0) or bool(
        getattr(t, "external_buffer", 0)
    )


def tensor_doc(model, sg, i: int) -> dict | None:
    if i < 0:
        return None
    t = sg.tensors[i]
    q = t.quantization
    quant_doc = None
    if q is not None and q.is_quantized:
        quant_doc = {
            "scales": [float(s) for s in q.scale],
            "zero_points": [int(z) for z in q.zero_point],
            "quantized_dimension": int(q.quantized_dimension),
        }
    return {
        "index": i,
        "name": t.name,
        "shape": [int(d) for d in t.shape],
        "dtype": _type_name(t.type),
        "quantization": quant_doc,
        "constant": _has_data(model, t),
        "variable": t.is_variable,
    }


def node_docs(model) -> list[dict]:
    """Every node of every subgraph: op name, version, tensors and options."""
    out = []
    for k, sg in enumerate(model.subgraphs):
        for n, op in enumerate(sg.operators):
            code = model.operator_codes[op.opcode_index]
            opts = op.builtin_options or op.builtin_options2
            out.append(
                {
                    "subgraph": k,
                    "node": n,
                    "op": code.name,
                    "version": code.version,
                    "options_type": getattr(opts, "table", None),
                    "options": {name: option_value(name, v) for name, v in (opts or {}).items()},
                    "custom_options_bytes": len(op.custom_options),
                    "inputs": [tensor_doc(model, sg, i) for i in op.inputs],
                    "outputs": [tensor_doc(model, sg, i) for i in op.outputs],
                }
            )
    return out


def _tensor_short(t: dict | None) -> str:
    if t is None:
        return "-"
    shape = "x".join(map(str, t["shape"])) or "scalar"
    kind = " const" if t["constant"] else (" var" if t["variable"] else "")
    q = t["quantization"]
    qtext = "" if q is None else f" [{_quant_text(q)}]"
    return f"#{t['index']} {t['name']!r} {t['dtype']} {shape}{kind}{qtext}"


def nodes_text(nodes: list[dict]) -> str:
    lines = [f"Nodes ({len(nodes)}):"]
    for d in nodes:
        where = f"{d['node']}" if d["subgraph"] == 0 else f"{d['subgraph']}:{d['node']}"
        lines.append(f"  [{where}] {d['op']} v{d['version']}")
        for role in ("inputs", "outputs"):
            for t in d[role]:
                lines.append(f"      {role[:-1]:<6} {_tensor_short(t)}")
        if d["options"]:
            lines.append("      options " + ", ".join(f"{k}={v}" for k, v in d["options"].items()))
        if d["custom_options_bytes"]:
            lines.append(f"      custom_options {d['custom_options_bytes']} bytes")
    return "\n".join(lines)
