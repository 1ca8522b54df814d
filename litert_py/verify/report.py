"""The result of a comparison and its renderings: terminal table, CSV, JSON (HTML in html.py)."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field

from .metrics import DEBUGGER_METRICS, METRICS

#: CSV columns: QuantizationDebugger's layer_statistics_dump columns first, then ours.
CSV_COLUMNS = (
    ("op_name", "tensor_idx")
    + DEBUGGER_METRICS
    + ("scale", "zero_point", "tensor_name")
    + ("node", "float_tensor_name", "rmse/scale", "cosine_similarity", "snr_db")
)
RANK_METRIC = "rmse/scale"


def _rank(row: dict, metric: str = RANK_METRIC) -> float:
    v = row.get(metric)
    return v if isinstance(v, (int, float)) and math.isfinite(v) else -math.inf


def _json_value(v):
    """Strict JSON: non-finite floats as the strings "nan", "inf", "-inf"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


@dataclass
class Report:
    """``mode`` ("pair", "single" or "debug"), the number of ``samples``, how many tensors were ``matched`` (pair),
    compared op by op (single) or checked by a NumericVerify op (debug), the ``unmatched`` tensor names,
    ``layers`` (one dict per tensor in graph order, with every metric of ``metrics.METRICS``; single mode adds
    ``accumulated_<metric>`` against the whole model run in float) and ``outputs`` (the model outputs'
    metrics, with ``top1_agreement`` for class-score outputs)."""

    mode: str
    samples: int
    matched: int
    unmatched: list
    layers: list
    outputs: list
    histograms: dict = field(default_factory=dict, repr=False)  # tensor name -> some differences

    def worst(self, metric: str = RANK_METRIC) -> list[dict]:
        """Layers, worst first (by ``metric``; layers without it last)."""
        return sorted(self.layers, key=lambda r: -_rank(r, metric))

    def suggest_float(self, k: int) -> list[str]:
        """The ``k`` tensors whose layer adds the largest error by itself (rmse/scale of the own error in single
        and debug modes; in pair mode, where only accumulated error is known, the largest drop of snr_db from
        the layer's worst input to its output). Give them to the converter to keep those ops in float:
        ``tf.lite.experimental.QuantizationDebugOptions(denylisted_nodes=[...])``."""
        if self.mode != "pair":
            return [r["tensor_name"] for r in self.worst()[:k] if _rank(r) > -math.inf]
        return [r["tensor_name"] for r in sorted(self.layers, key=lambda r: -_rank(r, "snr_drop_db"))[:k]]

    def exceeds(self, metric: str, value: float) -> list[dict]:
        return [r for r in self.layers if _rank(r, metric) > value]

    def to_dict(self) -> dict:
        return _json_value(
            {
                "mode": self.mode,
                "samples": self.samples,
                "matched": self.matched,
                "unmatched": list(self.unmatched),
                "layers": list(self.layers),
                "outputs": list(self.outputs),
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def to_csv(self) -> str:
        extra = [k for r in self.layers for k in r if k not in CSV_COLUMNS]
        columns = list(CSV_COLUMNS) + list(dict.fromkeys(extra))
        buf = io.StringIO()
        w = csv.DictWriter(buf, columns, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in self.layers:
            w.writerow(r)
        return buf.getvalue()

    def table(self, limit: int | None = 25) -> str:
        """The terminal table: worst layers first."""
        cols = [
            ("node", 4),
            ("op_name", 18),
            ("rmse/scale", 10),
            ("max_abs_error", 13),
            ("mean_error", 11),
            ("cosine_similarity", 10),
            ("snr_db", 7),
        ]
        if self.mode == "single":
            cols.append(("accumulated_rmse/scale", 10))
        head = {"cosine_similarity": "cosine", "accumulated_rmse/scale": "accum r/s"}
        lines = [_summary(self)]
        lines.append("  ".join(f"{head.get(c, c):>{w}}" for c, w in cols) + "  tensor_name")
        rows = self.worst()
        for r in rows[:limit] if limit else rows:
            lines.append("  ".join(_cell(r.get(c), w) for c, w in cols) + "  " + str(r["tensor_name"]))
        if limit and len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more layers (--csv / --json for all)")
        if self.unmatched:
            lines.append(
                f"not compared ({len(self.unmatched)}): "
                + ", ".join(map(str, self.unmatched[:10]))
                + (" ..." if len(self.unmatched) > 10 else "")
            )
        for o in self.outputs:
            top = f", top-1 agreement {o['top1_agreement']:.3f}" if "top1_agreement" in o else ""
            lines.append(
                f"output {o['output']} ({o['tensor_name']}): rmse/scale {_cell(o['rmse/scale'], 0)}, "
                f"max_abs_error {_cell(o['max_abs_error'], 0)}, snr_db {_cell(o['snr_db'], 0)}{top}"
            )
        return "\n".join(lines)


def _summary(r: Report) -> str:
    what = {"pair": "tensors matched", "single": "ops compared with their float version", "debug": "NumericVerify ops"}[
        r.mode
    ]
    return f"mode {r.mode}: {r.samples} samples, {r.matched} {what}, {len(r.unmatched)} not compared"


def _cell(v, w: int) -> str:
    if v is None:
        s = "-"
    elif isinstance(v, float):
        s = f"{v:.4g}"
    else:
        s = str(v)
    return f"{s:>{w}}" if w else s


__all__ = ["CSV_COLUMNS", "METRICS", "Report"]
