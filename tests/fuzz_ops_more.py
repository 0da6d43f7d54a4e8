"""Graph fuzzer builders for loss heads, creation, sequence and spatial ops (see fuzz_graphs.py)."""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from fuzz_graphs import op
from test_ops_conv import np_lrn
from test_ops_nn import _softmax
from test_ops_shape import _seq_last, _seq_mask, _seq_reverse


def _same(g, name, params, x, ref, bounds=None, exact=False):
    v = g.v(x)
    return g.emit(name, params, [x], ref, [(v.shape, *(bounds or (v.lo, v.hi)))], exact=exact and v.exact)


# --- loss heads: their forward ----------------------------------------------------------------
@op("SoftmaxOutput")
def softmax_output(g, name, bad):
    x = g.arg(ndim=(2, 2))
    n, k = g.v(x).shape
    label = g.leaf((n,), 0, k - 1, ints=True)
    return g.emit(name, {}, [x, label], lambda a, lab: _softmax(a, axis=1), [((n, k), 0.0, 1.0)])


@op("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput")
def regression(g, name, bad):
    x = g.arg()
    v = g.v(x)
    label = g.leaf(v.shape)
    if name == "LogisticRegressionOutput":
        return g.emit(name, {}, [x, label], lambda a, lab: sp.expit(a), [(v.shape, 0.0, 1.0)])
    return g.emit(name, {}, [x, label], lambda a, lab: a, [(v.shape, v.lo, v.hi)], exact=v.exact)


@op("MakeLoss", "make_loss")
def make_loss(g, name, bad):
    return _same(g, name, {}, g.arg(), lambda a: a, exact=True)


@op("Dropout")
def dropout(g, name, bad):
    g.r.random = True  # identity only at inference: the test runs such graphs in inference
    return _same(g, name, {"p": g.choice([0.25, 0.5])}, g.arg(), lambda a: a, exact=True)


# --- creation ------------------------------------------------------------------------------------
@op("_zeros", "_ones", "_full")
def full(g, name, bad):
    shape = g.shape()
    value = {"_zeros": 0.0, "_ones": 1.0}[name] if name != "_full" else g.choice([-1.5, 2.0])
    params = {"shape": shape, **({"value": value} if name == "_full" else {})}
    return g.emit(name, params, [], lambda: np.full(shape, value), [(shape, value, value)], exact=True)


@op("_arange")
def arange(g, name, bad):
    start, n, step, rep = g.int(-3, 3), g.int(1, 5), g.choice([1.0, 0.5, -1.0, 2.0]), g.int(1, 2)
    stop = start + n * step
    why = "step=0" if bad else None
    params = {"start": start, "stop": stop, "step": 0.0 if bad else step, "repeat": rep}
    vals = start + np.arange(n) * step

    def ref():
        return np.repeat(vals, rep)
    return g.emit(name, params, [], ref, [((n * rep,), min(vals), max(vals))], exact=True, bad=why)


# --- sequences -----------------------------------------------------------------------------------
@op("SequenceMask", "SequenceLast", "SequenceReverse")
def sequence(g, name, bad):
    x = g.arg(ndim=(2, 3))
    s = g.v(x).shape
    axis = 0 if name == "SequenceReverse" else g.int(0, 1)
    use = g.flag()
    if bad:
        axis = 2 if len(s) > 2 else 1 if name == "SequenceReverse" else 2
    ins = [x]
    if use:
        ins.append(g.arg((0, s[axis % len(s)] + 1), exact=True, shape=(s[1 - axis % 2],), ints=True))
    value = g.choice([0.0, -1.0])
    params = {"use_sequence_length": use, "axis": axis}
    v = g.v(x)
    if name == "SequenceMask":
        params["value"] = value
        ref = (lambda a, ln=None: a if ln is None else _seq_mask(a, ln, value, axis))
        out, bounds = s, (min(v.lo, value), max(v.hi, value))
    elif name == "SequenceLast":
        ref = (lambda a, ln=None: _seq_last(a, ln, axis))
        out, bounds = s[:axis] + s[axis + 1:], (v.lo, v.hi)
    else:
        ref = (lambda a, ln=None: np.flip(a, 0) if ln is None else _seq_reverse(a, ln))
        out, bounds = s, (v.lo, v.hi)
    return g.emit(name, params, ins, ref, [(out, *bounds)], exact=v.exact,
                  bad="axis not supported" if bad else None)


