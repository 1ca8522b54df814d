#!/usr/bin/env bash
# Build the wheel and check it as a user gets it: pure (py3-none-any), ships the bundled model and py.typed,
# installs into a fresh venv without the test extra, and `tflite-run` works from there (on the bundled model).
#
#   tools/check_wheel.sh            # ~1 min (needs `build` from PyPI, and numpy/flatbuffers/tflite for the venv)
#
# Prints "wheel: OK <name>" last and exits 0, or names what is wrong and exits 1. Leaves nothing in the tree
# (the wheel and the venv go to a temporary folder; setuptools' build/ and *.egg-info are in .gitignore).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "wheel: FAIL: $*"; exit 1; }

"$PY" -m pip install -q build >/dev/null 2>&1 || true
(cd "$ROOT" && "$PY" -m build --wheel --outdir "$TMP/dist" >"$TMP/build.log" 2>&1) || { tail -20 "$TMP/build.log"; fail "build"; }
WHEEL=$(ls "$TMP"/dist/*.whl)
case "$(basename "$WHEEL")" in
  *-py3-none-any.whl) ;;
  *) fail "not a pure wheel: $(basename "$WHEEL")" ;;
esac
"$PY" - "$WHEEL" <<'PYEOF' || fail "contents"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["litert_py/models/tiny_cnn.tflite", "litert_py/py.typed", "litert_py/batch.py", "litert_py/ray_data.py"]
missing = [n for n in need if n not in names]
stray = sorted(n for n in names if n.startswith(("tests/", "tools/")))
assert not missing, f"missing {missing}"
assert not stray, f"ships test/tool files {stray[:5]}"
meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
text = zipfile.ZipFile(sys.argv[1]).read(meta).decode()
assert "Provides-Extra: ray" in text and "Provides-Extra: test" in text, "extras missing from METADATA"
print(f"contents ok: {len(names)} files")
PYEOF
"$PY" -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install -q "$WHEEL" >"$TMP/install.log" 2>&1 || { tail -20 "$TMP/install.log"; fail "install"; }
# no test extra: neither the oracle nor pytest nor ray came along
(cd "$TMP" && "$TMP/venv/bin/python" -c "
import importlib.util as u
extra = [m for m in ('ai_edge_litert', 'pytest', 'hypothesis', 'ray') if u.find_spec(m)]
assert not extra, f'test-only packages installed: {extra}'
import litert_py, litert_py.batch, litert_py.ray_data
assert '$TMP' in litert_py.__file__, litert_py.__file__
") || fail "imports"
(cd "$TMP" && "$TMP/venv/bin/tflite-run" >"$TMP/run.log" 2>&1) || { tail -20 "$TMP/run.log"; fail "tflite-run"; }
grep -q "tiny_cnn" "$TMP/run.log" || { cat "$TMP/run.log"; fail "tflite-run did not run the bundled model"; }
echo "wheel: OK $(basename "$WHEEL")"
