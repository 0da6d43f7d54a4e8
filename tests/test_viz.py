"""jbind.visualization (MXNet's mx.viz) against MXNet 1.9.1's output (tests/golden/viz/,
written by tests/golden/make_viz_golden.py from the graphs of viz_cases.py)."""
import contextlib
import io
import json
import pathlib
import sys
import types
import warnings

import numpy as np
import pytest

import jbind as mx
from jbind import visualization as viz

GOLDEN = pathlib.Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import viz_cases  # noqa: E402

_SYMBOLS = {}


def symbol(name):
    if name not in _SYMBOLS:
        _SYMBOLS[name] = viz_cases.build(mx, name)
    return _SYMBOLS[name]


def golden(name):
    return json.loads((GOLDEN / "viz" / f"{name}.json").read_text())


def summary_text(sym, **kw):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert viz.print_summary(sym, **kw) is None
    return buf.getvalue()


def plot_kwargs(kw):
    kw = dict(kw)
    if kw.get("dtype") is not None:
        kw["dtype"] = {k: np.dtype(v).type for k, v in kw["dtype"].items()}
    return kw


class RecordingDigraph:
    """Stands in for graphviz.Digraph: keeps the node/edge calls' keywords in order."""

    def __init__(self, name=None, format=None):
        self.name, self.format, self.calls = name, format, []

    def node(self, **kwargs):
        self.calls.append(["node", [list(kv) for kv in kwargs.items()]])

    def edge(self, **kwargs):
        self.calls.append(["edge", [list(kv) for kv in kwargs.items()]])


@pytest.fixture
def fake_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Digraph=RecordingDigraph))


def edges(dot):
    return [(dict(kw)["tail_name"], dict(kw)["head_name"], dict(kw)["label"])
            for kind, kw in dot.calls if kind == "edge"]


SUMMARIES = [(n, k) for n, (_, s, _) in viz_cases.CASES.items() for k in range(len(s))]
PLOTS = [(n, k) for n, (_, _, p) in viz_cases.CASES.items() for k in range(len(p))]


@pytest.mark.parametrize("name,k", SUMMARIES, ids=[f"{n}-{k}" for n, k in SUMMARIES])
def test_print_summary_matches_mxnet(name, k):
    kw = viz_cases.CASES[name][1][k]
    assert summary_text(symbol(name), **kw) == golden(name)["summaries"][k]


@pytest.mark.parametrize("name,k", PLOTS, ids=[f"{n}-{k}" for n, k in PLOTS])
def test_plot_network_calls_match_mxnet(fake_graphviz, name, k):
    want = golden(name)["plots"][k]
    dot = viz.plot_network(symbol(name), **plot_kwargs(viz_cases.CASES[name][2][k]))
    assert (dot.name, dot.format) == (want["name"], want["format"])
    assert dot.calls == want["calls"]


def test_plot_network_source_matches_mxnet():
    """With the real graphviz package: jbind's Digraph has the source that MXNet's calls
    give with this graphviz version (and MXNet's own text under graphviz 0.8.4)."""
    import graphviz  # a test dependency (pyproject.toml)
    for name, k in PLOTS:
        want = golden(name)["plots"][k]
        dot = viz.plot_network(symbol(name), **plot_kwargs(viz_cases.CASES[name][2][k]))
        assert isinstance(dot, graphviz.Digraph)
        replay = graphviz.Digraph(name=want["name"], format=want["format"])
        for kind, kw in want["calls"]:
            getattr(replay, kind)(**dict(kw))
        assert dot.source == replay.source, (name, k)
        if graphviz.__version__ == golden(name)["graphviz"]:
            assert dot.source == want["source"], (name, k)


def test_plot_network_without_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # `import graphviz` raises ImportError
    with pytest.raises(ImportError, match="graphviz Python package: pip install graphviz"):
        viz.plot_network(symbol("mlp"))
    assert summary_text(symbol("mlp")) == golden("mlp")["summaries"][1]  # needs no graphviz


# --- where MXNet 1.9.1 fails (each recorded in the golden file) ---------------------------

def _mxnet_failed(name, fn, error):
    assert any(f.startswith(f"{fn}: {error}") for f in golden(name)["mxnet_fails"])


