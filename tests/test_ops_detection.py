"""Box operators of SSD-style detection (jbind/ops/detection.py): _contrib_MultiBoxPrior,
_contrib_box_iou, _contrib_box_nms (alias _contrib_box_non_maximum_suppression) and
_contrib_bipartite_matching.

The numpy references below are loop-by-loop readings of MXNet 1.9.1's CPU kernels
(src/operator/contrib/multibox_prior.cc, bounding_box-inl.h). Behaviours marked "MXNet
1.9.1" were checked against it; tests/golden/ops_detection/ holds MXNet's own values,
forward and backward (tests/test_zoo_golden.py).
"""
import json

import jax
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming
from jbind.ops import ALIASES, REGISTRY

V = mx.sym.Variable
S = mx.sym
C = mx.sym.contrib
ShapeError, ParamError, DTypeError = mx.base.ShapeError, mx.base.ParamError, mx.base.DTypeError


# ------------------------------------------------------------------ numpy references
def _prior_ref(h, w, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0), offsets=(0.5, 0.5)):
    step_y, step_x = steps
    if step_y <= 0 or step_x <= 0:
        step_y, step_x = 1 / h, 1 / w
    out = []
    for r in range(h):
        cy = (r + offsets[0]) * step_y
        for c in range(w):
            cx = (c + offsets[1]) * step_x
            pairs = [(s, np.sqrt(ratios[0])) for s in sizes] + [(sizes[0], np.sqrt(q)) for q in ratios[1:]]
            for size, root in pairs:
                bw, bh = size * h / w * root / 2, size / root / 2
                out.append([cx - bw, cy - bh, cx + bw, cy + bh])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


def _intersect(a1, a2, b1, b2, fmt):
    if fmt == "center":
        a1, a2, b1, b2 = a1 - a2 / 2, a1 + a2 / 2, b1 - b2 / 2, b1 + b2 / 2
    return max(min(a2, b2) - max(a1, b1), 0.0)


def _area(b, fmt):
    w, h = (b[2] - b[0], b[3] - b[1]) if fmt == "corner" else (b[2], b[3])
    return 0.0 if w < 0 or h < 0 else w * h


def _iou(a, b, fmt):
    inter = _intersect(a[0], a[2], b[0], b[2], fmt) * _intersect(a[1], a[3], b[1], b[3], fmt)
    return inter, (_area(a, fmt) + _area(b, fmt) - inter)


def _iou_ref(lhs, rhs, format="corner"):
    out = np.zeros((int(np.prod(lhs.shape[:-1])), int(np.prod(rhs.shape[:-1]))))
    for i, a in enumerate(lhs.reshape(-1, 4)):
        for j, b in enumerate(rhs.reshape(-1, 4)):
            inter, union = _iou(a, b, format)
            out[i, j] = 0.0 if inter <= 0 else inter / union
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _nms_ref(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2, score_index=1, id_index=-1,
             background_id=-1, force_suppress=False, in_format="corner", out_format="corner"):
    """-> (output, source): source[b, j] the input row of output row j, -1 for filler."""
    n, w = data.shape[-2:]
    rows = data.reshape(-1, n, w)
    k = n if topk < 0 else min(n, topk)
    if k < 1:
        return data.copy(), np.tile(np.arange(n), (len(rows), 1)).reshape(data.shape[:-1])
    out, source = -np.ones_like(rows), -np.ones(rows.shape[:2], int)
    cs = coord_start
    for b, x in enumerate(rows):
        valid = [i for i in range(n) if x[i, score_index] > valid_thresh
                 and (id_index < 0 or x[i, id_index] != background_id)]
        cand = sorted(valid, key=lambda i: -x[i, score_index])[:k]  # stable: ties keep input order
        alive = [True] * len(cand)
        for r in range(len(cand)):
            for p in range(r + 1, len(cand)):
                if not (alive[r] and alive[p]):
                    continue
                a, c = x[cand[r]], x[cand[p]]
                if not force_suppress and id_index >= 0 and int(a[id_index]) != int(c[id_index]):
                    continue
                inter, union = _iou(a[cs:cs + 4], c[cs:cs + 4], in_format)
                if inter / union > overlap_thresh:
                    alive[p] = False
        for j, i in enumerate(i for i, keep in zip(cand, alive) if keep):
            out[b, j], source[b, j] = x[i], i
            box = out[b, j, cs:cs + 4]
            if in_format != out_format and box[0] >= 0:  # MXNet skips rows starting below 0
                p, q, r_, s = box
                box[:] = ([(p + r_) / 2, (q + s) / 2, r_ - p, s - q] if out_format == "center"
                          else [p - r_ / 2, q - s / 2, p + r_ / 2, q + s / 2])
    return out.reshape(data.shape), source.reshape(data.shape[:-1])


