"""Elementwise, broadcast, reduction, dot and creation ops (jbind/ops/elemwise.py, broadcast.py, reduce.py).

Forward against numpy float64 references and gradients against finite differences
(helpers.check_op); shape rules, dtype rules, tie gradients and rounding checked
against values read from MXNet 1.9.1.
"""
import numpy as np
import pytest
import scipy.special as sp

import jbind as mx
from helpers import Case, check_op, raises_naming
from jbind.ops import ALIASES, REGISTRY

V = mx.sym.Variable
S = mx.sym
POS = (0.5, 2.0)


def _zeros(**kw):
    return {k: np.zeros_like(v) for k, v in kw.items()}


def _rint(x):  # MXNet: the nearer of floor and ceil, floor on ties
    f, c = np.floor(x), np.ceil(x)
    return np.where(x - f <= c - x, f, c)


def _mod(a, b):
    return np.where(b == 0, 0.0, np.mod(a, np.where(b == 0, 1.0, b)))


BINARY = {  # op suffix -> numpy reference
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "mod": _mod, "hypot": np.hypot,
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
}
ELEMWISE = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul", "div": "elemwise_div"}
SCALAR = {  # scalar op -> reference of (x, s)
    "_plus_scalar": lambda x, s: x + s, "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x, "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s, "_rdiv_scalar": lambda x, s: s / x,
    "_power_scalar": lambda x, s: x ** s, "_rpower_scalar": lambda x, s: s ** x,
    "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum,
    "_mod_scalar": _mod, "_rmod_scalar": lambda x, s: _mod(s, x), "_hypot_scalar": np.hypot,
}
# unary op -> (reference, input range)
UNARY = {
    "exp": (np.exp, None), "expm1": (np.expm1, None), "square": (np.square, None), "abs": (np.abs, None),
    "sign": (np.sign, None), "negative": (np.negative, None), "sigmoid": (sp.expit, None),
    "tanh": (np.tanh, None), "relu": (lambda x: np.maximum(x, 0), None), "sin": (np.sin, None),
    "cos": (np.cos, None), "arctan": (np.arctan, None), "sinh": (np.sinh, None), "cosh": (np.cosh, None),
    "arcsinh": (np.arcsinh, None), "floor": (np.floor, (-3, 3)), "ceil": (np.ceil, (-3, 3)),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (-3, 3)), "rint": (_rint, (-3, 3)),
    "fix": (np.trunc, (-3, 3)), "trunc": (np.trunc, (-3, 3)), "degrees": (np.degrees, None),
    "radians": (np.radians, None), "erf": (sp.erf, None), "softsign": (lambda x: x / (1 + np.abs(x)), None),
    "identity": (lambda x: x, None), "zeros_like": (np.zeros_like, None), "ones_like": (np.ones_like, None),
    "log": (np.log, POS), "log2": (np.log2, POS), "log10": (np.log10, POS), "log1p": (np.log1p, POS),
    "sqrt": (np.sqrt, POS), "rsqrt": (lambda x: 1 / np.sqrt(x), POS), "cbrt": (np.cbrt, POS),
    "reciprocal": (np.reciprocal, POS), "gamma": (sp.gamma, POS), "gammaln": (sp.gammaln, POS),
    "arcsin": (np.arcsin, (-0.9, 0.9)), "arccos": (np.arccos, (-0.9, 0.9)),
    "arctanh": (np.arctanh, (-0.9, 0.9)), "tan": (np.tan, (-1.2, 1.2)), "arccosh": (np.arccosh, (1.2, 3)),
}
REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
          "nansum": np.nansum, "nanprod": np.nanprod}


def _mx_dot(a, b, ta=False, tb=False):
    """MXNet's dot: lhs as 2-D (rest, k), rhs as (k, rest)."""
    A = a.reshape(a.shape[0], -1).T if ta else a.reshape(-1, a.shape[-1])
    B = b.reshape(-1, b.shape[-1]).T if tb else b.reshape(b.shape[0], -1)
    la = a.shape[1:] if ta else a.shape[:-1]
    rb = b.shape[:-1] if tb else b.shape[1:]
    shape = (la if a.ndim > 1 else ()) + (rb if b.ndim > 1 else ())
    return (A @ B).reshape(shape or (1,))


def _bdot(a, b, ta=False, tb=False):
    return np.swapaxes(a, -1, -2) @ b if ta and not tb else (
        a @ np.swapaxes(b, -1, -2) if tb and not ta else (
            np.swapaxes(a, -1, -2) @ np.swapaxes(b, -1, -2) if ta else a @ b))


def _smooth_l1(x, s):
    return np.where(np.abs(x) < 1 / s ** 2, 0.5 * (s * x) ** 2, np.abs(x) - 0.5 / s ** 2)


