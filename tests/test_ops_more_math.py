"""hard_sigmoid, logical ops, rcbrt, erfinv, softmin, softmax_cross_entropy, SVMOutput,
GroupNorm and linalg_gemm/gemm2 (jbind/ops/elemwise.py, loss.py, norm.py, linalg.py).

Forward against numpy float64 references, gradients against finite differences or, for
the losses, against MXNet's gradient formulas (helpers.check_op); values, errors and
shape rules read from MXNet 1.9.1. Golden files: tests/golden/ops_math/.
"""
import numpy as np
import pytest
import scipy.special as sp

import jbind as mx
from helpers import Case, check_op, numeric_grad, raises_naming

V = mx.sym.Variable
S = mx.sym
POS = (0.5, 2.0)
INTS = ("int", -1, 2)


def _zeros(**kw):
    return {k: np.zeros_like(v) for k, v in kw.items()}


def _group(id, entries, shapes, inputs=None, **kw):
    """One Case for several ops on the same inputs: entries [(build(**vars), ref(**arrays))]."""
    def build():
        vs = {k: V(k) for k in shapes}
        return S.Group([b(**vs) for b, _ in entries])
    return Case(id, build, lambda **a: [r(**a) for _, r in entries], shapes, inputs or {}, **kw)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _onehot(label, k):
    return np.eye(k)[label.astype(int)]


def _svm_grad(x, label, margin=1.0, reg=1.0, linear=False):
    """MXNet's SVMOutput backward (svm_output.cc), head gradient ignored."""
    t = _onehot(label, x.shape[-1]).astype(bool)
    if linear:
        g = np.where(t, -1.0 * (margin > x), 1.0 * (margin > -x))
    else:
        g = np.where(t, np.where(margin > x, -2 * (margin - x), 0), np.where(margin > -x, 2 * (margin + x), 0))
    return g * reg


def _groupnorm(x, gamma, beta, groups, eps):
    n = x.shape[0]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    std = np.sqrt(((xg - mean) ** 2).mean(axis=2, keepdims=True) + eps)
    y = (xg - mean) / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return y.reshape(x.shape), mean.reshape(n, groups), std.reshape(n, groups)


def _gemm(a, b, ta=False, tb=False, alpha=1.0, axis=-2):
    a, b = np.swapaxes(a, axis, -2), np.swapaxes(b, axis, -2)
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    return np.swapaxes(alpha * (a @ b), axis, -2)


def _gn_mean_std_grad(x, gn_gamma, gn_beta):
    """Head gradient ones on the output, none through mean and std (MXNet ignores theirs)."""
    inputs = {"x": x, "gn_gamma": gn_gamma, "gn_beta": gn_beta}

    def f(a):
        return float(np.sum(_groupnorm(a["x"], a["gn_gamma"], a["gn_beta"], 3, 1e-3)[0]))
    return {n: numeric_grad(f, {k: v.copy() for k, v in inputs.items()}, n) for n in inputs}


GEMM = [  # (A shape, B shape, transpose_a, transpose_b, alpha, axis)
    ((2, 3), (3, 4), False, False, 1.0, -2),
    ((3, 2), (4, 3), True, True, -0.5, -2),
    ((2, 3, 4), (2, 5, 4), False, True, 2.0, -2),
    ((3, 2, 4), (4, 2, 5), False, False, 1.0, 0),
    ((2, 4, 2, 3), (2, 4, 2, 5), True, False, 1.5, 1),
]


