"""``tflite-run graph``: every subgraph of a model drawn into one self-contained HTML page (no network).

The layout is computed here: longest-path layering (a node sits one layer below its deepest producer), a dummy
node per layer an edge crosses, then barycenter ordering sweeps (down and up) to reduce crossings, as in
Sugiyama-style layered drawing. The page carries the layout as JSON; a little inline JavaScript draws it as SVG
(nodes with op names, edges labelled with tensor shape and dtype) and fills a side panel on click: a node's
options, tensors and quantization (per-axis scales summarized), and its profile time when one was taken.
"""

from __future__ import annotations

import html
import json

import numpy as np

from .summary import _has_data, option_value

LAYER_GAP = 86  # vertical distance between layers
NODE_H = 38
GAP = 44  # horizontal space between neighbours in a layer
DUMMY_W = 8
SWEEPS = 8

_COLORS = {  # fill by op family (anything else grey)
    "CONV": "#cfe2ff",
    "DEPTHWISE": "#cfe2ff",
    "FULLY_CONNECTED": "#cfe2ff",
    "BATCH_MATMUL": "#cfe2ff",
    "POOL": "#d1f0d6",
    "RELU": "#ffe0b3",
    "LOGISTIC": "#ffe0b3",
    "TANH": "#ffe0b3",
    "SOFTMAX": "#ffe0b3",
    "HARD_SWISH": "#ffe0b3",
    "PRELU": "#ffe0b3",
    "RESHAPE": "#eee2f7",
    "CONCATENATION": "#eee2f7",
    "TRANSPOSE": "#eee2f7",
    "PAD": "#eee2f7",
    "QUANTIZE": "#fff3b0",
    "DEQUANTIZE": "#fff3b0",
    "WHILE": "#ffd6d6",
    "IF": "#ffd6d6",
    "CALL_ONCE": "#ffd6d6",
}


def _color(op: str) -> str:
    for key, color in _COLORS.items():
        if key in op:
            return color
    return "#e9ecef"


def quant_summary(q) -> str | None:
    """Scales and zero points in a line; per-axis ones summarized (count, range)."""
    if q is None or not q.is_quantized:
        return None
    if len(q.scale) == 1:
        zp = q.zero_point[0] if q.zero_point else 0
        return f"scale {q.scale[0]:.6g}, zero_point {zp}"
    s = np.asarray(q.scale, np.float64)
    z = np.asarray(q.zero_point or (0,), np.int64)
    zps = f"zero_point {int(z[0])}" if np.all(z == z[0]) else f"zero_points {int(z.min())}..{int(z.max())}"
    return (
        f"per-axis on dim {q.quantized_dimension}: {s.size} scales {s.min():.6g}..{s.max():.6g} "
        f"(mean {s.mean():.6g}), {zps}"
    )


def _tensor_info(model, sg, i: int) -> dict:
    t = sg.tensors[i]
    return {
        "index": i,
        "name": t.name,
        "shape": "x".join(map(str, t.shape)) or "scalar",
        "dtype": _type_name(t.type),
        "quantization": quant_summary(t.quantization),
        "constant": _has_data(model, t),
        "variable": t.is_variable,
    }


def _type_name(tensor_type: int) -> str:
    from litert_py.schema import dtypes

    return dtypes.type_name(tensor_type)


