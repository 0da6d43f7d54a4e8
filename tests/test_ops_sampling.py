"""Sampling ops (jbind/ops/sampling.py) and their densities (jbind/ops/pdf.py).

Draws come from jax.random, not MXNet's stream, so the check_op samples make the result
independent of the draw (a degenerate distribution, a draw times zero, one-hot
probabilities, a shuffle undone by a sort); the distributions are checked by the moments
of a few thousand seeded draws. The densities' values and gradients are MXNet 1.9.1's
(tests/golden/ops_sampling/ holds MXNet's own); behaviours marked "MXNet 1.9.1" were
checked against it.
"""
import math
import warnings

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, ops_in, raises_naming
from jbind.ops import REGISTRY
from jbind.ops import pdf as pdf_mod
from jbind.ops import sampling as sampling_mod
from jbind.ops import sampling_more as sampling_more_mod

V = mx.sym.Variable
S = mx.sym
N = 4000  # draws per distribution in the moment tests


# ------------------------------------------------------------------ numpy log-densities (MXNet's formulas)
_lgamma = np.vectorize(math.lgamma)


def _nb(x, k, p):
    return _lgamma(x + k) - _lgamma(x + 1) - _lgamma(k) + k * np.log(p) + x * np.log(1 - p)


LOG_PDF = {
    "uniform": lambda x, lo, hi: -np.log(hi - lo) + 0 * x,
    "normal": lambda x, mu, s: -0.5 * (x - mu) ** 2 / s ** 2 - np.log(np.sqrt(2 * np.pi) * s),
    "gamma": lambda x, a, b: a * np.log(b) + (a - 1) * np.log(x) - b * x - _lgamma(a),  # b: a rate
    "exponential": lambda x, lam: np.log(lam) - lam * x,
    "poisson": lambda x, lam: x * np.log(lam) - _lgamma(x + 1) - lam,
    "negative_binomial": _nb,
    "generalized_negative_binomial": lambda x, mu, a: _nb(x, 1 / a, 1 / (mu * a + 1)),
}


POS, COUNT = (0.5, 2.0), ("int", 0, 6)
PDF_INPUTS = {  # parameter ranges, sample range
    "uniform": ([(-2.0, -0.5), (0.5, 2.0)], (-0.5, 0.5)),
    "normal": ([(-1.0, 1.0), POS], (-2.0, 2.0)),
    "gamma": ([(0.5, 3.0), POS], (0.2, 3.0)),
    "exponential": ([POS], (0.1, 3.0)),
    "poisson": ([(0.5, 4.0)], COUNT),
    "negative_binomial": ([(0.5, 4.0), (0.2, 0.8)], COUNT),
    "generalized_negative_binomial": ([(0.5, 3.0), (0.2, 1.5)], COUNT),
}
DENSITY_SHAPES = {"dirichlet_x": (2, 3, 4), "dirichlet_a": (2, 4),
                  **{d + n: (2, 3) if n == "_x" else (2,) for d, (r, _) in PDF_INPUTS.items()
                     for n in ("_x", "_a", "_b")[:1 + len(r)]}}
DENSITY_INPUTS = {"dirichlet_x": (0.1, 1.0), "dirichlet_a": (0.5, 3.0),
                  **{d + n: v for d, (r, x) in PDF_INPUTS.items() for n, v in zip(("_x", "_a", "_b"), [x, *r])}}
# MXNet gives the count of a discrete density no gradient
COUNTS = tuple(d + "_x" for d, (_, x) in PDF_INPUTS.items() if x is COUNT)


def _densities():
    """Every density, plain then log, in one graph (one compile): `<dist>_x` against the
    parameters `<dist>_a`, `<dist>_b` of the leading shape (2,), and the dirichlet's vectors."""
    v = {k: V(k) for k in DENSITY_SHAPES}
    outs = []
    for is_log in (False, True):
        outs += [getattr(S, "random_pdf_" + d)(v[d + "_x"], *[v[d + n] for n in ("_a", "_b")[:len(r)]],
                                               is_log=is_log) for d, (r, _) in PDF_INPUTS.items()]
        outs.append(S.random_pdf_dirichlet(v["dirichlet_x"], v["dirichlet_a"], is_log=is_log))
    return S.Group(outs)