def _nms_grad(data, **kw):
    """MXNet's gradient for head gradient ones: ones on every kept row's input row."""
    _, source = _nms_ref(data, **kw)
    n, w = data.shape[-2:]
    grad = np.zeros((len(source.reshape(-1, n)), n, w))
    for b, src in enumerate(source.reshape(-1, n)):
        grad[b, src[src >= 0]] = 1.0
    return grad.reshape(data.shape)


def _bipartite_ref(data, threshold, is_ascend=False, topk=-1):
    r, c = data.shape[-2:]
    rows, cols = [], []
    for s in data.reshape(-1, r * c):
        order = sorted(range(r * c), key=lambda j: s[j] if is_ascend else -s[j])
        rm, cm, count = -np.ones(r), -np.ones(c), 0
        for j in order:
            i, k = divmod(j, c)
            if rm[i] == -1 and cm[k] == -1:
                if not (s[j] < threshold if is_ascend else s[j] > threshold):
                    break
                rm[i], cm[k] = k, i
                count += 1
                if 0 < topk < count:  # MXNet 1.9.1 stops after topk + 1 matches
                    break
        rows.append(rm)
        cols.append(cm)
    return [np.array(rows).reshape(data.shape[:-1]), np.array(cols).reshape(data.shape[:-2] + (c,))]


def _box_rows(rng, batch, n, fmt="corner", ids=3, scores=(0.1, 0.3, 0.3, 0.6, 0.9, -0.2)):
    """Rows [id, score, 4 coordinates]: ids in [-1, ids), scores with ties, boxes that overlap."""
    xy = rng.uniform(0, 0.7, size=batch + (n, 2))
    wh = rng.uniform(0.1, 0.5, size=batch + (n, 2))
    box = np.concatenate([xy, xy + wh if fmt == "corner" else wh], -1)
    return np.concatenate([rng.integers(-1, ids, size=batch + (n, 1)),
                           rng.choice(scores, size=batch + (n, 1)), box], -1)


RNG = np.random.default_rng(7)
ROWS = _box_rows(RNG, (2,), 7)
ROWS_CENTER = _box_rows(RNG, (3,), 5, fmt="center", scores=(0.2, 0.45, 0.5, 0.8))
ROWS_CENTER[0, 0, 2] = -0.01  # a kept box left of 0: MXNet leaves it unconverted


def _nms_case(id, data, grad_kw=None, **kw):
    """MXNet's gradient, not the math one: tied scores make the order jump under finite differences."""
    return Case(id, lambda: C.box_nms(V("data"), name="nms", **kw), lambda data: [_nms_ref(data, **kw)[0]],
                {"data": data.shape}, inputs={"data": data}, ref_grad=lambda data: {"data": _nms_grad(data, **kw)})


def _pair(f):
    return f(V("a"), V("b"))


def _one(f):
    return f(V("s"))


def _zero_grad(*names):
    return lambda **v: {n: np.zeros_like(v[n]) for n in names}


