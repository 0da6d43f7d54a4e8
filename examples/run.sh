#!/usr/bin/env bash
# The main job, from any shell: makes or reuses the project's venv, then trains MXNet's
# bucketing LSTM language model for one epoch on the bundled corpus. Extra arguments go to
# the example (./examples/run.sh --num-epochs 3 --plot ppl.png).
set -euo pipefail
. "$(dirname "$0")/../.ci/venv.sh"
exec python "$root/examples/bucketing_rnn.py" --num-epochs 1 "$@"