def _group(id, entries, shapes, inputs=None, **kw):
    """One Case for several ops on the same inputs (one compile instead of many).

    entries: [(label, build(**vars) -> Symbol, ref(**arrays) -> array)]; outputs in order.
    """
    def build():
        vs = {k: V(k) for k in shapes}
        return S.Group([b(**vs) for _, b, _ in entries])
    return Case(id, build, lambda **a: [r(**a) for _, _, r in entries], shapes, inputs or {}, **kw)


def _binary_cases():
    pairs = [(ELEMWISE.get(n, f"_{n}"), f"broadcast_{n}", f) for n, f in BINARY.items() if n != "power"]
    same, bcast = {"a": (2, 3), "b": (2, 3)}, {"a": (2, 3, 4), "b": (1, 3, 1)}
    rng = {"a": (-3, 3), "b": POS}
    yield _group("elemwise_binary", [(e, lambda a, b, e=e: getattr(S, e)(a, b, name=e), lambda a, b, f=f: f(a, b))
                                     for e, _, f in pairs], same, rng)
    yield _group("broadcast_binary", [(o, lambda a, b, o=o: getattr(S, o)(a, b, name=o), lambda a, b, f=f: f(a, b))
                                      for _, o, f in pairs], bcast, rng)
    yield _group("power", [("_power", lambda a, b, c: S._power(a, c), lambda a, b, c: a ** c),
                           ("broadcast_power", lambda a, b, c: S.broadcast_power(a, b), lambda a, b, c: a ** b)],
                 dict(bcast, c=(2, 3, 4)), {"a": POS, "b": (-1, 1), "c": (-1, 1)})
    # MXNet 1.9 broadcasts numpy-style across different ndims
    yield Case("broadcast_add_ndim", lambda: S.broadcast_add(V("a"), V("b"), name="op"),
               lambda a, b: [a + b], {"a": (2, 3), "b": (3,)})
    # comparisons: integer-valued inputs so that ties occur; the gradient is zero
    cmp = [(n, lambda a, b, n=n: getattr(S, f"_{n}")(a, b, name=n), lambda a, b, f=f: f(a, b).astype(float))
           for n, f in COMPARE.items()]
    ints = {"a": ("int", 0, 3), "b": ("int", 0, 3)}
    yield _group("compare", cmp, same, ints, ref_grad=_zeros)
    yield _group("broadcast_compare", [(f"broadcast_{n}", lambda a, b, n=n: getattr(S, f"broadcast_{n}")(a, b),
                                        r) for n, _, r in cmp], {"a": (3, 4), "b": (4,)}, ints, ref_grad=_zeros)
    yield _group("compare_scalar", [(f"_{n}_scalar", lambda a, n=n: getattr(S, f"_{n}_scalar")(a, scalar=1),
                                     lambda a, f=f: f(a, 1).astype(float)) for n, f in COMPARE.items()],
                 {"a": (3, 4)}, {"a": ("int", 0, 3)}, ref_grad=_zeros)


def _scalar_cases():
    def s_of(name):
        return -1.5 if name == "_mod_scalar" else 1.5
    yield _group("scalar", [(n, lambda x, n=n: getattr(S, n)(x, scalar=s_of(n), name=n),
                             lambda x, n=n, f=f: f(x, s_of(n))) for n, f in SCALAR.items()],
                 {"x": (3, 4)}, {"x": POS})


def _unary_cases():
    groups = {}
    for n, (f, rng) in UNARY.items():
        groups.setdefault(rng, []).append((n, f))
    for rng, ops in groups.items():  # one graph per input range
        yield _group("unary_" + "_".join(n for n, _ in ops[:3]),
                     [(n, lambda x, n=n: getattr(S, n)(x, name=n), lambda x, f=f: f(x)) for n, f in ops],
                     {"x": (3, 4)}, {"x": rng or (-2, 2)})