def layout(n_nodes: int, edges: list[tuple[int, int]], widths: list[float]) -> tuple[list, list]:
    """Positions of ``n_nodes`` nodes (x centre, y top) and one polyline per edge (through dummy nodes).

    Longest-path layering over the DAG (edges from a node to itself or backwards are laid as they come: a
    .tflite subgraph's nodes are in topological order), then barycenter ordering sweeps."""
    preds: list[list[int]] = [[] for _ in range(n_nodes)]
    for a, b in edges:
        preds[b].append(a)
    layer = [0] * n_nodes
    for v in range(n_nodes):  # nodes are numbered in a topological order by the caller
        layer[v] = max((layer[p] + 1 for p in preds[v] if p < v), default=0)
    succs: list[list[int]] = [[] for _ in range(n_nodes)]
    for a, b in edges:
        succs[a].append(b)
    for v in reversed(range(n_nodes)):  # a source (e.g. a DEQUANTIZE of weights) sits just above its first reader
        if not preds[v] and succs[v]:
            layer[v] = max(0, min(layer[w] for w in succs[v]) - 1)
    # dummy chain per long edge
    width = list(widths)
    layer_of = list(layer)
    chains = []
    up: list[list[int]] = [[] for _ in range(n_nodes)]
    down: list[list[int]] = [[] for _ in range(n_nodes)]

    def add_dummy(lay: int) -> int:
        width.append(DUMMY_W)
        layer_of.append(lay)
        up.append([])
        down.append([])
        return len(width) - 1

    for a, b in edges:
        chain = [a]
        for lay in range(layer_of[a] + 1, layer_of[b]):
            chain.append(add_dummy(lay))
        chain.append(b)
        for u, v in zip(chain, chain[1:]):
            down[u].append(v)
            up[v].append(u)
        chains.append(chain)
    n_layers = max(layer_of, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(n_layers)]
    for v in range(len(width)):
        rows[layer_of[v]].append(v)
    pos = {}
    for row in rows:
        for k, v in enumerate(row):
            pos[v] = k

    def sweep(order_rows, neighbours) -> None:
        for row in order_rows:

            def key(v, _row=row):
                ns = [pos[u] for u in neighbours[v]]
                return (sum(ns) / len(ns)) if ns else pos[v]

            row.sort(key=key)
            for k, v in enumerate(row):
                pos[v] = k

    for _ in range(SWEEPS // 2):
        sweep(rows[1:], up)
        sweep(rows[-2::-1], down)
    xs = [0.0] * len(width)
    for row in rows:
        total = sum(width[v] for v in row) + GAP * (len(row) - 1)
        x = -total / 2
        for v in row:
            xs[v] = x + width[v] / 2
            x += width[v] + GAP
    ys = [lay * LAYER_GAP for lay in layer_of]
    min_x = min((xs[v] - width[v] / 2 for v in range(len(width))), default=0.0)
    xs = [x - min_x + 20 for x in xs]
    nodes = [(xs[v], ys[v] + 20) for v in range(n_nodes)]
    lines = []
    for chain in chains:
        pts = [(xs[chain[0]], ys[chain[0]] + 20 + NODE_H)]
        pts += [(xs[v], ys[v] + 20 + NODE_H / 2) for v in chain[1:-1]]
        pts.append((xs[chain[-1]], ys[chain[-1]] + 20))
        lines.append(pts)
    return nodes, lines


def subgraph_view(model, k: int, profile=None) -> dict:
    """The drawable graph of subgraph ``k``: input nodes, op nodes, output nodes and tensor edges."""
    sg = model.subgraphs[k]
    times = {}
    if profile is not None:
        times = {r.node: r for r in profile.nodes if r.subgraph == k}
    items: list[dict] = []
    producer: dict[int, int] = {}
    for i in sg.inputs:
        producer[i] = len(items)
        items.append({"kind": "input", "label": sg.tensors[i].name or f"input {i}", "tensor": i})
    op_ids = []
    for n, op in enumerate(sg.operators):
        code = model.operator_codes[op.opcode_index]
        opts = op.builtin_options or op.builtin_options2
        item = {
            "kind": "op",
            "label": code.name,
            "node": n,
            "version": code.version,
            "options": {name: option_value(name, v) for name, v in (opts or {}).items()},
            "options_type": getattr(opts, "table", None),
            "custom_options_bytes": len(op.custom_options),
            "inputs": [i for i in op.inputs],
            "outputs": [o for o in op.outputs],
        }
        r = times.get(n)
        if r is not None:
            item["profile"] = {"mean_ms": r.mean_ms, "self_ms": r.self_ms, "percent": r.percent, "calls": r.calls}
        op_ids.append(len(items))
        items.append(item)
        for o in op.outputs:
            if o >= 0:
                producer.setdefault(o, len(items) - 1)
    out_nodes = []
    for i in sg.outputs:
        out_nodes.append(len(items))
        items.append({"kind": "output", "label": sg.tensors[i].name or f"output {i}", "tensor": i})
    edges: list[tuple[int, int, int]] = []  # (from item, to item, tensor)
    for n, op in enumerate(sg.operators):
        for i in dict.fromkeys(op.inputs):
            if i >= 0 and i in producer and producer[i] != op_ids[n]:
                edges.append((producer[i], op_ids[n], i))
    for item_id, i in zip(out_nodes, sg.outputs):
        if i in producer:
            edges.append((producer[i], item_id, i))
    edges = [e for e in edges if e[0] < e[1]]  # a node reading its own output (variables) has no edge drawn
    widths = []
    for it in items:
        text = it["label"] if it["kind"] == "op" else it["label"][:28]
        it["label"] = text
        extra = 7.0 * len("0.000 ms (00.0%)") + 16 if "profile" in it else 0.0
        widths.append(max(84.0, 7.4 * len(text) + 22, extra))
    pos, lines = layout(len(items), [(a, b) for a, b, _ in edges], widths)
    for it, (x, y), w in zip(items, pos, widths):
        it.update(x=round(x, 1), y=round(y, 1), w=round(w, 1), h=NODE_H)
        if it["kind"] == "op":
            it["fill"] = _color(it["label"])
    tensors = {}
    for _a, _b, i in edges:
        tensors.setdefault(i, _tensor_info(model, sg, i))
    for it in items:
        for i in it.get("inputs", []) + it.get("outputs", []) + ([it["tensor"]] if "tensor" in it else []):
            if i >= 0:
                tensors.setdefault(i, _tensor_info(model, sg, i))
    drawn = [
        {
            "from": a,
            "to": b,
            "tensor": i,
            "points": [[round(x, 1), round(y, 1)] for x, y in pts],
            "label": f"{tensors[i]['shape']} {tensors[i]['dtype']}",
        }
        for (a, b, i), pts in zip(edges, lines)
    ]
    rank: dict[int, int] = {}  # a node's place in its layer: neighbours' labels sit at different heights
    for y in {it["y"] for it in items}:
        row = sorted((j for j, it in enumerate(items) if it["y"] == y), key=lambda j: items[j]["x"])
        rank.update((n, place) for place, n in enumerate(row))
    seen: set[int] = set()
    for e in drawn:  # a tensor read by several nodes is labelled once, near its producer
        e["show_label"] = e["tensor"] not in seen
        seen.add(e["tensor"])
        (x0, y0), (x1, y1) = e["points"][0], e["points"][1]
        frac = 0.25 if rank[e["from"]] % 2 == 0 else 0.6
        e["label_at"] = [round(x0 + (x1 - x0) * frac + 4, 1), round(y0 + (y1 - y0) * frac + 3, 1)]
    width = max((it["x"] + it["w"] / 2 for it in items), default=0) + 40
    height = max((it["y"] + NODE_H for it in items), default=0) + 30
    return {
        "index": k,
        "name": sg.name,
        "width": round(width, 1),
        "height": round(height, 1),
        "items": items,
        "edges": drawn,
        "tensors": {str(i): t for i, t in tensors.items()},
    }


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;font:13px system-ui,sans-serif;color:#212529;display:flex;height:100vh}
#main{flex:1;overflow:auto;padding:8px 16px}
#panel{width:340px;border-left:1px solid #ccc;padding:10px 14px;overflow:auto;background:#fafafa}
h1{font-size:17px;margin:6px 0}h2{font-size:14px;margin:14px 0 4px}
.node rect{stroke:#495057;stroke-width:1;rx:5;cursor:pointer}.node text{pointer-events:none;font-size:12px}
.node.io rect{fill:#fff;stroke-dasharray:4 2}.node.selected rect{stroke:#d6336c;stroke-width:3}
.edge path{fill:none;stroke:#868e96;stroke-width:1.3}.edge text{font-size:10px;fill:#495057}
.edge:hover path{stroke:#d6336c;stroke-width:2.5}.edge{cursor:pointer}
table{border-collapse:collapse}td{padding:1px 6px 1px 0;vertical-align:top}td:first-child{color:#666}
.t{margin:3px 0 6px 0;font-family:monospace;font-size:12px}
</style></head><body>
<div id="main"><h1>__TITLE__</h1><div id="graphs"></div></div>
<div id="panel"><b>Click a node or an edge.</b></div>
<script type="application/json" id="model-data">__DATA__</script>
<script>
(function(){
var data=JSON.parse(document.getElementById("model-data").textContent);
var NS="http://www.w3.org/2000/svg";
function el(tag,attrs,parent){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);
 if(parent)parent.appendChild(e);return e;}
function h(tag,text,parent){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;
 if(parent)parent.appendChild(e);return e;}
var panel=document.getElementById("panel");
function row(tab,k,v){var tr=h("tr","",tab);h("td",k,tr);h("td",String(v),tr);}
function tensorText(sg,i){if(i<0)return"(none)";var t=sg.tensors[String(i)];if(!t)return"#"+i;
 return"#"+i+" "+t.name+": "+t.dtype+" "+t.shape+(t.constant?" const":"")+(t.variable?" variable":"")
 +(t.quantization?"\\n  "+t.quantization:"");}
function showTensor(sg,i){panel.textContent="";var t=sg.tensors[String(i)];h("h2","Tensor #"+i,panel);
 var tab=h("table","",panel);row(tab,"name",t.name);row(tab,"subgraph",sg.index);row(tab,"shape",t.shape);
 row(tab,"dtype",t.dtype);row(tab,"quantization",t.quantization||"none");if(t.constant)row(tab,"constant","yes");}
function showNode(sg,it){panel.textContent="";
 if(it.kind!=="op"){showTensor(sg,it.tensor);
  panel.firstChild.textContent="Subgraph "+it.kind+": tensor #"+it.tensor;return;}
 h("h2",it.label+" v"+it.version+" (subgraph "+sg.index+", node "+it.node+")",panel);
 if(it.profile){var pt=h("table","",panel);row(pt,"mean ms",it.profile.mean_ms.toFixed(4));
  row(pt,"self ms",it.profile.self_ms.toFixed(4));row(pt,"% of invoke",it.profile.percent.toFixed(2));
  if(it.profile.calls!==1)row(pt,"calls/invoke",it.profile.calls);}
 h("h2","Options"+(it.options_type?" ("+it.options_type+")":""),panel);var ot=h("table","",panel);
 var keys=Object.keys(it.options);if(!keys.length)h("div","none",panel);
 keys.forEach(function(k){row(ot,k,JSON.stringify(it.options[k]));});
 if(it.custom_options_bytes)h("div","custom_options: "+it.custom_options_bytes+" bytes",panel);
 h("h2","Inputs",panel);it.inputs.forEach(function(i){h("pre",tensorText(sg,i),panel).className="t";});
 h("h2","Outputs",panel);it.outputs.forEach(function(i){h("pre",tensorText(sg,i),panel).className="t";});}
var selected=null;
data.subgraphs.forEach(function(sg){
 var box=h("div","",document.getElementById("graphs"));
 var nops=sg.items.filter(function(i){return i.kind==="op";}).length;
 h("h2","Subgraph "+sg.index+(sg.name?" '"+sg.name+"'":"")+": "+nops+" nodes",box);
 var svg=el("svg",{width:sg.width,height:sg.height,viewBox:"0 0 "+sg.width+" "+sg.height,"class":"graph",
   "data-subgraph":sg.index},box);
 el("defs",{},svg).innerHTML='<marker id="arrow'+sg.index+'" viewBox="0 0 10 10" refX="10" refY="5" '+
   'markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#868e96"/></marker>';
 sg.edges.forEach(function(e){var g=el("g",{"class":"edge","data-tensor":e.tensor},svg);
  var d="M"+e.points.map(function(p){return p[0]+","+p[1];}).join("L");
  el("path",{d:d,"marker-end":"url(#arrow"+sg.index+")"},g);
  el("title",{},g).textContent=e.label;
  if(e.show_label){var t=el("text",{x:e.label_at[0],y:e.label_at[1]},g);t.textContent=e.label;}
  g.addEventListener("click",function(){showTensor(sg,e.tensor);});});
 sg.items.forEach(function(it){var g=el("g",{"class":"node "+(it.kind==="op"?"op":"io"),
   "data-node":it.kind==="op"?it.node:"t"+it.tensor},svg);
  el("rect",{x:it.x-it.w/2,y:it.y,width:it.w,height:it.h,fill:it.fill||"#fff"},g);
  var t=el("text",{x:it.x,y:it.y+(it.profile?15:23),"text-anchor":"middle"},g);t.textContent=it.label;
  if(it.profile){var p=el("text",{x:it.x,y:it.y+30,"text-anchor":"middle"},g);
   p.textContent=it.profile.self_ms.toFixed(3)+" ms ("+it.profile.percent.toFixed(1)+"%)";}
  g.addEventListener("click",function(){if(selected)selected.classList.remove("selected");g.classList.add("selected");
   selected=g;showNode(sg,it);});});
});
document.body.setAttribute("data-drawn",String(document.querySelectorAll("g.node.op").length));
var m=location.hash.match(/^#node=(\\d+):(\\d+)$/);  // a link to one node: #node=SUBGRAPH:NODE opens its panel
if(m){var g=document.querySelector('svg[data-subgraph="'+m[1]+'"] g.node.op[data-node="'+m[2]+'"]');
 if(g){g.dispatchEvent(new MouseEvent("click"));g.scrollIntoView();}}
})();
</script></body></html>
"""


def graph_html(model, title: str, profile=None) -> str:
    data = {"title": title, "subgraphs": [subgraph_view(model, k, profile) for k in range(len(model.subgraphs))]}
    text = json.dumps(data, default=str, allow_nan=False).replace("</", "<\\/")
    return _PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", text)


def write_graph_html(path: str, model, title: str, profile=None) -> int:
    """Write the page; returns the number of op nodes drawn."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(graph_html(model, title, profile))
    return sum(len(sg.operators) for sg in model.subgraphs)
