"""tflite-run graph: the page's content (parsed from its embedded JSON), its layout, and the page drawn by headless
Chromium (node count in the DOM after the script ran; a screenshot that is not blank)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

from litert_py.schema.builder import ModelBuilder, quant
from litert_py.schema.reader import read_model
from litert_py.tools.graph_html import layout
from tests.tools.test_run import run_main

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = str(ROOT / "litert_py" / "models" / "tiny_cnn.tflite")
WHILE_MODEL = str(ROOT / "tests" / "fixtures" / "tf_keras3_lstm_while.tflite")
BUNDLED_OPS = ["CONV_2D", "MAX_POOL_2D", "DEPTHWISE_CONV_2D", "RELU", "CONV_2D", "AVERAGE_POOL_2D", "RESHAPE"]
BUNDLED_OPS += ["FULLY_CONNECTED", "SOFTMAX"]


def page_data(path) -> dict:
    text = pathlib.Path(path).read_text()
    m = re.search(r'<script type="application/json" id="model-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def make_page(capsys, tmp_path, model, *extra) -> tuple[pathlib.Path, str]:
    out = tmp_path / "model.html"
    rc, stdout, err = run_main(capsys, "graph", model, "-o", out, *extra)
    assert rc == 0, err
    return out, stdout


def test_graph_page_content(capsys, tmp_path):
    out, stdout = make_page(capsys, tmp_path, BUNDLED)
    assert stdout.strip() == f"Wrote {out}: 9 nodes in 1 subgraph"
    text = out.read_text()
    for needle in ("src=", "href=", "<link", "@import", "url(http", "fetch(", "XMLHttpRequest"):
        assert needle not in text, needle  # self-contained: nothing loaded from anywhere
    (sg,) = page_data(out)["subgraphs"]
    ops = [it for it in sg["items"] if it["kind"] == "op"]
    assert [it["label"] for it in ops] == BUNDLED_OPS
    assert [it["label"] for it in sg["items"] if it["kind"] != "op"] == ["image", "probabilities"]
    assert ops[0]["options"]["padding"] == "SAME" and ops[0]["options_type"] == "Conv2DOptions"
    labels = {e["label"] for e in sg["edges"]}
    assert {"1x16x16x3 FLOAT32", "1x16x16x8 FLOAT32", "1x10 FLOAT32"} <= labels
    assert len(sg["edges"]) == 10  # input -> 9 ops in a chain -> output
    assert sg["tensors"]["1"]["constant"] and sg["tensors"]["1"]["shape"] == "8x3x3x3"
    assert "profile" not in ops[0]


def test_graph_with_profile_times(capsys, tmp_path):
    out, stdout = make_page(capsys, tmp_path, BUNDLED, "--profile", "--runs", "2")
    assert "with profile times" in stdout
    ops = [it for it in page_data(out)["subgraphs"][0]["items"] if it["kind"] == "op"]
    timed = [it for it in ops if "profile" in it]
    assert all(it["profile"]["mean_ms"] > 0 and 0 < it["profile"]["percent"] < 100 for it in timed)
    # every node is timed but the RELU fused at prepare into the depthwise conv's step (ops/activation_fusion.py)
    assert [it["label"] for it in ops if "profile" not in it] == ["RELU"] and len(timed) == len(ops) - 1


def test_graph_quantization_summarized(capsys, tmp_path, write):
    b = ModelBuilder()
    x = b.input("x", [1, 4], np.int8, quantization=quant(0.5, -3))
    w = b.const("w", np.ones((3, 4), np.int8), quantization=quant([0.1, 0.2, 0.4], [0, 0, 0], 0))
    y = b.tensor("y", [1, 3], np.int8, quantization=quant(1.0, 1))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    b.output(y)
    out, _ = make_page(capsys, tmp_path, write("q.tflite", b.build()))
    tensors = page_data(out)["subgraphs"][0]["tensors"]
    assert tensors[str(x)]["quantization"] == "scale 0.5, zero_point -3"
    assert tensors[str(w)]["quantization"] == "per-axis on dim 0: 3 scales 0.1..0.4 (mean 0.233333), zero_point 0"


def test_graph_every_subgraph(capsys, tmp_path):
    out, stdout = make_page(capsys, tmp_path, WHILE_MODEL)
    model = read_model(WHILE_MODEL)
    subs = page_data(out)["subgraphs"]
    assert [sg["index"] for sg in subs] == list(range(len(model.subgraphs)))
    assert [sum(it["kind"] == "op" for it in sg["items"]) for sg in subs] == [len(s.operators) for s in model.subgraphs]
    assert f"{sum(len(s.operators) for s in model.subgraphs)} nodes in {len(model.subgraphs)} subgraphs" in stdout
    for sg in subs:
        items = sg["items"]
        for e in sg["edges"]:  # every edge runs downwards, from its producer's bottom to its reader's top
            a, b = items[e["from"]], items[e["to"]]
            assert a["y"] < b["y"]
            assert e["points"][0] == [a["x"], a["y"] + a["h"]] and e["points"][-1] == [b["x"], b["y"]]
        rows: dict[float, list] = {}
        for it in items:
            rows.setdefault(it["y"], []).append((it["x"] - it["w"] / 2, it["x"] + it["w"] / 2))
        for spans in rows.values():  # no two nodes of a layer overlap
            spans.sort()
            assert all(l1 < r0 for (_, l1), (r0, _) in zip(spans, spans[1:]))


def test_layout_longest_path_layers():
    # 0 -> 1 -> 2 -> 3 and 0 -> 3 (a long edge gets dummy points); 4 is a source read only by 3
    edges = [(0, 1), (1, 2), (2, 3), (0, 3), (4, 3)]
    pos, lines = layout(5, edges, [80.0] * 5)
    ys = [y for _, y in pos]
    assert ys[0] < ys[1] < ys[2] < ys[3]
    assert ys[4] == ys[2]  # a source sits just above its first reader
    assert len(lines[3]) == 4  # two dummy points for the edge spanning three layers
    assert len(lines[0]) == 2


# -- headless Chromium --------------------------------------------------------------------------------
def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is required for the graph page test in CI (apt-get install chromium)")
        pytest.skip("chromium is not installed (required under CI=true)")
    return exe


def browse(tmp_path, url: str, *flags: str) -> subprocess.CompletedProcess:
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *flags,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path)


def png_size(path: pathlib.Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("model", [BUNDLED, WHILE_MODEL], ids=["tiny_cnn", "while"])
def test_chromium_draws_every_node(capsys, tmp_path, model):
    out, _ = make_page(capsys, tmp_path, model, *(["--profile", "--runs", "1"] if model == BUNDLED else []))
    n_ops = sum(len(s.operators) for s in read_model(model).subgraphs)
    url = out.as_uri() + ("#node=0:2" if model == BUNDLED else "")  # the link opens node 2's side panel
    p = browse(tmp_path, url, "--dump-dom", "--virtual-time-budget=5000")
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    assert len(re.findall(r'<g class="node op( selected)?"', dom)) == n_ops  # drawn by the page's script
    assert f'data-drawn="{n_ops}"' in dom
    headings = re.findall(r"<h2>Subgraph (\d+)", dom)
    assert headings == [str(k) for k in range(len(read_model(model).subgraphs))]
    assert len(re.findall(r'<g class="edge"', dom)) == sum(len(sg["edges"]) for sg in page_data(out)["subgraphs"])
    for op in set(BUNDLED_OPS if model == BUNDLED else ["WHILE"]):
        assert f">{op}</text>" in dom
    if model == BUNDLED:
        panel = dom[dom.index('<div id="panel">') :]
        for text in (
            "<h2>DEPTHWISE_CONV_2D v1 (subgraph 0, node 2)</h2>",
            "<td>mean ms</td>",
            "<h2>Options (DepthwiseConv2DOptions)</h2>",
            "<td>depth_multiplier</td><td>2</td>",
            '<td>padding</td><td>"SAME"</td>',
            "#5 dwconv/weights: FLOAT32 1x3x3x16 const",
        ):
            assert text in panel, text


def test_chromium_screenshot_is_not_blank(capsys, tmp_path):
    out, _ = make_page(capsys, tmp_path, BUNDLED)
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shots = {}
    for name, page in (("graph", out), ("blank", blank)):
        shot = tmp_path / f"{name}.png"
        p = browse(
            tmp_path, page.as_uri(), f"--screenshot={shot}", "--window-size=1000,800", "--virtual-time-budget=5000"
        )
        assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
        assert png_size(shot) == (1000, 800)
        shots[name] = shot.stat().st_size
    # a white page compresses to almost nothing; the drawn graph (boxes, text, edges) does not
    assert shots["graph"] > 5 * shots["blank"], shots
