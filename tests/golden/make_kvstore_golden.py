"""Golden values for `mx.kv` (the local KVStore), from MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_kvstore_golden.py

Writes tests/golden/kvstore/<case>.npz (every array each case in kvstore_cases.py
pulled), states.npz and adam.states (Adam states saved by MXNet's
`save_optimizer_states` halfway through a run, and the run's pulled weights) and
errors.json (for each call MXNet rejects: its exception class and message). Deterministic:
every case is seeded from its name, down to the bytes.
"""
import json
import os
import re
import sys
import tempfile
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvstore_cases as kc  # noqa: E402
from make_golden import save_npz  # noqa: E402  (byte-for-byte reproducible npz)

OUT = os.path.join(HERE, "kvstore")


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _message(e):
    lines = [ln.strip() for ln in str(e).splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("File ", "Traceback", "[bt]", "Stack"))]
    return re.sub(r"^MXNetError: ", "", lines[-1]) if lines else ""


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, case in kc.CASES.items():
        out = case(mx, np.random.RandomState(seed_for(name)))
        save_npz(os.path.join(OUT, name + ".npz"), out)

    rng = np.random.RandomState(seed_for("states"))
    states = os.path.join(OUT, "adam.states")
    first = kc.states_first_half(mx, rng, states)
    weights = {k: first["a%s_step1" % k] for k in kc.STATES_KEYS}
    second = kc.states_second_half(mx, rng, states, weights)
    save_npz(os.path.join(OUT, "states.npz"), {**first, **second})

    errors = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for name, call in kc.ERRORS.items():
            try:
                call(mx)
                mx.nd.waitall()
            except Exception as e:  # noqa: BLE001 - recording what MXNet raises
                errors[name] = [type(e).__name__, _message(e)]
            else:
                errors[name] = None
    with open(os.path.join(OUT, "errors.json"), "w") as f:
        json.dump(errors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