def _densities_ref(**v):
    logs = []
    for d in PDF_INPUTS:
        x, params = v[d + "_x"], [v[k] for k in (d + "_a", d + "_b") if k in v]
        logs.append(LOG_PDF[d](x, *[p.reshape(p.shape + (1,) * (x.ndim - p.ndim)) for p in params]))
    logs.append(_dirichlet_log_pdf(v["dirichlet_x"], v["dirichlet_a"]))
    return [np.exp(y) for y in logs] + logs


def _dirichlet_log_pdf(x, a):
    a = a.reshape(a.shape[:-1] + (1,) * (x.ndim - a.ndim) + a.shape[-1:])
    return np.sum((a - 1) * np.log(x), -1) + _lgamma(np.sum(a, -1)) - np.sum(_lgamma(a), -1)


# ------------------------------------------------------------------ the samplers' distributions
RANDOM = {  # op: (parameters, mean, variance)
    "random_uniform": (dict(low=-1, high=3), 1.0, 16 / 12),
    "random_normal": (dict(loc=2, scale=0.5), 2.0, 0.25),
    "random_gamma": (dict(alpha=2.5, beta=0.8), 2.0, 1.6),  # shape, scale
    "random_exponential": (dict(lam=4), 0.25, 1 / 16),
    "random_poisson": (dict(lam=3.5), 3.5, 3.5),
    "random_negative_binomial": (dict(k=3, p=0.4), 4.5, 11.25),  # k(1-p)/p, k(1-p)/p^2
    "random_generalized_negative_binomial": (dict(mu=2, alpha=0.3), 2.0, 3.2),  # mu, mu + alpha mu^2
    "random_randint": (dict(low=-2, high=5), 1.0, 4.0),
}
SAMPLE = {  # op: parameter inputs (two distributions each), means, variances; a point distribution, its value
    "sample_uniform": ({"low": [-1, 5], "high": [3, 5.5]}, [1, 5.25], [16 / 12, 0.25 / 12],
                       {"low": [1, 2], "high": [1, 2]}, [1, 2]),
    "sample_normal": ({"mu": [0, 10], "sigma": [1, 0.1]}, [0, 10], [1, 0.01],
                      {"mu": [0, 10], "sigma": [0, 0]}, [0, 10]),
    "sample_gamma": ({"alpha": [0.5, 4], "beta": [2, 0.5]}, [1, 2], [2, 1], {"alpha": [0, 0], "beta": [2, 1]}, [0, 0]),
    "sample_exponential": ({"lam": [1, 8]}, [1, 1 / 8], [1, 1 / 64], {"lam": [np.inf, np.inf]}, [0, 0]),
    "sample_poisson": ({"lam": [0.5, 20]}, [0.5, 20], [0.5, 20], {"lam": [0, 0]}, [0, 0]),
    "sample_negative_binomial": ({"k": [2, 5], "p": [0.5, 0.8]}, [2, 1.25], [4, 1.5625],
                                 {"k": [0, 0], "p": [0.5, 0.8]}, [0, 0]),
    "sample_generalized_negative_binomial": ({"mu": [3, 2], "alpha": [0, 1]}, [3, 2], [3, 6],
                                             {"mu": [0, 0], "alpha": [0, 1]}, [0, 0]),
}
DISCRETE = {"random_poisson", "random_negative_binomial", "random_generalized_negative_binomial",
            "random_randint", "sample_poisson", "sample_negative_binomial", "sample_generalized_negative_binomial"}


def _sample_group():
    """Every `_sample_*` op but multinomial, N draws per element of its (2,) parameters. The
    check_op sample and the moment test bind this one graph: one compile serves both."""
    return S.Group([getattr(S, op)(*[V(f"{op}_{k}") for k in params], shape=(N,), name=op)
                    for op, (params, *_) in SAMPLE.items()])


