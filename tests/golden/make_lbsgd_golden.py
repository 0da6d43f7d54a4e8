"""Goldens for mx.optimizer.LBSGD from real MXNet 1.9.1 (tests/test_lbsgd.py checks them).

    /tmp/mxvenv_gluon/bin/python tests/golden/make_lbsgd_golden.py

Writes tests/golden/lbsgd/lbsgd.npz: the weight after seven updates for each case of
lbsgd_cases.py (every warmup strategy, batch_scale 2 and 3, with and without momentum),
with the inputs.
"""
import os
import sys

import numpy as np
import mxnet as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lbsgd_cases import CASES, COMMON  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lbsgd", "lbsgd.npz")


def main():
    rs = np.random.RandomState(0)
    out = {"w0": rs.rand(3, 4).astype(np.float32),
           "grads": np.stack([rs.rand(3, 4).astype(np.float32) - 0.5 for _ in range(7)])}
    for name, kw in CASES.items():
        opt = mx.optimizer.create("lbsgd", **dict(COMMON, **kw))
        w = mx.nd.array(out["w0"])
        st = opt.create_state(0, w)
        for g in out["grads"]:
            opt.update(0, w, mx.nd.array(g), st)
        out[name] = w.asnumpy()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez(OUT, **out)


if __name__ == "__main__":
    main()