def _reduce_cases():
    variants = [({}, None, False), ({"axis": 1}, (1,), False), ({"axis": (0, -1), "keepdims": True}, (0, 2), True),
                ({"axis": 1, "exclude": True}, (0, 2), False), ({"axis": ()}, None, False)]
    for k, (kw, ax, keep) in enumerate(variants):
        def ref(f, ax=ax, keep=keep):
            def r(x):
                y = f(x, axis=ax, keepdims=keep)
                return np.reshape(y, (1,)) if np.ndim(y) == 0 else y
            return r
        yield _group(f"reduce_{k}", [(n, lambda x, n=n, kw=kw: getattr(S, n)(x, name=n, **kw), ref(f))
                                     for n, f in REDUCE.items()], {"x": (2, 3, 4)}, {"x": (0.5, 1.5)})
    yield _group("norm", [(f"norm{o}", lambda x, o=o: S.norm(x, ord=o, axis=(0, 2), keepdims=True),
                           lambda x, o=o: np.sum(np.abs(x) ** o, axis=(0, 2), keepdims=True) ** (1 / o))
                          for o in (1, 2)]
                 + [("norm_all", lambda x: S.norm(x, ord=1), lambda x: np.sum(np.abs(x)).reshape(1))],
                 {"x": (2, 3, 4)})
    yield _group("argmax_argmin",
                 [(n, lambda x, n=n: getattr(S, n)(x, axis=-1, keepdims=True),
                   lambda x, f=f: f(x, axis=-1)[..., None].astype(float)) for n, f in [("argmax", np.argmax),
                                                                                         ("argmin", np.argmin)]]
                 + [(n + "_flat", lambda x, n=n: getattr(S, n)(x), lambda x, f=f: np.array([f(x)], float))
                    for n, f in [("argmax", np.argmax), ("argmin", np.argmin)]],
                 {"x": (2, 3, 4)}, ref_grad=_zeros)


def _dot_cases():
    dots = [((3, 4), (4, 2), False, False), ((4, 3), (4, 2), True, False),
            ((3, 4), (2, 4), False, True), ((2, 3, 4), (4, 2, 2), False, False),
            ((4, 2, 3), (2, 3, 4), True, True), ((3,), (3,), False, False),
            ((3,), (3, 2), False, False), ((2, 3), (3,), False, True)]
    bdots = [((2, 3, 4), (2, 4, 5), False, False), ((2, 4, 3), (2, 4, 5), True, False),
             ((2, 3, 4), (2, 5, 4), False, True), ((2, 2, 4, 3), (2, 2, 5, 4), True, True)]
    for op, ref, table in [("dot", _mx_dot, dots), ("batch_dot", _bdot, bdots)]:
        shapes = {f"{s}{i}": sh for i, row in enumerate(table) for s, sh in zip("ab", row[:2])}
        yield _group(op, [(f"{op}{i}", lambda i=i, ta=ta, tb=tb, op=op, **v: getattr(S, op)(
            v[f"a{i}"], v[f"b{i}"], transpose_a=ta, transpose_b=tb),
            lambda i=i, ta=ta, tb=tb, ref=ref, **a: ref(a[f"a{i}"], a[f"b{i}"], ta, tb))
            for i, (_, _, ta, tb) in enumerate(table)], shapes)