CASES = [
    Case("multibox_prior", lambda: C.MultiBoxPrior(V("x"), sizes=(0.5, 0.25), ratios=(1, 2, 0.5), clip=True),
         lambda x: [_prior_ref(3, 4, (0.5, 0.25), (1, 2, 0.5), clip=True)], {"x": (2, 1, 3, 4)},
         ref_grad=_zero_grad("x")),
    Case("box_iou_corner_center", lambda: _pair(lambda a, b: S.Group(
        [C.box_iou(a, b), C.box_iou(a, b, format="center")])),
         lambda a, b: [_iou_ref(a, b), _iou_ref(a, b, "center")], {"a": (3, 4), "b": (2, 2, 4)},
         inputs={"a": (0.0, 1.0), "b": (0.0, 1.0)}, ref_grad=_zero_grad("a", "b")),
    _nms_case("box_nms_default", ROWS),
    _nms_case("box_nms_class_aware_topk", ROWS, overlap_thresh=0.3, topk=4, id_index=0, valid_thresh=0.2),
    _nms_case("box_nms_center_to_corner", ROWS_CENTER, overlap_thresh=0.2, id_index=0, background_id=1,
              force_suppress=True, in_format="center"),
    Case("box_non_maximum_suppression_alias", lambda: C.box_non_maximum_suppression(V("data"), topk=0),
         lambda data: [data], {"data": (2, 3, 6)}),
    Case("bipartite_matching", lambda: _one(lambda s: S.Group(
        list(C.bipartite_matching(s, threshold=0.3)) + list(C.bipartite_matching(s, False, 0.1, topk=1)) +
        list(C.bipartite_matching(s, True, 0.1, 1)))),
         lambda s: _bipartite_ref(s, 0.3) + _bipartite_ref(s, 0.1, False, 1) + _bipartite_ref(s, 0.1, True, 1),
         {"s": (2, 4, 3)},
         inputs={"s": ("int", 0, 5)}, ref_grad=_zero_grad("s")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


# ------------------------------------------------------------------ MXNet's own examples
def test_mxnet_doc_examples():
    """The examples of MXNet 1.9.1's docstrings (bounding_box.cc), forward and box_nms's backward."""
    x = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]], np.float32)
    sym = C.box_nms(V("x"), overlap_thresh=0.1, coord_start=2, score_index=1, id_index=0, force_suppress=True)
    exe = sym.simple_bind(mx.cpu(), x=x.shape)
    out = exe.forward(is_train=True, x=x)[0].asnumpy()
    np.testing.assert_allclose(out, [[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2]] + [[-1] * 6] * 2)
    exe.backward([mx.nd.array(np.repeat([[0.1], [0.2], [0.3], [0.4]], 6, axis=1))])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.array([[0.2] * 6, [0] * 6, [0] * 6, [0.1] * 6]),
                               rtol=1e-6)
    row, col = mx.nd.contrib.bipartite_matching(mx.nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]), threshold=1e-12)
    np.testing.assert_array_equal(row.asnumpy(), [1, -1, 0])
    np.testing.assert_array_equal(col.asnumpy(), [2, 0])
    iou = mx.nd.contrib.box_iou(mx.nd.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]]),
                                mx.nd.array([[0.25, 0.25, 0.75, 0.75]]), format="corner")
    np.testing.assert_allclose(iou.asnumpy(), [[1 / 7], [1 / 7]], rtol=1e-6)


def test_multibox_prior_bits_match_mxnet():
    """MXNet 1.9.1's float32 anchors, bit for bit (2 x 3 positions, 3 anchors each, clipped)."""
    out = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 1, 2, 3)), sizes=(0.5, 0.25), ratios=(1, 2), clip=True)
    want = np.array([[0, 0, 0.33333334, 0.5], [0.083333336, 0.125, 0.25, 0.375],
                     [0, 0.07322331, 0.40236893, 0.4267767], [0.3333333, 0, 0.6666667, 0.5],
                     [0.41666666, 0.125, 0.5833333, 0.375], [0.26429772, 0.07322331, 0.7357023, 0.4267767],
                     [0.6666667, 0, 1, 0.5], [0.75000006, 0.125, 0.9166667, 0.375]], np.float32)
    assert out.shape == (1, 18, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy()[0, :8], want)