def test_summary_one_dim_input():
    """print_summary with shapes counts no channels from a 1-D input (the bucketing
    example's label reshaped to (-1,)); MXNet 1.9.1 raises IndexError."""
    _mxnet_failed("lstm_lm_flat_label", "print_summary", "IndexError")
    (fn, kw), = viz_cases.MXNET_FAILS["lstm_lm_flat_label"]
    text = summary_text(symbol("lstm_lm_flat_label"), **kw)
    lines = text.splitlines()
    # The default columns end at 52, 76, 88 and 120 characters.
    rows = [[ln[a:b].strip() for a, b in ((0, 52), (52, 76), (76, 88), (88, 120))]
            for ln in lines[3:-2] if ln[:1] not in "_="]
    assert ["embed(Embedding)", "2x8", "240", "data"] in rows
    assert ["pred(FullyConnected)", "30", str((16 + 1) * 30), "reshape0"] in rows
    k = rows.index(["softmax(SoftmaxOutput)", "30", "0", "pred"])
    assert rows[k + 1] == ["", "", "", "reshape1"]  # the label's 1-D reshape
    assert lines[-2] == f"Total params: {sum(int(r[2]) for r in rows if r[2])}"
    # Without shapes, the same table as MXNet's.
    assert summary_text(symbol("lstm_lm_flat_label")) == golden("lstm_lm_flat_label")["summaries"][0]


def test_plot_multi_output_edge_label(fake_graphviz):
    """plot_network with shapes labels an edge read from a several-output op without
    `num_outputs` (topk ret_typ='both') with that output's shape; MXNet 1.9.1 raises KeyError."""
    _mxnet_failed("custom_topk", "plot_network", "KeyError")
    (fn, kw), = viz_cases.MXNET_FAILS["custom_topk"]
    dot = viz.plot_network(symbol("custom_topk"), **kw)
    assert edges(dot) == [("sq", "data", "5"), ("tk", "sq", "5"), ("_plus0", "tk", "2"),
                          ("_plus0", "tk", "2"), ("fc", "_plus0", "2")]
    dot = viz.plot_network(symbol("custom_topk"), dtype={"data": np.float32})
    assert [e[2] for e in edges(dot)] == ["(float32)"] * 5
    tk = mx.sym.topk(mx.sym.Variable("x"), k=2, ret_typ="both", dtype="int32", name="tk")
    dot = viz.plot_network(mx.sym.Group([mx.sym.abs(tk[0], name="v"), mx.sym.abs(tk[1], name="i")]),
                           shape={"x": (2, 5)}, dtype={"x": np.float16})
    assert edges(dot) == [("tk", "x", "5(float16)"), ("v", "tk", "2(float16)"), ("i", "tk", "2(int32)")]


def test_plot_pooling_default_pool_type(fake_graphviz):
    """plot_network draws a Pooling without pool_type as MXNet's default, max; MXNet 1.9.1
    raises KeyError."""
    _mxnet_failed("pool_default", "plot_network", "KeyError")
    dot = viz.plot_network(symbol("pool_default"), shape={"data": (1, 2, 6, 6)})
    labels = {dict(kw)["name"]: dict(kw)["label"] for kind, kw in dot.calls if kind == "node"}
    assert labels == {"data": "data", "pool": "Pooling\nmax, 2x2/2x2", "flat": "flat",
                      "fc": "FullyConnected\n3"}
    assert edges(dot) == [("pool", "data", "2x6x6"), ("flat", "pool", "2x3x3"), ("fc", "flat", "18")]


# --- bad input ---------------------------------------------------------------------------

def test_incomplete_shape_names_the_arguments(fake_graphviz):
    sym = symbol("group")  # `extra` is an output of its own: data does not determine it
    for call in (viz.print_summary, viz.plot_network):
        with pytest.raises(viz.IncompleteError, match=r"undetermined.*extra=None") as e:
            call(sym, shape={"data": (3, 7)})
        assert isinstance(e.value, mx.base.MXNetError) and isinstance(e.value, ValueError)
        assert "data=" not in str(e.value).split("undetermined")[1]
    with pytest.raises(viz.IncompleteError, match=r"dtype.*extra=None"):
        viz.plot_network(sym, dtype={"data": np.float32})
    with pytest.raises(viz.IncompleteError, match=r"softmax_label=\(0,\)"):
        viz.print_summary(symbol("mlp"), shape={"data": (0, 100)})


def test_bad_arguments(fake_graphviz):
    for call in (viz.print_summary, viz.plot_network):
        with pytest.raises(TypeError, match="must be a Symbol, got str") as e:
            call("net")
        assert isinstance(e.value, mx.base.MXNetError)
        with pytest.raises(TypeError, match=r"`shape` must be a dict"):
            call(symbol("mlp"), shape=(1, 100))
        with pytest.raises(mx.base.MXNetError, match="'label' is not an input"):
            call(symbol("mlp"), shape={"data": (1, 100), "label": (1,)})
    with pytest.raises(mx.base.MXNetError, match="fc1"):  # inconsistent shapes: infer_shape's error
        viz.print_summary(symbol("mlp"), shape={"data": (1, 100), "fc1_weight": (3, 3)})


def test_repeated_names_warn(fake_graphviz):
    x = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    x = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    with pytest.warns(RuntimeWarning, match="Repeated names: fc_weight,fc_bias,fc$"):
        viz.plot_network(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        viz.plot_network(symbol("mlp"))


def test_mx_viz_is_the_module():
    assert mx.viz is mx.visualization is viz
