"""Golden cases for the sampling ops (jbind/ops/sampling.py, pdf.py) against MXNet 1.9.1;
same format as zoo_cases.py (see its docstring), written to tests/golden/ops_sampling/ by
``make_zoo_golden.py --group sampling``.

The densities (`random_pdf_*`) are deterministic: values and gradients, plain and log.
A sampler's draws differ from MXNet's (jax.random, not MXNet's stream), so the sampler
cases are the ones whose result is fixed whatever the draw: a degenerate distribution
(uniform on [a, a], rate 0, shape parameter 0, one-hot probabilities), a draw times 0,
a shuffle undone by a sort or a sum. They check names, parameters, shapes, dtypes and
MXNet's zero gradients to the `_sample_*` parameters. MXNet 1.9.1 cannot differentiate
`shuffle`: those cases run inference only.
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)

POS = ("uniform", 0.5, 2.0)
COUNT = ("int", 0, 6)


def _pdf_cases(S, add):
    x = S.Variable("x")
    a, b = S.Variable("a"), S.Variable("b")
    dists = [  # name, parameter inputs (name -> range), sample range
        ("uniform", {"low": ("uniform", -2.0, -0.5), "high": ("uniform", 0.5, 2.0)}, ("uniform", -0.5, 0.5)),
        ("normal", {"mu": ("uniform", -1.0, 1.0), "sigma": POS}, ("uniform", -2.0, 2.0)),
        ("gamma", {"alpha": ("uniform", 0.5, 3.0), "beta": POS}, ("uniform", 0.2, 3.0)),
        ("exponential", {"lam": POS}, ("uniform", 0.1, 3.0)),
        ("poisson", {"lam": ("uniform", 0.5, 4.0)}, COUNT),
        ("negative_binomial", {"k": ("uniform", 0.5, 4.0), "p": ("uniform", 0.2, 0.8)}, COUNT),
        ("generalized_negative_binomial", {"mu": ("uniform", 0.5, 3.0), "alpha": ("uniform", 0.2, 1.5)}, COUNT),
    ]
    for dist, params, sample in dists:
        fn = getattr(S, "random_pdf_" + dist)
        pv = [a, b][:len(params)]
        ranges = dict(zip(["a", "b"], params.values()), x=sample)
        for is_log in (False, True):
            tag = "_log" if is_log else ""
            # one sample per distribution, then 3 samples of each of 2 x 2 distributions
            add("pdf_%s%s" % (dist, tag), fn(x, *pv, is_log=is_log, name="pdf"),
                dict({"x": (4,)}, **{v.name: (4,) for v in pv}), inputs=ranges)
            add("pdf_%s%s_batched" % (dist, tag), fn(x, *pv, is_log=is_log, name="pdf"),
                dict({"x": (2, 2, 3)}, **{v.name: (2, 2) for v in pv}), inputs=ranges)
    alpha = {"a": ("uniform", 0.5, 3.0), "x": ("uniform", 0.1, 1.0)}
    for is_log in (False, True):
        tag = "_log" if is_log else ""
        add("pdf_dirichlet%s" % tag, S.random_pdf_dirichlet(x, a, is_log=is_log, name="pdf"),
            {"x": (2, 3, 4), "a": (2, 4)}, inputs=alpha)
        add("pdf_dirichlet_one_vector%s" % tag, S.random_pdf_dirichlet(x, a, is_log=is_log, name="pdf"),
            {"x": (3,), "a": (3,)}, inputs=alpha)
    # the parameters named as MXNet creates them
    add("pdf_normal_own_inputs", S.random_pdf_normal(name="pdf"),
        {"pdf_sample": (2, 3), "pdf_mu": (2,), "pdf_sigma": (2,)}, inputs={"pdf_sigma": POS})


def op_cases(mx):
    S = mx.sym
    x, y = S.Variable("x"), S.Variable("y")
    cases = []

    def add(name, sym, shapes, **kw):
        cases.append(dict(name=name, sym=sym, shapes=shapes, **kw))

    _pdf_cases(S, add)
    # ------------------------------------------------------------ _random_*: degenerate draws
    add("random_uniform_point", S.random_uniform(low=1.5, high=1.5, shape=(2, 3), name="u") * x,
        {"x": (2, 3)})
    add("random_uniform_shape_from_consumer", x + S.uniform(low=-2, high=-2, shape=(0, 3), name="u"),
        {"x": (2, 3)})
    add("random_normal_times_zero", x + 0 * S.random_normal(loc=1, scale=2, shape=(2, 3), name="n"),
        {"x": (2, 3)})
    add("random_gamma_times_zero", x + 0 * S.random_gamma(alpha=2, beta=3, shape=(3,), name="g"), {"x": (3,)})
    add("random_exponential_times_zero", x + 0 * S.random_exponential(lam=2, shape=(3,), name="e"),
        {"x": (3,)})
    add("random_poisson_rate_zero", x + S.random_poisson(lam=0, shape=(2, 2), name="p"), {"x": (2, 2)})
    add("random_negative_binomial_k_zero", x + S.random_negative_binomial(k=0, p=0.5, shape=(3,), name="nb"),
        {"x": (3,)})
    add("random_gnb_mean_zero", x + S.random_generalized_negative_binomial(mu=0, alpha=0.5, shape=(3,),
                                                                           name="gnb"), {"x": (3,)})
    add("random_randint_one_value", S.random_randint(low=3, high=4, shape=(2, 3), name="r"), {},
        is_train=False)
    add("random_randint_int64_cast", x * S.Cast(S.random_randint(low=-2, high=-1, shape=(3,), dtype="int64",
                                                                 name="r"), dtype="float32", name="c"),
        {"x": (3,)})
    add("random_uniform_float16_cast", x + S.Cast(S.random_uniform(low=2, high=2, shape=(3,), dtype="float16",
                                                                   name="u"), dtype="float32", name="c"),
        {"x": (3,)})
    # ------------------------------------------------------------ _sample_*: zero gradients
    add("sample_uniform_point", S.sample_uniform(x, x, shape=(2,), name="s"), {"x": (3,)})
    add("sample_normal_sigma_zero", S.sample_normal(x, S.zeros_like(x), shape=(2, 2), name="s"), {"x": (2, 3)})
    add("sample_normal_plus", y + S.sample_normal(x, S.zeros_like(x), name="s"), {"x": (3,), "y": (3,)})
    add("sample_gamma_alpha_zero", y + S.sample_gamma(S.zeros_like(x), x, shape=(2,), name="s"),
        {"x": (3,), "y": (3, 2)}, inputs={"x": POS})
    add("sample_exponential_times_zero", y + 0 * S.sample_exponential(x, shape=(2,), name="s"),
        {"x": (3,), "y": (3, 2)}, inputs={"x": POS})
    add("sample_poisson_rate_zero", y + S.sample_poisson(S.zeros_like(x), shape=(2,), name="s"),
        {"x": (2,), "y": (2, 2)})
    add("sample_negative_binomial_k_zero", y + S.sample_negative_binomial(S.zeros_like(x), x, name="s"),
        {"x": (4,), "y": (4,)}, inputs={"x": ("uniform", 0.2, 0.8)})
    add("sample_gnb_mean_zero", y + S.sample_generalized_negative_binomial(S.zeros_like(x), x, name="s"),
        {"x": (4,), "y": (4,)}, inputs={"x": POS})
    add("sample_uniform_own_inputs", S.sample_uniform(name="s") * 0, {"s_low": (2,), "s_high": (2,)})
    # ------------------------------------------------------------ multinomial: one-hot rows
    # Each row of p is w at one index and 0 elsewhere (w >= 1, so MXNet's cumulative sum reaches
    # the draw there): the draws are that index, their log probability log(w).
    i, w = S.Variable("i"), S.Variable("w")
    p = S.one_hot(i, depth=4, name="hot") * w
    hot = {"i": ("int", 0, 4), "w": ("uniform", 1.0, 2.0)}
    add("multinomial_one_hot_get_prob", S.sample_multinomial(p, shape=(3,), get_prob=True, name="m"),
        {"i": (2,), "w": (2, 4)}, inputs=hot, grad_req={"i": "null"})
    add("multinomial_one_hot_float32", S.sample_multinomial(p, dtype="float32", name="m") * 1,
        {"i": (2,), "w": (2, 4)}, inputs=hot, grad_req={"i": "null"})
    row = S.reshape(S.one_hot(i, depth=3, name="hot") * w, shape=(-1,), name="row")
    add("multinomial_one_vector", S.sample_multinomial(row, shape=(2, 2), get_prob=True, name="m"),
        {"i": (1,), "w": (1, 3)}, inputs=hot, grad_req={"i": "null"})
    # ------------------------------------------------------------ shuffle: undone
    add("shuffle_then_sort", S.sort(S.shuffle(x, name="sh"), axis=0, name="so"), {"x": (5,)}, is_train=False)
    add("shuffle_rows_then_sort", S.sort(S.shuffle(x, name="sh"), axis=0, name="so"), {"x": (4, 3)},
        is_train=False)
    return cases


def all_cases(mx):
    with mx.name.NameManager():  # auto names (_plus0, _mulscalar0) as in a fresh process
        return op_cases(mx)
