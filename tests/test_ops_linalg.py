"""The rest of MXNet 1.9.1's linalg family (jbind/ops/linalg_more.py): potrf, potri, trmm,
trsm, syrk, sumlogdiag, inverse, det, slogdet, extractdiag, makediag, extracttrian,
maketrian, gelqf and syevd.

Forward against numpy float64 references, gradients against finite differences of them
(helpers.check_op). Well-conditioned inputs are built inside the graph from the drawn
values (SPD: syrk(a) + makediag(d); triangular: a + makediag(d)). Golden files from MXNet
1.9.1: tests/golden/ops_linalg/.
"""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming

V = mx.sym.Variable
S = mx.sym
L = mx.sym.linalg
DIAG = (2.0, 3.0)


def _vars(f, *names):
    """A build function: f applied to one Variable per name (each made once per graph)."""
    return lambda: f(*[V(n) for n in names])


def _t(x):
    return np.swapaxes(x, -1, -2)


def _diag(d):
    return d[..., :, None] * np.eye(d.shape[-1])


def _spd(a, d):
    return a @ _t(a) + _diag(d)


def _spd_sym(a, d):
    return L.syrk(a) + L.makediag(d)


def _tri_sym(a, d):
    return a + L.makediag(d)


def _scalar(x):
    x = np.asarray(x)
    return x.reshape(1) if x.ndim == 0 else x


def _trian_pairs(n, offset, lower):
    low = offset < 0 or (offset == 0 and lower)
    k = -abs(offset)
    pairs = [(i, j) for i in range(n) for j in range(i + k + 1)]
    r, c = np.array(pairs).T
    return (r, c) if low else (c, r)


def _maketrian(x, offset, lower):
    m = int((np.sqrt(8 * x.shape[-1] + 1) - 1) / 2)
    n = m + abs(offset)
    r, c = _trian_pairs(n, offset, lower)
    out = np.zeros(x.shape[:-1] + (n, n))
    out[..., r, c] = x
    return out


def _makediag(x, offset):
    m = x.shape[-1]
    n = m + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    i = np.arange(m)
    out[..., i + max(-offset, 0), i + max(offset, 0)] = x
    return out


def _syevd(a):
    w, v = np.linalg.eigh(a)
    u = _t(v)
    big = np.take_along_axis(u, np.argmax(np.abs(u), axis=-1)[..., None], axis=-1)
    return [u * np.where(big < 0, -1.0, 1.0), w]


def _gelqf(a):
    q, r = np.linalg.qr(_t(a))
    return [_t(q), _t(r)]


def _trsm(a, b, transpose, rightside, lower, alpha):
    a = np.tril(a) if lower else np.triu(a)
    a = _t(a) if transpose else a
    return alpha * (_t(np.linalg.solve(_t(a), _t(b))) if rightside else np.linalg.solve(a, b))


def _trmm(a, b, transpose, rightside, lower, alpha):
    a = np.tril(a) if lower else np.triu(a)
    a = _t(a) if transpose else a
    return alpha * (b @ a if rightside else a @ b)