CASES = [
    *_binary_cases(),
    Case("add_n", lambda: S.add_n(V("a"), V("b"), V("c"), name="s"), lambda a, b, c: [a + b + c],
         {"a": (2, 3), "b": (2, 3), "c": (2, 3)}),
    Case("ElementWiseSum_one", lambda: S.ElementWiseSum(V("a"), name="s"), lambda a: [a], {"a": (2, 3)}),
    *_scalar_cases(),
    _group("broadcast_to_axis", [
        ("broadcast_to", lambda x: S.broadcast_to(x, shape=(2, 0, 4)), lambda x: np.broadcast_to(x, (2, 3, 4))),
        ("broadcast_axis", lambda x: S.broadcast_axis(x, axis=(0, -1), size=(2, 4)),
         lambda x: np.broadcast_to(x, (2, 3, 4))),
        ("broadcast_axes", lambda x: S.broadcast_axes(x, axis=2, size=3),
         lambda x: np.broadcast_to(x, (1, 3, 3)))], {"x": (1, 3, 1)}),
    Case("broadcast_like", lambda: S.broadcast_like(V("x"), V("y"), name="b"),
         lambda x, y: [np.broadcast_to(x, y.shape)], {"x": (1, 3), "y": (4, 3)}),
    Case("broadcast_like_axes", lambda: S.broadcast_like(V("x"), V("y"), lhs_axes=(0,), rhs_axes=(2,), name="b"),
         lambda x, y: [np.broadcast_to(x, (5, 3))], {"x": (1, 3), "y": (4, 3, 5)}),
    *_unary_cases(),
    Case("clip", lambda: S.clip(V("x"), a_min=-0.5, a_max=0.4, name="c"), lambda x: [np.clip(x, -0.5, 0.4)],
         {"x": (4, 5)}),
    Case("smooth_l1", lambda: S.smooth_l1(V("x"), scalar=2.0, name="s"), lambda x: [_smooth_l1(x, 2.0)],
         {"x": (4, 5)}),
    Case("cast_float16", lambda: S.Cast(V("x"), dtype="float16", name="c"), lambda x: [x], {"x": (3, 4)},
         rtol=1e-3, atol=1e-3),
    # MXNet's Cast hands the (integer) head gradient back as the input's dtype: ones here
    Case("cast_int32", lambda: S.cast(V("x"), dtype=np.int32, name="c"), lambda x: [np.trunc(x)], {"x": (3, 4)},
         inputs={"x": (-3, 3)}, ref_grad=lambda x: {"x": np.ones_like(x)}),
    Case("where", lambda: S.where(V("c"), V("x"), V("y"), name="w"),
         lambda c, x, y: [np.where(c != 0, x, y)], {"c": (3, 4), "x": (3, 4), "y": (3, 4)},
         inputs={"c": ("int", 0, 2)}, no_grad=("c",)),
    Case("where_1d_condition", lambda: S.where(V("c"), V("x"), V("y"), name="w"),
         lambda c, x, y: [np.where(c[:, None] != 0, x, y)], {"c": (3,), "x": (3, 4), "y": (3, 4)},
         inputs={"c": np.array([1.0, 0.0, 2.0])}, no_grad=("c",)),
    *_reduce_cases(),
    *_dot_cases(),
    Case("zeros", lambda: S.zeros(shape=(2, 3), name="z"), lambda: [np.zeros((2, 3))], {}, grad=False),
    Case("ones", lambda: S._ones(shape=(2, 3), name="o"), lambda: [np.ones((2, 3))], {}, grad=False),
    Case("full_plus", lambda: S.full((2, 3), 2.5, name="f") + V("x"),
         lambda x: [2.5 + x], {"x": (2, 3)}),
    Case("arange", lambda: S.arange(start=1, stop=4, repeat=2, name="a"),
         lambda: [np.repeat(np.arange(1.0, 4.0), 2)], {}, grad=False),
    Case("arange_stop_none_step", lambda: S._arange(start=5, step=1.5, name="a"),
         lambda: [np.arange(0, 5, 1.5)], {}, grad=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_every_alias_is_a_symbol_constructor():
    """(That every op has a sample is test_op_sweep's check, over every test_ops_*.py.)"""
    mine = {n for n, c in REGISTRY.items() if c.__module__ in ("jbind.ops.elemwise", "jbind.ops.broadcast", "jbind.ops.reduce")}
    for alias, target in ALIASES.items():
        if target in mine:
            assert callable(getattr(S, alias)), alias


def test_symbol_arithmetic_ops_exist_and_are_named_as_mxnet():
    """Python operators on Symbols use these ops and MXNet's auto names."""
    x, y = V("x"), V("y")
    want = {  # read from MXNet 1.9.1
        "_plus0": lambda: x + y, "_plusscalar0": lambda: 1 + x, "_minus0": lambda: x - y,
        "_minusscalar0": lambda: x - 1, "_rminusscalar0": lambda: 1 - x, "_mul0": lambda: x * y,
        "_mulscalar0": lambda: -x, "_div0": lambda: x / y, "_divscalar0": lambda: x / 2,
        "_rdivscalar0": lambda: 2 / x, "_mod0": lambda: x % y, "_modscalar0": lambda: x % 2,
        "_rmodscalar0": lambda: 2 % x, "_power0": lambda: x ** y, "_powerscalar0": lambda: x ** 2,
        "_rpower_scalar0": lambda: 2 ** x,
    }
    for name, f in want.items():
        with mx.name.NameManager():
            s = f()
        assert s.name == name
        exe = s.simple_bind(mx.cpu(), grad_req="null", **{k: (2,) for k in s.list_arguments()})
        exe.forward(**{k: np.array([1.0, 2.0]) for k in s.list_arguments()})


def _run(sym, heads=None, **arrays):
    """Forward and backward (head gradients of ones by default) -> (outputs, grads)."""
    exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in arrays.items()})
    outs = exe.forward(is_train=True, **arrays)
    exe.backward([mx.nd.array(np.ones(o.shape)) for o in outs] if heads is None else heads)
    return [o.asnumpy() for o in outs], {k: exe.grad_dict[k].asnumpy() for k in arrays}