def _gemm_cases():
    shapes = {f"{s}{i}": sh for i, row in enumerate(GEMM) for s, sh in zip("ab", row[:2])}
    yield _group("linalg_gemm2", [
        (lambda i=i, ta=ta, tb=tb, al=al, ax=ax, **v: S.linalg_gemm2(
            v[f"a{i}"], v[f"b{i}"], transpose_a=ta, transpose_b=tb, alpha=al, axis=ax),
         lambda i=i, ta=ta, tb=tb, al=al, ax=ax, **v: _gemm(v[f"a{i}"], v[f"b{i}"], ta, tb, al, ax))
        for i, (_, _, ta, tb, al, ax) in enumerate(GEMM)], dict(shapes))
    for i, (_, _, ta, tb, al, ax) in enumerate(GEMM):
        shapes[f"c{i}"] = _gemm(np.zeros(shapes[f"a{i}"]), np.zeros(shapes[f"b{i}"]), ta, tb, 1.0, ax).shape
    yield _group("linalg_gemm", [
        (lambda i=i, ta=ta, tb=tb, al=al, ax=ax, **v: S.linalg_gemm(
            v[f"a{i}"], v[f"b{i}"], v[f"c{i}"], transpose_a=ta, transpose_b=tb, alpha=al, beta=0.5 + i,
            axis=ax),
         lambda i=i, ta=ta, tb=tb, al=al, ax=ax, **v: _gemm(v[f"a{i}"], v[f"b{i}"], ta, tb, al, ax)
         + (0.5 + i) * v[f"c{i}"])
        for i, (_, _, ta, tb, al, ax) in enumerate(GEMM)], shapes)
    yield Case("_linalg_gemm_beta0", lambda: S._linalg_gemm(V("a"), V("b"), V("c"), beta=0.0, name="g"),
               lambda a, b, c: [a @ b], {"a": (2, 3), "b": (3, 2), "c": (2, 2)})
    yield Case("_linalg_gemm2", lambda: S._linalg_gemm2(V("a"), V("b"), name="g"), lambda a, b: [a @ b],
               {"a": (2, 3), "b": (3, 2)})