CASES = [
    # potri of potrf's factor, and of a plain triangle (its upper part ignored)
    Case("potrf_potri", _vars(lambda a, d, t, e: S.Group([
        L.potrf(_spd_sym(a, d)), S._linalg_potri(L.potrf(_spd_sym(a, d))), L.potri(_tri_sym(t, e))]),
        "a", "d", "t", "e"),
        lambda a, d, t, e: [np.linalg.cholesky(_spd(a, d)), np.linalg.inv(_spd(a, d)),
                            np.linalg.inv(np.tril(t + _diag(e)) @ _t(np.tril(t + _diag(e))))],
        {"a": (2, 3, 3), "d": (2, 3), "t": (3, 3), "e": (3,)}, {"d": DIAG, "e": DIAG}),
    Case("trmm", _vars(lambda a, b, c: S.Group([
        L.trmm(a, b), S._linalg_trmm(a, b, transpose=True, lower=False, alpha=1.5),
        L.trmm(a, c, rightside=True, lower=False, alpha=-0.5)]), "a", "b", "c"),
        lambda a, b, c: [_trmm(a, b, False, False, True, 1.0), _trmm(a, b, True, False, False, 1.5),
                         _trmm(a, c, False, True, False, -0.5)],
        {"a": (2, 3, 3), "b": (2, 3, 4), "c": (2, 2, 3)}),
    Case("trsm", _vars(lambda a, d, b, c: S.Group([
        L.trsm(_tri_sym(a, d), b),
        S._linalg_trsm(_tri_sym(a, d), b, transpose=True, lower=False, alpha=2.0),
        L.trsm(_tri_sym(a, d), c, rightside=True, transpose=True, alpha=-0.5)]), "a", "d", "b", "c"),
        lambda a, d, b, c: [_trsm(a + _diag(d), b, False, False, True, 1.0),
                            _trsm(a + _diag(d), b, True, False, False, 2.0),
                            _trsm(a + _diag(d), c, True, True, True, -0.5)],
        {"a": (2, 3, 3), "d": (2, 3), "b": (2, 3, 2), "c": (2, 4, 3)}, {"d": DIAG}),
    Case("syrk", _vars(lambda a: S.Group([L.syrk(a), S._linalg_syrk(a, transpose=True, alpha=0.5)]), "a"),
         lambda a: [a @ _t(a), 0.5 * _t(a) @ a], {"a": (2, 3, 4)}),
    Case("sumlogdiag", lambda: S.Group([L.sumlogdiag(V("x")), S._linalg_sumlogdiag(V("y"))]),
         lambda x, y: [_scalar(np.sum(np.log(np.diagonal(x)))), np.sum(np.log(np.diagonal(y, 0, -2, -1)), -1)],
         {"x": (3, 3), "y": (2, 3, 4, 4)}, {"x": (0.5, 2.0), "y": (0.5, 2.0)}),
    # a single matrix's det and slogdet (shape (1,)): test_namespaces_and_params
    Case("inverse_det", _vars(lambda a, d: S.Group([L.inverse(_tri_sym(a, d)), S._linalg_det(_tri_sym(a, d))]),
                              "a", "d"),
         lambda a, d: [np.linalg.inv(a + _diag(d)), np.linalg.det(a + _diag(d))],
         {"a": (2, 3, 3), "d": (2, 3)}, {"d": DIAG}),
    # signs of both kinds: a diagonal drawn from (-3, -2) or (2, 3) per matrix
    Case("slogdet", lambda: S._linalg_slogdet(V("a") + L.makediag(V("d"))),
         lambda a, d: list(np.linalg.slogdet(a + _diag(d))),
         {"a": (4, 3, 3), "d": (4, 3)},
         {"d": np.array([[2.5, 2.2, 2.9], [-2.5, 2.1, 2.7], [2.3, -2.6, -2.2], [-2.4, -2.8, -2.1]])}),
    Case("extractdiag_makediag", _vars(lambda x, v: S.Group([
        L.extractdiag(x), S._linalg_extractdiag(x, offset=1), L.extractdiag(x, offset=-2),
        L.makediag(v), S._linalg_makediag(v, offset=-1), L.makediag(v, offset=2)]), "x", "v"),
        lambda x, v: [np.diagonal(x, 0, -2, -1), np.diagonal(x, 1, -2, -1), np.diagonal(x, -2, -2, -1),
                      _makediag(v, 0), _makediag(v, -1), _makediag(v, 2)],
        {"x": (2, 4, 4), "v": (2, 3)}),
    Case("extracttrian_maketrian", _vars(lambda x, v: S.Group(
        [L.extracttrian(x, offset=o, lower=lo) for o, lo in ((0, True), (0, False), (1, True), (-2, False))]
        + [S._linalg_extracttrian(x)]
        + [L.maketrian(v, offset=o, lower=lo) for o, lo in ((0, True), (0, False), (1, True), (-1, False))]
        + [S._linalg_maketrian(v, offset=-2)]), "x", "v"),
        lambda x, v: [x[..., r, c] for r, c in (_trian_pairs(4, o, lo) for o, lo in
                                                ((0, True), (0, False), (1, True), (-2, False), (0, True)))]
        + [_maketrian(v, o, lo) for o, lo in ((0, True), (0, False), (1, True), (-1, False), (-2, True))],
        {"x": (2, 4, 4), "v": (3, 6)}),
    Case("gelqf", lambda: S.Group(list(L.gelqf(V("a"))) + list(S._linalg_gelqf(V("b")))),
         lambda a, b: _gelqf(a) + _gelqf(b), {"a": (2, 3, 4), "b": (3, 3)}),
    Case("syevd", _vars(lambda a, b: S.Group(list(L.syevd(a + S.swapaxes(a, 1, 2)))
                                             + [S._linalg_syevd(b + S.transpose(b))[1]]), "a", "b"),
         lambda a, b: _syevd(a + _t(a)) + [np.linalg.eigvalsh(b + b.T)],
         {"a": (2, 4, 4), "b": (3, 3)},
         {"b": np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, -1.0]])}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_linalg_op(case):
    check_op(case)


