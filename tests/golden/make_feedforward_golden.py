"""Golden values for MXNet's legacy `mx.model.FeedForward`, from MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_feedforward_golden.py

Runs every case of feedforward_cases.py (what each checks is described there) and
writes tests/golden/feedforward/<case>.npz, checked by tests/test_feedforward.py.
Deterministic, down to the bytes.
"""
import os
import sys
import warnings

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import feedforward_cases as fc  # noqa: E402
from make_golden import save_npz  # noqa: E402  (byte-for-byte reproducible npz)

OUT = os.path.join(HERE, "feedforward")


def main():
    warnings.simplefilter("ignore", DeprecationWarning)  # FeedForward and its initializer calls
    os.makedirs(OUT, exist_ok=True)
    for name, case in fc.CASES.items():
        save_npz(os.path.join(OUT, name + ".npz"), case(mx))


if __name__ == "__main__":
    main()
