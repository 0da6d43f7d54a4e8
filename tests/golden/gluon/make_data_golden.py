"""Golden data for jbind's `gluon.data.vision.transforms` from real MXNet 1.9.1 (issue #21, part 7).

Run from the repository root with an MXNet 1.9.1 venv (never one with jax):

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv_gluon/bin/python tests/golden/gluon/make_data_golden.py

Writes tests/golden/gluon/data/transforms.npz: two seeded images (uint8 6x9x3 and float32
7x5x3) and, for each deterministic transform case of data_cases.py, MXNet's output.
tests/test_gluon_data_vision.py builds the same transforms in jbind with the same code and
compares.
"""
import os
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402
from mxnet.gluon.data.vision import transforms as T  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_cases import transform_cases  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

def images():
    rng = np.random.default_rng(21)
    return {"u8": rng.integers(0, 256, (6, 9, 3)).astype(np.uint8),
            "f32": rng.uniform(0, 255, (7, 5, 3)).astype(np.float32)}


def main():
    os.makedirs(OUT, exist_ok=True)
    imgs = images()
    out = {"input:" + k: v for k, v in imgs.items()}
    for name, (t, which) in transform_cases(T).items():
        y = t(mx.nd.array(imgs[which], dtype=imgs[which].dtype)).asnumpy()
        out[name] = y
        print(name, y.shape, y.dtype)
    np.savez(os.path.join(OUT, "transforms.npz"), **out)


if __name__ == "__main__":
    main()