CASES = [
    _group("hard_sigmoid", [
        (lambda x: S.hard_sigmoid(x), lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
        (lambda x: S.hard_sigmoid(x, alpha=0.3, beta=0.1), lambda x: np.clip(0.3 * x + 0.1, 0, 1))],
        {"x": (4, 5)}, {"x": (-4, 4)}),
    _group("logical", [
        (lambda a, b: S.logical_not(a), lambda a, b: (a == 0).astype(float)),
        (lambda a, b: S.broadcast_logical_and(a, b), lambda a, b: np.logical_and(a, b).astype(float)),
        (lambda a, b: S.broadcast_logical_or(a, b), lambda a, b: np.logical_or(a, b).astype(float)),
        (lambda a, b: S.broadcast_logical_xor(a, b), lambda a, b: np.logical_xor(a, b).astype(float))],
        {"a": (2, 3, 4), "b": (3, 1)}, {"a": INTS, "b": INTS}, ref_grad=_zeros),
    _group("rcbrt_erfinv", [
        (lambda x, e: S.rcbrt(x), lambda x, e: 1 / np.cbrt(x)),
        (lambda x, e: S.rcbrt(-x), lambda x, e: 1 / np.cbrt(-x)),
        (lambda x, e: S.erfinv(e), lambda x, e: sp.erfinv(e)),
        (lambda x, e: S._npx_erfinv(e), lambda x, e: sp.erfinv(e))],
        {"x": (3, 4), "e": (3, 4)}, {"x": POS, "e": (-0.9, 0.9)}),
    _group("softmin", [
        (lambda x: S.softmin(x), lambda x: _softmax(-x)),
        (lambda x: S.softmin(x, axis=0, temperature=2.5), lambda x: _softmax(-x / 2.5, axis=0)),
        (lambda x: S.softmin(x, axis=1, temperature=1.0), lambda x: _softmax(-x, axis=1))],
        {"x": (3, 4, 2)}, {"x": (-3, 3)}),
    Case("softmin_dtype_float16", lambda: S.softmin(V("x"), dtype="float16", name="sm"),
         lambda x: [_softmax(-x)], {"x": (3, 5)}, rtol=2e-3, atol=1e-3, grad=False),
    Case("softmax_cross_entropy", lambda: S.softmax_cross_entropy(V("data"), V("label"), name="ce"),
         lambda data, label: [-np.sum(np.log(np.sum(_softmax(data) * _onehot(label, 5), axis=1))).reshape(1)],
         {"data": (4, 5), "label": (4,)}, {"data": (-3, 3), "label": ("int", 0, 5)}, no_grad=("label",),
         ref_grad=lambda data, label: {"data": _softmax(data) - _onehot(label, 5)}),
    Case("svm_l2", lambda: S.SVMOutput(V("data"), V("label"), name="svm"), lambda data, label: [data],
         {"data": (4, 3)}, {"data": (-2, 2), "label": ("int", 0, 3)}, no_grad=("label",),
         ref_grad=lambda data, label: {"data": _svm_grad(data, label)}),
    Case("svm_l1_3d", lambda: S.SVMOutput(V("data"), V("label"), margin=0.5, regularization_coefficient=2.0,
                                          use_linear=True, name="svm"), lambda data, label: [data],
         {"data": (2, 3, 4)}, {"data": (-1.5, 1.5), "label": ("int", 0, 4)}, no_grad=("label",),
         ref_grad=lambda data, label: {"data": _svm_grad(data, label, 0.5, 2.0, linear=True)}),
    Case("groupnorm", lambda: S.GroupNorm(V("x"), num_groups=2, name="gn"),
         lambda x, gn_gamma, gn_beta: [_groupnorm(x, gn_gamma, gn_beta, 2, 1e-5)[0]], {"x": (2, 4, 3)},
         {"gn_gamma": POS}),
    Case("groupnorm_mean_std", lambda: S.GroupNorm(V("x"), num_groups=3, eps=1e-3, output_mean_var=True,
                                                   name="gn"),
         lambda x, gn_gamma, gn_beta: list(_groupnorm(x, gn_gamma, gn_beta, 3, 1e-3)), {"x": (2, 6, 2, 2)},
         {"gn_gamma": POS}, ref_grad=_gn_mean_std_grad),
    *_gemm_cases(),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def _run(sym, heads=None, **arrays):
    """Training forward and backward (head gradients of ones unless given) -> (outputs, grads)."""
    exe = sym.simple_bind(mx.cpu(), grad_req={k: "null" if k == "label" else "write" for k in arrays},
                          **{k: v.shape for k, v in arrays.items()})
    outs = exe.forward(is_train=True, **arrays)
    if heads is None:
        heads = [mx.nd.array(np.ones(o.shape)) for o in outs]
    exe.backward(heads)
    return [o.asnumpy() for o in outs], {k: exe.grad_dict[k].asnumpy() for k in arrays if k != "label"}


def test_values_read_from_mxnet():
    """Forward values and gradients printed by MXNet 1.9.1 for the same inputs."""
    x = np.array([-3, -2.5, -2.49, 0, 2.49, 2.5, 3])
    (out,), g = _run(S.hard_sigmoid(V("x")), x=x)
    np.testing.assert_allclose(out, [0, 0, 0.002, 0.5, 0.998, 1, 1], atol=1e-6)
    np.testing.assert_allclose(g["x"], [0, 0, 0.2, 0.2, 0.2, 0, 0], atol=1e-7)  # 0 at the kinks
    (out,), g = _run(S.softmax_cross_entropy(V("data"), V("label")), [mx.nd.array([2.0])],
                     data=np.array([[1, 2, 3], [11, 7, 5.0]]), label=np.array([2, 0.0]))
    np.testing.assert_allclose(out, [0.4281871], rtol=1e-6)
    np.testing.assert_allclose(g["data"], [[0.18006115, 0.48945695, -0.6695181],
                                           [-0.04074156, 0.03588507, 0.00485652]], rtol=1e-5)
    d, lab = np.array([[0.5, -2, 1.5], [0.2, 0.9, -0.95]]), np.array([2.0, 0])
    for linear, want in [(False, [[1.5, 0, 0], [-0.8, 1.9, 0.05]]), (True, [[0.5, 0, 0], [-0.5, 0.5, 0.5]])]:
        sym = S.SVMOutput(V("data"), V("label"), regularization_coefficient=0.5, use_linear=linear)
        (out,), g = _run(sym, [mx.nd.array(np.full((2, 3), 5.0))], data=d, label=lab)
        np.testing.assert_array_equal(out, d.astype(np.float32))
        np.testing.assert_allclose(g["data"], want, rtol=1e-5, atol=1e-7)  # the head gradient is ignored
    (out,), _ = _run(S.softmin(V("x"), axis=0), x=np.array([[1, 2, 3], [3, 2, 1.0]]))
    np.testing.assert_allclose(out, [[0.880797, 0.5, 0.11920292], [0.11920292, 0.5, 0.880797]], rtol=1e-6)


def test_logical_ops_follow_c_truth():
    """NaN is true, as in C; results are 1 or 0 in the input dtype; integers stay integers."""
    a, b = mx.nd.array([np.nan, 0, 2]), mx.nd.array([1, np.nan, 0])
    np.testing.assert_array_equal(mx.nd.broadcast_logical_and(a, b).asnumpy(), [1, 0, 0])
    np.testing.assert_array_equal(mx.nd.broadcast_logical_xor(a, b).asnumpy(), [0, 1, 1])
    np.testing.assert_array_equal(mx.nd.logical_not(a).asnumpy(), [0, 1, 0])
    i = mx.nd.array([0, 2, -1], dtype="int32")
    r = mx.nd.logical_not(i)
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [1, 0, 0]
    assert mx.nd.broadcast_logical_or(i, i).asnumpy().tolist() == [0, 1, 1]
    r = mx.nd.rcbrt(mx.nd.array([1, 2, 8], dtype="int32"))
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [1, 0, 0]  # MXNet truncates


def test_imperative():
    """mx.nd calls of every op (and the aliases) agree with the numpy references."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    nd = mx.nd.array
    np.testing.assert_allclose(mx.nd.hard_sigmoid(nd(x), alpha=0.5).asnumpy(), np.clip(0.5 * x + 0.5, 0, 1),
                               rtol=1e-6)
    np.testing.assert_allclose(mx.nd.erfinv(nd(x * 0.9)).asnumpy(), sp.erfinv(x * 0.9), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mx.nd.rcbrt(nd(x + 2)).asnumpy(), 1 / np.cbrt(x + 2), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.softmin(nd(x), axis=1, temperature=0.5).asnumpy(),
                               _softmax(-x / 0.5, axis=1), rtol=1e-5)
    out = mx.nd.softmin(nd(x), dtype="float16")
    assert out.dtype == np.float16
    gn = mx.nd.GroupNorm(nd(x), nd([1.0, 2.0]), nd([0.0, 1.0]), num_groups=2, output_mean_var=True)
    want = _groupnorm(x.astype(np.float64), np.array([1.0, 2]), np.array([0.0, 1]), 2, 1e-5)
    for o, w in zip(gn, want):
        np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-4, atol=1e-5)
    a, b, c = rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (2, 5, 4)), rng.uniform(-1, 1, (2, 3, 5))
    for f in (mx.nd.linalg_gemm, mx.nd._linalg_gemm):
        r = f(nd(a), nd(b), nd(c), transpose_b=True, alpha=2.0, beta=-1.0).asnumpy()
        np.testing.assert_allclose(r, 2 * a @ np.swapaxes(b, 1, 2) - c, rtol=1e-5, atol=1e-6)
    for f in (mx.nd.linalg_gemm2, mx.nd._linalg_gemm2):
        r = f(nd(a), nd(c), transpose_a=True).asnumpy()
        np.testing.assert_allclose(r, np.swapaxes(a, 1, 2) @ c, rtol=1e-5, atol=1e-6)
    lab = nd([1.0, 0.0])
    ce = mx.nd.softmax_cross_entropy(nd(x[:, :, 0]), lab).asnumpy()
    np.testing.assert_allclose(ce, [-np.sum(np.log(_softmax(x[:, :, 0])[[0, 1], [1, 0]]))], rtol=1e-5)
    np.testing.assert_array_equal(mx.nd.SVMOutput(nd(x), nd(np.zeros((2, 4)))).asnumpy(), x)


def test_imperative_errors_name_the_op_and_shapes():
    """mx.nd runs the op's shape and dtype rules first, as binding does."""
    nd = mx.nd.array
    with pytest.raises(mx.base.ShapeError, match=r"_linalg_gemm2 .*incompatible matrix dimensions.*\(2, 3\).*\(4, 3\)"):
        mx.nd.linalg_gemm2(nd(np.ones((2, 3))), nd(np.ones((4, 3))))
    with pytest.raises(mx.base.ShapeError, match=r"_linalg_gemm .*C \(2,\) must have the shape .* \(2, 2\)"):
        mx.nd.linalg_gemm(nd(np.ones((2, 3))), nd(np.ones((3, 2))), nd(np.ones(2)))
    with pytest.raises(mx.base.DTypeError, match="hard_sigmoid .*data must be floating-point, got int32"):
        mx.nd.hard_sigmoid(nd([1, 2], dtype="int32"))
    with pytest.raises(mx.base.DTypeError, match="_linalg_gemm2 .*only float32 and float64 .* A is float16"):
        mx.nd.linalg_gemm2(nd(np.ones((2, 2)), dtype="float16"), nd(np.ones((2, 2)), dtype="float16"))


@pytest.mark.parametrize("build, shapes, words", [
    (lambda: S.broadcast_logical_or(V("a"), V("b"), name="lo"), {"a": (2, 3), "b": (2,)},
     ["broadcast_logical_or", "'lo'", "could not be broadcast", "(2, 3)", "(2,)"]),
    (lambda: S.softmin(V("a"), axis=2, name="sm"), {"a": (2, 3)}, ["softmin", "'sm'", "axis 2", "out of range"]),
    (lambda: S.softmax_cross_entropy(V("a"), V("b"), name="ce"), {"a": (2, 3, 4), "b": (2,)},
     ["softmax_cross_entropy", "'ce'", "2-D", "(2, 3, 4)"]),
    (lambda: S.softmax_cross_entropy(V("a"), V("b"), name="ce"), {"a": (2, 3), "b": (2, 1)},
     ["1-D", "(2, 1)"]),
    (lambda: S.softmax_cross_entropy(V("a"), V("b"), name="ce"), {"a": (2, 3), "b": (3,)},
     ["batch size", "(2, 3)", "(3,)"]),
    (lambda: S.SVMOutput(V("a"), V("b"), name="svm"), {"a": (2, 3, 4), "b": (2,)},
     ["SVMOutput", "'svm'", "label", "(2,)", "(2, 3)"]),
    (lambda: S.SVMOutput(V("a"), V("b"), name="svm"), {"a": (3,)}, ["at least 2 dimensions", "(3,)"]),
    (lambda: S.GroupNorm(V("a"), num_groups=2, name="gn"), {"a": (2, 4)},
     ["GroupNorm", "'gn'", "at least 3 dimensions", "(2, 4)"]),
    (lambda: S.GroupNorm(V("a"), num_groups=2, name="gn"), {"a": (2, 5, 3)},
     ["5 channels", "(2, 5, 3)", "num_groups=2"]),
    (lambda: S.GroupNorm(V("a"), num_groups=2, name="gn"), {"a": (2, 4, 3), "gn_gamma": (4,)},
     ["gn_gamma", "(4,)", "(2,)"]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), name="g"), {"a": (2, 3), "b": (4, 3)},
     ["_linalg_gemm2", "'g'", "incompatible matrix dimensions", "(2, 3)", "(4, 3)"]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), name="g"), {"a": (2, 2, 3), "b": (3, 3, 4)},
     ["same shape except", "(2, 2, 3)", "(3, 3, 4)"]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), name="g"), {"a": (2, 3), "b": (2, 3, 4)},
     ["same number of dimensions", "(2, 3)", "(2, 3, 4)"]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), name="g"), {"a": (3,), "b": (3,)}, ["at least 2"]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), axis=-1, name="g"), {"a": (2, 2, 3), "b": (2, 3, 4)},
     ["axis -1", "row axis"]),
    (lambda: S.linalg_gemm(V("a"), V("b"), V("c"), name="g"), {"a": (2, 3), "b": (3, 4), "c": (2, 5)},
     ["_linalg_gemm", "'g'", "(2, 5)", "(2, 4)"]),
])
def test_shape_errors(build, shapes, words):
    raises_naming(lambda: build().infer_shape(**shapes), *words, cls=mx.base.ShapeError)


