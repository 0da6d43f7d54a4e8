"""Graph fuzzer builders for layers: FullyConnected, dot, convolution, pooling, embedding,
normalisation (see fuzz_graphs.py)."""
from __future__ import annotations

import math

import numpy as np

from fuzz_graphs import op
from test_ops_conv import np_conv, np_norm, np_pool
from test_ops_math import _bdot, _mx_dot


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def _weights(g, shapes, bad_shape=None):
    """Weight leaves in [-1, 1], shapes inferred by jbind (given when `bad_shape` replaces the first)."""
    out = []
    for k, s in enumerate(shapes):
        given = k == 0 and bad_shape is not None
        out.append(g.leaf(bad_shape if given else s, -1, 1, given=given))
    return out


@op("FullyConnected")
def fully_connected(g, name, bad):
    x = g.arg(ndim=(1, 3))
    v = g.v(x)
    nh, flat, no_bias = g.int(1, 5), g.flag(), g.flag()
    k = math.prod(v.shape[1:]) if flat else v.shape[-1]
    why = g.choice(["num_hidden mismatch", "num_hidden=0"]) if bad else None
    ws = _weights(g, [(nh, k)] + ([] if no_bias else [(nh,)]),
                  (nh + 1, k) if why == "num_hidden mismatch" else None)
    if why == "num_hidden=0":
        nh = 0
    out = (v.shape[0], nh) if flat else v.shape[:-1] + (nh,)
    m = max(abs(v.lo), abs(v.hi))

    def ref(a, w, b=None):
        y = (a.reshape(a.shape[0], -1) if flat else a) @ w.T
        return y if b is None else y + b
    return g.emit(name, {"num_hidden": nh, "flatten": flat, "no_bias": no_bias}, [x, *ws], ref,
                  [(out, -k * m - 1, k * m + 1)], bad=why)


@op("dot")
def dot(g, name, bad):
    a = g.arg(ndim=(1, 3))
    sa = g.v(a).shape
    ta, tb = len(sa) > 1 and g.flag(), g.flag()
    k = sa[0] if ta else sa[-1]
    rest = g.shape((0, 2))
    rs = (rest + (k,)) if tb else ((k,) + rest)
    if bad:
        rs = (rest + (k + 1,)) if tb else ((k + 1,) + rest)
        b = g.leaf(rs)
    else:
        b = g.arg(shape=rs)
    va, vb = g.v(a), g.v(b)
    out = None if bad else _mx_dot(np.zeros(sa), np.zeros(rs), ta, tb).shape
    m = k * max(abs(va.lo), abs(va.hi)) * max(abs(vb.lo), abs(vb.hi))
    return g.emit(name, {"transpose_a": ta, "transpose_b": tb}, [a, b], lambda x, y: _mx_dot(x, y, ta, tb),
                  [(out, -m, m)], bad="contracted dims differ" if bad else None)


@op("batch_dot")
def batch_dot(g, name, bad):
    a = g.arg(ndim=(3, 3))
    bs, p, q = g.v(a).shape
    ta, tb = g.flag(), g.flag()
    m, k = (q, p) if ta else (p, q)
    n = g.int(1, 3)
    rs = (bs, n, k) if tb else (bs, k, n)
    why = None
    if bad:
        why = g.choice(["batch differs", "2-D rhs"])
        b = g.leaf((bs + 1,) + rs[1:] if why == "batch differs" else rs[1:])
    else:
        b = g.arg(shape=rs)
    va, vb = g.v(a), g.v(b)
    mx_ = k * max(abs(va.lo), abs(va.hi)) * max(abs(vb.lo), abs(vb.hi))
    return g.emit(name, {"transpose_a": ta, "transpose_b": tb}, [a, b], lambda x, y: _bdot(x, y, ta, tb),
                  [((bs, m, n), -mx_, mx_)], bad=why)


def _spatial_data(g):
    return g.arg(ndim=(3, 4), make_shape=lambda: (g.int(1, 2), g.int(1, 3)) + g.shape((1, 2), (3, 6)))


