"""Golden initializer draws from MXNet 1.9.1 after `mx.random.seed` (random_cases.py).

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_random_golden.py

Writes tests/golden/random/init_streams.npz. MXNet's CPU sampler is deterministic for a
seed (1024 mt19937 engines; the chunking does not depend on the thread count).
"""
import os
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import random_cases as rc  # noqa: E402
from make_golden import save_npz  # noqa: E402

OUT = os.path.join(HERE, "random")

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    arrays = {}
    for stream in rc.STREAMS:
        arrays.update(rc.run(mx, stream))
    save_npz(os.path.join(OUT, "init_streams.npz"), arrays)
    print("wrote %d arrays (%d numbers) to %s" % (len(arrays), sum(a.size for a in arrays.values()), OUT))
