"""Golden facts about MXNet 1.9.1's `mx.test_utils`, for jbind's `jbind.test_utils`.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_test_utils_golden.py

Writes tests/golden/test_utils/test_utils.json: the default tolerances per dtype, what
`get_tols` picks for pairs of inputs, `almost_equal` verdicts, the error message and the
printed report of failing `assert_almost_equal` / `check_symbolic_forward` /
`check_symbolic_backward` calls, the draws of the seeded random helpers, and what the
symbolic checks leave in numpy's global random stream (jbind must draw in MXNet's order, so
that a seeded test sees the same data). Each recorder below takes the library and its
test_utils as parameters: tests/test_test_utils.py runs the same code with jbind.
"""
import contextlib
import io
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "test_utils")

DTYPES = ["float16", "float32", "float64", "bool", "int8", "uint8", "int32", "uint32", "int64", "uint64"]


def _plain(x):
    """JSON-able: arrays as {dtype, data}, numbers as Python numbers, tuples as lists."""
    if isinstance(x, np.ndarray):
        return {"dtype": x.dtype.name, "data": x.tolist()}
    if isinstance(x, (np.integer, np.floating, np.bool_)):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    return x


def tolerances(mx, tu):
    out = {"rtol": {n: tu.default_rtols()[np.dtype(n)] for n in DTYPES},
           "atol": {n: tu.default_atols()[np.dtype(n)] for n in DTYPES},
           "numeric_eps": {n: tu.default_numeric_eps()[np.dtype(n)] for n in ("float16", "float32", "float64")},
           "get_rtol": [tu.get_rtol(), tu.get_rtol(0.5), tu.get_rtol(None, np.dtype(np.float16))],
           "get_atol": [tu.get_atol(), tu.get_atol(0.5), tu.get_atol(None, np.dtype(np.int32))],
           "default_dtype": np.dtype(tu.default_dtype()).name}
    samples = {"float16": np.zeros(2, np.float16), "float32": np.zeros(2, np.float32),
               "float64": np.zeros(2, np.float64), "int32": np.zeros(2, np.int32), "bool": np.zeros(2, bool),
               "nd_float32": mx.nd.zeros((2,)), "nd_float16": mx.nd.zeros((2,), dtype=np.float16),
               "py_int": 3, "py_float": 0.5}
    pairs = {}
    for x in samples:
        for y in samples:
            pairs[f"{x}|{y}"] = list(tu.get_tols(samples[x], samples[y], None, None))
    pairs["float32|float32 given"] = list(tu.get_tols(samples["float32"], samples["float32"], 0.25, 0.125))
    pairs["float16|float32 dict"] = list(tu.get_tols(samples["float16"], samples["float32"],
                                                     {np.dtype(np.float16): 0.3}, {np.dtype(np.float32): 0.2}))
    out["get_tols"] = pairs
    return out


def _pair(seed, shape, dtype=np.float32):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-2, 2, shape).astype(dtype)
    return a, a.copy()


def message_cases():
    """(name, a, b, keyword arguments, as NDArrays?) for assert_almost_equal calls that fail."""
    a1 = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b1 = a1.copy()
    b1[0, 1] += 0.5
    b1[1, 2] -= 1.0
    b1[1, 0] += 0.01
    a2, b2 = _pair(1, (4, 4))
    b2 += np.linspace(0.1, 1.6, 16, dtype=np.float32).reshape(4, 4)
    a3, b3 = _pair(2, (3,))
    a3[1] = np.nan
    a4, b4 = _pair(3, (2, 2), np.float16)
    b4[1, 1] += 0.5
    a5, b5 = _pair(4, (5,))
    b5[[0, 3]] += [1e-3, 2.0]
    return [
        ("named", a1, b1, {"names": ("x", "y")}, False),
        ("ndarrays", a1, b1, {}, True),
        ("few_listed", a1, b1, {"mismatches": (1, 2)}, True),
        ("at_least", a2, b2, {}, False),
        ("no_limit", a2, b2, {"mismatches": (3, 0)}, False),
        ("nan", a3, b3, {}, False),
        ("float16", a4, b4, {}, False),
        ("float16_vs_float32", a4, b4.astype(np.float32), {}, False),
        ("given_tols", a5, b5, {"rtol": 1e-6, "atol": 1e-6}, False),
        ("scalars", np.float32(1.0), np.float32(2.0), {}, False),
        ("zero_d", np.array(1.0, np.float32), np.array(1.5, np.float32), {"names": ("p", "q")}, False),
    ]


