"""More operators of MXNet 1.9.1: the `_random_*_like` samplers (jbind/ops/sampling.py),
khatri_rao (jbind/ops/khatri_rao.py), im2col and col2im (jbind/ops/conv_more.py).

The samplers draw from jax.random, not MXNet's stream: their check_op sample multiplies
the draws by zero, their distributions are checked by the moments of seeded draws (as
tests/test_ops_sampling.py). Behaviours marked "MXNet 1.9.1" were checked against it;
tests/golden/ops_more/ holds MXNet's own values of the deterministic ops.
"""
import re

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming
from jbind.ops import REGISTRY

V = mx.sym.Variable
S = mx.sym
N = 4000  # draws per distribution in the moment tests

# ------------------------------------------------------------------ _random_*_like
LIKE = {  # distribution: (parameters, mean, variance), as test_ops_sampling's RANDOM
    "uniform": (dict(low=-1, high=3), 1.0, 16 / 12),
    "normal": (dict(loc=2, scale=0.5), 2.0, 0.25),
    "gamma": (dict(alpha=2.5, beta=0.8), 2.0, 1.6),  # shape, scale
    "exponential": (dict(lam=4), 0.25, 1 / 16),  # the rate, as MXNet's exponential_like
    "poisson": (dict(lam=3.5), 3.5, 3.5),
    "negative_binomial": (dict(k=3, p=0.4), 4.5, 11.25),
    "generalized_negative_binomial": (dict(mu=2, alpha=0.3), 2.0, 3.2),
}
DISCRETE = ("poisson", "negative_binomial", "generalized_negative_binomial")


def _like_group():
    """Every `_random_*_like` op drawing in x's shape, times w. The check_op sample runs it
    with w = 0 (the draws vanish), the other tests with w = 1: one graph, one compile."""
    x, w = V("x"), V("w")
    return S.Group([S.broadcast_mul(getattr(S.random, d + "_like")(x, name=d, **p), w, name="w_" + d)
                    for d, (p, _, _) in LIKE.items()])


LIKE_SHAPES = {"x": (2, N // 2), "w": (1,)}


def _run(sym, values, seed=3, is_train=False):
    mx.random.seed(seed)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **{k: np.shape(v) for k, v in values.items()})
    return [o.asnumpy() for o in exe.forward(is_train=is_train, **values)]


def _like_run(x, seed):
    return _run(_like_group(), {"x": np.asarray(x, np.float32), "w": np.ones(1, np.float32)}, seed)


# ------------------------------------------------------------------ khatri_rao
def _khatri_rao_ref(*mats):
    """Column k: the Kronecker product of the matrices' k-th columns."""
    cols = []
    for k in range(mats[0].shape[1]):
        col = np.ones(1)
        for m in mats:
            col = np.kron(col, m[:, k])
        cols.append(col)
    return np.stack(cols, axis=1)


def _khatri_rao_case(id, shapes):
    names = list(shapes)
    return Case(id, lambda: S.khatri_rao(*[V(n) for n in names], name="kr"),
                lambda **v: [_khatri_rao_ref(*[v[n] for n in names])], shapes)


# ------------------------------------------------------------------ im2col / col2im
def _geometry(kernel, stride, dilate, pad):
    n = len(kernel)
    return tuple(stride) or (1,) * n, tuple(dilate) or (1,) * n, tuple(pad) or (0,) * n


def _block_counts(size, kernel, stride, dilate, pad):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, d, p in zip(size, kernel, stride, dilate, pad))


def _im2col_ref(x, kernel, stride=(), dilate=(), pad=()):
    """Element (n, c * prod(kernel) + j, b) is padded x at n, c, b * stride + j * dilate."""
    stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    blocks = _block_counts(x.shape[2:], kernel, stride, dilate, pad)
    out = np.zeros((x.shape[0], x.shape[1], int(np.prod(kernel)), int(np.prod(blocks))))
    for j, off in enumerate(np.ndindex(*kernel)):
        for b, pos in enumerate(np.ndindex(*blocks)):
            at = tuple(q * s + o * d for q, s, o, d in zip(pos, stride, off, dilate))
            out[:, :, j, b] = xp[(slice(None), slice(None)) + at]
    return out.reshape(x.shape[0], -1, out.shape[-1])


