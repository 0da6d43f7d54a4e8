#!/usr/bin/env bash
# The test suite, from any shell: makes or reuses the project's venv, then runs pytest on
# 2 processes. Extra arguments go to pytest (./tests/run.sh tests/test_symbol.py -x).
set -euo pipefail
. "$(dirname "$0")/../.ci/venv.sh"
cd "$root"
exec python -m pytest -q -n 2 "$@"