def _failure(fn):
    """(error message, printed text) of a call expected to raise AssertionError."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            fn()
        except AssertionError as e:
            return [str(e), buf.getvalue()]
    raise RuntimeError("no AssertionError")


def messages(mx, tu):
    out = {}
    for name, a, b, kwargs, nd in message_cases():
        if nd:
            a, b = mx.nd.array(a), mx.nd.array(b)
        out[name] = _failure(lambda: tu.assert_almost_equal(a, b, **kwargs))
    with mx.name.NameManager():  # the output names in the messages: `_plus0_output`
        x = mx.sym.Variable("x")
        y = mx.sym.Variable("y")
        summed, product = x + y, x * y
    xs = np.array([[1, 2], [3, 4]], np.float32)
    ys = np.array([[5, 6], [7, 8]], np.float32)
    out["forward"] = _failure(lambda: tu.check_symbolic_forward(summed, [xs, ys], [xs * ys]))
    out["backward"] = _failure(lambda: tu.check_symbolic_backward(
        product, {"x": xs, "y": ys}, [np.ones((2, 2), np.float32)], {"x": ys, "y": ys}))
    out["shapes"] = _failure(lambda: tu.assert_almost_equal(np.ones((1, 2)), np.ones(2), use_broadcast=False))
    return out


def verdicts(mx, tu):
    a = np.array([1.0, 2.0, np.nan], np.float32)
    b = np.array([1.0, 2.00001, np.nan], np.float32)
    return {"nan": tu.almost_equal(a, b), "nan_equal": tu.almost_equal(a, b, equal_nan=True),
            "default_tols": tu.almost_equal(np.float32(1), np.float32(1.00002)),
            "given": tu.almost_equal(1.0, 1.1, rtol=0.2), "same": tu.same(a[:2], b[:2]),
            "same_exact": tu.same(a[:2], a[:2].copy())}


def draws(mx, tu):
    np.random.seed(3)
    out = {"shape_2d": tu.rand_shape_2d(), "shape_3d": tu.rand_shape_3d(4, 5, 6),
           "shape_nd": tu.rand_shape_nd(4), "shape_nd_zero": tu.rand_shape_nd(3, 2, allow_zero_size=True),
           "random_arrays": tu.random_arrays((2, 3)), "random_arrays_2": tu.random_arrays((2,), ()),
           "rand_ndarray": tu.rand_ndarray((2, 2)).asnumpy(),
           "rand_ndarray_f16": tu.rand_ndarray((3,), dtype=np.float16).asnumpy(),
           "random_sample": tu.random_sample(list(range(10)), 3),
           "next": np.random.rand(2)}
    return _plain(out)


def symbolic(mx, tu):
    """Seeded symbolic checks that pass: what they return and the next draws after each."""
    out = {}
    np.random.seed(5)
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), act_type="tanh")
    loc = {"data": np.random.uniform(-1, 1, (2, 4)), "fc_weight": np.random.uniform(-1, 1, (3, 4)),
           "fc_bias": np.random.uniform(-1, 1, (3,))}
    tu.check_numeric_gradient(net, loc, rtol=0.05, atol=1e-3)
    out["after_numeric"] = np.random.rand(3)
    tu.check_numeric_gradient(net, [loc["data"], loc["fc_weight"], loc["fc_bias"]], grad_nodes={"fc_weight": "add",
                              "data": "null"}, rtol=0.05, atol=1e-3)
    out["after_numeric_nodes"] = np.random.rand(3)
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    xs, ys = np.random.rand(2, 3), np.random.rand(2, 3)
    og = np.random.rand(2, 3)
    grads = tu.check_symbolic_backward(x * y, [xs, ys], [og], {"y": og * xs, "x": og * ys})
    out["backward_grads"] = {k: v.asnumpy() for k, v in grads.items()}
    out["after_backward"] = np.random.rand(3)
    grads = tu.check_symbolic_backward(x * y, [xs, ys], [og], [og * ys, og * xs], grad_req=["add", "null"])
    out["backward_add_null"] = {k: v.asnumpy() for k, v in grads.items()}
    out["after_backward_add"] = np.random.rand(3)
    fc = mx.sym.FullyConnected(mx.sym.Variable("d"), num_hidden=2, name="fc")
    ctx_list = [{"ctx": mx.cpu(0), "d": (2, 3), "type_dict": {"d": np.float32}},
                {"ctx": mx.cpu(0), "d": (2, 3), "type_dict": {"d": np.float32}}]
    gt = tu.check_consistency(fc, ctx_list, scale=0.5)
    out["consistency"] = {k: v.asnumpy() for k, v in sorted(gt.items())}
    out["after_consistency"] = np.random.rand(3)
    return _plain(out)


def record(mx, tu):
    return {"tolerances": _plain(tolerances(mx, tu)), "messages": messages(mx, tu),
            "verdicts": _plain(verdicts(mx, tu)), "draws": draws(mx, tu), "symbolic": symbolic(mx, tu)}


if __name__ == "__main__":
    os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    import mxnet as mx
    from mxnet import test_utils

    opts = np.get_printoptions()
    facts = record(mx, test_utils)
    np.set_printoptions(**opts)  # MXNet's failing assert_almost_equal changes them for the process
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "test_utils.json"), "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", os.path.join(OUT, "test_utils.json"))