def _col2im_ref(col, output_size, kernel, stride=(), dilate=(), pad=()):
    """Each column element added where _im2col_ref reads it; the padding cropped."""
    stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    blocks = _block_counts(output_size, kernel, stride, dilate, pad)
    n, k = col.shape[0], int(np.prod(kernel))
    col = col.reshape(n, -1, k, col.shape[-1])
    img = np.zeros((n, col.shape[1]) + tuple(a + 2 * p for a, p in zip(output_size, pad)))
    for j, off in enumerate(np.ndindex(*kernel)):
        for b, pos in enumerate(np.ndindex(*blocks)):
            at = tuple(q * s + o * d for q, s, o, d in zip(pos, stride, off, dilate))
            img[(slice(None), slice(None)) + at] += col[:, :, j, b]
    return img[(slice(None), slice(None)) + tuple(slice(p, p + a) for a, p in zip(output_size, pad))]


BLOCKS = [  # id, image shape, parameters (1-D and 3-D: MXNet 1.9.1's CPU kernels fail on them)
    ("2d", (2, 2, 3, 4), dict(kernel=(2, 3))),
    ("2d_stride_dilate_pad", (1, 1, 5, 4), dict(kernel=(2, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 2))),
    ("1d", (1, 2, 7), dict(kernel=(3,), stride=(2,), pad=(1,))),
    ("3d", (1, 1, 3, 2, 4), dict(kernel=(2, 1, 2), stride=(1, 2, 1), dilate=(1, 1, 2), pad=(0, 1, 0))),
]


def _block_cases():
    """im2col of every BLOCKS geometry in one graph, col2im of every one in another (one
    compile each): inputs x_<id>."""
    shapes, col_shapes = {}, {}
    for id, shape, kw in BLOCKS:
        stride, dilate, pad = _geometry(kw["kernel"], kw.get("stride", ()), kw.get("dilate", ()), kw.get("pad", ()))
        blocks = _block_counts(shape[2:], kw["kernel"], stride, dilate, pad)
        shapes["x_" + id] = shape
        col_shapes["x_" + id] = (shape[0], shape[1] * int(np.prod(kw["kernel"])), int(np.prod(blocks)))
    return [
        Case("im2col_1d_2d_3d", lambda: S.Group([S.im2col(V("x_" + id), **kw) for id, _, kw in BLOCKS]),
             lambda **v: [_im2col_ref(v["x_" + id], **kw) for id, _, kw in BLOCKS], shapes),
        Case("col2im_1d_2d_3d",
             lambda: S.Group([S.col2im(V("x_" + id), output_size=shape[2:], **kw) for id, shape, kw in BLOCKS]),
             lambda **v: [_col2im_ref(v["x_" + id], shape[2:], **kw) for id, shape, kw in BLOCKS], col_shapes),
    ]


