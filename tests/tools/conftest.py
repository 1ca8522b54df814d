"""Fixtures shared by the tflite-run tests: ``write`` (a file in tmp_path) and ``fc`` (a small float model)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def write(tmp_path):
    def _write(name: str, content) -> str:
        path = tmp_path / name
        if isinstance(content, np.ndarray):
            np.save(path, content)
        elif isinstance(content, dict):
            np.savez(path, **content)
        else:
            path.write_bytes(content)
        return str(path)

    return _write


@pytest.fixture
def fc(write) -> str:
    from tests.tools.test_run import fc_model

    return write("fc.tflite", fc_model())