def test_namespaces_and_params():
    a = mx.nd.array([[4.0, 2.0], [2.0, 3.0]])
    np.testing.assert_allclose(mx.nd.linalg.potrf(a).asnumpy(), np.linalg.cholesky(a.asnumpy()), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.linalg_det(a).asnumpy(), [8.0], rtol=1e-6)
    sign, logdet = mx.nd.linalg.slogdet(-a)
    assert sign.shape == logdet.shape == (1,)
    np.testing.assert_allclose([sign.asscalar(), logdet.asscalar()], [1.0, np.log(8.0)], rtol=1e-6)
    np.testing.assert_allclose(mx.nd._linalg_trmm(a, a, lower=False).asnumpy(), np.triu(a.asnumpy()) @ a.asnumpy())
    # the `lower` parameter shares its name with Op.lower: it reads, prints and serializes as a bool
    op = mx.ops.get_op("linalg_trsm").from_attrs({"lower": "False", "alpha": "2"})
    assert op.lower == False and repr(op) == "_linalg_trsm(transpose=False, rightside=False, lower=False, alpha=2.0)"
    assert op == mx.ops.get_op("_linalg_trsm")(lower=False, alpha=2.0) != mx.ops.get_op("_linalg_trsm")(alpha=2.0)
    s = L.maketrian(V("v"), lower=False, offset=0, name="mt")
    again = mx.sym.load_json(s.tojson())
    assert again.fingerprint == s.fingerprint and '"lower": "False"' in s.tojson()
    assert L.det(V("a"), name="d").list_outputs() == ["d_output0"]
    assert L.syevd(V("a"), name="e").list_outputs() == ["e_output0", "e_output1"]
    assert not hasattr(mx.sym, "linalg_syevd")  # as in MXNet 1.9.1: only _linalg_syevd


@pytest.mark.parametrize("build, shapes, words", [
    (lambda: L.potrf(V("a")), {"a": (3, 4)}, ["_linalg_potrf", "square"]),
    (lambda: L.det(V("a")), {"a": (4,)}, ["_linalg_det", "at least 2 dimensions"]),
    (lambda: L.trsm(V("a"), V("b")), {"a": (2, 3, 3), "b": (3, 3, 4)}, ["_linalg_trsm", "batch dimensions"]),
    (lambda: L.trmm(V("a"), V("b"), rightside=True), {"a": (3, 3), "b": (3, 4)}, ["_linalg_trmm", "4 columns"]),
    (lambda: L.maketrian(V("a")), {"a": (4,)}, ["_linalg_maketrian", "triangular number"]),
    (lambda: L.extractdiag(V("a"), offset=3), {"a": (3, 3)}, ["_linalg_extractdiag", "offset 3"]),
    (lambda: L.gelqf(V("a")), {"a": (4, 3)}, ["_linalg_gelqf", "m <= n"]),
])
def test_shape_errors(build, shapes, words):
    raises_naming(lambda: build().infer_shape(**shapes), *words, cls=mx.base.ShapeError)


def test_dtype_error():
    raises_naming(lambda: L.inverse(V("a")).infer_type(a="float16"), "_linalg_inverse", "float32 and float64",
                  cls=mx.base.MXNetError)


def test_failed_factorizations_give_nans_not_errors():
    """Deliberate difference: MXNet raises at run time when potrf meets a matrix that is not
    positive definite or inverse a singular one; inside a compiled graph jbind cannot, so the
    results hold nan / inf (det of a singular matrix is 0 in both)."""
    not_pd = mx.nd.array([[1.0, 2.0], [2.0, 1.0]])
    exe = mx.sym.linalg.potrf(mx.sym.Variable("a")).bind(mx.cpu(), {"a": not_pd})
    assert np.isnan(exe.forward()[0].asnumpy()).any()
    singular = mx.nd.array([[1.0, 2.0], [2.0, 4.0]])
    assert not np.isfinite(mx.nd.linalg.inverse(singular).asnumpy()).all()
    assert mx.nd.linalg.det(singular).asnumpy() == pytest.approx([0.0])


def test_eager_potrf_of_a_matrix_it_cannot_factor_raises():
    # MXNet's CPU potrf fails on a matrix that is not positive definite; eager jbind raises too.
    with pytest.raises(mx.base.MXNetError, match="positive definite"):
        mx.nd.linalg.potrf(mx.nd.zeros((2, 2)))
    np.testing.assert_allclose(mx.nd.linalg.potrf(mx.nd.array([[4.0, 2.0], [2.0, 5.0]])).asnumpy(),
                               [[2, 0], [1, 2]])
