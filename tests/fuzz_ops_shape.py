"""Graph fuzzer builders for shape and indexing ops (see fuzz_graphs.py)."""
from __future__ import annotations

import math

import numpy as np

from fuzz_graphs import conflict, op
from test_ops_shape import _pick, _take


def _keep(g, name, params, x, ref, shape, bad=None):
    """A step that only moves or selects elements: same bounds, exact if its input is."""
    v = g.v(x)
    return g.emit(name, params, [x], ref, [(shape, v.lo, v.hi)], exact=v.exact, bad=bad)


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


# --- shape ops -----------------------------------------------------------------------------------
@op("Reshape")
def reshape(g, name, bad):
    x = g.arg()
    src = g.v(x).shape
    rest, dims = math.prod(src), []
    for _ in range(g.int(0, 3)):
        dims.append(g.choice(_divisors(rest)))
        rest //= dims[-1]
    dims.append(rest)
    spec = [0 if k < len(src) and d == src[k] and g.flag() else d for k, d in enumerate(dims)]
    if g.flag():
        spec[g.int(0, len(spec) - 1)] = -1
    why = None
    if bad:
        spec, why = (dims + [2], "sizes differ") if g.flag() else ([-1, -1] + spec, "two -1")
    return _keep(g, name, {"shape": tuple(spec)}, x, lambda a: a.reshape(dims), tuple(dims), why)