def test_dtype_and_param_errors():
    x = V("x")
    with pytest.raises(mx.base.DTypeError, match=r"hard_sigmoid 'hs': data must be floating-point, got int32"):
        S.hard_sigmoid(x, name="hs").infer_type(x="int32")
    with pytest.raises(mx.base.DTypeError, match=r"softmin 'sm': data must be floating-point"):
        S.softmin(x, name="sm").infer_type(x="int32")
    with pytest.raises(mx.base.DTypeError, match=r"_linalg_gemm 'g': only float32 and float64 .*; B is float16"):
        S.linalg_gemm(x, V("b"), V("c"), name="g").infer_type(x="float32", b="float16")
    with pytest.raises(mx.base.ParamError, match="use_length=True is not supported"):
        S.softmin(x, use_length=True)
    with pytest.raises(mx.base.ParamError, match="must be one of"):
        S.softmin(x, dtype="int32")
    with pytest.raises(mx.base.ParamError, match="num_groups must be positive"):
        S.GroupNorm(x, num_groups=0)


@pytest.mark.parametrize("sym, given, arg, out", [  # read from MXNet 1.9.1 (and the partial cases it leaves open)
    (lambda: S.GroupNorm(V("x"), num_groups=2, name="gn"), {"x": (2, 4, 3)},
     [(2, 4, 3), (2,), (2,)], [(2, 4, 3)]),
    (lambda: S.GroupNorm(V("x"), num_groups=3, output_mean_var=True, name="gn"), {"x": (2, 6, 5)},
     [(2, 6, 5), (3,), (3,)], [(2, 6, 5), (2, 3), (2, 3)]),
    (lambda: S.SVMOutput(V("x"), V("l")), {"x": (2, 3, 4)}, [(2, 3, 4), (2, 3)], [(2, 3, 4)]),
    (lambda: S.softmax_cross_entropy(V("x"), V("l")), {"x": (2, 3)}, [(2, 3), (2,)], [(1,)]),
    (lambda: S.linalg_gemm(V("a"), V("b"), V("c")), {"a": (2, 3), "b": (3, 4)}, [(2, 3), (3, 4), (2, 4)],
     [(2, 4)]),
    (lambda: S.linalg_gemm2(V("a"), V("b"), axis=0), {"a": (2, 5, 3), "b": (3, 5, 4)},
     [(2, 5, 3), (3, 5, 4)], [(2, 5, 4)]),
    (lambda: S.broadcast_logical_and(V("a"), V("b")), {"a": (2, 3), "b": (3,)}, [(2, 3), (3,)], [(2, 3)]),
])
def test_infer_shape(sym, given, arg, out):
    a, o, _ = sym().infer_shape_partial(**given)
    assert (a, o) == (arg, out)


def test_infer_type_and_outputs():
    x = V("x")
    assert S.softmin(x, dtype="float16").infer_type(x="float32") == ([np.float32], [np.float16], [])
    assert S.softmin(x, dtype="float16").infer_type()[0] == [np.float16]  # the input takes the output's dtype
    assert S.broadcast_logical_xor(x, V("y")).infer_type(x="float16")[1] == [np.float16]
    gn = S.GroupNorm(x, name="gn")
    assert gn.list_outputs() == ["gn_output"] and gn.list_arguments() == ["x", "gn_gamma", "gn_beta"]
    assert S.GroupNorm(x, output_mean_var=True, name="gn").list_outputs() == ["gn_output", "gn_mean", "gn_std"]
    with mx.name.NameManager():
        assert S.linalg_gemm(x, V("b"), V("c")).name == "linalg_gemm0"  # MXNet names it by the alias