def _sample_values(which):
    return {f"{op}_{k}": np.array(v, np.float32) for op, row in SAMPLE.items() for k, v in row[which].items()}


def _random_group():
    """Every `_random_*` op, N draws times the input w. The check_op sample runs it with
    w = 0 (the draws vanish), the moment test with w = 1: one graph, one compile."""
    w = V("w")
    return S.Group([S.broadcast_mul(S.Cast(getattr(S, op)(shape=(N,), name=op + "_draw", **params), dtype="float32",
                                           name=op + "_cast"), w, name=op)
                    for op, (params, _, _) in RANDOM.items()])


def _zero_gradients():
    """MXNet's `_sample_*` give their parameters zero gradients: x's is zero here."""
    x = V("x")
    return S.sample_uniform(x, x, shape=(2,)) + S.sample_normal(x, S.zeros_like(x), shape=(2,))


def _one_hot_rows():
    """Rows w at index i and 0 elsewhere: every draw is i, its log probability log(w)."""
    p = S.one_hot(V("i"), depth=4) * V("w")
    return S.sample_multinomial(p, shape=(3,), get_prob=True, name="m")


def _one_hot_ref(i, w):
    idx = i.astype(int)
    logp = np.log(w[np.arange(len(idx)), idx])
    return [np.repeat(idx[:, None], 3, 1), np.repeat(logp[:, None], 3, 1)]


CASES = [
    Case("densities", _densities, _densities_ref, DENSITY_SHAPES, inputs=DENSITY_INPUTS, no_grad=COUNTS,
         rtol=1e-3, atol=1e-4),
    Case("random_draws_times_zero", _random_group, lambda w: [np.zeros(N)] * len(RANDOM), {"w": (1,)},
         inputs={"w": np.zeros(1)}, grad=False),
    Case("sample_point_draws", _sample_group,
         lambda **v: [np.broadcast_to(np.array(row[4], float)[:, None], (2, N)) for row in SAMPLE.values()],
         {k: (2,) for k in _sample_values(3)}, inputs=_sample_values(3), grad=False),
    Case("sample_zero_gradients", _zero_gradients, lambda x: [np.repeat(2 * x[:, None], 2, 1)], {"x": (3,)},
         ref_grad=lambda x: {"x": np.zeros_like(x)}),
    Case("multinomial_one_hot_get_prob", _one_hot_rows, _one_hot_ref, {"i": (2,), "w": (2, 4)},
         inputs={"i": ("int", 0, 4), "w": (1.0, 2.0)}, no_grad=("i",)),
    # MXNet 1.9.1 cannot differentiate shuffle (jbind's gradient is zero): values only
    Case("shuffle_rows_then_sort", lambda: S.sort(S.shuffle(V("x")), axis=0), lambda x: [np.sort(x, axis=0)],
         {"x": (5, 3)}, grad=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_every_op_has_a_case():
    mine = {n for n, c in REGISTRY.items() if c.__module__ in (sampling_mod.__name__, sampling_more_mod.__name__, pdf_mod.__name__)
            and not n.endswith("_like")}  # the _like samplers: tests/test_ops_more_ops.py
    assert len(mine) == 25
    assert mine <= set().union(*(ops_in(c.build()) for c in CASES))


# ------------------------------------------------------------------ the distributions
def _run(sym, values=None, seed=3):
    """Outputs by name of an inference forward after `mx.random.seed(seed)`."""
    mx.random.seed(seed)
    values = values or {}
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **{k: np.shape(v) for k, v in values.items()})
    outs = exe.forward(**values)
    return {name: o.asnumpy() for name, o in zip(sym.list_outputs(), outs)}


@pytest.fixture(scope="module")
def draws():
    out = _run(_random_group(), {"w": np.ones(1, np.float32)})
    out.update(_run(_sample_group(), _sample_values(0)))
    return {k[:-len("_output")]: v for k, v in out.items()}


def _moments_agree(x, mean, var, what):
    """Sample mean and variance within 5 standard errors of the distribution's."""
    m, v = x.mean(), x.var()
    se_v = np.std((x - m) ** 2) / np.sqrt(len(x))
    assert abs(m - mean) < 5 * np.sqrt(var / len(x)), f"{what}: mean {m} vs {mean}"
    assert abs(v - var) < 5 * se_v + 1e-12, f"{what}: variance {v} vs {var}"


@pytest.mark.parametrize("op", RANDOM)
def test_random_draws_have_the_distribution(draws, op):
    params, mean, var = RANDOM[op]
    x = draws[op]
    assert x.shape == (N,)
    _moments_agree(x.astype(np.float64), mean, var, op)
    if op in DISCRETE:
        np.testing.assert_array_equal(x, np.round(x))
    if op in ("random_uniform", "random_randint"):
        assert params["low"] <= x.min() and x.max() < params["high"]


@pytest.mark.parametrize("op", SAMPLE)
def test_sample_draws_have_each_elements_distribution(draws, op):
    _, means, variances, *_ = SAMPLE[op]
    x = draws[op]
    assert x.shape == (2, N)
    for row, mean, var in zip(x, means, variances):
        _moments_agree(row.astype(np.float64), mean, var, op)
    if op in DISCRETE:
        np.testing.assert_array_equal(x, np.round(x))


def test_multinomial_frequencies_and_log_probabilities():
    probs = np.array([[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]], np.float32)
    out = _run(S.sample_multinomial(V("p"), shape=(N,), get_prob=True, name="m"), {"p": probs})
    idx, logp = out["m_output0"], out["m_output1"]
    assert idx.shape == logp.shape == (2, N) and idx.dtype == np.int32
    for row, p, lp in zip(idx, probs, logp):
        freq = np.bincount(row, minlength=3) / N
        assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / N)), (freq, p)
        np.testing.assert_allclose(lp, np.log(p[row]), rtol=1e-6)