CASES = [
    Case("random_like_draws_times_zero", _like_group, lambda x, w: [np.zeros(x.shape)] * len(LIKE),
         LIKE_SHAPES, inputs={"w": np.zeros(1)}, grad=False),
    # a point distribution (low == high); MXNet 1.9.1: data's gradient is zero
    Case("uniform_like_point_zero_gradient", lambda: S.random.uniform_like(V("x"), low=2, high=2),
         lambda x: [np.full(x.shape, 2.0)], {"x": (2, 3)}),
    # MXNet 1.9.1 cannot differentiate khatri_rao; jbind's gradient is the product's
    _khatri_rao_case("khatri_rao_three", {"a": (2, 3), "b": (3, 3), "c": (2, 3)}),
    _khatri_rao_case("khatri_rao_one", {"a": (3, 2)}),
    *_block_cases(),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_like_ops_are_mxnets():
    like = {n for n in REGISTRY if n.startswith("_random_") and n.endswith("_like")}
    assert like == {f"_random_{d}_like" for d in LIKE}
    for d, (p, _, _) in LIKE.items():
        assert REGISTRY[f"_random_{d}_like"].param_names() == tuple(p)
        # MXNet 1.9.1: mx.sym.random.<d>_like names its node <d>_like<n>, takes data then the parameters
        s = getattr(S.random, d + "_like")(V("x"), *p.values())
        assert re.fullmatch(d + r"_like\d+", s.name) and s.list_arguments() == ["x"]
        assert f'"op": "_random_{d}_like"' in s.tojson()
        assert getattr(mx.nd.random, d + "_like") is not None


@pytest.fixture(scope="module")
def like_draws():
    return dict(zip(LIKE, _like_run(np.full(LIKE_SHAPES["x"], 7.0), seed=3)))


@pytest.mark.parametrize("dist", LIKE)
def test_like_draws_have_the_distribution(like_draws, dist):
    _, mean, var = LIKE[dist]
    x = like_draws[dist]
    assert x.shape == (2, N // 2) and x.dtype == np.float32
    x = x.ravel().astype(np.float64)
    m, v = x.mean(), x.var()
    se_v = np.std((x - m) ** 2) / np.sqrt(len(x))
    assert abs(m - mean) < 5 * np.sqrt(var / len(x)), f"{dist}: mean {m} vs {mean}"
    assert abs(v - var) < 5 * se_v, f"{dist}: variance {v} vs {var}"
    if dist in DISCRETE:
        np.testing.assert_array_equal(x, np.round(x))
    if dist == "uniform":
        assert -1 <= x.min() and x.max() < 3


def test_like_draws_ignore_the_values_and_repeat_with_the_seed():
    shape = LIKE_SHAPES["x"]
    a = _like_run(np.zeros(shape), seed=11)
    b = _like_run(np.random.default_rng(0).normal(size=shape), seed=11)
    c = _like_run(np.zeros(shape), seed=12)
    for d, u, v, w in zip(LIKE, a, b, c):
        np.testing.assert_array_equal(u, v, err_msg=d)
        if d not in DISCRETE:
            assert not np.array_equal(u, w), d


def test_like_training_steps_draw_anew():
    exe = S.random.normal_like(V("x")).simple_bind(mx.cpu(), x=(6,))
    mx.random.seed(1)
    first, second = [exe.forward(is_train=True)[0].asnumpy() for _ in range(2)]
    assert not np.array_equal(first, second)


def test_like_shapes_and_dtypes_match_mxnet():
    x, y = V("x"), V("y")
    u = S.random.uniform_like(x)
    assert u.infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    assert (u + y).infer_shape(y=(4, 5))[0] == [(4, 5), (4, 5)]  # MXNet 1.9.1: both ways
    # MXNet 1.9.1: the output has data's dtype
    assert S.random.gamma_like(x).infer_type(x="float16") == ([np.float16], [np.float16], [])
    assert (S.random.poisson_like(x) + y).infer_type(y="float16")[0] == [np.float16, np.float16]
    out = mx.nd.random.normal_like(mx.nd.ones((3, 2), dtype="float16"), 1, 0.1)
    assert out.shape == (3, 2) and out.dtype == np.float16
    # MXNet 1.9.1: exponential_like takes the rate (random.exponential takes the scale)
    assert abs(mx.nd.random.exponential_like(mx.nd.ones((N,)), lam=10).asnumpy().mean() - 0.1) < 0.01


def test_like_bad_parameters_and_inputs_raise_naming_the_op():
    P = mx.base.ParamError
    # MXNet 1.9.1 checks the parameters as the `_random_*` ops do
    for make, needles in [
        (lambda: S.random.uniform_like(low=1, high=0), ["_random_uniform_like", "low (1.0)", "high (0.0)"]),
        (lambda: S.random.normal_like(scale=0), ["_random_normal_like", "scale", "positive"]),
        (lambda: S.random.gamma_like(alpha=0), ["_random_gamma_like", "alpha"]),
        (lambda: S.random.exponential_like(lam=0), ["_random_exponential_like", "lam"]),
        (lambda: S.random.poisson_like(lam=-1), ["_random_poisson_like", "lam", "non-negative"]),
        (lambda: S.random.negative_binomial_like(k=-1), ["_random_negative_binomial_like", "k"]),
        (lambda: S.random.negative_binomial_like(p=0), ["_random_negative_binomial_like", "p must be in (0, 1]"]),
        (lambda: S.random.generalized_negative_binomial_like(mu=-1), ["_random_generalized_negative_binomial_like"]),
        (lambda: S.random.uniform_like(shape=(2,)), ["_random_uniform_like", "shape"]),
    ]:
        raises_naming(make, *needles, cls=P)
    # MXNet 1.9.1 infers int32 and fails in the forward ("only support floating point types")
    raises_naming(lambda: S.random.uniform_like(V("x"), name="u").infer_type(x="int32"),
                  "_random_uniform_like", "'u'", "int32", cls=mx.base.DTypeError)


# ------------------------------------------------------------------ khatri_rao
def test_khatri_rao_matches_mxnets_example():
    a = mx.nd.array([[1, -1], [2, -3]])
    b = mx.nd.array([[1, 4], [2, 5], [3, 6]])
    np.testing.assert_array_equal(mx.nd.khatri_rao(a, b).asnumpy(),
                                  [[1, -4], [2, -5], [3, -6], [2, -12], [4, -15], [6, -18]])


def test_khatri_rao_shapes_names_and_dtypes_match_mxnet():
    a, b, c = V("a"), V("b"), V("c")
    k = S.khatri_rao(a, b, c)
    assert re.fullmatch(r"khatri_rao\d+", k.name) and k.list_arguments() == ["a", "b", "c"]
    assert '"num_args": "3"' in k.tojson()
    assert S.khatri_rao(num_args=2, name="k").list_arguments() == ["k_arg0", "k_arg1"]
    assert k.infer_shape(a=(2, 3), b=(4, 3), c=(1, 3)) == ([(2, 3), (4, 3), (1, 3)], [(8, 3)], [])
    assert k.infer_type(a="float64") == ([np.float64] * 3, [np.float64], [])
    out = mx.nd.khatri_rao(mx.nd.ones((2, 3), dtype="float16"), mx.nd.ones((1, 3), dtype="float16"))
    assert out.shape == (2, 3) and out.dtype == np.float16


def test_khatri_rao_bad_shapes_raise_naming_the_op():
    a, b = V("a"), V("b")
    k = S.khatri_rao(a, b, name="kr")
    raises_naming(lambda: k.infer_shape(a=(2, 3), b=(4, 2)), "khatri_rao", "'kr'", "columns", "(4, 2)",
                  cls=mx.base.ShapeError)
    # MXNet 1.9.1 reads only dims 0 and 1 of a 3-D input's shape (then fails in the forward)
    raises_naming(lambda: k.infer_shape(a=(2, 3, 1), b=(4, 3)), "khatri_rao", "'kr'", "matrix", "(2, 3, 1)",
                  cls=mx.base.ShapeError)
    raises_naming(lambda: k.infer_shape(a=(3,), b=(4, 3)), "khatri_rao", "matrix", cls=mx.base.ShapeError)
    # MXNet 1.9.1 infers int32 and fails in the forward ("Not implmented!")
    raises_naming(lambda: k.infer_type(a="int32"), "khatri_rao", "'kr'", "int32", cls=mx.base.DTypeError)
    raises_naming(lambda: S.khatri_rao(num_args=0), "khatri_rao", "num_args", cls=mx.base.ParamError)


# ------------------------------------------------------------------ im2col / col2im
def test_im2col_col2im_shapes_names_and_parameters_match_mxnet():
    x = V("x")
    i = S.im2col(x, kernel=(2, 3), name="i")
    assert i.list_arguments() == ["x"] and '"kernel": "(2, 3)"' in i.tojson()
    assert i.infer_shape(x=(2, 2, 4, 5)) == ([(2, 2, 4, 5)], [(2, 12, 9)], [])
    assert S.im2col(x, kernel=(2, 3), stride=(2, 1), dilate=(1, 2), pad=(1, 0)).infer_shape(x=(2, 2, 4, 5))[1] == \
        [(2, 12, 3)]
    c = S.col2im(x, (3, 5), (2, 3), name="c")  # MXNet's order: output_size, kernel, stride, dilate, pad
    assert c.infer_shape(x=(2, 12, 6)) == ([(2, 12, 6)], [(2, 2, 3, 5)], [])
    assert (c + V("o")).infer_shape_partial(o=(2, 2, 3, 5))[0][0] == (2, 12, 6)  # MXNet 1.9.1: both ways
    assert REGISTRY["im2col"].declared_params() == ("kernel", "stride", "dilate", "pad")
    assert REGISTRY["col2im"].declared_params() == ("output_size", "kernel", "stride", "dilate", "pad")
    # MXNet 1.9.1: any dtype, kept
    assert S.im2col(x, kernel=(2, 2)).infer_type(x="int32")[1] == [np.int32]
    # col2im sums overlapping blocks: it is im2col's transpose, <im2col(x), y> = <x, col2im(y)>
    rng = np.random.default_rng(0)
    img, cols = rng.normal(size=(1, 2, 4, 5)), rng.normal(size=(1, 12, 9))
    left = (mx.nd.im2col(mx.nd.array(img), kernel=(2, 3)).asnumpy() * cols).sum()
    right = (img * mx.nd.col2im(mx.nd.array(cols), output_size=(4, 5), kernel=(2, 3)).asnumpy()).sum()
    assert left == pytest.approx(right, rel=1e-5)


def test_im2col_col2im_bad_shapes_and_parameters_raise_naming_the_op():
    x = V("x")
    i = S.im2col(x, kernel=(5, 3), name="i")
    # MXNet 1.9.1: "kernel size exceed input"
    raises_naming(lambda: i.infer_shape(x=(2, 2, 4, 5)), "im2col", "'i'", "kernel (5)", "dim 0 (4)",
                  cls=mx.base.ShapeError)
    # MXNet 1.9.1 reads a mis-ranked input's leading dims and returns a wrong shape (or fails later)
    raises_naming(lambda: S.im2col(x, kernel=(2,), name="i").infer_shape(x=(2, 2, 4, 5)), "im2col", "'i'",
                  "(2, 2, 4, 5)", "3 dims", cls=mx.base.ShapeError)
    c = S.col2im(x, output_size=(3, 5), kernel=(2, 3), name="c")
    raises_naming(lambda: c.infer_shape(x=(2, 13, 6)), "col2im", "'c'", "multiple", "6",
                  cls=mx.base.ShapeError)
    raises_naming(lambda: c.infer_shape(x=(2, 12, 4)), "col2im", "'c'", "blocks 6", "(3, 5)",
                  cls=mx.base.ShapeError)
    raises_naming(lambda: c.infer_shape(x=(2, 12)), "col2im", "'c'", "3 dims", cls=mx.base.ShapeError)
    raises_naming(lambda: S.col2im(x, output_size=(1, 3), kernel=(2, 3), name="c").infer_shape(x=(2, 12, 1)),
                  "col2im", "kernel (2)", "output_size", cls=mx.base.ShapeError)
    P = mx.base.ParamError
    for make, needles in [
        (lambda: S.im2col(kernel=(2, 3), stride=(1,)), ["im2col", "stride (1,)", "kernel (2, 3)"]),
        (lambda: S.im2col(kernel=(0, 3)), ["im2col", "kernel (0, 3)", "positive"]),
        (lambda: S.im2col(kernel=(2, 3), stride=(0, 1)), ["im2col", "stride (0, 1)", "positive"]),
        (lambda: S.im2col(kernel=(1, 1, 1, 1)), ["im2col", "1, 2 or 3 dims"]),
        (lambda: S.im2col(), ["im2col", "kernel"]),
        (lambda: S.col2im(output_size=(4,), kernel=(2, 3)), ["col2im", "output_size (4,)", "kernel (2, 3)"]),
        (lambda: S.col2im(kernel=(2, 3)), ["col2im", "output_size"]),
        (lambda: S.col2im(output_size=(0, 4), kernel=(2, 3)), ["col2im", "output_size (0, 4)", "positive"]),
    ]:
        raises_naming(make, *needles, cls=P)
