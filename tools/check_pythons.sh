#!/usr/bin/env bash
# Every Python and numpy the package claims: a fresh venv per Python, the package + its test extra installed, and a
# fast subset of the suite (the corpus check and a sample of op tests) run in each; one more run on the oldest numpy
# that pyproject.toml claims (numpy 1.23 has wheels up to Python 3.11, so that run uses OLDEST_NUMPY_PYTHON), over
# FLOOR_SUBSET: every op test plus the runtime, quant and corpus tests, since numpy 1.x differs from 2.x in ways any
# kernel can hit (value-based casting of 0-d operands, np.clip's -0.0, scalar-only promotion). CI runs numpy 2.x only.
#
#   tools/check_pythons.sh                      # all of PYTHONS, then the oldest-numpy run
#   PYTHONS="3.12" tools/check_pythons.sh       # some of them
#   VENVS=/tmp/v KEEP=1 tools/check_pythons.sh  # where the venvs go; KEEP=1 reuses existing venvs
#   PYTHONS="" KEEP=1 tools/check_pythons.sh    # only the numpy-floor run
#
# Pythons are found as ~/.pyenv/versions/<X.Y>*/bin/python or python<X.Y> on PATH. Where the oracle
# (ai-edge-litert) cannot be installed, the same subset runs without it (the tests that need it then fail, by
# design) and the summary says "no oracle". The last lines are one summary line per run; the exit code is non-zero
# when a run failed. Takes ~2-4 min per Python on 2 cores after the first download; the floor run (3985 tests) ~6 min
# of CPU: 24 min wall on 2 cores shared with 4 other jobs.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENVS=${VENVS:-/tmp/litert-py-venvs}
PYTHONS=${PYTHONS-"3.10 3.11 3.12 3.13"}  # PYTHONS="" runs only the oldest-numpy run
OLDEST_NUMPY_PYTHON=${OLDEST_NUMPY_PYTHON:-3.10}
SUBSET=${SUBSET:-"tests/test_corpus.py tests/runtime/test_interpreter.py tests/quant tests/ops/conv/test_conv.py
  tests/ops/conv/test_conv_quantized.py tests/ops/test_elementwise.py tests/ops/test_fully_connected.py
  tests/ops/test_pooling.py tests/ops/test_activations.py tests/ops/recurrent/test_lstm.py tests/tools/test_run.py
  tests/test_glibc_fallback.py tests/test_batch.py tests/runtime/test_custom_ops.py tests/ops/test_classifier_tail.py
  tests/ops/test_tail_bound.py tests/ops/conv/test_bound_plans.py tests/ops/test_streaming_plans.py"}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}       # seconds of wall time for one run's pytest
FLOOR_TIMEOUT=${FLOOR_TIMEOUT:-3600}   # the floor run: ~4000 tests, 24 min wall on a loaded 2-core machine
FLOOR_SUBSET=${FLOOR_SUBSET:-"tests/ops tests/runtime tests/quant tests/test_corpus.py tests/tools/test_run.py
  tests/test_glibc_fallback.py tests/test_batch.py"}
# the numpy floor as pyproject.toml states it ("numpy>=1.23" -> 1.23)
FLOOR=$(sed -n 's/.*"numpy>=\([0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml" | head -1)

find_python() {
  local v=$1 p
  for p in "$HOME"/.pyenv/versions/"$v".*/bin/python; do [ -x "$p" ] && { echo "$p"; return; }; done
  command -v "python$v" || true
}

SUMMARY=()
STATUS=0
run_one() {  # run_one PYTHON_VERSION NUMPY_SPEC LABEL TESTS TIMEOUT
  local v=$1 npspec=$2 label=$3 tests=$4 seconds=$5 py venv log oracle="oracle" res
  py=$(find_python "$v")
  if [ -z "$py" ]; then SUMMARY+=("$label: python $v not found"); STATUS=1; return; fi
  venv="$VENVS/$label"
  log="$VENVS/$label.log"
  mkdir -p "$VENVS"
  if [ -z "${KEEP:-}" ] || [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv" || { SUMMARY+=("$label: venv failed"); STATUS=1; return; }
  fi
  {
    "$venv/bin/python" -m pip install -q --upgrade pip
    # the package (not editable) with its runtime deps; numpy pinned first when asked
    if [ -n "$npspec" ]; then "$venv/bin/python" -m pip install -q "numpy$npspec"; fi
    "$venv/bin/python" -m pip install -q ${npspec:+"numpy$npspec"} "$ROOT"
    # the test extra; without the oracle if it has no wheel for this Python/numpy
    if ! "$venv/bin/python" -m pip install -q ${npspec:+"numpy$npspec"} "$ROOT[test]"; then
      oracle="no oracle"
      "$venv/bin/python" -m pip install -q ${npspec:+"numpy$npspec"} pytest hypothesis
    fi
  } >"$log" 2>&1 || { SUMMARY+=("$label: install failed (see $log)"); STATUS=1; return; }
  local versions
  versions=$("$venv/bin/python" -c "import sys, numpy; print(f'python {sys.version.split()[0]} numpy {numpy.__version__}')")
  # from the repository root (tests/ importable; python -m pytest puts the root first on sys.path, so the source tree
  # is what runs, with the venv's Python, numpy and oracle; the venv's bin first on PATH, so that the console-script
  # test finds the venv's tflite-run)
  (cd "$ROOT" && PATH="$venv/bin:$PATH" CI=true timeout "$seconds" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    $tests) >>"$log" 2>&1
  local rc=$?
  res=$(grep -E "^(=+ )?[0-9]+ (passed|failed|errors?)|^=+ .*(passed|failed|error)" "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  [ $rc -ne 0 ] && STATUS=1
  SUMMARY+=("$label: $versions, $oracle: ${res:-no result (exit $rc, see $log)}")
}

for v in $PYTHONS; do run_one "$v" "" "py$v" "$SUBSET" "$RUN_TIMEOUT"; done
if [ -n "$FLOOR" ]; then
  run_one "$OLDEST_NUMPY_PYTHON" "==$FLOOR.*" "py$OLDEST_NUMPY_PYTHON-numpy$FLOOR" "$FLOOR_SUBSET" "$FLOOR_TIMEOUT"
fi

echo
printf '%s\n' "${SUMMARY[@]}"
exit $STATUS
