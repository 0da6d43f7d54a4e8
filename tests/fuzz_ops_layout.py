"""Graph fuzzer builders for the layout, sorting and newer elementwise ops (see fuzz_graphs.py)."""
from __future__ import annotations

import numpy as np

from fuzz_graphs import op
from test_ops_layout import _d2s, _s2d
from test_ops_sorting import _argsort, _sort, _topk


def _parts(g, n):
    """Split points of an axis of size `n`: (indices, sections, [(start, end), ...])."""
    if n < 2 or g.flag():
        sections = g.choice([d for d in range(1, n + 1) if n % d == 0])
        step = n // sections
        return (), sections, [(i * step, (i + 1) * step) for i in range(sections)]
    cuts = sorted(g.subset(list(range(1, n))))
    starts = [0] + cuts
    return tuple(starts), 0, list(zip(starts, starts[1:] + [n]))


@op("_split_v2")
def split_v2(g, name, bad):
    x = g.arg(ndim=(1, 3))
    v = g.v(x)
    ax = g.axis(len(v.shape))
    n = v.shape[ax]
    indices, sections, bounds = _parts(g, n)
    squeeze = len(v.shape) > 1 and all(b - a == 1 for a, b in bounds) and g.flag()
    params = {"indices": indices, "sections": sections, "axis": ax, "squeeze_axis": squeeze}
    if bad:  # two parts, the second past the end
        return g.emit(name, {"indices": (0, n + 1), "axis": ax}, [x], None, [(v.shape, v.lo, v.hi)] * 2,
                      bad="a part out of range")
    outs = []
    for a, b in bounds:
        shape = list(v.shape)
        shape[ax % len(shape)] = b - a
        if squeeze:
            del shape[ax % len(shape)]
        outs.append((tuple(shape), v.lo, v.hi))

    def ref(data):
        pieces = [np.take(data, np.arange(a, b), axis=ax) for a, b in bounds]
        return [np.squeeze(p, axis=ax) for p in pieces] if squeeze else pieces
    return g.emit(name, params, [x], ref, outs, exact=v.exact)


@op("depth_to_space", "space_to_depth")
def depth_space(g, name, bad):
    b = g.choice([1, 2])
    d2s = name == "depth_to_space"

    def shape():
        n, c, h, w = g.int(1, 2), g.int(1, 2), g.int(1, 2), g.int(1, 2)
        return (n, c * b * b, h, w) if d2s else (n, c, h * b, w * b)

    def fits(v):
        return v.shape[1] % (b * b) == 0 if d2s else v.shape[2] % b == 0 and v.shape[3] % b == 0
    x = g.arg(ndim=(4, 4), pred=fits, make_shape=shape)
    v = g.v(x)
    n, c, h, w = v.shape
    out = (n, c // (b * b), h * b, w * b) if d2s else (n, c * b * b, h // b, w // b)
    why = None
    if bad:
        b, why = 0, "block_size 0"
    ref = (lambda a: _d2s(a, b)) if d2s else (lambda a: _s2d(a, b))
    return g.emit(name, {"block_size": b}, [x], ref, [(out, v.lo, v.hi)], exact=v.exact, bad=why)


@op("_np_cumsum")
def cumsum(g, name, bad):
    x = g.arg(ndim=(1, 3))
    v = g.v(x)
    ax = g.int(0, len(v.shape) - 1) if g.flag() else None
    size = int(np.prod(v.shape)) if ax is None else v.shape[ax]
    out = (int(np.prod(v.shape)),) if ax is None else v.shape
    bound = size * max(abs(v.lo), abs(v.hi))
    params = {"axis": len(v.shape) if bad else ax}
    return g.emit(name, params, [x], lambda a: np.cumsum(a, axis=ax), [(out, -bound, bound)],
                  bad="axis out of range" if bad else None)


@op("diag")
def diag(g, name, bad):
    x = g.arg(ndim=(1, 2))
    v = g.v(x)
    if len(v.shape) == 1:
        k = g.int(-1, 1)
        out = (v.shape[0] + abs(k),) * 2
        lo, hi = min(v.lo, 0.0), max(v.hi, 0.0)
    else:
        rows, cols = v.shape
        k = g.int(-(rows - 1), cols - 1)
        out = (min(rows + min(k, 0), cols - max(k, 0)),)
        lo, hi = v.lo, v.hi
    why = None
    if bad:
        k, why = 10, "no diagonal"
    return g.emit(name, {"k": k}, [x], lambda a: np.diag(a, k), [(out, lo, hi)], exact=v.exact,
                  bad=why if len(v.shape) == 2 else None)


@op("hard_sigmoid")
def hard_sigmoid(g, name, bad):
    x = g.arg()
    v = g.v(x)
    alpha, beta = g.choice([0.2, 0.5]), g.choice([0.5, 0.25])
    return g.emit(name, {"alpha": alpha, "beta": beta}, [x], lambda a: np.clip(alpha * a + beta, 0.0, 1.0),
                  [(v.shape, 0.0, 1.0)])


@op("softmin")
def softmin(g, name, bad):
    x = g.arg(dom=(-30.0, 30.0))
    v = g.v(x)
    ax = g.axis(len(v.shape))

    def ref(a):
        e = np.exp(-(a - a.min(axis=ax, keepdims=True)))
        return e / e.sum(axis=ax, keepdims=True)
    return g.emit(name, {"axis": ax}, [x], ref, [(v.shape, 0.0, 1.0)])


@op("logical_not")
def logical_not(g, name, bad):
    x = g.arg(exact=True)
    v = g.v(x)
    return g.emit(name, {}, [x], lambda a: (a == 0).astype(np.float64), [(v.shape, 0.0, 1.0)], exact=True)


@op("sort", "argsort", "topk")
def ordering(g, name, bad):
    x = g.arg(exact=True, ndim=(1, 3))  # exact values: ties break the same way on both sides
    v = g.v(x)
    ax = g.axis(len(v.shape))
    ascend = g.flag()
    n = v.shape[ax]
    if name == "sort":
        params, ref, outs = {"axis": ax, "is_ascend": ascend}, (lambda a: _sort(a, ax, ascend)), \
            [(v.shape, v.lo, v.hi)]
    elif name == "argsort":
        params, ref, outs = {"axis": ax, "is_ascend": ascend}, (lambda a: _argsort(a, ax, ascend)), \
            [(v.shape, 0.0, n - 1.0)]
    else:
        k = g.int(1, n)
        shape = list(v.shape)
        shape[ax] = k
        params = {"axis": ax, "k": k, "ret_typ": "value", "is_ascend": ascend}
        ref, outs = (lambda a: _topk(a, ax, k, "value", ascend)), [(tuple(shape), v.lo, v.hi)]
    why = None
    if bad:
        params["axis"], why = len(v.shape), "axis out of range"
    return g.emit(name, params, [x], ref, outs, exact=True, bad=why)
