"""tflite-run --benchmark: warm-up, timed runs (count or --max-secs), the statistics benchmark_model prints,
peak RSS, and a progress bar on stderr."""

from __future__ import annotations

import math
import resource
import sys
import time

import numpy as np


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (getrusage; kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def stats_ms(times: list[float]) -> dict:
    """count, first, min, max, mean, std, p50, p90, p99 of invoke times (seconds in, milliseconds out)."""
    a = np.asarray(times, np.float64) * 1e3
    return {
        "count": int(a.size),
        "first_ms": float(a[0]),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
        "mean_ms": float(a.mean()),
        "std_ms": float(a.std()),
        "p50_ms": float(np.percentile(a, 50)),
        "p90_ms": float(np.percentile(a, 90)),
        "p99_ms": float(np.percentile(a, 99)),
    }


class Progress:
    """A one-line bar on ``stream`` (a terminal), shown once a run has lasted ``after`` seconds."""

    def __init__(self, stream, total: int, max_secs: float | None, enabled: bool, after: float = 1.0):
        self.stream, self.total, self.max_secs, self.after = stream, total, max_secs, after
        self.enabled = enabled
        self.start = time.perf_counter()
        self.shown = False
        self.last = 0.0

    @staticmethod
    def wanted(stream, quiet: bool) -> bool:
        isatty = getattr(stream, "isatty", None)
        return not quiet and bool(isatty and isatty())

    def update(self, done: int, label: str = "benchmark", total: int | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < self.after or (self.shown and now - self.last < 0.1 and done < (total or self.total)):
            return
        total = self.total if total is None else total
        frac = done / total if total else 1.0
        if self.max_secs:
            frac = max(frac, min(1.0, elapsed / self.max_secs))
        width = 30
        fill = int(round(frac * width))
        self.stream.write(f"\r{label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} runs, {elapsed:.1f} s")
        self.stream.flush()
        self.shown, self.last = True, now

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 72 + "\r")
            self.stream.flush()


def benchmark(invoke, warmup: int, runs: int, max_secs: float | None, progress: Progress) -> dict:
    """Run ``invoke`` ``warmup`` times, then ``runs`` times (fewer when ``max_secs`` runs out; at least once);
    returns benchmark_model's figures for the timed runs, plus the warm-up's."""
    warm = []
    for k in range(warmup):
        t0 = time.perf_counter()
        invoke()
        warm.append(time.perf_counter() - t0)
        progress.update(k + 1, "warm-up", warmup)
    times = []
    start = time.perf_counter()
    try:
        for k in range(runs):
            t0 = time.perf_counter()
            invoke()
            t1 = time.perf_counter()
            times.append(t1 - t0)
            progress.update(k + 1)
            if max_secs is not None and t1 - start >= max_secs:
                break
    finally:
        progress.close()
    doc = stats_ms(times)
    doc["times_s"] = times  # the raw timed runs (tflite-run's timing figures use the same ones)
    doc["warmup"] = stats_ms(warm) if warm else None
    doc["requested_runs"] = runs
    doc["stopped_by_max_secs"] = len(times) < runs
    return doc


def benchmark_text(b: dict, memory: dict) -> str:
    def f(v):
        return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"

    lines = []
    if b.get("warmup"):
        w = b["warmup"]
        lines.append(f"Warm-up: count={w['count']} first={f(w['first_ms'])} ms mean={f(w['mean_ms'])} ms")
    stop = " (stopped by --max-secs)" if b["stopped_by_max_secs"] else ""
    lines.append(
        f"Benchmark: count={b['count']}{stop} first={f(b['first_ms'])} min={f(b['min_ms'])} "
        f"max={f(b['max_ms'])} avg={f(b['mean_ms'])} std={f(b['std_ms'])} p50={f(b['p50_ms'])} "
        f"p90={f(b['p90_ms'])} p99={f(b['p99_ms'])} (ms)"
    )
    lines.append(
        f"Memory: peak RSS {memory['peak_rss_bytes'] / 2**20:.1f} MiB, arena {memory['arena_bytes']:,} bytes"
        f" ({memory['arena_subgraphs']} subgraph{'s' if memory['arena_subgraphs'] != 1 else ''})"
    )
    return "\n".join(lines)
