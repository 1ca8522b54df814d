"""Every code block of docs/guide/*.md runs (a guide added there is picked up without touching this file);
docs/guide/README.md is the index (no code), which links every guide.

A guide's ```python blocks run top to bottom as one script, in a fresh process (so ``if __name__ ==
"__main__":`` guards and process pools behave as for a user), from an empty temporary folder, with this
repository first on the import path. The blocks check their own results with ``assert``. Fenced blocks in any
other language fail the test, except ``text`` (output shown to the reader, not code): no block escapes.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs" / "guide" / "README.md"  # the list of guides (no code)
GUIDES = sorted(g for g in (ROOT / "docs" / "guide").glob("*.md") if g != INDEX)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
NOT_CODE = {"text"}


def blocks(path: pathlib.Path) -> list[tuple[str, int, str]]:
    """(language, line number, code) of every fenced block."""
    text = path.read_text()
    return [(m.group(1), text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text)]


def test_guides_exist():
    names = {g.name for g in GUIDES}
    assert {
        "run-a-model.md",
        "custom-ops.md",
        "batch-inference-ray.md",
        "debug-quantization.md",
        "profile.md",
        "write-a-delegate.md",
    } <= names, names


def test_index_links_every_guide():
    links = set(re.findall(r"\]\(([^)#]+\.md)\)", INDEX.read_text()))
    assert links == {g.name for g in GUIDES}, links ^ {g.name for g in GUIDES}
    assert "docs/guide/README.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_guide_code_blocks_run(guide, tmp_path):
    found = blocks(guide)
    other = [(lang or "(none)", line) for lang, line, _ in found if lang != "python" and lang not in NOT_CODE]
    assert not other, f"{guide.name}: blocks the test cannot run (use ```python, or ```text for output): {other}"
    code = [(line, src) for lang, line, src in found if lang == "python"]
    assert code, f"{guide.name} has no python block"
    # one script; each block keeps its guide line numbers in tracebacks (padding with blank lines)
    script, at = [], 1
    for line, src in code:
        script.append("\n" * (line + 1 - at) + src)
        at = line + 1 + src.count("\n")
    path = tmp_path / guide.with_suffix(".py").name
    path.write_text("".join(script))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{guide.name} (line numbers are the guide's):\n{proc.stderr[-4000:]}"