@op("Convolution")
def convolution(g, name, bad):
    x = _spatial_data(g)
    v = g.v(x)
    n, c, *sp = v.shape
    groups = g.choice(_divisors(c))
    nf = groups * g.int(1, 2)
    kernel, stride, dilate, pad = [], [], [], []
    for size in sp:
        p = g.int(0, 1)
        d = g.int(1, 2)
        kk = g.int(1, 3)
        while d * (kk - 1) + 1 > size + 2 * p:
            kk, d = (kk - 1, d) if kk > 1 else (kk, 1)
        kernel.append(kk), stride.append(g.int(1, 2)), dilate.append(d), pad.append(p)
    no_bias = g.flag()
    why = None
    if bad:
        why = g.choice(["kernel not positive", "num_filter not a multiple of num_group", "kernel too big"])
        if why == "kernel not positive":
            kernel[0] = g.choice([0, -1])
        elif why == "kernel too big":
            kernel[0], dilate[0] = sp[0] + 2 * pad[0] + 1, 1
        else:
            groups, nf = 2, 3
    ws = _weights(g, [(nf, c // groups, *kernel)] + ([] if no_bias else [(nf,)]))
    out_sp = [(s + 2 * p - d * (kk - 1) - 1) // st + 1 for s, kk, st, d, p in zip(sp, kernel, stride, dilate, pad)]
    m = c // groups * math.prod(kernel) * max(abs(v.lo), abs(v.hi)) + 1 if not bad else 1

    def ref(a, w, b=None):
        y = np_conv(a, w, stride, dilate, pad, groups)
        return y if b is None else y + b.reshape((1, -1) + (1,) * len(sp))
    params = {"kernel": tuple(kernel), "num_filter": nf, "stride": tuple(stride), "dilate": tuple(dilate),
              "pad": tuple(pad), "num_group": groups, "no_bias": no_bias}
    return g.emit(name, params, [x, *ws], ref, [((n, nf, *out_sp), -m, m)], bad=why)


@op("Pooling")
def pooling(g, name, bad):
    x = _spatial_data(g)
    v = g.v(x)
    sp = v.shape[2:]
    kind, full, glob = g.choice(["max", "avg", "sum"]), g.flag(), g.int(0, 3) == 0
    kernel, stride, pad = [], [], []
    for size in sp:
        kk = g.int(1, min(3, size))
        s, p = g.int(1, kk), g.int(0, kk - 1)
        if full and (-(-(size + 2 * p - kk) // s)) * s - p >= size:
            p = 0  # the last 'full' window would lie wholly in the padding
        kernel.append(kk), stride.append(s), pad.append(p)
    why = None
    if bad:
        glob = False
        why = g.choice(["kernel too big", "kernel rank"])
        if why == "kernel too big":
            kernel[0], pad[0], stride[0] = sp[0] + 2 * pad[0] + 1, 0, 1
        else:
            kernel, stride, pad = kernel + [1], stride + [1], pad + [0]
    if glob:
        kernel, stride, pad, full = list(sp), [1] * len(sp), [0] * len(sp), False
    params = {"pool_type": kind, "pooling_convention": "full" if full else "valid"}
    params.update({"global_pool": True} if glob else {"kernel": tuple(kernel), "stride": tuple(stride),
                                                       "pad": tuple(pad)})
    ref = (lambda a: np_pool(a, kernel, stride, pad, kind, full))
    out = v.shape if bad else ref(np.zeros(v.shape)).shape
    n = math.prod(kernel)
    bounds = (n * min(v.lo, 0), n * max(v.hi, 0)) if kind == "sum" else (min(v.lo, 0), max(v.hi, 0))
    return g.emit(name, params, [x], ref, [(out, *bounds)], exact=kind == "max" and v.exact, bad=why)


@op("L2Normalization")
def l2_normalization(g, name, bad):
    mode = g.choice(["instance", "channel", "spatial"])
    x = g.arg(fresh=True, ndim=(3, 3) if mode == "spatial" else (2, 3))
    if bad:
        mode = "bogus"
    red = {"instance": None, "channel": (1,), "spatial": None}.get(mode)

    def ref(a):
        r = tuple(range(1, a.ndim)) if mode == "instance" else red or tuple(range(2, a.ndim))
        return a / np.sqrt((a * a).sum(axis=r, keepdims=True) + 1e-10)
    return g.emit(name, {"mode": mode}, [x], ref, [(g.v(x).shape, -1, 1)], bad="unknown mode" if bad else None)


@op("LayerNorm")
def layer_norm(g, name, bad):
    x = g.arg(fresh=True)
    s = g.v(x).shape
    ax = len(s) if bad else g.axis(len(s))
    ws = _weights(g, [(s[ax % len(s)],)] * 2)

    def ref(a, gamma, beta):
        return np_norm(a, gamma, beta, ax, 1e-5, axis=ax)
    b = math.sqrt(s[ax % len(s)]) + 1
    return g.emit(name, {"axis": ax}, [x, *ws], ref, [(s, -b, b)], bad="axis out of range" if bad else None)


@op("Embedding")
def embedding(g, name, bad):
    n, k = g.int(1, 5), g.int(1, 4)
    idx = g.arg((-1, n), exact=True, ndim=(1, 2), ints=True)
    w = g.leaf((n + 1, k) if bad else (n, k), -1, 1, given=bad)

    def ref(i, w):
        return w[np.clip(np.trunc(i).astype(int), 0, n - 1)]
    return g.emit(name, {"input_dim": n, "output_dim": k}, [idx, w], ref, [(g.v(idx).shape + (k,), -1, 1)],
                  exact=True, bad="weight shape" if bad else None)
