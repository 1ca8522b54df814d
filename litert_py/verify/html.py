"""One self-contained HTML page (no network, no scripts): summary, plots drawn as inline SVG, the full table.

Plots: the error of every layer along the graph (rmse/scale by node; single mode also the accumulated error),
with the 1/sqrt(12) line of a perfect rounding, and histograms of the differences of the worst layers.
Everything is drawn here, so the page needs neither matplotlib nor a browser with network access.
"""

from __future__ import annotations

import html
import math

import numpy as np

from .metrics import PERFECT_RMSE_OVER_SCALE
from .report import CSV_COLUMNS, Report, _rank

_STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: right; }
th { background: #dde4f0; }
td.name { text-align: left; font-family: monospace; max-width: 420px; overflow: hidden; text-overflow: ellipsis;
          white-space: nowrap; }
tr.bad td { background: #fbe0dc; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
svg { background: #fafafa; border: 1px solid #ccc; }
"""


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v)) if v is not None else "-"


def _finite(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _line_plot(report: Report, width: int = 760, height: int = 260) -> str:
    series = [("rmse/scale", "#1f5fbf")]
    if report.mode == "single":
        series.append(("accumulated_rmse/scale", "#d9731a"))
    pts = {name: [(r["node"], _finite(r.get(name))) for r in report.layers] for name, _ in series}
    values = [v for p in pts.values() for _, v in p if v is not None] + [PERFECT_RMSE_OVER_SCALE]
    nodes = [r["node"] for r in report.layers] or [0]
    x0, x1 = min(nodes), max(max(nodes), min(nodes) + 1)
    top = max(values) * 1.1 or 1.0
    left, right, up, down = 50, 10, 20, 30

    def x(n):
        return left + (n - x0) / (x1 - x0) * (width - left - right)

    def y(v):
        return height - down - v / top * (height - up - down)

    parts = [
        f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{left}" y="14" font-size="12">error per layer along the graph (rmse/scale by node)</text>',
        f'<line x1="{left}" y1="{height - down}" x2="{width - right}" y2="{height - down}" stroke="#333"/>',
        f'<line x1="{left}" y1="{up}" x2="{left}" y2="{height - down}" stroke="#333"/>',
    ]
    for k in range(5):
        v = top * k / 4
        parts.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>')
    parts.append(f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end">node {x1}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="10">node {x0}</text>')
    yp = y(PERFECT_RMSE_OVER_SCALE)
    parts.append(
        f'<line x1="{left}" y1="{yp:.1f}" x2="{width - right}" y2="{yp:.1f}" stroke="#2a2" stroke-dasharray="4 3"/>'
    )
    parts.append(
        f'<text x="{width - right}" y="{yp - 3:.1f}" font-size="10" text-anchor="end" fill="#2a2">1/sqrt(12)</text>'
    )
    for (name, color), ly in zip(series, (30, 44)):
        p = [(x(n), y(v)) for n, v in pts[name] if v is not None]
        if p:
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="'
                + " ".join(f"{a:.1f},{b:.1f}" for a, b in p)
                + '"/>'
            )
            parts.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{color}"/>' for a, b in p)
        parts.append(f'<text x="{width - 200}" y="{ly}" font-size="11" fill="{color}">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _histogram(name: str, values: np.ndarray, width: int = 360, height: int = 180, bins: int = 40) -> str:
    v = values[np.isfinite(values)] if values.size else values
    parts = [
        f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="6" y="14" font-size="11">{html.escape(name[-55:])}</text>',
    ]
    if v.size:
        lo, hi = float(v.min()), float(v.max())
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        counts, _ = np.histogram(v, bins=bins, range=(lo, hi))
        peak = max(int(counts.max()), 1)
        w = (width - 20) / bins
        for k, c in enumerate(counts):
            h = c / peak * (height - 50)
            parts.append(
                f'<rect x="{10 + k * w:.1f}" y="{height - 25 - h:.1f}" width="{max(w - 1, 1):.1f}" '
                f'height="{h:.1f}" fill="#c0392b"/>'
            )
        parts.append(f'<text x="10" y="{height - 8}" font-size="10">{lo:.3g}</text>')
        parts.append(f'<text x="{width - 10}" y="{height - 8}" font-size="10" text-anchor="end">{hi:.3g}</text>')
        parts.append(
            f'<text x="{width / 2:.0f}" y="{height - 8}" font-size="10" text-anchor="middle">dequantized - float</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def to_html(report: Report, worst: int = 6) -> str:
    extra = [k for r in report.layers for k in r if k not in CSV_COLUMNS]
    cols = ["node", "op_name", "tensor_name"] + [c for c in CSV_COLUMNS if c not in ("node", "op_name", "tensor_name")]
    cols += list(dict.fromkeys(extra))
    rows = []
    for r in report.worst():
        bad = _rank(r) > 2 * PERFECT_RMSE_OVER_SCALE
        cells = "".join(
            f'<td class="name" title="{_fmt(r.get(c))}">{_fmt(r.get(c))}</td>'
            if c in ("tensor_name", "float_tensor_name")
            else f"<td>{_fmt(r.get(c))}</td>"
            for c in cols
        )
        rows.append(f'<tr class="{"bad" if bad else ""}">{cells}</tr>')
    hists = "".join(
        _histogram(r["tensor_name"], report.histograms.get(r["tensor_name"], np.zeros(0)))
        for r in report.worst()[:worst]
    )
    outputs = "".join(
        f"<li>output {o['output']} <code>{html.escape(o['tensor_name'])}</code>: rmse/scale {_fmt(o['rmse/scale'])}, "
        f"max_abs_error {_fmt(o['max_abs_error'])}, snr_db {_fmt(o['snr_db'])}"
        + (f", top-1 agreement {_fmt(o['top1_agreement'])}" if "top1_agreement" in o else "")
        + "</li>"
        for o in report.outputs
    )
    unmatched = "".join(f"<li><code>{html.escape(str(u))}</code></li>" for u in report.unmatched)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>tflite-verify report</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>tflite-verify: {html.escape(report.mode)} mode</h1>"
        f"<p>{report.samples} samples, {report.matched} tensors compared, {len(report.unmatched)} not compared. "
        f"Rows with rmse/scale above {2 * PERFECT_RMSE_OVER_SCALE:.3f} (twice a perfect rounding) are marked."
        f"</p><ul>{outputs}</ul><div class='plots'>{_line_plot(report)}</div>"
        f"<h2>Differences of the worst layers</h2><div class='plots'>{hists}</div>"
        f"<h2>Layers, worst first</h2><table><tr>{head}</tr>{''.join(rows)}</table>"
        + (f"<h2>Not compared</h2><ul>{unmatched}</ul>" if unmatched else "")
        + "</body></html>"
    )