# --- spatial ---------------------------------------------------------------------------------------
def _nchw(g, fresh=False):
    return g.arg(ndim=(4, 4), fresh=fresh, make_shape=lambda: (g.int(1, 2), g.int(1, 3), g.int(1, 4), g.int(1, 4)))


@op("Pad")
def pad(g, name, bad):
    x = _nchw(g)
    s = g.v(x).shape
    mode = g.choice(["constant", "edge", "reflect"])
    limit = [d - 1 if mode == "reflect" else 2 for d in s[2:]]
    width = [0, 0, 0, 0] + [g.int(0, min(2, limit[k // 2])) for k in range(4)]
    if bad:
        width[g.choice([0, 1, 2, 3])] = 1  # the batch or channel axis
    c = g.choice([0.0, 1.5])
    pairs = [(width[2 * i], width[2 * i + 1]) for i in range(4)]
    params = {"mode": mode, "pad_width": tuple(width), **({"constant_value": c} if mode == "constant" else {})}

    def ref(a):
        return np.pad(a, pairs, mode=mode, **({"constant_values": c} if mode == "constant" else {}))
    out = tuple(d + lo + hi for d, (lo, hi) in zip(s, pairs))
    v = g.v(x)
    return g.emit(name, params, [x], ref, [(out, min(v.lo, c), max(v.hi, c))], exact=v.exact,
                  bad="pads the batch or channel axis" if bad else None)


@op("UpSampling")
def upsampling(g, name, bad):
    x = _nchw(g)
    s = g.v(x).shape
    scale = g.int(1, 3)
    out = s[:2] + (s[2] * scale, s[3] * scale)

    def ref(a):
        return np.repeat(np.repeat(a, scale, axis=2), scale, axis=3)
    v = g.v(x)
    return g.emit(name, {"scale": scale, "sample_type": "nearest", "num_args": 1}, [x], ref,
                  [(out, v.lo, v.hi)], exact=v.exact)


@op("LRN")
def lrn(g, name, bad):
    x = _nchw(g)
    nsize = 2 if bad else g.choice([1, 3, 5])
    alpha, beta, knorm = 0.1, g.choice([0.75, 0.5]), 2.0
    v = g.v(x)
    m = max(abs(v.lo), abs(v.hi))
    return g.emit(name, {"nsize": nsize, "alpha": alpha, "beta": beta, "knorm": knorm}, [x],
                  lambda a: np_lrn(a, nsize, alpha, beta, knorm), [(v.shape, -m, m)],
                  bad="nsize must be odd" if bad else None)


@op("InstanceNorm")
def instance_norm(g, name, bad):
    x = g.arg(fresh=True, ndim=(2, 2) if bad else (3, 4))
    s = g.v(x).shape
    gamma, beta = (g.leaf((s[1],), -1, 1, given=False) for _ in range(2))

    def ref(a, gm, bt):
        red = tuple(range(2, a.ndim))
        b = (1, -1) + (1,) * (a.ndim - 2)
        mean = a.mean(axis=red, keepdims=True)
        return (a - mean) / np.sqrt(a.var(axis=red, keepdims=True) + 1e-3) * gm.reshape(b) + bt.reshape(b)
    bound = math.sqrt(math.prod(s[2:])) + 1
    return g.emit(name, {}, [x, gamma, beta], ref, [(s, -bound, bound)], bad="2-D data" if bad else None)