def test_tie_gradients_follow_mxnet():
    """max/min send the whole gradient to every tied element; _maximum prefers lhs on ties."""
    x = np.array([[1, 3, 3], [2, 2, 2.0]])
    _, g = _run(S.max(V("x"), axis=1), x=x)
    np.testing.assert_array_equal(g["x"], [[0, 1, 1], [1, 1, 1]])
    _, g = _run(S.min(V("x")), x=np.array([[1, 3, 3], [1, 2, 2.0]]))
    np.testing.assert_array_equal(g["x"], [[1, 0, 0], [1, 0, 0]])
    # MXNet's mask is `data == result`: an infinite maximum gets its gradient, a NaN row none
    out, g = _run(S.max(V("x"), axis=1), x=np.array([[1, np.inf, np.inf], [1, np.nan, 2.0]]))
    np.testing.assert_array_equal(out[0], [np.inf, np.nan])
    np.testing.assert_array_equal(g["x"], [[0, 1, 1], [0, 0, 0]])
    a, b = np.array([1, 2, 3.0]), np.array([1, 1, 4.0])
    _, g = _run(S._maximum(V("a"), V("b")), a=a, b=b)
    np.testing.assert_array_equal([g["a"], g["b"]], [[1, 1, 0], [0, 0, 1]])
    _, g = _run(S.broadcast_minimum(V("a"), V("b")), a=a, b=b)
    np.testing.assert_array_equal([g["a"], g["b"]], [[1, 0, 1], [0, 1, 0]])
    _, g = _run(S._maximum_scalar(V("x"), scalar=2), x=np.array([1, 2, 3.0]))
    np.testing.assert_array_equal(g["x"], [0, 1, 1])
    out, g = _run(S.clip(V("x"), a_min=-0.5, a_max=1.5), x=np.array([-1, -0.5, 0, 1.5, 2.0]))
    np.testing.assert_array_equal(g["x"], [0, 1, 1, 1, 0])


def test_rounding_and_mod_match_mxnet():
    a = np.array([-3.5, -2.5, -0.5, 0.5, 1.5, 2.5, -3, 3.0, 0.0])
    b = np.array([2, -2, 2, -2, 0.7, -0.7, 2.0, -2.0, 3])
    (r,), _ = _run(S.round(V("x")), x=a)
    np.testing.assert_array_equal(r, [-4, -3, -1, 1, 2, 3, -3, 3, 0])
    (r,), _ = _run(S.rint(V("x")), x=a)
    np.testing.assert_array_equal(r, [-4, -3, -1, 0, 1, 2, -3, 3, 0])
    (r,), _ = _run(S.fix(V("x")), x=a)
    np.testing.assert_array_equal(r, [-3, -2, 0, 0, 1, 2, -3, 3, 0])
    (r,), g = _run(S._mod(V("a"), V("b")), a=a, b=b)
    np.testing.assert_allclose(r, [0.5, -0.5, 1.5, -1.5, 0.1, -0.3, 1, -1, 0], atol=1e-6)
    np.testing.assert_array_equal(g["b"], [2, -1, 1, 1, -2, 4, 2, 2, 0])
    (r,), _ = _run(S._mod(V("a"), V("b")), a=np.array([3.0, -1]), b=np.array([0.0, 0]))
    np.testing.assert_array_equal(r, [0, 0])  # x mod 0 is 0 in MXNet


def test_nan_reductions():
    x = np.array([[1, np.nan, 3], [2, 2, 2.0]])
    (r,), g = _run(S.nansum(V("x"), axis=1), x=x)
    np.testing.assert_array_equal(r, [4, 6])
    np.testing.assert_array_equal(g["x"], [[1, 0, 1], [1, 1, 1]])
    (r,), g = _run(S.nanprod(V("x"), axis=1), x=x)
    np.testing.assert_array_equal(r, [3, 8])
    np.testing.assert_array_equal(g["x"], [[3, 0, 1], [4, 4, 4]])


def _forward(sym, type_dict=None, **arrays):
    exe = sym.simple_bind(mx.cpu(), grad_req="null", type_dict=type_dict, **{k: v.shape for k, v in arrays.items()})
    return exe.forward(**arrays)[0].asnumpy()


def test_integer_arithmetic_keeps_dtype():
    """Scalars are cast to the input dtype; integer division truncates (MXNet 1.9.1)."""
    i32 = {"x": np.int32, "y": np.int32}
    r = _forward(S._plus_scalar(V("x"), scalar=1.7), type_dict=i32, x=np.array([1, 2]))
    assert r.dtype == np.int32 and r.tolist() == [2, 3]
    assert _forward(S._div_scalar(V("x"), scalar=2), type_dict=i32, x=np.array([5, 2])).tolist() == [2, 1]
    r = _forward(S.elemwise_div(V("x"), V("y")), type_dict=i32, x=np.array([-3, 3]), y=np.array([2, -2]))
    assert r.tolist() == [-1, -1]
    r = _forward(S._mod(V("x"), V("y")), type_dict=i32, x=np.array([-3, 3]), y=np.array([2, -2]))
    assert r.tolist() == [1, -1]


