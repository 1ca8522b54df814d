"""Every source path the documentation names exists: ``litert_py/...py``, ``tests/...py``, ``tools/...py`` and the
package-relative ``ops/...py`` (also ``quant/``, ``runtime/``, ``schema/``, ``delegates/``, ``verify/``) in
docs/**/*.md, CONTRIBUTING.md, README.md, the docstrings and comments of litert_py/, tests/ and tools/, and the
shell scripts (tools/*.sh, .ci/run)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: a path starting at one of these folders (not inside a longer path such as tensorflow/lite/tools/...)
PATH = re.compile(r"(?<![\w/.-])((?:litert_py|tests|tools|ops|quant|runtime|schema|delegates|verify)/[\w/.-]*?\.py)\b")


def _exists(path: str) -> bool:
    if path.startswith(("litert_py/", "tests/")):
        return (ROOT / path).is_file()
    return (ROOT / path).is_file() or (ROOT / "litert_py" / path).is_file()  # tools/x.py or litert_py/tools/x.py


def _missing(files) -> list[str]:
    out = []
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            out += [f"{f.relative_to(ROOT)}:{n}: {p}" for p in PATH.findall(line) if not _exists(p)]
    return out


def test_the_pattern_finds_paths():
    assert PATH.findall("see `litert_py/ops/pooling.py` and ops/conv/conv2d.py.") == [
        "litert_py/ops/pooling.py",
        "ops/conv/conv2d.py",
    ]
    assert PATH.findall("tensorflow/lite/tools/x.py tflite/python/interpreter.py") == []
    assert not _exists("ops/no_such_module.py")


@pytest.mark.parametrize("where", ["docs", "code"])
def test_named_paths_exist(where):
    if where == "docs":
        files = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "CONTRIBUTING.md", ROOT / "README.md"]
    else:
        this = pathlib.Path(__file__).resolve()  # its examples name a missing path on purpose
        files = [p for d in ("litert_py", "tests", "tools") for p in sorted((ROOT / d).rglob("*.py")) if p != this]
        files += sorted((ROOT / "tools").glob("*.sh")) + [ROOT / ".ci" / "run"]
    assert len(files) > 5
    missing = _missing(files)
    assert not missing, missing
