"""Golden values for the fluent methods of Symbol and NDArray (`x.sin()`, `s.reshape((3, 2))`).

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_fluent_golden.py

Writes tests/golden/fluent/fluent.npz: the inputs, each case's outputs through NDArray
(`nd/<i>/<k>`) and through Symbol (`sym/<i>/<k>`, every case in one group, bound once),
the symbol's output names, `debug_str()` of a few graphs, and MXNet's public method names
of both classes. The tables and the builders below import only numpy and take the library
as a parameter: tests/test_fluent.py runs the same code with jbind.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fluent")


def inputs():
    rng = np.random.RandomState(7)
    f = np.float32
    nan = rng.uniform(-1, 1, (2, 3)).astype(f)
    nan[0, 1] = nan[1, 2] = np.nan
    return {
        "x": rng.uniform(-0.9, 0.9, (2, 3)).astype(f),
        "x2": rng.uniform(-0.9, 0.9, (2, 3)).astype(f),
        "p": rng.uniform(1.1, 3.0, (2, 3)).astype(f),
        "x3": rng.uniform(-1, 1, (2, 3, 4)).astype(f),
        "row": rng.uniform(-1, 1, (1, 3)).astype(f),
        "s": rng.uniform(-1, 1, (1, 3, 1)).astype(f),
        "y6": rng.uniform(-1, 1, (3, 2)).astype(f),
        "img": np.arange(16, dtype=f).reshape(1, 4, 2, 2),
        "img2": np.arange(16, dtype=f).reshape(1, 1, 4, 4),
        "v": np.array([1, 2, 3], f),
        "n": nan,
        "idx": np.array([1, 0], f),
        "pidx": np.array([0, 2], f),
    }


UNARY_X = ("abs sign round rint fix floor ceil trunc sin cos tan arcsin arccos arctan degrees radians "
           "sinh cosh tanh arcsinh arctanh exp expm1 cbrt square relu sigmoid").split()
UNARY_P = "arccosh log log10 log2 log1p sqrt rsqrt rcbrt reciprocal".split()

# (method, positional args, keyword args, input); "@name" is another input as an array.
CASES = [(m, [], {}, "x") for m in UNARY_X] + [(m, [], {}, "p") for m in UNARY_P] + [
    ("softmax", [], {}, "x"), ("softmax", [], {"axis": 0}, "x"), ("softmax", [], {"temperature": 2.0}, "x"),
    ("log_softmax", [], {}, "x"), ("softmin", [], {}, "x"),
    ("sum", [], {}, "x"), ("sum", [], {"axis": 1}, "x"), ("sum", [], {"axis": 0, "keepdims": True}, "x"),
    ("sum", [], {"axis": 1, "exclude": True}, "x3"), ("mean", [], {"axis": 1}, "x"),
    ("max", [], {"axis": [0, 2], "keepdims": True}, "x3"), ("min", [], {}, "x"), ("prod", [], {"axis": 1}, "p"),
    ("nansum", [], {}, "n"), ("nanprod", [], {"axis": 1}, "n"),
    ("norm", [], {}, "x"), ("norm", [], {"ord": 1, "axis": 1}, "x"), ("norm", [], {"axis": 0, "keepdims": True}, "x"),
    ("argmax", [], {"axis": 1}, "x"), ("argmin", [], {"axis": 0}, "x"), ("argmax_channel", [], {}, "x"),
    ("argsort", [], {}, "x"), ("argsort", [], {"axis": 0, "is_ascend": False}, "x"),
    ("sort", [], {}, "x"), ("sort", [], {"axis": 0, "is_ascend": False}, "x"),
    ("topk", [], {"k": 2}, "x"), ("topk", [], {"k": 2, "ret_typ": "both"}, "x"),
    ("topk", [], {"k": 1, "axis": 0, "ret_typ": "value"}, "x"),
    ("reshape", [[4, -1]], {}, "x3"), ("reshape", [], {"shape": [-1, 0], "reverse": True}, "x3"),
    ("reshape_like", ["@y6"], {}, "x"), ("flatten", [], {}, "x3"),
    ("expand_dims", [1], {}, "x"), ("expand_dims", [], {"axis": -1}, "x"),
    ("squeeze", [], {}, "s"), ("squeeze", [], {"axis": 0}, "s"), ("squeeze", [[0, 2]], {}, "s"),
    ("transpose", [], {}, "x"), ("transpose", [[1, 0, 2]], {}, "x3"), ("swapaxes", [0, 1], {}, "x"),
    ("flip", [], {"axis": 1}, "x"), ("tile", [], {"reps": [2, 1]}, "x"), ("repeat", [2], {"axis": 0}, "x"),
    ("pad", [], {"mode": "constant", "pad_width": [0, 0, 0, 0, 1, 1, 1, 1], "constant_value": 1}, "img"),
    ("depth_to_space", [2], {}, "img"), ("space_to_depth", [2], {}, "img2"),
    ("diag", [], {}, "x"), ("diag", [1], {}, "x"), ("diag", [], {}, "v"),
    ("broadcast_to", [[2, 3]], {}, "row"), ("broadcast_axes", [], {"axis": 0, "size": 2}, "row"),
    ("broadcast_like", ["@x"], {}, "row"),
    ("split", [3], {"axis": 1}, "x"), ("split", [], {"num_outputs": 2, "axis": 0, "squeeze_axis": True}, "x"),
    ("slice", [[0, 1], [2, 3]], {}, "x"), ("slice", [], {"begin": [None, 0], "end": [None, 2]}, "x"),
    ("slice_axis", [1, 0, 2], {}, "x"), ("slice_like", ["@row"], {}, "x"),
    ("take", ["@idx"], {}, "x"), ("take", ["@idx"], {"axis": 1}, "x"), ("pick", ["@pidx"], {"axis": 1}, "x"),
    ("one_hot", [3], {}, "idx"), ("clip", [-0.5, 0.5], {}, "x"), ("clip", [], {"a_min": 0, "a_max": 1}, "x"),
    ("shape_array", [], {}, "x3"), ("size_array", [], {}, "x3"),
    ("zeros_like", [], {}, "x"), ("ones_like", [], {}, "x"),
    ("astype", ["int32"], {}, "x3"), ("astype", ["float16"], {}, "x"),
]

# Operators as Python expressions over inputs (the same text for NDArray and Symbol).
DUNDERS = ["x == x", "x != x2", "x > x2", "x >= x", "x < x2", "x <= x2", "x > 0.1", "x <= 0.1", "0.1 < x",
           "x != 0.2", "x % x2", "x % 0.3", "0.7 % p", "p ** x", "x ** 2", "2 ** x", "-x", "abs(x)",
           "x + x2 * 2 - 1", "1 / p"]


def call(obj, method, args, kwargs, values):
    """obj.method(*args, **kwargs) with "@name" arguments replaced from `values`."""
    args = [values[a[1:]] if isinstance(a, str) and a.startswith("@") else _tuple(a) for a in args]
    kwargs = {k: values[v[1:]] if isinstance(v, str) and v.startswith("@") else _tuple(v) for k, v in kwargs.items()}
    return getattr(obj, method)(*args, **kwargs)


def _tuple(v):
    return tuple(v) if isinstance(v, list) else v


def run_nd(mx, data):
    """{key: array}: each case and each operator expression on NDArrays."""
    nds = {k: mx.nd.array(v) for k, v in data.items()}
    out = {}
    for i, (method, args, kwargs, name) in enumerate(CASES):
        res = call(nds[name], method, args, kwargs, nds)
        for k, r in enumerate(res if isinstance(res, list) else [res]):
            out[f"nd/{i}/{k}"] = r.asnumpy()
    for i, expr in enumerate(DUNDERS):
        out[f"ndop/{i}/0"] = eval(expr, {}, nds).asnumpy()
    return out


def build_syms(mx):
    """[(key prefix, Symbol)] for every case and expression, each built under a fresh NameManager."""
    syms, vs = [], {k: mx.sym.var(k) for k in inputs()}  # one variable per name: they share a group
    for i, (method, args, kwargs, name) in enumerate(CASES):
        with mx.name.NameManager():
            syms.append((f"sym/{i}", call(vs[name], method, args, kwargs, vs)))
    for i, expr in enumerate(DUNDERS):
        with mx.name.NameManager():
            syms.append((f"symop/{i}", eval(expr, {}, dict(vs))))
    return syms


def run_sym(mx, data):
    """{key: array}: every symbol in one group, bound once; plus their output names."""
    syms = build_syms(mx)
    group = mx.sym.Group([s for _, s in syms])
    args = {k: mx.nd.array(data[k]) for k in group.list_arguments()}
    outs = group.bind(mx.cpu(), args).forward()
    res, names, j = {}, {}, 0
    for prefix, s in syms:
        names[prefix] = s.list_outputs()
        for k in range(len(s.list_outputs())):
            res[f"{prefix}/{k}"] = outs[j].asnumpy()
            j += 1
    return res, names


def debug_syms(mx):
    """Graphs whose debug_str() is recorded."""
    out = {}
    with mx.name.NameManager():
        a = mx.sym.var("a")
        out["variable"] = a
        out["group_of_variables"] = mx.sym.Group([a, mx.sym.var("b")])
        out["fc"] = mx.sym.FullyConnected(data=2 * a + mx.sym.sin(a), num_hidden=10)
        out["zeros"] = mx.sym.zeros((2, 3))
        out["zeros_plus"] = mx.sym.zeros((2, 3)) + a
        with mx.AttrScope(__mood__="x"):
            out["attrs"] = mx.sym.FullyConnected(mx.sym.var("d", shape=(2, 3), lr_mult=2), num_hidden=3,
                                                 name="fc", attr={"__lr_mult__": "3"})
        m, v = mx.sym.var("m"), mx.sym.var("v")
        bn1 = mx.sym.BatchNorm(a, moving_mean=m, moving_var=v, name="bn1")
        bn2 = mx.sym.BatchNorm(bn1, moving_mean=m, moving_var=v, name="bn2")
        out["shared_aux"] = bn2 + m  # versions 1, then 2 (two writers), then read at 2
        out["multi_output"] = mx.sym.SliceChannel(a, num_outputs=2, name="sc")
        out["internals"] = bn1.get_internals()
    return out


def public_names(cls):
    return sorted(n for n in dir(cls) if not n.startswith("_"))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    import mxnet as mx
    from make_golden import save_npz

    data = inputs()
    arrays = {f"in/{k}": v for k, v in data.items()}
    arrays.update(run_nd(mx, data))
    sym_res, names = run_sym(mx, data)
    arrays.update(sym_res)
    arrays["sym_names"] = np.array(json.dumps(names, sort_keys=True))
    arrays["debug_str"] = np.array(json.dumps({k: s.debug_str() for k, s in debug_syms(mx).items()}, sort_keys=True))
    arrays["symbol_methods"] = np.array(public_names(mx.sym.Symbol))
    arrays["ndarray_methods"] = np.array(public_names(mx.nd.NDArray))
    os.makedirs(OUT, exist_ok=True)
    save_npz(os.path.join(OUT, "fluent.npz"), arrays)
    print("wrote %d arrays to %s" % (len(arrays), OUT))