@op("Flatten")
def flatten(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    return _keep(g, name, {}, x, lambda a: a.reshape(a.shape[0], -1), (s[0], math.prod(s[1:])))


@op("transpose")
def transpose(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    axes = tuple(g.perm(len(s))) if g.flag() else ()
    if bad:
        axes = (0,) * (len(s) + 1)
    out = tuple(s[a] for a in (axes or range(len(s) - 1, -1, -1))) if not bad else s
    return _keep(g, name, {"axes": axes}, x, lambda a: np.transpose(a, axes or None), out,
                 "not a permutation" if bad else None)


@op("SwapAxis")
def swapaxis(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    d1, d2 = (len(s) if bad else g.axis(len(s))), g.axis(len(s))
    out = list(s)
    if not bad:
        out[d1], out[d2] = s[d2], s[d1]
    return _keep(g, name, {"dim1": d1, "dim2": d2}, x, lambda a: np.swapaxes(a, d1, d2), tuple(out),
                 "dim1 out of range" if bad else None)


@op("expand_dims")
def expand_dims(g, name, bad):
    x = g.arg(ndim=(1, 3))
    s = g.v(x).shape
    axis = len(s) + 1 if bad else g.int(-len(s) - 1, len(s))
    out = s if bad else np.expand_dims(np.zeros(s), axis).shape
    return _keep(g, name, {"axis": axis}, x, lambda a: np.expand_dims(a, axis), out,
                 "axis out of range" if bad else None)


@op("squeeze")
def squeeze(g, name, bad):
    x = g.arg(pred=lambda v: 1 in v.shape, make_shape=lambda: (2, 1, 3))
    s = g.v(x).shape
    ones = [k for k, d in enumerate(s) if d == 1]
    axis = None if not ones or g.int(0, 2) == 0 else g.subset(ones)
    why = None
    if bad:
        big = [k for k, d in enumerate(s) if d != 1]
        axis, why = ((g.choice(big),), "axis of size > 1") if big else ((len(s),), "axis out of range")
    keep = [k for k, d in enumerate(s) if (d != 1 if axis is None else k not in axis)]
    out = tuple(s[k] for k in keep) or (1,)
    params = {} if axis is None else {"axis": axis}
    return _keep(g, name, params, x, lambda a: a.reshape(out), out, why)


@op("reverse")
def reverse(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    axis = (len(s),) if bad else g.subset(range(len(s)))
    return _keep(g, name, {"axis": axis}, x, lambda a: np.flip(a, axis), s, "axis out of range" if bad else None)


@op("tile")
def tile(g, name, bad):
    x = g.arg(ndim=(1, 3))
    s = g.v(x).shape
    reps = tuple(g.int(1, 2) for _ in range(g.int(1, len(s) + 1)))
    if bad:
        reps = reps[:-1] + (g.choice([0, -1]),)
    out = np.tile(np.zeros(s), reps).shape if not bad else s
    return _keep(g, name, {"reps": reps}, x, lambda a: np.tile(a, reps), out, "reps not positive" if bad else None)


@op("repeat")
def repeat(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    n = g.int(1, 3)
    axis = None if g.int(0, 2) == 0 else g.axis(len(s))
    why = None
    if bad:
        n, axis, why = (0, axis, "repeats=0") if g.flag() else (n, len(s), "axis out of range")
    out = s if bad else np.repeat(np.zeros(s), n, axis=axis).shape
    params = {"repeats": n, **({} if axis is None else {"axis": axis})}
    return _keep(g, name, params, x, lambda a: np.repeat(a, n, axis=axis), out, why)


@op("slice_axis")
def slice_axis(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    ax = g.axis(len(s))
    n = s[ax]
    b = g.int(0, n - 1)
    e = g.int(b + 1, n)
    begin = b - n if g.flag() else b
    end = None if e == n and g.flag() else (e - n if e < n and g.flag() else e)
    if bad:
        begin, end = e, b  # empty or reversed
    out = s[:ax % len(s)] + (e - b,) + s[ax % len(s) + 1:]

    def ref(a):
        return np.take(a, range(b, e), axis=ax)
    return _keep(g, name, {"axis": ax, "begin": begin, "end": end}, x, ref, out, "empty range" if bad else None)


@op("slice")
def slice_(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    k = g.int(1, len(s))
    begin, end, step = [], [], []
    for n in s[:k]:
        st_ = g.choice([None, 1, 2, -1])
        b, e = g.choice([None, *range(-n, n)]), g.choice([None, *range(-n, n + 1)])
        if not len(range(*slice(b, e, st_).indices(n))):
            b = e = None
        begin.append(b), end.append(e), step.append(st_)
    why = None
    if bad:
        why = g.choice(["step 0", "too many axes", "empty"])
        if why == "step 0":
            step[0] = 0
        elif why == "too many axes":
            begin, end, step = begin + [0] * (len(s) - k + 1), end + [1] * (len(s) - k + 1), []
        else:
            begin[0], end[0], step[0] = 0, 0, 1
    sl = tuple(slice(b, e, t) for b, e, t in zip(begin, end, step))
    out = s if bad else np.zeros(s)[sl].shape
    params = {"begin": tuple(begin), "end": tuple(end), **({"step": tuple(step)} if step else {})}
    return _keep(g, name, params, x, lambda a: a[sl], out, why)


@op("Concat", "stack")
def concat(g, name, bad):
    x = g.arg(ndim=(1, 3))
    s = g.v(x).shape
    n = g.int(2, 3)
    ax = g.int(-len(s), len(s) - 1) if name == "Concat" else g.int(-len(s) - 1, len(s))
    ins = [x]
    for k in range(n - 1):
        t = s if name == "stack" else s[:ax % len(s)] + (g.int(1, 3),) + s[ax % len(s) + 1:]
        if bad and k == 0:
            t = conflict(g, s) if name == "stack" else (s + (2,) if len(s) == 1 else _other_dim(g, t, ax % len(s)))
            ins.append(g.leaf(t))
        else:
            ins.append(g.arg(shape=t))
    vs = [g.v(i) for i in ins]
    if bad:
        out = s
    elif name == "Concat":
        out = s[:ax % len(s)] + (sum(v.shape[ax] for v in vs),) + s[ax % len(s) + 1:]
    else:
        out = np.stack([np.zeros(s)] * n, axis=ax).shape
    f = (lambda *a: np.concatenate(a, axis=ax)) if name == "Concat" else (lambda *a: np.stack(a, axis=ax))
    key = "dim" if name == "Concat" else "axis"
    return g.emit(name, {key: ax}, ins, f, [(out, min(v.lo for v in vs), max(v.hi for v in vs))],
                  exact=all(v.exact for v in vs), bad="input shapes differ" if bad else None)


def _other_dim(g, t, ax):
    k = g.choice([k for k in range(len(t)) if k != ax])
    return t[:k] + (t[k] + 1,) + t[k + 1:]


@op("SliceChannel")
def slice_channel(g, name, bad):
    x = g.arg()
    s = g.v(x).shape
    ax = g.axis(len(s))
    d = s[ax]
    n = g.choice([k for k in range(2, d + 2) if d % k]) if bad else g.choice(_divisors(d))
    squeeze = not bad and n == d and len(s) > 1 and g.flag()
    piece = s[:ax % len(s)] + (() if squeeze else (d // n,)) + s[ax % len(s) + 1:]

    def ref(a):
        parts = np.split(a, n, axis=ax)
        return [np.squeeze(p, axis=ax) for p in parts] if squeeze else parts
    v = g.v(x)
    outs = [(piece, v.lo, v.hi)] * (1 if bad else n)
    return g.emit(name, {"num_outputs": n, "axis": ax, "squeeze_axis": squeeze}, [x], ref, outs, exact=v.exact,
                  bad="num_outputs does not divide the axis" if bad else None)


def _with_ones(v):
    return 1 in v.shape


@op("broadcast_to", "broadcast_axis", "broadcast_like")
def broadcast_to(g, name, bad):
    x = g.arg(pred=_with_ones, make_shape=lambda: (g.int(1, 3), 1, g.int(1, 3)))
    s = g.v(x).shape
    ones = [k for k, d in enumerate(s) if d == 1]
    target = tuple(g.int(1, 3) if k in ones else d for k, d in enumerate(s))
    big = [k for k, d in enumerate(s) if d > 1]
    why = None
    if name == "broadcast_to":
        shape = tuple(0 if d == t and g.flag() else t for d, t in zip(s, target))
        if bad:
            shape, why = ((shape[:big[0]] + (s[big[0]] + 1,) + shape[big[0] + 1:], "stretches a dim > 1") if big
                          else (shape + (2,), "ndim differs"))
        return _keep(g, name, {"shape": shape}, x, lambda a: np.broadcast_to(a, target), target, why)
    if name == "broadcast_axis":
        axes = g.subset(ones) if ones else ()
        size = tuple(target[a] for a in axes)
        if bad:
            axes, size, why = ((big[0],), (s[big[0]] + 1,), "axis of size > 1") if big else \
                ((len(s),), (2,), "axis out of range")
        out = tuple(target[k] if k in axes else d for k, d in enumerate(s))
        return _keep(g, name, {"axis": axes, "size": size}, x, lambda a: np.broadcast_to(a, out), out, why)
    other = g.arg(shape=target + (2,) if bad else target)
    v = g.v(x)
    return g.emit(name, {}, [x, other], lambda a, b: np.broadcast_to(a, b.shape), [(target, v.lo, v.hi)],
                  exact=v.exact, bad="ndim differs" if bad else None)


# --- indexing --------------------------------------------------------------------------------------
@op("take")
def take(g, name, bad):
    a = g.arg()
    s = g.v(a).shape
    ax = len(s) if bad else g.axis(len(s))
    n = s[ax % len(s)]
    idx = g.arg((-1, n), exact=True, ndim=(1, 2), ints=True)
    mode = g.choice(["clip", "wrap"])
    out = s if bad else s[:ax % len(s)] + g.v(idx).shape + s[ax % len(s) + 1:]
    v = g.v(a)
    return g.emit(name, {"axis": ax, "mode": mode}, [a, idx], lambda a, i: _take(a, i, ax, mode),
                  [(out, v.lo, v.hi)], exact=v.exact, bad="axis out of range" if bad else None)


@op("pick")
def pick(g, name, bad):
    x = g.arg(ndim=(2, 4))
    s = g.v(x).shape
    ax = g.axis(len(s))
    small = s[:ax % len(s)] + s[ax % len(s) + 1:]
    idx = g.leaf(conflict(g, small), -1, s[ax]) if bad else g.arg((-1, s[ax]), exact=True, shape=small, ints=True)
    keepdims, mode = g.flag(), g.choice(["clip", "wrap"])
    out = s[:ax % len(s)] + (1,) + s[ax % len(s) + 1:] if keepdims else small
    v = g.v(x)
    return g.emit(name, {"axis": ax, "keepdims": keepdims, "mode": mode}, [x, idx],
                  lambda a, i: _pick(a, i, ax, keepdims, mode), [(out, v.lo, v.hi)], exact=v.exact,
                  bad="index shape" if bad else None)


@op("one_hot")
def one_hot(g, name, bad):
    depth = -1 if bad else g.int(1, 4)
    idx = g.arg((-1, depth), exact=True, ndim=(1, 2), ints=True)
    on, off = g.choice([(1.0, 0.0), (2.0, -1.0)])

    def ref(i):
        return np.where(np.trunc(i)[..., None] == np.arange(depth), on, off)
    return g.emit(name, {"depth": depth, "on_value": on, "off_value": off}, [idx], ref,
                  [(g.v(idx).shape + (depth,), off, on)], exact=True, bad="depth=-1" if bad else None)