def test_shuffle_permutes_rows_uniformly():
    x = np.stack([np.arange(N), -np.arange(N)], 1).astype(np.float32)
    y = _run(S.shuffle(V("x"), name="s"), {"x": x})["s_output"]
    np.testing.assert_array_equal(y[:, 1], -y[:, 0])  # rows stay whole
    np.testing.assert_array_equal(np.sort(y[:, 0]), x[:, 0])
    assert abs(np.corrcoef(y[:, 0], x[:, 0])[0, 1]) < 5 / np.sqrt(N)  # no trace of the old order


def test_float16_draws():
    out = _run(S.random_normal(loc=1, scale=0.1, shape=(N,), dtype="float16", name="n"))["n_output"]
    assert out.dtype == np.float16 and abs(out.astype(np.float64).mean() - 1) < 0.01


# ------------------------------------------------------------------ seeding
def test_seed_repeats_draws_and_each_step_draws_anew():
    """As Dropout: `mx.random.seed(s)` restarts the draws, each training forward draws anew."""
    sym = S.Group([S.random_normal(shape=(4,), name="n"), S.sample_uniform(V("a"), V("b"), shape=(3,), name="u"),
                   S.shuffle(V("c"), name="s"), S.sample_multinomial(V("p"), shape=(6,), name="m")])
    exe = sym.simple_bind(mx.cpu(), a=(2,), b=(2,), c=(8,), p=(3,))
    exe.arg_dict["b"][:] = 1.0
    exe.arg_dict["c"][:] = np.arange(8.0)
    exe.arg_dict["p"][:] = np.full(3, 1 / 3)

    def step():
        return [o.asnumpy() for o in exe.forward(is_train=True)]
    mx.random.seed(7)
    first, second = step(), step()
    mx.random.seed(7)
    again = step()
    mx.random.seed(8)
    other = step()
    for k in range(4):
        np.testing.assert_array_equal(first[k], again[k])
        assert not np.array_equal(first[k], second[k]) and not np.array_equal(first[k], other[k])


