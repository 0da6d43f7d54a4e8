# Sourced by examples/run.sh, tests/run.sh and .ci/run: makes the project's venv (.venv at
# the repository root) if it is missing or stale, then activates it. Stale means made for
# another pyproject.toml or another checkout path (an editable install points at its
# folder). A second run finds the stamp and only activates, in well under a second.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$root/.venv
stamp=$venv/.jbind-installed
want="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1) $root"
if [[ ! -x $venv/bin/python || ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
  py=${PYTHON:-python3}
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "jbind needs Python 3.10 or newer as '$py' (set PYTHON=/path/to/python3)" >&2
    exit 2
  fi
  echo "making $venv and installing jbind with its test extra (once; about a minute)" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -e "$root[test]"
  echo "$want" > "$stamp"
fi
. "$venv/bin/activate"