@pytest.mark.parametrize("sym, given, arg, out", [  # read from MXNet 1.9.1
    (lambda: S.elemwise_add(V("x"), V("y")), {"x": (2, 0), "y": (0, 3)}, [(2, 3), (2, 3)], [(2, 3)]),
    (lambda: S.elemwise_add(V("x"), V("y")) + V("z"), {"z": (2, 3)}, [(2, 3)] * 3, [(2, 3)]),
    (lambda: S.add_n(V("x"), V("y"), V("z")), {"z": (2, 3)}, [(2, 3)] * 3, [(2, 3)]),
    (lambda: S.broadcast_add(V("x"), V("y")), {"x": (2, 3), "y": (3,)}, [(2, 3), (3,)], [(2, 3)]),
    (lambda: S.broadcast_add(V("x"), V("y")), {"x": (2, 3)}, [(2, 3), ()], [()]),
    (lambda: S.sum(V("x")), {"x": (2, 3)}, [(2, 3)], [(1,)]),
    (lambda: S.sum(V("x"), axis=(), exclude=True), {"x": (2, 3)}, [(2, 3)], [(1,)]),
    (lambda: S.sum(V("x"), keepdims=True), {"x": (2, 3)}, [(2, 3)], [(1, 1)]),
    (lambda: S.sum(V("x"), axis=(0, 1), exclude=True), {"x": (2, 3)}, [(2, 3)], [(2, 3)]),
    (lambda: S.sum(V("x"), axis=(0, -1), exclude=True), {"x": (2, 3, 4)}, [(2, 3, 4)], [(2, 4)]),
    (lambda: S.sum_axis(V("x"), axis=1), {"x": (0, 3)}, [(0, 3)], [(0,)]),
    (lambda: S.norm(V("x"), axis=(1, 2)), {"x": (2, 3, 4)}, [(2, 3, 4)], [(2,)]),
    (lambda: S.argmax(V("x"), keepdims=True), {"x": (2, 3)}, [(2, 3)], [(1, 1)]),
    (lambda: S.dot(V("x"), V("y")), {"x": (2, 3, 4), "y": (4, 5, 6)}, [(2, 3, 4), (4, 5, 6)], [(2, 3, 5, 6)]),
    (lambda: S.dot(V("x"), V("y"), transpose_a=True), {"x": (4, 2, 3), "y": (4, 5)},
     [(4, 2, 3), (4, 5)], [(2, 3, 5)]),
    (lambda: S.dot(V("x"), V("y")), {"x": (3,), "y": (3,)}, [(3,), (3,)], [(1,)]),
    (lambda: S.batch_dot(V("x"), V("y"), transpose_a=True), {"x": (2, 3, 4), "y": (2, 3, 5)},
     [(2, 3, 4), (2, 3, 5)], [(2, 4, 5)]),
    (lambda: S.broadcast_to(V("x"), shape=(0, 4, 3)), {"x": (2, 1, 3)}, [(2, 1, 3)], [(2, 4, 3)]),
    (lambda: S.broadcast_axis(V("x"), axis=0, size=4), {"x": (1, 3)}, [(1, 3)], [(4, 3)]),
    (lambda: S.broadcast_like(V("x"), V("y")), {"x": (1, 3), "y": (4, 3)}, [(1, 3), (4, 3)], [(4, 3)]),
    (lambda: S.where(V("c"), V("x"), V("y")), {"c": (2,), "x": (2, 3)}, [(2,), (2, 3), (2, 3)], [(2, 3)]),
    (lambda: S.zeros(shape=(0, 3)) + V("x"), {"x": (2, 3)}, [(2, 3)], [(2, 3)]),
    (lambda: S.zeros(shape=()) + V("x"), {"x": (2, 3)}, [(2, 3)], [(2, 3)]),
    (lambda: S.arange(start=1, stop=7, step=2, repeat=2), {}, [], [(6,)]),
    (lambda: S.arange(start=0, stop=1, step=0.3), {}, [], [(4,)]),
])
def test_infer_shape(sym, given, arg, out):
    a, o, _ = sym().infer_shape_partial(**given)
    assert (a, o) == (arg, out)


def test_infer_type():
    x, y = V("x"), V("y")
    assert S.Cast(x, dtype="float16").infer_type(x="float32")[1] == [np.float16]
    assert S.argmax(x, axis=1).infer_type(x="float16")[1] == [np.float16]  # the input's dtype, as MXNet 1.9.1
    assert S._equal(x, y).infer_type(x="int32") == ([np.int32, np.int32], [np.int32], [])
    assert S.zeros(shape=(2,), dtype="int32").infer_type() == ([], [np.int32], [])
    assert S.norm(x, out_dtype="float16").infer_type(x="float32")[1] == [np.float16]
    assert S.where(V("c"), x, y).infer_type(c="int32", x="float32")[0] == [np.int32, np.float32, np.float32]
    assert S.broadcast_like(x, y).infer_type(x="float32", y="int32")[0] == [np.float32, np.int32]


def test_cast_int32_and_float16_values():
    r = _forward(S.Cast(V("x"), dtype="int32"), x=np.array([-1.7, 2.9]))
    assert r.dtype == np.int32 and r.tolist() == [-1, 2]