def test_two_samplers_with_one_parameter_set_draw_different_numbers():
    out = _run(S.Group([S.random_uniform(shape=(5,), name="a"), S.random_uniform(shape=(5,), name="b")]))
    assert not np.array_equal(out["a_output"], out["b_output"])


# ------------------------------------------------------------------ shapes, dtypes, names
def test_shapes_match_mxnet():
    x, y = V("x"), V("y")
    # MXNet 1.9.1: a sampler's unknown dims come from its consumers
    assert (S.random_uniform(shape=(0, 3)) + x).infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    assert S.sample_normal(x, y, shape=(3,)).infer_shape(x=(2,)) == ([(2,), (2,)], [(2, 3)], [])
    assert (S.sample_normal(x, y, shape=(2,)) + V("c")).infer_shape(c=(3, 4, 2))[0] == [(3, 4), (3, 4), (3, 4, 2)]
    assert S.sample_gamma(x, y).infer_shape(x=(2, 5))[1] == [(2, 5)]
    m = S.sample_multinomial(x, get_prob=True, name="m")
    assert m.list_outputs() == ["m_output0", "m_output1"]
    assert m.infer_shape(x=(4,))[1] == [(1,), (1,)] and m.infer_shape(x=(2, 4))[1] == [(2,), (2,)]
    m = S.sample_multinomial(x, shape=(3, 2), name="m")
    assert m.list_outputs() == ["m_output"]
    assert m.infer_shape(x=(4,))[1] == [(3, 2)] and m.infer_shape(x=(2, 4))[1] == [(2, 3, 2)]
    d = S.random_pdf_dirichlet(x, y)
    assert d.infer_shape(x=(2, 3, 4), y=(2, 4)) == ([(2, 3, 4), (2, 4)], [(2, 3)], [])
    assert d.infer_shape(x=(4,), y=(4,))[1] == [(1,)]
    n = S.random_pdf_normal(x, y, V("s"))
    assert n.infer_shape_partial(x=(2, 3, 4)) == ([(2, 3, 4), (), ()], [()], [])  # MXNet 1.9.1: needs all
    assert n.infer_shape(x=(2, 3, 4), y=(2,), s=(2,))[1] == [(2, 3, 4)]
    assert S.shuffle(x).infer_shape(x=(3, 2))[1] == [(3, 2)]


def test_dtypes_match_mxnet():
    x, y = V("x"), V("y")
    assert S.random_uniform(shape=(2,)).infer_type() == ([], [np.float32], [])
    assert S.random_normal(shape=(2,), dtype="float16").infer_type() == ([], [np.float16], [])
    assert S.random_randint(low=0, high=3, shape=(2,)).infer_type() == ([], [np.int32], [])
    assert S.random_randint(low=0, high=3, shape=(2,), dtype="int64").infer_type() == ([], [np.int64], [])
    # MXNet 1.9.1: the output's dtype is `dtype` or float32, not the parameters'
    assert S.sample_exponential(x).infer_type(x="float64") == ([np.float64], [np.float32], [])
    assert S.sample_normal(x, y, dtype="float16").infer_type(x="float32") == ([np.float32] * 2, [np.float16], [])
    assert S.sample_multinomial(x, get_prob=True).infer_type(x="float64") == ([np.float64], [np.int32, np.float64], [])
    assert S.sample_multinomial(x, dtype="uint8").infer_type(x="float32")[1] == [np.uint8]
    assert S.random_pdf_normal(x, y, V("s")).infer_type(x="float64") == ([np.float64] * 3, [np.float64], [])
    assert S.shuffle(x).infer_type(x="int32") == ([np.int32], [np.int32], [])
    exe = S.random_randint(low=0, high=3, shape=(2,)).simple_bind(mx.cpu())
    assert exe.forward()[0].dtype == np.int32


