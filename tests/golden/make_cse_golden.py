"""What MXNet 1.9.1's `Executor.get_optimized_symbol` returns with common subexpression
elimination on (MXNET_ELIMINATE_COMMON_EXPR=1, its default) and off.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv_gluon/bin/python tests/golden/make_cse_golden.py

Writes tests/golden/cse/cases.json: for each case of CASES (built under a fresh
NameManager, so names do not depend on what ran before), the internals' names of the
bound symbol and of the optimized one, and the optimized symbol's outputs; checked by
tests/test_cse.py.
"""
import json
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cse")
sys.path.insert(0, HERE)
from cse_cases import cases  # noqa: E402


def main():
    os.makedirs(OUT, exist_ok=True)
    out = {}
    for name, make in cases(mx.sym).items():
        with mx.name.NameManager():
            s = make()
        shapes = {n: (2, 3) for n in s.list_arguments() if n in "abc"}
        if "w" in s.list_arguments():
            shapes["w"] = (2, 3)
        got = {"internals": s.get_internals().list_outputs()}
        for flag in ("1", "0"):
            os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = flag
            exe = s.simple_bind(mx.cpu(), **shapes)
            opt = exe.get_optimized_symbol()
            got["cse_" + flag] = {"internals": opt.get_internals().list_outputs(), "outputs": opt.list_outputs()}
        out[name] = got
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