@pytest.mark.parametrize("build, shapes, words", [
    (lambda: S.elemwise_add(V("a"), V("b"), name="add"), {"a": (2, 3), "b": (3, 2)},
     ["elemwise_add", "add", "(2, 3)", "(3, 2)"]),
    (lambda: S.exp(V("a"), name="e"), {"a": (2, 3), }, None),
    (lambda: S.broadcast_mul(V("a"), V("b"), name="bm"), {"a": (2, 3), "b": (4, 3)},
     ["broadcast_mul", "could not be broadcast", "(2, 3)", "(4, 3)"]),
    (lambda: S.dot(V("a"), V("b"), name="d"), {"a": (2, 3), "b": (4, 5)}, ["dot", "(2, 3)", "(4, 5)"]),
    (lambda: S.batch_dot(V("a"), V("b"), name="bd"), {"a": (2, 3, 4), "b": (3, 4, 5)},
     ["batch_dot", "(2,)", "(3,)"]),
    (lambda: S.batch_dot(V("a"), V("b"), name="bd"), {"a": (3, 4), "b": (4, 5)}, ["N >= 3"]),
    (lambda: S.sum(V("a"), axis=2, name="s"), {"a": (2, 3)}, ["sum", "axis 2", "out of range"]),
    (lambda: S.sum(V("a"), axis=(1, -1), name="s"), {"a": (2, 3)}, ["duplicates"]),
    (lambda: S.broadcast_to(V("a"), shape=(2, 4, 4), name="bt"), {"a": (2, 2, 3)}, ["broadcast_to", "(2, 2, 3)"]),
    (lambda: S.broadcast_to(V("a"), shape=(5, 2, 4, 3), name="bt"), {"a": (2, 1, 3)}, ["same ndim"]),
    (lambda: S.broadcast_axis(V("a"), axis=1, size=4, name="ba"), {"a": (1, 3, 1)}, ["must have size 1"]),
    (lambda: S.broadcast_like(V("a"), V("b"), name="bl"), {"a": (1, 3), "b": (4, 2, 3)}, ["same ndim"]),
    (lambda: S.where(V("c"), V("a"), V("b"), name="w"), {"c": (3,), "a": (2, 3)}, ["condition"]),
    (lambda: S.arange(start=3, stop=3), {}, ["invalid range"]),
    (lambda: S.arange(start=3, stop=5, step=0), {}, ["step=0"]),
])
def test_shape_errors(build, shapes, words):
    if words is None:  # unary ops: input and output must agree
        sym = S.exp(V("a"), name="e")
        s = S.elemwise_add(sym, V("b"), name="add")
        with pytest.raises(mx.base.MXNetError, match="must have the same shape"):
            s.infer_shape(a=(2, 3), b=(3, 2))
        return
    raises_naming(lambda: build().infer_shape(**shapes), *words)


def test_param_errors():
    x = V("x")
    with pytest.raises(mx.base.MXNetError, match="ord must be 1 or 2"):
        S.norm(x, ord=3)
    with pytest.raises(mx.base.MXNetError, match="dtype must be one of"):
        S.Cast(x, dtype="complex64")
    with pytest.raises(mx.base.MXNetError, match="unknown parameter"):
        S._plus_scalar(x, scalr=1)
    with pytest.raises(mx.base.MXNetError, match="required parameter"):
        S.clip(x, a_min=0)
    with pytest.raises(mx.base.MXNetError, match="same length"):
        S.broadcast_axis(x, axis=(0, 1), size=(2,))


def test_params_parse_from_mxnet_json_strings():
    """Parameters arrive as strings in MXNet's JSON; the axis accepts an int, a tuple, () or None."""
    from jbind.ops import get_op
    assert get_op("sum").from_attrs({"axis": "1", "keepdims": "True"}).axis == (1,)
    assert get_op("sum").from_attrs({"axis": "(0, 2)"}).axis == (0, 2)
    assert get_op("sum").from_attrs({"axis": "()"}).axis == ()
    assert get_op("sum").from_attrs({"axis": "None"}).axis is None
    assert get_op("_plus_scalar").from_attrs({"scalar": "2", "is_int": "True"}).scalar == 2.0
    assert get_op("_arange").from_attrs({"start": "3", "stop": "None", "step": "1.0", "repeat": "1",
                                         "infer_range": "False", "dtype": "float32"}).stop is None
    assert get_op("Cast").from_attrs({"dtype": "float16"}).dtype == "float16"
    assert get_op("identity").name == "_copy" and get_op("sum_axis").name == "sum"