def test_names_aliases_and_arguments_match_mxnet():
    import re
    assert re.fullmatch(r"uniform\d+", S.uniform(shape=(2,)).name)
    assert re.fullmatch(r"random_uniform\d+", S.random_uniform(shape=(2,)).name)
    assert re.fullmatch(r"_random_uniform\d+", S.random.uniform(shape=(2,)).name)
    for alias, op in [("normal", "_random_normal"), ("random_gamma", "_random_gamma"),
                      ("random_randint", "_random_randint"), ("sample_poisson", "_sample_poisson"),
                      ("shuffle", "_shuffle"), ("random_pdf_dirichlet", "_random_pdf_dirichlet")]:
        kw = {"low": 0, "high": 2} if op == "_random_randint" else {}
        assert getattr(S, alias)(**kw).tojson().count(f'"op": "{op}"') == 1
    assert S.random_pdf_normal(name="p").list_arguments() == ["p_sample", "p_mu", "p_sigma"]
    assert S.random_pdf_dirichlet(name="p").list_arguments() == ["p_sample", "p_alpha"]
    assert S.sample_gamma(name="g").list_arguments() == ["g_alpha", "g_beta"]
    assert S.sample_poisson(name="g").list_arguments() == ["g_lam"]
    assert S.sample_negative_binomial(name="g").list_arguments() == ["g_k", "g_p"]
    assert S.sample_multinomial(name="m").list_arguments() == ["m_data"]
    assert S.random_gamma(shape=(2,)).list_arguments() == []
    assert mx.sym.random.normal is not None and mx.sym.random.pdf_gamma is not None


# ------------------------------------------------------------------ imperative use
def test_ndarray_calls():
    nd = mx.nd
    u = nd.random_uniform(low=2, high=3, shape=(50,))
    assert u.shape == (50,) and u.dtype == np.float32 and 2 <= u.asnumpy().min() and u.asnumpy().max() < 3
    assert nd.random.normal(loc=1, scale=0.1, shape=(50,), dtype="float16").dtype == np.float16
    r = nd.random.randint(low=-1, high=2, shape=(50,)).asnumpy()
    assert r.dtype == np.int32 and set(r) <= {-1, 0, 1}
    s = nd.sample_normal(nd.array([0, 10]), nd.array([1, 0.01]), shape=(50,)).asnumpy()
    assert s.shape == (2, 50) and abs(s[1].mean() - 10) < 0.01
    idx, logp = nd.sample_multinomial(nd.array([[0, 1, 0]]), shape=(3,), get_prob=True)
    np.testing.assert_array_equal(idx.asnumpy(), [[1, 1, 1]])
    np.testing.assert_array_equal(logp.asnumpy(), [[0, 0, 0]])
    np.testing.assert_array_equal(np.sort(nd.shuffle(nd.array(np.arange(10.0))).asnumpy()), np.arange(10))


def test_ndarray_densities_match_mxnet_examples():
    """Examples in MXNet 1.9.1's pdf_op.cc (tests/golden/ops_sampling/ checks every density)."""
    nd = mx.nd
    s = nd.array([[1, 2, 3, 4]] * 2)
    np.testing.assert_allclose(
        nd.random_pdf_generalized_negative_binomial(s, nd.array([1, 1.5]), nd.array([1, 0.6666])).asnumpy(),
        [[0.25, 0.125, 0.0625, 0.03125], [0.26517063, 0.16573331, 0.09667706, 0.05437994]], rtol=1e-5)
    np.testing.assert_allclose(nd.random.pdf_gamma(nd.array([[1, 2, 3, 4, 5]]), nd.array([5]), nd.array([1])).asnumpy(),
                               [[0.01532831, 0.09022352, 0.16803136, 0.19536681, 0.17546739]], rtol=1e-5)
    d = nd.random_pdf_dirichlet(nd.array([[1, 2], [2, 3], [3, 4]]), nd.array([2.5, 2.5]))
    np.testing.assert_allclose(d.asnumpy(), [38.413498, 199.60245, 564.56085], rtol=1e-5)