# ------------------------------------------------------------------ semantics against the references
def test_box_nms_matches_the_reference_over_parameters():
    """One graph per parameter set, 3-D and 4-D batches, ties, ids -1 and background, topk."""
    rng = np.random.default_rng(3)
    params = [dict(), dict(valid_thresh=0.3), dict(topk=2), dict(topk=20, overlap_thresh=0.2),
              dict(id_index=0), dict(id_index=0, background_id=0, topk=3), dict(id_index=0, force_suppress=True),
              dict(overlap_thresh=0.05, out_format="center"), dict(in_format="center", overlap_thresh=0.3)]
    for i, kw in enumerate(params):
        data = _box_rows(rng, (2, 2) if i % 2 else (3,), 6, fmt=kw.get("in_format", "corner"))
        data[..., 1, 2:] = data[..., 0, 2:]  # identical boxes (IoU 1)
        got = mx.nd.contrib.box_nms(mx.nd.array(data), **kw).asnumpy()
        want = _nms_ref(data.astype(np.float32), **kw)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(kw))


def test_box_nms_layout_and_extra_columns():
    """Coordinates first, score and id after them, one more column carried along."""
    rng = np.random.default_rng(4)
    rows = _box_rows(rng, (2,), 6)
    data = np.concatenate([rows[..., 2:], rows[..., 1:2], rows[..., :1], rng.normal(size=(2, 6, 1))], -1)
    kw = dict(coord_start=0, score_index=4, id_index=5, overlap_thresh=0.25)
    got = mx.nd.contrib.box_nms(mx.nd.array(data), **kw).asnumpy()
    np.testing.assert_allclose(got, _nms_ref(data.astype(np.float32), **kw)[0], rtol=1e-6, atol=1e-6)


def test_box_nms_nothing_valid_is_all_filler():
    data = _box_rows(np.random.default_rng(5), (2,), 4)
    out = mx.nd.contrib.box_nms(mx.nd.array(data), valid_thresh=5.0).asnumpy()
    np.testing.assert_array_equal(out, -np.ones_like(data))


def test_bipartite_matching_matches_the_reference():
    rng = np.random.default_rng(6)
    for kw in [dict(threshold=0.2), dict(threshold=0.5, topk=2), dict(threshold=0.7, is_ascend=True),
               dict(threshold=-1.0)]:
        s = rng.integers(0, 6, size=(3, 4, 5)) / 5
        got = mx.nd.contrib.bipartite_matching(mx.nd.array(s), **kw)
        for g, w in zip(got, _bipartite_ref(s.astype(np.float32), **kw)):
            np.testing.assert_array_equal(g.asnumpy(), w, err_msg=str(kw))


def test_box_nms_traces_one_loop_for_any_box_count():
    """The suppression is a fori_loop: the trace does not grow with the number of boxes."""
    op = REGISTRY["_contrib_box_nms"](id_index=0, out_format="center")

    def size(n):
        jaxpr = jax.make_jaxpr(lambda x: op.lower([x], [], False, None)[0])(np.zeros((2, n, 6), np.float32))
        return len(jaxpr.eqns), sum(e.primitive.name in ("scan", "while") for e in jaxpr.eqns)

    assert size(8) == size(3000)
    assert size(8)[1] == 1