def test_creation_shape_inferred_backward():
    """zeros(shape=(0, 3)) takes its unknown dims from its consumer, as MXNet's RNN begin_state needs."""
    s = S.zeros(shape=(0, 3)) + V("x")
    assert s.infer_shape(x=(2, 3))[1] == [(2, 3)]
    exe = s.simple_bind(mx.cpu(), grad_req="null", x=(2, 3))
    np.testing.assert_array_equal(exe.forward(x=np.ones((2, 3)))[0].asnumpy(), np.ones((2, 3)))
    s = S.full((0,), 2.0) * V("x")
    exe = s.simple_bind(mx.cpu(), grad_req="null", x=(4,))
    np.testing.assert_array_equal(exe.forward(x=np.ones(4))[0].asnumpy(), np.full(4, 2.0))


def test_scalar_ops_promote_integer_arrays_for_a_float_scalar_as_mxnet():
    """`is_int=False` (a float scalar) promotes an integer array to float64 first; the default
    keeps the array's dtype and casts the scalar. Read from MXNet 1.9.1."""
    x = mx.nd.array([1, 2], dtype="int32")
    want = {"_plus_scalar": [1.5, 2.5], "_rdiv_scalar": [0.5, 0.25], "_mul_scalar": [0.5, 1.0],
            "_equal_scalar": [0.0, 0.0], "_greater_scalar": [1.0, 1.0], "_mod_scalar": [0.0, 0.0]}
    for op, values in want.items():
        y = getattr(mx.nd, op)(x, scalar=0.5, is_int=False)
        assert y.dtype == np.float64, op
        np.testing.assert_allclose(y.asnumpy(), values, err_msg=op)
    np.testing.assert_array_equal((x + 0.5).asnumpy(), [1, 2])  # is_int=True: the scalar becomes 0
    assert mx.nd._plus_scalar(mx.nd.array([1, 2], dtype="float16"), scalar=0.5, is_int=False).dtype == np.float16
    assert S._plus_scalar(V("x"), scalar=0.5, is_int=False).infer_type(x="int32")[1] == [np.float64]


def test_relu_carries_nan_forward_and_backward():
    """MXNet's relu and Activation(relu) give NaN for a NaN input, and so does their gradient
    there (its slope is NaN at NaN, 1 above 0, 0 elsewhere; times the head gradient)."""
    x = mx.nd.array([-1.0, 0.0, 2.0, np.nan, np.inf])
    head = mx.nd.array([1.0, np.inf, 3.0, 1.0, 1.0])
    for f in (mx.nd.relu, lambda a: mx.nd.Activation(a, act_type="relu")):
        x.attach_grad()
        with mx.autograd.record():
            y = f(x)
        y.backward(head)
        np.testing.assert_array_equal(y.asnumpy(), [0, 0, 2, np.nan, np.inf])
        np.testing.assert_array_equal(x.grad.asnumpy(), [0, np.nan, 3, np.nan, 1])
    assert mx.nd.relu(mx.nd.array([-2, 5], dtype="int32")).asnumpy().tolist() == [0, 5]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_max_min_reductions_return_nan_where_a_nan_is_reduced(dtype):
    """MXNet's max / min over axes holding a NaN give NaN (numpy's rule). XLA:CPU's vectorized
    float32/64 reductions drop NaNs at sizes like this one; the op must not."""
    rs = np.random.RandomState(5)
    x = (rs.rand(7, 7, 6, 10, 2) - 0.5).astype(dtype)
    x.ravel()[rs.choice(x.size, 300, replace=False)] = np.nan
    x.ravel()[rs.choice(x.size, 40, replace=False)] = -np.inf
    for axis in [(0, 4), None]:
        for mxf, npf in [(mx.nd.max, np.max), (mx.nd.min, np.min)]:
            got = mxf(mx.nd.array(x, dtype=dtype), axis=axis).asnumpy()
            np.testing.assert_array_equal(got.ravel(), np.asarray(npf(x, axis=axis)).ravel())


def test_broadcast_like_axes_follow_mxnet_rules():
    """broadcast_like with lhs_axes / rhs_axes: each named lhs axis must have size 1 and takes
    the named rhs axis' size; empty axis tuples are an error; with only one of the two given
    the whole shape of rhs is taken (MXNet 1.9.1's rules)."""
    lhs, rhs = mx.nd.ones((1, 2, 1, 3)), mx.nd.ones((5, 6, 7, 8))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0, 2), rhs_axes=(1, 3)).shape == (6, 2, 8, 3)
    assert mx.nd.broadcast_like(mx.nd.ones((2, 1)), mx.nd.ones((1, 7, 9, 1, 1)), lhs_axes=(1,),
                                rhs_axes=(-3,)).shape == (2, 9)
    with pytest.raises(mx.base.ShapeError, match="empty"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())
    with pytest.raises(mx.base.ShapeError, match="size 2, not 1"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(1,), rhs_axes=(0,))
    assert mx.nd.broadcast_like(mx.nd.ones((1, 3)), mx.nd.ones((4, 3)), lhs_axes=(0,)).shape == (4, 3)
