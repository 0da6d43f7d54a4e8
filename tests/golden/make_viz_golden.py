"""Golden output of `mx.viz.print_summary` and `mx.viz.plot_network` from real MXNet 1.9.1.

Run from the repository root with the MXNet venv (it needs the `graphviz` Python package,
which MXNet 1.9.1 itself requires; no Graphviz binary):

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_viz_golden.py

For each case of viz_cases.py writes tests/golden/viz/<case>.json: the text each
`print_summary` call printed; for each `plot_network` call the Digraph's name and format,
every `node` / `edge` call in order with its keywords (recorded by a Digraph subclass put
in place of graphviz's) and the Digraph's `.source` as this graphviz version writes it;
and for each call of the case in MXNET_FAILS, the error MXNet raised. Deterministic.
"""
import contextlib
import io
import json
import os
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import graphviz  # noqa: E402
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import viz_cases  # noqa: E402

OUT_DIR = os.path.join(HERE, "viz")


class RecordingDigraph(graphviz.Digraph):
    """graphviz.Digraph that also keeps each node/edge call's keywords, in order."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def node(self, **kwargs):
        self.calls.append(["node", list(kwargs.items())])
        super().node(**kwargs)

    def edge(self, **kwargs):
        self.calls.append(["edge", list(kwargs.items())])
        super().edge(**kwargs)


def plot_kwargs(kw):
    kw = dict(kw)
    if kw.get("dtype") is not None:
        kw["dtype"] = {k: np.dtype(v).type for k, v in kw["dtype"].items()}
    return kw


def run(name, summaries, plots):
    sym = viz_cases.build(mx, name)
    out = {"graphviz": graphviz.__version__, "summaries": [], "plots": []}
    for kw in summaries:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mx.viz.print_summary(sym, **kw)
        out["summaries"].append(buf.getvalue())
    for fn, kw in viz_cases.MXNET_FAILS.get(name, []):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(mx.viz, fn)(sym, **kw)
        except Exception as e:  # noqa: BLE001 -- what MXNet raises is the record
            out.setdefault("mxnet_fails", []).append("%s: %s: %r" % (fn, type(e).__name__, e))
        else:
            raise SystemExit("%s: MXNet no longer fails on %s(**%r)" % (name, fn, kw))
    graphviz.Digraph = RecordingDigraph
    try:
        for kw in plots:
            dot = mx.viz.plot_network(sym, **plot_kwargs(kw))
            out["plots"].append({"name": dot.name, "format": dot.format, "calls": dot.calls,
                                 "source": dot.source})
    finally:
        graphviz.Digraph = RecordingDigraph.__bases__[0]
    return out


def dumps(out):
    """JSON with one node/edge call a line, so the files stay short and diff well."""
    out = dict(out)
    plots = [dict(p) for p in out.pop("plots")]
    text = json.dumps(out, indent=1, sort_keys=True)[:-2] + ',\n "plots": ['
    for k, p in enumerate(plots):
        calls = ",\n   ".join(json.dumps(c) for c in p.pop("calls"))
        head = json.dumps(p, sort_keys=True)[:-1]
        text += ("," if k else "") + "\n  " + head + ', "calls": [\n   ' + calls + "]}"
    return text + "\n ]\n}\n"


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, (_, summaries, plots) in viz_cases.CASES.items():
        out = run(name, summaries, plots)
        print(name, len(out["summaries"]), "summaries,", len(out["plots"]), "plots")
        with open(os.path.join(OUT_DIR, name + ".json"), "w") as f:
            f.write(dumps(out))


if __name__ == "__main__":
    main()