# ------------------------------------------------------------------ shapes, names, parameters
def test_shapes_names_and_json_match_mxnet():
    x, y = V("x"), V("y")
    n = C.box_nms(x, name="n")
    assert n.list_arguments() == ["x"] and n.list_outputs() == ["n_output0"]
    assert n.infer_shape(x=(2, 5, 6)) == ([(2, 5, 6)], [(2, 5, 6)], [])
    assert n.infer_shape(x=(7, 6)) == ([(7, 6)], [(7, 6)], [])
    assert n.infer_shape_partial(x=(0, 5, 6))[1] == [(0, 5, 6)]
    assert json.loads(n.tojson())["node_row_ptr"] == [0, 1, 3]  # the hidden second output
    alias = C.box_non_maximum_suppression(x, name="n")
    assert ALIASES["_contrib_box_non_maximum_suppression"] == "_contrib_box_nms"
    assert '"op": "_contrib_box_nms"' in alias.tojson()
    i = C.box_iou(x, y, name="i")
    assert i.list_arguments() == ["x", "y"] and i.list_outputs() == ["i_output"]
    assert i.infer_shape(x=(2, 3, 4), y=(5, 4)) == ([(2, 3, 4), (5, 4)], [(2, 3, 5)], [])
    assert i.infer_shape_partial(x=(0, 3, 4), y=(5, 4))[1] == [(0, 3, 5)]  # MXNet 1.9.1 too
    b = C.bipartite_matching(x, threshold=0.1, name="b")
    assert b.list_outputs() == ["b_output0", "b_output1"]
    assert b.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4)], [(2, 3), (2, 4)], [])
    assert b.infer_shape(x=(3, 4)) == ([(3, 4)], [(3,), (4,)], [])
    assert REGISTRY["_contrib_bipartite_matching"].declared_params() == ("is_ascend", "threshold", "topk")
    p = C.MultiBoxPrior(x, name="p")
    assert p.list_outputs() == ["p_output"] and ALIASES["_npx_multibox_prior"] == "_contrib_MultiBoxPrior"
    assert p.infer_shape(x=(2, 3, 4, 5)) == ([(2, 3, 4, 5)], [(1, 20, 4)], [])
    assert p.infer_shape_partial(x=(0, 3, 4, 5))[1] == [(1, 20, 4)]  # MXNet 1.9.1 too
    assert C.MultiBoxPrior(x, sizes=(1, 2), ratios=(1, 2, 3)).infer_shape(x=(1, 1, 2, 3))[1] == [(1, 24, 4)]
    assert n.infer_type(x="float16") == ([np.float16], [np.float16], [])


def _graph(op, attrs):
    """MXNet 1.9.1's JSON of one op on `data`, its attributes as MXNet writes them."""
    import json
    rows = 3 if op == "_contrib_box_nms" else 2
    return json.dumps({"nodes": [{"op": "null", "name": "data", "inputs": []},
                                 {"op": op, "name": "o", "attrs": attrs, "inputs": [[0, 0, 0]]}],
                       "arg_nodes": [0], "node_row_ptr": [0, 1, rows], "heads": [[1, 0, 0]],
                       "attrs": {"mxnet_version": ["int", 10901]}})


def test_mxnet_json_loads_and_runs():
    """MXNet 1.9.1's JSON (tuple strings as MXNet writes them, a hidden second output) round trips."""
    prior = mx.sym.load_json(_graph("_contrib_MultiBoxPrior", {"ratios": "[1, 2, 0.5]", "sizes": "(0.5, 0.25)",
                                                               "clip": "True", "offsets": "(0.25,0.5)"}))
    again = mx.sym.load_json(prior.tojson())
    assert again.fingerprint == prior.fingerprint and again.list_outputs() == ["o_output"]
    out = again.simple_bind(mx.cpu(), data=(1, 1, 2, 3)).forward()[0].asnumpy()
    np.testing.assert_allclose(out, _prior_ref(2, 3, (0.5, 0.25), (1, 2, 0.5), True, offsets=(0.25, 0.5)),
                               rtol=1e-6, atol=1e-7)
    attrs = {"topk": "3", "force_suppress": "1", "id_index": "0", "overlap_thresh": "0.1", "out_format": "center"}
    nms = mx.sym.load_json(_graph("_contrib_box_nms", attrs))
    again = mx.sym.load_json(nms.tojson())
    assert again.fingerprint == nms.fingerprint and again.list_outputs() == ["o_output0"]
    out = again.simple_bind(mx.cpu(), data=ROWS.shape).forward(data=ROWS)[0].asnumpy()
    kw = dict(topk=3, force_suppress=True, id_index=0, overlap_thresh=0.1, out_format="center")
    np.testing.assert_allclose(out, _nms_ref(ROWS.astype(np.float32), **kw)[0], rtol=1e-6, atol=1e-6)