# ------------------------------------------------------------------ bad input
def test_bad_parameters_raise_naming_the_op():
    P = mx.base.ParamError
    for make, needles in [
        (lambda: S.random_normal(scale=0, shape=(2,)), ["_random_normal", "scale", "positive"]),
        (lambda: S.random_uniform(low=1, high=0), ["_random_uniform", "low (1.0)", "high (0.0)"]),
        (lambda: S.random_gamma(alpha=0), ["_random_gamma", "alpha"]),
        (lambda: S.random_gamma(beta=-1), ["_random_gamma", "beta"]),
        (lambda: S.random_exponential(lam=0), ["_random_exponential", "lam"]),
        (lambda: S.random_poisson(lam=-1), ["_random_poisson", "lam", "non-negative"]),
        (lambda: S.random_negative_binomial(k=-1), ["_random_negative_binomial", "k"]),
        (lambda: S.random_negative_binomial(k=1.5), ["_random_negative_binomial", "k=1.5", "int"]),
        (lambda: S.random_negative_binomial(p=0), ["_random_negative_binomial", "p must be in (0, 1]"]),
        (lambda: S.random_negative_binomial(p=1.5), ["_random_negative_binomial", "p must be in (0, 1]"]),
        (lambda: S.random_generalized_negative_binomial(alpha=-1), ["_random_generalized_negative_binomial"]),
        (lambda: S.random_randint(low=2, high=2), ["_random_randint", "low (2)", "high (2)"]),
        (lambda: S.random_randint(low=0), ["_random_randint", "high"]),
        (lambda: S.random_uniform(dtype="int32"), ["_random_uniform", "dtype", "float16", "int32"]),
        (lambda: S.random_randint(low=0, high=2, dtype="float32"), ["_random_randint", "dtype", "int64"]),
        (lambda: S.sample_normal(shape=(2, 0)), ["_sample_normal", "(2, 0)", "non-zero"]),
        (lambda: S.sample_exponential(dtype="int32"), ["_sample_exponential", "dtype"]),
        (lambda: S.sample_multinomial(dtype="int64"), ["_sample_multinomial", "dtype"]),
    ]:
        raises_naming(make, *needles, cls=P)


def test_bad_inputs_raise_naming_the_op_and_node():
    x, y = V("x"), V("y")
    raises_naming(lambda: S.sample_normal(x, y, name="sn").infer_shape(x=(2,), y=(3,)),
                  "_sample_normal", "'sn'", "(2,)", "(3,)")
    n = S.random_pdf_normal(x, y, V("s"), name="p")
    raises_naming(lambda: n.infer_shape(x=(2, 3), y=(3,), s=(3,)), "_random_pdf_normal", "'p'", "(3,)", "(2,)")
    raises_naming(lambda: n.infer_shape(x=(2, 3), y=(2, 3, 4), s=(2, 3, 4)), "_random_pdf_normal", "dimension")
    raises_naming(lambda: n.infer_type(x="int32"), "_random_pdf_normal", "'p'", "int32", cls=mx.base.DTypeError)
    raises_naming(lambda: S.sample_multinomial(x, name="m").infer_type(x="int32"),
                  "_sample_multinomial", "'m'", "int32", cls=mx.base.DTypeError)
    # MXNet 1.9.1: an undeclared dtype is float32, which the consumer then refuses
    raises_naming(lambda: (x + S.random_uniform(shape=(2,), dtype="float16", name="u")).infer_type(x="float32"),
                  "float16", "float32", cls=mx.base.DTypeError)
    exe = S.random_uniform(shape=(0, 3), name="u").simple_bind(mx.cpu())
    raises_naming(lambda: exe.forward(), "_random_uniform", "(0, 3)", cls=mx.base.ShapeError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mx.nd's shape check warns before the op raises
        raises_naming(lambda: mx.nd.random_uniform(), "_random_uniform", "()", cls=mx.base.ShapeError)