def test_bad_parameters_and_shapes_raise_naming_the_op():
    x = V("x")
    for make, needles in [
        (lambda: C.MultiBoxPrior(x, sizes=()), ["MultiBoxPrior", "sizes", "empty"]),
        (lambda: C.MultiBoxPrior(x, offsets=(1.5, 0.5)), ["MultiBoxPrior", "offsets (1.5, 0.5)", "[0, 1]"]),
        (lambda: C.MultiBoxPrior(x, steps=(0.1, -1)), ["MultiBoxPrior", "steps (0.1, -1.0)", "both"]),
        (lambda: C.MultiBoxPrior(x, steps=(0.1,)), ["MultiBoxPrior", "steps", "2 values"]),
        (lambda: C.box_nms(x, score_index=3), ["box_nms", "score_index=3", "coordinates 2..5"]),
        (lambda: C.box_nms(x, id_index=1), ["box_nms", "id_index=1", "score_index"]),
        (lambda: C.box_nms(x, id_index=4), ["box_nms", "id_index=4", "coordinates"]),
        (lambda: C.box_nms(x, coord_start=-1), ["box_nms", "coord_start=-1"]),
        (lambda: C.box_nms(x, in_format="xywh"), ["box_nms", "in_format", "'corner'"]),
        (lambda: C.box_iou(x, x, format="xyxy"), ["box_iou", "format"]),
        (lambda: C.bipartite_matching(x), ["bipartite_matching", "threshold"]),
    ]:
        raises_naming(make, *needles, cls=ParamError)
    for sym, shapes, needles in [
        (C.MultiBoxPrior(x, name="p"), {"x": (2, 3, 4)}, ["MultiBoxPrior", "'p'", "(2, 3, 4)", "4-D"]),
        (C.box_nms(x, id_index=0, name="n"), {"x": (1, 3, 5)}, ["box_nms", "'n'", "(1, 3, 5)", ">= 6"]),
        (C.box_nms(x, score_index=6, name="n"), {"x": (1, 3, 6)}, ["box_nms", "score_index 6", "6 values"]),
        (C.box_nms(x, coord_start=3, name="n"), {"x": (1, 3, 6)}, ["box_nms", "end 6", "(1, 3, 6)"]),
        (C.box_nms(x, name="n"), {"x": (6,)}, ["box_nms", "(6,)", "at least 2 dims"]),
        (C.box_iou(x, V("y"), name="i"), {"x": (2, 3), "y": (2, 4)}, ["box_iou", "'i'", "lhs (2, 3)", "be 4"]),
        (C.bipartite_matching(x, threshold=0.5, name="b"), {"x": (4,)}, ["bipartite_matching", "(4,)"]),
    ]:
        raises_naming(lambda: sym.infer_shape(**shapes), *needles, cls=ShapeError)
    # MXNet 1.9.1 infers int32, then its float-only kernels fail in the forward
    raises_naming(lambda: C.box_nms(x, name="n").infer_type(x="int32"), "box_nms", "int32", cls=DTypeError)


def test_box_nms_infers_data_from_its_output():
    n = C.box_nms(V("x"), name="n")
    assert (n + V("o")).infer_shape_partial(o=(2, 5, 6))[0][0] == (2, 5, 6)
    raises_naming(lambda: (n + V("o")).infer_shape(x=(2, 5, 6), o=(2, 4, 6)), "(2, 4, 6)", "(2, 5, 6)",
                  cls=ShapeError)
